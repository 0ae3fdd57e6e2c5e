// SPDX-License-Identifier: MIT
// src/info.cpp - completion infos: the notes by record, the ring, the
// lookup from a completion (src/info.h has the contract and the words).
#include "src/common.h"

#include <stdio.h>
#include <stdlib.h>

#include "src/info.h"
#include "src/sysname.h"

namespace knit::detail {

// c's note, its chunk allocated on first use (under mu); nullptr when
// memory cannot be had (src/info.h).
CallNote *info_note_take_slow_locked(Pool *p, const Call *c)
{
	InfoRoom &r = p->info;
	const uint32_t k = c->index / kTicketChunk;
	if (r.chunks[k] == nullptr) {
		r.chunks[k] = static_cast<CallNote *>(calloc(kTicketChunk, sizeof(CallNote)));
		if (r.chunks[k] == nullptr)
			return nullptr;
	}
	return &r.chunks[k][c->index % kTicketChunk];
}

namespace {

// Whether n holds something about c's current use.
bool pending(const CallNote *n, const Call *c) { return n->gen == c->gen && n->flags != 0; }

// c's note for this use, started empty (and counted in notes) unless it
// holds something about this use already; nullptr when memory cannot be
// had.
CallNote *note_for_use(Pool *p, const Call *c)
{
	CallNote *n = info_note_take_locked(p, c);
	if (n == nullptr)
		return nullptr;
	if (!pending(n, c)) {
		memset(n, 0, sizeof *n);
		n->gen = c->gen;
		if (!p->info.timing)
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
	r.notes = r.timing ? 1 : 0; // the timed pool's one: for good
	r.cap = p->cfg.info_records;
	// Every chunk's pointer (a record's index is below the ticket table's
	// capacity), so that a note's lookup is one load; the chunks on first use.
	r.nchunks = (p->tickets.capacity() + kTicketChunk - 1) / kTicketChunk;
	r.chunks = static_cast<CallNote **>(calloc(r.nchunks ? r.nchunks : 1, sizeof(CallNote *)));
	r.pos = r.cap - 1; // the first entry taken is 0 (info_entry_take)
	if (r.timing)
		tick_init();
	void *m = nullptr;
	if (r.chunks == nullptr ||
	    posix_memalign(&m, alignof(InfoEntry), (size_t)r.cap * sizeof(InfoEntry)) != 0)
		return -KNIT_ENOMEM;
	memset(m, 0, (size_t)r.cap * sizeof(InfoEntry));
	r.ring = static_cast<InfoEntry *>(m);
	return 0;
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
	n->sys = (uint16_t)sys;
}

void info_line_death_locked(Pool *p, uint32_t lane, const DeathNote &d, knit_completion_t *out)
{
	InfoEntry &e = info_entry_take(p, out);
	e.note.flags = KNIT_INFO_LANE | KNIT_INFO_DEATH;
	e.note.lane = lane;
	e.note.pid = d.pid;
	e.note.death = d.cause;
	e.note.detail = d.detail;
	e.note.sys = (uint16_t)d.sys;
}

void info_hand_out_slow_locked(Pool *p, const Call *c, knit_completion_t *out)
{
	InfoRoom &r = p->info;
	CallNote *n = info_note_at(p, c);
	if (n == nullptr || !pending(n, c))
		return;
	if (r.notes > 0)
		r.notes--;
	InfoEntry &e = info_entry_take(p, out);
	e.note = *n;
	// Spent: the record's next use starts a note of its own.
	n->flags = 0;
}

int info_lookup(Pool *p, const knit_completion_t *c, knit_completion_info_t *out)
{
	const uint32_t seq = (uint32_t)c->reserved[1];
	if (seq == 0 ||
	    (uint32_t)(c->reserved[1] >> 32) != completion_check(p, c->reserved[0], seq))
		return -KNIT_ENOTFOUND;
	CallNote e;
	bool found = false;
	pthread_mutex_lock(&p->mu);
	const InfoEntry &r = p->info.ring[(seq - 1) % p->info.cap];
	if (r.seq == seq && r.ticket == c->ticket) {
		e = r.note;
		found = true;
	}
	pthread_mutex_unlock(&p->mu);
	if (!found)
		return -KNIT_ENOTFOUND;
	// The members the flags name; the others 0. Ticks become ns here, off
	// the calls' path (and outside mu: the first conversion may wait out
	// the tick's calibration, src/tick.h).
	if (e.flags & kInfoPacked) { // the packed path's words (src/info.h)
		timing_packed_decode((uint64_t)e.wait, e.run, &e.wait, &e.run);
		e.flags &= ~kInfoPacked;
	}
	const uint32_t f = e.flags;
	out->flags = f;
	out->lane = (f & KNIT_INFO_LANE) ? e.lane : 0;
	out->pid = (f & KNIT_INFO_LANE) ? e.pid : 0;
	out->wait_ns = (f & KNIT_INFO_TIMING) ? tick_ns(e.wait) : 0;
	out->run_ns = (f & KNIT_INFO_TIMING) ? tick_ns(e.run) : 0;
	// Read inside the run's readings, so at most the run; clamped there
	// (two clocks, and a process worker's word).
	out->cpu_ns = (f & KNIT_INFO_CPU) ? min_of(e.cpu_ns < 0 ? 0 : e.cpu_ns, out->run_ns) : 0;
	out->death = (f & KNIT_INFO_DEATH) ? e.death : 0;
	out->death_detail = (f & KNIT_INFO_DEATH) ? e.detail : 0;
	if ((f & KNIT_INFO_DEATH) && e.sys != 0) {
		// The number was checked at the death (src/sandbox.h); the name
		// is this build's, never the worker's.
		out->flags |= KNIT_INFO_SYSCALL;
		out->syscall_nr = (int32_t)(e.sys - 1);
		out->syscall_arch = sysname_arch();
		const char *name = sysname_of(out->syscall_nr);
		if (name != nullptr)
			snprintf(out->syscall_name, sizeof out->syscall_name, "%s", name);
	}
	return 0;
}

} // namespace knit::detail
