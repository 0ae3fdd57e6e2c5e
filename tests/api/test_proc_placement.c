/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_placement.c - CPU placement (cpu_mask, cpu_flags) of
 * process pools: each worker process's affinity, read back from outside
 * (/proc/PID/status of the worker process) and from inside a task
 * (sched_getaffinity(0) in the task library's "where"), is exactly what was
 * asked, not what the host's spawning thread had; the stats report the CPU;
 * a CPU the process may not use fails knit_pool_create with -KNIT_EINVAL and
 * leaves no child; a respawned worker keeps its lane's placement.
 */
#include "api/kt.h"
#include "api/placement.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Pin the test's own thread (the pool's creator, whose affinity a spawned
 * process would inherit) to one CPU. */
static void pin_self(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	cr_assert_eq(sched_setaffinity(0, sizeof s, &s), 0);
}

/* Task `name` on lane w: its I64 result. */
static int64_t lane_call(knit_pool_t *p, uint32_t w, const char *name)
{
	knit_call_options_t co = {.size = sizeof co, .flags = KNIT_CALL_LANE, .lane = w};
	knit_value_t none = kt_none();
	knit_ticket_t t;
	cr_assert_eq(knit_enqueue_ex(p, kt_id(p, name), &none, NULL, &co, &t), 0);
	knit_completion_t c;
	cr_assert_eq(knit_complete(p, &c, 1, (int64_t)(KT_BOUND_S * 1e9)), 1);
	cr_assert_eq(c.status, 0, "%s on lane %u: %s", name, w, knit_strerror(c.status));
	cr_assert_eq(c.result.type, KNIT_VALUE_I64);
	const int64_t v = c.result.i64;
	knit_completion_release(p, &c);
	return v;
}

/* Affinity (CPUs 0..63) of process pid, from its Cpus_allowed_list line
 * ("0-2,5"). */
static uint64_t status_affinity(int64_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%lld/status", (long long)pid);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	uint64_t bits = 0;
	int found = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "Cpus_allowed_list:", 18) != 0)
			continue;
		found = 1;
		char *s = line + 18;
		while (*s != 0 && *s != '\n') {
			while (*s == ' ' || *s == '\t' || *s == ',')
				s++;
			if (*s < '0' || *s > '9')
				break;
			long a = strtol(s, &s, 10), b = a;
			if (*s == '-')
				b = strtol(s + 1, &s, 10);
			for (long c = a; c <= b && c < 64; c++)
				bits |= 1ull << c;
		}
	}
	fclose(f);
	cr_assert(found, "no Cpus_allowed_list in %s", path);
	return bits;
}

/* Lane w's worker process: where it runs, seen from outside and inside. */
static void expect_placed(knit_pool_t *p, uint32_t w, uint64_t want)
{
	const int64_t pid = lane_call(p, w, "pid");
	cr_assert_neq(pid, (int64_t)getpid());
	cr_expect_eq(status_affinity(pid), want, "lane %u: /proc/%lld/status", w, (long long)pid);
	cr_expect_eq((uint64_t)lane_call(p, w, "where"), want, "lane %u: from a task", w);
}

static knit_pool_t *make(const knit_pool_options_t *o)
{
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "knit_pool_create: %s", knit_strerror(rc));
	return p;
}

/* The host pinned to one CPU, the worker asked onto another: the worker
 * runs where it was asked, not where its spawner ran. */
KT(proc_placement, one_cpu_not_the_hosts)
{
	const uint64_t ok = allowed_bits();
	const int worker_cpu = highest_cpu(ok); /* the highest CPU we may use */
	pin_self(nth_cpu(ok, 0));
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.cpu_mask[0] = 1ull << worker_cpu;
	knit_pool_t *p = make(&o);
	expect_placed(p, 0, 1ull << worker_cpu);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_expect_eq(s.lane[0].cpu, worker_cpu);
	kt_destroy(p);
}

KT(proc_placement, one_per_worker_round_robin)
{
	const uint64_t ok = allowed_bits();
	const int n = __builtin_popcountll(ok);
	cr_assert_gt(n, 0);
	const uint32_t workers =
		(uint32_t)(n + 1 > 4 ? 4 : n + 1); /* wraps around once (few CPUs) */
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.topology = KNIT_TOPOLOGY_LANES; /* lane_call() pins; placement is the same under steal */
	o.cpu_mask[0] = ok;
	o.cpu_flags = KNIT_CPU_ONE_PER_WORKER;
	knit_pool_t *p = make(&o);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	for (uint32_t w = 0; w < workers; w++) {
		const int cpu = nth_cpu(ok, (int)(w % (uint32_t)n));
		expect_placed(p, w, 1ull << cpu);
		cr_expect_eq(s.lane[w].cpu, cpu, "lane %u", w);
	}
	kt_destroy(p);
}

KT(proc_placement, a_set_of_cpus)
{
	const uint64_t ok = allowed_bits();
	const uint64_t want = two_cpus_or_skip(ok);
	pin_self(nth_cpu(ok, 0));
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES; /* lane_call() pins */
	o.cpu_mask[0] = want;
	knit_pool_t *p = make(&o);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	for (uint32_t w = 0; w < 2; w++) {
		expect_placed(p, w, want);
		cr_expect_eq(s.lane[w].cpu, -1, "lane %u: on a set, not one CPU", w);
	}
	kt_destroy(p);
}

/* No placement asked: the worker process inherits its spawner's affinity
 * (as a worker thread inherits its creator's) and the stats say -1. */
KT(proc_placement, none_inherits_and_reports_minus_one)
{
	const uint64_t ok = allowed_bits();
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	knit_pool_t *p = make(&o);
	expect_placed(p, 0, ok);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_expect_eq(s.lane[0].cpu, -1);
	kt_destroy(p);
}

/* A crashed worker's successor is placed as the lane's first worker was. */
KT(proc_placement, respawned_worker_keeps_its_cpu)
{
	const uint64_t ok = allowed_bits();
	const int cpu = highest_cpu(ok);
	pin_self(nth_cpu(ok, 0));
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.cpu_mask[0] = 1ull << cpu;
	knit_pool_t *p = make(&o);
	const int64_t pid0 = lane_call(p, 0, "pid");
	knit_completion_t c = kt_proc_call(p, "exit", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED, "%s", knit_strerror(c.status));
	const int64_t pid1 = lane_call(p, 0, "pid");
	cr_assert_neq(pid1, pid0, "respawned");
	expect_placed(p, 0, 1ull << cpu);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_expect_eq(s.respawns, 1);
	cr_expect_eq(s.lane[0].cpu, cpu);
	kt_destroy(p);
	cr_expect_eq(kt_count_children(), 0);
}

static void expect_einval(const knit_pool_options_t *o, const char *what)
{
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(o, NULL, 0, &p);
	cr_expect_eq(rc, -KNIT_EINVAL, "%s: got %d (%s)", what, rc, knit_strerror(rc));
	if (rc == 0)
		knit_pool_destroy(p);
	cr_expect_eq(kt_count_children(), 0, "%s: no worker left", what);
}

KT(proc_placement, errors) { placement_errors(kt_proc_opts, expect_einval); }
