/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc.c - process pools (KNIT_WORKERS_PROCESSES): round
 * trips through knit-worker processes, wakes both ways without polling,
 * the completion fd, boot errors, crash isolation and respawn, the hard
 * timeout, the restart budget, and cleanup (no child, zombie or fd left);
 * on the lanes topology and, with two workers, on the steal topology (the
 * default there), where a crash fails only the call its worker claimed.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

#define MISMATCH_LIB KT_BUILD_DIR "/tests/lib/proc_mismatch.so"

/* A process pool of `workers` with topology `topo` (AUTO: the default). */
static knit_pool_t *proc_pool_t(uint32_t workers, uint32_t topo)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.topology = topo;
	knit_pool_t *p = NULL;
	int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "process pool create: %s", knit_strerror(rc));
	knit_pool_stats_t s;
	kt_stats(p, &s);
	if (topo != KNIT_TOPOLOGY_AUTO)
		cr_assert_eq(s.topology, topo);
	return p;
}

static knit_pool_t *proc_pool(uint32_t workers) { return proc_pool_t(workers, KNIT_TOPOLOGY_AUTO); }

/* Open descriptors of this process. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	cr_assert(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static void roundtrip_all_types(knit_pool_t *p)
{
	knit_value_t args[7];
	args[0] = kt_none();
	args[1] = kt_bool(1);
	args[2] = kt_i64(-1234567890123LL);
	args[3] = kt_f64(3.5);
	uint8_t *big = kt_pattern(100000); /* through the arena */
	args[4] = kt_bytes(big, 100000);
	args[5] = kt_str("hello, process", 14);
	args[6] = kt_bytes("tiny", 4); /* inline */
	for (int i = 0; i < 7; i++) {
		knit_completion_t c = kt_proc_call(p, "echo", args[i]);
		cr_assert_eq(c.status, 0, "type %u: %s", args[i].type, knit_strerror(c.status));
		cr_assert_eq(c.result.type, args[i].type);
		cr_assert_eq(c.result.i64, args[i].i64);
		cr_assert_eq(c.result.len, args[i].len);
		if (args[i].len)
			cr_assert_eq(memcmp(c.result.data, args[i].data, args[i].len), 0);
		knit_completion_release(p, &c);
	}
	free(big);
	knit_completion_t c = kt_proc_call(p, "error", kt_i64(42));
	cr_assert_eq(c.status, -KNIT_ETASK);
	cr_assert_eq(c.result.type, KNIT_VALUE_ERROR);
	cr_assert_eq(c.result.code, 42);
	cr_assert_eq(c.result.len, 10);
	knit_completion_release(p, &c);
	c = kt_proc_call(p, "alloc", kt_i64(5000)); /* published in place from the return arena */
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.len, 5000);
	for (size_t i = 0; i < 5000; i++)
		cr_assert_eq(((const char *)c.result.data)[i], 'a' + (int)(i % 26));
	knit_completion_release(p, &c);
}

KT(proc, roundtrip_one_worker)
{
	knit_pool_t *p = proc_pool(1);
	knit_completion_t c = kt_proc_call(p, "pid", kt_none());
	cr_assert_eq(c.status, 0);
	cr_assert_neq(c.result.i64, (int64_t)getpid(), "the task ran in another process");
	roundtrip_all_types(p);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.spawns, 1);
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.topology, KNIT_TOPOLOGY_LANES);
	kt_destroy(p);
}

/* Two workers, all value types, then a batch both workers run (each its
 * own pid): spread round robin (lanes), or claimed by whichever worker is
 * free (steal: the calls sleep, so one worker cannot take them all). */
static void roundtrip_two_workers(uint32_t topo)
{
	knit_pool_t *p = proc_pool_t(2, topo);
	roundtrip_all_types(p);
	enum { N = 200 };
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, i % 3 ? "pid" : "echo"), kt_i64(i % 3 ? 1 : i),
		       (void *)(intptr_t)i);
	knit_completion_t out[N];
	cr_assert_eq(kt_reap(p, out, N), N);
	int64_t pids[2] = {0, 0};
	int seen[N] = {0};
	for (int i = 0; i < N; i++) {
		int k = (int)(intptr_t)out[i].user_data;
		cr_assert_eq(out[i].status, 0);
		cr_assert_eq(seen[k]++, 0, "one completion per call");
		if (k % 3 == 0)
			cr_assert_eq(out[i].result.i64, k);
		else if (pids[0] == 0 || pids[0] == out[i].result.i64)
			pids[0] = out[i].result.i64;
		else
			pids[1] = out[i].result.i64;
		knit_completion_release(p, &out[i]);
	}
	cr_assert(pids[0] != 0 && pids[1] != 0 && pids[0] != pids[1],
		  "two worker processes ran tasks (%lld %lld)", (long long)pids[0],
		  (long long)pids[1]);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.spawns, 2);
	cr_assert_eq(s.topology, topo);
	/* A worker process claims one call at a time, however cheap its calls
	 * (src/spin.h): 7 types, error, alloc, the batch. */
	if (topo == KNIT_TOPOLOGY_STEAL)
		cr_assert_eq(s.lane[0].steal_claims + s.lane[1].steal_claims, N + 9,
			     "one claim per call (7 types, error, alloc, the batch)");
	kt_destroy(p);
}

KT(proc, roundtrip_two_workers_lanes) { roundtrip_two_workers(KNIT_TOPOLOGY_LANES); }
KT(proc, roundtrip_two_workers_steal) { roundtrip_two_workers(KNIT_TOPOLOGY_STEAL); }

/* AUTO: stealing for 2..31 process workers, lanes for one (and for more
 * than 31, or with a balancer). */
KT(proc, auto_topology)
{
	knit_pool_t *p = proc_pool(2);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.topology, KNIT_TOPOLOGY_STEAL);
	kt_destroy(p);
	knit_pool_options_t o;
	kt_proc_opts(&o, 3);
	o.balancer = KNIT_BALANCE_ROUND_ROBIN;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	kt_stats(p, &s);
	cr_assert_eq(s.topology, KNIT_TOPOLOGY_LANES);
	kt_destroy(p);
	/* Explicit STEAL with one worker is allowed, as for threads. */
	p = proc_pool_t(1, KNIT_TOPOLOGY_STEAL);
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(3));
	cr_assert_eq(c.result.i64, 3);
	kt_destroy(p);
}

/* No polling either way: an idle pool sends and receives no wake at all,
 * and a cold call (worker parked, host asleep) costs one wake each way at
 * most. */
KT(proc, wakes_are_counted_not_polled)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.spin_us = KNIT_ZERO; /* park at once: every call is cold */
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(1));
	knit_completion_release(p, &c);
	kt_sleep_ms(50);
	knit_pool_stats_t a, b;
	kt_stats(p, &a);
	kt_sleep_ms(300); /* idle */
	kt_stats(p, &b);
	cr_assert_eq(b.lane[0].wakes_received, a.lane[0].wakes_received, "idle: no wake");
	cr_assert_eq(b.lane[0].wakes_sent, a.lane[0].wakes_sent);
	cr_assert_eq(b.lane[0].spurious_wakes, a.lane[0].spurious_wakes);
	cr_assert_eq(b.doorbell_wakes, a.doorbell_wakes);
	enum { N = 20 };
	for (int i = 0; i < N; i++) {
		kt_sleep_ms(2);
		c = kt_proc_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.result.i64, i);
	}
	kt_stats(p, &b);
	const uint64_t sent = b.lane[0].wakes_sent - a.lane[0].wakes_sent;
	const uint64_t got = b.lane[0].wakes_received - a.lane[0].wakes_received;
	cr_assert_eq(sent, got, "every wake sent is received once");
	cr_assert_leq(sent, N, "at most one wake per cold call");
	cr_assert_geq(sent, 1, "the worker parked and was woken across processes");
	cr_assert_leq(b.doorbell_wakes - a.doorbell_wakes, N, "at most one ring per call");
	cr_assert_eq(b.lane[0].spurious_wakes, a.lane[0].spurious_wakes);
	kt_destroy(p);
}

KT(proc, completion_fd_level)
{
	knit_pool_t *p = proc_pool(1);
	int fd = knit_completion_fd(p);
	cr_assert_geq(fd, 0);
	struct pollfd pf = {fd, POLLIN, 0};
	cr_assert_eq(poll(&pf, 1, 0), 0, "nothing pending: not readable");
	for (int round = 0; round < 5; round++) {
		kt_enq(p, kt_id(p, "sleep"), kt_i64(20), NULL);
		pf.revents = 0;
		/* Readable once the worker process published (bounded wait). */
		cr_assert_eq(poll(&pf, 1, (int)(KT_BOUND_S * 1000)), 1,
			     "the worker's result makes it readable");
		knit_completion_t c;
		cr_assert_eq(knit_complete(p, &c, 1, 0), 1);
		cr_assert_eq(c.status, 0);
		knit_completion_release(p, &c);
		pf.revents = 0;
		cr_assert_eq(poll(&pf, 1, 0), 0, "drained: not readable");
	}
	kt_destroy(p);
}

/* ---- boot errors -------------------------------------------------------------- */

KT(proc, bad_options)
{
	knit_pool_options_t o;
	knit_pool_t *p = NULL;
	kt_proc_opts(&o, 1);
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL,
		     "function pointers with processes");
	o.task_library = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "no task library");
	kt_proc_opts(&o, 32);
	o.topology = KNIT_TOPOLOGY_STEAL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "steal: 31 workers at most");
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.balancer = KNIT_BALANCE_ROUND_ROBIN;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "steal: no balancer");
	kt_proc_opts(&o, 1);
	o.inline_lane = KNIT_INLINE_LAST;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "no inline lane");
	kt_opts(&o, 1);
	o.task_library = KT_PROC_LIB;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL,
		     "a task library with threads");
	kt_proc_opts(&o, 1);
	o.task_library = KT_BUILD_DIR "/tests/lib/no-such-library.so";
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_ENOENT, "missing library");
	kt_proc_opts(&o, 1);
	o.worker_path = KT_BUILD_DIR "/no-such-knit-worker";
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_ENOENT, "missing worker");
	cr_assert_null(p);
	/* An older caller's struct (no worker_kind): a thread pool as before. */
	kt_opts(&o, 1);
	o.size = offsetof(knit_pool_options_t, worker_kind);
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), 0);
	kt_destroy(p);
}

KT(proc, worker_path_env_and_wrong_binary)
{
	knit_pool_options_t o;
	knit_pool_t *p = NULL;
	int fds = count_fds();
	/* A binary that is not knit-worker exits without its verdict. */
	setenv("KNIT_WORKER_PATH", "/bin/true", 1);
	kt_proc_opts(&o, 2);
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_ECRASHED);
	/* The option wins over the variable. */
	o.worker_path = KT_BUILD_DIR "/libexec/knitting/knit-worker";
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	kt_destroy(p);
	unsetenv("KNIT_WORKER_PATH");
	cr_assert_eq(kt_count_children(), 0);
	cr_assert_eq(count_fds(), fds);
}

KT(proc, table_hash_mismatch)
{
	knit_pool_options_t o;
	knit_pool_t *p = NULL;
	/* The host sees the 7 ms table, the workers (empty environment) the
	 * other one: they refuse, and create says so. */
	setenv("KT_MISMATCH", "1", 1);
	kt_proc_opts(&o, 1);
	o.task_library = MISMATCH_LIB;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EPROTO);
	cr_assert_eq(kt_count_children(), 0);
	/* Inheriting the environment, both load the same table. */
	o.proc_flags = KNIT_PROC_INHERIT_ENV;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(5));
	cr_assert_eq(c.result.i64, 5);
	kt_destroy(p);
}

/* ---- crashes ---------------------------------------------------------------------- */

/* Stats once the monitor has respawned `n` workers (it counts the respawn
 * after it completed the dead worker's calls; a survivor may serve the
 * next calls before that). */
static void stats_after_respawns(knit_pool_t *p, knit_pool_stats_t *s, uint64_t n)
{
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	for (;;) {
		kt_stats(p, s);
		if (s->respawns >= n)
			return;
		cr_assert_lt(kt_now_ns(), end, "respawn %llu not seen (%llu)",
			     (unsigned long long)n, (unsigned long long)s->respawns);
		kt_sleep_ms(2);
	}
}

/* One worker (lanes) or two (steal): the crashing call fails, the next
 * calls succeed, the stats show the respawn. */
static void crash_then_serve_on(const char *task, int32_t want, uint32_t workers, uint32_t topo)
{
	knit_pool_t *p = proc_pool_t(workers, topo);
	knit_completion_t c = kt_proc_call(p, "pid", kt_none());
	const int64_t pid0 = c.result.i64;
	c = kt_proc_call(p, task, kt_i64(0));
	cr_assert_eq(c.status, want, "%s: %s", task, knit_strerror(c.status));
	/* The next calls succeed, in a new worker process. */
	for (int i = 0; i < 5; i++) {
		c = kt_proc_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.result.i64, i);
	}
	if (workers == 1) {
		c = kt_proc_call(p, "pid", kt_none());
		cr_assert_neq(c.result.i64, pid0, "respawned");
	}
	knit_pool_stats_t s;
	stats_after_respawns(p, &s, 1);
	cr_assert(s.spawns == workers + 1 && s.respawns == 1 &&
			  s.crashes == (want == -KNIT_ECRASHED ? 1u : 0u),
		  "spawns %llu respawns %llu crashes %llu", (unsigned long long)s.spawns,
		  (unsigned long long)s.respawns, (unsigned long long)s.crashes);
	cr_assert_eq(s.pending, 0);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

static void crash_then_serve(const char *task, int32_t want)
{
	crash_then_serve_on(task, want, 1, KNIT_TOPOLOGY_AUTO);
}

KT(proc, abort_fails_only_its_call) { crash_then_serve("abort", -KNIT_ECRASHED); }
KT(proc, segv_fails_only_its_call) { crash_then_serve("segv", -KNIT_ECRASHED); }
KT(proc, exit_fails_only_its_call) { crash_then_serve("exit", -KNIT_ECRASHED); }
KT(proc, steal_abort_fails_only_its_call)
{
	crash_then_serve_on("abort", -KNIT_ECRASHED, 2, KNIT_TOPOLOGY_STEAL);
}
KT(proc, steal_segv_fails_only_its_call)
{
	crash_then_serve_on("segv", -KNIT_ECRASHED, 2, KNIT_TOPOLOGY_STEAL);
}
KT(proc, steal_exit_fails_only_its_call)
{
	crash_then_serve_on("exit", -KNIT_ECRASHED, 2, KNIT_TOPOLOGY_STEAL);
}

static void hard_timeout_on(uint32_t workers, uint32_t topo)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.topology = topo;
	o.hard_timeout_ms = 100;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	knit_completion_t c = kt_proc_call(p, "spin", kt_none());
	cr_assert_eq(c.status, -KNIT_ETIMEDOUT);
	for (int i = 0; i < 3; i++) {
		c = kt_proc_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.result.i64, i);
	}
	knit_pool_stats_t s;
	stats_after_respawns(p, &s, 1);
	cr_assert_eq(s.topology, topo == KNIT_TOPOLOGY_AUTO ? KNIT_TOPOLOGY_LANES : topo);
	cr_assert_eq(s.hard_kills, 1);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.crashes, 0);
	kt_destroy(p);
}

KT(proc, hard_timeout_kills_the_worker_only) { hard_timeout_on(1, KNIT_TOPOLOGY_AUTO); }
KT(proc, steal_hard_timeout_kills_the_worker_only) { hard_timeout_on(2, KNIT_TOPOLOGY_STEAL); }

/* Stealing: calls queued behind a call that kills its worker stay in the
 * shared submit region (the dying worker claimed only its own call), so
 * every one of them completes OK, on the other worker or the respawned
 * one; only the killer fails, with its code. */
static void steal_queue_behind(const char *task, int32_t want)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.hard_timeout_ms = 200; /* for "spin"; the sleeps are far below it */
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	enum { BEFORE = 8, N = 120 };
	for (int i = 0; i < N + 1; i++) {
		if (i == BEFORE)
			kt_enq(p, kt_id(p, task), kt_i64(0), (void *)(intptr_t)N);
		else
			kt_enq(p, kt_id(p, "sleep"), kt_i64(1),
			       (void *)(intptr_t)(i > BEFORE ? i - 1 : i));
	}
	knit_completion_t out[N + 1];
	cr_assert_eq(kt_reap(p, out, N + 1), N + 1);
	int seen[N + 1] = {0};
	for (int i = 0; i < N + 1; i++) {
		const int k = (int)(intptr_t)out[i].user_data;
		cr_assert_eq(seen[k]++, 0, "one completion per call");
		if (k == N)
			cr_assert_eq(out[i].status, want, "%s: %s", task,
				     knit_strerror(out[i].status));
		else
			cr_assert_eq(out[i].status, 0, "call %d behind %s: %s", k, task,
				     knit_strerror(out[i].status));
		knit_completion_release(p, &out[i]);
	}
	knit_completion_t c;
	cr_assert_eq(knit_complete(p, &c, 1, 0), 0, "nothing more");
	knit_pool_stats_t s;
	stats_after_respawns(p, &s, 1);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.spawns, 3);
	cr_assert_eq(s.crashes, want == -KNIT_ECRASHED ? 1u : 0u);
	cr_assert_eq(s.hard_kills, want == -KNIT_ETIMEDOUT ? 1u : 0u);
	cr_assert_eq(s.pending, 0);
	c = kt_proc_call(p, "echo", kt_i64(7));
	cr_assert_eq(c.result.i64, 7);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

KT(proc, steal_abort_spares_the_queue) { steal_queue_behind("abort", -KNIT_ECRASHED); }
KT(proc, steal_segv_spares_the_queue) { steal_queue_behind("segv", -KNIT_ECRASHED); }
KT(proc, steal_exit_spares_the_queue) { steal_queue_behind("exit", -KNIT_ECRASHED); }
KT(proc, steal_hard_timeout_spares_the_queue) { steal_queue_behind("spin", -KNIT_ETIMEDOUT); }

/* Lanes (stealing: steal_*_spares_the_queue).
 * Calls queued behind a crash on another lane are not touched; those the
 * crashed worker started (the abort, and sleeps of its batch whose results
 * it had not published) fail with -KNIT_ECRASHED, exactly once each, the
 * rest run again (test_proc_requeue.c counts the runs); the pool keeps
 * serving. */
KT(proc, crash_with_calls_in_flight)
{
	knit_pool_t *p = proc_pool_t(2, KNIT_TOPOLOGY_LANES);
	enum { N = 64 };
	kt_enq(p, kt_id(p, "abort"), kt_none(), (void *)(intptr_t)N);
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, "sleep"), kt_i64(1), (void *)(intptr_t)i);
	knit_completion_t out[N + 1];
	cr_assert_eq(kt_reap(p, out, N + 1), N + 1);
	int seen[N + 1] = {0}, ok = 0, crashed = 0;
	for (int i = 0; i < N + 1; i++) {
		int k = (int)(intptr_t)out[i].user_data;
		cr_assert_eq(seen[k]++, 0);
		if (out[i].status == 0) {
			ok++;
		} else {
			cr_assert_eq(out[i].status, -KNIT_ECRASHED);
			crashed++;
		}
		knit_completion_release(p, &out[i]);
	}
	cr_assert_eq(seen[N], 1);
	cr_assert_geq(crashed, 1);
	cr_assert_geq(ok, N / 2, "the other lane's calls all succeed");
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(9));
	cr_assert_eq(c.result.i64, 9);
	kt_destroy(p);
}

static void restart_budget_on(uint32_t workers, uint32_t topo)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.topology = topo;
	o.respawn_max = 2;
	/* Every respawn at once: a second crash in a row of one lane would
	 * back off, and a respawn still waiting when the pool fails is never
	 * spawned (nor counted). The backoff: test_proc_restart. */
	o.respawn_backoff_ms = KNIT_ZERO;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	for (int i = 0; i < 3; i++) {
		knit_completion_t c = kt_proc_call(p, "abort", kt_none());
		cr_assert_eq(c.status, -KNIT_ECRASHED);
	}
	/* Three crashes with a budget of two: the pool failed. */
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED);
	knit_completion_t c;
	cr_assert_eq(knit_call(p, kt_id(p, "echo"), &a, &c, -1), -KNIT_ECRASHED);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 3);
	cr_assert_eq(s.respawns, 2);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

KT(proc, restart_budget_ends_a_crash_loop) { restart_budget_on(1, KNIT_TOPOLOGY_AUTO); }
KT(proc, steal_restart_budget_ends_a_crash_loop) { restart_budget_on(2, KNIT_TOPOLOGY_STEAL); }

KT(proc, no_respawn)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.respawn_max = KNIT_ZERO;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	knit_completion_t c = kt_proc_call(p, "exit", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED);
	kt_destroy(p);
}

/* A pool that fails past respawn_max with calls waiting in its backlog
 * completes them all -KNIT_ECRASHED, and its stats say nothing waits any
 * more: backlog 0, as pending. */
KT(proc, failed_pool_empties_its_backlog)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.respawn_max = KNIT_ZERO;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	enum { kWaiting = 300 };
	kt_enq(p, kt_id(p, "sleep"), kt_i64(100), NULL);
	kt_enq(p, kt_id(p, "exit"), kt_none(), NULL);
	for (int i = 0; i < kWaiting; i++)
		kt_enq(p, kt_id(p, "echo"), kt_i64(i), NULL);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_gt(s.backlog, 0, "some calls wait in the backlog (lane slots: fewer than %d)",
		     kWaiting);
	static knit_completion_t out[kWaiting + 2];
	const int got = kt_reap(p, out, kWaiting + 2);
	cr_assert_eq(got, kWaiting + 2);
	int crashed = 0;
	for (int i = 0; i < got; i++) {
		cr_assert(out[i].status == 0 || out[i].status == -KNIT_ECRASHED, "status %d",
			  out[i].status);
		crashed += out[i].status == -KNIT_ECRASHED;
	}
	/* The sleep's result may not have left the worker before its exit. */
	cr_assert_geq(crashed, kWaiting + 1,
		      "every call after the sleep fails with the pool (%d of %d)", crashed, got);
	for (int i = 0; i < got; i++)
		knit_completion_release(p, &out[i]);
	kt_stats(p, &s);
	cr_assert_eq(s.pending, 0);
	cr_assert_eq(s.backlog, 0, "stats.backlog is a current value: nothing waits");
	cr_assert_eq(s.crashes, 1);
	kt_destroy(p);
}

/* Calls pinned to a worker process's lane start in the order they were
 * enqueued there, whether they found room at once or waited in the
 * backlog: each "prev" call returns the argument of the call its worker
 * ran before, which must be the one pinned there before it. */
KT(proc, pinned_calls_start_in_order_per_lane)
{
	knit_pool_t *p = proc_pool_t(2, KNIT_TOPOLOGY_LANES);
	const uint32_t prev = kt_id(p, "prev");
	enum { kCalls = 20000 };
	static int64_t want[kCalls]; /* the call pinned to the same lane before */
	int64_t last[2] = {-1, -1};
	uint32_t rng = 777;
	int reaped = 0, wrong = 0;
	knit_completion_t c[64];
	for (int i = 0; i <= kCalls; i++) {
		if (i < kCalls) {
			rng = rng * 1103515245u + 12345u;
			const uint32_t lane = (rng >> 16) % 4 == 0 ? 1 : 0;
			want[i] = last[lane];
			last[lane] = i;
			knit_value_t v = kt_i64(i);
			knit_call_options_t o = {
				.size = sizeof o, .flags = KNIT_CALL_LANE, .lane = lane};
			int rc;
			while ((rc = knit_enqueue_ex(p, prev, &v, (void *)(intptr_t)i, &o, NULL)) ==
			       -KNIT_EAGAIN) {
				const int n = knit_complete(p, c, 64, (int64_t)(KT_BOUND_S * 1e9));
				cr_assert_gt(n, 0);
				for (int k = 0; k < n; k++) {
					wrong += c[k].status != 0 ||
						 c[k].result.i64 != want[(intptr_t)c[k].user_data];
					knit_completion_release(p, &c[k]);
				}
				reaped += n;
			}
			cr_assert_eq(rc, 0, "enqueue %d: %s", i, knit_strerror(rc));
		}
		const int n = knit_complete(p, c, 64, i < kCalls ? 0 : (int64_t)(KT_BOUND_S * 1e9));
		cr_assert_geq(n, 0);
		for (int k = 0; k < n; k++) {
			wrong += c[k].status != 0 ||
				 c[k].result.i64 != want[(intptr_t)c[k].user_data];
			knit_completion_release(p, &c[k]);
		}
		reaped += n;
		if (i == kCalls && reaped < kCalls) {
			cr_assert_gt(n, 0, "%d of %d completed", reaped, kCalls);
			i--; /* reap the rest (each round is bounded by KT_BOUND_S) */
		}
	}
	cr_assert_eq(reaped, kCalls);
	cr_expect_eq(wrong, 0,
		     "%d of %d pinned calls did not start right after the one pinned there before",
		     wrong, kCalls);
	kt_destroy(p);
}

/* ---- cleanup ---------------------------------------------------------------------- */

KT(proc, destroy_leaves_nothing)
{
	const int fds = count_fds();
	cr_assert_eq(kt_count_children(), 0);
	for (int round = 0; round < 3; round++) {
		knit_pool_t *p = proc_pool(2);
		knit_completion_t c = kt_proc_call(p, "echo", kt_i64(round));
		cr_assert_eq(c.result.i64, round);
		cr_assert_eq(knit_completion_fd(p) >= 0, 1);
		cr_assert_eq(kt_count_children(), 2);
		kt_enq(p, kt_id(p, "sleep"), kt_i64(5000), NULL); /* destroy cancels it */
		kt_destroy(p);
		cr_assert_eq(kt_count_children(), 0, "no child, no zombie");
		cr_assert_eq(count_fds(), fds, "no descriptor");
	}
	/* Nothing of ours in the mappings either. */
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	while (fgets(line, sizeof line, f))
		cr_assert_null(strstr(line, "memfd:knitting"), "mapping left: %s", line);
	fclose(f);
}

KT(proc, destroy_kills_a_stuck_worker)
{
	knit_pool_t *p = proc_pool(1);
	kt_enq(p, kt_id(p, "spin"), kt_none(), NULL);
	kt_sleep_ms(50);
	kt_destroy(p); /* the worker never acknowledges: SIGKILL after the grace */
	cr_assert_eq(kt_count_children(), 0);
}

/* The host is killed: its worker processes die with it. */
KT(proc, children_die_with_the_host)
{
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t host = fork();
	cr_assert_geq(host, 0);
	if (host == 0) {
		close(pfd[0]);
		knit_pool_t *p = proc_pool_t(2, KNIT_TOPOLOGY_LANES);
		for (int i = 0; i < 2; i++) /* both lanes: round robin */
			kt_enq(p, kt_id(p, "pid"), kt_none(), NULL);
		knit_completion_t out[2];
		if (kt_reap(p, out, 2) != 2)
			_exit(1);
		int64_t pids[2] = {out[0].result.i64, out[1].result.i64};
		(void)!write(pfd[1], pids, sizeof pids);
		for (;;)
			pause();
	}
	close(pfd[1]);
	int64_t pids[2];
	cr_assert_eq(read(pfd[0], pids, sizeof pids), (ssize_t)sizeof pids);
	cr_assert(pids[0] > 0 && pids[1] > 0);
	kill(host, SIGKILL);
	waitpid(host, NULL, 0);
	/* Poll (bounded) until both are gone; their parent was the host, so
	 * init reaps them. */
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	for (;;) {
		int alive = 0;
		for (int i = 0; i < 2; i++)
			if (kill((pid_t)pids[i], 0) == 0) {
				char path[64], st = 0;
				snprintf(path, sizeof path, "/proc/%d/stat", (int)pids[i]);
				FILE *f = fopen(path, "r");
				if (f != NULL) {
					int pid;
					char comm[64];
					if (fscanf(f, "%d %63s %c", &pid, comm, &st) == 3 &&
					    st != 'Z')
						alive++;
					fclose(f);
				}
			}
		if (alive == 0)
			break;
		cr_assert_lt(kt_now_ns(), end, "worker processes outlived their host");
		kt_sleep_ms(10);
	}
	close(pfd[0]);
}

KT(proc, stop_drain_then_destroy)
{
	knit_pool_t *p = proc_pool(2);
	enum { N = 40 };
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, "sleep"), kt_i64(2), NULL);
	cr_assert_eq(knit_stop(p, KNIT_STOP_DRAIN, (int64_t)(KT_BOUND_S * 1e9)), 0);
	knit_completion_t out[N + 1];
	int got = 0;
	for (;;) {
		int n = knit_complete(p, out + got, N + 1 - got, 0);
		if (n == -KNIT_ECLOSED)
			break;
		cr_assert_geq(n, 0);
		got += n;
		cr_assert_leq(got, N);
	}
	cr_assert_eq(got, N, "every drained call completed once");
	for (int i = 0; i < N; i++) {
		cr_assert_eq(out[i].status, 0);
		knit_completion_release(p, &out[i]);
	}
	/* The workers acknowledged and exit on their own: the monitor reaps
	 * them, nothing counts as a crash. */
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (kt_count_children() != 0) {
		cr_assert_lt(kt_now_ns(), end, "stopped workers did not exit");
		kt_sleep_ms(5);
	}
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.respawns, 0);
	kt_destroy(p);
}

/* A fork child's destroy closes its copies and leaves the parent's workers
 * alone. */
KT(proc, fork_child_destroy)
{
	knit_pool_t *p = proc_pool(1);
	knit_completion_t c = kt_proc_call(p, "pid", kt_none());
	const int64_t worker = c.result.i64;
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		knit_value_t a = kt_i64(1);
		knit_ticket_t t;
		int ok = knit_enqueue(p, 0, &a, NULL, &t) == -KNIT_ECLOSED &&
			 knit_pool_destroy(p) == 0;
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	c = kt_proc_call(p, "pid", kt_none());
	cr_assert_eq(c.result.i64, worker, "the same worker still serves the parent");
	kt_destroy(p);
}

/* knit-worker started by anything but the library refuses. */
KT(proc, worker_refuses_foreign_command_lines)
{
	const char *w = KT_BUILD_DIR "/libexec/knitting/knit-worker";
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s >/dev/null 2>&1", w);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "no boot record: usage, exit 2");
	snprintf(cmd, sizeof cmd, "%s --knit-boot 00112233445566778899aabbccddeeff %s 2>/dev/null",
		 w, KT_PROC_LIB);
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1,
		  "a boot record of another version: refused");
}

/* Results a worker published before it died are delivered, also when no
 * host thread reaped them before the death was noticed. */
KT(proc, published_results_survive_the_crash)
{
	knit_pool_t *p = proc_pool(1);
	knit_ticket_t t[3];
	t[0] = kt_enq(p, kt_id(p, "sleep"), kt_i64(2), (void *)1);
	t[1] = kt_enq(p, kt_id(p, "sleep"), kt_i64(2), (void *)2);
	t[2] = kt_enq(p, kt_id(p, "abort"), kt_none(), (void *)3);
	/* No knit_complete until the monitor handled the death. */
	knit_pool_stats_t s;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	do {
		cr_assert_lt(kt_now_ns(), end, "the crash was not noticed");
		kt_sleep_ms(5);
		kt_stats(p, &s);
	} while (s.respawns == 0);
	knit_completion_t out[3];
	cr_assert_eq(kt_reap(p, out, 3), 3);
	for (int i = 0; i < 3; i++) {
		const int k = (int)(intptr_t)out[i].user_data;
		cr_assert_eq(out[i].ticket, t[k - 1]);
		if (k == 1) /* published before the abort ran, whatever the batches */
			cr_assert_eq(out[i].status, 0);
		else if (k == 2) /* published, or in the abort's batch */
			cr_assert(out[i].status == 0 || out[i].status == -KNIT_ECRASHED);
		else
			cr_assert_eq(out[i].status, -KNIT_ECRASHED);
		knit_completion_release(p, &out[i]);
	}
	cr_assert_eq(knit_complete(p, out, 1, 0), 0, "one completion each");
	kt_destroy(p);
}

/* The abort bit crosses the process boundary (the bitmap is in the shared
 * mapping). */
KT(proc, cancel_signal_reaches_the_worker_process)
{
	knit_pool_t *p = proc_pool(1);
	knit_ticket_t t =
		kt_enq_ex(p, kt_id(p, "aborted"), kt_none(), NULL, KNIT_CALL_ABORTABLE, 0, 0);
	kt_sleep_ms(20);
	cr_assert_eq(knit_cancel(p, t, KNIT_CANCEL_SIGNAL), 0);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 1, "the task saw its abort bit");
	kt_destroy(p);
}
