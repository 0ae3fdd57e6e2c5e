/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tools/knit-trace/vmlinux/vmlinux.h - the kernel types knit-trace.bpf.c
 * uses, kept in the tree so the tool builds without the build host's BTF
 * (/sys/kernel/btf/vmlinux may be missing, or be another kernel's). One
 * section per architecture we build for (__TARGET_ARCH_x86, _arm64, _riscv).
 *
 * Why this is enough, and safe on any kernel:
 *  - task_struct is read only through BPF_CORE_READ, and carries
 *    preserve_access_index: libbpf relocates `pid` against the RUNNING
 *    kernel's BTF when it loads the program (so do `tgid` and `real_parent`). That is why knit-trace still
 *    needs kernel BTF at run time (it checks for it and says so).
 *  - the register structs are the user-visible ABI layouts that
 *    bpf_tracing.h's PT_REGS_* macros and usdt.bpf.h read for each
 *    architecture (the instruction pointer of a uprobe hit); those layouts
 *    are fixed by the kernel's user ABI, so no relocation is needed.
 *  - the rest are fixed-width integers and the BPF UAPI constants the map
 *    definitions name (values from include/uapi/linux/bpf.h, which never
 *    change once released).
 * A program that needs more kernel types adds them here (with
 * preserve_access_index when the layout is not user ABI).
 */
#ifndef KNIT_TRACE_VMLINUX_H
#define KNIT_TRACE_VMLINUX_H
/* The guard of a bpftool-generated vmlinux.h: bpf_tracing.h then names the
 * registers as the kernel does (pt_regs->ip), not as user space (->rip). */
#define __VMLINUX_H__

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };
typedef int pid_t;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_LRU_HASH = 9,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

struct task_struct {
	pid_t pid;
	pid_t tgid;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));

#if defined(__TARGET_ARCH_x86)
/* arch/x86/include/asm/ptrace.h (x86-64): what a uprobe's ctx points at. */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax;
	unsigned long ip, cs, flags, sp, ss;
};
#elif defined(__TARGET_ARCH_arm64)
/* arch/arm64/include/uapi/asm/ptrace.h: bpf_tracing.h reads this view. */
struct pt_regs;
struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};
#elif defined(__TARGET_ARCH_riscv)
/* arch/riscv/include/uapi/asm/ptrace.h: bpf_tracing.h reads this view. */
struct pt_regs;
struct user_regs_struct {
	unsigned long pc, ra, sp, gp, tp, t0, t1, t2, s0, s1, a0, a1, a2, a3, a4, a5, a6, a7;
	unsigned long s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, t3, t4, t5, t6;
};
#else
#error "knit-trace's vmlinux.h knows x86, arm64 and riscv (define __TARGET_ARCH_<arch>)"
#endif

#endif
