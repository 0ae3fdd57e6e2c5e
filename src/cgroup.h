// SPDX-License-Identifier: MIT
// src/cgroup.h - a process pool's own cgroup (knit_sandbox_t.cgroup): a
// child of the cgroup v2 directory the options name, made at create with
// the limits asked for (memory.max, pids.max, cpu.max), that every worker
// of the pool enters before it loads the task library, and that the host
// removes once the workers are reaped. The host reads its memory.events
// to tell an OOM kill (src/proc.cpp death_cause).
//
// Placement: the host opens the child's cgroup.procs (write only) and
// hands it to each worker it spawns (src/proc_spawn.cpp, boot_fd_cgroup);
// the worker writes "0" into it (cgroup_enter) first thing after its boot
// record is read, before the task library is loaded: no code of the
// library ever runs outside the pool's cgroup, and what a task forks is
// born in it.
#ifndef KNIT_SRC_CGROUP_H
#define KNIT_SRC_CGROUP_H

#include "src/common.h"

#include "knitting.h"

namespace knit::detail {

// The host's record (SandboxHost::cgroup). Zero-filled with procs_fd -1
// when unused: cgroup_take sets every member.
struct CgroupHost {
	char *parent;                  // the options' directory, copied; null: no cgroup
	char *path;                    // the child, once made (cgroup_create); null before
	int procs_fd;                  // the child's cgroup.procs, O_WRONLY | O_CLOEXEC, or -1
	uint64_t memory_max, pids_max; // 0: unset
	uint32_t cpu_max_us, cpu_period_us;
};

// knit_pool_create: check s's cgroup members and copy them into *out. 0 or
// -KNIT_EINVAL (a limit without a directory, a period out of range, a
// directory that is no cgroup v2 one), -KNIT_ENOMEM; the message recorded.
int cgroup_take(const knit_sandbox_t &s, CgroupHost *out);

// Make the pool's child cgroup (PARENT/knit-PID-N), write its limits and
// open its cgroup.procs. Nothing to do without a parent. 0, or (the child
// removed again) -KNIT_EINVAL (a limit whose controller the parent does not
// give its children), -KNIT_EACCES (the parent is not writable),
// -KNIT_ESYSTEM; the message recorded.
int cgroup_create(CgroupHost *c);

// After every worker of the pool was reaped: kill what is left in the
// child (a task's orphans; cgroup.kill), wait (bounded, 1 s) until it is
// empty and remove it. A child that stays busy is left behind.
void cgroup_remove(CgroupHost *c);

// Close and free (the child, if any, is not touched: a fork child's
// forget, or after cgroup_remove).
void cgroup_free(CgroupHost *c);

// The oom_kill count of the child's memory.events, or -1 (no child, or no
// memory controller in it).
int64_t cgroup_pool_oom_kills(const CgroupHost &c);

// The oom_kill count of this process's own memory cgroup (cgroup v2: the
// "0::" line of /proc/self/cgroup, then its memory.events), or -1 when
// there is none to read. Worker processes are this process's children and
// stay in its cgroup unless a worker_prefix or the pool's own child moves
// them.
int64_t cgroup_self_oom_kills();

// The worker: move this process into the cgroup whose cgroup.procs is fd.
// 0, or KNIT_ESYSTEM with why (why_size bytes).
int cgroup_enter(int fd, char *why, size_t why_size);

} // namespace knit::detail

#endif
