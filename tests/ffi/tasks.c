/* SPDX-License-Identifier: MIT */
/*
 * tests/ffi/tasks.c - a small task library for the Python ctypes test
 * (tests/ffi/test_ctypes.py builds it with `cc -shared -fPIC` into a temp
 * directory and loads it next to libknitting.so).
 *
 * Exports the task functions; the test casts them to the task pointer type
 * and builds knit_task_t entries in Python.
 */
#include <ctype.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

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
	struct timespec ts = { arg->i64 / 1000, (long)(arg->i64 % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	ret->type = KNIT_VALUE_I64;
	ret->i64 = knit_ctx_deadline_ns(ctx);
	return 0;
}
