/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_stop.c - knit_stop (DRAIN, CANCEL, acknowledgement, calling
 * it twice), what enqueue/call/complete do afterwards, knit_pool_destroy of a
 * running pool.
 */
#include "api/kt.h"

#include <sched.h>
#include <stdlib.h>

#define STOP_BOUND_NS (30ll * 1000 * 1000 * 1000)

/* After a stop: reap everything until knit_complete says -KNIT_ECLOSED
 * (bounded). Returns the completions reaped; *closed = 1 if ECLOSED came. */
static int reap_until_closed(knit_pool_t *pool, knit_completion_t *out, int cap, int *closed)
{
	int got = 0;
	*closed = 0;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	knit_completion_t tmp[64];
	while (kt_now_ns() < end) {
		int rc = knit_complete(pool, tmp, 64, 50 * 1000 * 1000);
		if (rc == -KNIT_ECLOSED) {
			*closed = 1;
			break;
		}
		cr_assert_geq(rc, 0, "knit_complete after stop: %d", rc);
		for (int i = 0; i < rc; i++) {
			if (got < cap)
				out[got] = tmp[i];
			else
				knit_completion_release(pool, &tmp[i]);
			got++;
		}
	}
	return got;
}

KT(stop, bad_args)
{
	knit_pool_t *pool = kt_pool_n(1);
	cr_expect_eq(knit_stop(NULL, 0, -1), -KNIT_EINVAL);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN | KNIT_STOP_CANCEL, -1), -KNIT_EINVAL);
	cr_expect_eq(knit_stop(pool, 1u << 2, -1), -KNIT_EINVAL);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN | (1u << 7), -1), -KNIT_EINVAL);
	/* A refused stop did not stop anything. */
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 1}, &c, 0),
		     0);
	cr_expect_eq(c.status, 0);
	kt_destroy(pool);
}

KT(stop, idle_then_everything_closed)
{
	knit_pool_t *pool = kt_pool_n(2);
	cr_assert_eq(knit_stop(pool, 0, STOP_BOUND_NS), 0);
	knit_value_t v = kt_i64(1);
	knit_ticket_t t = 0;
	cr_expect_eq(knit_enqueue(pool, kt_id(pool, "echo"), &v, NULL, &t), -KNIT_ECLOSED);
	cr_expect_eq(knit_enqueue_ex(pool, kt_id(pool, "echo"), &v, NULL, NULL, &t), -KNIT_ECLOSED);
	knit_completion_t c;
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), -KNIT_ECLOSED);
	cr_expect_eq(knit_complete(pool, &c, 1, 0), -KNIT_ECLOSED);
	cr_expect_eq(knit_complete(pool, &c, 1, -1), -KNIT_ECLOSED,
		     "a waiter never hangs on a dead pool");
	/* double stop, both flavours */
	cr_expect_eq(knit_stop(pool, 0, STOP_BOUND_NS), 0);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, STOP_BOUND_NS), 0);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, -1), 0);
	/* the task table still answers; stats still work */
	cr_expect_geq(knit_pool_task_id(pool, "echo"), 0);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.pending, 0);
	kt_destroy(pool);
}

static void drain_under_load(uint32_t workers, int n)
{
	knit_pool_t *pool = kt_pool_n(workers);
	uint32_t echo = kt_id(pool, "echo"), bytes = kt_id(pool, "bytes");
	for (int i = 0; i < n; i++)
		kt_enq(pool, i % 16 == 0 ? bytes : echo, kt_i64(i % 16 == 0 ? 700 : i),
		       (void *)(intptr_t)(i + 1));
	int rc = knit_stop(pool, KNIT_STOP_DRAIN, STOP_BOUND_NS);
	cr_expect_eq(rc, 0, "stop(DRAIN): %d", rc);
	knit_value_t v = kt_i64(0);
	cr_expect_eq(knit_enqueue(pool, echo, &v, NULL, NULL), -KNIT_ECLOSED);
	knit_completion_t *out = calloc((size_t)n + 16, sizeof *out);
	char *seen = calloc((size_t)n, 1);
	int closed;
	int got = reap_until_closed(pool, out, n + 16, &closed);
	cr_expect(closed, "knit_complete never returned -KNIT_ECLOSED");
	cr_expect_eq(got, n, "DRAIN: %d completions for %d calls", got, n);
	for (int i = 0; i < got && i < n + 16; i++) {
		intptr_t k = (intptr_t)out[i].user_data - 1;
		cr_assert(k >= 0 && k < n);
		cr_expect_eq(seen[k]++, 0, "call %ld twice", (long)k);
		cr_expect_eq(out[i].status, 0, "DRAIN: call %ld status %d", (long)k, out[i].status);
		if (k % 16 == 0)
			cr_expect(out[i].result.len == 700 &&
				  kt_is_pattern(out[i].result.data, 700));
		else
			cr_expect_eq(out[i].result.i64, k);
		knit_completion_release(pool, &out[i]);
	}
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.enqueued, (uint64_t)n);
	free(out);
	free(seen);
	kt_destroy(pool);
}

KT(stop, drain_under_load_one_worker) { drain_under_load(1, KT_SANITIZED ? 2000 : 5000); }

KT(stop, drain_under_load_two_workers) { drain_under_load(2, KT_SANITIZED ? 2000 : 5000); }

KT(stop, drain_includes_backlog_behind_blocker)
{
	/* The worker is blocked while 300 calls wait (most in the backlog);
	 * the gate opens from another thread while stop(DRAIN) waits. */
	enum { N = 300 };
	knit_pool_t *pool = kt_pool_n(1);
	kt_enq(pool, kt_id(pool, "block"), kt_i64(-1), (void *)(intptr_t)(N + 1));
	cr_assert(kt_wait_started(1));
	for (int i = 0; i < N; i++)
		kt_enq(pool, kt_id(pool, "echo"), kt_i64(i), (void *)(intptr_t)(i + 1));
	/* The worker cannot acknowledge while it runs a task. */
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, 50 * 1000 * 1000), -KNIT_ETIMEDOUT,
		     "stop acknowledged by a worker stuck in a task");
	cr_expect_eq(knit_enqueue(pool, kt_id(pool, "echo"),
				  &(knit_value_t){.type = KNIT_VALUE_I64}, NULL, NULL),
		     -KNIT_ECLOSED);
	kt_gate_open();
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, STOP_BOUND_NS), 0,
		     "second stop continues waiting");
	static knit_completion_t out[N + 8];
	int closed;
	int got = reap_until_closed(pool, out, N + 8, &closed);
	cr_expect(closed);
	cr_expect_eq(got, N + 1);
	int seen[N + 2] = {0};
	for (int i = 0; i < got && i < N + 8; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k <= N + 1);
		seen[k]++;
		cr_expect_eq(out[i].status, 0, "DRAIN: call %ld status %d", (long)k, out[i].status);
	}
	for (int k = 1; k <= N + 1; k++)
		cr_expect_eq(seen[k], 1, "call %d completed %d times", k, seen[k]);
	kt_destroy(pool);
}

KT(stop, cancel_under_load_blocked_worker)
{
	int n = KT_SANITIZED ? 1000 : 3000;
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t tb =
		kt_enq(pool, kt_id(pool, "block"), kt_i64(-1), (void *)(intptr_t)(n + 1));
	cr_assert(kt_wait_started(1));
	for (int i = 0; i < n; i++)
		kt_enq(pool, kt_id(pool, "record"), kt_i64(i), (void *)(intptr_t)(i + 1));
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, 50 * 1000 * 1000), -KNIT_ETIMEDOUT,
		     "stop acknowledged by a worker stuck in a task");
	kt_gate_open();
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, STOP_BOUND_NS), 0);
	knit_completion_t *out = calloc((size_t)n + 16, sizeof *out);
	char *seen = calloc((size_t)n + 2, 1);
	int closed;
	int got = reap_until_closed(pool, out, n + 16, &closed);
	cr_expect(closed, "knit_complete never returned -KNIT_ECLOSED");
	cr_expect_eq(got, n + 1);
	int ok = 0, cl = 0;
	for (int i = 0; i < got && i < n + 16; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k <= n + 1);
		cr_expect_eq(seen[k]++, 0, "call %ld twice", (long)k);
		if (out[i].ticket == tb)
			cr_expect_eq(out[i].status, -KNIT_ECLOSED, "the running call: %d",
				     out[i].status);
		else
			cr_expect(out[i].status == 0 || out[i].status == -KNIT_ECLOSED, "status %d",
				  out[i].status);
		ok += out[i].status == 0;
		cl += out[i].status == -KNIT_ECLOSED;
	}
	/* Nothing queued behind the blocker could start before the stop. */
	cr_expect_eq(ok, 0, "%d calls queued before a CANCEL stop completed with 0", ok);
	cr_expect_eq(cl, n + 1);
	free(out);
	free(seen);
	kt_destroy(pool);
}

KT(stop, cancel_under_load_running)
{
	int n = KT_SANITIZED ? 2000 : 6000;
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo");
	for (int i = 0; i < n; i++)
		kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)(i + 1));
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, STOP_BOUND_NS), 0);
	knit_completion_t *out = calloc((size_t)n + 16, sizeof *out);
	char *seen = calloc((size_t)n + 1, 1);
	int closed;
	int got = reap_until_closed(pool, out, n + 16, &closed);
	cr_expect(closed);
	cr_expect_eq(got, n);
	for (int i = 0; i < got && i < n + 16; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k <= n);
		cr_expect_eq(seen[k]++, 0, "call %ld twice", (long)k);
		cr_expect(out[i].status == 0 || out[i].status == -KNIT_ECLOSED, "status %d",
			  out[i].status);
		if (out[i].status == 0)
			cr_expect_eq(out[i].result.i64, k - 1);
	}
	free(out);
	free(seen);
	kt_destroy(pool);
}

/* Producers race a stop: every accepted call completes exactly once, every
 * refused one was refused with -KNIT_ECLOSED. */
enum { RACE_MAX = 200000 };
static knit_ticket_t race_tickets[2][RACE_MAX];
struct racer {
	knit_pool_t *pool;
	uint32_t echo;
	int id, accepted, closed_seen, bad;
	atomic_int *go;
};

static void *racer(void *p)
{
	struct racer *r = p;
	while (!atomic_load(r->go))
		;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (r->accepted < RACE_MAX && kt_now_ns() < end) {
		knit_value_t v = kt_i64(r->accepted);
		knit_ticket_t t = 0;
		int rc = knit_enqueue(r->pool, r->echo, &v,
				      (void *)(intptr_t)(r->id * RACE_MAX + r->accepted + 1), &t);
		if (rc == 0) {
			race_tickets[r->id][r->accepted++] = t;
		} else if (rc == -KNIT_ECLOSED) {
			r->closed_seen = 1;
			break;
		} else if (rc == -KNIT_EAGAIN) {
			sched_yield();
		} else {
			r->bad = rc;
			break;
		}
	}
	return NULL;
}

KT(stop, enqueue_races_stop)
{
	knit_pool_t *pool = kt_pool_n(1);
	atomic_int go = 0;
	struct racer r[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		r[i] = (struct racer){pool, kt_id(pool, "echo"), i, 0, 0, 0, &go};
		cr_assert_eq(pthread_create(&th[i], NULL, racer, &r[i]), 0);
	}
	atomic_store(&go, 1);
	kt_sleep_ms(20);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, STOP_BOUND_NS), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(r[i].bad, 0, "producer %d got %d", i, r[i].bad);
		cr_expect(r[i].closed_seen, "producer %d never saw ECLOSED", i);
	}
	int total = r[0].accepted + r[1].accepted;
	char *seen = calloc(2 * RACE_MAX, 1);
	int got = 0, closed = 0;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	knit_completion_t c[64];
	while (kt_now_ns() < end) {
		int rc = knit_complete(pool, c, 64, 50 * 1000 * 1000);
		if (rc == -KNIT_ECLOSED) {
			closed = 1;
			break;
		}
		cr_assert_geq(rc, 0);
		for (int i = 0; i < rc; i++) {
			intptr_t k = (intptr_t)c[i].user_data - 1;
			cr_assert(k >= 0 && k < 2 * RACE_MAX);
			int who = (int)(k / RACE_MAX), idx = (int)(k % RACE_MAX);
			cr_assert(idx < r[who].accepted, "completion for a call that was refused");
			cr_expect_eq(c[i].ticket, race_tickets[who][idx]);
			cr_expect_eq(seen[k]++, 0, "call twice");
			cr_expect_eq(c[i].status, 0, "DRAIN: status %d", c[i].status);
			cr_expect_eq(c[i].result.i64, idx);
			got++;
		}
	}
	cr_expect(closed);
	cr_expect_eq(got, total, "%d completions for %d accepted calls", got, total);
	free(seen);
	kt_destroy(pool);
}

KT(stop, destroy_running_pool_with_pending_calls)
{
	/* No stop: destroy stops with CANCEL itself, joins, frees. */
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo"), bytes = kt_id(pool, "bytes");
	for (int i = 0; i < 1000; i++)
		kt_enq(pool, i % 3 ? echo : bytes, kt_i64(i % 3 ? i : 2000), NULL);
	knit_completion_t c[10];
	kt_reap(pool, c, 10); /* some reaped, never released */
	kt_destroy(pool);
}

KT(stop, destroy_after_stop_with_unreaped)
{
	knit_pool_t *pool = kt_pool_n(1);
	for (int i = 0; i < 100; i++)
		kt_enq(pool, kt_id(pool, "bytes"), kt_i64(3000), NULL);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, STOP_BOUND_NS), 0);
	kt_destroy(pool);
}

KT(stop, completions_reapable_after_stop)
{
	knit_pool_t *pool = kt_pool_n(1);
	kt_enq(pool, kt_id(pool, "string"), kt_i64(900), (void *)5);
	cr_assert_eq(knit_stop(pool, KNIT_STOP_DRAIN, STOP_BOUND_NS), 0);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.user_data, (void *)5);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.len, 900);
	cr_expect(kt_is_pattern(c.result.data, 900));
	knit_completion_release(pool, &c);
	cr_expect_eq(knit_complete(pool, &c, 1, 1000000), -KNIT_ECLOSED);
	kt_destroy(pool);
}

KT(stop, parked_workers_acknowledge)
{
	/* Workers idle long enough to park; stop must wake and collect every
	 * acknowledgement (spin 0: they park at once). */
	knit_pool_options_t o;
	kt_opts(&o, 4);
	o.spin_us = KNIT_ZERO;
	knit_pool_t *pool = kt_pool(&o);
	knit_pool_stats_t s;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	int parked = 0;
	while (!parked && kt_now_ns() < end) {
		kt_stats(pool, &s);
		parked = 1;
		for (int i = 0; i < 4; i++)
			parked &= s.lane[i].parks > 0;
		if (!parked)
			kt_sleep_ms(1);
	}
	cr_expect(parked, "workers never parked");
	cr_expect_eq(knit_stop(pool, 0, STOP_BOUND_NS), 0);
	kt_destroy(pool);
}
