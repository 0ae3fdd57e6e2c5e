// SPDX-License-Identifier: MIT
// src/sysname.h - the names of this architecture's syscalls, for a
// sandbox violation's report (knit_completion_info(3): syscall_name).
// The table is the kernel's own list, taken at build time from the
// compiler's <sys/syscall.h> (every __NR_ macro it defines; the Makefile
// writes build/gen/sysnames.inc), so the host needs no libseccomp to name
// a number. A number this build's headers do not know (a syscall newer
// than them) has no name: the caller reports the number alone.
#ifndef KNIT_SRC_SYSNAME_H
#define KNIT_SRC_SYSNAME_H

#include "src/common.h"

#include "knitting.h"

namespace knit::detail {

// The syscall numbers a report accepts: [0, kSysnameMax). A number
// outside (a worker's word, or the x32 range) is "unknown".
inline constexpr int32_t kSysnameMax = 4096;
// The longest name, with its NUL (knit_completion_info_t.syscall_name).
inline constexpr size_t kSysnameBytes = sizeof(knit_completion_info_t{}.syscall_name);

// The AUDIT_ARCH_* value the kernel gives this architecture's native
// syscalls (siginfo's si_arch for a seccomp trap); 0 on an architecture
// this file does not know (every report is "unknown" there).
uint32_t sysname_arch();
// The name of native syscall nr, a static string, or nullptr when nr is
// out of range or unknown to this build.
const char *sysname_of(int32_t nr);

} // namespace knit::detail

#endif
