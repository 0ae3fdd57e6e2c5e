/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_enqueue.c - knit_enqueue and knit_enqueue_ex: argument
 * checks and error codes, tickets, user_data, copying of argument bytes,
 * per-call options (size, flags, lane), many producers.
 */
#include "api/kt.h"

#include <stdatomic.h>
#include <stdlib.h>

KT(enqueue, null_pool)
{
	knit_value_t v = kt_i64(1);
	knit_ticket_t t = 0;
	cr_expect_eq(knit_enqueue(NULL, 0, &v, NULL, &t), -KNIT_EINVAL);
	cr_expect_eq(knit_enqueue_ex(NULL, 0, &v, NULL, NULL, &t), -KNIT_EINVAL);
}

KT(enqueue, unknown_task)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(1);
	cr_expect_eq(knit_enqueue(pool, (uint32_t)KT_NTASKS, &v, NULL, NULL), -KNIT_ENOTASK);
	cr_expect_eq(knit_enqueue(pool, UINT32_MAX, &v, NULL, NULL), -KNIT_ENOTASK);
	cr_expect_eq(knit_enqueue_ex(pool, (uint32_t)KT_NTASKS, &v, NULL, NULL, NULL),
		     -KNIT_ENOTASK);
	knit_completion_t c;
	cr_expect_eq(knit_call(pool, (uint32_t)KT_NTASKS, &v, &c, 0), -KNIT_ENOTASK);
	/* Nothing was accepted. */
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 0);
	cr_expect_eq(kt_quiet(pool, 50), 0);
	kt_destroy(pool);
}

KT(enqueue, bad_values)
{
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t echo = kt_id(pool, "echo");
	knit_value_t v;

	v = kt_none();
	v.type = 7;
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EINVAL, "unknown type 7");
	v.type = UINT32_MAX;
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EINVAL, "unknown type max");

	v = kt_bytes(NULL, 5);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EINVAL, "bytes NULL len 5");
	v = kt_str(NULL, 1);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EINVAL, "string NULL len 1");
	v = kt_err(3, NULL);
	v.len = 4;
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EINVAL, "error NULL len 4");

	v = kt_bool(2);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EINVAL, "bool 2");
	v = kt_bool(-1);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_EINVAL, "bool -1");

	knit_completion_t c;
	v = kt_bool(2);
	cr_expect_eq(knit_call(pool, echo, &v, &c, 0), -KNIT_EINVAL, "knit_call bool 2");

	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 0);
	kt_destroy(pool);
}

KT(enqueue, null_data_zero_len_ok)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_bytes(NULL, 0);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_BYTES);
	cr_expect_eq(c.result.len, 0);
	knit_completion_release(pool, &c);
	kt_destroy(pool);
}

KT(enqueue, payload_over_cap)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.payload_max_bytes = 1 << 20;
	o.max_payload_bytes = 64 * 1024;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	uint8_t *buf = kt_pattern(64 * 1024 + 1);
	knit_value_t v = kt_bytes(buf, 64 * 1024 + 1);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_ETOOBIG);
	knit_completion_t c;
	cr_expect_eq(knit_call(pool, echo, &v, &c, 0), -KNIT_ETOOBIG);
	v = kt_bytes(buf, 64 * 1024);
	cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0, "exactly the cap is accepted");
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.len, 64 * 1024);
	cr_expect(kt_is_pattern(c.result.data, c.result.len));
	knit_completion_release(pool, &c);
	/* Default cap: payload_max_bytes (64 MiB) / 8. */
	kt_destroy(pool);
	pool = kt_pool_n(1);
	free(buf);
	buf = kt_pattern((8u << 20) + 1);
	v = kt_bytes(buf, (8u << 20) + 1);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_ETOOBIG);
	v = kt_str((const char *)buf, (8u << 20) + 1);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_ETOOBIG);
	free(buf);
	kt_destroy(pool);
}

KT(enqueue, null_arg_is_none)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = 0;
	cr_assert_eq(knit_enqueue(pool, kt_id(pool, "echo"), NULL, NULL, &t), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	knit_completion_release(pool, &c);
	kt_destroy(pool);
}

KT(enqueue, null_ticket_ok)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(9);
	int marker;
	cr_assert_eq(knit_enqueue(pool, kt_id(pool, "echo"), &v, &marker, NULL), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.user_data, &marker);
	cr_expect_neq(c.ticket, 0);
	cr_expect_eq(c.result.i64, 9);
	kt_destroy(pool);
}

KT(enqueue, tickets_unique_user_data_task_round_trip)
{
	enum { N = 1000 };
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo"), inspect = kt_id(pool, "inspect");
	static knit_ticket_t tickets[N];
	static knit_completion_t out[N];
	static int seen[N];
	for (int i = 0; i < N; i++) {
		tickets[i] =
			kt_enq(pool, i % 2 ? echo : inspect, kt_i64(i), (void *)(intptr_t)(i + 1));
		for (int j = 0; j < i && j < 64; j++)
			cr_assert_neq(tickets[i], tickets[i - 1 - j], "ticket reused");
	}
	cr_assert_eq(kt_reap(pool, out, N), N);
	for (int i = 0; i < N; i++) {
		intptr_t k = (intptr_t)out[i].user_data - 1;
		cr_assert(k >= 0 && k < N, "bad user_data %p", out[i].user_data);
		cr_expect_eq(seen[k]++, 0, "call %ld completed twice", (long)k);
		cr_expect_eq(out[i].ticket, tickets[k]);
		cr_expect_eq(out[i].task, k % 2 ? echo : inspect);
		cr_expect_eq(out[i].status, 0);
		knit_value_t a = kt_i64(k);
		cr_expect_eq(out[i].result.i64, k % 2 ? k : kt_value_hash(&a));
	}
	cr_expect_eq(kt_quiet(pool, 50), 0);
	kt_destroy(pool);
}

KT(enqueue, arg_bytes_copied_before_return)
{
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t block = kt_id(pool, "block"), echo = kt_id(pool, "echo");
	kt_enq(pool, block, kt_i64(0), NULL); /* keep the worker busy */
	cr_assert(kt_wait_started(1));
	size_t sizes[] = {1, 100, 600, 70000};
	uint8_t *bufs[4];
	for (int i = 0; i < 4; i++) {
		bufs[i] = kt_pattern(sizes[i]);
		kt_enq(pool, echo, kt_bytes(bufs[i], sizes[i]), (void *)(intptr_t)(i + 1));
		memset(bufs[i], 0, sizes[i]); /* scribble right after enqueue */
		free(bufs[i]);
	}
	kt_gate_open();
	knit_completion_t out[5];
	cr_assert_eq(kt_reap(pool, out, 5), 5);
	for (int i = 0; i < 5; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_expect_eq(out[i].status, 0);
		if (k == 0)
			continue;
		cr_expect_eq(out[i].result.len, sizes[k - 1]);
		cr_expect(kt_is_pattern(out[i].result.data, out[i].result.len),
			  "bytes of call %ld changed", (long)k);
		knit_completion_release(pool, &out[i]);
	}
	kt_destroy(pool);
}

/* ---- _ex options ------------------------------------------------------------- */

KT(enqueue, ex_null_opts_defaults)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_value_t v = kt_i64(3);
	knit_ticket_t t = 0;
	cr_assert_eq(knit_enqueue_ex(pool, kt_id(pool, "echo"), &v, NULL, NULL, &t), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.result.i64, 3);
	kt_destroy(pool);
}

KT(enqueue, ex_size_checks)
{
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t echo = kt_id(pool, "echo");
	knit_value_t v = kt_i64(3);
	struct {
		knit_call_options_t o;
		uint32_t extra[4];
	} big;
	memset(&big, 0, sizeof big);
	big.o.size = 0;
	cr_expect_eq(knit_enqueue_ex(pool, echo, &v, NULL, &big.o, NULL), -KNIT_EVERSION, "size 0");
	big.o.size = sizeof big.o + 4;
	cr_expect_eq(knit_enqueue_ex(pool, echo, &v, NULL, &big.o, NULL), -KNIT_EVERSION,
		     "size too big");
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 0);
	kt_destroy(pool);
}

KT(enqueue, ex_short_size_reads_prefix_only)
{
	/* size covers size and flags only; timeout_ms = 1 behind it must be
	 * ignored: the 100 ms sleep completes normally. */
	knit_pool_t *pool = kt_pool_n(1);
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = offsetof(knit_call_options_t, timeout_ms);
	o.timeout_ms = 1;
	o.lane = 12345;
	knit_value_t v = kt_i64(100);
	cr_assert_eq(knit_enqueue_ex(pool, kt_id(pool, "sleep"), &v, NULL, &o, NULL), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, 0, "timeout_ms beyond size was read: status %d", c.status);
	kt_destroy(pool);
}

KT(enqueue, ex_unknown_flags)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	knit_value_t v = kt_i64(3);
	uint32_t echo = kt_id(pool, "echo");
	o.flags = 1u << 5; /* the first bit 1.2 does not know (3, 4: KNIT_CALL_HIGH, LOW) */
	cr_expect_eq(knit_enqueue_ex(pool, echo, &v, NULL, &o, NULL), -KNIT_EINVAL);
	o.flags = 0x80000000u;
	cr_expect_eq(knit_enqueue_ex(pool, echo, &v, NULL, &o, NULL), -KNIT_EINVAL);
	kt_destroy(pool);
}

KT(enqueue, ex_lane_out_of_range)
{
	knit_pool_t *pool = kt_pool_n(2);
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.flags = KNIT_CALL_LANE;
	knit_value_t v = kt_i64(3);
	uint32_t lane = kt_id(pool, "lane");
	o.lane = 2;
	cr_expect_eq(knit_enqueue_ex(pool, lane, &v, NULL, &o, NULL), -KNIT_EINVAL);
	o.lane = UINT32_MAX;
	cr_expect_eq(knit_enqueue_ex(pool, lane, &v, NULL, &o, NULL), -KNIT_EINVAL);
	/* lane without KNIT_CALL_LANE is ignored */
	o.flags = 0;
	o.lane = 99;
	cr_expect_eq(knit_enqueue_ex(pool, lane, &v, NULL, &o, NULL), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.status, 0);
	kt_destroy(pool);
}

KT(enqueue, ex_lane_routes)
{
	knit_pool_t *pool = kt_pool_lanes(3); /* KNIT_CALL_LANE needs lanes */
	uint32_t lane = kt_id(pool, "lane");
	knit_pool_stats_t s0, s1;
	kt_stats(pool, &s0);
	for (uint32_t l = 0; l < 3; l++)
		for (int i = 0; i < 10; i++)
			kt_enq_ex(pool, lane, kt_none(), (void *)(uintptr_t)(l + 1), KNIT_CALL_LANE,
				  0, l);
	knit_completion_t out[30];
	cr_assert_eq(kt_reap(pool, out, 30), 30);
	for (int i = 0; i < 30; i++) {
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.i64, (int64_t)(uintptr_t)out[i].user_data - 1,
			     "ran on lane %lld, asked for %lu", (long long)out[i].result.i64,
			     (unsigned long)(uintptr_t)out[i].user_data - 1);
	}
	kt_stats(pool, &s1);
	for (int l = 0; l < 3; l++)
		cr_expect_eq(s1.lane[l].calls - s0.lane[l].calls, 10, "lane %d calls", l);
	kt_destroy(pool);
}

/* Calls pinned to a lane start in the order they were enqueued there
 * (FIFO per lane: users pin to serialise), whether each found room on
 * its lane at once or waited in the backlog behind earlier ones: one
 * producer pins 4000 "record" calls to two lanes in a fixed pseudo-random
 * pattern while it reaps what completed, so placement and backlog mix. */
KT(enqueue, pinned_calls_start_in_order_per_lane)
{
	knit_pool_t *pool = kt_pool_lanes(2);
	const uint32_t record = kt_id(pool, "record");
	enum { kCalls = KT_RECORD_MAX };
	atomic_store(&kt_nrecords, 0);
	uint32_t rng = 12345;
	int reaped = 0;
	knit_completion_t c[64];
	for (int i = 0; i < kCalls; i++) {
		rng = rng * 1103515245u + 12345u;
		const uint32_t lane = (rng >> 16) % 4 == 0 ? 1 : 0;
		knit_value_t v = kt_i64(i);
		knit_call_options_t o = {.size = sizeof o, .flags = KNIT_CALL_LANE, .lane = lane};
		int rc;
		while ((rc = knit_enqueue_ex(pool, record, &v, (void *)(uintptr_t)lane, &o,
					     NULL)) == -KNIT_EAGAIN) {
			const int n = knit_complete(pool, c, 64, (int64_t)(KT_BOUND_S * 1e9));
			cr_assert_gt(n, 0);
			reaped += n;
			for (int k = 0; k < n; k++)
				knit_completion_release(pool, &c[k]);
		}
		cr_assert_eq(rc, 0, "enqueue %d: %s", i, knit_strerror(rc));
		const int n = knit_complete(pool, c, 64, 0);
		cr_assert_geq(n, 0);
		reaped += n;
		for (int k = 0; k < n; k++)
			knit_completion_release(pool, &c[k]);
	}
	while (reaped < kCalls) {
		const int n = knit_complete(pool, c, 64, (int64_t)(KT_BOUND_S * 1e9));
		cr_assert_gt(n, 0, "%d of %d completed", reaped, kCalls);
		reaped += n;
		for (int k = 0; k < n; k++)
			knit_completion_release(pool, &c[k]);
	}
	cr_assert_eq(atomic_load(&kt_nrecords), kCalls);
	int64_t last[2] = {-1, -1};
	int out_of_order = 0;
	for (int i = 0; i < kCalls; i++) {
		const int l = kt_records[i].lane;
		cr_assert(l == 0 || l == 1, "lane %d", l);
		if (kt_records[i].arg < last[l])
			out_of_order++;
		else
			last[l] = kt_records[i].arg;
	}
	cr_expect_eq(out_of_order, 0,
		     "%d of %d pinned calls started before one enqueued earlier on their lane",
		     out_of_order, kCalls);
	kt_destroy(pool);
}

/* ---- many producers ----------------------------------------------------------- */

struct prod_arg {
	knit_pool_t *pool;
	uint32_t task;
	int base, n;
	int errors;
};

static void *producer(void *p)
{
	struct prod_arg *a = p;
	for (int i = 0; i < a->n; i++) {
		knit_value_t v = kt_i64(a->base + i);
		if (knit_enqueue(a->pool, a->task, &v, (void *)(intptr_t)(a->base + i + 1), NULL) !=
		    0)
			a->errors++;
	}
	return NULL;
}

KT(enqueue, four_producers_one_reaper)
{
	enum { T = 4, PER = 1000, N = T * PER };
	knit_pool_t *pool = kt_pool_n(2);
	struct prod_arg a[T];
	pthread_t th[T];
	for (int i = 0; i < T; i++) {
		a[i] = (struct prod_arg){pool, kt_id(pool, "echo"), i * PER, PER, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, producer, &a[i]), 0);
	}
	static knit_completion_t out[N];
	static int seen[N];
	int got = kt_reap(pool, out, N);
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(a[i].errors, 0);
	}
	cr_assert_eq(got, N, "got %d of %d", got, N);
	for (int i = 0; i < N; i++) {
		intptr_t k = (intptr_t)out[i].user_data - 1;
		cr_assert(k >= 0 && k < N);
		cr_expect_eq(seen[k]++, 0, "call %ld twice", (long)k);
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.i64, k);
	}
	cr_expect_eq(kt_quiet(pool, 50), 0);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, N);
	cr_expect_eq(s.completed, N);
	cr_expect_eq(s.pending, 0);
	kt_destroy(pool);
}
