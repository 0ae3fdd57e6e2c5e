/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_restart.c - process pools' restarts and kills: the
 * restart intensity (respawn_max within respawn_window_ms), the bounded
 * exponential backoff between respawns of one lane, and knit_cancel's
 * KNIT_CANCEL_KILL (only the call's worker is killed and replaced).
 *
 * Nothing here asserts on elapsed time. The backoff is observed through
 * its counters (respawn_backoffs, respawn_backoff_ms: the waits the
 * backoff chose, a pure function of the crash sequence); a crash loop
 * "spread over time" sleeps longer than its window between bursts (a sleep
 * is at least that long), a fast one has a window far longer than the test.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"

static knit_pool_t *make(const knit_pool_options_t *o)
{
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "create: %s (%s)", knit_strerror(rc), knit_last_error());
	return p;
}

/* A knit_call_ex of `task` pinned to `lane` (lanes topology). */
static knit_completion_t call_on(knit_pool_t *p, const char *task, knit_value_t arg, uint32_t lane)
{
	knit_call_options_t co = {sizeof co, KNIT_CALL_LANE, 0, lane};
	knit_completion_t c;
	const int rc =
		knit_call_ex(p, kt_id(p, task), &arg, &co, NULL, &c, (int64_t)(KT_BOUND_S * 1e9));
	cr_assert_eq(rc, 0, "knit_call_ex(%s): %s", task, knit_strerror(rc));
	return c;
}

/* Wait (bounded) until the stats show at least n respawns. */
static void wait_respawns(knit_pool_t *p, knit_pool_stats_t *s, uint64_t n)
{
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	for (;;) {
		kt_stats(p, s);
		/* A respawn counts before its spawn does (the monitor spawns
		 * after the lane's calls completed): here no pool recycles, so
		 * each respawn's spawn follows the first workers'. */
		if (s->respawns >= n && s->spawns >= s->workers + n)
			return;
		cr_assert_lt(kt_now_ns(), end, "respawn %llu not seen (%llu)",
			     (unsigned long long)n, (unsigned long long)s->respawns);
		kt_sleep_ms(2);
	}
}

/* ---- options ------------------------------------------------------------------ */

KT(restart, options_checked)
{
	knit_pool_options_t o;
	knit_pool_t *p = NULL;
	kt_opts(&o, 1); /* threads: every restart option is refused */
	o.respawn_window_ms = 1000;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "respawn_window_ms") != NULL, "%s", knit_last_error());
	kt_opts(&o, 1);
	o.respawn_backoff_ms = 5;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "respawn_backoff_ms") != NULL, "%s", knit_last_error());
	kt_opts(&o, 1);
	o.reserved4 = 1;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "reserved4") != NULL, "%s", knit_last_error());

	kt_proc_opts(&o, 1);
	o.respawn_window_ms = 1000;
	o.respawn_max = KNIT_RESPAWN_WINDOW_MAX + 1;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "KNIT_RESPAWN_WINDOW_MAX") != NULL, "%s",
		  knit_last_error());
	kt_proc_opts(&o, 1);
	o.respawn_backoff_ms = 500;
	o.respawn_backoff_max_ms = 100;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "respawn_backoff_max_ms 100") != NULL, "%s",
		  knit_last_error());
	kt_proc_opts(&o, 1);
	o.respawn_backoff_ms = 3600u * 1000 + 1;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(p == NULL);

	/* The largest window budget, and a base above the default cap (the
	 * cap follows it): accepted. */
	kt_proc_opts(&o, 1);
	o.respawn_window_ms = 1000;
	o.respawn_max = KNIT_RESPAWN_WINDOW_MAX;
	o.respawn_backoff_ms = 2000;
	p = make(&o);
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(7));
	cr_assert_eq(c.status, 0);
	kt_destroy(p);
}

/* ---- intensity ------------------------------------------------------------------ */

/* Crash the (only) worker once: the call ends -KNIT_ECRASHED. */
static void crash_once(knit_pool_t *p)
{
	knit_completion_t c = kt_proc_call(p, "abort", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
}

/* Three crashes within a window that outlasts the test, respawn_max 2: the
 * third fails the pool, every later call is refused -KNIT_ECRASHED, and
 * knit_last_error() on that refusal says why. */
KT(restart, fast_crash_loop_fails_the_pool)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.respawn_max = 2;
	o.respawn_window_ms = 600 * 1000;
	o.respawn_backoff_ms = KNIT_ZERO;
	knit_pool_t *p = make(&o);
	for (int i = 0; i < 3; i++)
		crash_once(p);
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED);
	const char *why = knit_last_error();
	cr_assert(strstr(why, "failed") != NULL &&
			  strstr(why, "respawn_window_ms 600000") != NULL &&
			  strstr(why, "respawn_max 2") != NULL &&
			  strstr(why, "killed by signal 6") != NULL,
		  "%s", why);
	knit_completion_t c;
	cr_assert_eq(knit_call(p, kt_id(p, "echo"), &a, &c, -1), -KNIT_ECRASHED);
	cr_assert(strstr(knit_last_error(), "respawn_window_ms 600000") != NULL);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 3);
	cr_assert_eq(s.respawns, 2);
	cr_assert_eq(s.respawn_backoffs, 0);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* Without a window the budget is the pool's life, as before 1.2, and the
 * refusal says so. */
KT(restart, lifetime_budget_says_why)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.respawn_max = 1;
	o.respawn_backoff_ms = KNIT_ZERO;
	knit_pool_t *p = make(&o);
	crash_once(p);
	knit_completion_t c = kt_proc_call(p, "exit", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue(p, kt_id(p, "echo"), &a, NULL, &t), -KNIT_ECRASHED);
	const char *why = knit_last_error();
	cr_assert(strstr(why, "exited with status 3") != NULL && strstr(why, "crash 2") != NULL &&
			  strstr(why, "respawn_max 1") != NULL,
		  "%s", why);
	kt_destroy(p);
}

/* The same budget (2 per window) with the crashes in bursts of two, each
 * burst after a sleep longer than the window: the pool survives six crashes
 * (a lifetime budget of 2 would have failed at the third). */
static void spread_on(uint32_t workers, uint32_t topo)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.topology = topo;
	o.respawn_max = 2;
	o.respawn_window_ms = 250;
	o.respawn_backoff_ms = KNIT_ZERO;
	knit_pool_t *p = make(&o);
	for (int burst = 0; burst < 3; burst++) {
		if (burst != 0)
			kt_sleep_ms(300); /* > the window: the burst before left it */
		crash_once(p);
		crash_once(p);
	}
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(5));
	cr_assert_eq(c.status, 0, "%s", knit_strerror(c.status));
	cr_assert_eq(c.result.i64, 5);
	knit_pool_stats_t s;
	wait_respawns(p, &s, 6);
	cr_assert_eq(s.crashes, 6);
	cr_assert_eq(s.respawns, 6);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

KT(restart, spread_crash_loop_survives_the_window) { spread_on(1, KNIT_TOPOLOGY_LANES); }
KT(restart, steal_spread_crash_loop_survives_the_window) { spread_on(2, KNIT_TOPOLOGY_STEAL); }

/* ---- backoff ------------------------------------------------------------------ */

/* Six crashes in a row of one worker (each successor crashes on its first
 * call, long before it could have lived ten caps): the waits are 0, base,
 * 2 base, then the cap: 0 + 50 + 100 + 200 + 200 + 200. Each call after a
 * crash waits (in the backlog) for the respawn and then runs. */
KT(restart, backoff_grows_and_is_bounded)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.respawn_max = 100;
	o.respawn_backoff_ms = 50;
	o.respawn_backoff_max_ms = 200;
	knit_pool_t *p = make(&o);
	enum { kCrashes = 6 };
	const uint64_t sum[kCrashes + 1] = {0, 0, 50, 150, 350, 550, 750};
	knit_pool_stats_t s;
	for (int i = 1; i <= kCrashes; i++) {
		crash_once(p);
		kt_stats(p, &s);
		cr_assert_eq(s.crashes, (uint64_t)i);
		cr_assert_eq(s.respawn_backoffs, (uint64_t)(i - 1), "crash %d", i);
		cr_assert_eq(s.respawn_backoff_ms, sum[i], "crash %d: %llu ms", i,
			     (unsigned long long)s.respawn_backoff_ms);
	}
	/* The call after the last crash waits out its backoff, then runs. */
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(11));
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 11);
	wait_respawns(p, &s, kCrashes);
	cr_assert_eq(s.respawns, kCrashes);
	cr_assert_eq(s.spawns, kCrashes + 1);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* The voluntary context switches of this process's thread named `comm`. */
static long thread_switches(const char *comm)
{
	DIR *d = opendir("/proc/self/task");
	cr_assert(d != NULL);
	long n = -1;
	struct dirent *e;
	char path[300], line[256];
	while (n < 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		const int is = fgets(line, sizeof line, f) != NULL &&
			       strncmp(line, comm, strlen(comm)) == 0 && line[strlen(comm)] == '\n';
		fclose(f);
		if (!is)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		cr_assert(f != NULL);
		while (fgets(line, sizeof line, f) != NULL)
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
				break;
		fclose(f);
	}
	closedir(d);
	cr_assert_geq(n, 0, "no thread named %s", comm);
	return n;
}

/* Lane 0 of two crashes twice (the second respawn waits a backoff far
 * longer than the test): meanwhile every call runs on lane 1, a call
 * pinned to lane 0 waits within its deadline (-KNIT_ETIMEDOUT), the idle
 * pool's monitor sleeps (no wake-up while only a backoff is due), and
 * destroying the pool during the backoff does not wait for it. */
KT(restart, calls_run_elsewhere_during_a_backoff)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.respawn_backoff_ms = 60 * 1000;
	o.respawn_backoff_max_ms = 60 * 1000;
	knit_pool_t *p = make(&o);
	const int64_t pid1 = call_on(p, "pid", kt_none(), 1).result.i64;
	for (int i = 0; i < 2; i++) {
		knit_completion_t c = call_on(p, "abort", kt_none(), 0);
		cr_assert_eq(c.status, -KNIT_ECRASHED);
	}
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 2);
	cr_assert_eq(s.respawns, 1); /* the first at once, the second waits */
	cr_assert_eq(s.respawn_backoffs, 1);
	cr_assert_eq(s.respawn_backoff_ms, 60 * 1000);
	/* The supervisor's view: lane 0 has no worker while it backs off. */
	cr_assert_eq(s.worker[0].state, KNIT_WORKER_BACKING_OFF);
	cr_assert_eq(s.worker[0].pid, 0);
	cr_assert_eq(s.worker[1].state, KNIT_WORKER_SERVING);
	cr_assert_eq(s.worker[1].pid, pid1);
	enum { N = 40 };
	for (int i = 0; i < N; i++)
		kt_enq(p, kt_id(p, "pid"), kt_none(), NULL);
	knit_completion_t out[N];
	cr_assert_eq(kt_reap(p, out, N), N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(out[i].status, 0);
		cr_assert_eq(out[i].result.i64, pid1, "every call ran on lane 1");
	}
	/* Pinned to the lane that waits: it waits, within its deadline. */
	kt_enq_ex(p, kt_id(p, "echo"), kt_i64(3), NULL, KNIT_CALL_LANE, 100, 0);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.status, -KNIT_ETIMEDOUT);
	/* Idle, with a backoff due in a minute: the monitor does not wake. */
	const long before = thread_switches("knit-monitor");
	kt_sleep_ms(200);
	cr_assert_eq(thread_switches("knit-monitor"), before, "the monitor woke while idle");
	kt_stats(p, &s);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.pending, 0);
	cr_assert_eq(s.enqueued, s.completed);
	kt_destroy(p); /* does not wait a minute: the lane's stop is acknowledged for it */
	cr_assert_eq(kt_count_children(), 0);
}

/* Recycling beside a backoff: lane 0 backs off (no spare: it is not
 * recycled while it has no worker), lane 1 is recycled by its calls; the
 * recycle is neither a crash nor a respawn nor a backoff. */
KT(restart, recycle_beside_a_backoff)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.respawn_backoff_ms = 60 * 1000;
	o.respawn_backoff_max_ms = 60 * 1000;
	o.recycle_calls = 3;
	knit_pool_t *p = make(&o);
	for (int i = 0; i < 2; i++) {
		knit_completion_t c = call_on(p, "abort", kt_none(), 0);
		cr_assert_eq(c.status, -KNIT_ECRASHED);
	}
	const int64_t pid1 = call_on(p, "pid", kt_none(), 1).result.i64;
	knit_pool_stats_t s;
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	for (;;) {
		knit_completion_t c = call_on(p, "pid", kt_none(), 1);
		cr_assert_eq(c.status, 0);
		kt_stats(p, &s);
		if (s.recycles_calls >= 1 && c.result.i64 != pid1)
			break; /* a successor serves lane 1 */
		cr_assert_lt(kt_now_ns(), end, "lane 1 was never recycled");
		kt_sleep_ms(1);
	}
	cr_assert_eq(s.crashes, 2);
	cr_assert_eq(s.respawns, 1); /* the first crash's; the second waits */
	cr_assert_eq(s.respawn_backoffs, 1);
	cr_assert_eq(s.worker[0].state, KNIT_WORKER_BACKING_OFF);
	cr_assert_eq(s.worker[0].pid, 0);
	cr_assert_eq(s.recycle_failures, 0);
	cr_assert_eq(s.pending, 0);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- KNIT_CANCEL_KILL ------------------------------------------------------------ */

static char g_dir[64];

static void make_dir(void)
{
	snprintf(g_dir, sizeof g_dir, "/tmp/knit-kill-XXXXXX");
	cr_assert(mkdtemp(g_dir) != NULL);
}

static knit_value_t await_arg(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", g_dir, name);
	return kt_str(buf, strlen(buf));
}

/* Wait (bounded) until an await task created `path` (it runs now). */
static void wait_file(const char *path)
{
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (access(path, F_OK) != 0) {
		cr_assert_lt(kt_now_ns(), end, "%s never appeared", path);
		kt_sleep_ms(1);
	}
}

KT(kill, thread_pool_refuses_the_flag)
{
	knit_pool_t *p = kt_pool_n(1);
	knit_ticket_t t = kt_enq(p, kt_id(p, "sleep"), kt_i64(50), NULL);
	cr_assert_eq(knit_cancel(p, t, KNIT_CANCEL_KILL), -KNIT_EINVAL);
	cr_assert_eq(knit_cancel(p, t, KNIT_CANCEL_NOW | KNIT_CANCEL_KILL), -KNIT_EINVAL);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.status, 0, "the refused cancel left the call alone");
	kt_destroy(p);
}

KT(kill, bad_flags)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	knit_pool_t *p = make(&o);
	knit_ticket_t t = kt_enq(p, kt_id(p, "sleep"), kt_i64(20), NULL);
	cr_assert_eq(knit_cancel(p, t, KNIT_CANCEL_SIGNAL | KNIT_CANCEL_KILL), -KNIT_EINVAL);
	cr_assert_eq(knit_cancel(p, t, KNIT_CANCEL_KILL << 1), -KNIT_EINVAL);
	cr_assert_eq(knit_cancel(p, t, 0), -KNIT_EINVAL);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(knit_cancel(p, t, KNIT_CANCEL_KILL), -KNIT_ENOTFOUND);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.cancel_kills, 0);
	kt_destroy(p);
}

/* Two workers, each running an await (a call that would run 20 s); a call
 * pinned behind the first on its lane (lanes) never started. KILL the
 * first: it completes -KNIT_ECANCELED at once, its worker alone is killed
 * and respawned (no crash counted, no backoff), the pinned call runs on the
 * successor, the other worker's call ends OK once let go and that worker
 * was never replaced. Every call ends in exactly one completion. */
static void kill_one_on(uint32_t topo, uint32_t flags)
{
	make_dir();
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = topo;
	knit_pool_t *p = make(&o);
	const bool lanes = topo == KNIT_TOPOLOGY_LANES;
	char a[128], b[128];
	knit_value_t va = await_arg(a, sizeof a, "a"), vb = await_arg(b, sizeof b, "b");
	knit_ticket_t ta, tb, tq = 0;
	if (lanes) {
		ta = kt_enq_ex(p, kt_id(p, "await"), va, (void *)1, KNIT_CALL_LANE, 0, 0);
		tb = kt_enq_ex(p, kt_id(p, "await"), vb, (void *)2, KNIT_CALL_LANE, 0, 1);
		tq = kt_enq_ex(p, kt_id(p, "echo"), kt_i64(33), (void *)3, KNIT_CALL_LANE, 0, 0);
	} else {
		ta = kt_enq(p, kt_id(p, "await"), va, (void *)1);
		wait_file(a); /* a worker took it; the other takes b */
		tb = kt_enq(p, kt_id(p, "await"), vb, (void *)2);
	}
	wait_file(a);
	wait_file(b);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	const uint64_t spawns0 = s.spawns;
	cr_assert_eq(knit_cancel(p, ta, flags), 0);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.ticket, ta, "the cancelled call completes first (the others wait)");
	cr_assert_eq(c.status, -KNIT_ECANCELED);
	wait_respawns(p, &s, 1);
	cr_assert_eq(s.cancel_kills, 1);
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.respawn_backoffs, 0);
	cr_assert_eq(s.spawns, spawns0 + 1);
	int got = 1;
	if (lanes) {
		kt_reap1(p, &c); /* never started: it runs on lane 0's successor */
		cr_assert_eq(c.ticket, tq);
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.result.i64, 33);
		got++;
	}
	unlink(b);
	kt_reap1(p, &c);
	cr_assert_eq(c.ticket, tb);
	cr_assert_eq(c.status, 0, "the other worker's call: %s", knit_strerror(c.status));
	knit_completion_release(p, &c);
	got++;
	unlink(a); /* (its worker is gone; nothing waits for it) */
	cr_assert_eq(kt_quiet(p, 50), 0, "no second completion");
	kt_stats(p, &s);
	cr_assert_eq(s.completed, (uint64_t)got);
	cr_assert_eq(s.enqueued, (uint64_t)got);
	cr_assert_eq(s.pending, 0);
	cr_assert_eq(s.spawns, spawns0 + 1, "only the killed worker was replaced");
	cr_assert_eq(s.cancel_kills, 1);
	cr_assert_eq(s.deaths[KNIT_DEATH_CANCEL_KILL], 1, "the death's cause");
	uint64_t all = 0;
	for (int k = 0; k < KNIT_DEATH_CAUSE_MAX; k++)
		all += s.deaths[k];
	cr_assert_eq(all, 1);
	kt_destroy(p);
	rmdir(g_dir);
	cr_assert_eq(kt_count_children(), 0);
}

KT(kill, one_call_lanes) { kill_one_on(KNIT_TOPOLOGY_LANES, KNIT_CANCEL_KILL); }
KT(kill, one_call_lanes_now_kill)
{
	kill_one_on(KNIT_TOPOLOGY_LANES, KNIT_CANCEL_NOW | KNIT_CANCEL_KILL);
}
KT(kill, one_call_steal) { kill_one_on(KNIT_TOPOLOGY_STEAL, KNIT_CANCEL_KILL); }

/* A call not started yet, cancelled with KILL, is just cancelled: no worker
 * is killed, and the call its worker runs finishes. (A second KILL, of a
 * call running on the other lane, shows the monitor has looked at both
 * requests: it takes them in order.) */
KT(kill, not_started_is_just_cancelled)
{
	make_dir();
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES;
	knit_pool_t *p = make(&o);
	char a[128], b[128];
	knit_value_t va = await_arg(a, sizeof a, "a"), vb = await_arg(b, sizeof b, "b");
	knit_ticket_t ta = kt_enq_ex(p, kt_id(p, "await"), va, NULL, KNIT_CALL_LANE, 0, 0);
	knit_ticket_t tq = kt_enq_ex(p, kt_id(p, "echo"), kt_i64(1), NULL, KNIT_CALL_LANE, 0, 0);
	knit_ticket_t tb = kt_enq_ex(p, kt_id(p, "await"), vb, NULL, KNIT_CALL_LANE, 0, 1);
	wait_file(a);
	wait_file(b);
	cr_assert_eq(knit_cancel(p, tq, KNIT_CANCEL_KILL), 0);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.ticket, tq);
	cr_assert_eq(c.status, -KNIT_ECANCELED);
	cr_assert_eq(knit_cancel(p, tb, KNIT_CANCEL_KILL), 0);
	kt_reap1(p, &c);
	cr_assert_eq(c.ticket, tb);
	cr_assert_eq(c.status, -KNIT_ECANCELED);
	knit_pool_stats_t s;
	wait_respawns(p, &s, 1);
	cr_assert_eq(s.cancel_kills, 1, "only lane 1's worker was killed");
	unlink(a);
	kt_reap1(p, &c);
	cr_assert_eq(c.ticket, ta);
	cr_assert_eq(c.status, 0, "%s", knit_strerror(c.status));
	knit_completion_release(p, &c);
	unlink(b);
	cr_assert_eq(kt_quiet(p, 20), 0, "no second completion");
	kt_stats(p, &s);
	cr_assert_eq(s.cancel_kills, 1);
	cr_assert_eq(s.spawns, 3);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.pending, 0);
	kt_destroy(p);
	rmdir(g_dir);
}

/* Kill lane 0's worker in its call over and over while lane 1 serves a
 * stream: every call ends in exactly one completion, the stream is all OK,
 * no crash is counted and no backoff waited (a kill the host asked for
 * respawns at once), and a call queued behind each killed one runs on the
 * successor. */
KT(kill, repeated_kills_beside_a_stream)
{
	make_dir();
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.respawn_max = KNIT_ZERO; /* a kill is no crash: nothing to survive */
	knit_pool_t *p = make(&o);
	enum { kKills = 8, kStream = 50 };
	int ok = 0;
	for (int k = 0; k < kKills; k++) {
		char a[128], name[16];
		snprintf(name, sizeof name, "a%d", k);
		knit_value_t va = await_arg(a, sizeof a, name);
		knit_ticket_t t = kt_enq_ex(p, kt_id(p, "await"), va, NULL, KNIT_CALL_LANE, 0, 0);
		kt_enq_ex(p, kt_id(p, "echo"), kt_i64(-1), NULL, KNIT_CALL_LANE, 0, 0);
		for (int i = 0; i < kStream; i++)
			kt_enq_ex(p, kt_id(p, "echo"), kt_i64(i), NULL, KNIT_CALL_LANE, 0, 1);
		wait_file(a);
		cr_assert_eq(knit_cancel(p, t, KNIT_CANCEL_KILL), 0);
		knit_completion_t out[kStream + 2];
		cr_assert_eq(kt_reap(p, out, kStream + 2), kStream + 2);
		int cancelled = 0;
		for (int i = 0; i < kStream + 2; i++) {
			if (out[i].ticket == t) {
				cr_assert_eq(out[i].status, -KNIT_ECANCELED);
				cancelled++;
			} else {
				cr_assert_eq(out[i].status, 0, "%s", knit_strerror(out[i].status));
				ok++;
			}
		}
		cr_assert_eq(cancelled, 1);
		unlink(a);
		knit_pool_stats_t s;
		wait_respawns(p, &s, (uint64_t)k + 1);
	}
	cr_assert_eq(kt_quiet(p, 20), 0, "no second completion");
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(ok, kKills * (kStream + 1));
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.respawn_backoffs, 0);
	cr_assert_eq(s.cancel_kills, kKills);
	cr_assert_eq(s.respawns, kKills);
	cr_assert_eq(s.spawns, 2 + kKills);
	cr_assert_eq(s.pending, 0);
	cr_assert_eq(s.completed, s.enqueued);
	knit_completion_t c = call_on(p, "echo", kt_i64(9), 0);
	cr_assert_eq(c.status, 0, "lane 0 serves again");
	kt_destroy(p);
	rmdir(g_dir);
	cr_assert_eq(kt_count_children(), 0);
}
