/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_exactly_once.c - every enqueued call ends in exactly one
 * completion, under load.
 *
 * Two host threads enqueue calls (2 million natively) with random payload
 * sizes (mostly small, some over the 512-byte inline area, a few large),
 * random per-call timeouts and random NOW cancels of their own recent
 * tickets, one with knit_enqueue_ex, the other in bursts of random sizes
 * with knit_enqueue_many (accepted in part when the backlog, kept small,
 * is full; the rest enqueued again); a third thread reaps. Every completion is counted per call (it
 * must be the first for that call), its status must be one the call could
 * have (0; -KNIT_ETIMEDOUT only for a call with a timeout; -KNIT_ECANCELED
 * only for a call that was cancelled), and a status 0 result is checked
 * against a hash of the input computed on the host (the tasks return a hash
 * of their input, or echo the bytes back). At the end every accepted call
 * has exactly one completion, stop(DRAIN) acknowledges, knit_complete says
 * -KNIT_ECLOSED, and no worker's park watchdog fired.
 *
 * Uses only the public ABI (linked with the static test build).
 * Size: 2,000,000 calls natively, /20 under ThreadSanitizer, /10 under
 * AddressSanitizer; the environment variable KNIT_STRESS_SCALE multiplies
 * that (e.g. 0.05 for a quick run). KNIT_TEST_SEED replaces the seed.
 * Exit 0 pass, 1 fail. Nothing is timed except safety bounds.
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

#define BOUND_NS (120ll * 1000 * 1000 * 1000) /* safety bound of the whole run */

static uint64_t fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- tasks ----------------------------------------------------------------------- */

static int t_hash(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)fnv1a(arg->data, arg->len);
	return 0;
}

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

static int t_slow(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	struct timespec ts = {0, 2 * 1000 * 1000};
	nanosleep(&ts, NULL);
	return t_hash(ctx, arg, ret);
}

enum { T_ECHO = 0, T_HASH = 1, T_SLOW = 2 }; /* name order: echo, hash, slow */
static const knit_task_t tasks[] = {
	{"slow", t_slow, 0, 0},
	{"hash", t_hash, 0, 0},
	{"echo", t_echo, 0, 0},
};

/* ---- per-call bookkeeping -------------------------------------------------------- */

enum { F_TIMEOUT = 1, F_CANCELLED = 2, F_ECHO = 4 };
struct call {
	uint64_t hash;      /* of the input bytes */
	atomic_uchar flags; /* F_* */
	atomic_uchar completions;
};

static struct call *calls;
static long ncalls; /* per producer: calls [id * ncalls, (id + 1) * ncalls) */
static atomic_long accepted, completed;
static atomic_int producers_done;
static knit_pool_t *pool;
static uint8_t *source; /* random bytes payloads are cut from */
#define SOURCE_BYTES (1u << 20)

static atomic_long st_ok, st_timeout, st_cancel, cancels_ok, cancels_notfound, eagain;

struct producer {
	int id;
	uint64_t seed;
};

/* A burst of knit_enqueue_many being built (producer 1). */
#define BURST_MAX 100
struct burst {
	knit_request_t req[BURST_MAX];
	knit_value_t arg[BURST_MAX];
	knit_call_options_t opt[BURST_MAX];
	knit_ticket_t t[BURST_MAX];
	long idx[BURST_MAX];
	int n;
};

/* Enqueue the burst, again from the first refused request while the backlog
 * is full (bounded); 0, or -1 after a failure. Each accepted call goes into
 * the recent tickets (*ri counts them). */
static int burst_flush(struct producer *pr, struct burst *b, knit_ticket_t *recent,
		       long *recent_idx, long *ri, int64_t end)
{
	int done = 0;
	while (done < b->n) {
		int k = knit_enqueue_many(pool, b->req + done, (uint32_t)(b->n - done),
					  b->t + done);
		if (k == -KNIT_EAGAIN) {
			atomic_fetch_add(&eagain, 1);
			if (now_ns() > end) {
				FAIL("producer %d: backlog never drained", pr->id);
				return -1;
			}
			sched_yield();
			continue;
		}
		if (k <= 0 || k > b->n - done) {
			FAIL("producer %d: knit_enqueue_many: %d (%s)", pr->id, k,
			     knit_strerror(k));
			return -1;
		}
		for (int j = done; j < done + k; j++) {
			if (b->t[j] == 0)
				FAIL("ticket 0");
			recent[*ri % 64] = b->t[j];
			recent_idx[*ri % 64] = b->idx[j];
			(*ri)++;
		}
		atomic_fetch_add(&accepted, k);
		done += k;
	}
	b->n = 0;
	return 0;
}

static void *producer(void *p)
{
	struct producer *pr = p;
	uint64_t rs = pr->seed;
	knit_ticket_t recent[64] = {0};
	long recent_idx[64] = {0};
	long ri = 0; /* producer 1: accepted so far (its recent tickets) */
	const int many = pr->id == 1;
	struct burst *b = many ? calloc(1, sizeof *b) : NULL;
	int burst_size = 1;
	int64_t end = now_ns() + BOUND_NS;
	for (long i = 0; i < ncalls; i++) {
		long idx = pr->id * ncalls + i;
		uint64_t r = rng_next(&rs);
		size_t len;
		unsigned k = (unsigned)(r % 1000);
		if (k < 900)
			len = (size_t)(r >> 20) % 65; /* inline */
		else if (k < 990)
			len = 400 + (size_t)(r >> 20) % 1200; /* around the inline boundary */
		else if (k < 999)
			len = 4096 + (size_t)(r >> 20) % 60000;
		else
			len = 200000 + (size_t)(r >> 20) % 300000;
		size_t off = (size_t)(r >> 40) % (SOURCE_BYTES - len);
		knit_value_t v = {.type = KNIT_VALUE_BYTES, .data = source + off, .len = len};
		calls[idx].hash = fnv1a(source + off, len);
		uint32_t task = (r >> 8) % 20 == 0 ? T_ECHO : T_HASH;
		if ((r >> 12) % 5000 == 0)
			task = T_SLOW;
		unsigned char fl = task == T_ECHO ? F_ECHO : 0;
		knit_call_options_t o = {sizeof o, 0, 0, 0};
		if ((r >> 16) % 200 == 0) {
			o.timeout_ms = 1;
			fl |= F_TIMEOUT;
		}
		atomic_store(&calls[idx].flags, fl);
		if (many) {
			if (b->n == 0)
				burst_size = 1 + (int)((r >> 44) % BURST_MAX);
			const int j = b->n++;
			b->arg[j] = v;
			b->opt[j] = o;
			memset(&b->req[j], 0, sizeof b->req[j]);
			b->req[j].task = task;
			b->req[j].arg = &b->arg[j];
			b->req[j].user_data = (void *)(intptr_t)(idx + 1);
			b->req[j].opts =
				(r >> 52) % 2 ? &b->opt[j] : (fl & F_TIMEOUT ? &b->opt[j] : NULL);
			b->t[j] = 0;
			b->idx[j] = idx;
			if (b->n < burst_size && i + 1 < ncalls)
				continue;
			if (burst_flush(pr, b, recent, recent_idx, &ri, end) != 0)
				goto out;
			if ((r >> 24) % 4 == 0 && ri >= 64) {
				int j2 = (int)((r >> 32) % 64);
				long cidx = recent_idx[j2];
				atomic_fetch_or(&calls[cidx].flags, F_CANCELLED);
				int crc = knit_cancel(pool, recent[j2], KNIT_CANCEL_NOW);
				if (crc == 0)
					atomic_fetch_add(&cancels_ok, 1);
				else if (crc == -KNIT_ENOTFOUND)
					atomic_fetch_add(&cancels_notfound, 1);
				else
					FAIL("knit_cancel: %d", crc);
			}
			continue;
		}
		knit_ticket_t t = 0;
		int rc;
		while ((rc = knit_enqueue_ex(pool, task, &v, (void *)(intptr_t)(idx + 1), &o,
					     &t)) == -KNIT_EAGAIN) {
			atomic_fetch_add(&eagain, 1);
			if (now_ns() > end) {
				FAIL("producer %d: backlog never drained", pr->id);
				goto out;
			}
			sched_yield();
		}
		if (rc != 0) {
			FAIL("producer %d: enqueue %ld: %d (%s)", pr->id, i, rc, knit_strerror(rc));
			goto out;
		}
		if (t == 0)
			FAIL("ticket 0");
		atomic_fetch_add(&accepted, 1);
		recent[i % 64] = t;
		recent_idx[i % 64] = idx;
		/* now and then cancel a recent call of ours */
		if ((r >> 24) % 100 == 0 && i >= 64) {
			int j = (int)((r >> 32) % 64);
			long cidx = recent_idx[j];
			/* mark first: the completion may race the cancel's return */
			atomic_fetch_or(&calls[cidx].flags, F_CANCELLED);
			int crc = knit_cancel(pool, recent[j], KNIT_CANCEL_NOW);
			if (crc == 0)
				atomic_fetch_add(&cancels_ok, 1);
			else if (crc == -KNIT_ENOTFOUND)
				atomic_fetch_add(&cancels_notfound, 1);
			else
				FAIL("knit_cancel: %d", crc);
		}
	}
out:
	free(b);
	atomic_fetch_add(&producers_done, 1);
	return NULL;
}

static void check_completion(const knit_completion_t *c)
{
	long idx = (long)(intptr_t)c->user_data - 1;
	if (idx < 0 || idx >= 2 * ncalls) {
		FAIL("completion with foreign user_data %p", c->user_data);
		return;
	}
	struct call *k = &calls[idx];
	unsigned prev = atomic_fetch_add(&k->completions, 1);
	if (prev != 0)
		FAIL("call %ld (ticket %" PRIu64 ") completed %u times", idx, c->ticket, prev + 1);
	unsigned fl = atomic_load(&k->flags);
	switch (c->status) {
	case 0:
		atomic_fetch_add(&st_ok, 1);
		if (fl & F_ECHO) {
			CHECK(c->result.type == KNIT_VALUE_BYTES, "call %ld: echo type %u", idx,
			      c->result.type);
			CHECK(fnv1a(c->result.data, c->result.len) == k->hash,
			      "call %ld: echoed bytes differ (len %zu)", idx, c->result.len);
		} else {
			CHECK(c->result.type == KNIT_VALUE_I64, "call %ld: type %u", idx,
			      c->result.type);
			CHECK((uint64_t)c->result.i64 == k->hash, "call %ld: hash mismatch", idx);
		}
		break;
	case -KNIT_ETIMEDOUT:
		atomic_fetch_add(&st_timeout, 1);
		CHECK(fl & F_TIMEOUT, "call %ld without a timeout timed out", idx);
		break;
	case -KNIT_ECANCELED:
		atomic_fetch_add(&st_cancel, 1);
		CHECK(fl & F_CANCELLED, "call %ld cancelled but nobody cancelled it", idx);
		break;
	default:
		FAIL("call %ld: status %d (%s)", idx, c->status, knit_strerror(c->status));
	}
}

static void *reaper(void *p)
{
	(void)p;
	knit_completion_t out[64];
	int64_t end = now_ns() + BOUND_NS;
	for (;;) {
		if (atomic_load(&producers_done) == 2 &&
		    atomic_load(&completed) >= atomic_load(&accepted))
			break;
		if (now_ns() > end) {
			FAIL("reaper: %ld of %ld completions after the safety bound",
			     atomic_load(&completed), atomic_load(&accepted));
			break;
		}
		int rc = knit_complete(pool, out, 64, 20 * 1000 * 1000);
		if (rc < 0) {
			FAIL("knit_complete: %d", rc);
			break;
		}
		for (int i = 0; i < rc; i++) {
			check_completion(&out[i]);
			knit_completion_release(pool, &out[i]);
		}
		atomic_fetch_add(&completed, rc);
	}
	return NULL;
}

int main(void)
{
	double scale = 1.0 / SAN_DIV;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e && *e && strtod(e, NULL) > 0)
		scale *= strtod(e, NULL);
	long total = (long)(2000000 * scale);
	if (total < 1000)
		total = 1000;
	ncalls = total / 2;
	uint64_t seed = 0x6b6e697474696e67ull;
	const char *se = getenv("KNIT_TEST_SEED");
	if (se && *se)
		seed = strtoull(se, NULL, 0);
	printf("pool_exactly_once: %ld calls from 2 producers, seed 0x%" PRIx64 "\n", 2 * ncalls,
	       seed);

	calls = calloc((size_t)(2 * ncalls), sizeof *calls);
	source = malloc(SOURCE_BYTES);
	if (!calls || !source) {
		printf("FAIL: out of memory\n");
		return 1;
	}
	uint64_t s = seed;
	for (size_t i = 0; i < SOURCE_BYTES; i += 8) {
		uint64_t r = rng_next(&s);
		memcpy(source + i, &r, 8);
	}

	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.max_pending = 2048; /* small: bursts are often accepted in part */
	int rc = knit_pool_create(&o, tasks, 3, &pool);
	if (rc != 0) {
		printf("FAIL: knit_pool_create: %d\n", rc);
		return 1;
	}
	if (knit_pool_task_id(pool, "echo") != T_ECHO ||
	    knit_pool_task_id(pool, "hash") != T_HASH ||
	    knit_pool_task_id(pool, "slow") != T_SLOW) {
		printf("FAIL: task ids are not the name order\n");
		return 1;
	}

	pthread_t th[3];
	struct producer pr[2] = {{0, seed ^ 1}, {1, seed ^ 2}};
	pthread_create(&th[2], NULL, reaper, NULL);
	pthread_create(&th[0], NULL, producer, &pr[0]);
	pthread_create(&th[1], NULL, producer, &pr[1]);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);

	/* Nothing more may arrive; then stop and drain to ECLOSED. */
	knit_completion_t c;
	int64_t quiet_end = now_ns() + 200 * 1000 * 1000;
	while (now_ns() < quiet_end) {
		rc = knit_complete(pool, &c, 1, 10 * 1000 * 1000);
		if (rc > 0) {
			check_completion(&c);
			FAIL("an extra completion after every call completed (call %ld)",
			     (long)(intptr_t)c.user_data - 1);
			knit_completion_release(pool, &c);
		}
	}
	long missing = 0;
	CHECK(atomic_load(&accepted) == 2 * ncalls, "only %ld of %ld calls accepted",
	      atomic_load(&accepted), 2 * ncalls);
	for (long i = 0; i < 2 * ncalls; i++)
		if (atomic_load(&calls[i].completions) != 1)
			missing++;
	CHECK(missing == 0, "%ld calls without exactly one completion", missing);

	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	rc = knit_pool_stats(pool, &st, sizeof st);
	CHECK(rc == 0, "knit_pool_stats: %d", rc);
	CHECK(st.enqueued == (uint64_t)atomic_load(&accepted),
	      "stats.enqueued %" PRIu64 " != accepted %ld", st.enqueued, atomic_load(&accepted));
	CHECK(st.completed == (uint64_t)atomic_load(&completed),
	      "stats.completed %" PRIu64 " != reaped %ld", st.completed, atomic_load(&completed));
	CHECK(st.pending == 0, "stats.pending %" PRIu64, st.pending);
	for (uint32_t l = 0; l < st.lanes; l++)
		CHECK(st.lane[l].watchdog_expiries == 0, "lane %u: watchdog_expiries %" PRIu64, l,
		      st.lane[l].watchdog_expiries);

	rc = knit_stop(pool, KNIT_STOP_DRAIN, 30ll * 1000 * 1000 * 1000);
	CHECK(rc == 0, "knit_stop: %d", rc);
	rc = knit_complete(pool, &c, 1, 1000 * 1000 * 1000);
	CHECK(rc == -KNIT_ECLOSED, "knit_complete after stop: %d", rc);
	rc = knit_pool_destroy(pool);
	CHECK(rc == 0, "knit_pool_destroy: %d", rc);

	printf("accepted %ld, completed %ld: ok %ld, timed out %ld, cancelled %ld; cancels %ld ok "
	       "/ %ld not found; "
	       "EAGAIN retries %ld; backlog high water %" PRIu64 "\n",
	       atomic_load(&accepted), atomic_load(&completed), atomic_load(&st_ok),
	       atomic_load(&st_timeout), atomic_load(&st_cancel), atomic_load(&cancels_ok),
	       atomic_load(&cancels_notfound), atomic_load(&eagain), st.backlog_high_water);
	for (uint32_t l = 0; l < st.lanes; l++)
		printf("lane %u: calls %" PRIu64 " parks %" PRIu64 " wakes sent %" PRIu64
		       " received %" PRIu64 "\n",
		       l, st.lane[l].calls, st.lane[l].parks, st.lane[l].wakes_sent,
		       st.lane[l].wakes_received);
	CHECK(atomic_load(&st_cancel) <= atomic_load(&cancels_ok),
	      "more ECANCELED completions than successful cancels");
	CHECK(atomic_load(&cancels_ok) == atomic_load(&st_cancel),
	      "%ld cancels returned 0 but %ld calls completed ECANCELED", atomic_load(&cancels_ok),
	      atomic_load(&st_cancel));
	free(calls);
	free(source);
	int f = atomic_load(&failures);
	printf("%s (%d failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
