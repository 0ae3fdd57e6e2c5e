/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_call.c - knit_call: argument checks, the enqueue errors it
 * passes through, its timeout (> 0 = the call's, <= 0 = the task default).
 */
#include "api/kt.h"

KT(call, bad_args)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(1);
	knit_completion_t c;
	cr_expect_eq(knit_call(NULL, 0, &v, &c, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &v, NULL, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_call(pool, 9999, &v, &c, 0), -KNIT_ENOTASK);
	v.type = 42;
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), -KNIT_EINVAL);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 0);
	kt_destroy(pool);
}

KT(call, round_trip)
{
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo");
	for (int i = 0; i < 200; i++) {
		knit_value_t v = kt_i64(i * 3);
		knit_completion_t c;
		memset(&c, 0xAA, sizeof c);
		cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0);
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.task, echo);
		/* The fast path's completion has no ticket (knit_call(3)). */
		cr_assert_eq(c.ticket, 0);
		cr_assert_eq(c.result.type, KNIT_VALUE_I64);
		cr_assert_eq(c.result.i64, i * 3);
		knit_completion_release(pool, &c);
	}
	cr_expect_eq(kt_quiet(pool, 50), 0, "knit_call completions leaked to knit_complete");
	kt_destroy(pool);
}

KT(call, null_arg)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"), NULL, &c, 0), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	kt_destroy(pool);
}

KT(call, timeout_fires_and_pool_keeps_working)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(5);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "block"), &v, &c, 50 * 1000 * 1000), 0);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT, "status %d", c.status);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	kt_gate_open();
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 5);
	/* The blocked call's late result is dropped, not delivered anywhere. */
	cr_expect_eq(kt_quiet(pool, 100), 0);
	kt_destroy(pool);
}

KT(call, zero_or_negative_timeout_uses_task_default)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(5);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "block_t50"), &v, &c, 0), 0);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT, "timeout 0: status %d", c.status);
	cr_assert_eq(knit_call(pool, kt_id(pool, "block_t50"), &v, &c, -1), 0);
	cr_expect_eq(c.status, -KNIT_ETIMEDOUT, "timeout -1: status %d", c.status);
	kt_gate_open();
	kt_destroy(pool);
}

KT(call, generous_timeout_does_not_fire)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(30);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "sleep"), &v, &c, 60ll * 1000 * 1000 * 1000), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 30);
	/* An explicit timeout overrides the task's 50 ms default. */
	v = kt_i64(120);
	cr_assert_eq(knit_call(pool, kt_id(pool, "sleep_t50"), &v, &c, 60ll * 1000 * 1000 * 1000),
		     0);
	cr_expect_eq(c.status, 0, "per-call timeout must replace the task default: %d", c.status);
	kt_destroy(pool);
}

KT(call, after_stop_closed)
{
	knit_pool_t *pool = kt_pool_n(1);
	cr_assert_eq(knit_stop(pool, 0, -1), 0);
	knit_value_t v = kt_i64(5);
	knit_completion_t c;
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), -KNIT_ECLOSED);
	kt_destroy(pool);
}

KT(call, too_big)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.payload_max_bytes = 64 * 1024;
	knit_pool_t *pool = kt_pool(&o);
	uint8_t buf[8 * 1024 + 1];
	memset(buf, 1, sizeof buf);
	knit_value_t v = kt_bytes(buf, sizeof buf);
	knit_completion_t c;
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), -KNIT_ETOOBIG);
	kt_destroy(pool);
}
