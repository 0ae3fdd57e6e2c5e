/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_arch.c - cmocka driver for the arch layer checks
 * (tests/arch_checks.h): atomics differential against the builtins with
 * canaries, two-thread counters, message-passing and store-buffering
 * litmus tests, raw syscalls. One cmocka test per check; each asserts that
 * its check found no failure (the check prints what failed).
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
	struct CMUnitTest tests[KC_N_ARCH_CHECKS];
	unsigned i;
	setvbuf(stdout, 0, _IOLBF, 0);
	for (i = 0; i < KC_N_ARCH_CHECKS; i++) {
		tests[i].name = kc_arch_checks[i].name;
		tests[i].test_func = run_check;
		tests[i].setup_func = 0;
		tests[i].teardown_func = 0;
		tests[i].initial_state = (void *)&kc_arch_checks[i];
	}
	return _cmocka_run_group_tests("arch", tests, KC_N_ARCH_CHECKS, 0, 0);
}
