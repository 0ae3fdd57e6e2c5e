/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/syscall.h - raw system calls with the `syscall` instruction.
 * The kernel returns -errno in rax; nothing here touches errno, so the
 * library's hot paths (futex wait/wake) have no thread-local side effects.
 * Arguments: rdi, rsi, rdx, r10, r8, r9; rcx and r11 are clobbered.
 */
#ifndef KNIT_ARCH_H_INSIDE
#error "include arch/arch.h, not arch/x86_64/syscall.h"
#endif
#ifndef KNIT_ARCH_X86_64_SYSCALL_H
#define KNIT_ARCH_X86_64_SYSCALL_H

#define KNIT_HAVE_RAW_SYSCALL 1

static inline long knit_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	long ret;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}

#endif /* KNIT_ARCH_X86_64_SYSCALL_H */
