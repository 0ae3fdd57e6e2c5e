// SPDX-License-Identifier: MIT
// src/info.h - the room for completion infos (knit_completion_info(3)):
// what the pool learned about a call beyond its completion -- the lane and
// worker that ran it, its timing (a pool with KNIT_POOL_INFO_TIMING), and
// the death of its worker -- gathered while the call is in flight (in its
// record's argument words, Call::ran, when the packed path timed it, else
// in its note), moved into a bounded ring when its completion is handed
// out, and found again from the completion. The types (CallNote, InfoEntry,
// InfoRoom) are pool types (src/runtime.h). Every *_locked function runs
// under the pool's mu.
//
// The completion's words (knit_completion_t.reserved, the library's):
//   reserved[0]  the owned-bytes handle (src/calls.cpp), 0 = none
//   reserved[1]  low 32 bits: the sequence of its info entry (0 = none);
//                high 32 bits: completion_check(reserved[0], that sequence)
//   Both 0: the completion owns nothing and has no info. A completion is
//   the caller's memory: every word of it is checked before use, and a
//   ring entry counts only when its sequence and ticket match too.
//
// Lifetime: an entry is overwritten by the info handed out cap (the pool's
// info_records) infos later; knit_completion_release empties the
// completion (its words with it); the ring dies with the pool. Memory is
// the ring plus one note per record index ever used (bounded by the
// ticket table's capacity): nothing grows with the calls made.
#ifndef KNIT_SRC_INFO_H
#define KNIT_SRC_INFO_H

#include "src/common.h"

#include <time.h>

#include "knitting.h"
#include "src/layout.h"
#include "src/runtime.h"
#include "src/tick.h"

namespace knit::detail {

// A timed task's times travel in its response frame (written by the
// worker that ran it, before the frame's publish; read by the host at the
// reap, src/lane.cpp), in ticks (src/tick.h):
//  - the frame's deadline word (a response has no deadline): the low 32
//    bits of the start tick, then the run's ticks, saturated at
//    kRunSaturated (timing_pack). The host rebuilds the start from its own
//    enqueue tick, which it can while the call's whole span (enqueue to
//    reap) is under kPackedSpan ticks; otherwise, or saturated, or with CPU
//    time, it reads
//  - the slot's side words (src/layout.h kSlotOffSide): TimingWords, in
//    full, counted only for the frame's own call (ticket, gen equal to
//    the frame's). A worker writes both; the side words' line stays in the
//    worker's cache while the host does not read it.
// Whichever it read, the host clamps the start to its enqueue tick and the
// end to its reap tick (info_ran_locked): a worker's words (a process
// worker's are untrusted) can move time between wait and run, never out of
// the span the host saw.
struct TimingWords {
	uint32_t ticket; // the call's ticket index
	uint32_t gen;    // and generation
	int64_t start;   // tick at the task's start
	int64_t end;     // and at its end
	int64_t cpu;     // the worker thread's CPU time in the task (ns), -1 none
};
static_assert(sizeof(TimingWords) <= kSideBytes, "the timing fits the side words");

inline constexpr uint32_t kRunSaturated = 0xFFFFFFFFu;
inline constexpr int64_t kPackedSpan = (int64_t)1 << 31;

// An info entry's flag of the library's own (never handed to a caller):
// its note's wait and run hold a call's CallRan word and span (the packed
// path, below), which the lookup decodes (timing_packed_decode).
inline constexpr uint32_t kInfoPacked = 1u << 31;
static_assert((kInfoPacked & (KNIT_INFO_LANE | KNIT_INFO_TIMING | KNIT_INFO_DEATH | KNIT_INFO_CPU |
			      KNIT_INFO_SYSCALL)) == 0,
	      "the packed flag is none of the public ones");

// The deadline word of a timed response: start's low half, the run's ticks.
inline uint64_t timing_pack(int64_t start, int64_t end)
{
	const uint64_t run = end > start ? (uint64_t)(end - start) : 0;
	const uint32_t r = run < kRunSaturated ? (uint32_t)run : kRunSaturated;
	return (uint32_t)(uint64_t)start | (uint64_t)r << 32;
}

// The start and end of a packed word, for a call enqueued at tick enq and
// reaped at tick now: false when the word cannot tell (the span is too
// long, or the run saturated): read the side words.
inline bool timing_unpack(uint64_t w, int64_t enq, int64_t now, int64_t *start, int64_t *end)
{
	const uint32_t run = (uint32_t)(w >> 32);
	if ((uint64_t)(now - enq) >= (uint64_t)kPackedSpan || run == kRunSaturated)
		return false;
	// Signed: a start read a little before the enqueue's tick (the counter
	// is not serialized) stays a little before it, and is clamped.
	*start = enq + (int32_t)((uint32_t)w - (uint32_t)(uint64_t)enq);
	*end = *start + run;
	return true;
}

// Why a lane's worker died (src/lane.h LaneLoss): cause 0 = no death to
// tell (a clean stop, a thread).
struct DeathNote {
	uint32_t cause; // enum knit_death_cause
	int32_t detail; // the signal number or exit status
	int32_t pid;    // the dead worker's
	uint32_t sys;   // KNIT_DEATH_SANDBOX: 1 + the syscall's number (its
			// worker's report, checked: src/sandbox.h), 0 = unknown
};

// The calling thread's CPU time (ns); 0 when the clock cannot be read.
inline int64_t thread_cpu_ns()
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Allocate the ring (cfg.info_records entries; cfg.timing noted) at
// create. 0 or -KNIT_ENOMEM.
int info_init(Pool *p);
// Free the ring and the notes (pool teardown; nothing else runs).
void info_fini(Pool *p);

// The check word's high half over a completion's handle and info
// sequence, tied to the pool (its owned_salt).
inline uint32_t completion_check(const Pool *p, uint64_t handle, uint32_t seq)
{
	const uint64_t x =
		(handle ^ ((uint64_t)seq << 29) ^ ((uint64_t)seq >> 3)) * 0x9E3779B97F4A7C15ull ^
		p->owned_salt;
	return (uint32_t)(x >> 32) ^ (uint32_t)x;
}
// reserved[1] for a completion with handle h and info sequence seq: 0
// when both are 0.
inline uint64_t completion_word(const Pool *p, uint64_t h, uint32_t seq)
{
	if (h == 0 && seq == 0)
		return 0;
	return ((uint64_t)completion_check(p, h, seq) << 32) | seq;
}

// c's note slot when its chunk exists (under mu), else nullptr.
inline CallNote *info_note_at(Pool *p, const Call *c)
{
	CallNote *chunk = p->info.chunks[c->index / kTicketChunk];
	if (KNIT_UNLIKELY(chunk == nullptr))
		return nullptr;
	return chunk + c->index % kTicketChunk;
}

// A timed pool's enqueue (under mu, the record just allocated): the
// call's tick (the enqueue's, > 0) goes into its record (Call::t_enq),
// whose lines the enqueue writes anyway; a call the packed path times
// touches no note at all (info_ran_packed_locked).
inline void info_enqueue_locked(Call *c, int64_t now) { c->t_enq = now; }

// note_at()'s chunk allocated on first use (under mu): nullptr when memory
// cannot be had (the call is then handed out untimed: no KNIT_INFO_TIMING).
CallNote *info_note_take_slow_locked(Pool *p, const Call *c);

// c's note, for the reap to write this use's timing into (under mu).
inline CallNote *info_note_take_locked(Pool *p, const Call *c)
{
	CallNote *n = info_note_at(p, c);
	return KNIT_LIKELY(n != nullptr) ? n : info_note_take_slow_locked(p, c);
}

// The worker's timing of call c (its note n), which lane `lane` ran
// (under mu, at the reap of its frame, before c completes): enq its
// enqueue's tick (Call::t_enq, read before the completion reused that
// word), start and end ticks as the worker says (start < 0: not told, the
// lane only), cpu its CPU time (ns; < 0: not measured), `now` the reap's
// tick. The start is clamped to [the enqueue, now], the end to [the
// start, now]. The note is this use's from here on, written whole, never
// read: a death note of this use cannot be there, since a call whose
// worker died (info_death_locked) was failed then and is not completed
// by a reap.
inline void info_ran_locked(CallNote *n, const Call *c, uint32_t lane, int32_t pid, int64_t enq,
			    int64_t start, int64_t end, int64_t cpu, int64_t now)
{
	n->gen = c->gen;
	n->lane = lane;
	n->pid = pid;
	if (KNIT_UNLIKELY(start < 0)) {
		n->flags = KNIT_INFO_LANE;
		return;
	}
	start = start < enq ? enq : start > now ? now : start;
	end = end < start ? start : end > now ? now : end;
	n->wait = start - enq;
	n->run = end - start;
	n->cpu_ns = cpu;
	n->flags = KNIT_INFO_LANE | KNIT_INFO_TIMING | (cpu >= 0 ? (uint32_t)KNIT_INFO_CPU : 0u);
}

// The packed path, the reap's common case (a response whose packed word
// can tell, no CPU time asked): the reap keeps the worker's word
// undecoded (its start's half made an offset from the enqueue), with the
// span it saw, the lane and the pid, in the call's record (Call::ran,
// ran_packed = 1: lines the reap and the hand-out touch anyway), the
// hand-out moves them into the call's ring entry (kInfoPacked), and only
// a lookup decodes them (timing_packed_decode): a call pays neither the
// decode nor a note line. Under mu, c live and
// not completed, its frame back. false, nothing written: w cannot tell
// (the span is too long for its low half, or the run saturated): the
// general path reads the side words.
inline bool info_ran_packed_locked(Call *c, uint32_t lane, int32_t pid, int64_t enq, uint64_t w,
				   int64_t now)
{
	const int64_t span = now - enq;
	if (KNIT_UNLIKELY((uint64_t)span >= (uint64_t)kPackedSpan ||
			  (uint32_t)(w >> 32) == kRunSaturated))
		return false;
	// The start's low half made an offset from the enqueue's (the
	// lookup has no enqueue tick); the run's half as it was.
	c->ran.word =
		(w & ~(uint64_t)0xFFFFFFFFu) | (uint32_t)((uint32_t)w - (uint32_t)(uint64_t)enq);
	c->ran.span = span;
	c->ran.lane = lane;
	c->ran.pid = pid;
	c->ran_packed = 1;
	return true;
}

// The wait and run of a call from its CallRan words (the low half of
// word the start's offset from the enqueue, the high half the run, span
// below kPackedSpan ticks), with the clamps info_ran_locked() takes (the
// start to [the enqueue, the reap], the end to [the start, the reap]), on
// the offsets from the enqueue. Any word, a process worker's included,
// gives a wait and a run inside the span.
inline void timing_packed_decode(uint64_t word, int64_t span, int64_t *wait, int64_t *run)
{
	// The start's offset signed, as in timing_unpack() (a start read a
	// little before the enqueue's tick stays a little before it, and is
	// clamped), and the end's.
	const int64_t d = (int32_t)(uint32_t)word;
	const int64_t w = d < 0 ? 0 : d > span ? span : d;
	const int64_t fin = d + (int64_t)(uint32_t)(word >> 32);
	const int64_t end = fin < w ? w : fin > span ? span : fin;
	*wait = w;
	*run = end - w;
}

// Call c's worker died running it, or was killed for it (under mu, before
// c completes): the cause (enum knit_death_cause), its detail, the dead
// worker's lane and pid, and for a sandbox violation sys (DeathNote::sys).
// Allocates the note if need be (when that fails the death is only
// counted, not told).
void info_death_locked(Pool *p, const Call *c, uint32_t lane, int32_t pid, uint32_t cause,
		       int32_t detail, uint32_t sys = 0);

// The ring's next entry, tagged with out's ticket (its note is the
// caller's to write), named in out->reserved[1] (under mu).
inline InfoEntry &info_entry_take(Pool *p, knit_completion_t *out)
{
	InfoRoom &r = p->info;
	uint32_t pos = r.pos + 1 == r.cap ? 0 : r.pos + 1;
	uint32_t seq = r.seq + 1;
	if (KNIT_UNLIKELY(seq == 0)) {
		seq = 1; // 0 names no entry; (1 - 1) % cap is entry 0
		pos = 0;
	}
	r.pos = pos;
	r.seq = seq;
	InfoEntry &e = r.ring[pos];
	e.ticket = out->ticket;
	e.seq = seq;
	out->reserved[1] = ((uint64_t)completion_check(p, out->reserved[0], seq) << 32) | seq;
	return e;
}

// info_hand_out_locked() in an untimed pool: a death note, if c has one.
void info_hand_out_slow_locked(Pool *p, const Call *c, knit_completion_t *out);

// Hand-out (under mu): move c's timing or note, if it has one for this
// use, into the ring (every completion of a timed pool gets an entry) and
// name its entry in out->reserved[1] (out->reserved[0] set already). Only
// while p->info.notes != 0 (always in a timed pool): a batch of hand-outs
// looks at it once (src/calls.cpp). A call the packed path timed has its
// words in its record (ran_packed), which the entry takes as they are
// (kInfoPacked). Otherwise a timed pool's note is written whole, its
// generation with it, by the reap that completes the call (the general
// path), by the inline lane, or by its death (info_death_locked), so its
// generation alone says it is this use's (a call that completed otherwise
// -- cancelled, timed out on the host -- finds an earlier use's and gets
// an entry with no info); the entry takes it whole (one line, no
// member-by-member copy).
inline void info_hand_out_locked(Pool *p, const Call *c, knit_completion_t *out)
{
	if (KNIT_UNLIKELY(!p->info.timing)) {
		info_hand_out_slow_locked(p, c, out);
		return;
	}
	InfoEntry &e = info_entry_take(p, out);
	if (KNIT_LIKELY(c->ran_packed)) {
		e.note.flags = KNIT_INFO_LANE | KNIT_INFO_TIMING | kInfoPacked;
		e.note.lane = c->ran.lane;
		e.note.pid = c->ran.pid;
		e.note.wait = (int64_t)c->ran.word;
		e.note.run = c->ran.span;
		return;
	}
	const CallNote *n = info_note_at(p, c);
	if (n != nullptr && n->gen == c->gen)
		e.note = *n;
	else
		e.note.flags = 0; // no note could be had: no info but the entry
}

// A knit_call served on lane's synchronous line lost its worker (under
// mu, at its hand-out; out->reserved[0] set already): an info entry of
// the death, named in out->reserved[1] (src/syncline.cpp).
void info_line_death_locked(Pool *p, uint32_t lane, const DeathNote &d, knit_completion_t *out);

// knit_completion_info (takes mu): fill *out (every member) from the
// entry completion *c names. 0, or -KNIT_ENOTFOUND (no info: none was
// recorded, it was overwritten, c was released or is not this pool's).
int info_lookup(Pool *p, const knit_completion_t *c, knit_completion_info_t *out);

} // namespace knit::detail

#endif
