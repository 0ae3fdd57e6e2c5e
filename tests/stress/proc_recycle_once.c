/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/proc_recycle_once.c - every enqueued call ends in exactly one
 * completion on a process pool that recycles its workers all through the
 * load (recycle_calls: a fiftieth of the calls, recycle_age_ms 30 natively), with one worker
 * process killed with SIGKILL in the middle (it may be serving, or retiring with its successor
 * waiting).
 *
 * Two host threads enqueue "echo" calls (i64 scalars and byte strings, some
 * inline, some through the arena) on two knit-worker processes; a third
 * reaps and, once a third of the calls completed, kills the process that
 * serves worker lane 1 now. Every completion must be the first for its
 * call; status 0 must carry the echoed argument; the only other status
 * allowed is -KNIT_ECRASHED, for calls the killed worker had started (one
 * lane's worth at most on lanes, one call on steal). A recycle fails none:
 * at the end the stats show exactly one crash (the kill), recycles by calls
 * (and, as the machine's speed has it, by age), every boot beyond the first two workers a successor
 * or the one respawn, the pool still serving; stop(DRAIN) acknowledges and destroy leaves no child.
 * Run on the lanes and the steal topology.
 *
 * Size: 100,000 calls natively, /20 under ThreadSanitizer, /10 under
 * AddressSanitizer, times KNIT_STRESS_SCALE. Exit 0/1/77.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
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

static uint32_t ncalls;
static uint32_t echo_id;
static atomic_uint done_count;
static atomic_uchar *done;
static atomic_uint crashed;
static atomic_int killed;
static knit_pool_t *pool;
static int64_t t_end;

static uint8_t pat(uint32_t call, size_t i) { return (uint8_t)(call * 29 + i * 5 + 3); }

static size_t size_of(uint32_t call)
{
	switch (call % 16) {
	case 0:
		return 3000 + call % 5000; /* the arena */
	case 1:
	case 2:
		return 100 + call % 300; /* inline */
	default:
		return 0; /* an i64 */
	}
}

static void *producer(void *arg)
{
	const uint32_t first = (uint32_t)(uintptr_t)arg;
	uint8_t *buf = malloc(8192);
	for (uint32_t c = first; c < ncalls; c += 2) {
		knit_value_t v;
		memset(&v, 0, sizeof v);
		const size_t n = size_of(c);
		if (n == 0) {
			v.type = KNIT_VALUE_I64;
			v.i64 = c;
		} else {
			for (size_t i = 0; i < n; i++)
				buf[i] = pat(c, i);
			v.type = KNIT_VALUE_BYTES;
			v.data = buf;
			v.len = n;
		}
		knit_ticket_t t;
		int rc;
		while ((rc = knit_enqueue(pool, echo_id, &v, (void *)(uintptr_t)(c + 1), &t)) ==
		       -KNIT_EAGAIN) {
			if (now_ns() > t_end) {
				FAIL("enqueue stuck on a full backlog");
				free(buf);
				return NULL;
			}
			sched_yield();
		}
		CHECK(rc == 0, "enqueue %u: %s", c, knit_strerror(rc));
	}
	free(buf);
	return NULL;
}

static void check_one(const knit_completion_t *k)
{
	const uintptr_t ud = (uintptr_t)k->user_data;
	if (ud == 0 || ud > ncalls) {
		FAIL("completion with a foreign user_data %" PRIuPTR, ud);
		return;
	}
	const uint32_t c = (uint32_t)(ud - 1);
	if (atomic_fetch_add(&done[c], 1) != 0) {
		FAIL("call %u completed twice", c);
		return;
	}
	if (k->status == -KNIT_ECRASHED) {
		atomic_fetch_add(&crashed, 1);
		return;
	}
	if (k->status != 0) {
		FAIL("call %u: status %s", c, knit_strerror(k->status));
		return;
	}
	const size_t n = size_of(c);
	if (n == 0) {
		CHECK(k->result.type == KNIT_VALUE_I64 && k->result.i64 == c, "call %u: wrong i64",
		      c);
		return;
	}
	if (k->result.type != KNIT_VALUE_BYTES || k->result.len != n) {
		FAIL("call %u: wrong bytes (type %u len %zu, want %zu)", c, k->result.type,
		     k->result.len, n);
		return;
	}
	const uint8_t *d = k->result.data;
	for (size_t i = 0; i < n; i++)
		if (d[i] != pat(c, i)) {
			FAIL("call %u: byte %zu differs", c, i);
			return;
		}
}

static void *reaper(void *arg)
{
	(void)arg;
	knit_completion_t out[64];
	while (atomic_load(&done_count) < ncalls) {
		if (now_ns() > t_end) {
			FAIL("reaped %u of %u before the bound", atomic_load(&done_count), ncalls);
			break;
		}
		const int n = knit_complete(pool, out, 64, 100 * 1000 * 1000);
		if (n < 0) {
			FAIL("knit_complete: %s", knit_strerror(n));
			break;
		}
		for (int i = 0; i < n; i++) {
			check_one(&out[i]);
			knit_completion_release(pool, &out[i]);
		}
		const unsigned total = atomic_fetch_add(&done_count, (unsigned)n) + (unsigned)n;
		if (!atomic_load(&killed) && total >= ncalls / 3) {
			atomic_store(&killed, 1);
			/* Whoever serves lane 1 now (its pid changes with each
			 * recycle; one that left a moment ago is looked up
			 * again). Bounded. */
			int ok = 0;
			for (int tries = 0; tries < 5000 && !ok; tries++) {
				knit_pool_stats_t st;
				memset(&st, 0, sizeof st);
				st.size = sizeof st;
				CHECK(knit_pool_stats(pool, &st, sizeof st) == 0, "stats");
				const pid_t victim = (pid_t)st.worker[1].pid;
				if (victim > 0 && st.worker[1].state == KNIT_WORKER_SERVING)
					ok = kill(victim, SIGKILL) == 0;
				if (!ok) {
					struct timespec ts = {0, 1000 * 1000};
					nanosleep(&ts, NULL);
				}
			}
			CHECK(ok, "found no worker 1 to kill");
		}
	}
	return NULL;
}

static int run(uint32_t topology, const char *worker, const char *lib)
{
	const char *name = topology == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
	memset(done, 0, ncalls);
	atomic_store(&done_count, 0);
	atomic_store(&crashed, 0);
	atomic_store(&killed, 0);
	t_end = now_ns() + BOUND_NS;

	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.park_ms = 60000;
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.task_library = lib;
	o.worker_path = worker;
	o.topology = topology;
	o.recycle_calls = ncalls / 50;   /* 2000 natively */
	o.recycle_age_ms = 30 * SAN_DIV; /* 30 ms natively */
	int rc = knit_pool_create(&o, NULL, 0, &pool);
	if (rc != 0) {
		printf("FAIL: %s: create: %s\n", name, knit_strerror(rc));
		return 1;
	}
	echo_id = (uint32_t)knit_pool_task_id(pool, "echo");

	pthread_t th[3];
	pthread_create(&th[0], NULL, reaper, NULL);
	pthread_create(&th[1], NULL, producer, (void *)(uintptr_t)0);
	pthread_create(&th[2], NULL, producer, (void *)(uintptr_t)1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);

	for (uint32_t c = 0; c < ncalls; c++)
		CHECK(atomic_load(&done[c]) == 1, "call %u: %u completions", c,
		      atomic_load(&done[c]));
	/* Still serving, on both lanes, through the lines too. */
	knit_completion_t k;
	for (int i = 0; i < 200; i++) {
		knit_value_t v;
		memset(&v, 0, sizeof v);
		v.type = KNIT_VALUE_I64;
		v.i64 = i;
		rc = knit_call(pool, echo_id, &v, &k, 10ll * 1000 * 1000 * 1000);
		CHECK(rc == 0 && k.status == 0 && k.result.i64 == i, "call after the load: %s",
		      knit_strerror(rc != 0 ? rc : k.status));
	}
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	CHECK(knit_pool_stats(pool, &st, sizeof st) == 0, "stats");
	const uint64_t rec = st.recycles_calls + st.recycles_rss + st.recycles_age;
	/* One crash (the kill); a recycle is none. */
	CHECK(st.crashes == 1 && st.respawns == 1, "crashes %" PRIu64 " respawns %" PRIu64,
	      st.crashes, st.respawns);
	/* By age too, usually: how many is the machine's (not asserted). */
	CHECK(st.recycles_calls >= 1, "%s: no recycle by calls", name);
	/* Every boot: the two first workers, a successor per recycle, the
	 * respawn (unless a waiting successor took the lane over), a successor
	 * that failed or was dropped, and the successors booting now. */
	CHECK(st.spawns >= 2 + rec && st.spawns <= 2 + rec + 1 + st.recycle_failures + 2,
	      "spawns %" PRIu64 " recycles %" PRIu64 " failures %" PRIu64, st.spawns, rec,
	      st.recycle_failures);
	CHECK(st.pending == 0, "pending %" PRIu64, st.pending);
	if (topology == KNIT_TOPOLOGY_STEAL)
		CHECK(atomic_load(&crashed) <= 1, "steal: %u calls failed with the killed worker",
		      atomic_load(&crashed));
	CHECK(atomic_load(&crashed) <= 32, "%s: %u calls failed with the killed worker", name,
	      atomic_load(&crashed));
	CHECK(knit_stop(pool, KNIT_STOP_DRAIN, 10ll * 1000 * 1000 * 1000) == 0, "stop(DRAIN)");
	knit_pool_destroy(pool);
	CHECK(stress_children(NULL) == 0, "children left after destroy");
	printf("%s: %u calls, %" PRIu64 " recycles (%" PRIu64 " by calls, %" PRIu64
	       " by age), %u failed with the killed worker, %d failures\n",
	       name, ncalls, rec, st.recycles_calls, st.recycles_age, atomic_load(&crashed),
	       atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
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
	ncalls = (uint32_t)(100000.0 * scale / SAN_DIV);
	if (ncalls < 3000)
		ncalls = 3000;
	done = calloc(ncalls, 1);
	int rc = run(KNIT_TOPOLOGY_LANES, worker, lib);
	if (rc == 0)
		rc = run(KNIT_TOPOLOGY_STEAL, worker, lib);
	free(done);
	return rc;
}
