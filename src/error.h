// SPDX-License-Identifier: MIT
// src/error.h - the room for knit_last_error(): the calling thread's message
// of why its last recording entry failed.
//
// Contract (knit_last_error(3)): the entries that record (knit_pool_create,
// knit_pool_stats) clear the message when they start and leave one behind
// on every failure; no other entry clears it, and the enqueue and call
// entries set it only when they refuse a call -KNIT_ECRASHED because the
// process pool failed (the reason, src/api.cpp refused), so nothing on a
// call's way (knit_call, knit_enqueue, knit_complete) writes thread-local
// storage. The
// message lives in one thread-local buffer of kErrorMax bytes, truncated
// with "..." when longer; the pointer knit_last_error() returns stays valid
// for the thread's life, its text until the thread's next recording entry.
// Nothing here sets errno.
#ifndef KNIT_SRC_ERROR_H
#define KNIT_SRC_ERROR_H

#include "src/common.h"

namespace knit::detail {

inline constexpr size_t kErrorMax = 1024;

// The calling thread's message: "" (none).
void error_clear();
// Record the message (printf-style) and return `code`, so that a failure
// path reads `return error_set(-KNIT_EINVAL, "...", ...)`. A message
// recorded already by a deeper step is replaced.
int error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// The same with ": " and errno value e's text (strerror) appended.
int error_set_errno(int code, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// Whether the calling thread's message is not empty.
bool error_recorded();
// Copy untrusted text (a worker's boot message) of len bytes into dst
// (n bytes, n > 0): printable ASCII kept, a tab turned to a space, every
// other byte '?', a trailing newline dropped; at most n - 1 bytes and a
// terminating zero.
void error_sanitize(char *dst, size_t n, const char *src, size_t len);

} // namespace knit::detail

#endif
