/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_sandbox.c - tasks that each try something a
 * process pool's sandbox forbids (built as build/tests/lib/proc_sandbox.so,
 * for test_sandbox.c). Each returns 0 when the kernel let it do it, an
 * error code when the kernel refused (so without the sandbox they succeed
 * and the test can tell).
 *
 * name       arg                          what it does
 * echo       any                          result = arg
 * compute    I64 n                        sums 1..n in a malloc'd array, on a second thread
 * kill_host  I64 host pid                 kill(host, 0): may it signal the host?
 * mem_host   I64 host pid                 open("/proc/HOST/mem", O_RDWR)
 * vm_write   BYTES {pid, address}         process_vm_writev of 42 to that int of the host
 * ptrace     I64 host pid                 ptrace(PTRACE_SEIZE, host) (only run sandboxed)
 * socket     -                            socket(AF_INET, SOCK_DGRAM)
 * execve     -                            execve("/nonexistent") (ENOENT when allowed)
 * bigmap     I64 GiB                      mmap that many GiB (PROT_NONE, no reserve)
 * cpu        I64 ms                       spins that much CPU time (bounded by 30 s wall)
 * files      I64 n                        opens /dev/null n times (all closed after)
 * nnp        -                            result I64 prctl(PR_GET_NO_NEW_PRIVS)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "knitting.h"

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

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

struct sum {
	int64_t n, total;
};

static void *sum_thread(void *arg)
{
	struct sum *s = arg;
	int64_t *v = malloc((size_t)s->n * sizeof *v);
	if (v == NULL)
		return NULL;
	for (int64_t i = 0; i < s->n; i++)
		v[i] = i + 1;
	for (int64_t i = 0; i < s->n; i++)
		s->total += v[i];
	free(v);
	return NULL;
}

static int t_compute(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct sum s = {arg->i64, 0};
	pthread_t t;
	const int e = pthread_create(&t, NULL, sum_thread, &s);
	if (e != 0)
		return refused(ret, e);
	pthread_join(t, NULL);
	ret->type = KNIT_VALUE_I64;
	ret->i64 = s.total;
	return 0;
}

static int t_kill_host(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	return kill((pid_t)arg->i64, 0) == 0 ? 0 : refused(ret, errno);
}

static int t_mem_host(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)arg->i64);
	const int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return refused(ret, errno);
	close(fd);
	return 0;
}

static int t_vm_write(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	int64_t w[2];
	if (arg->type != KNIT_VALUE_BYTES || arg->len != sizeof w)
		return refused(ret, EINVAL);
	memcpy(w, arg->data, sizeof w);
	int v = 42;
	struct iovec local = {&v, sizeof v}, remote = {(void *)(intptr_t)w[1], sizeof v};
	return process_vm_writev((pid_t)w[0], &local, 1, &remote, 1, 0) == (ssize_t)sizeof v
		       ? 0
		       : refused(ret, errno);
}

static int t_ptrace(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	return ptrace(PTRACE_SEIZE, (pid_t)arg->i64, NULL, NULL) == 0 ? 0 : refused(ret, errno);
}

static int t_socket(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return refused(ret, errno);
	close(fd);
	return 0;
}

static int t_execve(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	char *argv[] = {"/nonexistent", NULL};
	char *envp[] = {NULL};
	execve("/nonexistent", argv, envp);
	/* ENOENT: the kernel looked (the syscall was allowed) */
	ret->type = KNIT_VALUE_I64;
	ret->i64 = errno;
	return 0;
}

static int t_bigmap(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	const size_t n = (size_t)arg->i64 << 30;
	void *m = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return refused(ret, errno);
	munmap(m, n);
	return 0;
}

static int64_t ns_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int t_cpu(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	const int64_t want = arg->i64 * 1000000, start = ns_of(CLOCK_THREAD_CPUTIME_ID);
	const int64_t wall_end = ns_of(CLOCK_MONOTONIC) + 30ll * 1000000000;
	volatile uint64_t x = 0;
	while (ns_of(CLOCK_THREAD_CPUTIME_ID) - start < want && ns_of(CLOCK_MONOTONIC) < wall_end)
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (ns_of(CLOCK_THREAD_CPUTIME_ID) - start) / 1000000;
	return 0;
}

static int t_files(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	int fds[256], n = 0, e = 0;
	while (n < arg->i64 && n < 256) {
		fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fds[n] < 0) {
			e = errno;
			break;
		}
		n++;
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return e == 0 ? 0 : refused(ret, e);
}

static int t_nnp(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	return 0;
}

static const knit_task_t tasks[] = {
	{"echo", t_echo, 0, 0},           {"compute", t_compute, 0, 0},
	{"kill_host", t_kill_host, 0, 0}, {"mem_host", t_mem_host, 0, 0},
	{"vm_write", t_vm_write, 0, 0},   {"ptrace", t_ptrace, 0, 0},
	{"socket", t_socket, 0, 0},       {"execve", t_execve, 0, 0},
	{"bigmap", t_bigmap, 0, 0},       {"cpu", t_cpu, 0, 0},
	{"files", t_files, 0, 0},         {"nnp", t_nnp, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	.size = sizeof(knit_task_library_t),
	.version = KNIT_TASK_LIBRARY_VERSION,
	.tasks = tasks,
	.ntasks = sizeof tasks / sizeof tasks[0],
};
