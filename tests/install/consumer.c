// SPDX-License-Identifier: MIT
// An application built only from what `make install` put in a stage: one
// real call through a pool, checked. Exit 0 only if the answer is right.
#include <knitting.h>
#include <stdio.h>

static int add_one(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = arg->i64 + 1;
	return 0;
}

int main(void)
{
	knit_task_t task = {.name = "add_one", .fn = add_one};
	knit_pool_t *pool;
	int rc = knit_pool_create(NULL, &task, 1, &pool);
	if (rc != 0) {
		fprintf(stderr, "knit_pool_create: %s\n", knit_strerror(rc));
		return 1;
	}
	knit_value_t arg = {.type = KNIT_VALUE_I64, .i64 = 41};
	knit_completion_t done;
	rc = knit_call(pool, 0, &arg, &done, -1);
	knit_pool_destroy(pool);
	if (rc != 0 || done.status != 0 || done.result.type != KNIT_VALUE_I64 ||
	    done.result.i64 != 42) {
		fprintf(stderr, "knit_call: rc %d status %d i64 %lld (want 0 0 42)\n", rc,
			(int)done.status, (long long)done.result.i64);
		return 1;
	}
	printf("knit_call(add_one, 41) = %lld, library version %#x\n", (long long)done.result.i64,
	       (unsigned)knit_version());
	return 0;
}
