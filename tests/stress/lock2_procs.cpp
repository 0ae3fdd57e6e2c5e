// SPDX-License-Identifier: MIT
// tests/stress/lock2_procs.cpp - lock2_threads.cpp across a process boundary:
// the parent produces into the request lock of a lane block (layout.h) that
// lives in a sealed memfd (region_create kMemfd); a forked child maps the
// same memfd a second time with region_map_fd(), unmaps the mapping it
// inherited (so any absolute pointer left in shared memory would fault), and
// consumes at that different address, verifying every frame exactly as the
// thread test does (exactly once, order (FIFO), length, checksum). The
// child then reports its totals as one frame on the lane block's return lock,
// with the roles reversed, and the parent checks them against its own.
//
// Frames: 10,000,000 natively, 200,000 under ThreadSanitizer/ASan.
// KNIT_STRESS_SCALE (a positive number, default 1) multiplies that count.
// Waiting: bounded spin then sched_yield; the parent also watches the child
// (waitpid WNOHANG) so a crashed child fails the test instead of hanging it.
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/layout.h"
#include "src/lock2.h"
#include "src/region.h"

using namespace knit::detail;

#include "stress/lock2_frames.h"

namespace {

constexpr uint64_t kRetArenaCap = 64u << 10;

struct Summary {
	uint64_t delivered, sum, out_of_order, errors;
	uint64_t child_base, parent_base; // the two mapping addresses, for the report
};

struct Lane {
	uint8_t *base;
	uint8_t *req;
	uint8_t *ret;
	ArenaShared req_arena, ret_arena;
};

Lane lane_at(uint8_t *base)
{
	Lane l;
	l.base = base;
	l.req = base + kLaneOffReqLock;
	l.ret = base + kLaneOffRetLock;
	l.req_arena = lock_arena_shared(l.req, base + lane_req_arena_offset(), kArenaCap);
	l.ret_arena =
		lock_arena_shared(l.ret, base + lane_ret_arena_offset(kArenaCap), kRetArenaCap);
	return l;
}

uint64_t block_bytes() { return lane_block_bytes(kArenaCap, kRetArenaCap); }

int child_main(Region *inherited, uint64_t frames)
{
	Region mine;
	int rc = region_map_fd(inherited->fd, block_bytes(), &mine);
	if (rc != 0) {
		fprintf(stderr, "child: region_map_fd %d\n", rc);
		return 1;
	}
	const uint64_t parent_base = (uint64_t)(uintptr_t)inherited->base;
	if (mine.base == inherited->base) {
		fprintf(stderr, "child: second mapping at the same address\n");
		return 1;
	}
	// Drop the inherited mapping: from here on only our own addresses work.
	knit_sys_munmap(inherited->base, inherited->size);
	Lane l = lane_at(mine.base);

	LockConsumer c;
	if (c.attach(l.req, l.req_arena, ConsumerLimits{kMaxPayload + 1, 0xFFFFFFFFu, 0}) != 0)
		return 1;
	uint8_t *done = (uint8_t *)calloc(frames / 8 + 1, 1);
	uint64_t lowest = 0, delivered = 0, sum = 0, ooo = 0, errors = 0;
	Backoff bo;
	while (delivered < frames && errors == 0) {
		uint32_t n = c.drain([&](uint32_t, int rc2, const FrameHead &h,
					 const knit_value_t &v) {
			uint64_t seq = (uint64_t)h.generation << 32 | h.ticket;
			if (rc2 != 0 || seq >= frames || (done[seq / 8] >> (seq % 8)) & 1) {
				fprintf(stderr, "child: rc %d fault %#x seq %" PRIu64 "\n", rc2,
					h.fault, seq);
				errors++;
				return;
			}
			if (seq >= lowest + 32) {
				fprintf(stderr,
					"child: seq %" PRIu64 " while %" PRIu64 " undelivered\n",
					seq, lowest);
				errors++;
			}
			if (seq != lowest)
				ooo++;
			done[seq / 8] |= (uint8_t)(1u << (seq % 8));
			while (lowest < frames && (done[lowest / 8] >> (lowest % 8)) & 1)
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
				const uint8_t *p = (const uint8_t *)v.data;
				if (p < mine.base || p + v.len > mine.base + mine.size)
					errors++; // a view outside our own mapping
				ck = checksum(p, v.len);
			}
			if (ck != h.deadline_ns) {
				fprintf(stderr, "child: checksum mismatch at seq %" PRIu64 "\n",
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
	free(done);

	// Report on the return lock, producer side this time.
	LockProducer p;
	if (p.attach(l.ret, l.ret_arena, sizeof(Summary)) != 0)
		return 1;
	Summary s{delivered, sum, ooo, errors, (uint64_t)(uintptr_t)mine.base, parent_base};
	knit_value_t v{};
	v.type = KNIT_VALUE_BYTES;
	v.data = &s;
	v.len = sizeof s;
	FrameHead h{};
	h.ticket = 1;
	while ((rc = p.publish(h, v)) == -KNIT_EAGAIN)
		bo.wait();
	if (rc < 0)
		return 1;
	// Stay mapped until the parent has read it (it retires the lane).
	while (!p.idle())
		bo.wait();
	region_destroy(&mine);
	return errors == 0 ? 0 : 1;
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
	int rc = region_create(RegionKind::kMemfd, block_bytes(), "lock2_procs", &region);
	if (rc != 0) {
		printf("SKIP: memfd region_create failed (%d)\n", rc);
		return 77;
	}
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0) {
		printf("SKIP: fork failed\n");
		return 77;
	}
	if (pid == 0)
		_exit(child_main(&region, frames));

	Lane l = lane_at(region.base);
	LockProducer p;
	if (p.attach(l.req, l.req_arena, kMaxPayload) != 0) {
		kill(pid, SIGKILL);
		return 1;
	}
	uint8_t *buf = (uint8_t *)malloc(kMaxPayload);
	Backoff bo;
	uint64_t sum = 0, lane_full = 0, arena_full = 0;
	uint32_t batch = 0, batch_max = 1;
	int status = 0;
	bool child_gone = false;
	auto child_dead = [&]() {
		if (!child_gone && waitpid(pid, &status, WNOHANG) == pid)
			child_gone = true;
		return child_gone;
	};
	bool ok = true;
	for (uint64_t seq = 0; seq < frames;) {
		uint64_t ck;
		rc = stage_frame(p, seq, buf, &ck);
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
			fprintf(stderr, "parent: seq %" PRIu64 " rc %d\n", seq, rc);
			ok = false;
			break;
		}
		p.flush();
		batch = 0;
		if (p.free_cached() == 0)
			lane_full++;
		else
			arena_full++;
		if ((lane_full + arena_full) % 1024 == 0 && child_dead()) {
			fprintf(stderr, "parent: child died early\n");
			ok = false;
			break;
		}
		bo.wait();
	}
	p.flush();
	free(buf);

	// The child's summary on the return lock.
	Summary s{};
	bool got = false;
	if (ok) {
		LockConsumer c;
		c.attach(l.ret, l.ret_arena, ConsumerLimits{1, 2, 0});
		uint64_t spins = 0;
		while (!got && !(++spins % 1024 == 0 && child_dead())) {
			uint32_t n = c.drain([&](uint32_t, int rc2, const FrameHead &,
						 const knit_value_t &v) {
				if (rc2 == 0 && v.type == KNIT_VALUE_BYTES && v.len == sizeof s) {
					memcpy(&s, v.data, sizeof s);
					got = true;
				}
			});
			if (n == 0)
				bo.wait();
		}
	}
	if (!child_gone)
		waitpid(pid, &status, 0);
	double dt = now_s() - t0;
	ok = ok && got && WIFEXITED(status) && WEXITSTATUS(status) == 0 && s.errors == 0 &&
	     s.delivered == frames && s.sum == sum &&
	     s.parent_base == (uint64_t)(uintptr_t)region.base && s.child_base != s.parent_base;
	uint32_t a = *word_at(l.req, kLockOffA), b = *word_at(l.req, kLockOffB);
	uint32_t live = *word_at(l.req, kLockOffPA) ^ *word_at(l.req, kLockOffPB);
	ok = ok && a == b && live == 0 && s.out_of_order == 0; // FIFO (lock2.h, "Order")
	printf("lock2_procs: %" PRIu64 " frames in %.2f s = %.2f M frames/s (parent map %#" PRIx64
	       ", child map %#" PRIx64 "); out of order %" PRIu64
	       "; producer waits: lane full %" PRIu64 ", arena full %" PRIu64 "\n",
	       s.delivered, dt, (double)s.delivered / dt / 1e6, (uint64_t)(uintptr_t)region.base,
	       s.child_base, s.out_of_order, lane_full, arena_full);
	if (!ok)
		printf("FAIL: got %d child status %#x errors %" PRIu64 " delivered %" PRIu64
		       "/%" PRIu64 " sums %#" PRIx64 "/%#" PRIx64 " A %#x B %#x arena live %#x\n",
		       got, status, s.errors, s.delivered, frames, s.sum, sum, a, b, live);
	region_destroy(&region);
	return ok ? 0 : 1;
}
