// SPDX-License-Identifier: MIT
// tests/unit/test_region.cpp - shared-memory regions (src/region.h): lazy
// commit (a write at the far end of a 1 GiB region costs a page, measured in
// resident pages from /proc/self/statm), memfd seals, region_map_fd's checks,
// a second mapping seeing the first's writes at another address (position
// independence), and region_release giving pages back.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "knitting.h"
#include "src/region.h"

using namespace knit::detail;

namespace {

long resident_pages()
{
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == nullptr) {
		return -1;
	}
	long size = 0, res = -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2) {
		res = -1;
	}
	fclose(f);
	return res;
}

const uint64_t kGiB = 1ull << 30;
// Slack for whatever else the process commits between two statm reads
// (stdio buffers, sanitizer shadow of the touched pages).
const long kSlackPages = 256; // 1 MiB: eager commit would be 262144 pages

void lazy_commit(RegionKind kind)
{
	Region r;
	assert_int_equal(region_create(kind, kGiB, "lazy", &r), 0);
	assert_non_null(r.base);
	assert_int_equal(r.size, kGiB);
	assert_int_equal(r.fd >= 0, kind == RegionKind::kMemfd);
	resident_pages(); // warm up stdio before measuring
	long before = resident_pages();
	assert_true(before > 0);
	// Touch 16 pages spread over the whole gigabyte, the last byte included.
	for (uint64_t i = 0; i < 16; i++) {
		r.base[i * (kGiB / 16) + 123] = (uint8_t)(i + 1);
	}
	r.base[kGiB - 1] = 0xEE;
	long after = resident_pages();
	long grown = after - before;
	print_message("1 GiB region: %ld resident pages after 17 writes\n", grown);
	assert_true(grown >= 16);               // the writes are really backed...
	assert_true(grown <= 17 + kSlackPages); // ...and nothing else is
	assert_int_equal(r.base[kGiB - 1], 0xEE);
	assert_int_equal(r.base[5 * (kGiB / 16) + 123], 6);
	region_destroy(&r);
	assert_null(r.base);
	assert_int_equal(r.fd, -1);
	region_destroy(&r); // idempotent
}

void test_anonymous_lazy(void **) { lazy_commit(RegionKind::kAnonymous); }

void test_memfd_lazy(void **) { lazy_commit(RegionKind::kMemfd); }

void test_memfd_sealed(void **)
{
	Region r;
	assert_int_equal(region_create(RegionKind::kMemfd, 1 << 20, "sealed", &r), 0);
	int seals = fcntl(r.fd, F_GET_SEALS);
	assert_true(seals >= 0);
	assert_true(seals & F_SEAL_SHRINK);
	assert_true(seals & F_SEAL_GROW);
	assert_true(seals & F_SEAL_SEAL);
	assert_int_equal(ftruncate(r.fd, 4096), -1); // a peer cannot make us SIGBUS
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(r.fd, 2 << 20), -1);
	assert_int_equal(fcntl(r.fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
	assert_int_equal(fcntl(r.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	r.base[(1 << 20) - 1] = 1; // the whole size is usable
	region_destroy(&r);
}

void test_create_bad_args(void **)
{
	Region r;
	errno = 4242;
	assert_int_equal(region_create(RegionKind::kAnonymous, 0, nullptr, &r), -KNIT_EINVAL);
	assert_null(r.base);
	assert_int_equal(region_create(RegionKind::kMemfd, 0, nullptr, &r), -KNIT_EINVAL);
	assert_int_equal(region_create(RegionKind::kAnonymous, 4096, nullptr, nullptr),
			 -KNIT_EINVAL);
	assert_int_equal(region_create(RegionKind::kAnonymous, 1ull << 50, nullptr, &r),
			 -KNIT_ENOMEM);
	assert_int_equal(region_create(RegionKind::kMemfd, ~0ull, nullptr, &r), -KNIT_ENOMEM);
	assert_int_equal(region_create(static_cast<RegionKind>(7), 4096, nullptr, &r),
			 -KNIT_EINVAL);
	assert_int_equal(region_map_fd(-1, 4096, &r), -KNIT_EINVAL);
	assert_int_equal(region_map_fd(0, 0, &r), -KNIT_EINVAL);
	assert_int_equal(errno, 4242); // never touches errno
	// Size rounds up to the page; a null name is fine.
	assert_int_equal(region_create(RegionKind::kMemfd, 1, nullptr, &r), 0);
	assert_int_equal(r.size, region_page_size());
	region_destroy(&r);
	// A zeroed Region (fd 0!) is accepted and does not close stdin.
	Region z;
	memset(&z, 0, sizeof z);
	region_destroy(&z);
	assert_true(fcntl(0, F_GETFD) >= 0);
	assert_int_equal(region_release(&z, 0, 4096), -KNIT_EINVAL);
}

void test_second_mapping_sees_writes(void **)
{
	const uint64_t size = 4 << 20;
	Region a, b;
	assert_int_equal(region_create(RegionKind::kMemfd, size, "pic", &a), 0);
	assert_int_equal(region_map_fd(a.fd, size, &b), 0);
	assert_true(a.base != b.base); // two addresses, the same bytes
	assert_true(b.fd >= 0 && b.fd != a.fd);
	assert_int_equal(b.size, size);
	a.base[12345] = 0x5A;
	a.base[size - 1] = 0xA5;
	assert_int_equal(b.base[12345], 0x5A);
	assert_int_equal(b.base[size - 1], 0xA5);
	b.base[777] = 9;
	assert_int_equal(a.base[777], 9);
	// Offsets, not pointers: a structure written through one mapping reads
	// the same through the other.
	uint64_t off = 8192;
	memcpy(a.base + off, &off, sizeof off);
	uint64_t seen;
	memcpy(&seen, b.base + off, sizeof seen);
	assert_int_equal(seen, off);
	// A smaller view is fine too.
	Region c;
	assert_int_equal(region_map_fd(a.fd, 5000, &c), 0);
	assert_int_equal(c.size, align_up(5000, region_page_size()));
	assert_int_equal(c.base[777], 9);
	region_destroy(&c);
	// The mappings are independent: b outlives a.
	region_destroy(&a);
	assert_int_equal(b.base[12345], 0x5A);
	region_destroy(&b);
}

void test_map_fd_refuses(void **)
{
	errno = 777;
	// Too small (our own sealed memfd).
	Region a, b;
	assert_int_equal(region_create(RegionKind::kMemfd, 64 << 10, "small", &a), 0);
	assert_int_equal(region_map_fd(a.fd, 128 << 10, &b), -KNIT_EPROTO);
	assert_null(b.base);
	region_destroy(&a);

	// Sealable but not sealed.
	int fd = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_int_equal(region_map_fd(fd, 1 << 20, &b), -KNIT_EPROTO);
	// Sealed against growth only: still refused (shrink is what matters).
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);
	assert_int_equal(region_map_fd(fd, 1 << 20, &b), -KNIT_EPROTO);
	// Once sealed against shrinking, accepted.
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	assert_int_equal(region_map_fd(fd, 1 << 20, &b), 0);
	region_destroy(&b);
	assert_true(fcntl(fd, F_GETFD) >= 0); // the caller keeps its fd
	close(fd);

	// Not sealable at all.
	fd = memfd_create("nosealing", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_int_equal(region_map_fd(fd, 1 << 20, &b), -KNIT_EPROTO);
	close(fd);

	// Not a file.
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(region_map_fd(p[0], 4096, &b), -KNIT_EPROTO);
	close(p[0]);
	close(p[1]);
	// Closed fd.
	assert_int_equal(region_map_fd(p[0], 4096, &b), -KNIT_EPROTO);
	assert_int_equal(errno, 777);
}

void release_gives_back(RegionKind kind)
{
	const uint64_t size = 8 << 20;
	const uint64_t page = region_page_size();
	const long pages = (long)(size / page);
	Region r;
	assert_int_equal(region_create(kind, size, "release", &r), 0);
	long r0 = resident_pages();
	memset(r.base, 0xAB, size);
	long r1 = resident_pages();
	assert_true(r1 - r0 >= pages * 9 / 10);
	assert_int_equal(region_release(&r, 0, size), 0);
	long r2 = resident_pages();
	print_message("released %ld of %ld pages\n", r1 - r2, pages);
	assert_true(r1 - r2 >= pages * 9 / 10);
	assert_int_equal(r.base[0], 0); // reads as zero afterwards
	assert_int_equal(r.base[size - 1], 0);

	// Only whole pages inside the range go; bytes outside it stay.
	memset(r.base, 0xAB, 4 * page);
	assert_int_equal(region_release(&r, 100, 3 * page), 0);
	assert_int_equal(r.base[99], 0xAB);
	assert_int_equal(r.base[page - 1], 0xAB); // partial first page kept
	assert_int_equal(r.base[page], 0);
	assert_int_equal(r.base[3 * page - 1], 0);
	assert_int_equal(r.base[3 * page], 0xAB);          // partial last page kept
	assert_int_equal(region_release(&r, 100, 200), 0); // no whole page: no-op
	assert_int_equal(r.base[150], 0xAB);

	// Out of range.
	assert_int_equal(region_release(&r, size, 1), -KNIT_EINVAL);
	assert_int_equal(region_release(&r, 0, size + 1), -KNIT_EINVAL);
	assert_int_equal(region_release(&r, 4096, ~0ull), -KNIT_EINVAL);
	assert_int_equal(region_release(nullptr, 0, 1), -KNIT_EINVAL);
	region_destroy(&r);
}

// need_seal false (a named shm object, KNIT_PROC_NAMED_SHM): an unsealable
// file is accepted at its size, and still refused when it is short.
void test_map_fd_unsealed(void **)
{
	int fd = memfd_create("named-like", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 64 << 10), 0);
	Region b;
	assert_int_equal(region_map_fd(fd, 64 << 10, &b, true), -KNIT_EPROTO);
	assert_int_equal(region_map_fd(fd, 128 << 10, &b, false), -KNIT_EPROTO);
	assert_null(b.base);
	assert_int_equal(region_map_fd(fd, 64 << 10, &b, false), 0);
	b.base[100] = 7;
	region_destroy(&b);
	close(fd);
}

void test_release_anonymous(void **) { release_gives_back(RegionKind::kAnonymous); }

void test_release_memfd(void **) { release_gives_back(RegionKind::kMemfd); }

// The released pages are gone for every mapping of the memfd, not just ours.
void test_release_shared_view(void **)
{
	Region a, b;
	assert_int_equal(region_create(RegionKind::kMemfd, 1 << 20, "view", &a), 0);
	assert_int_equal(region_map_fd(a.fd, 1 << 20, &b), 0);
	memset(a.base, 0x77, 1 << 20);
	assert_int_equal(b.base[65536], 0x77);
	assert_int_equal(region_release(&a, 0, 1 << 20), 0);
	assert_int_equal(b.base[65536], 0);
	region_destroy(&b);
	region_destroy(&a);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_anonymous_lazy),
		cmocka_unit_test(test_memfd_lazy),
		cmocka_unit_test(test_memfd_sealed),
		cmocka_unit_test(test_create_bad_args),
		cmocka_unit_test(test_second_mapping_sees_writes),
		cmocka_unit_test(test_map_fd_refuses),
		cmocka_unit_test(test_map_fd_unsealed),
		cmocka_unit_test(test_release_anonymous),
		cmocka_unit_test(test_release_memfd),
		cmocka_unit_test(test_release_shared_view),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
