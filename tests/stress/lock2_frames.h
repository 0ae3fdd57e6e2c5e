// SPDX-License-Identifier: MIT
// tests/stress/lock2_frames.h - what the two lock2 stress programs share:
// the frame shapes derived from a sequence number alone (so producer and
// consumer agree without talking), the payload generator, the checksum and a
// bounded spin-then-yield backoff. Each program is one translation unit, so
// everything here has internal linkage.
#ifndef KNIT_TESTS_STRESS_LOCK2_FRAMES_H
#define KNIT_TESTS_STRESS_LOCK2_FRAMES_H

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "knitting.h"
#include "arch/arch.h"
#include "src/lock2.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

namespace {

constexpr uint64_t kArenaCap = 256u << 10; // small: "arena full" backpressure happens
constexpr uint32_t kMaxPayload = 64u << 10;

uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

// What frame seq carries, derived from seq alone so both sides agree.
struct Shape {
	uint32_t type;
	uint32_t len;
	bool in_place; // published through reserve()/publish_reserved()
};

Shape shape_of(uint64_t seq)
{
	uint64_t r = mix(seq);
	uint32_t cls = (uint32_t)(r % 1000);
	uint32_t len_r = (uint32_t)(r >> 20);
	Shape s{};
	s.type = (r >> 40) & 1 ? KNIT_VALUE_BYTES : KNIT_VALUE_STRING;
	if (cls < 150) {
		s.type = KNIT_VALUE_I64;
	} else if (cls < 850) {
		s.len = len_r % 512;
	} else if (cls < 970) {
		s.len = 512 + len_r % 3585;
	} else {
		s.len = 4097 + len_r % (kMaxPayload - 4096);
	}
	s.in_place = s.type != KNIT_VALUE_I64 && s.len > 512 && ((r >> 50) & 1);
	return s;
}

// Payload bytes of frame seq (text never contains a 0 byte). Each word is
// computed independently (no serial chain) so it stays cheap at 64 KiB.
void fill_payload(uint64_t seq, uint8_t *p, uint32_t len)
{
	const uint64_t k = mix(seq ^ 0xA5A5A5A5u);
	uint32_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = (k ^ ((uint64_t)i * 0x9E3779B97F4A7C15ull)) * 0xD6E8FEB86659FD93ull;
		w ^= w >> 32;
		w |= 0x0101010101010101ull;
		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(0x41 + (i & 15));
}

// 64-bit checksum of every byte, four independent chains per 32 bytes.
uint64_t checksum(const uint8_t *p, size_t len)
{
	const uint64_t m = 0x100000001b3ull;
	uint64_t h0 = 0xcbf29ce484222325ull ^ len, h1 = 1, h2 = 2, h3 = 3;
	size_t i = 0;
	for (; i + 32 <= len; i += 32) {
		uint64_t w[4];
		memcpy(w, p + i, 32);
		h0 = (h0 ^ w[0]) * m;
		h1 = (h1 ^ w[1]) * m;
		h2 = (h2 ^ w[2]) * m;
		h3 = (h3 ^ w[3]) * m;
	}
	uint64_t h = h0 ^ (h1 * 3) ^ (h2 * 5) ^ (h3 * 7);
	for (; i < len; i++)
		h = (h ^ p[i]) * m;
	return h ^ (h >> 29);
}

double now_s()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Bounded spin, then yield: never an unbounded busy loop on 2 cores.
struct Backoff {
	uint32_t n = 0;
	void wait()
	{
		if (++n < 64) {
			knit_cpu_relax();
		} else {
			sched_yield();
		}
	}
	void reset() { n = 0; }
};

// Stage frame `seq` on producer `p` as shape_of(seq) says: a scalar, an
// in-place reservation, or a copy from `buf` (kMaxPayload bytes). Returns
// what LockProducer::stage returns (a lane, -KNIT_EAGAIN, or an error); on
// success *ck is the checksum the frame carries in its deadline word.
int stage_frame(knit::detail::LockProducer &p, uint64_t seq, uint8_t *buf, uint64_t *ck)
{
	using namespace knit::detail;
	Shape sh = shape_of(seq);
	FrameHead h{};
	h.task = sh.len;
	h.ticket = (uint32_t)seq;
	h.generation = (uint32_t)(seq >> 32);
	*ck = 0;
	if (sh.type == KNIT_VALUE_I64) {
		knit_value_t v{};
		v.type = KNIT_VALUE_I64;
		v.i64 = (int64_t)mix(seq);
		*ck = (uint64_t)v.i64;
		h.deadline_ns = *ck;
		return p.stage(h, v);
	}
	if (sh.in_place) {
		Reservation r{};
		int rc = p.reserve(sh.len, &r);
		if (rc != 0)
			return rc;
		fill_payload(seq, r.data, sh.len);
		*ck = checksum(r.data, sh.len);
		h.deadline_ns = *ck;
		rc = p.stage_reserved(h, sh.type, 0, sh.len, &r);
		if (rc < 0)
			p.cancel(&r); // no lane: give the space back, retry whole
		return rc;
	}
	fill_payload(seq, buf, sh.len);
	*ck = checksum(buf, sh.len);
	h.deadline_ns = *ck;
	knit_value_t v{};
	v.type = sh.type;
	v.data = buf;
	v.len = sh.len;
	return p.stage(h, v);
}

} // namespace

#endif
