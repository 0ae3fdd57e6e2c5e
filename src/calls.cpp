// SPDX-License-Identifier: MIT
// src/calls.cpp - the host's call records, the deadline heap, and the call
// lifecycle (src/calls.h): completion, holds, abort bits, hand-out.
//
// A call record lives from knit_enqueue until its completion has been handed
// out and nothing references it any more (CallHold; a placed call's frame
// holds it until reaped); then it goes back to a LIFO free list with its
// generation kept, and the next use bumps the generation. A ticket is
// (generation << 32 | index); a record that has used its last generation
// (0xFFFFFFFF) is retired for good instead of wrapping to 1, and a fresh
// index takes its place. So an (index, generation) pair, hence a ticket and
// the pair a frame carries as its late-result guard, is never reused. Records
// are allocated in chunks on first use; at most `capacity` are live at once
// (the lanes' in-flight slots plus max_pending). Indexes go up to
// capacity(), which leaves room for kRetireAllowance retirements beyond
// the capacity: each costs at least 2^31 calls on one record (generations
// start at the table's base, 1 .. 2^31), so the pool takes at least 2^51
// calls before it could run out (then -KNIT_EAGAIN).
#include "src/common.h"

#include <stdlib.h>
#include <sys/timerfd.h>

#include "src/calls.h"
#include "src/chunk.h"
#include "src/dcheck.h"
#include "src/info.h"
#include "src/trace.h"

namespace knit::detail {

namespace {
uint64_t g_ticket_tables; // tables made in this process (atomic)

// Arm the completion descriptor's timerfd at `at` (absolute, knit_now_ns's
// CLOCK_MONOTONIC; 0 disarms). Re-arming also resets a fired timer, so the
// descriptor reads "a deadline passed that no pass has handled" exactly:
// the pass that expires the heap top changes the top, and we land here.
// A syscall only while a completion descriptor exists and only when the
// earliest deadline changes.
void deadline_timer_arm_locked(Pool *p, int64_t at)
{
	if (p->tfd < 0 || at == p->tfd_target)
		return;
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	its.it_value.tv_sec = at / 1000000000;
	its.it_value.tv_nsec = at % 1000000000;
	// An absolute time already past fires at once: the deadline waits for
	// a pass, so the descriptor is readable, as it should be.
	if (knit_sys_timerfd_settime(p->tfd, at != 0 ? TFD_TIMER_ABSTIME : 0, &its) == 0)
		p->tfd_target = at;
}

void update_earliest_locked(Pool *p)
{
	Call *t = p->heap.top();
	const int64_t at = t ? t->deadline_ns : 0;
	knit_store_relaxed_64(reinterpret_cast<uint64_t *>(&p->earliest_deadline), (uint64_t)at);
	deadline_timer_arm_locked(p, at);
}

// Register result bytes about to be handed out (under mu): the handle
// (never 0), or 0 when the table cannot grow.
uint64_t owned_register_locked(Pool *p, uint8_t *buf)
{
	uint32_t slot;
	if (p->owned_free != 0) {
		slot = p->owned_free - 1;
		p->owned_free = p->owned[slot].next;
	} else {
		if (p->owned_n == p->owned_cap) {
			const uint32_t ncap = p->owned_cap ? p->owned_cap * 2 : 64;
			if (ncap <= p->owned_cap)
				return 0;
			void *m = realloc(p->owned, (size_t)ncap * sizeof(OwnedBuf));
			if (m == nullptr)
				return 0;
			p->owned = static_cast<OwnedBuf *>(m);
			p->owned_cap = ncap;
		}
		slot = p->owned_n++;
		p->owned[slot].gen = 0;
	}
	OwnedBuf *o = &p->owned[slot];
	o->gen++;
	if (o->gen == 0)
		o->gen = 1;
	o->buf = buf;
	o->next = 0;
	return ((uint64_t)o->gen << 32) | ((uint64_t)slot + 1);
}

// hand_out_locked() without its count in st_completed (deliver() counts a
// whole batch at once). Always inline: deliver()'s loop is the common
// hand-out, and a call per completion costs more than its body.
// info: p->info.notes != 0, read once per batch (under mu: a batch that
// starts with none makes none).
[[gnu::always_inline]] inline void hand_out_one_locked(Pool *p, Call *c, knit_completion_t *out,
						       bool info)
{
	// Field by field, every field once: a memset of the whole completion
	// and then the copy cost twice the stores, per completion handed out.
	// The record's result needs no clearing: nothing reads it after the
	// hand-out, and the next use of the record resets it (TicketTable::alloc).
	static_assert(sizeof(knit_completion_t) == 8 + 8 + 4 + 4 + sizeof(knit_value_t) + 16,
		      "knit_completion_t changed: fill its new fields here");
	out->ticket = ticket_of(c);
	out->user_data = c->user_data;
	out->status = c->status;
	out->task = c->task;
	out->result = c->result;
	out->reserved[0] = 0;
	out->reserved[1] = 0;
	if (c->result_buf != nullptr) {
		hand_out_bytes_locked(p, c->result_buf, out);
		c->result_buf = nullptr;
	}
	if (info)
		info_hand_out_locked(p, c, out);
	call_unhold_locked(p, c, kHoldUser);
}

// Free the bytes registered under handle h that completion *c names (takes
// mu): 0, or -KNIT_EINVAL when they are not (or no longer) its. Out of line,
// so that the common release -- a completion that owns nothing -- saves and
// restores no registers for it.
[[gnu::noinline]] int release_owned(Pool *p, const knit_completion_t *c, uint64_t h)
{
	const uint32_t slot = (uint32_t)h - 1;
	const uint32_t gen = (uint32_t)(h >> 32);
	pthread_mutex_lock(&p->mu);
	OwnedBuf *o = (uint32_t)h != 0 && slot < p->owned_n ? &p->owned[slot] : nullptr;
	if (o == nullptr || o->buf == nullptr || o->gen != gen ||
	    c->reserved[1] != completion_word(p, h, (uint32_t)c->reserved[1]) ||
	    c->result.data != o->buf) {
		pthread_mutex_unlock(&p->mu);
		return -KNIT_EINVAL; // a copy already released, or never ours
	}
	uint8_t *buf = o->buf;
	o->buf = nullptr;
	o->next = p->owned_free;
	p->owned_free = slot + 1;
	pthread_mutex_unlock(&p->mu);
	free(buf);
	return 0;
}

} // namespace

int TicketTable::init(uint32_t capacity, uint32_t carriers)
{
	// Where this table's generations start: 1 .. 2^31, a Weyl sequence over
	// the tables of the process (golden-ratio steps), so that any two of
	// the first N tables start at least about 2^31 / N apart. A ticket of
	// another pool then names a generation this table has not reached at
	// that index unless one of the two used that record that many times:
	// knit_complete_tickets() and knit_cancel() tell it apart from a call
	// of their own. Every record still has at least 2^31 generations.
	const uint64_t k = knit_fetch_add_relaxed_64(&g_ticket_tables, 1);
	gen_base_ = 1 + (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 33);
	max_live_ = capacity;
	max_carriers_ = carriers;
	carriers_ = 0;
	uint64_t limit = (uint64_t)capacity + carriers + kRetireAllowance;
	if (limit > kTicketIndexMax)
		limit = kTicketIndexMax;
	capacity_ = (uint32_t)limit;
	nchunks_ = (capacity_ + kTicketChunk - 1) / kTicketChunk;
	chunks_ = static_cast<Call **>(calloc(nchunks_ ? nchunks_ : 1, sizeof(Call *)));
	next_new_ = 0;
	live_ = 0;
	free_ = nullptr;
	return chunks_ ? 0 : -KNIT_ENOMEM;
}

void TicketTable::fini()
{
	if (chunks_ == nullptr)
		return;
	for (uint32_t i = 0; i < nchunks_; i++)
		::free(chunks_[i]);
	::free(chunks_);
	chunks_ = nullptr;
	nchunks_ = 0;
	next_new_ = 0;
	live_ = 0;
	free_ = nullptr;
}

Call *TicketTable::alloc_carrier(uint64_t *ticket, int *err)
{
	if (carriers_ >= max_carriers_) {
		*err = -KNIT_EAGAIN;
		return nullptr;
	}
	Call *c = alloc_slow(ticket, err, true);
	if (c == nullptr)
		return nullptr;
	live_--; // take() counted it as a call's
	carriers_++;
	c->flags = kCallCarrier;
	return c;
}

Call *TicketTable::alloc_slow(uint64_t *ticket, int *err, bool carrier)
{
	if (!carrier && live_ >= max_live_) {
		*err = -KNIT_EAGAIN;
		return nullptr;
	}
	Call *c = free_;
	// A record at its last generation is retired: dropped from the free
	// list for good (its stale tickets then never match a live call).
	while (c != nullptr && c->gen == kGenLast) {
		free_ = c->next;
		c->next = nullptr;
		c = free_;
	}
	if (c != nullptr) {
		free_ = c->next;
		prefetch_next();
	} else {
		if (next_new_ >= capacity_) {
			*err = -KNIT_EAGAIN;
			return nullptr;
		}
		const uint32_t ci = next_new_ / kTicketChunk;
		if (chunks_[ci] == nullptr) {
			Call *chunk = static_cast<Call *>(calloc(kTicketChunk, sizeof(Call)));
			if (chunk == nullptr) {
				*err = -KNIT_ENOMEM;
				return nullptr;
			}
			for (uint32_t i = 0; i < kTicketChunk; i++) {
				chunk[i].index = ci * kTicketChunk + i;
				chunk[i].gen = gen_base_ - 1; // take() bumps it to the base
				chunk[i].heap_pos = kNoHeap;
			}
			// Release: pairs with the acquire load in lookup(), so a
			// lookup from another thread sees the initialised indexes.
			__atomic_store_n(&chunks_[ci], chunk, __ATOMIC_RELEASE);
		}
		c = &chunks_[ci][next_new_ % kTicketChunk];
		next_new_++;
	}
	return take(c, ticket);
}

void TicketTable::free(Call *c)
{
	if (KNIT_UNLIKELY(c->flags & kCallCarrier))
		carriers_--;
	else
		live_--;
	c->live = 0;
	c->next = free_;
	free_ = c;
}

Call *TicketTable::lookup(uint32_t index) const
{
	if (index >= capacity_)
		return nullptr;
	// Acquire: pairs with the release store of the chunk pointer in alloc().
	Call *chunk = __atomic_load_n(&chunks_[index / kTicketChunk], __ATOMIC_ACQUIRE);
	return chunk ? &chunk[index % kTicketChunk] : nullptr;
}

// ---- deadline heap -------------------------------------------------------------------

int DeadlineHeap::init(uint32_t capacity)
{
	cap_ = capacity ? capacity : 1;
	n_ = 0;
	a_ = static_cast<Call **>(malloc((size_t)cap_ * sizeof(Call *)));
	return a_ ? 0 : -KNIT_ENOMEM;
}

void DeadlineHeap::fini()
{
	::free(a_);
	a_ = nullptr;
	n_ = cap_ = 0;
}

void DeadlineHeap::sift_up(uint32_t i)
{
	Call *c = a_[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (a_[parent]->deadline_ns <= c->deadline_ns)
			break;
		place(i, a_[parent]);
		i = parent;
	}
	place(i, c);
}

void DeadlineHeap::sift_down(uint32_t i)
{
	Call *c = a_[i];
	for (;;) {
		uint32_t l = 2 * i + 1;
		if (l >= n_)
			break;
		uint32_t m = l;
		if (l + 1 < n_ && a_[l + 1]->deadline_ns < a_[l]->deadline_ns)
			m = l + 1;
		if (a_[m]->deadline_ns >= c->deadline_ns)
			break;
		place(i, a_[m]);
		i = m;
	}
	place(i, c);
}

void DeadlineHeap::push(Call *c)
{
	KNIT_DCHECK(c->heap_pos == kNoHeap &&
		    n_ < cap_); // one entry per live record, cap = records
	if (c->heap_pos != kNoHeap || n_ >= cap_)
		return;
	place(n_, c);
	n_++;
	sift_up(n_ - 1);
}

void DeadlineHeap::remove(Call *c)
{
	uint32_t i = c->heap_pos;
	if (i == kNoHeap || i >= n_ || a_[i] != c)
		return;
	c->heap_pos = kNoHeap;
	n_--;
	if (i == n_)
		return;
	Call *moved = a_[n_];
	place(i, moved);
	sift_down(i);
	sift_up(moved->heap_pos);
}

// ---- the lifecycle ------------------------------------------------------------------

int deadline_timer_open_locked(Pool *p)
{
	if (p->tfd >= 0)
		return 0;
	const int fd = knit_sys_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return fd;
	p->tfd = fd;
	p->tfd_target = 0;
	Call *t = p->heap.top();
	deadline_timer_arm_locked(p, t ? t->deadline_ns : 0);
	return 0;
}

Call *call_alloc_abort_locked(Pool *p, Call *c, int *err)
{
	c->abort_bit = abort_alloc_locked(p);
	if (c->abort_bit >= 0)
		return c;
	c->holds = 0;
	p->tickets.free(c);
	*err = -KNIT_EAGAIN;
	return nullptr;
}

uint64_t call_undo_locked(Pool *p, Call *c)
{
	abort_release_locked(p, c);
	mu_counter_add_64(&p->st_enqueued, (uint64_t)-1); // counted in enqueue()
	if (call_class(c->flags) != kClassNormal)         // counted in call_fill()
		mu_counter_add_64(&p->st_class_enqueued[call_class(c->flags) == kClassHigh ? 0 : 1],
				  (uint64_t)-1);
	// Release (a load + store: every write of outstanding is under mu):
	// pairs with the acquire loads of outstanding in drained_ready() /
	// knit_complete() (as the increment in enqueue()).
	const uint64_t before = knit_load_relaxed_64(&p->outstanding);
	knit_store_release_64(&p->outstanding, before - 1);
	c->holds = 0;
	free(c->arg_buf);
	c->arg_buf = nullptr;
	p->tickets.free(c);
	return before;
}

void deadline_track_locked(Pool *p, Call *c)
{
	p->heap.push(c);
	update_earliest_locked(p);
}

namespace {

// The status every rider of a carrier that ended with `status` and
// `result` gets when the result tells none of theirs: the carrier's own,
// or, for the chunk task's own failure (-KNIT_ETASK, src/task.cpp
// chunk_fail), the code its error names; anything else a worker could
// not have sent honestly is -KNIT_EPROTO.
int32_t carrier_rest(int32_t status, const knit_value_t &result)
{
	if (status != -KNIT_ETASK)
		return status;
	if (result.type == KNIT_VALUE_ERROR &&
	    (result.code == -KNIT_EPROTO || result.code == -KNIT_ENOMEM))
		return result.code;
	return -KNIT_EPROTO;
}

// Carrier c completed (under mu; marked completed, status set): each of
// its riders not completed yet completes, in order, with its outcome from
// the result (the host's own copy: chunk_next checks every entry of it),
// or, once the result tells no more (malformed, short) or when the carrier
// failed, with carrier_rest(); and each loses the hold c kept (it may be
// recycled here). A status-0 result that is not the riders' outcomes is
// counted as a protocol error, and its run time feeds the task's
// estimate (src/calls.h).
void carrier_complete_locked(Pool *p, Call *c, int32_t status, const knit_value_t &result,
			     CompleteBatch *batch)
{
	Call *r = static_cast<Call *>(c->user_data);
	const uint32_t n = c->pin_lane;
	TaskEntry &te = p->tasks[r->task];
	const uint64_t cap = p->cfg.max_payload_bytes;
	if (n == 1)
		knit_store_relaxed_32(&te.ride_probing, 0); // a probe is back
	ChunkReader rd;
	bool open = false;
	int32_t rest = carrier_rest(status, result);
	if (status == 0) {
		uint32_t ns = 0;
		if (result.type == KNIT_VALUE_BYTES &&
		    chunk_open(&rd, result.data, result.len, kChunkOutcomes, n, &ns) == 0 &&
		    rd.count == n) {
			open = true;
			const uint64_t per = ns / n;
			knit_store_relaxed_64(&te.ride_ns,
					      ride_estimate(knit_load_relaxed_64(&te.ride_ns),
							    knit_load_relaxed_64(&te.ride_last),
							    per));
			knit_store_relaxed_64(&te.ride_last, per);
		} else {
			knit_add_relaxed_64(&p->st_proto_errors, 1);
			rest = -KNIT_EPROTO;
		}
	}
	uint32_t room = knit_load_relaxed_32(&te.ride_room);
	const uint32_t room0 = room;
	for (uint32_t i = 0; i < n; i++) {
		Call *const next = r->next; // the unhold below may recycle r
		int32_t s = rest;
		knit_value_t v = kValueNone;
		if (open) {
			if (chunk_next(&rd, kChunkOutcomes, &s, &v) != 0) {
				knit_add_relaxed_64(&p->st_proto_errors, 1);
				open = false;
				rest = -KNIT_EPROTO;
				s = rest;
				v = kValueNone;
			} else if (KNIT_UNLIKELY(codec_has_bytes(v.type) || s == -KNIT_ETOOBIG)) {
				const uint64_t b =
					s == -KNIT_ETOOBIG ? cap : chunk_payload_bytes(v);
				if (b > room)
					room = b > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)b;
			}
		}
		if (!r->completed) {
			uint8_t *buf = nullptr;
			knit_value_t val = v;
			if (codec_has_bytes(v.type) && value_copy_bytes(v, &val, &buf) != 0) {
				s = -KNIT_ENOMEM;
				val = kValueNone;
			}
			if (batch != nullptr)
				call_complete_batch_locked(p, r, s, val, buf, batch);
			else
				call_complete_locked(p, r, s, val, buf);
		}
		call_unhold_locked(p, r, kHoldHostQueue);
		r = next;
	}
	if (room != room0)
		knit_store_relaxed_32(&te.ride_room, room);
}

} // namespace

bool call_complete_locked(Pool *p, Call *c, int32_t status, const knit_value_t &result,
			  uint8_t *result_buf, CompleteBatch *batch)
{
	if (c->completed || !c->live) {
		free(result_buf);
		return false;
	}
	if (KNIT_UNLIKELY(c->flags & kCallCarrier)) {
		// Never queued nor counted itself: its riders are (src/calls.h).
		// Traced, as its frame was (enqueue, start, done: knit-trace
		// pairs them by ticket).
		KNIT_TRACE_TASK_COMPLETE(p, ticket_of(c), status);
		knit_store_relaxed_32(&c->completed, 1);
		c->status = status;
		carrier_complete_locked(p, c, status, result, batch);
		free(result_buf);
		return true;
	}
	KNIT_TRACE_TASK_COMPLETE(p, ticket_of(c), status);
	knit_store_relaxed_32(&c->completed, 1);
	c->status = status;
	c->result = result;
	c->result_buf = result_buf;
	if (c->heap_pos != kNoHeap) {
		p->heap.remove(c);
		update_earliest_locked(p);
	}
	// A call without an abort bit (most) has nothing to raise or release.
	if (c->abort_bit >= 0) {
		if (status == -KNIT_ECANCELED || status == -KNIT_ECLOSED ||
		    status == -KNIT_ETIMEDOUT) {
			// Completed ahead of its task (cancel NOW, stop CANCEL, a
			// passed deadline): tell a running task to stop, its result
			// is no longer wanted. The bit stays allocated, and raised,
			// until the record is recycled, which waits for the task's
			// late result (a placed call keeps kHoldHostQueue until its
			// frame is reaped), so no other call can be given a bit a
			// running task still reads.
			abort_raise_locked(p, c);
		} else {
			abort_release_bit_locked(p, c);
		}
	}
	const bool queued = !(c->flags & kCallPrivate);
	if (!queued) {
		// Release: pairs with the acquire load of done in knit_call's
		// readiness check: status and result are visible with it.
		knit_store_release_32(&c->done, 1);
	} else {
		cq_append_locked(p, c);
	}
	if (batch != nullptr) {
		// Counted by complete_batch_end_locked(), before mu is released.
		batch->queued += queued ? 1u : 0u;
		batch->done++;
		return true;
	}
	if (queued)
		mu_counter_add_32(&p->cq_count, 1);
	// Last, with release (a load + store: every write of outstanding is
	// under mu): pairs with the acquire load of outstanding in
	// knit_complete() before it reads cq_count: whoever sees this call no
	// longer outstanding also sees its completion queued (no -KNIT_ECLOSED
	// while a completion is on its way).
	knit_store_release_64(&p->outstanding, knit_load_relaxed_64(&p->outstanding) - 1);
	return true;
}

uint32_t calls_fail_all_locked(Pool *p, int32_t status)
{
	uint32_t n = 0;
	const uint32_t high = p->tickets.high();
	for (uint32_t i = 0; i < high; i++) {
		Call *c = p->tickets.lookup(i);
		if (c != nullptr && c->live && !c->completed && call_fail_locked(p, c, status))
			n++;
	}
	return n;
}

uint32_t calls_fail_lane_locked(Pool *p, uint32_t w, int32_t status, bool unclaimed,
				const DeathNote *d)
{
	uint32_t n = 0;
	const uint32_t high = p->tickets.high();
	for (uint32_t i = 0; i < high; i++) {
		Call *c = p->tickets.lookup(i);
		if (c == nullptr || !c->live ||
		    (c->lane != w && !(unclaimed && c->lane == kStealLane)) ||
		    (c->holds & kHoldHostQueue) == 0)
			continue;
		if (d != nullptr && d->cause != KNIT_DEATH_NONE && c->lane == w && !c->completed) {
			if (c->flags & kCallCarrier) {
				// Told to each rider it would fail (not the carrier:
				// nobody reads its info).
				Call *r = static_cast<Call *>(c->user_data);
				for (uint32_t k = 0; k < c->pin_lane; k++, r = r->next)
					if (!r->completed)
						info_death_locked(p, r, w, d->pid, d->cause,
								  d->detail, d->sys);
			} else {
				info_death_locked(p, c, w, d->pid, d->cause, d->detail, d->sys);
			}
		}
		c->lane = kNoLane; // no frame of this lane counts for it any more
		if (call_fail_locked(p, c, status))
			n++;
		call_unhold_locked(p, c, kHoldHostQueue); // its frame never comes back
	}
	return n;
}

void complete_batch_end_locked(Pool *p, CompleteBatch *b)
{
	if (b->done == 0)
		return;
	mu_counter_add_32(&p->cq_count, b->queued);
	// Last, with release, as the one-call decrement in
	// call_complete_locked() (pairs with the same acquire loads): whoever
	// sees these calls no longer outstanding also sees every one of their
	// completions queued and counted in cq_count.
	knit_store_release_64(&p->outstanding, knit_load_relaxed_64(&p->outstanding) - b->done);
	b->queued = 0;
	b->done = 0;
}

void call_recycle_locked(Pool *p, Call *c)
{
	if (c->heap_pos != kNoHeap) {
		p->heap.remove(c);
		update_earliest_locked(p);
	}
	abort_release_locked(p, c);
	// Most records own neither by now (the argument went into shared
	// memory, the result bytes to the completion): no call to free(NULL).
	if (c->arg_buf != nullptr) {
		free(c->arg_buf);
		c->arg_buf = nullptr;
	}
	if (c->result_buf != nullptr) {
		free(c->result_buf);
		c->result_buf = nullptr;
	}
	p->tickets.free(c);
}

int32_t abort_alloc_locked(Pool *p)
{
	const uint32_t cap = p->cfg.abort_capacity;
	if (p->abort_used >= cap)
		return -1;
	const uint32_t words = p->abort_nwords;
	for (uint32_t k = 0; k < words; k++) {
		uint32_t w = (p->abort_cursor + k) % words;
		uint32_t free_bits = ~p->abort_in_use[w];
		if (w == words - 1 && cap % 32 != 0)
			free_bits &= (1u << (cap % 32)) - 1;
		if (free_bits == 0)
			continue;
		uint32_t b = (uint32_t)__builtin_ctz(free_bits);
		p->abort_in_use[w] |= 1u << b;
		p->abort_used++;
		p->abort_cursor = (w + 1) % words;
		// Clear the shared bit before the call can be published (the
		// release store of A then orders it for the worker).
		knit_and_acq_rel_32(&p->abort_words[w], ~(1u << b));
		return (int32_t)(w * 32 + b);
	}
	return -1;
}

void abort_raise_locked(Pool *p, Call *c)
{
	if (c->abort_bit < 0)
		return;
	const uint32_t b = (uint32_t)c->abort_bit;
	// Release: pairs with the worker's acquire load in knit_ctx_aborted().
	knit_or_acq_rel_32(&p->abort_words[b / 32], 1u << (b % 32));
}

void abort_release_bit_locked(Pool *p, Call *c)
{
	uint32_t w = (uint32_t)c->abort_bit / 32, b = (uint32_t)c->abort_bit % 32;
	p->abort_in_use[w] &= ~(1u << b);
	p->abort_used--;
	// Pairs with the worker's acquire load in knit_ctx_aborted(): a task
	// still running after its call completed may see the bit cleared.
	knit_and_acq_rel_32(&p->abort_words[w], ~(1u << b));
	c->abort_bit = -1;
}

int value_copy_bytes(const knit_value_t &v, knit_value_t *out, uint8_t **buf)
{
	*out = v;
	*buf = nullptr;
	if (v.type != KNIT_VALUE_ERROR)
		out->code = 0;
	if (v.type == KNIT_VALUE_BYTES && v.len == 0) {
		out->data = nullptr;
		return 0;
	}
	uint8_t *b = static_cast<uint8_t *>(malloc(v.len + 1));
	if (b == nullptr)
		return -KNIT_ENOMEM;
	if (v.len)
		memcpy(b, v.data, v.len);
	b[v.len] = 0; // strings and error messages are NUL-terminated
	out->data = b;
	*buf = b;
	return 0;
}

void hand_out_bytes_locked(Pool *p, uint8_t *buf, knit_completion_t *out)
{
	const uint64_t h = owned_register_locked(p, buf);
	if (h != 0) {
		out->reserved[0] = h;
		out->reserved[1] = completion_word(p, h, 0);
	} else {
		// No room to track the bytes: the call still gets its one
		// completion, as an allocation failure.
		free(buf);
		out->status = -KNIT_ENOMEM;
		memset(&out->result, 0, sizeof out->result);
	}
}

// Move a completed record into *out (the bytes change owner) and drop the
// user hold (under mu).
void hand_out_locked(Pool *p, Call *c, knit_completion_t *out)
{
	hand_out_one_locked(p, c, out, p->info.notes != 0);
	mu_counter_add_64(&p->st_completed, 1);
}

int deliver(Pool *p, knit_completion_t *out, unsigned max)
{
	if (knit_load_relaxed_32(&p->cq_count) == 0)
		return 0;
	unsigned n = 0;
	pthread_mutex_lock(&p->mu);
	Call *c = p->cq_head;
	const bool info = p->info.notes != 0;
	while (n < max && c != nullptr) {
		Call *const next = c->cq_next; // hand-out may recycle c
		hand_out_one_locked(p, c, &out[n], info);
		n++;
		c = next;
	}
	p->cq_head = c;
	if (c == nullptr)
		p->cq_tail = nullptr;
	// The counters once per batch (both change under mu only; readers
	// outside it only look: complete_ready, efd_pending, knit_pool_stats).
	mu_counter_add_32(&p->cq_count, (uint32_t)0 - n);
	mu_counter_add_64(&p->st_completed, n);
	pthread_mutex_unlock(&p->mu);
	return (int)n;
}

// ---- reaping chosen calls ------------------------------------------------------------

Call *unreaped_locked(Pool *p, knit_ticket_t t)
{
	Call *c = p->tickets.lookup(ticket_index(t));
	if (c == nullptr || !c->live || c->gen != ticket_gen(t) || (c->holds & kHoldUser) == 0 ||
	    (c->flags & kCallPrivate) != 0)
		return nullptr;
	return c;
}

unsigned take_tickets_locked(Pool *p, const knit_ticket_t *tickets, unsigned n,
			     knit_completion_t *out, unsigned max, unsigned *alive)
{
	unsigned got = 0, live = 0;
	for (unsigned i = 0; i < n; i++) {
		Call *c = unreaped_locked(p, tickets[i]);
		if (c == nullptr)
			continue;
		live++;
		if (got == max || !c->completed)
			continue;
		// A completed call that still holds kHoldUser is in the completion
		// queue (call_complete_locked queued it; only a hand-out drops the
		// hold): unlink it. The queue is singly linked, so this walks the
		// completions ahead of it.
		Call *prev = nullptr, *x = p->cq_head;
		while (x != nullptr && x != c) {
			prev = x;
			x = x->cq_next;
		}
		KNIT_DCHECK(x == c);
		if (x == nullptr)
			continue;
		if (prev != nullptr)
			prev->cq_next = c->cq_next;
		else
			p->cq_head = c->cq_next;
		if (p->cq_tail == c)
			p->cq_tail = prev;
		mu_counter_add_32(&p->cq_count, (uint32_t)-1);
		hand_out_locked(p, c, &out[got++]);
	}
	*alive = live;
	return got;
}

int unreaped_snapshot_locked(Pool *p, knit_ticket_t **out, uint32_t *n)
{
	*out = nullptr;
	*n = 0;
	uint32_t cnt = 0;
	const uint32_t used = p->tickets.used();
	for (uint32_t i = 0; i < used; i++) {
		const Call *c = p->tickets.lookup(i);
		if (c != nullptr && c->live && (c->holds & kHoldUser) != 0 &&
		    (c->flags & kCallPrivate) == 0)
			cnt++;
	}
	if (cnt == 0)
		return 0;
	knit_ticket_t *t = static_cast<knit_ticket_t *>(malloc((size_t)cnt * sizeof *t));
	if (t == nullptr)
		return -KNIT_ENOMEM;
	uint32_t k = 0;
	for (uint32_t i = 0; i < used && k < cnt; i++) {
		const Call *c = p->tickets.lookup(i);
		if (c != nullptr && c->live && (c->holds & kHoldUser) != 0 &&
		    (c->flags & kCallPrivate) == 0)
			t[k++] = ticket_of(c);
	}
	*out = t;
	*n = k;
	return 0;
}

uint32_t unreaped_compact_locked(Pool *p, knit_ticket_t *t, uint32_t n)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (unreaped_locked(p, t[i]) != nullptr)
			t[k++] = t[i];
	return k;
}

int completion_release(Pool *p, knit_completion_t *c)
{
	const uint64_t h = c->reserved[0];
	if (h != 0) {
		const int rc = release_owned(p, c, h);
		if (rc != 0)
			return rc;
	} else if (codec_has_bytes(c->result.type) && c->result.data != nullptr) {
		// Owns nothing: empty (never filled, already released, or a
		// result without bytes) unless it points at bytes not ours. No
		// lock: nothing of the pool's is read or written.
		return -KNIT_EINVAL;
	}
	c->reserved[0] = 0;
	c->reserved[1] = 0;
	memset(&c->result, 0, sizeof c->result);
	c->result.type = KNIT_VALUE_NONE;
	return 0;
}

} // namespace knit::detail
