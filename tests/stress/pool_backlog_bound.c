/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_backlog_bound.c - max_pending and the backlog's
 * high-water mark with several producers bursting into a full backlog.
 *
 * Four producer threads (twice the cores of a 2-core machine, so a producer
 * is often preempted inside an admission) enqueue with knit_enqueue_many in
 * bursts of 1..48 calls (each with options, so that no call shares a frame
 * with another: knit_enqueue_many(3); the backlog then holds calls, one
 * each) into a pool whose backlog holds MAX_PENDING = 64:
 * nearly every burst finds the backlog close to full and is accepted in
 * part, so admissions that overflow (and give back what did not fit) run
 * beside admissions that fit. The main thread reaps.
 *
 * Per round (a fresh pool each): every accepted call has exactly one
 * completion, status 0 and the task's result; a burst is accepted in order
 * (knit_enqueue_many returns a count, never a hole); stats.enqueued and
 * stats.completed equal what was accepted and reaped; and
 * stats.backlog_high_water is at most MAX_PENDING: the mark says how many
 * calls were admitted at once, which the bound keeps within max_pending
 * (a mark above it would be another producer's burst counted before its
 * give-back, never calls that waited). The mark must also reach past half
 * of MAX_PENDING, or the round did not fill the backlog it tests.
 *
 * Size: ROUNDS rounds of 4 x 20,000 calls natively, /20 under
 * ThreadSanitizer, /10 under AddressSanitizer; KNIT_STRESS_SCALE multiplies
 * the calls per round. Exit 0 pass, 1 fail. Nothing is timed except safety
 * bounds.
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
#define PRODUCERS 4
#define MAX_PENDING 64
#define BURST_MAX 48
#define ROUNDS 24
#define BOUND_NS (120ll * 1000 * 1000 * 1000) /* safety bound per round */
#define T_NEG 1                               /* STRESS_NEG_BLOB_TASKS: name order */

static knit_pool_t *pool;
static long per_producer;
static atomic_uchar *seen; /* completions per call */
static atomic_long accepted;
static atomic_int producers_done;

struct producer {
	int id;
	uint64_t rng;
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Call number i of producer id: its argument, user_data and result. */
static long call_index(int id, long i) { return (long)id * per_producer + i; }

static void *producer(void *arg)
{
	struct producer *pr = arg;
	knit_request_t req[BURST_MAX];
	knit_value_t val[BURST_MAX];
	knit_call_options_t own;
	memset(&own, 0, sizeof own);
	own.size = sizeof own;
	long done = 0;
	const int64_t end = now_ns() + BOUND_NS;
	while (done < per_producer && now_ns() < end) {
		long m = 1 + (long)(rng_next(&pr->rng) % BURST_MAX);
		if (m > per_producer - done)
			m = per_producer - done;
		for (long j = 0; j < m; j++) {
			const long idx = call_index(pr->id, done + j);
			memset(&val[j], 0, sizeof val[j]);
			val[j].type = KNIT_VALUE_I64;
			val[j].i64 = idx;
			memset(&req[j], 0, sizeof req[j]);
			req[j].task = T_NEG;
			req[j].arg = &val[j];
			req[j].user_data = (void *)(intptr_t)(idx + 1);
			req[j].opts = &own; /* the defaults, but a call of its own */
		}
		int k = knit_enqueue_many(pool, req, (uint32_t)m, NULL);
		if (k == -KNIT_EAGAIN) {
			sched_yield();
			continue;
		}
		if (k <= 0 || k > m) {
			FAIL("producer %d: knit_enqueue_many(%ld): %d (%s)", pr->id, m, k,
			     k < 0 ? knit_strerror(k) : "");
			break;
		}
		done += k;
		atomic_fetch_add(&accepted, k);
	}
	CHECK(done == per_producer, "producer %d: %ld of %ld calls accepted within the bound",
	      pr->id, done, per_producer);
	atomic_fetch_add(&producers_done, 1);
	return NULL;
}

/* One round: a fresh pool, the producers, reaping here. The high-water mark
 * it ended with goes to *hw. */
static void round_run(int r, uint64_t *hw)
{
	static const knit_task_t tasks[] = STRESS_NEG_BLOB_TASKS;
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.max_pending = MAX_PENDING;
	int rc = knit_pool_create(&o, tasks, 2, &pool);
	if (rc != 0) {
		FAIL("round %d: knit_pool_create: %d (%s)", r, rc, knit_strerror(rc));
		return;
	}
	const long total = PRODUCERS * per_producer;
	memset(seen, 0, (size_t)total);
	atomic_store(&accepted, 0);
	atomic_store(&producers_done, 0);

	pthread_t th[PRODUCERS];
	struct producer pr[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++) {
		pr[i] = (struct producer){i, 0x9e3779b97f4a7c15ull *
						     (uint64_t)(r * PRODUCERS + i + 1)};
		pthread_create(&th[i], NULL, producer, &pr[i]);
	}
	long reaped = 0;
	knit_completion_t out[64];
	const int64_t end = now_ns() + BOUND_NS;
	while (now_ns() < end &&
	       (atomic_load(&producers_done) < PRODUCERS || reaped < atomic_load(&accepted))) {
		int k = knit_complete(pool, out, 64, 10 * 1000 * 1000);
		if (k < 0) {
			FAIL("round %d: knit_complete: %d (%s)", r, k, knit_strerror(k));
			break;
		}
		for (int i = 0; i < k; i++) {
			const long idx = (long)(intptr_t)out[i].user_data - 1;
			if (idx < 0 || idx >= total) {
				FAIL("round %d: completion for unknown call %ld", r, idx);
				continue;
			}
			CHECK(atomic_fetch_add(&seen[idx], 1) == 0,
			      "round %d: call %ld completed twice", r, idx);
			CHECK(out[i].status == 0, "round %d: call %ld: status %d", r, idx,
			      out[i].status);
			CHECK(out[i].result.type == KNIT_VALUE_I64 && out[i].result.i64 == -idx,
			      "round %d: call %ld: result %" PRId64, r, idx, out[i].result.i64);
		}
		reaped += k;
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);

	CHECK(reaped == total, "round %d: %ld of %ld calls reaped", r, reaped, total);
	long missing = 0;
	for (long i = 0; i < total; i++)
		if (atomic_load(&seen[i]) != 1)
			missing++;
	CHECK(missing == 0, "round %d: %ld calls without exactly one completion", r, missing);

	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	rc = knit_pool_stats(pool, &st, sizeof st);
	CHECK(rc == 0, "round %d: knit_pool_stats: %d", r, rc);
	CHECK(st.enqueued == (uint64_t)total, "round %d: stats.enqueued %" PRIu64 ", %ld accepted",
	      r, st.enqueued, total);
	CHECK(st.completed == (uint64_t)reaped, "round %d: stats.completed %" PRIu64 ", %ld reaped",
	      r, st.completed, reaped);
	CHECK(st.pending == 0 && st.backlog == 0,
	      "round %d: pending %" PRIu64 ", backlog %" PRIu64 " at the end", r, st.pending,
	      st.backlog);
	CHECK(st.backlog_high_water <= MAX_PENDING,
	      "round %d: backlog_high_water %" PRIu64
	      " above max_pending %d: more than was ever admitted",
	      r, st.backlog_high_water, MAX_PENDING);
	CHECK(st.shared_calls == 0,
	      "round %d: %" PRIu64 " calls shared frames: the backlog held frames", r,
	      st.shared_calls);
	CHECK(st.backlog_high_water > MAX_PENDING / 2,
	      "round %d: backlog_high_water %" PRIu64
	      ": the backlog never filled, nothing was tested",
	      r, st.backlog_high_water);
	*hw = st.backlog_high_water;
	rc = knit_pool_destroy(pool);
	CHECK(rc == 0, "round %d: knit_pool_destroy: %d", r, rc);
}

int main(void)
{
	double scale = 1.0 / SAN_DIV;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e && *e && strtod(e, NULL) > 0)
		scale *= strtod(e, NULL);
	per_producer = (long)(20000 * scale);
	if (per_producer < 1000)
		per_producer = 1000;
	seen = calloc((size_t)(PRODUCERS * per_producer), 1);
	if (seen == NULL) {
		printf("FAIL: out of memory\n");
		return 1;
	}
	int over = 0;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t hw = 0;
		round_run(r, &hw);
		over += hw > MAX_PENDING;
		printf("round %d: backlog high water %" PRIu64 " (max_pending %d)\n", r, hw,
		       MAX_PENDING);
	}
	free(seen);
	printf("%d rounds of %d x %ld calls, %d with the mark above max_pending; %d failures\n",
	       ROUNDS, PRODUCERS, per_producer, over, atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
}
