// SPDX-License-Identifier: MIT
// src/dispatch.cpp - the host dispatcher: admitting calls (dispatch_submit),
// choosing lanes for them (the balancers; the steal topology's submit lock),
// the bounded multi-producer backlog, the passes (every lane reaped, the
// distrusted lanes whose worker stopped retired), deadline expiry, the hard
// timeout, the inline lane, and the waiting ladder. What happens on one lane
// (stage, flush, reap, distrust, the loss of its worker) is src/lane.h's; a
// call record's lifecycle is src/calls.h's; waking is src/wake.h's; the kind
// of workers is src/workers.h's, asked only through Pool::workers.
//
// The dispatcher is a try-lock: any host thread that gets it runs a pass;
// nobody ever waits for it. The holder owns the request-lock producers, the
// return-lock consumers, the private backlog list and the inline FIFO.
//
// Waking (the workers after a publish, host waiters after a completion, the
// doorbell sleep and the completion eventfd) is the wake room's protocol:
// src/wake.h has its pairing table (W*, D*, H*, E*), which the fences here
// name.
#include "src/common.h"

#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include "src/calls.h"
#include "src/dcheck.h"
#include "src/info.h"
#include "src/lane.h"
#include "src/runtime.h"
#include "src/trace.h"
#include "src/spin.h"
#include "src/task.h"
#include "src/tick.h"
#include "src/wake.h"
#include "src/workers.h"

namespace knit::detail {

namespace {

Call *call_of_node(cds_wfcq_node *n)
{
	return reinterpret_cast<Call *>(reinterpret_cast<uint8_t *>(n) - offsetof(Call, qnode));
}

uint64_t rng_next(Pool *p)
{
	// xorshift64*: dispatcher-private state.
	uint64_t x = p->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	p->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

// Stage c into the shared submit lock (holder). 0, -KNIT_EAGAIN (no free
// lane or arena room now) or another negative code (never publishable).
int steal_stage(Pool *p, Call *c)
{
	FrameHead h = frame_of(c);
	h.flags |= (uint32_t)c->resends << kFrameAttemptShift; // its sending, echoed in the result
	StealHost &s = p->steal;
	int rc = s.req.stage(h, c->arg);
	if (rc < 0)
		return rc;
	const uint32_t bit = 1u << (uint32_t)rc;
	if (s.unclaimed & bit) {
		// The producer saw this lane retired in ACK words we have not
		// looked at since: attribute the claim of its previous call now
		// (our loads are at least as new as the producer's).
		steal_track(p);
		if (s.unclaimed & bit) {
			// A retirement no worker's ACK word shows (forged toggles
			// that cancel out): the lane's previous call can no longer
			// be served from it, so it is sent again (a worker process
			// pool) or completes now, with a code.
			Call *again = steal_orphan(p, (uint32_t)rc);
			s.unclaimed &= ~bit;
			if (again != nullptr) {
				// Back to the backlog at its next flush, not now: we
				// may be placing from the backlog's list.
				again->next = s.orphans;
				s.orphans = again;
			}
		}
	}
	s.lane_ticket[rc] = c->index;
	s.lane_gen[rc] = c->gen;
	s.lane_claimer[rc] = kNoClaimer;
	s.unclaimed |= bit;
	s.staged++;
	c->lane = kStealLane;
	KNIT_TRACE_TASK_ENQUEUE(p, kStealLane, ticket_of(c));
	// Worker processes (Lane::rerun, the same for every lane): the call is
	// sent again if the worker counted as its claimant dies before it
	// starts it (lane_lost), from this copy, never from shared memory; the
	// copy goes when its frame comes back (lane_reap) or with the record.
	if (!p->lanes[0].rerun)
		drop_arg_copy(c);
	return 0;
}

// Publish every staged frame (one release store of A), then wake ONE parked
// worker when that pays (holder; steal_host_wake_pays, src/spin.h), and
// always in a process pool (its workers wake no peer: steal_no_peer_wake).
void steal_flush(Pool *p)
{
	if (p->steal.staged == 0)
		return;
	p->steal.req.flush(); // S5 / P1: one release store of A
	p->steal.staged = 0;
	// S6 = W1 (no lost wake): pairs with the worker's W2 fence in
	// worker_park() between its store of parked and its re-check of the
	// submit lock (pending()): either it sees our A or we see it parked
	// below.
	knit_fence_seq_cst();
	if (p->steal_no_peer_wake || steal_host_wake_pays(p))
		steal_wake_one(p);
}

// ---- placement ---------------------------------------------------------------------

int place(Pool *p, Call *c)
{
	// No worker left to run it (every one retired, no inline lane): fail
	// it rather than let it wait for nobody. A pinned call to a retired
	// lane likewise.
	if ((p->lanes_retired | p->lanes_distrusted) != 0 &&
	    ((p->lanes_retired == p->nworkers && p->nlanes == p->nworkers) ||
	     ((c->flags & kCallPinned) && (p->lanes[c->pin_lane].state == kLaneRetired ||
					   p->lanes[c->pin_lane].state == kLaneDistrusted))))
		return -KNIT_ECRASHED;
	if (p->steal.on)
		return steal_stage(p, c); // one shared submit lock
	if (c->flags & kCallPinned)
		return lane_stage(p, &p->lanes[c->pin_lane], c);
	const uint32_t n = p->nlanes;
	uint32_t pos;
	bool rr = false;
	switch (p->cfg.balancer) {
	case KNIT_BALANCE_FIRST_IDLE:
	case KNIT_BALANCE_FIRST_IDLE_OR_RANDOM: {
		for (uint32_t i = 0; i < n; i++) {
			Lane *l = &p->lanes[p->order[i]];
			if (l->inflight == 0 && lane_stage(p, l, c) == 0)
				return 0;
		}
		if (p->cfg.balancer == KNIT_BALANCE_FIRST_IDLE) {
			pos = p->rr_cursor;
			rr = true;
		} else {
			pos = (uint32_t)(rng_next(p) % n);
		}
		break;
	}
	case KNIT_BALANCE_RANDOM:
		pos = (uint32_t)(rng_next(p) % n);
		break;
	default:
		pos = p->rr_cursor;
		rr = true;
		break;
	}
	// pos < n: wrap by subtraction (no division on the per-call path).
	for (uint32_t i = 0, at = pos; i < n; i++, at = at + 1 == n ? 0 : at + 1) {
		int rc = lane_stage(p, &p->lanes[p->order[at]], c);
		if (rc == 0) {
			if (rr)
				p->rr_cursor = at + 1 == n ? 0 : at + 1;
			return 0;
		}
		if (rc != -KNIT_EAGAIN)
			return rc;
	}
	return -KNIT_EAGAIN;
}

// Publish every lane with staged frames (one store of A each). The look for
// a parked worker (W1) waits for the fence that releasing the dispatcher
// needs anyway (dispatch_unlock; wake_published before inline work): one
// store-buffer drain per hold, not two.
void flush_staged(Pool *p)
{
	if (p->steal.on) {
		steal_flush(p); // one store of A, then wake ONE parked worker
		return;
	}
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (l->staged != 0)
			lane_flush(p, l); // release store of A (P1 in lock2.h)
	}
}

// flush_staged() after placing the one call c while nothing else was
// staged (dispatch_place_new: every hold's earlier placing flushed before
// it returned): only c's lane can have a staged frame.
inline void flush_placed(Pool *p, const Call *c)
{
	if (p->steal.on) {
		steal_flush(p);
		return;
	}
	const uint32_t i = c->lane;
	if (i >= p->nworkers)
		return;              // the inline lane: nothing to publish
	lane_flush(p, &p->lanes[i]); // release store of A (P1 in lock2.h)
}

// Wake the parked workers of `lanes`, and those of `room` that parked for
// room (any thread), after a fence that follows our publish (A) or our
// return of room (B): W1 (no lost wake) pairs with the worker's W2 fence
// between its store of `parked` and its re-check in worker_park(): either
// it sees our store or we see it parked.
inline void wake_lanes_after_fence(Pool *p, uint64_t lanes, uint64_t room)
{
	for (; lanes != 0; lanes &= lanes - 1)
		lane_wake(p, &p->lanes[__builtin_ctzll(lanes)], false);
	for (; room != 0; room &= room - 1)
		lane_wake(p, &p->lanes[__builtin_ctzll(room)], true);
}

// Wake what the hold published so far (holder), before work that may take
// long (inline tasks).
void wake_published(Pool *p)
{
	const uint64_t lanes = p->wake_lanes, room = p->room_lanes & ~p->wake_lanes;
	if ((lanes | room) == 0)
		return;
	p->wake_lanes = 0;
	p->room_lanes = 0;
	knit_fence_seq_cst(); // W1: pairs with W2 in worker_park() (above)
	wake_lanes_after_fence(p, lanes, room);
}

// Release the private-list hold of the calls in `batch` (under mu).
struct UnholdBatch {
	Call *c[64];
	uint32_t n;
};

void unhold_flush(Pool *p, UnholdBatch *b)
{
	if (b->n == 0)
		return;
	pthread_mutex_lock(&p->mu);
	for (uint32_t i = 0; i < b->n; i++)
		call_unhold_locked(p, b->c[i], kHoldHostQueue);
	pthread_mutex_unlock(&p->mu);
	b->n = 0;
}

void unhold_add(Pool *p, UnholdBatch *b, Call *c)
{
	if (b->n == 64)
		unhold_flush(p, b);
	b->c[b->n++] = c;
}

// Complete c with an error the dispatcher found (EPROTO etc.).
void complete_now(Pool *p, Call *c, int32_t status)
{
	pthread_mutex_lock(&p->mu);
	bool done = call_fail_locked(p, c, status);
	pthread_mutex_unlock(&p->mu);
	if (done)
		host_event(p, true);
}

bool backlog_queue_idle(Pool *p); // below

// The XOR of every ACK word of the steal submit lock (relaxed: only
// compared with the holder's own earlier look; what placing then reads is
// loaded afresh, with acquire, by the producer).
uint32_t steal_acks_now(Pool *p)
{
	uint32_t x = 0;
	for (uint32_t c = 0; c < p->nworkers; c++)
		x ^= knit_load_relaxed_32(word_at(p->steal.ctl, steal_ack_offset(c)));
	return x;
}

// Placing from the shared backlog stopped with no room on any lane (the
// steal submit lock, or every worker lane): note what would give room back
// (holder).
void backlog_note_full(Pool *p)
{
	p->backlog_full = true;
	if (p->steal.on) {
		p->steal.full_acks = steal_acks_now(p);
		return;
	}
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		const uint32_t *b = l->req.retire_word();
		l->full_b = b != nullptr ? knit_load_relaxed_32(b) : 0;
	}
}

// Would a flush of the backlog before an enqueue only repeat the last one,
// which stopped with every lane full (holder)? Yes while no push waits in
// the multi-producer queue, no pinned call waits, no worker has given
// room back since (stealing: no claim, every ACK word as it was -- the
// producer's free set is the XOR of them, and a claim frees the arena room
// its lanes held before it ACKs; lanes: every request lock's B as it was)
// and no worker has published a result since (nothing to reap, so no room
// from a reap and no completion to hand out). Then the enqueue appends its
// call behind the others and leaves the placing to the next flush that
// can place: after the workers' next retire or result, or the waiter's
// pass. Exact: what it skips would place nothing and reap nothing. A
// relaxed look, renewed by every pass (dispatch_pass clears the mark).
bool backlog_futile(Pool *p)
{
	if (!p->backlog_full || p->pin_waiting != 0 || p->nlanes != p->nworkers ||
	    !backlog_queue_idle(p))
		return false;
	if (p->steal.on && steal_acks_now(p) != p->steal.full_acks)
		return false;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		const Lane *l = &p->lanes[i];
		if (lane_state(l) == kLaneRetired)
			continue;
		const uint32_t *b = l->req.retire_word();
		if (!p->steal.on && (b == nullptr || knit_load_relaxed_32(b) != l->full_b))
			return false;
		if (knit_load_relaxed_32(l->ret.publish_word()) !=
		    knit_load_relaxed_32(&l->ret_seen))
			return false;
	}
	return true;
}

// Place what fits from one backlog queue, in order, stopping at the first
// call that cannot go now (holder only): every later call of the queue
// wants the same lanes, so it could not go either. Each call is examined
// once per placement, plus one head per pass: O(1) amortised per call.
void place_queue(Pool *p, Call **head, Call **tail, UnholdBatch *ub, bool shared)
{
	Call *c;
	// Taken out of backlog_count when the dispatcher is released, not per
	// call (backlog_placed; a call the same hold queues takes a placed
	// call's count over instead, so a hold that places one call and
	// queues one changes nothing): until then backlog_admit() sees the
	// backlog fuller than it is, never emptier, so max_pending still holds.
	uint64_t left = 0;
	while ((c = *head) != nullptr) {
		Call *const next = c->next; // placing on the inline lane relinks c
		// A deep backlog's records are cold by the time they are placed:
		// fetch the next one's lines (its link, flags, argument, state)
		// while this one is placed.
		if (next != nullptr) {
			const char *nx = reinterpret_cast<const char *>(next);
			__builtin_prefetch(nx);
			__builtin_prefetch(nx + 64);
			__builtin_prefetch(nx + 128);
		}
		p->backlog_visits++;
		bool keep_hold = false;
		// A stale 0 only publishes a call that was just cancelled: its
		// late result is dropped.
		if (!knit_load_relaxed_32(&c->completed)) {
			int rc = place(p, c);
			if (rc == -KNIT_EAGAIN) {
				// A pinned call found its own lane full (except
				// stealing: one submit lock for every call).
				if (shared || p->steal.on)
					backlog_note_full(p);
				break;
			}
			if (rc == 0) {
				// The lane (or the inline FIFO) keeps it until its
				// frame is reaped (or the inline lane ran it).
				keep_hold = true;
			} else {
				complete_now(p, c, rc == -KNIT_ECRASHED ? rc : -KNIT_EPROTO);
			}
		}
		*head = next;
		if (next == nullptr)
			*tail = nullptr;
		left++;
		if (!keep_hold)
			unhold_add(p, ub, c);
	}
	p->backlog_placed += left;
}

// Class by class, high first: each lane's pinned calls of the class (they
// can go nowhere else), then the class's shared list. A call of a lower
// class goes only after every call of a higher class that could take the
// same lane (a higher call that waits for a full lane does not hold back a
// lower one bound for another).
void place_backlog(Pool *p, UnholdBatch *ub)
{
	for (uint32_t k = 0; k < kClasses; k++) {
		for (uint64_t m = p->pin_waiting; m != 0; m &= m - 1) {
			Lane *l = &p->lanes[__builtin_ctzll(m)];
			if (l->pin_head[k] == nullptr)
				continue;
			place_queue(p, &l->pin_head[k], &l->pin_tail[k], ub, false);
			if (l->pin_head[0] == nullptr && l->pin_head[1] == nullptr &&
			    l->pin_head[2] == nullptr)
				p->pin_waiting &= ~(1ull << l->index);
		}
		if (p->pb_head[k] != nullptr) {
			place_queue(p, &p->pb_head[k], &p->pb_tail[k], ub, true);
			if (p->pb_head[k] == nullptr)
				p->pb_waiting &= ~(1u << k);
		}
	}
}

// Place what fits from the private backlog (holder only). When calls are
// left because the lanes are full, take the results the workers already
// published (their slots come back) and place again: a host that only
// enqueues then keeps the workers fed, instead of leaving everything past
// the lanes' capacity for its next knit_complete(), which would then
// alternate with the workers (it waits while they run a lane's worth, they
// wait while it reaps and places the next). Not while another host thread
// sleeps in a wait (host_waiters; a relaxed look, only a choice): the
// workers' ring wakes it for these results anyway, and completions we
// produced would wake it for every small bunch (a futex wake and, on a
// shared CPU, a context switch each).
void place_private(Pool *p)
{
	UnholdBatch ub;
	ub.n = 0;
	place_backlog(p, &ub);
	if ((p->pb_waiting != 0 || p->pin_waiting != 0) &&
	    knit_load_relaxed_32(&p->host_waiters) == 0) {
		uint32_t produced = 0;
		bool room = false;
		for (uint32_t i = 0; i < p->nworkers; i++) {
			Lane *l = &p->lanes[i];
			const uint32_t before = l->inflight;
			produced += lane_reap(p, l);
			room |= l->inflight < before;
		}
		if (produced)
			host_event(p, true);
		if (room)
			place_backlog(p, &ub);
	}
	flush_staged(p);
	unhold_flush(p, &ub);
}

// ---- deadlines, hard timeout, inline lane ------------------------------------------------

uint32_t expire_deadlines(Pool *p, int64_t now)
{
	int64_t ed = earliest_deadline(p);
	if (ed == 0 || ed > now)
		return 0;
	uint32_t n = 0;
	pthread_mutex_lock(&p->mu);
	Call *t;
	while ((t = p->heap.top()) != nullptr && t->deadline_ns <= now) {
		if (call_fail_locked(p, t, -KNIT_ETIMEDOUT))
			n++;
		else {
			KNIT_DCHECK(!"a completed record stayed in the deadline heap");
			p->heap.remove(t); // (release builds: take it out and go on)
		}
	}
	pthread_mutex_unlock(&p->mu);
	return n;
}

void force_stop(Pool *p)
{
	pthread_mutex_lock(&p->mu);
	knit_store_relaxed_32(&p->closed, 1);
	knit_store_relaxed_32(&p->forced, 1);
	pthread_mutex_unlock(&p->mu);
	cancel_all(p);
	request_worker_stop(p);
}

uint32_t check_hard_timeout(Pool *p, int64_t now)
{
	if (p->cfg.hard_timeout_ms == 0 || knit_load_relaxed_32(&p->forced))
		return 0;
	const int64_t limit = (int64_t)p->cfg.hard_timeout_ms * 1000000;
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		LaneStamp s;
		// s.start is a worker-written word: compare without arithmetic on it.
		if (!lane_read_stamp(&p->lanes[i], &s) || s.start >= now - limit)
			continue;
		Call *c = p->tickets.lookup(s.ticket);
		if (c == nullptr)
			continue;
		// The stamp counts only for a call this worker holds; a claim
		// made since the last reap is attributed first.
		steal_track(p);
		pthread_mutex_lock(&p->mu);
		const bool named = c->live && c->gen == s.gen && !c->completed;
		if (named && c->lane != i && p->steal.on &&
		    (p->steal.misled || p->untrusted_workers)) {
			// Stealing, once a worker's ACK word lied, and always among
			// worker processes (handle_result, lane.cpp): a call it runs
			// misled by that is not its to time out, and not held
			// against it.
			pthread_mutex_unlock(&p->mu);
			continue;
		}
		if (named && c->lane != i) {
			// A forged stamp naming a call this worker does not hold:
			// never the pool, never that call (its holder answers it);
			// the forger is retired.
			knit_add_relaxed_64(&p->st_proto_errors, 1);
			pthread_mutex_unlock(&p->mu);
			lane_distrust(p, i);
			continue;
		}
		// A worker process is killed for it (hard_kill below): the
		// call's info says so, before anyone can reap it.
		const int32_t pid = named ? p->workers->pid(p, i) : 0;
		if (pid != 0)
			info_death_locked(p, c, i, pid, KNIT_DEATH_HARD_TIMEOUT, SIGKILL);
		bool hit = named && call_fail_locked(p, c, -KNIT_ETIMEDOUT);
		pthread_mutex_unlock(&p->mu);
		if (hit) {
			n++;
			// A worker of a kind that can be killed (a process): only
			// its lane is lost, the pool keeps serving. Else (a thread)
			// the whole pool stops.
			if (p->workers->hard_kill(p, i))
				continue;
			force_stop(p);
			break;
		}
	}
	return n;
}

uint32_t run_inline(Pool *p)
{
	if (p->nlanes == p->nworkers)
		return 0;
	Lane *l = &p->lanes[p->nworkers];
	uint32_t ran = 0, produced = 0;
	while (ran < p->cfg.inline_batch && l->inl_head != nullptr) {
		Call *c = l->inl_head;
		l->inl_head = c->next;
		if (l->inl_head == nullptr)
			l->inl_tail = nullptr;
		if (l->inflight > 0)
			l->inflight--;
		knit_fetch_add_relaxed_32(&p->inline_queued, (uint32_t)-1);
		knit_value_t val;
		memset(&val, 0, sizeof val);
		uint8_t *buf = nullptr;
		int32_t status;
		int64_t t0 = 0, t1 = 0, cpu = 0; // a timed pool's (src/info.h)
		if (knit_load_relaxed_32(&c->completed)) {
			pthread_mutex_lock(&p->mu);
			call_unhold_locked(p, c, kHoldHostQueue);
			pthread_mutex_unlock(&p->mu);
			continue;
		}
		if (c->deadline_ns != 0 && knit_now_ns() >= c->deadline_ns) {
			status = -KNIT_ETIMEDOUT; // skipped, never run
		} else {
			knit_ctx ctx;
			ctx_init(&ctx, p, l->index, c->abort_bit, c->deadline_ns, nullptr);
			TaskOutcome o;
			if (p->info.timing) {
				t0 = tick_now();
				cpu = p->cfg.cpu_time ? thread_cpu_ns() : 0;
			}
			KNIT_TRACE_TASK_START(p, l->index, ticket_of(c));
			run_task(p, &ctx, c->task, c->arg, &o);
			KNIT_TRACE_TASK_DONE(p, l->index, ticket_of(c), o.status);
			if (p->info.timing) {
				cpu = p->cfg.cpu_time ? thread_cpu_ns() - cpu : -1;
				t1 = tick_now();
			}
			status = o.status;
			if ((status == 0 || status == -KNIT_ETASK) &&
			    value_copy(o.value, &val, &buf) != 0) {
				status = -KNIT_ENOMEM;
				memset(&val, 0, sizeof val);
			}
			ctx_free_allocs(&ctx);
			knit_add_relaxed_64(&p->st_inline_calls, 1);
			ran++;
		}
		pthread_mutex_lock(&p->mu);
		// Timing, before the completion reuses t_enq (one that came
		// meanwhile -- a cancel -- reused it already: no timing then).
		if (t0 != 0 && !c->completed && c->t_enq != 0) {
			if (CallNote *n = info_note_take_locked(p, c))
				info_ran_locked(n, c, l->index, 0, c->t_enq, t0, t1, cpu, t1);
		}
		if (call_complete_locked(p, c, status, val, buf))
			produced++;
		call_unhold_locked(p, c, kHoldHostQueue);
		pthread_mutex_unlock(&p->mu);
	}
	return produced;
}

// When must a sleeping host look again, at the latest? slice_ns < 0: no
// periodic look. Returns an absolute time, or -1 for "not until woken".
int64_t next_wake(Pool *p, int64_t now, int64_t slice_ns)
{
	int64_t wake = slice_ns < 0 ? INT64_MAX : deadline_after(now, slice_ns, INT64_MAX);
	int64_t ed = earliest_deadline(p);
	if (ed != 0 && ed < wake)
		wake = ed;
	if (p->cfg.hard_timeout_ms != 0 && knit_load_relaxed_64(&p->outstanding) != 0) {
		const int64_t limit = (int64_t)p->cfg.hard_timeout_ms * 1000000;
		if (now + limit < wake)
			wake = now + limit;
		for (uint32_t i = 0; i < p->nworkers; i++) {
			LaneStamp s;
			// s.start < wake - limit: no overflow whatever the worker wrote.
			if (lane_read_stamp(&p->lanes[i], &s) && s.start < wake - limit)
				wake = s.start + limit + 1;
		}
	}
	return wake == INT64_MAX ? -1 : wake;
}

// The re-check of a host about to sleep (SleepRecheck, wake.h): true when
// it must not sleep, else when to look again.
struct SleepCheck {
	ReadyFn ready;
	void *arg;
	int64_t deadline_ns; // absolute, < 0 = none
	int64_t slice;       // periodic look (backoff ladder), < 0 = none
	bool refill;         // armed for a refill (spin.h): results alone do not count
};

bool sleep_recheck(Pool *p, void *arg, int64_t *wake_at)
{
	const SleepCheck *s = static_cast<const SleepCheck *>(arg);
	const int64_t now = knit_now_ns();
	// Work waiting for a pass keeps us awake, unless another thread holds
	// the dispatcher: it looks for such work after releasing it (Dekker:
	// its release + fence + load of host_waiters against our increment +
	// D1 fence + load of the lock) and wakes us if it left any.
	const bool held = knit_load_relaxed_32(&p->dispatch_lock) != 0;
	const bool work = s->refill ? host_work_pending(p, now) || host_refill_recheck(p)
				    : work_pending(p, now);
	if (s->ready(p, s->arg) || (!held && work) ||
	    (s->deadline_ns >= 0 && now >= s->deadline_ns))
		return true;
	int64_t wake = next_wake(p, now, s->slice);
	if (s->deadline_ns >= 0 && (wake < 0 || s->deadline_ns < wake))
		wake = s->deadline_ns;
	*wake_at = wake;
	return false;
}

// Sleep until something may have happened (see the file comment).
void host_sleep(Pool *p, ReadyFn ready, void *arg, int64_t deadline_ns, uint32_t stall)
{
	const bool doorbell = p->cfg.doorbell;
	// With the doorbell, sleep until woken or the next deadline (call
	// deadline, hard timeout), with no periodic watchdog: every event that
	// can make a waiter ready bumps the sequence we sleep on (a worker's
	// ring, host_event() after completions, stop, inline work or a new
	// earliest deadline; tests/model/doorbell.pml and host_event.pml).
	int64_t slice = -1;
	if (!doorbell) {
		slice = host_backoff_ns(p, stall); // the backoff ladder (spin.h)
		if (slice == 0) {
			sched_yield();
			return;
		}
	}
	// Calls a worker has not claimed since our last look: a parked worker
	// takes them (spin.h "claims and wakes").
	host_steal_unstick(p, &slice);
	// With every CPU running a worker and calls queued behind a full
	// submit lock, wait to be needed for a refill (spin.h), not for each
	// result.
	SleepCheck sc = {ready, arg, deadline_ns, slice, doorbell && host_refill_arm(p)};
	host_doorbell_sleep(p, doorbell, sleep_recheck, &sc, &sc.refill);
}

// Count up to n calls into the backlog at once (any thread): how many were
// counted in, within max_pending (one RMW; a second gives back what did
// not fit), and the high-water mark raised to what this admission brought
// the count to.
//
// The bound: between another producer's two RMWs the count holds that
// producer's excess, calls it will give back, so the count a producer adds
// to (old) is never below what is admitted, and fit = max - old (at most)
// keeps what is admitted within max_pending. Such an excess can only make
// an admission take less than the room there is, never more.
//
// The mark is old + fit (at most max_pending), from this RMW's own result:
// a reload of backlog_count after the admission could read another
// producer's excess before its give-back, more than was ever admitted.
// Every rise of the admitted count is one admission (or a requeue, which
// records its own), so the mark still reaches the most ever admitted.
uint32_t backlog_admit_many(Pool *p, uint32_t n)
{
	const uint64_t old = knit_fetch_add_relaxed_64(&p->backlog_count, n);
	const uint64_t max = p->cfg.max_pending;
	if (old + n <= max) {
		backlog_hw_update(p, old + n);
		return n;
	}
	const uint64_t fit = old < max ? max - old : 0;
	knit_fetch_add_relaxed_64(&p->backlog_count, (uint64_t)0 - (n - fit));
	if (fit != 0)
		backlog_hw_update(p, old + fit);
	return (uint32_t)fit;
}

// backlog_admit_many() for the dispatcher's holder: a call placed in this
// hold is still counted (backlog_placed), so a new call takes its count
// over, with no RMW: the count stays what it was, which was within
// max_pending (and no higher than the mark already is). Placed calls'
// counts first.
uint32_t backlog_admit_many_held(Pool *p, uint32_t n)
{
	const uint32_t take = p->backlog_placed < n ? (uint32_t)p->backlog_placed : n;
	p->backlog_placed -= take;
	return take == n ? n : take + backlog_admit_many(p, n - take);
}

bool backlog_admit(Pool *p) { return backlog_admit_many(p, 1) != 0; }
bool backlog_admit_held(Pool *p) { return backlog_admit_many_held(p, 1) != 0; }

// Push c into the multi-producer backlog queue (a thread that does not
// hold the dispatcher, after backlog_admit). c may be placed, run and
// recycled by the holder from here on: not touched again.
void backlog_push(Pool *p, Call *c)
{
	cds_wfcq_node_init(&c->qnode);
	// Release: pairs with the dispatcher's acquire load of pub after it
	// dequeues the node (dispatch_flush_backlog).
	knit_store_release_32(&c->pub, 1);
	cds_wfcq_enqueue(__cds_wfcq_head_cast(&p->bq_head), &p->bq_tail, &c->qnode);
}

// After one or more backlog_push(): pairs with the fence in
// dispatch_unlock() after the release: either the holder sees our nodes or
// our try-lock succeeds (and we place them).
void backlog_pushed(Pool *p)
{
	knit_fence_seq_cst();
	if (dispatch_trylock(p)) {
		dispatch_flush_backlog(p);
		dispatch_unlock(p);
	}
}

// The lanes are full: take the results the workers already published
// (their slots come back), ringing host waiters for what that completed.
void reap_for_room(Pool *p)
{
	uint32_t produced = 0;
	for (uint32_t i = 0; i < p->nworkers; i++)
		produced += lane_reap(p, &p->lanes[i]);
	if (produced)
		host_event(p, true);
}

// No push into the multi-producer backlog queue has begun since it was
// last emptied: its tail is still the head's own node (a pusher moves the
// tail first, with an atomic exchange, then links its node). Relaxed, as
// cds_wfcq_empty()'s loads; a push that began is never missed by a caller
// that fenced after the pusher's try-lock could fail (dispatch_unlock).
bool backlog_queue_idle(Pool *p)
{
	return __atomic_load_n(&p->bq_tail.p, __ATOMIC_RELAXED) == &p->bq_head.node;
}

// The private list c waits on (its lane's pinned queue of its class, or
// the pool's list of its class), marked as having calls waiting.
void backlog_list(Pool *p, const Call *c, Call ***head, Call ***tail)
{
	const uint32_t k = call_class(c->flags);
	KNIT_DCHECK(k < kClasses);
	if (c->flags & kCallPinned) {
		Lane *l = &p->lanes[c->pin_lane];
		*head = &l->pin_head[k];
		*tail = &l->pin_tail[k];
		p->pin_waiting |= 1ull << c->pin_lane;
	} else {
		*head = &p->pb_head[k];
		*tail = &p->pb_tail[k];
		p->pb_waiting |= 1u << k;
	}
}

// This thread's look at the pool's enqueue count at its last pre-sleep point.
__thread uint64_t t_enq_seen;

// Instead of sleeping: yield the CPU when calls were enqueued since our
// last look; true (go on waiting, unslept) when the yield gave the CPU away
// for at least a spin and calls were enqueued meanwhile. Bounded by the
// enqueuers: with none (an idle pool, a lone caller) it yields at most once
// per wait and sleeps; an enqueuer on another CPU does not keep it busy
// (nothing else runs here, the yield returns at once). The count is a
// relaxed look, only a choice: sleeping is always safe.
bool doorbell_yield(Pool *p)
{
	if (!p->cfg.doorbell)
		return false; // the backoff ladder yields already
	const uint64_t e0 = knit_load_relaxed_64(&p->st_enqueued);
	if (e0 == t_enq_seen)
		return false; // nothing enqueued since our last look: sleep
	t_enq_seen = e0;
	const int64_t t0 = knit_now_ns();
	sched_yield();
	return knit_load_relaxed_64(&p->st_enqueued) != e0 && knit_now_ns() - t0 >= kHostSpinNs;
}

} // namespace

// ---- public-to-the-runtime functions --------------------------------------------------

void backlog_hw_update(Pool *p, uint64_t now_count)
{
	uint64_t hw = knit_load_relaxed_64(&p->backlog_hw);
	while (now_count > hw) {
		uint64_t seen = knit_cas_relaxed_64(&p->backlog_hw, hw, now_count);
		if (seen == hw)
			break;
		hw = seen;
	}
}

int dispatch_submit(Pool *p, Call *c)
{
	bool placed_direct = false, queued = false;
	if (dispatch_trylock(p)) {
		// Most holds find nothing waiting (no push begun, both private
		// lists empty): dispatch_flush_backlog() would do nothing. Nor
		// one that would only stop where the last one stopped.
		if ((!backlog_queue_idle(p) || p->pb_waiting != 0 || p->pin_waiting != 0) &&
		    !backlog_futile(p))
			dispatch_flush_backlog(p);
		if (dispatch_backlog_clear_for(p, c)) {
			placed_direct = dispatch_place_new(p, c);
			// A placed call keeps its host-queue hold until it ran
			// (inline lane) or its frame was reaped (worker lanes).
			if (placed_direct && c->lane != kNoLane)
				queued = true;
		}
		if (!placed_direct && backlog_admit_held(p)) {
			dispatch_backlog_append(p, c);
			queued = true;
		}
		dispatch_unlock(p);
	} else if (backlog_admit(p)) {
		queued = true;
		backlog_push(p, c);
		backlog_pushed(p);
	}
	if (!placed_direct && !queued)
		return -KNIT_EAGAIN; // backlog full (max_pending)
	return queued ? 1 : 0;
}

uint32_t dispatch_submit_many(Pool *p, Call *const *calls, uint32_t n)
{
	uint32_t i = 0;
	if (dispatch_trylock(p)) {
		if (!backlog_queue_idle(p) || p->pb_waiting != 0 || p->pin_waiting != 0)
			dispatch_flush_backlog(p);
		// Placed at once while no call like it waits, as dispatch_submit()
		// (dispatch_place_new) does one by one, but published once per
		// lane: only when a lane is full are its frames published and the
		// workers woken early (they run while we stage the rest), and what
		// they answered reaped for room. Each round places a call or ends
		// the loop: bounded by n.
		for (; i < n; i++) {
			Call *c = calls[i];
			if (!dispatch_backlog_clear_for(p, c))
				break;
			int rc = place(p, c);
			if (rc == -KNIT_EAGAIN) {
				flush_staged(p);
				wake_published(p); // W1 (its fence) before the looks
				reap_for_room(p);
				rc = place(p, c);
			}
			if (rc == -KNIT_EAGAIN)
				break; // the rest wait in the backlog
			if (rc != 0) {
				// Never publishable: completed, and no queue keeps it
				// (the enqueuer's drop of kHoldHostQueue in enqueue()).
				complete_now(p, c, rc == -KNIT_ECRASHED ? rc : -KNIT_EPROTO);
				pthread_mutex_lock(&p->mu);
				call_unhold_locked(p, c, kHoldHostQueue);
				pthread_mutex_unlock(&p->mu);
			}
			// Placed: the lane (or the inline FIFO) keeps its hold.
		}
		flush_staged(p);
		if (i < n) {
			// The rest in order behind what waits, within max_pending.
			const uint32_t admitted = backlog_admit_many_held(p, n - i);
			for (uint32_t j = 0; j < admitted; j++)
				dispatch_backlog_append(p, calls[i + j]);
			i += admitted;
			if (admitted != 0) {
				// What fits now (reaping first when the lanes are full),
				// as the next enqueue's flush of the backlog would.
				place_private(p);
			}
		}
		dispatch_unlock(p);
		return i;
	}
	// Another thread holds the dispatcher: the wait-free backlog queue, as
	// dispatch_submit(), with one fence and one try-lock for the lot.
	const uint32_t admitted = backlog_admit_many(p, n);
	if (admitted == 0)
		return 0;
	for (; i < admitted; i++)
		backlog_push(p, calls[i]);
	backlog_pushed(p);
	return admitted;
}

bool dispatch_trylock(Pool *p)
{
	if (knit_load_relaxed_32(&p->dispatch_lock) != 0)
		return false;
	// Acquire: pairs with the release store in dispatch_unlock(): the
	// previous holder's dispatcher-owned state is visible to us.
	return knit_cas_acq_rel_32(&p->dispatch_lock, 0, 1) == 0;
}

void dispatch_unlock(Pool *p)
{
	bool blocked = false;
	for (;;) {
		// Holder-owned until the release below.
		const uint64_t published = p->wake_lanes, room = p->room_lanes & ~p->wake_lanes;
		p->wake_lanes = 0;
		p->room_lanes = 0;
		if (p->backlog_placed != 0) {
			knit_fetch_add_relaxed_64(&p->backlog_count,
						  (uint64_t)0 - p->backlog_placed);
			p->backlog_placed = 0;
		}
		// Release: pairs with the acquire CAS in dispatch_trylock().
		knit_store_release_32(&p->dispatch_lock, 0);
		// W1: pairs with the worker's W2 fence in worker_park() (the
		// lanes this hold published or gave room back: their release
		// stores of A or B came before this fence;
		// wake_lanes_after_fence); and
		// with the fence in dispatch_submit (after its backlog push,
		// before its try-lock): either it gets the lock or we see its call
		// below; and
		// (H1) with the D1 fence in host_doorbell_sleep(): a host that
		// went to sleep because we held the lock is woken when we leave
		// work behind (results not reaped, inline calls not run,
		// deadlines not expired).
		knit_fence_seq_cst();
		wake_lanes_after_fence(p, published, room);
		if (knit_load_relaxed_32(&p->host_waiters) != 0 && work_pending(p, 0))
			host_event(p, false);
		// The same for an event loop: while we held the dispatcher, the
		// fd did not count the work waiting for our pass (efd_pending);
		// this re-check after the release does (Dekker, E3: this fence
		// against the one before efd_pending()'s load of dispatch_lock).
		// E2, acquire: pairs with the release store of efd_on (E1).
		if (knit_load_acquire_32(&p->efd_on) && work_pending(p, 0))
			efd_sync(p);
		// A half-pushed node blocked our last drain: its pusher try-locks
		// after finishing the push, so it is not stranded.
		if (blocked)
			return;
		if (backlog_queue_idle(p))
			return;
		if (!dispatch_trylock(p))
			return; // the holder re-checks after us
		blocked = !dispatch_flush_backlog(p);
	}
}

void dispatch_backlog_append(Pool *p, Call *c)
{
	counter_bump(&p->st_backlogged); // every call that waits passes here once
	counter_bump(&p->st_class_backlogged[call_class(c->flags)]);
	c->next = nullptr;
	Call **head, **tail;
	backlog_list(p, c, &head, &tail);
	if (*tail)
		(*tail)->next = c;
	else
		*head = c;
	*tail = c;
}

void dispatch_backlog_requeue(Pool *p, Call *const *calls, uint32_t n)
{
	if (n == 0)
		return;
	for (uint32_t i = n; i-- > 0;) {
		Call *c = calls[i];
		Call **head, **tail;
		backlog_list(p, c, &head, &tail);
		c->next = *head;
		*head = c;
		if (*tail == nullptr)
			*tail = c;
		counter_bump(&p->st_class_backlogged[call_class(c->flags)]);
	}
	counter_add(&p->st_backlogged, n);
	// place_queue takes every call it removes out of the count again.
	backlog_hw_update(p, knit_fetch_add_relaxed_64(&p->backlog_count, n) + n);
}

bool dispatch_backlog_clear_for(Pool *p, const Call *c)
{
	// Nothing of its class or a higher one waits where it would go.
	const uint32_t k = call_class(c->flags);
	if (c->flags & kCallPinned) {
		const Lane *l = &p->lanes[c->pin_lane];
		for (uint32_t j = 0; j <= k; j++)
			if (l->pin_head[j] != nullptr)
				return false;
		return true;
	}
	return (p->pb_waiting & ((2u << k) - 1)) == 0;
}

bool dispatch_flush_backlog(Pool *p)
{
	bool got = false, blocked = false;
	// Nobody has begun a push since the last dequeue emptied the queue
	// (the common case: an enqueuer that gets the dispatcher never pushes):
	// nothing to take, without the library call.
	for (; !backlog_queue_idle(p);) {
		cds_wfcq_node *n = __cds_wfcq_dequeue_nonblocking(__cds_wfcq_head_cast(&p->bq_head),
								  &p->bq_tail);
		if (n == nullptr)
			break;
		if (n == CDS_WFCQ_WOULDBLOCK) {
			blocked = true;
			break;
		}
		Call *c = call_of_node(n);
		// Acquire: pairs with the release store of pub before the push
		// (the queue orders it too; this makes the handoff explicit).
		(void)knit_load_acquire_32(&c->pub);
		dispatch_backlog_append(p, c);
		got = true;
	}
	while (p->steal.orphans != nullptr) { // steal_orphan's, to be sent again
		Call *c = p->steal.orphans;
		p->steal.orphans = c->next;
		dispatch_backlog_requeue(p, &c, 1);
	}
	if (p->pb_waiting != 0 || p->pin_waiting != 0)
		place_private(p);
	return got || !blocked;
}

bool dispatch_place_new(Pool *p, Call *c)
{
	int rc = place(p, c);
	if (rc == -KNIT_EAGAIN) {
		reap_for_room(p); // lanes full: reaping may give room back
		rc = place(p, c);
	}
	if (rc == 0) {
		flush_placed(p, c);
		return true;
	}
	if (rc != -KNIT_EAGAIN) {
		complete_now(p, c, rc == -KNIT_ECRASHED ? rc : -KNIT_EPROTO);
		return true; // completed: nothing to queue
	}
	return false;
}

uint32_t dispatch_pass(Pool *p, bool with_inline)
{
	p->backlog_full = false; // a pass always tries (backlog_futile)
	uint32_t produced = 0;
	for (uint32_t i = 0; i < p->nworkers; i++)
		produced += lane_reap(p, &p->lanes[i]);
	// Distrusted workers (lane_distrust) that have stopped: their lanes
	// retire.
	for (uint32_t w = 0; p->lanes_distrusted != 0 && w < p->nworkers; w++) {
		// Acquire: pairs with the worker's release store of ACKNOWLEDGED
		// (acknowledge_stop): it left its loop, writes nothing more.
		if (p->lanes[w].state == kLaneDistrusted &&
		    knit_load_acquire_32(p->lanes[w].stop) == kStopAcknowledged) {
			LaneLoss loss = {-KNIT_EPROTO, kLaneRetire, nullptr, nullptr, {}, 0};
			produced += lane_lost(p, w, &loss);
		}
	}
	dispatch_flush_backlog(p);
	// The clock only for a call's deadline or the hard timeout (a trim reads
	// its own, only for an arena above its floor): a pass without either
	// reads none.
	const int64_t now =
		earliest_deadline(p) != 0 || p->cfg.hard_timeout_ms != 0 ? knit_now_ns() : 0;
	if (now != 0) {
		produced += expire_deadlines(p, now);
		produced += check_hard_timeout(p, now);
	}
	host_arena_trim(p, now); // idle lanes give their request arena back (trim.cpp)
	if (with_inline) {
		wake_published(p); // the workers run while we run inline tasks
		produced += run_inline(p);
	}
	if (produced)
		host_event(p, true); // the fd: only for what knit_complete returns (efd_sync)
	return produced;
}

bool host_wait(Pool *p, ReadyFn ready, void *arg, int64_t deadline_ns, bool poll)
{
	uint32_t stall = 0;
	int64_t spin_left = kHostSpinNs;
	for (;;) {
		if (ready(p, arg))
			return true;
		bool ran = false;
		if (dispatch_trylock(p)) {
			uint32_t n = dispatch_pass(p, true);
			dispatch_unlock(p);
			ran = true;
			if (ready(p, arg))
				return true;
			if (n != 0) {
				// Only completions reset the stall count: a pass that
				// merely placed calls brought the waiter nothing.
				stall = 0;
				continue;
			}
			stall++;
		}
		if (poll)
			return false;
		if (deadline_ns >= 0 && knit_now_ns() >= deadline_ns)
			return ready(p, arg);
		if (ran && stall <= p->cfg.stall_free_loops)
			continue; // a free pass
		// Before arming: a short bounded spin while calls are in flight, so
		// a hot round trip costs no futex sleep (a pass is far cheaper than
		// a worker's round trip, so the free passes alone would arm the
		// doorbell before any worker could answer).
		// While the pool's awake workers fill every CPU, only if such
		// spins pay (spin.h).
		// If this thread just woke a worker, the spin goes on through the
		// wake's measured latency, so the result does not need a second
		// wake (spin.h).
		HostSpin s;
		int64_t t0;
		if (spin_left > 0 && knit_load_relaxed_64(&p->outstanding) != 0 &&
		    (t0 = host_spin_open(p, &s, 0, spin_left)) != 0) {
			bool found = false;
			for (uint32_t i = 1;; i++) {
				if (ready(p, arg) || work_pending(p, t0)) {
					found = true;
					break;
				}
				knit_cpu_relax();
				if ((i & 63) == 0 &&
				    knit_now_ns() >= s.end) // the clock costs more than a round
					break;
			}
			spin_left -= knit_now_ns() - t0;
			host_spin_close(&s, found);
			if (found) {
				host_wake_seen(p);
				continue;
			}
		}
		// A waiter sharing its CPU with a thread that is still enqueuing
		// (a stream reaped by another thread): a doorbell sleep would be
		// rung for the first result and preempt that thread every few
		// calls. Give it the CPU instead, for as long as each yield
		// lets another thread enqueue for at least a spin's time;
		// otherwise (nobody else ran, or nobody enqueued) sleep.
		if (doorbell_yield(p))
			continue;
		host_sleep_begin();
		host_sleep(p, ready, arg, deadline_ns, stall);
		host_sleep_end();
		host_wake_seen(p);
	}
}

void cancel_all(Pool *p)
{
	pthread_mutex_lock(&p->mu);
	calls_fail_all_locked(p, -KNIT_ECLOSED);
	pthread_mutex_unlock(&p->mu);
	host_event(p, true);
}

void request_worker_stop(Pool *p)
{
	knit_store_relaxed_32(&p->workers_stopping, 1);
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		// RUNNING -> REQUESTED (only the host moves it there; the worker
		// moves it on to ACKNOWLEDGED). acq_rel: pairs with the worker's
		// acquire load of the stop word at the top of its pass. The probe
		// fires before the CAS: the worker may acknowledge at once.
		if (knit_load_relaxed_32(l->stop) == kStopRunning)
			KNIT_TRACE_STOP_REQUEST(p, i);
		knit_cas_acq_rel_32(l->stop, kStopRunning, kStopRequested);
		// A worker being recycled (src/lane.h) stops for good too: RETIRE
		// -> REQUESTED, paired as the CAS above. Whichever of the two
		// CASes the recycle's RUNNING -> RETIRE falls between, the word
		// ends REQUESTED.
		knit_cas_acq_rel_32(l->stop, kStopRetire, kStopRequested);
	}
	// W1: pairs with the worker's W2 fence in worker_park() between its
	// store of parked and its re-check of the stop word.
	knit_fence_seq_cst();
	for (uint32_t i = 0; i < p->nworkers; i++)
		lane_wake(p, &p->lanes[i], false);
}

void backlog_drop_completed(Pool *p, int64_t deadline_ns)
{
	// Every call is completed (cancel_all after closed): a flush removes
	// them all from both backlog lists without placing any. Whoever holds
	// the dispatcher may have walked the private list before cancel_all,
	// so take it ourselves, retrying (bounded by the stop's deadline) while
	// another thread holds it or a pusher is half-way through a push.
	while (knit_load_relaxed_64(&p->backlog_count) != 0) {
		if (dispatch_trylock(p)) {
			dispatch_flush_backlog(p);
			dispatch_unlock(p);
			if (knit_load_relaxed_64(&p->backlog_count) == 0)
				break;
		}
		if (deadline_ns >= 0 && knit_now_ns() >= deadline_ns)
			break;
		sched_yield();
	}
}

} // namespace knit::detail
