/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_sandbox.c - the process pools' sandbox (#28): each task of
 * proc_sandbox.so tries something the sandbox forbids; sandboxed, each
 * fails only its own call (-KNIT_ECRASHED for a seccomp kill or a CPU
 * limit, -KNIT_ETASK where a limit makes the kernel refuse), the next calls
 * succeed and the stats show the violation and the respawn; unsandboxed the
 * same tasks succeed, so the test can fail. Also: no_new_privs, init's file
 * used under the filter, allow-by-name, and the options' errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"

#if defined(__x86_64__)
#define KT_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KT_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#define KT_AUDIT_ARCH AUDIT_ARCH_RISCV64
#endif

#define SB_LIB KT_BUILD_DIR "/tests/lib/proc_sandbox.so"
#define HOOKS_LIB KT_BUILD_DIR "/tests/lib/proc_hooks.so"

static volatile int host_target; /* vm_write's target in this (the host) process */

static knit_pool_t *sb_pool(const knit_sandbox_t *sb, const char *lib)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = lib;
	o.respawn_max = 100;
	o.sandbox = sb;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "create: %s: %s", knit_strerror(rc), knit_last_error());
	return p;
}

static knit_completion_t run(knit_pool_t *p, const char *task, knit_value_t arg)
{
	return kt_proc_call(p, task, arg);
}

/* The next call runs: on the respawned worker, fine. */
static void still_serves(knit_pool_t *p)
{
	knit_completion_t c = run(p, "compute", kt_i64(1000));
	cr_assert_eq(c.status, 0, "after a violation: %s", knit_strerror(c.status));
	cr_assert_eq(c.result.i64, 500500);
}

static uint64_t violations(knit_pool_t *p)
{
	knit_pool_stats_t s;
	kt_stats(p, &s);
	return s.deaths[KNIT_DEATH_SANDBOX];
}

static knit_value_t vm_arg(int64_t w[2])
{
	w[0] = getpid();
	w[1] = (int64_t)(intptr_t)&host_target;
	return kt_bytes(w, 2 * sizeof(int64_t));
}

KT(sandbox, forbidden_without_the_sandbox_work)
{
	/* So that the sandboxed test below can fail: each of these reaches
	 * the kernel, and does it, without a sandbox. */
	knit_pool_t *p = sb_pool(NULL, SB_LIB);
	const int64_t host = getpid();
	const char *ok[] = {"kill_host", "mem_host", "socket", "sigsys", "blocked", "ptrace_rt"};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		knit_completion_t c = run(p, ok[i], kt_i64(host));
		cr_assert_eq(c.status, 0, "%s without the sandbox: %s", ok[i],
			     knit_strerror(c.status));
		knit_completion_release(p, &c);
	}
	int64_t w[2];
	host_target = 0;
	knit_completion_t c = run(p, "vm_write", vm_arg(w));
	cr_assert_eq(c.status, 0, "process_vm_writev without the sandbox: %s",
		     knit_strerror(c.status));
	cr_assert_eq(host_target, 42, "the worker wrote the host's memory");
	c = run(p, "execve", kt_none());
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, ENOENT, "execve reached the kernel");
	c = run(p, "nnp", kt_none());
	cr_assert_eq(c.result.i64, 0, "no no_new_privs without a sandbox");
	c = run(p, "bigmap", kt_i64(8));
	cr_assert_eq(c.status, 0, "8 GiB of address space without a limit");
	c = run(p, "files", kt_i64(64));
	cr_assert_eq(c.status, 0, "64 files without a limit");
	c = run(p, "fork", kt_i64(8));
	cr_assert_eq(c.status, 0, "fork without a sandbox: %s", knit_strerror(c.status));
	cr_assert_eq(c.result.i64, 8);
	c = run(p, "bomb", kt_i64(6));
	cr_assert_eq(c.status, 0, "6 GiB of malloc without a limit: %s", knit_strerror(c.status));
	cr_assert_eq(violations(p), 0);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 0, "the same worker did all of it");
	kt_destroy(p);
}

KT(sandbox, seccomp_kills_only_the_violating_call)
{
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_SECCOMP};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	still_serves(p); /* compute, allocate, a thread: allowed */
	const int64_t host = getpid();
	int64_t w[2];
	host_target = 0;
	struct {
		const char *task;
		knit_value_t arg;
		const char *syscall; /* what the kernel reports it was killed for */
	} bad[] = {
		{"kill_host", kt_i64(host), "kill"},
		{"mem_host", kt_i64(host), "openat"},
		{"vm_write", vm_arg(w), "process_vm_writev"},
		{"ptrace", kt_i64(host), "ptrace"},
		{"socket", kt_none(), "socket"},
		{"execve", kt_none(), "execve"},
		{"fork", kt_i64(1), "clone"},
		/* the trap's handler stays: replacing it is a violation too */
		{"sigsys", kt_none(), "rt_sigaction"},
	};
	const size_t n = sizeof bad / sizeof bad[0];
	knit_pool_stats_t before;
	kt_stats(p, &before);
	for (size_t i = 0; i < n; i++) {
		knit_completion_t c = run(p, bad[i].task, bad[i].arg);
		cr_assert_eq(c.status, -KNIT_ECRASHED, "%s under seccomp: status %d (%s)",
			     bad[i].task, c.status, knit_strerror(c.status));
		knit_completion_info_t info = {.size = sizeof info};
		cr_assert_eq(knit_completion_info(p, &c, &info), 0, "%s: no info", bad[i].task);
		cr_assert(info.flags & KNIT_INFO_DEATH);
		cr_assert_eq(info.death, KNIT_DEATH_SANDBOX, "%s: cause %u", bad[i].task,
			     info.death);
		cr_assert_eq(info.death_detail, SIGSYS);
		cr_assert(info.flags & KNIT_INFO_SYSCALL, "%s: no syscall reported", bad[i].task);
		cr_assert_str_eq(info.syscall_name, bad[i].syscall, "%s: syscall %d \"%s\"",
				 bad[i].task, info.syscall_nr, info.syscall_name);
		cr_assert_eq(info.syscall_arch, KT_AUDIT_ARCH, "%s: arch 0x%x", bad[i].task,
			     info.syscall_arch);
		knit_completion_release(p, &c);
		cr_assert_eq(violations(p), before.deaths[KNIT_DEATH_SANDBOX] + i + 1, "%s counted",
			     bad[i].task);
		still_serves(p);
	}
	cr_assert_eq(host_target, 0, "the host's memory untouched");
	/* A task that blocks SIGSYS does not escape: the trap of a blocked
	 * SIGSYS is a kill by it, only without the record (no name). */
	knit_completion_t c = run(p, "blocked", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED, "blocked SIGSYS: %s", knit_strerror(c.status));
	knit_completion_info_t info = {.size = sizeof info};
	cr_assert_eq(knit_completion_info(p, &c, &info), 0);
	cr_assert_eq(info.death, KNIT_DEATH_SANDBOX);
	cr_assert_eq(info.death_detail, SIGSYS);
	cr_assert_eq(info.flags & KNIT_INFO_SYSCALL, 0, "no record, no syscall: %s",
		     info.syscall_name);
	/* A caller whose info ends before the syscall members gets no flag. */
	knit_completion_info_t old = {.size = offsetof(knit_completion_info_t, syscall_nr)};
	cr_assert_eq(knit_completion_info(p, &c, &old), 0);
	cr_assert_eq(old.death, KNIT_DEATH_SANDBOX);
	knit_completion_release(p, &c);
	still_serves(p);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.respawns, before.respawns + n + 1, "each violation respawned its worker");
	cr_assert_eq(s.crashes, before.crashes + n + 1);
	cr_assert_eq(s.deaths[KNIT_DEATH_SANDBOX], before.deaths[KNIT_DEATH_SANDBOX] + n + 1);
	kt_destroy(p);
}

KT(sandbox, old_info_size_gets_no_syscall_flag)
{
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_SECCOMP};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	knit_completion_t c = run(p, "socket", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	knit_completion_info_t old = {.size = offsetof(knit_completion_info_t, syscall_nr)};
	cr_assert_eq(knit_completion_info(p, &c, &old), 0);
	cr_assert_eq(old.death, KNIT_DEATH_SANDBOX);
	cr_assert_eq(old.flags & KNIT_INFO_SYSCALL, 0, "flag for members past its size");
	knit_completion_info_t info = {.size = sizeof info};
	cr_assert_eq(knit_completion_info(p, &c, &info), 0);
	cr_assert(info.flags & KNIT_INFO_SYSCALL);
	cr_assert_str_eq(info.syscall_name, "socket");
	knit_completion_release(p, &c);
	kt_destroy(p);
}

KT(sandbox, seccomp_allow_by_name_and_set)
{
	const char *const allow[] = {"socket", NULL};
	knit_sandbox_t sb = {.size = sizeof sb,
			     .flags = KNIT_SANDBOX_SECCOMP,
			     .seccomp_sets = KNIT_SECCOMP_FILES,
			     .seccomp_allow = allow};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	knit_completion_t c = run(p, "socket", kt_none());
	cr_assert_eq(c.status, 0, "socket allowed by name: %s", knit_strerror(c.status));
	c = run(p, "files", kt_i64(4));
	cr_assert_eq(c.status, 0, "open allowed by the files set: %s", knit_strerror(c.status));
	c = run(p, "kill_host", kt_i64(getpid()));
	cr_assert_eq(c.status, -KNIT_ECRASHED, "kill of the host is in no set");
	still_serves(p);
	cr_assert_eq(violations(p), 1);
	kt_destroy(p);
}

/* The call's info says the sandbox killed its worker for `syscall`. */
static void violated(knit_pool_t *p, knit_completion_t *c, const char *what, const char *syscall)
{
	cr_assert_eq(c->status, -KNIT_ECRASHED, "%s: status %d", what, c->status);
	knit_completion_info_t info = {.size = sizeof info};
	cr_assert_eq(knit_completion_info(p, c, &info), 0, "%s: no info", what);
	cr_assert_eq(info.death, KNIT_DEATH_SANDBOX, "%s: cause %u", what, info.death);
	cr_assert_str_eq(info.syscall_name, syscall, "%s", what);
	knit_completion_release(p, c);
}

KT(sandbox, processes_set_still_keeps_the_host_and_groups_out)
{
	knit_sandbox_t sb = {.size = sizeof sb,
			     .flags = KNIT_SANDBOX_SECCOMP,
			     .seccomp_sets = KNIT_SECCOMP_PROCESSES};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	knit_completion_t c = run(p, "fork", kt_i64(2));
	cr_assert_eq(c.status, 0, "fork with the processes set: %s", knit_strerror(c.status));
	cr_assert_eq(c.result.i64, 2);
	const int64_t host = getpid();
	c = run(p, "kill_host", kt_i64(host));
	violated(p, &c, "kill(host)", "kill");
	/* Its own group: allowed, and the host is not in it (a worker starts
	 * a session of its own). */
	c = run(p, "kill_host", kt_i64(0));
	cr_assert_eq(c.status, 0, "kill(0): %s", knit_strerror(c.status));
	c = run(p, "kill_host", kt_i64(-1));
	violated(p, &c, "kill(-1): every process", "kill");
	c = run(p, "kill_host", kt_i64(-(int64_t)getpgid(0)));
	violated(p, &c, "kill(-host's group)", "kill");
	c = run(p, "kill_host", kt_i64(getppid()));
	cr_assert_eq(c.status, 0, "kill of another pid (the host's parent, signal 0): %s",
		     knit_strerror(c.status));
	still_serves(p);
	cr_assert_eq(violations(p), 3);
	kt_destroy(p);
}

KT(sandbox, init_file_used_after_the_filter_closed)
{
	char dir[] = "/tmp/knit-sandbox-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/data", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("opened by init", f);
	fclose(f);
	setenv("KNIT_TEST_INIT_FILE", path, 1);
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_SECCOMP};
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = HOOKS_LIB;
	o.proc_flags = KNIT_PROC_INHERIT_ENV;
	o.sandbox = &sb;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0, "%s", knit_last_error());
	knit_completion_t c = run(p, "readinit", kt_none());
	cr_assert_eq(c.status, 0, "%s", knit_strerror(c.status));
	cr_assert_eq(c.result.len, 14);
	cr_assert_eq(memcmp(c.result.data, "opened by init", 14), 0);
	knit_completion_release(p, &c);
	kt_destroy(p);
	unsetenv("KNIT_TEST_INIT_FILE");
	unlink(path);
	rmdir(dir);
}

KT(sandbox, no_new_privs_and_limits)
{
	if (KT_ASAN)
		KT_SKIP("AddressSanitizer reserves more address space than any RLIMIT_AS");
	knit_sandbox_t sb = {.size = sizeof sb, .rlimit_as = 4ull << 30, .rlimit_nofile = 16};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	knit_completion_t c = run(p, "nnp", kt_none());
	cr_assert_eq(c.result.i64, 1, "no_new_privs with any sandbox");
	c = run(p, "bigmap", kt_i64(8));
	cr_assert_eq(c.status, -KNIT_ETASK, "8 GiB past a 4 GiB RLIMIT_AS: %s",
		     knit_strerror(c.status));
	cr_assert_eq(c.result.code, ENOMEM);
	knit_completion_release(p, &c);
	c = run(p, "files", kt_i64(64));
	cr_assert_eq(c.status, -KNIT_ETASK, "64 files past RLIMIT_NOFILE 16");
	cr_assert_eq(c.result.code, EMFILE);
	knit_completion_release(p, &c);
	still_serves(p); /* refused, not killed: the same worker goes on */
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 0);
	kt_destroy(p);
}

KT(sandbox, memory_bomb_fails_only_its_call)
{
	if (KT_ASAN)
		KT_SKIP("AddressSanitizer reserves more address space than any RLIMIT_AS");
	knit_sandbox_t sb = {
		.size = sizeof sb, .flags = KNIT_SANDBOX_SECCOMP, .rlimit_as = 4ull << 30};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	knit_completion_t c = run(p, "bomb", kt_i64(6));
	cr_assert_eq(c.status, -KNIT_ETASK, "6 GiB of malloc past a 4 GiB RLIMIT_AS: %s",
		     knit_strerror(c.status));
	cr_assert_eq(c.result.code, ENOMEM);
	knit_completion_release(p, &c);
	still_serves(p); /* refused, not killed: the same worker goes on */
	c = run(p, "bomb", kt_i64(1));
	cr_assert_eq(c.status, 0, "1 GiB within the limit: %s", knit_strerror(c.status));
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 0);
	kt_destroy(p);
}

KT(sandbox, fork_past_rlimit_nproc_fails_only_its_call)
{
	if (geteuid() == 0)
		KT_SKIP("running as root: the kernel does not enforce RLIMIT_NPROC for root "
			"(CAP_SYS_RESOURCE, CAP_SYS_ADMIN)");
	knit_sandbox_t sb = {.size = sizeof sb, .rlimit_nproc = 1};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	knit_completion_t c = run(p, "fork", kt_i64(8));
	cr_assert_eq(c.status, -KNIT_ETASK, "fork past RLIMIT_NPROC 1: %s",
		     knit_strerror(c.status));
	cr_assert_eq(c.result.code, EAGAIN);
	knit_completion_release(p, &c);
	c = run(p, "echo", kt_i64(7));
	cr_assert_eq(c.status, 0, "the same worker goes on: %s", knit_strerror(c.status));
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 0);
	kt_destroy(p);
}

KT(sandbox, cpu_limit_kills_only_its_call)
{
	knit_sandbox_t sb = {.size = sizeof sb, .rlimit_cpu = 1};
	knit_pool_t *p = sb_pool(&sb, SB_LIB);
	knit_completion_t c = run(p, "cpu", kt_i64(3000));
	cr_assert_eq(c.status, -KNIT_ECRASHED, "3 s of CPU past RLIMIT_CPU 1 s: %s",
		     knit_strerror(c.status));
	still_serves(p);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.deaths[KNIT_DEATH_SANDBOX], 0, "a limit is not a seccomp violation");
	cr_assert_eq(s.deaths[KNIT_DEATH_SIGNAL], 1, "SIGXCPU: a signal the pool did not send");
	kt_destroy(p);
	/* And without the limit the same task runs to its end. */
	p = sb_pool(NULL, SB_LIB);
	c = run(p, "cpu", kt_i64(1200));
	cr_assert_eq(c.status, 0);
	cr_assert_geq(c.result.i64, 1200);
	kt_destroy(p);
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

KT(sandbox, option_errors)
{
	knit_sandbox_t sb = {.size = sizeof sb, .flags = KNIT_SANDBOX_SECCOMP};
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.sandbox = &sb;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "sandbox is for process workers only") != NULL, "%s",
		  knit_last_error());

	kt_proc_opts(&o, 1);
	o.task_library = SB_LIB;
	o.sandbox = &sb;
	sb.flags = 1u << 7;
	cr_assert(strstr(create_fails(&o, -KNIT_EINVAL), "sandbox->flags 0x80 has unknown bits"));
	sb.flags = 0;
	sb.seccomp_sets = KNIT_SECCOMP_FILES;
	cr_assert(strstr(create_fails(&o, -KNIT_EINVAL), "needs KNIT_SANDBOX_SECCOMP"));
	sb.flags = KNIT_SANDBOX_SECCOMP;
	sb.seccomp_sets = 1u << 9;
	cr_assert(strstr(create_fails(&o, -KNIT_EINVAL), "seccomp_sets 0x200 has unknown bits"));
	sb.seccomp_sets = 0;
	const char *const bad[] = {"open; rm", NULL};
	sb.seccomp_allow = bad;
	cr_assert(strstr(create_fails(&o, -KNIT_EINVAL), "is not a syscall name"));
	/* A well-formed name no architecture has: the worker says so. */
	const char *const unknown[] = {"no_such_syscall", NULL};
	sb.seccomp_allow = unknown;
	const char *m = create_fails(&o, -KNIT_EINVAL);
	cr_assert(strstr(m, "unknown syscall \"no_such_syscall\"") != NULL, "%s", m);
	sb.seccomp_allow = NULL;
	sb.size = 4;
	cr_assert(strstr(create_fails(&o, -KNIT_EVERSION), "sandbox->size 4"));
	cr_assert_eq(kt_count_children(), 0);
}
