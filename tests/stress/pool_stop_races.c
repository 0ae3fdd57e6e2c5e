/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_stop_races.c - stop racing everything else.
 *
 * Each round makes a pool (1-3 workers, inline lane off / first / last,
 * doorbell on or off, random balancer), then runs two producers
 * (knit_enqueue), one synchronous caller (knit_call) and one reaper
 * (knit_complete) against it while the main thread, after a random short
 * delay, calls knit_stop with DRAIN or CANCEL. Checked per round:
 *  - every accepted call completes exactly once (counted per call), with
 *    status 0 and the right result, or (CANCEL only) -KNIT_ECLOSED;
 *  - enqueues fail only with -KNIT_ECLOSED (or -KNIT_EAGAIN, retried);
 *  - knit_call returns 0 with status 0 and the right result, or (CANCEL)
 *    status -KNIT_ECLOSED, or -KNIT_ECLOSED once stopped; its completions
 *    never reach the reaper;
 *  - knit_stop returns 0 (every worker acknowledged), the reaper ends on
 *    -KNIT_ECLOSED, and no park watchdog fired.
 * At the end, pools destroyed with results never reaped: under ASan the
 * leak check at exit proves destroy freed them.
 * This is also the ThreadSanitizer coverage of stop, the inline lane and
 * knit_call (the Criterion API tests cannot run under TSan).
 * Size: 300 rounds natively, /10 under TSan, /5 under ASan, times
 * KNIT_STRESS_SCALE. Exit 0 pass, 1 fail.
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

#define SAN_DIV STRESS_SAN_DIV(10, 5)

#define BOUND_NS (20ll * 1000 * 1000 * 1000)
#define PER_PRODUCER 50000

static const knit_task_t tasks[] = STRESS_NEG_BLOB_TASKS;
#define NEG 1 /* ids are name order: blob = 0, neg = 1 (checked in main) */

/* Destroy frees what the pool owns: results never reaped (byte payloads in
 * the slots' inline areas and in the arena) and calls still queued. Under
 * AddressSanitizer the leak check at exit fails the program if it did not
 * (the Criterion API tests cannot show leaks: their children skip it). */
static void destroy_frees_everything(void)
{
	for (int variant = 0; variant < 4; variant++) {
		knit_pool_t *pool = NULL;
		knit_pool_options_t o;
		memset(&o, 0, sizeof o);
		o.size = sizeof o;
		o.workers = 1 + variant % 2;
		o.inline_lane = variant >= 2 ? KNIT_INLINE_LAST : KNIT_INLINE_OFF;
		if (knit_pool_create(&o, tasks, 2, &pool) != 0) {
			FAIL("create");
			return;
		}
		int blob = knit_pool_task_id(pool, "blob");
		for (int i = 0; i < 200; i++) {
			knit_value_t v = {.type = KNIT_VALUE_I64,
					  .i64 = i % 3 == 0 ? 100000 : 1 + i * 3};
			int rc = knit_enqueue(pool, (uint32_t)blob, &v, NULL, NULL);
			CHECK(rc == 0, "enqueue: %d", rc);
		}
		knit_completion_t c[8];
		int n = knit_complete(pool, c, 8,
				      100 * 1000 * 1000); /* a few reaped and released */
		for (int i = 0; i < n; i++)
			knit_completion_release(pool, &c[i]);
		if (variant % 2)
			CHECK(knit_stop(pool, KNIT_STOP_DRAIN, BOUND_NS) == 0, "stop");
		CHECK(knit_pool_destroy(pool) == 0, "destroy");
	}
}

struct round {
	knit_pool_t *pool;
	int cancel; /* stop flavour */
	atomic_int go, producers_done;
	atomic_uchar seen[2][PER_PRODUCER];
	int accepted[2];
	atomic_long reaped;
};

struct prod {
	struct round *r;
	int id;
};

static void *producer(void *p)
{
	struct prod *pr = p;
	struct round *r = pr->r;
	while (!atomic_load(&r->go))
		sched_yield();
	int64_t end = now_ns() + BOUND_NS;
	while (r->accepted[pr->id] < PER_PRODUCER) {
		int i = r->accepted[pr->id];
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = i};
		int rc = knit_enqueue(r->pool, NEG, &v,
				      (void *)(intptr_t)(pr->id * PER_PRODUCER + i + 1), NULL);
		if (rc == 0) {
			r->accepted[pr->id]++;
		} else if (rc == -KNIT_EAGAIN) {
			if (now_ns() > end) {
				FAIL("producer: backlog never drained");
				break;
			}
			sched_yield();
		} else {
			CHECK(rc == -KNIT_ECLOSED, "enqueue: %d", rc);
			break;
		}
	}
	atomic_fetch_add(&r->producers_done, 1);
	return NULL;
}

static void *caller(void *p)
{
	struct round *r = p;
	while (!atomic_load(&r->go))
		sched_yield();
	for (int64_t i = 1;; i++) {
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = i};
		knit_completion_t c;
		int rc = knit_call(r->pool, NEG, &v, &c, BOUND_NS);
		if (rc == -KNIT_ECLOSED)
			break;
		if (rc != 0) {
			CHECK(rc == -KNIT_EAGAIN, "knit_call: %d", rc);
			sched_yield();
			continue;
		}
		if (c.status == -KNIT_ECLOSED) {
			CHECK(r->cancel, "knit_call: ECLOSED status under DRAIN");
			continue;
		}
		CHECK(c.status == 0 && c.result.i64 == -i,
		      "knit_call %" PRId64 ": status %d result %" PRId64, i, c.status,
		      c.result.i64);
		CHECK(c.user_data == NULL, "knit_call completion has user_data %p", c.user_data);
	}
	return NULL;
}

static void *reaper(void *p)
{
	struct round *r = p;
	knit_completion_t out[32];
	int64_t end = now_ns() + BOUND_NS;
	for (;;) {
		int n = knit_complete(r->pool, out, 32, 10 * 1000 * 1000);
		if (n == -KNIT_ECLOSED)
			break;
		if (n < 0) {
			FAIL("knit_complete: %d", n);
			break;
		}
		if (now_ns() > end) {
			FAIL("reaper: no -KNIT_ECLOSED within the bound (%ld reaped)",
			     atomic_load(&r->reaped));
			break;
		}
		for (int i = 0; i < n; i++) {
			long k = (long)(intptr_t)out[i].user_data - 1;
			if (k < 0 || k >= 2 * PER_PRODUCER) {
				FAIL("foreign completion (user_data %p; a knit_call completion?)",
				     out[i].user_data);
				continue;
			}
			int who = (int)(k / PER_PRODUCER), idx = (int)(k % PER_PRODUCER);
			unsigned prev = atomic_fetch_add(&r->seen[who][idx], 1);
			CHECK(prev == 0, "call %d/%d completed twice", who, idx);
			if (out[i].status == 0)
				CHECK(out[i].result.i64 == -idx, "call %d/%d: wrong result", who,
				      idx);
			else
				CHECK(r->cancel && out[i].status == -KNIT_ECLOSED,
				      "call %d/%d: status %d (%s)", who, idx, out[i].status,
				      r->cancel ? "CANCEL" : "DRAIN");
		}
		atomic_fetch_add(&r->reaped, n);
	}
	return NULL;
}

int main(void)
{
	double scale = 1.0 / SAN_DIV;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e && *e && strtod(e, NULL) > 0)
		scale *= strtod(e, NULL);
	int rounds = (int)(300 * scale);
	if (rounds < 4)
		rounds = 4;
	uint64_t rng = 0x73746f7072616365ull;
	long total_calls = 0;
	printf("pool_stop_races: %d rounds\n", rounds);
	for (int round = 0; round < rounds && atomic_load(&failures) == 0; round++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t r = rng >> 11;
		struct round *R = calloc(1, sizeof *R);
		knit_pool_options_t o;
		memset(&o, 0, sizeof o);
		o.size = sizeof o;
		o.workers = 1 + (uint32_t)(r % 3);
		o.inline_lane = (uint32_t)((r >> 4) % 3);
		o.doorbell = (r >> 8) % 3 == 0 ? KNIT_DOORBELL_OFF : KNIT_DOORBELL_ON;
		o.balancer = (uint32_t)((r >> 12) % 5);
		o.max_pending = (r >> 16) % 2 ? 64 : 0;
		R->cancel = (int)((r >> 20) % 2);
		int rc = knit_pool_create(&o, tasks, 2, &R->pool);
		if (rc != 0) {
			FAIL("round %d: create: %d", round, rc);
			free(R);
			break;
		}
		if (knit_pool_task_id(R->pool, "neg") != NEG) {
			FAIL("task ids are not in name order");
			break;
		}
		pthread_t th[4];
		struct prod pr[2] = {{R, 0}, {R, 1}};
		pthread_create(&th[0], NULL, producer, &pr[0]);
		pthread_create(&th[1], NULL, producer, &pr[1]);
		pthread_create(&th[2], NULL, caller, R);
		pthread_create(&th[3], NULL, reaper, R);
		atomic_store(&R->go, 1);
		struct timespec ts = {0, (long)((r >> 24) % 20) * 1000000L};
		nanosleep(&ts, NULL);
		rc = knit_stop(R->pool, R->cancel ? KNIT_STOP_CANCEL : KNIT_STOP_DRAIN, BOUND_NS);
		CHECK(rc == 0, "round %d: knit_stop: %d", round, rc);
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		long acc = R->accepted[0] + R->accepted[1];
		CHECK(atomic_load(&R->reaped) == acc, "round %d: %ld reaped, %ld accepted", round,
		      atomic_load(&R->reaped), acc);
		for (int w = 0; w < 2; w++)
			for (int i = 0; i < R->accepted[w]; i++)
				if (atomic_load(&R->seen[w][i]) != 1) {
					FAIL("round %d: call %d/%d completed %u times", round, w, i,
					     atomic_load(&R->seen[w][i]));
					break;
				}
		knit_pool_stats_t s;
		memset(&s, 0, sizeof s);
		s.size = sizeof s;
		CHECK(knit_pool_stats(R->pool, &s, sizeof s) == 0, "stats");
		for (uint32_t l = 0; l < s.lanes; l++)
			CHECK(s.lane[l].watchdog_expiries == 0, "round %d: lane %u watchdog fired",
			      round, l);
		CHECK(s.pending == 0, "round %d: pending %" PRIu64 " after stop", round, s.pending);
		CHECK(knit_pool_destroy(R->pool) == 0, "destroy");
		total_calls += acc;
		free(R);
	}
	destroy_frees_everything();
	int f = atomic_load(&failures);
	printf("%ld queued calls over the rounds; %s (%d failures)\n", total_calls,
	       f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
