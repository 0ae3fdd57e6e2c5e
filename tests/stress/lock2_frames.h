// SPDX-License-Identifier: MIT
// tests/stress/lock2_frames.h - what the two lock2 stress programs share:
// the frame shapes derived from a sequence number alone (so producer and
// consumer agree without talking), the payload generator, the checksum, a
// bounded spin-then-yield backoff, the frame count, and the producer's and
// the consumer's loops with every check the consumer makes. Each program is
// one translation unit, so everything here has internal linkage.
#ifndef KNIT_TESTS_STRESS_LOCK2_FRAMES_H
#define KNIT_TESTS_STRESS_LOCK2_FRAMES_H

#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

// The frame count: 10,000,000 natively, 200,000 under a sanitizer, times
// KNIT_STRESS_SCALE (a positive number, default 1); at least 1.
uint64_t stress_frames()
{
	double scale = 1.0;
	if (const char *e = getenv("KNIT_STRESS_SCALE"))
		scale = strtod(e, nullptr);
	if (!(scale > 0))
		scale = 1.0;
	const uint64_t frames = (uint64_t)((SANITIZED ? 200000.0 : 10000000.0) * scale);
	return frames == 0 ? 1 : frames;
}

// The producer's side: frames 0..frames-1 staged by stage_frame and flushed
// in batches of 1..8 (derived from the sequence), waiting (bounded) when no
// lane or no arena room is free. `alive(waits)` is asked after each wait
// counted (a forked consumer may have died: false stops with an error).
struct Produced {
	uint64_t sum = 0; // of the checksums of every frame staged
	uint64_t lane_full = 0, arena_full = 0;
	bool ok = true;
};

template <class Alive>
Produced produce_frames(knit::detail::LockProducer &p, uint64_t frames, const char *who,
			Alive alive)
{
	Produced r;
	uint8_t *buf = (uint8_t *)malloc(kMaxPayload);
	Backoff bo;
	uint32_t batch = 0, batch_max = 1;
	for (uint64_t seq = 0; seq < frames;) {
		uint64_t ck;
		const int rc = stage_frame(p, seq, buf, &ck);
		if (rc >= 0) {
			r.sum += ck;
			seq++;
			bo.reset();
			if (++batch >= batch_max) {
				p.flush();
				batch = 0;
				batch_max = 1 + (uint32_t)(mix(seq * 7) % 8);
			}
			continue;
		}
		if (rc != -KNIT_EAGAIN) {
			fprintf(stderr, "%s: seq %" PRIu64 " rc %d\n", who, seq, rc);
			r.ok = false;
			break;
		}
		// no lane or no arena room: publish what is staged, wait for the consumer
		p.flush();
		batch = 0;
		if (p.free_cached() == 0)
			r.lane_full++;
		else
			r.arena_full++;
		if (!alive(r.lane_full + r.arena_full)) {
			r.ok = false;
			break;
		}
		bo.wait();
	}
	p.flush();
	free(buf);
	return r;
}

// The consumer's side: drains frames until all `frames` came or one was
// wrong, and checks each: exactly once (a bitmap), order (FIFO: no frame
// taken before an earlier one; lock2.h, "Order"), the type and length its
// sequence number implies, a payload view inside [lo, hi) (the consumer's
// own mapping), and the checksum of every payload byte carried in the head.
struct Consumed {
	uint64_t delivered = 0, sum = 0, out_of_order = 0, errors = 0;
};

Consumed consume_frames(knit::detail::LockConsumer &c, uint64_t frames, const char *who,
			const uint8_t *lo, const uint8_t *hi)
{
	using namespace knit::detail;
	Consumed r;
	uint8_t *done = (uint8_t *)calloc(frames / 8 + 1, 1);
	uint64_t lowest = 0;
	Backoff bo;
	while (r.delivered < frames && r.errors == 0) {
		uint32_t n = c.drain([&](uint32_t, int rc, const FrameHead &h,
					 const knit_value_t &v) {
			uint64_t seq = (uint64_t)h.generation << 32 | h.ticket;
			if (rc != 0 || seq >= frames || (done[seq / 8] >> (seq % 8)) & 1) {
				fprintf(stderr, "%s: rc %d fault %#x seq %" PRIu64 "\n", who, rc,
					h.fault, seq);
				r.errors++;
				return;
			}
			if (seq >= lowest + 32) { // more than 31 later frames overtook `lowest`
				fprintf(stderr,
					"%s: seq %" PRIu64 " while %" PRIu64 " undelivered\n", who,
					seq, lowest);
				r.errors++;
			}
			if (seq != lowest)
				r.out_of_order++;
			done[seq / 8] |= (uint8_t)(1u << (seq % 8));
			while (lowest < frames && (done[lowest / 8] >> (lowest % 8)) & 1)
				lowest++;
			Shape sh = shape_of(seq);
			uint64_t ck = 0;
			if (sh.type == KNIT_VALUE_I64) {
				if (v.type != KNIT_VALUE_I64 || v.i64 != (int64_t)mix(seq))
					r.errors++;
				ck = (uint64_t)v.i64;
			} else {
				if (v.type != sh.type || v.len != sh.len || h.task != sh.len)
					r.errors++;
				const uint8_t *p = (const uint8_t *)v.data;
				if (p < lo || p + v.len > hi)
					r.errors++; // a view outside our own mapping
				ck = checksum(p, v.len);
			}
			if (ck != h.deadline_ns) {
				fprintf(stderr, "%s: checksum mismatch at seq %" PRIu64 "\n", who,
					seq);
				r.errors++;
			}
			r.sum += ck;
			r.delivered++;
		});
		if (n == 0)
			bo.wait();
		else
			bo.reset();
	}
	free(done);
	return r;
}

} // namespace

#endif
