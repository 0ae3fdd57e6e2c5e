/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_landlock.c - tasks that open files, for
 * test_landlock.c (built as build/tests/lib/proc_landlock.so). Each returns
 * 0 when the kernel let it, else an error value whose code is the errno (so
 * without Landlock they succeed and the test can tell).
 *
 * init (the pool passes its environment): with $KNIT_TEST_INIT_FILE opens
 * that file (readinit reads it later); with $KNIT_TEST_HIDE_LANDLOCK set to
 * ENOSYS or EOPNOTSUPP sets no_new_privs and loads a seccomp filter that
 * answers Landlock's syscalls with that errno (a kernel without Landlock,
 * or with it disabled at boot, as the worker sees it: containers' seccomp
 * profiles do the same).
 *
 * name       arg                     what it does
 * read       STRING path             result BYTES: up to 64 bytes read from path
 * write      STRING path             writes "written" to path (created, truncated)
 * readinit   -                       result BYTES: up to 64 bytes of init's file
 * kill_host  I64 host pid            kill(host, 0)
 * vm_read    BYTES {pid, address}    process_vm_readv of an int of the host
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "knitting.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#if defined(__x86_64__)
#define LL_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define LL_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define LL_AUDIT_ARCH AUDIT_ARCH_RISCV64
#endif

static int init_fd = -1;
static char buf[64];

static int refused(knit_value_t *ret, int e)
{
	static char msg[64];
	snprintf(msg, sizeof msg, "refused: errno %d", e);
	ret->type = KNIT_VALUE_ERROR;
	ret->code = e;
	ret->data = msg;
	ret->len = strlen(msg);
	return 1;
}

/* Landlock's three syscalls (444..446 on every architecture) answer e. */
static int hide_landlock(int e, char *msg, size_t msg_size)
{
#ifdef LL_AUDIT_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LL_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SYS_landlock_create_ruleset, 0, 2),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, SYS_landlock_create_ruleset + 2, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)e),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		snprintf(msg, msg_size, "cannot hide Landlock: errno %d", errno);
		return 1;
	}
	return 0;
#else
	(void)e;
	snprintf(msg, msg_size, "cannot hide Landlock on this architecture");
	return 1;
#endif
}

static int l_init(uint32_t worker, char *msg, size_t msg_size)
{
	(void)worker;
	const char *file = getenv("KNIT_TEST_INIT_FILE");
	if (file != NULL && (init_fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(msg, msg_size, "cannot open %s", file);
		return 1;
	}
	const char *hide = getenv("KNIT_TEST_HIDE_LANDLOCK");
	if (hide != NULL)
		return hide_landlock(strcmp(hide, "EOPNOTSUPP") == 0 ? EOPNOTSUPP : ENOSYS, msg,
				     msg_size);
	return 0;
}

/* The argument's path, NUL-terminated, or NULL. */
static const char *path_of(const knit_value_t *arg, char *into, size_t n)
{
	if (arg->type != KNIT_VALUE_STRING || arg->len >= n)
		return NULL;
	memcpy(into, arg->data, arg->len);
	into[arg->len] = 0;
	return into;
}

static int t_read(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char path[4096];
	if (path_of(arg, path, sizeof path) == NULL)
		return refused(ret, EINVAL);
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return refused(ret, errno);
	const ssize_t n = read(fd, buf, sizeof buf);
	const int e = errno;
	close(fd);
	if (n < 0)
		return refused(ret, e);
	ret->type = KNIT_VALUE_BYTES;
	ret->data = buf;
	ret->len = (size_t)n;
	return 0;
}

static int t_write(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char path[4096];
	if (path_of(arg, path, sizeof path) == NULL)
		return refused(ret, EINVAL);
	const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return refused(ret, errno);
	const ssize_t n = write(fd, "written", 7);
	const int e = errno;
	close(fd);
	return n == 7 ? 0 : refused(ret, n < 0 ? e : EIO);
}

static int t_readinit(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	const ssize_t n = init_fd >= 0 ? pread(init_fd, buf, sizeof buf, 0) : -1;
	if (n < 0)
		return refused(ret, init_fd >= 0 ? errno : EBADF);
	ret->type = KNIT_VALUE_BYTES;
	ret->data = buf;
	ret->len = (size_t)n;
	return 0;
}

static int t_kill_host(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	return kill((pid_t)arg->i64, 0) == 0 ? 0 : refused(ret, errno);
}

static int t_vm_read(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	int64_t w[2];
	if (arg->type != KNIT_VALUE_BYTES || arg->len != sizeof w)
		return refused(ret, EINVAL);
	memcpy(w, arg->data, sizeof w);
	int v = 0;
	struct iovec local = {&v, sizeof v}, remote = {(void *)(intptr_t)w[1], sizeof v};
	if (process_vm_readv((pid_t)w[0], &local, 1, &remote, 1, 0) != (ssize_t)sizeof v)
		return refused(ret, errno);
	ret->type = KNIT_VALUE_I64;
	ret->i64 = v;
	return 0;
}

static const knit_task_t tasks[] = {
	{"kill_host", t_kill_host, 0, 0}, {"read", t_read, 0, 0},   {"readinit", t_readinit, 0, 0},
	{"vm_read", t_vm_read, 0, 0},     {"write", t_write, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	.size = sizeof(knit_task_library_t),
	.version = KNIT_TASK_LIBRARY_VERSION,
	.tasks = tasks,
	.ntasks = sizeof tasks / sizeof tasks[0],
	.init = l_init,
};
