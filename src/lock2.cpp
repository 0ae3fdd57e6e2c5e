// SPDX-License-Identifier: MIT
// src/lock2.cpp - the lock2 producer and consumer endpoints (see lock2.h for
// the protocol and the fence-pairing table P1..P3 / C1..C3 cited below, and
// layout.h for where every word lives).
#include "src/common.h"

#include "src/lock2.h"

namespace knit::detail {

static bool arena_shared_ok(const ArenaShared &a)
{
	return a.pa != nullptr && a.pb != nullptr && a.table != nullptr && a.base != nullptr &&
	       arena_capacity_ok(a.capacity) && ((uintptr_t)a.base % kArenaGranule) == 0;
}

static bool lock_base_ok(const uint8_t *lock)
{
	return lock != nullptr && ((uintptr_t)lock % 64) == 0;
}

ArenaShared lock_arena_shared(uint8_t *lock, uint8_t *arena_data, uint64_t capacity)
{
	ArenaShared s;
	s.pa = word_at(lock, kLockOffPA);
	s.pb = word_at(lock, kLockOffPB);
	s.table = word_at(lock, kLockOffTable);
	s.base = arena_data;
	s.capacity = capacity;
	return s;
}

// ---- producer -------------------------------------------------------------------

int LockProducer::attach(uint8_t *lock, const ArenaShared &arena, uint64_t per_call_max)
{
	steal_ctl_ = nullptr;
	steal_n_ = 0;
	return attach_impl(lock, arena, per_call_max);
}

int LockProducer::attach_steal(uint8_t *lock, const ArenaShared &arena, uint64_t per_call_max,
			       uint8_t *steal_ctl, uint32_t consumers)
{
	if (steal_ctl == nullptr || ((uintptr_t)steal_ctl % 64) != 0 || consumers == 0 ||
	    consumers > kMaxStealConsumers)
		return -KNIT_EINVAL;
	steal_ctl_ = steal_ctl;
	steal_n_ = consumers;
	int rc = attach_impl(lock, arena, per_call_max);
	if (rc != 0) {
		steal_ctl_ = nullptr;
		steal_n_ = 0;
	}
	return rc;
}

int LockProducer::attach_impl(uint8_t *lock, const ArenaShared &arena, uint64_t per_call_max)
{
	if (!lock_base_ok(lock) || !arena_shared_ok(arena) || per_call_max == 0)
		return -KNIT_EINVAL;
	lock_ = lock;
	a_ = word_at(lock, kLockOffA);
	b_ = word_at(lock, kLockOffB);
	shared_ = arena;
	per_call_max_ = per_call_max;
	// We are A's only writer: a previous producer over this memory stored it,
	// and whoever handed the lock to us ordered that before this call.
	published_ = knit_load_relaxed_32(a_);
	// Steal: the ring cursor is ours too (stored with every flush).
	// The word holds 31 - cursor, so zero-filled memory starts at lane 31.
	ring_ = steal_ctl_ != nullptr
			? (kLanes - 1) - knit_load_relaxed_32(word_at(lock, kLockOffRing)) % kLanes
			: kLanes - 1;
	// P2: pairs with the consumer's release store of B in retire() (C3).
	// Nothing allocated by us yet: nothing to free (load_retired).
	retired_seen_ = steal_ctl_ != nullptr ? xor_acks() : 0;
	shadow_ = load_retired();
	staged_ = 0;
	if (steal_ctl_ == nullptr) {
		// Over used memory (frames in flight, lock2.h "Order"): go on
		// below them, at a free lane whose upper neighbour is in flight,
		// the end of the ring's run of frames (the first such from the
		// top: with several runs, order may break this once).
		const uint32_t busy = published_ ^ shadow_;
		for (uint32_t l = kLanes; busy != 0 && busy != ~0u && l-- > 0;)
			if ((busy >> l & 1u) == 0 && (busy >> ((l + 1) % kLanes) & 1u) != 0) {
				ring_ = l;
				break;
			}
	}
	memset(lane_arena_, 0xFF, sizeof lane_arena_);
	// +1: a string or error message of exactly per_call_max bytes carries a NUL.
	arena_.init(arena, per_call_max + 1);
	return 0;
}

uint32_t LockProducer::xor_acks() const
{
	// Steal (steal.h): retired = XOR of every consumer's ACK word.
	// A torn multi-word read is safe: between two publishes of a lane
	// exactly one ACK bit flips once, so the lane reads busy or
	// correctly free, never free while busy.
	uint32_t x = 0;
	for (uint32_t c = 0; c < steal_n_; c++)
		// P2 (steal): acquire, pairs with consumer c's release store
		// of ACK[c] in LockConsumer::retire() (steal claim step 10):
		// its reads of the slot happen before we overwrite the lane.
		x ^= knit_load_acquire_32(word_at(steal_ctl_, steal_ack_offset(c)));
	return x;
}

uint32_t LockProducer::load_retired()
{
	if (steal_ctl_ != nullptr) {
		const uint32_t x = xor_acks();
		// The lanes retired since our last look: free what their frames
		// still hold in the arena (a worker process's consumer does not:
		// LockConsumer::set_frees). After the acquire loads above, so
		// every read of those ranges happened before (P2).
		const uint32_t newly = x ^ retired_seen_;
		retired_seen_ = x;
		// Only lanes free now and not staged: an honest retirement
		// leaves its lane free; a flip that left a lane busy is no
		// consumer's retirement.
		const uint32_t freed = newly & ~(published_ ^ x) & ~staged_;
		if (freed != 0)
			reclaim_lost(freed);
		return x;
	}
	// P2: acquire, pairs with the release store of B in LockConsumer::retire()
	// (C3): the consumer's reads of the slot and its arena free happen before
	// we overwrite the lane.
	return knit_load_acquire_32(b_);
}

int LockProducer::pick_lane()
{
	// The lane we may fill: any free one under steal, else the ring's.
	const uint32_t want = steal_ctl_ != nullptr ? ~0u : lane_bit(ring_);
	uint32_t free = free_cached();
	if ((free & want) == 0) {
		// Refresh only when the cached free set has no lane for us
		// (lock2.h): a stale shadow can only hide free lanes, never show
		// a busy one.
		shadow_ = load_retired();
		free = free_cached();
		if ((free & want) == 0)
			return -KNIT_EAGAIN;
		// The lanes the consumer gave back since the last refresh are the
		// next frames' lines: ask for all of them now (prefetch_ahead then
		// only keeps ahead), so each has several calls' time to arrive.
		for (uint32_t m = free; m != 0; m &= m - 1)
			knit_prefetch_write(lock_ + lock_task_offset((uint32_t)__builtin_ctz(m)));
	}
	// The ring's lane (steal: the first free lane at or below the ring
	// cursor, wrapping), so the lanes a consumer walks down from its
	// cursor come in publish order (lock2.h, "Order"; steal:
	// steal_ring_first in steal.h).
	return (int)ring_pick(free);
}

// stage() without its inline scalar fast path (lock2.h).
int LockProducer::stage_slow(const FrameHead &head, const knit_value_t &value)
{
	if (lock_ == nullptr)
		return -KNIT_EINVAL;
	// Never-publishable values fail first, whatever the queue's state.
	int rc = codec_check(value, per_call_max_);
	if (rc != 0)
		return rc;
	int lane = pick_lane();
	if (lane < 0)
		return lane;
	TaskLine *line = task_line((uint32_t)lane);
	rc = codec_encode(value, lock_ + lock_inline_offset((uint32_t)lane), &arena_, line);
	if (rc == -KNIT_EAGAIN && steal_ctl_ != nullptr) {
		// Steal: the arena may hold allocations of lanes retired since
		// our last look (the producer frees them: reclaim_lost); look now
		// and try once more.
		shadow_ = load_retired();
		rc = codec_encode(value, lock_ + lock_inline_offset((uint32_t)lane), &arena_, line);
	}
	if (rc != 0) {
		// Nothing allocated; the lane stays free, and the ring's next
		// lane (lock2.h, "Order": no hole).
		if (steal_ctl_ == nullptr)
			ring_ = (uint32_t)lane;
		return rc;
	}
	write_head(head, line);
	// Our own stores just made (same widths: forwarded, not re-fetched).
	note_arena((uint32_t)lane, line->where == kWhereArena ? line->arena_slot : 0xFFu);
	staged_ |= lane_bit((uint32_t)lane);
	prefetch_ahead(free_cached());
	return lane;
}

void LockProducer::note_arena(uint32_t lane, uint32_t slot)
{
	if (slot >= kArenaSlots) {
		lane_arena_[lane] = 0xFF;
		return;
	}
	seq_++;
	lane_arena_[lane] = (uint8_t)slot;
	lane_seq_[lane] = seq_;
	slot_seq_[slot] = seq_;
}

void LockProducer::reclaim_lost(uint32_t lanes)
{
	for (uint32_t m = lanes; m != 0; m &= m - 1) {
		const uint32_t lane = (uint32_t)__builtin_ctz(m);
		const uint32_t slot = lane_arena_[lane];
		if (slot < kArenaSlots && slot_seq_[slot] == lane_seq_[lane])
			arena_.rollback(slot); // only if still live: the consumer never freed it
		lane_arena_[lane] = 0xFF;
	}
}

uint32_t LockProducer::flush()
{
	const uint32_t mask = staged_;
	if (mask == 0)
		return 0;
	published_ ^= mask;
	// Steal: the ring cursor, ordered before A by the release store below
	// (P1); a consumer reads it after its acquire load of A.
	if (steal_ctl_ != nullptr)
		knit_store_relaxed_32(word_at(lock_, kLockOffRing), (kLanes - 1) - ring_);
	// P1: release, pairs with the consumer's acquire load of A in pending()
	// / decode() (C1): slot, inline area, arena bytes and arena table/PA of
	// every staged lane are visible before any of them reads as pending.
	knit_store_release_32(a_, published_);
	staged_ = 0;
	return mask;
}

int LockProducer::publish(const FrameHead &head, const knit_value_t &value)
{
	int lane = stage(head, value);
	flush();
	return lane;
}

int LockProducer::reserve(uint32_t n, Reservation *r)
{
	if (lock_ == nullptr || r == nullptr || r->live)
		return -KNIT_EINVAL;
	if (n > per_call_max_ || n == 0xFFFFFFFFu)
		return -KNIT_ETOOBIG;
	uint32_t slot, off;
	// One hidden byte for the NUL in case the payload is published as text.
	int rc = arena_.alloc(n + 1, &slot, &off);
	if (rc != 0)
		return rc;
	r->data = arena_.at(off);
	r->capacity = n;
	r->slot = slot;
	r->offset = off;
	r->live = 1;
	return 0;
}

int LockProducer::stage_reserved(const FrameHead &head, uint32_t type, int32_t code, uint32_t len,
				 Reservation *r)
{
	if (lock_ == nullptr || r == nullptr || !r->live || len > r->capacity ||
	    !codec_has_bytes(type))
		return -KNIT_EINVAL;
	int lane = pick_lane();
	if (lane < 0)
		return lane; // reservation kept
	arena_.shrink(r->slot, (uint32_t)codec_stored_bytes(type, len));
	TaskLine *line = task_line((uint32_t)lane);
	int rc = codec_encode_arena(type, code, len, r->slot, r->offset, r->data, line);
	if (rc != 0)
		return rc; // unreachable: type checked above
	write_head(head, line);
	note_arena((uint32_t)lane, r->slot);
	staged_ |= lane_bit((uint32_t)lane);
	r->live = 0;
	return lane;
}

int LockProducer::publish_reserved(const FrameHead &head, uint32_t type, int32_t code, uint32_t len,
				   Reservation *r)
{
	int lane = stage_reserved(head, type, code, len, r);
	flush();
	return lane;
}

void LockProducer::cancel(Reservation *r)
{
	if (lock_ == nullptr || r == nullptr || !r->live)
		return;
	arena_.rollback(r->slot);
	r->live = 0;
}

uint32_t LockProducer::refresh()
{
	if (lock_ == nullptr)
		return 0;
	shadow_ = load_retired();
	return free_cached();
}

bool LockProducer::idle()
{
	if (lock_ == nullptr)
		return true;
	shadow_ = load_retired();
	return staged_ == 0 && shadow_ == published_;
}

// ---- consumer -------------------------------------------------------------------

int LockConsumer::attach(uint8_t *lock, const ArenaShared &arena, const ConsumerLimits &limits)
{
	if (!lock_base_ok(lock))
		return -KNIT_EINVAL;
	// The single-consumer endpoint is the steal one with B as its retire
	// word and pending() reading A itself.
	int rc = attach_steal(lock, word_at(lock, kLockOffB), arena, limits);
	if (rc == 0)
		steal_ = false;
	return rc;
}

int LockConsumer::attach_steal(uint8_t *lock, uint32_t *ack_word, const ArenaShared &arena,
			       const ConsumerLimits &limits)
{
	if (!lock_base_ok(lock) || !arena_shared_ok(arena) || ack_word == nullptr ||
	    ((uintptr_t)ack_word % 4) != 0)
		return -KNIT_EINVAL;
	// Steal: ACK and CLAIM are one u64 (layout.h): the word must be aligned.
	if (ack_word != word_at(lock, kLockOffB) && ((uintptr_t)ack_word % 8) != 0)
		return -KNIT_EINVAL;
	steal_ = true;
	frees_ = true;
	lock_ = lock;
	// Attached again over the same lock (a process worker's lane reset
	// after its death, src/proc.cpp), a_ keeps its value and is not even
	// rewritten: any host thread reads it (publish_word) without the
	// dispatcher lock the re-attach holds.
	uint32_t *const a = word_at(lock, kLockOffA);
	if (a_ != a)
		a_ = a;
	b_ = ack_word;
	shared_ = arena;
	limits_ = limits;
	// We are B's only writer (see LockProducer::attach for A).
	mirror_ = knit_load_relaxed_32(b_);
	cursor_ = kLanes;
	seen_ = 0;
	taken_ = 0;
	held_ = 0;
	memset(lane_slot_, 0xFF, sizeof lane_slot_);
	return 0;
}

uint32_t LockConsumer::pending()
{
	if (lock_ == nullptr)
		return 0;
	if (steal_)
		return seen_ & ~taken_; // only what a claim offered (steal.cpp)
	// C1: acquire, pairs with the producer's release store of A in flush()
	// (P1). Never cached: a stale A would hide published lanes, and a
	// worker re-checking before it parks must see the host's last publish.
	seen_ = knit_load_acquire_32(a_) ^ mirror_;
	return seen_ & ~taken_;
}

void LockConsumer::record_claim(uint32_t lanes)
{
	if (!steal_ || lock_ == nullptr)
		return;
	// S7 (steal.h): release, pairs with the host's acquire load of
	// ACK/CLAIM in steal_reap_dead() once this consumer is known dead. The
	// ACK half is our mirror, unchanged: peers and the producer see no
	// change. Release also orders it before our arena frees of these lanes
	// (arena_free's XOR of PB): a freed slot is always a recorded claim.
	knit_store_release_64(reinterpret_cast<uint64_t *>(b_),
			      (uint64_t)mirror_ | ((uint64_t)lanes << 32));
}

void LockConsumer::prefetch(uint32_t snapshot) const
{
	if (lock_ == nullptr)
		return;
	for (; snapshot != 0; snapshot &= snapshot - 1)
		__builtin_prefetch(lock_ + lock_task_offset((uint32_t)__builtin_ctz(snapshot)), 0,
				   3);
}

int LockConsumer::next_lane(uint32_t *snapshot)
{
	const uint32_t snap = *snapshot;
	if (snap == 0)
		return -1;
	const uint32_t below = cursor_ >= kLanes ? snap : snap & (lane_bit(cursor_) - 1u);
	const uint32_t lane = highest_lane(below != 0 ? below : snap);
	*snapshot = snap & ~lane_bit(lane);
	cursor_ = lane;
	return (int)lane;
}

// decode() without its inline fast path (lock2.h).
int LockConsumer::decode_slow(uint32_t lane, FrameHead *head, knit_value_t *view)
{
	// Not ours to take (no lock, a bad lane, not published or taken
	// already): nothing is read, and the outputs read as empty.
	const uint32_t bit = lock_ != nullptr && lane < kLanes ? lane_bit(lane) : 0;
	if (bit != 0 && (seen_ & bit) == 0 && !steal_) {
		// C1 again: acquire, pairs with the release store of A (P1).
		seen_ = knit_load_acquire_32(a_) ^ mirror_;
	}
	if (bit == 0 || (seen_ & bit) == 0 || (taken_ & bit) != 0) {
		memset(head, 0, sizeof *head);
		memset(view, 0, sizeof *view);
		return -KNIT_EINVAL;
	}
	taken_ |= bit; // from here on the lane is retired whatever we find
	// From here every field of *head is written below, and codec_decode()
	// writes all of *view: no clearing first (once per frame, both sides).

	// One private snapshot of the task line: every check below and every use
	// after it sees the same words, whatever a hostile peer writes meanwhile.
	TaskLine snap;
	memcpy(&snap, lock_ + lock_task_offset(lane), sizeof snap);
	__asm__("" : "+m"(snap)); // a real copy, read once (see decode())
	const uint32_t fault = decode_head(snap, head);
	return decode_value(lane, snap, fault, head, view);
}

int LockConsumer::decode_value(uint32_t lane, const TaskLine &snap, uint32_t fault, FrameHead *head,
			       knit_value_t *view)
{
	uint32_t slot = kNoArenaSlot;
	if (codec_decode(snap, lock_ + lock_inline_offset(lane), shared_, held_, view, &slot) != 0)
		fault |= kFaultValue;
	if (slot != kNoArenaSlot) {
		// A valid, live arena allocation: ours to free on release, even if
		// the head is bad (otherwise a bad head would leak arena space).
		lane_slot_[lane] = (uint8_t)slot;
		held_ |= lane_bit(slot);
	}
	head->fault = fault;
	if (fault != 0) {
		memset(view, 0, sizeof *view);
		return -KNIT_EPROTO;
	}
	return 0;
}

void LockConsumer::release_held(uint32_t lane)
{
	if (lock_ == nullptr || lane >= kLanes)
		return;
	const uint32_t slot = lane_slot_[lane];
	if (slot >= kArenaSlots)
		return;
	if (!frees_) { // the producer frees it (set_frees)
		held_ &= ~lane_bit(slot);
		lane_slot_[lane] = 0xFF;
		return;
	}
	// C3 (first half): arena_free is an atomic XOR on PB with release order,
	// pairing with the arena producer's acquire load of PB before it reuses
	// the range: our copy-out happens before the overwrite.
	arena_free(shared_, slot);
	held_ &= ~lane_bit(slot);
	lane_slot_[lane] = 0xFF;
}

uint32_t LockConsumer::retire(uint32_t mask)
{
	mask &= taken_;
	if (mask == 0)
		return 0;
	for (uint32_t m = mask; m != 0; m &= m - 1)
		release((uint32_t)__builtin_ctz(m));
	mirror_ ^= mask;
	// C3: release, pairs with the producer's acquire load of B in
	// LockProducer::load_retired() (P2): every read of these slots (and the
	// arena frees above) happens before the producer rewrites them. Steal:
	// the same for ACK[c], and CLAIM[c] = 0 in the same 64-bit store, so
	// no instant shows the lanes both acknowledged and still claimed.
	if (steal_)
		knit_store_release_64(reinterpret_cast<uint64_t *>(b_), (uint64_t)mirror_);
	else
		knit_store_release_32(b_, mirror_);
	taken_ &= ~mask;
	seen_ &= ~mask;
	return mask;
}

} // namespace knit::detail
