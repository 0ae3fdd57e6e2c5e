/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_mismatch.c - a task library whose table depends on
 * the environment: with KT_MISMATCH set, "echo" has a 7 ms default timeout,
 * else none. A host that sets it and a worker that does not inherit it (the
 * default) load different tables: the worker must refuse to start.
 * With KT_LIB_SIZE_EXTRA=N its size field claims N bytes more than the
 * structure this library was built with (a task library of a newer
 * libknitting): the host must refuse it.
 */
#include <stdlib.h>

#include "knitting.h"

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

static knit_task_t tasks[] = {{"echo", t_echo, 0, 0}};

__attribute__((visibility("default"))) knit_task_library_t knit_task_library = {
	sizeof(knit_task_library_t), KNIT_TASK_LIBRARY_VERSION, tasks, 1};

__attribute__((constructor)) static void pick_table(void)
{
	if (getenv("KT_MISMATCH") != NULL)
		tasks[0].timeout_ms = 7;
	const char *extra = getenv("KT_LIB_SIZE_EXTRA");
	if (extra != NULL)
		knit_task_library.size += (uint32_t)atoi(extra);
}
