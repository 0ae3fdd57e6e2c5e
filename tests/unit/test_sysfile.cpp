// SPDX-License-Identifier: MIT
// tests/unit/test_sysfile.cpp - the small kernel files (src/sysfile.h): one
// write lands whole, a missing file is an errno, reads are always
// NUL-terminated and bounded, and the flat-keyed parser (memory.events)
// takes only a whole key with a whole number: a prefix of another key,
// a negative, an overflowing or a trailing-garbage value is -1.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "knitting.h"
#include "src/cgroup.h"
#include "src/sysfile.h"

using namespace knit::detail;

namespace {

char g_path[64];

// A fresh temporary file holding text (the test's own file, not /proc).
const char *file_with(const char *text)
{
	snprintf(g_path, sizeof g_path, "/tmp/knit-sysfile-%d", (int)getpid());
	const int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	const size_t len = strlen(text);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return g_path;
}

void write_then_read(void **)
{
	const char *path = file_with("");
	assert_int_equal(sysfile_write(path, "deny"), 0);
	char buf[16];
	assert_int_equal(sysfile_read(path, buf, sizeof buf), 4);
	assert_string_equal(buf, "deny");
	unlink(path);
	// No O_CREAT: a missing file is its errno, and nothing is made.
	assert_int_equal(sysfile_write(path, "x"), ENOENT);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(sysfile_read(path, buf, sizeof buf), -1);
	assert_string_equal(buf, "");
}

void read_is_bounded(void **)
{
	const char *path = file_with("0123456789abcdef");
	char buf[8];
	memset(buf, 'x', sizeof buf);
	assert_int_equal(sysfile_read(path, buf, sizeof buf), 7);
	assert_string_equal(buf, "0123456");
	char one[1] = {'x'};
	assert_int_equal(sysfile_read(path, one, 1), 0);
	assert_int_equal(one[0], 0);
	unlink(path);
}

void first_line(void **)
{
	char buf[32];
	sysfile_line(file_with("cpu memory pids\nsecond\n"), buf, sizeof buf);
	assert_string_equal(buf, "cpu memory pids");
	unlink(g_path);
	sysfile_line(g_path, buf, sizeof buf);
	assert_string_equal(buf, "");
}

void keyed(void **)
{
	const char *events = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 9\n";
	assert_int_equal(sysfile_keyed(file_with(events), "oom_kill"), 2);
	assert_int_equal(sysfile_keyed(g_path, "oom"), 3);
	assert_int_equal(sysfile_keyed(g_path, "max"), 12);
	assert_int_equal(sysfile_keyed(g_path, "oom_group"), -1); // a prefix is no key
	assert_int_equal(sysfile_keyed(g_path, "absent"), -1);
	// A key that begins a longer one before its own line.
	assert_int_equal(sysfile_keyed(file_with("oom_kill 2\noom 3\n"), "oom"), 3);
	// The last line without its newline still counts.
	assert_int_equal(sysfile_keyed(file_with("oom 1\noom_kill 77"), "oom_kill"), 77);
	// Values that are no count.
	assert_int_equal(sysfile_keyed(file_with("oom_kill -1\n"), "oom_kill"), -1);
	assert_int_equal(sysfile_keyed(file_with("oom_kill 12x\n"), "oom_kill"), -1);
	assert_int_equal(sysfile_keyed(file_with("oom_kill \n"), "oom_kill"), -1);
	assert_int_equal(sysfile_keyed(file_with("oom_kill 99999999999999999999\n"), "oom_kill"),
			 -1);
	assert_int_equal(sysfile_keyed(file_with(""), "oom_kill"), -1);
	unlink(g_path);
	assert_int_equal(sysfile_keyed(g_path, "oom_kill"), -1);
}

// The kernel's own files read through it: this process's statm (sizes in
// pages, space-separated) and stat (the command name in parentheses).
void kernel_files(void **)
{
	char buf[256];
	assert_true(sysfile_read("/proc/self/statm", buf, sizeof buf) > 0);
	assert_non_null(strchr(buf, ' '));
	assert_true(sysfile_read("/proc/self/stat", buf, sizeof buf) > 0);
	assert_non_null(strrchr(buf, ')'));
}

// The host's own cgroup's OOM count (src/cgroup.h) reads the memory.events
// of the "0::" line's directory: the same number as reading that file here
// (-1 on both sides where it is missing, as on a cgroup v1 machine).
void self_oom_kills(void **)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	assert_non_null(f);
	char line[4096], path[4200] = "";
	while (fgets(line, sizeof line, f) != nullptr)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.events",
				 strcmp(line + 3, "/") == 0 ? "" : line + 3);
			break;
		}
	fclose(f);
	const int64_t want = path[0] != 0 ? sysfile_keyed(path, "oom_kill") : -1;
	printf("# %s: %lld\n", path[0] != 0 ? path : "(no cgroup v2 line)", (long long)want);
	assert_int_equal(cgroup_self_oom_kills(), want);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(write_then_read), cmocka_unit_test(read_is_bounded),
		cmocka_unit_test(first_line),      cmocka_unit_test(keyed),
		cmocka_unit_test(kernel_files),    cmocka_unit_test(self_oom_kills),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
