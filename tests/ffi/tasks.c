/* SPDX-License-Identifier: MIT */
/*
 * tests/ffi/tasks.c - a small task library for the Python ctypes test
 * (tests/ffi/test_ctypes.py builds it with `cc -shared -fPIC` into a temp
 * directory and loads it next to libknitting.so).
 *
 * Exports the task functions; the test casts them to the task pointer type
 * and builds knit_task_t entries in Python. It also exports them as a task
 * library (knit_task_library), so the same object serves process pools
 * (tests/python/ runs it with knit-worker processes).
 */
#include <ctype.h>
#include <stdio.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "knitting.h"

/* I64 in, I64 * 2 out. */
int ffi_double(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	if (arg->type != KNIT_VALUE_I64)
		return 22;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = arg->i64 * 2;
	return 0;
}

/* Any value back as it came. */
int ffi_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

/* STRING in, the same upper-cased out (built in knit_ctx_alloc memory). */
int ffi_upper(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	if (arg->type != KNIT_VALUE_STRING)
		return 22;
	char *out = knit_ctx_alloc(ctx, arg->len + 1);
	if (!out)
		return 12;
	for (size_t i = 0; i < arg->len; i++)
		out[i] = (char)toupper(((const unsigned char *)arg->data)[i]);
	ret->type = KNIT_VALUE_STRING;
	ret->data = out;
	ret->len = arg->len;
	return 0;
}

/* Returns its I64 argument as the task's return value (no ret). */
int ffi_fail(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)ret;
	return (int)arg->i64;
}

/* Sets an ERROR value (code = arg, message "bad input") and returns 1. */
int ffi_error(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	static const char msg[] = "bad input";
	ret->type = KNIT_VALUE_ERROR;
	ret->code = (int32_t)arg->i64;
	ret->data = msg;
	ret->len = sizeof msg - 1;
	return 1;
}

/* Sleeps arg I64 milliseconds, returns the deadline it saw. */
int ffi_sleep(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	struct timespec ts = {arg->i64 / 1000, (long)(arg->i64 % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	ret->type = KNIT_VALUE_I64;
	ret->i64 = knit_ctx_deadline_ns(ctx);
	return 0;
}

/* How many ffi_meet calls are inside the task now, and the most that were
 * inside at once since it was last empty (one process's counts). */
static int meet_inside, meet_peak;

/*
 * Arg I64 n: waits (bounded: 10 s) until n calls of ffi_meet have been
 * inside at once, and returns the most that were (itself included). Two
 * host threads calling it on two workers both get 2 only when neither host
 * thread held the interpreter lock while it waited in knit_call.
 */
int ffi_meet(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	int now = __atomic_add_fetch(&meet_inside, 1, __ATOMIC_SEQ_CST);
	int peak = __atomic_load_n(&meet_peak, __ATOMIC_SEQ_CST);
	while (peak < now && !__atomic_compare_exchange_n(&meet_peak, &peak, now, 0,
							  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	for (int ms = 0; ms < 10000 && __atomic_load_n(&meet_peak, __ATOMIC_SEQ_CST) < arg->i64;
	     ms++) {
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
	}
	ret->type = KNIT_VALUE_I64;
	ret->i64 = __atomic_load_n(&meet_peak, __ATOMIC_SEQ_CST);
	if (__atomic_sub_fetch(&meet_inside, 1, __ATOMIC_SEQ_CST) == 0)
		__atomic_store_n(&meet_peak, 0, __ATOMIC_SEQ_CST);
	return 0;
}

/* Kills its worker process with SIGSEGV (process pools only: in a thread
 * pool it would kill the host). */
int ffi_crash(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg, (void)ret;
	raise(SIGSEGV);
	return 0;
}

/* Arg STRING a path: creates that file (it runs now), then waits (bounded:
 * 20 s) until the file is gone; returns arg. A call a test kills with its
 * worker (knit_cancel KNIT_CANCEL_KILL) once it saw the file. */
int ffi_await(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char path[4096];
	if (arg->type != KNIT_VALUE_STRING || arg->len == 0 || arg->len >= sizeof path)
		return 2;
	memcpy(path, arg->data, arg->len);
	path[arg->len] = 0;
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return 3;
	fclose(f);
	for (int ms = 0; ms < 20000 && access(path, F_OK) == 0; ms++) {
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
	}
	*ret = *arg;
	return 0;
}

static const knit_task_t ffi_tasks[] = {
	{.name = "await", .fn = ffi_await},   {.name = "crash", .fn = ffi_crash},
	{.name = "double", .fn = ffi_double}, {.name = "echo", .fn = ffi_echo},
	{.name = "error", .fn = ffi_error},   {.name = "fail", .fn = ffi_fail},
	{.name = "meet", .fn = ffi_meet},     {.name = "sleep", .fn = ffi_sleep},
	{.name = "upper", .fn = ffi_upper},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	.size = sizeof(knit_task_library_t),
	.version = KNIT_TASK_LIBRARY_VERSION,
	.tasks = ffi_tasks,
	.ntasks = sizeof ffi_tasks / sizeof ffi_tasks[0],
};
