// SPDX-License-Identifier: MIT
// src/lane.cpp - one worker lane's mechanism and life on the host (src/lane.h
// has the contract and the state table): attach, reap, distrust, the loss of
// its worker (lane_lost), and the steal topology's attribution of claims.
#include "src/common.h"

#include <limits.h>
#include <stdlib.h>

#include "src/calls.h"
#include "src/dcheck.h"
#include "src/info.h"
#include "src/lane.h"
#include "src/syncline.h"
#include "src/tick.h"
#include "src/trace.h"
#include "src/workers.h"

namespace knit::detail {

namespace {

uint64_t arena_capacity(const PoolConfig &cfg)
{
	return align_up(cfg.payload_max_bytes, kArenaGranule);
}

// Commit the first `bytes` of an arena now (payload_initial_bytes): one write
// per page, so the pages exist before the first call needs them.
void prefault(uint8_t *base, uint64_t bytes)
{
	const uint64_t page = region_page_size();
	for (uint64_t off = 0; off < bytes; off += page)
		__atomic_store_n(base + off, (uint8_t)0, __ATOMIC_RELAXED);
}

// Zero shared words that other host threads may read meanwhile (the return
// lock's A in work_pending, the running stamp in next_wake): word by word
// with atomic stores, never a memset. bytes: a multiple of 8, aligned.
void zero_shared(uint8_t *at, uint64_t bytes)
{
	uint64_t *w = reinterpret_cast<uint64_t *>(at);
	for (uint64_t i = 0; i < bytes / 8; i++)
		knit_store_relaxed_64(&w[i], 0);
}

} // namespace

// ---- attach ---------------------------------------------------------------------------

int lane_attach(Pool *p, Lane *l, uint8_t *block)
{
	const uint64_t cap = arena_capacity(p->cfg);
	const bool first = l->local == nullptr;
	uint8_t *req_lock = block + kLaneOffReqLock;
	uint8_t *ret_lock = block + kLaneOffRetLock;
	uint8_t *req_arena = block + lane_req_arena_offset();
	uint8_t *ret_arena = block + lane_ret_arena_offset(cap);
	if (first) {
		// Other host threads read these pointers from now on (lane_wake,
		// work_pending): set once, before any worker runs.
		l->block = block;
		l->wake_seq = word_at(block, kLaneOffWake);
		l->parked = word_at(block, kLaneOffParked);
		l->stop = word_at(block, kLaneOffStop);
		if (p->cfg.topology !=
		    KNIT_TOPOLOGY_STEAL) // stealing: requests use the submit lock
			prefault(req_arena, min_of(p->cfg.payload_initial_bytes, cap));
		prefault(ret_arena, min_of(p->cfg.payload_initial_bytes, cap));
	}
	ArenaShared req_sh = lock_arena_shared(req_lock, req_arena, cap);
	ArenaShared ret_sh = lock_arena_shared(ret_lock, ret_arena, cap);
	const uint64_t per_call = p->cfg.max_payload_bytes;
	ConsumerLimits wl = {p->ntasks + 1, p->tickets.capacity(), kReqFlagsMask};
	// A result's flags echo its request's sending (kFrameAttemptMask).
	ConsumerLimits hl = {p->ntasks + 1, p->tickets.capacity(), kFrameAttemptMask};
	// attach resets every field of an endpoint in place (no construction:
	// on a re-attach other host threads read the return lock's publish
	// word meanwhile). The worker's endpoints are a worker thread's; a
	// worker process attaches its own (src/proc_worker.cpp).
	int rc = l->req.attach(req_lock, req_sh, per_call);
	if (rc == 0)
		rc = l->ret.attach(ret_lock, ret_sh, hl);
	if (rc == 0 && first)
		rc = l->wreq.attach(req_lock, req_sh, wl);
	if (rc == 0 && first)
		rc = l->wret.attach(ret_lock, ret_sh, per_call);
	KNIT_DCHECK(rc == 0); // geometry we computed ourselves
	if (rc != 0)
		return -KNIT_ESYSTEM;
	l->inflight = 0;
	l->staged = 0;
	l->req_idle_ns = 0;
	l->req_known = 0;
	// A new worker's count (relaxed: stats and lane_served read it so).
	knit_store_relaxed_64(&l->served, 0);
	knit_store_relaxed_32(&l->retire_told, 0);
	knit_store_relaxed_32(&l->ret_seen, l->ret.retired_mirror());
	if (!first)
		return 0;
	l->local = static_cast<WorkerLocal *>(calloc(1, sizeof(WorkerLocal)));
	return l->local ? 0 : -KNIT_ENOMEM;
}

int lanes_attach_steal(Pool *p, uint8_t *area)
{
	const uint64_t arena_cap = arena_capacity(p->cfg);
	StealHost &s = p->steal;
	s.ctl = area;
	s.lock = area + kStealLockOff;
	uint8_t *arena = s.lock + lock_arena_offset();
	prefault(arena, min_of(p->cfg.payload_initial_bytes, arena_cap));
	ArenaShared sh = steal_submit_arena(s.ctl, s.lock, arena_cap);
	const int rc = s.req.attach_steal(s.lock, sh, p->cfg.max_payload_bytes, s.ctl, p->nworkers);
	KNIT_DCHECK(rc == 0); // geometry we computed ourselves
	if (rc != 0)
		return -KNIT_ESYSTEM;
	ConsumerLimits wl = {p->ntasks + 1, p->tickets.capacity(),
			     kReqFlagsMask | kFrameAttemptMask};
	for (uint32_t i = 0; i < p->nworkers; i++) {
		if (p->lanes[i].sc.attach(s.lock, sh, wl, s.ctl, p->nworkers, i, p->cfg.steal_g) !=
		    0)
			return -KNIT_ESYSTEM;
		// One call per claim until the worker has timed its calls
		// (steal.h, claim size; steal_take sets it before each claim).
		p->lanes[i].sc.set_take_max(1);
		p->lanes[i].sc.set_stop_word(p->lanes[i].stop);
		// Its signal words are the control block's (layout.h): a
		// worker process's peers wake it without mapping its lane.
		// Before any worker runs (other host threads read them).
		p->lanes[i].wake_seq = word_at(s.ctl, steal_wake_offset(i));
		p->lanes[i].parked = word_at(s.ctl, steal_parked_offset(i));
		p->lanes[i].peer_wakes =
			reinterpret_cast<uint64_t *>(s.ctl + steal_peerw_offset(i));
	}
	s.staged = 0;
	s.wake_cursor = 0;
	s.unclaimed = 0;
	s.orphans = nullptr;
	for (uint32_t i = 0; i < kLanes; i++)
		s.lane_claimer[i] = kNoClaimer;
	for (uint32_t i = 0; i < kMaxStealConsumers; i++)
		s.ack_seen[i] = s.ack_valid[i] = 0; // a fresh control block: every ACK is 0
	s.on = true;
	return 0;
}

// ---- reaping --------------------------------------------------------------------------

namespace {

bool status_from_worker_ok(int32_t s)
{
	return s == 0 || s == -KNIT_ETASK || s == -KNIT_ETOOBIG || s == -KNIT_ETIMEDOUT ||
	       s == -KNIT_EPROTO || s == -KNIT_ENOMEM;
}

// A timed pool (src/info.h), for a frame of call c that handle_result()
// is about to complete (under the same hold of mu: its record is live):
// the timing the frame's deadline word carries (kept in c's record: the
// packed path, src/info.h), or, into c's note, the side words the worker
// left beside it in `slot` when that word cannot tell or the pool asked
// for CPU time (those count only when they name the frame's own call);
// enq the call's enqueue tick (Call::t_enq, before the completion reuses
// it), `now` the reap's tick, read after the results' acquire, pid the
// lane's worker's.
void note_timing(Pool *p, Lane *l, Call *c, uint32_t slot, const FrameHead &h, int64_t enq,
		 int64_t now, int32_t pid)
{
	if (KNIT_LIKELY(!p->cfg.cpu_time) &&
	    info_ran_packed_locked(c, l->index, pid, enq, h.deadline_ns, now))
		return; // the packed path: the words in c's record
	CallNote *n = info_note_take_locked(p, c);
	if (KNIT_UNLIKELY(n == nullptr))
		return;
	int64_t start = -1, end = -1, cpu = -1;
	const bool packed = timing_unpack(h.deadline_ns, enq, now, &start, &end);
	if (KNIT_UNLIKELY(!packed || p->cfg.cpu_time)) {
		TimingWords tw;
		l->ret.side_copy(slot, &tw, sizeof tw);
		if (tw.ticket == h.ticket && tw.gen == h.generation) {
			if (!packed) {
				start = tw.start < 0 ? 0 : tw.start;
				end = tw.end;
			}
			cpu = tw.cpu;
		} else if (!packed) {
			start = -1; // not this frame's: the lane only
		}
	}
	info_ran_locked(n, c, l->index, pid, enq, start, end, cpu, now);
}

// One frame of lane l's return lock (holder, under mu). *bad: the frame is
// one the lane's worker could not have written honestly (the lane is to be
// distrusted: lane_distrust). The completion's counts go into *batch
// (complete_batch_end_locked() before mu is released). A timed pool's
// reap (now != 0: its tick; pid the lane's worker's) notes the call's
// timing (note_timing, the frame in `slot`) just before completing it.
// Returns the call when the frame completed it, else nullptr.
Call *handle_result(Pool *p, Lane *l, int rc, const FrameHead &h, const knit_value_t &v, bool *bad,
		    CompleteBatch *batch, uint32_t *own, uint32_t slot, int64_t now, int32_t pid)
{
	int32_t status;
	knit_value_t val;
	bool copy = false, proto = true;
	if (rc == 0 && h.status == 0) {
		// The common case first: a well-formed frame with a result.
		proto = false;
		status = 0;
		copy = true;
	} else if (rc != 0) {
		knit_add_relaxed_64(&p->st_proto_errors, 1);
		*bad = true;
		if (h.fault & kFaultIds)
			return nullptr; // cannot tell whose it is: counted only
		status = -KNIT_EPROTO;
	} else if (!status_from_worker_ok(h.status) ||
		   (h.status == -KNIT_ETASK && v.type != KNIT_VALUE_ERROR)) {
		knit_add_relaxed_64(&p->st_proto_errors, 1);
		*bad = true;
		status = -KNIT_EPROTO;
	} else {
		proto = false;
		status = h.status;
		copy = status == 0 || status == -KNIT_ETASK;
	}
	Call *c = p->tickets.lookup(h.ticket);
	// A frame counts only for a call this lane holds: placed on it, or
	// claimed by its worker (steal_track ran before this reap, and the
	// record stays live under the same generation until its frame is
	// reaped). Anything else -- no such record, another generation, a call
	// another worker holds or nobody has claimed -- is forged or corrupt:
	// it touches no call (not even the one it names, which its holder
	// still answers) and no count of this lane.
	// A second frame for the same call (its hold already returned) is a
	// replay: it must neither count nor complete anything again.
	// A frame of an earlier sending of the call (steal_unstarted_calls,
	// steal_orphan) is no answer to this one.
	if (c == nullptr || !c->live || c->gen != h.generation || c->lane != l->index ||
	    (c->holds & kHoldHostQueue) == 0 || h.flags >> kFrameAttemptShift != c->resends) {
		if (!proto)
			knit_add_relaxed_64(&p->st_proto_errors, 1);
		// Stealing, once a worker's ACK word lied (StealHost::misled),
		// and always among worker processes (a misled claim can hide in
		// the parity: an honest worker that claimed a lane twice, misled
		// by a peer's toggle between, shows no toggle at all): a peer's
		// forged toggle can mislead an honest worker into running a call
		// it does not hold; its frame is dropped, not held against it.
		if (!p->steal.on || !(p->steal.misled || p->untrusted_workers))
			*bad = true;
		return nullptr;
	}
	if (l->inflight > 0)
		l->inflight--; // its own frame is back
	// The calls its worker served (lane_served): a carrier's riders.
	*own += KNIT_UNLIKELY(c->flags & kCallCarrier) ? c->pin_lane : 1u;
	if (l->rerun)
		drop_arg_copy(c); // kept for a re-run until now (lane_stage)
	if (c->completed) {
		// Its own frame, late (cancelled, timed out meanwhile): the
		// lane's hold ends here (the record, and its raised abort bit,
		// can be recycled now).
		knit_add_relaxed_64(&p->st_late_drops, 1);
		call_unhold_locked(p, c, kHoldHostQueue);
		return nullptr;
	}
	// Its own call under another task id: only this call fails (and the
	// lane is distrusted).
	if (h.task != c->task) {
		if (!proto)
			knit_add_relaxed_64(&p->st_proto_errors, 1);
		*bad = true;
		status = -KNIT_EPROTO;
		copy = false;
	}
	uint8_t *buf = nullptr;
	const knit_value_t *result = &val;
	if (copy && !codec_has_bytes(v.type)) {
		// A scalar view from decode() has no code, data or len:
		// value_copy() would copy it unchanged.
		result = &v;
	} else if (!copy || value_copy(v, &val, &buf) != 0) {
		if (copy)
			status = -KNIT_ENOMEM;
		memset(&val, 0, sizeof val);
	}
	// Before the completion reuses t_enq (its cq link); c completes below
	// (live, not completed: checked above).
	if (KNIT_UNLIKELY(now != 0) && c->t_enq != 0)
		note_timing(p, l, c, slot, h, c->t_enq, now, pid);
	const bool done = call_complete_batch_locked(p, c, status, *result, buf, batch);
	call_unhold_locked(p, c, kHoldHostQueue); // the frame is back
	return done ? c : nullptr;
}

} // namespace

uint32_t lane_reap(Pool *p, Lane *l)
{
	if (l->state == kLaneRetired)
		return 0; // its words are not read any more
	uint32_t snap = l->ret.pending();
	if (snap == 0)
		return 0;
	l->ret.prefetch(snap);
	// Who claimed what, from ACK words at least as new as these results.
	steal_track(p);
	uint32_t produced = 0, own = 0;
	bool bad = false;
	CompleteBatch batch; // cq_count and outstanding once per reap
	// A timed pool's one tick per reap: after the acquire of A in
	// pending(), so every result reaped below ended before it; and its
	// worker's pid, once.
	const int64_t now = p->info.timing ? tick_now() : 0;
	const int32_t pid = now != 0 ? p->workers->pid(p, l->index) : 0;
	pthread_mutex_lock(&p->mu);
	int slot;
	while ((slot = l->ret.next_lane(&snap)) >= 0) {
		FrameHead h;
		knit_value_t v;
		int rc = l->ret.decode((uint32_t)slot, &h, &v);
		KNIT_DCHECK(rc != -KNIT_EINVAL); // "not in flight": our own snapshot says it is
		if (rc == -KNIT_EINVAL)
			continue;
		if (handle_result(p, l, rc, h, v, &bad, &batch, &own, (uint32_t)slot, now, pid))
			produced++;
		l->ret.release((uint32_t)slot);
	}
	complete_batch_end_locked(p, &batch);
	pthread_mutex_unlock(&p->mu);
	if (own != 0)
		lane_served(p, l, own);
	if (bad)
		lane_distrust(p, l->index);
	l->ret.retire_taken(); // C3: release store of B
	knit_store_relaxed_32(&l->ret_seen, l->ret.retired_mirror());
	// A worker parked for room is looked for after the fence that
	// releasing the dispatcher needs anyway (dispatch_unlock; W1 there
	// pairs with its W2 fence after it stores kParkedForRoom and before it
	// retries: either it sees the room we just gave back or we see it
	// parked).
	p->room_lanes |= 1ull << l->index;
	return produced;
}

void lane_served_mark(Pool *p, Lane *l)
{
	if (p->workers->retire_due == nullptr)
		return;
	// acq_rel only because that is the exchange there is: it pairs with
	// nothing, it only makes the telling once per worker (lane_attach
	// clears it for the next one).
	if (knit_xchg_acq_rel_32(&l->retire_told, 1) == 0)
		p->workers->retire_due(p, l->index);
}

bool lane_retire(Pool *p, uint32_t w)
{
	if (w >= p->nworkers)
		return false;
	Lane *l = &p->lanes[w];
	if (l->state != kLaneLive)
		return false;
	// acq_rel: pairs with the worker's acquire load of the stop word at
	// the top of its pass (it sees RETIRE, then leaves); against knit_stop's
	// CAS RUNNING -> REQUESTED exactly one wins, and request_worker_stop
	// turns a RETIRE it finds into REQUESTED.
	if (knit_cas_acq_rel_32(l->stop, kStopRunning, kStopRetire) != kStopRunning)
		return false;
	lane_set_state(p, l, kLaneRetiring);
	return true;
}

void lane_distrust(Pool *p, uint32_t w)
{
	if (w >= p->nworkers)
		return;
	p->workers->distrust(p, w);
}

bool lane_stop_wait(Pool *p, uint32_t w, int64_t deadline)
{
	Lane *l = &p->lanes[w];
	const WorkerOps *ops = p->workers;
	// A retired lane's worker is gone (lane_lost): its stop word is
	// nobody's any more, never waited on.
	while (lane_state(l) != kLaneRetired) {
		// Acquire: pairs with the worker's release store of ACKNOWLEDGED
		// in acknowledge_stop() (or lane_lost's exchange for a worker
		// that died).
		const uint32_t s = knit_load_acquire_32(l->stop);
		if (s == kStopAcknowledged) {
			// It left its loop for good: survivors may ignore its WANT.
			steal_worker_gone(p, w);
			break;
		}
		// A worker of a kind that may write its stop word wrongly is
		// checked (killed, and its lane_lost acknowledges); a DOWN lane
		// (no worker now: a process backing off, src/proc.h) is its
		// kind's to acknowledge.
		if ((s != kStopRequested || lane_state(l) == kLaneDown) &&
		    ops->stop_check != nullptr)
			ops->stop_check(p, w);
		if (deadline >= 0 && knit_now_ns() >= deadline)
			return false;
		int64_t until = deadline;
		if (ops->stop_poll_ns >= 0) {
			const int64_t cap = knit_now_ns() + ops->stop_poll_ns;
			if (until < 0 || cap < until)
				until = cap;
		}
		knit_futex_wait(l->stop, s, until, p->futex_shared);
	}
	return true;
}

// ---- the loss of a lane's worker ----------------------------------------------------------

namespace {

// The calls on lane l whose frames its dead worker never started (holder,
// under mu), in the order they were placed, into again[] (at most kLanes);
// each is taken off the lane (lane = kNoLane) and keeps its host-queue hold.
//
// A frame was started when its worker retired it (its bit of the request
// lock's B flipped: the worker retires a frame only after running it) or
// marked it in the started mask (set before its task runs, src/worker.cpp).
// So the unstarted ones are the slots still in flight by our own mirror of
// A and the shared B, minus the started mask. B and the mask are the dead
// worker's words: they may say anything. They only choose among the slots
// the host itself recorded (lane_stage), and a call counts only when the
// record still names it (same generation, on this lane, its frame not
// back, not completed): a lie can make a started call run again (it ran
// twice; its first result never came back, so it completes once) or an
// unstarted one fail -KNIT_ECRASHED -- never a second completion, never a
// call of another lane. The worker is dead and reaped: nothing writes the
// words any more, and its stores are visible (the kernel's exit and our
// waitid order them), so relaxed loads.
uint32_t unstarted_calls(Pool *p, Lane *l, Call **again)
{
	const uint32_t b = knit_load_relaxed_32(word_at(l->block + kLaneOffReqLock, kLockOffB));
	const uint32_t started =
		knit_load_relaxed_32(reinterpret_cast<uint32_t *>(l->ext + kLaneExtOffStarted));
	uint64_t order[kLanes];
	uint32_t n = 0;
	for (uint32_t m = (l->req.published() ^ b) & ~started & l->req_known; m != 0; m &= m - 1) {
		const uint32_t slot = (uint32_t)__builtin_ctz(m);
		Call *c = p->tickets.lookup(l->req_ticket[slot]);
		if (c == nullptr || !c->live || c->gen != l->req_gen[slot] || c->lane != l->index ||
		    (c->holds & kHoldHostQueue) == 0 || c->completed)
			continue;
		c->lane = kNoLane; // once: another slot naming it no longer matches
		// Insertion sort by place order (at most 32).
		uint32_t i = n++;
		for (; i > 0 && order[i - 1] > l->req_order[slot]; i--) {
			order[i] = order[i - 1];
			again[i] = again[i - 1];
		}
		order[i] = l->req_order[slot];
		again[i] = c;
	}
	return n;
}

// Stealing: the calls counted as claimed by lane l's dead worker (Call::lane,
// steal_track) that it never started, into again[] (holder, under mu, after
// lane_steal_reap attributed its last claims and lane_reap took its last
// results). An honest worker process claims one call at a time and only
// once every result is published (src/worker.cpp steal_take), so of its
// claims without a result only the one its started word names
// (kLaneExtOffStealStarted, stored before the call runs, never cleared) can
// have begun; the others were claims it never acted on: the one it took
// and died before running, the lanes the host retired on its behalf
// (steal_reap_dead: decoded, never run), or toggles of its ACK word that
// were no claim at all (a forged word: the call is another worker's to
// run). The started word is the dead worker's: a lie there makes a call it
// began run again (its first result never came back: it completes once)
// or one it never began fail -- at most that one call.
//
// A call that kills every worker that runs it and hides that it started
// must not cost workers for ever: each sending counts (Call::resends), by
// kStealResendSole when the call was all its dead worker held -- what an
// honest worker's death leaves, and what a call that hides its start
// does -- and by 1 when the worker held several (its ACK word lied: most
// of them are calls a forgery counted as its claims, sent again freely);
// past kStealResendMax the call fails with the loss's status. Each sending
// carries its count in the frame (kFrameAttemptShift), so a frame of an
// earlier one (a copy run misled, replayed by a worker that rewrote its own
// return lock) counts for nothing. A forged word can count more than kLanes
// calls as its claims: every kLanes of them go back to the backlog here
// (dispatch_backlog_requeue), the last ones in again[]. The worker is
// reaped: relaxed load, as for the started mask.
// c leaves the submit lane(s) it was published in, to be sent again: no
// record of a lane names it any more, so a late toggle of an old lane (a
// copy run misled, a forgery) is no claim of its next sending (holder).
void steal_forget_call(Pool *p, const Call *c)
{
	StealHost &s = p->steal;
	for (uint32_t lane = 0; lane < kLanes; lane++)
		if (s.lane_ticket[lane] == c->index && s.lane_gen[lane] == c->gen)
			s.lane_gen[lane] = 0; // no generation is 0 (runtime.h)
}

uint32_t steal_unstarted_calls(Pool *p, Lane *l, Call **again)
{
	const uint64_t started = knit_load_relaxed_64(
		reinterpret_cast<const uint64_t *>(l->ext + kLaneExtOffStealStarted));
	const uint32_t high = p->tickets.high();
	const auto held = [&](const Call *c) {
		return c != nullptr && c->live && c->lane == l->index &&
		       (c->holds & kHoldHostQueue) != 0 && !c->completed;
	};
	uint32_t nheld = 0;
	for (uint32_t i = 0; i < high && nheld < 2; i++)
		if (held(p->tickets.lookup(i)))
			nheld++;
	const uint16_t cost = nheld == 1 ? kStealResendSole : 1;
	uint32_t n = 0;
	for (uint32_t i = 0; i < high; i++) {
		Call *c = p->tickets.lookup(i);
		if (!held(c) || ticket_of(c) == started || c->resends + cost > kStealResendMax)
			continue;
		if (n == kLanes) {
			dispatch_backlog_requeue(p, again, n);
			n = 0;
		}
		c->resends = (uint16_t)(c->resends + cost);
		c->lane = kNoLane; // no frame counts for it until it is claimed again
		steal_forget_call(p, c);
		again[n++] = c;
	}
	return n;
}

} // namespace

uint32_t lane_lost(Pool *p, uint32_t w, LaneLoss *loss)
{
	loss->nagain = 0;
	if (w >= p->nworkers || p->lanes[w].state == kLaneRetired)
		return 0;
	Lane *l = &p->lanes[w];
	// 1. What it answered before it went (validated as always: a bad frame
	// distrusts the lane, which for a process asks for a protocol kill).
	uint32_t produced = lane_reap(p, l);
	// 2. Stealing: the lanes of the submit lock it had claimed and not
	// acknowledged are retired on its behalf (their calls now name it and
	// fail below with the lane's); everything still pending there stays
	// for the other workers (or its successor).
	lane_steal_reap(p, w);
	if (loss->settle != nullptr)
		loss->settle(p, w, loss);
	const int32_t status = loss->status;
	const LaneFate fate = loss->fate;
	// 3. Its line (src/syncline.h S10): a knit_call on it ends with status
	// too. Retired first: a line claim skips the lane, which is what ends
	// S10's retries. With a new worker to come the line is reopened for it
	// (S11): its boot record carries the open word it waits for, a nonce
	// no earlier worker of the lane waited for (relaxed: only the
	// dispatcher's holder and the monitor use it).
	bool last = false;
	if (fate == kLaneRetire) {
		lane_set_state(p, l, kLaneRetired);
		line_lost(p, l, status, false, 0, loss->death);
		p->lanes_retired++;
		l->inflight = 0;
		// The last worker of a steal pool: the calls waiting in the
		// submit lock have nobody left to claim them either.
		last = p->steal.on && p->lanes_retired == p->nworkers;
	} else {
		uint32_t nonce = knit_load_relaxed_32(&l->line_nonce) + 1;
		if (nonce == 0)
			nonce = 1; // 0 means "open from the start" (first boot)
		const bool respawn = fate == kLaneRespawn || fate == kLaneRespawnLater;
		if (respawn)
			knit_store_relaxed_32(&l->line_nonce, nonce);
		line_lost(p, l, status, respawn, nonce, loss->death);
	}
	// 4 and 5: the calls it never started back to the caller, the rest fail.
	pthread_mutex_lock(&p->mu);
	if ((fate == kLaneRespawn || fate == kLaneRespawnLater) && l->rerun)
		loss->nagain = p->steal.on ? steal_unstarted_calls(p, l, loss->again)
					   : unstarted_calls(p, l, loss->again);
	produced += calls_fail_lane_locked(p, w, status, last, &loss->death);
	pthread_mutex_unlock(&p->mu);
	if (fate == kLaneRetire)
		return produced; // its words are never read again
	// 6. No process maps the lane as a worker now: its locks go back to
	// their initial (zero) state and the host's endpoints start over.
	zero_shared(l->block + kLaneOffReqLock, kLaneFixedBytes - kLaneOffReqLock);
	zero_shared(l->ext, kBlock);                // the running stamp, the started mask
	const int rc = lane_attach(p, l, l->block); // the geometry create used: cannot fail
	KNIT_DCHECK(rc == 0);
	(void)rc;
	// Backing off: DOWN until lane_revive (nothing placed on it; the calls
	// in again[] go to the other lanes).
	lane_set_state(p, l, fate == kLaneRespawnLater ? kLaneDown : kLaneLive);
	knit_store_relaxed_32(l->parked, 0); // kAwake (src/wake.h)
	const uint32_t stop_word = fate == kLaneStopped ? kStopAcknowledged : kStopRunning;
	// acq_rel exchange, not a store: if request_worker_stop's CAS to
	// REQUESTED came first, we read from it and so see its earlier store
	// of workers_stopping below, and put the request back for the new
	// worker; if it comes after us, it finds RUNNING and makes it
	// REQUESTED itself. Release: the reset above is visible to whoever sees
	// the new word (knit_stop's acquire load; the new worker maps later).
	knit_xchg_acq_rel_32(l->stop, stop_word);
	if (stop_word == kStopRunning && knit_load_relaxed_32(&p->workers_stopping))
		knit_cas_acq_rel_32(l->stop, kStopRunning,
				    kStopRequested); // pairs as in request_worker_stop
	knit_futex_wake(l->stop, INT_MAX, p->futex_shared);
	return produced;
}

void lane_revive(Pool *p, uint32_t w)
{
	if (w >= p->nworkers || p->lanes[w].state != kLaneDown)
		return;
	lane_set_state(p, &p->lanes[w], kLaneLive);
}

void lane_abandon(Pool *p, uint32_t w)
{
	if (w >= p->nworkers || p->lanes[w].state != kLaneDown)
		return;
	Lane *l = &p->lanes[w];
	// Release: pairs with knit_stop's acquire load of the stop word (the
	// lane's reset by lane_lost is visible with it), as lane_lost's
	// exchange for kLaneStopped.
	knit_xchg_acq_rel_32(l->stop, kStopAcknowledged);
	knit_futex_wake(l->stop, INT_MAX, p->futex_shared);
}

// ---- the steal topology's claims --------------------------------------------------------

void steal_track(Pool *p)
{
	StealHost &s = p->steal;
	if (!s.on)
		return;
	const uint32_t n = p->nworkers;
	uint32_t claimed[kMaxStealConsumers];
	uint32_t any = 0, news = 0, x = 0;
	for (uint32_t w = 0; w < n; w++) {
		// S2: acquire, pairs with worker w's release store of ACK[w]
		// (claim_end): a claim is seen before anything the worker did
		// after it (its result's publish, its running stamp).
		const uint32_t a = knit_load_acquire_32(word_at(s.ctl, steal_ack_offset(w)));
		const uint32_t t = a ^ s.ack_seen[w];
		// Every publish is retired by exactly one toggle: a toggle of an
		// unclaimed lane claims its call (the first worker to show one).
		claimed[w] = t & s.unclaimed & ~any;
		s.ack_valid[w] ^= claimed[w];
		s.ack_seen[w] = a;
		x ^= a;
		any |= claimed[w];
		news |= t & ~claimed[w];
	}
	if (news != 0) // a toggle the host did not accept
		steal_judge(p);
	if (p->untrusted_workers) {
		// Every toggle of an unclaimed lane in this look was taken as a
		// claim, so a published lane still unclaimed reads pending in the
		// words just read -- unless lies left the parity wrong (toggles
		// that cancelled out against the host's accounting): then no
		// worker sees the call, and it is sent again (steal_rescue).
		const uint32_t lost =
			s.unclaimed & ~any & ~s.req.staged() & ~(s.req.published() ^ x);
		if (lost != 0)
			steal_rescue(p, lost);
	}
	if (any == 0)
		return;
	pthread_mutex_lock(&p->mu);
	for (uint32_t w = 0; w < n; w++)
		for (uint32_t m = claimed[w]; m != 0; m &= m - 1) {
			const uint32_t lane = (uint32_t)__builtin_ctz(m);
			s.lane_claimer[lane] = (uint8_t)w;
			Call *c = p->tickets.lookup(s.lane_ticket[lane]);
			if (c != nullptr && c->live && c->gen == s.lane_gen[lane] &&
			    c->lane == kStealLane)
				c->lane = w;
		}
	pthread_mutex_unlock(&p->mu);
	s.unclaimed &= ~any;
}

void steal_judge(Pool *p)
{
	StealHost &s = p->steal;
	const uint32_t n = p->nworkers;
	uint32_t bad[kMaxStealConsumers];
	for (uint32_t w = 0; w < n; w++) {
		bad[w] = s.ack_seen[w] ^ s.ack_valid[w];
		if (bad[w] != 0)
			s.misled = true;
	}
	for (uint32_t lane = 0; lane < kLanes; lane++) {
		const uint32_t bit = 1u << lane;
		uint32_t holders = 0;
		for (uint32_t w = 0; w < n; w++)
			if (bad[w] & bit)
				holders |= 1u << w;
		const uint32_t k = (uint32_t)__builtin_popcount(holders);
		if (k == 0 || k >= 3)
			continue; // three or more (of an odd number): the next look
		if (k == 2) {
			// Two toggles the host did not accept: they cancel out (one
			// worker misled by the other's), the lane's XOR is what the
			// host believes.
			for (uint32_t m = holders; m != 0; m &= m - 1)
				s.ack_valid[(uint32_t)__builtin_ctz(m)] ^= bit;
			continue;
		}
		const uint32_t w = (uint32_t)__builtin_ctz(holders);
		const uint32_t f = s.lane_claimer[lane];
		s.ack_valid[w] ^= bit;
		if (f < n && f != w) {
			// A second claim of a publication the host counted as f's:
			// the two toggles cancel out, so the lane reads pending
			// again (whoever takes it next runs a call it does not hold:
			// its frame is dropped). The call stays with f, the claim
			// the host saw first: nothing tells which of the two was
			// forged, and w's may be a claim it made misled by a
			// peer's word. Either f runs it and answers, or f forged
			// its claim: then the call is sent again once f is gone
			// (lane_lost, steal_unstarted_calls).
			s.ack_valid[f] ^= bit;
			s.unclaimed |= bit;
			s.lane_claimer[lane] = kNoClaimer;
		} else {
			knit_add_relaxed_64(&p->st_proto_errors, 1); // somebody lied
		}
		// Else no claim the host accepted explains the toggle (counted):
		// a lane
		// with no call to claim (never published, its claimant gone, or
		// toggled twice already) that a forged word made look pending,
		// claimed by a worker misled by it -- or the forgery itself.
		// Either way it touches no call, and it is taken as it is
		// (nobody blamed: an honest worker's misled claim and a liar's
		// toggle look the same). The lane's XOR is then the workers'
		// words; a lie there costs the liar's peers a stale frame's run.
	}
}

void lane_steal_reap(Pool *p, uint32_t w)
{
	StealHost &s = p->steal;
	if (!s.on || w >= p->nworkers)
		return;
	// Its last claims first (they name it as their calls' holder), then
	// its ACK word reset to what makes the XOR of every ACK the retired
	// set the host believes: every lane published and not claimed (as the
	// host counts claims, s.unclaimed) pending, every other lane retired.
	// Every other worker's word is taken as it is now (what they did
	// since is theirs), w's absorbing the difference. w is dead: nothing
	// else writes its word. CLAIM is kept for the reap.
	steal_track(p);
	const uint32_t pending = s.unclaimed & ~s.req.staged(); // staged: not published yet
	uint32_t others = 0;
	for (uint32_t c = 0; c < p->nworkers; c++)
		if (c != w) {
			s.ack_valid[c] = s.ack_seen[c];
			others ^= s.ack_seen[c];
		}
	uint64_t *pair = reinterpret_cast<uint64_t *>(word_at(s.ctl, steal_ack_offset(w)));
	const uint32_t claim = (uint32_t)(knit_load_acquire_64(pair) >> 32); // S7
	const uint32_t ack = s.req.published() ^ pending ^ others;
	if (ack != s.ack_seen[w]) {
		// S2: release, as a retire (pairs with the producer's and the
		// peers' acquire loads of ACK[w]).
		knit_store_release_64(pair, (uint64_t)ack | ((uint64_t)claim << 32));
		s.misled = true;
	}
	s.ack_seen[w] = s.ack_valid[w] = ack;
	// Its successor takes over the id with nothing held against it: no
	// later toggle is paired with a claim of w's.
	for (uint32_t lane = 0; lane < kLanes; lane++)
		if (s.lane_claimer[lane] == w)
			s.lane_claimer[lane] = kNoClaimer;
	bool bad = false;
	const uint32_t lost = steal_reap_dead(s.ctl, s.lock, p->nworkers, p->cfg.steal_g, w, &bad);
	if (bad)
		knit_add_relaxed_64(&p->st_proto_errors, 1);
	s.req.reclaim_lost(lost); // arena slots it never freed
	// The lanes retired on its behalf just now name it as their calls'
	// holder. Whatever its word says now is the host's own doing: its
	// successor starts from it with nothing held against it.
	steal_track(p);
	s.ack_valid[w] = s.ack_seen[w];
	for (uint32_t lane = 0; lane < kLanes; lane++)
		if (s.lane_claimer[lane] == w)
			s.lane_claimer[lane] = kNoClaimer; // as above
}

Call *steal_orphan(Pool *p, uint32_t lane)
{
	StealHost &s = p->steal;
	s.misled = true;
	knit_add_relaxed_64(&p->st_proto_errors, 1);
	Call *again = nullptr;
	pthread_mutex_lock(&p->mu);
	Call *c = p->tickets.lookup(s.lane_ticket[lane]);
	if (c != nullptr && c->live && c->gen == s.lane_gen[lane] && c->lane == kStealLane &&
	    (c->holds & kHoldHostQueue) != 0) {
		c->lane = kNoLane; // no frame counts for it any more
		if (p->lanes[0].rerun && c->resends < kStealResendMax) {
			// Nobody's claim: sent again (its argument's copy is kept,
			// steal_stage), keeping its host-queue hold; counted as a
			// sending after a lie (steal_unstarted_calls).
			c->resends++;
			steal_forget_call(p, c);
			again = c;
		} else {
			call_fail_locked(p, c, -KNIT_EPROTO);
			call_unhold_locked(p, c, kHoldHostQueue); // its frame never comes back
		}
	}
	pthread_mutex_unlock(&p->mu);
	return again;
}

void steal_rescue(Pool *p, uint32_t lanes)
{
	StealHost &s = p->steal;
	for (uint32_t m = lanes; m != 0; m &= m - 1) {
		const uint32_t lane = (uint32_t)__builtin_ctz(m);
		s.unclaimed &= ~(1u << lane); // nobody's to claim any more
		Call *again = steal_orphan(p, lane);
		if (again != nullptr) {
			// Back to the backlog at its next flush, not now: we may be
			// placing from the backlog's list.
			again->next = s.orphans;
			s.orphans = again;
		}
	}
}

void steal_worker_gone(Pool *p, uint32_t i)
{
	if (p->steal.on && i < p->nworkers)
		steal_mark_dead(p->steal.ctl, i);
}

} // namespace knit::detail
