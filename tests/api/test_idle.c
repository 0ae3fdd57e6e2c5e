/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_idle.c - an idle pool with the default park_ms (no
 * watchdog) costs nothing: once its worker has parked, a quiet period longer
 * than the old one-second watchdog sends no wake, adds no park, no watchdog
 * expiry and not one context switch of the worker thread (counted from
 * /proc, never timed). A worker whose return arena grew still gives it back
 * after the idle period, then parks for good.
 */
#include "api/kt.h"

#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Longer than the idle period the default park_ms resolves to (1000 ms), so
 * a periodic watchdog would have fired at least once. */
#define QUIET_MS 1500
#define BIG 65536u

static int t_tid(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	*ret = kt_i64((int64_t)syscall(SYS_gettid));
	return 0;
}

/* A result of BIG bytes built in the return arena. */
static int t_big(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	uint8_t *b = knit_ctx_alloc(ctx, BIG);
	if (b == NULL)
		return -KNIT_ENOMEM;
	memset(b, 0x5A, BIG);
	*ret = kt_bytes(b, BIG);
	return 0;
}

static const knit_task_t idle_tasks[] = {
	{"tid", t_tid, 0, 0},
	{"big", t_big, 0, 0},
};

static knit_pool_t *idle_pool(void)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.park_ms = 0; /* the default under test: no watchdog */
	knit_pool_t *pool = NULL;
	cr_assert_eq(knit_pool_create(&o, idle_tasks, 2, &pool), 0);
	return pool;
}

/* The worker's thread id (the task reports it). */
static long worker_tid(knit_pool_t *pool)
{
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "tid"), NULL, &c, -1), 0);
	cr_assert_eq(c.status, 0);
	const long tid = (long)c.result.i64;
	knit_completion_release(pool, &c);
	return tid;
}

/* The scheduler state letter of thread `tid` ('S': asleep), 0 if unreadable. */
static char thread_state(long tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *rp = strrchr(buf, ')'); /* the name may hold spaces */
	return rp != NULL && rp[1] == ' ' ? rp[2] : 0;
}

/* Voluntary + involuntary context switches of thread `tid`, -1 if unreadable. */
static long thread_ctxsw(long tid)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	long sum = 0;
	int seen = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		long v;
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1) {
			sum += v;
			seen++;
		}
	}
	fclose(f);
	return seen == 2 ? sum : -1;
}

/* Wait (bounded) until the worker has parked and sleeps in its futex wait:
 * parks counted and the thread asleep. A spinning or running worker is 'R'. */
static void wait_parked(knit_pool_t *pool, long tid, uint64_t parks_above)
{
	knit_pool_stats_t s;
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	for (;;) {
		kt_stats(pool, &s);
		if (s.lane[0].parks > parks_above && thread_state(tid) == 'S')
			return;
		cr_assert_lt(kt_now_ns(), end, "worker never parked (parks %llu, state %c)",
			     (unsigned long long)s.lane[0].parks, thread_state(tid));
		kt_sleep_ms(5);
	}
}

/* Nothing the worker counts moved over a quiet period, nor did its thread. */
static void expect_quiet(knit_pool_t *pool, long tid)
{
	knit_pool_stats_t a, b;
	kt_stats(pool, &a);
	const long sw0 = thread_ctxsw(tid);
	cr_assert_geq(sw0, 0, "no context switch counts in /proc for thread %ld", tid);
	kt_sleep_ms(QUIET_MS);
	kt_stats(pool, &b);
	const long sw1 = thread_ctxsw(tid);
	cr_expect_eq(b.lane[0].parks, a.lane[0].parks, "parks %llu -> %llu",
		     (unsigned long long)a.lane[0].parks, (unsigned long long)b.lane[0].parks);
	cr_expect_eq(b.lane[0].wakes_sent, a.lane[0].wakes_sent);
	cr_expect_eq(b.lane[0].wakes_received, a.lane[0].wakes_received);
	cr_expect_eq(b.lane[0].spurious_wakes, a.lane[0].spurious_wakes);
	cr_expect_eq(
		b.lane[0].watchdog_expiries, a.lane[0].watchdog_expiries,
		"watchdog fired %llu times",
		(unsigned long long)(b.lane[0].watchdog_expiries - a.lane[0].watchdog_expiries));
	cr_expect_eq(b.doorbell_wakes, a.doorbell_wakes);
	cr_expect_eq(sw1, sw0, "the parked worker was scheduled %ld times", sw1 - sw0);
}

KT(idle, parked_worker_never_wakes)
{
	knit_pool_t *pool = idle_pool();
	const long tid = worker_tid(pool);
	wait_parked(pool, tid, 0);
	expect_quiet(pool, tid);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.lane[0].watchdog_expiries, 0);
	/* Still rung when work comes: one wake for the cold call. */
	const uint64_t sent0 = s.lane[0].wakes_sent;
	cr_expect_eq(worker_tid(pool), tid);
	kt_stats(pool, &s);
	cr_expect_eq(s.lane[0].wakes_sent, sent0 + 1);
	cr_assert_eq(knit_pool_destroy(pool), 0);
}

KT(idle, grown_return_arena_trimmed_then_quiet)
{
	knit_pool_t *pool = idle_pool();
	const long tid = worker_tid(pool);
	knit_completion_t c;
	/* Ticketed (a timeout): the result must go through the return arena. */
	cr_assert_eq(knit_call(pool, kt_id(pool, "big"), NULL, &c, KT_TICKETED_NS), 0);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.len, (uint64_t)BIG);
	knit_completion_release(pool, &c);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	const uint64_t trims0 = s.lane[0].arena_trims;
	/* The return arena holds pages above its floor (0 by default): the
	 * worker's park is timed so it gives them back after the idle period. */
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (s.lane[0].arena_trims == trims0) {
		cr_assert_lt(kt_now_ns(), end, "the return arena was never trimmed");
		kt_sleep_ms(20);
		kt_stats(pool, &s);
	}
	/* Trimmed: the next park has no timeout any more. The timed park
	 * ended before the trim, so the thread asleep now is in that next park. */
	wait_parked(pool, tid, 0);
	expect_quiet(pool, tid);
	cr_assert_eq(knit_pool_destroy(pool), 0);
}
