// SPDX-License-Identifier: MIT
// tests/unit/test_sandbox_trap.cpp - the trap record of a sandboxed worker
// (src/sandbox.h) as the host reads it: a report is believed only with its
// mark, for a death by SIGSYS, of this architecture, below kSysnameMax;
// every read zeroes the record, so a successor never inherits one. And the
// name table (src/sysname.h) names what the kernel headers name.
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/layout.h"
#include "src/sandbox.h"
#include "src/sysname.h"

using namespace knit::detail;

namespace {

alignas(128) uint8_t rec[kBlock];

void write_record(uint32_t mark, int32_t nr, uint32_t arch)
{
	memcpy(rec, &mark, 4);
	memcpy(rec + kTrapOffNr, &nr, 4);
	memcpy(rec + kTrapOffArch, &arch, 4);
}

bool zeroed()
{
	for (uint32_t i = 0; i < 12; i++)
		if (rec[i] != 0)
			return false;
	return true;
}

void test_good_record(void **)
{
	write_record(kTrapMark, SYS_socket, sysname_arch());
	assert_int_equal(sandbox_trap_take(rec, true), SYS_socket + 1);
	assert_true(zeroed());
	assert_string_equal(sysname_of(SYS_socket), "socket");
	assert_string_equal(sysname_of(SYS_process_vm_writev), "process_vm_writev");
	assert_string_equal(sysname_of(SYS_read), "read");
}

void test_bad_records_are_unknown(void **)
{
	const uint32_t arch = sysname_arch();
	assert_int_not_equal(arch, 0);
	struct {
		uint32_t mark;
		int32_t nr;
		uint32_t arch;
		bool sigsys;
	} bad[] = {
		{kTrapMark, SYS_socket, arch, false},              // not a SIGSYS death
		{kTrapMark + 1, SYS_socket, arch, true},           // no mark
		{0, SYS_socket, arch, true},                       // nothing written
		{kTrapMark, SYS_socket, arch ^ 0x40000000u, true}, // another arch
		{kTrapMark, SYS_socket, 0, true},                  // no arch
		{kTrapMark, -1, arch, true},                       // negative
		{kTrapMark, kSysnameMax, arch, true},              // past the range
		{kTrapMark, INT32_MIN, arch, true},
	};
	for (auto &b : bad) {
		write_record(b.mark, b.nr, b.arch);
		assert_int_equal(sandbox_trap_take(rec, b.sigsys), 0);
		assert_true(zeroed());
	}
	// In range but unknown to the table: the number stands, no name.
	write_record(kTrapMark, kSysnameMax - 1, arch);
	assert_int_equal(sandbox_trap_take(rec, true), (uint32_t)kSysnameMax);
	assert_null(sysname_of(kSysnameMax - 1));
	assert_null(sysname_of(-1));
	assert_null(sysname_of(kSysnameMax));
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_record),
		cmocka_unit_test(test_bad_records_are_unknown),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
