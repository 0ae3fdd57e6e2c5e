// SPDX-License-Identifier: MIT
// Version and error strings: the two entries every caller can use before
// anything else exists.
#include "knitting.h"

#include "src/common.h"

extern "C" KNIT_API uint32_t knit_version(void) KNIT_NOEXCEPT { return KNIT_VERSION_NUMBER; }

namespace {
const char *const error_text[KNIT_ERROR_MAX_] = {
	"success",
	"invalid argument",
	"out of memory",
	"no room right now, try again",
	"no such task",
	"payload too big for this pool",
	"pool is closed",
	"timed out",
	"cancelled",
	"worker crashed",
	"protocol error in shared memory",
	"task reported an error",
	"operating system error",
	"unknown struct size (version mismatch)",
	"no such ticket",
	"busy",
	"no such file",
	"permission denied",
};
} // namespace

extern "C" KNIT_API const char *knit_strerror(int code) KNIT_NOEXCEPT
{
	if (code < 0)
		code = code < -KNIT_ERROR_MAX_ ? KNIT_ERROR_MAX_ : -code; // never negate INT_MIN
	if (code >= KNIT_ERROR_MAX_)
		return "unknown error";
	return error_text[code];
}
