/* SPDX-License-Identifier: MIT */
/* tests/install/proc_consumer.c - a process pool built against an installed
 * libknitting: the library must find the installed knit-worker by itself.
 * argv[1]: the task library (tests/api/tasklib/proc_tasks.c). */
#include <knitting.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	knit_pool_options_t o = {.size = sizeof o,
				 .workers = 1,
				 .worker_kind = KNIT_WORKERS_PROCESSES,
				 .task_library = argv[1]};
	knit_pool_t *pool;
	int rc = knit_pool_create(&o, NULL, 0, &pool);
	if (rc != 0) {
		fprintf(stderr, "knit_pool_create: %s\n", knit_strerror(rc));
		return 1;
	}
	knit_value_t a = {.type = KNIT_VALUE_I64};
	knit_completion_t c;
	rc = knit_call(pool, (uint32_t)knit_pool_task_id(pool, "pid"), &a, &c, -1);
	const int ok =
		rc == 0 && c.status == 0 && c.result.i64 > 0 && c.result.i64 != (int64_t)getpid();
	knit_completion_release(pool, &c);
	knit_pool_destroy(pool);
	printf("process pool: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
