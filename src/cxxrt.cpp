// SPDX-License-Identifier: MIT
// The few C++ runtime hooks the compiler may reference, provided over libc so
// the shared library never needs libstdc++ (the link uses -z defs, so a
// missing one fails the build rather than loading libstdc++ at run time).
#include <stdlib.h>

#include "src/common.h"

void *operator new(size_t n) { return malloc(n ? n : 1); }
void *operator new[](size_t n) { return malloc(n ? n : 1); }
void operator delete(void *p) noexcept { free(p); }
void operator delete[](void *p) noexcept { free(p); }
void operator delete(void *p, size_t) noexcept { free(p); }
void operator delete[](void *p, size_t) noexcept { free(p); }

// A pure virtual call is a bug in this library; there is no caller to report
// it to, so stop the process the way the C++ runtime would.
extern "C" KNIT_INTERNAL void __cxa_pure_virtual() { abort(); }
