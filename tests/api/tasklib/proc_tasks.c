/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_tasks.c - the task library of the process-pool
 * tests (built as build/tests/lib/proc_tasks.so). Also the example of a task
 * library: one exported knit_task_library naming a table of tasks.
 *
 * name       what it does
 * abort      abort()s the worker process
 * aborted    ABORTABLE: waits (bounded, 20 s) until knit_ctx_aborted(); I64 1 if it saw it
 * alloc      arg I64 n: result BYTES of n bytes 'a'+i%26 built in knit_ctx_alloc memory
 * await      arg STR a path: creates that file (it runs now), then waits (bounded,
 *            20 s) until the file is gone, returns arg
 * echo       result = arg
 * error      arg I64 c: ERROR{code c, "task error"}, returns 1
 * exit       _exit(3)s the worker process
 * pid        result I64 getpid() of the worker process (arg I64 1..1000: after
 *            sleeping that many ms)
 * segv       writes through a NULL pointer
 * segv_at    arg I64 7: as segv; anything else: as echo
 * sleep      arg I64 ms: sleeps that long, returns arg
 * grow       arg I64 n: allocates n bytes, touches every page and keeps them
 *            (the worker's resident memory grows), returns I64 getpid()
 * spin       loops until killed
 * stamp      arg BYTES: a u32 index, then a path: appends the index (4 bytes, one
 *            O_APPEND write) to that file (what ran, how often), returns
 *            I64 getpid()
 * tally      arg STR a path: appends one byte to that file (its size counts the
 *            runs) and the file's name and a newline to the file "log" beside
 *            it (the order of the runs), returns arg
 * where      result I64: the worker's CPU affinity (bits of CPUs 0..63)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CPU_ZERO, sched_getaffinity (the "where" task) */
#endif
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "knitting.h"

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg; /* bytes stay valid until we return: the worker copies them */
	return 0;
}

static int t_pid(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	if (arg->type == KNIT_VALUE_I64 && arg->i64 > 0 && arg->i64 <= 1000) {
		struct timespec ts = {arg->i64 / 1000, (arg->i64 % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)getpid();
	return 0;
}

static int t_abort(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg, (void)ret;
	abort();
}

static int t_segv(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)ret;
	volatile int *p =
		(volatile int *)(uintptr_t)(arg->i64 * 0); /* NULL the compiler cannot see */
	*p = 1;
	return 0;
}

/* I64 7: as segv; anything else: as echo (a crash in the middle of a map). */
static int t_segv_at(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	if (arg->type == KNIT_VALUE_I64 && arg->i64 == 7)
		return t_segv(ctx, arg, ret);
	*ret = *arg;
	return 0;
}

static int t_exit(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg, (void)ret;
	_exit(3);
}

__attribute__((noreturn)) static int t_spin(knit_ctx_t *ctx, const knit_value_t *arg,
					    knit_value_t *ret)
{
	(void)ctx, (void)arg, (void)ret;
	for (;;) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL); /* forever, kindly: only a kill ends it */
	}
}

static int t_sleep(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct timespec ts = {arg->i64 / 1000, (arg->i64 % 1000) * 1000000};
	nanosleep(&ts, NULL);
	*ret = *arg;
	return 0;
}

static int t_error(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	static const char msg[] = "task error";
	ret->type = KNIT_VALUE_ERROR;
	ret->code = (int32_t)arg->i64;
	ret->data = msg;
	ret->len = sizeof msg - 1;
	return 1;
}

static int t_alloc(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	size_t n = (size_t)arg->i64;
	char *b = knit_ctx_alloc(ctx, n);
	if (b == NULL)
		return 2;
	for (size_t i = 0; i < n; i++)
		b[i] = (char)('a' + i % 26);
	ret->type = KNIT_VALUE_BYTES;
	ret->data = b;
	ret->len = n;
	return 0;
}

static int t_aborted(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = 0;
	for (int i = 0; i < 20000 && !ret->i64; i++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
		ret->i64 = knit_ctx_aborted(ctx) == 1;
	}
	return 0;
}

/* The path of a STR argument, NUL-terminated in buf; 0 or -1. */
static int arg_path(const knit_value_t *arg, char *buf, size_t size)
{
	if (arg->type != KNIT_VALUE_STRING || arg->len == 0 || arg->len >= size)
		return -1;
	memcpy(buf, arg->data, arg->len);
	buf[arg->len] = 0;
	return 0;
}

static int t_await(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char path[4096];
	if (arg_path(arg, path, sizeof path) != 0)
		return 2;
	const int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return 3;
	close(fd);
	for (int i = 0; i < 20000 && access(path, F_OK) == 0; i++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	*ret = *arg;
	return 0;
}

static int t_tally(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char path[4096];
	if (arg_path(arg, path, sizeof path) != 0)
		return 2;
	const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return 3;
	const ssize_t n = write(fd, "1", 1);
	close(fd);
	if (n != 1)
		return 4;
	char *slash = strrchr(path, '/');
	if (slash == NULL)
		return 5;
	char line[256];
	const int len = snprintf(line, sizeof line, "%s\n", slash + 1);
	memcpy(slash + 1, "log", 4);
	const int lf = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (lf < 0 || len <= 0 || (size_t)len >= sizeof line)
		return 6;
	const ssize_t m = write(lf, line, (size_t)len); /* one O_APPEND write: whole */
	close(lf);
	if (m != len)
		return 7;
	*ret = *arg;
	return 0;
}

static int t_grow(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	const size_t n = (size_t)arg->i64;
	char *b = malloc(n);
	if (b == NULL)
		return 2;
	for (size_t i = 0; i < n; i += 4096)
		b[i] = 1;
	/* kept: a leak is what the test asks for (recycle_rss_bytes) */
	__asm__ volatile("" : : "r"(b) : "memory");
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)getpid();
	return 0;
}

static int t_stamp(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char path[4096];
	if (arg->type != KNIT_VALUE_BYTES || arg->len <= 4 || arg->len - 4 >= sizeof path)
		return 2;
	memcpy(path, (const char *)arg->data + 4, arg->len - 4);
	path[arg->len - 4] = 0;
	const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return 3;
	const ssize_t n = write(fd, arg->data, 4);
	close(fd);
	if (n != 4)
		return 4;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)getpid();
	return 0;
}

static int t_where(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	cpu_set_t s;
	CPU_ZERO(&s);
	if (sched_getaffinity(0, sizeof s, &s) != 0)
		return 1;
	uint64_t bits = 0;
	for (int c = 0; c < 64; c++)
		if (CPU_ISSET(c, &s))
			bits |= 1ull << c;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)bits;
	return 0;
}

/* The argument of the call this worker ran before (-1 for its first): a
 * host that pins calls to one lane reads the order they started in. */
static int t_prev(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	static int64_t last = -1;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = last;
	last = arg->i64;
	return 0;
}

static const knit_task_t tasks[] = {
	{"aborted", t_aborted, 0, KNIT_TASK_ABORTABLE},
	{"echo", t_echo, 0, 0},
	{"pid", t_pid, 0, 0},
	{"abort", t_abort, 0, 0},
	{"segv", t_segv, 0, 0},
	{"segv_at", t_segv_at, 0, 0},
	{"exit", t_exit, 0, 0},
	{"spin", t_spin, 0, 0},
	{"sleep", t_sleep, 0, 0},
	{"error", t_error, 0, 0},
	{"alloc", t_alloc, 0, 0},
	{"where", t_where, 0, 0},
	{"grow", t_grow, 0, 0},
	{"stamp", t_stamp, 0, 0},
	{"await", t_await, 0, 0},
	{"tally", t_tally, 0, 0},
	{"prev", t_prev, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	sizeof(knit_task_library_t), KNIT_TASK_LIBRARY_VERSION, tasks,
	sizeof tasks / sizeof tasks[0]};
