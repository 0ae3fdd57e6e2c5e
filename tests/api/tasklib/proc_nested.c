/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_nested.c - a process-pool task that uses a pool of
 * its own (test_callers.c): a task running in a worker process cannot reach
 * the host's pool, but it may create a thread pool in the worker process and
 * call it; a task of THAT pool calling its own pool gets -KNIT_EBUSY, as on
 * the host.
 *
 * name    what it does
 * nested  creates a 1-worker thread pool whose task "self" calls knit_call on
 *         its own pool; knit_calls "self" and returns I64
 *         outer * 1000 + inner: outer = knit_call's return on the nested pool
 *         (0 expected), inner = what "self" saw from its own knit_call
 *         (-KNIT_EBUSY expected), both as negative codes.
 */
#include <string.h>

#include "knitting.h"

static knit_pool_t *nested_pool;

static int t_self(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	knit_completion_t c;
	int rc = knit_call(nested_pool, 0, NULL, &c, 0);
	if (rc == 0)
		knit_completion_release(nested_pool, &c);
	ret->type = KNIT_VALUE_I64;
	ret->i64 = rc;
	return 0;
}

static int t_nested(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	static const knit_task_t inner[] = {{"self", t_self, 0, 0, NULL, {0, 0}}};
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 1;
	ret->type = KNIT_VALUE_I64;
	if (knit_pool_create(&o, inner, 1, &nested_pool) != 0) {
		ret->i64 = 99999;
		return 0;
	}
	knit_completion_t c;
	int outer = knit_call(nested_pool, 0, NULL, &c, 0);
	int64_t in = outer == 0 && c.status == 0 ? c.result.i64 : 0;
	knit_pool_destroy(nested_pool);
	nested_pool = NULL;
	ret->i64 = (int64_t)outer * 1000 + in;
	return 0;
}

static const knit_task_t tasks[] = {
	{"nested", t_nested, 0, 0, NULL, {0, 0}},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	sizeof(knit_task_library_t), KNIT_TASK_LIBRARY_VERSION, tasks,
	sizeof tasks / sizeof tasks[0]};
