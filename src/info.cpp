// SPDX-License-Identifier: MIT
// src/info.cpp - completion infos: the notes by record, the ring, the
// lookup from a completion (src/info.h has the contract and the words).
#include "src/common.h"

#include <stdio.h>
#include <stdlib.h>

#include "src/info.h"
#include "src/sysname.h"

namespace knit::detail {

namespace {

// c's note if its chunk exists (under mu), else nullptr.
CallNote *note_of(Pool *p, const Call *c)
{
	const uint32_t k = c->index / kTicketChunk;
	if (k >= p->info.nchunks || p->info.chunks[k] == nullptr)
		return nullptr;
	return &p->info.chunks[k][c->index % kTicketChunk];
}

// c's note, its chunk allocated on first use (under mu); nullptr when
// memory cannot be had.
CallNote *note_take(Pool *p, const Call *c)
{
	InfoRoom &r = p->info;
	const uint32_t k = c->index / kTicketChunk;
	if (k >= r.nchunks) {
		const uint32_t n = (p->tickets.capacity() + kTicketChunk - 1) / kTicketChunk;
		if (k >= n)
			return nullptr;
		void *m = calloc(n, sizeof(CallNote *));
		if (m == nullptr)
			return nullptr;
		CallNote **chunks = static_cast<CallNote **>(m);
		for (uint32_t i = 0; i < r.nchunks; i++)
			chunks[i] = r.chunks[i];
		free(r.chunks);
		r.chunks = chunks;
		r.nchunks = n;
	}
	if (r.chunks[k] == nullptr) {
		r.chunks[k] = static_cast<CallNote *>(calloc(kTicketChunk, sizeof(CallNote)));
		if (r.chunks[k] == nullptr)
			return nullptr;
	}
	return &r.chunks[k][c->index % kTicketChunk];
}

// Whether n holds something about c's current use.
bool pending(const CallNote *n, const Call *c)
{
	return n->gen == c->gen && (n->flags != 0 || n->t_enq != 0);
}

// c's note for this use, started empty (and counted in notes) unless it
// holds something about this use already; nullptr when memory cannot be
// had.
CallNote *note_for_use(Pool *p, const Call *c)
{
	CallNote *n = note_take(p, c);
	if (n == nullptr)
		return nullptr;
	if (!pending(n, c)) {
		memset(n, 0, sizeof *n);
		n->gen = c->gen;
		p->info.notes++;
	}
	return n;
}

} // namespace

int info_init(Pool *p)
{
	InfoRoom &r = p->info;
	memset(&r, 0, sizeof r);
	r.timing = p->cfg.timing;
	r.notes = r.timing ? 1 : 0; // the timed pool's one: never handed out
	r.cap = p->cfg.info_records;
	r.ring = static_cast<InfoEntry *>(calloc(r.cap, sizeof(InfoEntry)));
	return r.ring != nullptr ? 0 : -KNIT_ENOMEM;
}

void info_fini(Pool *p)
{
	InfoRoom &r = p->info;
	for (uint32_t i = 0; i < r.nchunks; i++)
		free(r.chunks[i]);
	free(r.chunks);
	free(r.ring);
	memset(&r, 0, sizeof r);
}

uint32_t completion_check(const Pool *p, uint64_t handle, uint32_t seq)
{
	const uint64_t x =
		(handle ^ ((uint64_t)seq << 29) ^ ((uint64_t)seq >> 3)) * 0x9E3779B97F4A7C15ull ^
		p->owned_salt;
	return (uint32_t)(x >> 32) ^ (uint32_t)x;
}

void info_enqueue_locked(Pool *p, const Call *c, int64_t now)
{
	CallNote *n = note_for_use(p, c);
	if (n != nullptr)
		n->t_enq = now > 0 ? now : 1; // 0 reads as "no enqueue time"
}

void info_ran_locked(Pool *p, const Call *c, uint32_t lane, int32_t pid, int64_t start, int64_t end,
		     int64_t cpu, int64_t now)
{
	CallNote *n = note_of(p, c);
	if (n == nullptr || n->gen != c->gen || n->t_enq == 0)
		return;
	n->flags |= KNIT_INFO_LANE;
	n->lane = lane;
	n->pid = pid;
	// A process worker's words: only a timeline that fits the host's own
	// clock readings is kept (start after the enqueue, end before the
	// reap); anything else leaves the call untimed.
	if (start < n->t_enq || end < start || end > now)
		return;
	n->flags |= KNIT_INFO_TIMING;
	n->wait_ns = start - n->t_enq;
	n->run_ns = end - start;
	// cpu < 0: not asked for (KNIT_POOL_INFO_CPU). Read inside the run's
	// readings, so at most the run; clamped there (two clocks, and a
	// process worker's word).
	if (cpu >= 0) {
		n->flags |= KNIT_INFO_CPU;
		n->cpu_ns = cpu <= n->run_ns ? cpu : n->run_ns;
	}
}

void info_death_locked(Pool *p, const Call *c, uint32_t lane, int32_t pid, uint32_t cause,
		       int32_t detail, uint32_t sys)
{
	CallNote *n = note_for_use(p, c);
	if (n == nullptr)
		return;
	n->flags |= KNIT_INFO_LANE | KNIT_INFO_DEATH;
	n->lane = lane;
	n->pid = pid;
	n->death = cause;
	n->detail = detail;
	n->sys = sys;
}

namespace {

// The ring's next entry, emptied and tagged with out's ticket, named in
// out->reserved[1] (under mu).
InfoEntry &entry_take(Pool *p, knit_completion_t *out)
{
	InfoRoom &r = p->info;
	r.seq++;
	if (r.seq == 0)
		r.seq = 1;
	InfoEntry &e = r.ring[(r.seq - 1) % r.cap];
	memset(&e, 0, sizeof e);
	e.ticket = out->ticket;
	e.seq = r.seq;
	out->reserved[1] = completion_word(p, out->reserved[0], r.seq);
	return e;
}

} // namespace

void info_line_death_locked(Pool *p, uint32_t lane, const DeathNote &d, knit_completion_t *out)
{
	InfoEntry &e = entry_take(p, out);
	e.flags = KNIT_INFO_LANE | KNIT_INFO_DEATH;
	e.lane = lane;
	e.pid = d.pid;
	e.death = d.cause;
	e.detail = d.detail;
	e.sys = d.sys;
}

void info_hand_out_slow_locked(Pool *p, const Call *c, knit_completion_t *out)
{
	InfoRoom &r = p->info;
	CallNote *n = note_of(p, c);
	const bool noted = n != nullptr && pending(n, c);
	if (!noted && !r.timing)
		return;
	if (noted && r.notes > (r.timing ? 1u : 0u))
		r.notes--;
	InfoEntry &e = entry_take(p, out);
	if (noted) {
		e.flags = n->flags;
		e.lane = n->lane;
		e.pid = n->pid;
		e.wait_ns = n->wait_ns;
		e.run_ns = n->run_ns;
		e.cpu_ns = n->cpu_ns;
		e.death = n->death;
		e.detail = n->detail;
		e.sys = n->sys;
		// Spent: the record's next use starts a note of its own.
		n->flags = 0;
		n->t_enq = 0;
	}
}

int info_lookup(Pool *p, const knit_completion_t *c, knit_completion_info_t *out)
{
	const uint32_t seq = (uint32_t)c->reserved[1];
	if (seq == 0 ||
	    (uint32_t)(c->reserved[1] >> 32) != completion_check(p, c->reserved[0], seq))
		return -KNIT_ENOTFOUND;
	int rc = -KNIT_ENOTFOUND;
	pthread_mutex_lock(&p->mu);
	const InfoEntry &e = p->info.ring[(seq - 1) % p->info.cap];
	if (e.seq == seq && e.ticket == c->ticket) {
		out->flags = e.flags;
		out->lane = e.lane;
		out->pid = e.pid;
		out->wait_ns = e.wait_ns;
		out->run_ns = e.run_ns;
		out->cpu_ns = e.cpu_ns;
		out->death = e.death;
		out->death_detail = e.detail;
		if (e.sys != 0) {
			// The number was checked at the death (src/sandbox.h); the
			// name is this build's, never the worker's.
			out->flags |= KNIT_INFO_SYSCALL;
			out->syscall_nr = (int32_t)(e.sys - 1);
			out->syscall_arch = sysname_arch();
			const char *name = sysname_of(out->syscall_nr);
			if (name != nullptr)
				snprintf(out->syscall_name, sizeof out->syscall_name, "%s", name);
		}
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

} // namespace knit::detail
