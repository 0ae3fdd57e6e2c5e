/* SPDX-License-Identifier: MIT */
/*
 * arch/riscv64/atomic.h - the operations RV64GC does better by hand.
 *
 * AMOs with .aqrl are acquire+release (and, per the RVWMO mapping, also
 * sequentially consistent RMWs). Loads and stores follow the standard
 * C11 mapping of the RISC-V ISA manual (Table A.6): acquire load = ld;
 * fence r,rw; release store = fence rw,w; sd; seq_cst load adds a leading
 * fence rw,rw. Compare-and-swap is an lr/sc loop (Zacas is not assumed).
 * lr.w sign-extends, so 32-bit expected values are compared sign-extended.
 *
 * cpu_relax emits the Zihintpause PAUSE encoding (0x0100000f), a FENCE
 * with pred=W succ=0 that older cores execute as a harmless fence.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/riscv64/atomic.h"
#endif
#ifndef KNIT_ARCH_RISCV64_ATOMIC_H
#define KNIT_ARCH_RISCV64_ATOMIC_H

#include <stdint.h>

#define KNIT_HAVE_COMPILER_BARRIER 1
static inline void knit_compiler_barrier(void) { __asm__ __volatile__("" ::: "memory"); }
#define KNIT_HAVE_CPU_RELAX 1
static inline void knit_cpu_relax(void) { __asm__ __volatile__(".4byte 0x0100000f" ::: "memory"); }
#define KNIT_HAVE_FENCE_ACQUIRE 1
#define KNIT_HAVE_FENCE_RELEASE 1
#define KNIT_HAVE_FENCE_SEQ_CST 1
static inline void knit_fence_acquire(void) { __asm__ __volatile__("fence r,rw" ::: "memory"); }
static inline void knit_fence_release(void) { __asm__ __volatile__("fence rw,w" ::: "memory"); }
static inline void knit_fence_seq_cst(void) { __asm__ __volatile__("fence rw,rw" ::: "memory"); }

#define KNIT_HAVE_LOAD_ACQUIRE_32 1
#define KNIT_HAVE_LOAD_ACQUIRE_64 1
#define KNIT_HAVE_LOAD_SEQ_CST_32 1
#define KNIT_HAVE_LOAD_SEQ_CST_64 1
static inline uint32_t knit_load_acquire_32(const uint32_t *p)
{
	uint32_t v;
	__asm__ __volatile__("lw %0, %1\n\tfence r,rw" : "=r"(v) : "m"(*p) : "memory");
	return v;
}
static inline uint64_t knit_load_acquire_64(const uint64_t *p)
{
	uint64_t v;
	__asm__ __volatile__("ld %0, %1\n\tfence r,rw" : "=r"(v) : "m"(*p) : "memory");
	return v;
}
static inline uint32_t knit_load_seq_cst_32(const uint32_t *p)
{
	uint32_t v;
	__asm__ __volatile__("fence rw,rw\n\tlw %0, %1\n\tfence r,rw"
			     : "=r"(v)
			     : "m"(*p)
			     : "memory");
	return v;
}
static inline uint64_t knit_load_seq_cst_64(const uint64_t *p)
{
	uint64_t v;
	__asm__ __volatile__("fence rw,rw\n\tld %0, %1\n\tfence r,rw"
			     : "=r"(v)
			     : "m"(*p)
			     : "memory");
	return v;
}

#define KNIT_HAVE_STORE_RELEASE_32 1
#define KNIT_HAVE_STORE_RELEASE_64 1
#define KNIT_HAVE_STORE_SEQ_CST_32 1
#define KNIT_HAVE_STORE_SEQ_CST_64 1
static inline void knit_store_release_32(uint32_t *p, uint32_t v)
{
	__asm__ __volatile__("fence rw,w\n\tsw %1, %0" : "=m"(*p) : "r"(v) : "memory");
}
static inline void knit_store_release_64(uint64_t *p, uint64_t v)
{
	__asm__ __volatile__("fence rw,w\n\tsd %1, %0" : "=m"(*p) : "r"(v) : "memory");
}
/* The leading fence of the seq_cst load pairs with this store (Table A.6). */
static inline void knit_store_seq_cst_32(uint32_t *p, uint32_t v) { knit_store_release_32(p, v); }
static inline void knit_store_seq_cst_64(uint64_t *p, uint64_t v) { knit_store_release_64(p, v); }

#define KNIT__RV_AMO(NAME, INSN, W)                                                                \
	static inline uint##W##_t NAME(uint##W##_t *p, uint##W##_t v)                              \
	{                                                                                          \
		uint##W##_t old;                                                                   \
		__asm__ __volatile__(INSN " %0, %2, %1"                                            \
				     : "=r"(old), "+A"(*p)                                         \
				     : "r"(v)                                                      \
				     : "memory");                                                  \
		return old;                                                                        \
	}
#define KNIT_HAVE_FETCH_ADD_ACQ_REL_32 1
#define KNIT_HAVE_FETCH_ADD_ACQ_REL_64 1
#define KNIT_HAVE_FETCH_OR_ACQ_REL_32 1
#define KNIT_HAVE_FETCH_OR_ACQ_REL_64 1
#define KNIT_HAVE_FETCH_AND_ACQ_REL_32 1
#define KNIT_HAVE_FETCH_AND_ACQ_REL_64 1
#define KNIT_HAVE_FETCH_XOR_ACQ_REL_32 1
#define KNIT_HAVE_FETCH_XOR_ACQ_REL_64 1
#define KNIT_HAVE_XCHG_ACQ_REL_32 1
#define KNIT_HAVE_XCHG_ACQ_REL_64 1
KNIT__RV_AMO(knit_fetch_add_acq_rel_32, "amoadd.w.aqrl", 32)
KNIT__RV_AMO(knit_fetch_add_acq_rel_64, "amoadd.d.aqrl", 64)
KNIT__RV_AMO(knit_fetch_or_acq_rel_32, "amoor.w.aqrl", 32)
KNIT__RV_AMO(knit_fetch_or_acq_rel_64, "amoor.d.aqrl", 64)
KNIT__RV_AMO(knit_fetch_and_acq_rel_32, "amoand.w.aqrl", 32)
KNIT__RV_AMO(knit_fetch_and_acq_rel_64, "amoand.d.aqrl", 64)
KNIT__RV_AMO(knit_fetch_xor_acq_rel_32, "amoxor.w.aqrl", 32)
KNIT__RV_AMO(knit_fetch_xor_acq_rel_64, "amoxor.d.aqrl", 64)
KNIT__RV_AMO(knit_xchg_acq_rel_32, "amoswap.w.aqrl", 32)
KNIT__RV_AMO(knit_xchg_acq_rel_64, "amoswap.d.aqrl", 64)
#undef KNIT__RV_AMO

/*
 * Compare-and-swap: an lr/sc loop, one macro for both orders (LR and SC are
 * the ordering suffixes: ".aqrl"/".rl" for acq_rel, none for relaxed).
 * lr.w sign-extends what it loads, so the 32-bit expected value is compared
 * sign-extended.
 *
 * The relaxed CAS is hand-written too, not left to the builtin: GCC 12's
 * __atomic_compare_exchange_n on a 32-bit word compares lr.w's sign-extended
 * result with the expected value's register as it stands, and when that
 * value was truncated from a wider one (inlined callers) the upper half is
 * not sign-extended: the CAS then fails while the word equals `expected`,
 * and returns a value equal to `expected`, so the caller believes it stored.
 * tests/arch_checks.h caught it (edge value 0xffffffff00000000 -> 0).
 */
#define KNIT__RV_CAS(ORD, LR, SC)                                                                  \
	static inline uint32_t knit_cas_##ORD##_32(uint32_t *p, uint32_t e, uint32_t d)            \
	{                                                                                          \
		long old;                                                                          \
		long fail;                                                                         \
		long se = (long)(int32_t)e;                                                        \
		__asm__ __volatile__("1: lr.w" LR " %0, %2\n"                                      \
				     "   bne %0, %3, 2f\n"                                         \
				     "   sc.w" SC " %1, %4, %2\n"                                  \
				     "   bnez %1, 1b\n"                                            \
				     "2:\n"                                                        \
				     : "=&r"(old), "=&r"(fail), "+A"(*p)                           \
				     : "r"(se), "r"(d)                                             \
				     : "memory");                                                  \
		return (uint32_t)old;                                                              \
	}                                                                                          \
	static inline uint64_t knit_cas_##ORD##_64(uint64_t *p, uint64_t e, uint64_t d)            \
	{                                                                                          \
		uint64_t old;                                                                      \
		long fail;                                                                         \
		__asm__ __volatile__("1: lr.d" LR " %0, %2\n"                                      \
				     "   bne %0, %3, 2f\n"                                         \
				     "   sc.d" SC " %1, %4, %2\n"                                  \
				     "   bnez %1, 1b\n"                                            \
				     "2:\n"                                                        \
				     : "=&r"(old), "=&r"(fail), "+A"(*p)                           \
				     : "r"(e), "r"(d)                                              \
				     : "memory");                                                  \
		return old;                                                                        \
	}
#define KNIT_HAVE_CAS_ACQ_REL_32 1
#define KNIT_HAVE_CAS_ACQ_REL_64 1
#define KNIT_HAVE_CAS_RELAXED_32 1
#define KNIT_HAVE_CAS_RELAXED_64 1
KNIT__RV_CAS(acq_rel, ".aqrl", ".rl")
KNIT__RV_CAS(relaxed, "", "")
#undef KNIT__RV_CAS

#endif /* KNIT_ARCH_RISCV64_ATOMIC_H */
