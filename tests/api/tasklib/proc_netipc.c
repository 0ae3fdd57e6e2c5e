/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_netipc.c - tasks that reach for what a sandbox's
 * namespaces and cgroup (knit_sandbox_t.namespaces, .cgroup) take away
 * (built as build/tests/lib/proc_netipc.so, for test_sandbox_ns.c). Each
 * returns 0 (or its answer) when the kernel let it, an error value with
 * the errno as its code when the kernel refused.
 *
 * name       arg             what it does
 * echo       any             result = arg
 * connect    I64 port        TCP connect to 127.0.0.1:port (then close)
 * unix       STRING name     connect to the abstract AF_UNIX socket "\0name"
 * shm_stat   I64 shmid       shmctl(IPC_STAT) of a SysV shared memory segment
 * msg_stat   I64 msqid       msgctl(IPC_STAT) of a SysV message queue
 * mq_open    STRING name     mq_open(name, O_RDONLY) of a POSIX message queue
 * cgroup     -               STRING: this process's "0::" line of /proc/self/cgroup
 * ids        -               I64: uid << 32 | gid, as the process sees them
 * caps       -               I64: CapEff | CapPrm | CapBnd | CapAmb of /proc/self/status (0: none)
 * orphan     -               I64: the pid of a grandchild left sleeping (60 s)
 * die        -               _exit(3): the worker dies running it
 * eat        I64 MiB         touches that much fresh memory (an OOM kill past memory.max)
 * forks      I64 n           forks n children at once (each waits), I64: how many forked
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "knitting.h"

static int refused(knit_value_t *ret, int e)
{
	static char msg[64];
	snprintf(msg, sizeof msg, "refused: errno %d", e);
	ret->type = KNIT_VALUE_ERROR;
	ret->code = e;
	ret->data = msg;
	ret->len = strlen(msg);
	return 1;
}

static int ok(knit_value_t *ret, int64_t v)
{
	ret->type = KNIT_VALUE_I64;
	ret->i64 = v;
	return 0;
}

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

static int t_connect(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return refused(ret, errno);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)arg->i64);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	const int rc = connect(s, (const struct sockaddr *)&a, sizeof a);
	const int e = errno;
	close(s);
	return rc == 0 ? ok(ret, 0) : refused(ret, e);
}

static int t_unix(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	const size_t n = arg->len < sizeof a.sun_path - 1 ? arg->len : sizeof a.sun_path - 1;
	memcpy(a.sun_path + 1, arg->data, n); /* sun_path[0] = 0: abstract */
	const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return refused(ret, errno);
	const int rc = connect(s, (const struct sockaddr *)&a,
			       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	const int e = errno;
	close(s);
	return rc == 0 ? ok(ret, 0) : refused(ret, e);
}

static int t_shm_stat(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct shmid_ds ds;
	return shmctl((int)arg->i64, IPC_STAT, &ds) == 0 ? ok(ret, (int64_t)ds.shm_segsz)
							 : refused(ret, errno);
}

static int t_msg_stat(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct msqid_ds ds;
	return msgctl((int)arg->i64, IPC_STAT, &ds) == 0 ? ok(ret, 0) : refused(ret, errno);
}

static int t_mq_open(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	char name[128];
	const size_t n = arg->len < sizeof name - 1 ? arg->len : sizeof name - 1;
	memcpy(name, arg->data, n);
	name[n] = 0;
	const mqd_t q = mq_open(name, O_RDONLY);
	if (q == (mqd_t)-1)
		return refused(ret, errno);
	mq_close(q);
	return ok(ret, 0);
}

static int t_cgroup(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	static char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (f == NULL)
		return refused(ret, errno);
	line[0] = 0;
	while (fgets(line, sizeof line, f) != NULL && strncmp(line, "0::", 3) != 0)
		line[0] = 0;
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	ret->type = KNIT_VALUE_STRING;
	ret->data = line;
	ret->len = strlen(line);
	return 0;
}

static int t_ids(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	return ok(ret, (int64_t)getuid() << 32 | (int64_t)getgid());
}

static int t_caps(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	FILE *f = fopen("/proc/self/status", "re");
	if (f == NULL)
		return refused(ret, errno);
	char line[256];
	unsigned long long all = 0, v;
	int seen = 0;
	while (fgets(line, sizeof line, f) != NULL)
		if ((sscanf(line, "CapEff: %llx", &v) == 1 ||
		     sscanf(line, "CapPrm: %llx", &v) == 1 ||
		     sscanf(line, "CapBnd: %llx", &v) == 1 ||
		     sscanf(line, "CapAmb: %llx", &v) == 1)) {
			all |= v;
			seen++;
		}
	fclose(f);
	return seen == 4 ? ok(ret, (int64_t)all) : refused(ret, EIO);
}

static int t_orphan(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	int p[2];
	if (pipe(p) != 0)
		return refused(ret, errno);
	const pid_t c = fork();
	if (c < 0)
		return refused(ret, errno);
	if (c == 0) {
		const pid_t g = fork();
		if (g == 0) {
			close(p[0]);
			close(p[1]);
			sleep(60);
			_exit(0);
		}
		(void)!write(p[1], &g, sizeof g);
		_exit(0);
	}
	close(p[1]);
	pid_t g = -1;
	const ssize_t got = read(p[0], &g, sizeof g);
	close(p[0]);
	waitpid(c, NULL, 0);
	return got == (ssize_t)sizeof g && g > 0 ? ok(ret, g) : refused(ret, EIO);
}

static int t_die(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	(void)ret;
	_exit(3);
}

static int t_eat(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	const size_t mib = (size_t)arg->i64;
	for (size_t i = 0; i < mib; i++) {
		char *m = malloc(1 << 20);
		if (m == NULL)
			return refused(ret, ENOMEM);
		memset(m, (int)i | 1, 1 << 20); /* kept: the point is to hold it */
	}
	return ok(ret, (int64_t)mib);
}

static int t_forks(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	int p[2];
	if (pipe(p) != 0)
		return refused(ret, errno);
	int64_t made = 0;
	int e = 0;
	for (int64_t i = 0; i < arg->i64; i++) {
		const pid_t c = fork();
		if (c < 0) {
			e = errno;
			break;
		}
		if (c == 0) {
			char b;
			close(p[1]);
			(void)!read(p[0], &b, 1); /* until the parent closes its end */
			_exit(0);
		}
		made++;
	}
	close(p[0]);
	close(p[1]);
	while (wait(NULL) > 0) {
	}
	return e != 0 ? refused(ret, e) : ok(ret, made);
}

static const knit_task_t tasks[] = {
	{"echo", t_echo, 0, 0},         {"connect", t_connect, 0, 0},
	{"unix", t_unix, 0, 0},         {"shm_stat", t_shm_stat, 0, 0},
	{"msg_stat", t_msg_stat, 0, 0}, {"mq_open", t_mq_open, 0, 0},
	{"cgroup", t_cgroup, 0, 0},     {"ids", t_ids, 0, 0},
	{"caps", t_caps, 0, 0},         {"orphan", t_orphan, 0, 0},
	{"die", t_die, 0, 0},           {"eat", t_eat, 0, 0},
	{"forks", t_forks, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	.size = sizeof(knit_task_library_t),
	.version = KNIT_TASK_LIBRARY_VERSION,
	.tasks = tasks,
	.ntasks = sizeof tasks / sizeof tasks[0],
};
