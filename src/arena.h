// SPDX-License-Identifier: MIT
// src/arena.h - the payload arena behind each lock: where values too large
// for a slot's inline area travel.
//
// One producer allocates, any number of consumers (one, or N under stealing,
// in this or another process) free. The protocol:
//
//   PA   "allocated" toggles, one bit per allocator slot. Written only by the
//        producer: after writing the slot's table entry, one release store.
//   PB   "freed" toggles. The only multi-writer word: every free is one atomic
//        XOR (consumers after copying out; the producer on rollback). Never a
//        blind store: two frees racing must both land.
//   slot s is live iff bit s of PA ^ PB is set.
//   table[s] = {offset, size}: published by the producer (before PA) so that
//        consumers can validate a frame's range against the slot it names.
//
// The producer keeps the real allocator privately (ArenaProducer): a
// start-sorted table of up to 32 tracked allocations, reclaimed lazily from
// PB at the next alloc(): exact-size hole reuse first, else compaction and
// first fit, and a reset to offset 0 once every tracked allocation is freed.
// It checks capacity and reports "no slot" and "no room" as -KNIT_EAGAIN
// (backpressure: retry after consumers free), never as a stale offset.
//
// Nothing read from shared memory is trusted: arena_check() validates a
// consumer's (slot, offset, len) against PA^PB and the table with 64-bit
// arithmetic and reads only the 32 slots' words; the producer only ever hands
// out slots whose PA^PB bit it can account for (a hostile XOR on a slot it
// does not track makes that slot unusable, not aliased).
//
// Memory ordering (who pairs with whom):
//   producer: table[s] relaxed stores; PA release store (A1)
//   consumer: PA acquire load in arena_check (A2) pairs with A1, so the table
//             entry it then reads is the one written for this allocation. The
//             consumer normally also sees all of that through its acquire
//             load of the lock's publish word A (lock2), which follows alloc.
//   consumer: copies the bytes out, then PB acq_rel XOR in arena_free (F1)
//   producer: PB acquire load in alloc (F2) pairs with F1: the consumer's
//             reads of a range happen before the producer reuses (and
//             overwrites) it.
#ifndef KNIT_SRC_ARENA_H
#define KNIT_SRC_ARENA_H

#include "src/common.h"

#include "src/region.h"

namespace knit::detail {

inline constexpr uint32_t kArenaSlots = 32;                      // allocator slots (>= queue lanes)
inline constexpr uint32_t kArenaGranule = 64;                    // size and alignment granule
inline constexpr uint64_t kArenaMaxCapacity = (1ull << 32) - 64; // offsets are u32

static_assert(kArenaSlots == 32, "PA/PB are 32-bit toggle words");

// Where one arena's shared state lives. Every pointer is computed by each
// process from its own mapping of the region (the region is position
// independent). pa, pb and table must be 4-byte aligned.
struct ArenaShared {
	uint32_t *pa; // "allocated" toggles: written only by the producer (release store), read by
		      // consumers
	uint32_t *pb; // "freed" toggles: atomic XOR by every consumer, and by the producer on
		      // rollback
	uint32_t *table; // kArenaSlots x {offset, size} u32 pairs: written by the producer before
			 // it publishes the frame that uses the slot; read by consumers to validate
	uint8_t *base;   // first byte of arena data (64-byte aligned)
	uint64_t capacity; // bytes of data, multiple of 64, <= kArenaMaxCapacity
};

// Bytes the table needs in shared memory (32 x 2 x u32).
inline constexpr uint64_t kArenaTableBytes = kArenaSlots * 2 * sizeof(uint32_t);

// The single producer's private allocator state. Not thread-safe: exactly one
// thread (the lock's producer) calls its members at a time.
class ArenaProducer {
public:
	// Attach to zero-filled shared state (or to state whose PA == PB: all
	// free). The private mirror of PA starts from the shared PA; a slot whose
	// PA^PB bit is already set is never handed out (it is not ours to track).
	// capacity is clamped down to a multiple of 64 and to kArenaMaxCapacity;
	// per_call_max == 0 means "no cap beyond capacity".
	void init(const ArenaShared &s, uint64_t per_call_max);

	// Reserve n >= 1 bytes (rounded up to 64; n == 0 reserves one granule).
	// Returns 0 and sets *slot and *offset (byte offset from base, 64-aligned);
	// -KNIT_ETOOBIG if n > per_call_max or n > capacity (it can never fit);
	// -KNIT_EAGAIN if it does not fit now (arena full or fragmented, or all
	// 32 slots live): a clean "no room", the caller waits for the consumer to
	// free and retries. Never corrupts anything. On success PA and table[slot]
	// are already written (A1); the caller writes the bytes, may shrink(),
	// and publishes the frame through the lock (or rollback()s it).
	int alloc(uint32_t n, uint32_t *slot, uint32_t *offset);

	// Only n bytes of the unpublished reservation `slot` are used: its size
	// becomes align64(n) (at least one granule) and the tail is a reusable gap
	// for the next alloc(). Never grows. Ignored for
	// a slot that is not a live reservation of ours. Call before publishing.
	void shrink(uint32_t slot, uint32_t n);

	// Give back a reservation that was never published: one atomic XOR into
	// PB, reclaimed lazily by a later alloc() like any consumer free. Ignored
	// for a slot that is not a live reservation of ours.
	void rollback(uint32_t slot);

	// base + offset. The caller passes an offset alloc() returned.
	uint8_t *at(uint32_t offset) const { return s_.base + offset; }

	// Allocations not yet freed, as the producer can see now (tests, stats).
	uint32_t live_count();

	// Give the committed pages of the arena back to the kernel above the end
	// of every tracked allocation (and above `keep` bytes, a floor worth
	// keeping committed), up to the highest byte handed out since the last
	// trim. `region` is the mapping that contains base. Producer thread only;
	// cheap no-op when nothing was handed out above that line. Allocations
	// the consumers have freed are reclaimed first (as alloc() would), so an
	// arena whose payloads were all consumed trims down to `keep`. Meant for
	// a lane that has gone idle after a burst, so an idle pool does not pin
	// its high-water mark. Returns 0 or region_release()'s code.
	int trim(Region *region, uint64_t keep);

	// Highest end offset handed out since init() or the last trim().
	uint64_t high_water() const { return high_water_; }

	// The same, readable from any thread (relaxed: a statistic, the
	// producer is its only writer).
	uint64_t high_water_shared() const { return knit_load_relaxed_64(&hw_shared_); }

	// Number of trim() calls that gave pages back. Any thread (relaxed;
	// the producer is its only writer).
	uint64_t trims() const { return knit_load_relaxed_64(&trims_); }

	// Number of times the allocator found every tracked slot freed and
	// restarted at offset 0.
	uint64_t resets() const { return resets_; }

	uint64_t capacity() const { return s_.capacity; }
	uint64_t per_call_max() const { return per_call_max_; }

private:
	uint32_t pick_slot(uint32_t live) const;
	bool first_fit(uint64_t size, uint64_t *offset, uint32_t *pos) const;
	void compact(uint32_t freed);
	void commit(uint32_t slot, uint64_t offset, uint64_t size);
	uint64_t tracked_end() const;

	ArenaShared s_{};
	uint64_t per_call_max_ = 0;
	uint32_t pa_mirror_ = 0;          // the value of PA we last stored (we are its only writer)
	uint32_t used_ = 0;               // slots in order_[] (live or freed-not-yet-reclaimed)
	uint32_t count_ = 0;              // entries in order_[]
	uint8_t order_[kArenaSlots] = {}; // tracked slots sorted by start
	uint32_t start_[kArenaSlots] = {};
	uint32_t size_[kArenaSlots] = {};
	uint64_t high_water_ = 0;
	uint64_t hw_shared_ = 0; // high_water_, for readers on other threads
	uint64_t trims_ = 0;
	uint64_t resets_ = 0;
	void set_high_water(uint64_t hw);
	void reclaim();
};

// Consumer side (any process). 0 if bytes [offset, offset+len) lie inside the
// live allocation `slot` (slot < 32, PA^PB bit set, table[slot] a well-formed
// range within capacity and containing the bytes); -KNIT_EPROTO otherwise.
// Never reads outside the ArenaShared it was given (PA, PB and table[slot]
// only), whatever the shared words contain. len == 0 is accepted when offset
// lies within the slot's range.
int arena_check(const ArenaShared &s, uint32_t slot, uint32_t offset, uint32_t len);

// Free a slot after its bytes were copied out: one atomic XOR of 1<<slot into
// PB (F1: release, pairs with the producer's acquire load F2 in alloc). Call
// only after arena_check succeeded for it in this frame; slot >= 32 is ignored.
void arena_free(const ArenaShared &s, uint32_t slot);

} // namespace knit::detail

#endif
