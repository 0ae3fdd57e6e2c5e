// SPDX-License-Identifier: MIT
// src/api.cpp - the host-side entries of the C ABI: enqueue, complete, call,
// cancel, the completion eventfd and completion release (create, stop and
// destroy are src/pool.cpp's). Argument
// checks come first and never touch the pool's state; then each entry calls
// into the rooms: src/calls.h (records, completion, hand-out),
// src/dispatch.cpp (admission: dispatch_submit; the waiting ladder) and
// src/wake.h (host events, the eventfd). Every accepted call ends in exactly
// one completion (src/calls.h has the record's life).
#include "src/common.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "src/calls.h"
#include "src/chunk.h"
#include "src/error.h"
#include "src/info.h"
#include "src/runtime.h"
#include "src/syncline.h"
#include "src/tick.h"
#include "src/wake.h"
#include "src/workers.h"

using namespace knit::detail;

namespace {

struct EnqueueArgs {
	uint32_t task;
	uint32_t flags; // CallFlag
	uint32_t pin_lane;
	bool abortable;
	int64_t deadline_ns; // 0 = none
	void *user_data;
};

// The caller's argument (NULL = KNIT_VALUE_NONE) as the call keeps it: only
// the members its type gives meaning to, the others 0 (what a task on a
// worker lane sees after the codec, and now an inline task too). Read
// member by member: a caller usually builds the value with one store per
// member, which a load of the same member is forwarded from, while a
// whole-struct copy (16-byte loads across two stores) waits for those
// stores to reach the cache.
[[gnu::always_inline]] inline void value_take(const knit_value_t *src, knit_value_t *v)
{
	memset(v, 0, sizeof *v);
	if (src == nullptr)
		return;
	const uint32_t type = src->type;
	v->type = type;
	switch (type) {
	case KNIT_VALUE_NONE:
		break;
	case KNIT_VALUE_BOOL:
	case KNIT_VALUE_I64:
		v->i64 = src->i64;
		break;
	case KNIT_VALUE_F64:
		v->f64 = src->f64;
		break;
	case KNIT_VALUE_ERROR:
		v->code = src->code;
		[[fallthrough]];
	default: // BYTES, STRING; an unknown type is refused by codec_value_check
		v->data = src->data;
		v->len = src->len;
		break;
	}
}

int64_t deadline_after_ms(uint32_t ms)
{
	return deadline_after(knit_now_ns(), (int64_t)ms * 1000000, 0);
}

// A call's argument `arg_in` (may be NULL) checked and taken (value_take)
// into *arg, its bytes copied into *buf (malloc'd; nullptr for a scalar):
// 0, or the code the enqueue fails with (nothing kept). The caller's
// buffer is theirs again when the enqueue returns.
[[gnu::always_inline]] inline int take_arg(Pool *p, const knit_value_t *arg_in, knit_value_t *arg,
					   uint8_t **buf)
{
	value_take(arg_in, arg);
	*buf = nullptr;
	int rc = codec_value_check(*arg, p->cfg.max_payload_bytes);
	if (rc != 0)
		return rc;
	if (knit_load_relaxed_32(&p->closed))
		return pool_closed_code(p);
	if (codec_has_bytes(arg->type)) {
		if (arg->len > 0) {
			uint8_t *b = static_cast<uint8_t *>(malloc(arg->len + 1));
			if (b == nullptr)
				return -KNIT_ENOMEM;
			memcpy(b, arg->data, arg->len);
			b[arg->len] = 0;
			arg->data = b;
			*buf = b;
		} else {
			arg->data = "";
		}
	}
	return 0;
}

// No record (or abort bit) for a new call (mu released): every record is
// taken by a call not yet handed out. A host that only enqueues and retries
// must still see those calls complete: the usual passes run in enqueues
// that succeed and in knit_complete, and this one has neither. So take in
// what the workers answered and move the backlog into the slots that frees
// (an abort bit also comes back only when a pass takes in its late
// result). Never blocks: another thread holding the dispatcher is running
// such a pass already. No inline-lane task runs here (a refused enqueue
// does not run the caller's tasks).
void refused_pass(Pool *p)
{
	if (dispatch_trylock(p)) {
		dispatch_pass(p, false);
		dispatch_unlock(p);
	}
}

// A freshly allocated record (under mu) takes its call's fields.
[[gnu::always_inline]] inline void call_fill(Pool *p, Call *c, const EnqueueArgs &a,
					     const knit_value_t &arg, uint8_t *buf)
{
	// A high or low call is counted in its class (normal: the rest of
	// st_enqueued, no count to keep), and out again by call_undo_locked().
	if (call_class(a.flags) != kClassNormal)
		mu_counter_add_64(&p->st_class_enqueued[call_class(a.flags) == kClassHigh ? 0 : 1],
				  1);
	c->task = a.task;
	c->flags = a.flags;
	c->pin_lane = a.pin_lane;
	c->deadline_ns = a.deadline_ns;
	c->user_data = a.user_data;
	c->arg = arg;
	c->arg_buf = buf;
}

// n calls counted in (under mu, before any of them can complete; undone
// per call in call_undo_locked() when one is refused).
[[gnu::always_inline]] inline void count_enqueued_locked(Pool *p, uint64_t n)
{
	// Release (under mu, like the stop's store of closed; every write of
	// outstanding is under mu, so a load + store is the increment): pairs
	// with the acquire loads of outstanding in drained_ready() /
	// knit_complete(): a stop that set closed after us sees these calls
	// outstanding.
	knit_store_release_64(&p->outstanding, knit_load_relaxed_64(&p->outstanding) + n);
	mu_counter_add_64(&p->st_enqueued, n);
}

// The records of calls a[0 .. n-1] (arguments v, their bytes buf) under
// one hold of mu, allocated, filled and counted in: returns how many (a
// prefix of the n), with *err why the next one got none (the closed code,
// or call_alloc_locked's). Only a call with a deadline keeps its record's
// enqueue hold (enqueue()).
[[gnu::always_inline]] inline uint32_t records_take(Pool *p, const EnqueueArgs *a,
						    const knit_value_t *v, uint8_t *const *buf,
						    uint32_t n, Call **calls, knit_ticket_t *t,
						    int *err)
{
	uint32_t na = 0;
	// A timed pool's one tick for the burst (src/info.h); none else.
	const int64_t now = p->info.timing ? tick_now() : 0;
	pthread_mutex_lock(&p->mu);
	if (knit_load_relaxed_32(&p->closed)) {
		*err = pool_closed_code(p);
	} else {
		for (; na < n; na++) {
			Call *c = call_alloc_locked(p, a[na].abortable, a[na].deadline_ns != 0,
						    &t[na], err);
			if (c == nullptr)
				break;
			call_fill(p, c, a[na], v[na], buf[na]);
			if (now != 0)
				info_enqueue_locked(c, now);
			calls[na] = c;
		}
	}
	if (na != 0)
		count_enqueued_locked(p, na);
	pthread_mutex_unlock(&p->mu);
	return na;
}

// After tracking a deadline (mu released): a sleeping host may have planned
// to wake later than it.
void deadline_tracked(Pool *p)
{
	// H1 (Dekker): pairs with the D1 fence in host_doorbell_sleep() between
	// its increment of host_waiters and its read of earliest_deadline
	// (next_wake): either it plans with our deadline or we see it waiting
	// and bump the sequence it sleeps on. The unlock before us is only a
	// release, so without this fence our load of host_waiters could pass
	// the store of earliest_deadline (tests/model/host_event.pml, run
	// nofence_enqueue).
	knit_fence_seq_cst();
	if (knit_load_relaxed_32(&p->host_waiters) != 0)
		host_event(p, false);
}

// Enqueue a validated call with argument `arg_in` (may be NULL). On success
// *out_call (if non-null) is the record (still holding kHoldUser) and
// *ticket its ticket.
int enqueue(Pool *p, const EnqueueArgs &a, const knit_value_t *arg_in, Call **out_call,
	    knit_ticket_t *ticket)
{
	knit_value_t arg;
	uint8_t *buf;
	int rc = take_arg(p, arg_in, &arg, &buf);
	if (rc != 0)
		return rc;

	// Only a call with a deadline needs its record after a successful
	// submit (deadline_track_locked below): any other, once queued, is
	// left alone, so it does not take the enqueue hold and we need not
	// take mu again to drop it. Without the hold, a queued call may be
	// run, reaped, handed out and recycled as soon as dispatch_submit()
	// has published it; that is safe because only the dispatcher's holder
	// drops kHoldHostQueue (place_queue, lane_reap, run_inline), and
	// dispatch_submit() reads the record after publishing it only while
	// it holds the dispatcher itself. A call that is refused or not queued
	// keeps kHoldHostQueue, which only we drop, so it stays ours either way.
	const bool keep = a.deadline_ns != 0;
	int err = 0;
	knit_ticket_t t = 0;
	Call *c = nullptr;
	if (records_take(p, &a, &arg, &buf, 1, &c, &t, &err) == 0) {
		free(buf);
		if (err == -KNIT_EAGAIN)
			refused_pass(p);
		return err;
	}

	const int admitted = dispatch_submit(p, c);
	const bool queued = admitted > 0;
	if (queued && !keep) {
		// The common case: nothing left to do under mu (no enqueue hold
		// to drop, no deadline to track); c may be gone already.
		if (out_call != nullptr)
			*out_call = c; // kHoldUser keeps it ours (a private call's
				       // completion is handed out by its caller only)
		if (ticket != nullptr)
			*ticket = t;
		return 0;
	}

	pthread_mutex_lock(&p->mu);
	// A knit_stop(CANCEL) that ran while we were placing the call finds it
	// in the ticket table (cancel_all) and completes it with -KNIT_ECLOSED.
	// It then has its one completion, so it was accepted: report success
	// below instead of undoing it (undoing would deliver a completion for a
	// call the caller was told failed, and count it out twice).
	if (admitted == -KNIT_EAGAIN && !c->completed) {
		// Never reachable by anyone else: undo it completely.
		const uint64_t before = call_undo_locked(p, c);
		pthread_mutex_unlock(&p->mu);
		// The undo can be what takes outstanding to 0 (a knit_stop that
		// set closed after our increment counted this call): the waiters
		// of drained_ready() / complete_ready() must re-evaluate, exactly
		// as after a completion. Dekker: host_event()'s seq_cst fence (H1)
		// between our decrement and its load of host_waiters pairs with
		// the D1 fence in host_doorbell_sleep() between the waiter's increment of
		// host_waiters and its ready() re-check: either it sees 0 or we
		// see it waiting and bump the doorbell sequence it sleeps on.
		if (before == 1)
			host_event(p, true);
		return -KNIT_EAGAIN;
	}
	uint32_t drop = keep ? (uint32_t)kHoldEnqueue : 0u;
	if (!queued)
		drop |= kHoldHostQueue;
	if (a.deadline_ns != 0 && !c->completed)
		deadline_track_locked(p, c);
	if (out_call != nullptr)
		*out_call = c; // kHoldUser keeps it ours
	call_unhold_locked(p, c, drop);
	pthread_mutex_unlock(&p->mu);
	if (a.deadline_ns != 0)
		deadline_tracked(p);
	if (ticket != nullptr)
		*ticket = t;
	return 0;
}

// A call's task and options checked (no pool state touched) into *a: 0, or
// the code the enqueue fails with.
// (value_take, take_arg and call_args are always inline: each is every
// call's, in knit_enqueue and in a burst, and a call to them costs as much
// as their common case.)
[[gnu::always_inline]] inline int call_args(Pool *p, uint32_t task, const knit_call_options_t *opts,
					    uint32_t flags, void *user_data, int64_t timeout_ns,
					    EnqueueArgs *a)
{
	// The map's chunk task (id p->ntasks) is not the caller's to name:
	// only a kCallChunk call (map_chunk_enqueue) reaches it.
	if (task >= p->ntasks) [[unlikely]] {
		if (task != p->ntasks || (flags & kCallChunk) == 0)
			return -KNIT_ENOTASK;
	}
	// The options' members, 0 when absent (no options: no copy to make).
	uint32_t oflags = 0, otimeout_ms = 0, olane = 0;
	if (opts != nullptr) {
		knit_call_options_t o;
		if (opts->size == 0 || opts->size > sizeof o)
			return -KNIT_EVERSION;
		memset(&o, 0, sizeof o);
		memcpy(&o, opts, opts->size);
		const uint32_t known = KNIT_CALL_ABORTABLE | KNIT_CALL_LANE | KNIT_CALL_NO_TIMEOUT |
				       KNIT_CALL_HIGH | KNIT_CALL_LOW;
		if ((o.flags & ~known) != 0 || (o.flags & (KNIT_CALL_HIGH | KNIT_CALL_LOW)) ==
						       (KNIT_CALL_HIGH | KNIT_CALL_LOW))
			return -KNIT_EINVAL;
		oflags = o.flags;
		otimeout_ms = o.timeout_ms;
		olane = o.lane;
	}
	const TaskEntry &te = p->tasks[task];
	a->task = task;
	a->flags = flags | ((oflags & KNIT_CALL_HIGH)  ? kClassHigh << kCallClassShift
			    : (oflags & KNIT_CALL_LOW) ? kClassLow << kCallClassShift
						       : kClassNormal << kCallClassShift);
	a->pin_lane = 0;
	a->user_data = user_data;
	if (oflags & KNIT_CALL_LANE) {
		if (olane >= p->nworkers || p->steal.on) // no lanes to pin to when stealing
			return -KNIT_EINVAL;
		a->flags |= kCallPinned;
		a->pin_lane = olane;
	}
	a->abortable = (oflags & KNIT_CALL_ABORTABLE) || (te.flags & KNIT_TASK_ABORTABLE);
	a->deadline_ns = 0; // none
	if (timeout_ns > 0)
		a->deadline_ns = deadline_after(knit_now_ns(), timeout_ns, 0);
	else if (oflags & KNIT_CALL_NO_TIMEOUT)
		a->deadline_ns = 0;
	else if (otimeout_ms != 0)
		a->deadline_ns = deadline_after_ms(otimeout_ms);
	else if (te.timeout_ms != 0)
		a->deadline_ns = deadline_after_ms(te.timeout_ms);
	return 0;
}

int enqueue_ex(knit_pool_t *pool, uint32_t task, const knit_value_t *arg, void *user_data,
	       const knit_call_options_t *opts, uint32_t flags, Call **out_call,
	       knit_ticket_t *ticket, int64_t timeout_ns)
{
	if (pool == nullptr)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p))
		return -KNIT_ECLOSED; // inherited across fork: dead here
	EnqueueArgs a;
	const int rc = call_args(p, task, opts, flags, user_data, timeout_ns, &a);
	if (rc != 0)
		return rc;
	return enqueue(p, a, arg, out_call, ticket);
}

// ---- bursts (knit_enqueue_many) ---------------------------------------------------

// Requests taken per hold of mu and of the dispatcher (the arrays below
// live on the stack).
constexpr uint32_t kBurst = 64;

// Enqueue reqs[0 .. m-1] (m <= kBurst) as enqueue_ex() would one by one,
// with one hold of mu for their records and one dispatcher hold
// (dispatch_submit_many) for their placing: k > 0 when reqs[0 .. k-1] were
// accepted (tickets filled), or the code that refused reqs[0] (nothing
// kept). Every call before the first refused one is accepted; nothing
// after it is.
int enqueue_burst(Pool *p, const knit_request_t *reqs, uint32_t m, knit_ticket_t *tickets)
{
	EnqueueArgs a[kBurst];
	knit_value_t v[kBurst];
	uint8_t *buf[kBurst];
	Call *calls[kBurst];
	knit_ticket_t t[kBurst];
	// The checks and the argument copies, before any pool state: a request
	// refused here ends the burst before it.
	uint32_t np = 0;
	for (; np < m; np++) {
		const knit_request_t &r = reqs[np];
		int rc = r.reserved != 0 ? -KNIT_EINVAL
					 : call_args(p, r.task, r.opts, 0, r.user_data, 0, &a[np]);
		if (rc == 0)
			rc = take_arg(p, r.arg, &v[np], &buf[np]);
		if (rc != 0) {
			if (np == 0)
				return rc;
			break;
		}
	}
	// The records, under one hold of mu.
	int err = 0;
	const uint32_t na = records_take(p, a, v, buf, np, calls, t, &err);
	bool any_keep = false;
	for (uint32_t j = 0; j < na; j++)
		any_keep |= a[j].deadline_ns != 0;
	for (uint32_t j = na; j < np; j++)
		free(buf[j]); // never given to a record
	if (na == 0) {
		if (err == -KNIT_EAGAIN)
			refused_pass(p); // as in enqueue()
		return err;
	}

	// Placed, or queued in the backlog, in order: calls[0 .. k-1].
	const uint32_t k = dispatch_submit_many(p, calls, na);
	uint32_t acc = k;
	bool deadline = false;
	if (k < na || any_keep) {
		bool drained = false, produced = false;
		pthread_mutex_lock(&p->mu);
		if (k < na) {
			// Refused (backlog full): as in enqueue(), a call a stop
			// completed meanwhile (cancel_all) has its completion, so it
			// is accepted. cancel_all completes every live record in one
			// hold of mu, so these are all completed or none is; only a
			// knit_cancel of a ticket nobody was given yet could complete
			// one and not an earlier one. The accepted calls must stay a
			// prefix: one left uncompleted before a completed one is
			// completed too (-KNIT_ECLOSED once closed, else
			// -KNIT_ECANCELED), never undone.
			for (uint32_t j = k; j < na; j++)
				if (calls[j]->completed)
					acc = j + 1;
			for (uint32_t j = k; j < acc; j++) {
				Call *c = calls[j];
				if (!c->completed)
					produced |= call_fail_locked(
						p, c,
						knit_load_relaxed_32(&p->closed) ? -KNIT_ECLOSED
										 : -KNIT_ECANCELED);
			}
			// The rest were never reachable by anyone else: undo them.
			for (uint32_t j = acc; j < na; j++)
				drained = call_undo_locked(p, calls[j]) == 1;
		}
		for (uint32_t j = 0; j < acc; j++) {
			Call *c = calls[j];
			uint32_t drop = j >= k ? (uint32_t)kHoldHostQueue : 0u; // no queue keeps it
			if (a[j].deadline_ns != 0) {
				if (!c->completed)
					deadline_track_locked(p, c);
				drop |= kHoldEnqueue;
				deadline = true;
			}
			if (drop != 0)
				call_unhold_locked(p, c, drop);
		}
		pthread_mutex_unlock(&p->mu);
		// The undo took outstanding to 0: as in enqueue() (H1 in
		// host_event() against the waiter's D1); or completions were
		// made: their waiters re-evaluate, as after knit_cancel().
		if (drained || produced)
			host_event(p, true);
	}
	if (deadline)
		deadline_tracked(p);
	if (acc == 0)
		return -KNIT_EAGAIN; // backlog full (max_pending)
	if (tickets != nullptr)
		for (uint32_t j = 0; j < acc; j++)
			tickets[j] = t[j];
	return (int)acc;
}

// ---- calls that share a frame (riders, src/calls.h) ------------------------------

// How many of reqs[0 .. m-1], from the first, ride in one frame: 0 (send
// them as calls of their own), 1 (a probe of the task's run time, when one
// is due: *probe), or a run of 2 or more calls of one task (at most what
// the task's estimate lets one frame carry) with no options, each argument
// valid, their chunk within the per-call limit; *len is that chunk's size,
// vals[0 .. count) the arguments as taken (value_take), for the chunk.
uint32_t ride_plan(Pool *p, const knit_request_t *reqs, uint32_t m, uint64_t *len, bool *probe,
		   knit_value_t *vals)
{
	*probe = false;
	const knit_request_t &r0 = reqs[0];
	if (!p->ride_ok || r0.task >= p->ntasks || r0.opts != nullptr)
		return 0;
	TaskEntry &te = p->tasks[r0.task];
	if (te.timeout_ms != 0 || (te.flags & KNIT_TASK_ABORTABLE))
		return 0;
	const uint64_t cap = p->cfg.max_payload_bytes;
	uint32_t k = ride_take_size(knit_load_relaxed_64(&te.ride_ns),
				    knit_load_relaxed_32(&te.ride_room), cap);
	if (k < 2) {
		// One call at a time travels alone in a carrier, to measure the
		// task (ride_probing is set under mu when its records are taken).
		if (knit_load_relaxed_32(&te.ride_probing) != 0)
			return 0;
		k = 1;
		*probe = true;
	} else if (m < 2) {
		return 0;
	}
	uint64_t payload = 0;
	uint32_t n = 0;
	for (; n < m && n < k; n++) {
		const knit_request_t &r = reqs[n];
		if (r.task != r0.task || r.reserved != 0 || r.opts != nullptr)
			break;
		knit_value_t &v = vals[n];
		value_take(r.arg, &v);
		if (!chunk_scalar_ok(v)) {
			if (codec_value_check(v, cap) != 0)
				break;
			const uint64_t room = chunk_payload_bytes(v);
			if (chunk_bytes(n + 1, payload + room) > cap)
				break;
			payload += room;
		} else if (chunk_bytes(n + 1, payload) > cap) {
			break;
		}
	}
	if (n < (*probe ? 1u : 2u))
		return 0;
	*len = chunk_bytes(n, payload);
	return n;
}

// The riders of carrier c taken back: nobody else could reach them (its
// refusal, under mu). Returns outstanding before the last undo.
uint64_t ride_undo_locked(Pool *p, Call *c)
{
	Call *r = static_cast<Call *>(c->user_data);
	const uint32_t n = c->pin_lane;
	const uint32_t task = r != nullptr ? r->task : 0;
	uint64_t before = 0;
	for (uint32_t i = 0; i < n; i++) {
		Call *const next = r->next;
		before = call_undo_locked(p, r);
		r = next;
	}
	mu_counter_add_64(&p->st_shared_frames, (uint64_t)-1);
	mu_counter_add_64(&p->st_shared_calls, (uint64_t)0 - n);
	if (n == 1)
		knit_store_relaxed_32(&p->tasks[task].ride_probing, 0);
	// The carrier itself was never counted in.
	c->holds = 0;
	free(c->arg_buf);
	c->arg_buf = nullptr;
	p->tickets.free(c);
	return before;
}

// Send reqs[0 .. ride_plan's count) as riders of one carrier: k > 0 when
// all k were accepted (tickets filled), 0 when none rides (the caller
// sends them as calls of their own: nothing was kept), or the code that
// refused them all (closed, backlog full).
int ride_burst(Pool *p, const knit_request_t *reqs, uint32_t m, knit_ticket_t *tickets)
{
	uint64_t len = 0;
	bool probe = false;
	knit_value_t vals[kRideMax];
	const uint32_t n = ride_plan(p, reqs, m < kRideMax ? m : kRideMax, &len, &probe, vals);
	if (n == 0)
		return 0;
	uint8_t *buf = static_cast<uint8_t *>(malloc(len));
	if (buf == nullptr)
		return 0; // each call's own enqueue tells
	const uint32_t task = reqs[0].task;
	ChunkWriter w;
	chunk_begin(&w, buf, kChunkItems, task, n);
	for (uint32_t i = 0; i < n; i++)
		chunk_put(&w, 0, vals[i]);
	EnqueueArgs ra, ca;
	if (call_args(p, task, nullptr, kCallRider, nullptr, 0, &ra) != 0 ||
	    call_args(p, p->ntasks, nullptr, kCallChunk | kCallCarrier, nullptr, 0, &ca) != 0) {
		free(buf); // cannot be: ride_plan checked the task, and no options
		return 0;
	}
	knit_value_t carg;
	memset(&carg, 0, sizeof carg);
	carg.type = KNIT_VALUE_BYTES;
	carg.data = buf;
	carg.len = len;
	knit_ticket_t t[kRideMax];
	knit_ticket_t ct = 0;
	int err = 0;
	Call *c = nullptr;
	pthread_mutex_lock(&p->mu);
	if (knit_load_relaxed_32(&p->closed)) {
		err = pool_closed_code(p);
	} else if (p->tickets.room() >= n && (!probe || p->tasks[task].ride_probing == 0)) {
		// The carrier's record counts apart (TicketTable::alloc_carrier);
		// the riders' room was checked under this hold: only an index
		// worn out for good fails below, and then each call's own
		// enqueue tells.
		c = p->tickets.alloc_carrier(&ct, &err);
		if (c != nullptr) {
			c->holds = kHoldHostQueue;
			call_fill(p, c, ca, carg, buf); // nobody's to reap: no kHoldUser
			Call *head = nullptr, **tail = &head;
			uint32_t got = 0;
			for (; got < n; got++) {
				Call *r = call_alloc_locked(p, false, false, &t[got], &err);
				if (r == nullptr)
					break;
				ra.user_data = reqs[got].user_data;
				call_fill(p, r, ra, kValueNone, nullptr);
				*tail = r;
				tail = &r->next;
			}
			*tail = nullptr;
			c->user_data = head;
			c->pin_lane = got;
			if (got != 0)
				count_enqueued_locked(p, got);
			mu_counter_add_64(&p->st_shared_frames, 1); // as ride_undo_locked takes out
			mu_counter_add_64(&p->st_shared_calls, got);
			if (got != n) {
				ride_undo_locked(p, c); // not counted: nobody saw them
				c = nullptr;
			} else if (probe) {
				knit_store_relaxed_32(&p->tasks[task].ride_probing, 1);
			}
		}
	}
	pthread_mutex_unlock(&p->mu);
	if (c == nullptr) {
		free(buf);
		return err != 0 && knit_load_relaxed_32(&p->closed) ? err : 0;
	}

	// Published: from here c may run, complete and be recycled, and its
	// riders too (only the dispatcher's holder drops kHoldHostQueue, as in
	// enqueue()); t[] is ours.
	const int admitted = dispatch_submit(p, c);
	if (admitted <= 0) {
		// Refused (backlog full), or completed at once (never
		// publishable): as enqueue() does for one call.
		bool drained = false, produced = false;
		pthread_mutex_lock(&p->mu);
		if (admitted == -KNIT_EAGAIN && !c->completed) {
			// A stop's cancel_all completes every live record in one
			// hold of mu: if it ran, every rider is completed (and
			// accepted); else none is, and nobody saw them.
			bool any = false;
			Call *r = static_cast<Call *>(c->user_data);
			for (uint32_t i = 0; i < n; i++, r = r->next)
				any |= r->completed != 0;
			if (!any) {
				drained = ride_undo_locked(p, c) == 1;
				pthread_mutex_unlock(&p->mu);
				if (drained)
					host_event(p, true); // as in enqueue()
				return -KNIT_EAGAIN;
			}
			produced = call_fail_locked(
				p, c,
				knit_load_relaxed_32(&p->closed) ? -KNIT_ECLOSED : -KNIT_ECANCELED);
		}
		call_unhold_locked(p, c, kHoldHostQueue); // no queue keeps it
		pthread_mutex_unlock(&p->mu);
		if (produced)
			host_event(p, true);
	}
	if (tickets != nullptr)
		for (uint32_t i = 0; i < n; i++)
			tickets[i] = t[i];
	return (int)n;
}

// ---- readiness predicates for host_wait ----------------------------------------------

bool complete_ready(Pool *p, void *)
{
	if (knit_load_relaxed_32(&p->cq_count) != 0)
		return true;
	return knit_load_relaxed_32(&p->closed) && none_outstanding(p);
}

bool call_ready(Pool *, void *arg)
{
	// Acquire: pairs with the release store of done in call_complete_locked().
	return knit_load_acquire_32(&static_cast<Call *>(arg)->done) != 0;
}

// The ticketed path of knit_call and knit_call_ex (*out already cleared):
// enqueue a private call, publish its ticket when the caller asked for one
// (to cancel it from another thread), wait for its completion and hand it
// out.
int call_ticketed(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
		  const knit_call_options_t *opts, knit_ticket_t *ticket, knit_completion_t *out,
		  int64_t timeout_ns)
{
	Call *c = nullptr;
	knit_ticket_t t = 0;
	const uint32_t flags = kCallPrivate | (ticket != nullptr ? (uint32_t)kCallTicketed : 0u);
	int rc = enqueue_ex(pool, task, arg, nullptr, opts, flags, &c, &t, timeout_ns);
	if (rc != 0)
		return rc;
	Pool *p = &pool->p;
	// Release: pairs with the acquire load by the thread that reads the
	// ticket to cancel the call (documented in knit_call(3)); the call may
	// be complete already, and its ticket is never reused, so a late
	// cancel finds nothing (-KNIT_ENOTFOUND).
	if (ticket != nullptr)
		__atomic_store_n(ticket, t, __ATOMIC_RELEASE);
	host_wait(p, call_ready, c, -1, false);
	pthread_mutex_lock(&p->mu);
	hand_out_locked(p, c, out);
	pthread_mutex_unlock(&p->mu);
	out->ticket = t;
	return 0;
}

} // namespace

int knit::detail::map_chunk_enqueue(knit_pool_t *pool, const knit_value_t *arg, void *user_data,
				    const knit_call_options_t *opts, knit_ticket_t *ticket)
{
	return enqueue_ex(pool, pool->p.ntasks, arg, user_data, opts, kCallChunk, nullptr, ticket,
			  0);
}

namespace {
// A call refused with -KNIT_ECRASHED because its pool failed records why
// (knit_last_error(3)): the one write of thread-local storage on a call's
// path, and only on that refusal. Acquire: pairs with the release store of
// Pool::failed after the reason (WorkerOps::failed_why).
[[gnu::cold]] int refused_failed(Pool *p, int rc)
{
	if (p->workers->failed_why != nullptr && knit_load_acquire_32(&p->failed) != 0)
		error_set(rc, "%s", p->workers->failed_why(p));
	return rc;
}
inline int refused(knit_pool_t *pool, int rc)
{
	if (rc == -KNIT_ECRASHED && pool != nullptr && !pool_forked(&pool->p)) [[unlikely]]
		return refused_failed(&pool->p, rc);
	return rc;
}
} // namespace

extern "C" KNIT_API int knit_enqueue(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
				     void *user_data, knit_ticket_t *ticket) KNIT_NOEXCEPT
{
	return refused(pool,
		       enqueue_ex(pool, task, arg, user_data, nullptr, 0, nullptr, ticket, 0));
}

extern "C" KNIT_API int knit_enqueue_ex(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
					void *user_data, const knit_call_options_t *opts,
					knit_ticket_t *ticket) KNIT_NOEXCEPT
{
	return refused(pool, enqueue_ex(pool, task, arg, user_data, opts, 0, nullptr, ticket, 0));
}

extern "C" KNIT_API int knit_enqueue_many(knit_pool_t *pool, const knit_request_t *reqs, uint32_t n,
					  knit_ticket_t *tickets) KNIT_NOEXCEPT
{
	if (pool == nullptr || reqs == nullptr || n == 0 || n > (uint32_t)INT_MAX)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p))
		return -KNIT_ECLOSED; // inherited across fork: dead here
	uint32_t done = 0;
	while (done < n) {
		const uint32_t m = n - done < kBurst ? n - done : kBurst;
		knit_ticket_t *tk = tickets != nullptr ? tickets + done : nullptr;
		// A run of cheap calls shares a frame (src/calls.h riders).
		int k = ride_burst(p, reqs + done, m, tk);
		if (k > 0) {
			done += (uint32_t)k;
			continue;
		}
		if (k == 0) {
			// Requests with options never ride: only they go as calls
			// of their own here when a run that may ride follows them.
			uint32_t own = m;
			if (reqs[done].opts != nullptr) {
				own = 1;
				while (own < m && reqs[done + own].opts != nullptr)
					own++;
			}
			k = enqueue_burst(p, reqs + done, own, tk);
			if (k > 0 && (uint32_t)k == own && own < m) {
				done += own;
				continue;
			}
		}
		if (k < 0)
			return done != 0 ? (int)done : refused(pool, k);
		done += (uint32_t)k;
		if ((uint32_t)k < m)
			break; // reqs[done] was refused: the caller learns why by retrying from it
	}
	return (int)done;
}

namespace {
// After handing completions out (mu released): wake the threads that wait
// for particular calls (knit_complete_tickets, knit_wait_idle), if any. The
// relaxed load is ordered by mu: a waiter counted itself under mu before it
// first looked at the queue.
void pick_reaped(Pool *p)
{
	if (knit_load_relaxed_32(&p->pick_waiters) != 0)
		host_event(p, false);
}
} // namespace

extern "C" KNIT_API int knit_complete(knit_pool_t *pool, knit_completion_t *out, unsigned max,
				      int64_t timeout_ns) KNIT_NOEXCEPT
{
	if (pool == nullptr || out == nullptr || max == 0)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p))
		return -KNIT_ECLOSED;
	if (in_task_of(p)) {
		// From one of its own tasks: what is queued, no pass, no wait.
		if (timeout_ns != 0)
			return -KNIT_EBUSY;
		const int k = deliver(p, out, max);
		if (k > 0)
			pick_reaped(p);
		efd_sync(p);
		return k;
	}
	const int64_t deadline =
		timeout_ns < 0 ? -1 : deadline_after(knit_now_ns(), timeout_ns, -1);
	int n;
	for (;;) {
		n = deliver(p, out, max);
		if (n > 0)
			break;
		// Acquire: pairs with the release decrement of outstanding in
		// call_complete_locked(), made after the completion was queued: a
		// zero here means every completion is already counted in cq_count.
		if (knit_load_relaxed_32(&p->closed) && none_outstanding(p) &&
		    knit_load_relaxed_32(&p->cq_count) == 0)
			return -KNIT_ECLOSED; // the fd stays readable (efd_pending)
		if (!host_wait(p, complete_ready, nullptr, deadline, timeout_ns == 0) ||
		    timeout_ns == 0) {
			n = deliver(p, out, max);
			break;
		}
	}
	if (n > 0)
		pick_reaped(p);
	// The completion fd shows what is left: readable iff another
	// knit_complete(..., 0) would return something (the reap that empties
	// the queue leaves it unreadable; a pass we could not run leaves it to
	// the dispatcher holder's release).
	efd_sync(p);
	return n;
}

namespace {

// What a thread waiting for particular calls last saw: completions handed
// out (st_completed) plus queued (cq_count). Any change means a completion
// was queued or reaped since, and the waiter looks again (under mu).
struct PickWait {
	uint64_t seen;
	uint64_t need; // knit_wait_idle: hand-outs since `base` before a look pays
	uint64_t base;
	void *arg; // the entry's own state
};

uint64_t pick_progress(Pool *p)
{
	return knit_load_relaxed_64(&p->st_completed) + knit_load_relaxed_32(&p->cq_count);
}

// One wait for chosen calls (knit_complete_tickets, knit_wait_idle): look
// (under mu) until the look says the wait is over, with its answer in *rc;
// between looks wait (host_wait) until `ready` says a look may pay. The
// waiter is counted in p->pick_waiters (calls.h) from its first look that
// did not end the wait until it leaves, so that another thread's reap wakes
// it (pick_reaped). `last`: the deadline passed (or the call polls), this
// look is the final one. From a task of the pool (timeout 0 then) there is
// one look and no pass. Unanswered: timeout_rc.
struct PickLook {
	bool (*look)(Pool *p, PickWait *w, bool last, int *rc);
	ReadyFn ready;
	int timeout_rc;
};

int pick_wait(Pool *p, int64_t timeout_ns, bool from_task, const PickLook &how, PickWait *w)
{
	const int64_t deadline =
		timeout_ns < 0 ? -1 : deadline_after(knit_now_ns(), timeout_ns, -1);
	bool counted = false;
	int rc = how.timeout_rc;
	for (bool last = false;;) {
		pthread_mutex_lock(&p->mu);
		const bool over = how.look(p, w, last, &rc);
		if (!over && !counted && !last && !from_task) {
			knit_store_relaxed_32(&p->pick_waiters, p->pick_waiters + 1);
			counted = true;
		}
		pthread_mutex_unlock(&p->mu);
		if (over)
			break;
		if (last || from_task) {
			rc = how.timeout_rc;
			break;
		}
		// A poll still runs one pass, as knit_complete(..., 0) does.
		if (!host_wait(p, how.ready, w, deadline, timeout_ns == 0) || timeout_ns == 0)
			last = true;
	}
	if (counted) {
		pthread_mutex_lock(&p->mu);
		knit_store_relaxed_32(&p->pick_waiters, p->pick_waiters - 1);
		pthread_mutex_unlock(&p->mu);
	}
	return rc;
}

// knit_complete_tickets' wait: the list, and where its completions go.
struct TicketPick {
	const knit_ticket_t *tickets;
	unsigned n;
	knit_completion_t *out;
	unsigned max;
};

bool tickets_look(Pool *p, PickWait *w, bool, int *rc)
{
	const TicketPick *t = static_cast<const TicketPick *>(w->arg);
	unsigned alive = 0;
	w->seen = pick_progress(p);
	const unsigned got = take_tickets_locked(p, t->tickets, t->n, t->out, t->max, &alive);
	if (got > 0)
		*rc = (int)got;
	else if (alive == 0)
		*rc = -KNIT_ENOTFOUND; // none of them is (any longer) to be reaped
	return got > 0 || alive == 0;
}

bool tickets_ready(Pool *p, void *arg)
{
	const PickWait *w = static_cast<const PickWait *>(arg);
	return pick_progress(p) != w->seen;
}

// knit_wait_idle's wait: the calls unreaped when it began, compacted as
// they are reaped.
struct IdlePick {
	knit_ticket_t *t;
	uint32_t left;
};

bool idle_look(Pool *p, PickWait *w, bool last, int *rc)
{
	IdlePick *i = static_cast<IdlePick *>(w->arg);
	if (knit_load_relaxed_64(&p->st_completed) - w->base >= w->need || last) {
		i->left = unreaped_compact_locked(p, i->t, i->left);
		w->base = knit_load_relaxed_64(&p->st_completed);
		w->need = i->left;
	}
	*rc = 0;
	return i->left == 0;
}

// knit_wait_idle: every one of the `need` calls it waits for is reaped only
// after at least `need` hand-outs since `base`, so looking earlier cannot
// succeed. This bounds the looks: each costs the calls still waited for and
// comes after at least as many hand-outs.
bool idle_ready(Pool *p, void *arg)
{
	const PickWait *w = static_cast<const PickWait *>(arg);
	return knit_load_relaxed_64(&p->st_completed) - w->base >= w->need;
}

} // namespace

extern "C" KNIT_API int knit_complete_tickets(knit_pool_t *pool, const knit_ticket_t *tickets,
					      unsigned n, knit_completion_t *out, unsigned max,
					      int64_t timeout_ns) KNIT_NOEXCEPT
{
	if (pool == nullptr || tickets == nullptr || n == 0 || out == nullptr || max == 0)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p))
		return -KNIT_ECLOSED;
	const bool from_task = in_task_of(p);
	if (from_task && timeout_ns != 0)
		return -KNIT_EBUSY;
	TicketPick t = {tickets, n, out, max};
	PickWait w = {0, 0, 0, &t};
	const int rc = pick_wait(p, timeout_ns, from_task, {tickets_look, tickets_ready, 0}, &w);
	if (rc > 0)
		pick_reaped(p);
	efd_sync(p);
	return rc;
}

extern "C" KNIT_API int knit_wait_idle(knit_pool_t *pool, int64_t timeout_ns) KNIT_NOEXCEPT
{
	if (pool == nullptr)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p))
		return -KNIT_ECLOSED;
	const bool from_task = in_task_of(p);
	if (from_task && timeout_ns != 0)
		return -KNIT_EBUSY;
	IdlePick i = {nullptr, 0};
	pthread_mutex_lock(&p->mu);
	int rc = unreaped_snapshot_locked(p, &i.t, &i.left);
	PickWait w = {0, i.left, knit_load_relaxed_64(&p->st_completed), &i};
	pthread_mutex_unlock(&p->mu);
	if (rc == 0 && i.left != 0)
		rc = pick_wait(p, timeout_ns, from_task, {idle_look, idle_ready, -KNIT_ETIMEDOUT},
			       &w);
	free(i.t);
	return rc;
}

extern "C" KNIT_API int knit_completion_release(knit_pool_t *pool,
						knit_completion_t *c) KNIT_NOEXCEPT
{
	if (pool == nullptr || c == nullptr)
		return -KNIT_EINVAL;
	return completion_release(&pool->p, c);
}

extern "C" KNIT_API int knit_completion_info(knit_pool_t *pool, const knit_completion_t *c,
					     knit_completion_info_t *info) KNIT_NOEXCEPT
{
	if (pool == nullptr || c == nullptr || info == nullptr)
		return -KNIT_EINVAL;
	// Size-prefixed: at least size and flags, at most what we know; the
	// members the size covers are filled, nothing past them is written.
	const uint32_t size = info->size;
	if (size < offsetof(knit_completion_info_t, lane) || size > sizeof(knit_completion_info_t))
		return -KNIT_EVERSION;
	knit_completion_info_t in;
	memset(&in, 0, sizeof in);
	const int rc = info_lookup(&pool->p, c, &in);
	if (rc != 0)
		return rc;
	in.size = size;
	// A flag only for members the caller's size covers (a 1.2 caller
	// built before the syscall members gets no KNIT_INFO_SYSCALL).
	if (size < offsetof(knit_completion_info_t, syscall_name) + sizeof in.syscall_name)
		in.flags &= ~(uint32_t)KNIT_INFO_SYSCALL;
	memcpy(info, &in, size);
	return 0;
}

extern "C" KNIT_API int knit_completion_fd(knit_pool_t *pool) KNIT_NOEXCEPT
{
	if (pool == nullptr)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p))
		return -KNIT_ECLOSED; // the inherited fd is the parent's too
	pthread_mutex_lock(&p->mu);
	if (p->epfd < 0) {
		// The descriptor is an epoll instance over two: the eventfd that
		// results and completions write (efd_sync), and a timerfd armed at
		// the earliest call deadline (calls.cpp), so that a timeout makes it
		// readable too although nothing else happens.
		const int efd = knit_sys_eventfd2(0, EFD_NONBLOCK | EFD_CLOEXEC);
		const int epfd = efd < 0 ? -1 : knit_sys_epoll_create1(EPOLL_CLOEXEC);
		int rc = efd < 0 || epfd < 0 ? -1 : deadline_timer_open_locked(p);
		if (rc == 0) {
			struct epoll_event ev;
			memset(&ev, 0, sizeof ev);
			ev.events = EPOLLIN;
			rc = knit_sys_epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev);
			if (rc == 0)
				rc = knit_sys_epoll_ctl(epfd, EPOLL_CTL_ADD, p->tfd, &ev);
		}
		if (rc != 0) {
			if (p->tfd >= 0)
				knit_sys_close(p->tfd);
			p->tfd = -1;
			if (epfd >= 0)
				knit_sys_close(epfd);
			if (efd >= 0)
				knit_sys_close(efd);
			pthread_mutex_unlock(&p->mu);
			return -KNIT_ESYSTEM;
		}
		p->efd = efd;
		p->epfd = epfd;
		// Release: pairs with the acquire loads of efd_on by the workers
		// and host_event(): the fd number is visible with the flag.
		knit_store_release_32(&p->efd_on, 1);
		p->workers->completion_fd_on(p); // worker processes: ring the bridge from now on
	}
	const int fd = p->epfd;
	pthread_mutex_unlock(&p->mu);
	// Results may already wait (queued, or published and not reaped yet).
	efd_sync(p);
	return fd;
}

extern "C" KNIT_API int knit_call_ex(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
				     const knit_call_options_t *opts, knit_ticket_t *ticket,
				     knit_completion_t *out, int64_t timeout_ns) KNIT_NOEXCEPT
{
	if (out == nullptr)
		return -KNIT_EINVAL;
	memset(out, 0, sizeof *out);
	out->result.type = KNIT_VALUE_NONE;
	if (pool != nullptr && in_task_of(&pool->p))
		return -KNIT_EBUSY;
	return refused(pool, call_ticketed(pool, task, arg, opts, ticket, out, timeout_ns));
}

extern "C" KNIT_API int knit_call(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
				  knit_completion_t *out, int64_t timeout_ns) KNIT_NOEXCEPT
{
	if (out == nullptr)
		return -KNIT_EINVAL;
	// Every failure leaves *out empty (releasing it is then harmless).
	memset(out, 0, sizeof *out);
	out->result.type = KNIT_VALUE_NONE;
	if (pool != nullptr && in_task_of(&pool->p))
		return -KNIT_EBUSY;
	// The fast path first (src/syncline.h): kLineNo leaves everything to
	// the ticketed path, which also reports every argument error.
	if (pool != nullptr && !pool_forked(&pool->p) && task < pool->p.ntasks) {
		const int lr = line_call(&pool->p, task, arg, out, timeout_ns);
		if (lr != kLineNo)
			return refused(pool, lr);
	}
	return refused(pool, call_ticketed(pool, task, arg, nullptr, nullptr, out, timeout_ns));
}

extern "C" KNIT_API int knit_cancel(knit_pool_t *pool, knit_ticket_t ticket,
				    uint32_t flags) KNIT_NOEXCEPT
{
	if (pool == nullptr)
		return -KNIT_EINVAL;
	// NOW, SIGNAL, KILL or NOW | KILL (KILL is NOW and more).
	const bool kill = (flags & KNIT_CANCEL_KILL) != 0;
	const uint32_t how =
		kill && flags != KNIT_CANCEL_KILL ? flags & ~(uint32_t)KNIT_CANCEL_KILL : flags;
	if (how != KNIT_CANCEL_NOW && how != KNIT_CANCEL_SIGNAL && how != KNIT_CANCEL_KILL)
		return -KNIT_EINVAL;
	if (kill && how == KNIT_CANCEL_SIGNAL)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	// Only a kind that can end one worker alone (processes) takes KILL.
	if (kill && p->workers->cancel_kill == nullptr)
		return -KNIT_EINVAL;
	if (pool_forked(p))
		return -KNIT_ECLOSED;
	const uint32_t index = ticket_index(ticket);
	const uint32_t gen = ticket_gen(ticket);
	Call *c = gen != 0 ? p->tickets.lookup(index) : nullptr;
	if (c == nullptr)
		return -KNIT_ENOTFOUND;
	pthread_mutex_lock(&p->mu);
	// A knit_call's record is its caller's alone, unless knit_call_ex
	// published its ticket to be cancelled.
	const bool reachable = !(c->flags & kCallPrivate) || (c->flags & kCallTicketed);
	if (!c->live || c->gen != gen || c->completed || !reachable) {
		pthread_mutex_unlock(&p->mu);
		return -KNIT_ENOTFOUND;
	}
	if (flags == KNIT_CANCEL_SIGNAL) {
		if (c->abort_bit < 0) {
			pthread_mutex_unlock(&p->mu);
			return -KNIT_EINVAL;
		}
		abort_raise_locked(p, c);
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	if (kill) {
		// The worker that runs it, if any, is killed by the backend,
		// which looks after this hold: the call is completed by then.
		const int rc = p->workers->cancel_kill(p, index, gen);
		if (rc != 0) {
			pthread_mutex_unlock(&p->mu);
			return rc;
		}
	}
	call_fail_locked(p, c, -KNIT_ECANCELED);
	pthread_mutex_unlock(&p->mu);
	host_event(p, true);
	return 0;
}
