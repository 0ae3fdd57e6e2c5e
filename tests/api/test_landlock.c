/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_landlock.c - the process pools' Landlock sandbox (#28):
 * the tasks of proc_landlock.so open files; with KNIT_SANDBOX_LANDLOCK an
 * open outside landlock_ro / landlock_rw fails (EACCES) for its own call
 * only, a read-only path reads and does not write, a read-write path
 * writes; the same tasks succeed without Landlock (so the test can fail).
 * Also: init's file used after Landlock closed, the host out of reach
 * (ptrace access; ABI 6: signals), Landlock with the seccomp filter and
 * across a respawn, a worker without Landlock refused (or, best effort,
 * visible in the stats), and the options' errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kt.h"

#define LL_LIB KT_BUILD_DIR "/tests/lib/proc_landlock.so"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

static volatile int host_target = 1234; /* vm_read's target in this (the host) process */

/* The kernel's Landlock ABI as the host sees it (0: none). */
static int kernel_abi(void)
{
	const long v = syscall(SYS_landlock_create_ruleset, NULL, 0, 1u);
	return v > 0 ? (int)v : 0;
}

#define NEED_LANDLOCK()                                                                            \
	do {                                                                                       \
		if (kernel_abi() == 0)                                                             \
			KT_SKIP("this kernel has no Landlock (landlock_create_ruleset failed)");   \
	} while (0)

/* A scratch tree: D/ro/data, D/rw/, D/out/data, D/one, D/two. */
struct tree {
	char d[64], ro[96], rw[96], out[96], ro_data[128], out_data[128], one[96], two[96];
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void tree_make(struct tree *t)
{
	snprintf(t->d, sizeof t->d, "/tmp/knit-landlock-XXXXXX");
	cr_assert_not_null(mkdtemp(t->d));
	snprintf(t->ro, sizeof t->ro, "%s/ro", t->d);
	snprintf(t->rw, sizeof t->rw, "%s/rw", t->d);
	snprintf(t->out, sizeof t->out, "%s/out", t->d);
	cr_assert_eq(mkdir(t->ro, 0700), 0);
	cr_assert_eq(mkdir(t->rw, 0700), 0);
	cr_assert_eq(mkdir(t->out, 0700), 0);
	snprintf(t->ro_data, sizeof t->ro_data, "%s/data", t->ro);
	snprintf(t->out_data, sizeof t->out_data, "%s/data", t->out);
	snprintf(t->one, sizeof t->one, "%s/one", t->d);
	snprintf(t->two, sizeof t->two, "%s/two", t->d);
	put(t->ro_data, "ro data");
	put(t->out_data, "out data");
	put(t->one, "one");
	put(t->two, "two");
}

static void tree_remove(struct tree *t)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->d);
	cr_assert_eq(system(cmd), 0);
}

static knit_pool_t *ll_pool(const knit_sandbox_t *sb, uint32_t proc_flags)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = LL_LIB;
	o.respawn_max = 100;
	o.proc_flags = proc_flags;
	o.sandbox = sb;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "create: %s: %s", knit_strerror(rc), knit_last_error());
	return p;
}

static knit_value_t path_arg(const char *path) { return kt_str(path, strlen(path)); }

/* Run task on path: 0, or the errno the task saw (its call -KNIT_ETASK). */
static int on_path(knit_pool_t *p, const char *task, const char *path)
{
	knit_completion_t c = kt_proc_call(p, task, path_arg(path));
	int e = 0;
	if (c.status != 0) {
		cr_assert_eq(c.status, -KNIT_ETASK, "%s %s: %s", task, path,
			     knit_strerror(c.status));
		e = c.result.code;
	}
	knit_completion_release(p, &c);
	return e;
}

/* read path: asserts it succeeded with `want`. */
static void reads(knit_pool_t *p, const char *path, const char *want)
{
	knit_completion_t c = kt_proc_call(p, "read", path_arg(path));
	cr_assert_eq(c.status, 0, "read %s: %s (errno %d)", path, knit_strerror(c.status),
		     c.result.code);
	cr_assert_eq(c.result.len, strlen(want), "read %s", path);
	cr_assert_eq(memcmp(c.result.data, want, c.result.len), 0, "read %s", path);
	knit_completion_release(p, &c);
}

static knit_pool_stats_t stats_of(knit_pool_t *p)
{
	knit_pool_stats_t s;
	kt_stats(p, &s);
	return s;
}

static knit_value_t vm_arg(int64_t w[2])
{
	w[0] = getpid();
	w[1] = (int64_t)(intptr_t)&host_target;
	return kt_bytes(w, 2 * sizeof(int64_t));
}

KT(landlock, files_without_landlock_work)
{
	/* So that the tests below can fail: each open reaches the file. */
	struct tree t;
	tree_make(&t);
	knit_pool_t *p = ll_pool(NULL, 0);
	reads(p, t.out_data, "out data");
	reads(p, t.two, "two");
	cr_assert_eq(on_path(p, "write", t.ro_data), 0);
	reads(p, t.ro_data, "written");
	cr_assert_eq(on_path(p, "write", t.out_data), 0);
	knit_completion_t c = kt_proc_call(p, "kill_host", kt_i64(getpid()));
	cr_assert_eq(c.status, 0, "kill(host, 0) without a sandbox");
	int64_t w[2];
	c = kt_proc_call(p, "vm_read", vm_arg(w));
	cr_assert_eq(c.status, 0, "process_vm_readv of the host without a sandbox: errno %d",
		     c.result.code);
	cr_assert_eq(c.result.i64, 1234);
	cr_assert_eq(stats_of(p).landlock_abi, 0, "no Landlock asked");
	kt_destroy(p);
	tree_remove(&t);
}

KT(landlock, only_the_listed_paths)
{
	NEED_LANDLOCK();
	struct tree t;
	tree_make(&t);
	const char *const ro[] = {t.ro, t.one, NULL};
	const char *const rw[] = {t.rw, NULL};
	knit_sandbox_t sb = {.size = sizeof sb,
			     .flags = KNIT_SANDBOX_LANDLOCK,
			     .landlock_ro = ro,
			     .landlock_rw = rw};
	knit_pool_t *p = ll_pool(&sb, 0);
	const int abi = kernel_abi();
	cr_assert_eq(stats_of(p).landlock_abi,
		     (uint32_t)(abi < KNIT_LANDLOCK_ABI_MAX ? abi : KNIT_LANDLOCK_ABI_MAX),
		     "the stats say which ABI the workers applied");
	/* Outside: refused, that call only; the next one succeeds. */
	cr_assert_eq(on_path(p, "read", t.out_data), EACCES, "read outside the paths");
	reads(p, t.ro_data, "ro data");
	cr_assert_eq(on_path(p, "read", t.two), EACCES, "a file beside a listed file");
	reads(p, t.one, "one");
	cr_assert_eq(on_path(p, "write", t.out_data), EACCES, "write outside the paths");
	/* Read-only: read, not written (nor created, nor truncated). */
	cr_assert_eq(on_path(p, "write", t.ro_data), EACCES, "write beneath a read-only path");
	cr_assert_eq(on_path(p, "write", t.one), EACCES, "write of a read-only file");
	char fresh[128];
	snprintf(fresh, sizeof fresh, "%s/fresh", t.ro);
	cr_assert_eq(on_path(p, "write", fresh), EACCES, "create beneath a read-only path");
	reads(p, t.ro_data, "ro data");
	/* Read-write: created, written, read back. */
	char made[128];
	snprintf(made, sizeof made, "%s/made", t.rw);
	cr_assert_eq(on_path(p, "write", made), 0, "write beneath a read-write path");
	reads(p, made, "written");
	/* Refusals are the kernel's answers, not deaths. */
	knit_pool_stats_t s = stats_of(p);
	cr_assert_eq(s.crashes, 0);
	cr_assert_eq(s.respawns, 0);
	kt_destroy(p);
	/* The host's files as they were. */
	struct stat st;
	cr_assert_neq(stat(fresh, &st), 0);
	tree_remove(&t);
}

KT(landlock, init_file_used_after_landlock_closed)
{
	NEED_LANDLOCK();
	struct tree t;
	tree_make(&t);
	setenv("KNIT_TEST_INIT_FILE", t.out_data, 1);
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_LANDLOCK};
	knit_pool_t *p = ll_pool(&sb, KNIT_PROC_INHERIT_ENV);
	unsetenv("KNIT_TEST_INIT_FILE");
	knit_completion_t c = kt_proc_call(p, "readinit", kt_none());
	cr_assert_eq(c.status, 0, "init's file: %s", knit_strerror(c.status));
	cr_assert_eq(c.result.len, 8);
	cr_assert_eq(memcmp(c.result.data, "out data", 8), 0);
	knit_completion_release(p, &c);
	cr_assert_eq(on_path(p, "read", t.out_data), EACCES, "the same file opened by a task");
	kt_destroy(p);
	tree_remove(&t);
}

KT(landlock, host_out_of_reach)
{
	NEED_LANDLOCK();
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_LANDLOCK};
	knit_pool_t *p = ll_pool(&sb, 0);
	/* Every ABI: no ptrace access to a process outside the domain. */
	int64_t w[2];
	knit_completion_t c = kt_proc_call(p, "vm_read", vm_arg(w));
	cr_assert_eq(c.status, -KNIT_ETASK, "process_vm_readv of the host under Landlock");
	cr_assert_eq(c.result.code, EPERM);
	knit_completion_release(p, &c);
	/* ABI 6: no signal to a process outside the domain. */
	c = kt_proc_call(p, "kill_host", kt_i64(getpid()));
	if (kernel_abi() >= 6) {
		cr_assert_eq(c.status, -KNIT_ETASK, "kill(host, 0) under Landlock ABI 6");
		cr_assert_eq(c.result.code, EPERM);
	} else {
		cr_log_info("Landlock ABI %d: signals are not scoped (ABI 6)", kernel_abi());
		cr_assert_eq(c.status, 0);
	}
	knit_completion_release(p, &c);
	cr_assert_eq(stats_of(p).crashes, 0);
	kt_destroy(p);
}

KT(landlock, with_seccomp_and_across_a_respawn)
{
	NEED_LANDLOCK();
	struct tree t;
	tree_make(&t);
	const char *const ro[] = {t.ro, NULL};
	knit_sandbox_t sb = {.size = sizeof sb,
			     .flags = KNIT_SANDBOX_LANDLOCK | KNIT_SANDBOX_SECCOMP,
			     .seccomp_sets = KNIT_SECCOMP_FILES,
			     .landlock_ro = ro};
	knit_pool_t *p = ll_pool(&sb, 0);
	/* Landlock refuses (the filter lets open through): not a kill. */
	cr_assert_eq(on_path(p, "read", t.out_data), EACCES);
	reads(p, t.ro_data, "ro data");
	/* A seccomp kill (kill of the host): the worker respawns... */
	knit_completion_t c = kt_proc_call(p, "kill_host", kt_i64(getpid()));
	cr_assert_eq(c.status, -KNIT_ECRASHED, "kill(host) under seccomp");
	knit_completion_release(p, &c);
	/* ... under Landlock again. */
	cr_assert_eq(on_path(p, "read", t.out_data), EACCES, "the respawned worker");
	reads(p, t.ro_data, "ro data");
	knit_pool_stats_t s = stats_of(p);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.deaths[KNIT_DEATH_SANDBOX], 1);
	cr_assert_geq(s.landlock_abi, 1);
	kt_destroy(p);
	tree_remove(&t);
}

/* create fails with code; returns the message */
static const char *create_fails(const knit_pool_options_t *o, int code)
{
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(o, NULL, 0, &p);
	cr_assert_eq(rc, code, "create: %s (%s)", knit_strerror(rc), knit_last_error());
	cr_assert_null(p);
	return knit_last_error();
}

KT(landlock, without_landlock_refused_unless_best_effort)
{
	/* The worker sees no Landlock: its task library's init answers
	 * Landlock's syscalls with ENOSYS (a kernel without it) or EOPNOTSUPP
	 * (disabled at boot), before the sandbox closes. */
	struct tree t;
	tree_make(&t);
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_LANDLOCK};
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.task_library = LL_LIB;
	o.proc_flags = KNIT_PROC_INHERIT_ENV;
	o.sandbox = &sb;
	setenv("KNIT_TEST_HIDE_LANDLOCK", "ENOSYS", 1);
	const char *m = create_fails(&o, -KNIT_ESYSTEM);
	cr_assert(strstr(m, "Landlock is not available (this kernel does not have it") != NULL,
		  "%s", m);
	setenv("KNIT_TEST_HIDE_LANDLOCK", "EOPNOTSUPP", 1);
	m = create_fails(&o, -KNIT_ESYSTEM);
	cr_assert(strstr(m, "Landlock is not available (the kernel has it disabled") != NULL, "%s",
		  m);
	cr_assert_eq(kt_count_children(), 0);
	/* Best effort: the pool runs, unconfined, and says so. */
	sb.flags |= KNIT_SANDBOX_LANDLOCK_BEST_EFFORT;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0, "%s", knit_last_error());
	cr_assert_eq(stats_of(p).landlock_abi, 0, "best effort without Landlock: none applied");
	reads(p, t.out_data, "out data");
	kt_destroy(p);
	unsetenv("KNIT_TEST_HIDE_LANDLOCK");
	/* Best effort where the kernel has it: applied, and said. */
	if (kernel_abi() > 0) {
		p = ll_pool(&sb, 0);
		cr_assert_geq(stats_of(p).landlock_abi, 1);
		cr_assert_eq(on_path(p, "read", t.out_data), EACCES);
		kt_destroy(p);
	}
	tree_remove(&t);
}

KT(landlock, option_errors)
{
	struct tree t;
	tree_make(&t);
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_LANDLOCK};
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = LL_LIB;
	o.sandbox = &sb;
	const char *m;
	const char *const rel[] = {t.ro, "tmp/x", NULL};
	sb.landlock_ro = rel;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "sandbox->landlock_ro[1] \"tmp/x\" is not absolute") != NULL, "%s", m);
	char gone[128];
	snprintf(gone, sizeof gone, "%s/gone", t.d);
	const char *const missing[] = {gone, NULL};
	sb.landlock_ro = NULL;
	sb.landlock_rw = missing;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "sandbox->landlock_rw[0]") != NULL && strstr(m, "No such file") != NULL,
		  "%s", m);
	static char big[KNIT_LANDLOCK_PATH_MAX + 8];
	memset(big, 'a', sizeof big - 1);
	big[0] = '/';
	const char *const longp[] = {big, NULL};
	sb.landlock_rw = longp;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "longer than KNIT_LANDLOCK_PATH_MAX") != NULL, "%s", m);
	const char *many[KNIT_LANDLOCK_PATHS_MAX + 2];
	for (int i = 0; i <= KNIT_LANDLOCK_PATHS_MAX; i++)
		many[i] = t.ro;
	many[KNIT_LANDLOCK_PATHS_MAX + 1] = NULL;
	sb.landlock_rw = many;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "more than KNIT_LANDLOCK_PATHS_MAX") != NULL, "%s", m);
	sb.landlock_rw = NULL;
	sb.landlock_abi = KNIT_LANDLOCK_ABI_MAX + 1;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "landlock_abi 8 is past") != NULL, "%s", m);
	sb.landlock_abi = 0;
	sb.reserved2 = 1;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "reserved2 is 1") != NULL, "%s", m);
	sb.reserved2 = 0;
	/* Landlock's members without its flag. */
	const char *const ok[] = {t.ro, NULL};
	sb.flags = 0;
	sb.landlock_ro = ok;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "landlock_ro needs KNIT_SANDBOX_LANDLOCK") != NULL, "%s", m);
	sb.landlock_ro = NULL;
	sb.flags = KNIT_SANDBOX_LANDLOCK_BEST_EFFORT;
	m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "KNIT_SANDBOX_LANDLOCK_BEST_EFFORT needs KNIT_SANDBOX_LANDLOCK") !=
			  NULL,
		  "%s", m);
	/* The highest ABI this library knows: refused only by an older kernel. */
	sb.flags = KNIT_SANDBOX_LANDLOCK;
	sb.landlock_ro = ok;
	sb.landlock_abi = KNIT_LANDLOCK_ABI_MAX;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	if (kernel_abi() >= KNIT_LANDLOCK_ABI_MAX) {
		cr_assert_eq(rc, 0, "%s", knit_last_error());
		kt_destroy(p);
	} else {
		cr_assert_eq(rc, -KNIT_ESYSTEM, "%s", knit_last_error());
		cr_assert(strstr(knit_last_error(), "ABI 7 needed") != NULL, "%s",
			  knit_last_error());
	}
	cr_assert_eq(kt_count_children(), 0);
	tree_remove(&t);
}
