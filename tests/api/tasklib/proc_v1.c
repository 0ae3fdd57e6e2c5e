/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_v1.c - a task library as one built against
 * libknitting 1.0 or 1.1 exports it: version 1, the first four members only
 * (size KNIT_TASK_LIBRARY_V1_SIZE), no hooks. It must still load.
 *
 * name       what it does
 * one        result I64 1
 */
#include "knitting.h"

static int t_one(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = 1;
	return 0;
}

static const knit_task_t tasks[] = {{"one", t_one, 0, 0}};

/* The 1.1 layout: four members. */
struct v1_library {
	uint32_t size;
	uint32_t version;
	const knit_task_t *tasks;
	size_t ntasks;
};

__attribute__((visibility("default")))
const struct v1_library knit_task_library = {KNIT_TASK_LIBRARY_V1_SIZE, 1, tasks, 1};

_Static_assert(sizeof(struct v1_library) == KNIT_TASK_LIBRARY_V1_SIZE, "the 1.1 layout");
