/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_recycle.c - worker recycling in process pools
 * (recycle_calls, recycle_rss_bytes, recycle_age_ms) and the supervisor's
 * view (knit_pool_stats_t.worker[]): a worker past a mark is replaced with
 * no call failed, run twice or lost, on the lanes and the steal topology;
 * boots are counted against retirements (every spawn after the first
 * workers is a successor that took a lane over, none a respawn); a stop
 * while recycles are under way loses nothing and leaves no child.
 *
 * "Ran exactly once" is checked by the stamp task: each call appends its
 * index to a file, so the file holds every index exactly once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"

#define NCALLS 10000

static knit_pool_t *recycle_pool(uint32_t workers, uint32_t topo, uint64_t calls, uint64_t rss,
				 uint32_t age_ms)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.topology = topo;
	o.recycle_calls = calls;
	o.recycle_rss_bytes = rss;
	o.recycle_age_ms = age_ms;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "create: %s (%s)", knit_strerror(rc), knit_last_error());
	return p;
}

/* A fresh file for the stamps; its path in buf. */
static void stamp_file(char *buf, size_t n)
{
	snprintf(buf, n, "%s/knit-recycle-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	const int fd = mkstemp(buf);
	cr_assert(fd >= 0);
	close(fd);
}

/* The stamp task's argument for index i (into arg, of size 4 + strlen(path)). */
static knit_value_t stamp_arg(uint8_t *arg, uint32_t i, const char *path)
{
	memcpy(arg, &i, 4);
	const size_t len = strlen(path);
	memcpy(arg + 4, path, len);
	return kt_bytes(arg, 4 + len);
}

/* Every index 0..n-1 stamped exactly once. */
static void check_stamps(const char *path, uint32_t n)
{
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((uint64_t)st.st_size, (uint64_t)n * 4, "%lld bytes stamped, %u calls",
		     (long long)st.st_size, n);
	uint32_t *got = malloc((size_t)n * 4);
	uint8_t *seen = calloc(n, 1);
	cr_assert(got != NULL && seen != NULL);
	cr_assert_eq(read(fd, got, (size_t)n * 4), (ssize_t)n * 4);
	close(fd);
	for (uint32_t k = 0; k < n; k++) {
		cr_assert_lt(got[k], n);
		cr_assert_eq(seen[got[k]], 0, "call %u ran twice", got[k]);
		seen[got[k]] = 1;
	}
	free(got);
	free(seen);
	unlink(path);
}

static uint64_t recycles(const knit_pool_stats_t *s)
{
	return s->recycles_calls + s->recycles_rss + s->recycles_age;
}

/* Wait (bounded) until at least at_least recycles ended and every successor
 * started is in: no spawn left that is neither a first worker nor a
 * recycled worker's successor. A recycle is the monitor's, after the calls
 * that passed the mark: a quick stream may end before its successor was
 * even spawned (the monitor had no CPU meanwhile), and it goes on while the
 * pool is idle. */
static void settle_at_least(knit_pool_t *p, uint32_t workers, uint64_t at_least,
			    knit_pool_stats_t *s)
{
	for (int i = 0; i < 2000; i++) {
		kt_stats(p, s);
		if (recycles(s) >= at_least &&
		    s->spawns == workers + recycles(s) + s->recycle_failures)
			return;
		kt_sleep_ms(10);
	}
}

static void settle(knit_pool_t *p, uint32_t workers, knit_pool_stats_t *s)
{
	settle_at_least(p, workers, 0, s);
}

/* The hitless checks: nothing crashed or respawned, every boot after the
 * first workers was a successor that took a lane over. */
static void check_hitless(knit_pool_t *p, uint32_t workers, uint64_t at_least)
{
	knit_pool_stats_t s;
	settle_at_least(p, workers, at_least, &s);
	/* A recycled worker's exit and its ready successor's take-over are
	 * two steps of the monitor: between them the lane has no worker (pid
	 * 0, knit_pool_stats(3)). Wait (bounded) for the take-over that
	 * follows at once, then check. */
	for (int n = 0; n < 2000; n++) {
		uint32_t in = 0;
		for (uint32_t i = 0; i < workers; i++)
			in += s.worker[i].pid > 0;
		if (in == workers)
			break;
		kt_sleep_ms(1);
		kt_stats(p, &s);
	}
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.respawns, 0);
	cr_assert_eq(s.hard_kills, 0);
	cr_assert_eq(s.recycle_failures, 0);
	cr_assert_geq(recycles(&s), at_least, "%llu recycles", (unsigned long long)recycles(&s));
	cr_assert_eq(s.spawns, workers + recycles(&s), "spawns %llu, recycles %llu",
		     (unsigned long long)s.spawns, (unsigned long long)recycles(&s));
	cr_assert_eq(s.pending, 0);
	for (uint32_t i = 0; i < workers; i++) {
		cr_assert_gt(s.worker[i].pid, 0);
		cr_assert(s.worker[i].state == KNIT_WORKER_SERVING ||
			  s.worker[i].state == KNIT_WORKER_RETIRING);
	}
}

/* NCALLS stamp calls: batches of ticketed calls (up to 64 in flight) with a
 * knit_call between them; each must succeed. */
static void stamp_calls(knit_pool_t *p, const char *path)
{
	const uint32_t stamp = kt_id(p, "stamp");
	uint8_t arg[4200];
	knit_completion_t c[64];
	uint32_t i = 0;
	while (i < NCALLS) {
		uint32_t k = 0;
		for (; k < 63 && i < NCALLS; k++, i++)
			kt_enq(p, stamp, stamp_arg(arg, i, path), NULL);
		const int got = kt_reap(p, c, (int)k);
		cr_assert_eq(got, (int)k);
		for (int j = 0; j < got; j++)
			cr_assert_eq(c[j].status, 0, "status %d (%s)", c[j].status,
				     knit_strerror(c[j].status));
		if (i < NCALLS) {
			knit_completion_t one = kt_proc_call(p, "stamp", stamp_arg(arg, i++, path));
			cr_assert_eq(one.status, 0, "knit_call: %s", knit_strerror(one.status));
		}
	}
}

static void by_calls(uint32_t workers, uint32_t topo)
{
	char path[256];
	stamp_file(path, sizeof path);
	knit_pool_t *p = recycle_pool(workers, topo, 100, 0, 0);
	stamp_calls(p, path);
	/* At least one recycle per worker: each served 100 calls many times
	 * over (how many more it serves while its successor boots is the
	 * machine's). */
	check_hitless(p, workers, workers);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.recycles_rss + s.recycles_age, 0);
	cr_assert_eq(knit_stop(p, KNIT_STOP_DRAIN, -1), 0);
	kt_destroy(p);
	check_stamps(path, NCALLS);
	cr_assert_eq(kt_count_children(), 0);
}

KT(recycle, by_calls_lanes_1) { by_calls(1, KNIT_TOPOLOGY_LANES); }
KT(recycle, by_calls_lanes_2) { by_calls(2, KNIT_TOPOLOGY_LANES); }
KT(recycle, by_calls_steal_2) { by_calls(2, KNIT_TOPOLOGY_STEAL); }

/* recycle_rss_bytes: a worker that keeps what it allocates passes the mark
 * and is replaced (its pid changes); every call succeeds. */
KT(recycle, by_rss)
{
	if (KT_ASAN)
		KT_SKIP("AddressSanitizer keeps a worker's freed memory resident (quarantine)");
	knit_pool_t *p = recycle_pool(1, KNIT_TOPOLOGY_LANES, 0, 64ull << 20, 0);
	const uint32_t grow = kt_id(p, "grow");
	int64_t first = 0, last = 0;
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_gt(s.worker[0].rss_bytes, 0);
	cr_assert_lt(s.worker[0].rss_bytes, 64ull << 20);
	for (int i = 0; i < 4000; i++) {
		knit_value_t a = kt_i64(4 << 20);
		knit_completion_t c;
		const int rc = knit_call(p, grow, &a, &c, (int64_t)(KT_BOUND_S * 1e9));
		cr_assert_eq(rc, 0, "%s", knit_strerror(rc));
		cr_assert_eq(c.status, 0, "call %d: %s", i, knit_strerror(c.status));
		if (first == 0)
			first = c.result.i64;
		last = c.result.i64;
		kt_stats(p, &s);
		if (s.recycles_rss >= 2)
			break;
		kt_sleep_ms(5); /* let the 50 ms samples see it */
	}
	cr_assert_geq(s.recycles_rss, 2, "%llu", (unsigned long long)s.recycles_rss);
	cr_assert_neq(first, last);
	cr_assert_eq(s.recycles_calls + s.recycles_age, 0);
	check_hitless(p, 1, 2);
	kt_destroy(p);
}

/* recycle_age_ms: under a steady knit_call stream, workers older than the
 * mark are replaced; no call fails. */
KT(recycle, by_age)
{
	knit_pool_t *p = recycle_pool(2, KNIT_TOPOLOGY_LANES, 0, 0, 100);
	knit_pool_stats_t s;
	int calls = 0;
	for (int i = 0; i < 200000; i++) {
		knit_completion_t c = kt_proc_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.status, 0, "call %d: %s", i, knit_strerror(c.status));
		cr_assert_eq(c.result.i64, i);
		calls++;
		if ((i & 63) == 0) {
			kt_stats(p, &s);
			if (s.recycles_age >= 4)
				break;
			kt_sleep_ms(1);
		}
	}
	kt_stats(p, &s);
	cr_assert_geq(s.recycles_age, 4, "%llu after %d calls", (unsigned long long)s.recycles_age,
		      calls);
	cr_assert_eq(s.recycles_calls + s.recycles_rss, 0);
	check_hitless(p, 2, 4);
	kt_destroy(p);
}

/* A stop while workers retire and successors boot (every call is a mark):
 * every call still completes once, and no child is left. */
KT(recycle, stop_during_recycles)
{
	char path[256];
	stamp_file(path, sizeof path);
	knit_pool_t *p = recycle_pool(2, KNIT_TOPOLOGY_LANES, 1, 0, 0);
	const uint32_t stamp = kt_id(p, "stamp");
	uint8_t arg[4200];
	for (uint32_t i = 0; i < 300; i++)
		kt_enq(p, stamp, stamp_arg(arg, i, path), NULL);
	cr_assert_eq(knit_stop(p, KNIT_STOP_DRAIN, (int64_t)(KT_BOUND_S * 1e9)), 0);
	knit_completion_t c[64];
	int got = 0;
	while (got < 300) {
		const int n = kt_reap(p, c, 300 - got < 64 ? 300 - got : 64);
		cr_assert_gt(n, 0);
		for (int j = 0; j < n; j++)
			cr_assert_eq(c[j].status, 0, "%s", knit_strerror(c[j].status));
		got += n;
	}
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.respawns, 0);
	kt_destroy(p);
	check_stamps(path, 300);
	cr_assert_eq(kt_count_children(), 0);
}

/* The supervisor's view: each worker's pid is the process that runs its
 * calls, its calls are counted, it is SERVING; threads have no pid. */
KT(recycle, worker_stats)
{
	knit_pool_t *p = recycle_pool(1, KNIT_TOPOLOGY_LANES, 0, 0, 0);
	knit_completion_t c = kt_proc_call(p, "pid", kt_i64(0));
	cr_assert_eq(c.status, 0);
	for (int i = 0; i < 9; i++)
		cr_assert_eq(kt_proc_call(p, "echo", kt_i64(i)).status, 0);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.worker[0].pid, c.result.i64);
	cr_assert_eq(s.worker[0].calls, 10);
	cr_assert_eq(s.worker[0].state, KNIT_WORKER_SERVING);
	cr_assert_gt(s.worker[0].rss_bytes, 0);
	cr_assert_gt(s.worker[0].age_ns, 0);
	cr_assert_eq(s.worker[0].reserved, 0);
	cr_assert_eq(s.worker[1].state, KNIT_WORKER_NONE); /* no such worker */
	const uint64_t age = s.worker[0].age_ns;
	kt_sleep_ms(2);
	kt_stats(p, &s);
	cr_assert_gt(s.worker[0].age_ns, age);
	kt_destroy(p);

	knit_pool_t *t = kt_pool_n(2);
	kt_stats(t, &s);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(s.worker[i].pid, 0);
		cr_assert_eq(s.worker[i].rss_bytes, 0);
		cr_assert_eq(s.worker[i].state, KNIT_WORKER_SERVING);
	}
	cr_assert_eq(s.recycles_calls + s.recycles_rss + s.recycles_age, 0);
	kt_destroy(t);
}

/* The marks are a process pool's; reserved3 must be 0. */
KT(recycle, options)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	knit_pool_t *p = NULL;
	o.recycle_calls = 10;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "recycle_calls") != NULL, "%s", knit_last_error());
	o.recycle_calls = 0;
	o.recycle_age_ms = 5;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "recycle_age_ms") != NULL, "%s", knit_last_error());
	o.recycle_age_ms = 0;
	o.recycle_rss_bytes = 1;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL);
	kt_proc_opts(&o, 1);
	o.reserved3 = 1;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "reserved3") != NULL, "%s", knit_last_error());
	cr_assert_null(p);
}

/* The task library's hooks under recycling: each successor ran its init
 * once before it served a call (its init ran before it was let in), and
 * every worker process that served ran its fini once it left. */
KT(recycle, hooks_once_per_worker)
{
	char dir[] = "/tmp/knit-recycle-hooks-XXXXXX";
	cr_assert(mkdtemp(dir) != NULL);
	setenv("KNIT_TEST_FINI_DIR", dir, 1);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = KT_BUILD_DIR "/tests/lib/proc_hooks.so";
	o.proc_flags = KNIT_PROC_INHERIT_ENV;
	o.recycle_calls = 50;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0, "%s", knit_last_error());
	/* At least 500 calls, and on until a successor took the lane over (it
	 * boots while its predecessor serves, so 500 quick calls may all come
	 * before the first recycle): bounded, the test fails below if none. */
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	for (int i = 0; i < 500 || (recycles(&s) == 0 && i < 1000000); i++) {
		knit_completion_t c = kt_proc_call(p, "inits", kt_none());
		cr_assert_eq(c.status, 0, "call %d: %s", i, knit_strerror(c.status));
		cr_assert_eq(c.result.i64, 1000, "call %d: init ran %lld times (worker %lld)", i,
			     (long long)(c.result.i64 / 1000), (long long)(c.result.i64 % 1000));
		if (i % 100 == 99)
			kt_stats(p, &s);
	}
	settle(p, 1, &s);
	cr_assert_geq(s.recycles_calls, 1);
	cr_assert_eq(s.spawns, 1 + s.recycles_calls);
	cr_assert_eq(s.crashes + s.respawns + s.recycle_failures, 0);
	cr_assert_eq(knit_stop(p, KNIT_STOP_DRAIN, -1), 0);
	kt_destroy(p);
	unsetenv("KNIT_TEST_FINI_DIR");
	/* one "fini" line per worker process that served */
	char path[300];
	snprintf(path, sizeof path, "%s/fini", dir);
	FILE *f = fopen(path, "r");
	cr_assert(f != NULL);
	uint64_t lines = 0;
	char line[128];
	while (fgets(line, sizeof line, f) != NULL)
		lines++;
	fclose(f);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(lines, s.spawns, "%llu fini lines, %llu workers", (unsigned long long)lines,
		     (unsigned long long)s.spawns);
}
