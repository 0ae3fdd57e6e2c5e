// SPDX-License-Identifier: MIT
// src/arena.cpp - the payload arena allocator (producer side) and the
// consumer's check and free (see arena.h for the protocol and the pairing of
// every atomic).
#include "src/common.h"

#include "src/arena.h"

#include "knitting.h"

namespace knit::detail {
namespace {

constexpr uint32_t bit(uint32_t slot) { return 1u << slot; }

uint64_t granules(uint64_t n) { return align_up(n == 0 ? 1 : n, kArenaGranule); }

} // namespace

void ArenaProducer::init(const ArenaShared &s, uint64_t per_call_max)
{
	s_ = s;
	uint64_t cap = s.capacity & ~(uint64_t)(kArenaGranule - 1);
	s_.capacity = min_of(cap, kArenaMaxCapacity);
	per_call_max_ = per_call_max == 0 ? s_.capacity : per_call_max;
	// acquire: pairs with the release store of PA by a previous producer of
	// this arena, if any (normally the memory is fresh and this reads 0).
	pa_mirror_ = knit_load_acquire_32(s_.pa);
	used_ = 0;
	count_ = 0;
	set_high_water(0);
	knit_store_relaxed_64(&trims_, 0);
	resets_ = 0;
}

void ArenaProducer::set_high_water(uint64_t hw)
{
	high_water_ = hw;
	// Relaxed: a statistic for other threads; nothing is ordered by it.
	knit_store_relaxed_64(&hw_shared_, hw);
}

// Lowest slot that is neither tracked nor showing a PA^PB bit we cannot
// account for (a foreign toggle: using it would make the allocation look
// freed, or live, the moment we flip PA). kArenaSlots if none.
uint32_t ArenaProducer::pick_slot(uint32_t live) const
{
	uint32_t avail = ~used_ & ~live;
	return avail == 0 ? kArenaSlots : (uint32_t)__builtin_ctz(avail);
}

// First fit over the start-sorted table: the gap before the first entry,
// between consecutive entries, or after the last, within capacity. Sets
// *offset and the insertion index *pos.
bool ArenaProducer::first_fit(uint64_t size, uint64_t *offset, uint32_t *pos) const
{
	uint64_t prev_end = 0;
	for (uint32_t i = 0; i < count_; i++) {
		uint32_t s = order_[i];
		if (start_[s] >= prev_end && start_[s] - prev_end >= size) {
			*offset = prev_end;
			*pos = i;
			return true;
		}
		prev_end = (uint64_t)start_[s] + size_[s];
	}
	if (prev_end <= s_.capacity && s_.capacity - prev_end >= size) {
		*offset = prev_end;
		*pos = count_;
		return true;
	}
	return false;
}

// Drop the freed entries from the table (stable order) and from used_.
void ArenaProducer::compact(uint32_t freed)
{
	uint32_t out = 0;
	for (uint32_t i = 0; i < count_; i++) {
		uint32_t s = order_[i];
		if ((freed & bit(s)) == 0) {
			order_[out++] = (uint8_t)s;
		}
	}
	count_ = out;
	used_ &= ~freed;
}

uint64_t ArenaProducer::tracked_end() const
{
	uint64_t end = 0;
	for (uint32_t i = 0; i < count_; i++) {
		uint32_t s = order_[i];
		end = max_of(end, (uint64_t)start_[s] + size_[s]);
	}
	return end;
}

// Record the allocation privately, publish its table entry, then flip its PA
// bit. The entry must be visible before the bit: A1 below.
void ArenaProducer::commit(uint32_t slot, uint64_t offset, uint64_t size)
{
	start_[slot] = (uint32_t)offset;
	size_[slot] = (uint32_t)size;
	used_ |= bit(slot);
	// Relaxed: ordered before consumers' reads by the release store of PA
	// just below (and by the lock's release store of A when published).
	knit_store_relaxed_32(&s_.table[2 * slot], (uint32_t)offset);
	knit_store_relaxed_32(&s_.table[2 * slot + 1], (uint32_t)size);
	pa_mirror_ ^= bit(slot);
	// A1 release: pairs with the acquire load of PA in arena_check (A2); the
	// table entry above is visible to whoever sees this bit.
	knit_store_release_32(s_.pa, pa_mirror_);
	if (offset + size > high_water_)
		set_high_water(offset + size);
}

int ArenaProducer::alloc(uint32_t n, uint32_t *slot, uint32_t *offset)
{
	if (n > per_call_max_ || n > s_.capacity) {
		return -KNIT_ETOOBIG; // before any reservation, it can never fit
	}
	uint64_t size = granules(n);
	uint32_t live = 0;
	if (used_ != 0) {
		// F2 acquire: pairs with the acq_rel XOR in arena_free (F1) and in
		// rollback: a consumer's copy-out of a range happens before we
		// reuse that range below.
		uint32_t pb = knit_load_acquire_32(s_.pb);
		live = pa_mirror_ ^ pb;
		uint32_t freed = used_ & ~live;
		if (freed == used_) {
			// Every tracked allocation is freed: restart at offset 0.
			count_ = 0;
			used_ = 0;
			resets_++;
		} else if (freed != 0) {
			// Exact-size hole reuse: rewrite a freed entry in place under
			// a (possibly) new slot index; the table stays sorted.
			for (uint32_t i = 0; i < count_; i++) {
				uint32_t old = order_[i];
				if ((freed & bit(old)) == 0 || size_[old] != size) {
					continue;
				}
				used_ &= ~bit(old);
				uint32_t s = pick_slot(live); // finds old at worst: freed, so its
							      // live bit is clear
				order_[i] = (uint8_t)s;
				commit(s, start_[old], size);
				*slot = s;
				*offset = start_[s];
				return 0;
			}
			compact(freed);
		}
	} else {
		// Nothing tracked (first alloc after init): only a foreign toggle
		// can show in PA^PB. acquire: pairs with the frees (F1) of a
		// previous producer's allocations before we overwrite their bytes.
		live = pa_mirror_ ^ knit_load_acquire_32(s_.pb);
	}
	uint32_t s = pick_slot(live);
	if (s == kArenaSlots) {
		return -KNIT_EAGAIN; // all 32 slots live: wait for frees
	}
	uint64_t off = 0;
	uint32_t pos = 0;
	if (!first_fit(size, &off, &pos)) {
		return -KNIT_EAGAIN; // full or fragmented: wait for frees
	}
	for (uint32_t i = count_; i > pos; i--) {
		order_[i] = order_[i - 1];
	}
	order_[pos] = (uint8_t)s;
	count_++;
	commit(s, off, size);
	*slot = s;
	*offset = (uint32_t)off;
	return 0;
}

void ArenaProducer::shrink(uint32_t slot, uint32_t n)
{
	if (slot >= kArenaSlots || (used_ & bit(slot)) == 0) {
		return;
	}
	// Relaxed: only whether the slot is still live matters (a freed entry
	// kept for lazy reclamation is not a reservation any more).
	if (((pa_mirror_ ^ knit_load_relaxed_32(s_.pb)) & bit(slot)) == 0) {
		return;
	}
	uint64_t size = granules(n);
	if (size >= size_[slot]) {
		return;
	}
	size_[slot] = (uint32_t)size;
	// Relaxed: the frame is not published yet; the lock's release store of
	// A orders this before the consumer's check.
	knit_store_relaxed_32(&s_.table[2 * slot + 1], (uint32_t)size);
}

void ArenaProducer::rollback(uint32_t slot)
{
	if (slot >= kArenaSlots || (used_ & bit(slot)) == 0) {
		return;
	}
	// Relaxed is enough to tell whether the slot is still live: only we can
	// free an unpublished reservation.
	if (((pa_mirror_ ^ knit_load_relaxed_32(s_.pb)) & bit(slot)) == 0) {
		return;
	}
	// acq_rel RMW: PB has other writers (consumers' frees), so a read-modify-
	// write that cannot lose their toggles; our own later acquire load (F2)
	// sees it like any free.
	knit_xor_acq_rel_32(s_.pb, bit(slot));
}

uint32_t ArenaProducer::live_count()
{
	// acquire: pairs with the consumers' XORs (F1), like F2.
	uint32_t live = (pa_mirror_ ^ knit_load_acquire_32(s_.pb)) & used_;
	return (uint32_t)__builtin_popcount(live);
}

// Drop the tracked allocations consumers have freed (trim only: alloc()
// reclaims the same way, with exact-size reuse first).
void ArenaProducer::reclaim()
{
	if (used_ == 0) {
		return;
	}
	// acquire: pairs with the consumers' XORs in arena_free (F1) and with
	// rollback, like F2: their copy-out of a range happens before trim()
	// gives its pages back (the bytes would read as zeros afterwards).
	uint32_t freed = used_ & ~(pa_mirror_ ^ knit_load_acquire_32(s_.pb));
	if (freed == used_) {
		count_ = 0;
		used_ = 0;
		resets_++;
	} else if (freed != 0) {
		compact(freed);
	}
}

int ArenaProducer::trim(Region *region, uint64_t keep)
{
	if (region == nullptr || region->base == nullptr || s_.base < region->base ||
	    (uint64_t)(s_.base - region->base) > region->size) {
		return -KNIT_EINVAL;
	}
	if (high_water_ <= min_of(keep, s_.capacity)) {
		return 0; // nothing handed out above the floor since the last trim
	}
	reclaim();
	uint64_t lo = max_of(tracked_end(), min_of(keep, s_.capacity));
	uint64_t hi = high_water_;
	if (hi <= lo) {
		return 0;
	}
	uint64_t base_off = (uint64_t)(s_.base - region->base);
	if (base_off + s_.capacity > region->size) {
		return -KNIT_EINVAL;
	}
	// Round the top up to a page when that page still lies inside the arena
	// data (region_release only drops whole pages inside the range).
	uint64_t page = region_page_size();
	uint64_t top = min_of(align_up(base_off + hi, page), base_off + s_.capacity);
	int rc = region_release(region, base_off + lo, top - (base_off + lo));
	if (rc == 0) {
		set_high_water(lo);
		if (align_up(base_off + lo, page) < top) {          // a whole page went back
			knit_store_relaxed_64(&trims_, trims_ + 1); // relaxed: statistic
		}
	}
	return rc;
}

int arena_check(const ArenaShared &s, uint32_t slot, uint32_t offset, uint32_t len)
{
	if (slot >= kArenaSlots) {
		return -KNIT_EPROTO;
	}
	// A2 acquire: pairs with the release store of PA in commit (A1), so the
	// table entry below is the one written for this allocation.
	uint32_t pa = knit_load_acquire_32(s.pa);
	// Relaxed: only the bit's value is needed; this slot's PB bit changes
	// only through our own free of this frame.
	uint32_t pb = knit_load_relaxed_32(s.pb);
	if (((pa ^ pb) & bit(slot)) == 0) {
		return -KNIT_EPROTO;
	}
	uint64_t t_off = knit_load_relaxed_32(&s.table[2 * slot]);
	uint64_t t_size = knit_load_relaxed_32(&s.table[2 * slot + 1]);
	// Everything in 64-bit arithmetic: no u32 sum can wrap here.
	uint64_t cap = min_of(s.capacity, kArenaMaxCapacity);
	if (t_size == 0 || (t_off | t_size) % kArenaGranule != 0 || t_off + t_size > cap) {
		return -KNIT_EPROTO;
	}
	uint64_t lo = offset;
	uint64_t hi = lo + len;
	if (lo < t_off || hi > t_off + t_size) {
		return -KNIT_EPROTO;
	}
	return 0;
}

void arena_free(const ArenaShared &s, uint32_t slot)
{
	if (slot >= kArenaSlots) {
		return;
	}
	// F1 acq_rel (release half): pairs with the producer's acquire load of
	// PB in alloc (F2); our copy-out of the range happens before its reuse.
	// An RMW because every consumer and the producer's rollback write PB.
	knit_xor_acq_rel_32(s.pb, bit(slot));
}

} // namespace knit::detail
