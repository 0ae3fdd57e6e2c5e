/* SPDX-License-Identifier: MIT */
/*
 * tools/knit-worker/seccomp.c - the process pools' seccomp allow-list,
 * built and loaded with libseccomp inside the worker (libknitting itself
 * never links libseccomp). libknitting calls knit_seccomp_load after the
 * task library's init, with no_new_privs set (src/sandbox.cpp).
 *
 * Every syscall is named, never numbered: libseccomp resolves each name for
 * the architecture it runs on, and a name the architecture lacks (poll on
 * aarch64 and riscv64, say) is skipped in the built-in sets, so one policy
 * builds for x86-64, aarch64 and riscv64. Anything not allowed traps
 * (SECCOMP_RET_TRAP): libknitting's SIGSYS handler, installed before the
 * filter, writes the syscall's number where the host reads it and ends the
 * whole worker process by SIGSYS (src/sandbox.h, "the trap record"). The
 * handler stays the worker's: rt_sigaction is allowed for every signal but
 * SIGSYS (the exception traps like any other violation). A syscall of
 * another architecture (an x32 or int 0x80 call on x86-64) kills the
 * process outright (SECCOMP_RET_KILL_PROCESS, no record). The filter covers
 * every thread of the worker (TSYNC). The lists are documented syscall by
 * syscall in knit-worker(8) (tests/seccomp-doc.sh holds the page to them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CLONE_THREAD */
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "knitting.h"

/* The default policy: compute, allocate, futexes, clocks, threads, the
 * descriptors the worker already has, its own signals. */
static const char *const base_set[] = {
	/* memory */
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
	/* futexes and threads' bookkeeping */
	"futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
	/* clocks and sleeping */
	"clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
	"sched_yield", "sched_getaffinity", "getcpu",
	/* identity */
	"getpid", "gettid", "getppid",
	/* descriptors already open (the bridge eventfd, stdio, what init opened) */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "fstat",
	"fcntl", "poll", "ppoll", "dup", "dup3",
	/* signals of its own (rt_sigprocmask: glibc's own use; rt_sigaction
	 * for every signal but SIGSYS: build) */
	"rt_sigreturn", "rt_sigprocmask", "sigaltstack", "restart_syscall",
	/* randomness, leaving */
	"getrandom", "exit", "exit_group", NULL};

static const char *const files_set[] = {
	"open",       "openat",     "openat2",    "creat",           "stat",
	"lstat",      "newfstatat", "statx",      "access",          "faccessat",
	"faccessat2", "readlink",   "readlinkat", "getdents64",      "unlink",
	"unlinkat",   "rename",     "renameat",   "renameat2",       "mkdir",
	"mkdirat",    "rmdir",      "ftruncate",  "truncate",        "fsync",
	"fdatasync",  "flock",      "getcwd",     "chdir",           "fchdir",
	"statfs",     "fstatfs",    "pipe",       "pipe2",           "dup2",
	"fadvise64",  "fallocate",  "sendfile",   "copy_file_range", "chmod",
	"fchmod",     "fchmodat",   "utimensat",  "symlink",         "symlinkat",
	"link",       "linkat",     NULL};

static const char *const network_set[] = {
	"socket",       "socketpair",    "connect",     "bind",
	"listen",       "accept",        "accept4",     "sendto",
	"recvfrom",     "sendmsg",       "recvmsg",     "sendmmsg",
	"recvmmsg",     "getsockname",   "getpeername", "setsockopt",
	"getsockopt",   "shutdown",      "select",      "pselect6",
	"epoll_create", "epoll_create1", "epoll_ctl",   "epoll_wait",
	"epoll_pwait",  "epoll_pwait2",  NULL};

static const char *const processes_set[] = {"fork",     "vfork",   "clone3",    "execve",
					    "execveat", "wait4",   "waitid",    "setsid",
					    "setpgid",  "getpgid", "prlimit64", NULL};

static int add_list(scmp_filter_ctx ctx, const char *const *names, char *msg, size_t n)
{
	for (; *names != NULL; names++) {
		const int nr = seccomp_syscall_resolve_name(*names);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a syscall of this architecture */
		const int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (rc != 0) {
			snprintf(msg, n, "cannot allow %s: %s", *names, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Allow syscall `name` when its first argument equals v. */
static int allow_a0_eq(scmp_filter_ctx ctx, const char *name, uint64_t v, char *msg, size_t n)
{
	const int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0;
	const int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_EQ, v));
	if (rc != 0)
		snprintf(msg, n, "cannot allow %s on itself: %s", name, strerror(-rc));
	return rc;
}

static int build(scmp_filter_ctx ctx, uint32_t sets, const char *const *allow, uint32_t nallow,
		 int32_t self, int32_t host, char *msg, size_t n)
{
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (rc != 0) {
		snprintf(msg, n, "cannot ask for TSYNC: %s", strerror(-rc));
		return rc;
	}
	/* A foreign architecture's syscall: the whole process, not the thread
	 * (libseccomp's default here is SECCOMP_RET_KILL_THREAD). */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc != 0) {
		snprintf(msg, n, "cannot set the bad-architecture action: %s", strerror(-rc));
		return rc;
	}
	if ((rc = add_list(ctx, base_set, msg, n)) != 0)
		return rc;
	/* Signal handlers, but never for SIGSYS: the trap's handler stays. */
	rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, seccomp_syscall_resolve_name("rt_sigaction"), 1,
			      SCMP_A0(SCMP_CMP_NE, (uint64_t)SIGSYS));
	if (rc != 0) {
		snprintf(msg, n, "cannot allow rt_sigaction: %s", strerror(-rc));
		return rc;
	}
	/* Signals to itself only (raise, abort): never the host (nor a group:
	 * kill(0) and kill(-1) reach it too). */
	if ((rc = allow_a0_eq(ctx, "kill", (uint64_t)(uint32_t)self, msg, n)) != 0 ||
	    (rc = allow_a0_eq(ctx, "tgkill", (uint64_t)(uint32_t)self, msg, n)) != 0)
		return rc;
	/* Threads, not processes: clone with CLONE_THREAD (its flags are the
	 * first argument on every supported architecture); clone3, whose
	 * flags sit in memory a filter cannot read, answers ENOSYS so glibc
	 * falls back to clone. */
	if ((sets & KNIT_SECCOMP_PROCESSES) == 0) {
		const int clone = seccomp_syscall_resolve_name("clone");
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, clone, 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
		if (rc == 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
					      seccomp_syscall_resolve_name("clone3"), 0);
		if (rc != 0) {
			snprintf(msg, n, "cannot allow threads: %s", strerror(-rc));
			return rc;
		}
	} else {
		if ((rc = add_list(ctx, processes_set, msg, n)) != 0)
			return rc;
		const int clone = seccomp_syscall_resolve_name("clone");
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, clone, 0);
		/* kill: its children, never the host nor every process (-1) nor
		 * another group (< -1): a0 in [0, 2^31) but the host's pid (0 is
		 * its own group, which the host is never in: a worker starts a
		 * session of its own). libseccomp takes one comparison per
		 * argument in a rule, so the set is 31 disjoint masked rules:
		 * for each bit b, the pids equal to the host's above b and not
		 * at b (the top 33 bits zero: a negative pid_t is
		 * sign-extended). */
		const int kill = seccomp_syscall_resolve_name("kill");
		const uint64_t h = (uint64_t)(uint32_t)host & 0x7FFFFFFFu;
		for (int b = 30; b >= 0 && rc == 0; b--) {
			const uint64_t mask =
				0xFFFFFFFF80000000ull | (0x7FFFFFFFull & ~((1ull << b) - 1));
			rc = seccomp_rule_add(
				ctx, SCMP_ACT_ALLOW, kill, 1,
				SCMP_A0(SCMP_CMP_MASKED_EQ, mask, (h ^ (1ull << b)) & mask));
		}
		if (rc != 0) {
			snprintf(msg, n, "cannot allow processes: %s", strerror(-rc));
			return rc;
		}
	}
	if ((sets & KNIT_SECCOMP_FILES) != 0 && (rc = add_list(ctx, files_set, msg, n)) != 0)
		return rc;
	if ((sets & KNIT_SECCOMP_NETWORK) != 0 && (rc = add_list(ctx, network_set, msg, n)) != 0)
		return rc;
	for (uint32_t i = 0; i < nallow; i++) {
		const int nr = seccomp_syscall_resolve_name(allow[i]);
		if (nr == __NR_SCMP_ERROR) {
			snprintf(msg, n, "unknown syscall \"%s\" on this architecture", allow[i]);
			return -EINVAL;
		}
		/* Allowed already, but for SIGSYS, which stays the sandbox's. */
		if (strcmp(allow[i], "rt_sigaction") == 0)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) != 0) {
			snprintf(msg, n, "cannot allow %s: %s", allow[i], strerror(-rc));
			return rc;
		}
	}
	if ((rc = seccomp_load(ctx)) != 0)
		snprintf(msg, n, "seccomp_load: %s", strerror(-rc));
	return rc;
}

int knit_seccomp_load(uint32_t sets, const char *const *allow, uint32_t nallow, int32_t self,
		      int32_t host, char *msg, size_t msg_size)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (ctx == NULL) {
		snprintf(msg, msg_size, "seccomp_init failed");
		return -1;
	}
	const int rc = build(ctx, sets, allow, nallow, self, host, msg, msg_size);
	seccomp_release(ctx);
	return rc != 0 ? -1 : 0;
}
