/* SPDX-License-Identifier: MIT */
/*
 * arch/riscv64/syscall.h - raw system calls with `ecall`: number in a7,
 * arguments in a0..a5, result (or -errno) in a0. errno is never touched.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/riscv64/syscall.h"
#endif
#ifndef KNIT_ARCH_RISCV64_SYSCALL_H
#define KNIT_ARCH_RISCV64_SYSCALL_H

#define KNIT_HAVE_RAW_SYSCALL 1

static inline long knit_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long a7r __asm__("a7") = nr;
	register long a0r __asm__("a0") = a1;
	register long a1r __asm__("a1") = a2;
	register long a2r __asm__("a2") = a3;
	register long a3r __asm__("a3") = a4;
	register long a4r __asm__("a4") = a5;
	register long a5r __asm__("a5") = a6;
	__asm__ __volatile__("ecall"
			     : "+r"(a0r)
			     : "r"(a7r), "r"(a1r), "r"(a2r), "r"(a3r), "r"(a4r), "r"(a5r)
			     : "memory");
	return a0r;
}

#endif /* KNIT_ARCH_RISCV64_SYSCALL_H */
