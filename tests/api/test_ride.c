/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_ride.c - knit_enqueue_many(3), "Calls that share a
 * frame": a burst's cheap calls of one task with no options travel several
 * to a frame, and each still ends in exactly one completion of its own, in
 * order, with its own status and result; a cancel or a stop reaches each one
 * alone; the stats count them (shared_calls, shared_frames), and a worker's
 * calls count each of them.
 *
 * Sharing follows the task's measured run time: each test first sends
 * bursts until the pool reports calls that shared a frame (bounded), so a
 * test that cannot make calls share fails instead of passing vacuously.
 */
#include "api/kt.h"

#include <signal.h>
#include <stdlib.h>

#define N 1000

static uint64_t shared_calls(knit_pool_t *pool)
{
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	return s.shared_calls;
}

/* Bursts of `task` (argument 0, which every task here answers cheaply)
 * until calls share frames (at most 200 bursts), each reaped whole. */
static void warm(knit_pool_t *pool, uint32_t task)
{
	knit_request_t r[64];
	knit_value_t v[64];
	knit_completion_t out[64];
	kt_fill_reqs(r, v, 64, task, 0);
	for (int i = 0; i < 64; i++)
		v[i] = kt_i64(0);
	for (int round = 0; round < 200; round++) {
		const uint64_t before = shared_calls(pool);
		int k = knit_enqueue_many(pool, r, 64, NULL);
		cr_assert_eq(k, 64, "warm-up burst: %d", k);
		cr_assert_eq(kt_reap(pool, out, 64), 64);
		for (int i = 0; i < 64; i++)
			knit_completion_release(pool, &out[i]);
		if (shared_calls(pool) - before >= 2)
			return;
	}
	cr_assert_fail("no call of 200 bursts shared a frame");
}

/* A burst of 1000 echoes on one worker: every call once, its own result,
 * in enqueue order; most travelled several to a frame. */
KT(ride, shared_in_order)
{
	knit_pool_t *pool = kt_pool_lanes(1);
	const uint32_t echo = kt_id(pool, "echo");
	warm(pool, echo);
	knit_pool_stats_t s0, s;
	kt_stats(pool, &s0);
	knit_request_t *r = calloc(N, sizeof *r);
	knit_value_t *v = calloc(N, sizeof *v);
	knit_ticket_t *t = calloc(N, sizeof *t);
	knit_completion_t *out = calloc(N, sizeof *out);
	kt_fill_reqs(r, v, N, echo, 5000);
	cr_assert_eq(knit_enqueue_many(pool, r, N, t), N);
	for (int i = 0; i < N; i++) {
		cr_expect_neq(t[i], 0);
		if (i > 0)
			cr_expect_neq(t[i], t[i - 1]);
	}
	cr_assert_eq(kt_reap(pool, out, N), N);
	for (int i = 0; i < N; i++) {
		cr_expect_eq((intptr_t)out[i].user_data, i + 1, "completion %d out of order", i);
		cr_expect_eq(out[i].ticket, t[i]);
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].task, echo);
		cr_expect_eq(out[i].result.type, KNIT_VALUE_I64);
		cr_expect_eq(out[i].result.i64, 5000 + i);
	}
	cr_expect_eq(kt_quiet(pool, 20), 0, "a completion more than the calls");
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued - s0.enqueued, N);
	cr_expect_eq(s.completed - s0.completed, N);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.worker[0].calls, s.enqueued, "a worker's calls count each call");
	cr_expect_gt(s.shared_calls - s0.shared_calls, 0, "no call shared a frame");
	cr_expect_lt(s.shared_frames - s0.shared_frames, s.shared_calls - s0.shared_calls,
		     "no frame carried two calls");
	cr_expect_eq(knit_wait_idle(pool, 0), 0, "a frame counted as a call");
	free(r);
	free(v);
	free(t);
	free(out);
	kt_destroy(pool);
}

/* Each call fails or not on its own: "fail" answers its argument as the
 * task's return code, "error" an error value. */
KT(ride, each_fails_alone)
{
	knit_pool_t *pool = kt_pool_n(2);
	const uint32_t fail = kt_id(pool, "fail");
	warm(pool, fail);
	knit_request_t r[N];
	knit_value_t v[N];
	knit_completion_t out[N];
	kt_fill_reqs(r, v, N, fail, 0);
	for (int i = 0; i < N; i++)
		v[i] = kt_i64(i % 3 == 0 ? 1 : 0);
	cr_assert_eq(knit_enqueue_many(pool, r, N, NULL), N);
	cr_assert_eq(kt_reap(pool, out, N), N);
	char seen[N] = {0};
	for (int i = 0; i < N; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= N);
		cr_expect_eq(seen[u - 1]++, 0, "call %ld completed twice", (long)u);
		if ((u - 1) % 3 == 0)
			cr_expect_eq(out[i].status, -KNIT_ETASK, "call %ld: %d", (long)u,
				     out[i].status);
		else
			cr_expect_eq(out[i].status, 0, "call %ld: %d", (long)u, out[i].status);
		knit_completion_release(pool, &out[i]);
	}
	cr_expect_gt(shared_calls(pool), 0);
	kt_destroy(pool);
}

/* Byte strings of every size from 0 to 299 come back whole, each to its
 * own completion, which owns them until released. */
KT(ride, bytes_each_their_own)
{
	knit_pool_t *pool = kt_pool_lanes(1);
	const uint32_t echo = kt_id(pool, "echo");
	warm(pool, echo);
	enum { M = 300 };
	uint8_t *pat = kt_pattern(M);
	knit_request_t r[M];
	knit_value_t v[M];
	knit_completion_t out[M];
	kt_fill_reqs(r, v, M, echo, 0);
	for (int i = 0; i < M; i++)
		v[i] = kt_bytes(pat, (size_t)i);
	const uint64_t before = shared_calls(pool);
	cr_assert_eq(knit_enqueue_many(pool, r, M, NULL), M);
	cr_assert_eq(kt_reap(pool, out, M), M);
	for (int i = 0; i < M; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= M);
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.type, KNIT_VALUE_BYTES);
		cr_expect_eq(out[i].result.len, (size_t)(u - 1));
		cr_expect(out[i].result.len == 0 ||
				  kt_is_pattern(out[i].result.data, out[i].result.len),
			  "call %ld: bytes changed", (long)u);
	}
	for (int i = 0; i < M; i++)
		cr_expect_eq(knit_completion_release(pool, &out[i]), 0);
	cr_expect_gt(shared_calls(pool) - before, 0, "no byte string shared a frame");
	free(pat);
	kt_destroy(pool);
}

/* A one-worker lanes pool whose echo shares frames (warm), its worker held
 * by a "block" call (user_data 0) until kt_gate_open(): what is enqueued
 * next waits on the lane. */
static knit_pool_t *blocked_pool(uint32_t *echo)
{
	knit_pool_t *pool = kt_pool_lanes(1);
	*echo = kt_id(pool, "echo");
	warm(pool, *echo);
	kt_gate_close();
	kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(-1), (void *)(intptr_t)0, KNIT_CALL_LANE, 0,
		  0);
	cr_assert(kt_wait_started(1));
	return pool;
}

/* Queued behind a blocker: a cancel takes one call of a shared frame
 * (completed at once, -KNIT_ECANCELED), its neighbours run; a reap by
 * ticket finds them; the frame's late outcome for the cancelled call is
 * dropped. */
KT(ride, cancel_one_rider)
{
	uint32_t echo;
	knit_pool_t *pool = blocked_pool(&echo);
	enum { M = 200 };
	knit_request_t r[M];
	knit_value_t v[M];
	knit_ticket_t t[M];
	kt_fill_reqs(r, v, M, echo, 0);
	const uint64_t before = shared_calls(pool);
	cr_assert_eq(knit_enqueue_many(pool, r, M, t), M);
	cr_assert_gt(shared_calls(pool) - before, 0, "no call of the burst shared a frame");
	cr_expect_eq(knit_cancel(pool, t[5], KNIT_CANCEL_NOW), 0);
	cr_expect_eq(knit_cancel(pool, t[150], KNIT_CANCEL_NOW), 0);
	cr_expect_eq(knit_cancel(pool, t[5], KNIT_CANCEL_NOW), -KNIT_ENOTFOUND, "twice");
	cr_expect_eq(knit_cancel(pool, t[6], KNIT_CANCEL_SIGNAL), -KNIT_EINVAL,
		     "no abort bit: not abortable");
	/* The two cancelled ones are complete already, their frames not. */
	knit_completion_t c[2];
	knit_ticket_t two[2] = {t[150], t[5]};
	cr_assert_eq(knit_complete_tickets(pool, two, 2, c, 2, 0), 2);
	cr_expect_eq(c[0].ticket, t[150]);
	cr_expect_eq(c[1].ticket, t[5]);
	cr_expect_eq(c[0].status, -KNIT_ECANCELED);
	cr_expect_eq(c[1].status, -KNIT_ECANCELED);
	kt_gate_open();
	knit_completion_t out[M];
	cr_assert_eq(kt_reap(pool, out, M - 1), M - 1); /* the blocker and 198 */
	char seen[M] = {0};
	for (int i = 0; i < M - 1; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		if (u == 0)
			continue;
		cr_assert(u >= 1 && u <= M);
		cr_expect(u != 6 && u != 151, "a cancelled call completed again");
		cr_expect_eq(seen[u - 1]++, 0);
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.i64, u - 1);
	}
	cr_expect_eq(kt_quiet(pool, 50), 0);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.enqueued, s.completed);
	kt_destroy(pool);
}

/* A stop with CANCEL while shared frames wait behind a blocker: each call
 * of them ends once, run or -KNIT_ECLOSED. */
KT(ride, stop_cancel_each_once)
{
	uint32_t echo;
	knit_pool_t *pool = blocked_pool(&echo);
	enum { M = 500 };
	knit_request_t r[M];
	knit_value_t v[M];
	kt_fill_reqs(r, v, M, echo, 0);
	cr_assert_eq(knit_enqueue_many(pool, r, M, NULL), M);
	kt_gate_open();
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, (int64_t)KT_BOUND_S * 1000000000), 0);
	knit_completion_t out[M + 1];
	cr_assert_eq(kt_reap(pool, out, M + 1), M + 1);
	char seen[M] = {0};
	for (int i = 0; i < M + 1; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		if (u == 0)
			continue;
		cr_assert(u >= 1 && u <= M);
		cr_expect_eq(seen[u - 1]++, 0, "call %ld completed twice", (long)u);
		cr_expect(out[i].status == 0 || out[i].status == -KNIT_ECLOSED, "status %d",
			  out[i].status);
		if (out[i].status == 0)
			cr_expect_eq(out[i].result.i64, u - 1);
	}
	knit_completion_t more;
	cr_expect_eq(knit_complete(pool, &more, 1, 0), -KNIT_ECLOSED);
	kt_destroy(pool);
}

/* Long calls do not share: a task measured slow travels one call a frame,
 * so an idle worker takes every call a busy one has not started. */
KT(ride, long_calls_travel_alone)
{
	knit_pool_t *pool = kt_pool_n(2);
	const uint32_t sl = kt_id(pool, "sleep");
	knit_request_t r[8];
	knit_value_t v[8];
	knit_completion_t out[8];
	kt_fill_reqs(r, v, 8, sl, 0);
	for (int i = 0; i < 8; i++)
		v[i] = kt_i64(2); /* 2 ms */
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(knit_enqueue_many(pool, r, 8, NULL), 8);
		cr_assert_eq(kt_reap(pool, out, 8), 8);
	}
	/* Some calls travelled alone in a frame to measure the task (at
	 * most one a burst), none with another. */
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_gt(s.shared_frames, 0, "the task was never measured");
	cr_expect_eq(s.shared_frames, s.shared_calls, "a frame carried two 2 ms calls");
	cr_expect_leq(s.shared_calls, 3);
	kt_destroy(pool);
}

/* An inline lane runs frames too (the caller's thread helps): every call
 * once, its own result. */
KT(ride, inline_lane)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.inline_lane = KNIT_INLINE_LAST;
	knit_pool_t *pool = kt_pool(&o);
	const uint32_t echo = kt_id(pool, "echo");
	warm(pool, echo);
	knit_request_t *r = calloc(N, sizeof *r);
	knit_value_t *v = calloc(N, sizeof *v);
	knit_completion_t *out = calloc(N, sizeof *out);
	char seen[N] = {0};
	kt_fill_reqs(r, v, N, echo, 0);
	const uint64_t before = shared_calls(pool);
	cr_assert_eq(knit_enqueue_many(pool, r, N, NULL), N);
	cr_assert_eq(kt_reap(pool, out, N), N);
	for (int i = 0; i < N; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= N);
		cr_expect_eq(seen[u - 1]++, 0);
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.i64, u - 1);
	}
	cr_expect_gt(shared_calls(pool) - before, 0);
	cr_expect_eq(kt_quiet(pool, 20), 0);
	free(r);
	free(v);
	free(out);
	kt_destroy(pool);
}

/* A worker process that dies in the middle of a shared frame: each call of
 * that frame not answered ends -KNIT_ECRASHED, told why in its info (the
 * signal); the frames it had not started run on its successor, once; every
 * call ends once. "segv_at" crashes on argument 7 and echoes the rest. */
KT(ride, process_dies_mid_frame)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.topology = KNIT_TOPOLOGY_LANES;
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(&o, NULL, 0, &pool);
	cr_assert_eq(rc, 0, "process pool create: %s", knit_strerror(rc));
	const uint32_t segv_at = kt_id(pool, "segv_at");
	warm(pool, segv_at);
	enum { M = 400 };
	knit_request_t r[M];
	knit_value_t v[M];
	knit_completion_t out[M];
	kt_fill_reqs(r, v, M, segv_at, 0);
	for (int i = 0; i < M; i++)
		v[i] = kt_i64(i == 100 ? 7 : 1000 + i);
	const uint64_t before = shared_calls(pool);
	cr_assert_eq(knit_enqueue_many(pool, r, M, NULL), M);
	cr_assert_gt(shared_calls(pool) - before, 1, "the burst shared no frame");
	cr_assert_eq(kt_reap(pool, out, M), M);
	char seen[M] = {0};
	int crashed = 0;
	for (int i = 0; i < M; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= M);
		cr_expect_eq(seen[u - 1]++, 0, "call %ld completed twice", (long)u);
		if (out[i].status == -KNIT_ECRASHED) {
			crashed++;
			knit_completion_info_t in;
			memset(&in, 0, sizeof in);
			in.size = sizeof in;
			cr_expect_eq(knit_completion_info(pool, &out[i], &in), 0);
			if (KT_ASAN) {
				/* AddressSanitizer turns the worker's SIGSEGV into
				 * its own exit: a death all the same. */
				cr_expect(in.death == KNIT_DEATH_SIGNAL ||
						  in.death == KNIT_DEATH_EXIT,
					  "call %ld: death %u", (long)u, in.death);
				continue;
			}
			cr_expect_eq(in.death, KNIT_DEATH_SIGNAL, "call %ld: death %u", (long)u,
				     in.death);
			cr_expect_eq(in.death_detail, SIGSEGV, "call %ld: signal %d", (long)u,
				     in.death_detail);
			continue;
		}
		cr_expect(u - 1 != 100, "the crashing call answered %d", out[i].status);
		cr_expect_eq(out[i].status, 0, "call %ld: %d", (long)u, out[i].status);
		cr_expect_eq(out[i].result.i64, 1000 + u - 1);
	}
	/* The crashing call and at most the rest of its frame. */
	cr_expect(crashed >= 1 && crashed <= 64, "%d calls crashed", crashed);
	cr_expect_eq(kt_quiet(pool, 50), 0);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.crashes, 1);
	cr_expect_eq(s.pending, 0);
	knit_completion_t c = kt_proc_call(pool, "echo", kt_i64(5));
	cr_expect_eq(c.status, 0, "serves after the death");
	kt_destroy(pool);
}
