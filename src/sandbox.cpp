// SPDX-License-Identifier: MIT
// src/sandbox.cpp - a process pool's sandbox: the host's check and copy of
// knit_sandbox_t, the worker's entry into it (src/sandbox.h has the
// contract).
#include "src/common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/error.h"
#include "src/namespaces.h"
#include "src/layout.h"
#include "src/sandbox.h"
#include "src/sysname.h"

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 // siginfo si_code of a seccomp trap (linux/signal.h)
#endif

namespace knit::detail {

namespace {

SeccompLoader g_loader; // set once by knit-worker, before knit__worker_main
// The armed trap record (sandbox_trap_arm); read by the SIGSYS handler.
uint8_t *g_trap;

// The SIGSYS handler (src/sandbox.h, "the trap record"): async-signal-safe
// (atomic stores, sigaction, sigprocmask, raise, _exit), and it never
// returns.
void on_sigsys(int, siginfo_t *si, void *)
{
	uint8_t *rec = __atomic_load_n(&g_trap, __ATOMIC_RELAXED);
	if (rec != nullptr && si != nullptr && si->si_code == SYS_SECCOMP) {
		knit_store_relaxed_32(word_at(rec, kTrapOffNr), (uint32_t)si->si_syscall);
		knit_store_relaxed_32(word_at(rec, kTrapOffArch), si->si_arch);
		// Release: pairs with sandbox_trap_take's acquire load of the
		// mark (the number and arch are seen with it).
		knit_store_release_32(word_at(rec, 0), kTrapMark);
	}
	// Under the filter this is a trap with SIGSYS blocked (we run in its
	// handler): the kernel resets SIGSYS to SIG_DFL and kills us by it.
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	(void)sigaction(SIGSYS, &dfl, nullptr);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGSYS);
	(void)sigprocmask(SIG_UNBLOCK, &s, nullptr);
	(void)raise(SIGSYS);
	_exit(128 + SIGSYS); // not reached: SIGSYS's default action ends us
}

constexpr uint32_t kSets = KNIT_SECCOMP_FILES | KNIT_SECCOMP_NETWORK | KNIT_SECCOMP_PROCESSES;
constexpr uint32_t kFlags =
	KNIT_SANDBOX_SECCOMP | KNIT_SANDBOX_LANDLOCK | KNIT_SANDBOX_LANDLOCK_BEST_EFFORT;

#if defined(__SANITIZE_ADDRESS__)
#define KNIT_SANDBOX_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KNIT_SANDBOX_SANITIZED 1
#endif
#endif
#ifndef KNIT_SANDBOX_SANITIZED
#define KNIT_SANDBOX_SANITIZED 0
#endif

// Landlock's user API (linux/landlock.h), spelled out here: the build's
// header may predate the ABIs this library uses.
constexpr uint64_t kLlExecute = 1ull << 0, kLlWriteFile = 1ull << 1, kLlReadFile = 1ull << 2,
		   kLlReadDir = 1ull << 3;
constexpr uint64_t kLlFsV1 = (1ull << 13) - 1; // EXECUTE .. MAKE_SYM
constexpr uint64_t kLlRefer = 1ull << 13;      // ABI 2: rename and link across directories
constexpr uint64_t kLlTruncate = 1ull << 14;   // ABI 3: truncate, O_TRUNC
constexpr uint64_t kLlIoctlDev = 1ull << 15;   // ABI 5: ioctl on devices
// The rights a rule on a file (not a directory) may hold.
constexpr uint64_t kLlFileRights =
	kLlExecute | kLlWriteFile | kLlReadFile | kLlTruncate | kLlIoctlDev;
constexpr uint64_t kLlScopeAbstractUnix = 1ull << 0, kLlScopeSignal = 1ull << 1; // ABI 6
constexpr unsigned kLlVersion = 1u;   // LANDLOCK_CREATE_RULESET_VERSION
constexpr int kLlRulePathBeneath = 1; // LANDLOCK_RULE_PATH_BENEATH

struct LlRulesetAttr {
	uint64_t handled_access_fs;  // ABI 1
	uint64_t handled_access_net; // ABI 4 (none handled here: files only)
	uint64_t scoped;             // ABI 6
};
struct __attribute__((packed)) LlPathBeneath {
	uint64_t allowed_access;
	int32_t parent_fd;
};

// A path for Landlock: absolute, bounded, existing. nullptr, or why not.
const char *path_bad(const char *s, char *text, size_t n)
{
	const size_t len = strnlen(s, KNIT_LANDLOCK_PATH_MAX);
	if (len == 0)
		return "is empty";
	if (len >= KNIT_LANDLOCK_PATH_MAX)
		return "is longer than KNIT_LANDLOCK_PATH_MAX - 1 bytes";
	if (s[0] != '/')
		return "is not absolute";
	struct stat st;
	if (stat(s, &st) != 0) {
		snprintf(text, n, "cannot be used: %s", strerror(errno));
		return text;
	}
	return nullptr;
}

// Check list `name` (NULL-terminated, or NULL) and count it into *count.
int paths_check(const char *const *list, const char *name, uint32_t *count)
{
	*count = 0;
	if (list == nullptr)
		return 0;
	for (uint32_t i = 0; list[i] != nullptr; i++) {
		if (i >= KNIT_LANDLOCK_PATHS_MAX)
			return error_set(-KNIT_EINVAL,
					 "sandbox->%s has more than KNIT_LANDLOCK_PATHS_MAX (%u) "
					 "paths",
					 name, KNIT_LANDLOCK_PATHS_MAX);
		char text[160];
		if (const char *why = path_bad(list[i], text, sizeof text))
			return error_set(-KNIT_EINVAL, "sandbox->%s[%u] \"%.200s\" %s", name, i,
					 list[i], why);
		*count = i + 1;
	}
	return 0;
}

// Landlock's ruleset with the paths (ro: nro, then rw: nrw), as plan says.
// The fd, or -1 with why.
int landlock_ruleset(const LandlockPlan &plan, char *const *paths, uint32_t nro, uint32_t nrw,
		     char *why, size_t why_size)
{
	LlRulesetAttr attr;
	memset(&attr, 0, sizeof attr);
	attr.handled_access_fs = plan.fs;
	attr.scoped = plan.scoped;
	const int rs = knit_sys_landlock_create_ruleset(&attr, plan.attr_size, 0);
	if (rs < 0) {
		snprintf(why, why_size, "Landlock: cannot create the ruleset (ABI %u): %s",
			 plan.abi, strerror(-rs));
		return -1;
	}
	for (uint32_t i = 0; i < nro + nrw; i++) {
		const bool ro = i < nro;
		const int fd = open(paths[i], O_PATH | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0) {
			snprintf(why, why_size,
				 "Landlock: cannot open landlock_%s[%u] \"%.200s\": %s",
				 ro ? "ro" : "rw", ro ? i : i - nro, paths[i], strerror(errno));
			if (fd >= 0)
				close(fd);
			close(rs);
			return -1;
		}
		LlPathBeneath rule;
		rule.allowed_access = ro ? plan.fs_ro : plan.fs;
		if (!S_ISDIR(st.st_mode))
			rule.allowed_access &= kLlFileRights;
		rule.parent_fd = fd;
		const int rc = knit_sys_landlock_add_rule(rs, kLlRulePathBeneath, &rule, 0);
		close(fd);
		if (rc != 0) {
			snprintf(why, why_size,
				 "Landlock: cannot add landlock_%s[%u] \"%.200s\": %s",
				 ro ? "ro" : "rw", ro ? i : i - nro, paths[i], strerror(-rc));
			close(rs);
			return -1;
		}
	}
#if KNIT_SANDBOX_SANITIZED
	// A sanitizer build: LeakSanitizer reads the worker's own /proc/PID
	// (task/, maps) at its exit. /proc/self resolves to that directory
	// now, so the rule covers no other process's.
	const int self = open("/proc/self", O_PATH | O_CLOEXEC | O_DIRECTORY);
	if (self >= 0) {
		LlPathBeneath rule;
		rule.allowed_access = plan.fs_ro;
		rule.parent_fd = self;
		(void)knit_sys_landlock_add_rule(rs, kLlRulePathBeneath, &rule, 0);
		close(self);
	}
#endif
	return rs;
}

// A syscall name: [a-z0-9_], not empty, short.
bool name_ok(const char *s)
{
	size_t n = 0;
	for (; s[n] != 0; n++)
		if (n >= kSandboxNameMax ||
		    !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
			return false;
	return n != 0;
}

// setrlimit(what, v, v) when v is not 0; the name for the message.
int limit(int what, uint64_t v, const char *name, char *why, size_t why_size)
{
	if (v == 0)
		return 0;
	const struct rlimit r = {(rlim_t)v, (rlim_t)v};
	if (setrlimit(what, &r) != 0) {
		snprintf(why, why_size, "cannot set %s to %llu: errno %d", name,
			 (unsigned long long)v, errno);
		return KNIT_ESYSTEM;
	}
	return 0;
}

} // namespace

int landlock_plan(int kernel, uint32_t need, LandlockPlan *plan, char *why, size_t why_size)
{
	memset(plan, 0, sizeof *plan);
	const uint32_t abi = kernel <= 0                      ? 0
			     : kernel > KNIT_LANDLOCK_ABI_MAX ? KNIT_LANDLOCK_ABI_MAX
							      : (uint32_t)kernel;
	if (abi < need) {
		if (kernel == -ENOSYS || kernel == -EOPNOTSUPP)
			snprintf(why, why_size,
				 "Landlock is not available (%s: %s), ABI %u needed (see "
				 "KNIT_SANDBOX_LANDLOCK_BEST_EFFORT)",
				 kernel == -ENOSYS ? "this kernel does not have it"
						   : "the kernel has it disabled",
				 strerror(-kernel), need);
		else if (kernel <= 0)
			snprintf(why, why_size,
				 "Landlock's version query failed: %s, ABI %u needed (see "
				 "KNIT_SANDBOX_LANDLOCK_BEST_EFFORT)",
				 strerror(-kernel), need);
		else
			snprintf(why, why_size,
				 "this kernel has Landlock ABI %d, ABI %u needed (see "
				 "KNIT_SANDBOX_LANDLOCK_BEST_EFFORT)",
				 kernel, need);
		return KNIT_ESYSTEM;
	}
	if (abi == 0)
		return 0; // best effort, and nothing to use
	plan->abi = abi;
	plan->fs = kLlFsV1;
	if (abi >= 2)
		plan->fs |= kLlRefer;
	if (abi >= 3)
		plan->fs |= kLlTruncate;
	if (abi >= 5)
		plan->fs |= kLlIoctlDev;
	plan->fs_ro = kLlExecute | kLlReadFile | kLlReadDir;
	// ABI 4's network rights stay unhandled (seccomp's network set is the
	// switch for sockets); ABI 6's scopes keep signals and abstract UNIX
	// sockets inside the worker's own domain (the host out of reach); ABI
	// 7 adds audit logging only, left at the kernel's default.
	if (abi >= 6)
		plan->scoped = kLlScopeAbstractUnix | kLlScopeSignal;
	plan->attr_size = abi >= 6   ? offsetof(LlRulesetAttr, scoped) + sizeof(uint64_t)
			  : abi >= 4 ? offsetof(LlRulesetAttr, scoped)
				     : offsetof(LlRulesetAttr, handled_access_net);
	return 0;
}

int sandbox_take(const knit_sandbox_t *in, SandboxHost *out)
{
	memset(out, 0, sizeof *out);
	out->cgroup.procs_fd = -1; // src/cgroup.h
	out->boot.fd_cgroup = -1;
	if (in == nullptr)
		return 0;
	knit_sandbox_t s;
	memset(&s, 0, sizeof s);
	if (in->size < offsetof(knit_sandbox_t, seccomp_allow) || in->size > sizeof s)
		return error_set(-KNIT_EVERSION,
				 "sandbox->size %u is not one this library knows (%zu..%zu)",
				 in->size, offsetof(knit_sandbox_t, seccomp_allow), sizeof s);
	memcpy(&s, in, in->size);
	if ((s.flags & ~kFlags) != 0)
		return error_set(-KNIT_EINVAL, "sandbox->flags 0x%x has unknown bits", s.flags);
	if (s.reserved0 != 0 || s.reserved2 != 0)
		return error_set(-KNIT_EINVAL, "sandbox->reserved%d is %u, not 0",
				 s.reserved0 != 0 ? 0 : 2,
				 s.reserved0 != 0 ? s.reserved0 : s.reserved2);
	const bool ll = (s.flags & KNIT_SANDBOX_LANDLOCK) != 0;
	if (!ll && ((s.flags & KNIT_SANDBOX_LANDLOCK_BEST_EFFORT) != 0 ||
		    s.landlock_ro != nullptr || s.landlock_rw != nullptr || s.landlock_abi != 0))
		return error_set(-KNIT_EINVAL, "sandbox->%s needs KNIT_SANDBOX_LANDLOCK in flags",
				 (s.flags & KNIT_SANDBOX_LANDLOCK_BEST_EFFORT) != 0
					 ? "flags' KNIT_SANDBOX_LANDLOCK_BEST_EFFORT"
				 : s.landlock_ro != nullptr ? "landlock_ro"
				 : s.landlock_rw != nullptr ? "landlock_rw"
							    : "landlock_abi");
	if (s.landlock_abi > KNIT_LANDLOCK_ABI_MAX)
		return error_set(-KNIT_EINVAL,
				 "sandbox->landlock_abi %u is past the highest this library knows "
				 "(KNIT_LANDLOCK_ABI_MAX, %u)",
				 s.landlock_abi, KNIT_LANDLOCK_ABI_MAX);
	uint32_t nro = 0, nrw = 0;
	if (const int rc = paths_check(s.landlock_ro, "landlock_ro", &nro); rc != 0)
		return rc;
	if (const int rc = paths_check(s.landlock_rw, "landlock_rw", &nrw); rc != 0)
		return rc;
	const bool sec = (s.flags & KNIT_SANDBOX_SECCOMP) != 0;
	if ((s.seccomp_sets & ~kSets) != 0)
		return error_set(-KNIT_EINVAL, "sandbox->seccomp_sets 0x%x has unknown bits",
				 s.seccomp_sets);
	if (!sec && (s.seccomp_sets != 0 || s.seccomp_allow != nullptr))
		return error_set(-KNIT_EINVAL, "sandbox->%s needs KNIT_SANDBOX_SECCOMP in flags",
				 s.seccomp_sets != 0 ? "seccomp_sets" : "seccomp_allow");
	uint32_t n = 0;
	if (s.seccomp_allow != nullptr)
		for (; s.seccomp_allow[n] != nullptr; n++) {
			if (n >= kSandboxAllowMax)
				return error_set(-KNIT_EINVAL,
						 "sandbox->seccomp_allow has more than %u names",
						 kSandboxAllowMax);
			if (!name_ok(s.seccomp_allow[n]))
				return error_set(-KNIT_EINVAL,
						 "sandbox->seccomp_allow[%u] \"%.80s\" is not a "
						 "syscall name ([a-z0-9_], 1..%u characters)",
						 n, s.seccomp_allow[n], kSandboxNameMax - 1);
		}
	if (n != 0) {
		out->allow = static_cast<char **>(calloc(n, sizeof(char *)));
		if (out->allow == nullptr)
			return error_set(-KNIT_ENOMEM, "out of memory for the sandbox");
		for (uint32_t i = 0; i < n; i++) {
			out->allow[i] = strdup(s.seccomp_allow[i]);
			out->boot.nallow = i + 1; // what sandbox_free frees
			if (out->allow[i] == nullptr)
				return error_set(-KNIT_ENOMEM, "out of memory for the sandbox");
		}
	}
	if (nro + nrw != 0) {
		out->paths = static_cast<char **>(calloc(nro + nrw, sizeof(char *)));
		if (out->paths == nullptr)
			return error_set(-KNIT_ENOMEM, "out of memory for the sandbox");
		for (uint32_t i = 0; i < nro + nrw; i++) {
			out->paths[i] = strdup(i < nro ? s.landlock_ro[i] : s.landlock_rw[i - nro]);
			if (out->paths[i] == nullptr) {
				out->boot.nro = i; // what sandbox_free frees
				return error_set(-KNIT_ENOMEM, "out of memory for the sandbox");
			}
		}
	}
	out->boot.nro = nro;
	out->boot.nrw = nrw;
	if (ll) {
		const bool best = (s.flags & KNIT_SANDBOX_LANDLOCK_BEST_EFFORT) != 0;
		out->boot.ll_need = best ? 0 : s.landlock_abi == 0 ? 1 : s.landlock_abi;
		out->boot.ll_report = 1;
	}
	// Namespaces and the cgroup: their own rooms (a shorter struct: none).
	if (const int rc = namespaces_take(s, &out->boot.namespaces); rc != 0)
		return rc;
	if (const int rc = cgroup_take(s, &out->cgroup); rc != 0)
		return rc;
	out->boot.on = 1;
	out->boot.flags = s.flags;
	out->boot.sets = s.seccomp_sets;
	out->boot.rlimit_as = s.rlimit_as;
	out->boot.rlimit_cpu = s.rlimit_cpu;
	out->boot.rlimit_nofile = s.rlimit_nofile;
	out->boot.rlimit_nproc = s.rlimit_nproc;
	return 0;
}

void sandbox_free(SandboxHost *s)
{
	for (uint32_t i = 0; i < s->boot.nallow && s->allow != nullptr; i++)
		free(s->allow[i]);
	free(s->allow);
	for (uint32_t i = 0; i < s->boot.nro + s->boot.nrw && s->paths != nullptr; i++)
		free(s->paths[i]);
	free(s->paths);
	cgroup_free(&s->cgroup);
	memset(s, 0, sizeof *s);
	s->cgroup.procs_fd = -1;
	s->boot.fd_cgroup = -1;
}

int sandbox_enter(const SandboxBoot &b, char *const *args, int32_t host, uint32_t *landlock_abi,
		  char *why, size_t why_size)
{
	*landlock_abi = 0;
	if (!b.on)
		return 0;
	const bool ll = (b.flags & KNIT_SANDBOX_LANDLOCK) != 0;
	if ((b.flags & ~kFlags) != 0 || (b.sets & ~kSets) != 0 || b.nallow > kSandboxAllowMax ||
	    b.nro > KNIT_LANDLOCK_PATHS_MAX || b.nrw > KNIT_LANDLOCK_PATHS_MAX ||
	    b.ll_need > KNIT_LANDLOCK_ABI_MAX || (!ll && b.nro + b.nrw + b.ll_need != 0)) {
		snprintf(why, why_size, "boot record out of range (sandbox)");
		return KNIT_EPROTO;
	}
	for (uint32_t i = 0; i < b.nallow; i++)
		if (!name_ok(args[i])) {
			snprintf(why, why_size, "boot record out of range (sandbox name %u)", i);
			return KNIT_EPROTO;
		}
	char *const *paths = args + b.nallow;
	for (uint32_t i = 0; i < b.nro + b.nrw; i++)
		if (paths[i][0] != '/' ||
		    strnlen(paths[i], KNIT_LANDLOCK_PATH_MAX) >= KNIT_LANDLOCK_PATH_MAX) {
			snprintf(why, why_size, "boot record out of range (sandbox path %u)", i);
			return KNIT_EPROTO;
		}
	// No core dumps first: nothing below may leave one.
	const struct rlimit none = {0, 0};
	if (setrlimit(RLIMIT_CORE, &none) != 0) {
		snprintf(why, why_size, "cannot set RLIMIT_CORE to 0: errno %d", errno);
		return KNIT_ESYSTEM;
	}
	// Landlock's ruleset, its paths opened before RLIMIT_NOFILE applies.
	int ruleset = -1;
	LandlockPlan plan;
	memset(&plan, 0, sizeof plan);
	if (ll) {
		const int kernel = knit_sys_landlock_create_ruleset(nullptr, 0, kLlVersion);
		if (const int rc = landlock_plan(kernel, b.ll_need, &plan, why, why_size); rc != 0)
			return rc;
		if (plan.abi != 0 &&
		    (ruleset = landlock_ruleset(plan, paths, b.nro, b.nrw, why, why_size)) < 0)
			return KNIT_ESYSTEM;
	}
	// Limits next: setting them needs nothing the filter forbids.
	int rc = limit(RLIMIT_AS, b.rlimit_as, "RLIMIT_AS", why, why_size);
	if (rc == 0)
		rc = limit(RLIMIT_CPU, b.rlimit_cpu, "RLIMIT_CPU", why, why_size);
	if (rc == 0)
		rc = limit(RLIMIT_NOFILE, b.rlimit_nofile, "RLIMIT_NOFILE", why, why_size);
	if (rc == 0)
		rc = limit(RLIMIT_NPROC, b.rlimit_nproc, "RLIMIT_NPROC", why, why_size);
	// No exec of ours or a task's gains privileges from now on (setuid,
	// file capabilities); Landlock and the filter need it without
	// CAP_SYS_ADMIN.
	if (rc == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		snprintf(why, why_size, "cannot set no_new_privs: errno %d", errno);
		rc = KNIT_ESYSTEM;
	}
	if (rc == 0 && ruleset >= 0) {
		const int e = knit_sys_landlock_restrict_self(ruleset, 0);
		if (e != 0) {
			snprintf(why, why_size, "Landlock: cannot enforce the ruleset (ABI %u): %s",
				 plan.abi, strerror(-e));
			rc = KNIT_ESYSTEM;
		}
	}
	if (ruleset >= 0)
		close(ruleset);
	if (rc != 0)
		return rc;
	*landlock_abi = plan.abi;
	if ((b.flags & KNIT_SANDBOX_SECCOMP) == 0)
		return 0;
	if (g_loader == nullptr) {
		snprintf(why, why_size,
			 "this knit-worker cannot load a seccomp filter (built without "
			 "libseccomp; tools/deps.sh installs libseccomp-dev)");
		return KNIT_ESYSTEM;
	}
	// The trap record's handler, before the filter that traps (every
	// other signal blocked while it runs).
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, nullptr) != 0) {
		snprintf(why, why_size, "cannot install the SIGSYS handler: errno %d", errno);
		return KNIT_ESYSTEM;
	}
	char msg[256];
	msg[0] = 0;
	if (g_loader(b.sets, args, b.nallow, (int32_t)getpid(), host, msg, sizeof msg) != 0) {
		msg[sizeof msg - 1] = 0;
		snprintf(why, why_size, "cannot load the seccomp filter: %s", msg);
		// An unknown name is the caller's (bad input); the rest the system's.
		return strncmp(msg, "unknown syscall", 15) == 0 ? KNIT_EINVAL : KNIT_ESYSTEM;
	}
	return 0;
}

void sandbox_trap_arm(uint8_t *record) { __atomic_store_n(&g_trap, record, __ATOMIC_RELAXED); }

uint32_t sandbox_trap_take(uint8_t *record, bool sigsys)
{
	// Acquire: pairs with on_sigsys's release store of the mark.
	const uint32_t mark = knit_load_acquire_32(word_at(record, 0));
	const int32_t nr = (int32_t)knit_load_relaxed_32(word_at(record, kTrapOffNr));
	const uint32_t arch = knit_load_relaxed_32(word_at(record, kTrapOffArch));
	knit_store_relaxed_32(word_at(record, 0), 0);
	knit_store_relaxed_32(word_at(record, kTrapOffNr), 0);
	knit_store_relaxed_32(word_at(record, kTrapOffArch), 0);
	if (!sigsys || mark != kTrapMark || arch == 0 || arch != sysname_arch() || nr < 0 ||
	    nr >= kSysnameMax)
		return 0;
	return (uint32_t)nr + 1;
}

} // namespace knit::detail

extern "C" KNIT_API void knit__worker_seccomp(knit::detail::SeccompLoader load) KNIT_NOEXCEPT
{
	knit::detail::g_loader = load;
}
