// SPDX-License-Identifier: MIT
// src/spin.h - the room of spinning policy: how many threads of the process
// may spin at once (the CPU cap and its slots), whether a waiting host
// thread spins before it sleeps, how long it spins after a wake it sent,
// and whether it arms the doorbell for a refill instead of for any result.
// Implemented in src/spin.cpp.
//
// Every answer here is a choice, never a correctness condition: sleeping is
// always safe (the handshakes of src/wake.h lose no wake or ring), and so is
// either arm. So this room reads the protocol's words with relaxed loads
// and keeps its memory thread-local; it writes nothing shared but its spin
// slot counts. The one exception is host_refill_recheck(), the re-check L3
// of src/wake.h's pairing table: its loads pair as that table says.
//
// The CPU cap: at most spin_cap_of_machine() (online CPUs - 1) worker
// threads of the whole process spin at once, so a host always has a CPU. A
// worker takes a slot before it spins and gives it back when the spin ends;
// without one it parks at once. Within a pool only workers 0 ..
// spin_cap_of_machine() - 1 spin at all: worker processes each count only
// their own spinners, and the id rule keeps the pool's within the cap.
//
// The host's spin after a wake it sent (cold calls): a host thread that just
// woke a parked worker expects a result one wake latency later, longer than
// the fixed pre-sleep spin (kHostSpinNs); it would arm the doorbell and
// sleep, and the worker would have to wake it too, two wakes per call. So
// the thread that sent a wake (src/wake.h SentWake) spins on, before
// arming, for twice its own estimate of the wake -> result time (peak-hold:
// a slow wake raises it at once, fast ones lower it slowly; at most
// kHostWakeSpinMaxNs in all), if a CPU is left: at most one such host
// thread at a time, and only while fewer workers spin than
// spin_cap_of_machine(), so spinning host + spinning workers never exceed
// the CPUs.
//
// The refill arm (tests/model/doorbell_refill.pml, doorbell_refill_lanes.pml;
// the rings it waits for are L1-L3 of src/wake.h): a host waiting in
// knit_complete() while calls wait in the backlog, on a machine whose every
// CPU runs an awake worker, shares its CPU with a worker that has work.
// Woken for every result it takes that CPU once per result or two, and
// spinning takes it for good; so it arms kArmedRefill and runs again only
// when the workers need it to refill: the steal submit lock at
// kRefillLowWater, or (lanes) some worker lane at kLaneRefillLowWater while
// the backlog holds enough calls to fill every lane (so each refill tops
// every lane up and the lanes end the backlog even). The cost: results wait
// in the return locks until the ring, only while more calls are queued than
// the lanes hold.
#ifndef KNIT_SRC_SPIN_H
#define KNIT_SRC_SPIN_H

#include "src/common.h"

#include "src/runtime.h"
#include "src/wake.h"

namespace knit::detail {

// ---- the CPU cap (any thread) ------------------------------------------------------

// Online CPUs - 1 (0 on one CPU: nobody spins).
uint32_t spin_cap_of_machine();
// Take one of `cap` slots of *spinners (false: none free, do not spin).
// Only a count: relaxed.
bool spin_slot_acquire(uint32_t *spinners, uint32_t cap);
void spin_slot_release(uint32_t *spinners);
extern uint32_t g_spinners; // the process's spinning workers (atomic, relaxed)

// ---- the host's spin before a sleep -------------------------------------------------

// Is a CPU left for a host thread of p to spin on? False when at least as
// many of p's workers are awake (running a task, spinning, or woken) as the
// machine has online CPUs. Any thread; a relaxed snapshot.
bool host_spin_cpu_free(Pool *p);
// Should this waiting host thread spin before it sleeps (the kHostSpinNs
// spin of a wait)? Yes while a CPU is left. When p's awake workers fill
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

// ---- the host's spin after a wake it sent -------------------------------------------

// Before arming: if this thread sent a wake for p and a spin slot is free,
// take the slot and return the absolute end of the spin window; else 0.
// A nonzero return must be followed by host_wake_spin_done().
int64_t host_wake_spin_begin(Pool *p, int64_t now);
void host_wake_spin_done();
// The waiter found its result (or work) after this thread's wake: feed the
// wake -> result time to the moving average.
void host_wake_seen(Pool *p);

// ---- the wait ladder's steps ---------------------------------------------------------
// A host thread waiting for something a worker makes (host_wait in
// src/dispatch.cpp for the ticketed calls, line_wait in src/syncline.cpp
// for a line's reply) climbs one ladder: a bounded spin, judged here, then
// the doorbell sleep of src/wake.h, or without the doorbell option the
// backoff ladder's yields and timed sleeps.

// One spin before a sleep.
struct HostSpin {
	int64_t end = 0;      // absolute end of the window
	int64_t wake_end = 0; // the after-wake window's end, its slot held (0: none)
	bool judged = false;  // host_spin_worth() said yes: its outcome is owed
};
// Judge a spin (host_spin_worth) and, when it pays, open its window:
// `budget` ns from the start, or on through the after-wake window
// (host_wake_spin_begin). `now` 0: read the clock after the judgement.
// Returns the start, or 0: do not spin. An opened spin must be closed.
int64_t host_spin_open(Pool *p, HostSpin *s, int64_t now, int64_t budget);
// The spin ended (found: what it waited for showed up): give the
// after-wake slot back and feed the judgement.
void host_spin_close(HostSpin *s, bool found);
// The backoff ladder (doorbell option off), for the stall-th round that
// brought nothing: 0 for a yield (the first stall_free_loops + 1 rounds),
// then a sleep of 1, 2, ... max_backoff_ms ms, in ns.
int64_t host_backoff_ns(const Pool *p, uint32_t stall);

// ---- claims and wakes (steal topology) -------------------------------------------------
// A worker times one batch in kSvcSampleEvery (every batch of more than one
// call) and keeps two per-call estimates: the claim estimate
// (WorkerLocal::svc_ns: a slower sample raises it at once, faster ones lower
// it by an eighth of the gap), and the wake estimate
// (WorkerLocal::wake_svc_ns: an eighth of the way, either way, towards the
// smaller of its last two samples), which it stores for the host in its
// kWcServiceNs word. The claim estimate errs towards long (a claim of cheap
// calls must not hold a long one back), the wake estimate towards what the
// calls cost most of the time: one slow sample (a preemption, a fault) would
// otherwise hold a peak-hold estimate high for hundreds of claims, and
// every one of them would wake a second worker for calls the first one
// finishes before the wake lands (a woken worker that claims and is then
// preempted on a shared CPU holds its calls for a scheduler slice). From
// them:
//   - a claim takes up to kClaimBudgetNs of estimated work (at least one
//     call, at most the region; exactly one with no estimate yet or with
//     calls of kClaimBudgetNs or more), oldest first: cheap calls travel
//     several per claim, long ones one by one, so a busy worker holds no
//     unstarted call behind a long one it knew to be long;
//   - a parked peer is woken (by the claimer after its claim, or by the
//     host after its publish) only when the pending calls hold more
//     work by the wake estimate than the awake workers finish in
//     kWakePaysNs (a wake
//     to running costs tens of microseconds): calls of ~100 ns stay with
//     one worker, which then has a CPU to itself beside the host, and calls
//     of microseconds spread over the workers. With no worker awake, or an
//     awake worker without an estimate, the wake is always sent;
//   - a host about to sleep while calls stay pending in the submit lock, no
//     worker claimed any since its last look, and no worker is awake
//     without calls to run (one just woken, or spinning) wakes a parked
//     worker, and
//     while calls are pending it looks again within kUnstickNs: an estimate
//     made on cheap calls cannot strand calls behind a long one that a
//     worker is running.
// A worker process claims one call at a time whatever its estimate
// (WorkerLocal::take_one): results of calls claimed together stay staged in
// its own memory until the batch ends, where a hostile call among them could
// rewrite them. Only choices (src/wake.h keeps every wake that liveness
// needs): the estimate is a hint and never trusted (a worker process writes
// its word).
inline constexpr int64_t kClaimBudgetNs = 2000;
inline constexpr int64_t kWakePaysNs = 20000;
inline constexpr int64_t kUnstickNs = 1000000;
inline constexpr uint32_t kSvcSampleEvery = 16;
inline constexpr uint32_t kSvcRefresh = 64;

// The calls one claim may take (1 .. region_lanes) for an estimate svc_ns.
inline uint32_t steal_take_size(int64_t svc_ns, uint32_t region_lanes)
{
	if (svc_ns <= 0 || svc_ns >= kClaimBudgetNs || region_lanes <= 1)
		return 1;
	const int64_t k = kClaimBudgetNs / svc_ns;
	return k >= (int64_t)region_lanes ? region_lanes : (uint32_t)k;
}
// A worker's estimate after one timed sample of `per_call_ns`.
inline int64_t steal_svc_update(int64_t svc_ns, int64_t per_call_ns)
{
	if (per_call_ns < 1)
		per_call_ns = 1;
	if (svc_ns <= 0 || per_call_ns >= svc_ns)
		return per_call_ns;
	return svc_ns - (svc_ns - per_call_ns) / 8;
}
// A worker's wake estimate after a timed sample of `per_call_ns` that
// followed one of `last_ns` (0: none): an eighth of the way, either way,
// towards the smaller of the two, so one slow sample (a preemption, a
// fault) moves it not at all and a sustained change in two samples.
inline int64_t steal_wake_svc_update(int64_t wake_ns, int64_t last_ns, int64_t per_call_ns)
{
	int64_t s = last_ns > 0 && last_ns < per_call_ns ? last_ns : per_call_ns;
	if (s < 1)
		s = 1;
	if (wake_ns <= 0)
		return s;
	return wake_ns + (s - wake_ns) / 8;
}
// The claimer (awake, estimate svc_ns) after a claim that left
// `pending_lanes` lanes pending: wake a parked peer?
inline bool steal_peer_wake_pays(uint32_t pending_lanes, int64_t svc_ns)
{
	return svc_ns <= 0 || (int64_t)pending_lanes * svc_ns > kWakePaysNs;
}
// The host after publishing (dispatcher holder, after the S6 fence): wake a
// parked worker? Yes with no worker awake, with an awake worker whose
// estimate is unknown, or when the unclaimed calls hold more estimated work
// than the awake workers finish in kWakePaysNs.
bool steal_host_wake_pays(Pool *p);
// A host thread about to sleep in a wait (any thread): on the steal
// topology, with lanes pending in the submit lock and no claim since this
// thread's last look, wake a parked worker; while lanes are pending, cap
// *slice_ns (the sleep's periodic look, < 0 = none) at kUnstickNs.
void host_steal_unstick(Pool *p, int64_t *slice_ns);

// ---- the refill arm -------------------------------------------------------------------

// Should a host thread about to sleep in a wait for completions arm for a
// refill (kArmedRefill) instead of for any result? A thread pool's steal
// topology, calls waiting in the backlog, more lanes pending in the submit
// lock than kRefillLowWater, and every CPU running an awake worker; or its
// lanes topology, every worker lane above kLaneRefillLowWater, enough calls
// in the backlog to fill every lane, and every CPU running an awake worker.
// Any thread; relaxed looks, only a choice (either arm is safe).
bool host_refill_arm(Pool *p);
// The re-check of a host armed for a refill (L3), besides what is not a
// result (host_work_pending): true when it must not sleep -- the submit
// lock (lanes: some worker lane) is at or below its low-water mark, a
// worker parked for room, or a parked worker's results wait.
bool host_refill_recheck(Pool *p);

} // namespace knit::detail

#endif
