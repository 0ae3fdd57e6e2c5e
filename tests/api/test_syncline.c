/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_syncline.c - knit_call's synchronous fast path (the line of
 * a worker lane): every value type round-trips through it, ineligible calls
 * and calls that find every line busy take the ticketed path (ticket != 0,
 * sync_calls unchanged), concurrent callers outnumbering the lanes all get
 * their own answers, a stop cancels or drains a call on the line exactly
 * once, and an idle pool stays quiet after line calls.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "api/kt.h"

/* A pool whose knit_calls are eligible for the line. */
static knit_pool_t *line_pool(uint32_t workers)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.max_payload_bytes = 64 * 1024;
	return kt_pool(&o);
}

static uint64_t sync_calls(knit_pool_t *pool)
{
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	return s.sync_calls;
}

/* One knit_call on the line: asserts it went there (ticket 0, sync_calls
 * + 1) and returns its completion. */
static knit_completion_t line_call(knit_pool_t *pool, const char *task, knit_value_t arg)
{
	const uint64_t before = sync_calls(pool);
	knit_completion_t c;
	memset(&c, 0xAA, sizeof c);
	cr_assert_eq(knit_call(pool, kt_id(pool, task), &arg, &c, 0), 0);
	cr_assert_eq(c.ticket, 0, "%s: not a fast-path completion", task);
	cr_assert_eq(c.task, kt_id(pool, task));
	cr_assert_eq(c.user_data, NULL);
	cr_assert_eq(sync_calls(pool), before + 1, "%s: sync_calls did not count it", task);
	return c;
}

/* One knit_call that must take the ticketed path. */
static knit_completion_t ticketed_call(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
				       int64_t timeout_ns)
{
	const uint64_t before = sync_calls(pool);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, task, arg, &c, timeout_ns), 0);
	cr_assert_neq(c.ticket, 0, "a ticketed call has a ticket");
	cr_assert_eq(sync_calls(pool), before, "sync_calls counted a ticketed call");
	return c;
}

static void release(knit_pool_t *pool, knit_completion_t *c)
{
	cr_assert_eq(knit_completion_release(pool, c), 0);
}

/* The argument arrives intact: "inspect" hashes what the task saw. */
static void check_arg(knit_pool_t *pool, knit_value_t v)
{
	knit_completion_t c = line_call(pool, "inspect", v);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.type, KNIT_VALUE_I64);
	cr_assert_eq(c.result.i64, kt_value_hash(&v), "type %u: the task saw another value",
		     v.type);
	release(pool, &c);
}

/* echo: the result is the argument. */
static void check_echo(knit_pool_t *pool, knit_value_t v)
{
	knit_completion_t c = line_call(pool, "echo", v);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.type, v.type);
	cr_assert_eq(kt_value_hash(&c.result), kt_value_hash(&v),
		     "type %u: echo came back different", v.type);
	if (v.type == KNIT_VALUE_STRING || v.type == KNIT_VALUE_ERROR)
		cr_assert_eq(((const char *)c.result.data)[c.result.len], 0,
			     "string result not NUL-terminated");
	release(pool, &c);
}

KT(syncline, every_value_type_round_trips)
{
	knit_pool_t *pool = line_pool(1);
	uint8_t *pat = kt_pattern(96);
	knit_value_t vals[] = {
		kt_none(),
		kt_bool(0),
		kt_bool(1),
		kt_i64(0),
		kt_i64(INT64_MIN),
		kt_i64(-123456789),
		kt_f64(-0.0),
		kt_f64(3.25),
		kt_f64(1e300),
		kt_bytes(NULL, 0),
		kt_bytes(pat, 1),
		kt_bytes(pat, 96), /* the whole request slot */
		kt_str("", 0),
		kt_str((const char *)pat, 95), /* 95 + NUL: the whole slot */
		kt_err(-7, "bad thing"),
		kt_err(3, ""),
	};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		check_arg(pool, vals[i]);
		check_echo(pool, vals[i]);
	}
	/* NULL argument: KNIT_VALUE_NONE. */
	const uint64_t before = sync_calls(pool);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"), NULL, &c, 0), 0);
	cr_assert_eq(c.ticket, 0);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.type, KNIT_VALUE_NONE);
	cr_assert_eq(sync_calls(pool), before + 1);
	release(pool, &c);
	/* A string's NUL reaches the task. */
	c = line_call(pool, "str_nul", kt_str((const char *)pat, 40));
	cr_assert_eq(c.result.type, KNIT_VALUE_BOOL);
	cr_assert_eq(c.result.i64, 1);
	release(pool, &c);
	free(pat);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, s.sync_calls);
	cr_expect_eq(s.completed, s.sync_calls);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.lane[0].calls, s.sync_calls);
	cr_expect_eq(kt_quiet(pool, 20), 0, "a line completion leaked to knit_complete");
	kt_destroy(pool);
}

/* Results inline, at the slot's edge, and spilled beyond it; error results;
 * results over max_payload_bytes. */
KT(syncline, results_inline_spilled_errors_too_big)
{
	knit_pool_t *pool = line_pool(2);
	const int64_t sizes[] = {0, 1, 95, 96, 97, 200, 4096, 64 * 1024};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		const int64_t n = sizes[i];
		knit_completion_t c = line_call(pool, "bytes", kt_i64(n));
		cr_assert_eq(c.status, 0, "bytes %lld: %d", (long long)n, c.status);
		cr_assert_eq(c.result.type, KNIT_VALUE_BYTES);
		cr_assert_eq(c.result.len, (size_t)n);
		cr_assert(kt_is_pattern(c.result.data, (size_t)n), "bytes %lld: wrong bytes",
			  (long long)n);
		release(pool, &c);
		c = line_call(pool, "string", kt_i64(n));
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.result.type, KNIT_VALUE_STRING);
		cr_assert_eq(c.result.len, (size_t)n);
		cr_assert(kt_is_pattern(c.result.data, (size_t)n));
		cr_assert_eq(((const char *)c.result.data)[n], 0);
		release(pool, &c);
		/* knit_ctx_alloc memory on the line: malloc'd, shipped, freed. */
		if (n > 0) {
			c = line_call(pool, "alloc", kt_i64(n));
			cr_assert_eq(c.status, 0);
			cr_assert_eq(c.result.len, (size_t)n);
			cr_assert(kt_is_pattern(c.result.data, (size_t)n));
			release(pool, &c);
		}
	}
	/* Over max_payload_bytes: -KNIT_ETOOBIG, exactly as ticketed. */
	knit_completion_t c = line_call(pool, "bytes", kt_i64(64 * 1024 + 1));
	cr_assert_eq(c.status, -KNIT_ETOOBIG);
	cr_assert_eq(c.result.type, KNIT_VALUE_NONE);
	release(pool, &c);
	/* Error results: the code and the message, inline and spilled. */
	c = line_call(pool, "error", kt_i64(-42));
	cr_assert_eq(c.status, -KNIT_ETASK);
	cr_assert_eq(c.result.type, KNIT_VALUE_ERROR);
	cr_assert_eq(c.result.code, -42);
	cr_assert_str_eq((const char *)c.result.data, "task error -42");
	release(pool, &c);
	c = line_call(pool, "error_long", kt_i64(300));
	cr_assert_eq(c.status, -KNIT_ETASK);
	cr_assert_eq(c.result.code, 4242);
	cr_assert_eq(c.result.len, 300);
	cr_assert(kt_is_pattern(c.result.data, 300));
	release(pool, &c);
	c = line_call(pool, "fail", kt_i64(-5));
	cr_assert_eq(c.status, -KNIT_ETASK);
	cr_assert_eq(c.result.type, KNIT_VALUE_ERROR);
	cr_assert_eq(c.result.code, -5);
	release(pool, &c);
	/* The same calls ticketed give the same completions (but a ticket). */
	knit_value_t a = kt_i64(300);
	knit_completion_t t = ticketed_call(pool, kt_id(pool, "error_long"), &a, KT_TICKETED_NS);
	cr_assert_eq(t.status, -KNIT_ETASK);
	cr_assert_eq(t.result.code, 4242);
	cr_assert_eq(t.result.len, 300);
	release(pool, &t);
	/* A released completion cannot be released again (owned table). */
	c = line_call(pool, "bytes", kt_i64(500));
	knit_completion_t copy = c;
	release(pool, &c);
	cr_assert_eq(knit_completion_release(pool, &copy), -KNIT_EINVAL);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, s.completed);
	cr_expect_eq(s.enqueued, s.sync_calls + 1);
	cr_expect_eq(s.proto_errors, 0);
	kt_destroy(pool);
}

/* Calls the line does not take: each one is ticketed. */
KT(syncline, ineligible_calls_take_the_ticketed_path)
{
	knit_pool_t *pool = line_pool(1);
	knit_value_t v = kt_i64(5);
	/* A timeout to track. */
	knit_completion_t c = ticketed_call(pool, kt_id(pool, "echo"), &v, KT_TICKETED_NS);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 5);
	/* A task with a default timeout (timeout_ms 50): sleep 0 ms. */
	knit_value_t z = kt_i64(0);
	c = ticketed_call(pool, kt_id(pool, "sleep_t50"), &z, 0);
	cr_assert_eq(c.status, 0);
	/* An abortable task (it needs an abort bit). */
	c = ticketed_call(pool, kt_id(pool, "aborted_abortable"), &v, 0);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 0);
	/* An argument over the request slot: 97 bytes, a 96-char string. */
	uint8_t *pat = kt_pattern(97);
	knit_value_t b = kt_bytes(pat, 97);
	c = ticketed_call(pool, kt_id(pool, "inspect"), &b, 0);
	cr_assert_eq(c.result.i64, kt_value_hash(&b));
	knit_value_t st = kt_str((const char *)pat, 96);
	c = ticketed_call(pool, kt_id(pool, "inspect"), &st, 0);
	cr_assert_eq(c.result.i64, kt_value_hash(&st));
	free(pat);
	/* A bad argument is reported by the ticketed path. */
	knit_value_t bad = kt_bool(0);
	bad.i64 = 2;
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"), &bad, &c, 0), -KNIT_EINVAL);
	cr_assert_eq(sync_calls(pool), 0);
	kt_destroy(pool);
}

KT(syncline, pools_without_lines)
{
	knit_value_t v = kt_i64(9);
	/* A hard timeout: the watchdog stays the dispatcher's. */
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.hard_timeout_ms = 60000;
	knit_pool_t *pool = kt_pool(&o);
	knit_completion_t c = ticketed_call(pool, kt_id(pool, "echo"), &v, 0);
	cr_assert_eq(c.result.i64, 9);
	kt_destroy(pool);
	/* An inline lane: placement stays the balancer's. */
	kt_opts(&o, 1);
	o.inline_lane = KNIT_INLINE_LAST;
	pool = kt_pool(&o);
	c = ticketed_call(pool, kt_id(pool, "echo"), &v, 0);
	cr_assert_eq(c.result.i64, 9);
	kt_destroy(pool);
}

/* ---- busy lines, concurrency, stop --------------------------------------------- */

struct caller {
	knit_pool_t *pool;
	uint32_t task;
	knit_value_t arg;
	int rc;
	knit_completion_t c;
	atomic_int done;
};

static void *call_thread(void *arg)
{
	struct caller *k = arg;
	k->rc = knit_call(k->pool, k->task, &k->arg, &k->c, 0);
	atomic_store(&k->done, 1);
	return NULL;
}

/* Wait (bounded) until the pool reports `pending` calls outstanding. */
static int wait_pending(knit_pool_t *pool, uint64_t pending)
{
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	knit_pool_stats_t s;
	for (;;) {
		kt_stats(pool, &s);
		if (s.pending == pending)
			return 1;
		if (kt_now_ns() >= end)
			return 0;
		kt_sleep_ms(1);
	}
}

KT(syncline, busy_line_falls_back_to_ticketed)
{
	knit_pool_t *pool = line_pool(1);
	struct caller a = {pool, kt_id(pool, "block"), kt_i64(1), -1, {0}, 0};
	pthread_t ta, tb;
	pthread_create(&ta, NULL, call_thread, &a);
	cr_assert(kt_wait_started(1));
	cr_assert(wait_pending(pool, 1));
	/* The only line is claimed: this call is ticketed, queued behind the
	 * blocked task. */
	struct caller b = {pool, kt_id(pool, "echo"), kt_i64(2), -1, {0}, 0};
	pthread_create(&tb, NULL, call_thread, &b);
	cr_assert(wait_pending(pool, 2), "the second call never became pending");
	cr_assert_eq(atomic_load(&b.done), 0);
	kt_gate_open();
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(a.rc, 0);
	cr_assert_eq(a.c.status, 0);
	cr_assert_eq(a.c.result.i64, 1);
	cr_assert_eq(a.c.ticket, 0);
	cr_assert_eq(b.rc, 0);
	cr_assert_eq(b.c.status, 0);
	cr_assert_eq(b.c.result.i64, 2);
	cr_assert_neq(b.c.ticket, 0);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.sync_calls, 1);
	cr_expect_eq(s.enqueued, 2);
	cr_expect_eq(s.completed, 2);
	kt_destroy(pool);
}

#define NCALLERS 4

struct hammer {
	knit_pool_t *pool;
	uint32_t echo, string;
	int id, n;
	int bad;
	int line, ticketed;
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	for (int i = 0; i < h->n; i++) {
		knit_completion_t c;
		const int64_t want = (int64_t)h->id * 1000000 + i;
		/* Every 7th call a spilled string, every 5th a ticketed one. */
		int rc;
		if (i % 7 == 3) {
			knit_value_t v = kt_i64(100 + i % 50);
			rc = knit_call(h->pool, h->string, &v, &c, 0);
			if (rc != 0 || c.status != 0 || c.result.len != (size_t)(100 + i % 50) ||
			    !kt_is_pattern(c.result.data, c.result.len))
				h->bad++;
		} else {
			knit_value_t v = kt_i64(want);
			rc = knit_call(h->pool, h->echo, &v, &c, i % 5 == 0 ? KT_TICKETED_NS : 0);
			if (rc != 0 || c.status != 0 || c.result.type != KNIT_VALUE_I64 ||
			    c.result.i64 != want)
				h->bad++;
		}
		if (rc == 0) {
			if (c.ticket == 0)
				h->line++;
			else
				h->ticketed++;
			if (knit_completion_release(h->pool, &c) != 0)
				h->bad++;
		}
	}
	return NULL;
}

static void hammer(uint32_t workers)
{
	knit_pool_t *pool = line_pool(workers);
	const int n = KT_SANITIZED ? 400 : 3000;
	struct hammer h[NCALLERS];
	pthread_t t[NCALLERS];
	for (int i = 0; i < NCALLERS; i++) {
		h[i] = (struct hammer){pool, kt_id(pool, "echo"), kt_id(pool, "string"), i, n, 0, 0,
				       0};
		pthread_create(&t[i], NULL, hammer_thread, &h[i]);
	}
	int line = 0, ticketed = 0;
	for (int i = 0; i < NCALLERS; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(h[i].bad, 0, "caller %d: %d wrong results", i, h[i].bad);
		line += h[i].line;
		ticketed += h[i].ticketed;
	}
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(line + ticketed, NCALLERS * n);
	cr_expect_eq(s.sync_calls, (uint64_t)line, "sync_calls %llu, line completions %d",
		     (unsigned long long)s.sync_calls, line);
	cr_expect_eq(s.enqueued, (uint64_t)NCALLERS * n);
	cr_expect_eq(s.completed, (uint64_t)NCALLERS * n);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.proto_errors, 0);
	cr_expect_eq(s.late_drops, 0);
	cr_expect_gt(line, 0, "no call took the line");
	/* Every call with a timeout (i % 5 == 0, unless it is a string call)
	 * is ticketed; any other call may also be, when no line was free. */
	int timed = 0;
	for (int i = 0; i < n; i++)
		timed += i % 5 == 0 && i % 7 != 3;
	cr_expect_geq(ticketed, NCALLERS * timed,
		      "the calls with a timeout were ticketed (%d < %d)", ticketed,
		      NCALLERS * timed);
	cr_expect_eq(kt_quiet(pool, 20), 0);
	kt_destroy(pool);
}

KT(syncline, four_callers_one_worker) { hammer(1); }
KT(syncline, four_callers_two_workers) { hammer(2); }

/* A knit_stop(CANCEL) while a call is on the line: the caller gets
 * -KNIT_ECLOSED exactly once, without waiting for the task, and the task's
 * result (spilled: 500 bytes) is dropped and freed. */
KT(syncline, stop_cancel_ends_line_call_once)
{
	knit_pool_t *pool = line_pool(1);
	struct caller a = {pool, kt_id(pool, "block_bytes"), kt_i64(500), -1, {0}, 0};
	pthread_t ta;
	pthread_create(&ta, NULL, call_thread, &a);
	cr_assert(kt_wait_started(1));
	cr_assert(wait_pending(pool, 1));
	/* The worker is held in the task: the stop cannot be acknowledged yet. */
	cr_assert_eq(knit_stop(pool, KNIT_STOP_CANCEL, 0), -KNIT_ETIMEDOUT);
	pthread_join(ta, NULL); /* returns while the task still blocks */
	cr_assert_eq(a.rc, 0);
	cr_assert_eq(a.c.status, -KNIT_ECLOSED);
	cr_assert_eq(a.c.ticket, 0);
	cr_assert_eq(a.c.result.type, KNIT_VALUE_NONE);
	cr_assert_eq(knit_completion_release(pool, &a.c), 0);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 1);
	cr_expect_eq(s.completed, 1);
	cr_expect_eq(s.sync_calls, 1);
	cr_expect_eq(s.pending, 0);
	/* Closed: no new call, on either path. */
	knit_completion_t c;
	knit_value_t v = kt_i64(1);
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), -KNIT_ECLOSED);
	knit_completion_t out;
	cr_expect_eq(knit_complete(pool, &out, 1, 0), -KNIT_ECLOSED);
	kt_gate_open();
	cr_assert_eq(knit_stop(pool, KNIT_STOP_CANCEL, -1), 0);
	kt_stats(pool, &s);
	cr_expect_eq(s.completed, 1);
	/* The result the worker produced after the cancel is freed here
	 * (a leak shows under ASan). */
	cr_assert_eq(knit_pool_destroy(pool), 0);
}

/* knit_pool_destroy cancels like knit_stop(CANCEL): a call on the line
 * ends with -KNIT_ECLOSED (the caller returned before the pool is freed:
 * destroy waits for the blocked worker's acknowledgement). */
static void *destroy_thread(void *arg)
{
	knit_pool_t *pool = arg;
	/* Let the caller see the cancel before the gate opens. */
	cr_assert_eq(knit_pool_destroy(pool), 0);
	return NULL;
}

KT(syncline, destroy_cancels_line_call)
{
	knit_pool_t *pool = line_pool(1);
	struct caller a = {pool, kt_id(pool, "block_bytes"), kt_i64(300), -1, {0}, 0};
	pthread_t ta, td;
	pthread_create(&ta, NULL, call_thread, &a);
	cr_assert(kt_wait_started(1));
	cr_assert(wait_pending(pool, 1));
	pthread_create(&td, NULL, destroy_thread, pool);
	/* The caller ends while destroy still waits for the worker. */
	pthread_join(ta, NULL);
	cr_assert_eq(a.rc, 0);
	cr_assert_eq(a.c.status, -KNIT_ECLOSED);
	cr_assert_eq(a.c.ticket, 0);
	kt_gate_open();
	pthread_join(td, NULL);
}

static void *drain_thread(void *arg)
{
	struct caller *k = arg; /* rc: knit_stop's */
	k->rc = knit_stop(k->pool, KNIT_STOP_DRAIN, -1);
	atomic_store(&k->done, 1);
	return NULL;
}

/* knit_stop(DRAIN) waits for a call on the line, which completes normally. */
KT(syncline, stop_drain_waits_for_line_call)
{
	knit_pool_t *pool = line_pool(1);
	struct caller a = {pool, kt_id(pool, "block"), kt_i64(77), -1, {0}, 0};
	struct caller d = {pool, 0, kt_none(), -1, {0}, 0};
	pthread_t ta, td;
	pthread_create(&ta, NULL, call_thread, &a);
	cr_assert(kt_wait_started(1));
	cr_assert(wait_pending(pool, 1));
	pthread_create(&td, NULL, drain_thread, &d);
	/* Whenever it looks, the drain cannot have returned: the call on the
	 * line is still running. */
	kt_sleep_ms(50);
	cr_assert_eq(atomic_load(&d.done), 0, "the drain returned while a line call was running");
	cr_assert_eq(atomic_load(&a.done), 0);
	kt_gate_open();
	pthread_join(ta, NULL);
	pthread_join(td, NULL);
	cr_assert_eq(d.rc, 0);
	cr_assert_eq(a.rc, 0);
	cr_assert_eq(a.c.status, 0);
	cr_assert_eq(a.c.result.i64, 77);
	cr_assert_eq(a.c.ticket, 0);
	knit_completion_t c;
	knit_value_t v = kt_i64(1);
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &v, &c, 0), -KNIT_ECLOSED);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.completed, 1);
	cr_expect_eq(s.enqueued, 1);
	cr_expect_eq(s.sync_calls, 1);
	kt_destroy(pool);
}

/* The counted fast path: a hot loop of knit_call with no timeout never
 * leaves the line. */
KT(syncline, hot_loop_is_all_sync_calls)
{
	knit_pool_t *pool = line_pool(1);
	const int n = KT_SANITIZED ? 2000 : 20000;
	const uint32_t echo = kt_id(pool, "echo");
	for (int i = 0; i < n; i++) {
		knit_value_t v = kt_i64(i);
		knit_completion_t c;
		cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0);
		cr_assert_eq(c.result.i64, i);
		cr_assert_eq(c.ticket, 0);
	}
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.sync_calls, (uint64_t)n);
	cr_expect_eq(s.enqueued, (uint64_t)n);
	cr_expect_eq(s.completed, (uint64_t)n);
	cr_expect_eq(s.lane[0].calls, (uint64_t)n);
	cr_expect_eq(s.backlog_high_water, 0);
	kt_destroy(pool);
}

/* A cold line call wakes the parked worker once; afterwards the idle pool
 * parks again and wakes nobody (no timed park, no spin). */
static int wait_parked(knit_pool_t *pool, uint64_t parks)
{
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	knit_pool_stats_t s;
	for (;;) {
		kt_stats(pool, &s);
		if (s.lane[0].parks >= parks)
			return 1;
		if (kt_now_ns() >= end)
			return 0;
		kt_sleep_ms(1);
	}
}

KT(syncline, cold_call_one_wake_then_quiet)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.spin_us = KNIT_ZERO;
	o.park_ms = 0; /* no watchdog: an idle pool must wake nobody */
	knit_pool_t *pool = kt_pool(&o);
	const uint32_t echo = kt_id(pool, "echo");
	knit_pool_stats_t a, b;
	cr_assert(wait_parked(pool, 1));
	for (int i = 0; i < 5; i++) {
		kt_stats(pool, &a);
		knit_value_t v = kt_i64(i);
		knit_completion_t c;
		cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0);
		cr_assert_eq(c.ticket, 0);
		cr_assert_eq(c.result.i64, i);
		cr_assert(wait_parked(pool, a.lane[0].parks + 1), "the worker never parked again");
		kt_stats(pool, &b);
		cr_expect_eq(b.lane[0].wakes_sent - a.lane[0].wakes_sent, 1, "round %d", i);
		cr_expect_eq(b.lane[0].wakes_received - a.lane[0].wakes_received, 1, "round %d", i);
	}
	/* Quiet: nothing wakes the parked worker. */
	kt_stats(pool, &a);
	kt_sleep_ms(200);
	kt_stats(pool, &b);
	cr_expect_eq(b.lane[0].parks, a.lane[0].parks);
	cr_expect_eq(b.lane[0].wakes_received, a.lane[0].wakes_received);
	cr_expect_eq(b.lane[0].spurious_wakes, a.lane[0].spurious_wakes);
	cr_expect_eq(b.lane[0].watchdog_expiries, 0);
	cr_expect_eq(b.sync_calls, 5);
	kt_destroy(pool);
}

/* A steal pool has lines too (one per worker). */
KT(syncline, steal_topology_uses_lines)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_STEAL;
	knit_pool_t *pool = kt_pool(&o);
	for (int i = 0; i < 100; i++) {
		knit_completion_t c = line_call(pool, "echo", kt_i64(i));
		cr_assert_eq(c.result.i64, i);
	}
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.sync_calls, 100);
	cr_expect_eq(s.lane[0].steal_claims + s.lane[1].steal_claims, 0);
	kt_destroy(pool);
}

/* A worker held in a long ticketed task is not where a line call waits
 * when another worker is idle: the caller prefers lines of idle workers
 * (steal: the host does not know which worker claimed the task; lanes: the
 * same). Every call completes on the idle worker while the other is held. */
static void busy_worker_avoided(uint32_t topology)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.topology = topology;
	o.spin_us = KNIT_ZERO; /* parked workers: steal wakes worker 0 first */
	knit_pool_t *pool = kt_pool(&o);
	if (topology == KNIT_TOPOLOGY_LANES)
		kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(1), NULL, KNIT_CALL_LANE, 0, 0);
	else
		kt_enq(pool, kt_id(pool, "block"), kt_i64(1), NULL);
	cr_assert(kt_wait_started(1));
	knit_completion_t c;
	cr_assert_eq(knit_complete(pool, &c, 1, 0), 0);
	int lane = -1;
	for (int i = 0; i < 50; i++) {
		c = line_call(pool, "lane", kt_none());
		cr_assert_eq(c.status, 0);
		if (lane < 0)
			lane = (int)c.result.i64;
		cr_assert_eq(c.result.i64, lane, "call %d ran on lane %lld", i,
			     (long long)c.result.i64);
	}
	/* The held task is still running: no call waited for it. */
	cr_assert_eq(knit_complete(pool, &c, 1, 0), 0, "a line call waited for the held worker");
	kt_gate_open();
	kt_reap1(pool, &c);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 1);
	kt_destroy(pool);
}

KT(syncline, busy_worker_avoided_steal) { busy_worker_avoided(KNIT_TOPOLOGY_STEAL); }
KT(syncline, busy_worker_avoided_lanes) { busy_worker_avoided(KNIT_TOPOLOGY_LANES); }
