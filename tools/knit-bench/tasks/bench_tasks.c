/* SPDX-License-Identifier: MIT */
/*
 * tools/knit-bench/tasks/bench_tasks.c - knit-bench's tasks as a task
 * library, for the process-pool cases (built as knit-bench-tasks.so beside
 * knit-bench). The same names, so the same ids, as the thread cases' table.
 */
#include <stdint.h>
#include <time.h>

#include "knitting.h"

static int t_nop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg, (void)ret;
	return 0;
}

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int t_work(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	uint64_t c0 = cpu_ns();
	uint32_t x = 1;
	for (int64_t i = 0; i < arg->i64; i++)
		x = x * 1664525u + 1013904223u;
	__asm__ __volatile__("" ::"r"(x));
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)(cpu_ns() - c0);
	return 0;
}

static int t_spin(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)ret;
	uint32_t x = 1;
	for (int64_t i = 0; i < arg->i64; i++)
		x = x * 1664525u + 1013904223u;
	__asm__ __volatile__("" ::"r"(x));
	return 0;
}

static const knit_task_t tasks[] = {{"echo", t_echo, 0, 0},
				    {"nop", t_nop, 0, 0},
				    {"spin", t_spin, 0, 0},
				    {"work", t_work, 0, 0}};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	.size = sizeof(knit_task_library_t),
	.version = KNIT_TASK_LIBRARY_VERSION,
	.tasks = tasks,
	.ntasks = sizeof tasks / sizeof tasks[0],
};
