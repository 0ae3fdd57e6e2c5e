/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_sandbox_ns.c - a sandbox's namespaces and cgroup (#28):
 * with KNIT_SANDBOX_NEWNET a task's connect to the host's 127.0.0.1
 * listener or abstract AF_UNIX socket fails (and only that call), with KNIT_SANDBOX_NEWIPC the
 * host's SysV shm, message queue and POSIX mqueue are out of reach, each reachable without the
 * option (so the test can fail); a named-shm pool still works in an IPC namespace; an unprivileged
 * user gets them through a user namespace of the worker's own. The cgroup: option errors, the child
 * made and removed, every worker (respawned ones too) in it, leftovers of a
 * task killed at destroy, a limit whose controller is missing refused, and
 * (where the v2 directory gives memory and pids to its children) an OOM
 * kill reported as KNIT_DEATH_OOM and pids.max enforced.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

#define NS_LIB KT_BUILD_DIR "/tests/lib/proc_netipc.so"

static knit_pool_t *ns_pool_flags(const knit_sandbox_t *sb, uint32_t workers, uint32_t flags)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.task_library = NS_LIB;
	o.respawn_max = 100;
	o.proc_flags = flags;
	o.sandbox = sb;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "create: %s: %s", knit_strerror(rc), knit_last_error());
	return p;
}

static knit_pool_t *ns_pool(const knit_sandbox_t *sb) { return ns_pool_flags(sb, 1, 0); }

static uint64_t deaths(knit_pool_t *p)
{
	knit_pool_stats_t s;
	kt_stats(p, &s);
	uint64_t n = 0;
	for (int i = 0; i < KNIT_DEATH_CAUSE_MAX; i++)
		n += s.deaths[i];
	return n;
}

/* A call's status and, refused, its errno (the error value's code). */
static int call_errno(knit_pool_t *p, const char *task, knit_value_t arg)
{
	knit_completion_t c = kt_proc_call(p, task, arg);
	int e = -1;
	if (c.status == 0)
		e = 0;
	else if (c.status == -KNIT_ETASK)
		e = (int)c.result.code;
	else
		cr_assert_fail("%s: %s", task, knit_strerror(c.status));
	knit_completion_release(p, &c);
	return e;
}

/* A TCP listener on 127.0.0.1 (its port in *port). */
static int listener(int *port)
{
	const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(s, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(s, 16), 0);
	socklen_t n = sizeof a;
	cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &n), 0);
	*port = ntohs(a.sin_port);
	return s;
}

/* The task's connect with namespaces ns: its errno (0: connected). */
static int connect_with(uint32_t ns, int port, uint64_t *dead)
{
	knit_sandbox_t sb = {.size = sizeof sb, .namespaces = ns};
	knit_pool_t *p = ns_pool(&sb);
	const int e = call_errno(p, "connect", kt_i64(port));
	/* Only that call: the next one runs on the same worker. */
	knit_completion_t c = kt_proc_call(p, "echo", kt_i64(7));
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.i64, 7);
	*dead = deaths(p);
	kt_destroy(p);
	return e;
}

KT(sandbox_ns, network_namespace_cuts_the_hosts_loopback)
{
	int port;
	const int s = listener(&port);
	uint64_t dead = 1;
	cr_assert_eq(connect_with(0, port, &dead), 0, "without the namespace the task connects");
	cr_assert_eq(dead, 0);
	const int e = connect_with(KNIT_SANDBOX_NEWNET, port, &dead);
	cr_assert(e == ENETUNREACH || e == ECONNREFUSED, "connect in the namespace: errno %d", e);
	cr_assert_eq(dead, 0, "a refused connect is no death");
	/* The IPC namespace alone leaves the network as it is. */
	cr_assert_eq(connect_with(KNIT_SANDBOX_NEWIPC, port, &dead), 0);
	close(s);
}

/* Abstract AF_UNIX sockets belong to the network namespace: a host's
 * listener there (a D-Bus or X11 socket, say) is out of reach too. */
KT(sandbox_ns, network_namespace_cuts_the_hosts_abstract_unix_sockets)
{
	char name[64];
	snprintf(name, sizeof name, "knit-test-ns-%d", (int)getpid());
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path + 1, name, strlen(name));
	const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(s, 0);
	cr_assert_eq(bind(s, (struct sockaddr *)&a,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))),
		     0, "bind: errno %d", errno);
	cr_assert_eq(listen(s, 16), 0);
	for (int with = 0; with < 2; with++) {
		knit_sandbox_t sb = {.size = sizeof sb,
				     .namespaces = with ? KNIT_SANDBOX_NEWNET : 0};
		knit_pool_t *p = ns_pool(&sb);
		const int e = call_errno(p, "unix", kt_str(name, strlen(name)));
		if (!with)
			cr_assert_eq(e, 0, "without the namespace: errno %d", e);
		else
			cr_assert_eq(e, ECONNREFUSED, "in the namespace: errno %d", e);
		cr_assert_eq(deaths(p), 0);
		kt_destroy(p);
	}
	close(s);
}

KT(sandbox_ns, ipc_namespace_hides_the_hosts_sysv_and_mqueues)
{
	const int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	cr_assert_geq(shm, 0, "shmget: errno %d", errno);
	const int msq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	cr_assert_geq(msq, 0, "msgget: errno %d", errno);
	char mq[64];
	snprintf(mq, sizeof mq, "/knit-test-ns-%d", (int)getpid());
	struct mq_attr at = {.mq_maxmsg = 1, .mq_msgsize = 8};
	const mqd_t q = mq_open(mq, O_CREAT | O_EXCL | O_RDWR, 0600, &at);
	cr_assert_neq(q, (mqd_t)-1, "mq_open: errno %d", errno);

	for (int with = 0; with < 2; with++) {
		knit_sandbox_t sb = {.size = sizeof sb,
				     .namespaces = with ? KNIT_SANDBOX_NEWIPC : 0};
		knit_pool_t *p = ns_pool(&sb);
		const int es = call_errno(p, "shm_stat", kt_i64(shm));
		const int em = call_errno(p, "msg_stat", kt_i64(msq));
		const int eq = call_errno(p, "mq_open", kt_str(mq, strlen(mq)));
		if (!with) {
			cr_assert_eq(es, 0, "shm without the namespace: errno %d", es);
			cr_assert_eq(em, 0, "msg without the namespace: errno %d", em);
			cr_assert_eq(eq, 0, "mqueue without the namespace: errno %d", eq);
		} else {
			cr_assert_eq(es, EINVAL, "shm in the namespace: errno %d", es);
			cr_assert_eq(em, EINVAL, "msg in the namespace: errno %d", em);
			cr_assert_eq(eq, ENOENT, "mqueue in the namespace: errno %d", eq);
		}
		cr_assert_eq(deaths(p), 0);
		kt_destroy(p);
	}
	mq_close(q);
	mq_unlink(mq);
	shmctl(shm, IPC_RMID, NULL);
	msgctl(msq, IPC_RMID, NULL);
}

KT(sandbox_ns, named_shm_and_respawn_in_both_namespaces)
{
	/* A named POSIX shm object is a /dev/shm file: no IPC namespace
	 * scopes it, so a named pool boots and serves in one, and so does
	 * the worker respawned after a death. */
	knit_sandbox_t sb = {.size = sizeof sb,
			     .namespaces = KNIT_SANDBOX_NEWNET | KNIT_SANDBOX_NEWIPC};
	knit_pool_t *p = ns_pool_flags(&sb, 2, KNIT_PROC_NAMED_SHM);
	for (int i = 0; i < 20; i++) {
		knit_completion_t c = kt_proc_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.status, 0, "%s", knit_strerror(c.status));
		cr_assert_eq(c.result.i64, i);
	}
	knit_completion_t c = kt_proc_call(p, "die", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	int port;
	const int s = listener(&port);
	for (int i = 0; i < 4; i++) {
		const int e = call_errno(p, "connect", kt_i64(port));
		cr_assert(e == ENETUNREACH || e == ECONNREFUSED, "errno %d", e);
	}
	close(s);
	kt_destroy(p);
}

KT(sandbox_ns, unprivileged_user_gets_them_in_a_user_namespace)
{
	/* In a child that is no longer root: the worker must go through a
	 * user namespace of its own, keeping its uid and gid. */
	int port;
	const int s = listener(&port);
	int res[2];
	cr_assert_eq(pipe(res), 0);
	const pid_t c = fork();
	cr_assert_geq(c, 0);
	if (c == 0) {
		close(res[0]);
		char msg[512] = "";
		int code = 0;
		if (getuid() == 0 &&
		    (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
			snprintf(msg, sizeof msg, "cannot drop to uid 65534: errno %d", errno);
			code = 2;
		}
		knit_pool_t *p = NULL;
		if (code == 0) {
			knit_sandbox_t sb = {.size = sizeof sb,
					     .namespaces =
						     KNIT_SANDBOX_NEWNET | KNIT_SANDBOX_NEWIPC};
			knit_pool_options_t o;
			kt_proc_opts(&o, 1);
			o.task_library = NS_LIB;
			o.sandbox = &sb;
			const int rc = knit_pool_create(&o, NULL, 0, &p);
			if (rc == -KNIT_ESYSTEM) {
				snprintf(msg, sizeof msg, "%s", knit_last_error());
				code = 1; /* refused by the kernel: skip */
			} else if (rc != 0) {
				snprintf(msg, sizeof msg, "create: %s: %s", knit_strerror(rc),
					 knit_last_error());
				code = 3;
			}
		}
		if (code == 0) {
			knit_value_t a = kt_i64(port);
			knit_completion_t cc;
			const uint32_t tc = (uint32_t)knit_pool_task_id(p, "connect");
			const uint32_t ti = (uint32_t)knit_pool_task_id(p, "ids");
			int rc = knit_call(p, tc, &a, &cc, 10000000000ll);
			if (rc != 0 || cc.status != -KNIT_ETASK ||
			    (cc.result.code != ENETUNREACH && cc.result.code != ECONNREFUSED)) {
				snprintf(msg, sizeof msg, "connect: rc %d status %d", rc,
					 cc.status);
				code = 3;
			} else {
				knit_completion_release(p, &cc);
				knit_value_t none = {.type = KNIT_VALUE_NONE};
				rc = knit_call(p, ti, &none, &cc, 10000000000ll);
				const int64_t want = (int64_t)getuid() << 32 | getgid();
				if (rc != 0 || cc.status != 0 || cc.result.i64 != want) {
					snprintf(msg, sizeof msg, "ids: rc %d status %d %llx", rc,
						 cc.status, (unsigned long long)cc.result.i64);
					code = 3;
				}
				/* The user namespace's capabilities are gone, all sets. */
				const uint32_t tk = (uint32_t)knit_pool_task_id(p, "caps");
				rc = knit_call(p, tk, &none, &cc, 10000000000ll);
				if (code == 0 &&
				    (rc != 0 || cc.status != 0 || cc.result.i64 != 0)) {
					snprintf(msg, sizeof msg, "caps: rc %d status %d %llx", rc,
						 cc.status, (unsigned long long)cc.result.i64);
					code = 3;
				}
			}
			knit_pool_destroy(p);
		}
		(void)!write(res[1], msg, strlen(msg));
		_exit(code);
	}
	close(res[1]);
	char msg[512];
	const ssize_t n = read(res[0], msg, sizeof msg - 1);
	msg[n > 0 ? n : 0] = 0;
	close(res[0]);
	int st = 0;
	cr_assert_eq(waitpid(c, &st, 0), c);
	close(s);
	cr_assert(WIFEXITED(st));
	if (WEXITSTATUS(st) == 1) {
		char why[600];
		snprintf(why, sizeof why, "user namespaces refused here: %s", msg);
		KT_SKIP(why);
	}
	cr_assert_eq(WEXITSTATUS(st), 0, "%s", msg);
}

KT(sandbox_ns, namespace_option_errors)
{
	knit_sandbox_t sb = {.size = sizeof sb, .namespaces = 1u << 5};
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = NS_LIB;
	o.sandbox = &sb;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "sandbox->namespaces 0x20 has unknown bits") != NULL,
		  "%s", knit_last_error());
	sb.namespaces = KNIT_SANDBOX_NEWNET;
	sb.reserved1 = 1;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "reserved1") != NULL, "%s", knit_last_error());
	/* A struct from before the members: none of them, read as zero. */
	sb.size = offsetof(knit_sandbox_t, namespaces);
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), 0, "%s", knit_last_error());
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* ---- the cgroup ------------------------------------------------------------------ */

/* This process's cgroup v2 directory (the cgroup2 mount, then our "0::"
 * path), or "" with why. */
static void own_v2_dir(char *dir, size_t n, char *why, size_t wn)
{
	dir[0] = 0;
	char mnt[1024] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");
	cr_assert(f != NULL);
	char line[4096];
	while (fgets(line, sizeof line, f) != NULL) {
		const char *sep = strstr(line, " - cgroup2 ");
		if (sep == NULL)
			continue;
		char a[64], b[64], c[64], root[1024], point[1024];
		if (sscanf(line, "%63s %63s %63s %1023s %1023s", a, b, c, root, point) == 5) {
			snprintf(mnt, sizeof mnt, "%s", point);
			break;
		}
	}
	fclose(f);
	if (mnt[0] == 0) {
		snprintf(why, wn, "no cgroup2 file system is mounted");
		return;
	}
	char rel[2048] = "";
	f = fopen("/proc/self/cgroup", "re");
	cr_assert(f != NULL);
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(rel, sizeof rel, "%.2000s",
				 strcmp(line + 3, "/") == 0 ? "" : line + 3);
		}
	fclose(f);
	snprintf(dir, n, "%s%s", mnt, rel);
	if (access(dir, W_OK) != 0) {
		snprintf(why, wn, "the cgroup v2 directory %s is not writable here", dir);
		dir[0] = 0;
	}
}

/* Children of dir named knit-OURPID-*: how many, the last one's name. */
static int our_children(const char *dir, char *last, size_t n)
{
	char pre[32];
	snprintf(pre, sizeof pre, "knit-%d-", (int)getpid());
	DIR *d = opendir(dir);
	cr_assert(d != NULL);
	int k = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, pre, strlen(pre)) == 0) {
			k++;
			if (last != NULL)
				snprintf(last, n, "%s", e->d_name);
		}
	closedir(d);
	return k;
}

/* The "0::" path of pid's cgroup. */
static void cgroup_of(int64_t pid, char *out, size_t n)
{
	char path[64], line[4096];
	snprintf(path, sizeof path, "/proc/%lld/cgroup", (long long)pid);
	out[0] = 0;
	FILE *f = fopen(path, "re");
	cr_assert(f != NULL, "%s", path);
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, n, "%.2000s", line + 3);
		}
	fclose(f);
}

/* The v2 directory's controllers given to its children include name? */
static bool subtree_has(const char *dir, const char *name)
{
	char path[1200], buf[512] = "";
	snprintf(path, sizeof path, "%s/cgroup.subtree_control", dir);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return false;
	if (fgets(buf, sizeof buf, f) == NULL)
		buf[0] = 0;
	fclose(f);
	for (char *t = strtok(buf, " \n"); t != NULL; t = strtok(NULL, " \n"))
		if (strcmp(t, name) == 0)
			return true;
	return false;
}

KT(sandbox_cgroup, option_errors)
{
	knit_sandbox_t sb = {.size = sizeof sb, .cgroup = "/tmp"};
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.task_library = NS_LIB;
	o.sandbox = &sb;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "\"/tmp\" is not a cgroup v2 directory") != NULL, "%s",
		  knit_last_error());
	sb.cgroup = "/nonexistent/knit";
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "No such file") != NULL, "%s", knit_last_error());
	sb.cgroup = NULL;
	sb.cgroup_memory_max = 1 << 30;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "need sandbox->cgroup") != NULL, "%s",
		  knit_last_error());
	sb.cgroup_memory_max = 0;
	sb.cgroup = "/tmp";
	sb.cgroup_cpu_max_us = 50000;
	sb.cgroup_cpu_period_us = 10;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "cgroup_cpu_period_us 10 is out of range") != NULL,
		  "%s", knit_last_error());
	sb.cgroup_cpu_max_us = 0;
	sb.cgroup_cpu_period_us = 100000;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL);
	cr_assert(strstr(knit_last_error(), "needs sandbox->cgroup_cpu_max_us") != NULL, "%s",
		  knit_last_error());
	cr_assert_eq(kt_count_children(), 0);
}

KT(sandbox_cgroup, workers_run_in_the_pools_child_removed_at_destroy)
{
	char dir[1024], why[1200];
	own_v2_dir(dir, sizeof dir, why, sizeof why);
	if (dir[0] == 0)
		KT_SKIP(why);
	cr_assert_eq(our_children(dir, NULL, 0), 0);
	knit_sandbox_t sb = {.size = sizeof sb, .cgroup = dir};
	knit_pool_t *p = ns_pool_flags(&sb, 2, 0);
	char name[256];
	cr_assert_eq(our_children(dir, name, sizeof name), 1, "the pool's child of %s", dir);
	char mine[2048], want[2400];
	cgroup_of(getpid(), mine, sizeof mine);
	snprintf(want, sizeof want, "%s/%s", strcmp(mine, "/") == 0 ? "" : mine, name);
	/* The host stays where it was; each worker is in the child. */
	cr_assert(strcmp(mine, want) != 0);
	knit_pool_stats_t s;
	kt_stats(p, &s);
	for (uint32_t i = 0; i < 2; i++) {
		char got[2048];
		cr_assert_gt(s.worker[i].pid, 0);
		cgroup_of(s.worker[i].pid, got, sizeof got);
		cr_assert_str_eq(got, want, "worker %u", i);
	}
	knit_completion_t c = kt_proc_call(p, "cgroup", kt_none());
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.len, strlen(want) + 3);
	cr_assert(memcmp((const char *)c.result.data + 3, want, strlen(want)) == 0);
	knit_completion_release(p, &c);
	/* A respawned worker enters it as well. */
	c = kt_proc_call(p, "die", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	for (int i = 0; i < 8; i++) {
		c = kt_proc_call(p, "cgroup", kt_none());
		cr_assert_eq(c.status, 0);
		cr_assert(memcmp((const char *)c.result.data + 3, want, strlen(want)) == 0,
			  "after the respawn: %.*s", (int)c.result.len,
			  (const char *)c.result.data);
		knit_completion_release(p, &c);
	}
	/* A task's orphan (not our child) is in it too, and destroy ends it. */
	c = kt_proc_call(p, "orphan", kt_none());
	cr_assert_eq(c.status, 0);
	const int64_t orphan = c.result.i64;
	char got[2048];
	cgroup_of(orphan, got, sizeof got);
	cr_assert_str_eq(got, want);
	kt_destroy(p);
	cr_assert_eq(our_children(dir, NULL, 0), 0, "the child is removed at destroy");
	/* Ended by cgroup.kill: gone, or a zombie its new parent has yet to reap. */
	char path[64], st[512] = "";
	snprintf(path, sizeof path, "/proc/%lld/stat", (long long)orphan);
	FILE *f = fopen(path, "re");
	if (f != NULL) {
		if (fgets(st, sizeof st, f) == NULL)
			st[0] = 0;
		fclose(f);
		const char *r = strrchr(st, ')');
		cr_assert(r != NULL && r[2] == 'Z', "the orphan lives on: %s", st);
	}
}

KT(sandbox_cgroup, a_limit_without_its_controller_is_refused)
{
	char dir[1024], why[1200];
	own_v2_dir(dir, sizeof dir, why, sizeof why);
	if (dir[0] == 0)
		KT_SKIP(why);
	const char *ctl[] = {"memory", "pids", "cpu"};
	int tried = 0;
	for (int i = 0; i < 3; i++) {
		if (subtree_has(dir, ctl[i]))
			continue;
		tried++;
		knit_sandbox_t sb = {.size = sizeof sb, .cgroup = dir};
		if (i == 0)
			sb.cgroup_memory_max = 256u << 20;
		else if (i == 1)
			sb.cgroup_pids_max = 64;
		else
			sb.cgroup_cpu_max_us = 50000;
		knit_pool_options_t o;
		kt_proc_opts(&o, 1);
		o.task_library = NS_LIB;
		o.sandbox = &sb;
		knit_pool_t *p = NULL;
		cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "%s",
			     knit_last_error());
		char want[64];
		snprintf(want, sizeof want, "the %s controller is not enabled", ctl[i]);
		cr_assert(strstr(knit_last_error(), want) != NULL, "%s", knit_last_error());
		cr_assert_eq(our_children(dir, NULL, 0), 0, "no child left behind");
		cr_assert_eq(kt_count_children(), 0);
	}
	if (tried == 0)
		KT_SKIP("every controller is enabled for the children of the v2 directory");
}

KT(sandbox_cgroup, a_worker_that_refuses_to_boot_leaves_no_child)
{
	char dir[1024], why[1200];
	own_v2_dir(dir, sizeof dir, why, sizeof why);
	if (dir[0] == 0)
		KT_SKIP(why);
	/* The child exists by the time the workers boot; theirs fails (a
	 * syscall name no architecture has), and create removes it. */
	const char *const unknown[] = {"no_such_syscall", NULL};
	knit_sandbox_t sb = {.size = sizeof sb,
			     .flags = KNIT_SANDBOX_SECCOMP,
			     .seccomp_allow = unknown,
			     .cgroup = dir};
	knit_pool_options_t o;
	kt_proc_opts(&o, 2);
	o.task_library = NS_LIB;
	o.sandbox = &sb;
	knit_pool_t *p = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &p), -KNIT_EINVAL, "%s", knit_last_error());
	cr_assert_eq(our_children(dir, NULL, 0), 0, "no child left behind");
	cr_assert_eq(kt_count_children(), 0);
}

KT(sandbox_cgroup, oom_kill_in_the_pools_cgroup_is_reported)
{
	char dir[1024], why[1200];
	own_v2_dir(dir, sizeof dir, why, sizeof why);
	if (dir[0] == 0)
		KT_SKIP(why);
	if (!subtree_has(dir, "memory")) {
		snprintf(why, sizeof why,
			 "the memory controller is not enabled for the children of %s "
			 "(cgroup.subtree_control): no memory.max to run into",
			 dir);
		KT_SKIP(why);
	}
	knit_sandbox_t sb = {.size = sizeof sb, .cgroup = dir, .cgroup_memory_max = 64u << 20};
	knit_pool_t *p = ns_pool(&sb);
	knit_completion_t c = kt_proc_call(p, "eat", kt_i64(512));
	cr_assert_eq(c.status, -KNIT_ECRASHED, "%s", knit_strerror(c.status));
	knit_completion_info_t info = {.size = sizeof info};
	cr_assert_eq(knit_completion_info(p, &c, &info), 0);
	cr_assert_eq(info.death, KNIT_DEATH_OOM, "death %u", info.death);
	knit_completion_release(p, &c);
	c = kt_proc_call(p, "echo", kt_i64(5));
	cr_assert_eq(c.status, 0);
	kt_destroy(p);
}

KT(sandbox_cgroup, pids_max_bounds_a_tasks_forks)
{
	char dir[1024], why[1200];
	own_v2_dir(dir, sizeof dir, why, sizeof why);
	if (dir[0] == 0)
		KT_SKIP(why);
	if (!subtree_has(dir, "pids")) {
		snprintf(why, sizeof why,
			 "the pids controller is not enabled for the children of %s "
			 "(cgroup.subtree_control): no pids.max to run into",
			 dir);
		KT_SKIP(why);
	}
	knit_sandbox_t sb = {.size = sizeof sb, .cgroup = dir, .cgroup_pids_max = 16};
	knit_pool_t *p = ns_pool(&sb);
	cr_assert_eq(call_errno(p, "forks", kt_i64(4)), 0);
	cr_assert_eq(call_errno(p, "forks", kt_i64(32)), EAGAIN);
	cr_assert_eq(call_errno(p, "forks", kt_i64(4)), 0, "only the call past the limit");
	kt_destroy(p);
}
