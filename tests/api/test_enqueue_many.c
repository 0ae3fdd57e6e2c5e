/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_enqueue_many.c - knit_enqueue_many(3): a burst is enqueued
 * as knit_enqueue_ex would enqueue its requests one by one. Argument errors
 * each have their code and enqueue nothing; a refusal part-way reports the
 * accepted prefix k and nothing of the rest is kept; every accepted call
 * ends in exactly one completion, also under stop and cancel.
 */
#include "api/kt.h"

#include <stdlib.h>

/* Reap exactly n completions (bounded), checking each user_data (i + 1 for
 * request i) once and, for status 0, the echoed argument; returns how many
 * had status 0. */
static int reap_check(knit_pool_t *pool, int n, char *seen, int64_t arg_base)
{
	knit_completion_t *out = calloc((size_t)n, sizeof *out);
	int got = kt_reap(pool, out, n);
	cr_expect_eq(got, n, "reaped %d of %d", got, n);
	int ok = 0;
	for (int i = 0; i < got; i++) {
		intptr_t k = (intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k <= n, "user_data %ld", (long)k);
		cr_expect_eq(seen[k - 1]++, 0, "call %ld completed twice", (long)k);
		if (out[i].status == 0) {
			cr_expect_eq(out[i].result.i64, arg_base + k - 1);
			ok++;
		}
		knit_completion_release(pool, &out[i]);
	}
	free(out);
	return ok;
}

KT(enqueue_many, argument_errors)
{
	knit_pool_t *pool = kt_pool_n(1);
	const uint32_t echo = kt_id(pool, "echo");
	knit_value_t v = kt_i64(1);
	knit_request_t r;
	memset(&r, 0, sizeof r);
	r.task = echo;
	r.arg = &v;
	knit_ticket_t t = 0;
	cr_expect_eq(knit_enqueue_many(NULL, &r, 1, &t), -KNIT_EINVAL);
	cr_expect_eq(knit_enqueue_many(pool, NULL, 1, &t), -KNIT_EINVAL);
	cr_expect_eq(knit_enqueue_many(pool, &r, 0, &t), -KNIT_EINVAL);
	cr_expect_eq(knit_enqueue_many(pool, &r, (uint32_t)INT32_MAX + 1u, &t), -KNIT_EINVAL);
	/* The first request refused: its own code, as knit_enqueue_ex gives. */
	knit_request_t bad = r;
	bad.reserved = 1;
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_EINVAL);
	bad = r;
	bad.task = 9999;
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_ENOTASK);
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	bad = r;
	bad.opts = &o; /* size 0 */
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_EVERSION);
	o.size = sizeof o;
	o.flags = 1u << 30;
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_EINVAL);
	o.flags = KNIT_CALL_LANE;
	o.lane = 7; /* one worker */
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_EINVAL);
	knit_value_t bv = kt_bool(0);
	bv.i64 = 2;
	bad = r;
	bad.arg = &bv;
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_EINVAL);
	knit_value_t nul = kt_bytes(NULL, 0);
	nul.len = 3; /* data NULL with a length */
	bad.arg = &nul;
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_EINVAL);
	knit_value_t ty;
	memset(&ty, 0, sizeof ty);
	ty.type = 99;
	bad.arg = &ty;
	cr_expect_eq(knit_enqueue_many(pool, &bad, 1, &t), -KNIT_EINVAL);
	cr_expect_eq(t, 0, "a refused burst wrote a ticket");
	/* Nothing was enqueued by any of them. */
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, 0);
	cr_expect_eq(s.pending, 0);
	kt_destroy(pool);
}

/* A bad request in the middle: the ones before it are enqueued (k), it and
 * the ones after it are not; enqueueing again from it reports its code. */
KT(enqueue_many, refused_in_the_middle)
{
	knit_pool_t *pool = kt_pool_n(1);
	const uint32_t echo = kt_id(pool, "echo");
	enum { N = 100, BAD = 70 };
	knit_request_t r[N];
	knit_value_t v[N];
	knit_ticket_t t[N];
	memset(t, 0, sizeof t);
	kt_fill_reqs(r, v, N, echo, 1000);
	r[BAD].reserved = 1;
	int k = knit_enqueue_many(pool, r, N, t);
	cr_assert_eq(k, BAD, "accepted %d, want %d", k, BAD);
	for (int i = 0; i < BAD; i++) {
		cr_expect_neq(t[i], 0);
		for (int j = 0; j < i; j++)
			cr_expect_neq(t[i], t[j]);
	}
	for (int i = BAD; i < N; i++)
		cr_expect_eq(t[i], 0, "ticket written for refused request %d", i);
	cr_expect_eq(knit_enqueue_many(pool, r + BAD, N - BAD, t + BAD), -KNIT_EINVAL);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, (uint64_t)BAD);
	char seen[N] = {0};
	cr_expect_eq(reap_check(pool, BAD, seen, 1000), BAD);
	for (int i = BAD; i < N; i++)
		cr_expect_eq(seen[i], 0);
	cr_expect_eq(kt_quiet(pool, 50), 0);
	kt_destroy(pool);
}

/* A big burst (past one lane's slots and past one internal burst): every
 * call completes exactly once, with its own ticket and argument, bytes
 * arguments copied before the call returns. */
KT(enqueue_many, large_burst_exactly_once)
{
	knit_pool_t *pool = kt_pool_n(2);
	const uint32_t echo = kt_id(pool, "echo");
	enum { N = 3000 };
	knit_request_t *r = calloc(N, sizeof *r);
	knit_value_t *v = calloc(N, sizeof *v);
	knit_ticket_t *t = calloc(N, sizeof *t);
	kt_fill_reqs(r, v, N, echo, 0);
	int k = knit_enqueue_many(pool, r, N, t);
	cr_assert_eq(k, N, "accepted %d of %d", k, N);
	char *seen = calloc(N, 1);
	cr_expect_eq(reap_check(pool, N, seen, 0), N);
	free(seen);
	/* Bytes and options in one burst: the library copies the bytes. */
	enum { M = 200 };
	char buf[M][16];
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.timeout_ms = 60000;
	for (int i = 0; i < M; i++) {
		snprintf(buf[i], sizeof buf[i], "s%05d", i);
		v[i] = kt_str(buf[i], strlen(buf[i]));
		r[i].arg = &v[i];
		r[i].opts = i % 2 ? &o : NULL;
	}
	cr_assert_eq(knit_enqueue_many(pool, r, M, NULL), M);
	memset(buf, 'x', sizeof buf); /* the caller's bytes are theirs again */
	knit_completion_t out[M];
	cr_assert_eq(kt_reap(pool, out, M), M);
	char *seen2 = calloc(M, 1);
	for (int i = 0; i < M; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= M);
		cr_expect_eq(seen2[u - 1]++, 0);
		char want[16];
		snprintf(want, sizeof want, "s%05d", (int)u - 1);
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.type, KNIT_VALUE_STRING);
		cr_expect_eq(out[i].result.len, strlen(want));
		cr_expect_eq(memcmp(out[i].result.data, want, strlen(want)), 0);
		knit_completion_release(pool, &out[i]);
	}
	free(seen2);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, (uint64_t)N + M);
	cr_expect_eq(s.completed, (uint64_t)N + M);
	cr_expect_eq(s.pending, 0);
	free(r);
	free(v);
	free(t);
	kt_destroy(pool);
}

/* The pool full part-way (max_pending): k accepted, reported exactly, the
 * rest untouched; nothing accepted is lost; the next burst from request k
 * is refused with -KNIT_EAGAIN while still full. */
static void full_partial(uint32_t workers, uint32_t max_pending)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = KNIT_TOPOLOGY_LANES; /* pins a blocker per lane */
	o.max_pending = max_pending;
	knit_pool_t *pool = kt_pool(&o);
	const uint32_t echo = kt_id(pool, "echo");
	for (uint32_t w = 0; w < workers; w++)
		kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(-1), (void *)(intptr_t)0,
			  KNIT_CALL_LANE, 0, w);
	cr_assert(kt_wait_started((int)workers));
	/* Room: the lanes' free slots (32 each, one taken by the blocker) and
	 * max_pending waiting calls (knit_enqueue(3)). */
	const int room = 31 * (int)workers + (int)max_pending;
	const int n = room + 150;
	knit_request_t *r = calloc((size_t)n, sizeof *r);
	knit_value_t *v = calloc((size_t)n, sizeof *v);
	knit_ticket_t *t = calloc((size_t)n, sizeof *t);
	kt_fill_reqs(r, v, n, echo, 0);
	int k = knit_enqueue_many(pool, r, (uint32_t)n, t);
	cr_assert_eq(k, room, "accepted %d, room for %d", k, room);
	for (int i = 0; i < n; i++)
		cr_expect((t[i] != 0) == (i < k), "ticket %d", i);
	cr_expect_eq(knit_enqueue_many(pool, r + k, (uint32_t)(n - k), t + k), -KNIT_EAGAIN);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, (uint64_t)k + workers);
	cr_expect_eq(s.pending, (uint64_t)k + workers);
	cr_expect_eq(s.backlog, max_pending);
	cr_expect_eq(s.backlog_high_water, max_pending);
	kt_gate_open();
	/* The blockers (user_data 0) and exactly the k accepted calls. */
	const int total = k + (int)workers;
	/* Room for every request: a burst below may take more than fits
	 * (calls that share a frame, knit_enqueue_many(3)). */
	knit_completion_t *out = calloc((size_t)(n + (int)workers), sizeof *out);
	cr_assert_eq(kt_reap(pool, out, total), total);
	char *seen = calloc((size_t)n, 1);
	for (int i = 0; i < total; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_expect_eq(out[i].status, 0);
		if (u == 0)
			continue;
		cr_assert(u >= 1 && u <= k, "completion of a refused request %ld", (long)u);
		cr_expect_eq(seen[u - 1]++, 0);
		cr_expect_eq(out[i].result.i64, u - 1);
	}
	cr_expect_eq(kt_quiet(pool, 50), 0);
	/* Room again: the rest goes in, at least as much as fits each time
	 * (the lanes' slots and max_pending; more when the running worker
	 * gives slots back during the burst), reaped in between. */
	int left = n - k;
	while (left > 0) {
		const int fits = 32 * (int)workers + (int)max_pending;
		const int want = left < fits ? left : fits;
		const int got =
			knit_enqueue_many(pool, r + (n - left), (uint32_t)left, t + (n - left));
		cr_assert(got >= want && got <= left, "accepted %d of %d, room for %d", got, left,
			  fits);
		cr_assert_eq(kt_reap(pool, out, got), got);
		left -= got;
	}
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, (uint64_t)n + workers);
	cr_expect_eq(s.completed, (uint64_t)n + workers);
	cr_expect_eq(s.pending, 0);
	free(seen);
	free(out);
	free(r);
	free(v);
	free(t);
	kt_destroy(pool);
}

KT(enqueue_many, full_partial_one_worker) { full_partial(1, 4); }

KT(enqueue_many, full_partial_two_workers) { full_partial(2, 100); }

KT(enqueue_many, full_partial_max_pending_one) { full_partial(1, 1); }

/* Stop with CANCEL: every accepted call of a burst gets exactly one
 * completion (run or -KNIT_ECLOSED); after the stop a burst is refused. */
KT(enqueue_many, stop_cancel_exactly_once)
{
	knit_pool_t *pool = kt_pool_n(1);
	const uint32_t block = kt_id(pool, "block");
	enum { N = 500 };
	knit_request_t r[N];
	knit_value_t v[N];
	kt_fill_reqs(r, v, N, block, 0);
	int k = knit_enqueue_many(pool, r, N, NULL);
	cr_assert_eq(k, N);
	cr_assert(kt_wait_started(1));
	/* The worker is stuck in the first call: the stop cancels the rest but
	 * cannot be acknowledged until the gate opens. */
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, 50 * 1000 * 1000), -KNIT_ETIMEDOUT);
	kt_gate_open();
	cr_assert_eq(knit_stop(pool, KNIT_STOP_CANCEL, (int64_t)(KT_BOUND_S * 1e9)), 0);
	knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N);
	char seen[N] = {0};
	int closed = 0;
	for (int i = 0; i < N; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= N);
		cr_expect_eq(seen[u - 1]++, 0);
		cr_expect(out[i].status == 0 || out[i].status == -KNIT_ECLOSED, "status %d",
			  out[i].status);
		closed += out[i].status == -KNIT_ECLOSED;
	}
	cr_expect_geq(closed, N - 32, "only %d cancelled", closed);
	knit_completion_t c;
	cr_expect_eq(knit_complete(pool, &c, 1, 0), -KNIT_ECLOSED);
	cr_expect_eq(knit_enqueue_many(pool, r, N, NULL), -KNIT_ECLOSED);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, (uint64_t)N);
	cr_expect_eq(s.completed, (uint64_t)N);
	kt_destroy(pool);
}

/* knit_cancel of tickets from a burst: exactly one completion each, the
 * cancelled ones -KNIT_ECANCELED. */
KT(enqueue_many, cancel_exactly_once)
{
	knit_pool_t *pool = kt_pool_n(1);
	const uint32_t block = kt_id(pool, "block");
	enum { N = 200 };
	knit_request_t r[N];
	knit_value_t v[N];
	knit_ticket_t t[N];
	kt_fill_reqs(r, v, N, block, 0);
	cr_assert_eq(knit_enqueue_many(pool, r, N, t), N);
	cr_assert(kt_wait_started(1));
	int cancelled = 0;
	for (int i = 1; i < N; i += 2)
		if (knit_cancel(pool, t[i], KNIT_CANCEL_NOW) == 0)
			cancelled++;
	cr_expect_geq(cancelled, N / 2 - 1);
	kt_gate_open();
	knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N);
	char seen[N] = {0};
	int got_cancel = 0;
	for (int i = 0; i < N; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= N);
		cr_expect_eq(seen[u - 1]++, 0);
		cr_expect_eq(out[i].ticket, t[u - 1]);
		if (out[i].status == -KNIT_ECANCELED) {
			got_cancel++;
			cr_expect_eq((u - 1) % 2, 1, "call %ld cancelled, was not asked", (long)u);
		} else {
			cr_expect_eq(out[i].status, 0);
		}
	}
	cr_expect_eq(got_cancel, cancelled);
	cr_expect_eq(kt_quiet(pool, 50), 0);
	kt_destroy(pool);
}

/* Deadlines from options and the task's default in a burst: the calls past
 * them complete with -KNIT_ETIMEDOUT, the others run; one completion each. */
KT(enqueue_many, deadlines)
{
	knit_pool_t *pool = kt_pool_n(1);
	const uint32_t block_t50 = kt_id(pool, "block_t50");
	const uint32_t echo = kt_id(pool, "echo");
	enum { N = 40 };
	knit_request_t r[N];
	knit_value_t v[N];
	kt_fill_reqs(r, v, N, block_t50, 0);
	knit_call_options_t nt;
	memset(&nt, 0, sizeof nt);
	nt.size = sizeof nt;
	nt.flags = KNIT_CALL_NO_TIMEOUT;
	for (int i = N / 2; i < N; i++) {
		r[i].task = echo;
		r[i].opts = &nt;
	}
	cr_assert_eq(knit_enqueue_many(pool, r, N, NULL), N);
	knit_completion_t out[N];
	/* The first block_t50 call holds the worker (the gate stays closed):
	 * every block_t50 call times out, its 50 ms passed, while the echo
	 * calls wait behind it; then the gate lets them run. */
	cr_assert_eq(kt_reap(pool, out, N / 2), N / 2);
	kt_gate_open();
	cr_assert_eq(kt_reap(pool, out + N / 2, N / 2), N / 2);
	char seen[N] = {0};
	for (int i = 0; i < N; i++) {
		intptr_t u = (intptr_t)out[i].user_data;
		cr_assert(u >= 1 && u <= N);
		cr_expect_eq(seen[u - 1]++, 0);
		if (u - 1 < N / 2)
			cr_expect_eq(out[i].status, -KNIT_ETIMEDOUT, "call %ld: %d", (long)u,
				     out[i].status);
		else
			cr_expect_eq(out[i].status, 0, "call %ld: %d", (long)u, out[i].status);
	}
	kt_destroy(pool);
}

struct many_prod {
	knit_pool_t *pool;
	uint32_t echo;
	int id, n, accepted;
};

static void *many_prod(void *p)
{
	struct many_prod *a = p;
	enum { B = 37 };
	knit_request_t r[B];
	knit_value_t v[B];
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (a->accepted < a->n && kt_now_ns() < end) {
		int m = a->n - a->accepted < B ? a->n - a->accepted : B;
		for (int i = 0; i < m; i++) {
			const int64_t id = (int64_t)a->id * 1000000 + a->accepted + i;
			v[i] = kt_i64(id);
			memset(&r[i], 0, sizeof r[i]);
			r[i].task = a->echo;
			r[i].arg = &v[i];
			r[i].user_data = (void *)(intptr_t)(id + 1);
		}
		int k = knit_enqueue_many(a->pool, r, (uint32_t)m, NULL);
		if (k > 0)
			a->accepted += k;
		else
			cr_assert_eq(k, -KNIT_EAGAIN, "burst: %d", k);
	}
	return NULL;
}

/* Several threads' bursts at once, with a reaper: each call exactly once. */
KT(enqueue_many, concurrent_bursts)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.max_pending = 256;
	knit_pool_t *pool = kt_pool(&o);
	enum { T = 3, PER = 4000 };
	struct many_prod a[T];
	pthread_t th[T];
	for (int i = 0; i < T; i++) {
		a[i] = (struct many_prod){pool, kt_id(pool, "echo"), i, PER, 0};
		pthread_create(&th[i], NULL, many_prod, &a[i]);
	}
	char *seen = calloc((size_t)T * PER, 1);
	knit_completion_t out[64];
	int got = 0;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (got < T * PER && kt_now_ns() < end) {
		int k = knit_complete(pool, out, 64, 100000000);
		cr_assert_geq(k, 0);
		for (int i = 0; i < k; i++) {
			intptr_t u = (intptr_t)out[i].user_data - 1;
			int id = (int)(u / 1000000), idx = (int)(u % 1000000);
			cr_assert(id >= 0 && id < T && idx >= 0 && idx < PER);
			cr_expect_eq(out[i].status, 0);
			cr_expect_eq(out[i].result.i64, u);
			cr_expect_eq(seen[id * PER + idx]++, 0);
		}
		got += k;
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(a[i].accepted, PER);
	}
	cr_expect_eq(got, T * PER);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.enqueued, (uint64_t)T * PER);
	cr_expect_eq(s.completed, (uint64_t)T * PER);
	cr_expect_eq(s.pending, 0);
	cr_expect_leq(s.backlog_high_water, 256);
	free(seen);
	kt_destroy(pool);
}
