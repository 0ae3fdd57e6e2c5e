// SPDX-License-Identifier: MIT
// src/syncline.h - the synchronous call line of a worker lane: the room of
// the knit_call fast path (protocol, words, pairing table, lifecycle),
// proved by tests/model/syncline.pml (tests/model/README.md has the
// hazards its runs and mutants cover). Implemented in src/syncline.cpp.
//
// A knit_call that has nothing to track (no deadline, no abort bit) needs
// none of the ticket table, the mutex, the backlog, the dispatcher pass or
// the completion queue. A line is one request slot and one reply slot per
// worker lane that the caller fills, publishes with one release store, and
// waits on, like an SPSC ping-pong; the worker looks at it once per loop
// pass (between batches: a sync call waits at most one batch) and in its
// park re-check.
//
// Eligibility (decided by the caller before it claims a line; any "no" takes
// the ticketed path, which stays the complete implementation of knit_call):
//  - no hard timeout (the running stamp and the forced stop are the
//    dispatcher's); thread or process workers (a process worker serves its
//    line from its own mapping of the region; see "Process workers");
//  - no inline lane (with one, where a call runs is the balancer's choice);
//  - no per-call timing (KNIT_POOL_INFO_TIMING: a timed call's note and
//    info are the ticketed path's, src/info.h);
//  - no deadline to track (timeout_ns <= 0, the task's timeout_ms == 0) and
//    the task not abortable;
//  - the argument is valid and its payload fits the request slot inline
//    (kLinePayload);
//  - some worker lane's line is IDLE and the CAS that claims it wins. The
//    caller tries lanes from a relaxed rotating cursor, idle workers first
//    (Lane::busy == 0, the worker's hint), and never waits for a line: none
//    IDLE, the pool closed, or a lost CAS on every lane falls back without
//    touching line_outstanding.
//
// Words (per worker lane; the line's region area: line_area_off() after
// the lane extensions, kLineBytes per worker lane):
//
//  region (shared; nothing read from it is trusted)
//  offset  size  name          writer              reader / pairs with
//  ------  ----  ------------  ------------------  -------------------------------------
//       0   128  request block claim holder        worker: acquire load of rq_seq (S3)
//                 +0  u32 rq_seq   release store (S2), after the fields below
//                 +4  u32 task     +8  u32 lane (echo check)  +12 u32 value type
//                 +16 u64 scalar / payload length  +24 i32 error code (ERROR)
//                 +28 u32 rq_open  the open word: host only, S11 (a
//                                  respawned worker serves once it
//                                  equals its boot nonce)
//                 +32 kLinePayload payload bytes (bytes, string + NUL, error text)
//     128   128  reply block   worker              claim holder: acquire load of rp_seq (S6)
//                 +0  u32 rp_seq   release store (S5), after the fields below
//                 +4  u32 lane     +8  i32 status  +12 u32 value type
//                 +16 u64 scalar / payload length  +24 u32 where (0 inline, 1 spill)
//                 +28 i32 error code (ERROR)
//                 +32 kLinePayload payload bytes
//  Lane (process-private; `line` points at the lane's line in the region)
//    host half: line_state  LineState, CAS by any host thread (S1, S6, S8)
//               line_seq    requests published (u64; its low 32 bits are the
//                           sequence), claim holder only (never read back
//                           from the region); also the lane's count of line
//                           calls enqueued (stats, relaxed)
//               line_done   line calls completed (stats, relaxed), claim
//                           holder only
//    busy (own block): the worker's hint, 1 while it runs ticketed calls
//               (relaxed; worker stores, callers read in S1)
//    worker half: line_served  requests served (worker only)
//                 line_fault   the last out-of-sequence rq_seq counted (worker)
//                 line_spill   malloc'd result bytes too big for the reply
//                              block, with their length; handed over by the
//                              release store of rp_seq, taken (freed or owned)
//                              by the claim holder after S6, which clears it;
//                              a spill nobody took (its call was cancelled
//                              first) is freed by knit_pool_destroy after the
//                              workers are joined (line_free)
//
// Protocol (a request is sequence s = line_seq + 1; the worker serves
// exactly line_served + 1):
//  S1 admit and claim: add(line_outstanding, 1) (Pool::line_outstanding:
//     line calls' own count, an atomic read-modify-write, so the ticketed
//     path's outstanding stays written under mu; whoever waits for "no call
//     outstanding" reads both, none_outstanding() in runtime.h); CAS line_state
//     IDLE -> CLAIMED (acq_rel; lost: undo the count, fall back); a
//     seq_cst fence; then load closed: set -> line_state = IDLE, undo the
//     count (ring host waiters if it reached 0), return -KNIT_ECLOSED. The
//     claim comes BEFORE the closed load, so a knit_stop(CANCEL) either sees
//     the claim or the caller sees closed.
//  S2 write the request fields, then store_release(rq_seq, s); seq_cst fence;
//     load parked; lane_wake if parked (wake.h W1: the line is "work" for
//     the park re-check).
//  S3 worker, once per pass and in its park re-check (wake.h W2):
//     load_acquire rq_seq == line_served + 1 -> a request. Any other value
//     but line_served is a protocol fault: counted, not served.
//  S4 the worker validates the request like the codec validates a frame
//     (task < ntasks, lane == its own, codec_words_ok) and runs it (run_task
//     with no deadline, no abort bit, knit_ctx_alloc memory malloc'd: the
//     return arena stays the ticketed path's; kWcCalls counts it), or
//     replies -KNIT_EPROTO without running it.
//  S5 the worker writes the reply fields (a result that does not fit goes
//     to line_spill, or -KNIT_ETOOBIG beyond max_payload_bytes exactly as on
//     the ticketed path), store_release(rp_seq, s), line_served = s; then
//     worker_ring (wake.h D2/D3).
//  S6 the caller waits (the wait ladder of src/spin.h: a bounded spin, then
//     the doorbell sleep of wake.h D1/D4, or the backoff ladder) for
//     load_acquire(rp_seq) == s or line_state == CANCELLED. On the reply it
//     copies the fields out, validates them (rp_seq == s, lane == its lane,
//     status 0 / -KNIT_ETASK / -KNIT_ETOOBIG / -KNIT_ENOMEM, type known,
//     length within the slot or equal to the spill's), THEN releases the
//     line: CAS CLAIMED -> IDLE (acq_rel). Won: the call completes with the
//     reply (a bad one: -KNIT_EPROTO, st_proto_errors, and the line goes
//     RETIRED: its words cannot be trusted again). Lost (CANCELLED): the
//     reply is dropped (st_late_drops) and the call completes with
//     -KNIT_ECLOSED. Reading before releasing keeps the next claim holder's
//     request from overwriting this reply.
//  S7 completion: line_seq counted the call as enqueued at S2, line_done
//     (stored by the claim holder before its S6 CAS) counts it completed;
//     knit_pool_stats adds both into enqueued / completed and reports the
//     sum of line_done as sync_calls. line_outstanding -= 1; when it reached
//     0: seq_cst fence, load closed, and host_event if it is set (a
//     knit_stop(DRAIN) waits for it). The completion is handed out as
//     knit_call's: out->ticket = 0 marks "no ticket" (knit_cancel on it is
//     -KNIT_ENOTFOUND, as for any unknown ticket); payload results are
//     registered in the owned table (one mu pair).
//  S8 knit_stop(CANCEL) / knit_pool_destroy, after storing closed and the
//     fence of host_event: for each worker lane, CAS line_state CLAIMED ->
//     CANCELLED, then host_event (rings the caller asleep on the doorbell).
//     The caller completes with -KNIT_ECLOSED, as a running call cancelled
//     by cancel_all. A CANCELLED line is never claimed again; the worker may
//     serve it or acknowledge its stop first. knit_stop(DRAIN) needs
//     nothing new: none_outstanding() covers line calls, and the worker
//     serves a line request before it can see a stop requested after the
//     drain.
//  S10 the lane's worker is lost (lane_lost: retired for a
//     protocol error, or a process worker's death), by the dispatcher's
//     holder after it stored the lane's state RETIRED: line_state IDLE ->
//     RETIRED (nobody claims it again), or CLAIMED -> LOST (acq_rel, after
//     storing line_lost_status) and host_event; retried while a caller's
//     claim or release moves the state between the two, which ends because
//     S1 skips a retired lane. The caller's S6 sees LOST (wait) or loses its
//     release CAS to it, and completes with line_lost_status. The lost
//     worker may still serve the request later (a thread cannot be killed);
//     the reply lands in a slot nobody reads again, its spill is freed at
//     destroy. A process pool's recovery that respawns the worker
//     (lane_lost, reopen) goes to the reopenable states instead, in three steps:
//      (a) xchg(line_token, 0) (acq_rel): a reopen due for the dead
//          predecessor is void from now on;
//      (b) the step: wait out OPENING, then CAS IDLE or DOWN -> DOWN,
//          CLAIMED or LOST_OPEN -> LOST_OPEN (CLAIMED: after storing
//          line_lost_status, then host_event). From IDLE or CLAIMED the
//          token goes first (xchg(line_token, nonce), acq_rel: no reopen
//          can start before the CAS, only S10 makes DOWN / LOST_OPEN), so
//          the LOST_OPEN caller always finds it and the line is open again
//          when its knit_call returns;
//      (c) from DOWN or LOST_OPEN (an earlier loss not reopened yet):
//          xchg(line_token, nonce) (acq_rel) only now; nonce is the new
//          worker's open word (its boot record's line_nonce,
//          Lane::line_nonce). Then wait out OPENING; if DOWN: S11.
//     The caller of a LOST_OPEN line completes with line_lost_status as
//     for LOST (or is sent again, S12), then, on its way out (before its
//     S7 count drop): CAS LOST_OPEN -> DOWN (acq_rel), S11.
//  S11 reopen (process pools; any host thread: the recovery or that
//     caller): CAS DOWN -> OPENING (acq_rel; one party at a time), then
//     n = xchg(line_token, 0) (acq_rel). n == 0 (the recovery has not
//     stored the token yet, or it was taken): store_release(DOWN) and stop
//     (the recovery's (c) sees that DOWN and reopens). Else base = the
//     low 32 bits of line_seq; rq_seq = rp_seq = base; store_release
//     (rq_open, n); store_release(line_state, IDLE). The respawned worker,
//     at each S3 look: load_acquire(rq_open) == its nonce -> line_served =
//     rp_seq (the base), and it serves from then on; before that it serves
//     nothing and counts nothing. The line is reopened only from DOWN, one
//     reopen per loss (the token is taken by one exchange), never over a
//     RETIRED, CANCELLED or LOST line.
//  S12 re-send (process pools, a loss with a respawn): the worker stores
//     the sequence it takes in its lane extension (kLaneExtOffLineTaken,
//     relaxed) at S4, before the task runs. S10, from CLAIMED, copies that
//     word into Lane::line_lost_taken (the worker is reaped: its stores are
//     final; before lane_lost wipes the extension) before its CAS to
//     LOST_OPEN publishes it. The caller, after its CAS LOST_OPEN -> DOWN
//     (which reads from S10's), compares: taken != s means the dead worker
//     never began the call, and the new worker never serves it (S11's
//     base covers it), so line_call undoes its line count (line_done back,
//     line_resent + 1: stats count the call once) and returns kLineNo --
//     knit_call sends it again on the ticketed path, as lane_lost
//     places a dead worker's unstarted ticketed calls again. taken == s
//     (or a reply came): it began, and ends with line_lost_status. A lie
//     in the word can make a started call run again or an unstarted one
//     fail, as the started mask of the ticketed path can. LOST (no
//     respawn: the pool fails or stops) ends the call as before.
//
// Process workers: a worker process cannot hand over malloc'd memory, so a
// result too big for the reply block goes to the lane's spill slot in the
// region (line_spill_off, max_payload_bytes + 1 bytes per worker lane),
// written before S5's release store of rp_seq like the reply fields; the
// caller copies it out after S6 (and NUL-terminates its copy: the bytes may
// change under it) before its release CAS, as it reads the reply block.
// The worker's death is S10, from the monitor's recovery (lane_lost,
// src/proc.cpp) under the dispatcher, and the line is reopened for the
// respawned worker (S11).
//
// Exactly once: only the caller completes a line call (the canceller and
// the loss only flip the state), and the CAS of S6 against the CAS of S8 or
// S10 decides between the reply and -KNIT_ECLOSED / the loss's status. A
// call is on the line from S2 to S7.
//
// Fence pairing (every non-relaxed access of the line):
//
//  edge                                    this side                         pairs with
//  --------------------------------------  --------------------------------  -----------
//  S1 claim, then look at closed           add(line_outstanding); CAS        S8 (and stop's
//                                          line_state (acq_rel); seq_cst     closed store +
//                                          fence; load closed                host_event fence)
//  S2 request fields -> publish            store_release(rq_seq)             S3
//  S2' publish, then look for a park       seq_cst fence; load parked        W2 (wake.h)
//  S3 see the request                      load_acquire(rq_seq)              S2
//  S5 reply fields + spill -> publish      store_release(rp_seq)             S6
//  S5' publish, then look for an armed     worker_ring: seq_cst fence;       D1 (wake.h)
//      host                                load db_armed
//  S6 see the reply, read, then release    load_acquire(rp_seq); copy out;   S5; S8 (one
//                                          CAS line_state (acq_rel)          of the CASes wins)
//  S8 closed, then look at the lines       host_event's seq_cst fence; CAS   S1, S6
//                                          line_state CLAIMED -> CANCELLED
//  S9 next claim after a release           CAS IDLE -> CLAIMED (acq_rel)     S6's release CAS
//                                          (line_seq and the slot are the    (or S1's store
//                                          new holder's only after it)       of IDLE)
//  S7 line_outstanding reached 0, then     add(line_outstanding, -1);        stop's closed
//     look at closed                       seq_cst fence; load closed        store + fence
//  S10 process pools: void the token,      xchg line_token (acq_rel); CAS    S11's xchg;
//      step, give the token                state; xchg line_token (acq_rel); S11's stores
//                                          load_acquire state (wait OPENING) of the state
//  S10' LOST_OPEN caller's way out         CAS LOST_OPEN -> DOWN (acq_rel)   S11's CAS
//  S11 reopen                              CAS DOWN -> OPENING; xchg token;  S10, S10';
//                                          rq/rp_seq = base; store_release   the worker's
//                                          (rq_open); store_release(IDLE)    load_acquire
//                                                                            (rq_open); S1
//  S11' worker adopts the base             load_acquire(rq_open); rp_seq     S11
//  S12 taken -> the caller's decision      relaxed store (worker, dead and   S10's CAS to
//                                          reaped); S10 copies it before its LOST_OPEN; the
//                                          CAS; the caller's CAS LOST_OPEN   caller's CAS
//                                          -> DOWN reads it after            (acq_rel both)
//
// Callers: knit_call (api.cpp) tries line_call first; the worker loop
// (worker.cpp) ORs line_pending into its work check and serves the line
// between batches; knit_stop(CANCEL) and knit_pool_destroy run line_cancel_all
// beside cancel_all; pool.cpp plans the line area and adds line_stats.
#ifndef KNIT_SRC_SYNCLINE_H
#define KNIT_SRC_SYNCLINE_H

#include "src/common.h"

#include "knitting.h"
#include "src/layout.h"
#include "src/lane.h"
#include "src/runtime.h"
#include "src/trace.h"

namespace knit::detail {

// Line states (Lane::line_state, process-private).
enum LineState : uint32_t {
	kLineIdle = 0,      // free: any host thread may claim it
	kLineClaimed = 1,   // one caller's request is being written or served
	kLineCancelled = 2, // a stop cancelled the call on it; never claimed again
	kLineRetired = 3,   // a reply failed validation, or the lane's worker
			    // was lost while the line was idle; never claimed again
	kLineLost = 4,      // the lane's worker was lost during a call on it: the
			    // call ends with Lane::line_lost_status; never claimed again
	// Process pools whose worker dies and is respawned (S10/S11):
	kLineDown = 5,     // the worker died; nobody is on the line; the reopen
			   // token: whoever CASes it to OPENING reopens (S11)
	kLineLostOpen = 6, // as LOST (the call ends with line_lost_status), and
			   // its caller turns it DOWN on its way out (S11)
	kLineOpening = 7,  // the token's holder writes the new base and the open
			   // word, then stores IDLE
};

inline constexpr uint64_t kLineOffRequest = 0;
inline constexpr uint64_t kLineOffReply = kBlock;
inline constexpr uint64_t kLineBytes = 2 * kBlock;
inline constexpr uint64_t kLineHeadBytes = 32;
inline constexpr uint64_t kLinePayload = kBlock - kLineHeadBytes; // inline bytes per direction
static_assert(kLineHeadBytes + kLinePayload == kBlock, "a slot is one block");

// Word offsets inside a slot (see the table above).
inline constexpr uint64_t kLineOffSeq = 0;
inline constexpr uint64_t kLineOffTask = 4;   // request
inline constexpr uint64_t kLineOffLane = 4;   // reply (the request's is kLineOffRqLane)
inline constexpr uint64_t kLineOffRqLane = 8; // request
inline constexpr uint64_t kLineOffStatus = 8; // reply
inline constexpr uint64_t kLineOffType = 12;
inline constexpr uint64_t kLineOffScalar = 16;
inline constexpr uint64_t kLineOffWhere = 24;  // reply
inline constexpr uint64_t kLineOffRqCode = 24; // request
inline constexpr uint64_t kLineOffRqOpen = 28; // request: the open word (S11)
inline constexpr uint64_t kLineOffRpCode = 28; // reply
inline constexpr uint32_t kLineWhereInline = 0;
inline constexpr uint32_t kLineWhereSpill = 1;

// The line area of the region: after the lane extensions of `nlanes` lanes,
// kLineBytes per worker lane (pool.cpp plans it).
inline uint64_t line_area_off(uint32_t nlanes)
{
	return align_up(kPoolOffLaneExt + (uint64_t)nlanes * kLaneExtBytes, kBlock);
}

// Process pools: the lines' spill slots, after the abort words (pool.cpp
// plans them; a worker process finds them from its boot record).
inline uint64_t line_spill_off(uint64_t abort_off, uint32_t abort_words)
{
	return align_up(abort_off + (uint64_t)abort_words * 4, kBlock);
}
inline uint64_t line_spill_stride(const PoolConfig &cfg)
{
	return align_up(cfg.max_payload_bytes + 1, kBlock);
}

// The id the trace probes (src/trace.h) give a line call, which has no
// ticket: unique per lane and sequence, and never a ticket (its index part
// is one no record reaches, kTicketIndexMax + lane), so knit-trace pairs a
// line call's enqueue, start, done and complete like any call's. Its
// task_enqueue names the lane (steal topology: the pool-level pseudo-lane,
// as for every call of a steal pool).
static_assert(kTicketIndexMax == KNIT_TRACE_LINE_ID_BASE, "line ids: trace ABI (src/trace.h)");
inline uint64_t line_trace_id(uint32_t lane, uint32_t s)
{
	return ((uint64_t)s << 32) | (kTicketIndexMax + lane);
}

// knit_call's fast path: 0 with *out filled, -KNIT_ECLOSED (the pool closed
// after the claim: no call was made), or kLineNo: not eligible, or no line
// free, and nothing changed, or (S12) the line's worker died before it
// took the call, which is not counted on the line: take the ticketed path. The arguments were
// checked by the caller (pool, fork, task id); the value is checked here
// (a bad one is kLineNo, and the ticketed path reports it).
inline constexpr int kLineNo = 1;
int line_call(Pool *p, uint32_t task, const knit_value_t *arg, knit_completion_t *out,
	      int64_t timeout_ns);

// S3 (worker lane l's thread): is a request waiting on its line? Acquire:
// pairs with the caller's release store of rq_seq (S2).
bool line_adopt(Lane *l);
inline bool line_pending(Lane *l)
{
	if (l->line == nullptr)
		return false;
	// A respawned worker process serves only once the host reopened its
	// line for it (S11).
	if (__builtin_expect(l->line_wait != 0, 0) && !line_adopt(l))
		return false;
	return knit_load_acquire_32(reinterpret_cast<uint32_t *>(
		       l->line + kLineOffRequest + kLineOffSeq)) == l->line_served + 1;
}
// The worker's busy hint (worker lane l's thread): 1 while it runs ticketed
// calls, so a caller prefers the lines of idle workers (S1). Only a hint:
// relaxed, and stored only when it changes.
inline void line_busy(Lane *l, uint32_t busy)
{
	if (l->busy != busy)
		knit_store_relaxed_32(&l->busy, busy);
}
// S3-S5 (worker lane l's thread, once per loop pass): serve the line's
// request if one waits. True when it served one.
bool line_serve(Lane *l);

// S8 (knit_stop(CANCEL), after closed is stored and host_event fenced):
// cancel the call on every claimed line and ring its caller.
void line_cancel_all(Pool *p);
// S10: lane l's worker was lost (dispatcher holder, after storing
// the lane RETIRED, src/lane.h): a call on its line ends with `status`. reopen false: the
// line is never claimed again. reopen true (a process pool respawning the
// lane's worker, whose boot record carries `nonce`, != 0): the line goes
// DOWN or LOST_OPEN, and is reopened for the new worker (S11) by this
// call or by the lost call's caller on its way out. death: why the worker
// died (cause 0: nothing to tell), told in that call's info (src/info.h).
void line_lost(Pool *p, Lane *l, int32_t status, bool reopen, uint32_t nonce,
	       const DeathNote &death = DeathNote{});

// S11 (worker, line_pending / line_serve): has the host opened the line
// for us? Then adopt its base (line_served) and serve from now on.
// (Declared above line_pending.)

// Statistics (any thread, relaxed): line calls enqueued and completed.
void line_stats(Pool *p, uint64_t *enqueued, uint64_t *completed);

// knit_pool_destroy, after the workers are joined: free result spills that
// no caller took (their calls were cancelled first).
void line_free(Pool *p);

} // namespace knit::detail

#endif
