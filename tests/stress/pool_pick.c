/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_pick.c - knit_complete_tickets and knit_wait_idle under
 * load (and under ThreadSanitizer, which the Criterion tests cannot run
 * under).
 *
 * Per trial: two enqueuer threads each enqueue PER calls and wait for each
 * 8th of their own calls by ticket (knit_complete_tickets, one ticket or a
 * set of 4), while two reaper threads reap everything else with
 * knit_complete and the main thread calls knit_wait_idle between short
 * sleeps. Checked: every call is delivered exactly once (to an enqueuer or a
 * reaper), a picked completion is the one asked for, knit_complete_tickets
 * answers only 1..max or -KNIT_ENOTFOUND (another thread took it), and once
 * knit_wait_idle returns 0 no call enqueued before it is still reapable.
 *
 * Topologies: steal and lanes, 2 workers. Size: 6 trials x 2 x 2000 calls
 * natively, /10 under ThreadSanitizer, /4 under AddressSanitizer. Exit 0
 * pass, 1 fail.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knitting.h"

#include "stress/stress.h"

#define SAN_DIV STRESS_SAN_DIV(10, 4)
#define TRIALS 6
#define PER_FULL 2000
#define MAXN (2 * PER_FULL)

static int t_id(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}
static const knit_task_t tasks[] = {{"id", t_id, 0, 0}};

static knit_pool_t *pool;
static int per;
static atomic_int seen[MAXN];
static atomic_int total;
static atomic_int failed;
static atomic_int enq_done;
static knit_ticket_t tickets[MAXN];
static atomic_int published[2]; /* tickets[k*PER .. +published[k]) are enqueued */

static void count(const knit_completion_t *c)
{
	int i = (int)c->result.i64;
	if (c->status != 0 || i < 0 || i >= 2 * per || (intptr_t)c->user_data != i) {
		fprintf(stderr, "bad completion: status %d value %d\n", c->status, i);
		atomic_store(&failed, 1);
		return;
	}
	if (atomic_fetch_add(&seen[i], 1) != 0) {
		fprintf(stderr, "call %d delivered twice\n", i);
		atomic_store(&failed, 1);
	}
	atomic_fetch_add(&total, 1);
}

static void *enqueuer(void *arg)
{
	const int me = (int)(intptr_t)arg;
	for (int j = 0; j < per; j++) {
		const int i = me * per + j;
		knit_value_t a = {.type = KNIT_VALUE_I64, .i64 = i};
		int rc;
		while ((rc = knit_enqueue(pool, 0, &a, (void *)(intptr_t)i, &tickets[i])) ==
		       -KNIT_EAGAIN)
			sched_yield();
		if (rc != 0) {
			fprintf(stderr, "knit_enqueue: %d\n", rc);
			atomic_store(&failed, 1);
			break;
		}
		atomic_store(&published[me], j + 1);
		if (j % 8 == 7) {
			knit_completion_t out[4];
			const unsigned n = (j % 16 == 15) ? 4 : 1;
			rc = knit_complete_tickets(pool, &tickets[i - (int)n + 1], n, out, 4,
						   2000000000LL);
			if (rc == -KNIT_ENOTFOUND)
				continue;
			if (rc < 0 || rc > (int)n) {
				fprintf(stderr, "knit_complete_tickets: %d\n", rc);
				atomic_store(&failed, 1);
				continue;
			}
			for (int k = 0; k < rc; k++) {
				int want = 0;
				for (unsigned m = 0; m < n; m++)
					want |= out[k].ticket == tickets[i - (int)n + 1 + (int)m];
				if (!want) {
					fprintf(stderr, "picked a completion not asked for\n");
					atomic_store(&failed, 1);
				}
				count(&out[k]);
			}
		}
	}
	atomic_fetch_add(&enq_done, 1);
	return NULL;
}

static void *reaper(void *arg)
{
	(void)arg;
	knit_completion_t out[8];
	const int64_t end = now_ns() + 60LL * 1000000000;
	while (atomic_load(&total) < 2 * per && !atomic_load(&failed) && now_ns() < end) {
		int rc = knit_complete(pool, out, 8, 2000000);
		if (rc < 0) {
			fprintf(stderr, "knit_complete: %d\n", rc);
			atomic_store(&failed, 1);
			break;
		}
		for (int k = 0; k < rc; k++)
			count(&out[k]);
	}
	return NULL;
}

static int trial(uint32_t topology)
{
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.topology = topology;
	if (knit_pool_create(&o, tasks, 1, &pool) != 0) {
		FAIL("knit_pool_create");
		return 1;
	}
	for (int i = 0; i < 2 * per; i++)
		atomic_store(&seen[i], 0);
	atomic_store(&total, 0);
	atomic_store(&enq_done, 0);
	atomic_store(&published[0], 0);
	atomic_store(&published[1], 0);
	pthread_t e[2], r[2];
	for (int k = 0; k < 2; k++) {
		if (pthread_create(&r[k], NULL, reaper, NULL) != 0 ||
		    pthread_create(&e[k], NULL, enqueuer, (void *)(intptr_t)k) != 0) {
			FAIL("pthread_create");
			exit(1);
		}
	}
	int waits = 0;
	while (atomic_load(&enq_done) < 2 && !atomic_load(&failed)) {
		int before[2] = {atomic_load(&published[0]), atomic_load(&published[1])};
		int rc = knit_wait_idle(pool, 30LL * 1000000000);
		CHECK(rc == 0, "knit_wait_idle: %d", rc);
		if (rc != 0)
			atomic_store(&failed, 1);
		for (int k = 0; k < 2; k++)
			for (int j = 0; j < before[k]; j++) {
				knit_completion_t c;
				rc = knit_complete_tickets(pool, &tickets[k * per + j], 1, &c, 1,
							   0);
				CHECK(rc == -KNIT_ENOTFOUND,
				      "call %d reapable after knit_wait_idle (%d)", k * per + j,
				      rc);
			}
		waits++;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	for (int k = 0; k < 2; k++) {
		pthread_join(e[k], NULL);
		pthread_join(r[k], NULL);
	}
	CHECK(!atomic_load(&failed), "a thread failed");
	CHECK(atomic_load(&total) == 2 * per, "%d of %d calls delivered", atomic_load(&total),
	      2 * per);
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	CHECK(knit_pool_stats(pool, &s, sizeof s) == 0, "stats");
	CHECK(s.completed == (uint64_t)(2 * per) && s.pending == 0,
	      "stats: completed %llu pending %llu", (unsigned long long)s.completed,
	      (unsigned long long)s.pending);
	CHECK(knit_pool_destroy(pool) == 0, "destroy");
	(void)waits;
	return 0;
}

int main(void)
{
	per = PER_FULL / SAN_DIV;
	for (int t = 0; t < TRIALS; t++) {
		trial(KNIT_TOPOLOGY_STEAL);
		trial(KNIT_TOPOLOGY_LANES);
		if (atomic_load(&failures) != 0)
			return 1;
	}
	printf("pool_pick: %d trials x 2 topologies x %d calls, each delivered once\n", TRIALS,
	       2 * per);
	return 0;
}
