/* SPDX-License-Identifier: MIT */
/*
 * tests/examples/demo.c - libknitting in one screen (`make demo`).
 *
 * A pool of two worker threads runs three tasks: "fnv1a" (hash a string),
 * "primes" (count the primes below n) and "shout" (upper-case a string).
 * Two host threads enqueue a batch each; the main thread reaps every
 * completion, checks it against the same computation done locally, and
 * prints a table of the first calls. Then the pool is stopped with
 * acknowledgement from every worker and its statistics are printed.
 * Exits 0 only if every call completed with the right result.
 */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <knitting.h>

/* ---- the tasks (run on worker threads) --------------------------------------- */

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int64_t count_primes(int64_t n)
{
	int64_t count = 0;
	for (int64_t i = 2; i < n; i++) {
		int prime = 1;
		for (int64_t d = 2; d * d <= i; d++)
			if (i % d == 0) {
				prime = 0;
				break;
			}
		count += prime;
	}
	return count;
}

static int task_fnv1a(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	if (arg->type != KNIT_VALUE_STRING)
		return 22; /* -> status -KNIT_ETASK, error code 22 */
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)fnv1a(arg->data, arg->len);
	return 0;
}

static int task_primes(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	if (arg->type != KNIT_VALUE_I64 || arg->i64 < 0)
		return 22;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = count_primes(arg->i64);
	return 0;
}

static int task_shout(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	if (arg->type != KNIT_VALUE_STRING)
		return 22;
	/* Build the result in the pool's memory: shipped without a copy. */
	char *out = knit_ctx_alloc(ctx, arg->len ? arg->len : 1);
	if (!out)
		return 12;
	for (size_t i = 0; i < arg->len; i++)
		out[i] = (char)toupper(((const unsigned char *)arg->data)[i]);
	ret->type = KNIT_VALUE_STRING;
	ret->data = out;
	ret->len = arg->len;
	return 0;
}

static const knit_task_t tasks[] = {
	{"primes", task_primes, 0, 0},
	{"fnv1a", task_fnv1a, 0, 0},
	{"shout", task_shout, 0, 0},
};

/* ---- the calls --------------------------------------------------------------------- */

#define PER_THREAD 500
#define SHOWN 6 /* rows of the table per thread */

static const char *words[] = {"knitting", "shared memory", "futex",        "lock2",
			      "doorbell", "park and wake", "hello, world", "worker pool"};

struct call {
	int thread;
	uint32_t task;
	int64_t n;        /* primes */
	const char *word; /* fnv1a, shout */
	int done;
	int ok;
	char shown[48];
};

static struct call calls[2 * PER_THREAD];
static knit_pool_t *pool;
static int id_fnv1a, id_primes, id_shout;

static void *host_thread(void *p)
{
	int t = (int)(intptr_t)p;
	for (int i = 0; i < PER_THREAD; i++) {
		int k = t * PER_THREAD + i;
		struct call *c = &calls[k];
		knit_value_t v = {0};
		c->thread = t;
		switch ((i + t) % 3) {
		case 0:
			c->task = (uint32_t)id_fnv1a;
			c->word = words[(i * 3 + t) % 8];
			v.type = KNIT_VALUE_STRING, v.data = c->word, v.len = strlen(c->word);
			break;
		case 1:
			c->task = (uint32_t)id_primes;
			c->n = 1000 + 1000 * ((i * 7 + t) % 50);
			v.type = KNIT_VALUE_I64, v.i64 = c->n;
			break;
		default:
			c->task = (uint32_t)id_shout;
			c->word = words[(i * 5 + t) % 8];
			v.type = KNIT_VALUE_STRING, v.data = c->word, v.len = strlen(c->word);
			break;
		}
		int rc;
		while ((rc = knit_enqueue(pool, c->task, &v, c, NULL)) == -KNIT_EAGAIN)
			; /* backlog full: the main thread is reaping; try again */
		if (rc != 0) {
			fprintf(stderr, "enqueue: %s\n", knit_strerror(rc));
			return (void *)1;
		}
	}
	return NULL;
}

static void check(struct call *c, const knit_completion_t *done)
{
	c->done++;
	if (done->status != 0) {
		snprintf(c->shown, sizeof c->shown, "error: %s", knit_strerror(done->status));
		return;
	}
	const knit_value_t *r = &done->result;
	if (c->task == (uint32_t)id_fnv1a) {
		c->ok = r->type == KNIT_VALUE_I64 &&
			(uint64_t)r->i64 == fnv1a(c->word, strlen(c->word));
		snprintf(c->shown, sizeof c->shown, "%016" PRIx64, (uint64_t)r->i64);
	} else if (c->task == (uint32_t)id_primes) {
		c->ok = r->type == KNIT_VALUE_I64 && r->i64 == count_primes(c->n);
		snprintf(c->shown, sizeof c->shown, "%" PRId64, r->i64);
	} else {
		char want[64];
		size_t n = strlen(c->word);
		for (size_t i = 0; i <= n; i++)
			want[i] = (char)toupper((unsigned char)c->word[i]);
		c->ok = r->type == KNIT_VALUE_STRING && r->len == n &&
			memcmp(r->data, want, n + 1) == 0;
		snprintf(c->shown, sizeof c->shown, "\"%s\"", (const char *)r->data);
	}
}

/*
 * --linger SECONDS: after the batch, keep making one cold call (the worker
 * has parked in between) every 20 ms for that long, so that knit-trace(8)
 * can be attached to a live pool:
 *     build/tests/examples/demo --linger 10 &
 *     sudo build/tools/knit-trace -p $! -d 5
 */
static int linger(int seconds, int *made)
{
	struct timespec gap = {0, 20 * 1000 * 1000};
	struct timespec t0, t;
	int calls = 0, bad = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("lingering %d s: one cold call every 20 ms (pid %d; attach knit-trace -p %d)\n",
	       seconds, (int)getpid(), (int)getpid());
	fflush(stdout);
	do {
		knit_value_t arg = {.type = KNIT_VALUE_STRING, .data = "cold", .len = 4};
		knit_completion_t c;
		nanosleep(&gap, NULL);
		int rc = knit_call(pool, (uint32_t)id_shout, &arg, &c, -1);
		bad += rc != 0 || c.status != 0;
		if (rc == 0)
			knit_completion_release(pool, &c);
		calls++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < seconds);
	printf("lingered: %d cold calls, %d failed\n\n", calls, bad);
	*made = calls;
	return bad;
}

int main(int argc, char **argv)
{
	int linger_s = 0;
	if (argc == 3 && strcmp(argv[1], "--linger") == 0)
		linger_s = atoi(argv[2]);
	else if (argc != 1) {
		fprintf(stderr, "usage: %s [--linger SECONDS]\n", argv[0]);
		return 2;
	}
	knit_pool_options_t opts = {.size = sizeof opts, .workers = 2};
	int rc = knit_pool_create(&opts, tasks, 3, &pool);
	if (rc != 0) {
		fprintf(stderr, "knit_pool_create: %s\n", knit_strerror(rc));
		return 1;
	}
	id_fnv1a = knit_pool_task_id(pool, "fnv1a");
	id_primes = knit_pool_task_id(pool, "primes");
	id_shout = knit_pool_task_id(pool, "shout");
	printf("libknitting %u.%u.%u: a pool of 2 worker threads, tasks (ids in name order): "
	       "fnv1a=%d primes=%d shout=%d\n\n",
	       knit_version() >> 16, (knit_version() >> 8) & 0xff, knit_version() & 0xff, id_fnv1a,
	       id_primes, id_shout);

	pthread_t th[2];
	for (int t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, host_thread, (void *)(intptr_t)t);

	/* Reap every completion on the main thread while the two hosts enqueue. */
	int reaped = 0, bad_status = 0;
	knit_completion_t out[32];
	while (reaped < 2 * PER_THREAD) {
		int n = knit_complete(pool, out, 32, 5ll * 1000 * 1000 * 1000);
		if (n <= 0) {
			fprintf(stderr, "knit_complete: %s\n",
				n ? knit_strerror(n) : "nothing for 5 s");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			check(out[i].user_data, &out[i]);
			bad_status += out[i].status != 0;
			knit_completion_release(pool, &out[i]);
		}
		reaped += n;
	}
	int failed = 0;
	for (int t = 0; t < 2; t++) {
		void *r;
		pthread_join(th[t], &r);
		failed |= r != NULL;
	}

	printf("  %-6s %-7s %-22s %-22s %s\n", "host", "task", "input", "result", "check");
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < SHOWN; i++) {
			struct call *c = &calls[t * PER_THREAD + i];
			char in[40];
			if (c->word)
				snprintf(in, sizeof in, "\"%s\"", c->word);
			else
				snprintf(in, sizeof in, "n = %" PRId64, c->n);
			const char *name = c->task == (uint32_t)id_fnv1a    ? "fnv1a"
					   : c->task == (uint32_t)id_primes ? "primes"
									    : "shout";
			printf("  %-6d %-7s %-22s %-22s %s\n", c->thread, name, in, c->shown,
			       c->ok && c->done == 1 ? "ok" : "WRONG");
		}
	int good = 0;
	for (int k = 0; k < 2 * PER_THREAD; k++)
		good += calls[k].ok && calls[k].done == 1;
	printf("  ... %d calls from 2 host threads: %d correct, each completed exactly once: "
	       "%s\n\n",
	       2 * PER_THREAD, good, good == 2 * PER_THREAD ? "yes" : "NO");

	int lingered = 0;
	if (linger_s > 0)
		failed |= linger(linger_s, &lingered) != 0;

	rc = knit_stop(pool, KNIT_STOP_DRAIN, 10ll * 1000 * 1000 * 1000);
	printf("knit_stop(DRAIN): %s (every worker acknowledged)\n",
	       rc == 0 ? "ok" : knit_strerror(rc));
	knit_completion_t c;
	int after = knit_complete(pool, &c, 1, 0);
	printf("knit_complete after the stop: %s\n\n", knit_strerror(after));

	knit_pool_stats_t st = {.size = sizeof st};
	knit_pool_stats(pool, &st, sizeof st);
	printf("stats: enqueued %" PRIu64 ", completed %" PRIu64 ", backlog high water %" PRIu64
	       ", doorbell arms %" PRIu64 " / wakes %" PRIu64 "\n",
	       st.enqueued, st.completed, st.backlog_high_water, st.doorbell_arms,
	       st.doorbell_wakes);
	printf("  %-5s %8s %8s %11s %15s %9s %14s\n", "lane", "calls", "parks", "wakes sent",
	       "wakes received", "watchdog", "doorbell rings");
	int watchdog = 0;
	for (uint32_t l = 0; l < st.lanes; l++) {
		printf("  %-5u %8" PRIu64 " %8" PRIu64 " %11" PRIu64 " %15" PRIu64 " %9" PRIu64
		       " %14" PRIu64 "\n",
		       l, st.lane[l].calls, st.lane[l].parks, st.lane[l].wakes_sent,
		       st.lane[l].wakes_received, st.lane[l].watchdog_expiries,
		       st.lane[l].doorbell_rings);
		watchdog += st.lane[l].watchdog_expiries != 0;
	}
	int drc = knit_pool_destroy(pool);

	int ok = !failed && bad_status == 0 && good == 2 * PER_THREAD && rc == 0 &&
		 after == -KNIT_ECLOSED && st.enqueued == (uint64_t)(2 * PER_THREAD + lingered) &&
		 drc == 0;
	printf("\n%s\n", ok ? "demo: every call completed correctly" : "demo: FAILED");
	(void)watchdog;
	return ok ? 0 : 1;
}
