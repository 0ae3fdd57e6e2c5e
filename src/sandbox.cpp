// SPDX-License-Identifier: MIT
// src/sandbox.cpp - a process pool's sandbox: the host's check and copy of
// knit_sandbox_t, the worker's entry into it (src/sandbox.h has the
// contract).
#include "src/common.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "src/error.h"
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

int sandbox_take(const knit_sandbox_t *in, SandboxHost *out)
{
	memset(out, 0, sizeof *out);
	if (in == nullptr)
		return 0;
	knit_sandbox_t s;
	memset(&s, 0, sizeof s);
	if (in->size < offsetof(knit_sandbox_t, seccomp_allow) || in->size > sizeof s)
		return error_set(-KNIT_EVERSION,
				 "sandbox->size %u is not one this library knows (%zu..%zu)",
				 in->size, offsetof(knit_sandbox_t, seccomp_allow), sizeof s);
	memcpy(&s, in, in->size);
	if ((s.flags & ~(uint32_t)KNIT_SANDBOX_SECCOMP) != 0)
		return error_set(-KNIT_EINVAL, "sandbox->flags 0x%x has unknown bits", s.flags);
	if (s.reserved0 != 0)
		return error_set(-KNIT_EINVAL, "sandbox->reserved0 is %u, not 0", s.reserved0);
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
	memset(s, 0, sizeof *s);
}

int sandbox_enter(const SandboxBoot &b, char *const *names, int32_t host, char *why,
		  size_t why_size)
{
	if (!b.on)
		return 0;
	if ((b.flags & ~(uint32_t)KNIT_SANDBOX_SECCOMP) != 0 || (b.sets & ~kSets) != 0 ||
	    b.nallow > kSandboxAllowMax) {
		snprintf(why, why_size, "boot record out of range (sandbox)");
		return KNIT_EPROTO;
	}
	for (uint32_t i = 0; i < b.nallow; i++)
		if (!name_ok(names[i])) {
			snprintf(why, why_size, "boot record out of range (sandbox name %u)", i);
			return KNIT_EPROTO;
		}
	// Limits first: setting them needs nothing the filter forbids.
	const struct rlimit none = {0, 0};
	if (setrlimit(RLIMIT_CORE, &none) != 0) {
		snprintf(why, why_size, "cannot set RLIMIT_CORE to 0: errno %d", errno);
		return KNIT_ESYSTEM;
	}
	int rc = limit(RLIMIT_AS, b.rlimit_as, "RLIMIT_AS", why, why_size);
	if (rc == 0)
		rc = limit(RLIMIT_CPU, b.rlimit_cpu, "RLIMIT_CPU", why, why_size);
	if (rc == 0)
		rc = limit(RLIMIT_NOFILE, b.rlimit_nofile, "RLIMIT_NOFILE", why, why_size);
	if (rc == 0)
		rc = limit(RLIMIT_NPROC, b.rlimit_nproc, "RLIMIT_NPROC", why, why_size);
	if (rc != 0)
		return rc;
	// No exec of ours or a task's gains privileges from now on (setuid,
	// file capabilities); the filter needs it without CAP_SYS_ADMIN.
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		snprintf(why, why_size, "cannot set no_new_privs: errno %d", errno);
		return KNIT_ESYSTEM;
	}
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
	if (g_loader(b.sets, names, b.nallow, (int32_t)getpid(), host, msg, sizeof msg) != 0) {
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
