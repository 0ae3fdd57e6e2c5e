/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_syncline.c - knit_call's synchronous line racing the
 * ticketed path, cancels and stop.
 *
 * Each round makes a pool (1-2 workers, lanes or steal, doorbell on or
 * off), then runs three synchronous callers (more host threads than lanes:
 * knit_call without a timeout takes a line when one is free, with a timeout
 * the ticketed path; every sixth call returns a result that spills beyond
 * the reply slot), one producer (knit_enqueue, cancelling every fifth call
 * it made) and one reaper (knit_complete), while the main thread, after a
 * random short delay, calls knit_stop with DRAIN or CANCEL. Checked:
 *  - every knit_call returns 0 with status 0 and the right result, or
 *    (CANCEL only) status -KNIT_ECLOSED, or -KNIT_ECLOSED once stopped; a
 *    line completion has ticket 0, a ticketed one never has;
 *  - every enqueued call completes exactly once (counted per call) with
 *    the right result, -KNIT_ECANCELED, or (CANCEL) -KNIT_ECLOSED;
 *  - after the stop: stats.enqueued == stats.completed == the completions
 *    counted by the threads, pending == 0, sync_calls == the line
 *    completions the callers saw, no protocol error.
 * Exactly-once accounting, natively and under TSan (the Criterion API tests
 * cannot run under TSan). Size: 120 rounds natively, /10 under TSan, /4
 * under ASan, times KNIT_STRESS_SCALE. Exit 0 pass, 1 fail.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knitting.h"

#include "stress/stress.h"

#define SAN_DIV STRESS_SAN_DIV(10, 4)
#define NCALLERS 3
#define PER_PRODUCER 20000
#define BOUND_NS (20ll * 1000 * 1000 * 1000)
/* A knit_call timeout that never expires here: keeps the call ticketed. */
#define BOUND_NS_TICKETED (60ll * 1000 * 1000 * 1000)

static const knit_task_t tasks[] = STRESS_NEG_BLOB_TASKS;
#define BLOB 0
#define NEG 1

struct round {
	knit_pool_t *pool;
	int cancel_mode;
	atomic_int stopped; /* the main thread began knit_stop */
	/* callers */
	atomic_ullong call_done; /* completions the callers got */
	atomic_ullong call_line; /* of them, from the line (ticket 0) */
	/* producer / reaper */
	atomic_uchar seen[PER_PRODUCER];
	atomic_int produced;
	atomic_ullong reaped;
	atomic_int producer_done;
};

/* Totals over the rounds: what the run exercised (printed). */
static atomic_ullong g_line, g_ticketed, g_line_closed;

struct caller {
	struct round *r;
	int id;
	uint64_t seed;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *caller_thread(void *arg)
{
	struct caller *k = arg;
	struct round *r = k->r;
	for (int64_t i = 1;; i++) {
		knit_completion_t c;
		const int blob = i % 6 == 0;
		const int64_t n =
			blob ? 90 + (int64_t)(rnd(&k->seed) % 300) : (int64_t)k->id * 100000000 + i;
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = n};
		const int64_t timeout = i % 4 == 0 ? BOUND_NS_TICKETED : 0;
		int rc = knit_call(r->pool, blob ? BLOB : NEG, &v, &c, timeout);
		if (rc == -KNIT_ECLOSED) {
			CHECK(atomic_load(&r->stopped), "knit_call closed before the stop");
			break;
		}
		if (rc != 0) {
			FAIL("knit_call: %d", rc);
			break;
		}
		atomic_fetch_add(&r->call_done, 1);
		if (c.ticket == 0) {
			atomic_fetch_add(&r->call_line, 1);
			atomic_fetch_add(&g_line, 1);
			if (c.status == -KNIT_ECLOSED)
				atomic_fetch_add(&g_line_closed, 1);
		} else {
			atomic_fetch_add(&g_ticketed, 1);
		}
		CHECK(timeout == 0 || c.ticket != 0,
		      "a call with a timeout came back without a ticket");
		if (c.status == -KNIT_ECLOSED) {
			CHECK(r->cancel_mode, "a call cancelled by a DRAIN stop");
		} else if (c.status != 0) {
			FAIL("knit_call status %d", c.status);
		} else if (blob) {
			CHECK(c.result.type == KNIT_VALUE_STRING && c.result.len == (size_t)n &&
				      ((const char *)c.result.data)[0] == 'x' &&
				      ((const char *)c.result.data)[n - 1] == 'x' &&
				      ((const char *)c.result.data)[n] == 0,
			      "blob %" PRId64 ": wrong result", n);
		} else {
			CHECK(c.result.type == KNIT_VALUE_I64 && c.result.i64 == -n,
			      "neg %" PRId64 ": got %" PRId64, n, c.result.i64);
		}
		CHECK(knit_completion_release(r->pool, &c) == 0, "release");
	}
	return NULL;
}

static void *producer_thread(void *arg)
{
	struct round *r = arg;
	for (int i = 0; i < PER_PRODUCER / SAN_DIV; i++) {
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = i};
		knit_ticket_t t;
		int rc = knit_enqueue(r->pool, NEG, &v, (void *)(intptr_t)(i + 1), &t);
		if (rc == -KNIT_EAGAIN) {
			sched_yield();
			i--;
			continue;
		}
		if (rc == -KNIT_ECLOSED)
			break;
		if (rc != 0) {
			FAIL("enqueue: %d", rc);
			break;
		}
		atomic_fetch_add(&r->produced, 1);
		if (i % 5 == 0) {
			rc = knit_cancel(r->pool, t, KNIT_CANCEL_NOW);
			CHECK(rc == 0 || rc == -KNIT_ENOTFOUND || rc == -KNIT_ECLOSED, "cancel: %d",
			      rc);
		}
	}
	atomic_store(&r->producer_done, 1);
	return NULL;
}

static void *reaper_thread(void *arg)
{
	struct round *r = arg;
	knit_completion_t out[16];
	for (;;) {
		int n = knit_complete(r->pool, out, 16, 1000000);
		if (n == -KNIT_ECLOSED)
			break;
		if (n < 0) {
			FAIL("complete: %d", n);
			break;
		}
		for (int j = 0; j < n; j++) {
			knit_completion_t *c = &out[j];
			intptr_t idx = (intptr_t)c->user_data - 1;
			if (idx < 0 || idx >= PER_PRODUCER || c->ticket == 0) {
				FAIL("a completion that is not the producer's (user_data %p, "
				     "ticket %llu)",
				     c->user_data, (unsigned long long)c->ticket);
				continue;
			}
			CHECK(atomic_fetch_add(&r->seen[idx], 1) == 0, "call %ld completed twice",
			      (long)idx);
			if (c->status == 0)
				CHECK(c->result.i64 == -(int64_t)idx, "call %ld: wrong result",
				      (long)idx);
			else
				CHECK(c->status == -KNIT_ECANCELED ||
					      (r->cancel_mode && c->status == -KNIT_ECLOSED),
				      "call %ld: status %d", (long)idx, c->status);
			knit_completion_release(r->pool, c);
			atomic_fetch_add(&r->reaped, 1);
		}
	}
	return NULL;
}

static void one_round(uint64_t seed)
{
	struct round *r = calloc(1, sizeof *r);
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 1 + (uint32_t)(rnd(&seed) % 2);
	o.topology = rnd(&seed) % 3 == 0 ? KNIT_TOPOLOGY_STEAL : KNIT_TOPOLOGY_LANES;
	o.doorbell = rnd(&seed) % 4 == 0 ? KNIT_DOORBELL_OFF : KNIT_DOORBELL_ON;
	if (rnd(&seed) % 2)
		o.spin_us = KNIT_ZERO;
	if (knit_pool_create(&o, tasks, 2, &r->pool) != 0) {
		FAIL("create");
		free(r);
		return;
	}
	r->cancel_mode = (int)(rnd(&seed) % 2);
	pthread_t tc[NCALLERS], tp, tr;
	struct caller k[NCALLERS];
	for (int i = 0; i < NCALLERS; i++) {
		k[i] = (struct caller){r, i + 1, seed + (uint64_t)i * 7919 + 1};
		pthread_create(&tc[i], NULL, caller_thread, &k[i]);
	}
	pthread_create(&tp, NULL, producer_thread, r);
	pthread_create(&tr, NULL, reaper_thread, r);
	/* A random short run before the stop (any moment will do). */
	const int64_t until = now_ns() + (int64_t)(rnd(&seed) % 20000000);
	while (now_ns() < until)
		sched_yield();
	atomic_store(&r->stopped, 1);
	int rc = knit_stop(r->pool, r->cancel_mode ? KNIT_STOP_CANCEL : KNIT_STOP_DRAIN, BOUND_NS);
	CHECK(rc == 0, "knit_stop: %d", rc);
	for (int i = 0; i < NCALLERS; i++)
		pthread_join(tc[i], NULL);
	pthread_join(tp, NULL);
	pthread_join(tr, NULL);
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	CHECK(knit_pool_stats(r->pool, &s, sizeof s) == 0, "stats");
	const uint64_t done = atomic_load(&r->call_done) + atomic_load(&r->reaped);
	CHECK(s.enqueued == s.completed, "enqueued %llu != completed %llu",
	      (unsigned long long)s.enqueued, (unsigned long long)s.completed);
	CHECK(s.completed == done, "completed %llu, the threads counted %llu",
	      (unsigned long long)s.completed, (unsigned long long)done);
	CHECK(atomic_load(&r->reaped) == (uint64_t)atomic_load(&r->produced),
	      "produced %d, reaped %llu", atomic_load(&r->produced),
	      (unsigned long long)atomic_load(&r->reaped));
	CHECK(s.pending == 0, "pending %llu", (unsigned long long)s.pending);
	CHECK(s.sync_calls == atomic_load(&r->call_line), "sync_calls %llu, line completions %llu",
	      (unsigned long long)s.sync_calls, (unsigned long long)atomic_load(&r->call_line));
	CHECK(s.proto_errors == 0, "proto_errors %llu", (unsigned long long)s.proto_errors);
	CHECK(knit_pool_destroy(r->pool) == 0, "destroy");
	free(r);
}

int main(void)
{
	const char *sc = getenv("KNIT_STRESS_SCALE");
	const int scale = sc ? atoi(sc) : 1;
	const int rounds = (120 / SAN_DIV) * (scale > 0 ? scale : 1);
	uint64_t seed = 0x5EEDull ^ (uint64_t)now_ns();
	printf("pool_syncline: %d rounds, seed %" PRIu64 "\n", rounds, seed);
	for (int i = 0; i < rounds && atomic_load(&failures) == 0; i++)
		one_round(seed + (uint64_t)i * 0x9E3779B97F4A7C15ull);
	if (atomic_load(&failures)) {
		printf("pool_syncline: %d failures\n", atomic_load(&failures));
		return 1;
	}
	printf("pool_syncline: ok (%llu line calls, %llu of them cancelled by a stop; %llu "
	       "ticketed)\n",
	       (unsigned long long)atomic_load(&g_line),
	       (unsigned long long)atomic_load(&g_line_closed),
	       (unsigned long long)atomic_load(&g_ticketed));
	if (atomic_load(&g_line) == 0) {
		printf("pool_syncline: no call took the line\n");
		return 1;
	}
	return 0;
}
