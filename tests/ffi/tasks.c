/* SPDX-License-Identifier: MIT */
/*
 * tests/ffi/tasks.c - a small task library for the Python ctypes test
 * (tests/ffi/test_ctypes.py builds it with `cc -shared -fPIC` into a temp
 * directory and loads it next to libknitting.so).
 *
 * Exports the task functions (the test casts them to the task pointer type
 * and builds knit_task_t entries in Python), plus the sizes and field offsets
 * of every public struct as the C compiler sees them, so a ctypes mirror that
 * drifts from include/knitting.h fails the test.
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

/* ---- layout oracle --------------------------------------------------------------- */

size_t ffi_sizeof(const char *name)
{
#define S(t)                                                                           \
	if (strcmp(name, #t) == 0)                                                     \
		return sizeof(t);
	S(knit_value_t)
	S(knit_task_t)
	S(knit_pool_options_t)
	S(knit_call_options_t)
	S(knit_completion_t)
	S(knit_lane_stats_t)
	S(knit_pool_stats_t)
#undef S
	return (size_t)-1;
}

/* offsetof(struct, field) by "struct.field"; (size_t)-1 if unknown. */
size_t ffi_offsetof(const char *name)
{
#define O(t, f)                                                                        \
	if (strcmp(name, #t "." #f) == 0)                                              \
		return offsetof(t, f);
	O(knit_value_t, type) O(knit_value_t, code) O(knit_value_t, i64) O(knit_value_t, f64)
	O(knit_value_t, data) O(knit_value_t, len)
	O(knit_task_t, name) O(knit_task_t, fn) O(knit_task_t, timeout_ms) O(knit_task_t, flags)
	O(knit_pool_options_t, size) O(knit_pool_options_t, workers) O(knit_pool_options_t, topology)
	O(knit_pool_options_t, balancer) O(knit_pool_options_t, inline_lane)
	O(knit_pool_options_t, inline_batch) O(knit_pool_options_t, steal_region_lanes)
	O(knit_pool_options_t, stall_free_loops) O(knit_pool_options_t, max_backoff_ms)
	O(knit_pool_options_t, doorbell) O(knit_pool_options_t, spin_us) O(knit_pool_options_t, park_ms)
	O(knit_pool_options_t, abort_capacity) O(knit_pool_options_t, hard_timeout_ms)
	O(knit_pool_options_t, max_pending) O(knit_pool_options_t, reserved0)
	O(knit_pool_options_t, payload_max_bytes) O(knit_pool_options_t, payload_initial_bytes)
	O(knit_pool_options_t, max_payload_bytes) O(knit_pool_options_t, cpu_mask)
	O(knit_pool_options_t, cpu_flags) O(knit_pool_options_t, reserved1)
	O(knit_pool_options_t, worker_kind) O(knit_pool_options_t, proc_flags)
	O(knit_pool_options_t, task_library) O(knit_pool_options_t, worker_path)
	O(knit_pool_options_t, respawn_max) O(knit_pool_options_t, reserved2)
	O(knit_call_options_t, size) O(knit_call_options_t, flags) O(knit_call_options_t, timeout_ms)
	O(knit_call_options_t, lane)
	O(knit_completion_t, ticket) O(knit_completion_t, user_data) O(knit_completion_t, status)
	O(knit_completion_t, task) O(knit_completion_t, result) O(knit_completion_t, reserved)
	O(knit_lane_stats_t, calls) O(knit_lane_stats_t, parks) O(knit_lane_stats_t, wakes_sent)
	O(knit_lane_stats_t, wakes_received) O(knit_lane_stats_t, watchdog_expiries)
	O(knit_lane_stats_t, spins) O(knit_lane_stats_t, doorbell_rings) O(knit_lane_stats_t, steal_claims)
	O(knit_lane_stats_t, steal_conflicts) O(knit_lane_stats_t, spurious_wakes)
	O(knit_lane_stats_t, arena_trims) O(knit_lane_stats_t, cpu)
	O(knit_pool_stats_t, size) O(knit_pool_stats_t, lanes) O(knit_pool_stats_t, topology)
	O(knit_pool_stats_t, workers) O(knit_pool_stats_t, enqueued) O(knit_pool_stats_t, completed)
	O(knit_pool_stats_t, pending) O(knit_pool_stats_t, backlog) O(knit_pool_stats_t, backlog_high_water)
	O(knit_pool_stats_t, doorbell_arms) O(knit_pool_stats_t, doorbell_wakes)
	O(knit_pool_stats_t, inline_calls) O(knit_pool_stats_t, proto_errors)
	O(knit_pool_stats_t, late_drops) O(knit_pool_stats_t, arena_committed_bytes)
	O(knit_pool_stats_t, reserved) O(knit_pool_stats_t, lane)
	O(knit_pool_stats_t, spawns) O(knit_pool_stats_t, crashes)
	O(knit_pool_stats_t, respawns) O(knit_pool_stats_t, hard_kills)
#undef O
	return (size_t)-1;
}
