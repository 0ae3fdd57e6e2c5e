// SPDX-License-Identifier: MIT
// src/sandbox.h - a process pool's sandbox (knit_sandbox_t): the host takes
// and checks the options (sandbox_take), hands them to each worker in its
// boot record (SandboxBoot) and, for the syscall names, on its command line
// after the task library; the worker enters the sandbox after the task
// library's init and before it reports ready (sandbox_enter), in this
// order: rlimits (and no core dumps), no_new_privs, the seccomp filter.
// Its namespaces and cgroup come earlier, before the task library loads
// (src/namespaces.h, src/cgroup.h: their own rooms).
//
// The seccomp filter is built and loaded by the knit-worker executable,
// which alone links libseccomp (libknitting stays on libc and liburcu): it
// registers its loader through the private knit__worker_seccomp before it
// runs knit__worker_main. A knit-worker without one refuses a pool that
// asks for the filter.
#ifndef KNIT_SRC_SANDBOX_H
#define KNIT_SRC_SANDBOX_H

#include "src/common.h"

#include "knitting.h"
#include "src/cgroup.h"

namespace knit::detail {

// Most syscall names in seccomp_allow, and the longest.
inline constexpr uint32_t kSandboxAllowMax = 256;
inline constexpr uint32_t kSandboxNameMax = 64;

// The fixed part, in the boot record (src/proc.h ProcBoot).
struct SandboxBoot {
	uint32_t on; // 1: a sandbox was given
	uint32_t flags;
	uint32_t sets;
	uint32_t nallow; // names on the command line after the task library
	uint64_t rlimit_as, rlimit_cpu, rlimit_nofile, rlimit_nproc;
	// Namespaces and the cgroup (src/namespaces.h, src/cgroup.h): entered
	// by the worker before it loads the task library.
	uint32_t namespaces; // enum knit_sandbox_namespaces
	int32_t fd_cgroup;   // kBootFdCgroup: the pool cgroup's cgroup.procs; -1: none
};

// The host's copy (ProcHost::sandbox).
struct SandboxHost {
	SandboxBoot boot;
	char **allow;      // nallow names, malloc'd
	CgroupHost cgroup; // the pool's cgroup (src/cgroup.h); parent null: none
};

// knit_pool_create, process pools: check *in (its size, flags, sets,
// names) and copy it into *out. 0, -KNIT_EVERSION, -KNIT_EINVAL,
// -KNIT_ENOMEM; the message recorded (src/error.h). in may be null: no
// sandbox.
int sandbox_take(const knit_sandbox_t *in, SandboxHost *out);
void sandbox_free(SandboxHost *s);

// The loader knit-worker registers: build and load the filter for `sets`
// and the extra names, self the worker's pid, host the host's. 0, or
// nonzero with msg (msg_size bytes) saying why.
typedef int (*SeccompLoader)(uint32_t sets, const char *const *allow, uint32_t nallow, int32_t self,
			     int32_t host, char *msg, size_t msg_size);

// The worker, after init: enter the sandbox b describes (names: the
// nallow syscall names). 0, or a knit code with why (why_size bytes).
int sandbox_enter(const SandboxBoot &b, char *const *names, int32_t host, char *why,
		  size_t why_size);

} // namespace knit::detail

// The knit-worker executable's seccomp loader (private ABI, KNITTING_PRIVATE).
extern "C" KNIT_API void knit__worker_seccomp(knit::detail::SeccompLoader load) KNIT_NOEXCEPT;

#endif
