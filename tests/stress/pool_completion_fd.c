/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_completion_fd.c - the completion eventfd under load (and
 * under ThreadSanitizer, which the Criterion tests cannot run under).
 *
 * An epoll(7) loop on the main thread waits for the fd and reaps with
 * knit_complete(..., 0) until it returns 0 (it never reads the fd), while
 * two threads enqueue with random gaps and a third makes knit_call calls
 * (their dispatcher passes race the loop's for the try-lock, and their
 * private completions must not make the fd readable). Checked per trial:
 * every enqueued call is reaped exactly once, no epoll_wait runs into its
 * hang guard while completions are owed (a stranded result), and once every
 * call is reaped and the workers settled the fd is not readable. At the end
 * an idle interval brings zero wake-ups.
 *
 * Topologies: steal, lanes, lanes with an inline lane. Size: 12 trials x
 * 2 x 800 calls natively, /20 under ThreadSanitizer, /8 under
 * AddressSanitizer. Exit 0 pass, 1 fail.
 */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "knitting.h"

#include "stress/stress.h"

#define SAN_DIV STRESS_SAN_DIV(20, 8)
#define TRIALS 12
#define ENQUEUERS 2
#define PER_THREAD_FULL 800
#define GUARD_MS 10000 /* hang guard of one epoll_wait while completions are owed */

static int t_add1(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = arg->i64 + 1;
	return 0;
}
static const knit_task_t tasks[] = {{"add1", t_add1, 0, 0}};

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

struct enq {
	knit_pool_t *pool;
	int base, n;
	uint64_t seed;
};

static void *enqueuer(void *arg)
{
	struct enq *e = arg;
	uint64_t s = e->seed;
	for (int i = 0; i < e->n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		unsigned k = (unsigned)(s >> 59); /* 0..31 */
		if (k < 3)
			sched_yield();
		else if (k == 3)
			sleep_us(50);
		int id = e->base + i;
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = id};
		int rc;
		while ((rc = knit_enqueue(e->pool, 0, &v, (void *)(intptr_t)(id + 1), NULL)) ==
		       -KNIT_EAGAIN)
			sleep_us(100);
		CHECK(rc == 0, "enqueue %d: %d", id, rc);
	}
	return NULL;
}

static atomic_int callers_stop;

static void *caller(void *arg)
{
	knit_pool_t *pool = arg;
	long i = 0;
	while (!atomic_load(&callers_stop)) {
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = i};
		knit_completion_t c;
		int rc = knit_call(pool, 0, &v, &c, 30ll * 1000 * 1000 * 1000);
		CHECK(rc == 0 && c.status == 0 && c.result.i64 == i + 1, "knit_call %ld: %d / %d",
		      i, rc, c.status);
		if (rc == 0)
			knit_completion_release(pool, &c);
		i++;
		sleep_us(20);
	}
	return NULL;
}

static int readable_now(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void run(const char *name, uint32_t topology, uint32_t inline_lane, int per_thread)
{
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.topology = topology;
	o.inline_lane = inline_lane;
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(&o, tasks, 1, &pool);
	if (rc != 0) {
		printf("FAIL: knit_pool_create: %d\n", rc);
		exit(1);
	}
	int fd = knit_completion_fd(pool);
	CHECK(fd >= 0, "knit_completion_fd: %d", fd);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll");
	const int total = ENQUEUERS * per_thread;
	uint8_t *seen = calloc((size_t)total, 1);
	long wakes = 0, empty_wakes = 0;
	int f0 = failures;
	for (int trial = 0; trial < TRIALS && failures == f0; trial++) {
		memset(seen, 0, (size_t)total);
		pthread_t th[ENQUEUERS], ct;
		struct enq e[ENQUEUERS];
		atomic_store(&callers_stop, 0);
		pthread_create(&ct, NULL, caller, pool);
		for (int i = 0; i < ENQUEUERS; i++) {
			e[i] = (struct enq){pool, i * per_thread, per_thread,
					    0x9e3779b97f4a7c15ull * (uint64_t)(trial * 7 + i + 1)};
			pthread_create(&th[i], NULL, enqueuer, &e[i]);
		}
		int got = 0;
		while (got < total && failures == f0) {
			struct epoll_event out;
			int n = epoll_wait(ep, &out, 1, GUARD_MS);
			if (n == 0) {
				FAIL("%s trial %d: %d of %d reaped, then the fd stayed unreadable "
				     "(a stranded result)",
				     name, trial, got, total);
				break;
			}
			if (n < 0)
				continue; /* EINTR */
			wakes++;
			knit_completion_t c[16];
			int k, here = 0;
			while ((k = knit_complete(pool, c, 16, 0)) > 0) {
				for (int i = 0; i < k; i++) {
					long id = (long)(intptr_t)c[i].user_data - 1;
					CHECK(id >= 0 && id < total && c[i].status == 0 &&
						      c[i].result.i64 == id + 1,
					      "%s: completion %ld: status %d", name, id,
					      c[i].status);
					if (id >= 0 && id < total) {
						CHECK(!seen[id], "%s: call %ld reaped twice", name,
						      id);
						seen[id] = 1;
					}
					knit_completion_release(pool, &c[i]);
				}
				here += k;
			}
			CHECK(k == 0, "%s: knit_complete: %d", name, k);
			empty_wakes += here == 0;
			got += here;
		}
		for (int i = 0; i < ENQUEUERS; i++)
			pthread_join(th[i], NULL);
		atomic_store(&callers_stop, 1);
		pthread_join(ct, NULL);
		if (failures != f0)
			break;
		/* Settle: a worker may still be between its last publish and
		 * its fd update; the fd must then be clear. */
		sleep_us(20000);
		CHECK(!readable_now(fd), "%s trial %d: fd readable after every call was reaped",
		      name, trial);
	}
	struct epoll_event out;
	CHECK(epoll_wait(ep, &out, 1, 300) == 0, "%s: an idle pool woke the event loop", name);
	printf("%s: %d trials x %d calls, %ld wake-ups (%ld found nothing: contention with the "
	       "other threads)\n",
	       name, TRIALS, total, wakes, empty_wakes);
	close(ep);
	free(seen);
	CHECK(knit_stop(pool, KNIT_STOP_DRAIN, 30ll * 1000 * 1000 * 1000) == 0, "%s: stop", name);
	CHECK(knit_pool_destroy(pool) == 0, "%s: destroy", name);
}

int main(void)
{
	long scale = 1;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e != NULL && atol(e) > 0)
		scale = atol(e);
	int per_thread = (int)(PER_THREAD_FULL * scale / SAN_DIV);
	if (per_thread < 10)
		per_thread = 10;
	run("steal", KNIT_TOPOLOGY_STEAL, KNIT_INLINE_OFF, per_thread);
	run("lanes", KNIT_TOPOLOGY_LANES, KNIT_INLINE_OFF, per_thread);
	run("lanes+inline", KNIT_TOPOLOGY_LANES, KNIT_INLINE_LAST, per_thread);
	if (failures) {
		printf("FAIL: %d failure(s)\n", failures);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
