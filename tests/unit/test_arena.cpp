// SPDX-License-Identifier: MIT
// tests/unit/test_arena.cpp - the payload arena allocator (src/arena.h):
// every behaviour the allocator promises (exact-size reuse,
// reset to 0, compaction, first fit, shrink, 32 slots, > 2^31 offsets, no
// overlap over thousands of random steps against a shadow model), the
// "no room" backpressure, arena_check against hostile
// shared words, and frees racing from two consumer threads.
//
// KNIT_STRESS_SCALE (a positive integer, default 1) multiplies the random and
// concurrent step counts; sanitizer builds divide them by 4.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sched.h>

// The C++ headers go before cmocka.h: its fail() macro clashes with iostreams.
#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "knitting.h"
#include "src/arena.h"
#include "src/region.h"

using namespace knit::detail;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define KNIT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define KNIT_TEST_SANITIZED 1
#endif
#endif

namespace {

uint64_t scaled(uint64_t n)
{
	const char *e = getenv("KNIT_STRESS_SCALE");
	long k = e != nullptr ? atol(e) : 1;
	if (k < 1) {
		k = 1;
	}
	n *= (uint64_t)k;
#ifdef KNIT_TEST_SANITIZED
	n /= 4;
#endif
	return n;
}

// An arena inside an anonymous shared region: PA at 0, PB at 128, the table
// at 256, data from 4096 (the layout lock2 uses is its own business).
struct TestArena {
	Region region;
	ArenaShared shared;
	ArenaProducer prod;
};

constexpr uint64_t kDataOffset = 4096;

void arena_open(TestArena *t, uint64_t capacity, uint64_t per_call_max)
{
	assert_int_equal(region_create(RegionKind::kAnonymous, kDataOffset + capacity, "arena-test",
				       &t->region),
			 0);
	uint8_t *b = t->region.base;
	t->shared.pa = reinterpret_cast<uint32_t *>(b);
	t->shared.pb = reinterpret_cast<uint32_t *>(b + 128);
	t->shared.table = reinterpret_cast<uint32_t *>(b + 256);
	t->shared.base = b + kDataOffset;
	t->shared.capacity = capacity;
	t->prod.init(t->shared, per_call_max);
}

void arena_close(TestArena *t) { region_destroy(&t->region); }

struct Alloc {
	uint32_t slot;
	uint32_t offset;
};

Alloc must_alloc(TestArena *t, uint32_t n)
{
	Alloc a = {99, 0xdead};
	int rc = t->prod.alloc(n, &a.slot, &a.offset);
	if (rc != 0) {
		fail_msg("alloc(%u) = %d", n, rc);
	}
	assert_true(a.slot < kArenaSlots);
	assert_int_equal(a.offset % kArenaGranule, 0);
	return a;
}

// A consumer's free: validate, then XOR.
void consume(TestArena *t, Alloc a, uint32_t len)
{
	assert_int_equal(arena_check(t->shared, a.slot, a.offset, len), 0);
	arena_free(t->shared, a.slot);
}

uint32_t pa_xor_pb(const TestArena *t) { return *t->shared.pa ^ *t->shared.pb; }

uint32_t table_off(const TestArena *t, uint32_t slot) { return t->shared.table[2 * slot]; }
uint32_t table_size(const TestArena *t, uint32_t slot) { return t->shared.table[2 * slot + 1]; }

// ---- deterministic behaviours ------------------------------------------------

void test_first_allocs_granular(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	assert_int_equal(*t.shared.pa, 0);
	Alloc a = must_alloc(&t, 1);
	Alloc b = must_alloc(&t, 65);
	Alloc c = must_alloc(&t, 64);
	Alloc z = must_alloc(&t, 0); // zero reserves one granule
	assert_int_equal(a.slot, 0);
	assert_int_equal(b.slot, 1);
	assert_int_equal(c.slot, 2);
	assert_int_equal(z.slot, 3);
	assert_int_equal(a.offset, 0);
	assert_int_equal(b.offset, 64);
	assert_int_equal(c.offset, 192);
	assert_int_equal(z.offset, 256);
	assert_int_equal(table_off(&t, 1), 64);
	assert_int_equal(table_size(&t, 1), 128);
	assert_int_equal(table_size(&t, 0), 64);
	assert_int_equal(table_size(&t, 3), 64);
	// PA written before alloc returned, PB untouched.
	assert_int_equal(*t.shared.pa, 0xF);
	assert_int_equal(*t.shared.pb, 0);
	assert_int_equal(t.prod.live_count(), 4);
	assert_int_equal(__builtin_popcount(pa_xor_pb(&t)), 4);
	assert_ptr_equal(t.prod.at(b.offset), t.shared.base + 64);
	arena_close(&t);
}

void test_exact_size_reuse(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	Alloc a = must_alloc(&t, 64);  // [0, 64)
	Alloc b = must_alloc(&t, 256); // [64, 320)
	Alloc c = must_alloc(&t, 64);  // [320, 384)
	Alloc d = must_alloc(&t, 128); // [384, 512)
	Alloc e = must_alloc(&t, 64);  // [512, 576)
	assert_int_equal(b.offset, 64);
	assert_int_equal(d.offset, 384);
	consume(&t, b, 256);
	consume(&t, d, 128);
	assert_int_equal(t.prod.live_count(), 3);
	// First fit would say 64 (the 256-byte hole); the exact-size hole wins.
	Alloc d2 = must_alloc(&t, 100);
	assert_int_equal(d2.offset, 384);
	assert_int_equal(d2.slot, d.slot); // lowest free index is the one just dropped
	assert_int_equal(table_off(&t, d2.slot), 384);
	assert_int_equal(table_size(&t, d2.slot), 128);
	Alloc b2 = must_alloc(&t, 256);
	assert_int_equal(b2.offset, 64);
	// No frees pending: the next one appends.
	Alloc f = must_alloc(&t, 64);
	assert_int_equal(f.offset, 576);
	assert_int_equal(t.prod.live_count(), 6);
	assert_int_equal(__builtin_popcount(pa_xor_pb(&t)), 6);
	(void)a;
	(void)c;
	(void)e;
	arena_close(&t);
}

void test_reset_when_all_freed(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	Alloc a = must_alloc(&t, 1000);
	Alloc b = must_alloc(&t, 64);
	Alloc c = must_alloc(&t, 5000);
	assert_true(c.offset > 0);
	consume(&t, c, 5000);
	consume(&t, a, 1000);
	consume(&t, b, 64);
	assert_int_equal(t.prod.live_count(), 0);
	assert_int_equal(pa_xor_pb(&t), 0);
	Alloc d = must_alloc(&t, 4096); // a size no hole has: only the reset gives 0
	assert_int_equal(d.offset, 0);
	assert_int_equal(d.slot, 0);
	assert_int_equal(t.prod.resets(), 1);
	assert_int_equal(t.prod.live_count(), 1);
	arena_close(&t);
}

// A signed test of the slot mask would skip the reset when slot 31 is
// tracked (its bit is the sign bit); all 32 slots tracked and freed must
// still reset to 0.
void test_reset_with_slot31(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	Alloc all[32];
	for (int i = 0; i < 32; i++) {
		all[i] = must_alloc(&t, 64 * (uint32_t)(i + 1));
	}
	assert_int_equal(all[31].slot, 31);
	assert_int_equal(*t.shared.pa, 0xFFFFFFFFu);
	for (int i = 31; i >= 0; i--) {
		consume(&t, all[i], 1);
	}
	Alloc n = must_alloc(&t, 64 * 40);
	assert_int_equal(n.offset, 0);
	assert_int_equal(t.prod.resets(), 1);
	arena_close(&t);
}

void test_compaction(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	Alloc a = must_alloc(&t, 64); // [0, 64)
	Alloc b = must_alloc(&t, 64); // [64, 128)
	Alloc c = must_alloc(&t, 64); // [128, 192)
	Alloc d = must_alloc(&t, 64); // [192, 256)
	consume(&t, a, 64);
	consume(&t, b, 64);
	// No 128-byte freed entry: compaction merges [0, 128).
	Alloc n = must_alloc(&t, 128);
	assert_int_equal(n.offset, 0);
	assert_int_equal(t.prod.live_count(), 3);
	assert_int_equal(pa_xor_pb(&t), (1u << c.slot) | (1u << d.slot) | (1u << n.slot));
	// Slots dropped by the compaction are reusable.
	assert_true(n.slot == a.slot || n.slot == b.slot);
	Alloc m = must_alloc(&t, 64);
	assert_int_equal(m.offset, 256);
	assert_true(m.slot == a.slot || m.slot == b.slot);
	arena_close(&t);
}

void test_first_fit_gaps(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	must_alloc(&t, 64);            // [0, 64)
	Alloc b = must_alloc(&t, 128); // [64, 192)
	must_alloc(&t, 64);            // [192, 256)
	must_alloc(&t, 64);            // [256, 320)
	consume(&t, b, 128);
	Alloc x = must_alloc(&t, 64); // no exact fit: compact, first gap
	assert_int_equal(x.offset, 64);
	Alloc y = must_alloc(&t, 64); // no frees: the gap between entries
	assert_int_equal(y.offset, 128);
	Alloc z = must_alloc(&t, 64); // no gap left: append
	assert_int_equal(z.offset, 320);
	arena_close(&t);
}

void test_shrink_exposes_tail(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	Alloc a = must_alloc(&t, 1024); // [0, 1024)
	Alloc b = must_alloc(&t, 64);   // [1024, 1088)
	t.prod.shrink(a.slot, 100);
	assert_int_equal(table_size(&t, a.slot), 128);
	t.prod.shrink(a.slot, 5000); // never grows
	assert_int_equal(table_size(&t, a.slot), 128);
	t.prod.shrink(31, 1);   // not ours: ignored
	t.prod.shrink(1000, 1); // out of range: ignored
	assert_int_equal(arena_check(t.shared, a.slot, 0, 128), 0);
	assert_int_equal(arena_check(t.shared, a.slot, 0, 129), -KNIT_EPROTO);
	Alloc c = must_alloc(&t, 256);
	assert_int_equal(c.offset, 128);
	Alloc d = must_alloc(&t, 640);
	assert_int_equal(d.offset, 384);
	Alloc e = must_alloc(&t, 64);
	assert_int_equal(e.offset, 1088);
	(void)b;
	arena_close(&t);
}

void test_all_slots_eagain(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	Alloc all[32];
	for (uint32_t i = 0; i < 32; i++) {
		all[i] = must_alloc(&t, 64);
		assert_int_equal(all[i].slot, i);
		assert_int_equal(all[i].offset, 64 * i);
	}
	uint32_t pa = *t.shared.pa;
	uint32_t s = 77, o = 77;
	assert_int_equal(t.prod.alloc(64, &s, &o), -KNIT_EAGAIN);
	assert_int_equal(s, 77); // nothing written on failure
	assert_int_equal(o, 77);
	assert_int_equal(*t.shared.pa, pa);
	assert_int_equal(t.prod.live_count(), 32);
	consume(&t, all[7], 64);
	Alloc n = must_alloc(&t, 64);
	assert_int_equal(n.slot, 7);
	assert_int_equal(n.offset, 7 * 64);
	assert_int_equal(t.prod.alloc(64, &s, &o), -KNIT_EAGAIN);
	arena_close(&t);
}

void test_capacity_eagain_and_recovery(void **)
{
	TestArena t;
	arena_open(&t, 4096, 0);
	Alloc a = must_alloc(&t, 4096);
	uint32_t s, o;
	assert_int_equal(t.prod.alloc(1, &s, &o), -KNIT_EAGAIN);
	assert_int_equal(t.prod.live_count(), 1);
	consume(&t, a, 4096);
	Alloc b = must_alloc(&t, 1);
	assert_int_equal(b.offset, 0);
	arena_close(&t);

	// Fragmentation: eight 128-byte blocks, free three non-adjacent ones.
	arena_open(&t, 1024, 0);
	Alloc blk[8];
	for (int i = 0; i < 8; i++) {
		blk[i] = must_alloc(&t, 128);
	}
	consume(&t, blk[1], 128);
	consume(&t, blk[3], 128);
	consume(&t, blk[5], 128);
	uint32_t pa = *t.shared.pa;
	assert_int_equal(t.prod.alloc(256, &s, &o), -KNIT_EAGAIN);
	assert_int_equal(*t.shared.pa, pa);
	assert_int_equal(t.prod.live_count(), 5);
	consume(&t, blk[2], 128);
	Alloc big = must_alloc(&t, 256);
	assert_int_equal(big.offset, 128);
	// The other holes are still usable, first fit.
	Alloc h = must_alloc(&t, 128);
	assert_int_equal(h.offset, 384);
	Alloc i = must_alloc(&t, 100);
	assert_int_equal(i.offset, 640);
	assert_int_equal(t.prod.alloc(64, &s, &o), -KNIT_EAGAIN);
	arena_close(&t);
}

void test_too_big(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 1000);
	uint32_t s = 5, o = 5;
	assert_int_equal(t.prod.alloc(1001, &s, &o), -KNIT_ETOOBIG);
	assert_int_equal(t.prod.alloc(0xFFFFFFFFu, &s, &o), -KNIT_ETOOBIG);
	assert_int_equal(s, 5);
	assert_int_equal(*t.shared.pa, 0);
	assert_int_equal(t.prod.live_count(), 0);
	Alloc a = must_alloc(&t, 1000);
	assert_int_equal(table_size(&t, a.slot), 1024);
	arena_close(&t);

	arena_open(&t, 4096, 0); // no cap: capacity is the limit
	assert_int_equal(t.prod.alloc(4097, &s, &o), -KNIT_ETOOBIG);
	must_alloc(&t, 4096);
	// Full now but it could fit later: backpressure, not "too big".
	assert_int_equal(t.prod.alloc(4096, &s, &o), -KNIT_EAGAIN);
	arena_close(&t);
}

void test_rollback(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	Alloc keep = must_alloc(&t, 64);
	Alloc a = must_alloc(&t, 500);
	assert_int_equal(t.prod.live_count(), 2);
	t.prod.rollback(a.slot);
	assert_int_equal(t.prod.live_count(), 1);
	uint32_t pb = *t.shared.pb;
	t.prod.rollback(a.slot); // a second rollback must not toggle it live again
	t.prod.rollback(30);     // never allocated
	t.prod.rollback(12345);
	assert_int_equal(*t.shared.pb, pb);
	assert_int_equal(arena_check(t.shared, a.slot, a.offset, 1), -KNIT_EPROTO);
	Alloc b = must_alloc(&t, 500); // exact reuse of the rolled-back range
	assert_int_equal(b.offset, a.offset);
	consume(&t, keep, 64);
	consume(&t, b, 500);
	assert_int_equal(pa_xor_pb(&t), 0);
	arena_close(&t);
}

// Offsets past 2^31 and up to the u32 limit, in a ~4 GiB MAP_NORESERVE region
// of which only the pages written here are ever committed.
void test_above_2g(void **)
{
	TestArena t;
	arena_open(&t, kArenaMaxCapacity, 0);
	Alloc whole = must_alloc(&t, (uint32_t)kArenaMaxCapacity);
	assert_int_equal(whole.offset, 0);
	uint32_t s, o;
	assert_int_equal(t.prod.alloc(1, &s, &o), -KNIT_EAGAIN);
	consume(&t, whole, (uint32_t)kArenaMaxCapacity);
	Alloc lo = must_alloc(&t, 1u << 31);
	Alloc mid = must_alloc(&t, (1u << 31) - 128);
	Alloc top = must_alloc(&t, 64);
	assert_int_equal(lo.offset, 0);
	assert_int_equal(mid.offset, 1u << 31);
	assert_int_equal(top.offset, 0xFFFFFF80u);
	assert_int_equal(t.prod.alloc(1, &s, &o), -KNIT_EAGAIN);
	memset(t.prod.at(top.offset), 0x5c, 64);
	assert_int_equal(t.prod.at(top.offset)[63], 0x5c);
	t.prod.at(mid.offset)[0] = 7;
	assert_int_equal(arena_check(t.shared, top.slot, top.offset, 64), 0);
	assert_int_equal(arena_check(t.shared, top.slot, top.offset, 65), -KNIT_EPROTO);
	assert_int_equal(arena_check(t.shared, top.slot, 0xFFFFFFFFu, 1), -KNIT_EPROTO);
	assert_int_equal(arena_check(t.shared, mid.slot, 0xFFFFFF00u, 0x80), 0);
	assert_int_equal(arena_check(t.shared, mid.slot, 0xFFFFFF00u, 0x81), -KNIT_EPROTO);
	consume(&t, mid, 1);
	Alloc again = must_alloc(&t, (1u << 31) - 128); // exact reuse above 2^31
	assert_int_equal(again.offset, 1u << 31);
	assert_int_equal(t.prod.at(again.offset)[0], 7);
	arena_close(&t);
}

// ---- randomized shadow model --------------------------------------------------

struct ModelAlloc {
	bool live;
	uint32_t offset;
	uint32_t size; // bytes reserved (64-aligned)
	uint32_t len;  // bytes written
	uint32_t seed;
};

void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++) {
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
	}
}

bool verify(const uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++) {
		if (p[i] != (uint8_t)(seed * 131u + i * 7u + (i >> 8))) {
			return false;
		}
	}
	return true;
}

// Can `size` bytes fit among the model's live ranges (any gap, first fit)?
bool model_fits(const ModelAlloc *m, uint64_t capacity, uint64_t size)
{
	std::vector<std::pair<uint64_t, uint64_t>> r;
	for (uint32_t s = 0; s < kArenaSlots; s++) {
		if (m[s].live) {
			r.push_back({m[s].offset, (uint64_t)m[s].offset + m[s].size});
		}
	}
	std::sort(r.begin(), r.end());
	uint64_t prev = 0;
	for (auto &x : r) {
		if (x.first - prev >= size) {
			return true;
		}
		prev = x.second;
	}
	return capacity - prev >= size;
}

void check_model(TestArena *t, const ModelAlloc *m)
{
	uint32_t live_bits = 0;
	for (uint32_t s = 0; s < kArenaSlots; s++) {
		if (!m[s].live) {
			continue;
		}
		live_bits |= 1u << s;
		assert_int_equal(table_off(t, s), m[s].offset);
		assert_int_equal(table_size(t, s), m[s].size);
		for (uint32_t q = s + 1; q < kArenaSlots; q++) {
			if (!m[q].live) {
				continue;
			}
			uint64_t a0 = m[s].offset, a1 = a0 + m[s].size;
			uint64_t b0 = m[q].offset, b1 = b0 + m[q].size;
			if (a0 < b1 && b0 < a1) {
				fail_msg("slots %u [%lu,%lu) and %u [%lu,%lu) overlap", s,
					 (unsigned long)a0, (unsigned long)a1, q, (unsigned long)b0,
					 (unsigned long)b1);
			}
		}
	}
	assert_int_equal(pa_xor_pb(t), live_bits);
	assert_int_equal(t->prod.live_count(), __builtin_popcount(live_bits));
}

void test_random_against_model(void **)
{
	const uint64_t cap = 64 * 1024;
	TestArena t;
	arena_open(&t, cap, 16 * 1024);
	ModelAlloc m[kArenaSlots] = {};
	std::mt19937 rng(20240611);
	uint64_t steps = scaled(20000);
	if (steps < 6000) {
		steps = 6000; // enough to reach every allocator path, even under sanitizers
	}
	uint64_t allocs = 0, eagain = 0, exact = 0;
	for (uint64_t step = 0; step < steps; step++) {
		uint32_t op = rng() % 1000;
		if (op < 600) {
			uint32_t n;
			uint32_t kind = rng() % 10;
			if (kind < 5) {
				n = 1 + rng() % 512;
			} else if (kind < 8) {
				n = 64 * (1 + rng() % 16); // exact multiples: hole reuse
			} else {
				n = 1 + rng() % (16 * 1024);
			}
			uint64_t size = (n + 63) & ~63ull;
			uint32_t nlive = 0;
			for (auto &x : m) {
				nlive += x.live;
			}
			bool fits = nlive < kArenaSlots && model_fits(m, cap, size);
			uint32_t slot = 0, off = 0;
			int rc = t.prod.alloc(n, &slot, &off);
			if (rc == -KNIT_EAGAIN) {
				eagain++;
				if (fits) {
					fail_msg(
						"step %lu: alloc(%u) EAGAIN but the model has room",
						(unsigned long)step, n);
				}
				check_model(&t, m);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_true(fits);
			assert_true(slot < kArenaSlots);
			assert_false(m[slot].live);
			assert_int_equal(off % 64, 0);
			assert_true((uint64_t)off + size <= cap);
			allocs++;
			ModelAlloc &a = m[slot];
			a = {true, off, (uint32_t)size, n, (uint32_t)step};
			// Sometimes only part is used: shrink like setSlotLength.
			if (rng() % 6 == 0) {
				a.len = rng() % (n + 1);
				t.prod.shrink(slot, a.len);
				a.size = (uint32_t)((a.len == 0 ? 64 : (a.len + 63)) & ~63u);
			}
			fill(t.prod.at(off), a.len, a.seed);
			check_model(&t, m);
			if (rng() % 10 == 0) {
				t.prod.rollback(slot);
				a.live = false;
				check_model(&t, m);
			}
		} else if (op < 995) {
			uint32_t start = rng() % kArenaSlots;
			for (uint32_t i = 0; i < kArenaSlots; i++) {
				uint32_t s = (start + i) % kArenaSlots;
				if (!m[s].live) {
					continue;
				}
				assert_int_equal(arena_check(t.shared, s, m[s].offset, m[s].len),
						 0);
				if (!verify(t.shared.base + m[s].offset, m[s].len, m[s].seed)) {
					fail_msg("step %lu: slot %u payload overwritten (aliasing)",
						 (unsigned long)step, s);
				}
				arena_free(t.shared, s);
				m[s].live = false;
				break;
			}
			check_model(&t, m);
		} else {
			for (uint32_t s = 0; s < kArenaSlots; s++) {
				if (m[s].live) {
					assert_true(verify(t.shared.base + m[s].offset, m[s].len,
							   m[s].seed));
					arena_free(t.shared, s);
					m[s].live = false;
				}
			}
			check_model(&t, m);
			Alloc z = must_alloc(&t, 64 * (1 + rng() % 4));
			assert_int_equal(z.offset, 0); // reset to 0 when all freed
			m[z.slot] = {true, z.offset, table_size(&t, z.slot), 0, (uint32_t)step};
			exact++;
		}
	}
	// The run must have exercised the interesting paths.
	assert_true(allocs > steps / 4);
	assert_true(eagain > 0);
	assert_true(t.prod.resets() > 0);
	print_message("random: %lu steps, %lu allocs, %lu EAGAIN, %lu resets\n",
		      (unsigned long)steps, (unsigned long)allocs, (unsigned long)eagain,
		      (unsigned long)t.prod.resets());
	(void)exact;
	arena_close(&t);
}

// ---- hostile shared words ------------------------------------------------------

// The shared words live in exactly-sized heap blocks so that ASan flags any
// read outside them.
struct HeapArena {
	uint32_t *pa;
	uint32_t *pb;
	uint32_t *table;
	uint8_t *data;
	ArenaShared s;
};

void heap_open(HeapArena *h, uint64_t capacity)
{
	h->pa = static_cast<uint32_t *>(calloc(1, sizeof(uint32_t)));
	h->pb = static_cast<uint32_t *>(calloc(1, sizeof(uint32_t)));
	h->table = static_cast<uint32_t *>(calloc(kArenaSlots * 2, sizeof(uint32_t)));
	h->data = static_cast<uint8_t *>(aligned_alloc(64, capacity));
	h->s = {h->pa, h->pb, h->table, h->data, capacity};
}

void heap_close(HeapArena *h)
{
	free(h->pa);
	free(h->pb);
	free(h->table);
	free(h->data);
}

void test_check_hostile(void **)
{
	HeapArena h;
	const uint64_t cap = 4096;
	heap_open(&h, cap);
	ArenaProducer p;
	p.init(h.s, 0);
	uint32_t slot = 0, off = 0;
	assert_int_equal(p.alloc(64, &slot, &off), 0);
	assert_int_equal(p.alloc(128, &slot, &off), 0);
	assert_int_equal(slot, 1);
	assert_int_equal(off, 64);
	// Legit ranges.
	assert_int_equal(arena_check(h.s, 1, 64, 128), 0);
	assert_int_equal(arena_check(h.s, 1, 64, 0), 0);
	assert_int_equal(arena_check(h.s, 1, 128, 64), 0);
	assert_int_equal(arena_check(h.s, 1, 192, 0), 0);
	// Slot index out of range.
	for (uint32_t bad : {32u, 33u, 64u, 0x80000000u, 0xFFFFFFFFu}) {
		assert_int_equal(arena_check(h.s, bad, 64, 1), -KNIT_EPROTO);
	}
	// Slot not live.
	assert_int_equal(arena_check(h.s, 2, 0, 1), -KNIT_EPROTO);
	assert_int_equal(arena_check(h.s, 31, 0, 0), -KNIT_EPROTO);
	// Range outside the slot's allocation.
	assert_int_equal(arena_check(h.s, 1, 0, 64), -KNIT_EPROTO);   // below
	assert_int_equal(arena_check(h.s, 1, 63, 2), -KNIT_EPROTO);   // straddles the start
	assert_int_equal(arena_check(h.s, 1, 64, 129), -KNIT_EPROTO); // one past the end
	assert_int_equal(arena_check(h.s, 1, 193, 0), -KNIT_EPROTO);  // empty, but past the end
	assert_int_equal(arena_check(h.s, 1, 128, 0xFFFFFFFFu),
			 -KNIT_EPROTO); // u32 wrap of offset+len
	assert_int_equal(arena_check(h.s, 1, 0xFFFFFFFFu, 1), -KNIT_EPROTO);
	assert_int_equal(arena_check(h.s, 1, 0xFFFFFFC0u, 0x80), -KNIT_EPROTO); // wraps to 0x40
	// Table entries that point outside the arena or are malformed.
	struct {
		uint32_t off, size;
	} bad_entries[] = {
		{0xFFFFFFC0u, 0x80}, // offset + size wraps u32
		{0xFFFFFFC0u, 0x40}, // far outside capacity
		{4096, 64},          // starts at capacity
		{4032, 128},         // crosses capacity
		{0, 4096 + 64},      // longer than capacity
		{0, 0xFFFFFFC0u},    // huge
		{0, 0},              // empty
		{1, 64},             // misaligned start
		{0, 100},            // misaligned size
	};
	for (auto &e : bad_entries) {
		h.table[2] = e.off;
		h.table[3] = e.size;
		uint32_t probe_off = e.off;
		assert_int_equal(arena_check(h.s, 1, probe_off, 1), -KNIT_EPROTO);
		assert_int_equal(arena_check(h.s, 1, probe_off, 0), -KNIT_EPROTO);
		assert_int_equal(arena_check(h.s, 1, 0, 1), -KNIT_EPROTO);
	}
	h.table[2] = 64;
	h.table[3] = 128;
	assert_int_equal(arena_check(h.s, 1, 64, 128), 0);
	// PA/PB corrupted: every slot "live" with garbage entries. Whatever the
	// words hold, a success means the range is inside the arena.
	std::mt19937 rng(7);
	for (int i = 0; i < 200000; i++) {
		*h.pa = rng();
		*h.pb = rng();
		uint32_t s = rng() % 40;
		for (uint32_t k = 0; k < kArenaSlots * 2; k++) {
			uint32_t r = rng();
			h.table[k] = (r & 1) ? (r & 0x3FC0) : r;
		}
		uint32_t o = (rng() & 1) ? rng() : (rng() & 0x1FFF);
		uint32_t l = (rng() & 1) ? rng() : (rng() & 0x1FFF);
		int rc = arena_check(h.s, s, o, l);
		if (rc == 0) {
			assert_true(s < 32);
			assert_true((uint64_t)o + l <= cap);
			assert_true(((*h.pa ^ *h.pb) >> s) & 1);
			assert_true(o >= h.table[2 * s]);
			assert_true((uint64_t)o + l <=
				    (uint64_t)h.table[2 * s] + h.table[2 * s + 1]);
			// The range is readable: touch it (ASan checks the heap block).
			volatile uint8_t sink = 0;
			if (l != 0) {
				sink = h.data[o] ^ h.data[o + l - 1];
			}
			(void)sink;
		} else {
			assert_int_equal(rc, -KNIT_EPROTO);
		}
	}
	// arena_free ignores out-of-range slots.
	uint32_t pb = *h.pb;
	arena_free(h.s, 32);
	arena_free(h.s, 0xFFFFFFFFu);
	assert_int_equal(*h.pb, pb);
	heap_close(&h);
}

// A foreign toggle (hostile double free, or state left by someone else) on a
// slot the producer does not track: that slot is never handed out.
void test_foreign_toggle_not_used(void **)
{
	TestArena t;
	arena_open(&t, 1 << 20, 0);
	arena_free(t.shared, 0); // hostile: slot 0 was never allocated
	arena_free(t.shared, 2);
	Alloc a = must_alloc(&t, 64);
	Alloc b = must_alloc(&t, 64);
	assert_int_equal(a.slot, 1);
	assert_int_equal(b.slot, 3);
	assert_int_equal(t.prod.live_count(), 2);
	consume(&t, a, 64);
	consume(&t, b, 64);
	Alloc c = must_alloc(&t, 64);
	assert_int_equal(c.offset, 0);
	assert_true(c.slot != 0 && c.slot != 2);
	arena_close(&t);

	// Attaching to state whose PA == PB (all free) works like fresh memory.
	arena_open(&t, 1 << 20, 0);
	*t.shared.pa = 0x00F0F0F0u;
	*t.shared.pb = 0x00F0F0F0u;
	t.prod.init(t.shared, 0);
	Alloc d = must_alloc(&t, 64);
	assert_int_equal(d.slot, 0);
	assert_int_equal(*t.shared.pa, 0x00F0F0F1u);
	assert_int_equal(t.prod.live_count(), 1);
	arena_close(&t);
}

// ---- trim ---------------------------------------------------------------------

long resident_pages()
{
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == nullptr) {
		return -1;
	}
	long size = 0, res = -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2) {
		res = -1;
	}
	fclose(f);
	return res;
}

void test_trim_after_burst(void **)
{
	TestArena t;
	const uint64_t cap = 16ull << 20;
	arena_open(&t, cap, 0);
	const long pages = (long)((8ull << 20) / region_page_size());
	Alloc a = must_alloc(&t, 8u << 20);
	long r0 = resident_pages();
	memset(t.prod.at(a.offset), 0x11, 8u << 20);
	long r1 = resident_pages();
	assert_true(r1 - r0 >= pages * 9 / 10);
	consume(&t, a, 8u << 20);
	Alloc b = must_alloc(&t, 64); // resets to 0
	assert_int_equal(b.offset, 0);
	t.prod.at(b.offset)[0] = 1;
	assert_int_equal(t.prod.high_water(), 8u << 20);
	assert_int_equal(t.prod.trim(&t.region, 0), 0);
	long r2 = resident_pages();
	assert_true(r1 - r2 >= pages * 9 / 10);
	assert_int_equal(t.prod.at(b.offset)[0], 1); // the live allocation's page stays
	assert_true(t.prod.high_water() <= region_page_size());
	assert_int_equal(t.prod.trim(&t.region, 0), 0); // nothing above: no-op
	Region other = {};
	assert_int_equal(t.prod.trim(&other, 0), -KNIT_EINVAL);
	arena_close(&t);
}

// An idle arena trims without a further alloc: trim() itself reclaims what
// the consumer freed, honours the keep floor and counts what it gave back.
void test_trim_idle_reclaims(void **)
{
	TestArena t;
	arena_open(&t, 16ull << 20, 0);
	const long pages = (long)((8ull << 20) / region_page_size());
	Alloc a = must_alloc(&t, 8u << 20);
	memset(t.prod.at(a.offset), 0x22, 8u << 20);
	long r1 = resident_pages();
	assert_int_equal(t.prod.high_water_shared(), 8u << 20);
	consume(&t, a, 8u << 20);
	assert_int_equal(t.prod.trim(&t.region, 1u << 20), 0);
	assert_true(r1 - resident_pages() >= pages * 7 / 8 * 9 / 10);
	assert_int_equal(t.prod.high_water_shared(), 1u << 20); // the floor stays
	assert_int_equal(t.prod.trims(), 1);
	assert_int_equal(t.prod.trim(&t.region, 1u << 20), 0); // nothing above: not counted
	assert_int_equal(t.prod.trims(), 1);
	assert_int_equal(t.prod.live_count(), 0);
	Alloc b = must_alloc(&t, 64);
	assert_int_equal(b.offset, 0);
	arena_close(&t);
}

// ---- concurrent frees -----------------------------------------------------------

// A producer thread allocates (sometimes shrinking, sometimes rolling back)
// and publishes frames through 32 lanes; two consumer threads claim lanes,
// check and verify each payload, then free its slot with the XOR. Lost
// toggles would leave PA != PB at the end or wedge the producer; aliasing
// would break a pattern. The lane handoff is release/acquire like lock2's A
// and B, but a consumer frees before it releases the lane and yields in
// between, so the producer also reuses ranges whose only synchronisation is
// the PB XOR/acquire pair.
struct Frame {
	uint32_t slot, offset, len, seed;
};

struct Shared {
	TestArena t;
	std::atomic<uint32_t> lane_state[32]; // 0 empty, 1 published, 2 claimed
	Frame frame[32];
	std::atomic<bool> done{false};
	std::atomic<uint64_t> consumed{0};
	std::atomic<uint64_t> errors{0};
	uint64_t published = 0, rolled_back = 0, eagain = 0;
};

void fill_fast(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (uint32_t i = 0; i + 4 <= len; i += 4) {
		x = x * 1664525u + 1013904223u;
		memcpy(p + i, &x, 4);
	}
	for (uint32_t i = len & ~3u; i < len; i++) {
		p[i] = (uint8_t)seed;
	}
}

bool verify_fast(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint8_t tmp[4096];
	if (len > sizeof tmp) {
		return false;
	}
	fill_fast(tmp, len, seed);
	return memcmp(p, tmp, len) == 0;
}

void consumer_main(Shared *sh)
{
	uint32_t idle = 0;
	for (;;) {
		bool any = false;
		for (uint32_t l = 0; l < 32; l++) {
			uint32_t one = 1;
			// acquire: pairs with the producer's release store of 1.
			if (!sh->lane_state[l].compare_exchange_strong(
				    one, 2, std::memory_order_acquire, std::memory_order_relaxed)) {
				continue;
			}
			any = true;
			Frame f = sh->frame[l];
			if (arena_check(sh->t.shared, f.slot, f.offset, f.len) != 0 ||
			    !verify_fast(sh->t.shared.base + f.offset, f.len, f.seed)) {
				sh->errors.fetch_add(1, std::memory_order_relaxed);
			}
			arena_free(sh->t.shared, f.slot);
			if ((f.seed & 7) == 0) {
				sched_yield(); // widen the window where only PB orders the reuse
			}
			sh->consumed.fetch_add(1, std::memory_order_relaxed);
			// release: pairs with the producer's acquire load of the lane.
			sh->lane_state[l].store(0, std::memory_order_release);
		}
		if (any) {
			idle = 0;
			continue;
		}
		// acquire: pairs with the release store of done after the last publish.
		if (sh->done.load(std::memory_order_acquire)) {
			bool left = false;
			for (uint32_t l = 0; l < 32; l++) {
				left |= sh->lane_state[l].load(std::memory_order_acquire) == 1;
			}
			if (!left) {
				return;
			}
		}
		if (++idle > 64) {
			sched_yield();
		}
	}
}

void producer_main(Shared *sh, uint64_t iterations)
{
	std::mt19937 rng(99);
	uint32_t lane = 0;
	for (uint64_t it = 0; it < iterations; it++) {
		uint32_t n = (rng() % 4 == 0) ? 1 + rng() % 4096 : 1 + rng() % 700;
		uint32_t slot = 0, off = 0;
		uint32_t spins = 0;
		int rc;
		while ((rc = sh->t.prod.alloc(n, &slot, &off)) == -KNIT_EAGAIN) {
			sh->eagain++;
			if (++spins > 16) {
				sched_yield();
			}
		}
		if (rc != 0) {
			sh->errors.fetch_add(1, std::memory_order_relaxed);
			break;
		}
		uint32_t len = n;
		if (rng() % 5 == 0) {
			len = rng() % (n + 1);
			sh->t.prod.shrink(slot, len);
		}
		uint32_t seed = (uint32_t)it + 1;
		fill_fast(sh->t.prod.at(off), len, seed);
		if (rng() % 8 == 0) {
			sh->t.prod.rollback(slot);
			sh->rolled_back++;
			continue;
		}
		// Find an empty lane (bounded spin, then yield).
		spins = 0;
		for (;;) {
			// acquire: pairs with the consumer's release store of 0.
			if (sh->lane_state[lane].load(std::memory_order_acquire) == 0) {
				break;
			}
			lane = (lane + 1) % 32;
			if (++spins > 64) {
				sched_yield();
				spins = 0;
			}
		}
		sh->frame[lane] = {slot, off, len, seed};
		// release: pairs with the consumer's acquire CAS.
		sh->lane_state[lane].store(1, std::memory_order_release);
		sh->published++;
		lane = (lane + 1) % 32;
	}
	sh->done.store(true, std::memory_order_release);
}

void test_concurrent_frees(void **)
{
	auto *sh = new Shared;
	arena_open(&sh->t, 64 * 1024, 0);
	for (auto &l : sh->lane_state) {
		l.store(0);
	}
	uint64_t iterations = scaled(200000);
	std::thread c1(consumer_main, sh);
	std::thread c2(consumer_main, sh);
	std::thread p(producer_main, sh, iterations);
	p.join();
	c1.join();
	c2.join();
	print_message("concurrent: %lu published, %lu rolled back, %lu EAGAIN retries\n",
		      (unsigned long)sh->published, (unsigned long)sh->rolled_back,
		      (unsigned long)sh->eagain);
	assert_int_equal(sh->errors.load(), 0);
	assert_int_equal(sh->consumed.load(), sh->published);
	assert_int_equal(sh->published + sh->rolled_back, iterations);
	assert_true(sh->rolled_back > 0);
	// No toggle lost: everything allocated was freed exactly once.
	assert_int_equal(*sh->t.shared.pa, *sh->t.shared.pb);
	assert_int_equal(sh->t.prod.live_count(), 0);
	Alloc z = must_alloc(&sh->t, 64);
	assert_int_equal(z.offset, 0);
	arena_close(&sh->t);
	delete sh;
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_allocs_granular),
		cmocka_unit_test(test_exact_size_reuse),
		cmocka_unit_test(test_reset_when_all_freed),
		cmocka_unit_test(test_reset_with_slot31),
		cmocka_unit_test(test_compaction),
		cmocka_unit_test(test_first_fit_gaps),
		cmocka_unit_test(test_shrink_exposes_tail),
		cmocka_unit_test(test_all_slots_eagain),
		cmocka_unit_test(test_capacity_eagain_and_recovery),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_rollback),
		cmocka_unit_test(test_above_2g),
		cmocka_unit_test(test_random_against_model),
		cmocka_unit_test(test_check_hostile),
		cmocka_unit_test(test_foreign_toggle_not_used),
		cmocka_unit_test(test_trim_after_burst),
		cmocka_unit_test(test_trim_idle_reclaims),
		cmocka_unit_test(test_concurrent_frees),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
