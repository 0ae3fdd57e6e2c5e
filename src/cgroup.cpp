// SPDX-License-Identifier: MIT
// src/cgroup.cpp - a process pool's own cgroup v2 child (src/cgroup.h has
// the contract).
#include "src/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "src/cgroup.h"
#include "src/error.h"
#include "src/sysfile.h"

namespace knit::detail {

namespace {

constexpr long kCgroup2Magic = 0x63677270; // CGROUP2_SUPER_MAGIC (linux/magic.h)
constexpr uint32_t kPeriodDefault = 100000;
constexpr uint32_t kPeriodMin = 1000, kPeriodMax = 1000000; // the kernel's bounds (µs)
// Names tried for the child before create gives up (a stale child of a
// killed host with our pid and number stays until someone removes it).
constexpr uint32_t kNameTries = 64;

uint32_t g_seq; // the children this process made (atomic: pools are made on any thread)

// The first line of DIR/NAME into buf (newline cut), or "" if unreadable.
void read_line(const char *dir, const char *name, char *buf, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	sysfile_line(path, buf, n);
}

// Write text into DIR/NAME (one write). 0 or the errno.
int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return sysfile_write(path, text);
}

// Set one limit file of the child, whose controller must be enabled for
// it. 0 or the code, the message recorded.
int set_limit(CgroupHost *c, const char *file, const char *controller, const char *value)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", c->path, file);
	if (access(path, F_OK) != 0) {
		char have[256], sub[256];
		read_line(c->parent, "cgroup.controllers", have, sizeof have);
		read_line(c->parent, "cgroup.subtree_control", sub, sizeof sub);
		return error_set(-KNIT_EINVAL,
				 "sandbox->cgroup: %s cannot be set: the %s controller is not "
				 "enabled for the children of %s (its cgroup.controllers: "
				 "\"%s\", cgroup.subtree_control: \"%s\")",
				 file, controller, c->parent, have, sub);
	}
	const int e = write_file(c->path, file, value);
	if (e != 0)
		return error_set_errno(-KNIT_ESYSTEM, e,
				       "sandbox->cgroup: cannot write \"%s\" to %s", value, path);
	return 0;
}

void sleep_ms(long ms)
{
	struct timespec t = {0, ms * 1000000};
	while (nanosleep(&t, &t) != 0 && errno == EINTR) {
	}
}

} // namespace

int cgroup_take(const knit_sandbox_t &s, CgroupHost *out)
{
	memset(out, 0, sizeof *out);
	out->procs_fd = -1;
	const bool limits = s.cgroup_memory_max != 0 || s.cgroup_pids_max != 0 ||
			    s.cgroup_cpu_max_us != 0 || s.cgroup_cpu_period_us != 0;
	if (s.cgroup == nullptr) {
		if (limits)
			return error_set(-KNIT_EINVAL,
					 "sandbox->cgroup_* limits need sandbox->cgroup (a cgroup "
					 "v2 directory)");
		return 0;
	}
	if (s.cgroup_cpu_period_us != 0 && s.cgroup_cpu_max_us == 0)
		return error_set(-KNIT_EINVAL,
				 "sandbox->cgroup_cpu_period_us needs sandbox->cgroup_cpu_max_us");
	if (s.cgroup_cpu_period_us != 0 &&
	    (s.cgroup_cpu_period_us < kPeriodMin || s.cgroup_cpu_period_us > kPeriodMax))
		return error_set(-KNIT_EINVAL,
				 "sandbox->cgroup_cpu_period_us %u is out of range (%u..%u)",
				 s.cgroup_cpu_period_us, kPeriodMin, kPeriodMax);
	if (s.cgroup_cpu_max_us != 0 && s.cgroup_cpu_max_us < kPeriodMin)
		return error_set(-KNIT_EINVAL, "sandbox->cgroup_cpu_max_us %u is below %u",
				 s.cgroup_cpu_max_us, kPeriodMin);
	const size_t n = strlen(s.cgroup);
	if (n == 0 || n > 3000)
		return error_set(-KNIT_EINVAL, "sandbox->cgroup: a path of %zu bytes (1..3000)", n);
	struct statfs fs;
	struct stat st;
	if (statfs(s.cgroup, &fs) != 0 || stat(s.cgroup, &st) != 0)
		return error_set_errno(-KNIT_EINVAL, errno, "sandbox->cgroup \"%.200s\"", s.cgroup);
	if (fs.f_type != kCgroup2Magic || !S_ISDIR(st.st_mode))
		return error_set(-KNIT_EINVAL,
				 "sandbox->cgroup \"%.200s\" is not a cgroup v2 directory (%s)",
				 s.cgroup,
				 !S_ISDIR(st.st_mode) ? "not a directory"
						      : "its file system is not cgroup2");
	out->parent = strdup(s.cgroup);
	if (out->parent == nullptr)
		return error_set(-KNIT_ENOMEM, "out of memory for the sandbox's cgroup");
	out->memory_max = s.cgroup_memory_max;
	out->pids_max = s.cgroup_pids_max;
	out->cpu_max_us = s.cgroup_cpu_max_us;
	out->cpu_period_us = s.cgroup_cpu_period_us != 0 ? s.cgroup_cpu_period_us : kPeriodDefault;
	return 0;
}

int cgroup_create(CgroupHost *c)
{
	if (c->parent == nullptr)
		return 0;
	const size_t len = strlen(c->parent) + 64;
	c->path = static_cast<char *>(malloc(len));
	if (c->path == nullptr)
		return error_set(-KNIT_ENOMEM, "out of memory for the sandbox's cgroup");
	int e = EEXIST;
	for (uint32_t i = 0; i < kNameTries && e == EEXIST; i++) {
		const uint32_t seq = __atomic_fetch_add(&g_seq, 1, __ATOMIC_RELAXED);
		snprintf(c->path, len, "%s/knit-%d-%u", c->parent, (int)getpid(), seq);
		e = mkdir(c->path, 0755) == 0 ? 0 : errno;
	}
	if (e != 0) {
		free(c->path);
		c->path = nullptr;
		return error_set_errno(e == EACCES || e == EPERM || e == EROFS ? -KNIT_EACCES
									       : -KNIT_ESYSTEM,
				       e, "sandbox->cgroup: cannot make a child of %s", c->parent);
	}
	char v[64];
	int rc = 0;
	if (c->memory_max != 0) {
		snprintf(v, sizeof v, "%llu", (unsigned long long)c->memory_max);
		rc = set_limit(c, "memory.max", "memory", v);
	}
	if (rc == 0 && c->pids_max != 0) {
		snprintf(v, sizeof v, "%llu", (unsigned long long)c->pids_max);
		rc = set_limit(c, "pids.max", "pids", v);
	}
	if (rc == 0 && c->cpu_max_us != 0) {
		snprintf(v, sizeof v, "%u %u", c->cpu_max_us, c->cpu_period_us);
		rc = set_limit(c, "cpu.max", "cpu", v);
	}
	if (rc == 0) {
		char procs[4096];
		snprintf(procs, sizeof procs, "%s/cgroup.procs", c->path);
		c->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (c->procs_fd < 0)
			rc = error_set_errno(-KNIT_ESYSTEM, errno,
					     "sandbox->cgroup: cannot open %s", procs);
	}
	if (rc != 0)
		cgroup_remove(c); // empty still: nothing was placed in it
	return rc;
}

void cgroup_remove(CgroupHost *c)
{
	if (c->procs_fd >= 0)
		close(c->procs_fd);
	c->procs_fd = -1;
	if (c->path == nullptr)
		return;
	if (rmdir(c->path) != 0 && errno == EBUSY) {
		// Not empty: what a task started and left (the workers are
		// reaped). cgroup.kill (Linux 5.14) ends them all; the child is
		// empty once the kernel says it is not populated.
		(void)write_file(c->path, "cgroup.kill", "1");
		for (int i = 0; i < 200; i++) {
			char ev[256];
			read_line(c->path, "cgroup.events", ev, sizeof ev);
			if (strcmp(ev, "populated 0") == 0 && rmdir(c->path) == 0)
				break;
			sleep_ms(5);
		}
	}
	free(c->path);
	c->path = nullptr;
}

void cgroup_free(CgroupHost *c)
{
	if (c->procs_fd >= 0)
		close(c->procs_fd);
	free(c->path);
	free(c->parent);
	memset(c, 0, sizeof *c);
	c->procs_fd = -1;
}

int64_t cgroup_pool_oom_kills(const CgroupHost &c)
{
	if (c.path == nullptr)
		return -1;
	char path[4096 + 32];
	snprintf(path, sizeof path, "%s/memory.events", c.path);
	return sysfile_keyed(path, "oom_kill");
}

int64_t cgroup_self_oom_kills()
{
	char buf[4096];
	if (sysfile_read("/proc/self/cgroup", buf, sizeof buf) <= 0)
		return -1;
	// One line per hierarchy; v2's is "0::PATH".
	for (const char *line = buf; *line != 0;) {
		const size_t len = strcspn(line, "\n");
		if (strncmp(line, "0::", 3) == 0) {
			const int rel = (int)len - 3;
			const bool root = rel == 1 && line[3] == '/';
			char path[4096 + 64];
			snprintf(path, sizeof path, "/sys/fs/cgroup%.*s/memory.events",
				 root ? 0 : rel, line + 3);
			return sysfile_keyed(path, "oom_kill");
		}
		if (line[len] == 0)
			break;
		line += len + 1;
	}
	return -1;
}

int cgroup_enter(int fd, char *why, size_t why_size)
{
	// "0": the writing process (cgroup v2, cgroup.procs).
	const ssize_t w = write(fd, "0", 1);
	if (w != 1) {
		snprintf(why, why_size, "cannot enter the pool's cgroup: errno %d",
			 w < 0 ? errno : EIO);
		close(fd);
		return KNIT_ESYSTEM;
	}
	close(fd);
	return 0;
}

} // namespace knit::detail
