// SPDX-License-Identifier: MIT
// tests/unit/test_backlog_work.cpp - white-box: placing calls from the
// backlog costs O(1) amortised per call, for lane-pinned calls
// (KNIT_CALL_LANE) as for the others. Counts the backlog calls placement
// examines (Pool::backlog_visits), never time.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/runtime.h"

using namespace knit::detail;

namespace {

uint32_t g_gate; // 0 = closed: "block" waits (bounded)

int64_t now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int t_block(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	const int64_t end = now_ns() + 20ll * 1000000000;
	while (!__atomic_load_n(&g_gate, __ATOMIC_ACQUIRE) && now_ns() < end) {
		struct timespec ts = {0, 200000};
		nanosleep(&ts, nullptr);
	}
	*ret = *arg;
	return 0;
}

int t_echo(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	*ret = *arg;
	return 0;
}

uint64_t visits(knit_pool_t *pool)
{
	// Dispatcher-owned: read it while holding the dispatcher.
	Pool *p = &pool->p;
	const int64_t end = now_ns() + 20ll * 1000000000;
	while (!dispatch_trylock(p)) {
		if (now_ns() >= end)
			fail_msg("the dispatcher stayed held");
		sched_yield();
	}
	const uint64_t v = p->backlog_visits;
	dispatch_unlock(p);
	return v;
}

// N calls wait in the backlog behind a blocked lane 0 (pinned, or any lane
// with every lane blocked); each further enqueue runs a placement pass.
void run(uint32_t workers, bool pinned)
{
	enum { N = 4000 };
	const knit_task_t tasks[] = {{"block", t_block, 0, 0}, {"echo", t_echo, 0, 0}};
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = workers;
	o.topology = KNIT_TOPOLOGY_LANES;
	o.park_ms = 60000;
	knit_pool_t *pool = nullptr;
	assert_int_equal(knit_pool_create(&o, tasks, 2, &pool), 0);
	__atomic_store_n(&g_gate, 0, __ATOMIC_RELEASE);
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_I64;
	knit_call_options_t co;
	memset(&co, 0, sizeof co);
	co.size = sizeof co;
	// One blocker per lane: every lane's worker is busy.
	for (uint32_t w = 0; w < workers; w++) {
		co.flags = KNIT_CALL_LANE;
		co.lane = w;
		assert_int_equal(knit_enqueue_ex(pool, 0, &v, nullptr, &co, nullptr), 0);
	}
	const uint64_t before = visits(pool);
	for (int i = 0; i < N; i++) {
		v.i64 = i;
		co.flags = pinned ? KNIT_CALL_LANE : 0;
		co.lane = 0;
		assert_int_equal(knit_enqueue_ex(pool, 1, &v, nullptr, &co, nullptr), 0);
	}
	const uint64_t during = visits(pool) - before;
	__atomic_store_n(&g_gate, 1, __ATOMIC_RELEASE);
	const int total = N + (int)workers;
	int got = 0;
	knit_completion_t c[64];
	while (got < total) {
		int n = knit_complete(pool, c, 64, 20ll * 1000000000);
		assert_true(n > 0);
		for (int k = 0; k < n; k++)
			assert_int_equal(c[k].status, 0);
		got += n;
	}
	const uint64_t after = visits(pool) - before;
	print_message("workers %u pinned %d: %llu visits while %d calls queued, %llu in all\n",
		      workers, (int)pinned, (unsigned long long)during, N,
		      (unsigned long long)after);
	// Each enqueue examines O(1) waiting calls (the head that cannot go, and
	// what it places), never the whole backlog (old: ~N^2/2 = 8e6).
	assert_true(during <= 4ull * N);
	assert_int_equal(knit_pool_destroy(pool), 0);
}

void pinned_one_lane(void **) { run(2, true); }
void pinned_single_worker(void **) { run(1, true); }
void unpinned(void **) { run(2, false); }

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pinned_one_lane),
		cmocka_unit_test(pinned_single_worker),
		cmocka_unit_test(unpinned),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
