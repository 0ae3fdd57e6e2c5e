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
// Process pools (tests/model/doorbell_proc.pml; tests/model/README.md has
// why): the pool header's armed and db_seq can be scribbled by any worker
// process, so each worker gets a ring page of its own (src/proc.h
// kRingBytes: a sealed memfd handed to that worker alone, mapped as its
// db_armed/db_seq) and runs D2/D3 on it unchanged. The host's db_seq is then
// host_seq, in its private memory (H1/H2 unchanged), and a waiting host arms
// every live worker's page and sleeps on all the sequences at once with
// futex_waitv (R1/R2, ring_sleep), untimed as in a thread pool. Without
// futex_waitv (kernels before 5.16, qemu-user, a seccomp filter) or with
// KNIT_PROC_NAMED_SHM (no descriptor can be handed over) the pool has no
// ring pages: its workers ring through the pool header's words and the host
// sleeps at most kProcDoorbellWatchdogNs per doorbell sleep, so a lost ring
// delays a waiter, it never strands it. The completion fd's path out of a
// worker process is split the same way (src/proc.h): worker_ring's E2 load
// reads a flag in the worker's own ring page and it writes its own lane's
// bridge eventfd; without ring pages the monitor syncs the fd every
// kProcDoorbellWatchdogNs.
//
// The refill doorbell (steal pools, tests/model/doorbell_refill.pml; lanes
// pools, doorbell_refill_lanes.pml): a host may arm kArmedRefill instead of
// kArmedAny (when is src/spin.h's choice). A worker rings such a host once
// the submit lock's pending lanes (lanes: its own lane's frames published
// and not yet retired) are at or below the low-water mark after it
// published results (L1: pending falls claim by claim, and every claim or
// retire is followed by its result's publish, so the one that crosses the
// mark is followed by a ring), and at every park (L2: a worker that stops
// claiming never leaves the host asleep). The host's re-check (L3,
// host_refill_recheck in src/spin.cpp) sees the mark crossed, a worker
// parked for room, or a parked worker's unreaped results.
//
// Park states (the parked word of a lane, ParkState) are written by the
// worker (announce, unpark, acknowledge stop) and CASed to kAwake by the one
// host thread that claims the wake (W3): a wake is sent exactly once per
// announced park, and the worker counts it as received exactly then.
#ifndef KNIT_SRC_WAKE_H
#define KNIT_SRC_WAKE_H

#include "src/common.h"

#include "src/lane.h"
#include "src/runtime.h"

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
// armed for a refill: enough left to keep the workers busy for about a
// host's wake.
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
void host_doorbell_sleep(Pool *p, bool arm, SleepRecheck recheck, void *arg,
			 bool *refill = nullptr);

// The last wake this host thread sent (lane_wake_claim records it; the
// after-wake spin of src/spin.h reads it and clears `at` once used).
// Thread-local.
struct SentWake {
	Pool *pool; // nullptr: none sent yet
	int64_t at; // when it was sent (0: none pending)
};
// lane_wake sent a wake to a worker of p (this thread).
void host_sent_wake(Pool *p);
SentWake *host_sent_wake_last();

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
