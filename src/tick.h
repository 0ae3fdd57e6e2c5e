// SPDX-License-Identifier: MIT
// src/tick.h - the room for the per-call timing's clock (knit_completion_info(3),
// src/info.h): a tick the hot paths read in a few instructions, and its
// conversion to ns off them.
//
// The tick is the architecture's counter (arch/<arch>/tick.h: the x86-64
// TSC where it is invariant, the arm64 generic timer, the riscv64 `time`
// CSR) when tick_init() found it usable, else CLOCK_MONOTONIC in ns (the
// generic layer, and a builtins build). The choice is a property of the
// machine (a CPUID, or the architecture), so the host and the worker
// processes of one machine make the same one and read the same clock;
// neither is moved by a time namespace's offset when it is the counter.
// Ticks are compared and subtracted as they are read; only a duration
// becomes ns (tick_ns), at the rate tick_init() starts to measure against
// CLOCK_MONOTONIC and the first conversion finishes (at least
// kTickCalibrateNs after the start, waiting out the rest if need be), or
// the rate the architecture states.
#ifndef KNIT_SRC_TICK_H
#define KNIT_SRC_TICK_H

#include "src/common.h"

namespace knit::detail {

// 1: ticks are the arch counter's; 0: CLOCK_MONOTONIC ns. Set once by
// tick_init() (before any pool or worker reads a tick), then read-only.
extern int g_tick_counter;

// Choose the tick and start its calibration: once per process (later
// calls return at once), thread-safe. Every pool create and every worker
// process calls it before reading a tick.
void tick_init();

// Now, in ticks (monotone on the machine; comparable across its cores and
// processes).
inline int64_t tick_now()
{
	return KNIT_LIKELY(g_tick_counter) ? (int64_t)knit_tick_read() : knit_now_ns();
}

// A duration of `ticks` (>= 0) in ns, rounded down (so that the ns of two
// adjoining spans never add up to more than the ns of their union).
int64_t tick_ns(int64_t ticks);

// The calibration's least span (src/tick.cpp).
inline constexpr int64_t kTickCalibrateNs = 2000000;

} // namespace knit::detail

#endif
