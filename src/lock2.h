// SPDX-License-Identifier: MIT
// src/lock2.h - the lock2 sector protocol: a one-directional 32-lane queue
// between one producer and one consumer, over memory that may be shared with
// another process (the same bytes mapped at different addresses: everything
// is an offset from the lock base, see src/layout.h for the layout table).
//
// Protocol: lane i is free when bit i of A
// (producer's publish word) equals bit i of B (consumer's ack word), in
// flight when they differ. The producer writes slot i, then flips bit i of A
// with one release store (several lanes per store with stage()+flush()). The
// consumer loads A with acquire (never cached), takes pending lanes in
// descending round-robin order, copies out, frees arena slots, then flips
// their bits of B with one release store. The producer keeps a possibly stale
// shadow of B and refreshes it only when its cached free set is empty: a
// stale B can only make a lane look busy, never a busy lane look free.
//
// Order: the producer fills the lanes in a ring, downwards and wrapping: the
// lane below the one it filled last, and only that one (busy: it waits, as
// for a full queue, after one refresh of its shadow). The consumer walks
// pending lanes downwards from its cursor (the lane it took last, wrapping),
// so it takes frames in the order they were published: FIFO. Filling any
// other free lane breaks that: the highest free one (what this queue did
// first) or the next free one down, skipping a busy or stale-looking lane,
// leaves a free hole that a later frame fills after a wrap, ahead of the
// consumer's cursor and of earlier frames below it. The consumer frees lanes
// in the order it took them, so the ring costs no capacity. Order holds per
// producer-consumer pair from their attach on (a re-attach of one side
// alone, over used memory, may break it once). Every frame is delivered
// exactly once. The steal topology's producer keeps its own ring order
// (steal.h), with several consumers.
//
// Endpoints are separate types: LockProducer cannot consume, LockConsumer
// cannot publish. Each endpoint is used by one thread at a time. attach()
// loads the current shared words into the private mirrors, so endpoints can
// be re-created over used memory: a re-attached producer must be the only
// producer, and (arena.h) its arena must be quiescent (PA == PB: no arena
// payload in flight) because the arena's private allocation table is not in
// shared memory; inline and scalar frames may be in flight.
//
// Fence pairing (every non-relaxed access of this module):
//
//  edge                                   this side                  pairs with
//  -------------------------------------  -------------------------  ---------------------------
//  P1 slot + arena writes -> publish      store_release(A) flush()   C1
//  C1 pending() sees a published lane     load_acquire(A)            P1
//  C2 arena slot live check (PA ^ PB)     arena_check (arena.h A2)   arena alloc's release of PA
//                                                                    (A1), also ordered by P1
//  C3 copy-out + arena free -> retire     arena_free: XOR(PB) rel.;  P2 (B), arena alloc's
//                                         store_release(B) retire()  acquire load of PB
//  P2 shadow refresh before reusing lane  load_acquire(B)            C3
//  P3 idle(): everything retired          load_acquire(B)            C3
//
// Stealing (src/steal.h) replaces B with the XOR of per-consumer ACK words:
// the producer's free-set computation is LockProducer::load_retired(), which
// attach_steal() switches to that XOR (see its comment). Nothing else in the
// producer depends on there being a single consumer. A steal consumer is a
// LockConsumer attached with attach_steal(): its "B" is its own ACK word and
// the lanes it may decode are the ones the claim protocol offer()s it.
#ifndef KNIT_SRC_LOCK2_H
#define KNIT_SRC_LOCK2_H

#include "knitting.h"

#include "src/arena.h"
#include "src/codec.h"
#include "src/common.h"
#include "src/layout.h"

namespace knit::detail {

inline uint32_t lane_bit(uint32_t lane) { return 1u << lane; }
// The highest lane of a non-empty mask (the lanes topology's pick order).
inline uint32_t highest_lane(uint32_t mask) { return 31u - (uint32_t)__builtin_clz(mask); }

// The header of a frame: everything but the value. Travels in the task line.
struct FrameHead {
	uint32_t task;        // request: task index; response: echoed
	uint32_t flags;       // meta / flags; consumer rejects bits outside its mask
	uint32_t ticket;      // issuer's ticket-table index; consumer checks < limit
	uint32_t generation;  // ticket generation (ABA guard); any value
	int32_t status;       // 0 or a negative KNIT_E* code (> -KNIT_ERROR_MAX_)
	uint64_t deadline_ns; // absolute CLOCK_MONOTONIC ns, 0 = none; any value
	uint32_t fault;       // decode output only (producer ignores it): 0, or the
			      // kFault* bits that made decode return -KNIT_EPROTO
};

// FrameHead::fault bits set by LockConsumer::decode.
inline constexpr uint32_t kFaultTask = 1u << 0;   // task >= task_count
inline constexpr uint32_t kFaultTicket = 1u << 1; // ticket >= ticket_count
inline constexpr uint32_t kFaultFlags = 1u << 2;  // flags outside flags_mask
inline constexpr uint32_t kFaultStatus = 1u << 3; // status not 0 / -KNIT_E*
inline constexpr uint32_t kFaultValue = 1u << 4;  // value words or payload bounds bad
// Ids a runtime may act on (fail that ticket with -KNIT_EPROTO) only when none
// of these is set; with any of them set the frame can only be counted.
inline constexpr uint32_t kFaultIds = kFaultTask | kFaultTicket;

// Limits the consumer validates the head against (exclusive upper bounds; a
// zero count accepts nothing).
struct ConsumerLimits {
	uint32_t task_count;   // task < task_count
	uint32_t ticket_count; // ticket < ticket_count
	uint32_t flags_mask;   // (flags & ~flags_mask) == 0
};

// An ArenaShared over a lock's PA/PB/table words and an arena data range.
// lock: base of the lock (21248 fixed bytes, layout.h); arena_data: base of its
// arena data range (64-aligned, capacity bytes, arena_capacity_ok(capacity)).
ArenaShared lock_arena_shared(uint8_t *lock, uint8_t *arena_data, uint64_t capacity);

// A zero-copy arena reservation (LockProducer::reserve). data/capacity are for
// the caller to fill; the rest is the producer's bookkeeping.
struct Reservation {
	uint8_t *data;     // capacity writable bytes in the arena
	uint32_t capacity; // as requested
	uint32_t slot;     // arena allocator slot
	uint32_t offset;   // arena offset of data
	uint32_t live;     // 1 between reserve and publish/cancel
};

// ---- producer endpoint --------------------------------------------------------
class LockProducer {
public:
	// Attach to the lock at `lock` (layout.h) with its arena. The mirrors of
	// A (published) and B (shadow) are loaded from shared memory, not assumed
	// zero. per_call_max: largest payload (bytes, excluding a string's NUL)
	// one value may have. Returns 0 or -KNIT_EINVAL (NULL lock, misaligned,
	// arena capacity not arena_capacity_ok, per_call_max 0).
	int attach(uint8_t *lock, const ArenaShared &arena, uint64_t per_call_max);

	// Attach as the producer endpoint of a STEAL submit lock (steal.h):
	// as attach(), but "retired" is the XOR of the `consumers` ACK words of
	// the steal control block at steal_ctl (layout.h) instead of B.
	// consumers in [1, kMaxStealConsumers], else -KNIT_EINVAL.
	int attach_steal(uint8_t *lock, const ArenaShared &arena, uint64_t per_call_max,
			 uint8_t *steal_ctl, uint32_t consumers);

	// Write one frame into a free lane without publishing it (the highest
	// free one; a steal producer: the first free one at or below its ring
	// cursor, walking down and wrapping, stored beside A at every flush); flush() publishes
	// every staged lane with one store. Returns the lane (0..31), or -KNIT_EAGAIN (no free
	// lane, or no arena room right now: nothing written, nothing leaked; retry later),
	// -KNIT_ETOOBIG (value longer than per_call_max or than the arena: never
	// publishable), -KNIT_EINVAL (malformed value, not attached).
	int stage(const FrameHead &head, const knit_value_t &value);

	// Publish every staged lane with ONE release store of A. Returns the mask
	// of lanes published (0 if none was staged; then nothing is stored).
	uint32_t flush();

	// stage() then flush(). The flush happens whatever stage() returned, so
	// lanes staged before are published too and nothing is left staged.
	// Same returns as stage().
	int publish(const FrameHead &head, const knit_value_t &value);

	// Zero-copy: reserve n payload bytes in the arena (plus one hidden byte
	// for a string's NUL) for the caller to fill in place. Returns 0,
	// -KNIT_ETOOBIG (n > per_call_max or larger than the arena),
	// -KNIT_EAGAIN (no arena room now), -KNIT_EINVAL (r NULL, r live).
	int reserve(uint32_t n, Reservation *r);

	// Stage a frame whose value is the first len bytes of a reservation, as
	// BYTES, STRING or ERROR (code), with no second copy. On success the
	// reservation is consumed (r->live = 0; the arena tail past len is
	// returned) and the lane is returned. -KNIT_EAGAIN: no free lane, the
	// reservation is kept (retry or cancel). -KNIT_EINVAL: r not live, len >
	// capacity, type without bytes.
	int stage_reserved(const FrameHead &head, uint32_t type, int32_t code, uint32_t len,
			   Reservation *r);
	// stage_reserved() then flush() (flushes whatever stage_reserved returned).
	int publish_reserved(const FrameHead &head, uint32_t type, int32_t code, uint32_t len,
			     Reservation *r);
	// Give a live reservation back to the arena (no-op if not live).
	void cancel(Reservation *r);

	// Lanes free as far as the cached shadow knows (no shared load).
	uint32_t free_cached() const { return ~(published_ ^ shadow_) & ~staged_; }
	// Refresh the shadow (acquire load of B) and return the free set.
	uint32_t refresh();
	// Lanes staged and not yet flushed.
	uint32_t staged() const { return staged_; }
	// Steal: lanes retired (by their consumer, or on a dead consumer's
	// behalf: steal_reap_dead). load_retired() calls it for every lane
	// whose retired bit flipped since its last look, so the producer frees
	// what a consumer that may not write the submit arena's PB (a worker
	// process, src/steal.h) left allocated. Give back the arena allocation of each
	// whose consumer had not freed it yet (still live, and still the one
	// this producer made for that lane's frame: a range the consumer freed
	// and the producer reused is left alone). Producer thread only.
	void reclaim_lost(uint32_t lanes);
	// True when every published lane has been retired (fresh load of B) and
	// nothing is staged: the lock is quiescent.
	bool idle();
	// The mirror of A (what this producer last stored).
	uint32_t published() const { return published_; }
	// Lanes published and not yet retired, from fresh loads of A and B
	// (acquire both: A pairs with the producer's release store P1, B with
	// the consumer's release store C3). Any thread, no private state read:
	// a host thread that does not hold the producer end (the refill
	// doorbell's re-check, src/wake.h L3). Single consumer only (a steal
	// lock's "B" is the XOR of its ACK words).
	uint32_t outstanding_shared() const
	{
		return knit_load_acquire_32(a_) ^ knit_load_acquire_32(b_);
	}
	// The shared A word, for futex waits/wakes by the runtime (doorbell).
	uint32_t *publish_word() const { return a_; }
	// The shared B word (single consumer; nullptr before attach), for a
	// relaxed look whether the consumer retired lanes since (the
	// dispatcher's backlog, src/dispatch.cpp): only compared, never
	// trusted for the free set (refresh() loads it with acquire).
	const uint32_t *retire_word() const { return b_; }
	// Give this lock's arena pages back above what is still in use and
	// above `keep` bytes (ArenaProducer::trim). Producer thread only.
	int trim_arena(Region *region, uint64_t keep) { return arena_.trim(region, keep); }
	// Any thread (relaxed statistics): the arena's high-water mark since its
	// last trim, and the trims that gave pages back.
	uint64_t arena_high_water() const { return arena_.high_water_shared(); }
	uint64_t arena_trims() const { return arena_.trims(); }
	// The side words of `lane`'s slot (layout.h kSlotOffSide, kSideBytes):
	// the caller's to write between stage() of that lane and flush(), whose
	// release store of A publishes them with the frame. Producer thread only.
	uint8_t *side(uint32_t lane) const { return lock_ + lock_slot_offset(lane) + kSlotOffSide; }

private:
	// The free-set seam: the word whose bits say "retired". Single consumer:
	// an acquire load of B. A steal producer replaces this with the XOR of
	// every consumer's ACK word (acquire loads; a torn multi-word read is safe:
	// see attach_steal). Only called when the cached free set is empty
	// ("Protocol" above: a stale B only hides free lanes).
	uint32_t load_retired();
	uint32_t xor_acks() const; // steal: the XOR of every ACK word (fresh loads)
	int attach_impl(uint8_t *lock, const ArenaShared &arena, uint64_t per_call_max);
	int pick_lane();
	// stage() for everything but its scalar fast path: byte payloads, an
	// empty cached free set, steal, not attached.
	[[gnu::noinline]] int stage_slow(const FrameHead &head, const knit_value_t &value);
	// The task line of a lane, in the shared lock: a free lane's line is
	// the producer's to write (nobody reads it until the lane is published).
	TaskLine *task_line(uint32_t lane) const
	{
		return reinterpret_cast<TaskLine *>(lock_ + lock_task_offset(lane));
	}
	// The lane is ours (free as of an acquire load of B, not staged): plain
	// stores straight into its task line, published by the release store of
	// A in flush() (P1). No private copy first: copying a line just written
	// field by field reloads those fields before the stores have left the
	// store buffer (a store-forwarding stall on every frame). Should
	// encoding fail halfway, the words left behind belong to a lane nobody
	// reads until it is published.
	void write_head(const FrameHead &head, TaskLine *line)
	{
		line->task = head.task;
		line->flags = head.flags;
		line->ticket = head.ticket;
		line->generation = head.generation;
		line->status = head.status;
		line->deadline = head.deadline_ns;
	}
	// After a stage (either topology): start fetching the task lines of
	// the lanes pick_lane() picks next from `free` (the cached free set,
	// in ring order: under steal, the next two while the cursor's lane
	// and the one below it are free, the usual case). The
	// consumer read a free lane's task line when it took the lane's last
	// frame, so our next store there must first take the line back from
	// its cache: start that now, while the caller still has other work,
	// instead of in the drain of the next publish's fence. Nobody reads the
	// lane until we publish it again. A hint. Two lanes ahead: one call's
	// time is about one cache-line round trip, too short for a line the
	// consumer may still hold.
	void prefetch_ahead(uint32_t free) const
	{
		if (free == 0)
			return;
		// The ring's next two lanes, where free.
		const uint32_t next = ring_, after = (ring_ + kLanes - 1) % kLanes;
		if ((free >> next) & 1u)
			knit_prefetch_write(lock_ + lock_task_offset(next));
		const uint32_t rest = free & ~lane_bit(next);
		if ((rest >> after) & 1u)
			knit_prefetch_write(lock_ + lock_task_offset(after));
		// The cached free set is nearly used up: the refresh that follows
		// loads B, which the consumer wrote last. Start that read now.
		if ((rest & (rest - 1)) == 0)
			__builtin_prefetch(b_);
	}

	uint8_t *lock_ = nullptr;
	uint32_t *a_ = nullptr;
	uint32_t *b_ = nullptr;
	ArenaShared shared_{};
	ArenaProducer arena_;
	uint64_t per_call_max_ = 0;
	uint32_t published_ = 0;       // LastLocal: mirror of A
	uint32_t shadow_ = 0;          // workerShadow: possibly stale copy of B
	uint32_t staged_ = 0;          // written, not yet published
	uint8_t *steal_ctl_ = nullptr; // steal control block (attach_steal) or null
	uint32_t steal_n_ = 0;         // consumers whose ACK words are XORed
	uint32_t retired_seen_ = 0;    // steal: the XOR of ACKs at the last load_retired()
	uint32_t ring_ = kLanes - 1;   // next lane to fill, walking down (steal: also in the lock)
	// Steal: the first free lane at or below ring_, wrapping (free != 0).
	// Else ring_ itself, which must be free. ring_ moves below the lane.
	uint32_t ring_pick(uint32_t free)
	{
		uint32_t lane = ring_;
		if (steal_ctl_ != nullptr) {
			const uint32_t below =
				ring_ == kLanes - 1 ? free : free & ((2u << ring_) - 1u);
			lane = highest_lane(below != 0 ? below : free);
		}
		ring_ = (lane + kLanes - 1) % kLanes;
		return lane;
	}
	// The arena allocation of each lane's last frame (reclaim_lost): its
	// slot (0xFF = none) and a stage sequence number, and the sequence of
	// each slot's last allocation; equal sequences = not reallocated since.
	uint8_t lane_arena_[kLanes];
	uint64_t lane_seq_[kLanes] = {};
	uint64_t slot_seq_[kArenaSlots] = {};
	uint64_t seq_ = 0;
	void note_arena(uint32_t lane, uint32_t slot);
};

// ---- consumer endpoint --------------------------------------------------------
class LockConsumer {
public:
	// Attach to the lock at `lock` with its arena (same ArenaShared geometry
	// as the producer's, over this process's mapping). The mirror of B is
	// loaded from shared memory; lanes already in flight are pending.
	// Returns 0 or -KNIT_EINVAL.
	int attach(uint8_t *lock, const ArenaShared &arena, const ConsumerLimits &limits);

	// Attach as steal consumer c of a shared submit lock (src/steal.h): the
	// retire word is ack_word (ACK[c] of the steal control block, 8-byte
	// aligned, CLAIM[c] beside it) instead of B, and only lanes handed over
	// with offer() can be decoded (the claim protocol decides which lanes
	// this consumer owns; pending() never reloads A). Its retire() stores
	// ACK and CLAIM = 0 with one 64-bit store. Returns 0 or -KNIT_EINVAL.
	int attach_steal(uint8_t *lock, uint32_t *ack_word, const ArenaShared &arena,
			 const ConsumerLimits &limits);
	// Steal mode only: record `lanes` as CLAIM[c] beside the unchanged ACK
	// (one 64-bit release store) before any of them is decoded, so the host
	// can tell, if this consumer dies before its retire(), which lanes it
	// had taken (src/steal.h, "Dead consumers").
	void record_claim(uint32_t lanes);
	// Steal mode only: false = never free an arena allocation (no XOR of
	// PB: the producer frees it once the lane is retired, LockProducer::
	// reclaim_lost), for a consumer that may not write the submit arena's
	// PB (a worker process, src/steal.h). Default true.
	void set_frees(bool frees) { frees_ = frees; }
	// Steal mode only: the lanes this consumer now owns (a claim's take set,
	// computed from fresh loads of A and every ACK). Replaces the decodable
	// set; lanes already taken are left out.
	void offer(uint32_t lanes) { seen_ = lanes & ~taken_; }

	// Lanes published and not yet taken: a fresh acquire load of A, XOR the
	// mirror of B, minus lanes decoded since the last retire. Never cached.
	uint32_t pending();
	// Start reading the task lines of a pending() snapshot's lanes (a hint:
	// their misses overlap instead of coming one per decode()).
	void prefetch(uint32_t snapshot) const;

	// Pop the next lane of a pending() snapshot in descending round-robin
	// order (so no lane starves behind lower ones) (highest lane strictly below the previous
	// one taken, else the highest): clears it from *snapshot and returns it, or -1 when
	// *snapshot is 0. The cursor persists across passes.
	int next_lane(uint32_t *snapshot);

	// Validate and view lane `lane` (which must be in flight). Copies the task
	// line once into private memory, checks the head against the limits and
	// the value against the slot/arena bounds. Returns 0 with *head and *view
	// (view bytes valid until release/retire of the lane), or -KNIT_EPROTO
	// with head->fault saying what was wrong (*view = NONE), or -KNIT_EINVAL
	// (lane > 31, not in flight, or already taken: a caller bug). Either way
	// (except EINVAL) the lane is now taken and must be retired.
	int decode(uint32_t lane, FrameHead *head, knit_value_t *view);

	// Free the lane's arena allocation (if its frame had one) once the caller
	// has copied the payload out. Idempotent; retire() does it too. Inline
	// test first: with no arena slot held (every frame inline or scalar, the
	// common case) there is nothing to look up.
	void release(uint32_t lane)
	{
		if (held_ != 0)
			release_held(lane);
	}

	// Retire the taken lanes of mask (others are ignored) with ONE release
	// store of B, releasing any arena allocation still held. Returns the mask
	// actually retired.
	uint32_t retire(uint32_t mask);
	// retire(taken()).
	uint32_t retire_taken() { return retire(taken_); }
	// Lanes decoded and not yet retired.
	uint32_t taken() const { return taken_; }
	// The shared A word, for futex waits (wait while A == published mirror).
	uint32_t *publish_word() const { return a_; }
	// The consumer's mirror of B (== A exactly when everything is drained).
	uint32_t retired_mirror() const { return mirror_; }
	// Lanes published and not yet retired (taken or not): a fresh acquire
	// load of A (C1) XOR the mirror of B. Single consumer only.
	uint32_t outstanding() const { return knit_load_acquire_32(a_) ^ mirror_; }

	// One pass: snapshot pending(), and for each lane in round-robin order
	// call fn(lane, rc, head, view) with decode's result, then release the
	// lane; finally retire the whole pass with one store of B. Returns the
	// number of lanes consumed.
	template <typename F> uint32_t drain(F &&fn)
	{
		uint32_t snap = pending();
		uint32_t n = 0;
		int lane;
		while ((lane = next_lane(&snap)) >= 0) {
			FrameHead head;
			knit_value_t view;
			int rc = decode((uint32_t)lane, &head, &view);
			fn((uint32_t)lane, rc, head, view);
			release((uint32_t)lane);
			n++;
		}
		retire_taken();
		return n;
	}

	// Copy the first n (<= kSideBytes) side words of a lane decode() took
	// and not yet released (so after its acquire of A, before the release
	// of B that lets the producer rewrite them): the producer's words,
	// unchecked; zeros for a lane not taken.
	void side_copy(uint32_t lane, void *out, size_t n) const
	{
		if (lock_ == nullptr || lane >= kLanes || (taken_ & lane_bit(lane)) == 0 ||
		    n > kSideBytes) {
			memset(out, 0, n <= kSideBytes ? n : kSideBytes);
			return;
		}
		memcpy(out, lock_ + lock_slot_offset(lane) + kSlotOffSide, n);
	}

private:
	void release_held(uint32_t lane);
	// decode() for what its inline fast path does not take: a lane not in
	// the last pending() snapshot (A reloaded), a caller's bad lane, no lock.
	[[gnu::noinline]] int decode_slow(uint32_t lane, FrameHead *head, knit_value_t *view);
	// The rest of a decode from the private snapshot `snap` of a taken
	// lane's task line, whose head is already in *head and whose head
	// checks gave `fault`: the value (codec_decode), the arena slot to
	// hold, head->fault, the result.
	[[gnu::noinline]] int decode_value(uint32_t lane, const TaskLine &snap, uint32_t fault,
					   FrameHead *head, knit_value_t *view);
	// Copy the head words of a snapshot to *head and return its kFault*
	// bits (task, ticket, flags, status) against the limits.
	uint32_t decode_head(const TaskLine &snap, FrameHead *head) const
	{
		head->task = snap.task;
		head->flags = snap.flags;
		head->ticket = snap.ticket;
		head->generation = snap.generation;
		head->status = snap.status;
		head->deadline_ns = snap.deadline;
		uint32_t fault = 0;
		if (snap.task >= limits_.task_count)
			fault |= kFaultTask;
		if (snap.ticket >= limits_.ticket_count)
			fault |= kFaultTicket;
		if ((snap.flags & ~limits_.flags_mask) != 0)
			fault |= kFaultFlags;
		if (snap.status > 0 || snap.status <= -(int32_t)KNIT_ERROR_MAX_)
			fault |= kFaultStatus;
		return fault;
	}

	uint8_t *lock_ = nullptr;
	uint32_t *a_ = nullptr;
	uint32_t *b_ = nullptr;
	ArenaShared shared_{};
	ConsumerLimits limits_{};
	uint32_t mirror_ = 0;       // LastWorker: mirror of B
	uint32_t cursor_ = kLanes;  // lastTake; kLanes = none yet
	uint32_t seen_ = 0;         // in flight as of the last acquire load of A
	uint32_t taken_ = 0;        // decoded, not retired
	uint32_t held_ = 0;         // arena slots held by taken lanes
	uint8_t lane_slot_[kLanes]; // arena slot held by each lane, 0xFF = none
	bool steal_ = false;        // attach_steal: b_ is ACK[c], lanes via offer()
	bool frees_ = true;         // set_frees(): XOR PB when a lane is released
};

// ---- the scalar fast paths ----------------------------------------------------
// Inline, so that both ends of both locks (host enqueue and reap, worker
// take and result) pay for a fixed-size value (NONE, BOOL, I64, F64) only
// what it needs: no length or arena path, no call. Everything else goes
// to the out-of-line paths, which are the complete ones.

// The common stage: a scalar into the ring cursor's lane when the cached
// free set holds it (what pick_lane() picks then, in either topology:
// steal's first free lane at or below the cursor is the cursor's). The same
// words as codec_encode() + write_head(): value words cleared but vtype and
// scalar (BOOL normalised to 0/1, F64 as its bits), no arena allocation.
[[gnu::always_inline]] inline int LockProducer::stage(const FrameHead &head,
						      const knit_value_t &value)
{
	const uint32_t type = value.type;
	const uint32_t free = free_cached();
	if (type > KNIT_VALUE_F64 || (free >> ring_ & 1u) == 0 || lock_ == nullptr)
		return stage_slow(head, value);
	const uint32_t lane = ring_pick(free);
	uint64_t scalar;
	if (type == KNIT_VALUE_F64)
		memcpy(&scalar, &value.f64, sizeof scalar);
	else if (type == KNIT_VALUE_BOOL)
		scalar = value.i64 != 0 ? 1 : 0;
	else
		scalar = type == KNIT_VALUE_I64 ? (uint64_t)value.i64 : 0;
	// Plain stores into the free lane's line, published by flush()'s
	// release store of A (P1), as write_head() says.
	TaskLine *line = task_line(lane);
	write_head(head, line);
	line->vtype = type;
	line->vcode = 0;
	line->vlen = 0;
	line->scalar = scalar;
	line->where = kWhereNone;
	line->arena_slot = 0;
	line->arena_off = 0;
	line->reserved = 0;
	lane_arena_[lane] = 0xFF; // note_arena(): no arena allocation
	staged_ |= lane_bit(lane);
	prefetch_ahead(free & ~lane_bit(lane)); // the free set after this stage
	return (int)lane;
}

// The common decode: a lane of the last pending() snapshot, not taken yet,
// whose frame is a well-formed scalar with a good head. The snapshot and
// every check are decode_slow()'s (codec_decode()'s for the value); a
// frame that fails any of them goes on to decode_value() with the same
// snapshot, which finds and reports the fault.
[[gnu::always_inline]] inline int LockConsumer::decode(uint32_t lane, FrameHead *head,
						       knit_value_t *view)
{
	if (lane >= kLanes || lock_ == nullptr || ((seen_ & ~taken_) >> lane & 1u) == 0)
		return decode_slow(lane, head, view);
	taken_ |= 1u << lane; // from here on the lane is retired whatever we find
	// One private snapshot of the task line: every check below and every
	// use after it sees the same words, whatever a hostile peer writes
	// meanwhile. The empty asm makes the copy a real one (read once, here):
	// no field may be re-read from the shared line later.
	TaskLine snap;
	memcpy(&snap, lock_ + lock_task_offset(lane), sizeof snap);
	__asm__("" : "+m"(snap));
	const uint32_t fault = decode_head(snap, head);
	const uint32_t type = snap.vtype;
	if (fault != 0 || type > KNIT_VALUE_F64 || (snap.where | snap.vlen) != 0 ||
	    (type == KNIT_VALUE_BOOL && snap.scalar > 1))
		return decode_value(lane, snap, fault, head, view);
	const uint64_t fbits = type == KNIT_VALUE_F64 ? snap.scalar : 0;
	view->type = type;
	view->code = 0;
	view->i64 = type == KNIT_VALUE_BOOL || type == KNIT_VALUE_I64 ? (int64_t)snap.scalar : 0;
	memcpy(&view->f64, &fbits, sizeof view->f64);
	view->data = nullptr;
	view->len = 0;
	head->fault = 0;
	return 0;
}

} // namespace knit::detail

#endif
