/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_steal.c - a work-stealing pool under load: 4 workers
 * (oversubscribed on a 2-core machine, so any unbounded spin in the claim
 * protocol or the park path shows up as a stall), 2 million calls natively
 * split over three load shapes (uniform, random and heavy-tailed task cost):
 *   flat    every call costs 10 units;
 *   random  uniform 2..20 units (0.2x - 2x);
 *   heavy   90% cost 10 units, 10% cost 200 (20x).
 * A unit is a short busy loop (no sleeping, no clock), so the whole program
 * takes well under a minute natively.
 *
 * Exactly once: every call carries its sequence number; its completion must
 * be the first for that number, status 0, and its result the task's hash of
 * (sequence, cost) computed again on the host; the sum of all results is
 * compared with the sum expected (checksum). Per shape: no park watchdog
 * fired (a lost wake), and wakes sent == wakes received per worker (exactly
 * one futex wake per claimed park). Only the heavy shape must spread: a
 * parked worker is woken when the pending calls hold more work than the
 * awake workers finish before a wake lands (src/spin.h, "claims and
 * wakes"), so the flat and random shapes' cheap calls may stay with one
 * worker by design (a run on the 2-vCPU VM: 666634 calls on one worker, 32
 * on another, none on two that never woke); their spread is printed.
 *
 * The issue's test, "no worker stays idle while calls wait", measured by
 * counts, not time (phase_blocked): one worker is held inside a gate task
 * (published alone and started before anything else is enqueued), then K
 * heavy-shape calls are enqueued and ALL K must complete while the gate is
 * still closed. With per-worker round-robin lanes this fails: the calls the
 * balancer put in the blocked worker's own request lane (up to its 32
 * in-flight slots) sit behind the gate and can only complete after it opens,
 * so the count of completions before the gate opens stays below K (the
 * phase gives up after GATE_BOUND_NS; run with POOL_STEAL_LANES=1 to see:
 * "only 1635 of 1666 calls completed"). With
 * stealing the blocked worker claims nothing while its run queue is busy, so
 * the three other workers take every region. Afterwards the share of calls
 * per worker over the whole heavy shape must not be degenerate: each of the
 * 4 workers ran at least 1/32 of them (an eighth of a fair share: see
 * SHARE_DIV for what the wake estimate leaves a worker). Under
 * ThreadSanitizer the bound is 1/64: each call costs far more there and the
 * shape has a twentieth of the calls, so one time slice is a larger part of
 * the run; a busy machine then left one worker with ~1/20 (1 run in 8 at
 * 1/16, seen with other builds running beside it).
 *
 * Size: 2,000,000 calls natively, /20 under ThreadSanitizer, /10 under
 * AddressSanitizer; KNIT_STRESS_SCALE multiplies (e.g. 0.05 for a quick
 * run). Exit 0 pass, 1 fail. Nothing is timed except safety bounds.
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
#define WORKERS 4
#define BOUND_NS (120ll * 1000 * 1000 * 1000)     /* safety bound per phase */
#define GATE_BOUND_NS (20ll * 1000 * 1000 * 1000) /* blocked phase: calls waiting at most */
#define UNIT_ITERS 64                             /* busy-loop rounds per cost unit */
#define WINDOW 512                                /* calls outstanding at most */

enum shape { FLAT, RANDOM, HEAVY };
static const char *const shape_name[] = {"flat", "random", "heavy"};

static atomic_int gate_open, gate_started;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* arg = seq << 16 | cost units; result = mix(arg) after cost * UNIT_ITERS
 * rounds of work that the compiler cannot drop. */
static int t_work(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	uint64_t a = (uint64_t)arg->i64;
	uint32_t cost = (uint32_t)(a & 0xFFFF);
	volatile uint64_t sink = a;
	for (uint32_t i = 0; i < cost * UNIT_ITERS; i++)
		sink = sink * 31 + i;
	(void)sink;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)mix(a);
	return 0;
}

/* Holds its worker until the host opens the gate (bounded). */
static int t_gate(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	atomic_store(&gate_started, 1);
	int64_t end = now_ns() + BOUND_NS;
	while (!atomic_load(&gate_open) && now_ns() < end) {
		struct timespec ts = {0, 200 * 1000};
		nanosleep(&ts, NULL);
	}
	ret->type = KNIT_VALUE_I64;
	ret->i64 = 7;
	return 0;
}

static const knit_task_t tasks[] = {{"gate", t_gate, 0, 0}, {"work", t_work, 0, 0}};
static uint32_t id_gate, id_work;
static int lanes_mode; /* POOL_STEAL_LANES=1 (see make_pool) */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t cost_of(enum shape sh, uint64_t *rng)
{
	uint64_t r = rng_next(rng);
	switch (sh) {
	case FLAT:
		return 10;
	case RANDOM:
		return 2 + (uint32_t)(r % 19); /* 2..20 = 0.2x..2x */
	default:
		return r % 10 == 0 ? 200 : 10; /* 10% at 20x */
	}
}

static knit_pool_t *make_pool(void)
{
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = WORKERS; /* AUTO: stealing for 2..31 workers */
	/* POOL_STEAL_LANES=1: the same program on round-robin lanes, to see the
	 * idle-worker assertions fail (a manual check that they can). */
	const char *lanes = getenv("POOL_STEAL_LANES");
	if (lanes && *lanes == '1') {
		o.topology = KNIT_TOPOLOGY_LANES;
		lanes_mode = 1;
	}
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(&o, tasks, 2, &pool);
	if (rc != 0) {
		printf("FAIL: knit_pool_create: %d\n", rc);
		exit(1);
	}
	id_gate = (uint32_t)knit_pool_task_id(pool, "gate");
	id_work = (uint32_t)knit_pool_task_id(pool, "work");
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	if (knit_pool_stats(pool, &s, sizeof s) != 0 ||
	    s.topology != (o.topology == KNIT_TOPOLOGY_LANES ? KNIT_TOPOLOGY_LANES
							     : KNIT_TOPOLOGY_STEAL)) {
		printf("FAIL: AUTO with %d workers is not a stealing pool (topology %u)\n", WORKERS,
		       s.topology);
		exit(1);
	}
	return pool;
}

static void stats_of(knit_pool_t *pool, knit_pool_stats_t *s)
{
	memset(s, 0, sizeof *s);
	s->size = sizeof *s;
	CHECK(knit_pool_stats(pool, s, sizeof *s) == 0, "stats");
}

/* Run n calls of a shape: exactly once by sequence and checksum. seen must
 * hold n bytes. Returns the completions reaped. */
static long run_calls(knit_pool_t *pool, enum shape sh, long n, uint64_t seed, uint8_t *seen)
{
	uint64_t rng = seed;
	uint64_t want_sum = 0, got_sum = 0;
	long sent = 0, done = 0;
	int64_t end = now_ns() + BOUND_NS;
	knit_completion_t c[64];
	while (done < n && failures == 0) {
		while (sent < n && sent - done < WINDOW) {
			uint64_t arg = ((uint64_t)sent << 16) | cost_of(sh, &rng);
			knit_value_t v;
			memset(&v, 0, sizeof v);
			v.type = KNIT_VALUE_I64;
			v.i64 = (int64_t)arg;
			int rc = knit_enqueue(pool, id_work, &v, (void *)(uintptr_t)(sent + 1),
					      NULL);
			if (rc == -KNIT_EAGAIN)
				break;
			if (rc != 0) {
				FAIL("%s: enqueue %ld: %d", shape_name[sh], sent, rc);
				return done;
			}
			want_sum += mix(arg);
			sent++;
		}
		int got = knit_complete(pool, c, 64, 50ll * 1000 * 1000);
		if (got < 0) {
			FAIL("%s: knit_complete: %d", shape_name[sh], got);
			return done;
		}
		for (int i = 0; i < got; i++) {
			long k = (long)(uintptr_t)c[i].user_data - 1;
			if (k < 0 || k >= n) {
				FAIL("%s: completion for unknown call %ld", shape_name[sh], k);
				continue;
			}
			CHECK(seen[k] == 0, "%s: call %ld completed twice", shape_name[sh], k);
			seen[k] = 1;
			CHECK(c[i].status == 0, "%s: call %ld: status %d", shape_name[sh], k,
			      c[i].status);
			got_sum += (uint64_t)c[i].result.i64;
			knit_completion_release(pool, &c[i]);
		}
		done += got;
		if (now_ns() > end) {
			FAIL("%s: %ld of %ld calls completed within the safety bound",
			     shape_name[sh], done, n);
			return done;
		}
	}
	for (long k = 0; k < n && failures == 0; k++)
		CHECK(seen[k] == 1, "%s: call %ld never completed", shape_name[sh], k);
	CHECK(got_sum == want_sum, "%s: checksum %" PRIx64 " != %" PRIx64, shape_name[sh], got_sum,
	      want_sum);
	return done;
}

/* The least share of the heavy shape's calls each worker must run (1/N):
 * degenerate is a worker left out, not an uneven spread. The wake
 * estimate keeps the shape's cheap calls (nine in ten) with the awake
 * workers, so one worker runs most of them: over 30 native runs on the
 * 2-vCPU VM the least-used worker ran 5.9% (min), 6.5% (p10) and 7.6%
 * (median) of the calls, and 1/16 (6.25%) failed about one run in ten. */
#define SHARE_DIV (STRESS_TSAN ? 64 : 32)

/* Per-shape invariants from the stats (differences against before). */
static void check_shape(knit_pool_t *pool, enum shape sh, const knit_pool_stats_t *before, long n,
			int share)
{
	knit_pool_stats_t s;
	/* wakes_received is bumped by the worker after it wakes: settle first. */
	int64_t end = now_ns() + 2ll * 1000 * 1000 * 1000;
	for (;;) {
		stats_of(pool, &s);
		int settled = 1;
		for (uint32_t w = 0; w < s.workers; w++)
			settled &= s.lane[w].wakes_received == s.lane[w].wakes_sent;
		if (settled || now_ns() > end)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	uint64_t calls = 0;
	printf("%-7s", shape_name[sh]);
	for (uint32_t w = 0; w < s.workers; w++) {
		const knit_lane_stats_t *a = &before->lane[w], *b = &s.lane[w];
		uint64_t wc = b->calls - a->calls, cl = b->steal_claims - a->steal_claims;
		calls += wc;
		printf("  w%u: %" PRIu64 " calls %" PRIu64 " claims %" PRIu64 " conflicts %" PRIu64
		       " parks",
		       w, wc, cl, b->steal_conflicts - a->steal_conflicts, b->parks - a->parks);
		if (share)
			CHECK(wc > 0 && (cl > 0 || lanes_mode),
			      "%s: worker %u ran %" PRIu64 " calls in %" PRIu64
			      " claims (idle while calls waited)",
			      shape_name[sh], w, wc, cl);
		CHECK(b->watchdog_expiries == 0, "%s: worker %u: park watchdog fired (a lost wake)",
		      shape_name[sh], w);
		CHECK(b->wakes_sent == b->wakes_received,
		      "%s: worker %u: %" PRIu64 " wakes sent, %" PRIu64 " received", shape_name[sh],
		      w, b->wakes_sent, b->wakes_received);
		if (share)
			CHECK(wc * SHARE_DIV >= (uint64_t)n,
			      "%s: worker %u ran %" PRIu64 " of %ld calls (< 1/%d: degenerate)",
			      shape_name[sh], w, wc, n, SHARE_DIV);
	}
	printf("\n");
	CHECK(calls >= (uint64_t)n, "%s: workers ran %" PRIu64 " calls, %ld made", shape_name[sh],
	      calls, n);
}

/* The issue's test (see the file comment): all K calls complete while one
 * worker is held in the gate. */
static void phase_blocked(knit_pool_t *pool, long k, uint64_t seed)
{
	atomic_store(&gate_open, 0);
	atomic_store(&gate_started, 0);
	knit_ticket_t gt = 0;
	knit_value_t none;
	memset(&none, 0, sizeof none);
	int rc = knit_enqueue(pool, id_gate, &none, (void *)(uintptr_t)0, &gt);
	CHECK(rc == 0, "gate: enqueue: %d", rc);
	int64_t end = now_ns() + BOUND_NS;
	while (!atomic_load(&gate_started) && now_ns() < end) {
		knit_completion_t c;
		(void)knit_complete(pool, &c, 1, 1000 * 1000); /* nothing completes yet */
	}
	CHECK(atomic_load(&gate_started), "gate never started");
	end = now_ns() + GATE_BOUND_NS;
	uint8_t *seen = calloc((size_t)k, 1);
	uint64_t rng = seed;
	uint64_t want = 0, got_sum = 0;
	for (long i = 0; i < k; i++) {
		uint64_t arg = ((uint64_t)i << 16) | cost_of(HEAVY, &rng);
		knit_value_t v;
		memset(&v, 0, sizeof v);
		v.type = KNIT_VALUE_I64;
		v.i64 = (int64_t)arg;
		rc = knit_enqueue(pool, id_work, &v, (void *)(uintptr_t)(i + 1), NULL);
		if (rc != 0) {
			FAIL("blocked: enqueue %ld: %d", i, rc);
			break;
		}
		want += mix(arg);
	}
	long done = 0;
	while (done < k && failures == 0 && now_ns() < end) {
		knit_completion_t c[64];
		int got = knit_complete(pool, c, 64, 50ll * 1000 * 1000);
		if (got < 0) {
			FAIL("blocked: knit_complete: %d", got);
			break;
		}
		for (int i = 0; i < got; i++) {
			long x = (long)(uintptr_t)c[i].user_data - 1;
			if (x < 0 || x >= k || seen[x]) {
				FAIL("blocked: unexpected completion %ld (the gate must still be "
				     "closed)",
				     x);
				continue;
			}
			seen[x] = 1;
			CHECK(c[i].status == 0, "blocked: call %ld: status %d", x, c[i].status);
			got_sum += (uint64_t)c[i].result.i64;
			done++;
		}
	}
	/* The count: every call completed while a worker was held (with lanes,
	 * up to 32 would still be queued behind the gate). */
	CHECK(done == k,
	      "blocked: only %ld of %ld calls completed while one worker was busy (calls waited on "
	      "an "
	      "idle pool)",
	      done, k);
	CHECK(got_sum == want, "blocked: checksum");
	atomic_store(&gate_open, 1);
	knit_completion_t c;
	rc = knit_complete(pool, &c, 1, BOUND_NS);
	CHECK(rc == 1 && c.ticket == gt && c.status == 0, "gate completion: rc %d status %d", rc,
	      rc == 1 ? c.status : 0);
	printf("blocked: %ld calls completed while one of %d workers was held\n", done, WORKERS);
	free(seen);
}

int main(void)
{
	double scale = 1.0 / SAN_DIV;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e && *e && strtod(e, NULL) > 0)
		scale *= strtod(e, NULL);
	long total = (long)(2000000 * scale);
	if (total < 3000)
		total = 3000;
	uint64_t seed = 0x5eed5eedull;
	const char *se = getenv("KNIT_TEST_SEED");
	if (se && *se)
		seed = strtoull(se, NULL, 0);
	printf("pool_steal: %d workers, %ld calls over three shapes, seed %#" PRIx64 "\n", WORKERS,
	       total, seed);
	knit_pool_t *pool = make_pool();
	long per = total / 3;
	uint8_t *seen = malloc((size_t)per);
	for (int sh = FLAT; sh <= HEAVY && failures == 0; sh++) {
		knit_pool_stats_t before;
		stats_of(pool, &before);
		memset(seen, 0, (size_t)per);
		run_calls(pool, (enum shape)sh, per, seed + (uint64_t)sh, seen);
		if (failures == 0)
			check_shape(pool, (enum shape)sh, &before, per, sh == HEAVY);
	}
	free(seen);
	if (failures == 0)
		phase_blocked(pool, per / 20 < 200 ? 200 : per / 20, seed ^ 0xb10c);
	int rc = knit_stop(pool, KNIT_STOP_DRAIN, BOUND_NS);
	CHECK(rc == 0, "knit_stop: %d", rc);
	knit_completion_t c;
	CHECK(knit_complete(pool, &c, 1, 0) == -KNIT_ECLOSED, "complete after stop: not ECLOSED");
	CHECK(knit_pool_destroy(pool) == 0, "destroy");
	printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
