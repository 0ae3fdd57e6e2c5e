/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/proc_exactly_once.c - every enqueued call ends in exactly one
 * completion on a process pool, also when a worker process is killed with
 * SIGKILL in the middle of the load.
 *
 * Two host threads enqueue calls of a task library's "echo" (i64 scalars and
 * byte strings of random sizes, some inline, some through the arena; one
 * thread one call at a time, the other in bursts whose calls may share a
 * frame, up to 64 to one: knit_enqueue_many(3)) on a
 * process pool of two knit-worker processes; a third thread reaps and, once a
 * third of the calls completed, kills one worker with SIGKILL (on lanes:
 * worker 1, 20 ms after a 200 ms "sleep" pinned to it, so the kill finds it
 * running with the load's calls queued behind it). Every
 * completion must be the first for its call; status 0 must carry the echoed
 * argument, the only other status allowed is -KNIT_ECRASHED (calls the killed
 * worker may have taken). At the end every call has one completion, the
 * stats show one crash and one respawn, the pool still serves, stop(DRAIN)
 * acknowledges, and destroy leaves no child process. The run is made twice.
 * On the lanes topology, -KNIT_ECRASHED is for calls the killed worker had
 * started (ran or was running, results not published), so at most one
 * lane's worth (32 frames, up to 64 calls each); the calls on its lane it had not started run
 * again, their arguments from the host's copies, so their echoes are checked like any other. On the
 * steal topology the killed worker held at most the one frame it had claimed and was running (every
 * call still waiting in the shared submit queue completes OK).
 *
 * knit-worker and the task library are found relative to this program
 * (build/tests/stress -> build/libexec/knitting, build/tests/lib); without
 * them it skips. Size: 200,000 calls natively, /20 under ThreadSanitizer,
 * /10 under AddressSanitizer, times KNIT_STRESS_SCALE. Exit 0/1/77.
 */
#include <dirent.h>
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
static uint32_t sleep_id;
static unsigned extra;           /* 1 on lanes: the pinned sleep (user data ncalls + 1) */
static atomic_uint sleeper_done; /* its completions */
static atomic_uint done_count;
static atomic_uchar *done;
static atomic_uint crashed;
static pid_t victim;
static atomic_int killed;
static knit_pool_t *pool;
static int64_t t_end;

static uint8_t pat(uint32_t call, size_t i) { return (uint8_t)(call * 31 + i * 7 + 1); }

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

/* Producer 1: the same calls in bursts of up to 64 (knit_enqueue_many), so
 * that cheap ones share frames (knit_enqueue_many(3)); each burst enqueued
 * again from its first refused request while the backlog is full. */
#define BURST 64
static void *burst_producer(void)
{
	knit_request_t req[BURST];
	knit_value_t v[BURST];
	uint8_t *buf = malloc((size_t)BURST * 8192);
	uint32_t c = 1;
	while (c < ncalls) {
		int n = 0;
		memset(req, 0, sizeof req);
		for (; n < BURST && c < ncalls; n++, c += 2) {
			memset(&v[n], 0, sizeof v[n]);
			const size_t len = size_of(c);
			if (len == 0) {
				v[n].type = KNIT_VALUE_I64;
				v[n].i64 = c;
			} else {
				uint8_t *b = buf + (size_t)n * 8192;
				for (size_t i = 0; i < len; i++)
					b[i] = pat(c, i);
				v[n].type = KNIT_VALUE_BYTES;
				v[n].data = b;
				v[n].len = len;
			}
			req[n].task = echo_id;
			req[n].arg = &v[n];
			req[n].user_data = (void *)(uintptr_t)(c + 1);
		}
		int at = 0;
		while (at < n) {
			const int k = knit_enqueue_many(pool, req + at, (uint32_t)(n - at), NULL);
			if (k == -KNIT_EAGAIN) {
				if (now_ns() > t_end) {
					FAIL("burst stuck on a full backlog");
					free(buf);
					return NULL;
				}
				sched_yield();
				continue;
			}
			CHECK(k > 0 && k <= n - at, "enqueue_many: %d (%s)", k, knit_strerror(k));
			if (k <= 0)
				break;
			at += k;
		}
	}
	free(buf);
	return NULL;
}

static void *producer(void *arg)
{
	const uint32_t first = (uint32_t)(uintptr_t)arg;
	if (first == 1)
		return burst_producer();
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
	if (ud == (uintptr_t)ncalls + 1) {
		/* Killed while it ran, or not started by then and run again. */
		CHECK(atomic_fetch_add(&sleeper_done, 1) == 0, "the sleep completed twice");
		if (k->status == -KNIT_ECRASHED)
			atomic_fetch_add(&crashed, 1);
		else
			CHECK(k->status == 0 && k->result.i64 == 200, "the sleep: %s",
			      knit_strerror(k->status));
		return;
	}
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
	while (atomic_load(&done_count) < ncalls + extra) {
		if (now_ns() > t_end) {
			FAIL("reaped %u of %u before the bound", atomic_load(&done_count), ncalls);
			break;
		}
		int n = knit_complete(pool, out, 64, 100 * 1000 * 1000);
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
			if (extra) {
				knit_call_options_t co = {sizeof co, KNIT_CALL_LANE, 0, 1};
				knit_value_t ms;
				memset(&ms, 0, sizeof ms);
				ms.type = KNIT_VALUE_I64;
				ms.i64 = 200;
				knit_ticket_t t;
				/* The producers keep the backlog at max_pending: the
				 * sleep waits for room as their calls do, while this
				 * thread keeps reaping (and so makes room). */
				int rc;
				while ((rc = knit_enqueue_ex(pool, sleep_id, &ms,
							     (void *)(uintptr_t)(ncalls + 1), &co,
							     &t)) == -KNIT_EAGAIN &&
				       now_ns() < t_end) {
					n = knit_complete(pool, out, 64, 0);
					for (int i = 0; i < n; i++) {
						check_one(&out[i]);
						knit_completion_release(pool, &out[i]);
					}
					if (n > 0)
						atomic_fetch_add(&done_count, (unsigned)n);
					else
						sched_yield();
				}
				CHECK(rc == 0, "enqueue the sleep: %s", knit_strerror(rc));
				struct timespec ts = {0, 20 * 1000 * 1000};
				nanosleep(&ts, NULL);
			}
			CHECK(kill(victim, SIGKILL) == 0, "kill the worker: %s", strerror(errno));
		}
	}
	return NULL;
}

static int count_children(void) { return stress_children(NULL); }

/* The pid of one of our children (a worker process), or -1. */
static pid_t some_child(void)
{
	pid_t pid;
	return stress_children(&pid) > 0 ? pid : -1;
}

static int run(uint32_t topology, const char *worker, const char *lib);

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
	ncalls = (uint32_t)(200000.0 * scale / SAN_DIV);
	if (ncalls < 3000)
		ncalls = 3000;
	done = calloc(ncalls, 1);
	int rc = run(KNIT_TOPOLOGY_LANES, worker, lib);
	if (rc == 0)
		rc = run(KNIT_TOPOLOGY_STEAL, worker, lib);
	free(done);
	return rc;
}

static int run(uint32_t topology, const char *worker, const char *lib)
{
	const char *name = topology == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
	memset(done, 0, ncalls);
	atomic_store(&done_count, 0);
	atomic_store(&crashed, 0);
	atomic_store(&killed, 0);
	atomic_store(&sleeper_done, 0);
	extra = topology == KNIT_TOPOLOGY_LANES ? 1 : 0;
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
	int rc = knit_pool_create(&o, NULL, 0, &pool);
	if (rc != 0) {
		printf("FAIL: %s: create: %s\n", name, knit_strerror(rc));
		return 1;
	}
	echo_id = (uint32_t)knit_pool_task_id(pool, "echo");
	sleep_id = (uint32_t)knit_pool_task_id(pool, "sleep");
	knit_completion_t k;
	if (extra) {
		/* Lanes: worker 1's pid, from a call pinned to its lane. */
		knit_value_t none;
		memset(&none, 0, sizeof none);
		knit_call_options_t co = {sizeof co, KNIT_CALL_LANE, 0, 1};
		knit_ticket_t t;
		rc = knit_enqueue_ex(pool, (uint32_t)knit_pool_task_id(pool, "pid"), &none, NULL,
				     &co, &t);
		if (rc != 0 || knit_complete(pool, &k, 1, -1) != 1 || k.status != 0) {
			printf("FAIL: %s: the pid call\n", name);
			return 1;
		}
		victim = (pid_t)k.result.i64;
	} else {
		/* Steal: one of the two worker processes. */
		victim = some_child();
	}
	if (victim <= 0) {
		printf("FAIL: %s: no worker process found\n", name);
		return 1;
	}

	pthread_t th[3];
	pthread_create(&th[0], NULL, reaper, NULL);
	pthread_create(&th[1], NULL, producer, (void *)(uintptr_t)0);
	pthread_create(&th[2], NULL, producer, (void *)(uintptr_t)1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);

	for (uint32_t c = 0; c < ncalls; c++)
		CHECK(atomic_load(&done[c]) == 1, "call %u: %u completions", c,
		      atomic_load(&done[c]));
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	CHECK(knit_pool_stats(pool, &st, sizeof st) == 0, "stats");
	CHECK(st.crashes == 1 && st.respawns == 1 && st.spawns == 3,
	      "crashes %" PRIu64 " respawns %" PRIu64 " spawns %" PRIu64, st.crashes, st.respawns,
	      st.spawns);
	CHECK(st.pending == 0, "pending %" PRIu64, st.pending);
	CHECK(st.topology == topology, "topology %u", st.topology);
	/* Producer 1's calls went into frames to measure the task (always),
	 * and, while echo measured cheap, several to a frame (up to 64, BURST):
	 * how many depends on the machine's load, so only the measuring is
	 * required (tests/api/test_ride.c kills a worker in a frame of several
	 * calls for certain). */
	printf("%s: %" PRIu64 " calls shared %" PRIu64 " frames\n", name, st.shared_calls,
	       st.shared_frames);
	CHECK(st.shared_calls > 0, "%s: no call measured its task in a frame", name);
	/* Stealing, a worker claims only with nothing else in hand: when it
	 * died it held one unanswered frame at most. */
	if (topology == KNIT_TOPOLOGY_STEAL)
		CHECK(atomic_load(&crashed) <= BURST,
		      "steal: %u calls failed with the killed worker", atomic_load(&crashed));
	/* Lanes: only calls the killed worker started fail; every one of them
	 * was in a frame in flight on its lane, which holds at most 32 (the
	 * others, unstarted, ran again and were checked above). */
	CHECK(atomic_load(&crashed) <= 32 * BURST, "%s: %u calls failed with the killed worker",
	      name, atomic_load(&crashed));
	CHECK(atomic_load(&sleeper_done) == extra, "the sleep: %u completions",
	      atomic_load(&sleeper_done));
	/* Still serving, on both lanes. */
	for (int i = 0; i < 20; i++) {
		knit_value_t v;
		memset(&v, 0, sizeof v);
		v.type = KNIT_VALUE_I64;
		v.i64 = i;
		rc = knit_call(pool, echo_id, &v, &k, 10ll * 1000 * 1000 * 1000);
		CHECK(rc == 0 && k.status == 0 && k.result.i64 == i, "call after the kill");
	}
	CHECK(knit_stop(pool, KNIT_STOP_DRAIN, 10ll * 1000 * 1000 * 1000) == 0, "stop(DRAIN)");
	CHECK(knit_complete(pool, &k, 1, 0) == -KNIT_ECLOSED, "closed after the drain");
	knit_pool_destroy(pool);
	CHECK(count_children() == 0, "children left after destroy");
	printf("%s: %u calls, %u failed with the killed worker (-KNIT_ECRASHED), %d failures\n",
	       name, ncalls, atomic_load(&crashed), atomic_load(&failures));
	return atomic_load(&failures) ? 1 : 0;
}
