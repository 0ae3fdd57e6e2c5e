// SPDX-License-Identifier: MIT
/*
 * trace_pool - a live pool for the knit-trace end-to-end test.
 *
 *   trace_pool GOFILE [TOPOLOGY [COLD_CALLS [HOT_CALLS]]]
 *
 * TOPOLOGY: lanes (KNIT_TOPOLOGY_LANES, the default here), steal
 * (KNIT_TOPOLOGY_STEAL: every call goes through the shared submit queue and
 * is attributed to the lane that ran it) or inline (lanes plus an inline
 * lane, which runs some of the hot calls on this thread). proc-lanes and
 * proc-steal: the same with worker processes (KNIT_WORKERS_PROCESSES,
 * task "echo" of the test task library: $KNIT_TRACE_TASKLIB, by default
 * ../lib/proc_tasks.so beside this program's directory; the knit-worker is
 * the library's default or $KNIT_WORKER_PATH). proc-respawn: proc-lanes, and
 * halfway through the cold calls lane 0's worker process is killed
 * (SIGKILL) while parked; the calls go on once the pool respawned it.
 * proc-sandbox: proc-lanes with the seccomp sandbox over proc_sandbox.so
 * ($KNIT_TRACE_SANDBOXLIB, by default beside proc_tasks.so), and halfway
 * through the cold calls lane 0's worker runs "socket", a violation: it
 * dies (SIGSYS) and the calls go on once the pool respawned it.
 * proc-late: proc-lanes, but the pool is created (and its workers parked)
 * before the go signal, after printing "READY", so knit-trace attaches to
 * running workers; the STATS counters are then those since the go signal.
 *
 * Waits (bounded) until GOFILE exists, so knit-trace can attach before the
 * pool is created; then creates a two-worker pool, runs COLD_CALLS cold calls
 * (each once the target worker - under steal, every worker - has parked again
 * since the previous call),
 * HOT_CALLS hot calls (a burst enqueued at once, so workers find the next call
 * without parking, plus a few knit_call round trips: "knit_calls", and per
 * lane the calls it ran meanwhile), stops the pool with
 * drain and prints the pool's own statistics as one "STATS {json}" line,
 * which tests/trace/check_trace.py compares with what knit-trace saw.
 *
 * Links the shared library: the probes under test are the ones in
 * libknitting.so. Exit 0 when every call completed with the expected result.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <knitting.h>

#define WORKERS 2

static int task_inc(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = arg->i64 + 1;
	return 0;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int get_stats(knit_pool_t *pool, knit_pool_stats_t *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return knit_pool_stats(pool, st, sizeof(*st));
}

/* Wait until lane's worker parked more than `since` times, then give it a
 * millisecond to be asleep in the kernel. Bounded: 10 s. */
static int wait_parked(knit_pool_t *pool, unsigned lane, uint64_t since)
{
	knit_pool_stats_t st;

	for (int i = 0; i < 10000; i++) {
		if (get_stats(pool, &st))
			return -1;
		if (st.lane[lane].parks > since) {
			nap_ms(1);
			return 0;
		}
		nap_ms(1);
	}
	return -1;
}

/* Kill lane 0's worker process while it is parked and wait (bounded: 10 s)
 * until the pool respawned it. *parks: lane 0's parks at the kill (the
 * killed worker's last park is one; its new worker parks after it). */
static int kill_lane0_worker(knit_pool_t *pool, uint32_t pid_task, uint64_t *parks)
{
	knit_call_options_t co = {.size = sizeof(co), .flags = KNIT_CALL_LANE, .lane = 0};
	knit_value_t arg = {.type = KNIT_VALUE_I64, .i64 = 0};
	knit_completion_t done;
	knit_pool_stats_t st;
	uint64_t before;
	pid_t pid;
	int err;

	/* Its parks before the call: it parks again after it (maybe before
	 * knit_call_ex returns). */
	if (get_stats(pool, &st))
		return -1;
	before = st.lane[0].parks;
	err = knit_call_ex(pool, pid_task, &arg, &co, NULL, &done, -1);
	if (err || done.status || done.result.type != KNIT_VALUE_I64) {
		fprintf(stderr, "FAIL: the pid call: %s\n", knit_strerror(err ? err : done.status));
		return -1;
	}
	pid = (pid_t)done.result.i64;
	knit_completion_release(pool, &done);
	if (wait_parked(pool, 0, before) || get_stats(pool, &st)) {
		fprintf(stderr, "FAIL: lane 0 did not park after the pid call\n");
		return -1;
	}
	*parks = st.lane[0].parks;
	if (kill(pid, SIGKILL)) {
		perror("FAIL: kill");
		return -1;
	}
	for (int i = 0; i < 10000; i++) {
		if (get_stats(pool, &st))
			return -1;
		if (st.respawns >= 1)
			return 0;
		nap_ms(1);
	}
	fprintf(stderr, "FAIL: lane 0's worker was not respawned\n");
	return -1;
}

/* Run the violating task on lane 0 (its worker dies of it) and wait
 * (bounded: 10 s) until the pool respawned it. */
static int violate_lane0(knit_pool_t *pool, uint32_t bad_task)
{
	knit_call_options_t co = {.size = sizeof(co), .flags = KNIT_CALL_LANE, .lane = 0};
	knit_value_t arg = {.type = KNIT_VALUE_NONE};
	knit_completion_t done;
	knit_pool_stats_t st;
	int err = knit_call_ex(pool, bad_task, &arg, &co, NULL, &done, -1);

	if (err || done.status != -KNIT_ECRASHED) {
		fprintf(stderr, "FAIL: the violating call: %s\n",
			knit_strerror(err ? err : done.status));
		return -1;
	}
	knit_completion_release(pool, &done);
	for (int i = 0; i < 10000; i++) {
		if (get_stats(pool, &st))
			return -1;
		if (st.respawns >= 1)
			return 0;
		nap_ms(1);
	}
	fprintf(stderr, "FAIL: lane 0's worker was not respawned\n");
	return -1;
}

/* Wait (bounded: 30 s) until `path` exists. */
static int wait_go(const char *path)
{
	for (int i = 0; i < 30000 && access(path, F_OK); i++)
		nap_ms(1);
	if (access(path, F_OK)) {
		fprintf(stderr, "FAIL: no go signal (%s) within 30 s\n", path);
		return -1;
	}
	return 0;
}

static int check_completion(knit_pool_t *pool, knit_completion_t *c, int64_t want)
{
	int ok = c->status == 0 && c->result.type == KNIT_VALUE_I64 && c->result.i64 == want;

	if (!ok)
		fprintf(stderr,
			"FAIL: call completed with status %d, value type %u i64 %lld, "
			"want %lld\n",
			c->status, c->result.type, (long long)c->result.i64, (long long)want);
	knit_completion_release(pool, c);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	knit_task_t tasks[] = {{.name = "inc", .fn = task_inc}};
	knit_pool_options_t opts;
	knit_pool_stats_t st, base;
	knit_pool_t *pool;
	uint64_t last_parks[WORKERS] = {0}, last_calls[WORKERS] = {0};
	int ran[WORKERS] = {0};
	long cold = 20, hot = 200, sync_calls = 10;
	int err, rc = 0;
	char libpath[4096];
	uint32_t task = 0, pid_task = 0;
	int64_t delta = 1; /* inc adds one; the process pools' echo none */
	int killed0 = 0, violated0 = 0;
	uint32_t bad_task = 0;
	knit_sandbox_t sb = {.size = sizeof(sb), .flags = KNIT_SANDBOX_SECCOMP};

	const char *topo = "lanes";

	if (argc < 2) {
		fprintf(stderr, "usage: trace_pool GOFILE [lanes|steal|inline|proc-lanes|"
				"proc-steal|proc-respawn|proc-sandbox|proc-late [COLD_CALLS "
				"[HOT_CALLS]]]\n");
		return 2;
	}
	if (argc > 2)
		topo = argv[2];
	if (argc > 3)
		cold = atol(argv[3]);
	if (argc > 4)
		hot = atol(argv[4]);
	const int procs = !strncmp(topo, "proc-", 5);
	const int respawn = !strcmp(topo, "proc-respawn");
	const int late = !strcmp(topo, "proc-late");
	const int sandboxed = !strcmp(topo, "proc-sandbox");
	if (procs)
		topo += 5;
	if (respawn || late || sandboxed)
		topo = "lanes";
	if (procs ? strcmp(topo, "lanes") && strcmp(topo, "steal")
		  : strcmp(topo, "lanes") && strcmp(topo, "steal") && strcmp(topo, "inline")) {
		fprintf(stderr, "FAIL: unknown topology %s\n", argv[2]);
		return 2;
	}
	if (procs) {
		const char *env =
			getenv(sandboxed ? "KNIT_TRACE_SANDBOXLIB" : "KNIT_TRACE_TASKLIB");
		const char *slash = strrchr(argv[0], '/');

		if (env && *env)
			snprintf(libpath, sizeof(libpath), "%s", env);
		else
			snprintf(libpath, sizeof(libpath), "%.*s../lib/%s",
				 slash ? (int)(slash - argv[0] + 1) : 0, argv[0],
				 sandboxed ? "proc_sandbox.so" : "proc_tasks.so");
	}
	if (!late && wait_go(argv[1]))
		return 1;

	memset(&opts, 0, sizeof(opts));
	opts.size = sizeof(opts);
	opts.workers = WORKERS;
	opts.topology = strcmp(topo, "steal") ? KNIT_TOPOLOGY_LANES : KNIT_TOPOLOGY_STEAL;
	if (!strcmp(topo, "inline"))
		opts.inline_lane = KNIT_INLINE_LAST;
	if (procs) {
		opts.worker_kind = KNIT_WORKERS_PROCESSES;
		opts.task_library = libpath;
		if (sandboxed)
			opts.sandbox = &sb;
	}
	err = knit_pool_create(&opts, procs ? NULL : tasks, procs ? 0 : 1, &pool);
	if (err) {
		fprintf(stderr, "FAIL: knit_pool_create: %s\n", knit_strerror(err));
		return 1;
	}
	if (procs) {
		int e = knit_pool_task_id(pool, "echo");
		int p = knit_pool_task_id(pool, sandboxed ? "socket" : "pid");

		if (e < 0 || p < 0) {
			fprintf(stderr, "FAIL: %s has no task echo or %s\n", libpath,
				sandboxed ? "socket" : "pid");
			knit_pool_destroy(pool);
			return 1;
		}
		task = (uint32_t)e;
		if (sandboxed)
			bad_task = (uint32_t)p;
		else
			pid_task = (uint32_t)p;
		delta = 0;
	}
	memset(&base, 0, sizeof(base));
	if (late) {
		/* Every worker idle (parked, untimed) before the tracer comes. */
		for (unsigned w = 0; w < WORKERS; w++)
			if (wait_parked(pool, w, 0)) {
				fprintf(stderr, "FAIL: lane %u never parked\n", w);
				knit_pool_destroy(pool);
				return 1;
			}
		printf("READY\n");
		fflush(stdout);
		if (wait_go(argv[1]) || get_stats(pool, &base)) {
			knit_pool_destroy(pool);
			return 1;
		}
		for (unsigned w = 0; w < WORKERS; w++)
			last_parks[w] = base.lane[w].parks;
	}

	/* Cold calls: the target lane's worker has parked since its last call
	 * (steal: calls cannot be pinned, so every worker has). */
	const int steal = !strcmp(topo, "steal");
	for (long c = 0; c < cold && !rc; c++) {
		unsigned lane = (unsigned)(c % WORKERS);
		knit_call_options_t co = {
			.size = sizeof(co), .flags = KNIT_CALL_LANE, .lane = lane};
		knit_value_t arg = {.type = KNIT_VALUE_I64, .i64 = c};
		knit_completion_t done;

		if (respawn && c == cold / 2) {
			if (kill_lane0_worker(pool, pid_task, &last_parks[0])) {
				rc = 1;
				break;
			}
			killed0 = 1;
			ran[0] = 1; /* its new worker must have parked */
		}
		if (sandboxed && c == cold / 2) {
			if (violate_lane0(pool, bad_task)) {
				rc = 1;
				break;
			}
			violated0 = 1;
			ran[0] = 1; /* its new worker must have parked */
		}
		/* Which workers must park (again) first: each one that ran the
		 * previous cold call, and one never seen parked that may take this
		 * call (the target lane; under steal, any worker). The others
		 * have parked since their last call and stay parked. */
		for (unsigned w = 0; w < WORKERS && !rc; w++) {
			int must = ran[w] || (last_parks[w] == 0 && (steal || w == lane));
			if (must && wait_parked(pool, w, last_parks[w])) {
				fprintf(stderr, "FAIL: lane %u never parked\n", w);
				rc = 1;
			}
		}
		if (rc || get_stats(pool, &st)) {
			rc = 1;
			break;
		}
		for (unsigned w = 0; w < WORKERS; w++) {
			last_parks[w] = st.lane[w].parks;
			last_calls[w] = st.lane[w].calls;
		}
		err = knit_enqueue_ex(pool, task, &arg, NULL, steal ? NULL : &co, NULL);
		if (err) {
			fprintf(stderr, "FAIL: knit_enqueue_ex: %s\n", knit_strerror(err));
			rc = 1;
			break;
		}
		err = knit_complete(pool, &done, 1, -1);
		if (err != 1) {
			fprintf(stderr, "FAIL: knit_complete returned %d\n", err);
			rc = 1;
			break;
		}
		rc = check_completion(pool, &done, c + delta) ? 1 : 0;
		if (!rc && get_stats(pool, &st))
			rc = 1;
		for (unsigned w = 0; w < WORKERS && !rc; w++)
			ran[w] = st.lane[w].calls != last_calls[w];
	}

	/* Hot calls: one burst, reaped as they come. */
	for (long c = 0; c < hot && !rc; c++) {
		knit_value_t arg = {.type = KNIT_VALUE_I64, .i64 = 1000};

		err = knit_enqueue(pool, task, &arg, NULL, NULL);
		if (err) {
			fprintf(stderr, "FAIL: knit_enqueue: %s\n", knit_strerror(err));
			rc = 1;
		}
	}
	for (long got = 0; got < hot && !rc;) {
		knit_completion_t done[16];
		int n = knit_complete(pool, done, 16, -1);

		if (n <= 0) {
			fprintf(stderr, "FAIL: knit_complete returned %d\n", n);
			rc = 1;
			break;
		}
		for (int k = 0; k < n; k++)
			if (check_completion(pool, &done[k], 1000 + delta))
				rc = 1;
		got += n;
	}
	knit_pool_stats_t before_sync;
	uint64_t sync_lane[WORKERS + 1] = {0};
	if (!rc && get_stats(pool, &before_sync))
		rc = 1;
	for (long c = 0; c < sync_calls && !rc; c++) {
		knit_value_t arg = {.type = KNIT_VALUE_I64, .i64 = 7};
		knit_completion_t done;

		err = knit_call(pool, task, &arg, &done, 0);
		if (err) {
			fprintf(stderr, "FAIL: knit_call: %s\n", knit_strerror(err));
			rc = 1;
			break;
		}
		rc = check_completion(pool, &done, 7 + delta) ? 1 : 0;
	}

	/* The knit_calls' lanes: the calls each lane ran during them (nothing
	 * else runs then). */
	if (!rc && get_stats(pool, &st))
		rc = 1;
	for (unsigned l = 0; !rc && l < st.lanes && l <= WORKERS; l++)
		sync_lane[l] = st.lane[l].calls - before_sync.lane[l].calls;

	err = knit_stop(pool, KNIT_STOP_DRAIN, 10LL * 1000 * 1000 * 1000);
	if (err) {
		fprintf(stderr, "FAIL: knit_stop: %s\n", knit_strerror(err));
		rc = 1;
	}
	if (get_stats(pool, &st)) {
		fprintf(stderr, "FAIL: knit_pool_stats\n");
		rc = 1;
	} else {
		printf("STATS "
		       "{\"pool\":\"%p\",\"topology\":\"%s\",\"workers\":%u,\"cold_calls\":%ld,"
		       "\"hot_calls\":%ld,"
		       "\"enqueued\":%llu,\"completed\":%llu,\"doorbell_arms\":%llu,"
		       "\"doorbell_wakes\":%llu,\"knit_calls\":%ld,\"sync_calls\":%llu,",
		       (void *)pool, topo, st.workers, cold, hot + sync_calls,
		       (unsigned long long)(st.enqueued - base.enqueued),
		       (unsigned long long)(st.completed - base.completed),
		       (unsigned long long)(st.doorbell_arms - base.doorbell_arms),
		       (unsigned long long)(st.doorbell_wakes - base.doorbell_wakes), sync_calls,
		       (unsigned long long)(st.sync_calls - base.sync_calls));
		if (procs)
			printf("\"processes\":true,\"late\":%s,\"spawns\":%llu,\"crashes\":%llu,"
			       "\"respawns\":%llu,\"violations\":%llu,",
			       late ? "true" : "false",
			       (unsigned long long)(st.spawns - base.spawns),
			       (unsigned long long)(st.crashes - base.crashes),
			       (unsigned long long)(st.respawns - base.respawns),
			       (unsigned long long)(st.deaths[KNIT_DEATH_SANDBOX] -
						    base.deaths[KNIT_DEATH_SANDBOX]));
		printf("\"lanes\":[");
		for (unsigned l = 0; l < st.lanes && l <= KNIT_MAX_WORKERS; l++) {
			knit_lane_stats_t d = st.lane[l];
			const knit_lane_stats_t *b = &base.lane[l], *ls = &d;

			d.parks -= b->parks;
			d.wakes_sent -= b->wakes_sent;
			d.wakes_received -= b->wakes_received;
			d.watchdog_expiries -= b->watchdog_expiries;
			d.calls -= b->calls;
			d.doorbell_rings -= b->doorbell_rings;
			printf("%s{\"lane\":%u,\"parks\":%llu,\"wakes_sent\":%llu,"
			       "\"wakes_received\":%llu,\"watchdog_expiries\":%llu,\"calls\":%llu,"
			       "\"doorbell_rings\":%llu,\"killed\":%d,\"violated\":%d,"
			       "\"knit_calls\":%llu}",
			       l ? "," : "", l, (unsigned long long)ls->parks,
			       (unsigned long long)ls->wakes_sent,
			       (unsigned long long)ls->wakes_received,
			       (unsigned long long)ls->watchdog_expiries,
			       (unsigned long long)ls->calls,
			       (unsigned long long)ls->doorbell_rings, l == 0 ? killed0 : 0,
			       l == 0 ? violated0 : 0,
			       (unsigned long long)(l <= WORKERS ? sync_lane[l] : 0));
		}
		printf("]}\n");
	}
	fflush(stdout);
	knit_pool_destroy(pool);
	return rc;
}
