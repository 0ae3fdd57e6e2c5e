/* SPDX-License-Identifier: MIT */
/*
 * arch/aarch64/tick.h - the generic timer's virtual count (CNTVCT_EL0) as the
 * per-call timing's tick (src/tick.h): one system counter for the whole
 * machine, at the fixed rate CNTFRQ_EL0 says, readable at EL0 on Linux
 * (its vDSO reads the same register). No ISB before the read: the reading
 * may move against its neighbours by a few instructions, which the timing
 * clamps to its own bounds; it is a compiler barrier all the same.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/aarch64/tick.h"
#endif
#ifndef KNIT_ARCH_AARCH64_TICK_H
#define KNIT_ARCH_AARCH64_TICK_H

#include <stdint.h>

#define KNIT_HAVE_TICK 1

static inline uint64_t knit_tick_read(void)
{
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

/* The counter ticks at one rate everywhere (the architecture says so). */
static inline int knit_tick_usable(void) { return 1; }

/* The counter's rate in Hz (CNTFRQ_EL0, set by firmware), 0 = unknown. */
static inline uint64_t knit_tick_hz(void)
{
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
}

#endif /* KNIT_ARCH_AARCH64_TICK_H */
