// SPDX-License-Identifier: MIT
// src/tickets.cpp - the host's call records and the deadline heap.
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
// the capacity: each costs 2^32 - 1 calls on one record, so the pool takes
// at least 2^52 calls before it could run out (then -KNIT_EAGAIN).
#include "src/common.h"

#include <stdlib.h>

#include "src/pool.h"

namespace knit::detail {

int TicketTable::init(uint32_t capacity)
{
	max_live_ = capacity;
	uint64_t limit = (uint64_t)capacity + kRetireAllowance;
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

Call *TicketTable::alloc(int *err)
{
	if (live_ >= max_live_) {
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
				chunk[i].heap_pos = kNoHeap;
			}
			// Release: pairs with the acquire load in lookup(), so a
			// lookup from another thread sees the initialised indexes.
			__atomic_store_n(&chunks_[ci], chunk, __ATOMIC_RELEASE);
		}
		c = &chunks_[ci][next_new_ % kTicketChunk];
		next_new_++;
	}
	// gen is bumped at every allocation and starts at 1: ticket never 0;
	// it never wraps (retired above at kGenLast).
	const uint32_t gen = c->gen + 1;
	const uint32_t index = c->index;
	memset(c, 0, sizeof *c);
	c->index = index;
	c->gen = gen;
	c->live = 1;
	c->abort_bit = -1;
	c->lane = kNoLane;
	c->heap_pos = kNoHeap;
	c->result.type = KNIT_VALUE_NONE;
	live_++;
	return c;
}

void TicketTable::free(Call *c)
{
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
	if (c->heap_pos != kNoHeap || n_ >= cap_)
		return; // cannot happen: one entry per live record, cap = records
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

} // namespace knit::detail
