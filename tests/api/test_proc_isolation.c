/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_isolation.c - a worker process can write only its own
 * memory (task library build/tests/lib/proc_forge.so), on both topologies:
 *
 *  - forge: worker A runs a 400 ms call; worker B runs a task that waits
 *    100 ms and rewrites every word equal to a queued call T's argument
 *    wherever it can see the pool's memory; T (queued behind A's call, in
 *    A's lane or in the shared submit queue) completes with its own result
 *    -- never status 0 with the result of the forged argument. The forger
 *    can reach no copy of T's argument: it finds none (lanes: T waits in
 *    A's lane, which B does not map), or it dies writing the read-only
 *    submit queue (steal: an honest crash, counted, respawned, no protocol
 *    error charged to anyone).
 *  - scribble: a task that writes random words over every writable mapping
 *    of the pool its worker has (and now and then one word into a
 *    read-only one), among thousands of honest calls without a timeout:
 *    every honest call completes (none stranded), every status 0 carries
 *    the call's own result, the pool never fails; on lanes, with the
 *    scribbles pinned to worker 1, every call of worker 0 succeeds and
 *    worker 0 is never killed or blamed. Steal (scribble_exit: it
 *    scribbles its own claim page, never a peer's, which it maps
 *    read-only, and dies): every honest call succeeds with its own
 *    result, and a worker dies only for a scribble it ran (each run
 *    counted in a file; a scribble whose worker hid that it started it
 *    runs again, a bounded number of times).
 *  - forge and scribble again with a sandbox on (seccomp with the files
 *    set, Landlock over /proc and /tmp): the sandbox changes none of it.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kt.h"

#define FORGE_LIB KT_BUILD_DIR "/tests/lib/proc_forge.so"
#define FORGE_KEY 0x5bd1e9955bd1e995ull /* tests/api/tasklib/proc_forge.c */
#define FORGE_DELTA 1000000

/* The sandboxed variants (knit_sandbox_t): the same promises hold with a
 * sandbox on. The tasks read /proc/self/maps and append to a file in /tmp
 * (scribble_exit): the files set, and Landlock over those two (best
 * effort: a kernel without Landlock still runs the seccomp filter). */
static const knit_sandbox_t *g_sandbox;

static const knit_sandbox_t *sandbox_on(void)
{
	static const char *const ro[] = {"/proc", NULL};
	static const char *const rw[] = {"/tmp", NULL};
	static knit_sandbox_t sb;
	memset(&sb, 0, sizeof sb);
	sb.size = sizeof sb;
	sb.flags = KNIT_SANDBOX_SECCOMP | KNIT_SANDBOX_LANDLOCK | KNIT_SANDBOX_LANDLOCK_BEST_EFFORT;
	sb.seccomp_sets = KNIT_SECCOMP_FILES;
	sb.landlock_ro = ro;
	sb.landlock_rw = rw;
	return &sb;
}

static knit_pool_t *forge_pool(uint32_t workers, uint32_t topo, uint32_t respawn_max)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.sandbox = g_sandbox;
	o.topology = topo;
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.task_library = FORGE_LIB;
	o.respawn_max = respawn_max;
	/* Scribblers die by design, dozens of times per lane in a few
	 * seconds: every respawn at once (a backoff would only slow the
	 * test past its bounds; test_proc_restart.c tests it). */
	o.respawn_backoff_ms = KNIT_ZERO;
	o.payload_max_bytes = 1u << 20; /* small arenas: a scribbler's pages are few */
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "process pool create: %s", knit_strerror(rc));
	return p;
}

/* ---- forge ------------------------------------------------------------------------- */

enum { K_SLOW = 1, K_FORGE = 2, K_T = 3 };

static void forge_round(knit_pool_t *p, uint32_t topo, int round)
{
	const int64_t x = 0x3c1d5a0000000000ll + round * 7919 + 17; /* T's argument: nowhere else */
	const uint32_t pin = topo == KNIT_TOPOLOGY_LANES ? KNIT_CALL_LANE : 0;
	kt_enq_ex(p, kt_id(p, "slow"), kt_i64(400), (void *)K_SLOW, pin, 0, 0);
	kt_enq_ex(p, kt_id(p, "forge"), kt_i64((int64_t)((uint64_t)x ^ FORGE_KEY)), (void *)K_FORGE,
		  pin, 0, 1);
	/* Once both run (a worker takes what its lane holds when it starts):
	 * lanes, T waits behind the slow call in worker 0's lane; steal, in
	 * the submit queue while both workers are busy. */
	kt_sleep_ms(50);
	kt_enq_ex(p, kt_id(p, "twice"), kt_i64(x), (void *)K_T, pin, 0, 0);
	knit_completion_t got[3], out[3];
	cr_assert_eq(kt_reap(p, got, 3), 3, "round %d: not every call completed", round);
	int seen[4] = {0};
	for (int i = 0; i < 3; i++) {
		const int k = (int)(intptr_t)got[i].user_data;
		cr_assert(k >= K_SLOW && k <= K_T && seen[k]++ == 0,
			  "round %d: completion %d twice", round, k);
		out[K_T - k] = got[i]; /* T first */
	}
	for (int i = 0; i < 3; i++) {
		const int k = (int)(intptr_t)out[i].user_data;
		if (k == K_T) {
			cr_assert(out[i].status != 0 || out[i].result.i64 != 2 * (x + FORGE_DELTA),
				  "round %d: T completed 0 with the forged argument's result",
				  round);
			cr_assert_eq(out[i].status, 0, "round %d: T failed: %s", round,
				     knit_strerror(out[i].status));
			cr_assert_eq(out[i].result.i64, 2 * x, "round %d: T's result", round);
		} else if (k == K_SLOW) {
			cr_assert_eq(out[i].status, 0, "round %d: the slow call: %s", round,
				     knit_strerror(out[i].status));
		} else if (topo == KNIT_TOPOLOGY_LANES) {
			/* T's argument is in worker 0's lane: not mapped here. */
			cr_assert_eq(out[i].status, 0, "round %d: the forger: %s", round,
				     knit_strerror(out[i].status));
			cr_assert_eq(out[i].result.i64, 0,
				     "round %d: the forger found T's argument", round);
		} else {
			/* The submit queue is read-only to workers: its write killed it. */
			cr_assert_eq(out[i].status, -KNIT_ECRASHED,
				     "round %d: the forger: %s (result %lld)", round,
				     knit_strerror(out[i].status), (long long)out[i].result.i64);
		}
		knit_completion_release(p, &out[i]);
	}
}

static void forge(uint32_t topo)
{
	enum { ROUNDS = 3 };
	knit_pool_t *p = forge_pool(2, topo, 100);
	for (int r = 0; r < ROUNDS; r++)
		forge_round(p, topo, r);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.proto_errors, 0, "nobody is blamed for the forger's writes");
	cr_assert_eq(s.crashes, topo == KNIT_TOPOLOGY_LANES ? 0u : (uint64_t)ROUNDS, "crashes %llu",
		     (unsigned long long)s.crashes);
	kt_destroy(p);
}

KT(proc_isolation, forge_lanes) { forge(KNIT_TOPOLOGY_LANES); }
KT(proc_isolation, forge_steal) { forge(KNIT_TOPOLOGY_STEAL); }
KT(proc_isolation, forge_lanes_sandboxed)
{
	g_sandbox = sandbox_on();
	forge(KNIT_TOPOLOGY_LANES);
}
KT(proc_isolation, forge_steal_sandboxed)
{
	g_sandbox = sandbox_on();
	forge(KNIT_TOPOLOGY_STEAL);
}

/* ---- no way back to write access -------------------------------------------------- */

/* The shared memory is sealed read-only (F_SEAL_FUTURE_WRITE), not merely
 * mapped so: no mprotect, no writable mmap of a descriptor the worker
 * holds, no read-write reopen of it through /proc/self/fd gets it back. */
static void no_upgrade(uint32_t topo)
{
	knit_pool_t *p = forge_pool(2, topo, 0);
	knit_completion_t c = kt_proc_call(p, "upgrade", kt_none());
	cr_assert_eq(c.status, 0, "upgrade: %s", knit_strerror(c.status));
	cr_assert_eq(c.result.i64, 0,
		     "a worker got write access to the shared memory %lld ways (-1: no read-only "
		     "mapping at all)",
		     (long long)c.result.i64);
	kt_destroy(p);
}

KT(proc_isolation, no_upgrade_lanes) { no_upgrade(KNIT_TOPOLOGY_LANES); }
KT(proc_isolation, no_upgrade_steal) { no_upgrade(KNIT_TOPOLOGY_STEAL); }

/* ---- scribble ---------------------------------------------------------------------- */

static int64_t pid_of(knit_pool_t *p, uint32_t lane)
{
	kt_enq_ex(p, kt_id(p, "pid"), kt_none(), NULL, KNIT_CALL_LANE, 0, lane);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.status, 0, "pid: %s", knit_strerror(c.status));
	return c.result.i64;
}

struct tally {
	uint8_t *done;
	int n, completed, failed, bad;
	uint64_t seed;
	uint32_t topo;
};

static void take(knit_pool_t *p, struct tally *t, knit_completion_t *c)
{
	const intptr_t ud = (intptr_t)c->user_data;
	const int scribble = ud < 0;
	const int i = (int)(scribble ? -ud - 1 : ud);
	cr_assert(i >= 0 && i < t->n && t->done[i]++ == 0, "seed %llu: call %d twice",
		  (unsigned long long)t->seed, i);
	t->completed++;
	if (!scribble) {
		/* A status 0 is the call's own result, always. */
		cr_assert(c->status != 0 || c->result.i64 == 2 * (int64_t)i,
			  "seed %llu: call %d completed 0 with %lld, not its own result",
			  (unsigned long long)t->seed, i, (long long)c->result.i64);
		/* An honest call never fails: on lanes it runs on the honest
		 * worker 0; stealing, a scribble never serves another call
		 * (scribble_exit), so an honest call never runs on a
		 * scribbler, and a claim a scribbler's word makes for it is
		 * no claim: it is sent again once the scribbler is gone. */
		cr_assert_eq(c->status, 0, "seed %llu: honest call %d failed: %s",
			     (unsigned long long)t->seed, i, knit_strerror(c->status));
	} else if (c->status != 0) {
		t->failed++;
	}
	knit_completion_release(p, c);
}

/* tests/api/tasklib/proc_forge.c: scribble_exit appends a byte here. */
static void scribble_file(char *path, size_t n)
{
	snprintf(path, n, "/tmp/knit-scribble-%d", (int)getpid());
}

static int scribbles_ran(void)
{
	char path[64];
	scribble_file(path, sizeof path);
	struct stat st;
	return stat(path, &st) == 0 ? (int)st.st_size : 0;
}

static void scribbler(uint32_t topo)
{
	enum { N = 3000, EVERY = 60 };
	uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
	const char *env = getenv("KNIT_SCRIBBLE_SEED");
	if (env != NULL && env[0] != 0)
		seed = strtoull(env, NULL, 0);
	char path[64];
	scribble_file(path, sizeof path);
	unlink(path);
	knit_pool_t *p = forge_pool(2, topo, 1000); /* scribbles may cost their worker */
	const int64_t honest_pid = topo == KNIT_TOPOLOGY_LANES ? pid_of(p, 0) : 0;
	static uint8_t done[N];
	memset(done, 0, sizeof done);
	struct tally t = {done, N, 0, 0, 0, seed, topo};
	/* Steal: any worker may run any call, and a scribbler may rewrite the
	 * results of calls it ran itself (its own memory): scribble_exit waits
	 * until those are reaped and never serves another call. */
	const uint32_t twice = kt_id(p, "twice"),
		       scribble =
			       kt_id(p, topo == KNIT_TOPOLOGY_LANES ? "scribble" : "scribble_exit");
	knit_completion_t out[64];
	for (int i = 0; i < N; i++) {
		const int is_scribble = i % EVERY == EVERY / 2;
		knit_call_options_t o;
		memset(&o, 0, sizeof o);
		o.size = sizeof o;
		/* No timeout: a call a scribble could strand would wait forever. */
		if (topo == KNIT_TOPOLOGY_LANES) {
			o.flags = KNIT_CALL_LANE;
			o.lane = is_scribble ? 1 : 0;
		}
		knit_value_t a = kt_i64(is_scribble ? (int64_t)(seed + (uint64_t)i) : i);
		void *ud = (void *)(is_scribble ? -(intptr_t)i - 1 : (intptr_t)i);
		knit_ticket_t tk;
		int rc;
		while ((rc = knit_enqueue_ex(p, is_scribble ? scribble : twice, &a, ud, &o, &tk)) ==
		       -KNIT_EAGAIN) {
			const int n = knit_complete(p, out, 64, 10ll * 1000 * 1000);
			cr_assert(n >= 0, "knit_complete: %s", knit_strerror(n));
			for (int k = 0; k < n; k++)
				take(p, &t, &out[k]);
		}
		cr_assert_eq(rc, 0, "seed %llu: enqueue %d: %s (the pool failed?)",
			     (unsigned long long)seed, i, knit_strerror(rc));
	}
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (t.completed < N && kt_now_ns() < end) {
		const int n = knit_complete(p, out, 64, 100ll * 1000 * 1000);
		cr_assert(n >= 0, "knit_complete: %s", knit_strerror(n));
		for (int k = 0; k < n; k++)
			take(p, &t, &out[k]);
	}
	cr_assert_eq(t.completed, N, "seed %llu: %d of %d calls completed (the rest stranded)",
		     (unsigned long long)seed, t.completed, N);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.completed, s.enqueued, "seed %llu", (unsigned long long)seed);
	cr_assert_eq(s.pending, 0, "seed %llu", (unsigned long long)seed);
	if (topo == KNIT_TOPOLOGY_LANES)
		cr_assert_eq(pid_of(p, 0), honest_pid, "seed %llu: the honest worker was killed",
			     (unsigned long long)seed);
	else
		/* Every death is a scribbler's (each counted in the file): an
		 * honest worker is never killed for what a scribbler's words
		 * misled it into. */
		cr_assert(s.crashes <= (uint64_t)scribbles_ran(),
			  "seed %llu: steal: %llu workers died, only %d of them scribblers",
			  (unsigned long long)seed, (unsigned long long)s.crashes, scribbles_ran());
	cr_log_info("seed %llu: %d of %d scribbles failed, %d scribbles ran, %llu crashes, "
		    "%llu protocol errors",
		    (unsigned long long)seed, t.failed, N / EVERY, scribbles_ran(),
		    (unsigned long long)s.crashes, (unsigned long long)s.proto_errors);
	/* Not kt_destroy: a scribbler's own lane counters say what it wrote. */
	cr_assert_eq(knit_pool_destroy(p), 0);
	unlink(path);
}

KT(proc_isolation, scribble_lanes) { scribbler(KNIT_TOPOLOGY_LANES); }
KT(proc_isolation, scribble_steal) { scribbler(KNIT_TOPOLOGY_STEAL); }
KT(proc_isolation, scribble_lanes_sandboxed)
{
	g_sandbox = sandbox_on();
	scribbler(KNIT_TOPOLOGY_LANES);
}
KT(proc_isolation, scribble_steal_sandboxed)
{
	g_sandbox = sandbox_on();
	scribbler(KNIT_TOPOLOGY_STEAL);
}
