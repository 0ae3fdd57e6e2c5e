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
 *                                         (arg 0: kill(0, 0), its own process group)
 * mem_host   I64 host pid                 open("/proc/HOST/mem", O_RDWR)
 * vm_write   BYTES {pid, address}         process_vm_writev of 42 to that int of the host
 * ptrace     I64 host pid                 ptrace(PTRACE_SEIZE, host) (only run sandboxed)
 * socket     -                            socket(AF_INET, SOCK_DGRAM)
 * execve     -                            execve("/nonexistent") (ENOENT when allowed)
 * bigmap     I64 GiB                      mmap that many GiB (PROT_NONE, no reserve)
 * cpu        I64 ms                       spins that much CPU time (bounded by 30 s wall)
 * files      I64 n                        opens /dev/null n times (all closed after)
 * nnp        -                            result I64 prctl(PR_GET_NO_NEW_PRIVS)
 * ptrace_rt  I64 host pid                 PTRACE_SEIZE the host, interrupt it, wait for its
 *                                         stop and detach (a real attach; unsandboxed only
 *                                         where the kernel allows it)
 * sigsys     -                            install a SIGSYS handler (the old one put back)
 * blocked    -                            block SIGSYS, then socket() (unblocked after)
 * fork       I64 n                        fork n children that exit at once, reaped only
 *                                         after the last fork (a zombie counts in
 *                                         RLIMIT_NPROC: EAGAIN past it); result I64 n
 * bomb       I64 GiB                      malloc 64 MiB blocks up to that many GiB, touching
 *                                         one byte of each (all freed after)
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
#include <sys/wait.h>
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

static int t_ptrace_rt(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	const pid_t host = (pid_t)arg->i64;
	if (ptrace(PTRACE_SEIZE, host, NULL, NULL) != 0)
		return refused(ret, errno);
	/* Attached: stop it, see it stopped, let it go (it runs on). */
	int e = 0, st = 0;
	if (ptrace(PTRACE_INTERRUPT, host, NULL, NULL) != 0)
		e = errno;
	else if (waitpid(host, &st, __WALL) != host)
		e = errno;
	if (ptrace(PTRACE_DETACH, host, NULL, NULL) != 0 && e == 0)
		e = errno;
	if (e != 0)
		_exit(3); /* our end releases the host whatever state it is in */
	return 0;
}

static void on_sig(int s) { (void)s; }

static int t_sigsys(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sig;
	if (sigaction(SIGSYS, &sa, &old) != 0)
		return refused(ret, errno);
	sigaction(SIGSYS, &old, NULL);
	return 0;
}

static int t_blocked(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &s, &old);
	const int rc = t_socket(ctx, arg, ret);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static int t_fork(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	pid_t kids[64];
	int n = 0, e = 0;
	while (n < arg->i64 && n < 64) {
		const pid_t k = fork();
		if (k == 0)
			_exit(0);
		if (k < 0) {
			e = errno;
			break;
		}
		kids[n++] = k;
	}
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	if (e != 0)
		return refused(ret, e);
	ret->type = KNIT_VALUE_I64;
	ret->i64 = n;
	return 0;
}

static int t_bomb(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	enum { kBlock = 64 << 20, kMax = 256 };
	char *blocks[kMax];
	int n = 0, e = 0;
	while (n < kMax && (int64_t)n * kBlock < (arg->i64 << 30)) {
		blocks[n] = malloc(kBlock);
		if (blocks[n] == NULL) {
			e = errno != 0 ? errno : ENOMEM;
			break;
		}
		blocks[n][0] = 1;
		n++;
	}
	for (int i = 0; i < n; i++)
		free(blocks[i]);
	return e == 0 ? 0 : refused(ret, e);
}

static const knit_task_t tasks[] = {
	{"echo", t_echo, 0, 0},           {"compute", t_compute, 0, 0},
	{"kill_host", t_kill_host, 0, 0}, {"mem_host", t_mem_host, 0, 0},
	{"vm_write", t_vm_write, 0, 0},   {"ptrace", t_ptrace, 0, 0},
	{"socket", t_socket, 0, 0},       {"execve", t_execve, 0, 0},
	{"bigmap", t_bigmap, 0, 0},       {"cpu", t_cpu, 0, 0},
	{"files", t_files, 0, 0},         {"nnp", t_nnp, 0, 0},
	{"ptrace_rt", t_ptrace_rt, 0, 0}, {"sigsys", t_sigsys, 0, 0},
	{"blocked", t_blocked, 0, 0},     {"fork", t_fork, 0, 0},
	{"bomb", t_bomb, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	.size = sizeof(knit_task_library_t),
	.version = KNIT_TASK_LIBRARY_VERSION,
	.tasks = tasks,
	.ntasks = sizeof tasks / sizeof tasks[0],
};
