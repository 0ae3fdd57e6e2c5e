/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_requeue.c - a worker process's death on the lanes
 * topology fails only the calls that worker ran or was running: the calls
 * published on its lane that it never started run again (on the respawned
 * worker, or wherever the dispatcher places them), exactly once, each with
 * its own result. The task library's "tally" task appends a byte to a file
 * per run, so the tests count runs, not only completions. A dead worker that
 * lies about what it started (proc_hostile.so's "liar") costs re-runs or
 * failed calls, never a second completion.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"

enum { N = 20 };

struct scratch {
	char dir[64];
	char gate[128];
	char log[128];
	char tally[N][128];
};

static void scratch_init(struct scratch *s)
{
	snprintf(s->dir, sizeof s->dir, "/tmp/kt-requeue-XXXXXX");
	cr_assert(mkdtemp(s->dir) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(s->gate, sizeof s->gate, "%s/gate", s->dir);
	snprintf(s->log, sizeof s->log, "%s/log", s->dir);
	for (int i = 0; i < N; i++)
		snprintf(s->tally[i], sizeof s->tally[i], "%s/t%02d", s->dir, i);
}

static void scratch_fini(struct scratch *s)
{
	unlink(s->gate);
	unlink(s->log);
	for (int i = 0; i < N; i++)
		unlink(s->tally[i]);
	rmdir(s->dir);
}

/* Runs of tally i so far (the file's size). */
static long runs(const struct scratch *s, int i)
{
	struct stat st;
	return stat(s->tally[i], &st) == 0 ? (long)st.st_size : 0;
}

static knit_value_t str_of(const char *path) { return kt_str(path, strlen(path)); }

/* One worker: the tallies ran in the order they were enqueued (the re-run
 * ones are placed again in their order, into an empty lane that its new
 * worker drains in the order it was filled). */
static void check_run_order(const struct scratch *s)
{
	FILE *f = fopen(s->log, "r");
	cr_assert(f != NULL, "no run log");
	char line[64];
	int i = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		char want[64];
		snprintf(want, sizeof want, "t%02d\n", i);
		cr_assert_str_eq(line, want, "run %d", i);
		i++;
	}
	fclose(f);
	cr_assert_eq(i, N);
}

/* Enqueue the gate (user data 1000) and wait until its task runs. */
static void gate_enter(knit_pool_t *p, const struct scratch *s, uint32_t flags, uint32_t lane)
{
	kt_enq_ex(p, kt_id(p, "await"), str_of(s->gate), (void *)(intptr_t)1000, flags, 0, lane);
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (access(s->gate, F_OK) != 0) {
		cr_assert_lt(kt_now_ns(), end, "the gate task never ran");
		kt_sleep_ms(1);
	}
}

/* Wait, without any call into the pool but its stats, until every tally
 * ran (bounded): the re-run calls are placed without a knit_complete. */
static void wait_tallies(knit_pool_t *p, const struct scratch *s)
{
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	for (int i = 0; i < N; i++)
		while (runs(s, i) == 0) {
			knit_pool_stats_t st;
			kt_stats(p, &st);
			cr_assert_lt(kt_now_ns(), end, "tally %d never ran (respawns %llu)", i,
				     (unsigned long long)st.respawns);
			kt_sleep_ms(2);
		}
}

/* Reap the gate (1000), the crasher (999) and the N tallies: the crasher
 * ends with `want`, everything else succeeds with its own result, one
 * completion each, and every tally ran exactly once. */
static void reap_and_check(knit_pool_t *p, const struct scratch *s, int32_t want)
{
	knit_completion_t out[N + 2];
	cr_assert_eq(kt_reap(p, out, N + 2), N + 2);
	int seen[N] = {0}, gate = 0, crasher = 0;
	for (int i = 0; i < N + 2; i++) {
		const int k = (int)(intptr_t)out[i].user_data;
		if (k == 1000) {
			gate++;
			cr_assert_eq(out[i].status, 0, "gate: %s", knit_strerror(out[i].status));
		} else if (k == 999) {
			crasher++;
			cr_assert_eq(out[i].status, want, "crasher: %s",
				     knit_strerror(out[i].status));
		} else {
			cr_assert(k >= 0 && k < N);
			seen[k]++;
			cr_assert_eq(out[i].status, 0, "tally %d: %s", k,
				     knit_strerror(out[i].status));
			cr_assert_eq(out[i].result.type, KNIT_VALUE_STRING);
			cr_assert_eq(out[i].result.len, strlen(s->tally[k]));
			cr_assert_eq(memcmp(out[i].result.data, s->tally[k], out[i].result.len), 0,
				     "tally %d: its own result", k);
		}
		knit_completion_release(p, &out[i]);
	}
	cr_assert_eq(gate, 1);
	cr_assert_eq(crasher, 1);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(seen[i], 1, "tally %d: one completion", i);
		cr_assert_eq(runs(s, i), 1, "tally %d ran %ld times", i, runs(s, i));
	}
	knit_completion_t extra;
	cr_assert_eq(knit_complete(p, &extra, 1, 0), 0, "nothing more");
}

/* One worker: the gate runs; the crasher and N tallies are published
 * behind it (the worker is inside the gate: none of them is started);
 * the gate opens, the crasher kills the worker. */
static void crash_requeues(const char *task)
{
	struct scratch s;
	scratch_init(&s);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	gate_enter(p, &s, 0, 0);
	kt_enq(p, kt_id(p, task), kt_none(), (void *)(intptr_t)999);
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, "tally"), str_of(s.tally[i]), (void *)(intptr_t)i);
	unlink(s.gate);
	wait_tallies(p, &s);
	reap_and_check(p, &s, -KNIT_ECRASHED);
	check_run_order(&s);
	knit_pool_stats_t st;
	kt_stats(p, &st);
	cr_assert_eq(st.spawns, 2);
	cr_assert_eq(st.respawns, 1);
	cr_assert_eq(st.crashes, 1);
	cr_assert_eq(st.pending, 0);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
	scratch_fini(&s);
}

KT(proc_requeue, abort_reruns_the_untaken_calls) { crash_requeues("abort"); }
KT(proc_requeue, segv_reruns_the_untaken_calls) { crash_requeues("segv"); }
KT(proc_requeue, exit_reruns_the_untaken_calls) { crash_requeues("exit"); }

/* The hard timeout kills the worker: only the call over time fails (its
 * timeout code); the calls behind it run again. The timeout is checked by
 * dispatcher passes, so it fires in the reap, after everything is queued. */
KT(proc_requeue, hard_timeout_reruns_the_untaken_calls)
{
	struct scratch s;
	scratch_init(&s);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.hard_timeout_ms = 300;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	gate_enter(p, &s, 0, 0);
	kt_enq(p, kt_id(p, "spin"), kt_none(), (void *)(intptr_t)999);
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, "tally"), str_of(s.tally[i]), (void *)(intptr_t)i);
	unlink(s.gate);
	reap_and_check(p, &s, -KNIT_ETIMEDOUT);
	check_run_order(&s);
	knit_pool_stats_t st;
	kt_stats(p, &st);
	cr_assert_eq(st.hard_kills, 1);
	cr_assert_eq(st.respawns, 1);
	cr_assert_eq(st.crashes, 0);
	cr_assert_eq(st.pending, 0);
	kt_destroy(p);
	scratch_fini(&s);
}

/* Two lanes: the gate and the crasher are pinned to lane 0; the tallies
 * alternate between pinned to lane 0, pinned to lane 1, and unpinned. The
 * other lane's calls are untouched, lane 0's untaken ones run again (the
 * pinned ones on lane 0's new worker). */
KT(proc_requeue, two_lanes_crash_reruns_only_the_lost_lane)
{
	struct scratch s;
	scratch_init(&s);
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	gate_enter(p, &s, KNIT_CALL_LANE, 0);
	kt_enq_ex(p, kt_id(p, "abort"), kt_none(), (void *)(intptr_t)999, KNIT_CALL_LANE, 0, 0);
	for (int i = 0; i < N; i++) {
		const uint32_t pin = i % 3 == 2 ? 0 : KNIT_CALL_LANE;
		kt_enq_ex(p, kt_id(p, "tally"), str_of(s.tally[i]), (void *)(intptr_t)i, pin, 0,
			  (uint32_t)(i % 3));
	}
	unlink(s.gate);
	wait_tallies(p, &s);
	reap_and_check(p, &s, -KNIT_ECRASHED);
	knit_pool_stats_t st;
	kt_stats(p, &st);
	cr_assert_eq(st.spawns, 3);
	cr_assert_eq(st.respawns, 1);
	cr_assert_eq(st.crashes, 1);
	kt_destroy(p);
	scratch_fini(&s);
}

/* No respawn (budget 0): the pool fails, and every call not completed
 * ends -KNIT_ECRASHED, exactly once; none of them runs again. */
KT(proc_requeue, failed_pool_fails_every_call_once)
{
	struct scratch s;
	scratch_init(&s);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.respawn_max = KNIT_ZERO;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	gate_enter(p, &s, 0, 0);
	kt_enq(p, kt_id(p, "abort"), kt_none(), (void *)(intptr_t)999);
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, "tally"), str_of(s.tally[i]), (void *)(intptr_t)i);
	unlink(s.gate);
	knit_completion_t out[N + 2];
	cr_assert_eq(kt_reap(p, out, N + 2), N + 2);
	int seen[N] = {0};
	for (int i = 0; i < N + 2; i++) {
		const int k = (int)(intptr_t)out[i].user_data;
		if (k == 1000) {
			cr_assert_eq(out[i].status, 0);
		} else if (k == 999) {
			cr_assert_eq(out[i].status, -KNIT_ECRASHED);
		} else {
			cr_assert(k >= 0 && k < N);
			seen[k]++;
			/* A tally that ran before the abort (lock order is not
			 * strictly FIFO) may have its result lost with the worker. */
			cr_assert(out[i].status == -KNIT_ECRASHED ||
					  (out[i].status == 0 && runs(&s, k) == 1),
				  "tally %d: %s", k, knit_strerror(out[i].status));
		}
		knit_completion_release(p, &out[i]);
	}
	for (int i = 0; i < N; i++) {
		cr_assert_eq(seen[i], 1, "tally %d: one completion", i);
		cr_assert_leq(runs(&s, i), 1, "tally %d ran %ld times", i, runs(&s, i));
	}
	knit_completion_t extra;
	int rc = knit_complete(p, &extra, 1, 0);
	cr_assert(rc == 0 || rc == -KNIT_ECLOSED, "nothing more: %d", rc);
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED);
	knit_pool_stats_t st;
	kt_stats(p, &st);
	cr_assert_eq(st.respawns, 0);
	cr_assert_eq(st.crashes, 1);
	kt_destroy(p);
	scratch_fini(&s);
}

/* ---- a dead worker that lies about what it started ------------------------ */

#define HOSTILE_LIB KT_BUILD_DIR "/tests/lib/proc_hostile.so"

static knit_pool_t *liar_pool(uint32_t respawn_max)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.task_library = HOSTILE_LIB;
	o.respawn_max = respawn_max;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	return p;
}

/* Enqueue liar(mode) and N echoes behind it; reap them all: one completion
 * each, the liar -KNIT_ECRASHED, an echo 0 with its own value or
 * -KNIT_ECRASHED. Returns the echoes that succeeded. */
static int liar_round(knit_pool_t *p, int64_t mode)
{
	kt_enq(p, kt_id(p, "liar"), kt_i64(mode), (void *)(intptr_t)999);
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, "echo"), kt_i64(i), (void *)(intptr_t)i);
	knit_completion_t out[N + 1];
	cr_assert_eq(kt_reap(p, out, N + 1), N + 1);
	int seen[N] = {0}, liar = 0, ok = 0;
	for (int i = 0; i < N + 1; i++) {
		const int k = (int)(intptr_t)out[i].user_data;
		if (k == 999) {
			liar++;
			cr_assert_eq(out[i].status, -KNIT_ECRASHED);
		} else {
			cr_assert(k >= 0 && k < N);
			seen[k]++;
			if (out[i].status == 0) {
				cr_assert_eq(out[i].result.i64, k);
				ok++;
			} else {
				cr_assert_eq(out[i].status, -KNIT_ECRASHED);
			}
		}
		knit_completion_release(p, &out[i]);
	}
	cr_assert_eq(liar, 1);
	for (int i = 0; i < N; i++)
		cr_assert_eq(seen[i], 1, "echo %d: one completion", i);
	knit_completion_t extra;
	const int rc = knit_complete(p, &extra, 1, 0);
	cr_assert(rc == 0 || rc == -KNIT_ECLOSED, "nothing more: %d", rc);
	return ok;
}

/* The liar clears its started bit before it dies: its call looks never
 * started and runs again, and again, until the restart budget ends the
 * loop -- the lie costs respawns, never a second completion. */
KT(proc_requeue, cleared_started_mask_reruns_only_until_the_budget)
{
	knit_pool_t *p = liar_pool(2);
	liar_round(p, 0);
	knit_pool_stats_t st;
	kt_stats(p, &st);
	cr_assert_eq(st.crashes, 3, "ran once and twice again: %llu",
		     (unsigned long long)st.crashes);
	cr_assert_eq(st.respawns, 2);
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED,
		     "the pool failed");
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* The liar claims every frame of its lane started and retired: the calls
 * behind it fail instead of running again (the lie costs them, nothing
 * else), and the pool keeps serving. */
KT(proc_requeue, forged_retire_word_fails_calls_never_twice)
{
	knit_pool_t *p = liar_pool(0);
	liar_round(p, 1);
	knit_pool_stats_t st;
	kt_stats(p, &st);
	cr_assert_eq(st.crashes, 1);
	cr_assert_eq(st.respawns, 1);
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(7));
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 7);
	knit_completion_release(p, &c);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}
