// SPDX-License-Identifier: MIT
// src/common.h - what every C++ file of the runtime includes: the arch layer,
// the freestanding helpers that stand in for the parts of the C++ library we
// may not use (no libstdc++ at run time), and the internal naming rules:
// C-callable internals are knit__*, C++ internals live in knit::detail.
#ifndef KNIT_SRC_COMMON_H
#define KNIT_SRC_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/arch.h"

#define KNIT_LIKELY(x) __builtin_expect(!!(x), 1)
#define KNIT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define KNIT_INTERNAL __attribute__((visibility("hidden")))

namespace knit::detail {

template <typename T> constexpr T min_of(T a, T b) { return a < b ? a : b; }
template <typename T> constexpr T max_of(T a, T b) { return a > b ? a : b; }
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

} // namespace knit::detail

#endif
