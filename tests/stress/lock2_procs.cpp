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
	const Consumed r = consume_frames(c, frames, "child", mine.base, mine.base + mine.size);
	Backoff bo;

	// Report on the return lock, producer side this time.
	LockProducer p;
	if (p.attach(l.ret, l.ret_arena, sizeof(Summary)) != 0)
		return 1;
	Summary s{r.delivered, r.sum, r.out_of_order, r.errors, (uint64_t)(uintptr_t)mine.base,
		  parent_base};
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
	return r.errors == 0 ? 0 : 1;
}

} // namespace

int main()
{
	const uint64_t frames = stress_frames();

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
	int status = 0;
	bool child_gone = false;
	auto child_dead = [&]() {
		if (!child_gone && waitpid(pid, &status, WNOHANG) == pid)
			child_gone = true;
		return child_gone;
	};
	const Produced pr = produce_frames(p, frames, "parent", [&](uint64_t waits) {
		if (waits % 1024 == 0 && child_dead()) {
			fprintf(stderr, "parent: child died early\n");
			return false;
		}
		return true;
	});
	bool ok = pr.ok;
	const uint64_t sum = pr.sum;
	Backoff bo;

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
	       s.child_base, s.out_of_order, pr.lane_full, pr.arena_full);
	if (!ok)
		printf("FAIL: got %d child status %#x errors %" PRIu64 " delivered %" PRIu64
		       "/%" PRIu64 " sums %#" PRIx64 "/%#" PRIx64 " A %#x B %#x arena live %#x\n",
		       got, status, s.errors, s.delivered, frames, s.sum, sum, a, b, live);
	region_destroy(&region);
	return ok ? 0 : 1;
}
