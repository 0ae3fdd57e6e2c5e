// SPDX-License-Identifier: MIT
// src/steal.h - work stealing: N consumers (worker threads) claim frames from
// ONE shared submit lock that the host alone produces into (the lock itself:
// lock2.h; the pool side: runtime.h, "Topology KNIT_TOPOLOGY_STEAL").
//
// Shared words (steal control block, layout.h; every word alone on 128 B):
//   DEAD    host only, atomic OR; cleared only by a revival (steal_revive):
//           bit c = consumer c is gone
//           (zero = alive, so zero-filled memory is a valid block)
//   ACK[c]  consumer c only: the XOR of every lane toggle c has retired (the
//           "B" of stealing); the producer's retired set = XOR of all ACKs
//   CLAIM[c] consumer c only (beside ACK[c]: one u64, stored together): the
//           lanes c has taken and not yet acknowledged (0 between claims)
//   WANT[c] consumer c only: the region c intends to claim (one bit, 0 = none)
//
// Regions: g lanes each (power of two), regions = 32 / g >= consumers + 1
// (one spare region for a delayed claimant). Region r = lanes [r*g, (r+1)*g).
//
// The claim (consumer c; lower id = senior):
//   1 snapshot pending = A ^ mine ^ XOR ACK[p != c]; nothing -> no claim
//   2-4 load DEAD once; live peers' WANT: peer intent, senior intent; never
//       pick a region a senior announced; prefer one nobody announced
//   5 the candidate region holding the oldest pending lane: the first one
//     met walking down from the producer's ring cursor (see below)
//   6 announce: store WANT[c] = 1 << r (relaxed)
//   7 ONE seq_cst fence (the Dekker pair: pairs with the identical fence of
//     every peer between its WANT store and its WANT loads), then DEAD once
//     more and the WANT of the peers live now: a senior on r -> withdraw
//     (WANT = 0); juniors on r -> wait until no live junior has r
//     (bounded: cpu_relax a few hundred times, then sched_yield, DEAD
//     re-read every round; a stop request -> withdraw)
//   8 take = (fresh A ^ mine ^ fresh XOR ACK[p != c]) & mask(r), then only
//     the take_max oldest of those that follow one another among all the
//     pending lanes (ring order: the first of r, then r's next ones up to
//     the first lane of another region; 0 = all); empty -> release WANT,
//     no claim
//  8b record CLAIM[c] = take beside the unchanged ACK[c] (one 64-bit
//     release store)
//   9 decode every lane of take, oldest first, copying what must outlive
//     the lane (and freeing its arena slot)
//  10 ACK[c] ^= take, CLAIM[c] = 0 (one 64-bit release store) -- strictly BEFORE --
//  11 WANT[c] = 0 (release store)
//
// Order: the producer puts each frame into the first free lane at or below
// its ring cursor (walking down, wrapping) and moves the cursor below it,
// storing the cursor beside A before each publish. Walking down from the
// cursor therefore meets pending lanes oldest first: a lane is passed over
// only while it is still pending, which with oldest-first claims means a
// whole lap (32 publishes) of younger calls was taken around it.
//
// Claim size: a claim takes the take_max oldest pending lanes of its region
// (ring order), and the worker runs them in that order before it claims
// again. The pool sets take_max before each claim from the worker's timed
// estimate of one call (src/spin.h "claims and wakes"): ONE lane while it
// has no estimate or its calls are long, so a busy worker leaves everything
// else pending for its idle peers; several when they are cheap, up to about
// kClaimBudgetNs of work (a worker process: always one).
// tests/model/steal_claim.pml (TAKE_K) checks that
// a claim of any number of the oldest lanes keeps exactly once and order.
//
// Why exactly once: a consumer only takes lanes of the region it owns;
// two consumers announcing the same region: the seq_cst fences make at least
// one see the other; a junior that sees a senior withdraws; a senior that
// sees a junior waits until the junior's WANT drops, which happens only after
// the junior's ACK store, and then the senior's fresh loads (step 8) include
// that ACK. The producer reuses a lane only once the XOR of ACKs says so.
//
// Dead consumers: the host sets DEAD[c] (atomic OR, release) once consumer
// c can never run again (a thread worker: after it acknowledged stop and left
// its loop; a worker process: once reaped; a white-box test: an injected
// death). Survivors ignore its WANT from their next DEAD load on. Its ACK
// word stays in every XOR (it records real retirements). A consumer that
// left through stop has no claim open. One that died mid-claim (a process)
// may have decoded lanes, freed their arena slots, even started nothing yet
// -- but not acknowledged them: they still look pending (A ^ XOR ACK), and a
// survivor taking them again would decode a frame whose arena bytes may
// already belong to another call, or run a call twice. So before setting
// DEAD the host runs steal_reap_dead(): it reads c's ACK/CLAIM pair (one
// 64-bit load), retires the claimed lanes on c's behalf (ACK ^= CLAIM,
// CLAIM = 0, one 64-bit store; c writes nothing any more, and no survivor
// takes lanes of the region c still announces in WANT until DEAD is set)
// and returns them, so their calls fail (-KNIT_ECRASHED) instead of running
// twice. tests/model/steal_claim.pml (REAP_CLAIM) is that protocol; its
// death runs kill the consumer at every step of a claim, including after
// the last decode (arena slot freed) and before the ACK store, and
// steal_claim_death.pml rejects the reaping without CLAIM and a claim
// recorded after the decode. The record is not trusted: a claim outside
// the one region c announces, or naming a lane that is not pending, is
// reported and ignored (those lanes stay pending for the survivors).
// Arena slots of those lanes that the dead consumer had not freed yet are
// given back by the producer (LockProducer::reclaim_lost: only an
// allocation still live and not reallocated since, so never a double free).
//
// Revival (a process pool respawns a dead worker on the same consumer id):
// after the reap above, steal_revive() clears CLAIM[c] and WANT[c], keeps
// ACK[c] (the successor's mirror starts from it: the lanes c retired stay
// retired), and only then clears DEAD[c] (release AND). Step 7 reads DEAD afresh after
// its fence, so a peer that read DEAD before the revival (and so skipped
// c's WANT in step 3) still meets the successor's WANT in the Dekker check:
// either the successor's fence-ordered load sees the peer's WANT (the peer
// stored it before its DEAD load, which came before the revival, which
// came before the successor ran), or the peer's DEAD load sees c alive and
// it checks c's WANT (the seq_cst fences of the two order them: had the
// successor's come first, the peer's DEAD load after its own fence would
// see the revival, which happened before the successor started).
// tests/model/steal_claim_death.pml (RESPAWN) is that
// protocol; its mutants revive before the reap, revive with ACK zeroed,
// and check step 7 against step 3's DEAD.
#ifndef KNIT_SRC_STEAL_H
#define KNIT_SRC_STEAL_H

#include "src/common.h"

#include "src/layout.h"
#include "src/lock2.h"

namespace knit::detail {

// Lane index recorded in a call published into the shared submit lock.
inline constexpr uint32_t kStealLane = 0xFFFFFFFEu;
// Senior wait: cpu_relax rounds before each sched_yield.
inline constexpr uint32_t kStealRelaxRounds = 256;

// The widest region (power of two g <= 32) with 32 / g >= consumers + 1, or 0
// when consumers is 0 or > kMaxStealConsumers. 1 -> 16; 2,3 -> 8; 4..7 -> 4;
// 8..15 -> 2; 16..31 -> 1.
uint32_t steal_max_region_lanes(uint32_t consumers);

// The first lane of `mask` (non-zero) walking down from lane `ring`
// (0..31), wrapping from 0 to 31: the oldest pending lane of a steal lock.
inline uint32_t steal_ring_first(uint32_t mask, uint32_t ring)
{
	const uint32_t below = ring >= 31 ? mask : mask & ((2u << ring) - 1u);
	return 31u - (uint32_t)__builtin_clz(below != 0 ? below : mask);
}

// Resolve the steal_region_lanes option for `consumers` (1..31): 0 -> the
// widest allowed; a power of two -> clamped into [1, widest]; anything else
// (not a power of two) -> -KNIT_EINVAL. Returns 0 with *out, or -KNIT_EINVAL.
int steal_resolve_region_lanes(uint32_t consumers, uint32_t requested, uint32_t *out);

// Host: mark consumer c dead (atomic OR into DEAD, release: pairs with the
// consumers' acquire loads of DEAD). Undone only by steal_revive(). c >= kMaxStealConsumers
// is ignored.
void steal_mark_dead(uint8_t *ctl, uint32_t c);

// Host: consumer d of `consumers` (region width region_lanes) is dead and
// will never write again (joined thread, reaped process). Reads its
// ACK/CLAIM pair and its WANT, retires the lanes it had claimed and not
// acknowledged on its behalf (when the record is valid: one announced
// region, every lane still pending), then marks it dead (steal_mark_dead).
// Returns those lanes (their calls were lost with d: the caller fails
// them), 0 when it had none. *bad: the record was invalid (nothing was
// retired; the caller counts a protocol error). Once per death.
uint32_t steal_reap_dead(uint8_t *ctl, uint8_t *lock, uint32_t consumers, uint32_t region_lanes,
			 uint32_t d, bool *bad);

// Host: consumer d, reaped by steal_reap_dead() (its DEAD bit set, its
// claim retired), gets a successor (a respawned worker process) that takes
// over its id. Clears CLAIM[d] (keeping ACK[d]: it records real
// retirements, and the successor's mirror starts from it) and WANT[d], and
// only then clears DEAD bit d: a peer that sees d alive again sees no stale
// intent of it. Call it only after steal_reap_dead() for the same death and
// before the successor runs. d >= kMaxStealConsumers is ignored.
void steal_revive(uint8_t *ctl, uint32_t d);

// ---- the consumer endpoint ---------------------------------------------------------
class StealConsumer {
public:
	// Attach consumer `id` of `consumers` (1..31, id < consumers) to the
	// submit lock at `lock` (with its arena) and the control block at `ctl`,
	// claiming regions of region_lanes lanes (a power of two with
	// 32 / region_lanes >= consumers; the pool leaves a spare region, a test
	// may not). The ACK mirror is loaded from shared memory. Returns 0 or
	// -KNIT_EINVAL.
	int attach(uint8_t *lock, const ArenaShared &arena, const ConsumerLimits &limits,
		   uint8_t *ctl, uint32_t consumers, uint32_t id, uint32_t region_lanes);
	// Lanes a claim takes at most, oldest first (0 = every pending lane of
	// the region, the default after attach).
	void set_take_max(uint32_t n) { take_max_ = n; }
	// false: never free a submit arena allocation (the producer does once
	// the lane is retired): a worker process maps the submit arena's PB
	// read-only (LockConsumer::set_frees). Default true (after attach).
	void set_frees(bool frees) { cons_.set_frees(frees); }
	// The worker's stop word: once it leaves RUNNING, a senior waiting in
	// step 7 for a junior gives up and withdraws (as a junior would;
	// nothing was taken, so that is always safe), so a junior that keeps
	// its WANT -- a worker process can write that word at will -- cannot
	// keep this worker from acknowledging a stop. nullptr (after attach):
	// wait as long as it takes.
	void set_stop_word(const uint32_t *stop) { stop_ = stop; }

	// Lanes published and not yet retired by anyone: fresh acquire loads of
	// A and every peer's ACK, XOR this consumer's ACK mirror. Includes lanes
	// a peer is claiming right now (taken, not yet ACKed). Never cached.
	uint32_t pending();

	// Steps 1-8: try to own a region. Returns the take mask (lanes now
	// owned, each to be decode()d and then ACKed by claim_end()), or 0 when
	// there is nothing to claim or we withdrew (WANT is 0 again then).
	uint32_t claim_begin();
	// Decode one lane of the current take (see LockConsumer::decode).
	int decode(uint32_t lane, FrameHead *head, knit_value_t *view)
	{
		return cons_.decode(lane, head, view);
	}
	// Free a decoded lane's arena allocation once its bytes are copied out.
	void release(uint32_t lane) { cons_.release(lane); }
	// Steps 10-12: ACK the whole take (one release store), then clear WANT
	// (release). Lanes of the take not decoded yet are
	// decoded (and dropped) first, so the whole take is retired. Returns
	// the lanes retired (0 when no claim is open).
	uint32_t claim_end();

	// A whole claim: claim_begin(), then for each lane of the take, oldest
	// first, fn(lane, rc, head, view) with decode's result (the view is
	// valid only during the call: copy what must outlive it), then
	// claim_end(). Returns the take mask (0 = nothing claimed).
	template <typename F> uint32_t claim(F &&fn)
	{
		const uint32_t take = claim_begin();
		if (take == 0)
			return 0;
		for (uint32_t m = take; m != 0; m &= ~(1u << steal_ring_first(m, ring_))) {
			const uint32_t lane = steal_ring_first(m, ring_);
			FrameHead head;
			knit_value_t view;
			int rc = cons_.decode(lane, &head, &view);
			fn(lane, rc, head, view);
			cons_.release(lane);
		}
		claim_end();
		return take;
	}

	uint32_t id() const { return id_; }
	uint32_t region_lanes() const { return g_; }
	// The producer's ring cursor as read by the last claim_begin().
	uint32_t ring() const { return ring_; }
	// Successful claims, and conflicts (withdrawals + waits for a junior).
	uint64_t claims() const { return claims_; }
	uint64_t conflicts() const { return conflicts_; }
	// The region announced by the current claim (kLanes = none).
	uint32_t region() const { return region_; }

private:
	uint32_t load_peer_acks();
	uint32_t region_mask(uint32_t r) const;

	LockConsumer cons_;
	uint32_t *a_ = nullptr;
	uint8_t *ctl_ = nullptr;
	uint32_t *dead_ = nullptr;
	uint32_t *want_ = nullptr; // our WANT word
	uint32_t *ring_word_ = nullptr;
	uint32_t n_ = 0, id_ = 0, g_ = 0, regions_ = 0;
	uint32_t ring_ = 0, take_max_ = 0;
	const uint32_t *stop_ = nullptr;
	uint32_t region_ = kLanes;
	uint32_t take_ = 0;
	uint64_t claims_ = 0, conflicts_ = 0;
};

// The steal area of a pool region: the control block (a host page: DEAD,
// the submit arena's PB; then one page per consumer: its claim and signal
// words, layout.h), then the submit lock at kStealLockOff, then its arena.
// A process pool maps a worker's own page writable in it, its peers' pages,
// the host page, the lock and its arena read-only (src/proc.h,
// "isolation"); there the consumers never free a submit allocation
// (set_frees(false): the producer frees a lane's once it is retired,
// LockProducer::load_retired) and the host checks every ACK toggle
// (steal_track and steal_judge, src/lane.h).
inline constexpr uint64_t kStealLockOff = align_up(kStealSignalEnd, kArenaAlign);
// The ArenaShared of the submit lock: its PB is the control block's
// (kStealOffSubmitPB), not the lock's own.
ArenaShared steal_submit_arena(uint8_t *ctl, uint8_t *lock, uint64_t arena_cap);
// Bytes of the steal area (control block, submit lock and its arena of
// arena_cap bytes), 4096-aligned.
uint64_t steal_area_bytes(uint64_t arena_cap);

} // namespace knit::detail

#endif
