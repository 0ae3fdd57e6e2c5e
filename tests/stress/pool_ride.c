/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_ride.c - calls that share a frame (knit_enqueue_many(3),
 * "Calls that share a frame") each end in exactly one completion, under load,
 * cancels and a stop.
 *
 * Per round: a thread pool of two workers (lanes, then steal); two host
 * threads enqueue bursts of 1 .. 200 cheap calls ("neg" on an I64, "blob"
 * returning a string of 1 .. 600 bytes, runs of one task so that they share
 * frames, now and then a request with options, which never shares, in the
 * middle of a run); each cancels (NOW) random tickets of its recent calls; a
 * third thread reaps and checks every completion: the first for its call,
 * status 0 with the right result, or -KNIT_ECANCELED only for a call that was
 * cancelled, or -KNIT_ECLOSED only after the stop. Halfway through the
 * second round the pool is stopped with CANCEL while the producers go on
 * (their bursts are then refused with -KNIT_ECLOSED). At the end every
 * accepted call has exactly one completion and none is pending. How many
 * calls shared frames is printed (natively, unloaded, about nine in ten, in
 * frames of about 28); that some travelled in frames, at least alone to
 * measure their task, is required.
 *
 * Size: 400,000 calls a round natively, /20 under ThreadSanitizer, /10
 * under AddressSanitizer, times KNIT_STRESS_SCALE. Exit 0 pass, 1 fail.
 * Nothing is timed except safety bounds.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knitting.h"

#include "stress/stress.h"

#define SAN_DIV STRESS_SAN_DIV(20, 10)
#define BOUND_NS (120ll * 1000 * 1000 * 1000)
#define BURST_MAX 200

enum { F_CANCELLED = 1, F_BLOB = 2 };

static long ncalls; /* per producer per round */
static knit_pool_t *pool;
static uint32_t neg_id, blob_id;
static atomic_uchar *done;  /* completions per call */
static atomic_uchar *flags; /* F_* per call */
static int64_t *argv_;      /* each call's argument */
static atomic_long accepted, reaped;
static atomic_int stopped, producers_left;
static int64_t t_end;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct producer {
	int id;
	uint64_t seed;
};

static void *produce(void *arg)
{
	struct producer *pr = arg;
	knit_request_t req[BURST_MAX];
	knit_value_t v[BURST_MAX];
	knit_ticket_t t[BURST_MAX];
	knit_ticket_t recent[64] = {0};
	long recent_idx[64] = {0};
	long ri = 0;
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	const long base = (long)pr->id * ncalls;
	long i = 0;
	while (i < ncalls) {
		uint64_t r = next(&pr->seed);
		const int n0 = 1 + (int)(r % BURST_MAX);
		const int n = n0 < ncalls - i ? n0 : (int)(ncalls - i);
		const int blob = (r >> 20) % 3 == 0;
		for (int j = 0; j < n; j++) {
			const long idx = base + i + j;
			r = next(&pr->seed);
			argv_[idx] = blob ? (int64_t)(1 + r % 600) : (int64_t)(r >> 8);
			atomic_store(&flags[idx], blob ? F_BLOB : 0);
			memset(&req[j], 0, sizeof req[j]);
			memset(&v[j], 0, sizeof v[j]);
			v[j].type = KNIT_VALUE_I64;
			v[j].i64 = argv_[idx];
			req[j].task = blob ? blob_id : neg_id;
			req[j].arg = &v[j];
			req[j].user_data = (void *)(intptr_t)(idx + 1);
			req[j].opts = (r >> 40) % 50 == 0 ? &o : NULL;
		}
		int at = 0;
		while (at < n) {
			const int k = knit_enqueue_many(pool, req + at, (uint32_t)(n - at), t + at);
			if (k == -KNIT_EAGAIN) {
				if (now_ns() > t_end) {
					FAIL("producer %d: backlog never drained", pr->id);
					goto out;
				}
				sched_yield();
				continue;
			}
			if (k == -KNIT_ECLOSED && atomic_load(&stopped))
				goto out; /* the rest never enqueued: not counted */
			if (k <= 0 || k > n - at) {
				FAIL("producer %d: knit_enqueue_many: %d (%s)", pr->id, k,
				     knit_strerror(k));
				goto out;
			}
			for (int j = at; j < at + k; j++) {
				recent[ri % 64] = t[j];
				recent_idx[ri % 64] = base + i + j;
				ri++;
			}
			atomic_fetch_add(&accepted, k);
			at += k;
		}
		i += n;
		r = next(&pr->seed);
		if (r % 3 == 0 && ri >= 64) {
			const int j = (int)((r >> 8) % 64);
			/* Flagged first: the completion may come before the return. */
			atomic_fetch_or(&flags[recent_idx[j]], F_CANCELLED);
			const int rc = knit_cancel(pool, recent[j], KNIT_CANCEL_NOW);
			CHECK(rc == 0 || rc == -KNIT_ENOTFOUND, "cancel: %d (%s)", rc,
			      knit_strerror(rc));
		}
	}
out:
	atomic_fetch_sub(&producers_left, 1);
	return NULL;
}

static void check_one(const knit_completion_t *c)
{
	const long idx = (long)(intptr_t)c->user_data - 1;
	if (idx < 0 || idx >= 2 * ncalls) {
		FAIL("foreign user_data %ld", idx + 1);
		return;
	}
	if (atomic_fetch_add(&done[idx], 1) != 0) {
		FAIL("call %ld completed twice", idx);
		return;
	}
	const unsigned f = atomic_load(&flags[idx]);
	if (c->status == -KNIT_ECANCELED) {
		CHECK(f & F_CANCELLED, "call %ld: -KNIT_ECANCELED, never cancelled", idx);
		return;
	}
	if (c->status == -KNIT_ECLOSED) {
		CHECK(atomic_load(&stopped), "call %ld: -KNIT_ECLOSED before the stop", idx);
		return;
	}
	if (c->status != 0) {
		FAIL("call %ld: status %d (%s)", idx, c->status, knit_strerror(c->status));
		return;
	}
	if (f & F_BLOB) {
		const size_t n = (size_t)argv_[idx];
		int ok = c->result.type == KNIT_VALUE_STRING && c->result.len == n;
		for (size_t k = 0; ok && k < n; k++)
			ok = ((const char *)c->result.data)[k] == 'x';
		CHECK(ok, "call %ld: blob of %zu wrong (type %u len %zu)", idx, n, c->result.type,
		      c->result.len);
	} else {
		CHECK(c->result.type == KNIT_VALUE_I64 && c->result.i64 == -argv_[idx],
		      "call %ld: neg wrong", idx);
	}
}

static void *reap(void *arg)
{
	(void)arg;
	knit_completion_t out[128];
	for (;;) {
		const int n = knit_complete(pool, out, 128, 2000000);
		if (n == -KNIT_ECLOSED)
			break;
		if (n < 0) {
			FAIL("knit_complete: %d (%s)", n, knit_strerror(n));
			break;
		}
		for (int i = 0; i < n; i++) {
			check_one(&out[i]);
			knit_completion_release(pool, &out[i]);
		}
		atomic_fetch_add(&reaped, n);
		if (n == 0 && atomic_load(&producers_left) == 0 &&
		    atomic_load(&reaped) == atomic_load(&accepted))
			break;
		if (now_ns() > t_end) {
			FAIL("reaper: %ld of %ld reaped at the bound", atomic_load(&reaped),
			     atomic_load(&accepted));
			break;
		}
	}
	return NULL;
}

static int task_blob(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	return stress_t_blob(ctx, arg, ret);
}
static int task_neg(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	return stress_t_neg(ctx, arg, ret);
}

static void round_run(uint32_t topology, int stop_halfway, uint64_t seed)
{
	const char *name = topology == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
	const knit_task_t tasks[] = {{"blob", task_blob, 0, 0}, {"neg", task_neg, 0, 0}};
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.topology = topology;
	o.max_pending = 512;
	int rc = knit_pool_create(&o, tasks, 2, &pool);
	if (rc != 0) {
		FAIL("knit_pool_create: %d (%s)", rc, knit_strerror(rc));
		return;
	}
	blob_id = (uint32_t)knit_pool_task_id(pool, "blob");
	neg_id = (uint32_t)knit_pool_task_id(pool, "neg");
	memset(done, 0, (size_t)(2 * ncalls));
	for (long i = 0; i < 2 * ncalls; i++)
		atomic_store(&flags[i], 0);
	atomic_store(&accepted, 0);
	atomic_store(&reaped, 0);
	atomic_store(&stopped, 0);
	atomic_store(&producers_left, 2);
	t_end = now_ns() + BOUND_NS;
	struct producer prs[2] = {{0, seed}, {1, seed * 7 + 3}};
	pthread_t th[3];
	pthread_create(&th[0], NULL, reap, NULL);
	pthread_create(&th[1], NULL, produce, &prs[0]);
	pthread_create(&th[2], NULL, produce, &prs[1]);
	if (stop_halfway) {
		while (atomic_load(&accepted) < ncalls && atomic_load(&producers_left) != 0 &&
		       now_ns() < t_end)
			sched_yield();
		atomic_store(&stopped, 1);
		rc = knit_stop(pool, KNIT_STOP_CANCEL, 30ll * 1000 * 1000 * 1000);
		CHECK(rc == 0, "stop: %d (%s)", rc, knit_strerror(rc));
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	long ones = 0;
	for (long i = 0; i < 2 * ncalls; i++)
		ones += atomic_load(&done[i]);
	CHECK(ones == atomic_load(&accepted), "%s: %ld completions for %ld accepted calls", name,
	      ones, atomic_load(&accepted));
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	CHECK(knit_pool_stats(pool, &st, sizeof st) == 0, "stats");
	CHECK(st.pending == 0, "%s: pending %" PRIu64, name, st.pending);
	CHECK(st.enqueued == (uint64_t)atomic_load(&accepted), "%s: enqueued %" PRIu64, name,
	      st.enqueued);
	printf("%s%s: %ld calls, %" PRIu64 " shared %" PRIu64 " frames\n", name,
	       stop_halfway ? " (stopped halfway)" : "", atomic_load(&accepted), st.shared_calls,
	       st.shared_frames);
	/* How many calls share depends on the machine's load (a frame slowed
	 * by a preemption makes its task look slow for a while): only the
	 * measuring, which always happens, is required here; test_ride
	 * requires sharing itself. */
	CHECK(st.shared_calls > 0, "%s: no call measured its task in a frame", name);
	if (!stop_halfway) {
		rc = knit_stop(pool, 0, 30ll * 1000 * 1000 * 1000);
		CHECK(rc == 0, "stop: %d (%s)", rc, knit_strerror(rc));
	}
	knit_pool_destroy(pool);
	pool = NULL;
}

int main(void)
{
	double scale = 1.0;
	const char *s = getenv("KNIT_STRESS_SCALE");
	if (s != NULL && atof(s) > 0)
		scale = atof(s);
	ncalls = (long)(200000.0 * scale / SAN_DIV);
	if (ncalls < 2000)
		ncalls = 2000;
	uint64_t seed = (uint64_t)now_ns() | 1;
	const char *sv = getenv("KNIT_TEST_SEED");
	if (sv != NULL)
		seed = strtoull(sv, NULL, 0) | 1;
	printf("seed %" PRIu64 "\n", seed);
	done = calloc((size_t)(2 * ncalls), 1);
	flags = calloc((size_t)(2 * ncalls), 1);
	argv_ = calloc((size_t)(2 * ncalls), sizeof *argv_);
	round_run(KNIT_TOPOLOGY_LANES, 0, seed);
	round_run(KNIT_TOPOLOGY_STEAL, 1, seed + 2);
	round_run(KNIT_TOPOLOGY_LANES, 1, seed + 4);
	free(done);
	free(flags);
	free(argv_);
	const int f = atomic_load(&failures);
	printf("%s (%d failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
