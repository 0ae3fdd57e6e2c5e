// SPDX-License-Identifier: MIT
// src/region.h - shared-memory regions: one mapping per pool (or per lane
// block) that holds lock sectors, header slots and payload arenas.
//
// A region is reserved at its maximum size up front and committed lazily:
// nothing is backed until it is touched (tmpfs/shmem allocate a page on the
// first write), so a generous arena costs address space, not memory. A region
// never moves or grows; everything inside it is addressed by byte offsets from
// `base`, so the same bytes work when another process (or a second mapping in
// this one) sees them at a different address.
//
// Two kinds:
//  - kMemfd: a sealed memfd (MFD_CLOEXEC | MFD_ALLOW_SEALING) mapped
//    MAP_SHARED; the fd can be handed to a process worker, which maps it with
//    region_map_fd(). Seals: F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL.
//    SHRINK is the one that matters: a peer that could ftruncate the file
//    smaller would make our accesses past the new end raise SIGBUS. GROW fixes
//    the size for good (a mapping never sees growth anyway, and a peer cannot
//    balloon the object), and SEAL stops anyone from adding more seals later
//    (F_SEAL_FUTURE_WRITE would make a new worker's writable mapping fail).
//  - kAnonymous: MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, for thread pools
//    (shared with nobody but our own threads, and children forked later).
//
// Every function returns 0 or a negative KNIT_E* code and never touches errno:
// system calls go through the knit_sys_* raw wrappers of arch/.
#ifndef KNIT_SRC_REGION_H
#define KNIT_SRC_REGION_H

#include "src/common.h"

namespace knit::detail {

enum class RegionKind { kAnonymous, kMemfd };

// One mapping. A zeroed Region (base == nullptr, fd == -1 or 0 with size 0)
// is "no region"; region_destroy() accepts it.
struct Region {
	uint8_t *base; // first byte of the mapping (page aligned)
	uint64_t size; // bytes mapped, a multiple of the page size
	int fd;        // the memfd this mapping shows (owned by the Region), -1 for anonymous
};

// Largest region we agree to map (64 TiB): keeps every size computation far
// from overflow and refuses absurd requests with -KNIT_ENOMEM up front.
inline constexpr uint64_t kRegionMaxSize = 1ull << 46;

// The system page size (from the aux vector: no errno, no syscall).
uint64_t region_page_size();

// Create a zero-filled shared mapping of `size` bytes rounded up to the page
// size. `name` (memfd only, may be null) shows up in /proc/PID/maps as
// "/memfd:name". On success fills *out and returns 0; on failure returns
// -KNIT_EINVAL (size 0, out null), -KNIT_ENOMEM (too big, no address space,
// no fds or tmpfs space) or -KNIT_ESYSTEM (another refusal), and leaves *out
// zeroed with fd -1. Any thread may call it; nothing is touched, so no page
// is committed.
int region_create(RegionKind kind, uint64_t size, const char *name, Region *out);

// ---- process pools: one address range, several memfds ("isolation") ------------
// A process pool's region is one range of addresses (the same offsets on
// both sides) whose parts are backed by different memfds: the host's
// mapping is read-write everywhere; a worker maps the shared part read-only
// and only its own parts read-write (src/proc.h). The shared memfd is
// created by region_create(kMemfd, ..., sealed_final = false): it carries
// SHRINK | GROW but not SEAL yet, and region_seal_readonly() adds
// F_SEAL_FUTURE_WRITE | F_SEAL_SEAL once the host has mapped it: from then
// on nobody can map it writable again or write(2) it, whatever descriptor
// they hold (a read-only descriptor of a memfd can be reopened read-write
// through /proc/self/fd, and mprotect upgrades a shared mapping of a
// writable descriptor; the seal is on the file itself). Linux 5.1+.
int region_create(RegionKind kind, uint64_t size, const char *name, Region *out, bool sealed_final);
// F_SEAL_FUTURE_WRITE | F_SEAL_SEAL on memfd fd. 0, -KNIT_ESYSTEM
// (not sealable, or a kernel without F_SEAL_FUTURE_WRITE: -EINVAL).
int region_seal_readonly(int fd);
// A new memfd of `size` bytes (page multiple), sealed SHRINK | GROW | SEAL,
// close-on-exec, not mapped: *fd. 0, -KNIT_ENOMEM, -KNIT_ESYSTEM.
int region_memfd(uint64_t size, const char *name, int *fd);
// Map memfd fd (from offset 0) over [off, off + len) of r's range in place
// (MAP_FIXED | MAP_SHARED), read-write or read-only. off and len page
// multiples inside r. Replaces what was mapped there at once: a thread
// reading the range meanwhile sees the old or the new memory, never a
// hole. fd must be sealed against shrinking and at least len long
// (-KNIT_EPROTO otherwise, as region_map_fd). 0, -KNIT_EINVAL, -KNIT_EPROTO,
// -KNIT_ENOMEM, -KNIT_ESYSTEM.
int region_overlay(Region *r, uint64_t off, uint64_t len, int fd, bool writable);

// Map an existing memfd (e.g. inherited by a process worker) read-write,
// MAP_SHARED, `expected_size` bytes rounded up to the page size. Before
// mapping it checks that the fd carries F_SEAL_SHRINK (so the file can never
// become shorter than what we map, no SIGBUS) and then that the file is at
// least that long; an fd that is not sealable, not sealed against shrinking,
// not a regular file or too short is refused with -KNIT_EPROTO. -KNIT_EINVAL
// for fd < 0, size 0 or out null; -KNIT_ENOMEM / -KNIT_ESYSTEM as above.
// The caller keeps its fd: the Region holds its own close-on-exec duplicate
// and closes only that one. need_seal false (a named POSIX shm object,
// which cannot be sealed): only the file type and size are checked, so the
// size can later shrink under the mapping (see KNIT_PROC_NAMED_SHM).
// writable false: a read-only mapping (a sealed read-only memfd allows no
// other).
int region_map_fd(int fd, uint64_t expected_size, Region *out, bool need_seal = true,
		  bool writable = true);

// Unmap and close. Idempotent: the Region is zeroed (fd -1) afterwards and a
// zeroed Region is accepted. The caller guarantees that no thread of this
// process still uses the memory (peers in other processes keep their own
// mappings and the memfd object stays alive while any of them holds it).
void region_destroy(Region *r);

// Give the pages wholly inside [off, off + len) back to the kernel; they read
// as zero afterwards and are committed again when next touched. Partial pages
// at either end are left alone (never discards a byte outside the range).
// Uses MADV_REMOVE for both kinds: a MAP_SHARED anonymous mapping is shmem,
// and MADV_DONTNEED there only drops our page-table entries while the pages
// stay allocated in the shmem object; MADV_REMOVE punches the hole that frees
// them. Call it only on bytes no party will read as data (e.g. the part of an
// arena above every live allocation). Returns 0, -KNIT_EINVAL (range outside
// the region, null/empty region) or -KNIT_ESYSTEM.
int region_release(Region *r, uint64_t off, uint64_t len);

} // namespace knit::detail

#endif
