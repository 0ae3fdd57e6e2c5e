// SPDX-License-Identifier: MIT
// tests/unit/test_refill_lanes.cpp - white-box checks of the refill doorbell
// of a lanes pool (src/wake.h "The refill doorbell", L1-L3;
// tests/model/doorbell_refill_lanes.pml): a waiting host arms for a refill
// only while every worker lane holds more than kLaneRefillLowWater frames
// (published, not yet retired), its re-check counts a lane at the mark, and
// a worker's publish rings it only once its own lane is at the mark. A
// two-lane pool is built by hand over real request and return locks; rings
// are counted (the doorbell sequence, the armed word, the lane's ring
// counter), never timed, and no thread other than the test's runs.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/runtime.h"
#include "src/spin.h"
#include "src/wake.h"

using namespace knit::detail;

namespace {

constexpr uint64_t kCap = 1u << 16;
constexpr uint32_t kW = 2;

struct Fix {
	Region req_region[kW], ret_region[kW];
	alignas(Pool) unsigned char pool[sizeof(Pool)];
	alignas(Lane) unsigned char lanes[kW * sizeof(Lane)];
	WorkerLocal local[kW];
	uint32_t parked[kW], wake_seq[kW], stop[kW];
	alignas(128) uint8_t ext[kW][kLaneExtBytes];
	uint32_t db_seq, db_armed;
	Pool *p;
};

Fix *g_f;

int attach_lock(Region *r, const char *name, uint8_t **lock)
{
	if (region_create(RegionKind::kAnonymous, lock_region_bytes(kCap), name, r) != 0)
		return -1;
	*lock = r->base;
	return 0;
}

int setup(void **state)
{
	Fix *f = new Fix();
	memset(f->pool, 0, sizeof f->pool);
	memset(f->lanes, 0, sizeof f->lanes);
	Pool *p = reinterpret_cast<Pool *>(f->pool);
	f->p = p;
	p->lanes = reinterpret_cast<Lane *>(f->lanes);
	p->nworkers = kW;
	p->nlanes = kW;
	p->db_seq = &f->db_seq;
	p->db_armed = &f->db_armed;
	p->cfg.doorbell = true;
	const ConsumerLimits wl = {1, 1u << 20, kReqFlagsMask};
	for (uint32_t i = 0; i < kW; i++) {
		Lane *l = &p->lanes[i];
		l->pool = p;
		l->index = i;
		l->parked = &f->parked[i];
		l->wake_seq = &f->wake_seq[i];
		l->stop = &f->stop[i];
		l->ext = f->ext[i];
		l->local = &f->local[i];
		uint8_t *rq, *rl;
		if (attach_lock(&f->req_region[i], "test_refill_lanes_req", &rq) != 0 ||
		    attach_lock(&f->ret_region[i], "test_refill_lanes_ret", &rl) != 0)
			return -1;
		const ArenaShared qs = lock_arena_shared(rq, rq + lock_arena_offset(), kCap);
		if (l->req.attach(rq, qs, 1024) != 0 || l->wreq.attach(rq, qs, wl) != 0)
			return -1;
		if (l->ret.attach(rl, lock_arena_shared(rl, rl + lock_arena_offset(), kCap), wl) !=
		    0)
			return -1;
	}
	g_f = f;
	*state = f;
	return 0;
}

int teardown(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	for (uint32_t i = 0; i < kW; i++) {
		region_destroy(&f->req_region[i]);
		region_destroy(&f->ret_region[i]);
	}
	delete f;
	return 0;
}

// Publish n calls into lane w's request lock (the host's producer).
void publish(Pool *p, uint32_t w, uint32_t n)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_I64;
	for (uint32_t i = 0; i < n; i++) {
		FrameHead h;
		memset(&h, 0, sizeof h);
		h.ticket = i;
		h.generation = 1;
		assert_true(p->lanes[w].req.stage(h, v) >= 0);
	}
	p->lanes[w].req.flush();
}

// Worker w takes n frames and retires them (one store of B), as run_batch
// does before an early publish.
void run_n(Pool *p, uint32_t w, uint32_t n)
{
	LockConsumer &c = p->lanes[w].wreq;
	uint32_t snap = c.pending();
	for (uint32_t i = 0; i < n; i++) {
		const int lane = c.next_lane(&snap);
		assert_true(lane >= 0);
		FrameHead h;
		knit_value_t v;
		assert_int_equal(c.decode((uint32_t)lane, &h, &v), 0);
	}
	c.retire_taken();
}

uint64_t rings(Pool *p, uint32_t w) { return *lane_counter(p->lanes[w].ext, kWcDoorbellRings); }
bool cpus_full() { return spin_cap_of_machine() + 1 <= kW; }

} // namespace

static void arm_only_while_every_lane_is_above_the_mark(void **state)
{
	Pool *p = static_cast<Fix *>(*state)->p;
	publish(p, 0, kLaneRefillLowWater + 2);
	publish(p, 1, kLaneRefillLowWater + 1);
	// No backlog: the host waits for results, as ever.
	assert_false(host_refill_arm(p));
	// Fewer calls queued than fill every lane: placed as slots come back.
	knit_store_relaxed_64(&p->backlog_count, kW * kLaneInflightMax - 1);
	assert_false(host_refill_arm(p));
	knit_store_relaxed_64(&p->backlog_count, kW * kLaneInflightMax);
	// Calls queued behind lanes above the mark, every CPU running an awake
	// worker (a 2-CPU machine: the pool's 2 workers fill it).
	assert_int_equal(host_refill_arm(p), cpus_full());
	if (cpus_full())
		assert_false(host_spin_worth(p)); // never a spin on a worker's CPU then
	// A parked worker leaves a CPU: no refill arm.
	g_f->parked[1] = kParked;
	assert_false(host_refill_arm(p));
	g_f->parked[1] = kAwake;
	// A process pool never arms for a refill.
	p->untrusted_workers = true;
	assert_false(host_refill_arm(p));
	p->untrusted_workers = false;
	// One lane at the mark: the host is needed now, not later.
	run_n(p, 1, 1);
	assert_false(host_refill_arm(p));
	// A retired lane does not count, either way (nor its share of the
	// backlog).
	knit_store_relaxed_32(&p->lanes[1].state, kLaneRetired);
	knit_store_relaxed_64(&p->backlog_count, kLaneInflightMax);
	assert_int_equal(host_refill_arm(p), cpus_full());
	knit_store_relaxed_32(&p->lanes[0].state, kLaneRetired);
	assert_false(host_refill_arm(p)); // no lane left to refill
}

static void recheck_counts_a_lane_at_the_mark(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	Pool *p = f->p;
	publish(p, 0, kLaneRefillLowWater + 1);
	publish(p, 1, kLaneRefillLowWater + 3);
	assert_false(host_refill_recheck(p)); // both awake, both above the mark
	// Frames taken but not retired still count as queued.
	LockConsumer &c = p->lanes[0].wreq;
	uint32_t snap = c.pending();
	FrameHead h;
	knit_value_t v;
	assert_int_equal(c.decode((uint32_t)c.next_lane(&snap), &h, &v), 0);
	assert_false(host_refill_recheck(p));
	// A worker parked for room waits for the host's reap.
	f->parked[1] = kParkedForRoom;
	assert_true(host_refill_recheck(p));
	f->parked[1] = kAwake;
	// The retire brings lane 0 to the mark.
	c.retire_taken();
	assert_true(host_refill_recheck(p));
	// Every lane retired: nothing to wait for.
	knit_store_relaxed_32(&p->lanes[0].state, kLaneRetired);
	assert_false(host_refill_recheck(p));
	knit_store_relaxed_32(&p->lanes[1].state, kLaneRetired);
	assert_true(host_refill_recheck(p));
}

static void publish_rings_only_at_its_own_lanes_mark(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	Pool *p = f->p;
	publish(p, 0, kLaneRefillLowWater + 2);
	publish(p, 1, kLaneRefillLowWater);
	f->db_armed = kArmedRefill;
	run_n(p, 0, 1);
	worker_ring(&p->lanes[0]); // kLaneRefillLowWater + 1 left: no ring
	assert_int_equal(f->db_armed, kArmedRefill);
	assert_int_equal(f->db_seq, 0);
	assert_int_equal(rings(p, 0), 0);
	run_n(p, 0, 1); // the retire that crosses the mark
	worker_ring(&p->lanes[0]);
	assert_int_equal(f->db_armed, kArmedNone);
	assert_int_equal(f->db_seq, 1);
	assert_int_equal(rings(p, 0), 1);
	// One ring per arm: the next publish finds nothing armed.
	run_n(p, 1, 1);
	worker_ring(&p->lanes[1]);
	assert_int_equal(f->db_seq, 1);
	assert_int_equal(rings(p, 1), 0);
	// Frames another host thread published meanwhile count (a fresh load
	// of A): lane 0 back above the mark does not ring.
	publish(p, 0, 8);
	f->db_armed = kArmedRefill;
	run_n(p, 0, 1);
	worker_ring(&p->lanes[0]);
	assert_int_equal(f->db_armed, kArmedRefill);
	assert_int_equal(f->db_seq, 1);
	// Armed for any result: every publish rings, the lane's level aside.
	f->db_armed = kArmedAny;
	worker_ring(&p->lanes[0]);
	assert_int_equal(f->db_armed, kArmedNone);
	assert_int_equal(f->db_seq, 2);
	assert_int_equal(rings(p, 0), 2);
}

static bool keep_awake(Lane *) { return true; }

static void every_park_rings_a_refill_arm(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	Pool *p = f->p;
	publish(p, 0, kLanes); // a full lane: far above the mark
	f->db_armed = kArmedRefill;
	// The re-check finds work (so the park does not sleep): the ring
	// happened before it all the same.
	assert_int_equal(worker_park(&p->lanes[0], kParkedForRoom, keep_awake, 0), kWokeRecheck);
	assert_int_equal(f->db_armed, kArmedNone);
	assert_int_equal(f->db_seq, 1);
	assert_int_equal(rings(p, 0), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(arm_only_while_every_lane_is_above_the_mark, setup,
						teardown),
		cmocka_unit_test_setup_teardown(recheck_counts_a_lane_at_the_mark, setup, teardown),
		cmocka_unit_test_setup_teardown(publish_rings_only_at_its_own_lanes_mark, setup,
						teardown),
		cmocka_unit_test_setup_teardown(every_park_rings_a_refill_arm, setup, teardown),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
