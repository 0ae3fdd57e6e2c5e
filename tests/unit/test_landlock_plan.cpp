// SPDX-License-Identifier: MIT
// tests/unit/test_landlock_plan.cpp - white-box checks of the Landlock plan
// (src/sandbox.cpp landlock_plan): which rights and scopes each kernel ABI
// gives, the ruleset attribute's size per ABI, and the refusals a worker
// makes (no Landlock, or an ABI below the one needed) unless best effort.
// Every kernel answer is given here, so each branch runs on any kernel.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/sandbox.h"

using namespace knit::detail;

namespace {

constexpr uint64_t kV1 = (1ull << 13) - 1, kRefer = 1ull << 13, kTruncate = 1ull << 14,
		   kIoctlDev = 1ull << 15;
constexpr uint64_t kRo = (1ull << 0) | (1ull << 2) | (1ull << 3); // EXECUTE, READ_FILE, READ_DIR

LandlockPlan plan_of(int kernel, uint32_t need)
{
	LandlockPlan p;
	char why[256];
	assert_int_equal(landlock_plan(kernel, need, &p, why, sizeof why), 0);
	return p;
}

const char *refusal(int kernel, uint32_t need)
{
	static char why[256];
	LandlockPlan p;
	why[0] = 0;
	assert_int_equal(landlock_plan(kernel, need, &p, why, sizeof why), KNIT_ESYSTEM);
	return why;
}

} // namespace

static void rights_by_abi(void **)
{
	struct {
		int abi;
		uint64_t fs, scoped;
		size_t attr;
	} want[] = {
		{1, kV1, 0, 8},
		{2, kV1 | kRefer, 0, 8},
		{3, kV1 | kRefer | kTruncate, 0, 8},
		{4, kV1 | kRefer | kTruncate, 0, 16},
		{5, kV1 | kRefer | kTruncate | kIoctlDev, 0, 16},
		{6, kV1 | kRefer | kTruncate | kIoctlDev, 3, 24},
		{7, kV1 | kRefer | kTruncate | kIoctlDev, 3, 24},
		{9, kV1 | kRefer | kTruncate | kIoctlDev, 3, 24}, // newer: ABI 7's
	};
	for (const auto &w : want) {
		const LandlockPlan p = plan_of(w.abi, 1);
		assert_int_equal(p.abi,
				 w.abi < KNIT_LANDLOCK_ABI_MAX ? w.abi : KNIT_LANDLOCK_ABI_MAX);
		assert_true(p.fs == w.fs);
		assert_true(p.fs_ro == kRo);
		assert_true(p.scoped == w.scoped);
		assert_int_equal(p.attr_size, w.attr);
	}
}

static void refused_below_the_need(void **)
{
	assert_non_null(strstr(refusal(-ENOSYS, 1), "this kernel does not have it"));
	assert_non_null(strstr(refusal(-EOPNOTSUPP, 1), "the kernel has it disabled"));
	assert_non_null(strstr(refusal(-EPERM, 1), "version query failed"));
	assert_non_null(strstr(refusal(5, 6), "this kernel has Landlock ABI 5, ABI 6 needed"));
	assert_non_null(strstr(refusal(6, 7), "ABI 7 needed"));
	assert_int_equal(plan_of(6, 6).abi, 6);
	assert_int_equal(plan_of(7, 7).abi, 7);
}

static void best_effort_takes_what_there_is(void **)
{
	assert_int_equal(plan_of(-ENOSYS, 0).abi, 0);
	assert_int_equal(plan_of(-EOPNOTSUPP, 0).abi, 0);
	assert_true(plan_of(-ENOSYS, 0).fs == 0);
	assert_int_equal(plan_of(3, 0).abi, 3);
	assert_true(plan_of(3, 0).scoped == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rights_by_abi),
		cmocka_unit_test(refused_below_the_need),
		cmocka_unit_test(best_effort_takes_what_there_is),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
