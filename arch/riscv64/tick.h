/* SPDX-License-Identifier: MIT */
/*
 * arch/riscv64/tick.h - the `time` CSR (`rdtime`) as the per-call timing's
 * tick (src/tick.h): the platform's real-time counter, one for every hart
 * at a constant rate (the privileged spec's mtime), which Linux lets user
 * mode read (its vDSO reads it too; where the hardware traps the read the
 * kernel or firmware emulates it). Its rate (the device tree's
 * timebase-frequency) is not read here: src/tick.cpp calibrates it.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/riscv64/tick.h"
#endif
#ifndef KNIT_ARCH_RISCV64_TICK_H
#define KNIT_ARCH_RISCV64_TICK_H

#include <stdint.h>

#define KNIT_HAVE_TICK 1

static inline uint64_t knit_tick_read(void)
{
	uint64_t v;
	__asm__ __volatile__("rdtime %0" : "=r"(v) : : "memory");
	return v;
}

/* mtime is constant-rate and shared by every hart (the spec says so). */
static inline int knit_tick_usable(void) { return 1; }

/* The counter's rate in Hz, 0 = unknown (calibrate). */
static inline uint64_t knit_tick_hz(void) { return 0; }

#endif /* KNIT_ARCH_RISCV64_TICK_H */
