/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_hooks.c - a version 2 task library with the worker
 * hooks (built as build/tests/lib/proc_hooks.so), for test_hooks.c.
 *
 * init (worker w): counts itself in hooks_init_calls (exported, so the host
 * can read its own copy: it must stay 0 there), keeps w; with
 * $KNIT_TEST_INIT_FAIL set (the pool passes its environment) it refuses
 * with that text and code 7; with $KNIT_TEST_INIT_FILE it opens that file
 * (a task reads it later through the descriptor). fini (worker w): with
 * $KNIT_TEST_FINI_DIR, appends "fini W PID" to DIR/fini.
 *
 * name       what it does
 * inits      result I64: init's calls in this process * 1000 + the worker init got
 * comm       result STRING: this process's name (PR_GET_NAME)
 * pid        result I64 getpid()
 * readinit   result BYTES: up to 64 bytes read (pread, offset 0) from init's file
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "knitting.h"

__attribute__((visibility("default"))) int hooks_init_calls;
static uint32_t init_worker = 1000;
static int init_fd = -1;
static char comm[17];
static char readbuf[64];

static int h_init(uint32_t worker, char *msg, size_t msg_size)
{
	hooks_init_calls++;
	init_worker = worker;
	const char *fail = getenv("KNIT_TEST_INIT_FAIL");
	if (fail != NULL) {
		snprintf(msg, msg_size, "%s (worker %u)", fail, worker);
		return 7;
	}
	const char *file = getenv("KNIT_TEST_INIT_FILE");
	if (file != NULL && (init_fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(msg, msg_size, "cannot open %s", file);
		return 1;
	}
	return 0;
}

static void h_fini(uint32_t worker)
{
	const char *dir = getenv("KNIT_TEST_FINI_DIR");
	if (dir == NULL)
		return;
	char path[4096];
	snprintf(path, sizeof path, "%s/fini", dir);
	FILE *f = fopen(path, "a");
	if (f == NULL)
		return;
	fprintf(f, "fini %u %d\n", worker, (int)getpid());
	fclose(f);
}

static int t_inits(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)hooks_init_calls * 1000 + init_worker;
	return 0;
}

static int t_comm(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	memset(comm, 0, sizeof comm);
	if (prctl(PR_GET_NAME, comm) != 0)
		return 1;
	ret->type = KNIT_VALUE_STRING;
	ret->data = comm;
	ret->len = strlen(comm);
	return 0;
}

static int t_pid(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)getpid();
	return 0;
}

static int t_readinit(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	const ssize_t n = init_fd >= 0 ? pread(init_fd, readbuf, sizeof readbuf, 0) : -1;
	if (n < 0)
		return 2;
	ret->type = KNIT_VALUE_BYTES;
	ret->data = readbuf;
	ret->len = (size_t)n;
	return 0;
}

static const knit_task_t tasks[] = {
	{"inits", t_inits, 0, 0},
	{"comm", t_comm, 0, 0},
	{"pid", t_pid, 0, 0},
	{"readinit", t_readinit, 0, 0},
};

__attribute__((visibility("default")))
const knit_task_library_t knit_task_library = {sizeof(knit_task_library_t),
					       KNIT_TASK_LIBRARY_VERSION,
					       tasks,
					       sizeof tasks / sizeof tasks[0],
					       h_init,
					       h_fini};
