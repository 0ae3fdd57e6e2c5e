/* SPDX-License-Identifier: MIT */
/*
 * arch/arch.h - the one place that maps compiler macros to libknitting's
 * architecture names and pulls in the matching hand-tuned headers.
 *
 * Each arch/<arch>/ header defines only the operations it specialises and
 * announces each one with a KNIT_HAVE_<OP> macro; arch/generic/ then fills
 * every operation that is still missing from the __atomic builtins and libc.
 * Building with KNIT_USE_CC_BUILTINS=1 skips the arch headers entirely, so
 * the whole library runs on the generic layer: the differential reference for
 * the tests and the build ThreadSanitizer checks (TSan cannot see inline asm).
 *
 * Memory order is part of every name (knit_load_acquire_32, knit_fence_seq_cst,
 * ...), never a run-time argument. This header is C99 and C++ compatible.
 */
#ifndef KNIT_ARCH_H
#define KNIT_ARCH_H

#define KNIT_ARCH_H_INSIDE 1

#if defined(__x86_64__)
#define KNIT_ARCH_X86_64 1
#define KNIT_ARCH_NAME "x86_64"
#elif defined(__aarch64__)
#define KNIT_ARCH_AARCH64 1
#define KNIT_ARCH_NAME "aarch64"
#elif defined(__riscv) && __riscv_xlen == 64
#define KNIT_ARCH_RISCV64 1
#define KNIT_ARCH_NAME "riscv64"
#elif defined(KNIT_USE_CC_BUILTINS) && KNIT_USE_CC_BUILTINS
#define KNIT_ARCH_GENERIC 1
#define KNIT_ARCH_NAME "generic"
#else
#error "libknitting: unsupported architecture (build with KNIT_USE_CC_BUILTINS=1 to use the generic layer)"
#endif

#if !(defined(KNIT_USE_CC_BUILTINS) && KNIT_USE_CC_BUILTINS)
#if defined(KNIT_ARCH_X86_64)
#include "x86_64/atomic.h"
#include "x86_64/syscall.h"
#include "x86_64/tick.h"
#elif defined(KNIT_ARCH_AARCH64)
#include "aarch64/atomic.h"
#include "aarch64/syscall.h"
#include "aarch64/tick.h"
#elif defined(KNIT_ARCH_RISCV64)
#include "riscv64/atomic.h"
#include "riscv64/syscall.h"
#include "riscv64/tick.h"
#endif
#define KNIT_ARCH_LAYER KNIT_ARCH_NAME
#else
#define KNIT_ARCH_LAYER "builtins"
#endif

#include "generic/atomic.h"
#include "generic/syscall.h"
#include "generic/futex.h"
#include "generic/tick.h"

/*
 * Shared words that two parties write or poll are kept 128 bytes apart:
 * x86 prefetches cache lines in adjacent pairs and several arm64 cores use
 * 128-byte lines, so 64-byte padding still false-shares there.
 */
#define KNIT_SHARED_BLOCK 128

#undef KNIT_ARCH_H_INSIDE
#endif /* KNIT_ARCH_H */
