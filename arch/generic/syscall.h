/* SPDX-License-Identifier: MIT */
/*
 * arch/generic/syscall.h - system calls through libc's syscall(3) when the
 * architecture has no raw entry, and the typed wrappers every caller uses.
 *
 * Every wrapper returns a non-negative result or -errno and leaves errno as it
 * found it (the libc fallback saves and restores it), so callers have exactly
 * one error channel.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/generic/syscall.h"
#endif
#ifndef KNIT_ARCH_GENERIC_SYSCALL_H
#define KNIT_ARCH_GENERIC_SYSCALL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef KNIT_HAVE_RAW_SYSCALL
static inline long knit_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	int saved = errno;
	long ret = syscall(nr, a1, a2, a3, a4, a5, a6);
	if (ret == -1) {
		ret = -(long)errno;
	}
	errno = saved;
	return ret;
}
#endif

static inline long knit_syscall0(long nr) { return knit_syscall6(nr, 0, 0, 0, 0, 0, 0); }
static inline long knit_syscall1(long nr, long a1) { return knit_syscall6(nr, a1, 0, 0, 0, 0, 0); }
static inline long knit_syscall2(long nr, long a1, long a2)
{
	return knit_syscall6(nr, a1, a2, 0, 0, 0, 0);
}
static inline long knit_syscall3(long nr, long a1, long a2, long a3)
{
	return knit_syscall6(nr, a1, a2, a3, 0, 0, 0);
}
static inline long knit_syscall4(long nr, long a1, long a2, long a3, long a4)
{
	return knit_syscall6(nr, a1, a2, a3, a4, 0, 0);
}

/* Numbers that older libc headers may not name (same on all 64-bit arches
 * that use the generic table, and on x86-64 which adopted them). */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* eventfd2(2): returns the fd or -errno. */
static inline int knit_sys_eventfd2(unsigned initval, int flags)
{
	return (int)knit_syscall2(SYS_eventfd2, (long)initval, (long)flags);
}

/* memfd_create(2): returns the fd or -errno. */
static inline int knit_sys_memfd_create(const char *name, unsigned flags)
{
	return (int)knit_syscall2(SYS_memfd_create, (long)name, (long)flags);
}

/* pidfd_open(2): returns the fd or -errno (-ENOSYS before Linux 5.3). */
static inline int knit_sys_pidfd_open(int pid, unsigned flags)
{
	return (int)knit_syscall2(SYS_pidfd_open, (long)pid, (long)flags);
}

/* pidfd_send_signal(2): 0 or -errno (-ENOSYS before Linux 5.1). `info` is
 * a siginfo_t or NULL (passed untyped so this header needs no <signal.h>). */
static inline int knit_sys_pidfd_send_signal(int pidfd, int sig, void *info, unsigned flags)
{
	return (int)knit_syscall4(SYS_pidfd_send_signal, pidfd, sig, (long)info, (long)flags);
}

/* waitid(2), the raw call (its fifth argument is a struct rusage * or
 * NULL): 0 or -errno. idtype 3 is P_PIDFD (Linux 5.4), which libc headers
 * before glibc 2.36 do not name; `infop` is a siginfo_t. */
static inline int knit_sys_waitid(int idtype, int id, void *infop, int options, void *rusage)
{
	return (int)knit_syscall6(SYS_waitid, idtype, id, (long)infop, options, (long)rusage, 0);
}

/* mmap(2): returns the address, or -errno cast to a pointer; test with
 * knit_sys_mmap_failed(). */
static inline void *knit_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
	return (void *)knit_syscall6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off);
}
static inline int knit_sys_mmap_failed(const void *p) { return (uintptr_t)p > (uintptr_t)-4096; }
static inline int knit_sys_munmap(void *addr, size_t len)
{
	return (int)knit_syscall2(SYS_munmap, (long)addr, (long)len);
}
static inline int knit_sys_mprotect(void *addr, size_t len, int prot)
{
	return (int)knit_syscall3(SYS_mprotect, (long)addr, (long)len, prot);
}
static inline int knit_sys_close(int fd) { return (int)knit_syscall1(SYS_close, fd); }
static inline long knit_sys_read(int fd, void *buf, size_t n)
{
	return knit_syscall3(SYS_read, fd, (long)buf, (long)n);
}
static inline long knit_sys_write(int fd, const void *buf, size_t n)
{
	return knit_syscall3(SYS_write, fd, (long)buf, (long)n);
}
static inline int knit_sys_ftruncate(int fd, long len)
{
	return (int)knit_syscall2(SYS_ftruncate, fd, len);
}
static inline int knit_sys_gettid(void) { return (int)knit_syscall0(SYS_gettid); }

/* fcntl(2) with an integer argument, fstat(2) (`st` is a struct stat),
 * madvise(2): the result or -errno. */
static inline int knit_sys_fcntl(int fd, int cmd, long arg)
{
	return (int)knit_syscall3(SYS_fcntl, fd, cmd, arg);
}
static inline int knit_sys_fstat(int fd, void *st)
{
	return (int)knit_syscall2(SYS_fstat, fd, (long)st);
}
static inline int knit_sys_madvise(void *addr, size_t len, int advice)
{
	return (int)knit_syscall3(SYS_madvise, (long)addr, (long)len, advice);
}

/* timerfd_create(2) / timerfd_settime(2): the fd or 0, else -errno. `its`
 * is a struct itimerspec (passed untyped so this header needs no <time.h>). */
static inline int knit_sys_timerfd_create(int clockid, int flags)
{
	return (int)knit_syscall2(SYS_timerfd_create, clockid, flags);
}
static inline int knit_sys_timerfd_settime(int fd, int flags, const void *its)
{
	return (int)knit_syscall4(SYS_timerfd_settime, fd, flags, (long)its, 0);
}

/* epoll_create1(2) / epoll_ctl(2): the fd or 0, else -errno. `ev` is a
 * struct epoll_event (packed on x86-64: pass libc's type). */
static inline int knit_sys_epoll_create1(int flags)
{
	return (int)knit_syscall1(SYS_epoll_create1, flags);
}
static inline int knit_sys_epoll_ctl(int epfd, int op, int fd, void *ev)
{
	return (int)knit_syscall4(SYS_epoll_ctl, epfd, op, fd, (long)ev);
}

/* Landlock (Linux 5.13): landlock_create_ruleset(2) returns the ruleset's
 * fd, or with attr NULL, size 0 and flags LANDLOCK_CREATE_RULESET_VERSION
 * (1) the kernel's ABI; landlock_add_rule(2), landlock_restrict_self(2): 0.
 * Else -errno (-ENOSYS: not built in; -EOPNOTSUPP: disabled at boot). `attr`
 * is the call's struct, passed untyped (its size says which ABI's). */
static inline int knit_sys_landlock_create_ruleset(const void *attr, size_t size, unsigned flags)
{
	return (int)knit_syscall3(SYS_landlock_create_ruleset, (long)attr, (long)size, (long)flags);
}
static inline int knit_sys_landlock_add_rule(int ruleset, int type, const void *attr,
					     unsigned flags)
{
	return (int)knit_syscall4(SYS_landlock_add_rule, ruleset, type, (long)attr, (long)flags);
}
static inline int knit_sys_landlock_restrict_self(int ruleset, unsigned flags)
{
	return (int)knit_syscall2(SYS_landlock_restrict_self, ruleset, (long)flags);
}

#endif /* KNIT_ARCH_GENERIC_SYSCALL_H */
