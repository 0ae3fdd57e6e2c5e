// SPDX-License-Identifier: MIT
// src/calls.h - the room for call records and their lifecycle: allocation,
// completion, holds, abort bits, the deadline heap's earliest deadline, and
// the hand-out of completions (with the registry of result bytes a
// completion owns until knit_completion_release). The record types
// themselves (Call, CallHold, CallFlag, TicketTable, DeadlineHeap) are pool
// types (src/runtime.h): Pool embeds the table and the heap. Implemented in
// src/calls.cpp; every *_locked function runs under the pool's mu.
//
// A record's life: call_alloc_locked (holds: enqueue + host queue + user) ->
// placed, run, reaped -> call_complete_locked (exactly once: cancel, stop,
// deadline, hard timeout and a worker's result race for it) -> handed out
// (hand_out_locked drops kHoldUser) -> the last call_unhold_locked recycles
// it. A call refused after allocation (backlog full) is undone with
// call_undo_locked instead: it was never reachable by anyone else.
#ifndef KNIT_SRC_CALLS_H
#define KNIT_SRC_CALLS_H

#include "src/common.h"

#include "knitting.h"
#include "src/codec.h"
#include "src/info.h"
#include "src/runtime.h"
#include "src/trace.h"

namespace knit::detail {

// A new record (under mu) holding kHoldHostQueue and kHoldUser, and
// kHoldEnqueue when `enqueue_hold`, and when `abortable` an abort bit; its
// ticket in *ticket: nullptr with *err = -KNIT_EAGAIN (no record or no
// abort bit free) or -KNIT_ENOMEM. The caller sets every one of the call's
// own fields (task, flags, pin_lane, deadline_ns, user_data, arg, arg_buf:
// the allocation leaves them as the record's last use left them) before
// mu is released.
// Inline: every enqueue's, and most calls want no abort bit.
Call *call_alloc_abort_locked(Pool *p, Call *c, int *err); // its abort bit, or c freed
inline Call *call_alloc_locked(Pool *p, bool abortable, bool enqueue_hold, uint64_t *ticket,
			       int *err)
{
	Call *c = p->tickets.alloc(ticket, err);
	if (c == nullptr)
		return nullptr;
	c->holds = (enqueue_hold ? (uint32_t)kHoldEnqueue : 0u) | kHoldHostQueue | kHoldUser;
	return abortable ? call_alloc_abort_locked(p, c, err) : c;
}
// Take back a call nobody else could reach (under mu): its abort bit, its
// argument copy, the record and its count in outstanding. Returns
// outstanding before the decrement.
uint64_t call_undo_locked(Pool *p, Call *c);

// Completions made one after another under one hold of mu (a reap of a
// lane): call_complete_locked() leaves their counts in cq_count and
// outstanding to complete_batch_end_locked(), which applies them once, and
// must run before mu is released.
struct CompleteBatch {
	uint32_t queued = 0; // added to cq_count
	uint64_t done = 0;   // taken out of outstanding
};

// Complete a call (under mu): status/result become its completion. Returns
// false (and does nothing) when it was already completed. Takes ownership of
// result_buf either way (frees it when dropped). With a batch, the counts
// wait for complete_batch_end_locked().
bool call_complete_locked(Pool *p, Call *c, int32_t status, const knit_value_t &result,
			  uint8_t *result_buf, CompleteBatch *batch = nullptr);
// Append a completed call to the completion queue (under mu).
inline void cq_append_locked(Pool *p, Call *c)
{
	c->cq_next = nullptr;
	if (p->cq_tail)
		p->cq_tail->cq_next = c;
	else
		p->cq_head = c;
	p->cq_tail = c;
}
// call_complete_locked() for a batch (a reap), inline: the common
// completion -- a queued call, live, not completed yet, no deadline in the
// heap, no abort bit -- is a few stores; any other goes to
// call_complete_locked(), which does the same and more.
inline bool call_complete_batch_locked(Pool *p, Call *c, int32_t status, const knit_value_t &result,
				       uint8_t *result_buf, CompleteBatch *batch)
{
	if (c->completed || !c->live || c->heap_pos != kNoHeap || c->abort_bit >= 0 ||
	    (c->flags & (kCallPrivate | kCallCarrier)))
		return call_complete_locked(p, c, status, result, result_buf, batch);
	KNIT_TRACE_TASK_COMPLETE(p, ticket_of(c), status);
	knit_store_relaxed_32(&c->completed, 1);
	c->status = status;
	c->result = result;
	c->result_buf = result_buf;
	cq_append_locked(p, c);
	// Counted by complete_batch_end_locked(), before mu is released.
	batch->queued++;
	batch->done++;
	return true;
}
// The value of a completion that carries none: a failure's (and a
// worker's result without a value).
constexpr knit_value_t kValueNone = {}; // internal linkage: no symbol leaves libknitting.a
// Complete c with `status` and no value (under mu), unless it completed
// already: a failure the host decided (cancel, stop, deadline, hard
// timeout, a call that can never be placed). Returns whether this made its
// completion.
inline bool call_fail_locked(Pool *p, Call *c, int32_t status)
{
	return call_complete_locked(p, c, status, kValueNone, nullptr);
}
// Fail every live call of the pool not completed yet with `status` (under
// mu): a stop's cancel, a failed pool. Returns the completions made.
uint32_t calls_fail_all_locked(Pool *p, int32_t status);
// Fail every call lane w's worker still holds (under mu): each call placed
// on lane w (Call::lane == w) with its frame not back, and with
// `unclaimed` also every call no worker has claimed from a steal pool's
// submit lock (Call::lane == kStealLane: the last worker is gone). Each
// one not completed yet completes with `status`, exactly once; each is
// taken off the lane (lane = kNoLane: no frame of the lane counts for it
// any more) and loses the host-queue hold its frame had (the frame never
// comes back). Returns the completions made. The one sweep of a lost
// lane (src/lane.cpp lane_lost).
// With a death (d not nullptr, d->cause set), each call lane w held is
// told why in its info (src/info.h info_death_locked).
uint32_t calls_fail_lane_locked(Pool *p, uint32_t w, int32_t status, bool unclaimed,
				const DeathNote *d = nullptr);
// ---- riders: calls of a burst that share one frame -------------------------------
// knit_enqueue_many sends a run of a burst's calls in one frame when they
// are cheap (src/api.cpp ride_burst): one carrier, a call of the map chunk
// task (src/chunk.h; flags kCallChunk | kCallCarrier), travels with their
// arguments, and each call of the run is a rider (kCallRider): a record
// with its own ticket, user data and completion, as any call's, that is
// never placed itself. The carrier is nobody's to reap (no kHoldUser from
// its enqueue on) and is counted as no call (outstanding, enqueued,
// completed and a worker's served calls count its riders; a lane's frames
// run, knit_lane_stats_t.calls, count it). It holds its riders' kHoldHostQueue,
// chained from its user_data through Call::next (its rider count in
// pin_lane), until it completes (call_complete_locked): then each rider not
// completed yet completes, in order, with its own outcome from the
// carrier's result, or with the carrier's status when the carrier failed
// (its worker's death, a stop, a malformed result: -KNIT_EPROTO). A rider
// completed before (knit_cancel, a stop) keeps that completion.
//
// Which runs ride: calls of one task with no options (so no timeout, no
// abort bit, no lane, the normal class) in a pool that times no call and
// has no hard timeout, while the task's estimate (TaskEntry::ride_ns, from
// the run time carriers bring back: ride_estimate) says that
// at least two of them fit kRideBudgetNs: a frame then takes up to that
// much estimated work (at most kRideMax calls, and only as many as the
// largest result a rider of the task returned lets fit the per-call limit
// twice over), so a worker holds no unstarted call behind a long one it
// knew to be long. Without an estimate, or with one too long to share,
// the first call of a burst travels as a carrier of one, a probe, to learn
// it (one probe of a task at a time): a carrier of one holds nothing back,
// and probes bring a task that became cheap back to sharing within a few
// bursts (the estimate halves its gap to each sample).
inline constexpr int64_t kRideBudgetNs = 2000;
inline constexpr uint32_t kRideMax = 64;

// The calls one frame may carry (1: none share) for estimate ns (0: none)
// and the largest rider result `room` seen, under the per-call limit cap.
inline uint32_t ride_take_size(uint64_t ns, uint32_t room, uint64_t cap)
{
	if (ns == 0 || ns * 2 > (uint64_t)kRideBudgetNs)
		return 1;
	uint64_t k = (uint64_t)kRideBudgetNs / ns;
	if (room != 0 && k > cap / 2 / room)
		k = cap / 2 / room;
	if (k > kRideMax)
		k = kRideMax;
	return k < 1 ? 1u : (uint32_t)k;
}
// The estimate ns after a carrier's sample of per_call ns that followed
// one of last (0: none): the first sample as it is; then raised to the
// smaller of the last two samples when both are slower (one preemption
// or fault in a carrier would otherwise stop calls sharing frames for
// many probes), else lowered by half the gap to the sample.
inline uint64_t ride_estimate(uint64_t ns, uint64_t last, uint64_t per_call)
{
	if (per_call < 1)
		per_call = 1;
	if (ns == 0)
		return per_call;
	if (per_call >= ns) {
		const uint64_t both = last != 0 && last < per_call ? last : per_call;
		return both > ns ? both : ns;
	}
	return ns - (ns - per_call) / 2;
}

// Apply a batch's counts (under mu, the same hold as its completions).
void complete_batch_end_locked(Pool *p, CompleteBatch *b);
// Recycle a record whose last hold was just dropped (under mu): out of
// its deadline heap entry and abort bit, its buffers freed.
void call_recycle_locked(Pool *p, Call *c);
// Drop holds (under mu); recycles the record when none is left. Inline:
// a record that still has holds, or has nothing but itself to give back
// (no deadline, no abort bit, no buffer: most), costs a few instructions.
inline void call_unhold_locked(Pool *p, Call *c, uint32_t holds)
{
	c->holds &= ~holds;
	if (c->holds != 0)
		return;
	if (c->heap_pos != kNoHeap || c->abort_bit >= 0 || c->arg_buf != nullptr ||
	    c->result_buf != nullptr)
		call_recycle_locked(p, c);
	else
		p->tickets.free(c);
}

// Allocate an abort bit (under mu): the id, or -1 when all are in use.
int32_t abort_alloc_locked(Pool *p);
// Raise a call's abort bit, keeping it allocated (under mu).
void abort_raise_locked(Pool *p, Call *c);
// Release the abort bit of a call that has one (under mu).
void abort_release_bit_locked(Pool *p, Call *c);
// Release a call's abort bit, if it has one (under mu). Most calls have
// none: the test is inline, the shared word is touched only for a bit.
inline void abort_release_locked(Pool *p, Call *c)
{
	if (c->abort_bit >= 0)
		abort_release_bit_locked(p, c);
}

// Put a call with a deadline into the deadline heap and bring the pool's
// earliest deadline (earliest_deadline() in runtime.h) up to date (under mu).
void deadline_track_locked(Pool *p, Call *c);

// Create the deadline timerfd and arm it at the earliest deadline (under mu,
// by knit_completion_fd). 0, or a negative -errno from the kernel.
int deadline_timer_open_locked(Pool *p);

// Move a completed record into *out (the result bytes change owner: a
// handle in out->reserved names them) and drop the user hold (under mu).
void hand_out_locked(Pool *p, Call *c, knit_completion_t *out);
// Give result bytes (buf, out->result's data) to completion *out: register
// them for knit_completion_release (a handle in out->reserved), or, when the
// registry cannot grow, free them and make *out an -KNIT_ENOMEM completion
// (under mu). src/syncline.cpp hands out line calls with it.
void hand_out_bytes_locked(Pool *p, uint8_t *buf, knit_completion_t *out);
// Hand out up to max queued completions (takes mu). Returns how many.
int deliver(Pool *p, knit_completion_t *out, unsigned max);
// ---- reaping chosen calls (knit_complete_tickets, knit_wait_idle) ----------------
// A ticket names a call still to be reaped when its record is live at that
// generation, still holds kHoldUser (not handed out) and is not a knit_call's
// private record. Threads waiting in either entry are counted in
// p->pick_waiters (under mu) so that a reap by another thread, which changes
// what they wait for without any event of the workers, wakes them:
// pick_reaped() (api.cpp) after every hand-out.

// The record of ticket t if it is still to be reaped (under mu), else null.
Call *unreaped_locked(Pool *p, knit_ticket_t t);
// Hand out up to max completed calls among tickets[0 .. n-1] into out, in
// the order of the list (under mu); *alive counts the tickets still to be
// reaped before this call (taken ones included). Returns how many.
unsigned take_tickets_locked(Pool *p, const knit_ticket_t *tickets, unsigned n,
			     knit_completion_t *out, unsigned max, unsigned *alive);
// The tickets of every call still to be reaped (under mu): a malloc'd array
// in *out with its count in *n (nullptr when 0). 0, or -KNIT_ENOMEM.
int unreaped_snapshot_locked(Pool *p, knit_ticket_t **out, uint32_t *n);
// Keep in t[0 .. n-1] only the tickets still to be reaped (under mu);
// returns how many are left.
uint32_t unreaped_compact_locked(Pool *p, knit_ticket_t *t, uint32_t n);
// Free the result bytes completion *c owns (knit_completion_release(3)):
// 0, or -KNIT_EINVAL when *c names bytes that are not (or no longer) ours.
int completion_release(Pool *p, knit_completion_t *c);

// value_copy() of a value with bytes (BYTES, STRING, ERROR).
int value_copy_bytes(const knit_value_t &v, knit_value_t *out, uint8_t **buf);
// Copy a value view into malloc'd memory (strings and errors NUL-terminated).
// Returns 0 with *out/*buf filled, or -KNIT_ENOMEM. A scalar (the common
// result) is copied inline, with nothing to allocate.
inline int value_copy(const knit_value_t &v, knit_value_t *out, uint8_t **buf)
{
	if (codec_has_bytes(v.type))
		return value_copy_bytes(v, out, buf);
	*out = v;
	out->code = 0; // only an ERROR has a code
	out->data = nullptr;
	out->len = 0;
	*buf = nullptr;
	return 0;
}

} // namespace knit::detail

#endif
