// SPDX-License-Identifier: MIT
// src/dcheck.cpp - the failure path of KNIT_DCHECK (src/dcheck.h): one
// message on stderr through the raw write syscall (no stdio, no allocation:
// it may run inside a signal-unsafe corner of the runtime), then abort().
#include "src/dcheck.h"

#if defined(KNIT_DEBUG_CHECKS) && KNIT_DEBUG_CHECKS
#include "arch/arch.h"

#include <stdlib.h>
#include <string.h>

namespace knit::detail {

namespace {
void put(const char *s)
{
	size_t n = strlen(s);
	while (n > 0) {
		long w = knit_sys_write(2, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}
} // namespace

void dcheck_failed(const char *file, int line, const char *cond) noexcept
{
	char num[16];
	int i = (int)sizeof num - 1;
	num[i] = '\0';
	unsigned v = line > 0 ? (unsigned)line : 0;
	do {
		num[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0 && i > 0);
	put("libknitting: DCHECK failed: ");
	put(file);
	put(":");
	put(num + i);
	put(": ");
	put(cond);
	put("\n");
	abort();
}

} // namespace knit::detail
#endif
