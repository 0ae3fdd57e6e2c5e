/* SPDX-License-Identifier: MIT */
/*
 * tests/cross/test_sys.c - the arch layer's process and file wrappers
 * (pidfd_send_signal, waitid, fcntl, fstat, madvise) as a plain C program
 * for the cross runs (tests/cross/build-and-run.sh builds it statically for
 * aarch64, aarch64+LSE and riscv64 and runs it under qemu-user). The checks
 * are the ones the native cmocka program runs (tests/arch_checks.h). Prints
 * every check and exits 0 if all passed, 1 otherwise.
 */
#define KNIT_CHECKS_EMULATED 1
#include "arch_checks.h"

int main(void)
{
	int failed;
	setvbuf(stdout, 0, _IOLBF, 0);
	printf("cross syscall wrapper checks: KNIT_ARCH_NAME=%s KNIT_ARCH_LAYER=%s\n",
	       KNIT_ARCH_NAME, KNIT_ARCH_LAYER);
	failed = kc_run_table(kc_sys_checks, KC_N_SYS_CHECKS);
	printf("%s: %d of %u checks failed\n", failed ? "FAILED" : "PASSED", failed,
	       (unsigned)KC_N_SYS_CHECKS);
	return failed ? 1 : 0;
}
