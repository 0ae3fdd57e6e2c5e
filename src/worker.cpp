// SPDX-License-Identifier: MIT
// src/worker.cpp - the worker loop of a thread lane (the task runner and
// the knit_ctx_* entries it shares with the inline lane and the line are
// src/task.h's).
//
// One pass of the loop (lane i's thread only):
//   0. stop word != RUNNING -> store ACKNOWLEDGED, wake the host, leave;
//      RETIRE (a recycled worker process) with results still waiting for
//      return-arena room: ship those first (park for room between tries),
//      taking nothing new; frames taken and not started stay unstarted
//      (the host places them again for the successor, src/lane.h);
//   1. take every published request frame (lock2 consumer) into a local FIFO
//      (the frames stay in the lock, un-retired, so the argument bytes need no
//      copy; the host never has more than 32 calls in flight per lane);
//   2. retry results that did not fit the return arena earlier (FIFO);
//   3. run at most kWorkerBatch tasks in order: a frame whose deadline has
//      passed is skipped (status -KNIT_ETIMEDOUT, never run); results are
//      staged and published with one store of A per batch (or earlier,
//      after every kResultFlushTasks tasks or when the batch runs past
//      kResultFlushNs, together with the retire of the frames that ran;
//      the clock is read after every second task for that), then the
//      doorbell is rung if the host armed it; when the host is streaming
//      (this pass's take found frames published during the last batch,
//      fewer than kGatherTakeMax), wait up to kGatherNs before the next
//      take (gather());
//   4. nothing to do: spin up to spin_us (clock read every 64 rounds; only
//      with one of the process's online-CPUs-minus-one spin slots), then
//      park with the no-lost-wake handshake of src/wake.h (worker_park: read
//      the wake sequence S, store parked, seq_cst fence, re-check the queue
//      and the stop word here, and only then futex-wait on S: untimed, unless
//      park_ms was given (a watchdog) or the return arena has pages to give
//      back after park_ms idle).
#include "src/common.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/dcheck.h"
#include "src/calls.h"
#include "src/info.h"
#include "src/lane.h"
#include "src/runtime.h"
#include "src/spin.h"
#include "src/syncline.h"
#include "src/task.h"
#include "src/tick.h"
#include "src/trace.h"
#include "src/wake.h"

namespace knit::detail {

namespace {

// Running stamp (the hard timeout; a process pool's KNIT_CANCEL_KILL, which
// kills a worker only while its stamp names the cancelled call): seqlock
// over {ticket, generation, start}; start is 1 when no hard timeout reads
// it (no clock read per call for that).
void stamp_write(uint8_t *ext, uint32_t ticket, uint32_t gen, int64_t start)
{
	uint32_t *w = reinterpret_cast<uint32_t *>(ext);
	uint64_t *st = reinterpret_cast<uint64_t *>(ext + 16);
	uint32_t seq = knit_load_relaxed_32(&w[0]) + 1; // odd: being written
	knit_store_relaxed_32(&w[0], seq);
	// Release fence: the odd sequence is ordered before the field stores;
	// pairs with the host's acquire fence in lane_read_stamp() before it reads
	// the sequence again.
	knit_fence_release();
	knit_store_relaxed_32(&w[1], ticket);
	knit_store_relaxed_32(&w[2], gen);
	knit_store_relaxed_64(st, (uint64_t)start);
	// Release: pairs with the host's acquire load of the sequence in
	// lane_read_stamp().
	knit_store_release_32(&w[0], seq + 1);
}

// The started mask (runtime.h, kLaneExtOffStarted): a process worker on the
// lanes topology sets a request slot's bit before it runs the slot's task
// and clears it after the slot's retire, so the host can tell, after this
// process died, which of the frames still in flight (A ^ B) were never
// started and may run again (src/lane.cpp lane_lost). Cleared after the
// retire, never before: a death in between leaves a retired slot marked
// (the host ignores it) or, at worst, a frame published into that slot
// since marked too -- it fails instead of running again, never runs twice.
// The host reads the mask only once this process is dead and reaped, when
// every store it executed is visible: program order is all that counts, so
// a relaxed store between compiler barriers (it cannot move across the
// task's run or the store of B; no CPU fence is needed; tests/model/
// lanes_death.pml has the orders that matter).
void started_set(Lane *l, uint32_t bits, bool on)
{
	uint32_t *w = reinterpret_cast<uint32_t *>(l->ext + kLaneExtOffStarted);
	const uint32_t v = knit_load_relaxed_32(w);
	knit_compiler_barrier();
	knit_store_relaxed_32(w, on ? v | bits : v & ~bits);
	knit_compiler_barrier();
}

// The steal started word (runtime.h, kLaneExtOffStealStarted): a process
// worker on the steal topology stores the call it is about to run there,
// and never clears it. It claims one call at a time and claims again only
// once every result is published (steal_take), so after its death the one
// call it claimed that it may have started, and whose result the host has
// not reaped, is the one this word names: every other call the host
// counts as its claim never ran here and is sent again (src/lane.cpp
// lane_lost). As the started mask: read by the host only once this
// process is dead and reaped, so program order is all that counts
// (compiler barriers: the store cannot move past the task's run).
void steal_started_set(Lane *l, uint32_t ticket, uint32_t gen)
{
	knit_compiler_barrier();
	knit_store_relaxed_64(reinterpret_cast<uint64_t *>(l->ext + kLaneExtOffStealStarted),
			      ticket_pack(gen, ticket));
	knit_compiler_barrier();
}

// Publish the staged results (one release store of A), then ring the host if
// it armed the doorbell (or asked for the eventfd).
void flush_results(Lane *l)
{
	if (l->wret.staged() == 0)
		return;
	l->wret.flush(); // P1: release store of A
	worker_ring(l);  // D2: the fence, then the doorbell and the fd
}

// Is there request work for this worker? Lanes topology: its request lock
// has pending frames. Steal: the submit lock has pending lanes AND the
// worker may claim (no results waiting for room). Either topology: a
// request on the lane's line (S3, src/syncline.h), so the idle spin and the
// park re-check (W2) see it too.
bool worker_request_pending(Lane *l)
{
	if (line_pending(l)) // S3: acquire load of rq_seq
		return true;
	if (!l->pool->steal.on)
		return l->wreq.pending() != 0; // C1: acquire load of A
	// A worker whose results wait for return-arena room may not claim.
	return l->local->pend_count == 0 && l->sc.pending() != 0;
}

// Steal topology: claim into the local run queue (only when it is empty and
// no result waits for room) the oldest calls of a region, as many as the
// worker's estimate allows (steal_take_size: one until its calls are timed
// as cheap), copying each frame's argument out so
// the lanes can be ACKed at once. Returns the frames taken (0: none).
uint32_t steal_take(Lane *l)
{
	Pool *p = l->pool;
	WorkerLocal *w = l->local;
	// Claim only with an empty run queue and every result written.
	if (w->held_count != 0 || w->pend_count != 0 || l->wret.staged() != 0)
		return 0;
	uint32_t n = 0;
	const uint64_t conflicts0 = l->sc.conflicts();
	l->sc.set_take_max(w->take_one ? 1 : steal_take_size(w->svc_ns, l->sc.region_lanes()));
	const uint32_t take =
		l->sc.claim([&](uint32_t lane, int rc, const FrameHead &h, const knit_value_t &v) {
			KNIT_DCHECK(rc != -KNIT_EINVAL); // "not offered": our own take offered it
			if (rc == -KNIT_EINVAL)
				return;
			HeldFrame &f = w->held[(w->held_head + w->held_count) % kLanes];
			f.slot = lane;
			f.rc = rc;
			f.head = h;
			f.buf = nullptr;
			memset(&f.view, 0, sizeof f.view);
			// The lane is ACKed at the end of the claim: the argument must not
			// point into it any more.
			if (rc == 0 && value_copy(v, &f.view, &f.buf) != 0)
				f.rc = -KNIT_ENOMEM;
			w->held_count++;
			n++;
		});
	if (l->sc.conflicts() != conflicts0)
		knit_store_relaxed_64(lane_counter(l->ext, kWcStealConflicts), l->sc.conflicts());
	if (take != 0) {
		knit_store_relaxed_64(lane_counter(l->ext, kWcStealClaims), l->sc.claims());
		// More pending than we took: hand it to a parked peer now rather
		// than after our batch (the host woke only one of us), when it
		// holds more work than we finish in a wake's time (spin.h). Not
		// in a process pool: a peer's parked and wake words are not ours
		// to write there (layout.h).
		const uint32_t left = p->steal_no_peer_wake ? 0 : l->sc.pending();
		if (left != 0 &&
		    steal_peer_wake_pays((uint32_t)__builtin_popcount(left), w->wake_svc_ns))
			steal_wake_one(p);
	} else if (l->sc.pending() != 0) {
		// Pending but not ours to take: a peer is mid-claim on it (or a
		// senior announced it). That lasts one straight-line claim; let
		// the peer run instead of spinning on it.
		sched_yield();
	}
	return n;
}

// Queue a result locally (return arena full). The value is copied.
// A timed task's words beside the frame staged in `lane` (before its flush).
void side_timing(Lane *l, int lane, const TimingWords *t)
{
	if (t != nullptr && lane >= 0)
		memcpy(l->wret.side((uint32_t)lane), t, sizeof *t);
}

void pend_push(Lane *l, FrameHead head, const knit_value_t &v, const TimingWords *t)
{
	WorkerLocal *w = l->local;
	PendingResult &r = w->pend[(w->pend_head + w->pend_count) % kLaneInflightMax];
	r.head = head;
	r.timed = t != nullptr;
	if (t != nullptr)
		r.timing = *t;
	if (value_copy(v, &r.value, &r.buf) != 0) {
		r.head.status = -KNIT_ENOMEM;
		memset(&r.value, 0, sizeof r.value);
		r.buf = nullptr;
	}
	w->pend_count++;
}

// Stage one result, or queue it when there is no room now.
// t: a timed task's words (nullptr: none).
void publish_result(Lane *l, FrameHead head, const knit_value_t &v, const TimingWords *t = nullptr)
{
	WorkerLocal *w = l->local;
	if (w->pend_count == 0) {
		int rc = l->wret.stage(head, v);
		if (rc >= 0) {
			side_timing(l, rc, t);
			return;
		}
		if (rc != -KNIT_EAGAIN) {
			// Never publishable as is (too big / malformed): ship the
			// status alone.
			head.status = rc == -KNIT_ETOOBIG ? -KNIT_ETOOBIG : -KNIT_EPROTO;
			rc = l->wret.stage(head, kValueNone);
			if (rc >= 0) {
				side_timing(l, rc, t);
				return;
			}
			pend_push(l, head, kValueNone, t);
			return;
		}
	}
	if (w->pend_count >= kLaneInflightMax) {
		// Cannot happen: the host keeps at most kLaneInflightMax calls in
		// flight per lane. Keep the newest status only.
		return;
	}
	pend_push(l, head, v, t);
}

// Retry queued results in order. True if any went out.
bool publish_pending(Lane *l)
{
	WorkerLocal *w = l->local;
	bool any = false;
	while (w->pend_count != 0) {
		PendingResult &r = w->pend[w->pend_head];
		int rc = l->wret.stage(r.head, r.value);
		if (rc == -KNIT_EAGAIN)
			break;
		if (rc < 0) {
			r.head.status = rc == -KNIT_ETOOBIG ? -KNIT_ETOOBIG : -KNIT_EPROTO;
			rc = l->wret.stage(r.head, kValueNone);
			if (rc == -KNIT_EAGAIN)
				break;
		}
		side_timing(l, rc, r.timed ? &r.timing : nullptr);
		free(r.buf);
		r.buf = nullptr;
		w->pend_head = (w->pend_head + 1) % kLaneInflightMax;
		w->pend_count--;
		any = true;
	}
	if (any)
		flush_results(l);
	return any;
}

// The result lies in the run's return-arena reservation (knit_ctx_alloc):
// publish it where it is. False when it does not (or no lane is free now):
// the caller copies as usual.
bool publish_in_place(Lane *l, knit_ctx *ctx, const FrameHead &head, const TaskOutcome &o,
		      const TimingWords *t)
{
	const knit_value_t &v = o.value;
	if (!ctx->res.live || !codec_has_bytes(v.type) || v.len == 0 || v.data == nullptr)
		return false;
	const uint8_t *d = static_cast<const uint8_t *>(v.data);
	if (d != ctx->res.data || v.len > ctx->res.capacity || l->local->pend_count != 0)
		return false;
	const int rc = l->wret.stage_reserved(head, v.type, v.code, (uint32_t)v.len, &ctx->res);
	side_timing(l, rc, t);
	return rc >= 0;
}

bool take_requests(Lane *l)
{
	if (l->pool->steal.on)
		return steal_take(l) != 0; // claim a region of the shared lock
	WorkerLocal *w = l->local;
	uint32_t snap = l->wreq.pending();
	if (snap == 0)
		return false;
	l->wreq.prefetch(snap);
	int slot;
	while (w->held_count < kLanes && (slot = l->wreq.next_lane(&snap)) >= 0) {
		HeldFrame &f = w->held[(w->held_head + w->held_count) % kLanes];
		f.slot = (uint32_t)slot;
		f.rc = l->wreq.decode((uint32_t)slot, &f.head, &f.view);
		KNIT_DCHECK(f.rc != -KNIT_EINVAL); // "not in flight": our own snapshot says it is
		if (f.rc == -KNIT_EINVAL)
			continue;
		w->held_count++;
	}
	return true;
}

void run_batch(Lane *l)
{
	Pool *p = l->pool;
	WorkerLocal *w = l->local;
	const bool hard = p->cfg.hard_timeout_ms != 0;
	const bool stamp = hard || p->cfg.processes; // KNIT_CANCEL_KILL reads it too
	const bool timed = p->cfg.timing;            // KNIT_POOL_INFO_TIMING (src/info.h)
	const bool cpu_time = p->cfg.cpu_time;       // KNIT_POOL_INFO_CPU
	const bool mark = l->rerun && !p->steal.on;  // the started mask (Lane::rerun)
	const bool smark = l->rerun && p->steal.on;  // the steal started word
	uint32_t retire = 0;
	// The early publish's clock: the start of the tasks whose results are
	// not yet published (read once per batch, only when more than one task
	// waits), and how many of them ran.
	int64_t group_t0 = w->held_count > 1 ? knit_now_ns() : 0;
	uint32_t group_n = 0;
	// Steal: time this batch for the per-call estimate (spin.h "claims and
	// wakes"): every batch of more than one call (its clock is read
	// anyway), else one in kSvcSampleEvery.
	const int64_t svc_t0 = !p->steal.on                             ? 0
			       : group_t0 != 0                          ? group_t0
			       : (++w->svc_tick % kSvcSampleEvery) == 0 ? knit_now_ns()
									: 0;
	uint32_t ran = 0;
	// A timed pool's boundary (src/info.h): one tick read per task, at its
	// end, which is the next task's start; the batch's first start is read
	// here. A task's run so counts the worker's handling of the previous
	// result and of its own frame (tens of ns).
	int64_t bound = timed ? tick_now() : 0;
	for (uint32_t n = 0; n < kWorkerBatch && w->held_count != 0; n++) {
		HeldFrame &f = w->held[w->held_head];
		FrameHead rh;
		memset(&rh, 0, sizeof rh);
		rh.task = f.head.task;
		rh.ticket = f.head.ticket;
		rh.generation = f.head.generation;
		rh.flags = f.head.flags & kFrameAttemptMask; // the sending it answers (stealing)
		rh.deadline_ns = f.head.deadline_ns;
		const uint32_t abort_id = f.head.flags & kReqFlagsMask;
		// A map chunk (many items): its outcomes go back at once when a
		// task follows (below), so the host unpacks them while the next
		// chunk runs.
		const bool chunk = f.head.task == p->ntasks;
		// The clock only for a deadline or the hard timeout.
		const int64_t now = hard || f.head.deadline_ns != 0 ? knit_now_ns() : 0;
		knit_ctx ctx;
		ctx_init(&ctx, p, l->index, abort_id ? (int32_t)(abort_id - 1) : -1,
			 (int64_t)f.head.deadline_ns, l);
		if (f.rc != 0 || (abort_id != 0 && abort_id - 1 >= p->cfg.abort_capacity) ||
		    (int64_t)f.head.deadline_ns < 0) {
			// A malformed request: answer so the host's count stays right
			// (a frame whose ids are bad is dropped there, counted).
			rh.status = -KNIT_EPROTO;
			publish_result(l, rh, kValueNone);
		} else if (f.head.deadline_ns != 0 && now >= (int64_t)f.head.deadline_ns) {
			rh.status = -KNIT_ETIMEDOUT; // expired before it ran: never run
			publish_result(l, rh, kValueNone);
		} else {
			if (mark)
				started_set(l, 1u << f.slot, true);
			if (smark)
				steal_started_set(l, f.head.ticket, f.head.generation);
			if (stamp)
				stamp_write(l->ext, f.head.ticket, f.head.generation,
					    now != 0 ? now : 1);
			TaskOutcome o;
			const uint64_t ticket = ticket_pack(f.head.generation, f.head.ticket);
			TimingWords tw;
			if (timed) {
				tw.ticket = f.head.ticket;
				tw.gen = f.head.generation;
				tw.start = bound;
				tw.cpu = cpu_time ? thread_cpu_ns() : 0;
			}
			KNIT_TRACE_TASK_START(p, l->index, ticket);
			run_task(p, &ctx, f.head.task, f.view, &o);
			KNIT_TRACE_TASK_DONE(p, l->index, ticket, o.status);
			if (timed) {
				tw.cpu = cpu_time ? thread_cpu_ns() - tw.cpu : -1;
				bound = tick_now();
				tw.end = bound;
				rh.deadline_ns = timing_pack(tw.start, tw.end); // no deadline
			}
			if (stamp)
				stamp_write(l->ext, 0, 0, 0);
			counter_bump(lane_counter(l->ext, kWcCalls));
			rh.status = o.status;
			const TimingWords *t = timed ? &tw : nullptr;
			if (!publish_in_place(l, &ctx, rh, o, t))
				publish_result(l, rh, o.value, t);
			l->wret.cancel(&ctx.res); // no-op once consumed
			ctx_free_allocs(&ctx);
		}
		if (f.buf != nullptr) { // steal: the argument copy (none with lanes)
			free(f.buf);
			f.buf = nullptr;
		}
		retire |= 1u << f.slot;
		w->held_head = (w->held_head + 1) % kLanes;
		w->held_count--;
		ran++;
		// A long batch publishes what it has so far once kResultFlushNs
		// passed since its unpublished tasks began. The clock is read after
		// every second task only (and only when another task follows: the
		// last one is flushed below anyway): a finished result waits for at
		// most one further task; for short tasks, which never reach
		// kResultFlushNs, a clock read costs as much as a task.
		// A batch of short tasks publishes after every kResultFlushTasks
		// tasks too (an even count: looked at where the clock is, so no
		// task pays for the look), with the same retire (C3) and publish
		// (P1 of the return lock) as the time's: the host, which reaps
		// when its lane is full, then finds results there and refills
		// the lane while the rest of the batch runs, instead of queueing
		// what it enqueues meanwhile in its backlog.
		group_n++;
		if (l->wret.staged() != 0 && w->held_count != 0 && n + 1 < kWorkerBatch &&
		    (chunk || (group_n & 1) == 0)) {
			const int64_t t = knit_now_ns();
			if (chunk || group_n >= kResultFlushTasks ||
			    (group_t0 != 0 && t - group_t0 >= kResultFlushNs)) {
				// The frames of the tasks that ran go back with their
				// results: the host can refill the lane while the rest
				// of a long batch runs, not after all of it.
				l->wreq.retire(retire); // C3: release store of B
				if (mark)
					started_set(l, retire, false);
				retire = 0;
				flush_results(l);
				group_n = 0;
			}
			if (group_t0 == 0 || group_n == 0)
				group_t0 = t;
		}
	}
	l->wreq.retire(retire); // C3: one release store of B for the batch
	if (mark && retire != 0)
		started_set(l, retire, false);
	flush_results(l);
	if (svc_t0 != 0 && ran != 0) {
		const int64_t per_call = (knit_now_ns() - svc_t0) / ran;
		w->svc_ns = steal_svc_update(w->svc_ns, per_call);
		w->wake_svc_ns = steal_wake_svc_update(w->wake_svc_ns, w->svc_last_ns, per_call);
		w->svc_last_ns = per_call;
		// Relaxed: a hint for the host (steal_host_wake_pays).
		knit_store_relaxed_64(lane_counter(l->ext, kWcServiceNs), (uint64_t)w->wake_svc_ns);
	}
}

// A host that publishes request frames one at a time while this worker runs
// (a batch or a stream of knit_enqueue) pays for each publish the worker
// sees on its own: the worker's load of A takes the word's line into its
// cache, so the host's next store of A must take it back (a cross-CPU round
// trip, which the host then waits for in the fence its dispatcher release
// needs anyway). Once the host is seen streaming -- the take right after a
// batch found frames published while the batch ran -- let the next frames
// gather for up to kGatherNs before loading A again: one round trip then
// buys several frames. The wait looks at no word the host writes per
// frame; a stop request or a synchronous call on the lane's line ends it.
// Not for a round trip (the take after its batch finds nothing), nor under
// stealing (the submit lock's A is every worker's). kGatherNs is a few host
// enqueues' worth: several frames per load of A, short
// beside a batch's or a stream's run time. Nor when the take before the
// batch found kGatherTakeMax frames or more: the host then publishes faster
// than we run (or in bunches, from its backlog), the take after the batch
// finds frames without a wait, and a wait would only keep the lane full
// (the host, finding it full, queues what it enqueues in its backlog).
constexpr int64_t kGatherNs = 1000;
constexpr uint32_t kGatherTakeMax = 8;
void gather(Lane *l)
{
	const int64_t end = knit_now_ns() + kGatherNs;
	for (uint32_t i = 1;; i++) {
		knit_cpu_relax();
		if (knit_load_relaxed_32(l->stop) != kStopRunning ||
		    line_pending(l)) // S3: acquire load of rq_seq
			return;
		if ((i & 7) == 0 && knit_now_ns() >= end)
			return;
	}
}

// Idle spin: true when work (or a stop request) showed up.
bool spin(Lane *l, int64_t spin_ns)
{
	if (spin_ns <= 0)
		return false;
	// The clock every 64 rounds, the first time at round 64 (the window
	// starts there): a spin that finds work sooner, the usual case between
	// a busy host's bunches, reads none.
	int64_t end = 0;
	for (uint32_t i = 1;; i++) {
		if (worker_request_pending(l)) // C1 / steal S5: acquire load of A
			return true;
		if (knit_load_relaxed_32(l->stop) != kStopRunning)
			return true;
		// Results waiting for return-lock room go out as soon as the
		// host's reap gives room back (a look at B every few rounds,
		// publish_pending): until then a steal worker may not claim,
		// and the host waits for them.
		if ((i & 7) == 0 && l->local->pend_count != 0 && publish_pending(l))
			return true;
		knit_cpu_relax();
		if ((i & 63) == 0) {
			const int64_t t = knit_now_ns();
			if (end == 0)
				end = t + spin_ns;
			else if (t >= end)
				return false;
		}
	}
}

// Spin only with a slot (see spin_slot_acquire): more spinning threads than
// CPUs starve the host.
bool spin_capped(Lane *l, int64_t spin_ns, uint32_t cap)
{
	if (spin_ns <= 0 || !spin_slot_acquire(&g_spinners, cap))
		return false;
	const bool found = spin(l, spin_ns);
	spin_slot_release(&g_spinners);
	return found;
}

// The re-check after announcing a park (ParkRecheck, wake.h): work, a stop
// request, or results that went out now keep us awake.
bool park_recheck(Lane *l)
{
	return worker_request_pending(l) || knit_load_relaxed_32(l->stop) != kStopRunning ||
	       (l->local->pend_count != 0 && publish_pending(l));
}

void park(Lane *l, int64_t park_ns)
{
	// Results waiting for return-arena room: the host's reap, which gives
	// room back, wakes us even when it publishes nothing (lane_wake's
	// only_blocked), and steal_wake_one passes us over (we may not claim).
	const ParkState why = l->local->pend_count != 0 ? kParkedForRoom : kParked;
	// No watchdog unless asked for (park_ms): the handshake loses no wake.
	// A return arena holding pages above its floor still wants them given
	// back after park_ns idle, so only then a timed park; once trimmed, the
	// next park is untimed (an idle pool wakes no one).
	if (!l->pool->cfg.park_watchdog && !worker_arena_trimmable(l))
		park_ns = 0;
	if (worker_park(l, why, park_recheck, park_ns) == kWokeWatchdog)
		worker_arena_trim(l); // idle for park_ns: give the return arena back (trim.cpp)
}

// The re-check of a retiring worker parked for return-arena room: a stop
// that is no longer RETIRE (knit_stop made it REQUESTED), or results that
// went out now.
bool retire_recheck(Lane *l)
{
	return knit_load_relaxed_32(l->stop) != kStopRetire ||
	       (l->local->pend_count != 0 && publish_pending(l));
}

void acknowledge_stop(Lane *l)
{
	knit_store_relaxed_32(l->parked, kAwake);
	// Before the store: once the host sees ACKNOWLEDGED it may return and
	// the process exit.
	KNIT_TRACE_STOP_ACK(l->pool, l->index);
	// Release: pairs with the host's acquire load of the stop word in
	// knit_stop's acknowledgement wait.
	knit_store_release_32(l->stop, kStopAcknowledged);
	knit_futex_wake(l->stop, INT_MAX, l->pool->futex_shared);
	// A worker stopped alone (distrusted for a bad frame, lane_distrust)
	// leaves calls for the host's next pass to fail: wake a waiting host
	// (after the store: its re-check, work_pending(), sees it). The pool
	// outlives this: it is freed only after our thread is joined.
	host_event(l->pool, true);
}

} // namespace

void *worker_main(void *arg)
{
	Lane *l = static_cast<Lane *>(arg);
	Pool *p = l->pool;
	WorkerLocal *w = l->local;
	const int64_t spin_ns = (int64_t)p->cfg.spin_us * 1000;
	const int64_t park_ns = (int64_t)p->cfg.park_ms * 1000000;
	// The pool's first spin_cap_of_machine() workers spin, the rest park
	// at once (spin.h): the bound holds across a pool's worker processes,
	// each of which counts only its own spinners in g_spinners.
	const uint32_t spin_cap =
		spin_ns > 0 && l->index < spin_cap_of_machine() ? spin_cap_of_machine() : 0;
	knit_store_relaxed_32(&l->tid, (uint32_t)knit_sys_gettid());
	bool after_batch = false; // the last pass ran a batch (gather)
	for (;;) {
		// Acquire: pairs with the host's CAS RUNNING -> REQUESTED (or
		// RETIRE: src/proc.cpp, retire_begin).
		const uint32_t stop = knit_load_acquire_32(l->stop);
		if (stop == kStopRetire && w->pend_count != 0) {
			// Recycled: what it ran reaches the host before it leaves;
			// nothing new is taken (the host places nothing here now).
			if (!publish_pending(l))
				worker_park(l, kParkedForRoom, retire_recheck, 0);
			continue;
		}
		if (stop != kStopRunning) {
			acknowledge_stop(l);
			break;
		}
		bool progressed = take_requests(l);
		// Streaming: frames published while the last batch ran, but fewer
		// than kGatherTakeMax (gather()).
		const bool streaming =
			progressed && after_batch && !p->steal.on && w->held_count < kGatherTakeMax;
		after_batch = false;
		// The line between batches: a sync call waits for at most one.
		if (line_serve(l))
			progressed = true;
		if (w->pend_count != 0 && publish_pending(l))
			progressed = true;
		if (w->held_count != 0) {
			line_busy(l, 1); // callers prefer idle workers' lines
			run_batch(l);
			progressed = true;
			after_batch = true;
			if (streaming)
				gather(l);
		}
		if (progressed)
			continue;
		line_busy(l, 0);
		if (spin_capped(l, spin_ns, spin_cap)) {
			counter_bump(lane_counter(l->ext, kWcSpins));
			continue;
		}
		park(l, park_ns);
	}
	// Steal: argument copies of frames never run (stop with CANCEL).
	while (w->held_count != 0) {
		free(w->held[w->held_head].buf);
		w->held[w->held_head].buf = nullptr;
		w->held_head = (w->held_head + 1) % kLanes;
		w->held_count--;
	}
	// Results never shipped (stop with CANCEL): the host completed those
	// calls already; free our copies.
	while (w->pend_count != 0) {
		free(w->pend[w->pend_head].buf);
		w->pend[w->pend_head].buf = nullptr;
		w->pend_head = (w->pend_head + 1) % kLaneInflightMax;
		w->pend_count--;
	}
	return nullptr;
}

} // namespace knit::detail
