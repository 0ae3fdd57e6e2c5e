// SPDX-License-Identifier: MIT
// src/sysfile.h - the room for the small kernel files the runtime reads and
// writes: /proc (a worker's statm and stat, the uid and gid maps), cgroup
// v2 interface files (limits, cgroup.kill, memory.events).
//
// Contract: each call opens the file with O_CLOEXEC, does one read or one
// write, and closes it; nothing is buffered across calls, nothing here
// allocates, and a failure is a return value (errno may be changed, no
// message is recorded: the caller knows what the file was for). A read
// fills at most n - 1 bytes and always leaves buf NUL-terminated (an empty
// string when nothing was read), so a caller may parse it as text. These
// files are the kernel's, but a path may name anything (a cgroup directory
// an option named): a caller treats what it reads as untrusted text.
#ifndef KNIT_SRC_SYSFILE_H
#define KNIT_SRC_SYSFILE_H

#include "src/common.h"

#include <sys/types.h>

namespace knit::detail {

// Write text (its strlen) into path with one write: 0, or the errno (EIO
// for a short write). The file must exist (no O_CREAT).
int sysfile_write(const char *path, const char *text);

// Read up to n - 1 bytes of path into buf (n >= 1), NUL-terminated: the
// bytes read, or -1 when the file cannot be opened or read.
ssize_t sysfile_read(const char *path, char *buf, size_t n);

// The first line of path into buf (newline cut, n >= 1), "" when the file
// cannot be read.
void sysfile_line(const char *path, char *buf, size_t n);

// The value of the line "KEY VALUE" of a flat-keyed file (cgroup v2's
// memory.events: "oom_kill 3"), or -1 when the file or the key is missing
// or the value is not a number >= 0.
int64_t sysfile_keyed(const char *path, const char *key);

} // namespace knit::detail

#endif
