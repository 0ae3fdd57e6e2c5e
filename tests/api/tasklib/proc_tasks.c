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
 * echo       result = arg
 * error      arg I64 c: ERROR{code c, "task error"}, returns 1
 * exit       _exit(3)s the worker process
 * pid        result I64 getpid() of the worker process (arg I64 1..1000: after
 *            sleeping that many ms)
 * segv       writes through a NULL pointer
 * sleep      arg I64 ms: sleeps that long, returns arg
 * spin       loops until killed
 */
#include <signal.h>
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
	volatile int *p = (volatile int *)(uintptr_t)(arg->i64 * 0); /* NULL the compiler cannot see */
	*p = 1;
	return 0;
}

static int t_exit(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg, (void)ret;
	_exit(3);
}

__attribute__((noreturn)) static int t_spin(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
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

static const knit_task_t tasks[] = {
	{"aborted", t_aborted, 0, KNIT_TASK_ABORTABLE},
	{"echo", t_echo, 0, 0},   {"pid", t_pid, 0, 0},     {"abort", t_abort, 0, 0},
	{"segv", t_segv, 0, 0},   {"exit", t_exit, 0, 0},   {"spin", t_spin, 0, 0},
	{"sleep", t_sleep, 0, 0}, {"error", t_error, 0, 0}, {"alloc", t_alloc, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	sizeof(knit_task_library_t), KNIT_TASK_LIBRARY_VERSION, tasks, sizeof tasks / sizeof tasks[0]};
