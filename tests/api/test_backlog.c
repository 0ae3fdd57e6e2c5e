/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_backlog.c - the bounded backlog: past max_pending waiting
 * calls knit_enqueue fails with -KNIT_EAGAIN, and nothing already accepted
 * is lost; the backlog flushes as slots free up.
 */
#include "api/kt.h"

#include <sched.h>
#include <stdlib.h>

/* Enqueue echo calls until -KNIT_EAGAIN (bounded); returns the accepted count. */
static int fill(knit_pool_t *pool, uint32_t echo, int base, int limit, int *last_rc)
{
	int n = 0;
	*last_rc = 0;
	while (n < limit) {
		knit_value_t v = kt_i64(base + n);
		int rc = knit_enqueue(pool, echo, &v, (void *)(intptr_t)(base + n + 1), NULL);
		if (rc != 0) {
			*last_rc = rc;
			break;
		}
		n++;
	}
	return n;
}

static void backlog_full(uint32_t workers, uint32_t max_pending)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = KNIT_TOPOLOGY_LANES; /* pins a blocker per lane */
	o.max_pending = max_pending;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	for (uint32_t w = 0; w < workers; w++)
		kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(-1), (void *)(intptr_t)0,
			  KNIT_CALL_LANE, 0, w);
	cr_assert(kt_wait_started((int)workers));
	int rc;
	int limit = 100000;
	int n = fill(pool, echo, 0, limit, &rc);
	cr_assert_eq(rc, -KNIT_EAGAIN, "after %d calls: %d, want -KNIT_EAGAIN", n, rc);
	cr_expect_geq(n, (int)max_pending, "accepted %d < max_pending %u", n, max_pending);
	/* Exactly: the lanes' free slots (32 each, one taken by the blocker),
	 * then exactly max_pending waiting calls (knit_enqueue(3)). */
	cr_expect_eq(n, 31 * (int)workers + (int)max_pending, "accepted %d with max_pending %u", n,
		     max_pending);
	/* Still full: refused again, and a refused call leaves no trace. */
	knit_value_t v = kt_i64(0);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EAGAIN);
	knit_completion_t c;
	/* (A knit_call without a timeout could take the worker's line instead:
	 * the timeout keeps it on the ticketed path, which is full.) */
	cr_expect_eq(knit_call(pool, echo, &v, &c, KT_TICKETED_NS), -KNIT_EAGAIN);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, (uint64_t)n + workers);
	cr_expect_eq(s.pending, (uint64_t)n + workers);
	cr_expect_eq(s.backlog, max_pending, "backlog %llu", (unsigned long long)s.backlog);
	cr_expect_eq(s.backlog_high_water, max_pending);
	/* Exactly the calls past the lanes' free slots waited there; the
	 * refused ones left no count. */
	cr_expect_eq(s.backlogged, max_pending, "backlogged %llu",
		     (unsigned long long)s.backlogged);
	const uint64_t backlogged = s.backlogged;
	kt_gate_open();
	int total = n + (int)workers;
	knit_completion_t *out = calloc((size_t)total, sizeof *out);
	char *seen = calloc((size_t)n + 1, 1);
	int got = kt_reap(pool, out, total);
	cr_expect_eq(got, total, "lost calls: %d of %d", got, total);
	for (int i = 0; i < got; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_expect_eq(out[i].status, 0);
		if (k == 0)
			continue;
		cr_assert(k >= 1 && k <= n);
		cr_expect_eq(seen[k]++, 0);
		cr_expect_eq(out[i].result.i64, k - 1);
	}
	cr_expect_eq(kt_quiet(pool, 50), 0);
	/* Room again. */
	int n2 = fill(pool, echo, 0, n, &rc);
	cr_expect_eq(n2, n, "after draining, %d accepted (%d)", n2, rc);
	free(out);
	out = calloc((size_t)n2, sizeof *out);
	cr_expect_eq(kt_reap(pool, out, n2), n2);
	/* Whether the second fill's calls found a slot at once depends on
	 * how fast the workers answer; none is counted twice. */
	kt_stats(pool, &s);
	cr_expect(s.backlogged >= backlogged && s.backlogged <= backlogged + (uint64_t)n2,
		  "backlogged %llu after %llu and %d more calls", (unsigned long long)s.backlogged,
		  (unsigned long long)backlogged, n2);
	free(out);
	free(seen);
	kt_destroy(pool);
}

KT(backlog, full_one_worker) { backlog_full(1, 4); }

KT(backlog, full_two_workers) { backlog_full(2, 16); }

KT(backlog, full_max_pending_one) { backlog_full(1, 1); }

struct prod {
	knit_pool_t *pool;
	uint32_t echo;
	int id, n, accepted, eagain, bad;
};

static void *prod(void *p)
{
	struct prod *a = p;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (a->accepted < a->n && kt_now_ns() < end) {
		knit_value_t v = kt_i64(a->id * 1000000 + a->accepted);
		int rc = knit_enqueue(a->pool, a->echo, &v,
				      (void *)(intptr_t)(a->id * 1000000 + a->accepted + 1), NULL);
		if (rc == 0)
			a->accepted++;
		else if (rc == -KNIT_EAGAIN)
			a->eagain++, sched_yield();
		else {
			a->bad = rc;
			break;
		}
	}
	return NULL;
}

KT(backlog, producers_retry_nothing_lost)
{
	/* Two producers push through a tiny backlog while the main thread
	 * reaps; every accepted call completes exactly once. */
	enum { PER = 3000 };
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.max_pending = 2;
	knit_pool_t *pool = kt_pool(&o);
	struct prod a[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		a[i] = (struct prod){pool, kt_id(pool, "echo"), i, PER, 0, 0, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, prod, &a[i]), 0);
	}
	static char seen[2][PER];
	int got = 0;
	knit_completion_t c[32];
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (got < 2 * PER && kt_now_ns() < end) {
		int rc = knit_complete(pool, c, 32, 10 * 1000 * 1000);
		cr_assert_geq(rc, 0);
		for (int i = 0; i < rc; i++) {
			intptr_t k = (intptr_t)c[i].user_data - 1;
			int who = (int)(k / 1000000), idx = (int)(k % 1000000);
			cr_assert(who >= 0 && who < 2 && idx < PER);
			cr_expect_eq(seen[who][idx]++, 0);
			cr_expect_eq(c[i].status, 0);
			cr_expect_eq(c[i].result.i64, k);
		}
		got += rc;
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(a[i].bad, 0);
		cr_expect_eq(a[i].accepted, PER);
	}
	cr_expect_eq(got, 2 * PER);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_leq(s.backlog_high_water, 2);
	kt_destroy(pool);
}

/*
 * A lane that runs a long batch hands the frames of the tasks already done
 * back with their early results, so the backlog refills the lane while the
 * rest of the batch still runs (before: only once the whole batch ended, so
 * lanes took work in rounds of 32 and the last round made the makespan
 * uneven). One worker: #0 runs alone (a batch of its own) while #1..#31
 * (two short sleeps, then blockers) and #32, #33 (the backlog) are
 * enqueued; #0's slot goes to #32; the worker then runs #1..#31 as one
 * batch and stalls on the blockers. Reaping #1 and #2 must place #33, with
 * every blocker still running.
 */
Test(backlog, refilled_during_a_long_batch)
{
	kt_gate_close();
	knit_pool_t *pool = kt_pool_lanes(1);
	uint32_t sleep = kt_id(pool, "sleep"), block = kt_id(pool, "block"),
		 echo = kt_id(pool, "echo");
	const int total = 34;
	knit_ticket_t first =
		kt_enq(pool, kt_id(pool, "abort_loop"), kt_i64(0), (void *)(intptr_t)1);
	cr_assert(kt_wait_started(1));
	for (int i = 1; i <= 2; i++)
		kt_enq(pool, sleep, kt_i64(1), (void *)(intptr_t)(i + 1));
	for (int i = 3; i <= 31; i++)
		kt_enq(pool, block, kt_i64(i), (void *)(intptr_t)(i + 1));
	for (int i = 32; i <= 33; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_assert_eq(s.backlog, 2, "backlog %llu: the lane holds 32",
		     (unsigned long long)s.backlog);
	cr_assert_eq(knit_cancel(pool, first, KNIT_CANCEL_SIGNAL), 0);
	knit_completion_t out[34];
	cr_assert_eq(kt_reap(pool, out, 3), 3);
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(out[i].status, 0);
		cr_expect_leq((intptr_t)out[i].user_data, 3, "#%d done before the gate opened",
			      (int)(intptr_t)out[i].user_data - 1);
	}
	kt_stats(pool, &s);
	cr_expect_eq(s.backlog, 0, "backlog %llu after #1, #2 came back mid-batch",
		     (unsigned long long)s.backlog);
	cr_expect_eq(s.pending, (uint64_t)total - 3);
	kt_gate_open();
	cr_assert_eq(kt_reap(pool, out + 3, total - 3), total - 3);
	static char seen[35];
	for (int i = 0; i < total; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k <= total);
		cr_expect_eq(seen[k]++, 0);
		cr_expect_eq(out[i].status, 0);
	}
	kt_destroy(pool);
}

/*
 * A batch of short tasks hands its results back every 16 tasks
 * (kResultFlushTasks), not only when the batch ends: a task that blocks
 * late in a batch holds back only the results of the tasks after the last
 * such publish. One worker: #0 runs alone (a batch of its own) while
 * #1..#30 (echo) and #31 (block, the gate closed) fill the lane's other 31
 * slots; the worker then takes #1..#31 as one batch (the lane's order is
 * FIFO here: each frame took the next lower lane) and stalls on #31. #0
 * and #1..#16 must come back while #31 still blocks. Before, nothing of
 * the batch came back until #31 returned (the time-based early publish
 * needs 50 us of tasks; 16 echoes take a few).
 */
Test(backlog, long_batch_hands_back_every_16_tasks)
{
	kt_gate_close();
	knit_pool_t *pool = kt_pool_lanes(1);
	uint32_t echo = kt_id(pool, "echo");
	const int total = 32;
	knit_ticket_t first =
		kt_enq(pool, kt_id(pool, "abort_loop"), kt_i64(0), (void *)(intptr_t)1);
	cr_assert(kt_wait_started(1));
	for (int i = 1; i <= 30; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	kt_enq(pool, kt_id(pool, "block"), kt_i64(31), (void *)(intptr_t)32);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_assert_eq(s.backlog, 0, "backlog %llu: the lane holds all 32",
		     (unsigned long long)s.backlog);
	cr_assert_eq(knit_cancel(pool, first, KNIT_CANCEL_SIGNAL), 0);
	knit_completion_t out[32];
	cr_assert_eq(kt_reap(pool, out, 17), 17);
	static char seen[33];
	for (int i = 0; i < 17; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_expect_eq(out[i].status, 0);
		cr_assert(k >= 1 && k <= 31, "#%d came back while #31 blocks", (int)k - 1);
		cr_expect_eq(seen[k]++, 0);
	}
	/* #31 still blocks, so it and whatever ran after the last publish are
	 * still pending. */
	kt_stats(pool, &s);
	cr_expect(s.pending >= 1 && s.pending <= 15, "pending %llu while #31 blocks",
		  (unsigned long long)s.pending);
	kt_gate_open();
	cr_assert_eq(kt_reap(pool, out + 17, total - 17), total - 17);
	for (int i = 17; i < total; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k <= total);
		cr_expect_eq(seen[k]++, 0);
		cr_expect_eq(out[i].status, 0);
	}
	kt_destroy(pool);
}

/* A host that only enqueues and retries on -KNIT_EAGAIN, without reaping:
 * once max_pending + 32 calls per lane are enqueued and not yet handed out
 * (completed calls keep their records until knit_complete returns them),
 * every enqueue is refused. Those refusals must still move the backlog into
 * the lanes and take in the workers' results, so that every accepted call
 * completes while the host keeps trying (here, no knit_complete at all
 * until pending is 0), and then comes out of knit_complete exactly once.
 * Bounded: 200000 refused enqueues at most (well under a second), never a clock.
 * burst: the retries go through knit_enqueue_many. */
static int retry_one(knit_pool_t *pool, uint32_t echo, bool burst)
{
	knit_value_t v = kt_i64(-1);
	if (!burst)
		return knit_enqueue(pool, echo, &v, NULL, NULL);
	knit_request_t r;
	memset(&r, 0, sizeof r);
	r.task = echo;
	r.arg = &v;
	int k = knit_enqueue_many(pool, &r, 1, NULL);
	return k == 1 ? 0 : k;
}

static void refusals_keep_the_backlog_moving(bool burst)
{
	enum { kMaxPending = 64 };
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.max_pending = kMaxPending;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	int rc, n = fill(pool, echo, 0, 100000, &rc);
	cr_assert_eq(rc, -KNIT_EAGAIN, "after %d calls: %d", n, rc);
	cr_assert_leq(n, 32 + kMaxPending,
		      "accepted %d: more than the lane's slots and the backlog", n);
	knit_pool_stats_t s;
	int tries = 0;
	for (;; tries++) {
		kt_stats(pool, &s);
		if (s.pending == 0 || tries == 200000)
			break;
		rc = retry_one(pool, echo, burst);
		if (rc == 0) {
			n++;
			continue; /* room again: keep enqueuing, as such a host would */
		}
		cr_assert_eq(rc, -KNIT_EAGAIN);
		sched_yield();
	}
	cr_assert_eq(s.pending, 0,
		     "after %d refused enqueues, %llu calls still pending (backlog %llu)", tries,
		     (unsigned long long)s.pending, (unsigned long long)s.backlog);
	cr_expect_eq(s.backlog, 0);
	/* Every record now holds a completion waiting to be handed out. */
	cr_expect_eq(retry_one(pool, echo, burst), -KNIT_EAGAIN);
	knit_completion_t *out = calloc((size_t)n, sizeof *out);
	char *seen = calloc((size_t)n + 1, 1);
	cr_assert_eq(kt_reap(pool, out, n), n);
	for (int i = 0; i < n; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_expect_eq(out[i].status, 0);
		if (k == 0)
			continue; /* the retries' own calls */
		cr_assert(k >= 1 && k <= n);
		cr_expect_eq(seen[k]++, 0);
	}
	cr_expect_eq(kt_quiet(pool, 50), 0);
	free(out);
	free(seen);
	kt_destroy(pool);
}

KT(backlog, refusals_keep_the_backlog_moving) { refusals_keep_the_backlog_moving(false); }

KT(backlog, burst_refusals_keep_the_backlog_moving) { refusals_keep_the_backlog_moving(true); }

/* Wait (bounded) until the pool's workers have run at least n calls. */
static int ran_at_least(knit_pool_t *pool, uint64_t n)
{
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S / 4 * 1e9);
	for (;;) {
		knit_pool_stats_t s;
		kt_stats(pool, &s);
		uint64_t ran = 0;
		for (uint32_t i = 0; i < s.lanes; i++)
			ran += s.lane[i].calls;
		if (ran >= n)
			return 1;
		if (kt_now_ns() >= end)
			return 0;
		kt_sleep_ms(1);
	}
}

/* A thread that only enqueues (no knit_complete, so no pass) keeps its
 * backlog moving: once the worker has given room back, its next enqueue
 * places the calls that waited (and reaps what blocks the worker), so the
 * worker never waits with calls left in the backlog for more than the
 * lanes' worth the host is ahead. An enqueue that skips a flush because
 * nothing could have changed since the last one stopped at full lanes
 * must see the worker's room (its retire, its steal claim) as a change. */
static void enqueuer_keeps_backlog_moving(uint32_t topology)
{
	enum { FIRST = 40, MORE = 100 };
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.topology = topology;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	kt_gate_close();
	kt_enq(pool, kt_id(pool, "block"), kt_i64(5), (void *)(intptr_t)(FIRST + MORE + 1));
	cr_assert(kt_wait_started(1));
	/* More than the lanes hold: the rest waits in the backlog, whose
	 * placing stops at the full lanes. */
	for (int i = 0; i < FIRST; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_assert_gt(s.backlog, 0, "nothing waited in the backlog");
	kt_gate_open();
	cr_assert(ran_at_least(pool, 2), "the worker ran nothing after the gate opened");
	for (int i = 0; i < MORE; i++) {
		kt_enq(pool, echo, kt_i64(FIRST + i), (void *)(intptr_t)(FIRST + i + 1));
		/* The worker, given room, runs all but at most the lanes' worth. */
		const uint64_t enqueued = 1 + FIRST + (uint64_t)i + 1;
		cr_assert(ran_at_least(pool, enqueued - 33),
			  "after %llu enqueues the worker stalled with calls in the backlog",
			  (unsigned long long)enqueued);
	}
	static knit_completion_t out[FIRST + MORE + 1];
	cr_assert_eq(kt_reap(pool, out, FIRST + MORE + 1), FIRST + MORE + 1);
	for (int i = 0; i < FIRST + MORE + 1; i++)
		cr_expect_eq(out[i].status, 0);
	kt_destroy(pool);
}

KT(backlog, enqueuer_keeps_backlog_moving_lanes)
{
	enqueuer_keeps_backlog_moving(KNIT_TOPOLOGY_LANES);
}

KT(backlog, enqueuer_keeps_backlog_moving_steal)
{
	enqueuer_keeps_backlog_moving(KNIT_TOPOLOGY_STEAL);
}
