/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_steal.c - the work-stealing topology through the public
 * ABI (most tests below ask for STEAL explicitly, so they do not depend on
 * the AUTO rule): AUTO picks STEAL for 2..31 workers (stats.topology) and LANES for 1
 * or more than 31; an explicit STEAL works (also with one worker) and is
 * -KNIT_EINVAL with more than 31 workers; steal_region_lanes (a power of
 * two, clamped to the widest region with 32/g >= workers + 1; anything else
 * -KNIT_EINVAL); one claim per call whatever the region width (the claim
 * counters); KNIT_CALL_LANE is
 * refused; a cold call costs exactly one wake sent and received in a steal
 * pool; a worker busy in a long task does not hold up the calls behind it,
 * not even calls it could have claimed together with the one it is running
 * (a claim takes one call); one worker starts queued calls in submission order;
 * stop DRAIN and CANCEL.
 */
#include "api/kt.h"

#include <unistd.h>

static int try_create(const knit_pool_options_t *o)
{
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(o, kt_tasks, KT_NTASKS, &pool);
	if (rc == 0)
		knit_pool_destroy(pool);
	return rc;
}

static knit_pool_t *steal_pool_n(uint32_t workers)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = KNIT_TOPOLOGY_STEAL;
	return kt_pool(&o);
}

static uint32_t topology_of(uint32_t workers, uint32_t topology)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = topology;
	knit_pool_t *pool = kt_pool(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.workers, workers);
	kt_destroy(pool);
	return s.topology;
}

static uint64_t sum_field(const knit_pool_stats_t *s, size_t off)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->workers; i++)
		n += *(const uint64_t *)((const char *)&s->lane[i] + off);
	return n;
}
#define SUM(s, field) sum_field(&(s), offsetof(knit_lane_stats_t, field))

KT(steal, auto_picks_steal_for_2_to_31)
{
	cr_expect_eq(topology_of(1, KNIT_TOPOLOGY_AUTO), KNIT_TOPOLOGY_LANES);
	cr_expect_eq(topology_of(2, KNIT_TOPOLOGY_AUTO), KNIT_TOPOLOGY_STEAL);
	cr_expect_eq(topology_of(3, KNIT_TOPOLOGY_AUTO), KNIT_TOPOLOGY_STEAL);
	cr_expect_eq(topology_of(31, KNIT_TOPOLOGY_AUTO), KNIT_TOPOLOGY_STEAL);
	/* More than 31 workers: falls back to lanes (31 consumers at most). */
	cr_expect_eq(topology_of(32, KNIT_TOPOLOGY_AUTO), KNIT_TOPOLOGY_LANES);
	cr_expect_eq(topology_of(KNIT_MAX_WORKERS, KNIT_TOPOLOGY_AUTO), KNIT_TOPOLOGY_LANES);
	/* An explicit choice is kept. */
	cr_expect_eq(topology_of(2, KNIT_TOPOLOGY_LANES), KNIT_TOPOLOGY_LANES);
	cr_expect_eq(topology_of(1, KNIT_TOPOLOGY_STEAL), KNIT_TOPOLOGY_STEAL);
	cr_expect_eq(topology_of(31, KNIT_TOPOLOGY_STEAL), KNIT_TOPOLOGY_STEAL);
}

KT(steal, explicit_steal_limits)
{
	knit_pool_options_t o;
	kt_opts(&o, 32);
	o.topology = KNIT_TOPOLOGY_STEAL;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL, "explicit STEAL with 32 workers");
	kt_opts(&o, 4);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.balancer = KNIT_BALANCE_ROUND_ROBIN;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL, "STEAL with an explicit balancer");
	kt_opts(&o, 4);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.inline_lane = KNIT_INLINE_FIRST;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL, "STEAL with an inline lane");
	/* AUTO with a balancer or an inline lane is simply lanes. */
	kt_opts(&o, 4);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.balancer = KNIT_BALANCE_RANDOM;
	o.topology = KNIT_TOPOLOGY_AUTO;
	knit_pool_t *pool = kt_pool(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.topology, KNIT_TOPOLOGY_LANES);
	kt_destroy(pool);
}

KT(steal, region_lanes_option)
{
	knit_pool_options_t o;
	const uint32_t bad[] = {3, 5, 6, 12, 33, 0x80000001u};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		kt_opts(&o, 2);
		o.topology = KNIT_TOPOLOGY_STEAL;
		o.steal_region_lanes = bad[i];
		cr_expect_eq(try_create(&o), -KNIT_EINVAL, "steal_region_lanes %u", bad[i]);
		o.topology = KNIT_TOPOLOGY_LANES; /* validated whatever the topology */
		cr_expect_eq(try_create(&o), -KNIT_EINVAL, "lanes, steal_region_lanes %u", bad[i]);
	}
	const uint32_t good[] = {1, 2, 4, 8, 16, 32, 64, 1u << 31}; /* > widest: clamped */
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		kt_opts(&o, 2);
		o.topology = KNIT_TOPOLOGY_STEAL;
		o.steal_region_lanes = good[i];
		cr_expect_eq(try_create(&o), 0, "steal_region_lanes %u", good[i]);
	}
	kt_opts(&o, 31);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.steal_region_lanes = 8; /* clamped to 1 */
	cr_expect_eq(try_create(&o), 0);
}

/* A claim takes one call until its worker has timed its calls as cheap,
 * then several (src/spin.h "claims and wakes"), at most its region (widest
 * regions: 8 lanes for 2 or 3 workers, so g = 0 and 64 mean 8): claims
 * between calls / region and calls; a region of one lane, one per call. */
static void claims_per_call(uint32_t workers, uint32_t g)
{
	const uint32_t region = g == 1 ? 1 : 8;
	enum { N = 400 };
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.steal_region_lanes = g;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	for (int i = 0; i < N; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	static knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N);
	int seen[N] = {0};
	for (int i = 0; i < N; i++) {
		int k = (int)(intptr_t)out[i].user_data - 1;
		cr_assert(k >= 0 && k < N);
		cr_expect_eq(seen[k]++, 0, "call %d completed twice", k);
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.i64, k);
	}
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.topology, KNIT_TOPOLOGY_STEAL);
	cr_expect_eq(SUM(s, calls), N);
	cr_expect(SUM(s, steal_claims) <= N && SUM(s, steal_claims) >= (N + region - 1) / region,
		  "g = %u: %llu claims for %d calls", g, (unsigned long long)SUM(s, steal_claims),
		  N);
	if (g == 1)
		cr_expect_eq(SUM(s, steal_claims), N, "g = 1: one claim per call");
	kt_destroy(pool);
}

KT(steal, region_of_one_lane_one_claim_per_call)
{
	claims_per_call(2, 1);
	claims_per_call(3, 1);
}

KT(steal, wide_regions_claim_up_to_a_region)
{
	claims_per_call(2, 0);
	claims_per_call(3, 0);
	claims_per_call(2, 64); /* clamped to 8 */
}

KT(steal, call_lane_refused)
{
	knit_pool_t *pool = steal_pool_n(2);
	knit_call_options_t co = {sizeof co, KNIT_CALL_LANE, 0, 0};
	knit_value_t v = kt_i64(1);
	knit_ticket_t t = 0;
	cr_expect_eq(knit_enqueue_ex(pool, kt_id(pool, "echo"), &v, NULL, &co, &t), -KNIT_EINVAL);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 0);
	kt_destroy(pool);
}

/* Wait (bounded) until every worker's parks exceeds before[w]; then give them
 * a moment to be inside futex wait (the count is bumped just before it). */
static int wait_all_parked(knit_pool_t *pool, const knit_pool_stats_t *before)
{
	knit_pool_stats_t s;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (kt_now_ns() < end) {
		kt_stats(pool, &s);
		int all = 1;
		for (uint32_t w = 0; w < s.workers; w++)
			all &= s.lane[w].parks > (before ? before->lane[w].parks : 0);
		if (all) {
			kt_sleep_ms(20);
			return 1;
		}
		kt_sleep_ms(1);
	}
	return 0;
}

KT(steal, cold_call_one_wake)
{
	knit_pool_options_t o;
	kt_opts(&o, 3);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.spin_us = KNIT_ZERO;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	knit_pool_stats_t a, b;
	cr_assert(wait_all_parked(pool, NULL), "workers never parked");
	for (int i = 0; i < 10; i++) {
		kt_stats(pool, &a);
		knit_completion_t c;
		knit_value_t v = kt_i64(i);
		/* Ticketed (a timeout): the call goes through the submit lock. */
		cr_assert_eq(knit_call(pool, echo, &v, &c, KT_TICKETED_NS), 0);
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.i64, i);
		int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
		do {
			kt_stats(pool, &b);
		} while (SUM(b, wakes_received) == SUM(a, wakes_received) && kt_now_ns() < end &&
			 (kt_sleep_ms(1), 1));
		cr_expect_eq(SUM(b, wakes_sent) - SUM(a, wakes_sent), 1,
			     "round %d: cold call sent %llu wakes", i,
			     (unsigned long long)(SUM(b, wakes_sent) - SUM(a, wakes_sent)));
		cr_expect_eq(SUM(b, wakes_received) - SUM(a, wakes_received), 1,
			     "round %d: received %llu wakes", i,
			     (unsigned long long)(SUM(b, wakes_received) - SUM(a, wakes_received)));
		cr_expect_eq(SUM(b, steal_claims) - SUM(a, steal_claims), 1, "round %d: one claim",
			     i);
		/* The woken worker parks again; the others never woke. */
		knit_pool_stats_t want = a;
		for (uint32_t w = 0; w < b.workers; w++)
			if (b.lane[w].wakes_received == a.lane[w].wakes_received)
				want.lane[w].parks = 0; /* already parked, not woken */
		cr_assert(wait_all_parked(pool, &want), "worker never parked again (round %d)", i);
	}
	kt_stats(pool, &b);
	for (uint32_t w = 0; w < b.workers; w++) {
		cr_expect_eq(b.lane[w].watchdog_expiries, 0);
		cr_expect_eq(b.lane[w].wakes_sent, b.lane[w].wakes_received);
	}
	kt_destroy(pool);
}

/* A worker held in a long task claims nothing more: everything enqueued after
 * it runs on the other worker while it is still held. */
KT(steal, busy_worker_does_not_hold_up_calls)
{
	enum { N = 100 };
	knit_pool_t *pool = steal_pool_n(2);
	uint32_t block = kt_id(pool, "block"), lane = kt_id(pool, "lane");
	kt_gate_close();
	knit_ticket_t tb = kt_enq(pool, block, kt_i64(5), (void *)(intptr_t)1000);
	cr_assert(kt_wait_started(1));
	for (int i = 0; i < N; i++)
		kt_enq(pool, lane, kt_none(), (void *)(intptr_t)(i + 1));
	static knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N, "calls waited behind a busy worker");
	int64_t other = -1;
	for (int i = 0; i < N; i++) {
		cr_expect_eq(out[i].status, 0);
		cr_expect_neq(out[i].ticket, tb);
		if (other < 0)
			other = out[i].result.i64;
		cr_expect_eq(out[i].result.i64, other, "all on the free worker");
	}
	kt_gate_open();
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, tb);
	cr_expect_eq(c.status, 0);
	kt_destroy(pool);
}

/* Wait (bounded by half the block task's own bound, so a blocked call cannot
 * end on its own first) until n block/abort_loop tasks have started. */
static int started_within_half_bound(int n)
{
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S / 2 * 1e9);
	while (atomic_load(&kt_started) < n && kt_now_ns() < end)
		kt_sleep_ms(1);
	return atomic_load(&kt_started) >= n;
}

/* Both workers held in abortable loops while two blocking calls are
 * published; one worker is let go (SIGNAL) and starts the first blocking
 * call; then the other is let go: it must find the second call, not leave it
 * held unstarted by the busy worker. */
KT(steal, idle_worker_takes_call_busy_worker_has_not_started)
{
	knit_pool_t *pool = steal_pool_n(2);
	uint32_t loop = kt_id(pool, "abort_loop"), block = kt_id(pool, "block");
	kt_gate_close();
	knit_ticket_t l1 = kt_enq(pool, loop, kt_none(), (void *)1);
	cr_assert(kt_wait_started(1));
	knit_ticket_t l2 = kt_enq(pool, loop, kt_none(), (void *)2);
	cr_assert(kt_wait_started(2));
	knit_ticket_t b1 = kt_enq(pool, block, kt_i64(1), (void *)3);
	knit_ticket_t b2 = kt_enq(pool, block, kt_i64(2), (void *)4);
	cr_expect_eq(knit_cancel(pool, l2, KNIT_CANCEL_SIGNAL), 0);
	cr_assert(kt_wait_started(3), "the freed worker did not start a blocking call");
	/* That worker is now held by a blocking call it claimed. */
	cr_expect_eq(knit_cancel(pool, l1, KNIT_CANCEL_SIGNAL), 0);
	cr_expect(started_within_half_bound(4),
		  "the second blocking call did not start on the idle worker (%d started)",
		  atomic_load(&kt_started));
	kt_gate_open();
	knit_completion_t c[4];
	cr_assert_eq(kt_reap(pool, c, 4), 4);
	for (int i = 0; i < 4; i++) {
		cr_expect(c[i].ticket == l1 || c[i].ticket == l2 || c[i].ticket == b1 ||
			  c[i].ticket == b2);
		cr_expect_eq(c[i].status, 0);
	}
	kt_destroy(pool);
}

/* One worker, held by a blocking call while 40 calls queue up behind it (more
 * than a region, and more than the 32 lanes, so some wait in the backlog and
 * lanes are reused): they start in submission order. */
KT(steal, one_worker_starts_in_submission_order)
{
	enum { N = 40 };
	knit_pool_t *pool = steal_pool_n(1);
	uint32_t block = kt_id(pool, "block"), record = kt_id(pool, "record");
	kt_gate_close();
	kt_enq(pool, block, kt_i64(-1), (void *)(intptr_t)(N + 1));
	cr_assert(kt_wait_started(1));
	for (int i = 0; i < N; i++)
		kt_enq(pool, record, kt_i64(i), (void *)(intptr_t)(i + 1));
	kt_gate_open();
	static knit_completion_t out[N + 1];
	cr_assert_eq(kt_reap(pool, out, N + 1), N + 1);
	cr_assert_eq(atomic_load(&kt_nrecords), N);
	for (int i = 0; i < N; i++)
		cr_expect_eq(kt_records[i].arg, i, "start %d was call %lld", i,
			     (long long)kt_records[i].arg);
	kt_destroy(pool);
}

KT(steal, stop_drain)
{
	enum { N = 300 };
	knit_pool_t *pool = steal_pool_n(3);
	uint32_t sleep = kt_id(pool, "sleep"), echo = kt_id(pool, "echo");
	for (int i = 0; i < N; i++)
		kt_enq(pool, i % 50 == 0 ? sleep : echo, kt_i64(i % 50 == 0 ? 2 : i),
		       (void *)(intptr_t)(i + 1));
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, -1), 0);
	static knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N);
	int seen[N] = {0};
	for (int i = 0; i < N; i++) {
		int k = (int)(intptr_t)out[i].user_data - 1;
		cr_assert(k >= 0 && k < N);
		cr_expect_eq(seen[k]++, 0);
		cr_expect_eq(out[i].status, 0, "call %d: %d", k, out[i].status);
	}
	knit_completion_t c;
	cr_expect_eq(knit_complete(pool, &c, 1, 0), -KNIT_ECLOSED);
	knit_value_t v = kt_i64(0);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_ECLOSED);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(SUM(s, calls), N);
	kt_destroy(pool);
}

KT(steal, stop_cancel)
{
	enum { N = 60 };
	knit_pool_t *pool = steal_pool_n(2);
	uint32_t block = kt_id(pool, "block"), echo = kt_id(pool, "echo");
	kt_gate_close();
	/* One worker held in a task, the other free; then a pile of calls. */
	knit_ticket_t tb = kt_enq(pool, block, kt_i64(0), (void *)(intptr_t)(N + 1));
	cr_assert(kt_wait_started(1));
	for (int i = 0; i < N; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	/* The held worker cannot acknowledge: the stop times out... */
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, 50ll * 1000 * 1000), -KNIT_ETIMEDOUT);
	/* ...but every call is complete already: ran (0) or -KNIT_ECLOSED. */
	static knit_completion_t out[N + 1];
	cr_assert_eq(kt_reap(pool, out, N + 1), N + 1);
	int seen[N + 2] = {0};
	for (int i = 0; i <= N; i++) {
		int k = (int)(intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k <= N + 1);
		cr_expect_eq(seen[k]++, 0);
		if (out[i].ticket == tb)
			cr_expect_eq(out[i].status, -KNIT_ECLOSED, "running call: %d",
				     out[i].status);
		else
			cr_expect(out[i].status == 0 || out[i].status == -KNIT_ECLOSED,
				  "call %d: %d", k, out[i].status);
	}
	kt_gate_open();
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, -1), 0);
	knit_completion_t c;
	cr_expect_eq(knit_complete(pool, &c, 1, 0), -KNIT_ECLOSED);
	kt_destroy(pool);
}

KT(steal, timeouts_and_cancel)
{
	knit_pool_t *pool = steal_pool_n(2);
	uint32_t block = kt_id(pool, "block"), echo = kt_id(pool, "echo");
	kt_gate_close();
	/* Both workers held (one call each: published one at a time). */
	knit_ticket_t b1 = kt_enq(pool, block, kt_i64(1), (void *)1);
	cr_assert(kt_wait_started(1));
	knit_ticket_t b2 = kt_enq(pool, block, kt_i64(2), (void *)2);
	cr_assert(kt_wait_started(2));
	/* Queued calls: one times out, one is cancelled, one waits. */
	knit_ticket_t tt = kt_enq_ex(pool, echo, kt_i64(3), (void *)3, 0, 30, 0);
	knit_ticket_t tc = kt_enq(pool, echo, kt_i64(4), (void *)4);
	knit_ticket_t tw = kt_enq(pool, echo, kt_i64(5), (void *)5);
	cr_expect_eq(knit_cancel(pool, tc, KNIT_CANCEL_NOW), 0);
	knit_completion_t c[2];
	cr_assert_eq(kt_reap(pool, c, 2), 2);
	for (int i = 0; i < 2; i++) {
		if (c[i].ticket == tc)
			cr_expect_eq(c[i].status, -KNIT_ECANCELED);
		else
			cr_expect(c[i].ticket == tt && c[i].status == -KNIT_ETIMEDOUT, "status %d",
				  c[i].status);
	}
	kt_gate_open();
	knit_completion_t r[3];
	cr_assert_eq(kt_reap(pool, r, 3), 3);
	for (int i = 0; i < 3; i++) {
		cr_expect(r[i].ticket == b1 || r[i].ticket == b2 || r[i].ticket == tw);
		cr_expect_eq(r[i].status, 0);
	}
	/* Nothing else: the cancelled and timed-out calls never complete twice. */
	cr_expect_eq(kt_quiet(pool, 30), 0);
	kt_destroy(pool);
}

/* The default spin follows the machine (src/spin.h): every pool spins, but
 * only its first CPUs - 1 workers, so in a pool of as many workers as CPUs the
 * last one never counts a spin, whatever the calls; and once the calls stop,
 * every worker parks and an idle period wakes none of them. */
static void default_spin_capped(uint32_t topo)
{
	const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 2)
		cr_skip_test("one CPU: no worker spins at all");
	if (cpus > 31)
		cr_skip_test("more CPUs than a steal pool has workers");
	const uint32_t n = (uint32_t)cpus;
	knit_pool_options_t o;
	kt_opts(&o, n);
	o.topology = topo;
	knit_pool_t *pool = kt_pool(&o);
	const uint32_t echo = kt_id(pool, "echo");
	enum { ROUNDS = 20, BATCH = 64 };
	static knit_completion_t out[BATCH];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BATCH; i++)
			kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
		cr_assert_eq(kt_reap(pool, out, BATCH), BATCH);
		for (int i = 0; i < BATCH; i++) {
			knit_completion_t c;
			knit_value_t v = kt_i64(i);
			cr_assert_eq(knit_call(pool, echo, &v, &c, -1), 0);
			cr_expect_eq(c.result.i64, i);
			knit_completion_release(pool, &c);
		}
	}
	knit_pool_stats_t a, b;
	cr_assert(wait_all_parked(pool, NULL), "workers never parked");
	kt_stats(pool, &a);
	cr_expect_eq(SUM(a, calls), (uint64_t)ROUNDS * BATCH * 2, "every call ran once");
	for (uint32_t w = n - 1; w < a.workers; w++)
		cr_expect_eq(a.lane[w].spins, 0, "worker %u of %u spun (cap %ld)", w, n, cpus - 1);
	kt_sleep_ms(200);
	kt_stats(pool, &b);
	for (uint32_t w = 0; w < b.workers; w++) {
		cr_expect_eq(b.lane[w].wakes_received, a.lane[w].wakes_received,
			     "idle: worker %u woke", w);
		cr_expect_eq(b.lane[w].parks, a.lane[w].parks, "idle: worker %u parked again", w);
		cr_expect_eq(b.lane[w].spins, a.lane[w].spins, "idle: worker %u spun", w);
	}
	kt_destroy(pool);
}

KT(steal, default_spin_capped_steal) { default_spin_capped(KNIT_TOPOLOGY_STEAL); }
KT(steal, default_spin_capped_lanes) { default_spin_capped(KNIT_TOPOLOGY_LANES); }
