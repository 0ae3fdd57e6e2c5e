// SPDX-License-Identifier: MIT
// src/sysname.cpp - this architecture's syscall names (src/sysname.h).
#include "src/common.h"

#include <linux/audit.h>
#include <sys/syscall.h>

#include "src/sysname.h"

namespace knit::detail {

namespace {

struct Sysname {
	int32_t nr;
	const char *name;
};

// One entry per __NR_ macro of <sys/syscall.h>: the generated list is
// "#ifdef __NR_x / KNIT_SYSNAME(x) / #endif" for each, so the compiler
// evaluates every number (some are expressions on some architectures).
#define KNIT_SYSNAME(n) {(int32_t)(__NR_##n), #n},
constexpr Sysname kSysnames[] = {
#include "sysnames.inc"
};
#undef KNIT_SYSNAME

constexpr bool names_fit()
{
	for (const Sysname &s : kSysnames) {
		size_t n = 0;
		while (s.name[n] != 0)
			n++;
		if (n + 1 > kSysnameBytes)
			return false;
	}
	return true;
}
static_assert(names_fit(), "every syscall name fits knit_completion_info_t.syscall_name");

} // namespace

uint32_t sysname_arch()
{
#if defined(__x86_64__) && !defined(__ILP32__)
	return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	return AUDIT_ARCH_AARCH64;
#elif defined(__riscv) && __riscv_xlen == 64
	return AUDIT_ARCH_RISCV64;
#else
	return 0;
#endif
}

const char *sysname_of(int32_t nr)
{
	if (nr < 0 || nr >= kSysnameMax)
		return nullptr;
	// Linear: only a sandbox violation's lookup (a worker's death) asks.
	for (const Sysname &s : kSysnames)
		if (s.nr == nr)
			return s.name;
	return nullptr;
}

} // namespace knit::detail
