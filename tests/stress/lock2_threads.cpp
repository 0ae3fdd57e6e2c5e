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
// head (stress/lock2_frames.h); the totals (count, sum of checksums) must
// match at the end.
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
	const uint8_t *region_end;
	ArenaShared arena;
	uint64_t frames;
	// results
	Produced produced;
	Consumed consumed;
	uint64_t errors = 0;
};

void *producer_main(void *arg)
{
	Shared *s = (Shared *)arg;
	LockProducer p;
	if (p.attach(s->lock, s->arena, kMaxPayload) != 0) {
		s->errors++;
		return nullptr;
	}
	s->produced = produce_frames(p, s->frames, "producer", [](uint64_t) { return true; });
	if (!s->produced.ok)
		s->errors++;
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
	s->consumed = consume_frames(c, s->frames, "consumer", s->lock, s->region_end);
	return nullptr;
}

} // namespace

int main()
{
	const uint64_t frames = stress_frames();

	Region region;
	int rc = region_create(RegionKind::kAnonymous, lock_region_bytes(kArenaCap),
			       "lock2_threads", &region);
	if (rc != 0) {
		printf("SKIP: region_create failed (%d)\n", rc);
		return 77;
	}
	Shared s{};
	s.lock = region.base;
	s.region_end = region.base + region.size;
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
	const Consumed &got = s.consumed;
	printf("lock2_threads: %" PRIu64
	       " frames in %.2f s = %.2f M frames/s; out of order %" PRIu64
	       "; producer waits: lane full %" PRIu64 ", arena full %" PRIu64 "\n",
	       got.delivered, dt, (double)got.delivered / dt / 1e6, got.out_of_order,
	       s.produced.lane_full, s.produced.arena_full);
	const uint64_t errors = s.errors + got.errors;
	bool ok = errors == 0 && got.delivered == frames && s.produced.sum == got.sum && a == b &&
		  live == 0 && got.out_of_order == 0;
	if (!ok)
		printf("FAIL: out of order %" PRIu64 " errors %" PRIu64 " delivered %" PRIu64
		       "/%" PRIu64 " sums %#" PRIx64 "/%#" PRIx64 " A %#x B %#x arena live %#x\n",
		       got.out_of_order, errors, got.delivered, frames, s.produced.sum, got.sum, a,
		       b, live);
	region_destroy(&region);
	return ok ? 0 : 1;
}
