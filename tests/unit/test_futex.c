/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_futex.c - cmocka driver for the futex and fd-wrapper
 * checks of tests/arch_checks.h: value mismatch, absolute deadlines, wakes
 * from another thread and their counts (private and shared, and across a
 * fork), futex_waitv and its fallback, eventfd2/memfd_create/pidfd_open.
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
	struct CMUnitTest tests[KC_N_FUTEX_CHECKS];
	unsigned i;
	setvbuf(stdout, 0, _IOLBF, 0);
	for (i = 0; i < KC_N_FUTEX_CHECKS; i++) {
		tests[i].name = kc_futex_checks[i].name;
		tests[i].test_func = run_check;
		tests[i].setup_func = 0;
		tests[i].teardown_func = 0;
		tests[i].initial_state = (void *)&kc_futex_checks[i];
	}
	return _cmocka_run_group_tests("futex", tests, KC_N_FUTEX_CHECKS, 0, 0);
}
