/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/stress.h - what the pool stress programs share: which
 * sanitizer the build runs under (each program scales its counts down by its
 * own divisor), failure reporting that keeps counting after the first 20
 * messages, and the monotonic clock. Each program is one translation unit.
 */
#ifndef KNIT_TESTS_STRESS_STRESS_H
#define KNIT_TESTS_STRESS_STRESS_H

#include <dirent.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "knitting.h"

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define STRESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRESS_ASAN 1
#endif
#endif
#ifndef STRESS_TSAN
#define STRESS_TSAN 0
#endif
#ifndef STRESS_ASAN
#define STRESS_ASAN 0
#endif
/* The count divisor for this build: TSAN_DIV under ThreadSanitizer, ASAN_DIV
 * under AddressSanitizer, 1 natively. */
#define STRESS_SAN_DIV(TSAN_DIV, ASAN_DIV) (STRESS_TSAN ? (TSAN_DIV) : STRESS_ASAN ? (ASAN_DIV) : 1)

static atomic_int failures;
#define FAIL(...)                                                                                  \
	do {                                                                                       \
		if (atomic_fetch_add(&failures, 1) < 20) {                                         \
			printf("FAIL %s:%d: ", __func__, __LINE__);                                \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			fflush(stdout);                                                            \
		}                                                                                  \
	} while (0)
#define CHECK(c, ...)                                                                              \
	do {                                                                                       \
		if (!(c))                                                                          \
			FAIL(__VA_ARGS__);                                                         \
	} while (0)

/* Two tasks several pool stress tests share: "neg" (I64 arg -> -arg) and
 * "blob" (I64 n -> a STRING of n 'x', built in knit_ctx_alloc memory: inline
 * below 512 bytes, arena above). Ids are name order: blob = 0, neg = 1. */
static inline int stress_t_neg(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = -arg->i64;
	return 0;
}
static inline int stress_t_blob(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	size_t n = (size_t)arg->i64;
	char *b = (char *)knit_ctx_alloc(ctx, n);
	if (!b)
		return 12;
	memset(b, 'x', n);
	ret->type = KNIT_VALUE_STRING;
	ret->data = b;
	ret->len = n;
	return 0;
}
#define STRESS_NEG_BLOB_TASKS                                                                      \
	{                                                                                          \
		{"neg", stress_t_neg, 0, 0}, { "blob", stress_t_blob, 0, 0 }                       \
	}

/* Our child processes (every thread's: children hang off the thread that
 * spawned them), counted; *first (if given) gets one of their pids, or -1.
 * -1 when /proc cannot be read. */
static inline int stress_children(pid_t *first)
{
	if (first != NULL)
		*first = -1;
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[300];
		snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		int pid;
		while (fscanf(f, "%d", &pid) == 1) {
			if (n++ == 0 && first != NULL)
				*first = (pid_t)pid;
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* A process pool's worker and task library, found relative to this program
 * (build/tests/stress -> build/libexec/knitting, build/tests/lib), into
 * worker[PATH_MAX + 64] and lib[PATH_MAX + 64]. 0, 77 (not built: printed
 * SKIP, the program's exit status) or 1. */
static inline int stress_proc_paths(char *worker, char *lib)
{
	char exe[PATH_MAX];
	const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return 1;
	exe[len] = 0;
	char *slash = strrchr(exe, '/');
	if (slash == NULL)
		return 1;
	*slash = 0; /* .../tests/stress */
	snprintf(worker, PATH_MAX + 64, "%s/../../libexec/knitting/knit-worker", exe);
	snprintf(lib, PATH_MAX + 64, "%s/../lib/proc_tasks.so", exe);
	if (access(worker, X_OK) != 0 || access(lib, R_OK) != 0) {
		printf("SKIP: %s or %s not built\n", worker, lib);
		return 77;
	}
	return 0;
}

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
