// SPDX-License-Identifier: MIT
// tests/stress/lock2_threads.cpp - one producer thread and one consumer
// thread push frames of random sizes through one lock2 lock (src/lock2.h):
// 15% scalars, 70% inline payloads, 12% arena payloads up to 4 KiB, 3% up to
// 64 KiB through a 256 KiB arena, so "arena full" backpressure happens (half
// of the arena payloads are written in place through the zero-copy
// reservation), published in
// random batches (stage + one flush). The consumer checks every frame:
// exactly once (a bitmap), order (FIFO: no frame is taken before an earlier
// one; lock2.h, "Order"), the payload length the sequence number
// implies, and a 64-bit checksum of every payload byte carried in the frame
// head; the totals (count, sum of checksums) must match at the end.
//
// Frames: 10,000,000 natively, 200,000 under ThreadSanitizer/ASan.
// KNIT_STRESS_SCALE (a positive number, default 1) multiplies that count
// (e.g. 0.1 for a quick run). Waiting is a bounded spin then sched_yield, so
// it finishes quickly on 2 cores. Prints frames/s at the end.
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/layout.h"
#include "src/lock2.h"
#include "src/region.h"

using namespace knit::detail;

#include "stress/lock2_frames.h"

namespace {

struct Shared {
	uint8_t *lock;
	ArenaShared arena;
	uint64_t frames;
	// results
	uint64_t prod_sum = 0, cons_sum = 0, delivered = 0, out_of_order = 0, errors = 0;
	uint64_t lane_full = 0, arena_full = 0;
};

void *producer_main(void *arg)
{
	Shared *s = (Shared *)arg;
	LockProducer p;
	if (p.attach(s->lock, s->arena, kMaxPayload) != 0) {
		s->errors++;
		return nullptr;
	}
	uint8_t *buf = (uint8_t *)malloc(kMaxPayload);
	Backoff bo;
	uint64_t sum = 0;
	uint32_t batch = 0, batch_max = 1;
	for (uint64_t seq = 0; seq < s->frames;) {
		uint64_t ck;
		int rc = stage_frame(p, seq, buf, &ck);
		if (rc >= 0) {
			sum += ck;
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
			fprintf(stderr, "producer: seq %" PRIu64 " rc %d\n", seq, rc);
			s->errors++;
			break;
		}
		// no lane or no arena room: publish what is staged, wait for the consumer
		p.flush();
		batch = 0;
		if (p.free_cached() == 0)
			s->lane_full++;
		else
			s->arena_full++;
		bo.wait();
	}
	p.flush();
	s->prod_sum = sum;
	free(buf);
	return nullptr;
}

void *consumer_main(void *arg)
{
	Shared *s = (Shared *)arg;
	LockConsumer c;
	if (c.attach(s->lock, s->arena, ConsumerLimits{kMaxPayload + 1, 0xFFFFFFFFu, 0}) != 0) {
		s->errors++;
		return nullptr;
	}
	uint8_t *done = (uint8_t *)calloc(s->frames / 8 + 1, 1);
	uint64_t lowest = 0, delivered = 0, sum = 0, ooo = 0, errors = 0;
	Backoff bo;
	while (delivered < s->frames && errors == 0) {
		uint32_t n = c.drain([&](uint32_t, int rc, const FrameHead &h,
					 const knit_value_t &v) {
			uint64_t seq = (uint64_t)h.generation << 32 | h.ticket;
			if (rc != 0 || seq >= s->frames || (done[seq / 8] >> (seq % 8)) & 1) {
				fprintf(stderr, "consumer: rc %d fault %#x seq %" PRIu64 "\n", rc,
					h.fault, seq);
				errors++;
				return;
			}
			if (seq >= lowest + 32) { // more than 31 later frames overtook `lowest`
				fprintf(stderr,
					"consumer: seq %" PRIu64 " while %" PRIu64 " undelivered\n",
					seq, lowest);
				errors++;
			}
			if (seq != lowest)
				ooo++;
			done[seq / 8] |= (uint8_t)(1u << (seq % 8));
			while (lowest < s->frames && (done[lowest / 8] >> (lowest % 8)) & 1)
				lowest++;
			Shape sh = shape_of(seq);
			uint64_t ck = 0;
			if (sh.type == KNIT_VALUE_I64) {
				if (v.type != KNIT_VALUE_I64 || v.i64 != (int64_t)mix(seq))
					errors++;
				ck = (uint64_t)v.i64;
			} else {
				if (v.type != sh.type || v.len != sh.len || h.task != sh.len)
					errors++;
				ck = checksum((const uint8_t *)v.data, v.len);
			}
			if (ck != h.deadline_ns) {
				fprintf(stderr, "consumer: checksum mismatch at seq %" PRIu64 "\n",
					seq);
				errors++;
			}
			sum += ck;
			delivered++;
		});
		if (n == 0)
			bo.wait();
		else
			bo.reset();
	}
	s->cons_sum = sum;
	s->delivered = delivered;
	s->out_of_order = ooo;
	s->errors += errors;
	free(done);
	return nullptr;
}

} // namespace

int main()
{
	double scale = 1.0;
	if (const char *e = getenv("KNIT_STRESS_SCALE"))
		scale = strtod(e, nullptr);
	if (!(scale > 0))
		scale = 1.0;
	uint64_t frames = (uint64_t)((SANITIZED ? 200000.0 : 10000000.0) * scale);
	if (frames == 0)
		frames = 1;

	Region region;
	int rc = region_create(RegionKind::kAnonymous, lock_region_bytes(kArenaCap),
			       "lock2_threads", &region);
	if (rc != 0) {
		printf("SKIP: region_create failed (%d)\n", rc);
		return 77;
	}
	Shared s{};
	s.lock = region.base;
	s.arena = lock_arena_shared(region.base, region.base + lock_arena_offset(), kArenaCap);
	s.frames = frames;

	double t0 = now_s();
	pthread_t pt, ct;
	pthread_create(&ct, nullptr, consumer_main, &s);
	pthread_create(&pt, nullptr, producer_main, &s);
	pthread_join(pt, nullptr);
	pthread_join(ct, nullptr);
	double dt = now_s() - t0;

	uint32_t a = *word_at(s.lock, kLockOffA), b = *word_at(s.lock, kLockOffB);
	uint32_t live = *word_at(s.lock, kLockOffPA) ^ *word_at(s.lock, kLockOffPB);
	printf("lock2_threads: %" PRIu64
	       " frames in %.2f s = %.2f M frames/s; out of order %" PRIu64
	       "; producer waits: lane full %" PRIu64 ", arena full %" PRIu64 "\n",
	       s.delivered, dt, (double)s.delivered / dt / 1e6, s.out_of_order, s.lane_full,
	       s.arena_full);
	bool ok = s.errors == 0 && s.delivered == frames && s.prod_sum == s.cons_sum && a == b &&
		  live == 0 && s.out_of_order == 0;
	if (!ok)
		printf("FAIL: out of order %" PRIu64 " errors %" PRIu64 " delivered %" PRIu64
		       "/%" PRIu64 " sums %#" PRIx64 "/%#" PRIx64 " A %#x B %#x arena live %#x\n",
		       s.out_of_order, s.errors, s.delivered, frames, s.prod_sum, s.cons_sum, a, b,
		       live);
	region_destroy(&region);
	return ok ? 0 : 1;
}
