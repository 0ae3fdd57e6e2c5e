// SPDX-License-Identifier: MIT
// tests/unit/test_dcheck.cpp - KNIT_DCHECK (src/dcheck.h) in the test build:
//  - a false condition prints "libknitting: DCHECK failed: FILE:LINE: cond"
//    on stderr and aborts (SIGABRT), in a child so the test survives it;
//  - a true condition does nothing and evaluates cond exactly once;
//  - the test archive carries the failure path: this program links
//    knit::detail::dcheck_failed from libknitting-test.a, which has it only
//    when the archive was built with KNIT_DEBUG_CHECKS=1 (a release object
//    defines nothing, so the link would fail).
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#define KNIT_DEBUG_CHECKS 1
#include "src/dcheck.h"

namespace {

int calls;
int counted(int v)
{
	calls++;
	return v;
}

void test_false_aborts_with_message(void **)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	const int line = __LINE__ + 5;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		KNIT_DCHECK(counted(1) == 2);
		_exit(0); // not reached when the check works
	}
	close(fds[1]);
	char buf[512] = {0};
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	close(fds[0]);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
	char want[256];
	snprintf(want, sizeof want, "libknitting: DCHECK failed: %s:%d: counted(1) == 2\n",
		 __FILE__, line);
	assert_string_equal(buf, want);
}

void test_true_passes_once(void **)
{
	calls = 0;
	KNIT_DCHECK(counted(3) == 3);
	assert_int_equal(calls, 1);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_false_aborts_with_message),
		cmocka_unit_test(test_true_passes_once),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
