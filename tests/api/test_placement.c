/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_placement.c - worker CPU placement (cpu_mask, cpu_flags):
 * every worker thread's affinity, read back from the kernel both from inside
 * a task (sched_getaffinity(0)) and from outside (the knit-wN thread ids in
 * /proc/self/task), is exactly what was asked; stats report the CPU; a CPU
 * the process may not use, unknown flags and a non-zero reserved1 fail with
 * -KNIT_EINVAL; an older, shorter options struct still works. And the spin
 * cap: with as many spinning workers as online CPUs, one of them has to park
 * (so calls to it need a futex wake) where without the cap none would.
 */
#include "api/kt.h"
#include "api/placement.h"

#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

/* Returns the calling worker's affinity: bits of CPUs 0..63 as I64. */
static int t_where(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	cpu_set_t s;
	CPU_ZERO(&s);
	if (sched_getaffinity(0, sizeof s, &s) != 0)
		return 1;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)cpu_low_bits(&s);
	return 0;
}

static int t_nop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	(void)ret;
	return 0;
}

static const knit_task_t tasks[] = {{"nop", t_nop, 0, 0}, {"where", t_where, 0, 0}};

static int popcount64(uint64_t v) { return __builtin_popcountll(v); }

static void opts_init(knit_pool_options_t *o, uint32_t workers)
{
	memset(o, 0, sizeof *o);
	o->size = sizeof *o;
	o->workers = workers;
	o->topology = KNIT_TOPOLOGY_LANES;
	o->park_ms = KT_PARK_MS;
}

static knit_pool_t *make(const knit_pool_options_t *o)
{
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(o, tasks, 2, &pool);
	cr_assert_eq(rc, 0, "knit_pool_create: %s", knit_strerror(rc));
	return pool;
}

/* Affinity (CPUs 0..63) of the thread named knit-w<w>, read from outside. */
static uint64_t worker_affinity(int w)
{
	char want[16];
	snprintf(want, sizeof want, "knit-w%d", w);
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	struct dirent *e;
	int64_t found = -1;
	uint64_t bits = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], comm[32] = {0};
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof comm, f) == NULL)
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (strcmp(comm, want) != 0)
			continue;
		cr_assert_eq(found, -1, "two threads named %s", want);
		found = atoll(e->d_name);
		cpu_set_t s;
		CPU_ZERO(&s);
		cr_assert_eq(sched_getaffinity((pid_t)found, sizeof s, &s), 0);
		bits = cpu_low_bits(&s);
	}
	closedir(d);
	cr_assert_neq(found, -1, "no thread named %s", want);
	return bits;
}

/* A call of `task` pinned to lane w: its I64 result. */
static int64_t lane_call(knit_pool_t *pool, uint32_t task, uint32_t w)
{
	knit_call_options_t co = {.size = sizeof co, .flags = KNIT_CALL_LANE, .lane = w};
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue_ex(pool, task, NULL, NULL, &co, &t), 0);
	knit_completion_t c;
	cr_assert_eq(knit_complete(pool, &c, 1, (int64_t)(KT_BOUND_S * 1e9)), 1);
	cr_assert_eq(c.status, 0, "lane %u: %s", w, knit_strerror(c.status));
	cr_assert_eq(c.result.type, KNIT_VALUE_I64);
	const int64_t v = c.result.i64;
	knit_completion_release(pool, &c);
	return v;
}

/* Affinity seen by a task on lane w. */
static uint64_t task_affinity(knit_pool_t *pool, uint32_t w)
{
	return (uint64_t)lane_call(pool, 1, w);
}

KT(placement, one_cpu_for_all_workers)
{
	int cpu = highest_cpu(allowed_bits()); /* the highest CPU we may use */
	knit_pool_options_t o;
	opts_init(&o, 2);
	o.cpu_mask[0] = 1ull << cpu;
	knit_pool_t *pool = make(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	for (uint32_t w = 0; w < 2; w++) {
		cr_expect_eq(worker_affinity((int)w), 1ull << cpu, "worker %u", w);
		cr_expect_eq(task_affinity(pool, w), 1ull << cpu, "worker %u", w);
		cr_expect_eq(s.lane[w].cpu, cpu, "lane %u", w);
	}
	kt_destroy(pool);
}

KT(placement, one_per_worker_round_robin)
{
	uint64_t ok = allowed_bits();
	int n = popcount64(ok);
	cr_assert_gt(n, 0);
	uint32_t workers = (uint32_t)(n + 1 > 8 ? 8 : n + 1); /* wraps around once */
	knit_pool_options_t o;
	opts_init(&o, workers);
	o.cpu_mask[0] = ok;
	o.cpu_flags = KNIT_CPU_ONE_PER_WORKER;
	knit_pool_t *pool = make(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	for (uint32_t w = 0; w < workers; w++) {
		int cpu = nth_cpu(ok, (int)(w % (uint32_t)n));
		cr_expect_eq(worker_affinity((int)w), 1ull << cpu, "worker %u", w);
		cr_expect_eq(task_affinity(pool, w), 1ull << cpu, "worker %u", w);
		cr_expect_eq(s.lane[w].cpu, cpu, "lane %u", w);
	}
	kt_destroy(pool);
}

KT(placement, a_set_of_cpus)
{
	uint64_t want = two_cpus_or_skip(allowed_bits());
	knit_pool_options_t o;
	opts_init(&o, 2);
	o.cpu_mask[0] = want;
	knit_pool_t *pool = make(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	for (uint32_t w = 0; w < 2; w++) {
		cr_expect_eq(worker_affinity((int)w), want, "worker %u", w);
		cr_expect_eq(task_affinity(pool, w), want, "worker %u", w);
		cr_expect_eq(s.lane[w].cpu, -1, "lane %u: on a set, not one CPU", w);
	}
	kt_destroy(pool);
}

KT(placement, none_inherits_and_reports_minus_one)
{
	uint64_t ok = allowed_bits();
	knit_pool_options_t o;
	opts_init(&o, 2);
	o.inline_lane = KNIT_INLINE_LAST;
	knit_pool_t *pool = make(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_assert_eq(s.lanes, 3);
	for (uint32_t w = 0; w < 2; w++) {
		cr_expect_eq(worker_affinity((int)w), ok, "worker %u", w);
		cr_expect_eq(s.lane[w].cpu, -1, "lane %u", w);
	}
	cr_expect_eq(s.lane[2].cpu, -1, "inline lane");
	kt_destroy(pool);
}

KT(placement, older_struct_size_means_no_placement)
{
	uint64_t ok = allowed_bits();
	knit_pool_options_t o;
	opts_init(&o, 1);
	/* Garbage past the old size must not be read. */
	memset(o.cpu_mask, 0xFF, sizeof o.cpu_mask);
	o.cpu_flags = 0xFFFFFFFFu;
	o.reserved1 = 7;
	o.size = (uint32_t)offsetof(knit_pool_options_t, cpu_mask);
	knit_pool_t *pool = make(&o);
	cr_expect_eq(worker_affinity(0), ok);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.lane[0].cpu, -1);
	kt_destroy(pool);
}

static void expect_einval(const knit_pool_options_t *o, const char *what)
{
	knit_pool_t *pool = (knit_pool_t *)(uintptr_t)1;
	int rc = knit_pool_create(o, tasks, 2, &pool);
	cr_expect_eq(rc, -KNIT_EINVAL, "%s: got %d (%s)", what, rc, knit_strerror(rc));
	if (rc == 0)
		knit_pool_destroy(pool);
}

KT(placement, errors) { placement_errors(opts_init, expect_einval); }

/* The spin cap, counted. As many workers as online CPUs, each asked to spin
 * for a second between calls, and calls sent to them in turn, one at a time.
 * Only online CPUs - 1 may spin at once, so at least one worker parks every
 * round and the call that reaches it costs a futex wake. Without the cap
 * every worker would still be spinning when its next call came (rounds take
 * microseconds, the spin window a second) and no wake would be sent.
 * Threads share the process's spin slots; worker processes cannot (each
 * counts only its own spinners), so the pool's lanes from online CPUs - 1
 * on never spin: the cap holds across the processes too. */
static void spin_capped(int procs)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cr_assert_gt(ncpu, 0);
	if (ncpu > 16) {
		printf("SKIP: %ld CPUs: too many spinning workers for a test\n", ncpu);
		fflush(stdout);
		cr_skip_test("too many CPUs");
	}
	enum { ROUNDS = 40 };
	const uint32_t workers = (uint32_t)ncpu;
	knit_pool_options_t o;
	knit_pool_t *pool = NULL;
	if (procs) {
		kt_proc_opts(&o, workers);
		o.topology = KNIT_TOPOLOGY_LANES;
		o.park_ms = KT_PARK_MS;
		o.spin_us = 1000000;
		cr_assert_eq(knit_pool_create(&o, NULL, 0, &pool), 0, "%s", knit_last_error());
	} else {
		opts_init(&o, workers);
		o.spin_us = 1000000;
		pool = make(&o);
	}
	/* Lane w's call: the placement's "where" task for threads, the task
	 * library's "pid" (distinct per worker process) for processes. */
	const uint32_t task = procs ? kt_id(pool, "pid") : 1;
	int64_t pid_of[16] = {0};
	knit_pool_stats_t before, after;
	/* One warm-up round: workers start parked or spinning in any order. */
	for (uint32_t w = 0; w < workers; w++)
		pid_of[w] = lane_call(pool, task, w);
	kt_stats(pool, &before);
	/* A pause before each call lets a worker that was denied a spin slot
	 * finish parking, so the call that reaches it sends the wake the test
	 * counts (without the pause, a fast host often meets it between the
	 * denial and its park announcement, where its re-check takes the call
	 * and no wake is needed). A spinning worker keeps spinning: the pause is
	 * far below spin_us. */
	for (int r = 0; r < ROUNDS; r++)
		for (uint32_t w = 0; w < workers; w++) {
			kt_sleep_ms(3);
			const int64_t v = lane_call(pool, task, w);
			if (procs)
				cr_assert_eq(v, pid_of[w], "lane %u changed worker process", w);
		}
	kt_stats(pool, &after);
	uint64_t wakes = 0, calls = 0;
	for (uint32_t w = 0; w < workers; w++) {
		wakes += after.lane[w].wakes_sent - before.lane[w].wakes_sent;
		calls += after.lane[w].calls - before.lane[w].calls;
		for (uint32_t v = 0; procs && v < w; v++)
			cr_assert_neq(pid_of[v], pid_of[w], "lanes %u and %u: one process", v, w);
	}
	cr_expect_eq(calls, (uint64_t)ROUNDS * workers);
	/* With the cap, about one wake per round (the worker without a slot);
	 * half leaves room for a worker the machine did not run within the
	 * pause. Without the cap no worker ever parks here: 0 wakes. */
	cr_expect_geq(wakes, ROUNDS / 2,
		      "%llu wakes in %d rounds: more than %ld workers spun at once",
		      (unsigned long long)wakes, ROUNDS, ncpu - 1);
	kt_destroy(pool);
}

KT(placement, spinning_workers_capped_by_cpus) { spin_capped(0); }
KT(placement, spinning_worker_processes_capped_by_cpus) { spin_capped(1); }
