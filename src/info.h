// SPDX-License-Identifier: MIT
// src/info.h - the room for completion infos (knit_completion_info(3)):
// what the pool learned about a call beyond its completion -- the lane and
// worker that ran it, its timing (a pool with KNIT_POOL_INFO_TIMING), and
// the death of its worker -- gathered in the call's note while the call is
// in flight, moved into a bounded ring when its completion is handed out,
// and found again from the completion. The types (CallNote, InfoEntry,
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

namespace knit::detail {

// A timed task's words, in its response slot's side words (src/layout.h
// kSlotOffSide): written by the worker that ran it, before the frame's
// publish; read by the host at the reap. They count only for the frame's
// own call (ticket, gen equal to the frame's), and only as far as
// info_ran_locked() believes them.
struct TimingWords {
	uint32_t ticket; // the call's ticket index
	uint32_t gen;    // and generation
	int64_t start;   // CLOCK_MONOTONIC ns at the task's start
	int64_t end;     // and at its end
	int64_t cpu;     // the worker thread's CPU time in the task
};
static_assert(sizeof(TimingWords) <= kSideBytes, "the timing fits the side words");

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
uint32_t completion_check(const Pool *p, uint64_t handle, uint32_t seq);
// reserved[1] for a completion with handle h and info sequence seq: 0
// when both are 0.
inline uint64_t completion_word(const Pool *p, uint64_t h, uint32_t seq)
{
	if (h == 0 && seq == 0)
		return 0;
	return ((uint64_t)completion_check(p, h, seq) << 32) | seq;
}

// A timed pool's enqueue (under mu, the record just allocated): start the
// call's note at `now` (the enqueue's clock). When no note can be had (out
// of memory) the call runs untimed: its info says so (no KNIT_INFO_TIMING).
void info_enqueue_locked(Pool *p, const Call *c, int64_t now);

// The worker's timing of call c, which lane `lane` ran (under mu, at the
// reap of its frame, before its hand-out): start, end and CPU time as the
// worker says (a process worker's words: kept only when t_enq <= start <=
// end <= now, the CPU time clamped to end - start; cpu < 0: not measured),
// `now` the reap's clock. A call with no note
// (its note could not be had) records nothing.
void info_ran_locked(Pool *p, const Call *c, uint32_t lane, int32_t pid, int64_t start, int64_t end,
		     int64_t cpu, int64_t now);

// Call c's worker died running it, or was killed for it (under mu, before
// c completes): the cause (enum knit_death_cause), its detail, the dead
// worker's lane and pid, and for a sandbox violation sys (DeathNote::sys).
// Allocates the note if need be (when that fails the death is only
// counted, not told).
void info_death_locked(Pool *p, const Call *c, uint32_t lane, int32_t pid, uint32_t cause,
		       int32_t detail, uint32_t sys = 0);

// Hand-out (under mu): move c's note, if it has one for this use, into
// the ring and name its entry in out->reserved[1] (out->reserved[0] set
// already). Only while p->info.notes != 0 (which counts one more for a
// timed pool): a batch of hand-outs looks at it once (src/calls.cpp).
void info_hand_out_slow_locked(Pool *p, const Call *c, knit_completion_t *out);

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
