/* SPDX-License-Identifier: MIT */
/*
 * arch/generic/atomic.h - every atomic operation libknitting uses, on the
 * compiler's __atomic builtins. An arch header that hand-tunes an operation
 * defines KNIT_HAVE_<OP> first and this file leaves that operation alone.
 *
 * Widths: 32 and 64 bits. Orders for loads: relaxed, acquire, seq_cst; for
 * stores: relaxed, release, seq_cst; for read-modify-writes: relaxed and
 * acq_rel (callers that need a StoreLoad edge use knit_fence_seq_cst()
 * explicitly, so that the pairing is visible at the call site).
 *
 * knit_cas_* is a strong compare-and-swap that returns the value it found
 * (equal to `expected` exactly when it succeeded). knit_fetch_* return the old
 * value; knit_add/or/and/xor_* return nothing (x86 can then use a plain
 * locked instruction instead of a CAS loop).
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/generic/atomic.h"
#endif
#ifndef KNIT_ARCH_GENERIC_ATOMIC_H
#define KNIT_ARCH_GENERIC_ATOMIC_H

#include <stdint.h>

#define KNIT__GEN_LOAD(W, ORD, CORD)                                                               \
	static inline uint##W##_t knit_load_##ORD##_##W(const uint##W##_t *p)                      \
	{                                                                                          \
		return __atomic_load_n(p, CORD);                                                   \
	}
#define KNIT__GEN_STORE(W, ORD, CORD)                                                              \
	static inline void knit_store_##ORD##_##W(uint##W##_t *p, uint##W##_t v)                   \
	{                                                                                          \
		__atomic_store_n(p, v, CORD);                                                      \
	}
#define KNIT__GEN_FETCH(OP, W, ORD, CORD)                                                          \
	static inline uint##W##_t knit_fetch_##OP##_##ORD##_##W(uint##W##_t *p, uint##W##_t v)     \
	{                                                                                          \
		return __atomic_fetch_##OP(p, v, CORD);                                            \
	}
#define KNIT__GEN_VOID(OP, W, ORD, CORD)                                                           \
	static inline void knit_##OP##_##ORD##_##W(uint##W##_t *p, uint##W##_t v)                  \
	{                                                                                          \
		(void)__atomic_fetch_##OP(p, v, CORD);                                             \
	}
#define KNIT__GEN_XCHG(W, ORD, CORD)                                                               \
	static inline uint##W##_t knit_xchg_##ORD##_##W(uint##W##_t *p, uint##W##_t v)             \
	{                                                                                          \
		return __atomic_exchange_n(p, v, CORD);                                            \
	}
#define KNIT__GEN_CAS(W, ORD, CORD, FORD)                                                          \
	static inline uint##W##_t knit_cas_##ORD##_##W(uint##W##_t *p, uint##W##_t e,              \
						       uint##W##_t d)                              \
	{                                                                                          \
		__atomic_compare_exchange_n(p, &e, d, 0, CORD, FORD);                              \
		return e;                                                                          \
	}

/* ---- loads ---- */
#ifndef KNIT_HAVE_LOAD_RELAXED_32
KNIT__GEN_LOAD(32, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_LOAD_RELAXED_64
KNIT__GEN_LOAD(64, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_LOAD_ACQUIRE_32
KNIT__GEN_LOAD(32, acquire, __ATOMIC_ACQUIRE)
#endif
#ifndef KNIT_HAVE_LOAD_ACQUIRE_64
KNIT__GEN_LOAD(64, acquire, __ATOMIC_ACQUIRE)
#endif
#ifndef KNIT_HAVE_LOAD_SEQ_CST_32
KNIT__GEN_LOAD(32, seq_cst, __ATOMIC_SEQ_CST)
#endif
#ifndef KNIT_HAVE_LOAD_SEQ_CST_64
KNIT__GEN_LOAD(64, seq_cst, __ATOMIC_SEQ_CST)
#endif

/* ---- stores ---- */
#ifndef KNIT_HAVE_STORE_RELAXED_32
KNIT__GEN_STORE(32, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_STORE_RELAXED_64
KNIT__GEN_STORE(64, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_STORE_RELEASE_32
KNIT__GEN_STORE(32, release, __ATOMIC_RELEASE)
#endif
#ifndef KNIT_HAVE_STORE_RELEASE_64
KNIT__GEN_STORE(64, release, __ATOMIC_RELEASE)
#endif
#ifndef KNIT_HAVE_STORE_SEQ_CST_32
KNIT__GEN_STORE(32, seq_cst, __ATOMIC_SEQ_CST)
#endif
#ifndef KNIT_HAVE_STORE_SEQ_CST_64
KNIT__GEN_STORE(64, seq_cst, __ATOMIC_SEQ_CST)
#endif

/* ---- exchange and compare-and-swap ---- */
#ifndef KNIT_HAVE_XCHG_ACQ_REL_32
KNIT__GEN_XCHG(32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_XCHG_ACQ_REL_64
KNIT__GEN_XCHG(64, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_CAS_ACQ_REL_32
KNIT__GEN_CAS(32, acq_rel, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#endif
#ifndef KNIT_HAVE_CAS_ACQ_REL_64
KNIT__GEN_CAS(64, acq_rel, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#endif
#ifndef KNIT_HAVE_CAS_RELAXED_32
KNIT__GEN_CAS(32, relaxed, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_CAS_RELAXED_64
KNIT__GEN_CAS(64, relaxed, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#endif

/* ---- fetch-and-op (return the old value) ---- */
#define KNIT__GEN_FETCH_ALL(OP, OPU)                                                               \
	KNIT__GEN_FETCH_IF(OP, OPU, 32, relaxed, RELAXED, __ATOMIC_RELAXED)                        \
	KNIT__GEN_FETCH_IF(OP, OPU, 64, relaxed, RELAXED, __ATOMIC_RELAXED)                        \
	KNIT__GEN_FETCH_IF(OP, OPU, 32, acq_rel, ACQ_REL, __ATOMIC_ACQ_REL)                        \
	KNIT__GEN_FETCH_IF(OP, OPU, 64, acq_rel, ACQ_REL, __ATOMIC_ACQ_REL)

#ifndef KNIT_HAVE_FETCH_ADD_RELAXED_32
KNIT__GEN_FETCH(add, 32, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_ADD_RELAXED_64
KNIT__GEN_FETCH(add, 64, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_ADD_ACQ_REL_32
KNIT__GEN_FETCH(add, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_FETCH_ADD_ACQ_REL_64
KNIT__GEN_FETCH(add, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_FETCH_OR_RELAXED_32
KNIT__GEN_FETCH(or, 32, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_OR_RELAXED_64
KNIT__GEN_FETCH(or, 64, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_OR_ACQ_REL_32
KNIT__GEN_FETCH(or, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_FETCH_OR_ACQ_REL_64
KNIT__GEN_FETCH(or, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_FETCH_AND_RELAXED_32
KNIT__GEN_FETCH(and, 32, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_AND_RELAXED_64
KNIT__GEN_FETCH(and, 64, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_AND_ACQ_REL_32
KNIT__GEN_FETCH(and, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_FETCH_AND_ACQ_REL_64
KNIT__GEN_FETCH(and, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_FETCH_XOR_RELAXED_32
KNIT__GEN_FETCH(xor, 32, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_XOR_RELAXED_64
KNIT__GEN_FETCH(xor, 64, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_FETCH_XOR_ACQ_REL_32
KNIT__GEN_FETCH(xor, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_FETCH_XOR_ACQ_REL_64
KNIT__GEN_FETCH(xor, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif

/* ---- op without result ---- */
#ifndef KNIT_HAVE_ADD_RELAXED_32
KNIT__GEN_VOID(add, 32, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_ADD_RELAXED_64
KNIT__GEN_VOID(add, 64, relaxed, __ATOMIC_RELAXED)
#endif
#ifndef KNIT_HAVE_ADD_ACQ_REL_32
KNIT__GEN_VOID(add, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_ADD_ACQ_REL_64
KNIT__GEN_VOID(add, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_OR_ACQ_REL_32
KNIT__GEN_VOID(or, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_OR_ACQ_REL_64
KNIT__GEN_VOID(or, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_AND_ACQ_REL_32
KNIT__GEN_VOID(and, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_AND_ACQ_REL_64
KNIT__GEN_VOID(and, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_XOR_ACQ_REL_32
KNIT__GEN_VOID(xor, 32, acq_rel, __ATOMIC_ACQ_REL)
#endif
#ifndef KNIT_HAVE_XOR_ACQ_REL_64
KNIT__GEN_VOID(xor, 64, acq_rel, __ATOMIC_ACQ_REL)
#endif

/* ---- fences and the spin hint ---- */
#ifndef KNIT_HAVE_COMPILER_BARRIER
static inline void knit_compiler_barrier(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#endif
/*
 * GCC (11+) refuses __atomic_thread_fence under -fsanitize=thread with a
 * -Wtsan warning, which -Werror turns into a failed SANITIZE=thread build.
 * The fence still does its job on the hardware; ThreadSanitizer simply does
 * not model stand-alone fences, so it cannot see a release/acquire edge made
 * of fences plus relaxed accesses. Data handed over that way must itself be
 * accessed atomically (as everything in libknitting is) or TSan may report a
 * false race.
 */
#if defined(__SANITIZE_THREAD__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#define KNIT__TSAN_FENCE_PRAGMA 1
#endif
#ifndef KNIT_HAVE_FENCE_ACQUIRE
static inline void knit_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
#endif
#ifndef KNIT_HAVE_FENCE_RELEASE
static inline void knit_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
#endif
#ifndef KNIT_HAVE_FENCE_SEQ_CST
static inline void knit_fence_seq_cst(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
#ifdef KNIT__TSAN_FENCE_PRAGMA
#pragma GCC diagnostic pop
#undef KNIT__TSAN_FENCE_PRAGMA
#endif
#ifndef KNIT_HAVE_CPU_RELAX
/* No portable spin hint: a compiler barrier keeps the loop from collapsing. */
static inline void knit_cpu_relax(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#endif
#ifndef KNIT_HAVE_PREFETCH_WRITE
/* A hint only: no effect on what any thread observes. */
static inline void knit_prefetch_write(const void *p) { __builtin_prefetch(p, 1, 3); }
#endif

#undef KNIT__GEN_LOAD
#undef KNIT__GEN_STORE
#undef KNIT__GEN_FETCH
#undef KNIT__GEN_VOID
#undef KNIT__GEN_XCHG
#undef KNIT__GEN_CAS
#undef KNIT__GEN_FETCH_ALL

#endif /* KNIT_ARCH_GENERIC_ATOMIC_H */
