// SPDX-License-Identifier: MIT
// src/error.cpp - knit_last_error() and its thread-local message (the
// contract is in src/error.h).
#include "knitting.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "src/error.h"

namespace knit::detail {

namespace {
// Plain storage (no constructor, no destructor): no C++ runtime support
// and nothing to run at thread exit.
__thread char t_message[kErrorMax];

void record(int e, const char *fmt, va_list ap)
{
	int n = vsnprintf(t_message, sizeof t_message, fmt, ap);
	if (n >= 0 && e != 0 && (size_t)n < sizeof t_message) {
		char buf[128];
		const char *text = strerror_r(e, buf, sizeof buf); // the GNU strerror_r
		const int m = snprintf(t_message + n, sizeof t_message - (size_t)n, ": %s", text);
		n = m < 0 ? m : n + m;
	}
	if (n < 0)
		t_message[0] = 0;
	else if ((size_t)n >= sizeof t_message)
		memcpy(t_message + sizeof t_message - 4, "...", 4);
}

} // namespace

void error_clear() { t_message[0] = 0; }

bool error_recorded() { return t_message[0] != 0; }

int error_set(int code, const char *fmt, ...)
{
	const int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	record(0, fmt, ap);
	va_end(ap);
	errno = saved;
	return code;
}

int error_set_errno(int code, int e, const char *fmt, ...)
{
	const int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	record(e, fmt, ap);
	va_end(ap);
	errno = saved;
	return code;
}

void error_sanitize(char *dst, size_t n, const char *src, size_t len)
{
	if (len > 0 && src[len - 1] == '\n')
		len--;
	size_t k = 0;
	for (size_t i = 0; i < len && k + 1 < n; i++) {
		const unsigned char c = (unsigned char)src[i];
		dst[k++] = c == '\t' ? ' ' : c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[k] = 0;
}

} // namespace knit::detail

extern "C" KNIT_API const char *knit_last_error(void) KNIT_NOEXCEPT
{
	return knit::detail::t_message;
}
