// SPDX-License-Identifier: MIT
// tests/fuzz/fuzz_decode.cpp - libFuzzer target for the lock2 consumer: the
// input is turned into the shared state of one lock (sector words, arena
// table, task lines and inline areas of chosen lanes, consumer limits) and a
// consumer runs decode/release/retire over it. It must never crash, never
// read outside the lock or its arena (both are heap blocks of exactly their
// size, so ASan sees any overrun), return only 0 or -KNIT_EPROTO, hand out
// only views inside the lane's inline area or the arena, and retire every
// lane it took. A producer then attaches to the state the consumer left and
// must still publish and have its frames decoded.
//
// Input layout (little-endian; missing bytes read as 0):
//   0   u32 A, u32 B, u32 PA, u32 PB
//   16  256 bytes: arena table (32 x {u32 offset, u32 size})
//   272 u16 task_count, u16 ticket_count
//   276 records of 66 bytes: u8 lane (low 5 bits), u8 inline fill byte,
//       64 bytes task line (layout.h TaskLine)
//
// Seed corpus: tests/fuzz/corpus/fuzz_decode/, written once by this same file
// built as a generator (real producer output, serialised in the format above):
//   clang++ -std=c++20 -DKNIT_FUZZ_SEED_MAIN -I. -Iinclude -D_GNU_SOURCE \
//     tests/fuzz/fuzz_decode.cpp src/lock2.cpp src/codec.cpp src/arena.cpp src/region.cpp \
//     -o /tmp/gen
//   /tmp/gen tests/fuzz/corpus/fuzz_decode
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/codec.h"
#include "src/layout.h"
#include "src/lock2.h"

using namespace knit::detail;

namespace {

constexpr uint64_t kCap = 4096;
constexpr size_t kHdr = 276;
constexpr size_t kRec = 66;

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "fuzz_decode: check failed: %s (line %d)\n", #x,           \
				__LINE__);                                                         \
			__builtin_trap();                                                          \
		}                                                                                  \
	} while (0)

uint32_t rd32(const uint8_t *d, size_t n, size_t off)
{
	uint32_t v = 0;
	for (size_t i = 0; i < 4; i++)
		if (off + i < n)
			v |= (uint32_t)d[off + i] << (8 * i);
	return v;
}

struct Heap {
	uint8_t *lock;
	uint8_t *arena;
	Heap()
	{
		lock = (uint8_t *)aligned_alloc(128, kLockFixedBytes);
		arena = (uint8_t *)aligned_alloc(64, kCap);
	}
	~Heap()
	{
		free(lock);
		free(arena);
	}
};

uint64_t touch_view(const Heap &h, uint32_t lane, const knit_value_t &v)
{
	if (!codec_has_bytes(v.type)) {
		CHECK(v.type <= KNIT_VALUE_F64 && v.len == 0);
		return 0;
	}
	const uint8_t *p = (const uint8_t *)v.data;
	const uint64_t stored = codec_stored_bytes(v.type, v.len);
	const bool in_inline = p == h.lock + lock_inline_offset(lane) && stored <= kInlineBytes;
	const bool in_arena = p >= h.arena && (uint64_t)(p - h.arena) + stored <= kCap;
	CHECK(in_inline || in_arena);
	uint64_t s = 0;
	for (uint64_t i = 0; i < stored; i++)
		s += p[i];
	if (v.type != KNIT_VALUE_BYTES)
		CHECK(p[v.len] == 0);
	return s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Heap h;
	memset(h.lock, 0, kLockFixedBytes);
	memset(h.arena, 0, kCap);
	*word_at(h.lock, kLockOffA) = rd32(data, size, 0);
	*word_at(h.lock, kLockOffB) = rd32(data, size, 4);
	*word_at(h.lock, kLockOffPA) = rd32(data, size, 8);
	*word_at(h.lock, kLockOffPB) = rd32(data, size, 12);
	for (uint32_t i = 0; i < 64; i++)
		word_at(h.lock, kLockOffTable)[i] = rd32(data, size, 16 + 4 * i);
	const uint32_t lim = rd32(data, size, 272);
	const ConsumerLimits limits{lim & 0xFFFF, lim >> 16, 0xFFFF};
	for (size_t off = kHdr; off + kRec <= size; off += kRec) {
		const uint32_t lane = data[off] & 31;
		memset(h.lock + lock_inline_offset(lane), data[off + 1], kInlineBytes);
		memcpy(h.lock + lock_task_offset(lane), data + off + 2, kTaskLineBytes);
	}

	const ArenaShared as = lock_arena_shared(h.lock, h.arena, kCap);
	LockConsumer c;
	CHECK(c.attach(h.lock, as, limits) == 0);
	const uint32_t expect = rd32(data, size, 0) ^ rd32(data, size, 4);
	CHECK(c.pending() == expect);
	volatile uint64_t sink = 0;
	uint32_t lanes =
		c.drain([&](uint32_t lane, int rc, const FrameHead &fh, const knit_value_t &v) {
			CHECK(rc == 0 || rc == -KNIT_EPROTO);
			if (rc == 0) {
				CHECK(fh.fault == 0 && fh.task < limits.task_count &&
				      fh.ticket < limits.ticket_count);
				sink = sink + touch_view(h, lane, v);
			} else {
				CHECK(fh.fault != 0 && v.type == KNIT_VALUE_NONE);
			}
		});
	CHECK(lanes == (uint32_t)__builtin_popcount(expect));
	CHECK(c.pending() == 0 && c.taken() == 0);
	CHECK(*word_at(h.lock, kLockOffB) == c.retired_mirror());
	CHECK(*word_at(h.lock, kLockOffA) == c.retired_mirror());

	// A producer over whatever state is left still works (or says "no room").
	LockProducer p;
	CHECK(p.attach(h.lock, as, 2048) == 0);
	static uint8_t payload[2048];
	memset(payload, 'z', sizeof payload);
	knit_value_t v{};
	v.type = KNIT_VALUE_STRING;
	v.data = payload;
	v.len = (size > 300 ? data[size - 1] * 8u : 5u);
	FrameHead fh{};
	int rc = p.publish(fh, v);
	CHECK(rc >= 0 || rc == -KNIT_EAGAIN);
	LockConsumer c2;
	CHECK(c2.attach(h.lock, as, ConsumerLimits{1, 1, 0}) == 0);
	uint32_t n =
		c2.drain([&](uint32_t lane, int rc2, const FrameHead &, const knit_value_t &view) {
			CHECK(rc2 == 0 && view.type == KNIT_VALUE_STRING && view.len == v.len);
			sink = sink + touch_view(h, lane, view);
		});
	CHECK(n == (rc >= 0 ? 1u : 0u));
	return 0;
}

#ifdef KNIT_FUZZ_SEED_MAIN
// Seed generator: real frames from a real producer, serialised as inputs.
static void emit(const char *dir, const char *name, uint8_t *lock, uint32_t published)
{
	static uint8_t buf[kHdr + 32 * kRec];
	size_t n = 0;
	auto put32 = [&](uint32_t x) {
		memcpy(buf + n, &x, 4);
		n += 4;
	};
	put32(*word_at(lock, kLockOffA));
	put32(*word_at(lock, kLockOffB));
	put32(*word_at(lock, kLockOffPA));
	put32(*word_at(lock, kLockOffPB));
	memcpy(buf + n, lock + kLockOffTable, 256);
	n += 256;
	put32(16u | (1024u << 16));
	for (uint32_t lane = 0; lane < 32; lane++) {
		if (!((published >> lane) & 1))
			continue;
		buf[n++] = (uint8_t)lane;
		buf[n++] = 0; // inline fill: NULs, so text keeps its terminator
		memcpy(buf + n, lock + lock_task_offset(lane), kTaskLineBytes);
		n += kTaskLineBytes;
	}
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (f == nullptr || fwrite(buf, 1, n, f) != n) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	Heap h;
	const ArenaShared as = lock_arena_shared(h.lock, h.arena, kCap);
	static uint8_t payload[3000];
	memset(payload, 'q', sizeof payload);
	struct Seed {
		const char *name;
		uint32_t types[4];
		uint32_t lens[4];
		uint32_t count;
	} seeds[] = {
		{"scalar-i64", {KNIT_VALUE_I64}, {0}, 1},
		{"inline-string", {KNIT_VALUE_STRING}, {40}, 1},
		{"arena-bytes", {KNIT_VALUE_BYTES}, {1500}, 1},
		{"error-inline", {KNIT_VALUE_ERROR}, {12}, 1},
		{"mixed-4",
		 {KNIT_VALUE_BOOL, KNIT_VALUE_BYTES, KNIT_VALUE_STRING, KNIT_VALUE_F64},
		 {0, 600, 100, 0},
		 4},
	};
	for (const Seed &s : seeds) {
		memset(h.lock, 0, kLockFixedBytes);
		memset(h.arena, 0, kCap);
		LockProducer p;
		p.attach(h.lock, as, 2048);
		for (uint32_t i = 0; i < s.count; i++) {
			knit_value_t v{};
			v.type = s.types[i];
			v.i64 = 1;
			v.f64 = 2.5;
			v.code = 7;
			v.data = payload;
			v.len = s.lens[i];
			FrameHead fh{};
			fh.task = i;
			fh.ticket = 100 + i;
			if (p.publish(fh, v) < 0) {
				fprintf(stderr, "seed %s: publish failed\n", s.name);
				return 1;
			}
		}
		emit(argv[1], s.name, h.lock, p.published());
	}
	return 0;
}
#endif
