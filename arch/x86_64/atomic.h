/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/atomic.h - the operations x86-64 does better by hand.
 *
 * x86-64 is TSO: every plain load already has acquire semantics and every
 * plain store release semantics, so those are a mov plus a compiler barrier.
 * Every lock-prefixed instruction is a full barrier, which is why
 * acq_rel read-modify-writes are single locked instructions and why the
 * StoreLoad fence is a locked no-op on the stack rather than mfence: mfence
 * also drains write-combining buffers and orders non-temporal stores (which
 * this library never issues) and costs noticeably more on most cores. The
 * locked add of 0 to a word below the stack pointer touches a line the core
 * owns and changes no value, so it cannot disturb anything living there.
 *
 * fetch_or/and/xor that must return the old value have no single x86
 * instruction; they stay on the generic layer (a cmpxchg loop either way).
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/x86_64/atomic.h"
#endif
#ifndef KNIT_ARCH_X86_64_ATOMIC_H
#define KNIT_ARCH_X86_64_ATOMIC_H

#include <stdint.h>

#define KNIT_HAVE_COMPILER_BARRIER 1
static inline void knit_compiler_barrier(void) { __asm__ __volatile__("" ::: "memory"); }

#define KNIT_HAVE_CPU_RELAX 1
static inline void knit_cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }

/* PREFETCHW: fetch the line for writing (decodes as a NOP where absent). */
#define KNIT_HAVE_PREFETCH_WRITE 1
static inline void knit_prefetch_write(const void *p)
{
	__asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)p));
}

#define KNIT_HAVE_FENCE_ACQUIRE 1
#define KNIT_HAVE_FENCE_RELEASE 1
#define KNIT_HAVE_FENCE_SEQ_CST 1
static inline void knit_fence_acquire(void) { __asm__ __volatile__("" ::: "memory"); }
static inline void knit_fence_release(void) { __asm__ __volatile__("" ::: "memory"); }
static inline void knit_fence_seq_cst(void)
{
	__asm__ __volatile__("lock; addl $0,-4(%%rsp)" ::: "memory", "cc");
}

/* Loads: a mov; the clobber keeps the compiler from moving accesses across. */
#define KNIT__X86_LOAD(W, SFX, ORD)                                                                \
	static inline uint##W##_t knit_load_##ORD##_##W(const uint##W##_t *p)                      \
	{                                                                                          \
		uint##W##_t v;                                                                     \
		__asm__ __volatile__("mov" SFX " %1, %0" : "=r"(v) : "m"(*p) : "memory");          \
		return v;                                                                          \
	}
#define KNIT_HAVE_LOAD_RELAXED_32 1
#define KNIT_HAVE_LOAD_RELAXED_64 1
#define KNIT_HAVE_LOAD_ACQUIRE_32 1
#define KNIT_HAVE_LOAD_ACQUIRE_64 1
#define KNIT_HAVE_LOAD_SEQ_CST_32 1
#define KNIT_HAVE_LOAD_SEQ_CST_64 1
KNIT__X86_LOAD(32, "l", relaxed)
KNIT__X86_LOAD(64, "q", relaxed)
KNIT__X86_LOAD(32, "l", acquire)
KNIT__X86_LOAD(64, "q", acquire)
/* seq_cst loads are plain too: the seq_cst stores below carry the fence. */
KNIT__X86_LOAD(32, "l", seq_cst)
KNIT__X86_LOAD(64, "q", seq_cst)

#define KNIT__X86_STORE(W, SFX, ORD)                                                               \
	static inline void knit_store_##ORD##_##W(uint##W##_t *p, uint##W##_t v)                   \
	{                                                                                          \
		__asm__ __volatile__("mov" SFX " %1, %0" : "=m"(*p) : "r"(v) : "memory");          \
	}
#define KNIT_HAVE_STORE_RELAXED_32 1
#define KNIT_HAVE_STORE_RELAXED_64 1
#define KNIT_HAVE_STORE_RELEASE_32 1
#define KNIT_HAVE_STORE_RELEASE_64 1
KNIT__X86_STORE(32, "l", relaxed)
KNIT__X86_STORE(64, "q", relaxed)
KNIT__X86_STORE(32, "l", release)
KNIT__X86_STORE(64, "q", release)

/* seq_cst store and exchange: xchg with memory is implicitly locked. */
#define KNIT__X86_XCHG(W, SFX, NAME)                                                               \
	static inline uint##W##_t NAME(uint##W##_t *p, uint##W##_t v)                              \
	{                                                                                          \
		__asm__ __volatile__("xchg" SFX " %0, %1" : "+r"(v), "+m"(*p) : : "memory");       \
		return v;                                                                          \
	}
#define KNIT_HAVE_XCHG_ACQ_REL_32 1
#define KNIT_HAVE_XCHG_ACQ_REL_64 1
KNIT__X86_XCHG(32, "l", knit_xchg_acq_rel_32)
KNIT__X86_XCHG(64, "q", knit_xchg_acq_rel_64)
#define KNIT_HAVE_STORE_SEQ_CST_32 1
#define KNIT_HAVE_STORE_SEQ_CST_64 1
static inline void knit_store_seq_cst_32(uint32_t *p, uint32_t v)
{
	(void)knit_xchg_acq_rel_32(p, v);
}
static inline void knit_store_seq_cst_64(uint64_t *p, uint64_t v)
{
	(void)knit_xchg_acq_rel_64(p, v);
}

/* Strong CAS: lock cmpxchg leaves the value it found in rax. */
#define KNIT__X86_CAS(W, SFX, ORD)                                                                 \
	static inline uint##W##_t knit_cas_##ORD##_##W(uint##W##_t *p, uint##W##_t e,              \
						       uint##W##_t d)                              \
	{                                                                                          \
		__asm__ __volatile__("lock; cmpxchg" SFX " %2, %1"                                 \
				     : "+a"(e), "+m"(*p)                                           \
				     : "r"(d)                                                      \
				     : "memory", "cc");                                            \
		return e;                                                                          \
	}
#define KNIT_HAVE_CAS_ACQ_REL_32 1
#define KNIT_HAVE_CAS_ACQ_REL_64 1
#define KNIT_HAVE_CAS_RELAXED_32 1
#define KNIT_HAVE_CAS_RELAXED_64 1
KNIT__X86_CAS(32, "l", acq_rel)
KNIT__X86_CAS(64, "q", acq_rel)
KNIT__X86_CAS(32, "l", relaxed)
KNIT__X86_CAS(64, "q", relaxed)

/* fetch_add: lock xadd returns the old value in the source register. */
#define KNIT__X86_XADD(W, SFX, ORD)                                                                \
	static inline uint##W##_t knit_fetch_add_##ORD##_##W(uint##W##_t *p, uint##W##_t v)        \
	{                                                                                          \
		__asm__ __volatile__("lock; xadd" SFX " %0, %1"                                    \
				     : "+r"(v), "+m"(*p)                                           \
				     :                                                             \
				     : "memory", "cc");                                            \
		return v;                                                                          \
	}
#define KNIT_HAVE_FETCH_ADD_RELAXED_32 1
#define KNIT_HAVE_FETCH_ADD_RELAXED_64 1
#define KNIT_HAVE_FETCH_ADD_ACQ_REL_32 1
#define KNIT_HAVE_FETCH_ADD_ACQ_REL_64 1
KNIT__X86_XADD(32, "l", relaxed)
KNIT__X86_XADD(64, "q", relaxed)
KNIT__X86_XADD(32, "l", acq_rel)
KNIT__X86_XADD(64, "q", acq_rel)

/* add/or/and/xor without a result: one locked instruction, no loop. */
#define KNIT__X86_VOID(OP, W, SFX, ORD)                                                            \
	static inline void knit_##OP##_##ORD##_##W(uint##W##_t *p, uint##W##_t v)                  \
	{                                                                                          \
		__asm__ __volatile__("lock; " #OP SFX " %1, %0"                                    \
				     : "+m"(*p)                                                    \
				     : "r"(v)                                                      \
				     : "memory", "cc");                                            \
	}
#define KNIT_HAVE_ADD_RELAXED_32 1
#define KNIT_HAVE_ADD_RELAXED_64 1
#define KNIT_HAVE_ADD_ACQ_REL_32 1
#define KNIT_HAVE_ADD_ACQ_REL_64 1
#define KNIT_HAVE_OR_ACQ_REL_32 1
#define KNIT_HAVE_OR_ACQ_REL_64 1
#define KNIT_HAVE_AND_ACQ_REL_32 1
#define KNIT_HAVE_AND_ACQ_REL_64 1
#define KNIT_HAVE_XOR_ACQ_REL_32 1
#define KNIT_HAVE_XOR_ACQ_REL_64 1
KNIT__X86_VOID(add, 32, "l", relaxed)
KNIT__X86_VOID(add, 64, "q", relaxed)
KNIT__X86_VOID(add, 32, "l", acq_rel)
KNIT__X86_VOID(add, 64, "q", acq_rel)
KNIT__X86_VOID(or, 32, "l", acq_rel)
KNIT__X86_VOID(or, 64, "q", acq_rel)
KNIT__X86_VOID(and, 32, "l", acq_rel)
KNIT__X86_VOID(and, 64, "q", acq_rel)
KNIT__X86_VOID(xor, 32, "l", acq_rel)
KNIT__X86_VOID(xor, 64, "q", acq_rel)

#undef KNIT__X86_LOAD
#undef KNIT__X86_STORE
#undef KNIT__X86_XCHG
#undef KNIT__X86_CAS
#undef KNIT__X86_XADD
#undef KNIT__X86_VOID

#endif /* KNIT_ARCH_X86_64_ATOMIC_H */
