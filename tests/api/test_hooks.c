/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_hooks.c - worker hooks and names (#26 item 3): a version 2
 * task library's init runs once per worker process, before its first task,
 * never in the host, and its refusal (with its words) fails
 * knit_pool_create; its fini runs on a clean stop; a version 1 library
 * still loads; thread pools run worker_start / worker_stop on each worker
 * thread; workers (threads and processes) are named knit-wN.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"

#define HOOKS_LIB KT_BUILD_DIR "/tests/lib/proc_hooks.so"
#define V1_LIB KT_BUILD_DIR "/tests/lib/proc_v1.so"

static knit_pool_t *hooks_pool(uint32_t workers, uint32_t topology, uint32_t flags)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.task_library = HOOKS_LIB;
	o.topology = topology;
	o.proc_flags = flags;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "create: %s: %s", knit_strerror(rc), knit_last_error());
	return p;
}

/* The calls of "task" on lane w (lanes topology). */
static knit_completion_t call_on(knit_pool_t *p, const char *task, uint32_t w)
{
	knit_call_options_t co = {.size = sizeof co, .flags = KNIT_CALL_LANE, .lane = w};
	knit_completion_t c;
	knit_value_t none = kt_none();
	const int rc =
		knit_call_ex(p, kt_id(p, task), &none, &co, NULL, &c, (int64_t)(KT_BOUND_S * 1e9));
	cr_assert_eq(rc, 0, "knit_call_ex(%s): %s", task, knit_strerror(rc));
	cr_assert_eq(c.status, 0, "%s on lane %u: %s", task, w, knit_strerror(c.status));
	return c;
}

KT(hooks, init_once_per_worker_never_in_host)
{
	knit_pool_t *p = hooks_pool(3, KNIT_TOPOLOGY_LANES, 0);
	for (uint32_t w = 0; w < 3; w++)
		for (int k = 0; k < 5; k++) {
			knit_completion_t c = call_on(p, "inits", w);
			/* one init in this process, and it was told its lane */
			cr_assert_eq(c.result.i64, 1000 + (int64_t)w, "lane %u: %lld", w,
				     (long long)c.result.i64);
			knit_completion_release(p, &c);
		}
	/* The host loaded the same library (RTLD_NOLOAD finds its copy): its
	 * init never ran here. */
	void *dl = dlopen(HOOKS_LIB, RTLD_NOW | RTLD_NOLOAD);
	cr_assert_not_null(dl, "the host has the task library loaded");
	const int *calls = dlsym(dl, "hooks_init_calls");
	cr_assert_not_null(calls);
	cr_assert_eq(*calls, 0, "init ran %d times in the host", *calls);
	dlclose(dl);
	kt_destroy(p);
}

KT(hooks, init_runs_again_in_a_respawned_worker)
{
	/* A respawned worker is a fresh process: its own init, once. */
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = HOOKS_LIB;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0, "%s", knit_last_error());
	knit_completion_t c = kt_proc_call(p, "pid", kt_none());
	const int64_t pid = c.result.i64;
	cr_assert_eq(kill((pid_t)pid, SIGKILL), 0);
	/* The next call runs on the successor (bounded: its respawn). */
	int64_t pid2 = pid;
	for (int i = 0; i < 2000 && pid2 == pid; i++) {
		knit_completion_t d;
		knit_value_t none = kt_none();
		cr_assert_eq(knit_call(p, kt_id(p, "pid"), &none, &d, (int64_t)(KT_BOUND_S * 1e9)),
			     0);
		if (d.status == 0)
			pid2 = d.result.i64;
		else
			kt_sleep_ms(5);
	}
	cr_assert_neq(pid2, pid, "no successor");
	c = kt_proc_call(p, "inits", kt_none());
	cr_assert_eq(c.result.i64, 1000, "the successor ran init once: %lld",
		     (long long)c.result.i64);
	kt_destroy(p);
}

KT(hooks, init_failure_fails_create_with_its_words)
{
	setenv("KNIT_TEST_INIT_FAIL", "no license for this worker", 1);
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.task_library = HOOKS_LIB;
	o.proc_flags = KNIT_PROC_INHERIT_ENV;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, -KNIT_EINVAL, "create: %s", knit_strerror(rc));
	cr_assert_null(p);
	const char *m = knit_last_error();
	cr_assert(strstr(m, "init returned 7") != NULL, "message: %s", m);
	cr_assert(strstr(m, "no license for this worker (worker ") != NULL, "message: %s", m);
	unsetenv("KNIT_TEST_INIT_FAIL");
	cr_assert_eq(kt_count_children(), 0);
}

KT(hooks, init_opens_a_file_tasks_use)
{
	char dir[] = "/tmp/knit-hooks-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/data", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("opened by init", f);
	fclose(f);
	setenv("KNIT_TEST_INIT_FILE", path, 1);
	knit_pool_t *p = hooks_pool(1, KNIT_TOPOLOGY_AUTO, KNIT_PROC_INHERIT_ENV);
	/* Gone before the task reads: only init's descriptor reaches it. */
	cr_assert_eq(unlink(path), 0);
	knit_completion_t c = kt_proc_call(p, "readinit", kt_none());
	cr_assert_eq(c.status, 0, "%s", knit_strerror(c.status));
	cr_assert_eq(c.result.len, 14);
	cr_assert_eq(memcmp(c.result.data, "opened by init", 14), 0);
	knit_completion_release(p, &c);
	kt_destroy(p);
	unsetenv("KNIT_TEST_INIT_FILE");
	rmdir(dir);
}

KT(hooks, fini_on_clean_stop)
{
	char dir[] = "/tmp/knit-hooks-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	setenv("KNIT_TEST_FINI_DIR", dir, 1);
	knit_pool_t *p = hooks_pool(2, KNIT_TOPOLOGY_LANES, KNIT_PROC_INHERIT_ENV);
	int64_t pid[2];
	for (uint32_t w = 0; w < 2; w++) {
		knit_completion_t c = call_on(p, "pid", w);
		pid[w] = c.result.i64;
	}
	char path[256];
	snprintf(path, sizeof path, "%s/fini", dir);
	cr_assert_neq(access(path, F_OK), 0, "fini ran before the stop");
	kt_destroy(p); /* reaps both workers: their fini ran before they exited */
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "no fini ran");
	int seen[2] = {0, 0};
	unsigned w;
	int fpid;
	while (fscanf(f, "fini %u %d\n", &w, &fpid) == 2) {
		cr_assert(w < 2, "worker %u", w);
		cr_assert_eq(fpid, pid[w], "fini of worker %u ran in pid %d, not %lld", w, fpid,
			     (long long)pid[w]);
		seen[w]++;
	}
	fclose(f);
	cr_assert_eq(seen[0], 1);
	cr_assert_eq(seen[1], 1);
	unlink(path);
	rmdir(dir);
	unsetenv("KNIT_TEST_FINI_DIR");
}

KT(hooks, version1_library_loads)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = V1_LIB;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "create: %s: %s", knit_strerror(rc), knit_last_error());
	knit_completion_t c = kt_proc_call(p, "one", kt_none());
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 1);
	kt_destroy(p);
}

KT(hooks, process_names)
{
	knit_pool_t *p = hooks_pool(2, KNIT_TOPOLOGY_LANES, 0);
	for (uint32_t w = 0; w < 2; w++) {
		knit_completion_t c = call_on(p, "comm", w);
		char want[16];
		snprintf(want, sizeof want, "knit-w%u", w);
		cr_assert_eq(c.result.type, KNIT_VALUE_STRING);
		cr_assert_str_eq((const char *)c.result.data, want);
		knit_completion_release(p, &c);
	}
	kt_destroy(p);
}

KT(hooks, thread_hooks_are_for_threads_only)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.worker_hook_arg = &o;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "worker_hook_arg is for thread workers only") != NULL,
		  "%s", knit_last_error());
}

/* ---- thread pools ---------------------------------------------------------------- */

#define NW 4
static struct {
	atomic_int started[NW];
	atomic_int stopped[NW];
	atomic_int bad; /* a hook ran with the wrong arg, lane or name */
	pthread_t thread[NW];
} hk;
static int hk_cookie;

static void on_start(void *arg, uint32_t w)
{
	char name[16] = {0}, want[16];
	snprintf(want, sizeof want, "knit-w%u", w);
	prctl(PR_GET_NAME, name);
	if (arg != &hk_cookie || w >= NW || strcmp(name, want) != 0) {
		atomic_fetch_add(&hk.bad, 1);
		return;
	}
	hk.thread[w] = pthread_self();
	atomic_fetch_add(&hk.started[w], 1);
}

static void on_stop(void *arg, uint32_t w)
{
	if (arg != &hk_cookie || w >= NW || !pthread_equal(hk.thread[w], pthread_self())) {
		atomic_fetch_add(&hk.bad, 1);
		return;
	}
	atomic_fetch_add(&hk.stopped[w], 1);
}

/* A task: 1 when the start hook ran on this thread, for this lane. */
static int t_started(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	const int w = knit_ctx_lane(ctx);
	ret->type = KNIT_VALUE_I64;
	ret->i64 = w >= 0 && w < NW && atomic_load(&hk.started[w]) == 1 &&
		   pthread_equal(hk.thread[w], pthread_self()) && atomic_load(&hk.stopped[w]) == 0;
	return 0;
}

KT(hooks, thread_start_and_stop)
{
	static const knit_task_t tasks[] = {{"started", t_started, 0, 0, NULL, {0, 0}}};
	knit_pool_options_t o;
	kt_opts(&o, NW);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.worker_start = on_start;
	o.worker_stop = on_stop;
	o.worker_hook_arg = &hk_cookie;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, tasks, 1, &p), 0, "%s", knit_last_error());
	for (uint32_t w = 0; w < NW; w++)
		for (int k = 0; k < 3; k++) {
			knit_call_options_t co = {
				.size = sizeof co, .flags = KNIT_CALL_LANE, .lane = w};
			knit_completion_t c;
			knit_value_t none = kt_none();
			cr_assert_eq(knit_call_ex(p, 0, &none, &co, NULL, &c,
						  (int64_t)(KT_BOUND_S * 1e9)),
				     0);
			cr_assert_eq(c.status, 0);
			cr_assert_eq(c.result.i64, 1, "lane %u: the start hook had not run there",
				     w);
		}
	for (uint32_t w = 0; w < NW; w++)
		cr_assert_eq(atomic_load(&hk.stopped[w]), 0);
	cr_assert_eq(knit_pool_destroy(p), 0);
	for (uint32_t w = 0; w < NW; w++) {
		cr_assert_eq(atomic_load(&hk.started[w]), 1, "lane %u", w);
		cr_assert_eq(atomic_load(&hk.stopped[w]), 1, "lane %u", w);
	}
	cr_assert_eq(atomic_load(&hk.bad), 0);
}

KT(hooks, thread_names_without_hooks)
{
	/* The name is there when create returns, hooks or not. */
	knit_pool_t *p = kt_pool_n(2);
	char path[300], comm[32];
	int found[2] = {0, 0};
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof comm, f) != NULL) {
			if (strcmp(comm, "knit-w0\n") == 0)
				found[0]++;
			if (strcmp(comm, "knit-w1\n") == 0)
				found[1]++;
		}
		fclose(f);
	}
	closedir(d);
	cr_assert_eq(found[0], 1);
	cr_assert_eq(found[1], 1);
	kt_destroy(p);
}
