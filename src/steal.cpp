// SPDX-License-Identifier: MIT
// src/steal.cpp - the work-stealing claim protocol (StealConsumer) and the
// steal area's geometry. See src/steal.h for the protocol, the exactly-once
// argument and the handling of dead consumers. The pool's use of it lives
// with the rooms that use it: the host's staging, publish, claim tracking
// and dead-worker marking in src/dispatch.cpp, the worker's claim step in
// src/worker.cpp, the attach in src/pool.cpp.
//
// Fence / ordering pairs of this module (S*):
//  S1 WANT announce: release store + ONE seq_cst fence, then the peers' WANT
//     loads (acquire). The fence pairs with the identical fence of every peer
//     in its own claim_begin() (Dekker: at least one of two claimants of a
//     region sees the other). The release/acquire part makes a peer's
//     earlier ACK stores visible to whoever reads any later WANT value of it.
//  S2 ACK store (release, LockConsumer::retire) pairs with the producer's
//     acquire loads of every ACK (LockProducer::load_retired) and with the
//     peers' acquire loads of ACK in pending()/claim_begin() step 8.
//  S3 WANT clear (release) pairs with a waiting senior's acquire load of
//     that WANT (and any later peer load, S1): ACK is stored strictly before.
//  S4 DEAD: the host's release OR pairs with the consumers' acquire loads.
//  S5 A: acquire loads pair with the producer's release store in flush().
//  S7 CLAIM record (release 64-bit store of ACK/CLAIM, before the first
//     decode of the take) pairs with the host's acquire load of ACK/CLAIM
//     in steal_reap_dead(); the host reads it only once the consumer is dead
//     (joined, or its process reaped), so it is the consumer's last record.
//     The host's retire on its behalf is a release store like S2 (pairs
//     with the producer's and the peers' acquire loads of ACK), strictly
//     before its S4 release OR of DEAD.
//  SR DEAD cleared by a revival (steal_revive: release AND, after the
//     release stores of CLAIM = 0 and WANT = 0) pairs with the consumers'
//     acquire loads of DEAD in claim_begin() (steps 3, 7 and the junior
//     wait): a consumer that sees the revived peer alive sees no stale
//     claim or intent of its predecessor.
//  S6 host publish (release store of A) + seq_cst fence before reading the
//     workers' parked flags (steal_flush, src/dispatch.cpp) pairs with the
//     worker's fence in worker_park() between its store of parked and its
//     re-check (pending()): W1/W2 of src/wake.h.
#include "src/common.h"

#include <sched.h>
#include <stdlib.h>

#include "src/steal.h"

namespace knit::detail {

uint32_t steal_max_region_lanes(uint32_t consumers)
{
	if (consumers == 0 || consumers > kMaxStealConsumers)
		return 0;
	for (uint32_t g = kLanes; g >= 1; g >>= 1)
		if (kLanes / g >= consumers + 1)
			return g;
	return 0; // unreachable: g = 1 gives 32 regions >= 32
}

int steal_resolve_region_lanes(uint32_t consumers, uint32_t requested, uint32_t *out)
{
	const uint32_t max = steal_max_region_lanes(consumers);
	if (max == 0)
		return -KNIT_EINVAL;
	if (requested == 0) {
		*out = max;
		return 0;
	}
	if ((requested & (requested - 1)) != 0)
		return -KNIT_EINVAL; // not a power of two: an error, not a guess
	*out = requested > max ? max : requested;
	return 0;
}

void steal_mark_dead(uint8_t *ctl, uint32_t c)
{
	if (ctl == nullptr || c >= kMaxStealConsumers)
		return;
	// S4: release, pairs with the consumers' acquire loads of DEAD in
	// claim_begin(): what the host saw before declaring c dead (c's last
	// ACK, its stop acknowledgement) is visible to whoever sees the bit.
	knit_or_acq_rel_32(word_at(ctl, kStealOffDead), 1u << c);
}

uint32_t steal_reap_dead(uint8_t *ctl, uint8_t *lock, uint32_t consumers, uint32_t region_lanes,
			 uint32_t d, bool *bad)
{
	*bad = false;
	if (ctl == nullptr || lock == nullptr || consumers == 0 || consumers > kMaxStealConsumers ||
	    d >= consumers || region_lanes == 0 || region_lanes > kLanes ||
	    (region_lanes & (region_lanes - 1)) != 0)
		return 0;
	uint64_t *pair = reinterpret_cast<uint64_t *>(word_at(ctl, steal_ack_offset(d)));
	// S7: acquire, pairs with d's release store of its claim record (and
	// S2, of its last ACK). d is dead: nothing writes these words any more.
	const uint64_t ac = knit_load_acquire_64(pair);
	const uint32_t ack = (uint32_t)ac, claim = (uint32_t)(ac >> 32);
	// S1: acquire, pairs with d's release stores of WANT[d].
	const uint32_t want = knit_load_acquire_32(word_at(ctl, steal_want_offset(d)));
	uint32_t lost = 0;
	if (claim != 0) {
		// Nothing read here is trusted: an honest claim lies in the one
		// region d announced (WANT[d] names it until after the ACK) and
		// every lane of it is still pending (nobody else takes lanes of
		// a region d owns, and a pending lane is never republished).
		// Anything else is a forged or torn record: retiring it would
		// toggle lanes d never owned, so it is only reported, and the
		// lanes stay pending for the survivors.
		const uint32_t regions = kLanes / region_lanes;
		const bool one_region = want != 0 && (want & (want - 1)) == 0 &&
					(uint32_t)__builtin_ctz(want) < regions;
		uint32_t rmask = 0;
		if (one_region) {
			const uint32_t r = (uint32_t)__builtin_ctz(want);
			rmask = region_lanes == kLanes
					? 0xFFFFFFFFu
					: ((1u << region_lanes) - 1u) << (r * region_lanes);
		}
		// S5: acquire, pairs with the producer's release store of A;
		// S2: acquire loads of every ACK.
		uint32_t pend = knit_load_acquire_32(word_at(lock, kLockOffA));
		for (uint32_t c = 0; c < consumers; c++)
			pend ^= c == d ? ack
				       : knit_load_acquire_32(word_at(ctl, steal_ack_offset(c)));
		if (one_region && (claim & ~rmask) == 0 && (claim & ~pend) == 0) {
			lost = claim;
			// Retire them on d's behalf and clear the record, in one
			// store (S2: release, pairs with the producer's and the
			// peers' acquire loads of ACK[d]); before DEAD below, so a
			// survivor that waited for d's WANT takes its fresh loads
			// after this ACK (tests/model/steal_claim.pml REAP_CLAIM).
			knit_store_release_64(pair, (uint64_t)(ack ^ claim));
		} else {
			*bad = true;
		}
	}
	steal_mark_dead(ctl, d);
	return lost;
}

void steal_revive(uint8_t *ctl, uint32_t d)
{
	if (ctl == nullptr || d >= kMaxStealConsumers)
		return;
	uint64_t *pair = reinterpret_cast<uint64_t *>(word_at(ctl, steal_ack_offset(d)));
	// d is dead and reaped: nobody but us writes its words now (relaxed:
	// our own last store, or d's, which steal_reap_dead's acquire saw).
	const uint32_t ack = (uint32_t)knit_load_relaxed_64(pair);
	// S7: release, as the reaper's retire (ACK unchanged, CLAIM = 0).
	knit_store_release_64(pair, (uint64_t)ack);
	// S3: release, as a WANT clear.
	knit_store_release_32(word_at(ctl, steal_want_offset(d)), 0);
	// SR: release, pairs with the consumers' acquire loads of DEAD (steps
	// 3 and 7 of claim_begin, the junior wait): whoever sees d alive again
	// sees the two stores above.
	knit_and_acq_rel_32(word_at(ctl, kStealOffDead), ~(1u << d));
}

// ---- consumer ----------------------------------------------------------------------

int StealConsumer::attach(uint8_t *lock, const ArenaShared &arena, const ConsumerLimits &limits,
			  uint8_t *ctl, uint32_t consumers, uint32_t id, uint32_t region_lanes)
{
	if (lock == nullptr || ctl == nullptr || ((uintptr_t)ctl % 64) != 0 || consumers == 0 ||
	    consumers > kMaxStealConsumers || id >= consumers || region_lanes == 0 ||
	    region_lanes > kLanes || (region_lanes & (region_lanes - 1)) != 0 ||
	    kLanes / region_lanes < consumers)
		return -KNIT_EINVAL;
	int rc = cons_.attach_steal(lock, word_at(ctl, steal_ack_offset(id)), arena, limits);
	if (rc != 0)
		return rc;
	a_ = word_at(lock, kLockOffA);
	ring_word_ = word_at(lock, kLockOffRing);
	ctl_ = ctl;
	dead_ = word_at(ctl, kStealOffDead);
	want_ = word_at(ctl, steal_want_offset(id));
	n_ = consumers;
	id_ = id;
	g_ = region_lanes;
	regions_ = kLanes / region_lanes;
	ring_ = kLanes - 1;
	take_max_ = 0;
	stop_ = nullptr;
	region_ = kLanes;
	take_ = 0;
	claims_ = conflicts_ = 0;
	// We are WANT[id]'s only writer: a fresh endpoint owns no region.
	knit_store_release_32(want_, 0); // S3: as a WANT clear
	return 0;
}

uint32_t StealConsumer::region_mask(uint32_t r) const
{
	return g_ == kLanes ? 0xFFFFFFFFu : ((1u << g_) - 1u) << (r * g_);
}

uint32_t StealConsumer::load_peer_acks()
{
	uint32_t x = 0;
	for (uint32_t p = 0; p < n_; p++)
		if (p != id_)
			// S2: acquire, pairs with peer p's release store of ACK[p]
			// (LockConsumer::retire in its claim_end()).
			x ^= knit_load_acquire_32(word_at(ctl_, steal_ack_offset(p)));
	return x;
}

uint32_t StealConsumer::pending()
{
	if (a_ == nullptr)
		return 0;
	// S5: acquire, pairs with the producer's release store of A (flush()).
	const uint32_t a = knit_load_acquire_32(a_);
	return a ^ cons_.retired_mirror() ^ load_peer_acks();
}

uint32_t StealConsumer::claim_begin()
{
	if (a_ == nullptr || take_ != 0)
		return 0;
	// 1. Snapshot. The ring cursor after A (pending()'s acquire load, S5):
	// at least as new as the publish we see, so our pending lanes walk
	// down from it oldest first.
	const uint32_t pend = pending();
	if (pend == 0)
		return 0;
	ring_ = (kLanes - 1) - knit_load_relaxed_32(ring_word_) % kLanes; // stored as 31 - cursor
	// 2. Regions with a pending lane.
	uint32_t pend_regions = 0;
	for (uint32_t r = 0; r < regions_; r++)
		if (pend & region_mask(r))
			pend_regions |= 1u << r;
	// 3. Intents of the live peers.
	// S4: acquire, pairs with the host's release OR in steal_mark_dead().
	const uint32_t dead = knit_load_acquire_32(dead_);
	uint32_t peer_intent = 0, senior_intent = 0;
	for (uint32_t p = 0; p < n_; p++) {
		if (p == id_ || (dead >> p) & 1u)
			continue;
		// S1: acquire, pairs with peer p's release stores of WANT[p].
		const uint32_t w = knit_load_acquire_32(word_at(ctl_, steal_want_offset(p)));
		peer_intent |= w;
		if (p < id_)
			senior_intent |= w;
	}
	// 4. Never contend for a region a senior announced; prefer a clean one.
	const uint32_t not_senior = pend_regions & ~senior_intent;
	if (not_senior == 0)
		return 0;
	const uint32_t clean = pend_regions & ~peer_intent;
	const uint32_t cand = clean != 0 ? clean : not_senior;
	// 5. The candidate region holding the oldest pending lane.
	uint32_t cand_lanes = 0;
	for (uint32_t at = 0; at < regions_; at++)
		if ((cand >> at) & 1u)
			cand_lanes |= region_mask(at);
	const uint32_t r = steal_ring_first(pend & cand_lanes, ring_) / g_;
	const uint32_t bit = 1u << r;
	// 6. Announce. S1: release (a peer reading this value also sees our
	// earlier ACK stores).
	knit_store_release_32(want_, bit);
	region_ = r;
	// 7. Check. S1: the Dekker fence; pairs with the identical fence in every
	// peer's claim_begin() between its WANT store and its WANT loads.
	knit_fence_seq_cst();
	// The peers live now, not at step 3: one revived since (steal_revive)
	// may be announcing r; its WANT counts (SR: acquire, pairs with the
	// host's release AND in steal_revive and its OR in steal_mark_dead).
	const uint32_t dead7 = knit_load_acquire_32(dead_);
	bool junior_conflict = false;
	for (uint32_t p = 0; p < n_; p++) {
		if (p == id_ || (dead7 >> p) & 1u)
			continue;
		// S1: acquire, pairs with peer p's release stores of WANT[p].
		const uint32_t w = knit_load_acquire_32(word_at(ctl_, steal_want_offset(p)));
		if ((w & bit) == 0)
			continue;
		if (p < id_) {
			// A senior wants r too: the junior withdraws. S3: release.
			knit_store_release_32(want_, 0);
			region_ = kLanes;
			conflicts_++;
			return 0;
		}
		junior_conflict = true;
	}
	if (junior_conflict) {
		// Wait until no live junior holds r: each either saw us and
		// withdraws, or is past its check and clears WANT right after its
		// ACK (straight-line code). Bounded: relax, then yield; DEAD is
		// re-read every round so a dead junior's stale WANT is ignored,
		// and the stop word (set_stop_word), so a junior that never
		// clears its WANT cannot hold a stop.
		conflicts_++;
		for (uint32_t round = 1;; round++) {
			// S4: acquire, pairs with steal_mark_dead().
			const uint32_t d = knit_load_acquire_32(dead_);
			bool held = false;
			for (uint32_t p = id_ + 1; p < n_ && !held; p++) {
				if ((d >> p) & 1u)
					continue;
				// S3: acquire, pairs with junior p's release clear of
				// WANT[p] (after its release store of ACK[p]).
				if (knit_load_acquire_32(word_at(ctl_, steal_want_offset(p))) & bit)
					held = true;
			}
			if (!held)
				break;
			// Relaxed: only a reason to stop waiting (set_stop_word);
			// the worker's loop reads the word again with acquire.
			if (stop_ != nullptr && knit_load_relaxed_32(stop_) != kStopRunning) {
				knit_store_release_32(want_, 0); // S3: release, as a withdrawal
				region_ = kLanes;
				return 0;
			}
			if (round % kStealRelaxRounds == 0)
				sched_yield();
			else
				knit_cpu_relax();
		}
	}
	// 8. Take, from fresh loads now that r is ours: the take_max oldest.
	const uint32_t fresh = pending();
	const uint32_t all = fresh & region_mask(r);
	if (all == 0) {
		knit_store_release_32(want_, 0); // S3: release
		region_ = kLanes;
		return 0;
	}
	// After the acquire load of A in pending(); nobody else takes lanes of
	// r now, so the order of `all` is fixed.
	ring_ = (kLanes - 1) - knit_load_relaxed_32(ring_word_) % kLanes; // stored as 31 - cursor
	// Walking every pending lane oldest first: the older lanes of other
	// regions (a peer's claim, or a senior's) are passed over, then the
	// region's lanes taken one after another up to take_max, stopping at
	// the first lane of another region: a claim of several calls is a run
	// of consecutive calls in submission order, so one consumer alone
	// starts every call in that order.
	uint32_t take = all;
	if (take_max_ != 0) {
		take = 0;
		uint32_t left = fresh, k = 0;
		while (left != 0 && k < take_max_) {
			const uint32_t b = 1u << steal_ring_first(left, ring_);
			left &= ~b;
			if ((b & all) == 0) {
				if (take != 0)
					break;
				continue;
			}
			take |= b;
			k++;
		}
	}
	cons_.offer(take);
	// 8b. Record the claim beside ACK (S7) before the first decode: if we
	// die before step 10, the host retires exactly these lanes for us and
	// fails their calls, instead of a survivor taking them again (whose
	// arena bytes we may already have freed).
	cons_.record_claim(take);
	take_ = take;
	return take;
}

uint32_t StealConsumer::claim_end()
{
	if (take_ == 0)
		return 0;
	// Every lane of the take is retired, also one the caller did not look at.
	for (uint32_t m = take_ & ~cons_.taken(); m != 0; m &= m - 1) {
		FrameHead h;
		knit_value_t v;
		(void)cons_.decode((uint32_t)__builtin_ctz(m), &h, &v);
	}
	// 10. Retire: S2, one release store of ACK[id] (LockConsumer::retire,
	// which frees the arena allocations first).
	const uint32_t done = cons_.retire(take_);
	// 11. Release the region strictly after the ACK. S3: release.
	knit_store_release_32(want_, 0);
	region_ = kLanes;
	take_ = 0;
	claims_++;
	return done;
}

// ---- the steal area ------------------------------------------------------------------

uint64_t steal_area_bytes(uint64_t arena_cap)
{
	return kStealLockOff + lock_region_bytes(arena_cap);
}

ArenaShared steal_submit_arena(uint8_t *ctl, uint8_t *lock, uint64_t arena_cap)
{
	ArenaShared sh = lock_arena_shared(lock, lock + lock_arena_offset(), arena_cap);
	sh.pb = word_at(ctl, kStealOffSubmitPB);
	return sh;
}

} // namespace knit::detail
