// SPDX-License-Identifier: MIT
// tests/unit/test_refill.cpp - white-box checks of the refill doorbell
// (src/wake.h "The refill doorbell", L1-L3; tests/model/doorbell_refill.pml):
// when a waiting host arms for a refill instead of for any result, what its
// re-check counts, and which worker rings it (a publish only once the submit
// lock is at or below kRefillLowWater; every park). A two-worker steal pool
// is built by hand over a real steal area and return lock; rings are
// counted (the doorbell sequence, the armed word, the lane's ring counter),
// never timed, and no thread other than the test's runs.
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
	Region steal_region, ret_region[kW];
	alignas(Pool) unsigned char pool[sizeof(Pool)];
	alignas(Lane) unsigned char lanes[kW * sizeof(Lane)];
	WorkerLocal local[kW];
	uint32_t parked[kW], wake_seq[kW], stop[kW];
	alignas(128) uint8_t ext[kW][kLaneExtBytes];
	uint32_t db_seq, db_armed;
	Pool *p;
};

Fix *g_f;

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
	p->cfg.steal_g = steal_max_region_lanes(kW);
	if (region_create(RegionKind::kAnonymous, steal_area_bytes(kCap), "test_refill",
			  &f->steal_region) != 0)
		return -1;
	StealHost &s = p->steal;
	s.on = true;
	s.ctl = f->steal_region.base;
	s.lock = s.ctl + kStealLockOff;
	const ArenaShared sh = lock_arena_shared(s.lock, s.lock + lock_arena_offset(), kCap);
	if (s.req.attach_steal(s.lock, sh, 1024, s.ctl, kW) != 0)
		return -1;
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
		if (l->sc.attach(s.lock, sh, wl, s.ctl, kW, i, p->cfg.steal_g) != 0)
			return -1;
		l->sc.set_take_max(1);
		if (region_create(RegionKind::kAnonymous, lock_region_bytes(kCap),
				  "test_refill_ret", &f->ret_region[i]) != 0)
			return -1;
		uint8_t *rl = f->ret_region[i].base;
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
	region_destroy(&f->steal_region);
	for (uint32_t i = 0; i < kW; i++)
		region_destroy(&f->ret_region[i]);
	delete f;
	return 0;
}

// Publish n calls into the submit lock (the host's producer).
void publish(Pool *p, uint32_t n)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_I64;
	for (uint32_t i = 0; i < n; i++) {
		FrameHead h;
		memset(&h, 0, sizeof h);
		h.ticket = i;
		h.generation = 1;
		assert_true(p->steal.req.stage(h, v) >= 0);
	}
	p->steal.req.flush();
}

// Worker w claims one call (and retires it at once).
void claim_one(Pool *p, uint32_t w)
{
	const uint32_t take =
		p->lanes[w].sc.claim([](uint32_t, int rc, const FrameHead &, const knit_value_t &) {
			assert_int_equal(rc, 0);
		});
	assert_int_equal(__builtin_popcount(take), 1);
}

uint32_t pending(Pool *p) { return (uint32_t)__builtin_popcount(p->lanes[0].sc.pending()); }
uint64_t rings(Pool *p, uint32_t w) { return *lane_counter(p->lanes[w].ext, kWcDoorbellRings); }
bool cpus_full() { return spin_cap_of_machine() + 1 <= kW; }

} // namespace

static void arm_only_behind_a_full_submit_lock(void **state)
{
	Pool *p = static_cast<Fix *>(*state)->p;
	publish(p, kRefillLowWater + 2);
	// No backlog: the host waits for results, as ever.
	assert_false(host_refill_arm(p));
	knit_store_relaxed_64(&p->backlog_count, 5);
	// Calls queued behind a lock above the mark, every CPU running an
	// awake worker (a 2-CPU machine: the pool's 2 workers fill it).
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
	// At or below the mark: the host is needed now, not later.
	claim_one(p, 0);
	claim_one(p, 1);
	assert_int_equal(pending(p), kRefillLowWater);
	assert_false(host_refill_arm(p));
}

static void recheck_counts_what_needs_the_host(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	Pool *p = f->p;
	publish(p, kRefillLowWater + 1);
	assert_int_equal(pending(p), kRefillLowWater + 1);
	assert_false(host_refill_recheck(p)); // both awake, lock above the mark
	// A result on an awake worker's return lock does not count (L1 rings
	// for it once the lock runs low).
	knit_store_release_32(p->lanes[1].ret.publish_word(), 1);
	assert_false(host_refill_recheck(p));
	// ... but on a parked worker's, it does: it parked before the arm.
	f->parked[1] = kParked;
	assert_true(host_refill_recheck(p));
	knit_store_relaxed_32(&p->lanes[1].ret_seen, 1); // reaped
	assert_false(host_refill_recheck(p));
	// A worker parked for room waits for the host's reap.
	f->parked[0] = kParkedForRoom;
	assert_true(host_refill_recheck(p));
	f->parked[0] = kAwake;
	f->parked[1] = kAwake;
	assert_false(host_refill_recheck(p));
	// The lock at the mark.
	claim_one(p, 0);
	assert_true(host_refill_recheck(p));
}

static void publish_rings_only_at_the_mark(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	Pool *p = f->p;
	publish(p, kRefillLowWater + 2);
	f->db_armed = kArmedRefill;
	claim_one(p, 0);
	worker_ring(&p->lanes[0]); // kRefillLowWater + 1 left: no ring
	assert_int_equal(f->db_armed, kArmedRefill);
	assert_int_equal(f->db_seq, 0);
	assert_int_equal(rings(p, 0), 0);
	claim_one(p, 1); // the claim that crosses the mark: the peer's
	worker_ring(&p->lanes[1]);
	assert_int_equal(f->db_armed, kArmedNone);
	assert_int_equal(f->db_seq, 1);
	assert_int_equal(rings(p, 1), 1);
	// One ring per arm: the next publish finds nothing armed.
	claim_one(p, 0);
	worker_ring(&p->lanes[0]);
	assert_int_equal(f->db_seq, 1);
	assert_int_equal(rings(p, 0), 0);
	// Armed for any result: every publish rings, the lock's level aside.
	f->db_armed = kArmedAny;
	publish(p, 8);
	worker_ring(&p->lanes[0]);
	assert_int_equal(f->db_armed, kArmedNone);
	assert_int_equal(f->db_seq, 2);
	assert_int_equal(rings(p, 0), 1);
}

static bool keep_awake(Lane *) { return true; }

static void every_park_rings_a_refill_arm(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	Pool *p = f->p;
	publish(p, kLanes); // a full lock: far above the mark
	f->db_armed = kArmedRefill;
	// The re-check finds work (so the park does not sleep): the ring
	// happened before it all the same.
	assert_int_equal(worker_park(&p->lanes[0], kParkedForRoom, keep_awake, 0), kWokeRecheck);
	assert_int_equal(f->db_armed, kArmedNone);
	assert_int_equal(f->db_seq, 1);
	assert_int_equal(rings(p, 0), 1);
	// A host armed for any result is the publisher's to ring, not the
	// parker's.
	f->db_armed = kArmedAny;
	assert_int_equal(worker_park(&p->lanes[1], kParked, keep_awake, 0), kWokeRecheck);
	assert_int_equal(f->db_armed, kArmedAny);
	assert_int_equal(f->db_seq, 1);
	assert_int_equal(rings(p, 1), 0);
}

static bool host_awake(Pool *, void *, int64_t *) { return true; }

static void refill_arm_keeps_another_waiters_any(void **state)
{
	Fix *f = static_cast<Fix *>(*state);
	Pool *p = f->p;
	// Nothing armed: the refill arm takes it.
	bool refill = true;
	host_doorbell_sleep(p, true, host_awake, nullptr, &refill);
	assert_true(refill);
	assert_int_equal(f->db_armed, kArmedRefill);
	// Another waiter armed for any result: kept, and we wait as it asks.
	f->db_armed = kArmedAny;
	host_doorbell_sleep(p, true, host_awake, nullptr, &refill);
	assert_false(refill);
	assert_int_equal(f->db_armed, kArmedAny);
	// An arm for any result replaces a refill arm (its sleeper is rung sooner).
	f->db_armed = kArmedRefill;
	host_doorbell_sleep(p, true, host_awake, nullptr);
	assert_int_equal(f->db_armed, kArmedAny);
	assert_int_equal(knit_load_relaxed_64(&p->st_doorbell_arms), 3);
	assert_int_equal(knit_load_relaxed_32(&p->host_waiters), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(arm_only_behind_a_full_submit_lock, setup,
						teardown),
		cmocka_unit_test_setup_teardown(recheck_counts_what_needs_the_host, setup,
						teardown),
		cmocka_unit_test_setup_teardown(publish_rings_only_at_the_mark, setup, teardown),
		cmocka_unit_test_setup_teardown(every_park_rings_a_refill_arm, setup, teardown),
		cmocka_unit_test_setup_teardown(refill_arm_keeps_another_waiters_any, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
