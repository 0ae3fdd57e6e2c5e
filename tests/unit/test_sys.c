/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sys.c - cmocka driver for the process and file wrapper
 * checks of tests/arch_checks.h: pidfd_open / pidfd_send_signal /
 * waitid(P_PIDFD) on a child, fcntl / fstat / madvise on a memfd, each
 * returning -errno with errno left alone.
 */
#include "arch_checks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void run_check(void **state)
{
	const struct kc_check *c = (const struct kc_check *)*state;
	assert_int_equal(c->fn(c->arg), 0);
}

int main(void)
{
	struct CMUnitTest tests[KC_N_SYS_CHECKS];
	unsigned i;
	setvbuf(stdout, 0, _IOLBF, 0);
	for (i = 0; i < KC_N_SYS_CHECKS; i++) {
		tests[i].name = kc_sys_checks[i].name;
		tests[i].test_func = run_check;
		tests[i].setup_func = 0;
		tests[i].teardown_func = 0;
		tests[i].initial_state = (void *)&kc_sys_checks[i];
	}
	return _cmocka_run_group_tests("sys", tests, KC_N_SYS_CHECKS, 0, 0);
}
