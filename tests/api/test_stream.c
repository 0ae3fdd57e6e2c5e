/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_stream.c - a stream: one thread enqueues, another reaps
 * with knit_complete(..., -1), both on the same CPU, the worker on another.
 * While the producer keeps enqueuing, the blocked reaper gives it the CPU
 * instead of sleeping on the doorbell: it arms the doorbell (and is rung)
 * far fewer times than there are calls. Counted from the pool statistics,
 * never timed. Every call still ends in exactly one completion.
 */
#include "api/kt.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define CALLS 2000
/* The producer's own work between two enqueues, longer than the reaper's
 * pre-sleep spin, so a reaper that sleeps has time to arm each time. */
#define PACE_NS 60000

struct stream {
	knit_pool_t *pool;
	int cpu;
	int64_t sum;
	int got;
};

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof s, &s), 0);
}

static void *producer(void *arg)
{
	struct stream *st = arg;
	pin(st->cpu);
	const uint32_t echo = kt_id(st->pool, "echo");
	for (int i = 1; i <= CALLS; i++) {
		const int64_t t0 = kt_now_ns();
		while (kt_now_ns() - t0 < PACE_NS)
			; /* busy: the producer stays runnable on the shared CPU */
		kt_enq(st->pool, echo, kt_i64(i), NULL);
	}
	return NULL;
}

static void *reaper(void *arg)
{
	struct stream *st = arg;
	pin(st->cpu);
	knit_completion_t out[64];
	while (st->got < CALLS) {
		int n = knit_complete(st->pool, out, 64, -1);
		cr_assert_gt(n, 0, "knit_complete: %d", n);
		for (int i = 0; i < n; i++) {
			cr_assert_eq(out[i].status, 0);
			st->sum += out[i].result.i64;
			knit_completion_release(st->pool, &out[i]);
		}
		st->got += n;
	}
	return NULL;
}

KT(stream, reaper_beside_producer_is_not_rung_per_call)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	cr_assert_eq(sched_getaffinity(0, sizeof s, &s), 0);
	int cpus[2], found = 0;
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
		if (CPU_ISSET(c, &s))
			cpus[found++] = c;
	if (found < 2) {
		printf("SKIP: needs two usable CPUs\n");
		fflush(stdout);
		cr_skip_test("needs two usable CPUs");
	}
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.cpu_mask[cpus[1] / 64] = 1ull << (cpus[1] % 64); /* the worker alone */
	struct stream st = {.pool = kt_pool(&o), .cpu = cpus[0]};
	pthread_t tp, tr;
	cr_assert_eq(pthread_create(&tr, NULL, reaper, &st), 0);
	cr_assert_eq(pthread_create(&tp, NULL, producer, &st), 0);
	pthread_join(tp, NULL);
	pthread_join(tr, NULL);
	cr_assert_eq(st.got, CALLS);
	cr_assert_eq(st.sum, (int64_t)CALLS * (CALLS + 1) / 2);
	knit_pool_stats_t ps;
	kt_stats(st.pool, &ps);
	printf("stream: %d calls, %llu doorbell arms, %llu doorbell wakes\n", CALLS,
	       (unsigned long long)ps.doorbell_arms, (unsigned long long)ps.doorbell_wakes);
	/* Sleeping per call would arm about CALLS times. */
	cr_assert_lt(ps.doorbell_arms, CALLS / 10,
		     "the reaper armed the doorbell %llu times for %d calls",
		     (unsigned long long)ps.doorbell_arms, CALLS);
	kt_destroy(st.pool);
}
