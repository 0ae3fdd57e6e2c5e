// SPDX-License-Identifier: MIT
// src/region.cpp - shared-memory regions (see region.h for the contract).
//
// Creation reserves the whole size at once and commits nothing: a memfd is
// ftruncate()d (tmpfs files are sparse, a page is allocated on first touch)
// and an anonymous region is MAP_SHARED|MAP_NORESERVE shmem. Nothing here
// touches errno: every system call is a knit_sys_* / knit_syscall* raw call
// that returns -errno, which we translate into KNIT_E* codes.
#include "src/common.h"

#include "src/region.h"

#include <fcntl.h>
#include <linux/memfd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "knitting.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MADV_REMOVE
#define MADV_REMOVE 9
#endif

namespace knit::detail {
namespace {

// The seals every region memfd carries; region_map_fd() insists on SHRINK.
// SEAL too, unless the caller seals it read-only later (region_seal_readonly).
constexpr int kRegionSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

// errno of a failed resource request -> KNIT code: running out of something
// the caller could get back is ENOMEM, anything else is a refusal.
int resource_error(long neg_errno)
{
	switch (-neg_errno) {
	case ENOMEM:
	case EMFILE:
	case ENFILE:
	case ENOSPC:
	case EFBIG:
	case EOVERFLOW:
		return -KNIT_ENOMEM;
	case EINVAL:
		return -KNIT_EINVAL;
	default:
		return -KNIT_ESYSTEM;
	}
}

void region_zero(Region *out)
{
	out->base = nullptr;
	out->size = 0;
	out->fd = -1;
}

// Round `size` up to whole pages; 0 when it is 0 or beyond kRegionMaxSize.
uint64_t region_round(uint64_t size)
{
	if (size == 0 || size > kRegionMaxSize) {
		return 0;
	}
	return align_up(size, region_page_size());
}

int map_shared(int fd, uint64_t size, bool anonymous, uint8_t **base, bool writable = true)
{
	int flags = MAP_SHARED | MAP_NORESERVE | (anonymous ? MAP_ANONYMOUS : 0);
	void *p = knit_sys_mmap(nullptr, (size_t)size,
				writable ? PROT_READ | PROT_WRITE : PROT_READ, flags, fd, 0);
	if (knit_sys_mmap_failed(p)) {
		return resource_error((long)(intptr_t)p);
	}
	*base = static_cast<uint8_t *>(p);
	return 0;
}

} // namespace

uint64_t region_page_size()
{
	unsigned long ps = getauxval(AT_PAGESZ);
	return ps != 0 ? ps : 4096;
}

int region_create(RegionKind kind, uint64_t size, const char *name, Region *out)
{
	return region_create(kind, size, name, out, true);
}

int region_create(RegionKind kind, uint64_t size, const char *name, Region *out, bool sealed_final)
{
	if (out == nullptr) {
		return -KNIT_EINVAL;
	}
	region_zero(out);
	if (size == 0) {
		return -KNIT_EINVAL;
	}
	uint64_t bytes = region_round(size);
	if (bytes == 0) {
		return -KNIT_ENOMEM;
	}
	if (kind == RegionKind::kAnonymous) {
		int rc = map_shared(-1, bytes, true, &out->base);
		if (rc != 0) {
			return rc;
		}
		out->size = bytes;
		return 0;
	}
	if (kind != RegionKind::kMemfd) {
		return -KNIT_EINVAL;
	}
	const char *label = name != nullptr ? name : "knitting";
	// MFD_NOEXEC_SEAL (Linux 6.3+) keeps us working where vm.memfd_noexec
	// refuses executable memfds; older kernels reject the flag with EINVAL.
	int fd = knit_sys_memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd == -EINVAL) {
		fd = knit_sys_memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	}
	if (fd < 0) {
		return resource_error(fd);
	}
	int rc = knit_sys_ftruncate(fd, (long)bytes);
	if (rc == 0) {
		rc = knit_sys_fcntl(fd, F_ADD_SEALS,
				    sealed_final ? kRegionSeals : kRegionSeals & ~F_SEAL_SEAL);
	}
	if (rc != 0) {
		knit_sys_close(fd);
		return resource_error(rc);
	}
	rc = map_shared(fd, bytes, false, &out->base);
	if (rc != 0) {
		knit_sys_close(fd);
		return rc;
	}
	out->size = bytes;
	out->fd = fd;
	return 0;
}

int region_map_fd(int fd, uint64_t expected_size, Region *out, bool need_seal, bool writable)
{
	if (out == nullptr) {
		return -KNIT_EINVAL;
	}
	region_zero(out);
	if (fd < 0 || expected_size == 0) {
		return -KNIT_EINVAL;
	}
	uint64_t bytes = region_round(expected_size);
	if (bytes == 0) {
		return -KNIT_ENOMEM;
	}
	// Seals first, size second: once SHRINK is on, the size we read can only
	// stay or grow, so the check cannot be raced into a SIGBUS later.
	if (need_seal) {
		int seals = knit_sys_fcntl(fd, F_GET_SEALS, 0);
		if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
			return -KNIT_EPROTO;
		}
	}
	struct stat st;
	memset(&st, 0, sizeof st);
	if (knit_sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size < bytes) {
		return -KNIT_EPROTO;
	}
	int dup = knit_sys_fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup < 0) {
		return resource_error(dup);
	}
	int rc = map_shared(dup, bytes, false, &out->base, writable);
	if (rc != 0) {
		knit_sys_close(dup);
		return rc;
	}
	out->size = bytes;
	out->fd = dup;
	return 0;
}

int region_seal_readonly(int fd)
{
	const int rc = knit_sys_fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
	return rc == 0 ? 0 : -KNIT_ESYSTEM;
}

int region_memfd(uint64_t size, const char *name, int *out)
{
	*out = -1;
	const uint64_t bytes = region_round(size);
	if (bytes == 0)
		return -KNIT_ENOMEM;
	int fd = knit_sys_memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd == -EINVAL)
		fd = knit_sys_memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return resource_error(fd);
	int rc = knit_sys_ftruncate(fd, (long)bytes);
	if (rc == 0)
		rc = knit_sys_fcntl(fd, F_ADD_SEALS, kRegionSeals);
	if (rc != 0) {
		knit_sys_close(fd);
		return resource_error(rc);
	}
	*out = fd;
	return 0;
}

int region_overlay(Region *r, uint64_t off, uint64_t len, int fd, bool writable)
{
	const uint64_t page = region_page_size();
	if (r == nullptr || r->base == nullptr || fd < 0 || len == 0 || off % page != 0 ||
	    len % page != 0 || off > r->size || len > r->size - off)
		return -KNIT_EINVAL;
	// As region_map_fd: sealed against shrinking, and long enough.
	const int seals = knit_sys_fcntl(fd, F_GET_SEALS, 0);
	struct stat st;
	memset(&st, 0, sizeof st);
	if (seals < 0 || (seals & F_SEAL_SHRINK) == 0 || knit_sys_fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size < len)
		return -KNIT_EPROTO;
	void *p = knit_sys_mmap(r->base + off, (size_t)len,
				writable ? PROT_READ | PROT_WRITE : PROT_READ,
				MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd, 0);
	if (knit_sys_mmap_failed(p))
		return resource_error((long)(intptr_t)p);
	return 0;
}

void region_destroy(Region *r)
{
	if (r == nullptr) {
		return;
	}
	if (r->base != nullptr && r->size != 0) {
		knit_sys_munmap(r->base, (size_t)r->size);
	}
	if (r->fd >= 0 && r->base != nullptr) {
		knit_sys_close(r->fd);
	}
	region_zero(r);
}

int region_release(Region *r, uint64_t off, uint64_t len)
{
	if (r == nullptr || r->base == nullptr || r->size == 0) {
		return -KNIT_EINVAL;
	}
	if (off > r->size || len > r->size - off) {
		return -KNIT_EINVAL;
	}
	uint64_t page = region_page_size();
	uint64_t lo = align_up(off, page);
	uint64_t hi = (off + len) & ~(page - 1);
	if (hi <= lo) {
		return 0; // no whole page inside the range
	}
	int rc = knit_sys_madvise(r->base + lo, hi - lo, MADV_REMOVE);
	if (rc != 0) {
		return rc == -EINVAL ? -KNIT_EINVAL : -KNIT_ESYSTEM;
	}
	return 0;
}

} // namespace knit::detail
