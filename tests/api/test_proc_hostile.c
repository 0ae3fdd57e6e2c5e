/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_hostile.c - process pools against hostile worker
 * processes (task library build/tests/lib/proc_hostile.so): a worker that
 * forges a word is killed and respawned, its calls fail with -KNIT_EPROTO,
 * and a task library that keeps doing it ends in a pool failure; a worker
 * that clears the doorbell's armed word cannot strand a waiting host, nor
 * (where the kernel has futex_waitv) make it poll; a
 * scribbler writing random bytes over its lane while the host runs
 * thousands of calls leaves the host alive with every call completed
 * exactly once.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kt.h"

#define HOSTILE_LIB KT_BUILD_DIR "/tests/lib/proc_hostile.so"

/* Tests that pin calls to a lane use the lanes topology (pinning needs it). */
static knit_pool_t *hostile_pool_t(uint32_t workers, uint32_t hard_timeout_ms, uint32_t respawn_max,
				   uint32_t topo)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = topo;
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.task_library = HOSTILE_LIB;
	o.hard_timeout_ms = hard_timeout_ms;
	o.respawn_max = respawn_max;
	knit_pool_t *p = NULL;
	int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "process pool create: %s", knit_strerror(rc));
	return p;
}

static knit_pool_t *hostile_pool(uint32_t workers, uint32_t hard_timeout_ms, uint32_t respawn_max)
{
	return hostile_pool_t(workers, hard_timeout_ms, respawn_max, KNIT_TOPOLOGY_LANES);
}

/* One call pinned to `lane`, reaped (nothing else in flight). */
static knit_completion_t on_lane(knit_pool_t *p, const char *task, knit_value_t arg, uint32_t lane)
{
	kt_enq_ex(p, kt_id(p, task), arg, NULL, KNIT_CALL_LANE, 0, lane);
	knit_completion_t c;
	kt_reap1(p, &c);
	return c;
}

/* ---- a forged word: kill and respawn (not a retired lane) ------------------------- */

/* Worker 0 forges its running stamp to name a call worker 1 holds (a word
 * no honest worker writes). The host kills worker 0 and respawns it: the
 * calls lane 0 held end -KNIT_EPROTO, worker 1's call is untouched, lane 0
 * serves again in a new process, and the kill counts as a crash. */
static void forge_round(knit_pool_t *p, uint64_t *pid)
{
	enum { ECHOES = 3 };
	/* The call to name: held by worker 1 long enough to be looked at. */
	const knit_ticket_t victim =
		kt_enq_ex(p, kt_id(p, "sleep"), kt_i64(1500), (void *)1, KNIT_CALL_LANE, 0, 1);
	kt_enq_ex(p, kt_id(p, "forge"), kt_i64((int64_t)victim), (void *)2, KNIT_CALL_LANE, 0, 0);
	for (int i = 0; i < ECHOES; i++)
		kt_enq_ex(p, kt_id(p, "echo"), kt_i64(100 + i), (void *)(intptr_t)(3 + i),
			  KNIT_CALL_LANE, 0, 0);
	knit_completion_t out[2 + ECHOES];
	cr_assert_eq(kt_reap(p, out, 2 + ECHOES), 2 + ECHOES);
	int seen[3 + ECHOES] = {0};
	for (int i = 0; i < 2 + ECHOES; i++) {
		const int k = (int)(intptr_t)out[i].user_data;
		cr_assert(k >= 1 && k < 3 + ECHOES && seen[k]++ == 0, "completion %d twice", k);
		if (k == 1) {
			cr_assert_eq(out[i].status, 0, "the other lane's call: %s",
				     knit_strerror(out[i].status));
			cr_assert_eq(out[i].result.i64, 1500);
		} else if (k == 2) {
			cr_assert_eq(out[i].status, -KNIT_EPROTO, "the forger's call: %s",
				     knit_strerror(out[i].status));
		} else {
			/* Placed on lane 0 behind the forger: failed with it, or
			 * (placed only after the kill) run by the new worker. */
			cr_assert(out[i].status == -KNIT_EPROTO ||
					  (out[i].status == 0 && out[i].result.i64 == 100 + k - 3),
				  "echo on the forger's lane: %s", knit_strerror(out[i].status));
		}
		knit_completion_release(p, &out[i]);
	}
	/* Lane 0 serves again, in a new process. */
	knit_completion_t c = on_lane(p, "pid", kt_none(), 0);
	cr_assert_eq(c.status, 0, "lane 0 after the kill: %s", knit_strerror(c.status));
	cr_assert_neq((uint64_t)c.result.i64, *pid, "lane 0 was respawned");
	*pid = (uint64_t)c.result.i64;
}

KT(proc_hostile, forged_stamp_kills_and_respawns_the_forger)
{
	/* The running stamp is looked at only with a hard timeout. */
	knit_pool_t *p = hostile_pool(2, 10000, 0);
	knit_completion_t c = on_lane(p, "pid", kt_none(), 0);
	uint64_t pid = (uint64_t)c.result.i64;
	forge_round(p, &pid);
	c = on_lane(p, "echo", kt_i64(7), 1);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 7);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_geq(s.proto_errors, 1);
	cr_assert(s.spawns == 3 && s.respawns == 1 && s.crashes == 1 && s.hard_kills == 0,
		  "spawns %llu respawns %llu crashes %llu hard_kills %llu",
		  (unsigned long long)s.spawns, (unsigned long long)s.respawns,
		  (unsigned long long)s.crashes, (unsigned long long)s.hard_kills);
	cr_assert_eq(s.enqueued, s.completed);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* Protocol kills count against the respawn budget: a task library that
 * keeps forging ends in a pool failure, not a respawn loop. */
KT(proc_hostile, forging_exhausts_the_respawn_budget)
{
	knit_pool_t *p = hostile_pool(2, 10000, 1);
	knit_completion_t c = on_lane(p, "pid", kt_none(), 0);
	uint64_t pid = (uint64_t)c.result.i64;
	forge_round(p, &pid); /* crash 1 of 1: respawned */
	const knit_ticket_t victim =
		kt_enq_ex(p, kt_id(p, "sleep"), kt_i64(1500), (void *)1, KNIT_CALL_LANE, 0, 1);
	kt_enq_ex(p, kt_id(p, "forge"), kt_i64((int64_t)victim), (void *)2, KNIT_CALL_LANE, 0, 0);
	knit_completion_t out[2];
	cr_assert_eq(kt_reap(p, out, 2), 2);
	for (int i = 0; i < 2; i++) {
		/* The forger's call fails with -KNIT_EPROTO; the pool failed
		 * with it, so the other lane's call ends -KNIT_ECRASHED (or 0,
		 * had it finished first). */
		if ((intptr_t)out[i].user_data == 2)
			cr_assert_eq(out[i].status, -KNIT_EPROTO, "%s",
				     knit_strerror(out[i].status));
		else
			cr_assert(out[i].status == -KNIT_ECRASHED || out[i].status == 0, "%s",
				  knit_strerror(out[i].status));
		knit_completion_release(p, &out[i]);
	}
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert(s.crashes == 2 && s.respawns == 1 && s.spawns == 3,
		  "spawns %llu respawns %llu crashes %llu", (unsigned long long)s.spawns,
		  (unsigned long long)s.respawns, (unsigned long long)s.crashes);
	cr_assert_eq(s.enqueued, s.completed);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* A worker process that stops though nobody asked it to (it wrote its own
 * stop word, then acknowledged and exited cleanly) died unasked: a crash,
 * counted against the budget. Were it free, a task library could make its
 * pool respawn workers forever. */
KT(proc_hostile, unasked_clean_exit_is_a_crash)
{
	knit_pool_t *p = hostile_pool(1, 0, KNIT_ZERO);
	knit_completion_t c = on_lane(p, "selfstop", kt_i64(5), 0);
	cr_assert(c.status == 0 || c.status == -KNIT_ECRASHED, "%s", knit_strerror(c.status));
	knit_completion_release(p, &c);
	knit_pool_stats_t s;
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	do {
		kt_sleep_ms(1);
		kt_stats(p, &s);
	} while (s.crashes + s.respawns == 0 && kt_now_ns() < end);
	cr_assert(s.crashes == 1 && s.respawns == 0, "crashes %llu respawns %llu",
		  (unsigned long long)s.crashes, (unsigned long long)s.respawns);
	/* No respawn left: the pool failed. */
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* A worker process whose task keeps its stop word at RUNNING never sees a
 * stop, so it never acknowledges one: knit_stop, even without a timeout,
 * kills it (a protocol error) and returns; destroy leaves no child. */
KT(proc_hostile, rewritten_stop_word_cannot_hang_stop)
{
	knit_pool_t *p = hostile_pool(2, 0, 0);
	char path[64];
	snprintf(path, sizeof path, "/tmp/knit-unstop-%d", (int)getpid());
	unlink(path);
	kt_enq_ex(p, kt_id(p, "unstop"), kt_str(path, strlen(path)), NULL, KNIT_CALL_LANE, 0, 0);
	knit_completion_t c = on_lane(p, "echo", kt_i64(3), 1);
	cr_assert_eq(c.status, 0);
	/* The stop comes while the task rewrites the word. */
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (access(path, F_OK) != 0 && kt_now_ns() < end)
		kt_sleep_ms(1);
	cr_assert_eq(access(path, F_OK), 0, "the unstop task did not start");
	unlink(path);
	cr_assert_eq(knit_stop(p, KNIT_STOP_CANCEL, -1), 0);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_geq(s.proto_errors, 1);
	cr_assert_eq(s.respawns, 0, "no respawn while stopping");
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- the doorbell: a cleared armed word strands nobody ----------------------------- */

/* Worker 0 keeps the doorbell's armed word at 0, so worker 1 never rings;
 * the host still sees each of worker 1's results (its doorbell sleep is
 * bounded for process pools). The waits have no timeout: a host that
 * relied on the ring alone sleeps for good here (nothing else rings, not
 * even the disarmer's own result), and the test's timeout reports it. */
KT(proc_hostile, cleared_armed_word_strands_no_waiter)
{
	knit_pool_t *p = hostile_pool(2, 0, 0);
	kt_enq_ex(p, kt_id(p, "disarm"), kt_i64(4000), (void *)1, KNIT_CALL_LANE, 0, 0);
	for (int i = 0; i < 10; i++) {
		/* Long enough that the host stops spinning and sleeps. */
		kt_enq_ex(p, kt_id(p, "sleep"), kt_i64(20), (void *)2, KNIT_CALL_LANE, 0, 1);
		knit_completion_t c;
		const int n = knit_complete(p, &c, 1, -1);
		cr_assert_eq(n, 1, "call %d: the host slept through worker 1's result", i);
		cr_assert_eq((intptr_t)c.user_data, 2);
		cr_assert_eq(c.status, 0);
		knit_completion_release(p, &c);
	}
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq((intptr_t)c.user_data, 1);
	cr_assert_eq(c.status, 0);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* Does the kernel have futex_waitv (Linux 5.16+; qemu-user answers ENOSYS)?
 * With it, a process pool's host sleeps on every worker's own ring page and
 * needs no watchdog; without it, it looks every 100 ms (libknitting(7)). */
static int have_futex_waitv(void)
{
	/* The pool's own probe (src/proc.cpp): no waiters -> EINVAL where it exists. */
	return syscall(449, NULL, 0, 0, NULL, 1) == -1 && errno == EINVAL;
}

/* A host blocked in knit_complete(-1) for about a second, while worker 1
 * runs one long call and worker 0 is idle, arms the doorbell once per
 * sleep and sleeps until the ring: no watchdog re-arms it every 100 ms
 * (ten of them a second). Counted: doorbell arms, not time. */
KT(proc_hostile, idle_wait_is_not_polled)
{
	knit_pool_t *p = hostile_pool(2, 0, 0);
	knit_pool_stats_t s0, s1;
	kt_stats(p, &s0);
	kt_enq_ex(p, kt_id(p, "sleep"), kt_i64(1000), (void *)2, KNIT_CALL_LANE, 0, 1);
	knit_completion_t c;
	cr_assert_eq(knit_complete(p, &c, 1, -1), 1);
	cr_assert_eq((intptr_t)c.user_data, 2);
	cr_assert_eq(c.status, 0);
	knit_completion_release(p, &c);
	kt_stats(p, &s1);
	const uint64_t arms = s1.doorbell_arms - s0.doorbell_arms;
	cr_log_info("futex_waitv %s: %llu doorbell arms in a 1 s wait",
		    have_futex_waitv() ? "yes" : "no", (unsigned long long)arms);
	if (have_futex_waitv())
		cr_assert_leq(arms, 3, "%llu arms: the host was woken while nothing rang",
			      (unsigned long long)arms);
	else
		cr_assert_geq(arms, 1);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* Worker 0 clears every armed word it can reach (the pool header's and its
 * own ring page's) for a second while worker 1 answers a call after 500 ms:
 * the host, blocked in knit_complete(-1), is rung by worker 1 through
 * worker 1's own page (no watchdog: the arms stay few). Worker 0 delays
 * only its own result, as a worker that has not answered does. */
KT(proc_hostile, self_disarmer_cannot_silence_a_peer)
{
	knit_pool_t *p = hostile_pool(2, 0, 0);
	knit_pool_stats_t s0, s1;
	kt_stats(p, &s0);
	kt_enq_ex(p, kt_id(p, "disarm"), kt_i64(1000), (void *)1, KNIT_CALL_LANE, 0, 0);
	kt_enq_ex(p, kt_id(p, "sleep"), kt_i64(500), (void *)2, KNIT_CALL_LANE, 0, 1);
	knit_completion_t c;
	cr_assert_eq(knit_complete(p, &c, 1, -1), 1);
	cr_assert_eq((intptr_t)c.user_data, 2, "worker 1's result comes first");
	cr_assert_eq(c.status, 0);
	knit_completion_release(p, &c);
	kt_stats(p, &s1);
	const uint64_t arms = s1.doorbell_arms - s0.doorbell_arms;
	cr_log_info("futex_waitv %s: %llu doorbell arms before worker 1's result",
		    have_futex_waitv() ? "yes" : "no", (unsigned long long)arms);
	if (have_futex_waitv())
		cr_assert_leq(arms, 3, "%llu arms: the host polled", (unsigned long long)arms);
	/* Its own result it may have left unrung (it clears its word up to
	 * its return): a bounded reap, which re-checks, takes it. */
	kt_reap1(p, &c);
	cr_assert_eq((intptr_t)c.user_data, 1);
	cr_assert_eq(c.status, 0);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- the completion fd: a hider hides only its own results ------------------------ */

/* Worker 0 keeps every "completion fd on" flag it can reach cleared (the
 * pool header's and its own ring page's) and drains the bridge eventfd it
 * was given, for 3 s; worker 1 answers a call after 200 ms. The completion
 * fd must become readable with worker 1's result alone: through worker 1's
 * own flag and bridge (ring pages), or the monitor's 100 ms sync where
 * there are none. With one shared flag and bridge the hider kept it low
 * until it returned, and its own result (it cleared the flag) never raised
 * it at all: the poll below ran out. Counted: what is ready when the fd
 * says so. */
KT(proc_hostile, hider_cannot_hide_a_peer_from_the_completion_fd)
{
	knit_pool_t *p = hostile_pool(2, 0, 0);
	const int fd = knit_completion_fd(p);
	cr_assert_geq(fd, 0, "knit_completion_fd: %s", knit_strerror(fd));
	kt_enq_ex(p, kt_id(p, "hide"), kt_i64(3000), (void *)1, KNIT_CALL_LANE, 0, 0);
	kt_enq_ex(p, kt_id(p, "sleep"), kt_i64(200), (void *)2, KNIT_CALL_LANE, 0, 1);
	struct pollfd pfd = {fd, POLLIN, 0};
	int r;
	while ((r = poll(&pfd, 1, 10000)) < 0 && errno == EINTR) {
	}
	cr_assert_eq(
		r, 1,
		"the completion fd never became readable (poll %d): worker 1's result was hidden",
		r);
	knit_completion_t c[2];
	const int n = knit_complete(p, c, 2, 0);
	cr_assert_eq(n, 1, "%d completions when the fd rose: only worker 1's should be there", n);
	cr_assert_eq((intptr_t)c[0].user_data, 2, "worker 1's result raised the fd");
	cr_assert_eq(c[0].status, 0);
	knit_completion_release(p, &c[0]);
	/* The hider's own result: a reap that waits takes it (the fd may stay
	 * low for it, which hurts no one but its own caller). */
	kt_reap1(p, &c[0]);
	cr_assert_eq((intptr_t)c[0].user_data, 1);
	cr_assert_eq(c[0].status, 0);
	knit_completion_release(p, &c[0]);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- the scribbler ----------------------------------------------------------------- */

static int status_allowed(int32_t s)
{
	/* A scribbled frame may pass validation with any status a worker may
	 * send; everything else is the host's verdict. */
	return s == 0 || s == -KNIT_ETASK || s == -KNIT_ETOOBIG || s == -KNIT_ENOMEM ||
	       s == -KNIT_EPROTO || s == -KNIT_ECRASHED || s == -KNIT_ETIMEDOUT ||
	       s == -KNIT_ECLOSED;
}

/* Lanes: the scribbler writes over its lane block and its running stamp.
 * Steal: also over its words of the steal control block (its ACK/CLAIM
 * pair and its WANT), the claim words the host reads when it attributes
 * claims and reaps a dead worker's claim. */
static void scribbler(uint32_t topo)
{
	enum { N = 6000, EVERY = 150 };
	uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
	const char *env = getenv("KNIT_SCRIBBLE_SEED");
	if (env != NULL && env[0] != 0)
		seed = strtoull(env, NULL, 0);
	/* A scribble may cost its worker: leave the pool enough respawns to
	 * keep serving (the budget has its own test above). */
	knit_pool_t *p = hostile_pool_t(2, 0, 1000, topo);
	static uint8_t done[N];
	static uint8_t queued[N];
	memset(done, 0, sizeof done);
	memset(queued, 0, sizeof queued);
	const uint32_t echo = kt_id(p, "echo"), scribble = kt_id(p, "scribble");
	int enqueued = 0, completed = 0, failed_pool = 0;
	int by_status[16] = {0};
	knit_completion_t out[64];
	for (int i = 0; i < N; i++) {
		knit_call_options_t o;
		memset(&o, 0, sizeof o);
		o.size = sizeof o;
		o.timeout_ms = 2000; /* a call hidden by a scribble still ends */
		const int is_scribble = i % EVERY == EVERY / 2;
		knit_value_t a = kt_i64(is_scribble ? (int64_t)(seed + (uint64_t)i) : i);
		knit_ticket_t t;
		int rc;
		while ((rc = knit_enqueue_ex(p, is_scribble ? scribble : echo, &a,
					     (void *)(intptr_t)i, &o, &t)) == -KNIT_EAGAIN) {
			const int n = knit_complete(p, out, 64, 10ll * 1000 * 1000);
			for (int k = 0; k < n; k++) {
				const int j = (int)(intptr_t)out[k].user_data;
				cr_assert(j >= 0 && j < N && queued[j] && done[j]++ == 0,
					  "seed %llu: call %d twice", (unsigned long long)seed, j);
				cr_assert(status_allowed(out[k].status),
					  "seed %llu: call %d status %d", (unsigned long long)seed,
					  j, out[k].status);
				by_status[-out[k].status & 15]++;
				completed++;
				knit_completion_release(p, &out[k]);
			}
		}
		if (rc == -KNIT_ECRASHED) {
			failed_pool++; /* out of respawns: nothing was enqueued */
			continue;
		}
		cr_assert_eq(rc, 0, "seed %llu: enqueue %d: %s", (unsigned long long)seed, i,
			     knit_strerror(rc));
		queued[i] = 1;
		enqueued++;
	}
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (completed < enqueued && kt_now_ns() < end) {
		const int n = knit_complete(p, out, 64, 100ll * 1000 * 1000);
		for (int k = 0; k < n; k++) {
			const int j = (int)(intptr_t)out[k].user_data;
			cr_assert(j >= 0 && j < N && queued[j] && done[j]++ == 0,
				  "seed %llu: call %d twice", (unsigned long long)seed, j);
			cr_assert(status_allowed(out[k].status), "seed %llu: call %d status %d",
				  (unsigned long long)seed, j, out[k].status);
			by_status[-out[k].status & 15]++;
			completed++;
			knit_completion_release(p, &out[k]);
		}
	}
	cr_assert_eq(completed, enqueued, "seed %llu: %d of %d calls completed",
		     (unsigned long long)seed, completed, enqueued);
	for (int i = 0; i < N; i++)
		cr_assert_eq(done[i], queued[i], "seed %llu: call %d", (unsigned long long)seed, i);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.enqueued, (uint64_t)enqueued, "seed %llu", (unsigned long long)seed);
	cr_assert_eq(s.completed, s.enqueued, "seed %llu", (unsigned long long)seed);
	cr_assert_eq(s.pending, 0, "seed %llu", (unsigned long long)seed);
	/* The scribbles did something the host had to catch. */
	cr_assert_gt(s.proto_errors + s.crashes, 0, "seed %llu: no scribble was noticed",
		     (unsigned long long)seed);
	cr_log_info("seed %llu: %d enqueued, ok %d, EPROTO %d, ECRASHED %d, ETIMEDOUT %d; "
		    "proto_errors %llu "
		    "crashes %llu respawns %llu",
		    (unsigned long long)seed, enqueued, by_status[0], by_status[KNIT_EPROTO & 15],
		    by_status[KNIT_ECRASHED & 15], by_status[KNIT_ETIMEDOUT & 15],
		    (unsigned long long)s.proto_errors, (unsigned long long)s.crashes,
		    (unsigned long long)s.respawns);
	(void)failed_pool;
	knit_stop(p, KNIT_STOP_CANCEL, 2ll * 1000 * 1000 * 1000);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0, "seed %llu", (unsigned long long)seed);
}

KT(proc_hostile, scribbler_leaves_the_host_whole) { scribbler(KNIT_TOPOLOGY_LANES); }
KT(proc_hostile, steal_scribbler_leaves_the_host_whole) { scribbler(KNIT_TOPOLOGY_STEAL); }
