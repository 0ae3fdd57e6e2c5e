/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/proc_sandbox_once.c - every call ends in exactly one
 * completion on a sandboxed process pool (KNIT_SANDBOX_SECCOMP, and
 * Landlock with no path, best effort: every respawn enters it) whose load
 * carries a violating call every 1000: proc_sandbox.so's "socket", which the
 * default policy forbids, among "echo" calls of i64 values. Each violating
 * call's info names its syscall (KNIT_INFO_SYSCALL, "socket").
 *
 * Each violation kills its worker (SIGSYS), which is respawned. Every
 * violating call completes with -KNIT_ECRASHED; every echo completes once,
 * with its own value, or (lanes topology only: calls the dead worker had
 * run but not yet published) -KNIT_ECRASHED, at most one lane's worth (32)
 * per violation; on the steal topology a worker holds only the call it
 * claimed, so every echo succeeds. At the end the stats count exactly one
 * KNIT_DEATH_SANDBOX death and one respawn per violation, and destroy
 * leaves no child. Both topologies, 2 workers, 20,000 calls (times
 * KNIT_STRESS_SCALE). Exit 0/1/77 (knit-worker, the library or libseccomp
 * missing: skipped, saying which).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knitting.h"
#include "stress/stress.h"

#define BOUND_NS (120ll * 1000 * 1000 * 1000)
#define EVERY 1000u
#define WINDOW 256u

static uint8_t *seen;

static int fail(const char *what, const char *topo)
{
	printf("FAIL (%s): %s\n", topo, what);
	return 1;
}

static int run(uint32_t topology, const char *worker, const char *lib, uint32_t n)
{
	const char *topo = topology == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
	knit_sandbox_t sb = {.size = sizeof sb,
			     .flags = KNIT_SANDBOX_SECCOMP | KNIT_SANDBOX_LANDLOCK |
				      KNIT_SANDBOX_LANDLOCK_BEST_EFFORT};
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.topology = topology;
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.task_library = lib;
	o.worker_path = worker;
	o.respawn_max = n / EVERY + 8;
	/* Every respawn at once: a violation soon after the last one's
	 * respawn would back off, and a respawn still waiting at the end is
	 * not counted yet (the backoff: tests/api/test_proc_restart.c). */
	o.respawn_backoff_ms = KNIT_ZERO;
	o.sandbox = &sb;
	knit_pool_t *p = NULL;
	int rc = knit_pool_create(&o, NULL, 0, &p);
	if (rc != 0) {
		if (strstr(knit_last_error(), "without libseccomp") != NULL) {
			printf("SKIP: %s\n", knit_last_error());
			return 77;
		}
		printf("FAIL (%s): create: %s: %s\n", topo, knit_strerror(rc), knit_last_error());
		return 1;
	}
	const int echo = knit_pool_task_id(p, "echo"), bad = knit_pool_task_id(p, "socket");
	if (echo < 0 || bad < 0)
		return fail("no echo or socket task", topo);
	memset(seen, 0, n);
	uint32_t sent = 0, got = 0, violations = 0, lost_echoes = 0;
	const int64_t end = now_ns() + BOUND_NS;
	knit_completion_t out[64];
	while (got < n) {
		if (now_ns() > end)
			return fail("calls left without a completion past the bound", topo);
		while (sent < n && sent - got < WINDOW) {
			const bool v = sent % EVERY == EVERY / 2;
			knit_value_t arg = {.type = KNIT_VALUE_I64, .i64 = (int64_t)sent * 7};
			knit_ticket_t t;
			rc = knit_enqueue(p, (uint32_t)(v ? bad : echo), &arg,
					  (void *)(uintptr_t)sent, &t);
			if (rc == -KNIT_EAGAIN)
				break;
			if (rc != 0) {
				printf("FAIL (%s): enqueue %u: %s\n", topo, sent,
				       knit_strerror(rc));
				return 1;
			}
			violations += v;
			sent++;
		}
		const int k = knit_complete(p, out, 64, 100 * 1000 * 1000);
		if (k < 0)
			return fail("knit_complete failed", topo);
		for (int i = 0; i < k; i++) {
			const uint32_t c = (uint32_t)(uintptr_t)out[i].user_data;
			if (c >= n || seen[c]++ != 0) {
				printf("FAIL (%s): call %u completed twice (or unknown)\n", topo,
				       c);
				return 1;
			}
			got++;
			const bool v = c % EVERY == EVERY / 2;
			if (v) {
				if (out[i].status != -KNIT_ECRASHED) {
					printf("FAIL (%s): violating call %u: status %d\n", topo, c,
					       out[i].status);
					return 1;
				}
				/* Its info names the syscall (infos of one batch
				 * of 64 fit the ring of 64). */
				knit_completion_info_t in = {.size = sizeof in};
				if (knit_completion_info(p, &out[i], &in) != 0 ||
				    in.death != KNIT_DEATH_SANDBOX ||
				    (in.flags & KNIT_INFO_SYSCALL) == 0 ||
				    strcmp(in.syscall_name, "socket") != 0) {
					printf("FAIL (%s): violating call %u: death %u, syscall "
					       "\"%s\" (flags 0x%x)\n",
					       topo, c, in.death, in.syscall_name, in.flags);
					return 1;
				}
			} else if (out[i].status == -KNIT_ECRASHED &&
				   topology == KNIT_TOPOLOGY_LANES) {
				lost_echoes++;
			} else if (out[i].status != 0 || out[i].result.type != KNIT_VALUE_I64 ||
				   out[i].result.i64 != (int64_t)c * 7) {
				printf("FAIL (%s): echo %u: status %d, value %lld\n", topo, c,
				       out[i].status, (long long)out[i].result.i64);
				return 1;
			}
			knit_completion_release(p, &out[i]);
		}
	}
	if (lost_echoes > 32 * violations)
		return fail("more echoes failed than the dead workers could have held", topo);
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	if (knit_pool_stats(p, &s, sizeof s) != 0)
		return fail("stats", topo);
	if (s.deaths[KNIT_DEATH_SANDBOX] != violations || s.respawns != violations ||
	    s.crashes != violations) {
		printf("FAIL (%s): %u violations, deaths[SANDBOX] %llu, respawns %llu, crashes "
		       "%llu\n",
		       topo, violations, (unsigned long long)s.deaths[KNIT_DEATH_SANDBOX],
		       (unsigned long long)s.respawns, (unsigned long long)s.crashes);
		return 1;
	}
	if (knit_pool_destroy(p) != 0)
		return fail("destroy", topo);
	if (stress_children(NULL) != 0)
		return fail("a child left after destroy", topo);
	printf("%s: %u calls, %u violations (each killed and respawned its worker), %u echoes "
	       "failed with a dead worker, 0 failures; Landlock ABI %u\n",
	       topo, n, violations, lost_echoes, s.landlock_abi);
	return 0;
}

int main(void)
{
	char worker[PATH_MAX + 64], lib[PATH_MAX + 64];
	const int found = stress_proc_paths(worker, lib);
	if (found != 0)
		return found;
	/* proc_sandbox.so beside proc_tasks.so */
	char *slash = strrchr(lib, '/');
	snprintf(slash + 1, PATH_MAX + 64 - (size_t)(slash + 1 - lib), "proc_sandbox.so");
	if (access(lib, R_OK) != 0) {
		printf("SKIP: %s not built\n", lib);
		return 77;
	}
	double scale = 1.0;
	const char *s = getenv("KNIT_STRESS_SCALE");
	if (s != NULL && atof(s) > 0)
		scale = atof(s);
	uint32_t n = (uint32_t)(20000.0 * scale);
	if (n < 2 * EVERY)
		n = 2 * EVERY;
	seen = calloc(n, 1);
	if (seen == NULL)
		return 1;
	int rc = run(KNIT_TOPOLOGY_STEAL, worker, lib, n);
	if (rc == 0)
		rc = run(KNIT_TOPOLOGY_LANES, worker, lib, n);
	free(seen);
	return rc != 0 ? rc : atomic_load(&failures) != 0; /* stress.h's count (none used here) */
}
