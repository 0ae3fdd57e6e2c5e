/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/proc_syncline.c - knit_call's fast path (the synchronous line)
 * on a process pool, with a worker process killed with SIGKILL in the middle
 * of the load.
 *
 * Three host threads make knit_call calls with no timeout (line calls when a
 * line is free, ticketed ones otherwise) on a pool of two knit-worker
 * processes: echoes of i64 scalars and of short byte strings (inline both
 * ways), and "alloc" results of 100 to 3000 bytes (through the line's spill
 * slot). Once a third of the calls returned, worker 1 is killed. Every call
 * must return 0 with either its own right result or -KNIT_ECRASHED (a call
 * the killed worker held); none may hang (a safety bound fails the run). At
 * the end: some calls took the line, the stats show one crash and one
 * respawn and nothing pending, the pool still serves on both lanes,
 * stop(DRAIN) acknowledges, and destroy leaves no child.
 *
 * Size: 60,000 calls natively, /20 under ThreadSanitizer, /10 under
 * AddressSanitizer, times KNIT_STRESS_SCALE. Exit 0/1/77.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knitting.h"

#include "stress/stress.h"

#define SAN_DIV STRESS_SAN_DIV(20, 10)
#define BOUND_NS (240ll * 1000 * 1000 * 1000) /* safety bound of the whole run */
#define CALLERS 3

static uint32_t ncalls;
static uint32_t echo_id, alloc_id;
static atomic_uint returned;
static atomic_uint crashed;
static atomic_int killed;
static pid_t victim;
static knit_pool_t *pool;
static int64_t t_end;

static uint8_t pat(uint32_t call, size_t i) { return (uint8_t)(call * 31 + i * 7 + 1); }

/* Call c: 0 an i64 echo, 1 a bytes echo (inline), 2 an alloc (spill). */
static int kind_of(uint32_t c) { return c % 3 == 0 ? 0 : c % 3 == 1 ? 1 : 2; }

static void one_call(uint32_t c, uint8_t *buf)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	const int kind = kind_of(c);
	size_t n = 0;
	if (kind == 0) {
		v.type = KNIT_VALUE_I64;
		v.i64 = c;
	} else if (kind == 1) {
		n = 1 + c % 80;
		for (size_t i = 0; i < n; i++)
			buf[i] = pat(c, i);
		v.type = KNIT_VALUE_BYTES;
		v.data = buf;
		v.len = n;
	} else {
		n = 100 + c % 2900;
		v.type = KNIT_VALUE_I64;
		v.i64 = (int64_t)n;
	}
	knit_completion_t k;
	const int rc = knit_call(pool, kind == 2 ? alloc_id : echo_id, &v, &k, 0);
	if (rc != 0) {
		FAIL("call %u: knit_call: %s", c, knit_strerror(rc));
		return;
	}
	if (k.status == -KNIT_ECRASHED) {
		atomic_fetch_add(&crashed, 1);
		CHECK(atomic_load(&killed), "call %u crashed before the kill", c);
	} else if (k.status != 0) {
		FAIL("call %u: status %s", c, knit_strerror(k.status));
	} else if (kind == 0) {
		CHECK(k.result.type == KNIT_VALUE_I64 && k.result.i64 == c, "call %u: wrong i64",
		      c);
	} else if (k.result.type != KNIT_VALUE_BYTES || k.result.len != n) {
		FAIL("call %u: wrong bytes (type %u len %zu, want %zu)", c, k.result.type,
		     k.result.len, n);
	} else {
		const uint8_t *d = k.result.data;
		for (size_t i = 0; i < n; i++)
			if (d[i] != (kind == 1 ? pat(c, i) : (uint8_t)('a' + i % 26))) {
				FAIL("call %u: byte %zu differs", c, i);
				break;
			}
	}
	knit_completion_release(pool, &k);
}

static void *caller(void *arg)
{
	const uint32_t first = (uint32_t)(uintptr_t)arg;
	uint8_t buf[128];
	for (uint32_t c = first; c < ncalls; c += CALLERS) {
		if (now_ns() > t_end) {
			FAIL("calls still going at the bound");
			break;
		}
		one_call(c, buf);
		const unsigned total = atomic_fetch_add(&returned, 1) + 1;
		int no = 0;
		if (total >= ncalls / 3 && atomic_compare_exchange_strong(&killed, &no, 1))
			CHECK(kill(victim, SIGKILL) == 0, "kill the worker: %s", strerror(errno));
	}
	return NULL;
}

static int count_children(void) { return stress_children(NULL); }

/* The pid of lane w's worker (a call pinned to its lane). */
static pid_t lane_pid(uint32_t w)
{
	knit_value_t none;
	memset(&none, 0, sizeof none);
	knit_call_options_t co = {sizeof co, KNIT_CALL_LANE, 0, w};
	knit_ticket_t t;
	knit_completion_t k;
	if (knit_enqueue_ex(pool, (uint32_t)knit_pool_task_id(pool, "pid"), &none, NULL, &co, &t) !=
		    0 ||
	    knit_complete(pool, &k, 1, 10ll * 1000 * 1000 * 1000) != 1 || k.status != 0)
		return -1;
	return (pid_t)k.result.i64;
}

int main(void)
{
	char worker[PATH_MAX + 64], lib[PATH_MAX + 64];
	const int found = stress_proc_paths(worker, lib);
	if (found != 0)
		return found;
	double scale = 1.0;
	const char *s = getenv("KNIT_STRESS_SCALE");
	if (s != NULL && atof(s) > 0)
		scale = atof(s);
	ncalls = (uint32_t)(60000.0 * scale / SAN_DIV);
	if (ncalls < 3000)
		ncalls = 3000;
	t_end = now_ns() + BOUND_NS;
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.park_ms = 60000;
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.topology = KNIT_TOPOLOGY_LANES; /* lane_pid() pins calls to a lane */
	o.task_library = lib;
	o.worker_path = worker;
	int rc = knit_pool_create(&o, NULL, 0, &pool);
	if (rc != 0) {
		printf("FAIL: create: %s\n", knit_strerror(rc));
		return 1;
	}
	echo_id = (uint32_t)knit_pool_task_id(pool, "echo");
	alloc_id = (uint32_t)knit_pool_task_id(pool, "alloc");
	victim = lane_pid(1);
	if (victim <= 0) {
		printf("FAIL: the pid call\n");
		return 1;
	}

	pthread_t th[CALLERS];
	for (uintptr_t i = 0; i < CALLERS; i++)
		pthread_create(&th[i], NULL, caller, (void *)i);
	for (int i = 0; i < CALLERS; i++)
		pthread_join(th[i], NULL);

	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	CHECK(knit_pool_stats(pool, &st, sizeof st) == 0, "stats");
	CHECK(atomic_load(&returned) == ncalls, "%u of %u calls returned", atomic_load(&returned),
	      ncalls);
	CHECK(st.sync_calls > 0, "no call took the line");
	CHECK(st.crashes == 1 && st.respawns == 1 && st.spawns == 3,
	      "crashes %" PRIu64 " respawns %" PRIu64 " spawns %" PRIu64, st.crashes, st.respawns,
	      st.spawns);
	CHECK(st.pending == 0, "pending %" PRIu64, st.pending);
	CHECK(st.enqueued == st.completed, "enqueued %" PRIu64 " completed %" PRIu64, st.enqueued,
	      st.completed);
	/* Still serving, on both lanes. */
	CHECK(lane_pid(0) > 0 && lane_pid(1) > 0, "both lanes serve after the kill");
	uint8_t buf[128];
	for (uint32_t c = 0; c < 30; c++)
		one_call(c, buf);
	CHECK(knit_stop(pool, KNIT_STOP_DRAIN, 10ll * 1000 * 1000 * 1000) == 0, "stop(DRAIN)");
	knit_pool_destroy(pool);
	CHECK(count_children() == 0, "children left after destroy");
	printf("%u calls (%" PRIu64
	       " on the line), %u failed with the killed worker (-KNIT_ECRASHED), %d failures\n",
	       ncalls, st.sync_calls, atomic_load(&crashed), atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
}
