/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/tick.h - the time-stamp counter as the per-call timing's tick
 * (src/tick.h): `rdtsc`, not serialized (its reading may move a few dozen
 * cycles against its neighbours, which the timing clamps to its own
 * bounds), a compiler barrier all the same. Usable only where it is
 * invariant (CPUID 0x80000007 EDX bit 8: one rate in every P- and C-state,
 * and, as Linux relies on, one count on every core of the machine, so host
 * and worker processes read the same clock). Its rate is not known here
 * (knit_tick_hz 0): src/tick.cpp calibrates it against CLOCK_MONOTONIC.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/x86_64/tick.h"
#endif
#ifndef KNIT_ARCH_X86_64_TICK_H
#define KNIT_ARCH_X86_64_TICK_H

#include <stdint.h>

#define KNIT_HAVE_TICK 1

static inline uint64_t knit_tick_read(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

static inline void knit__cpuid(uint32_t leaf, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
	__asm__ __volatile__("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

/* 1 when the TSC is invariant (a CPUID, which a hypervisor may trap: call
 * it once), else 0. */
static inline int knit_tick_usable(void)
{
	uint32_t a, b, c, d;
	knit__cpuid(0x80000000u, &a, &b, &c, &d);
	if (a < 0x80000007u)
		return 0;
	knit__cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1u;
}

/* The counter's rate in Hz, 0 = unknown (calibrate). */
static inline uint64_t knit_tick_hz(void) { return 0; }

#endif /* KNIT_ARCH_X86_64_TICK_H */
