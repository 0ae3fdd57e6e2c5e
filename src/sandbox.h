// SPDX-License-Identifier: MIT
// src/sandbox.h - a process pool's sandbox (knit_sandbox_t): the host takes
// and checks the options (sandbox_take), hands them to each worker in its
// boot record (SandboxBoot) and, for the syscall names and then Landlock's
// paths (read-only, then read-write), on its command line after the task
// library; the worker enters the sandbox after the task library's init and
// before it reports ready (sandbox_enter), in this order: no core dumps,
// Landlock's ruleset built (its paths opened), the other rlimits,
// no_new_privs, Landlock enforced, the seccomp filter (so Landlock's
// syscalls are made before the filter exists, and it need not allow them).
//
// Landlock is made with raw syscalls (arch/) and the rights of the ABI the
// kernel reports, up to KNIT_LANDLOCK_ABI_MAX (landlock_plan). It restricts
// the calling thread, the worker's main thread that runs every task, and
// the threads it starts later; a thread the task library's init started
// before is not restricted (the seccomp filter covers every thread, TSYNC).
// The sandbox's namespaces and cgroup come earlier, before the task library
// loads (src/namespaces.h, src/cgroup.h: their own rooms).
//
// The trap record (a violation's syscall reported on the call that made
// it): the filter's action for a syscall it does not allow is
// SECCOMP_RET_TRAP. sandbox_enter installs, before the filter, a SIGSYS
// handler (SA_SIGINFO, async-signal-safe) that writes the kernel's
// si_syscall and si_arch into the record of the worker's own lane block
// (src/layout.h kLaneOffTrap, armed by sandbox_trap_arm once the worker
// serves the lane), its mark last, and then dies of SIGSYS: it resets
// SIGSYS to SIG_DFL, which under the filter is itself a trap taken with
// SIGSYS blocked, so the kernel kills the process by SIGSYS (and without
// the filter the reset succeeds and a raise kills it). The filter does not
// allow rt_sigaction for SIGSYS (a task cannot take the handler's place:
// its try is a violation like any other), and a task that blocks SIGSYS
// only loses the record: a trap of a blocked SIGSYS is a kill. What the
// filter kills outright (a foreign architecture's syscall) leaves no
// record. The host (sandbox_trap_take, at each death of a worker whose
// pool has the filter) believes a record only for a death by SIGSYS, with
// its mark, this architecture's AUDIT_ARCH and a number below
// kSysnameMax, and zeroes it. The record is the worker's word: a hostile
// task can name a syscall other than the one it made, for its own call
// only (without isolation, src/proc.h, every worker maps every lane block,
// so a peer's record could name one for another worker's SIGSYS death);
// the name is the host's (src/sysname.h), never the worker's. A handler
// that cannot run (a task's stack pointer gone bad) ends the worker by
// SIGSEGV instead: a KNIT_DEATH_SIGNAL.
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
// Most words the sandbox puts on a worker's command line.
inline constexpr uint32_t kSandboxArgsMax = kSandboxAllowMax + 2 * KNIT_LANDLOCK_PATHS_MAX;

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
	int32_t fd_cgroup;   // boot_fd_cgroup: the pool cgroup's cgroup.procs; -1: none
	// Landlock (flags & KNIT_SANDBOX_LANDLOCK): nro then nrw paths on the
	// command line after the names. The worker refuses to boot with an ABI
	// below ll_need (0: whatever the kernel has, best effort); ll_report 1:
	// its boot verdict says the ABI it applied ("ok landlock=N").
	uint32_t nro, nrw;
	uint32_t ll_need;
	uint32_t ll_report;
};

// The host's copy (ProcHost::sandbox).
struct SandboxHost {
	SandboxBoot boot;
	char **allow;      // nallow names, malloc'd
	char **paths;      // nro read-only then nrw read-write paths, malloc'd
	CgroupHost cgroup; // the pool's cgroup (src/cgroup.h); parent null: none
};

// Landlock's ruleset for one kernel: the ABI whose rights it uses (0:
// none), the handled filesystem rights, the scopes, the size of the
// ruleset attribute that ABI knows.
struct LandlockPlan {
	uint32_t abi;
	uint64_t fs, fs_ro; // handled; granted beneath a read-only path
	uint64_t scoped;
	size_t attr_size;
};

// What to enforce on a kernel that answered `kernel` to Landlock's version
// query (its ABI >= 1, or -errno) for a pool that needs ABI `need` (0: best
// effort): 0 and *plan (plan->abi 0 when best effort found no Landlock),
// or KNIT_ESYSTEM with why (why_size bytes).
int landlock_plan(int kernel, uint32_t need, LandlockPlan *plan, char *why, size_t why_size);

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

// The worker, after init: enter the sandbox b describes (args: the nallow
// syscall names, then the nro + nrw paths). 0 and *landlock_abi (the
// Landlock ABI applied, 0: none), or a knit code with why (why_size bytes).
int sandbox_enter(const SandboxBoot &b, char *const *args, int32_t host, uint32_t *landlock_abi,
		  char *why, size_t why_size);

// The worker, once it serves its lane (and before its first task): its
// SIGSYS handler writes into this trap record (lane block + kLaneOffTrap).
void sandbox_trap_arm(uint8_t *record);

// The host, at a death of a worker of a pool with the filter (the worker
// is reaped: nothing writes the record now): read the record (untrusted),
// zero it for the lane's next worker, and return 1 + the syscall's number
// when sigsys (the worker died of SIGSYS) and the record passes the checks
// above, else 0.
uint32_t sandbox_trap_take(uint8_t *record, bool sigsys);

} // namespace knit::detail

// The knit-worker executable's seccomp loader (private ABI, KNITTING_PRIVATE).
extern "C" KNIT_API void knit__worker_seccomp(knit::detail::SeccompLoader load) KNIT_NOEXCEPT;

#endif
