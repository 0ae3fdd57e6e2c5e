/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_timeout.c - deadlines: per-task defaults, per-call
 * timeout_ms, KNIT_CALL_NO_TIMEOUT, calls that time out while still queued,
 * late results dropped, knit_ctx_deadline_ns, hard_timeout_ms.
 * Only statuses and counts are asserted; a task "outlives" its deadline by
 * blocking on the gate, never by a race against the clock.
 */
#include "api/kt.h"

KT(timeout, task_default_fires)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "block_t50"), kt_i64(1), NULL);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT, "status %d", c.status);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	kt_gate_open();
	/* The late result is dropped; the pool keeps working. */
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 8}, &c, 0),
		     0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 8);
	cr_expect_eq(kt_quiet(pool, 100), 0, "late result delivered");
	kt_destroy(pool);
}

KT(timeout, per_call_fires)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(1), NULL, 0, 30, 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT);
	kt_gate_open();
	cr_expect_eq(kt_quiet(pool, 100), 0);
	kt_destroy(pool);
}

KT(timeout, generous_does_not_fire)
{
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t sleep = kt_id(pool, "sleep");
	kt_enq_ex(pool, sleep, kt_i64(20), (void *)1, 0, 60000, 0);
	/* per-call timeout replaces the task's 50 ms default */
	kt_enq_ex(pool, kt_id(pool, "sleep_t50"), kt_i64(150), (void *)2, 0, 60000, 0);
	knit_completion_t c[2];
	cr_assert_eq(kt_reap(pool, c, 2), 2);
	cr_expect_eq(c[0].status, 0, "call %p: %d", c[0].user_data, c[0].status);
	cr_expect_eq(c[1].status, 0, "call %p: %d", c[1].user_data, c[1].status);
	kt_destroy(pool);
}

KT(timeout, no_timeout_flag_overrides_default)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = kt_enq_ex(pool, kt_id(pool, "sleep_t50"), kt_i64(200), NULL,
				    KNIT_CALL_NO_TIMEOUT, 0, 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.status, 0, "NO_TIMEOUT call timed out: %d", c.status);
	cr_expect_eq(c.result.i64, 200);
	kt_destroy(pool);
}

KT(timeout, fires_while_queued)
{
	/* One worker, held by a blocker without a deadline; a call queued
	 * behind it with a 30 ms deadline completes with ETIMEDOUT although it
	 * never started. Exactly one completion each. */
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t tb = kt_enq(pool, kt_id(pool, "block"), kt_i64(1), (void *)1);
	cr_assert(kt_wait_started(1));
	knit_ticket_t tq = kt_enq_ex(pool, kt_id(pool, "record"), kt_i64(2), (void *)2, 0, 30, 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, tq);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT);
	kt_gate_open();
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, tb);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(kt_quiet(pool, 100), 0);
	kt_destroy(pool);
}

KT(timeout, many_timeouts_then_normal_work)
{
	enum { N = 20, M = 300 };
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t bt = kt_id(pool, "block_t50"), echo = kt_id(pool, "echo");
	for (int i = 0; i < N; i++)
		kt_enq(pool, bt, kt_i64(i), NULL);
	knit_completion_t c[N];
	cr_assert_eq(kt_reap(pool, c, N), N);
	for (int i = 0; i < N; i++)
		cr_expect_eq(c[i].status, -KNIT_ETIMEDOUT);
	kt_gate_open();
	static knit_completion_t out[M];
	for (int i = 0; i < M; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	cr_assert_eq(kt_reap(pool, out, M), M);
	for (int i = 0; i < M; i++) {
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.i64, (intptr_t)out[i].user_data - 1);
	}
	cr_expect_eq(kt_quiet(pool, 100), 0, "late results of timed-out calls delivered");
	kt_destroy(pool);
}

KT(timeout, ctx_deadline_seen_by_task)
{
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t dl = kt_id(pool, "deadline");
	knit_completion_t c;
	/* none */
	cr_assert_eq(knit_call(pool, dl, NULL, &c, 0), 0);
	cr_expect_eq(c.result.i64, 0, "no deadline must read 0");
	/* per call, 5 s: absolute CLOCK_MONOTONIC from the moment of enqueue */
	int64_t before = kt_now_ns();
	kt_enq_ex(pool, dl, kt_none(), NULL, 0, 5000, 0);
	int64_t after = kt_now_ns();
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, 0);
	cr_expect(c.result.i64 >= before + 5000000000ll && c.result.i64 <= after + 5000000000ll,
		  "deadline %lld not in [%lld, %lld]", (long long)c.result.i64,
		  (long long)(before + 5000000000ll), (long long)(after + 5000000000ll));
	/* knit_call's timeout_ns */
	before = kt_now_ns();
	cr_assert_eq(knit_call(pool, dl, NULL, &c, 7000000000ll), 0);
	after = kt_now_ns();
	cr_expect(c.result.i64 >= before + 7000000000ll && c.result.i64 <= after + 7000000000ll,
		  "knit_call deadline %lld", (long long)c.result.i64);
	cr_expect_eq(knit_ctx_deadline_ns(NULL), -KNIT_EINVAL);
	kt_destroy(pool);
}

static int dl_task(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = knit_ctx_deadline_ns(ctx);
	return 0;
}

KT(timeout, ctx_deadline_task_default_and_no_timeout)
{
	knit_task_t t[] = {{"dl", dl_task, 2000, 0}};
	knit_pool_t *pool = NULL;
	cr_assert_eq(knit_pool_create(NULL, t, 1, &pool), 0);
	int64_t before = kt_now_ns();
	knit_ticket_t tk = 0;
	cr_assert_eq(knit_enqueue(pool, 0, NULL, NULL, &tk), 0);
	int64_t after = kt_now_ns();
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect(c.result.i64 >= before + 2000000000ll && c.result.i64 <= after + 2000000000ll,
		  "task default deadline %lld", (long long)c.result.i64);
	knit_call_options_t o = {sizeof o, KNIT_CALL_NO_TIMEOUT, 0, 0};
	cr_assert_eq(knit_enqueue_ex(pool, 0, NULL, NULL, &o, &tk), 0);
	kt_reap1(pool, &c);
	cr_expect_eq(c.result.i64, 0, "NO_TIMEOUT: deadline must be 0");
	cr_expect_eq(knit_pool_destroy(pool), 0);
}

/* ---- hard timeout: the call times out and the whole pool is force-stopped --- */

KT(timeout, hard_timeout_force_stops)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES; /* pins calls to lanes */
	o.hard_timeout_ms = 100;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t block = kt_id(pool, "block"), echo = kt_id(pool, "echo");
	/* Lane 0 blocks; more calls queue behind it on lane 0. */
	knit_ticket_t tb = kt_enq_ex(pool, block, kt_i64(0), (void *)1, KNIT_CALL_LANE, 0, 0);
	cr_assert(kt_wait_started(1));
	enum { Q = 10 };
	for (int i = 0; i < Q; i++)
		kt_enq_ex(pool, echo, kt_i64(i), (void *)2, KNIT_CALL_LANE, 0, 0);
	knit_completion_t out[Q + 1];
	int got = kt_reap(pool, out, Q + 1);
	cr_expect_eq(got, Q + 1, "got %d of %d completions", got, Q + 1);
	int timed_out = 0, closed = 0;
	for (int i = 0; i < got; i++) {
		if (out[i].ticket == tb) {
			cr_expect_eq(out[i].status, -KNIT_ETIMEDOUT, "hard-timed-out call: %d",
				     out[i].status);
			timed_out++;
		} else {
			cr_expect_eq(out[i].status, -KNIT_ECLOSED, "queued call: %d",
				     out[i].status);
			closed++;
		}
	}
	cr_expect_eq(timed_out, 1);
	cr_expect_eq(closed, Q);
	knit_value_t v = kt_i64(1);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_ECLOSED,
		     "enqueue after hard timeout");
	kt_gate_open();
	kt_destroy(pool);
}

KT(timeout, hard_timeout_not_reached)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.hard_timeout_ms = 60000;
	knit_pool_t *pool = kt_pool(&o);
	knit_completion_t c;
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(knit_call(pool, kt_id(pool, "sleep"),
				       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 2}, &c, 0),
			     0);
		cr_expect_eq(c.status, 0);
	}
	kt_destroy(pool);
}

/*
 * Deadlines past the representable range mean "no deadline" (now +
 * timeout_ns must never overflow). Before the fix knit_call(..., INT64_MAX)
 * computed a negative deadline and timed out at once, and the others were
 * signed overflow (the UBSan build aborts on them).
 */
KT(timeout, call_int64_max_never_expires)
{
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t sleep = kt_id(pool, "sleep");
	const int64_t huge[] = {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2 + 1};
	for (unsigned i = 0; i < sizeof huge / sizeof huge[0]; i++) {
		knit_completion_t c;
		cr_assert_eq(knit_call(pool, sleep,
				       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 5}, &c,
				       huge[i]),
			     0);
		cr_expect_eq(c.status, 0, "timeout_ns %lld: status %d", (long long)huge[i],
			     c.status);
		knit_completion_release(pool, &c);
	}
	kt_destroy(pool);
}

KT(timeout, complete_and_stop_int64_max)
{
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t sleep = kt_id(pool, "sleep");
	kt_enq(pool, sleep, kt_i64(5), NULL);
	knit_completion_t c;
	cr_assert_eq(knit_complete(pool, &c, 1, INT64_MAX), 1);
	cr_expect_eq(c.status, 0, "status %d", c.status);
	knit_completion_release(pool, &c);
	kt_enq(pool, sleep, kt_i64(5), NULL);
	cr_assert_eq(knit_complete(pool, &c, 1, INT64_MAX - 1), 1);
	cr_expect_eq(c.status, 0, "status %d", c.status);
	knit_completion_release(pool, &c);
	kt_enq(pool, sleep, kt_i64(5), NULL);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, INT64_MAX), 0);
	cr_assert_eq(knit_complete(pool, &c, 1, INT64_MAX), 1);
	cr_expect_eq(c.status, 0, "drained call: %d", c.status);
	knit_completion_release(pool, &c);
	cr_expect_eq(knit_complete(pool, &c, 1, INT64_MAX), -KNIT_ECLOSED);
	kt_destroy(pool);
}

/* A running abortable call that times out has its abort bit raised (the
 * task learns its result is no longer wanted), and the bit stays its own
 * until its late result is back: with one abort bit, a new abortable call
 * cannot take it while the old task still runs, so a SIGNAL meant for the
 * new call can never reach the old task. (The bit used to be released at
 * the timeout: the task never saw an abort, and the next abortable call
 * reused a bit a running task still read.) */
KT(timeout, running_abortable_call_sees_abort_and_keeps_its_bit)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.abort_capacity = 1;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t loop = kt_id(pool, "abort_loop");
	knit_ticket_t t = kt_enq_ex(pool, loop, kt_i64(0), NULL, 0, 30, 0);
	cr_assert_neq(t, 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT, "status %d", c.status);
	knit_ticket_t t2 = 0;
	int rc = knit_enqueue(pool, loop, NULL, NULL, &t2);
	/* abort_done only grows: 0 now means the task ran during the enqueue */
	if (atomic_load(&kt_abort_done) == 0)
		cr_expect_eq(rc, -KNIT_EAGAIN,
			     "a second abortable call got the running task's bit (rc %d)", rc);
	cr_assert(kt_wait_abort_done(1), "the timed-out task never ended");
	cr_expect_eq(atomic_load(&kt_abort_seen), 1,
		     "the timed-out task did not see its abort bit");
	/* once its late result is back, the bit serves the next call */
	for (int tries = 0; rc == -KNIT_EAGAIN && tries < 20000; tries++) {
		/* "try again after reaping completions" (knit_enqueue(3)): the
		 * reap takes the late result in and frees the bit */
		cr_assert_eq(knit_complete(pool, &c, 1, 1000000), 0, "a late result was delivered");
		rc = knit_enqueue(pool, loop, NULL, NULL, &t2);
	}
	cr_assert_eq(rc, 0, "the bit never came back (rc %d)", rc);
	cr_expect_eq(knit_cancel(pool, t2, KNIT_CANCEL_SIGNAL), 0);
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 1, "the new call did not see its own signal");
	kt_destroy(pool);
}
