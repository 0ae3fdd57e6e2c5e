// SPDX-License-Identifier: MIT
// tests/unit/test_host_spin.cpp - white-box checks of the host's spin after
// a wake it sent (src/wake.cpp, wake.h): only the thread that sent a wake,
// only for that pool, a window bounded by kHostWakeSpinMaxNs, at most one
// host spinner, none beside a full set of spinning workers, a stale wake
// never spun on, and the estimate held at its peak; while the pool's awake
// workers fill every CPU, the pre-sleep spin only while such spins pay. Counted, never timed:
// the only clock use is a sleep longer than the bound, which pins the
// estimate to the bound.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/runtime.h"
#include "src/spin.h"
#include "src/wake.h"

using namespace knit::detail;

namespace {

// Pools are only keys here: two distinct addresses.
alignas(Pool) unsigned char g_a[sizeof(Pool)], g_b[sizeof(Pool)];
Pool *pool_a() { return reinterpret_cast<Pool *>(g_a); }
Pool *pool_b() { return reinterpret_cast<Pool *>(g_b); }

void sleep_ns(int64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

} // namespace

static void no_wake_no_spin(void **)
{
	// This thread has sent no wake (a fresh test thread state).
	assert_int_equal(host_wake_spin_begin(pool_a(), knit_now_ns()), 0);
}

static void window_only_for_the_pool_woken(void **)
{
	if (spin_cap_of_machine() == 0) {
		// One CPU: a host never spins beside the worker it woke.
		host_sent_wake(pool_a());
		assert_int_equal(host_wake_spin_begin(pool_a(), knit_now_ns()), 0);
		return;
	}
	const int64_t t0 = knit_now_ns();
	host_sent_wake(pool_a());
	const int64_t t1 = knit_now_ns();
	assert_int_equal(host_wake_spin_begin(pool_b(), t1), 0);
	const int64_t end = host_wake_spin_begin(pool_a(), t1);
	assert_true(end > t1);
	assert_true(end - t0 <= kHostWakeSpinMaxNs);
	// At most one host thread spins: the slot is taken.
	host_sent_wake(pool_a());
	assert_int_equal(host_wake_spin_begin(pool_a(), knit_now_ns()), 0);
	host_wake_spin_done();
	host_wake_seen(pool_a());
}

static void denied_beside_spinning_workers(void **)
{
	const uint32_t cap = spin_cap_of_machine();
	knit_store_relaxed_32(&g_spinners, cap); // every worker slot taken
	host_sent_wake(pool_a());
	assert_int_equal(host_wake_spin_begin(pool_a(), knit_now_ns()), 0);
	knit_store_relaxed_32(&g_spinners, 0);
	host_wake_seen(pool_a());
}

static void stale_wake_not_spun_on(void **)
{
	host_sent_wake(pool_a());
	sleep_ns(2 * kHostWakeSpinMaxNs); // past any window
	assert_int_equal(host_wake_spin_begin(pool_a(), knit_now_ns()), 0);
	// Dropped: no sample from it, and no window on the next look.
	assert_int_equal(host_wake_spin_begin(pool_a(), knit_now_ns()), 0);
}

static void slow_wake_raises_window_to_the_bound_and_holds(void **)
{
	if (spin_cap_of_machine() == 0)
		return; // no window at all on one CPU (above)
	// A wake answered after longer than the bound: the estimate is capped
	// at the bound, the window (twice the estimate) too.
	host_sent_wake(pool_a());
	sleep_ns(2 * kHostWakeSpinMaxNs);
	host_wake_seen(pool_a());
	const int64_t t0 = knit_now_ns();
	host_sent_wake(pool_a());
	const int64_t t1 = knit_now_ns();
	int64_t end = host_wake_spin_begin(pool_a(), t1);
	assert_true(end >= t0 + kHostWakeSpinMaxNs);
	assert_true(end <= t1 + kHostWakeSpinMaxNs);
	host_wake_spin_done();
	// A fast answer lowers the estimate by 1/16 of the gap only: twice the
	// estimate still reaches the bound.
	host_wake_seen(pool_a());
	const int64_t t2 = knit_now_ns();
	host_sent_wake(pool_a());
	const int64_t t3 = knit_now_ns();
	end = host_wake_spin_begin(pool_a(), t3);
	assert_true(end >= t2 + kHostWakeSpinMaxNs);
	assert_true(end <= t3 + kHostWakeSpinMaxNs);
	host_wake_spin_done();
	host_wake_seen(pool_a());
}

// A pool of `n` worker lanes whose park words are `parked` (only the fields
// host_spin_cpu_free() reads are set).
alignas(Pool) unsigned char g_p[sizeof(Pool)];
alignas(Lane) unsigned char g_lanes[4 * sizeof(Lane)];
Pool *pool_of(uint32_t n, uint32_t *parked)
{
	memset(g_p, 0, sizeof g_p);
	memset(g_lanes, 0, sizeof g_lanes);
	Pool *p = reinterpret_cast<Pool *>(g_p);
	p->lanes = reinterpret_cast<Lane *>(g_lanes);
	p->nworkers = n;
	for (uint32_t i = 0; i < n; i++)
		p->lanes[i].parked = &parked[i];
	return p;
}

static void no_spin_while_awake_workers_fill_the_cpus(void **)
{
	const uint32_t cpus = spin_cap_of_machine() + 1;
	if (cpus > 3)
		skip(); // the table below has 4 lanes: room for 3 CPUs and one more worker
	uint32_t parked[4] = {kParked, kParked, kParked, kParked};
	Pool *p = pool_of(cpus + 1, parked);
	assert_true(host_spin_cpu_free(p)); // every worker parked
	for (uint32_t i = 0; i + 1 < cpus; i++)
		parked[i] = kAwake;
	assert_true(host_spin_cpu_free(p)); // one CPU left for the host
	parked[cpus] = kParkedForRoom;      // parked all the same: no CPU
	assert_true(host_spin_cpu_free(p));
	parked[cpus - 1] = kAwake; // as many awake as CPUs
	assert_false(host_spin_cpu_free(p));
	parked[cpus] = kAwake; // more
	assert_false(host_spin_cpu_free(p));
	parked[0] = kParked;
	assert_false(host_spin_cpu_free(p)); // still as many as CPUs
	parked[cpus] = kParked;
	assert_true(host_spin_cpu_free(p)); // one fewer again
}

static void full_cpus_spin_only_while_it_pays(void **)
{
	const uint32_t cpus = spin_cap_of_machine() + 1;
	if (cpus > 3)
		skip(); // the table has 4 lanes
	uint32_t parked[4] = {kAwake, kAwake, kAwake, kAwake};
	Pool *p = pool_of(cpus, parked); // every CPU runs an awake worker
	assert_true(host_spin_worth(p)); // no history: spin
	host_spin_outcome(true);
	host_sleep_begin();
	host_sleep_end();
	assert_true(host_spin_worth(p)); // the spin found it: spin again
	host_spin_outcome(false);        // came up empty: the wait was long
	host_sleep_begin();
	sleep_ns(2 * kHostSpinNs);
	host_sleep_end();
	assert_false(host_spin_worth(p)); // a long sleep again: still no spin
	host_sleep_begin();
	sleep_ns(2 * kHostSpinNs);
	host_sleep_end();
	assert_false(host_spin_worth(p));
	// A CPU left: spin whatever the history.
	parked[0] = kParked;
	assert_true(host_spin_worth(p));
	host_sleep_begin(); // not timed (a CPU was left)
	sleep_ns(2 * kHostSpinNs);
	host_sleep_end();
	parked[0] = kAwake;
	assert_false(host_spin_worth(p)); // the skip is kept
	// A sleep shorter than a spin turns the spin back on (back to back;
	// bounded retries for a test thread preempted in between).
	bool again = false;
	for (int i = 0; i < 1000 && !again; i++) {
		assert_false(host_spin_worth(p));
		host_sleep_begin();
		host_sleep_end();
		again = host_spin_worth(p);
	}
	assert_true(again);
	host_spin_outcome(true);
	host_sleep_begin();
	host_sleep_end();
}

// Claims and wakes (spin.h): the claim size follows the estimate, one call
// with none or with long calls; the estimate rises at once and falls by an
// eighth of the gap; a peer is woken only for more than a wake's work.
static void claim_size_and_wake_follow_the_estimate(void **)
{
	assert_int_equal(steal_take_size(0, 8), 1u); // not timed yet
	assert_int_equal(steal_take_size(kClaimBudgetNs, 8), 1u);
	assert_int_equal(steal_take_size(kClaimBudgetNs * 10, 8), 1u);
	assert_int_equal(steal_take_size(kClaimBudgetNs / 2, 8), 2u);
	assert_int_equal(steal_take_size(100, 8), 8u); // the region bounds it
	assert_int_equal(steal_take_size(100, 1), 1u);
	assert_int_equal(steal_take_size(kClaimBudgetNs / 3, 2), 2u);
	assert_int_equal(steal_svc_update(0, 500), 500);
	assert_int_equal(steal_svc_update(100, 50000), 50000); // a long call: at once
	assert_int_equal(steal_svc_update(900, 100), 800);     // down by an eighth
	assert_int_equal(steal_svc_update(100, 0), 100 - (100 - 1) / 8);
	assert_true(steal_peer_wake_pays(3, 0)); // no estimate: wake
	assert_false(steal_peer_wake_pays(32, 100));
	assert_true(steal_peer_wake_pays(32, 1000));
	assert_true(steal_peer_wake_pays(1, kWakePaysNs + 1));
	assert_false(steal_peer_wake_pays(1, kWakePaysNs));
	// The wake estimate: the first sample; then an eighth of the way
	// towards the smaller of the last two samples, either way.
	assert_int_equal(steal_wake_svc_update(0, 0, 300), 300);
	assert_int_equal(steal_wake_svc_update(0, 0, 0), 1);
	assert_int_equal(steal_wake_svc_update(300, 300, 300000), 300); // one slow sample: no move
	assert_int_equal(steal_wake_svc_update(300, 300000, 300000), 300 + (300000 - 300) / 8);
	assert_int_equal(steal_wake_svc_update(900, 900, 100), 800); // down by an eighth
	assert_int_equal(steal_wake_svc_update(900, 100, 900), 800); // the smaller of the two
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_wake_no_spin),
		cmocka_unit_test(window_only_for_the_pool_woken),
		cmocka_unit_test(denied_beside_spinning_workers),
		cmocka_unit_test(stale_wake_not_spun_on),
		cmocka_unit_test(slow_wake_raises_window_to_the_bound_and_holds),
		cmocka_unit_test(no_spin_while_awake_workers_fill_the_cpus),
		cmocka_unit_test(full_cpus_spin_only_while_it_pays),
		cmocka_unit_test(claim_size_and_wake_follow_the_estimate),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
