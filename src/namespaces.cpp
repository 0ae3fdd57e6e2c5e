// SPDX-License-Identifier: MIT
// src/namespaces.cpp - a worker's own network and IPC namespaces
// (src/namespaces.h has the contract).
#include "src/common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "src/error.h"
#include "src/namespaces.h"
#include "src/sysfile.h"

namespace knit::detail {

namespace {

constexpr uint32_t kKnown = KNIT_SANDBOX_NEWNET | KNIT_SANDBOX_NEWIPC;
// SECBIT_NOROOT | SECBIT_NOROOT_LOCKED (linux/securebits.h): uid 0 gains no
// capability on exec.
constexpr unsigned long kNoRoot = (1ul << 0) | (1ul << 1);

// Write text to /proc/self/NAME. 0 or the errno.
int proc_write(const char *name, const char *text)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/%s", name);
	return sysfile_write(path, text);
}

const char *what(uint32_t ns)
{
	return ns == (KNIT_SANDBOX_NEWNET | KNIT_SANDBOX_NEWIPC) ? "network and IPC namespaces"
	       : ns == KNIT_SANDBOX_NEWNET                       ? "a network namespace"
								 : "an IPC namespace";
}

} // namespace

int namespaces_take(const knit_sandbox_t &s, uint32_t *out)
{
	*out = 0;
	if ((s.namespaces & ~kKnown) != 0)
		return error_set(-KNIT_EINVAL, "sandbox->namespaces 0x%x has unknown bits",
				 s.namespaces);
	if (s.reserved1 != 0)
		return error_set(-KNIT_EINVAL, "sandbox->reserved1 is %u, not 0", s.reserved1);
	*out = s.namespaces;
	return 0;
}

int namespaces_enter(uint32_t ns, char *why, size_t why_size)
{
	if (ns == 0)
		return 0;
	if ((ns & ~kKnown) != 0) {
		snprintf(why, why_size, "boot record out of range (namespaces)");
		return KNIT_EPROTO;
	}
	const int flags = ((ns & KNIT_SANDBOX_NEWNET) != 0 ? CLONE_NEWNET : 0) |
			  ((ns & KNIT_SANDBOX_NEWIPC) != 0 ? CLONE_NEWIPC : 0);
	if (unshare(flags) == 0)
		return 0;
	const int e = errno;
	const uid_t uid = geteuid();
	const gid_t gid = getegid();
	if (e != EPERM) {
		snprintf(why, why_size, "cannot enter %s of its own: %s", what(ns), strerror(e));
		return KNIT_ESYSTEM;
	}
	// Not privileged: in a user namespace of our own, mapping our ids to
	// themselves.
	if (unshare(CLONE_NEWUSER | flags) != 0) {
		const int e2 = errno;
		snprintf(why, why_size,
			 "cannot enter %s of its own: %s as uid %u, and %s in a user namespace "
			 "of its own (are user namespaces allowed? user.max_user_namespaces)",
			 what(ns), strerror(e), (unsigned)uid, strerror(e2));
		return KNIT_ESYSTEM;
	}
	char map[64];
	int we = proc_write("setgroups", "deny");
	if (we == 0) {
		snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
		we = proc_write("uid_map", map);
	}
	if (we == 0) {
		snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
		we = proc_write("gid_map", map);
	}
	if (we != 0) {
		snprintf(why, why_size, "cannot map uid %u, gid %u in its user namespace: %s",
			 (unsigned)uid, (unsigned)gid, strerror(we));
		return KNIT_ESYSTEM;
	}
	// The new user namespace gave us every capability in it (over the
	// namespaces just made): a task gets none of them, and none back by an
	// exec (as uid 0 of the namespace, where the host is root without
	// CAP_SYS_ADMIN): no root privilege on exec, an empty bounding and
	// ambient set, then nothing effective, permitted or inheritable.
	if (prctl(PR_SET_SECUREBITS, kNoRoot, 0, 0, 0) != 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
		snprintf(why, why_size, "cannot lock the capabilities of its user namespace: %s",
			 strerror(errno));
		return KNIT_ESYSTEM;
	}
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno == EINVAL)
			break; // past the last capability this kernel has
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct none[2];
	memset(none, 0, sizeof none);
	if (syscall(SYS_capset, &hdr, none) != 0) {
		snprintf(why, why_size, "cannot drop the capabilities of its user namespace: %s",
			 strerror(errno));
		return KNIT_ESYSTEM;
	}
	// The credentials changed: the parent-death signal may have been
	// cleared with them. Set again (the caller looks at the parent after).
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	return 0;
}

} // namespace knit::detail
