/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_cancel.c - knit_cancel NOW and SIGNAL, knit_ctx_aborted,
 * the abort-bit capacity.
 */
#include "api/kt.h"

/* A one-worker pool with `cap` abort bits. */
static knit_pool_t *abort_pool(uint32_t cap)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.abort_capacity = cap;
	return kt_pool(&o);
}

/* Call t, the only call of an idle one-worker pool: once it runs, cancel it
 * with `how` (which must succeed) and reap its completion into *c. */
static void cancel_running(knit_pool_t *pool, knit_ticket_t t, uint32_t how, knit_completion_t *c)
{
	cr_assert(kt_wait_started(1));
	cr_assert_eq(knit_cancel(pool, t, how), 0);
	kt_reap1(pool, c);
	cr_expect_eq(c->ticket, t);
}

/* An "abort_loop" call runs on an idle one-worker pool until it sees its
 * abort bit: SIGNAL raises it, and the call completes normally with 1. */
static void signal_abort_loop(knit_pool_t *pool)
{
	knit_completion_t c;
	cancel_running(pool, kt_enq(pool, kt_id(pool, "abort_loop"), kt_none(), NULL),
		       KNIT_CANCEL_SIGNAL, &c);
	cr_expect_eq(c.status, 0, "SIGNAL completes normally: %d", c.status);
	cr_expect_eq(c.result.i64, 1, "task did not see the abort");
}

/* An abortable call of "aborted" reads its abort bit, fresh or reused: 0. */
static void expect_clear_bit(knit_pool_t *pool, const char *why)
{
	knit_completion_t c;
	knit_ticket_t t =
		kt_enq_ex(pool, kt_id(pool, "aborted"), kt_none(), NULL, KNIT_CALL_ABORTABLE, 0, 0);
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.result.i64, 0, "%s", why);
}

KT(cancel, bad_args)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "block"), kt_i64(0), NULL);
	cr_expect_eq(knit_cancel(NULL, t, KNIT_CANCEL_NOW), -KNIT_EINVAL);
	cr_expect_eq(knit_cancel(pool, t, 0), -KNIT_EINVAL, "no flag");
	cr_expect_eq(knit_cancel(pool, t, KNIT_CANCEL_NOW | KNIT_CANCEL_SIGNAL), -KNIT_EINVAL,
		     "both flags");
	cr_expect_eq(knit_cancel(pool, t, 1u << 2), -KNIT_EINVAL, "unknown flag");
	cr_expect_eq(knit_cancel(pool, t, KNIT_CANCEL_NOW | (1u << 5)), -KNIT_EINVAL,
		     "NOW + unknown");
	kt_gate_open();
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, 0, "a refused cancel must not touch the call");
	kt_destroy(pool);
}

KT(cancel, unknown_ticket)
{
	knit_pool_t *pool = kt_pool_n(1);
	cr_expect_eq(knit_cancel(pool, 0, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND);
	cr_expect_eq(knit_cancel(pool, 1ull << 60, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND);
	cr_expect_eq(knit_cancel(pool, 12345, KNIT_CANCEL_SIGNAL), -KNIT_ENOTFOUND);
	kt_destroy(pool);
}

KT(cancel, completed_ticket)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "echo"), kt_i64(1), NULL);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(knit_cancel(pool, t, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND);
	cr_expect_eq(knit_cancel(pool, t, KNIT_CANCEL_SIGNAL), -KNIT_ENOTFOUND);
	kt_destroy(pool);
}

KT(cancel, now_queued_call)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t tb = kt_enq(pool, kt_id(pool, "block"), kt_i64(0), (void *)1);
	cr_assert(kt_wait_started(1));
	knit_ticket_t tq = kt_enq(pool, kt_id(pool, "record"), kt_i64(42), (void *)2);
	cr_assert_eq(knit_cancel(pool, tq, KNIT_CANCEL_NOW), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, tq, "the cancelled call completes at once");
	cr_expect_eq(c.status, -KNIT_ECANCELED);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	cr_expect_eq(c.user_data, (void *)2);
	cr_expect_eq(knit_cancel(pool, tq, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND, "second cancel");
	kt_gate_open();
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, tb);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(kt_quiet(pool, 100), 0, "a cancelled call completed twice");
	kt_destroy(pool);
}

KT(cancel, now_running_call)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c;
	cancel_running(pool, kt_enq(pool, kt_id(pool, "block"), kt_i64(0), NULL), KNIT_CANCEL_NOW,
		       &c);
	cr_expect_eq(c.status, -KNIT_ECANCELED);
	kt_gate_open();
	cr_expect_eq(kt_quiet(pool, 100), 0, "late result of a cancelled call delivered");
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 3}, &c, 0),
		     0);
	cr_expect_eq(c.status, 0);
	kt_destroy(pool);
}

KT(cancel, now_many_queued)
{
	/* Many calls behind a blocker (slots and backlog): cancel every other
	 * one. Cancelled calls never run; all complete exactly once. */
	enum { N = 200 };
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t record = kt_id(pool, "record");
	kt_enq(pool, kt_id(pool, "block"), kt_i64(-1), (void *)0);
	cr_assert(kt_wait_started(1));
	knit_ticket_t t[N];
	for (int i = 0; i < N; i++)
		t[i] = kt_enq(pool, record, kt_i64(i), (void *)(intptr_t)(i + 1));
	for (int i = 0; i < N; i += 2)
		cr_expect_eq(knit_cancel(pool, t[i], KNIT_CANCEL_NOW), 0);
	kt_gate_open();
	static knit_completion_t out[N + 1];
	cr_assert_eq(kt_reap(pool, out, N + 1), N + 1);
	int seen[N + 1] = {0};
	for (int i = 0; i < N + 1; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_assert(k >= 0 && k <= N);
		seen[k]++;
		if (k == 0)
			continue;
		if ((k - 1) % 2 == 0)
			cr_expect_eq(out[i].status, -KNIT_ECANCELED, "call %ld", (long)k - 1);
		else
			cr_expect_eq(out[i].status, 0, "call %ld", (long)k - 1);
	}
	for (int k = 0; k <= N; k++)
		cr_expect_eq(seen[k], 1);
	cr_expect_eq(kt_quiet(pool, 100), 0);
	/* The record log: a call cancelled while still in the backlog never
	 * runs. Calls from index 100 on were surely in the backlog (a lane has
	 * far fewer slots); earlier ones may have been in a slot already, where
	 * the worker may run them and drop the result. Every call that was not
	 * cancelled ran exactly once. */
	int nrec = atomic_load(&kt_nrecords);
	int ran[N] = {0};
	for (int i = 0; i < nrec && i < KT_RECORD_MAX; i++) {
		int64_t a = kt_records[i].arg;
		cr_assert(a >= 0 && a < N);
		ran[a]++;
		cr_expect(a % 2 == 1 || a < 100, "call %lld, cancelled in the backlog, ran",
			  (long long)a);
	}
	for (int i = 1; i < N; i += 2)
		cr_expect_eq(ran[i], 1, "call %d ran %d times", i, ran[i]);
	kt_destroy(pool);
}

KT(cancel, signal_running_abortable_task)
{
	knit_pool_t *pool = kt_pool_n(1);
	signal_abort_loop(pool);
	cr_expect_eq(kt_quiet(pool, 50), 0);
	kt_destroy(pool);
}

KT(cancel, signal_with_call_abortable_flag)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c;
	cancel_running(pool,
		       kt_enq_ex(pool, kt_id(pool, "abort_plain"), kt_none(), NULL,
				 KNIT_CALL_ABORTABLE, 0, 0),
		       KNIT_CANCEL_SIGNAL, &c);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 1);
	kt_destroy(pool);
}

KT(cancel, signal_before_start)
{
	knit_pool_t *pool = kt_pool_n(1);
	kt_enq(pool, kt_id(pool, "block"), kt_i64(0), (void *)1);
	cr_assert(kt_wait_started(1));
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "abort_loop"), kt_none(), (void *)2);
	cr_assert_eq(knit_cancel(pool, t, KNIT_CANCEL_SIGNAL), 0);
	kt_gate_open();
	knit_completion_t c[2];
	cr_assert_eq(kt_reap(pool, c, 2), 2);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(c[i].status, 0);
		if (c[i].user_data == (void *)2)
			cr_expect_eq(c[i].result.i64, 1, "abort raised before start not seen");
	}
	kt_destroy(pool);
}

KT(cancel, signal_not_abortable)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "block"), kt_i64(0), NULL);
	cr_assert(kt_wait_started(1));
	cr_expect_eq(knit_cancel(pool, t, KNIT_CANCEL_SIGNAL), -KNIT_EINVAL);
	kt_gate_open();
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, 0);
	kt_destroy(pool);
}

KT(cancel, aborted_reads_zero)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "aborted"), NULL, &c, 0), 0);
	cr_expect_eq(c.result.i64, 0, "no abort bit reads 0");
	expect_clear_bit(pool, "a fresh abort bit reads 0");
	cr_expect_eq(knit_ctx_aborted(NULL), -KNIT_EINVAL);
	kt_destroy(pool);
}

KT(cancel, abort_capacity_exhausted)
{
	knit_pool_t *pool = abort_pool(2);
	uint32_t aborted = kt_id(pool, "aborted"), abort_loop = kt_id(pool, "abort_loop");
	kt_enq(pool, kt_id(pool, "block"), kt_i64(0), NULL);
	cr_assert(kt_wait_started(1));
	knit_call_options_t co = {sizeof co, KNIT_CALL_ABORTABLE, 0, 0};
	knit_value_t v = kt_none();
	knit_ticket_t tl = 0;
	cr_expect_eq(knit_enqueue_ex(pool, aborted, &v, NULL, &co, NULL), 0);
	cr_expect_eq(knit_enqueue(pool, abort_loop, &v, NULL, &tl), 0,
		     "an ABORTABLE task takes a bit too");
	cr_expect_eq(knit_enqueue_ex(pool, aborted, &v, NULL, &co, NULL), -KNIT_EAGAIN,
		     "third abort bit");
	cr_expect_eq(knit_enqueue(pool, abort_loop, &v, NULL, NULL), -KNIT_EAGAIN,
		     "third abort bit (task flag)");
	cr_expect_eq(knit_enqueue(pool, aborted, &v, NULL, NULL), 0,
		     "a call without an abort bit still goes");
	/* Let abort_loop end as soon as it runs, then drain: 4 completions. */
	cr_assert_eq(knit_cancel(pool, tl, KNIT_CANCEL_SIGNAL), 0);
	kt_gate_open();
	knit_completion_t c[4];
	cr_assert_eq(kt_reap(pool, c, 4), 4);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(c[i].status, 0);
	cr_expect_eq(kt_quiet(pool, 50), 0);
	kt_destroy(pool);
}

KT(cancel, abort_bits_freed_after_completion)
{
	knit_pool_t *pool = abort_pool(2);
	uint32_t aborted = kt_id(pool, "aborted");
	knit_call_options_t co = {sizeof co, KNIT_CALL_ABORTABLE, 0, 0};
	knit_value_t v = kt_none();
	for (int round = 0; round < 10; round++) {
		cr_assert_eq(knit_enqueue_ex(pool, aborted, &v, NULL, &co, NULL), 0, "round %d",
			     round);
		cr_assert_eq(knit_enqueue_ex(pool, aborted, &v, NULL, &co, NULL), 0, "round %d",
			     round);
		knit_completion_t c[2];
		cr_assert_eq(kt_reap(pool, c, 2), 2);
		cr_expect_eq(c[0].result.i64, 0, "a reused abort bit must start clear");
		cr_expect_eq(c[1].result.i64, 0);
	}
	kt_destroy(pool);
}

KT(cancel, signal_reused_bit_starts_clear)
{
	/* Raise a bit, complete the call, then a new abortable call (which may
	 * get the same bit) must read 0. */
	knit_pool_t *pool = abort_pool(1);
	signal_abort_loop(pool);
	expect_clear_bit(pool, "reused abort bit still raised");
	kt_destroy(pool);
}

/* knit_cancel(NOW) on a running abortable call completes it AND raises its
 * abort bit, which stays raised until the task returns; a later SIGNAL finds
 * the call completed (-KNIT_ENOTFOUND, as documented). The bit is given back
 * once the task's late result came back. */
KT(cancel, now_running_raises_abort)
{
	knit_pool_t *pool = abort_pool(1);
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "abort_loop"), kt_none(), NULL);
	knit_completion_t c;
	cancel_running(pool, t, KNIT_CANCEL_NOW, &c);
	cr_expect_eq(c.status, -KNIT_ECANCELED);
	cr_expect_eq(knit_cancel(pool, t, KNIT_CANCEL_SIGNAL), -KNIT_ENOTFOUND);
	cr_assert(kt_wait_abort_done(1));
	cr_expect_eq(atomic_load(&kt_abort_seen), 1, "the running task never saw its abort bit");
	/* The one bit comes back once the late result was reaped. */
	knit_value_t v = kt_none();
	knit_call_options_t co = {sizeof co, KNIT_CALL_ABORTABLE, 0, 0};
	knit_ticket_t t2 = 0;
	int rc;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while ((rc = knit_enqueue_ex(pool, kt_id(pool, "aborted"), &v, NULL, &co, &t2)) ==
		       -KNIT_EAGAIN &&
	       kt_now_ns() < end)
		cr_assert_eq(knit_complete(pool, &c, 1, 1000 * 1000), 0);
	cr_assert_eq(rc, 0, "abort bit never given back: %d", rc);
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t2);
	cr_expect_eq(c.result.i64, 0, "the reused bit starts clear");
	kt_destroy(pool);
}

/* knit_stop(CANCEL) raises the abort bit of every running abortable call, so
 * the stop does not wait for such tasks to run out on their own. */
KT(cancel, stop_cancel_raises_abort)
{
	knit_pool_t *pool = kt_pool_lanes(2);
	for (uint32_t w = 0; w < 2; w++)
		kt_enq_ex(pool, kt_id(pool, "abort_loop"), kt_none(), NULL, KNIT_CALL_LANE, 0, w);
	cr_assert(kt_wait_started(2));
	cr_assert_eq(knit_stop(pool, KNIT_STOP_CANCEL, -1), 0);
	cr_expect_eq(atomic_load(&kt_abort_done), 2, "the stop returned before its workers did");
	cr_expect_eq(atomic_load(&kt_abort_seen), 2, "running tasks were not told to stop");
	knit_completion_t c[2];
	cr_assert_eq(kt_reap(pool, c, 2), 2);
	for (int i = 0; i < 2; i++)
		cr_expect_eq(c[i].status, -KNIT_ECLOSED);
	kt_destroy(pool);
}
