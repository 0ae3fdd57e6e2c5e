/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_call_ex.c - knit_call_ex (per-call options, a ticket another
 * thread can cancel) and the task's own data (knit_task_t.data read back
 * through knit_ctx_task_data, reserved members refused).
 */
#include "api/kt.h"

#include <pthread.h>
#include <unistd.h>

static knit_call_options_t opts(uint32_t flags, uint32_t timeout_ms, uint32_t lane)
{
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.flags = flags;
	o.timeout_ms = timeout_ms;
	o.lane = lane;
	return o;
}

KT(call_ex, null_opts_is_knit_call)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(41);
	knit_completion_t c;
	cr_assert_eq(knit_call_ex(pool, kt_id(pool, "echo"), &v, NULL, NULL, &c, 0), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 41);
	cr_expect_eq(kt_quiet(pool, 50), 0, "a knit_call_ex completion leaked to knit_complete");
	kt_destroy(pool);
}

KT(call_ex, bad_args)
{
	knit_pool_t *pool = kt_pool_lanes(2);
	knit_value_t v = kt_i64(1);
	knit_completion_t c;
	knit_ticket_t t = 0;
	uint32_t echo = kt_id(pool, "echo");
	knit_call_options_t o = opts(0, 0, 0);
	cr_expect_eq(knit_call_ex(NULL, echo, &v, &o, &t, &c, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_call_ex(pool, echo, &v, &o, &t, NULL, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_call_ex(pool, 9999, &v, &o, &t, &c, 0), -KNIT_ENOTASK);
	o.flags = 1u << 20;
	cr_expect_eq(knit_call_ex(pool, echo, &v, &o, &t, &c, 0), -KNIT_EINVAL, "unknown flag");
	o = opts(KNIT_CALL_LANE, 0, 2);
	cr_expect_eq(knit_call_ex(pool, echo, &v, &o, &t, &c, 0), -KNIT_EINVAL,
		     "lane out of range");
	o.size = 0;
	cr_expect_eq(knit_call_ex(pool, echo, &v, &o, &t, &c, 0), -KNIT_EVERSION);
	cr_expect_eq(t, 0, "a failed call_ex wrote a ticket");
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 0);
	kt_destroy(pool);
}

KT(call_ex, lane_option_pins)
{
	knit_pool_t *pool = kt_pool_lanes(2);
	for (uint32_t lane = 0; lane < 2; lane++) {
		for (int i = 0; i < 20; i++) {
			knit_call_options_t o = opts(KNIT_CALL_LANE, 0, lane);
			knit_completion_t c;
			cr_assert_eq(knit_call_ex(pool, kt_id(pool, "lane"), NULL, &o, NULL, &c, 0),
				     0);
			cr_assert_eq(c.status, 0);
			cr_assert_eq(c.result.i64, lane, "pinned to %u, ran on %lld", lane,
				     (long long)c.result.i64);
		}
	}
	kt_destroy(pool);
}

KT(call_ex, timeout_option_fires)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(5);
	knit_call_options_t o = opts(0, 30, 0);
	knit_completion_t c;
	cr_assert_eq(knit_call_ex(pool, kt_id(pool, "block"), &v, &o, NULL, &c, 0), 0);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT, "status %d", c.status);
	kt_gate_open();
	/* NO_TIMEOUT overrides a task's default (block_t50 has 50 ms) */
	o = opts(KNIT_CALL_NO_TIMEOUT, 0, 0);
	cr_assert_eq(knit_call_ex(pool, kt_id(pool, "sleep_t50"),
				  &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 120}, &o, NULL, &c,
				  0),
		     0);
	cr_expect_eq(c.status, 0, "NO_TIMEOUT: status %d", c.status);
	kt_destroy(pool);
}

struct canceller {
	knit_pool_t *pool;
	knit_ticket_t *ticket;
	uint32_t flags;
	int rc;
};

/* Waits (bounded) for the ticket to appear, then cancels it. */
static void *cancel_thread(void *arg)
{
	struct canceller *k = arg;
	knit_ticket_t t = 0;
	for (int i = 0; i < 20000 && t == 0; i++) {
		t = __atomic_load_n(k->ticket, __ATOMIC_ACQUIRE);
		if (t == 0)
			usleep(100);
	}
	k->rc = t == 0 ? -9999 : knit_cancel(k->pool, t, k->flags);
	return NULL;
}

KT(call_ex, another_thread_cancels_now)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(3);
	knit_ticket_t t = 0;
	struct canceller k = {pool, &t, KNIT_CANCEL_NOW, 0};
	pthread_t th;
	pthread_create(&th, NULL, cancel_thread, &k);
	knit_completion_t c;
	/* block waits for the gate: only the cancel can end this call */
	cr_assert_eq(knit_call_ex(pool, kt_id(pool, "block"), &v, NULL, &t, &c, 0), 0);
	pthread_join(th, NULL);
	cr_expect_eq(k.rc, 0, "knit_cancel: %d", k.rc);
	cr_expect_eq(c.status, -KNIT_ECANCELED, "status %d", c.status);
	cr_expect_eq(c.ticket, t);
	kt_gate_open();
	cr_expect_eq(knit_cancel(pool, t, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND,
		     "cancel after the call returned");
	cr_expect_eq(kt_quiet(pool, 50), 0, "the cancelled call also reached knit_complete");
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.completed, 1);
	kt_destroy(pool);
}

KT(call_ex, another_thread_signals_abort)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = 0;
	struct canceller k = {pool, &t, KNIT_CANCEL_SIGNAL, 0};
	pthread_t th;
	pthread_create(&th, NULL, cancel_thread, &k);
	knit_call_options_t o = opts(KNIT_CALL_ABORTABLE, 0, 0);
	knit_completion_t c;
	/* abort_plain is not abortable by its task entry: the option makes it so */
	cr_assert_eq(knit_call_ex(pool, kt_id(pool, "abort_plain"), NULL, &o, &t, &c, 0), 0);
	pthread_join(th, NULL);
	cr_expect_eq(k.rc, 0, "knit_cancel(SIGNAL): %d", k.rc);
	cr_expect_eq(c.status, 0, "status %d", c.status);
	cr_expect_eq(c.result.i64, 1, "the task did not see its abort bit");
	kt_destroy(pool);
}

KT(call_ex, plain_knit_call_stays_unreachable)
{
	/* A knit_call's ticket (out->ticket) never cancels anything: only
	 * knit_call_ex with a ticket pointer publishes one. */
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c;
	knit_value_t v = kt_i64(1);
	/* a timeout keeps it on the ticketed path, which has a real ticket */
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, KT_TICKETED_NS), 0);
	cr_assert_neq(c.ticket, 0);
	cr_expect_eq(knit_cancel(pool, c.ticket, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND);
	kt_destroy(pool);
}

KT(task_data, ctx_reads_the_task_data_on_workers_and_inline)
{
	for (int inl = 0; inl < 2; inl++) {
		knit_pool_options_t o;
		kt_opts(&o, 2);
		o.topology = KNIT_TOPOLOGY_LANES;
		o.inline_lane = inl ? KNIT_INLINE_FIRST : KNIT_INLINE_OFF;
		knit_pool_t *pool = kt_pool(&o);
		for (int i = 0; i < 12; i++) {
			knit_completion_t c;
			cr_assert_eq(knit_call(pool, kt_id(pool, "task_data"), NULL, &c, 0), 0);
			cr_assert_eq(c.status, 0);
			cr_expect_eq(c.result.i64, (int64_t)(intptr_t)&kt_task_data_cookie,
				     "inline %d: task data %#llx", inl,
				     (unsigned long long)c.result.i64);
		}
		kt_destroy(pool);
	}
	cr_expect_null(knit_ctx_task_data(NULL));
}

static int t_nop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	(void)ret;
	return 0;
}

KT(task_data, reserved_members_refused)
{
	for (int i = 0; i < 2; i++) {
		knit_task_t t = {.name = "nop", .fn = t_nop};
		t.reserved[i] = 1;
		knit_pool_t *pool = NULL;
		cr_expect_eq(knit_pool_create(NULL, &t, 1, &pool), -KNIT_EINVAL, "reserved[%d] set",
			     i);
		cr_expect_null(pool);
	}
	knit_task_t t = {.name = "nop", .fn = t_nop, .data = (void *)1};
	knit_pool_t *pool = NULL;
	cr_assert_eq(knit_pool_create(NULL, &t, 1, &pool), 0, "data is opaque to the pool");
	kt_destroy(pool);
}
