// SPDX-License-Identifier: MIT
// src/lane.h - the room of one worker lane: the Lane (its host half and its
// worker half), and the lane's mechanism and whole life on the host: attach
// (one function for the first start and the re-attach after a death),
// stage, flush and reap on one lane, distrust, and the loss of its worker
// (lane_lost: one path for both worker kinds). The dispatcher
// (src/dispatch.cpp) chooses lanes; the lane stages, flushes and reaps.
// The worker kinds (src/workers.h) start, stop and end the workers behind
// the lanes, and hand a loss to lane_lost. Implemented in src/lane.cpp;
// tests/model/lanes_death.pml is lane_lost's model (a process worker dying
// at any step: the calls it started fail, the others run again).
//
// A lane's state (Lane::state; written by the dispatcher's holder, read
// relaxed by any host thread as a hint to skip the lane):
//
//   from        to          by
//   LIVE        DISTRUSTED  lane_distrust, a worker thread: its stop is
//                           requested (src/workers_thread.cpp)
//   DISTRUSTED  RETIRED     lane_lost(kLaneRetire), by the pass that sees
//                           that stop acknowledged (dispatch_pass)
//   LIVE        DOWN        lane_distrust, the hard timeout or
//                           KNIT_CANCEL_KILL, a worker process: its kill is
//                           asked for (src/proc.cpp)
//   LIVE, DOWN  LIVE        lane_lost(kLaneRespawn, kLaneStopped): its words
//                           reset and the host's endpoints re-attached
//   LIVE, DOWN  DOWN        lane_lost(kLaneRespawnLater): the same, but its
//                           successor comes after a backoff (src/proc.h)
//   DOWN        LIVE        lane_revive: that successor is spawned now
//   LIVE        RETIRED     lane_lost(kLaneRetire) for a worker that is gone
//                           without a stop (white-box tests inject it)
//   LIVE        RETIRING    lane_retire, a worker process being recycled (its
//                           successor booted; src/proc.cpp)
//   RETIRING    LIVE        lane_lost(kLaneRespawn, kLaneStopped) once it left
//   RETIRING    DOWN        lane_distrust or the hard timeout meanwhile
//
// Recycling (process pools; recycle_calls, recycle_rss_bytes,
// recycle_age_ms): a worker past a mark is replaced without a gap. The lane
// counts what its worker served (Lane::served: its own frames reaped and
// its line's calls answered) and tells the kind once the count reaches
// recycle_calls (WorkerOps::retire_due); the kind watches memory and age
// itself. The kind boots the successor first (as far as its task-table
// check, src/proc_worker.cpp) and only then retires the lane (lane_retire):
// nothing is placed on it from then on, its stop word goes RUNNING ->
// RETIRE, and the worker ships the results it holds, acknowledges and
// exits (src/worker.cpp). Its loss is then the ordinary lane_lost with
// kLaneRespawn, after the kind let a line call it answered finish
// (line_settle, src/syncline.h): its published results reaped, the frames
// it took and never started placed again (the successor runs them: none
// ran twice), and the lane re-attached for the successor, which was
// waiting, booted, to be let in. Stealing: the leaving worker claims nothing after the RETIRE (a
// claim checks the stop word) and its id is revived for the successor
// after the reap, as after a death (tests/model/steal_claim_recycle.pml).
//
// Calls: stage (lane_stage) holds a call's kHoldHostQueue on the lane until
// its frame is reaped (lane_reap) or the lane is lost (lane_lost, which
// fails it: calls_fail_lane_locked). Every call ends in exactly one
// completion: the reap, or the loss, or, for a call the worker never
// started on a lane with `rerun`, its second placement.
#ifndef KNIT_SRC_LANE_H
#define KNIT_SRC_LANE_H

#include "src/common.h"

#include <pthread.h>
#include <stdlib.h>

#include "src/dcheck.h"
#include "src/info.h"
#include "src/lock2.h"
#include "src/runtime.h"
#include "src/steal.h"
#include "src/trace.h"

namespace knit::detail {

// The lane's state (Lane::state).
enum LaneState : uint32_t {
	kLaneLive = 0,       // serving: calls are placed here, its words are read
	kLaneDistrusted = 1, // its worker thread wrote what no honest worker writes:
			     // nothing is placed here; its stop was requested and
			     // the pass that sees it acknowledged retires the lane
	kLaneDown = 2,       // its worker process is being killed: nothing is placed
			     // here until its monitor re-attaches the lane (lane_lost)
	// its worker is gone for good: nothing is placed here and its words are
	// never read again
	kLaneRetired = 3,
	// its worker process is being recycled (lane_retire): nothing is placed
	// here; its words are read (its results reaped) until its successor
	// takes the lane over (lane_lost)
	kLaneRetiring = 4,
};

// A frame the worker took from its request lock and has not run yet.
struct HeldFrame {
	uint32_t slot; // request-lock lane (0..31)
	int rc;        // decode result
	FrameHead head;
	knit_value_t view; // valid until the slot is retired (lanes), or
			   // points into buf (steal: copied before the ACK)
	uint8_t *buf;      // steal: malloc'd argument bytes, freed once run
};

// A result the worker could not publish yet (return arena full).
struct PendingResult {
	FrameHead head;
	knit_value_t value; // data = buf
	uint8_t *buf;
	bool timed; // a timed task's result: timing goes with it
	TimingWords timing;
};

struct WorkerLocal {
	HeldFrame held[kLanes];
	uint32_t held_head, held_count;
	PendingResult pend[kLaneInflightMax];
	uint32_t pend_head, pend_count;
	// Steal topology: this worker's estimate of one call's run time (ns, 0
	// = none yet; src/spin.h "claims and wakes") and the batch count that
	// picks which batches are timed.
	int64_t svc_ns;
	// The wake estimate (spin.h "claims and wakes": the mean of the
	// smaller of each two samples in a row, 0 = none yet) and the last
	// sample.
	int64_t wake_svc_ns;
	int64_t svc_last_ns;
	uint32_t svc_tick;
	bool take_one; // one call per claim whatever the estimate (a worker process)
};

// Who writes what decides where it lives: the host half and the worker half
// each start a 128-byte block of their own (alignas), so the host's
// per-call writes (in-flight counts, staging, reaping) never share a cache
// line (or an adjacent-line prefetch pair) with the worker's.
struct Lane {
	// Set at creation, read-only afterwards (both sides).
	Pool *pool;
	uint32_t index;
	bool is_inline;
	bool started; // the thread was started (host: create/destroy only)
	int32_t cpu;  // the one CPU the worker is pinned to, -1 = none (set before start)
	// The calls its worker never started run again after the worker's
	// death (a worker process): on the lanes topology, whose successor
	// takes the lane over, the host records the call each request slot
	// carries and keeps each argument's copy until its frame is back
	// (lane_stage), and the worker marks each frame in the started mask
	// (kLaneExtOffStarted) before it runs it (src/worker.cpp); stealing,
	// the host keeps each argument's copy (steal_stage) and the worker
	// stores the call it is about to run in its started word
	// (kLaneExtOffStealStarted).
	bool rerun;
	pthread_t thread;
	// Shared words (worker lanes).
	uint8_t *block;
	uint32_t *wake_seq;
	uint32_t *parked; // ParkState (src/wake.h)
	uint32_t *stop;
	// lane extension in the pool header (an isolated process pool: the lane's tail)
	uint8_t *ext;
	uint8_t *line;            // the lane's synchronous call line (src/syncline.h)
	uint8_t *line_spill_area; // process pools: the line's spill slot, else nullptr
	// Process pools with ring pages (Pool::rings, src/wake.h): this
	// worker's own doorbell words, in a page only it and the host map
	// (host: set at creation, read-only afterwards; nullptr otherwise).
	uint32_t *ring_armed; // ArmState, the worker's D2/D3 word
	uint32_t *ring_seq;   // its ring sequence (futex word, D3/D4)
	int ring_fd;          // host: the page's memfd, handed to each worker spawned on the lane
	uint64_t *peer_wakes; // the count of wakes worker processes sent it (kWcPeerWakes in
			      // its extension; a steal pool's: the control block's PEERW)
	WorkerLocal *local; // the worker's run queue and pending results

	// ---- host half (dispatcher holder only, unless noted) ----
	alignas(128) LockProducer req;
	LockConsumer ret;
	uint32_t inflight;         // placed and not reaped (relaxed-readable for stats)
	uint32_t ret_seen;         // ret.retired_mirror() after the last reap (atomic:
				   // sleeping hosts compare it with the return lock's A)
	uint32_t full_b;           // req's B when the backlog's placing last stopped at
				   // every lane full (dispatcher-owned; dispatch.cpp)
	uint32_t staged;           // frames staged in req, not flushed yet
	uint32_t state;            // LaneState (written by the holder, relaxed-readable)
	Call *inl_head, *inl_tail; // inline FIFO (inline lane)
	Call *pin_head[kClasses], *pin_tail[kClasses]; // pinned calls waiting for this lane,
						       // per priority class, each in order
	uint64_t wakes_sent;                           // atomic add, any host thread
	int64_t req_idle_ns; // since when nothing was in flight (0 = busy;
			     // dispatcher-owned, src/trim.cpp)
	// The line (src/syncline.h): any host thread, by claim.
	uint32_t line_state;       // LineState (CAS, S1 / S6 / S8)
	int32_t line_lost_status;  // the status a call on a LOST line ends with
				   // (written before S10's CAS publishes LOST)
	DeathNote line_lost_death; // why its worker died (as line_lost_status)
	uint32_t line_lost_taken;  // the request the lost worker took last (its
				   // lane extension's word, read by S10 before
				   // its CAS publishes LOST_OPEN; S12)
	uint64_t line_seq;         // requests published (claim holder; stats: relaxed)
	uint64_t line_done;        // line calls completed (claim holder; stats: relaxed)
	uint64_t line_resent;      // line calls sent again as ticketed calls (S12; claim
				   // holder; stats: relaxed)
	uint32_t line_nonce;       // process pools: the open word given to the lane's
				   // last respawned worker (recovery only, relaxed)
	uint32_t line_token;       // the reopen token: that open word while a reopen
				   // for it is due, else 0 (xchg only: S10, S11)
	// With `rerun`: the call each request-lock slot carries (record index,
	// generation, place order), written by lane_stage (dispatcher-owned),
	// so that after the worker's death the calls it never started can be
	// placed again in order (lane_lost). req_known: slots staged since the
	// lane was (re)attached.
	uint32_t req_known;
	uint32_t req_ticket[kLanes];
	uint32_t req_gen[kLanes];
	uint64_t req_order[kLanes];
	uint64_t req_seq;
	// Calls its worker served since the lane was (re)attached: frames of
	// its own reaped (the holder) and line calls answered (a line's claim
	// holder): relaxed fetch-adds; stats read it relaxed (lane_served).
	uint64_t served;
	uint32_t retire_told; // recycle_calls reached and told to the kind (xchg)

	// ---- worker half (the lane's thread only) ----
	alignas(128) uint32_t tid; // kernel thread id: stored by the worker at start
				   // (relaxed), read by the host only as the
				   // host_ring probe's argument
	LockConsumer wreq;
	StealConsumer sc; // steal topology: this worker's claim endpoint
	LockProducer wret;
	// The line (src/syncline.h), worker side.
	uint32_t line_served;    // requests served
	uint32_t line_fault;     // the last out-of-sequence request word counted
	uint32_t line_wait;      // 0: serving; else the open word this respawned
				 // worker waits for before it serves (S11)
	uint8_t *line_spill;     // a result too big for the reply block (handed
	uint64_t line_spill_len; // over by rp_seq; the claim holder clears it)

	// ---- the worker's busy hint, on a block of its own: the worker
	// stores it when it changes (per batch), host threads read it when
	// they choose a line (src/syncline.h) ----
	alignas(128) uint32_t busy; // 1 while the worker runs ticketed calls (relaxed)
};

// ---- state --------------------------------------------------------------------------

// Lane l's state (any host thread: relaxed, a hint; exact for the holder).
inline LaneState lane_state(const Lane *l)
{
	return static_cast<LaneState>(knit_load_relaxed_32(const_cast<uint32_t *>(&l->state)));
}
// Move lane l to state s (dispatcher holder; the monitor of a process pool
// holds the dispatcher too), keeping Pool::lanes_distrusted, the count
// sleeping hosts look at before they look for a distrusted lane, true.
inline void lane_set_state(Pool *p, Lane *l, LaneState s)
{
	const LaneState was = static_cast<LaneState>(l->state);
	// A RETIRED lane never comes back; DISTRUSTED only retires (a thread);
	// DOWN only comes back LIVE (a process); RETIRING only from LIVE.
	KNIT_DCHECK(was != kLaneRetired || s == kLaneRetired);
	KNIT_DCHECK(was != kLaneDistrusted || s == kLaneDistrusted || s == kLaneRetired);
	KNIT_DCHECK(was != kLaneDown || s == kLaneDown || s == kLaneLive);
	KNIT_DCHECK(s != kLaneRetiring || was == kLaneLive || was == kLaneRetiring);
	if (was == s)
		return;
	if (was == kLaneDistrusted || s == kLaneDistrusted)
		knit_store_relaxed_32(&p->lanes_distrusted,
				      p->lanes_distrusted +
					      (s == kLaneDistrusted ? 1u : (uint32_t)-1));
	// Relaxed: read by sleeping hosts and line claims only to skip the lane.
	knit_store_relaxed_32(&l->state, s);
}

// ---- the running stamp ------------------------------------------------------------------

// What lane l's worker runs now, by its running stamp in the lane's
// extension (a seqlock the worker writes before and after each task,
// src/worker.cpp): ticket index, generation, start time (the worker's
// words: compare, never compute with them).
struct LaneStamp {
	uint32_t ticket, gen;
	int64_t start;
};
// Read lane l's running stamp (any host thread). False when nothing runs or
// the worker was rewriting it.
inline bool lane_read_stamp(Lane *l, LaneStamp *s)
{
	uint32_t *w = reinterpret_cast<uint32_t *>(l->ext);
	uint64_t *start = reinterpret_cast<uint64_t *>(l->ext + 16);
	// Acquire: pairs with the worker's release store of the even sequence
	// in stamp_write(): the fields below are at least that new.
	uint32_t s1 = knit_load_acquire_32(&w[0]);
	if (s1 & 1)
		return false;
	s->ticket = knit_load_relaxed_32(&w[1]);
	s->gen = knit_load_relaxed_32(&w[2]);
	s->start = (int64_t)knit_load_relaxed_64(start);
	// Acquire fence: pairs with the worker's release fence after its odd
	// sequence store; if the fields were being rewritten, s2 differs.
	knit_fence_acquire();
	uint32_t s2 = knit_load_relaxed_32(&w[0]);
	return s1 == s2 && s->start != 0;
}

// ---- attach -------------------------------------------------------------------------

// Attach lane l to its lane block at `block`: the host's endpoints of both
// locks and the worker's, over words that are zero (a fresh region, or
// lane_lost's reset), and the lane's host-side counts from zero. The first
// attach (l->local still nullptr) also commits the first
// payload_initial_bytes of each arena and allocates the worker's run
// queue. 0 or -KNIT_ENOMEM (first attach only). Dispatcher holder, or
// knit_pool_create before any worker runs.
int lane_attach(Pool *p, Lane *l, uint8_t *block);
// Attach the host's producer and every worker's consumer to the steal area
// at `area` (a steal pool, at create). 0 or -KNIT_ESYSTEM.
int lanes_attach_steal(Pool *p, uint8_t *area);

// ---- the mechanism on one lane --------------------------------------------------------

// The request frame that tells a worker to run c.
inline FrameHead frame_of(const Call *c)
{
	FrameHead h;
	memset(&h, 0, sizeof h);
	h.task = c->task;
	h.flags = c->abort_bit >= 0 ? (uint32_t)c->abort_bit + 1 : 0;
	h.ticket = c->index;
	h.generation = c->gen;
	h.status = 0;
	h.deadline_ns = (uint64_t)c->deadline_ns;
	return h;
}

// c's argument bytes are in shared memory now (or c is done with them):
// the host copy is no longer needed.
inline void drop_arg_copy(Call *c)
{
	if (c->arg_buf != nullptr) // a scalar argument has none: no call into libc
		free(c->arg_buf);
	c->arg_buf = nullptr;
	c->arg.data = nullptr;
}

// Put c into lane l (dispatcher holder). 0, -KNIT_EAGAIN (no room now, or
// the lane is not LIVE) or another negative code (the call can never be
// published). Always inline: it is every placed call's, and a call to it
// cost as much as its checks.
[[gnu::always_inline]] inline int lane_stage(Pool *p, Lane *l, Call *c)
{
	if (l->inflight >= kLaneInflightMax || l->state != kLaneLive)
		return -KNIT_EAGAIN;
	if (l->is_inline) {
		c->next = nullptr;
		if (l->inl_tail)
			l->inl_tail->next = c;
		else
			l->inl_head = c;
		l->inl_tail = c;
		l->inflight++;
		c->lane = l->index;
		KNIT_TRACE_TASK_ENQUEUE(p, l->index, ticket_of(c));
		knit_add_relaxed_32(&p->inline_queued, 1);
		return 0;
	}
	int rc = l->req.stage(frame_of(c), c->arg);
	if (rc < 0)
		return rc;
	l->inflight++;
	l->staged++;
	c->lane = l->index;
	KNIT_TRACE_TASK_ENQUEUE(p, l->index, ticket_of(c));
	if (l->rerun) {
		// Its worker may die before it starts the call: then it is
		// placed again (lane_lost), from this record and this copy of the
		// argument, never from shared memory. The copy goes when the
		// frame comes back (lane_reap) or with the record: at most
		// kLaneInflightMax per lane.
		const uint32_t slot = (uint32_t)rc;
		l->req_known |= 1u << slot;
		l->req_ticket[slot] = c->index;
		l->req_gen[slot] = c->gen;
		l->req_order[slot] = ++l->req_seq;
		return 0;
	}
	drop_arg_copy(c);
	return 0;
}

// Publish lane l's staged frames (one release store of A: P1 in lock2.h;
// dispatcher holder). Its parked worker is looked for after the fence the
// release of the dispatcher needs anyway (Pool::wake_lanes, W1).
inline void lane_flush(Pool *p, Lane *l)
{
	l->req.flush();
	l->staged = 0;
	p->wake_lanes |= 1ull << l->index;
}

// Reap lane l's return lock (dispatcher holder): every published result
// completes its call (validated: a frame the lane's worker could not have
// written honestly completes nothing of another lane's and distrusts the
// lane, lane_distrust). Returns the completions produced; the caller rings
// host waiters for them (host_event). A RETIRED lane's words are not read.
uint32_t lane_reap(Pool *p, Lane *l);

// Worker w wrote something it could not have written honestly (a bad
// frame, a stamp or a claim toggle naming a call it does not hold): stop
// trusting it (dispatcher holder). Nothing is placed on its lane from now
// on; its kind ends it (WorkerOps::distrust): a worker thread is asked to
// stop and, once it acknowledged, the pass retires its lane (lane_lost,
// -KNIT_EPROTO); a worker process, which may never acknowledge (its stop
// word is memory it can scribble), is killed, and its monitor's lane_lost
// fails the lane's calls with -KNIT_EPROTO. Calls other workers hold are
// never touched by what w wrote. Idempotent.
void lane_distrust(Pool *p, uint32_t w);

// knit_stop: wait until worker w acknowledged the stop it was asked for
// (or its lane retired), at most until deadline (absolute, < 0 = none).
// False on timeout. An acknowledged worker has left its loop for good:
// the steal survivors are told (steal_worker_gone).
bool lane_stop_wait(Pool *p, uint32_t w, int64_t deadline);
// ---- recycling ------------------------------------------------------------------------------

// Lane l's worker reached recycle_calls: tell the kind, once per worker.
void lane_served_mark(Pool *p, Lane *l);

// Lane l's worker served n more calls (the holder's reap, or a line call's
// claim holder): count them and, once the count reaches recycle_calls, tell
// the kind once (WorkerOps::retire_due). A compare on every call, a call to
// the kind once per worker.
inline void lane_served(Pool *p, Lane *l, uint64_t n)
{
	const uint64_t was = knit_fetch_add_relaxed_64(&l->served, n);
	const uint64_t mark = p->cfg.recycle_calls;
	if (mark != 0 && was + n >= mark)
		lane_served_mark(p, l);
}

// Retire lane w for a recycle (dispatcher holder; its successor is
// ready): nothing is placed on it from now on, and its stop word goes
// RUNNING -> RETIRE. False (nothing changed) when the lane is not LIVE or
// its stop word not RUNNING (the pool is stopping, or the worker is being
// killed). On true the caller wakes the worker (a seq_cst fence, W1, then
// lane_wake: src/wake.h).
bool lane_retire(Pool *p, uint32_t w);

// ---- the loss of a lane's worker ----------------------------------------------------------

// What becomes of a lane whose worker is gone (lane_lost).
enum LaneFate : uint32_t {
	kLaneRetire = 0,  // gone for good (a worker thread, or an injected death):
			  // the lane is RETIRED; with the last worker of a steal
			  // pool gone, the calls nobody claimed fail too
	kLaneRespawn = 1, // a new worker takes the lane over (a worker process):
			  // the calls it never started come back in again[], the
			  // lane's words are reset and re-attached, its stop word
			  // RUNNING (REQUESTED when the workers are stopping)
	kLaneStopped = 2, // no worker comes (a worker process while the pool ends):
			  // the words are reset and re-attached, its stop is
			  // acknowledged on its behalf; every call it held fails
	// as kLaneRespawn, but the new worker comes later (a worker process
	// backing off, src/proc.h "restarts"): the lane stays DOWN, so nothing
	// is placed on it (the calls in again[] go to the other lanes) until
	// lane_revive, just before its successor is spawned
	kLaneRespawnLater = 3,
};

// Stealing, worker processes: a call is sent again after the death of the
// worker counted as its claimant (lane_lost, steal_unstarted_calls in
// lane.cpp) while its count (Call::resends) stays within kStealResendMax:
// kStealResendSole a sending when it was all its worker held (at most 4
// such: a call that kills its worker and hides it costs at most 5 workers,
// the default respawn_max), 1 when its worker's ACK word claimed several
// calls (a forgery's, at most 64 in all). Past that it fails with the
// loss's status. The count is carried in the frames (kFrameAttemptMask).
inline constexpr uint16_t kStealResendSole = 16;
inline constexpr uint16_t kStealResendMax = 64;

struct LaneLoss {
	int32_t status; // what the calls it started end with (-KNIT_ECRASHED,
			// -KNIT_EPROTO for a worker distrusted for a bad frame)
	LaneFate fate;
	// Called between the reaps (steps 1 and 2 below) and anything that
	// fails, may change status and fate: a process pool's monitor reads
	// there the reason of the kill, which a bad frame in the last reap may
	// have just asked for. nullptr: none.
	void (*settle)(Pool *p, uint32_t w, LaneLoss *loss);
	void *arg; // settle's
	// Out, kLaneRespawn(Later) on a lane with `rerun`: the calls the worker never
	// started, in the order they were placed (stealing: the last kLanes
	// or fewer of them, in no order; lane_lost put the others back
	// already), each off the lane (lane = kNoLane) and still holding
	// kHoldHostQueue. The caller puts them back ahead of the backlog
	// (dispatch_backlog_requeue).
	Call *again[kLanes];
	uint32_t nagain;
	// Set by settle: why the worker died; the calls it held that fail
	// carry it in their infos (src/info.h). Zero: nothing to tell.
	DeathNote death = {};
};

// Worker w is gone and will never write shared memory again (a worker
// thread that acknowledged its stop, a reaped process, a white-box test's
// injected death): the one path that ends the lane's calls after the loss
// of its worker (dispatcher holder). In order (tests/model/lanes_death.pml):
//  1. reap what it published (those calls complete normally);
//  2. steal pool: retire the lanes it had claimed and not acknowledged on
//     its behalf (steal_reap_dead: validated, a bad record only counted as a
//     protocol error), mark it dead, attribute its last claims;
//     then loss->settle, if any;
//  3. its line (src/syncline.h S10): a knit_call on it ends with the
//     status, the line reopened for a respawned worker (S11);
//  4. kLaneRespawn(Later) on a `rerun` lane: the calls it never started into
//     loss->again (see unstarted_calls in lane.cpp for why a lie in its
//     words can never complete a call twice);
//  5. every other call it held completes with loss->status, exactly once
//     (calls_fail_lane_locked);
//  6. kLaneRetire: the lane is RETIRED. Otherwise its words go back to zero,
//     the host's endpoints are re-attached (lane_attach), the lane is LIVE
//     again (DOWN for kLaneRespawnLater) and its stop word RUNNING
//     (kLaneRespawn, kLaneRespawnLater) or ACKNOWLEDGED (kLaneStopped),
//     woken.
// Returns the completions produced; the caller rings host waiters for them
// (host_event). A RETIRED lane: nothing (idempotent).
uint32_t lane_lost(Pool *p, uint32_t w, LaneLoss *loss);

// Lane w, left DOWN by lane_lost(kLaneRespawnLater), takes calls again: its
// successor is about to be spawned (dispatcher holder). Its words were reset
// by lane_lost; a call placed from now on waits in its request lock for the
// new worker.
void lane_revive(Pool *p, uint32_t w);
// Lane w, left DOWN by lane_lost(kLaneRespawnLater), gets no successor (the
// pool stops or failed while it waited): its stop is acknowledged on its
// behalf (knit_stop waits for nobody there). It holds no call: lane_lost
// gave back or failed them all, and nothing is placed on a DOWN lane.
void lane_abandon(Pool *p, uint32_t w);

// ---- the steal topology's claims (src/steal.h) ---------------------------------------------

// Attribute every claim made since the last look (dispatcher holder, mu
// NOT held). A worker's ACK toggle of an unclaimed lane makes that worker
// the claimant of the lane's call (Call::lane = the worker), so a result or
// a running stamp counts only from the worker that claimed the call. Any
// other toggle goes to steal_judge.
void steal_track(Pool *p);
// Judge the toggles the host did not accept (steal_track; holder, mu NOT
// held). Every worker writes only its own ACK word, but an honest worker
// misled by a peer's forged toggle (a lane that looked pending again)
// retires that lane too, and nothing in the words tells the forgery from
// the misled claim: so the judge blames nobody. Toggles of one lane by two
// workers cancel out; a toggle of a publication another worker's claim
// retired already cancels out with that claim (the lane reads pending
// again; the call stays with the claim the host saw first); any other
// toggle touches no call and is taken as it is; three or more wait for the
// next look.
void steal_judge(Pool *p);
// A submit lane is reused while its previous call was never claimed
// (holder): its retirement shows in no worker's ACK word (toggles that
// cancelled out), so that call can no longer be served from it. In a
// worker process pool (Lane::rerun) it is returned, off the lane and
// still held, to be sent again (at most kStealResendMax times); otherwise
// (or past that) it completes -KNIT_EPROTO now and nullptr is returned.
Call *steal_orphan(Pool *p, uint32_t lane);
// Published lanes whose call has no claim yet but that read retired in the
// ACK words (steal_track, worker processes: lies left the parity wrong, so
// no worker sees the call): each call is taken off its lane and queued in
// StealHost::orphans, which the next backlog flush sends again
// (steal_orphan's rules; holder).
void steal_rescue(Pool *p, uint32_t lanes);
// Steal topology, holder: worker w is dead and will never write again
// (lane_lost step 2): reset its ACK word so that the XOR of every ACK is
// the retired set the host believes (undoing what it forged), retire the
// lanes it had claimed and not acknowledged on its behalf
// (steal_reap_dead), give back their arena slots, mark it dead, and
// attribute its last claims (its calls then name it: Call::lane
// == w). No-op on a lanes pool. Once per death.
void lane_steal_reap(Pool *p, uint32_t w);
// Steal topology: worker i will never run again (acknowledged stop, failed
// to start): survivors may ignore its WANT (steal.h, dead consumers).
void steal_worker_gone(Pool *p, uint32_t i);

} // namespace knit::detail

#endif
