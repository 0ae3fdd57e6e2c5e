/* SPDX-License-Identifier: MIT */
/*
 * arch/generic/tick.h - the per-call timing's tick (src/tick.h) where the
 * architecture has no counter of its own (or the build uses the builtins
 * layer): CLOCK_MONOTONIC in ns, through knit_now_ns (generic/futex.h).
 *
 *   knit_tick_read()    the counter (any unit; monotone per machine)
 *   knit_tick_usable()  1 when the counter may stand for the clock (call once)
 *   knit_tick_hz()      its rate in Hz, 0 = unknown (calibrate)
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/generic/tick.h"
#endif
#ifndef KNIT_ARCH_GENERIC_TICK_H
#define KNIT_ARCH_GENERIC_TICK_H

#include <stdint.h>

#ifndef KNIT_HAVE_TICK
static inline uint64_t knit_tick_read(void) { return (uint64_t)knit_now_ns(); }
static inline int knit_tick_usable(void) { return 0; }
static inline uint64_t knit_tick_hz(void) { return 1000000000u; }
#endif

#endif /* KNIT_ARCH_GENERIC_TICK_H */
