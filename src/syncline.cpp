// SPDX-License-Identifier: MIT
// src/syncline.cpp - the synchronous call line (src/syncline.h has the
// contract, the steps S1-S11 and the pairing table; tests/model/syncline.pml
// proves the protocol). The caller side (line_call: S1, S2, S6, S7), the
// worker side (line_serve: S3-S5, line_adopt: S11), the stop's cancel (S8)
// and a lost worker's line (line_lost, line_reopen: S10, S11).
//
// Shared words are read once each into locals; nothing read from the line
// is trusted: the worker validates a request like the codec validates a
// frame, and the caller validates the reply before it hands it out.
#include "src/common.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>

#include "src/calls.h"
#include "src/codec.h"
#include "src/info.h"
#include "src/lane.h"
#include "src/runtime.h"
#include "src/spin.h"
#include "src/task.h"
#include "src/syncline.h"
#include "src/trace.h"
#include "src/wake.h"

namespace knit::detail {

namespace {

uint32_t *line_word(uint8_t *slot, uint64_t off)
{
	return reinterpret_cast<uint32_t *>(slot + off);
}

uint32_t rd32(const uint8_t *slot, uint64_t off)
{
	uint32_t v;
	memcpy(&v, slot + off, sizeof v);
	return v;
}
uint64_t rd64(const uint8_t *slot, uint64_t off)
{
	uint64_t v;
	memcpy(&v, slot + off, sizeof v);
	return v;
}
void wr32(uint8_t *slot, uint64_t off, uint32_t v) { memcpy(slot + off, &v, sizeof v); }
void wr64(uint8_t *slot, uint64_t off, uint64_t v) { memcpy(slot + off, &v, sizeof v); }

// line_outstanding -= 1 (S7, or S1's undo). Reaching 0 matters
// only to a stop (DRAIN waits for it; knit_complete and the fd report a
// drained closed pool): S7 edge, the fence pairs with the stop's store of
// closed + host_event's fence: either we see closed here or the stop's
// later re-check of outstanding sees our decrement.
void outstanding_drop(Pool *p)
{
	// Release: pairs with the acquire load in none_outstanding() (a drain,
	// knit_complete, the completion fd).
	if (knit_fetch_add_acq_rel_64(&p->line_outstanding, (uint64_t)-1) != 1)
		return;
	knit_fence_seq_cst(); // S7: pairs with the stop's fence after closed
	if (knit_load_relaxed_32(&p->closed))
		host_event(p, true);
}

// S1: claim an IDLE line, starting at the rotating cursor. nullptr: every
// line is busy (or lost to another thread): fall back. The caller counted
// the call in outstanding first.
Lane *line_claim(Pool *p)
{
	const uint32_t n = p->nworkers;
	const uint32_t start = knit_load_relaxed_32(&p->line_cursor) % n;
	// Awake idle workers first (spinning: the call costs no wake), then idle
	// workers (not running ticketed calls, so the worker answers at once),
	// then any lane with a free line.
	for (uint32_t pass = 0; pass < 3; pass++) {
		for (uint32_t i = 0; i < n; i++) {
			const uint32_t w = (start + i) % n;
			Lane *l = &p->lanes[w];
			if (knit_load_relaxed_32(&l->line_state) != kLineIdle)
				continue;
			// A lane being retired or lost (S10 turns its line RETIRED
			// or LOST; skipping it here is what ends S10's retries), or
			// recycled (its worker is leaving: line_settle), or without a
			// worker now (DOWN: killed, or backing off until a successor
			// comes; the call goes the ticketed way, to a lane that serves).
			const LaneState st = lane_state(l);
			if (st == kLaneRetired || st == kLaneDistrusted || st == kLaneRetiring ||
			    st == kLaneDown)
				continue;
			if (pass < 2 && knit_load_relaxed_32(&l->busy) != 0)
				continue;
			// Relaxed: only a preference (a worker process writes it).
			if (pass == 0 && knit_load_relaxed_32(l->parked) != kAwake)
				continue;
			// S1 / S9, acq_rel: pairs with the previous holder's release
			// CAS (S6) or store of IDLE (S1's undo): its use of the slot
			// and of line_seq happens before ours.
			if (knit_cas_acq_rel_32(&l->line_state, kLineIdle, kLineClaimed) !=
			    kLineIdle)
				continue;
			if (w != start)
				knit_store_relaxed_32(&p->line_cursor, w);
			return l;
		}
	}
	return nullptr;
}

// Is any line free? (relaxed; only to skip S1's count when none is.)
bool line_any_idle(Pool *p)
{
	for (uint32_t i = 0; i < p->nworkers; i++)
		if (knit_load_relaxed_32(&p->lanes[i].line_state) == kLineIdle)
			return true;
	return false;
}

// How a call whose line left CLAIMED without its release ends: a stop
// cancelled it (S8: -KNIT_ECLOSED) or its worker was lost (S10).
int32_t ended_status(Lane *l)
{
	// Acquire: pairs with S10's acq_rel CAS, which published
	// line_lost_status before LOST / LOST_OPEN.
	const uint32_t st = knit_load_acquire_32(&l->line_state);
	if (st == kLineLost || st == kLineLostOpen)
		return knit_load_relaxed_32(reinterpret_cast<uint32_t *>(&l->line_lost_status));
	// A process pool that failed cancelled it (pool_fail, after storing
	// failed): its calls end as the ticketed ones do.
	return pool_closed_code(l->pool);
}

// The caller's wait (S6) for reply s on lane l.
struct LineWait {
	Lane *l;
	uint32_t s;
	int64_t wake_at; // the backoff ladder's next look (absolute), -1 = when rung
};

// Ready: the reply is there (true, *replied) or the line was cancelled.
bool line_ready(const LineWait *w, bool *replied)
{
	// S6, acquire: pairs with the worker's release store of rp_seq (S5):
	// the reply fields and the spill are visible with it.
	if (knit_load_acquire_32(line_word(w->l->line + kLineOffReply, kLineOffSeq)) == w->s) {
		*replied = true;
		return true;
	}
	*replied = false;
	// Relaxed: a CANCELLED or LOST line is only a verdict (S8's or S10's
	// CAS); line_call reads line_lost_status after its own acquire load.
	const uint32_t st = knit_load_relaxed_32(&w->l->line_state);
	return st == kLineCancelled || st == kLineLost || st == kLineLostOpen;
}

// S11: reopen lane l's line for its respawned worker, if nobody is on it
// (DOWN) and its token is there. Any host thread: the recovery (S10, after
// it stored the token) or the caller of a LOST_OPEN line on its way out.
void line_reopen(Lane *l)
{
	// S11, acq_rel: one party at a time holds OPENING (the recovery's S10
	// step waits it out). Pairs with the LOST_OPEN caller's CAS to DOWN
	// (its S2 stores of the request block, a stale rq_seq included,
	// happen before ours below) and with S10's CAS to DOWN.
	if (knit_cas_acq_rel_32(&l->line_state, kLineDown, kLineOpening) != kLineDown)
		return;
	// S11, acq_rel: take the token. Pairs with S10's exchanges (the clear
	// before its step, the store of the new nonce before a step from IDLE
	// / CLAIMED or after one from DOWN / LOST_OPEN): the RMWs of the token
	// are totally ordered, so either we take the new nonce, or the
	// recovery's exchange comes after ours and it sees our OPENING (or
	// the DOWN we put back) when it looks at the state.
	const uint32_t nonce = knit_xchg_acq_rel_32(&l->line_token, 0);
	if (nonce == 0) {
		// The token is not there yet (after a step from DOWN /
		// LOST_OPEN the recovery stores it, then looks for DOWN) or was
		// taken: put the line back.
		// Release: pairs with the recovery's acquire load of the state.
		knit_store_release_32(&l->line_state, kLineDown);
		return;
	}
	// Nobody claims the line from DOWN on: line_seq and the slots are ours.
	// The base: the last request the host published (the host's sequence
	// goes on; the new worker adopts it as line_served).
	const uint32_t base = (uint32_t)knit_load_relaxed_64(&l->line_seq);
	uint8_t *rq = l->line + kLineOffRequest;
	uint8_t *rp = l->line + kLineOffReply;
	// The new worker reads rp_seq as its base after the open word; rq_seq
	// equal to it is "served" (not a request, not a fault).
	knit_store_relaxed_32(line_word(rq, kLineOffSeq), base);
	knit_store_relaxed_32(line_word(rp, kLineOffSeq), base);
	// S11, release: pairs with the worker's acquire load of the open word
	// (line_adopt): the base above is visible with it.
	knit_store_release_32(line_word(rq, kLineOffRqOpen), nonce);
	// S11, release: pairs with the next claim's CAS (S1/S9) and with
	// S10's load of the state: the base and the open word happen before.
	knit_store_release_32(&l->line_state, kLineIdle);
}

// The doorbell sleep's re-check (SleepRecheck, wake.h D1): after the
// announcement's fence, a reply published before the worker's D2 fence, or
// a cancel made before host_event's H1 fence, is seen here.
bool line_recheck(Pool *, void *arg, int64_t *wake_at)
{
	LineWait *w = static_cast<LineWait *>(arg);
	bool replied;
	if (line_ready(w, &replied))
		return true;
	*wake_at = w->wake_at;
	return false;
}

// S6's wait: spin (the host spin budget, longer right after this thread
// woke the worker: wake.h), then sleep on the doorbell, or without the
// doorbell option on the backoff ladder's timed sleeps. True: the reply is
// there; false: the line was cancelled.
bool line_wait(Pool *p, Lane *l, uint32_t s)
{
	LineWait w = {l, s, -1};
	bool replied = false;
	// The clock only from round 64 on, and the spin judged there (spin.h,
	// as host_wait's): a hot reply comes sooner.
	HostSpin sp;
	bool found = false;
	for (uint32_t i = 1;; i++) {
		if (line_ready(&w, &replied)) {
			found = true;
			break;
		}
		knit_cpu_relax();
		if ((i & 63) == 0) {
			const int64_t t = knit_now_ns();
			if (!sp.judged) {
				if (host_spin_open(p, &sp, t, kHostSpinNs) == 0)
					break;
			} else if (t >= sp.end) {
				break;
			}
		}
	}
	host_spin_close(&sp, found);
	const bool doorbell = p->cfg.doorbell;
	for (uint32_t stall = 0; !found; stall++) {
		if (!doorbell) {
			const int64_t slice =
				host_backoff_ns(p, stall); // the backoff ladder (spin.h)
			if (slice == 0) {
				sched_yield();
				found = line_ready(&w, &replied);
				continue;
			}
			w.wake_at = knit_now_ns() + slice;
		}
		host_sleep_begin();
		host_doorbell_sleep(p, doorbell, line_recheck, &w);
		host_sleep_end();
		found = line_ready(&w, &replied);
	}
	host_wake_seen(p);
	return replied;
}

// S6 after the reply is seen: copy it out and validate it. Returns the
// status of the completion-to-be (0, -KNIT_ETASK, -KNIT_ETOOBIG,
// -KNIT_ENOMEM) with *v / *buf its result and bytes, or -KNIT_EPROTO (the
// words cannot be trusted; nothing taken).
int32_t reply_take(Pool *p, Lane *l, uint32_t s, knit_value_t *v, uint8_t **buf)
{
	const uint8_t *rp = l->line + kLineOffReply;
	const uint32_t seq = rd32(rp, kLineOffSeq);
	const uint32_t lane = rd32(rp, kLineOffLane);
	const int32_t status = (int32_t)rd32(rp, kLineOffStatus);
	const uint32_t type = rd32(rp, kLineOffType);
	const uint64_t scalar = rd64(rp, kLineOffScalar);
	const uint32_t where = rd32(rp, kLineOffWhere);
	const int32_t code = (int32_t)rd32(rp, kLineOffRpCode);
	const uint8_t *payload = rp + kLineHeadBytes;
	memset(v, 0, sizeof *v);
	*buf = nullptr;
	if (seq != s || lane != l->index)
		return -KNIT_EPROTO;
	if (status == -KNIT_ETOOBIG || status == -KNIT_ENOMEM)
		return type == KNIT_VALUE_NONE && where == kLineWhereInline ? status : -KNIT_EPROTO;
	if (status != 0 && status != -KNIT_ETASK)
		return -KNIT_EPROTO;
	if (where == kLineWhereSpill && l->line_spill_area != nullptr) {
		// A worker process's spill slot (shared: copied once, then only
		// the copy is looked at; value_copy NUL-terminates it).
		if (!codec_has_bytes(type) || scalar > p->cfg.max_payload_bytes)
			return -KNIT_EPROTO;
		if (value_copy(codec_value_of(type, code, scalar, l->line_spill_area), v, buf) !=
		    0) {
			memset(v, 0, sizeof *v);
			return -KNIT_ENOMEM;
		}
		return status;
	}
	if (where == kLineWhereSpill) {
		// The worker's copy (value_copy: NUL-terminated), handed over by
		// the release store of rp_seq; ours once its length agrees.
		uint8_t *spill = l->line_spill;
		if (!codec_has_bytes(type) || spill == nullptr || l->line_spill_len != scalar ||
		    scalar > p->cfg.max_payload_bytes)
			return -KNIT_EPROTO;
		l->line_spill = nullptr; // taken (the worker writes it again only
					 // for the next request: S9 orders it)
		l->line_spill_len = 0;
		*v = codec_value_of(type, code, scalar, spill);
		*buf = spill;
		return status;
	}
	if (where != kLineWhereInline || !codec_words_ok(type, scalar, payload, kLinePayload))
		return -KNIT_EPROTO;
	if (value_copy(codec_value_of(type, code, scalar, payload), v, buf) != 0) {
		memset(v, 0, sizeof *v);
		return -KNIT_ENOMEM;
	}
	return status;
}

// Wait out a reopen half-way (a host thread between OPENING and its store
// of IDLE or DOWN, a few stores: bounded by that thread's progress) and
// return the state after it. Acquire: pairs with line_reopen's release
// stores of the state.
uint32_t state_settled(Lane *l)
{
	for (uint32_t i = 1;; i++) {
		const uint32_t st = knit_load_acquire_32(&l->line_state);
		if (st != kLineOpening)
			return st;
		knit_cpu_relax();
		if ((i & 63) == 0)
			sched_yield();
	}
}

} // namespace

int line_call(Pool *p, uint32_t task, const knit_value_t *arg, knit_completion_t *out,
	      int64_t timeout_ns)
{
	// Eligibility (syncline.h): nothing to track, and an argument that
	// fits the request slot.
	const TaskEntry &te = p->tasks[task];
	if (timeout_ns > 0 || p->nworkers == 0 || p->nlanes != p->nworkers ||
	    p->cfg.hard_timeout_ms != 0 || p->cfg.timing || te.timeout_ms != 0 ||
	    (te.flags & KNIT_TASK_ABORTABLE) != 0)
		return kLineNo;
	knit_value_t v;
	memset(&v, 0, sizeof v);
	if (arg != nullptr)
		v = *arg;
	if (codec_value_check(v, p->cfg.max_payload_bytes) != 0)
		return kLineNo; // the ticketed path reports it
	if (codec_has_bytes(v.type) && codec_stored_bytes(v.type, v.len) > kLinePayload)
		return kLineNo;
	// A closed pool, or no free line: the ticketed path (which answers
	// -KNIT_ECLOSED on a closed pool) without touching line_outstanding.
	if (knit_load_relaxed_32(&p->closed) || !line_any_idle(p))
		return kLineNo;

	// S1: count the call, claim a line, then look at closed. (Line calls
	// have their own count: the ticketed path's stays written under mu.)
	// S1 (the fence below makes it seq_cst): pairs with a drain's look at
	// the counts after the stop's fence (none_outstanding): either it
	// counts this call or we see closed below.
	knit_add_acq_rel_64(&p->line_outstanding, 1);
	Lane *l = line_claim(p);
	if (l == nullptr) {
		outstanding_drop(p);
		return kLineNo;
	}
	// S1: pairs with the stop's fence between its store of closed and its
	// CAS of the lines (S8) or its drain's look at outstanding: either we
	// see closed or it sees our claim and our count.
	knit_fence_seq_cst();
	if (knit_load_relaxed_32(&p->closed)) {
		// Release: pairs with the next claim's CAS (S9). (A stop may have
		// cancelled the line meanwhile; the pool is closed, so it is never
		// claimed again either way.)
		knit_store_release_32(&l->line_state, kLineIdle);
		outstanding_drop(p);
		// A pool closes when it fails (Pool::failed is stored first,
		// then closed under mu): mu orders the two for us, and the
		// answer is the ticketed path's.
		pthread_mutex_lock(&p->mu);
		const int code = pool_closed_code(p);
		pthread_mutex_unlock(&p->mu);
		return code;
	}

	// S2: the request fields, then the sequence.
	uint8_t *rq = l->line + kLineOffRequest;
	const uint64_t seq64 = knit_load_relaxed_64(&l->line_seq) + 1;
	const uint32_t s = (uint32_t)seq64;
	wr32(rq, kLineOffTask, task);
	wr32(rq, kLineOffRqLane, l->index);
	wr32(rq, kLineOffType, v.type);
	wr64(rq, kLineOffScalar, codec_scalar_of(v));
	wr32(rq, kLineOffRqCode, v.type == KNIT_VALUE_ERROR ? (uint32_t)v.code : 0);
	// (+28, the open word, is S11's: a stale caller's S2 must not touch it.)
	if (codec_has_bytes(v.type)) {
		if (v.len != 0)
			memcpy(rq + kLineHeadBytes, v.data, v.len);
		if (v.type != KNIT_VALUE_BYTES)
			rq[kLineHeadBytes + v.len] = 0;
	}
	knit_store_relaxed_64(&l->line_seq, seq64); // counted enqueued (stats)
	KNIT_TRACE_TASK_ENQUEUE(p, p->steal.on ? kStealLane : l->index, line_trace_id(l->index, s));
	// S2, release: pairs with the worker's acquire load of rq_seq (S3).
	knit_store_release_32(line_word(rq, kLineOffSeq), s);
	// S2' / W1: pairs with the worker's W2 fence between its store of
	// parked and its re-check (line_pending in park_recheck): either it
	// sees the request or we see it parked and ring.
	knit_fence_seq_cst();
	lane_wake(p, l, false);

	// S6: wait for the reply (or the cancel), read it, then release.
	const bool replied = line_wait(p, l, s);
	int32_t status = ended_status(l);
	knit_value_t res;
	memset(&res, 0, sizeof res);
	uint8_t *buf = nullptr;
	bool released = false; // our S6 CAS moved the line on (the line is not ours)
	// Counted completed by the claim holder before the CAS: whichever way
	// the CAS goes, this call completes now (S7).
	knit_store_relaxed_64(&l->line_done, knit_load_relaxed_64(&l->line_done) + 1);
	if (replied) {
		status = reply_take(p, l, s, &res, &buf);
		const uint32_t next = status == -KNIT_EPROTO ? kLineRetired : kLineIdle;
		// S6, acq_rel: the reply was read above, so the next claim (S9)
		// may overwrite the slots; against S8's CAS, exactly one wins.
		if (knit_cas_acq_rel_32(&l->line_state, kLineClaimed, next) != kLineClaimed) {
			// Cancelled by a stop (S8) or the worker lost (S10) first:
			// the reply is dropped, the call ends as a cancelled (or
			// crashed) running call does.
			free(buf);
			buf = nullptr;
			memset(&res, 0, sizeof res);
			knit_add_relaxed_64(&p->st_late_drops, 1);
			status = ended_status(l);
		} else {
			released = true;
			if (status == -KNIT_EPROTO)
				knit_add_relaxed_64(&p->st_proto_errors, 1);
			else
				lane_served(p, l, 1); // its worker answered (recycle_calls)
		}
	}
	// A worker lost under our claim: S10 stored its death with the status
	// ended_status gave us (published by the same CAS); read before S11,
	// after which a later claim's loss may rewrite it.
	DeathNote death = {};
	if (!released && (status == -KNIT_ECRASHED || status == -KNIT_EPROTO))
		death = l->line_lost_death;
	// S11: the worker was lost during our call and a new one is being
	// spawned (LOST_OPEN: only our claim's line can be in it, we are done
	// with its slots and line_seq): hand the token over (DOWN) and reopen.
	// Acq_rel: pairs with S10's CAS to LOST_OPEN and with line_reopen's
	// CAS of whoever reopens: our S2 stores come before its base.
	bool resend = false;
	if (!released && knit_load_relaxed_32(&l->line_state) == kLineLostOpen &&
	    knit_cas_acq_rel_32(&l->line_state, kLineLostOpen, kLineDown) == kLineLostOpen) {
		// S12: the dead worker never took our request (its last taken
		// one is not s; read after the CAS above, which read from S10's
		// CAS that published it): no task of ours began, and the new
		// worker never runs it (the base covers it, S11). So it is sent
		// again on the ticketed path, as an unstarted ticketed call is
		// placed again: the line counts it neither enqueued nor done.
		resend = !replied && knit_load_relaxed_32(&l->line_lost_taken) != s;
		line_reopen(l);
	}
	if (resend) {
		knit_store_relaxed_64(&l->line_done, knit_load_relaxed_64(&l->line_done) - 1);
		knit_store_relaxed_64(&l->line_resent, knit_load_relaxed_64(&l->line_resent) + 1);
		KNIT_TRACE_TASK_COMPLETE(p, line_trace_id(l->index, s), status);
		outstanding_drop(p);
		return kLineNo;
	}

	// S7: the completion, as knit_call's (ticket 0: never a valid ticket).
	KNIT_TRACE_TASK_COMPLETE(p, line_trace_id(l->index, s), status);
	out->ticket = 0;
	out->user_data = nullptr;
	out->status = status;
	out->task = task;
	out->result = res;
	// The call's info says why its worker died.
	const bool died = death.cause != KNIT_DEATH_NONE;
	if (buf != nullptr || died) {
		pthread_mutex_lock(&p->mu);
		if (buf != nullptr)
			hand_out_bytes_locked(p, buf, out);
		if (died)
			info_line_death_locked(p, l->index, death, out);
		pthread_mutex_unlock(&p->mu);
	}
	outstanding_drop(p);
	return 0;
}

bool line_adopt(Lane *l)
{
	// S11, acquire: pairs with line_reopen's release store of the open
	// word: the base (rp_seq) it wrote first is visible. Any other value
	// (a predecessor's open word, or garbage): not open for us yet.
	if (knit_load_acquire_32(line_word(l->line + kLineOffRequest, kLineOffRqOpen)) !=
	    l->line_wait)
		return false;
	// The base, not trusted: a wrong one only makes the line's requests
	// out of sequence (counted faults, never served), as a garbled rq_seq.
	const uint32_t base = knit_load_relaxed_32(line_word(l->line + kLineOffReply, kLineOffSeq));
	l->line_served = base;
	l->line_fault = base;
	l->line_wait = 0;
	return true;
}

bool line_serve(Lane *l)
{
	if (l->line == nullptr)
		return false;
	if (l->line_wait != 0 && !line_adopt(l))
		return false; // a respawned worker process: not open yet (S11)
	Pool *p = l->pool;
	uint8_t *rq = l->line + kLineOffRequest;
	const uint32_t want = l->line_served + 1;
	// S3, acquire: pairs with the caller's release store of rq_seq (S2).
	const uint32_t seq = knit_load_acquire_32(line_word(rq, kLineOffSeq));
	if (seq != want) {
		// Any value but the last served one is a protocol fault: counted
		// once, never served.
		if (seq != l->line_served && seq != l->line_fault) {
			l->line_fault = seq;
			knit_add_relaxed_64(&p->st_proto_errors, 1);
		}
		return false;
	}
	// S4: validate, then run (or answer -KNIT_EPROTO without running).
	const uint32_t task = rd32(rq, kLineOffTask);
	const uint32_t lane = rd32(rq, kLineOffRqLane);
	const uint32_t type = rd32(rq, kLineOffType);
	const uint64_t scalar = rd64(rq, kLineOffScalar);
	const int32_t code = (int32_t)rd32(rq, kLineOffRqCode);
	const uint8_t *payload = rq + kLineHeadBytes;
	uint8_t *rp = l->line + kLineOffReply;
	int32_t status = -KNIT_EPROTO;
	uint32_t rtype = KNIT_VALUE_NONE, where = kLineWhereInline;
	uint64_t rscalar = 0;
	int32_t rcode = 0;
	uint8_t *spill = nullptr;
	if (task < p->ntasks && lane == l->index &&
	    codec_words_ok(type, scalar, payload, kLinePayload)) {
		const knit_value_t arg = codec_value_of(type, code, scalar, payload);
		knit_ctx ctx;
		// No wlane: knit_ctx_alloc mallocs (the return arena is the
		// ticketed path's).
		ctx_init(&ctx, p, l->index, -1, 0, nullptr);
		TaskOutcome o;
		// S12: taken, before the task runs. Relaxed: only a host that
		// reaped us reads it (our exit and its waitid order it), and a
		// kill lands between instructions, so a task that began left it.
		knit_store_relaxed_32(reinterpret_cast<uint32_t *>(l->ext + kLaneExtOffLineTaken),
				      want);
		KNIT_TRACE_TASK_START(p, l->index, line_trace_id(l->index, want));
		run_task(p, &ctx, task, arg, &o);
		KNIT_TRACE_TASK_DONE(p, l->index, line_trace_id(l->index, want), o.status);
		counter_bump(lane_counter(l->ext, kWcCalls));
		status = o.status;
		if (status == 0 || status == -KNIT_ETASK) {
			const knit_value_t &r = o.value;
			rtype = r.type;
			rscalar = codec_scalar_of(r);
			rcode = r.type == KNIT_VALUE_ERROR ? r.code : 0;
			if (codec_has_bytes(r.type) &&
			    codec_stored_bytes(r.type, r.len) <= kLinePayload) {
				if (r.len != 0)
					memcpy(rp + kLineHeadBytes, r.data, r.len);
				if (r.type != KNIT_VALUE_BYTES)
					rp[kLineHeadBytes + r.len] = 0;
			} else if (codec_has_bytes(r.type) && l->line_spill_area != nullptr) {
				// A worker process: the lane's spill slot. r.len is
				// within max_payload_bytes (run_task's check), the
				// slot one byte longer.
				memcpy(l->line_spill_area, r.data, r.len);
				l->line_spill_area[r.len] = 0;
				where = kLineWhereSpill;
			} else if (codec_has_bytes(r.type)) {
				knit_value_t copy;
				if (value_copy(r, &copy, &spill) == 0 && spill != nullptr) {
					where = kLineWhereSpill;
				} else {
					status = -KNIT_ENOMEM;
					rtype = KNIT_VALUE_NONE;
					rscalar = 0;
					rcode = 0;
				}
			}
		}
		ctx_free_allocs(&ctx);
	}
	wr32(rp, kLineOffLane, l->index);
	wr32(rp, kLineOffStatus, (uint32_t)status);
	wr32(rp, kLineOffType, rtype);
	wr64(rp, kLineOffScalar, rscalar);
	wr32(rp, kLineOffWhere, where);
	wr32(rp, kLineOffRpCode, (uint32_t)rcode);
	if (spill != nullptr) {
		free(l->line_spill); // nullptr unless a reply was never read (a retired line)
		l->line_spill = spill;
		l->line_spill_len = rscalar;
	}
	// S5, release: pairs with the caller's acquire load of rp_seq (S6):
	// the reply fields and the spill are visible with it.
	knit_store_release_32(line_word(rp, kLineOffSeq), want);
	l->line_served = want;
	worker_ring(l); // S5' (D2/D3): the fence, then the doorbell
	return true;
}

void line_cancel_all(Pool *p)
{
	bool any = false;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		// S8, acq_rel: pairs with the caller's S1 claim (after the stop's
		// fence: either we see its claim or it sees closed) and its S6
		// release CAS (exactly one of the two wins).
		if (knit_cas_acq_rel_32(&p->lanes[i].line_state, kLineClaimed, kLineCancelled) ==
		    kLineClaimed)
			any = true;
	}
	// H1/H2: ring a caller asleep on the doorbell (its D1 re-check sees
	// the CANCELLED line, or we see it waiting).
	if (any)
		host_event(p, true);
}

void line_lost(Pool *p, Lane *l, int32_t status, bool reopen, uint32_t nonce,
	       const DeathNote &death)
{
	// S10, acq_rel: clear a token our dead predecessor never had its line
	// reopened with, BEFORE the step below: a reopen that takes it from
	// now on finds 0 and puts the line back DOWN; one that took it is
	// OPENING or done, and the step waits it out. (Stored before a step
	// from DOWN / LOST_OPEN, the new nonce could open the line for the new
	// worker while a claim of the old epoch slips in before the step:
	// model, MUTANT_TOKEN_EARLY.)
	if (reopen)
		(void)knit_xchg_acq_rel_32(&l->line_token, 0);
	uint32_t to = 0, st = 0;
	bool early = false; // the token is stored already
	for (;;) {
		st = state_settled(l);
		// S10, acq_rel: against S1's claim CAS (a claim after this sees
		// RETIRED / DOWN) and S6's release CAS (exactly one of the two
		// wins); DOWN and LOST_OPEN (an earlier loss not reopened yet)
		// stay as they are (or become RETIRED / LOST for good).
		// From IDLE or CLAIMED no reopen can start before our CAS (only
		// S10 makes DOWN / LOST_OPEN; the line leaves IDLE / CLAIMED
		// otherwise only for good): the token may go first, so a
		// LOST_OPEN caller finds it and reopens before it returns.
		if (reopen && (st == kLineIdle || st == kLineClaimed) && !early) {
			// acq_rel: pairs with line_reopen's exchange (published
			// to it also by our CAS below, which its CAS reads after).
			(void)knit_xchg_acq_rel_32(&l->line_token, nonce);
			early = true;
		}
		if (st == kLineIdle || st == kLineDown) {
			to = reopen ? kLineDown : kLineRetired;
		} else if (st == kLineClaimed || st == kLineLostOpen) {
			to = reopen ? kLineLostOpen : kLineLost;
			if (st == kLineClaimed) { // published by the CAS (ended_status; S12)
				knit_store_relaxed_32(
					reinterpret_cast<uint32_t *>(&l->line_lost_status),
					(uint32_t)status);
				// Published with it (the claim holder reads it after
				// the same acquire): plain, only this step writes it
				// while the line is CLAIMED.
				l->line_lost_death = death;
				// S12: what the dead worker took, before lane_lost
				// wipes its lane extension (relaxed: it is reaped).
				knit_store_relaxed_32(
					&l->line_lost_taken,
					knit_load_relaxed_32(reinterpret_cast<uint32_t *>(
						l->ext + kLaneExtOffLineTaken)));
			}
		} else {
			return; // CANCELLED, RETIRED, LOST: never claimed again
		}
		if (knit_cas_acq_rel_32(&l->line_state, st, to) != st) {
			knit_cpu_relax();
			continue;
		}
		if (st == kLineClaimed) {
			// H1/H2: ring the caller asleep on the doorbell (its D1
			// re-check sees LOST, or we see it waiting).
			host_event(p, true);
		}
		break;
	}
	if (!reopen)
		return;
	// S11: the token for the new worker, after a step from DOWN or
	// LOST_OPEN (an earlier loss not reopened yet: a reopen may start
	// any time; acq_rel: pairs with line_reopen's exchange, see there),
	// then reopen if nobody is on the line (DOWN: ours, or a LOST_OPEN
	// caller's that found no token yet). LOST_OPEN: its caller reopens on
	// its way out.
	if (st == kLineDown || st == kLineLostOpen)
		(void)knit_xchg_acq_rel_32(&l->line_token, nonce);
	if (state_settled(l) == kLineDown)
		line_reopen(l);
}

void line_settle(Pool *p, Lane *l)
{
	(void)p;
	uint32_t *rq = line_word(l->line + kLineOffRequest, kLineOffSeq);
	uint32_t *rp = line_word(l->line + kLineOffReply, kLineOffSeq);
	const int64_t end = knit_now_ns() + kLineSettleNs;
	// Relaxed state and request loads: a hint of who is on the line (a
	// wrong guess costs at most the bound); acquire on rp_seq as S6's.
	while (knit_load_relaxed_32(&l->line_state) == kLineClaimed &&
	       knit_load_acquire_32(rp) == knit_load_relaxed_32(rq) && knit_now_ns() < end)
		sched_yield();
}

void line_stats(Pool *p, uint64_t *enqueued, uint64_t *completed)
{
	uint64_t e = 0, c = 0;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		e += knit_load_relaxed_64(&p->lanes[i].line_seq) -
		     knit_load_relaxed_64(&p->lanes[i].line_resent);
		c += knit_load_relaxed_64(&p->lanes[i].line_done);
	}
	*enqueued = e;
	*completed = c;
}

void line_free(Pool *p)
{
	for (uint32_t i = 0; i < p->nworkers; i++) {
		free(p->lanes[i].line_spill);
		p->lanes[i].line_spill = nullptr;
	}
}

} // namespace knit::detail
