/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_spawn.c - how process workers are started: a command
 * prefix (worker_prefix) that execs in place or forks and waits, its
 * validation, and named shared memory (KNIT_PROC_NAMED_SHM): round trips,
 * the name gone after destroy (and after a crash and respawn), children
 * dying with the host behind a forking wrapper; and what a worker holds:
 * exactly the descriptors knit-worker(8) lists, none of the host's, on
 * its first start and after a respawn, named or not.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

/* The wrappers: each appends its pid to the marker file ($1), then runs
 * the rest of its command line, in place (exec) or as a child it waits for
 * (fork: the trailing exit keeps the shell from exec'ing the last command). */
static const char kExecWrap[] = "#!/bin/sh\necho $$ >> \"$1\"\nshift\nexec \"$@\"\n";
static const char kForkWrap[] = "#!/bin/sh\necho $$ >> \"$1\"\nshift\n\"$@\"\nexit $?\n";

static char g_dir[64];
static char g_exec[128], g_fork[128], g_mark[128];
/* The prefixes that run them (wrappers() fills them in). */
static const char *g_exec_prefix[4], *g_fork_prefix[4];

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

static void wrappers(void)
{
	strcpy(g_dir, "/tmp/kt-wrap-XXXXXX");
	cr_assert_not_null(mkdtemp(g_dir));
	snprintf(g_exec, sizeof g_exec, "%s/exec.sh", g_dir);
	snprintf(g_fork, sizeof g_fork, "%s/fork.sh", g_dir);
	snprintf(g_mark, sizeof g_mark, "%s/mark", g_dir);
	write_file(g_exec, kExecWrap, 0700);
	write_file(g_fork, kForkWrap, 0700);
	const char *const ex[] = {"/bin/sh", g_exec, g_mark, NULL};
	const char *const fk[] = {"/bin/sh", g_fork, g_mark, NULL};
	memcpy(g_exec_prefix, ex, sizeof ex);
	memcpy(g_fork_prefix, fk, sizeof fk);
}

static void wrappers_done(void)
{
	unlink(g_exec);
	unlink(g_fork);
	unlink(g_mark);
	rmdir(g_dir);
}

/* Pids the wrappers wrote to the marker file. */
static int marks(int64_t *pids, int max)
{
	FILE *f = fopen(g_mark, "r");
	if (f == NULL)
		return 0;
	int n = 0;
	long long v;
	while (n < max && fscanf(f, "%lld", &v) == 1)
		pids[n++] = v;
	fclose(f);
	return n;
}

/* Is `pid` a live (not zombie) process? */
static int alive(int64_t pid)
{
	char path[64], comm[64], st = 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	int got, ok = fscanf(f, "%d %63s %c", &got, comm, &st) == 3;
	fclose(f);
	return ok && st != 'Z';
}

/* Wait (bounded) until none of pids[0..n) is alive. */
static void wait_gone(const int64_t *pids, int n, const char *what)
{
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	for (;;) {
		int left = 0;
		for (int i = 0; i < n; i++)
			left += alive(pids[i]);
		if (left == 0)
			return;
		cr_assert_lt(kt_now_ns(), end, "%s outlived", what);
		kt_sleep_ms(10);
	}
}

/* Names of ours (knitting-PID-...) in /dev/shm. */
static int shm_names(pid_t pid)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "knitting-%d-", (int)pid);
	DIR *d = opendir("/dev/shm");
	if (d == NULL)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* The host maps a /dev/shm/knitting-PID-... object. */
static int maps_named(void)
{
	char want[64], line[512];
	snprintf(want, sizeof want, "/dev/shm/knitting-%d-", (int)getpid());
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	int n = 0;
	while (fgets(line, sizeof line, f))
		if (strstr(line, want) != NULL)
			n++;
	fclose(f);
	return n;
}

/* A process pool of n workers started through `prefix` (NULL: none), with
 * `proc_flags`, into *p: knit_pool_create's code. No Criterion, for the
 * forked hosts below too. */
static int spawn_try(uint32_t n, const char *const *prefix, uint32_t proc_flags, knit_pool_t **p)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, n);
	o.worker_prefix = prefix;
	o.proc_flags = proc_flags;
	*p = NULL;
	return knit_pool_create(&o, NULL, 0, p);
}

static knit_pool_t *spawn(uint32_t n, const char *const *prefix, uint32_t proc_flags)
{
	knit_pool_t *p;
	cr_assert_eq(spawn_try(n, prefix, proc_flags, &p), 0, "%s", knit_last_error());
	return p;
}

/* n calls of "echo" each answer their own argument. */
static void echo_round_trips(knit_pool_t *p, int n)
{
	for (int i = 0; i < n; i++) {
		knit_completion_t c = kt_proc_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.result.i64, i);
	}
}

/* The pid of the worker that serves the next call (a one-worker pool). */
static int64_t worker_pid(knit_pool_t *p)
{
	knit_completion_t c = kt_proc_call(p, "pid", kt_none());
	cr_assert_eq(c.status, 0);
	return c.result.i64;
}

/* Destroy leaves no child process behind. */
static void destroy_reaps_all(knit_pool_t *p)
{
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- the prefix ------------------------------------------------------------------- */

KT(spawn, prefix_env_round_trips)
{
	const char *const prefix[] = {"env", NULL}; /* found in $PATH */
	knit_pool_t *p = spawn(2, prefix, 0);
	echo_round_trips(p, 20);
	destroy_reaps_all(p);
}

/* A wrapper that execs keeps the pid: the worker's parent is the host. */
KT(spawn, prefix_exec_wrapper_runs)
{
	wrappers();
	knit_pool_t *p = spawn(2, g_exec_prefix, 0);
	int64_t pids[4];
	cr_assert_eq(marks(pids, 4), 2, "the wrapper ran once per worker");
	for (int i = 0; i < 2; i++)
		kt_enq(p, kt_id(p, "pid"), kt_none(), NULL);
	knit_completion_t out[2];
	cr_assert_eq(kt_reap(p, out, 2), 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(out[i].status, 0);
		cr_assert(out[i].result.i64 == pids[0] || out[i].result.i64 == pids[1],
			  "the worker is the wrapper's process, exec'd");
	}
	destroy_reaps_all(p);
	wrappers_done();
}

/* A wrapper that forks and waits: the worker is its child, calls work, a
 * crash respawns through the wrapper, destroy leaves no process. */
KT(spawn, prefix_fork_wrapper)
{
	wrappers();
	knit_pool_t *p = spawn(1, g_fork_prefix, 0);
	const int64_t worker = worker_pid(p);
	int64_t w[4];
	cr_assert_eq(marks(w, 4), 1);
	cr_assert_neq(worker, w[0], "the worker is the wrapper's child, not the wrapper");
	knit_completion_t c = kt_proc_call(p, "abort", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	const int64_t worker2 = worker_pid(p);
	cr_assert_neq(worker2, worker, "respawned");
	cr_assert_eq(marks(w, 4), 2, "respawned through the wrapper");
	c = kt_proc_call(p, "echo", kt_i64(7));
	cr_assert_eq(c.result.i64, 7);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.respawns, 1);
	destroy_reaps_all(p);
	int64_t all[4] = {worker, worker2, w[0], w[1]};
	wait_gone(all, 4, "a wrapper or worker");
	wrappers_done();
}

/* A stuck worker behind a forking wrapper: destroy kills the wrapper, and
 * the worker dies with it (its parent-death signal). */
KT(spawn, prefix_fork_wrapper_stuck_worker)
{
	wrappers();
	knit_pool_t *p = spawn(1, g_fork_prefix, 0);
	const int64_t worker = worker_pid(p);
	kt_enq(p, kt_id(p, "spin"), kt_none(), NULL);
	kt_sleep_ms(50);
	destroy_reaps_all(p);
	wait_gone(&worker, 1, "a stuck worker behind its wrapper");
	wrappers_done();
}

/* The host is killed: workers behind a forking wrapper die with it (the
 * wrapper itself has no parent-death signal: the workers watch the host). */
KT(spawn, prefix_fork_wrapper_children_die_with_the_host)
{
	wrappers();
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t host = fork();
	cr_assert_geq(host, 0);
	if (host == 0) {
		close(pfd[0]);
		knit_pool_options_t o;
		kt_proc_opts(&o, 2);
		o.worker_prefix = g_fork_prefix;
		o.topology = KNIT_TOPOLOGY_LANES; /* round robin: one call per worker */
		knit_pool_t *p = NULL;
		if (knit_pool_create(&o, NULL, 0, &p) != 0)
			_exit(1);
		for (int i = 0; i < 2; i++)
			kt_enq(p, kt_id(p, "pid"), kt_none(), NULL);
		knit_completion_t out[2];
		if (kt_reap(p, out, 2) != 2)
			_exit(1);
		int64_t pids[2] = {out[0].result.i64, out[1].result.i64};
		(void)!write(pfd[1], pids, sizeof pids);
		for (;;)
			pause();
	}
	close(pfd[1]);
	int64_t pids[2];
	cr_assert_eq(read(pfd[0], pids, sizeof pids), (ssize_t)sizeof pids);
	cr_assert(pids[0] > 0 && pids[1] > 0 && pids[0] != pids[1]);
	int64_t w[4];
	cr_assert_eq(marks(w, 4), 2);
	kill(host, SIGKILL);
	waitpid(host, NULL, 0);
	wait_gone(pids, 2, "worker processes behind a forking wrapper: their host");
	wait_gone(w, 2, "the wrappers: their workers");
	close(pfd[0]);
	wrappers_done();
}

KT(spawn, bad_prefix)
{
	knit_pool_options_t o;
	knit_pool_t *p = NULL;
	const char *const empty[] = {NULL};
	const char *const blank[] = {"", NULL};
	const char *const missing[] = {"no-such-knit-wrapper", NULL};
	const char *const missing_abs[] = {KT_BUILD_DIR "/no-such-knit-wrapper", NULL};
	const char *const env[] = {"env", NULL};
	kt_proc_opts(&o, 1);
	o.worker_prefix = empty;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "an empty prefix");
	o.worker_prefix = blank;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "an empty program name");
	static const char *many[70];
	for (int i = 0; i < 69; i++)
		many[i] = "env";
	many[69] = NULL;
	o.worker_prefix = many;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "more than 64 words");
	int fds_children = kt_count_children();
	o.worker_prefix = missing;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_ENOENT, "not in $PATH");
	cr_assert(strstr(knit_last_error(), "worker_prefix program \"no-such-knit-wrapper\"") !=
			  NULL,
		  "%s", knit_last_error());
	o.worker_prefix = missing_abs;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_ENOENT, "no such file");
	cr_assert_eq(kt_count_children(), fds_children);
	cr_assert_null(p);
	/* Thread pools take no prefix. */
	kt_opts(&o, 1);
	o.worker_prefix = env;
	cr_assert_eq(knit_pool_create(&o, kt_tasks, KT_NTASKS, &p), -KNIT_EINVAL,
		     "a prefix with threads");
	/* An older caller's struct ends before worker_prefix: none, whatever
	 * lies beyond its size. */
	kt_proc_opts(&o, 1);
	o.worker_prefix = empty;
	o.size = offsetof(knit_pool_options_t, worker_prefix);
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(3));
	cr_assert_eq(c.result.i64, 3);
	kt_destroy(p);
}

/* ---- named shared memory ------------------------------------------------------------ */

KT(spawn, named_shm_round_trips_and_leaves_no_name)
{
	const pid_t me = getpid();
	cr_assert_eq(shm_names(me), 0);
	knit_pool_t *p = spawn(2, NULL, KNIT_PROC_NAMED_SHM);
	cr_assert_eq(maps_named(), 1, "the pool maps a named object");
	cr_assert_eq(shm_names(me), 1, "respawn on: the name stays while the pool lives");
	echo_round_trips(p, 20);
	destroy_reaps_all(p);
	cr_assert_eq(shm_names(me), 0, "no name after destroy");
	cr_assert_eq(maps_named(), 0);
}

KT(spawn, named_shm_crash_respawn_then_destroy)
{
	const pid_t me = getpid();
	knit_pool_t *p = spawn(1, NULL, KNIT_PROC_NAMED_SHM);
	knit_completion_t c = kt_proc_call(p, "segv", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	c = kt_proc_call(p, "echo", kt_i64(11)); /* the new worker opened the name */
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 11);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.respawns, 1);
	kt_destroy(p);
	cr_assert_eq(shm_names(me), 0, "no name after a crash, a respawn and destroy");
}

KT(spawn, named_shm_without_respawn_unlinks_at_create)
{
	const pid_t me = getpid();
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.proc_flags = KNIT_PROC_NAMED_SHM;
	o.respawn_max = KNIT_ZERO;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0);
	cr_assert_eq(shm_names(me), 0, "every worker mapped it: the name is gone");
	cr_assert_eq(maps_named(), 1, "the mapping stays");
	echo_round_trips(p, 10);
	kt_destroy(p);
	cr_assert_eq(shm_names(me), 0);
}

/* Remove what a failed test left, then report how many there were. */
static int shm_names_swept(pid_t pid)
{
	char prefix[64], path[300];
	snprintf(prefix, sizeof prefix, "knitting-%d-", (int)pid);
	const int n = shm_names(pid);
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
			unlink(path);
		}
	if (d != NULL)
		closedir(d);
	return n;
}

/* The names a dead host left once its janitor had `tries` x 10 ms to
 * remove them (it runs on its own time; a hang guard, not a check), swept. */
static int shm_names_left(pid_t host, int tries)
{
	for (int i = 0; i < tries && shm_names(host) != 0; i++)
		usleep(10 * 1000);
	return shm_names_swept(host);
}

/* A host killed while its name is linked (respawns on: the name stays for
 * the next worker) leaves no name: the pool's janitor removes it. */
KT(spawn, named_shm_host_killed_leaves_no_name)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	const pid_t host = fork();
	cr_assert_neq(host, -1);
	if (host == 0) {
		knit_pool_t *p = NULL;
		char ok = spawn_try(2, NULL, KNIT_PROC_NAMED_SHM, &p) == 0 &&
					  kt_proc_call(p, "echo", kt_i64(5)).result.i64 == 5
				  ? 'y'
				  : 'n';
		(void)!write(ready[1], &ok, 1);
		for (;;)
			pause(); /* killed here, the pool alive */
	}
	close(ready[1]);
	char ok = 0;
	cr_assert_eq(read(ready[0], &ok, 1), 1);
	close(ready[0]);
	const int linked = shm_names(host);
	kill(host, SIGKILL);
	cr_assert_eq(waitpid(host, NULL, 0), host);
	const int left = shm_names_left(host, 1000);
	cr_assert_eq(ok, 'y', "the killed host's pool served a call");
	cr_assert_eq(linked, 1, "respawn on: the name stayed while the pool lived");
	cr_assert_eq(left, 0, "the killed host's name is gone");
}

/* shm_open, interposed for this program (the library's calls resolve to
 * the executable's definition first): with g_die_after_shm_create set, a
 * create of a /knitting-... object kills the process right after the real
 * call made the name -- the host killed at the worst moment of a create. */
static volatile int g_die_after_shm_create;

int shm_open(const char *name, int oflag, mode_t mode)
{
	int (*real)(const char *, int, mode_t) =
		(int (*)(const char *, int, mode_t))dlsym(RTLD_NEXT, "shm_open");
	if (real == NULL) {
		errno = ENOSYS;
		return -1;
	}
	const int fd = real(name, oflag, mode);
	if (fd >= 0 && g_die_after_shm_create && (oflag & O_CREAT) != 0 &&
	    strncmp(name, "/knitting-", 10) == 0)
		raise(SIGKILL);
	return fd;
}

/* A host killed right after its create made the name, before anything
 * else of the create ran, leaves no name either. */
KT(spawn, named_shm_host_killed_in_create_leaves_no_name)
{
	const pid_t host = fork();
	cr_assert_neq(host, -1);
	if (host == 0) {
		knit_pool_t *p = NULL;
		g_die_after_shm_create = 1;
		spawn_try(1, NULL, KNIT_PROC_NAMED_SHM, &p);
		_exit(3); /* not reached: the interposer killed us */
	}
	int st = 0;
	cr_assert_eq(waitpid(host, &st, 0), host);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		  "the host died in its shm_open (status 0x%x)", st);
	const int left = shm_names_left(host, 500);
	cr_assert_eq(left, 0, "the host killed in its create left its name");
}

/* Both together: a forking wrapper and a named object. */
KT(spawn, named_shm_behind_a_forking_wrapper)
{
	wrappers();
	knit_pool_t *p = spawn(2, g_fork_prefix, KNIT_PROC_NAMED_SHM);
	echo_round_trips(p, 10);
	destroy_reaps_all(p);
	cr_assert_eq(shm_names(getpid()), 0);
	wrappers_done();
}

/* A failed create leaves no name either. */
KT(spawn, named_shm_failed_create_leaves_no_name)
{
	const char *const missing[] = {"no-such-knit-wrapper", NULL};
	knit_pool_t *p = NULL;
	cr_assert_eq(spawn_try(1, missing, KNIT_PROC_NAMED_SHM, &p), -KNIT_ENOENT);
	cr_assert_eq(shm_names(getpid()), 0);
}

/* ---- descriptors ------------------------------------------------------------------ */

/* In a child of the test (no Criterion there: stderr and the exit status
 * say what failed). Worker `pid` holds exactly 0, 1, 2 and 5 (its lane's
 * bridge eventfd; knit-worker(8)) and nothing that is the host's pipe
 * (dev, ino of ends[0..2)). 0 or the number of the failed check. */
static int worker_fds_ok(int64_t pid, const struct stat *ends, const char *when)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "%s: cannot open %s\n", when, dir);
		return 20;
	}
	uint64_t seen = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		const int fd = atoi(e->d_name);
		char path[128], target[256];
		snprintf(path, sizeof path, "%s/%d", dir, fd);
		const ssize_t n = readlink(path, target, sizeof target - 1);
		target[n > 0 ? n : 0] = 0;
		struct stat st;
		if (stat(path, &st) == 0)
			for (int i = 0; i < 2; i++)
				if (st.st_dev == ends[i].st_dev && st.st_ino == ends[i].st_ino) {
					fprintf(stderr,
						"%s: the worker holds the host's pipe on %d (%s)\n",
						when, fd, target);
					rc = rc ? rc : 21;
					break; /* the two ends share one inode */
				}
		if (fd != 0 && fd != 1 && fd != 2 && fd != 5) {
			fprintf(stderr,
				"%s: the worker holds descriptor %d (%s), not one knit-worker(8) "
				"lists\n",
				when, fd, target);
			rc = rc ? rc : 22;
		}
		if (fd < 64)
			seen |= 1ull << fd;
	}
	closedir(d);
	if (rc == 0 && seen != 0x27) {
		fprintf(stderr, "%s: the worker lacks one of 0, 1, 2, 5 (mask 0x%llx)\n", when,
			(unsigned long long)seen);
		rc = 23;
	}
	return rc;
}

static int child_pid_call(knit_pool_t *p, int64_t *pid)
{
	knit_value_t none = kt_none();
	knit_completion_t c;
	if (knit_call(p, knit_pool_task_id(p, "pid"), &none, &c, (int64_t)(KT_BOUND_S * 1e9)) !=
		    0 ||
	    c.status != 0)
		return 0;
	*pid = c.result.i64;
	return 1;
}

/* A fresh host (every descriptor above 2 closed), whose pipe() returns 3
 * and 4 without O_CLOEXEC, as in a plain program; it creates a pool, looks
 * at its worker, crashes it and looks at the respawned one. */
static int host_with_pipe(uint32_t proc_flags)
{
	if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
		return 2;
	int pfd[2];
	if (pipe(pfd) != 0 || pfd[0] != 3 || pfd[1] != 4)
		return 3;
	struct stat ends[2];
	if (fstat(pfd[0], &ends[0]) != 0 || fstat(pfd[1], &ends[1]) != 0)
		return 4;
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.proc_flags = proc_flags;
	knit_pool_t *p = NULL;
	if (knit_pool_create(&o, NULL, 0, &p) != 0) {
		fprintf(stderr, "create: %s\n", knit_last_error());
		return 5;
	}
	int64_t first = 0, second = 0;
	if (!child_pid_call(p, &first))
		return 6;
	int rc = worker_fds_ok(first, ends, "first start");
	knit_value_t none = kt_none();
	knit_completion_t c;
	if (knit_call(p, knit_pool_task_id(p, "exit"), &none, &c, (int64_t)(KT_BOUND_S * 1e9)) !=
		    0 ||
	    c.status != -KNIT_ECRASHED)
		return 7;
	if (!child_pid_call(p, &second) || second == first)
		return 8;
	const int rc2 = worker_fds_ok(second, ends, "respawned");
	if (knit_pool_destroy(p) != 0)
		return 9;
	return rc ? rc : rc2;
}

static void descriptors_case(uint32_t proc_flags)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(20);
		_exit(host_with_pipe(proc_flags));
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the host child was killed by signal %d",
		  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	cr_assert_eq(WEXITSTATUS(st), 0, "the host child failed check %d (its stderr says why)",
		     WEXITSTATUS(st));
}

KT(spawn, workers_hold_no_host_descriptor) { descriptors_case(0); }
KT(spawn, named_shm_workers_hold_no_host_descriptor) { descriptors_case(KNIT_PROC_NAMED_SHM); }

/* ---- a wrapper that does not stay the worker's parent ------------------------------ */

/* Live processes but us whose environment holds `tag` ("KEY=VALUE"). */
static int tagged_processes(const char *tag)
{
	DIR *d = opendir("/proc");
	cr_assert_not_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoll(e->d_name) == getpid() ||
		    !alive(atoll(e->d_name)))
			continue;
		char path[300], env[8192];
		snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		const size_t got = fread(env, 1, sizeof env - 1, f);
		fclose(f);
		for (size_t at = 0; at < got; at += strlen(env + at) + 1) {
			env[got] = 0;
			if (strcmp(env + at, tag) == 0) {
				n++;
				break;
			}
		}
	}
	closedir(d);
	return n;
}

/* setsid --fork forks the worker and exits at once: the worker is nobody's
 * child of ours, so neither the host's kill of the wrapper nor its
 * parent-death signal would ever end it. Refused at create with
 * -KNIT_EINVAL and why, and no detached worker is left. */
KT(spawn, prefix_that_forks_and_exits_is_refused)
{
	char tag[64];
	snprintf(tag, sizeof tag, "KT_DETACH_TAG=%d", (int)getpid());
	cr_assert_eq(putenv(tag), 0);
	/* The count sees workers: two, behind a wrapper that execs (the tag
	 * marks the workers: they inherit the environment). */
	const char *const env[] = {"env", NULL};
	knit_pool_t *p = spawn(2, env, KNIT_PROC_INHERIT_ENV);
	cr_assert_eq(tagged_processes(tag), 2);
	kt_destroy(p);
	cr_assert_eq(tagged_processes(tag), 0);
	const char *const prefix[] = {"setsid", "--fork", NULL};
	const int rc = spawn_try(2, prefix, KNIT_PROC_INHERIT_ENV, &p);
	if (rc == 0)
		knit_pool_destroy(p);
	const char *m = knit_last_error();
	cr_expect_eq(rc, -KNIT_EINVAL, "create: %d (%s), message \"%s\"", rc, knit_strerror(rc), m);
	cr_expect(strstr(m, "worker_prefix") != NULL &&
			  strstr(m, "stay the worker's parent") != NULL,
		  "message \"%s\"", m);
	cr_assert_eq(kt_count_children(), 0);
	/* A refused worker exits by itself: wait (bounded) for none to live. */
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	int left;
	while ((left = tagged_processes(tag)) != 0 && kt_now_ns() < end)
		kt_sleep_ms(20);
	cr_assert_eq(left, 0, "%d detached worker(s) outlived the create", left);
}
