// SPDX-License-Identifier: MIT
// src/wake.h - the room for waking: a worker parks and a host unparks it
// (the eventcount of tests/model/wake.pml), a waiting host sleeps on the
// doorbell and a worker or another host thread rings it
// (tests/model/doorbell.pml, host_event.pml), and the completion eventfd is
// kept level. Implemented in src/wake.cpp.
//
// Each handshake is a Dekker pair: one side stores, fences, then loads what
// the other side stores. The re-check a sleeper runs after its fence belongs
// to the caller (what counts as "work" is the worker's or the dispatcher's
// business) and is passed in, as folly's ParkingLot passes its toPark
// callback: this room owns only the order of the steps.
//
// Fence pairing (every non-relaxed access of the handshakes):
//
//  edge                                      this side                        pairs with
//  ----------------------------------------  -------------------------------  ------------
//  W1 publish work / stop / room, then look   store_rel(A) (lock2 P1) or the   W2
//     for a parked worker (flush_staged or    stop CAS or store_rel(B) (C3);
//     lane_reap then dispatch_unlock's        seq_cst fence; load parked
//     fence, steal_flush,
//     request_worker_stop; then lane_wake)
//  W2 announce the park, then re-check        store parked; seq_cst fence;     W1
//     (worker_park)                           recheck()
//  W3 claim the park and ring (lane_wake)     CAS parked -> kAwake (acq_rel);  W4
//                                             add_acq_rel(wake_seq); wake
//  W4 read the sequence, leave the park       load_acq(wake_seq);              W3
//     (worker_park)                           xchg parked -> kAwake (acq_rel)
//  D1 arm, then re-check                      add host_waiters; armed = 1;     D2, H1
//     (host_doorbell_sleep)                   seq_cst fence; recheck()
//  D2 publish results, then look for an       store_rel(A) (lock2 P1);         D1, E3
//     armed host (worker_ring)                seq_cst fence; load armed
//  D3 ring (worker_ring)                      CAS armed 1 -> 0 (acq_rel);      D4
//                                             add_acq_rel(db_seq); wake
//  D4 read the sequence slept on              load_acq(db_seq) before D1       D3, H2
//  H1 host progress, then look for sleepers   progress; seq_cst fence; load    D1
//     (host_event; enqueue's new deadline;    host_waiters
//     dispatch_unlock's re-check)
//  H2 ring the sleepers (host_event)          add_acq_rel(db_seq); wake        D4
//  L1 claim, run, publish, then look for a    store_rel(ACK) (steal.h S2),     L3
//     host armed for a refill (worker_ring,   store_rel(A); seq_cst fence
//     refill_low)                             (D2); load armed; load_acq of
//                                             the submit lock's A and ACKs.
//                                             Lanes: store_rel(B) of its own
//                                             request lock (lock2 C3), then
//                                             store_rel(A) of results; fence
//                                             (D2); load armed; load_acq of
//                                             its request lock's A
//  L2 announce a park, then look for a host   store parked; seq_cst fence      L3
//     armed for a refill (worker_park)        (W2); load armed
//  L3 arm for a refill, then re-check         store armed = kArmedRefill;      L1, L2
//     (host_doorbell_sleep, sleep_recheck     seq_cst fence (D1); load_acq of
//     with host_refill_recheck)               ACKs (lanes, lane_low: of each
//                                             request lock's A and B), load
//                                             parked, load_acq of each return
//                                             lock's A
//  R1 process pool with ring pages: arm each  load_acq(host_seq) (D4, H2);     D2/D3 of that
//     live worker's own page, then re-check   per worker load_acq(seq_i) (D4);  worker only,
//     (ring_sleep)                            add host_waiters; armed_i =       H1
//                                             kArmedAny each; seq_cst fence
//                                             (D1); recheck()
//  R2 sleep on all of them (ring_sleep)       futex_waitv(host_seq, seq_i...):  D3 of any
//                                             the kernel compares every word    worker, H2
//                                             and queues on all at once
//  E1 the fd exists (knit_completion_fd)      store_rel(efd_on)                E2
//  E2 use the fd (efd_sync, worker_ring)      load_acq(efd_on)                 E1
//  E3 write or clear, then re-check           seq_cst fence; efd_pending()     E3 (another
//     (efd_sync)                                                               thread's), D2
//
// Process pools (tests/model/doorbell_proc.pml). The pool header's armed
// and db_seq, like every word of the pool's memfd, can be scribbled by any
// worker process: a hostile worker could clear armed so honest workers
// never ring (D2/D3 then pair with nothing), or freeze db_seq under a host
// event. Per-worker words in that memfd would not help (every worker maps
// all of it). So each worker gets a ring page of its own (src/proc.h
// kRingBytes: a sealed memfd handed to that worker alone, which maps it as
// its db_armed/db_seq): it runs D2/D3 on it unchanged. The host's db_seq
// is then host_seq, in its private memory (host events, H1/H2, unchanged),
// and a waiting host arms every live worker's page and sleeps on all the
// sequences at once with futex_waitv (R1/R2, ring_sleep in wake.cpp). A
// worker can now only leave its own ring unrung (its results wait, as if
// it had not answered: the hard timeout covers that) or ring for nothing
// (a spurious wake, bounded by its own syscalls); the host sleeps untimed,
// as in a thread pool. (This holds against a worker that writes what it has
// mapped: a scribbling or forging task. One that runs arbitrary code as
// the host's user can open the host's descriptors through /proc, as it can
// signal the host; no shared-memory protocol reaches that far.) Without
// futex_waitv (kernels before 5.16; qemu-user, which answers ENOSYS; a
// seccomp filter that refuses it) or with KNIT_PROC_NAMED_SHM (no
// descriptor can be handed over) the pool has no ring pages: its workers
// ring through the pool header's words and the host never sleeps longer
// than kProcDoorbellWatchdogNs per doorbell sleep, so a lost ring delays a
// waiter, it never strands it. Thread pools keep the untimed sleep.
// The completion fd's path out of a worker process is split the same way
// (src/proc.h): worker_ring's E2 load reads a flag in the worker's own ring
// page and it writes its own lane's bridge eventfd, so clearing the flag or
// draining the bridge hides only that worker's results from the fd; without
// ring pages the monitor syncs the fd every kProcDoorbellWatchdogNs.
//
// The refill doorbell (steal pools; tests/model/doorbell_refill.pml): a
// host waiting in knit_complete() while calls wait in the backlog for room
// in the submit lock, on a machine whose every CPU runs an awake worker,
// shares its CPU with a worker that has work. Woken for every result, it
// takes that CPU from the worker once per result or two (a futex wake, two
// context switches), and spinning instead takes it for good. So it arms
// kArmedRefill: it wants to run again only when it has something to do that
// the workers need -- refill the submit lock before it runs dry. A worker
// rings it after publishing a result once the lanes still pending in the
// submit lock are kRefillLowWater or fewer (L1; pending falls claim by claim
// while the host sleeps, and every claim is followed by its result's
// publish, so the claim that crosses the mark is followed by a ring), and
// every worker that parks rings it (L2: a worker that stops claiming --
// nothing left, or no return-arena room for its results -- never leaves
// it asleep). The host's re-check (L3) sees the submit lock already low, a
// worker parked for room, or a parked worker's unreaped results. The cost:
// results wait in the return locks until the ring (at most the time the
// workers take to run the lanes above the mark), only while more calls are
// queued than the submit lock holds.
//
// Lanes pools (tests/model/doorbell_refill_lanes.pml) do the same per lane:
// the host arms for a refill while every worker lane not retired holds more
// than kLaneRefillLowWater frames published and not yet retired (A ^ B of
// its request lock) and the backlog holds enough calls to fill every lane
// (so each refill tops every lane up, and the backlog's last calls go out
// slot by slot as before: lanes left unequal when it runs out would
// lengthen the tail); a worker rings it once its own lane is at the mark
// (L1: it retires the frames it ran -- release store of B -- before it
// publishes their results, so the retire that crosses the mark is followed
// by a ring), and at every park (L2); the host's re-check (L3) counts a lane
// at the mark besides what it counts for steal. Woken, the host reaps both
// lanes and tops both up. Before this a host waiting behind full lanes was
// rung at every early result flush (kResultFlushNs: every second task of
// 200 us), each time taking worker 0's CPU.
//
// Park states (the parked word of a lane, ParkState) are written by the
// worker (announce, unpark, acknowledge stop) and CASed to kAwake by the one
// host thread that claims the wake (W3): a wake is sent exactly once per
// announced park, and the worker counts it as received exactly then.
#ifndef KNIT_SRC_WAKE_H
#define KNIT_SRC_WAKE_H

#include "src/common.h"

#include "src/lane.h"
#include "src/pool.h"

namespace knit::detail {

// The parked word of a worker lane (Lane::parked).
enum ParkState : uint32_t {
	kAwake = 0,         // running, spinning, or woken
	kParked = 1,        // parked waiting for work
	kParkedForRoom = 2, // parked waiting for return-arena room (results wait)
};

// The doorbell's armed word (Pool::db_armed): what a waiting host asked for.
enum ArmState : uint32_t {
	kArmedNone = 0,   // no host asked (or its ring was claimed)
	kArmedAny = 1,    // ring after any published result (D2, D3)
	kArmedRefill = 2, // steal: ring once the submit lock runs low (L1), or at a park (L2)
};
// The submit lock's pending lanes at or below which a worker rings a host
// armed for a refill: enough left to keep two workers busy for about a
// host's wake (~30 us on a loaded 2-CPU VM, ~10 calls of a few us each).
inline constexpr uint32_t kRefillLowWater = 12;
// Lanes: a worker's own lane's frames (published, not yet retired) at or
// below which it rings a host armed for a refill; the host arms only while
// every worker lane is above it.
inline constexpr uint32_t kLaneRefillLowWater = 12;

// ---- worker side (lane l's own thread) --------------------------------------------

// The worker's re-check after announcing its park (W2): true when it must
// not sleep (work, a stop request, or results that went out).
typedef bool (*ParkRecheck)(Lane *l);

// How a park ended.
enum WakeReason : uint32_t {
	kWokeRecheck,  // the re-check found something: never slept
	kWokeRung,     // a host claimed the park (lane_wake)
	kWokeWatchdog, // park_ns passed with no wake
	kWokeSpurious, // the futex returned for no reason of ours
};

// Park lane l as `why` until a host rings it or park_ns passes (the
// watchdog; park_ns <= 0: none), unless recheck(l) finds something after
// the announcement.
// Counts parks and wakes in the lane's worker counters.
WakeReason worker_park(Lane *l, ParkState why, ParkRecheck recheck, int64_t park_ns);

// After the worker published results (release store of A): ring a host that
// armed the doorbell, and bring the completion eventfd up to date (D2, D3).
void worker_ring(Lane *l);

// ---- host side ---------------------------------------------------------------------

// Claim and send the wake of a worker whose parked word read `v` (W3): the
// out-of-line half of lane_wake().
bool lane_wake_claim(Pool *p, Lane *l, uint32_t v);
// Wake worker lane `l` if it announced a park (W3). `only_blocked`: wake only
// a worker parked waiting for return-arena room (kParkedForRoom). The caller
// fenced after its publish (W1). Returns true if this call sent the wake.
// The first look is inline: an awake worker (the common case under load)
// costs no call.
inline bool lane_wake(Pool *p, Lane *l, bool only_blocked)
{
	const uint32_t v = knit_load_relaxed_32(l->parked);
	if (v == kAwake || (only_blocked && v != kParkedForRoom))
		return false;
	return lane_wake_claim(p, l, v);
}
// Steal topology: wake ONE worker parked waiting for work (kParked; one
// parked for room cannot claim), scanning from the wake cursor. Any thread,
// after a fenced publish (W1). Returns true when a wake was sent.
bool steal_wake_one(Pool *p);

// The host's re-check after announcing its sleep (D1): true when it must
// not sleep; else *wake_at is the absolute time to look again (-1: only
// when rung).
typedef bool (*SleepRecheck)(Pool *p, void *arg, int64_t *wake_at);
// Sleep on the doorbell sequence until rung or *wake_at, unless recheck
// finds something after the announcement. `arm`: ask the workers to ring
// (the doorbell option); without it only host events (H2) and the timeout
// end the sleep. A process pool without ring pages (no futex_waitv, or
// KNIT_PROC_NAMED_SHM) sleeps kProcDoorbellWatchdogNs at the most (its
// doorbell words are shared with every worker process); with them it
// arms every worker's own page and sleeps untimed (R1/R2).
inline constexpr int64_t kProcDoorbellWatchdogNs = 100ll * 1000 * 1000;
// refill (non-null, true): arm for a refill (kArmedRefill) instead; set
// to false when another waiter's kArmedAny was kept (the recheck, which
// reads it, must then count results as an arm for any result does).
void host_doorbell_sleep(Pool *p, bool arm, SleepRecheck recheck, void *arg, bool *refill = nullptr);

// Should a host thread about to sleep in a wait for completions arm for a
// refill (kArmedRefill, see above) instead of for any result? A thread
// pool's steal topology, calls waiting in the backlog, more lanes pending in
// the submit lock than kRefillLowWater, and every CPU running an awake
// worker; or its lanes topology, every worker lane above
// kLaneRefillLowWater, enough calls in the backlog to fill every lane, and
// every CPU running an awake worker. Any thread; relaxed looks, only a choice (either arm is safe).
bool host_refill_arm(Pool *p);
// The re-check of a host armed for a refill (L3), besides what is not a
// result (host_work_pending): true when it must not sleep -- the submit
// lock (lanes: some worker lane) is at or below its low-water mark, a
// worker parked for room, or a parked worker's results wait.
bool host_refill_recheck(Pool *p);

// ---- the host's spin after a wake it sent (cold calls) -----------------------------
//
// A host thread that just woke a parked worker expects a result one wake
// latency later (20-170 us on a loaded 2-CPU VM), longer than the fixed
// pre-sleep spin (kHostSpinNs): it would arm the doorbell and sleep, and the
// worker would have to wake it too, two wakes per call. So the thread that
// sent a wake spins on, before arming, for twice its own estimate of the
// wake -> result time (peak-hold: a slow wake raises it at once, fast ones
// lower it slowly; at most kHostWakeSpinMaxNs in all), if a CPU is left:
// at most one such host thread at a time, and only while fewer workers spin
// than spin_cap_of_machine() (online CPUs - 1), so spinning host + spinning
// workers never exceed the CPUs. Thread-local state: no shared write.

// Is a CPU left for a host thread of p to spin on? False when at least as
// many of p's workers are awake (running a task, spinning, or woken) as the
// machine has online CPUs. Any thread; a relaxed snapshot (sleeping is
// always safe, the doorbell rings the sleeper).
bool host_spin_cpu_free(Pool *p);
// Should this waiting host thread spin before it sleeps (the kHostSpinNs
// spin of host_wait)? Yes while a CPU is left. When p's awake workers fill
// every CPU, a spin runs on the CPU of a worker that has work: then only
// while this thread's waits there are short (its last such spin found what
// it waited for, or its last such sleep was shorter than a spin), so short
// tasks keep the cheap spin (a sleep would cost a ring, a worker's futex
// syscall, per result) and long ones, whose results a spin never catches,
// sleep at once instead of taking kHostSpinNs from a worker per result.
// Never when the wait would arm for a refill (host_refill_arm): a spin there
// finds a result every few microseconds, so the host would never leave the
// worker's CPU. Thread-local state, no shared write.
bool host_spin_worth(Pool *p);
// The spin host_spin_worth() allowed ended: found = what it waited for.
void host_spin_outcome(bool found);
// Around the sleep that follows a wait's spin (or its skipped spin): timed
// only when every CPU was taken and the spin was skipped or came up empty.
void host_sleep_begin();
void host_sleep_end();
// lane_wake sent a wake to a worker of p (this thread).
void host_sent_wake(Pool *p);
// Before arming: if this thread sent a wake for p and a spin slot is free,
// take the slot and return the absolute end of the spin window; else 0.
// A nonzero return must be followed by host_wake_spin_done().
int64_t host_wake_spin_begin(Pool *p, int64_t now);
void host_wake_spin_done();
// The waiter found its result (or work) after this thread's wake: feed the
// wake -> result time to the moving average.
void host_wake_seen(Pool *p);

// Tell host waiters something happened (completions, inline work, stop, a
// new deadline): bump the doorbell sequence and wake them if any sleep (H1,
// H2), and bring the completion eventfd up to date (when `to_fd`: efd_sync()).
void host_event(Pool *p, bool to_fd);

// Is there anything a dispatcher pass could do right now (results to reap,
// inline calls, an expired deadline)? Any thread: part of every host
// re-check. `now` 0: read the clock only if some call has a deadline.
bool work_pending(Pool *p, int64_t now);
// work_pending() without the results: inline calls, an expired deadline, a
// distrusted worker that stopped.
bool host_work_pending(Pool *p, int64_t now);

// The completion eventfd's level (the contract of knit_completion_fd(3);
// see wake.cpp): any thread, after making completions or results pending
// (it writes; call it after a seq_cst fence that follows the progress), or
// after reaping (it clears when nothing is left, and re-checks). A no-op
// until the fd exists.
void efd_sync(Pool *p);

} // namespace knit::detail

#endif
