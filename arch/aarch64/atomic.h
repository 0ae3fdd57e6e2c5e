/* SPDX-License-Identifier: MIT */
/*
 * arch/aarch64/atomic.h - the operations AArch64 does better by hand.
 *
 * Loads and stores use the RCsc ldar/stlr pair: acquire loads and release
 * stores, and because ARMv8 orders stlr before a later ldar, they are also
 * the seq_cst load and store. The full fence is `dmb ish` (inner shareable:
 * every core that can run our threads or a sibling process); the acquire
 * fence is `dmb ishld`.
 *
 * Read-modify-writes: with LSE (ARMv8.1, __ARM_FEATURE_ATOMICS) single
 * ldaddal/swpal/casal instructions, otherwise exclusive-monitor loops
 * (ldaxr/stlxr). The `al` forms are acquire+release.
 *
 * cpu_relax is `yield`: a hint to SMT siblings and to hypervisors, cheap
 * everywhere (some code prefers `isb` for a longer pause; we bound our spins
 * by time, so the shorter hint costs nothing).
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/aarch64/atomic.h"
#endif
#ifndef KNIT_ARCH_AARCH64_ATOMIC_H
#define KNIT_ARCH_AARCH64_ATOMIC_H

#include <stdint.h>

#define KNIT_HAVE_COMPILER_BARRIER 1
static inline void knit_compiler_barrier(void) { __asm__ __volatile__("" ::: "memory"); }
#define KNIT_HAVE_CPU_RELAX 1
static inline void knit_cpu_relax(void) { __asm__ __volatile__("yield" ::: "memory"); }
#define KNIT_HAVE_FENCE_ACQUIRE 1
#define KNIT_HAVE_FENCE_RELEASE 1
#define KNIT_HAVE_FENCE_SEQ_CST 1
static inline void knit_fence_acquire(void) { __asm__ __volatile__("dmb ishld" ::: "memory"); }
static inline void knit_fence_release(void) { __asm__ __volatile__("dmb ish" ::: "memory"); }
static inline void knit_fence_seq_cst(void) { __asm__ __volatile__("dmb ish" ::: "memory"); }

/* "w" registers for 32-bit, "x" for 64-bit: the %w / %x operand modifiers. */
#define KNIT__A64_LOAD(W, R, INSN, ORD)                                                            \
	static inline uint##W##_t knit_load_##ORD##_##W(const uint##W##_t *p)                      \
	{                                                                                          \
		uint##W##_t v;                                                                     \
		__asm__ __volatile__(INSN " %" R "0, %1" : "=r"(v) : "Q"(*p) : "memory");          \
		return v;                                                                          \
	}
#define KNIT_HAVE_LOAD_ACQUIRE_32 1
#define KNIT_HAVE_LOAD_ACQUIRE_64 1
#define KNIT_HAVE_LOAD_SEQ_CST_32 1
#define KNIT_HAVE_LOAD_SEQ_CST_64 1
KNIT__A64_LOAD(32, "w", "ldar", acquire)
KNIT__A64_LOAD(64, "x", "ldar", acquire)
KNIT__A64_LOAD(32, "w", "ldar", seq_cst)
KNIT__A64_LOAD(64, "x", "ldar", seq_cst)

#define KNIT__A64_STORE(W, R, ORD)                                                                 \
	static inline void knit_store_##ORD##_##W(uint##W##_t *p, uint##W##_t v)                   \
	{                                                                                          \
		__asm__ __volatile__("stlr %" R "1, %0" : "=Q"(*p) : "r"(v) : "memory");           \
	}
#define KNIT_HAVE_STORE_RELEASE_32 1
#define KNIT_HAVE_STORE_RELEASE_64 1
#define KNIT_HAVE_STORE_SEQ_CST_32 1
#define KNIT_HAVE_STORE_SEQ_CST_64 1
KNIT__A64_STORE(32, "w", release)
KNIT__A64_STORE(64, "x", release)
KNIT__A64_STORE(32, "w", seq_cst)
KNIT__A64_STORE(64, "x", seq_cst)

#define KNIT_HAVE_FETCH_ADD_ACQ_REL_32 1
#define KNIT_HAVE_FETCH_ADD_ACQ_REL_64 1
#define KNIT_HAVE_XCHG_ACQ_REL_32 1
#define KNIT_HAVE_XCHG_ACQ_REL_64 1
#define KNIT_HAVE_CAS_ACQ_REL_32 1
#define KNIT_HAVE_CAS_ACQ_REL_64 1

#if defined(__ARM_FEATURE_ATOMICS)
#define KNIT_AARCH64_LSE 1
#define KNIT__A64_LSE_RMW(NAME, INSN, W, R)                                                        \
	static inline uint##W##_t NAME(uint##W##_t *p, uint##W##_t v)                              \
	{                                                                                          \
		uint##W##_t old;                                                                   \
		__asm__ __volatile__(INSN " %" R "2, %" R "0, %1"                                  \
				     : "=r"(old), "+Q"(*p)                                         \
				     : "r"(v)                                                      \
				     : "memory");                                                  \
		return old;                                                                        \
	}
KNIT__A64_LSE_RMW(knit_fetch_add_acq_rel_32, "ldaddal", 32, "w")
KNIT__A64_LSE_RMW(knit_fetch_add_acq_rel_64, "ldaddal", 64, "x")
KNIT__A64_LSE_RMW(knit_xchg_acq_rel_32, "swpal", 32, "w")
KNIT__A64_LSE_RMW(knit_xchg_acq_rel_64, "swpal", 64, "x")
#define KNIT__A64_LSE_CAS(W, R)                                                                    \
	static inline uint##W##_t knit_cas_acq_rel_##W(uint##W##_t *p, uint##W##_t e,              \
						       uint##W##_t d)                              \
	{                                                                                          \
		__asm__ __volatile__("casal %" R "0, %" R "2, %1"                                  \
				     : "+r"(e), "+Q"(*p)                                           \
				     : "r"(d)                                                      \
				     : "memory");                                                  \
		return e;                                                                          \
	}
KNIT__A64_LSE_CAS(32, "w")
KNIT__A64_LSE_CAS(64, "x")
#undef KNIT__A64_LSE_RMW
#undef KNIT__A64_LSE_CAS
#else
/* LL/SC: ldaxr (acquire) ... stlxr (release), retried until the store wins. */
#define KNIT__A64_LLSC_ADD(W, R)                                                                   \
	static inline uint##W##_t knit_fetch_add_acq_rel_##W(uint##W##_t *p, uint##W##_t v)        \
	{                                                                                          \
		uint##W##_t old, tmp;                                                              \
		uint32_t fail;                                                                     \
		__asm__ __volatile__("1: ldaxr %" R "0, %3\n"                                      \
				     "   add %" R "1, %" R "0, %" R "4\n"                          \
				     "   stlxr %w2, %" R "1, %3\n"                                 \
				     "   cbnz %w2, 1b\n"                                           \
				     : "=&r"(old), "=&r"(tmp), "=&r"(fail), "+Q"(*p)               \
				     : "r"(v)                                                      \
				     : "memory");                                                  \
		return old;                                                                        \
	}
#define KNIT__A64_LLSC_XCHG(W, R)                                                                  \
	static inline uint##W##_t knit_xchg_acq_rel_##W(uint##W##_t *p, uint##W##_t v)             \
	{                                                                                          \
		uint##W##_t old;                                                                   \
		uint32_t fail;                                                                     \
		__asm__ __volatile__("1: ldaxr %" R "0, %2\n"                                      \
				     "   stlxr %w1, %" R "3, %2\n"                                 \
				     "   cbnz %w1, 1b\n"                                           \
				     : "=&r"(old), "=&r"(fail), "+Q"(*p)                           \
				     : "r"(v)                                                      \
				     : "memory");                                                  \
		return old;                                                                        \
	}
#define KNIT__A64_LLSC_CAS(W, R)                                                                   \
	static inline uint##W##_t knit_cas_acq_rel_##W(uint##W##_t *p, uint##W##_t e,              \
						       uint##W##_t d)                              \
	{                                                                                          \
		uint##W##_t old;                                                                   \
		uint32_t fail;                                                                     \
		__asm__ __volatile__("1: ldaxr %" R "0, %2\n"                                      \
				     "   cmp %" R "0, %" R "3\n"                                   \
				     "   b.ne 2f\n"                                                \
				     "   stlxr %w1, %" R "4, %2\n"                                 \
				     "   cbnz %w1, 1b\n"                                           \
				     "   b 3f\n"                                                   \
				     "2: clrex\n"                                                  \
				     "3:\n"                                                        \
				     : "=&r"(old), "=&r"(fail), "+Q"(*p)                           \
				     : "r"(e), "r"(d)                                              \
				     : "memory", "cc");                                            \
		return old;                                                                        \
	}
KNIT__A64_LLSC_ADD(32, "w")
KNIT__A64_LLSC_ADD(64, "x")
KNIT__A64_LLSC_XCHG(32, "w")
KNIT__A64_LLSC_XCHG(64, "x")
KNIT__A64_LLSC_CAS(32, "w")
KNIT__A64_LLSC_CAS(64, "x")
#undef KNIT__A64_LLSC_ADD
#undef KNIT__A64_LLSC_XCHG
#undef KNIT__A64_LLSC_CAS
#endif

#undef KNIT__A64_LOAD
#undef KNIT__A64_STORE

#endif /* KNIT_ARCH_AARCH64_ATOMIC_H */
