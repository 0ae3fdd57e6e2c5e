/* SPDX-License-Identifier: MIT */
/*
 * arch/generic/futex.h - futex wait/wake with one typed result.
 *
 * Built only on knit_syscall6, so it is the same on every architecture.
 * Waits take an absolute CLOCK_MONOTONIC deadline in nanoseconds (negative
 * = no deadline) and use FUTEX_WAIT_BITSET, whose timeout is absolute, so a
 * caller that is interrupted and retries never stretches its deadline.
 *
 * Every futex return is a hint: a waiter may wake spuriously, and "woken"
 * does not mean the word changed. Callers always re-check their word.
 *
 * `shared` selects the non-PRIVATE futex: required whenever the word lives in
 * memory that may be mapped by another process (memfd, MAP_SHARED file). The
 * private form is cheaper (no inode/mm key lookup) for thread-only memory.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/generic/futex.h"
#endif
#ifndef KNIT_ARCH_GENERIC_FUTEX_H
#define KNIT_ARCH_GENERIC_FUTEX_H

#include <linux/futex.h>
#include <stdint.h>
#include <time.h>

#ifndef FUTEX_32
#define FUTEX_32 2
#endif
#ifndef FUTEX_BITSET_MATCH_ANY
#define FUTEX_BITSET_MATCH_ANY 0xffffffff
#endif

/* What a wait ended with; negative values are -errno for real errors
 * (-EFAULT bad address, -EINVAL bad arguments, -ENOSYS no such call). */
enum knit_futex_result {
	KNIT_FUTEX_WOKEN = 0,         /* a wake arrived (or a spurious return) */
	KNIT_FUTEX_VALUE_CHANGED = 1, /* *word != expected when the kernel looked */
	KNIT_FUTEX_TIMED_OUT = 2,     /* the deadline passed */
	KNIT_FUTEX_INTERRUPTED = 3,   /* a signal handler ran */
};

static inline int64_t knit_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline struct timespec knit__ns_to_timespec(int64_t ns)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	return ts;
}

static inline int knit__futex_map(long ret)
{
	if (ret >= 0)
		return KNIT_FUTEX_WOKEN;
	switch (-ret) {
	case EAGAIN:
		return KNIT_FUTEX_VALUE_CHANGED;
	case ETIMEDOUT:
		return KNIT_FUTEX_TIMED_OUT;
	case EINTR:
		return KNIT_FUTEX_INTERRUPTED;
	default:
		return (int)ret;
	}
}

/*
 * Sleep while *word == expected, until woken or until deadline_ns
 * (CLOCK_MONOTONIC, absolute; < 0 waits without a deadline).
 */
static inline int knit_futex_wait(uint32_t *word, uint32_t expected, int64_t deadline_ns,
				  int shared)
{
	struct timespec ts;
	struct timespec *tsp = 0;
	int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	if (deadline_ns >= 0) {
		ts = knit__ns_to_timespec(deadline_ns);
		tsp = &ts;
	}
	return knit__futex_map(knit_syscall6(SYS_futex, (long)word, op, (long)expected, (long)tsp,
					     0, (long)FUTEX_BITSET_MATCH_ANY));
}

/* Wake at most n waiters on word; returns how many were woken, or -errno. */
static inline int knit_futex_wake(uint32_t *word, int n, int shared)
{
	int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	return (int)knit_syscall3(SYS_futex, (long)word, op, n);
}

/* One word of a futex_waitv(2) set; layout is the kernel's struct futex_waitv. */
struct knit_futex_waiter {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t reserved;
};

static inline void knit_futex_waiter_set(struct knit_futex_waiter *w, uint32_t *word,
					 uint32_t expected, int shared)
{
	w->val = expected;
	w->uaddr = (uint64_t)(uintptr_t)word;
	w->flags = FUTEX_32 | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	w->reserved = 0;
}

/*
 * Does this kernel have futex_waitv (Linux 5.16+)? A call with no waiters is
 * refused with -EINVAL where it exists and -ENOSYS where it does not. Costs a
 * syscall: callers probe once and keep the answer.
 */
static inline int knit_futex_waitv_supported(void)
{
	return knit_syscall6(SYS_futex_waitv, 0, 0, 0, 0, CLOCK_MONOTONIC, 0) != -ENOSYS;
}

/*
 * Sleep until any of n words differs from its expected value or is woken.
 * On KNIT_FUTEX_WOKEN, *which (if non-null) is the index that was woken.
 * Without futex_waitv it falls back to waiting on words[0] in slices of at
 * most 1 ms, re-checking every word between slices: correct, but a wake on
 * another word costs up to one slice (documented; the runtime prefers one
 * word per waiter).
 */
static inline int knit_futex_waitv(struct knit_futex_waiter *w, unsigned n, int64_t deadline_ns,
				   int have_waitv, unsigned *which)
{
	if (have_waitv) {
		struct timespec ts;
		struct timespec *tsp = 0;
		long ret;
		if (deadline_ns >= 0) {
			ts = knit__ns_to_timespec(deadline_ns);
			tsp = &ts;
		}
		ret = knit_syscall6(SYS_futex_waitv, (long)w, (long)n, 0, (long)tsp,
				    CLOCK_MONOTONIC, 0);
		if (ret >= 0 && which)
			*which = (unsigned)ret;
		return knit__futex_map(ret);
	}
	for (;;) {
		int64_t slice = knit_now_ns() + 1000000;
		unsigned i;
		int r;
		for (i = 0; i < n; i++) {
			uint32_t *word = (uint32_t *)(uintptr_t)w[i].uaddr;
			if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != (uint32_t)w[i].val)
				return KNIT_FUTEX_VALUE_CHANGED;
		}
		if (deadline_ns >= 0 && slice > deadline_ns)
			slice = deadline_ns;
		r = knit_futex_wait((uint32_t *)(uintptr_t)w[0].uaddr, (uint32_t)w[0].val, slice,
				    !(w[0].flags & FUTEX_PRIVATE_FLAG));
		if (r == KNIT_FUTEX_WOKEN) {
			if (which)
				*which = 0;
			return r;
		}
		if (r != KNIT_FUTEX_TIMED_OUT)
			return r;
		if (deadline_ns >= 0 && knit_now_ns() >= deadline_ns)
			return KNIT_FUTEX_TIMED_OUT;
	}
}

#endif /* KNIT_ARCH_GENERIC_FUTEX_H */
