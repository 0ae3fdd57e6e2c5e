/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_no_lost_wake.c - park and wake workers 100,000 times with
 * random gaps and check that no wake was ever lost: the park watchdog never
 * fired (watchdog_expiries == 0 on every lane) and every call completed.
 *
 * Workers run with spin_us = KNIT_ZERO, so they park as soon as they are idle:
 * nearly every call is a cold call that needs the host's wake. Gaps between
 * calls are random: mostly none or tiny (the call lands while the worker is
 * on its way into the park handshake: the racy window), some long enough
 * that the worker is surely asleep. The default park_ms (1000) is the
 * watchdog: a lost wake would leave a worker asleep until it fires.
 *
 * Phase 1: one worker, knit_call (the host also sleeps on the doorbell, so a
 * lost doorbell ring shows as a call that never completes within its bound).
 * Phase 2: two workers, bursts of 1-4 knit_enqueue to random lanes then
 * knit_complete (the doorbell from both lanes).
 * Phase 3: as 1 with the doorbell off (the host polls; only worker wakes).
 *
 * Also checked: per lane, wakes_received == wakes_sent once quiet (each cold
 * call costs exactly one of each), and calls add up.
 * Size: 100,000 wakes natively, /20 under ThreadSanitizer, /10 under
 * AddressSanitizer, times KNIT_STRESS_SCALE. Exit 0 pass, 1 fail.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knitting.h"

#include "stress/stress.h"

#define SAN_DIV STRESS_SAN_DIV(20, 10)

#define CALL_BOUND_NS (10ll * 1000 * 1000 * 1000) /* a single call's safety bound */

static uint64_t rng_s = 0x6e6f6c6f73747761ull;
static uint64_t rng(void)
{
	uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A random gap: 60% none, 25% a few hundred ns of spinning, 10% a yield,
 * 5% a sleep of 50-500 us (the worker is asleep by then). */
static void gap(void)
{
	uint64_t r = rng();
	unsigned k = (unsigned)(r % 100);
	if (k < 60)
		return;
	if (k < 85) {
		int64_t end = now_ns() + (int64_t)((r >> 8) % 2000);
		while (now_ns() < end)
			;
		return;
	}
	if (k < 95) {
		sched_yield();
		return;
	}
	struct timespec ts = {0, (long)(50000 + (r >> 16) % 450000)};
	nanosleep(&ts, NULL);
}

static int t_add1(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = arg->i64 + 1;
	return 0;
}
static const knit_task_t tasks[] = {{"add1", t_add1, 0, 0}};

static uint32_t g_topology; /* KNIT_TOPOLOGY_AUTO unless a phase says */

static knit_pool_t *make(uint32_t workers, uint32_t doorbell)
{
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = workers;
	o.topology = g_topology;
	o.spin_us = KNIT_ZERO;
	o.park_ms = 1000; /* the default, explicitly: the watchdog under test */
	o.doorbell = doorbell;
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(&o, tasks, 1, &pool);
	if (rc != 0) {
		printf("FAIL: knit_pool_create: %d\n", rc);
		exit(1);
	}
	return pool;
}

static void finish(knit_pool_t *pool, const char *phase, long calls)
{
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	/* The watchdog first, before anything idles (an idle worker reaches
	 * park_ms legitimately). */
	CHECK(knit_pool_stats(pool, &s, sizeof s) == 0, "stats");
	for (uint32_t l = 0; l < s.workers; l++)
		CHECK(s.lane[l].watchdog_expiries == 0,
		      "%s: lane %u: watchdog fired %" PRIu64 " times (a lost wake)", phase, l,
		      s.lane[l].watchdog_expiries);
	/* wakes_received is bumped by the worker after it wakes: let it settle
	 * (bounded well below park_ms) before comparing. */
	int64_t end = now_ns() + 300ll * 1000 * 1000;
	for (;;) {
		CHECK(knit_pool_stats(pool, &s, sizeof s) == 0, "stats");
		int settled = 1;
		for (uint32_t l = 0; l < s.workers; l++)
			settled &= s.lane[l].wakes_received == s.lane[l].wakes_sent;
		if (settled || now_ns() > end)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	uint64_t sum = 0, wakes = 0, parks = 0;
	for (uint32_t l = 0; l < s.workers; l++) {
		CHECK(s.lane[l].wakes_received == s.lane[l].wakes_sent,
		      "%s: lane %u: %" PRIu64 " wakes sent, %" PRIu64 " received", phase, l,
		      s.lane[l].wakes_sent, s.lane[l].wakes_received);
		sum += s.lane[l].calls;
		wakes += s.lane[l].wakes_sent;
		parks += s.lane[l].parks;
	}
	CHECK(sum == (uint64_t)calls, "%s: lanes ran %" PRIu64 " calls, %ld made", phase, sum,
	      calls);
	CHECK(s.completed == (uint64_t)calls || s.completed == 0,
	      "%s: completed %" PRIu64 " of %ld", phase, s.completed, calls);
	printf("%s: %ld calls, %" PRIu64 " parks, %" PRIu64 " wakes, doorbell arms %" PRIu64
	       " wakes %" PRIu64 "\n",
	       phase, calls, parks, wakes, s.doorbell_arms, s.doorbell_wakes);
	int rc = knit_stop(pool, KNIT_STOP_DRAIN, 30ll * 1000 * 1000 * 1000);
	CHECK(rc == 0, "%s: knit_stop: %d", phase, rc);
	CHECK(knit_pool_destroy(pool) == 0, "destroy");
}

static void phase_call(long n, uint32_t doorbell, const char *name)
{
	knit_pool_t *pool = make(1, doorbell);
	int f0 = failures;
	for (long i = 0; i < n && failures == f0; i++) {
		gap();
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = i};
		knit_completion_t c;
		int rc = knit_call(pool, 0, &v, &c, CALL_BOUND_NS);
		if (rc != 0) {
			FAIL("%s: call %ld: %d", name, i, rc);
			break;
		}
		CHECK(c.status == 0, "%s: call %ld: status %d (a lost wake or ring)", name, i,
		      c.status);
		CHECK(c.status != 0 || c.result.i64 == i + 1, "%s: call %ld: result %" PRId64, name,
		      i, c.result.i64);
	}
	finish(pool, name, n);
}

/* steal = 0: two lanes, calls pinned at random (topology LANES); steal = 1:
 * a two-worker work-stealing pool (the host wakes one parked worker per
 * burst; the claimant hands the rest on). */
static void phase_bursts(long n, int steal)
{
	g_topology = steal ? KNIT_TOPOLOGY_STEAL : KNIT_TOPOLOGY_LANES;
	knit_pool_t *pool = make(2, 0);
	g_topology = KNIT_TOPOLOGY_AUTO;
	long done = 0, sent = 0;
	int f0 = failures;
	while (done < n && failures == f0) {
		gap();
		int burst = 1 + (int)(rng() % 4);
		if (burst > n - sent)
			burst = (int)(n - sent);
		for (int b = 0; b < burst; b++, sent++) {
			knit_call_options_t o = {sizeof o, steal ? 0u : KNIT_CALL_LANE, 0,
						 (uint32_t)(rng() % 2)};
			knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = sent};
			int rc = knit_enqueue_ex(pool, 0, &v, (void *)(intptr_t)(sent + 1), &o,
						 NULL);
			if (rc != 0) {
				FAIL("bursts: enqueue: %d", rc);
				return;
			}
		}
		long want = sent;
		int64_t end = now_ns() + CALL_BOUND_NS;
		while (done < want) {
			knit_completion_t c[4];
			int rc = knit_complete(pool, c, 4, 100 * 1000 * 1000);
			if (rc < 0) {
				FAIL("bursts: knit_complete: %d", rc);
				return;
			}
			for (int i = 0; i < rc; i++) {
				long k = (long)(intptr_t)c[i].user_data - 1;
				CHECK(c[i].status == 0 && c[i].result.i64 == k + 1,
				      "bursts: call %ld: %d", k, c[i].status);
			}
			done += rc;
			if (now_ns() > end) {
				FAIL("bursts: %ld of %ld calls completed within the bound (a lost "
				     "wake or ring)",
				     done, want);
				return;
			}
		}
	}
	finish(pool, steal ? "bursts (2 stealing workers)" : "bursts (2 lanes)", n);
}

int main(void)
{
	double scale = 1.0 / SAN_DIV;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e && *e && strtod(e, NULL) > 0)
		scale *= strtod(e, NULL);
	long total = (long)(100000 * scale);
	if (total < 300)
		total = 300;
	printf("pool_no_lost_wake: %ld calls in four phases\n", total);
	phase_call(total / 2, 0, "knit_call (doorbell on)");
	phase_bursts(total / 4, 0);
	phase_bursts(total / 4, 1);
	phase_call(total / 4, KNIT_DOORBELL_OFF, "knit_call (doorbell off)");
	printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
