// SPDX-License-Identifier: MIT
// src/namespaces.h - a worker process's own network and IPC namespaces
// (knit_sandbox_t.namespaces): the host's check of the option, and the
// worker's unshare, done right after its boot record is read and before
// the task library is loaded (its constructors and its init run inside).
//
// Where the kernel lets the worker (root, CAP_SYS_ADMIN) it unshares them
// directly. Refused (EPERM: not privileged), it unshares them together with
// a user namespace of its own that maps its uid and gid to themselves (the
// worker keeps its identity; setgroups is denied), then drops every
// capability that namespace gave it. Refused again (user namespaces off,
// user.max_user_namespaces reached), the worker refuses to boot: create
// fails with -KNIT_ESYSTEM and the reason, never a worker left outside.
//
// The pool's memory (memfds, or a named POSIX shm object: a file of the
// /dev/shm tmpfs, which no IPC namespace scopes), its doorbells (futexes
// on that memory) and its descriptors work alike in any namespace.
#ifndef KNIT_SRC_NAMESPACES_H
#define KNIT_SRC_NAMESPACES_H

#include "src/common.h"

#include "knitting.h"

namespace knit::detail {

// knit_pool_create: the namespaces member of s (0 for a shorter struct).
// 0 (*out: the flags) or -KNIT_EINVAL, the message recorded.
int namespaces_take(const knit_sandbox_t &s, uint32_t *out);

// The worker: enter new namespaces for ns (enum knit_sandbox_namespaces;
// 0: nothing). Single-threaded callers only (a user namespace demands it).
// 0, or KNIT_EPROTO (unknown bits), KNIT_ESYSTEM with why (why_size bytes).
int namespaces_enter(uint32_t ns, char *why, size_t why_size);

} // namespace knit::detail

#endif
