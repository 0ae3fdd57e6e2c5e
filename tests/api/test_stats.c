/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_stats.c - knit_pool_stats: argument and size checks, the
 * counters as oracles: a cold call costs exactly one wakes_sent and one
 * wakes_received, hot calls none; doorbell arms/rings/wakes; per-lane calls;
 * monotonic counters; watchdog_expiries == 0.
 */
#include "api/kt.h"

#include <unistd.h>

KT(stats, bad_args)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	cr_expect_eq(knit_pool_stats(NULL, &s, sizeof s), -KNIT_EINVAL);
	cr_expect_eq(knit_pool_stats(pool, NULL, sizeof s), -KNIT_EINVAL);
	cr_expect_eq(knit_pool_stats(pool, &s, 0), -KNIT_EVERSION);
	cr_expect_eq(knit_pool_stats(pool, &s, offsetof(knit_pool_stats_t, lane) - 1),
		     -KNIT_EVERSION);
	cr_expect_eq(knit_pool_stats(pool, &s, sizeof s + 1), -KNIT_EVERSION);
	kt_destroy(pool);
}

KT(stats, short_size_fills_prefix_only)
{
	knit_pool_t *pool = kt_pool_n(2);
	knit_pool_stats_t s;
	memset(&s, 0xAB, sizeof s);
	size_t n = offsetof(knit_pool_stats_t, lane);
	s.size = (uint32_t)n;
	cr_assert_eq(knit_pool_stats(pool, &s, n), 0);
	cr_expect_eq(s.workers, 2);
	cr_expect_eq(s.lanes, 2);
	const unsigned char *b = (const unsigned char *)&s;
	for (size_t i = n; i < sizeof s; i++)
		cr_assert_eq(b[i], 0xAB, "byte %zu past size written", i);
	/* One lane's worth. */
	memset(&s, 0xAB, sizeof s);
	n = offsetof(knit_pool_stats_t, lane) + sizeof(knit_lane_stats_t);
	s.size = (uint32_t)n;
	cr_assert_eq(knit_pool_stats(pool, &s, n), 0);
	for (size_t i = n; i < sizeof s; i++)
		cr_assert_eq(b[i], 0xAB, "byte %zu past size written", i);
	/* A libknitting 1.0 caller's structure ends with hard_kills: it gets
	 * everything but backlogged (1.1), which stays untouched. */
	memset(&s, 0xAB, sizeof s);
	n = offsetof(knit_pool_stats_t, backlogged);
	cr_assert_eq(n, 6384, "the 1.0 structure's size");
	s.size = (uint32_t)n;
	cr_assert_eq(knit_pool_stats(pool, &s, n), 0);
	cr_expect_eq(s.hard_kills, 0);
	for (size_t i = n; i < sizeof s; i++)
		cr_assert_eq(b[i], 0xAB, "byte %zu past size written", i);
	kt_destroy(pool);
}

KT(stats, counts_calls)
{
	enum { N = 120 };
	knit_pool_t *pool = kt_pool_lanes(3); /* KNIT_CALL_LANE needs lanes */
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.lanes, 3);
	cr_expect_eq(s.workers, 3);
	cr_expect_eq(s.topology, KNIT_TOPOLOGY_LANES);
	cr_expect_eq(s.enqueued, 0);
	cr_expect_eq(s.completed, 0);
	uint32_t echo = kt_id(pool, "echo");
	for (int i = 0; i < N; i++)
		kt_enq_ex(pool, echo, kt_i64(i), NULL, KNIT_CALL_LANE, 0, (uint32_t)(i % 3));
	knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N);
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, N);
	cr_expect_eq(s.completed, N);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.backlog, 0);
	cr_expect_eq(s.inline_calls, 0);
	for (int l = 0; l < 3; l++)
		cr_expect_eq(s.lane[l].calls, N / 3, "lane %d calls %llu", l,
			     (unsigned long long)s.lane[l].calls);
	for (int l = 3; l < KNIT_MAX_WORKERS + 1; l++)
		cr_expect_eq(s.lane[l].calls, 0);
	kt_destroy(pool);
}

KT(stats, pending_counts_waiting_calls)
{
	knit_pool_t *pool = kt_pool_n(1);
	kt_enq(pool, kt_id(pool, "block"), kt_i64(0), NULL);
	cr_assert(kt_wait_started(1));
	for (int i = 0; i < 40; i++)
		kt_enq(pool, kt_id(pool, "echo"), kt_i64(i), NULL);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 41);
	cr_expect_eq(s.pending, 41);
	cr_expect_eq(s.completed, 0);
	kt_gate_open();
	knit_completion_t out[41];
	cr_assert_eq(kt_reap(pool, out, 41), 41);
	kt_stats(pool, &s);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.completed, 41);
	kt_destroy(pool);
}

/* Wait (bounded) until lane 0's parks exceeds `than`; then give the worker a
 * moment to be inside futex wait (the count is bumped just before it). */
static int wait_parked(knit_pool_t *pool, uint64_t than)
{
	knit_pool_stats_t s;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (kt_now_ns() < end) {
		kt_stats(pool, &s);
		if (s.lane[0].parks > than) {
			kt_sleep_ms(20);
			return 1;
		}
		kt_sleep_ms(1);
	}
	return 0;
}

KT(stats, cold_call_one_wake)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.spin_us = KNIT_ZERO; /* park as soon as idle */
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	knit_pool_stats_t a, b;
	cr_assert(wait_parked(pool, 0), "worker never parked");
	for (int i = 0; i < 10; i++) {
		kt_stats(pool, &a);
		knit_completion_t c;
		knit_value_t v = kt_i64(i);
		cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0);
		cr_expect_eq(c.status, 0);
		kt_stats(pool, &b);
		cr_expect_eq(b.lane[0].wakes_sent - a.lane[0].wakes_sent, 1,
			     "round %d: cold call sent %llu wakes", i,
			     (unsigned long long)(b.lane[0].wakes_sent - a.lane[0].wakes_sent));
		/* The worker bumps wakes_received itself: wait for it (bounded). */
		int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
		while (b.lane[0].wakes_received == a.lane[0].wakes_received && kt_now_ns() < end) {
			kt_sleep_ms(1);
			kt_stats(pool, &b);
		}
		cr_expect_eq(
			b.lane[0].wakes_received - a.lane[0].wakes_received, 1,
			"round %d: cold call received %llu wakes", i,
			(unsigned long long)(b.lane[0].wakes_received - a.lane[0].wakes_received));
		/* It was parked at `a`; after the call it parks once more. */
		cr_assert(wait_parked(pool, a.lane[0].parks),
			  "worker never parked again (round %d)", i);
	}
	kt_stats(pool, &b);
	cr_expect_eq(b.lane[0].watchdog_expiries, 0);
	kt_destroy(pool);
}

KT(stats, hot_calls_no_wake)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		/* No worker spins on one CPU (knit_pool_create(3), Spinning). */
		printf("SKIP: one CPU online: workers never spin\n");
		fflush(stdout);
		cr_skip_test("one CPU online");
	}
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.spin_us = 1000000; /* spin up to 1 s between calls */
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	knit_completion_t c;
	knit_value_t v = kt_i64(1);
	cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0); /* warm: the worker now spins */
	knit_pool_stats_t a, b;
	kt_stats(pool, &a);
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0);
		cr_expect_eq(c.status, 0);
	}
	kt_stats(pool, &b);
	cr_expect_eq(b.lane[0].wakes_sent - a.lane[0].wakes_sent, 0, "hot calls sent %llu wakes",
		     (unsigned long long)(b.lane[0].wakes_sent - a.lane[0].wakes_sent));
	cr_expect_eq(b.lane[0].wakes_received - a.lane[0].wakes_received, 0);
	cr_expect_eq(b.lane[0].parks - a.lane[0].parks, 0);
	kt_destroy(pool);
}

/* Open the gate after a pause, from another thread. */
static void *opener(void *p)
{
	(void)p;
	kt_sleep_ms(100);
	kt_gate_open();
	return NULL;
}

static void doorbell_case(uint32_t doorbell, int expect_ring)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.doorbell = doorbell;
	knit_pool_t *pool = kt_pool(&o);
	knit_pool_stats_t a, b;
	kt_stats(pool, &a);
	kt_enq(pool, kt_id(pool, "block"), kt_i64(0), NULL);
	cr_assert(kt_wait_started(1));
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, opener, NULL), 0);
	knit_completion_t c;
	int rc = knit_complete(pool, &c, 1, 10ll * 1000 * 1000 * 1000);
	pthread_join(th, NULL);
	cr_assert_eq(rc, 1);
	cr_expect_eq(c.status, 0);
	kt_stats(pool, &b);
	uint64_t rings = b.lane[0].doorbell_rings - a.lane[0].doorbell_rings;
	if (expect_ring) {
		cr_expect_geq(b.doorbell_arms - a.doorbell_arms, 1,
			      "a waiting host armed the doorbell");
		cr_expect_eq(rings, 1, "one ring per burst: %llu", (unsigned long long)rings);
		cr_expect_eq(b.doorbell_wakes - a.doorbell_wakes, 1, "host woken by the ring: %llu",
			     (unsigned long long)(b.doorbell_wakes - a.doorbell_wakes));
	} else {
		cr_expect_eq(b.doorbell_arms - a.doorbell_arms, 0, "doorbell off but armed");
		cr_expect_eq(rings, 0, "doorbell off but rung");
		cr_expect_eq(b.doorbell_wakes - a.doorbell_wakes, 0);
	}
	kt_destroy(pool);
}

KT(stats, doorbell_on_rings_once) { doorbell_case(KNIT_DOORBELL_DEFAULT, 1); }

KT(stats, doorbell_off_never_rings) { doorbell_case(KNIT_DOORBELL_OFF, 0); }

KT(stats, no_ring_when_not_armed)
{
	/* Nobody waits: the workers must not ring. */
	knit_pool_t *pool = kt_pool_n(1);
	knit_pool_stats_t a, b;
	kt_stats(pool, &a);
	uint32_t echo = kt_id(pool, "echo");
	/* fewer than a lane's in-flight slots, so the worker can run them all
	 * without anyone reaping */
	for (int i = 0; i < 20; i++)
		kt_enq(pool, echo, kt_i64(i), NULL);
	/* wait until the worker has run all without reaping */
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	do {
		kt_sleep_ms(2);
		kt_stats(pool, &b);
	} while (b.lane[0].calls < 20 && kt_now_ns() < end);
	cr_expect_eq(b.lane[0].calls, 20);
	cr_expect_eq(b.lane[0].doorbell_rings - a.lane[0].doorbell_rings, 0,
		     "rang an unarmed doorbell");
	cr_expect_eq(b.doorbell_arms - a.doorbell_arms, 0);
	kt_destroy(pool);
}

KT(stats, monotonic_under_load)
{
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo");
	knit_pool_stats_t prev, cur;
	kt_stats(pool, &prev);
	knit_completion_t out[64];
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 64; i++)
			kt_enq(pool, echo, kt_i64(i), NULL);
		cr_assert_eq(kt_reap(pool, out, 64), 64);
		kt_stats(pool, &cur);
		cr_expect_geq(cur.enqueued, prev.enqueued);
		cr_expect_geq(cur.completed, prev.completed);
		cr_expect_geq(cur.backlog_high_water, prev.backlog_high_water);
		cr_expect_geq(cur.doorbell_arms, prev.doorbell_arms);
		cr_expect_geq(cur.doorbell_wakes, prev.doorbell_wakes);
		for (int l = 0; l < 2; l++) {
			cr_expect_geq(cur.lane[l].calls, prev.lane[l].calls);
			cr_expect_geq(cur.lane[l].parks, prev.lane[l].parks);
			cr_expect_geq(cur.lane[l].wakes_sent, prev.lane[l].wakes_sent);
			cr_expect_geq(cur.lane[l].wakes_received, prev.lane[l].wakes_received);
			cr_expect_geq(cur.lane[l].spins, prev.lane[l].spins);
			cr_expect_geq(cur.lane[l].doorbell_rings, prev.lane[l].doorbell_rings);
			cr_expect_eq(cur.lane[l].watchdog_expiries, 0);
		}
		prev = cur;
	}
	cr_expect_eq(cur.enqueued, 50 * 64);
	cr_expect_eq(cur.completed, 50 * 64);
	kt_destroy(pool);
}

/* The size field is checked like every other size field: out of range is
 * -KNIT_EVERSION, a value that disagrees with the size argument -KNIT_EINVAL. */
KT(stats, size_field_checked)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = 0;
	cr_expect_eq(knit_pool_stats(pool, &s, sizeof s), -KNIT_EVERSION);
	s.size = 12345678;
	cr_expect_eq(knit_pool_stats(pool, &s, sizeof s), -KNIT_EVERSION);
	s.size = (uint32_t)offsetof(knit_pool_stats_t, lane) - 1;
	cr_expect_eq(knit_pool_stats(pool, &s, sizeof s), -KNIT_EVERSION);
	s.size = (uint32_t)offsetof(knit_pool_stats_t, lane);
	cr_expect_eq(knit_pool_stats(pool, &s, sizeof s), -KNIT_EINVAL);
	s.size = sizeof s;
	cr_expect_eq(knit_pool_stats(pool, &s, offsetof(knit_pool_stats_t, lane)), -KNIT_EINVAL);
	s.size = sizeof s;
	cr_expect_eq(knit_pool_stats(pool, &s, sizeof s), 0);
	cr_expect_eq(s.size, sizeof s);
	cr_expect_eq(s.workers, 1);
	kt_destroy(pool);
}

/* knit_stop(CANCEL) completes the calls waiting in the backlog: the backlog
 * is empty afterwards and stats.backlog says so. */
KT(stats, backlog_zero_after_stop_cancel)
{
	enum { N = 100 };
	knit_pool_t *pool = kt_pool_lanes(1);
	kt_enq(pool, kt_id(pool, "block"), kt_i64(-1), NULL);
	cr_assert(kt_wait_started(1));
	uint32_t echo = kt_id(pool, "echo");
	for (int i = 0; i < N; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_assert_gt(s.backlog, 0, "the calls past the lane's slots wait in the backlog");
	kt_gate_open(); /* the blocker may finish; the stop need not wait for it */
	cr_assert_eq(knit_stop(pool, KNIT_STOP_CANCEL, (int64_t)(KT_BOUND_S * 1e9)), 0);
	kt_stats(pool, &s);
	cr_expect_eq(s.backlog, 0, "backlog %llu after stop(CANCEL)",
		     (unsigned long long)s.backlog);
	cr_expect_eq(s.pending, 0);
	knit_completion_t out[N + 1];
	cr_expect_eq(kt_reap(pool, out, N + 1), N + 1);
	for (int i = 0; i < N + 1; i++)
		knit_completion_release(pool, &out[i]);
	kt_stats(pool, &s);
	cr_expect_eq(s.backlog, 0);
	cr_expect_eq(s.completed, N + 1);
	kt_destroy(pool);
}

/* A result that comes back for a call already completed (here: cancelled
 * while it ran) is dropped and counted in late_drops; a healthy pool counts
 * no protocol errors. */
KT(stats, late_drops_and_proto_errors_reported)
{
	knit_pool_t *pool = kt_pool_lanes(1);
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "block"), kt_i64(7), NULL);
	cr_assert(kt_wait_started(1));
	cr_assert_eq(knit_cancel(pool, t, KNIT_CANCEL_NOW), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, -KNIT_ECANCELED);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.late_drops, 0, "the task is still running");
	kt_gate_open();
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	do {
		cr_assert_eq(knit_complete(pool, &c, 1, 0), 0, "no second completion");
		kt_stats(pool, &s);
		if (s.late_drops != 0)
			break;
		kt_sleep_ms(1);
	} while (kt_now_ns() < end);
	cr_expect_eq(s.late_drops, 1);
	cr_expect_eq(s.proto_errors, 0);
	cr_expect_eq(s.lane[0].calls, 1);
	/* Every wake the worker saw is accounted for: rung, watchdog or spurious. */
	cr_expect_leq(s.lane[0].spurious_wakes + s.lane[0].wakes_received +
			      s.lane[0].watchdog_expiries,
		      s.lane[0].parks + s.lane[0].wakes_received);
	kt_destroy(pool);
}
