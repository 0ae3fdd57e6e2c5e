/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_create_errors.c - why knit_pool_create failed: each cause
 * gets its code and a knit_last_error() message that names the cause and
 * the value. A missing task library (absolute, relative to another working
 * directory, a bare name), a missing or non-executable knit-worker (the
 * option, KNIT_WORKER_PATH), a missing worker_prefix program, a worker that
 * refused its boot (its own words, sanitised and bounded), a program that
 * is not knit-worker, plain invalid options; and the message's contract:
 * "" after a success, per thread, untouched by the other entries, errno
 * untouched.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"

#define MISMATCH_LIB KT_BUILD_DIR "/tests/lib/proc_mismatch.so"

/* Create a pool that must fail with `code`; returns the message (copied). */
static const char *create_fails(const knit_pool_options_t *o, const knit_task_t *tasks, size_t n,
				int code)
{
	static char msg[2048];
	knit_pool_t *p = (knit_pool_t *)0x1;
	const int rc = knit_pool_create(o, tasks, n, &p);
	const char *m = knit_last_error();
	cr_assert_not_null(m, "knit_last_error() is never NULL");
	snprintf(msg, sizeof msg, "%s", m);
	cr_assert_eq(rc, code, "knit_pool_create: %d (%s), wanted %d (%s); message \"%s\"", rc,
		     knit_strerror(rc), code, knit_strerror(code), msg);
	cr_assert_null(p, "*out is NULL after a failure");
	cr_assert_gt(strlen(msg), 0, "a failure leaves a message");
	return msg;
}

#define HAS(msg, words)                                                                            \
	cr_assert(strstr((msg), (words)) != NULL, "message \"%s\" lacks \"%s\"", (msg), (words))

/* A fresh directory under /tmp; removed by rm_dir. */
static void mk_dir(char *dir, size_t n)
{
	snprintf(dir, n, "/tmp/kt-create-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

/* ---- task libraries ------------------------------------------------------------ */

KT(create_errors, missing_library_absolute)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = KT_BUILD_DIR "/tests/lib/no-such-library.so";
	const char *m = create_fails(&o, NULL, 0, -KNIT_ENOENT);
	HAS(m, "task library \"" KT_BUILD_DIR "/tests/lib/no-such-library.so\"");
	HAS(m, strerror(ENOENT));
	cr_assert_eq(kt_count_children(), 0);
}

KT(create_errors, relative_library_other_cwd)
{
	char dir[64], old[PATH_MAX];
	mk_dir(dir, sizeof dir);
	cr_assert_not_null(getcwd(old, sizeof old));
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = "tests/lib/proc_tasks.so"; /* relative to the build directory */
	cr_assert_eq(chdir(dir), 0);
	const char *m = create_fails(&o, NULL, 0, -KNIT_ENOENT);
	HAS(m, "relative task library path \"tests/lib/proc_tasks.so\"");
	char cwd[128];
	snprintf(cwd, sizeof cwd, "resolved against cwd \"%s\"", dir);
	HAS(m, cwd);
	HAS(m, strerror(ENOENT));
	/* From the directory it is relative to, the same path works, and the
	 * success clears the message. */
	cr_assert_eq(chdir(KT_BUILD_DIR), 0);
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "%s: %s", knit_strerror(rc), knit_last_error());
	cr_assert_str_eq(knit_last_error(), "", "a successful create clears the message");
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(7));
	cr_assert_eq(c.result.i64, 7);
	kt_destroy(p);
	cr_assert_eq(chdir(old), 0);
	rmdir(dir);
}

KT(create_errors, bare_library_name)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = "kt-no-such-tasks.so";
	const char *m = create_fails(&o, NULL, 0, -KNIT_ENOENT);
	HAS(m, "task library \"kt-no-such-tasks.so\": dlopen:");
	HAS(m, "searched in the library path");
}

KT(create_errors, library_not_a_shared_object)
{
	char dir[64], path[128];
	mk_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/tasks.so", dir);
	write_file(path, "not an ELF file\n", 0644);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = path;
	const char *m = create_fails(&o, NULL, 0, -KNIT_EINVAL);
	char want[160];
	snprintf(want, sizeof want, "task library \"%s\": dlopen:", path);
	HAS(m, want);
	/* A directory is no task library either. */
	o.task_library = dir;
	m = create_fails(&o, NULL, 0, -KNIT_EACCES);
	HAS(m, "not a regular file");
	unlink(path);
	rmdir(dir);
}

KT(create_errors, library_without_table)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	/* A real shared object, but no task library. */
	o.task_library = KT_BUILD_DIR "/lib/libknitting.so";
	const char *m = create_fails(&o, NULL, 0, -KNIT_EINVAL);
	HAS(m, "has no symbol knit_task_library");
}

KT(create_errors, library_size_too_large)
{
	/* A size larger than the structure this library knows is refused
	 * as every other size field is: -KNIT_EVERSION, and why. */
	setenv("KT_LIB_SIZE_EXTRA", "8", 1);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = MISMATCH_LIB;
	const char *m = create_fails(&o, NULL, 0, -KNIT_EVERSION);
	HAS(m, "task library \"" MISMATCH_LIB "\"");
	char size[64];
	snprintf(size, sizeof size, "size %zu, larger than", sizeof(knit_task_library_t) + 8);
	HAS(m, size);
	unsetenv("KT_LIB_SIZE_EXTRA");
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- knit-worker ------------------------------------------------------------------ */

KT(create_errors, missing_worker_env)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	setenv("KNIT_WORKER_PATH", "/nonexistent", 1);
	const char *m = create_fails(&o, NULL, 0, -KNIT_ENOENT);
	HAS(m, "knit-worker \"/nonexistent\"");
	HAS(m, strerror(ENOENT));
	HAS(m, "from KNIT_WORKER_PATH");
	unsetenv("KNIT_WORKER_PATH");
	cr_assert_eq(kt_count_children(), 0);
}

KT(create_errors, missing_worker_option)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.worker_path = KT_BUILD_DIR "/no-such-knit-worker";
	const char *m = create_fails(&o, NULL, 0, -KNIT_ENOENT);
	HAS(m, "knit-worker \"" KT_BUILD_DIR "/no-such-knit-worker\"");
	HAS(m, "from the worker_path option");
	HAS(m, "set worker_path or KNIT_WORKER_PATH");
}

KT(create_errors, worker_not_executable)
{
	char dir[64], path[128];
	mk_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/knit-worker", dir);
	write_file(path, "#!/bin/sh\nexit 0\n",
		   0644); /* no x bit anywhere: root may not run it either */
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.worker_path = path;
	const char *m = create_fails(&o, NULL, 0, -KNIT_EACCES);
	char want[160];
	snprintf(want, sizeof want, "knit-worker \"%s\": not executable", path);
	HAS(m, want);
	HAS(m, strerror(EACCES));
	/* A directory is searchable (X_OK), not executable. */
	o.worker_path = dir;
	m = create_fails(&o, NULL, 0, -KNIT_EACCES);
	HAS(m, "not a regular file");
	unlink(path);
	rmdir(dir);
	cr_assert_eq(kt_count_children(), 0);
}

KT(create_errors, missing_prefix_program)
{
	static const char *const prefix[] = {"/nonexistent/kt-wrapper", NULL};
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.worker_prefix = prefix;
	const char *m = create_fails(&o, NULL, 0, -KNIT_ENOENT);
	HAS(m, "worker_prefix program \"/nonexistent/kt-wrapper\"");
	HAS(m, strerror(ENOENT));
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- workers that do not boot --------------------------------------------------- */

KT(create_errors, worker_refuses_boot)
{
	/* The host sees one task table, the workers (empty environment)
	 * another: each refuses, and its words come back. */
	setenv("KT_MISMATCH", "1", 1);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = MISMATCH_LIB;
	const char *m = create_fails(&o, NULL, 0, -KNIT_EPROTO);
	HAS(m, "worker 0 failed its boot: ");
	HAS(m, "the task library's table differs from the host's (" MISMATCH_LIB ")");
	unsetenv("KT_MISMATCH");
	cr_assert_eq(kt_count_children(), 0);
}

KT(create_errors, worker_is_another_program)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.worker_path = "/bin/true";
	const char *m = create_fails(&o, NULL, 0, -KNIT_ECRASHED);
	HAS(m, "worker 0 (\"/bin/true\") exited with status 0 before reporting ready");
	HAS(m, "is it a knit-worker?");
	cr_assert_eq(kt_count_children(), 0);
}

/* A "worker" that writes a hostile verdict on its status pipe (fd 4):
 * escape sequences, control bytes, bytes above ASCII, and far more than a
 * verdict may hold. */
KT(create_errors, hostile_boot_message)
{
	char dir[64], path[128];
	mk_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/liar", dir);
	write_file(path,
		   "#!/bin/sh\n"
		   "printf 'err 10 evil\\033[31m\\001\\377\\tword' >&4\n"
		   "i=0; while [ $i -lt 100 ]; do printf 'xxxxxxxxxxxxxxxxxxxx' >&4; i=$((i+1)); "
		   "done\n"
		   "printf '\\n' >&4\n",
		   0700);
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.worker_path = path;
	const char *m = create_fails(&o, NULL, 0, -KNIT_EPROTO);
	HAS(m, "worker 0 failed its boot: evil?[31m?? word");
	for (const unsigned char *c = (const unsigned char *)m; *c != 0; c++)
		cr_assert(*c >= 0x20 && *c < 0x7f, "byte 0x%02x at %zu is not printable ASCII", *c,
			  (size_t)((const char *)c - m));
	/* 2000 bytes sent; a verdict holds at most 511. */
	cr_assert_lt(strlen(m), 600, "%zu bytes of a worker's words kept", strlen(m));
	unlink(path);
	rmdir(dir);
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- invalid arguments ---------------------------------------------------------- */

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

KT(create_errors, invalid_options)
{
	knit_pool_options_t o;
	const knit_task_t one[] = {{.name = "echo", .fn = t_echo}};
	const knit_task_t twins[] = {{.name = "echo", .fn = t_echo},
				     {.name = "echo", .fn = t_echo}};
	const knit_task_t nofn[] = {{.name = "echo", .fn = NULL}};

	kt_opts(&o, 1);
	o.spin_us = 2000000;
	HAS(create_fails(&o, one, 1, -KNIT_EINVAL), "spin_us 2000000 is more than one second");
	kt_opts(&o, KNIT_MAX_WORKERS + 1);
	HAS(create_fails(&o, one, 1, -KNIT_EINVAL), "workers 65 is more than KNIT_MAX_WORKERS");
	kt_opts(&o, 1);
	o.topology = 9;
	HAS(create_fails(&o, one, 1, -KNIT_EINVAL), "topology 9");
	kt_opts(&o, 1);
	o.park_ms = KNIT_ZERO;
	HAS(create_fails(&o, one, 1, -KNIT_EINVAL), "park_ms");
	kt_opts(&o, 1);
	o.task_library = KT_PROC_LIB;
	HAS(create_fails(&o, one, 1, -KNIT_EINVAL), "task_library is for process workers only");
	kt_opts(&o, 1);
	o.size = 0;
	HAS(create_fails(&o, one, 1, -KNIT_EVERSION), "options size 0");
	kt_opts(&o, 1);
	HAS(create_fails(&o, twins, 2, -KNIT_EINVAL), "two tasks are named \"echo\"");
	HAS(create_fails(&o, nofn, 1, -KNIT_EINVAL), "task 0 (\"echo\") has a NULL fn");
	HAS(create_fails(&o, NULL, 0, -KNIT_EINVAL), "thread workers need a task table");
	kt_proc_opts(&o, 1);
	o.task_library = NULL;
	HAS(create_fails(&o, NULL, 0, -KNIT_EINVAL), "process workers need a task_library");
	kt_proc_opts(&o, 1);
	HAS(create_fails(&o, one, 1, -KNIT_EINVAL), "tasks must be NULL");
	/* NULL out: nothing to store into, the message says so. */
	kt_opts(&o, 1);
	cr_assert_eq(knit_pool_create(&o, one, 1, NULL), -KNIT_EINVAL);
	cr_assert_str_eq(knit_last_error(), "out is NULL");
}

/* ---- the message's contract ------------------------------------------------------- */

KT(create_errors, success_clears_others_untouched)
{
	cr_assert_str_eq(knit_last_error(), "", "none yet");
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.spin_us = 2000000;
	create_fails(&o, kt_tasks, KT_NTASKS, -KNIT_EINVAL);
	char before[1024];
	snprintf(before, sizeof before, "%s", knit_last_error());
	/* Entries off the recording list leave it alone, failing or not. */
	knit_value_t v = kt_i64(1);
	knit_completion_t c;
	cr_assert_eq(knit_enqueue(NULL, 0, &v, NULL, NULL), -KNIT_EINVAL);
	cr_assert_eq(knit_call(NULL, 0, &v, &c, 0), -KNIT_EINVAL);
	knit_pool_t *p = kt_pool_n(1); /* a successful create: cleared */
	cr_assert_str_eq(knit_last_error(), "");
	create_fails(&o, kt_tasks, KT_NTASKS, -KNIT_EINVAL);
	cr_assert_str_eq(knit_last_error(), before, "reading does not clear it");
	uint32_t echo = kt_id(p, "echo");
	cr_assert_eq(knit_call(p, echo, &v, &c, 0), 0);
	knit_completion_release(p, &c);
	cr_assert_eq(knit_enqueue(p, 9999, &v, NULL, NULL), -KNIT_ENOTASK);
	cr_assert_str_eq(knit_last_error(), before, "knit_call/knit_enqueue do not touch it");
	kt_destroy(p);
}

KT(create_errors, stats_records)
{
	knit_pool_t *p = kt_pool_n(1);
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s - 8;
	cr_assert_eq(knit_pool_stats(p, &s, sizeof s), -KNIT_EINVAL);
	HAS(knit_last_error(), "stats->size");
	HAS(knit_last_error(), "differs from the size argument");
	s.size = sizeof s;
	cr_assert_eq(knit_pool_stats(p, &s, sizeof s), 0);
	cr_assert_str_eq(knit_last_error(), "", "a successful knit_pool_stats clears it");
	kt_destroy(p);
}

static void *fail_in_thread(void *arg)
{
	(void)arg;
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.topology = 9;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, kt_tasks, KT_NTASKS, &p);
	return (void *)(intptr_t)(rc == -KNIT_EINVAL &&
				  strstr(knit_last_error(), "topology 9") != NULL);
}

KT(create_errors, per_thread)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.spin_us = 2000000;
	create_fails(&o, kt_tasks, KT_NTASKS, -KNIT_EINVAL);
	pthread_t t;
	void *ok = NULL;
	cr_assert_eq(pthread_create(&t, NULL, fail_in_thread, NULL), 0);
	cr_assert_eq(pthread_join(t, &ok), 0);
	cr_assert(ok != NULL, "the other thread saw its own message");
	HAS(knit_last_error(), "spin_us"); /* ours is still ours */
}

KT(create_errors, errno_untouched)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = "/nonexistent/tasks.so"; /* stat() fails inside */
	errno = 4242;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_ENOENT);
	cr_assert_eq(errno, 4242, "errno became %d", errno);
	o.task_library = KT_PROC_LIB;
	o.worker_path = "/nonexistent";
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_ENOENT);
	cr_assert_eq(errno, 4242, "errno became %d", errno);
}
