// SPDX-License-Identifier: MIT
// src/wake.cpp - the room for waking (src/wake.h has the pairing table):
// worker park/unpark, the host's doorbell sleep and its ring, host events,
// and the completion eventfd's level.
//
// No lost wake, host -> worker: the host publishes into lane i (release
// store of A), fences, then loads `parked` (W1); the worker stores `parked`,
// fences, then re-checks A before it futex-waits on its wake sequence (W2).
// One of the two sees the other's store.
//
// No lost ring, worker -> host (the doorbell): a waiting host arms
// (store armed = 1), fences, re-checks every return lock's A against what was
// last reaped, and only then futex-waits on the doorbell sequence it read
// before arming (D1); a worker publishes results (release store of A),
// fences, loads armed and, if set, CASes it 1 -> 0 (one ring per burst),
// bumps the sequence and wakes (D2, D3). Host-side events (completions
// produced by another host thread, inline work left behind, stop, a new
// deadline) bump the same sequence through host_event(), which pairs its
// fence with the sleeper's (H1). Across processes the pool header's armed
// word is worker-writable: a process pool's host arms each worker's own
// ring page instead and sleeps on all of them with futex_waitv (ring_sleep),
// or, where it cannot, bounds each sleep with a watchdog
// (kProcDoorbellWatchdogNs, wake.h) instead of trusting the ring.
#include "src/common.h"

#include <limits.h>

#include "src/lane.h"
#include "src/runtime.h"
#include "src/trace.h"
#include "src/wake.h"

namespace knit::detail {

namespace {

// The last wake this thread sent (wake.h SentWake).
__thread SentWake t_sent_wake;

// Leave the parked state. Returns true when a host claimed our park (its CAS
// parked -> kAwake in lane_wake() won): that host sends exactly one wake,
// and this is where the worker counts it as received, so sent == received.
bool unpark(Lane *l)
{
	// W4, acq_rel: pairs with the host's CAS in lane_wake() (W3); whoever
	// moves parked to kAwake first owns the wake.
	return knit_xchg_acq_rel_32(l->parked, kAwake) == kAwake;
}

void count_received(Lane *l)
{
	counter_bump(lane_counter(l->ext, kWcWakesReceived));
	KNIT_TRACE_WORKER_WAKE(l->pool, l->index,
			       knit_load_relaxed_32(l->stop) != kStopRunning
				       ? KNIT_TRACE_WAKE_STOP
				       : KNIT_TRACE_WAKE_RUNG);
}

// Count a ring (before it: whoever the ring wakes may read the stats at
// once).
void ring_count(Lane *l)
{
	counter_bump(lane_counter(l->ext, kWcDoorbellRings));
	KNIT_TRACE_DOORBELL_RING(l->pool, l->index);
}

// Wake the sleeping host threads (the ring claimed: the armed word's CAS
// won, D3).
void ring_wake(Pool *p)
{
	// D3, release: pairs with the host's acquire load of the sequence (D4).
	knit_add_acq_rel_32(p->db_seq, 1);
	knit_futex_wake(p->db_seq, INT_MAX, p->futex_shared);
}

// A host armed for a refill wants this worker's ring (L1): the steal
// submit lock's pending lanes, or (lanes) this worker's own lane's frames
// published and not yet retired, are at or below the low-water mark.
bool refill_low(Lane *l)
{
	if (l->pool->steal.on)
		return (uint32_t)__builtin_popcount(l->sc.pending()) <= kRefillLowWater;
	return (uint32_t)__builtin_popcount(l->wreq.outstanding()) <= kLaneRefillLowWater;
}

// A waiting host armed the doorbell / its sleep ended rung (stats, trace).
void count_arm(Pool *p)
{
	knit_add_relaxed_64(&p->st_doorbell_arms, 1);
	KNIT_TRACE_DOORBELL_ARM(p);
}

void count_rung(Pool *p)
{
	knit_add_relaxed_64(&p->st_doorbell_wakes, 1);
	KNIT_TRACE_DOORBELL_WAKE(p);
}

// host_doorbell_sleep() in a process pool with ring pages (Pool::rings,
// wake.h "process pools"): D1-D4 per worker, on that worker's own words,
// and one futex_waitv on the host-event sequence (host-private) and every
// armed worker's ring sequence. A worker can only leave its own ring
// unrung (its results then wait as if it had not answered: the hard
// timeout covers that) or ring for nothing (a spurious wake it pays a
// syscall for); the other workers' rings still reach us.
void ring_sleep(Pool *p, bool arm, SleepRecheck recheck, void *arg, bool *refill)
{
	if (refill != nullptr)
		*refill = false; // never asked for in a process pool (refill_wanted)
	knit_futex_waiter w[KNIT_MAX_WORKERS + 1];
	uint32_t n = 0;
	// D4, acquire: pairs with the add in host_event() (H2).
	knit_futex_waiter_set(&w[n++], p->db_seq, knit_load_acquire_32(p->db_seq), p->futex_shared);
	if (arm)
		for (uint32_t i = 0; i < p->nworkers; i++) {
			Lane *l = &p->lanes[i];
			if (lane_state(l) == kLaneRetired)
				continue; // its words are never read again
			// D4, acquire: pairs with that worker's add to its own
			// ring sequence (D3), read before we arm it (D1).
			knit_futex_waiter_set(&w[n++], l->ring_seq,
					      knit_load_acquire_32(l->ring_seq), 1);
		}
	knit_add_acq_rel_32(&p->host_waiters, 1);
	if (arm) {
		// Every worker we wait on is armed: a worker that clears its
		// own word silences only itself.
		for (uint32_t i = 0; i < p->nworkers; i++) {
			Lane *l = &p->lanes[i];
			if (lane_state(l) != kLaneRetired)
				knit_store_relaxed_32(l->ring_armed, kArmedAny);
		}
		count_arm(p);
	}
	// D1 (Dekker), per worker: pairs with each worker's D2 fence between
	// its release store of A and its load of its own armed word
	// (worker_ring); H1 and the rest as in host_doorbell_sleep().
	knit_fence_seq_cst();
	int64_t wake = -1;
	if (!recheck(p, arg, &wake)) {
		if (knit_futex_waitv(w, n, wake, 1, nullptr) < 0) {
			// Refused (the probe said it exists, so not expected): the
			// bounded sleep, so a refusal never turns into a busy loop.
			const int64_t cap = knit_now_ns() + kProcDoorbellWatchdogNs;
			knit_futex_wait(p->db_seq, (uint32_t)w[0].val,
					wake < 0 || wake > cap ? cap : wake, p->futex_shared);
		}
		if (arm)
			for (uint32_t i = 1; i < n; i++)
				if (knit_load_relaxed_32((uint32_t *)(uintptr_t)w[i].uaddr) !=
				    (uint32_t)w[i].val) {
					count_rung(p);
					break;
				}
	}
	// acq_rel: as in host_doorbell_sleep().
	knit_add_acq_rel_32(&p->host_waiters, (uint32_t)-1);
}

// ---- the completion eventfd (its contract: above efd_sync()) --------------------------

void efd_write(Pool *p)
{
	uint64_t one = 1;
	(void)knit_sys_write(p->efd, &one, sizeof one);
}

bool efd_pending(Pool *p)
{
	if (knit_load_relaxed_32(&p->cq_count) != 0)
		return true;
	// Acquire: as in knit_complete(), a zero outstanding means every
	// completion is already counted in cq_count.
	if (knit_load_relaxed_32(&p->closed) && none_outstanding(p))
		return true;
	if (knit_load_relaxed_32(&p->dispatch_lock) != 0)
		return false; // its holder re-checks on release (efd_sync()'s contract)
	return work_pending(p, 0);
}

void efd_clear(Pool *p)
{
	uint64_t v;
	(void)knit_sys_read(p->efd, &v, sizeof v); // EFD_NONBLOCK: EAGAIN when already clear
}

} // namespace

WakeReason worker_park(Lane *l, ParkState why, ParkRecheck recheck, int64_t park_ns)
{
	Pool *p = l->pool;
	// W4, acquire: pairs with the host's add to the sequence in lane_wake().
	const uint32_t seq = knit_load_acquire_32(l->wake_seq);
	knit_store_relaxed_32(l->parked, why);
	// W2 (no lost wake): pairs with the host's W1 fence between its release
	// store of A (flush_staged, fenced in dispatch_unlock(); steal: steal_flush,
	// S6 in steal.cpp), of the
	// stop word (request_worker_stop) or of B (lane_reap, fenced in
	// dispatch_unlock()) and its load of
	// parked in lane_wake(): either we see its store in the re-check below
	// or it sees us parked and rings.
	knit_fence_seq_cst();
	// L2: a host armed for a refill is rung by every worker that parks
	// (after the W2 fence, which pairs with its D1 fence between its store
	// of armed and its loads of parked in host_refill_recheck: either it
	// sees us parked or we see it armed). The CAS claims the ring (D3).
	if (knit_load_relaxed_32(p->db_armed) == kArmedRefill &&
	    knit_cas_acq_rel_32(p->db_armed, kArmedRefill, kArmedNone) == kArmedRefill) {
		ring_count(l);
		ring_wake(p);
	}
	if (recheck(l)) {
		if (unpark(l)) // a host rang while we were re-checking
			count_received(l);
		return kWokeRecheck;
	}
	counter_bump(lane_counter(l->ext, kWcParks));
	KNIT_TRACE_WORKER_PARK(p, l->index, seq);
	int r = knit_futex_wait(l->wake_seq, seq, park_ns > 0 ? knit_now_ns() + park_ns : -1,
				p->futex_shared);
	if (unpark(l)) {
		count_received(l);
		return kWokeRung;
	}
	if (r == KNIT_FUTEX_TIMED_OUT) {
		counter_bump(lane_counter(l->ext, kWcWatchdog));
		KNIT_TRACE_WORKER_WAKE(p, l->index, KNIT_TRACE_WAKE_WATCHDOG);
		return kWokeWatchdog;
	}
	counter_bump(lane_counter(l->ext, kWcSpurious));
	KNIT_TRACE_WORKER_WAKE(p, l->index, KNIT_TRACE_WAKE_SPURIOUS);
	return kWokeSpurious;
}

void worker_ring(Lane *l)
{
	Pool *p = l->pool;
	// D2 (Dekker): pairs with the host's D1 fence in host_doorbell_sleep()
	// between its store of armed and its re-check of A: either it sees our
	// results or we see it armed. Also orders the publish before
	// efd_sync()'s load of the dispatcher lock (E3; pairs with the fence in
	// dispatch_unlock()).
	knit_fence_seq_cst();
	// Counters are bumped before the ring: whoever the ring wakes may read
	// the stats at once.
	// E2, acquire: pairs with the release store of efd_on (E1): the fd is set.
	const bool fd = knit_load_acquire_32(&p->efd_on) != 0;
	// A worker process: the completion fd's level is the host's to keep;
	// the bridge wakes its monitor, which does (src/proc.h). Acquire:
	// pairs with the host's release store of the flag (proc_efd_enabled).
	const bool bridge = p->efd_flag != nullptr && knit_load_acquire_32(p->efd_flag) != 0;
	// D3: the CAS claims the ring (one per burst). A host armed for a
	// refill only once the submit lock runs low (L1: after the fence above,
	// which follows our claim's ACK store and pairs with the host's D1
	// fence before it re-checked those lanes; our pending() loads every
	// ACK afresh, and of several claimants the last to fence sees all).
	// Lanes (L1 too): once this worker's own lane, whose frames it
	// retired (release store of B) before this publish, holds
	// kLaneRefillLowWater or fewer (a fresh load of A: frames another host
	// thread published meanwhile count).
	const uint32_t av = knit_load_relaxed_32(p->db_armed);
	const bool armed = (av == kArmedAny || (av == kArmedRefill && refill_low(l))) &&
			   knit_cas_acq_rel_32(p->db_armed, av, kArmedNone) == av;
	if (fd || armed || bridge)
		ring_count(l);
	if (bridge) {
		uint64_t one = 1;
		(void)knit_sys_write(p->efd_bridge, &one, sizeof one);
	}
	if (fd)
		// Our results are published (and fenced, above): it writes, or
		// leaves them to the dispatcher holder's release (dispatch.cpp).
		efd_sync(p);
	if (armed)
		ring_wake(p);
}

void host_sent_wake(Pool *p)
{
	SentWake *w = &t_sent_wake;
	w->pool = p;
	w->at = knit_now_ns(); // one read per wake sent: the cold path only
}

SentWake *host_sent_wake_last() { return &t_sent_wake; }

bool lane_wake_claim(Pool *p, Lane *l, uint32_t v)
{
	// W3: the CAS claims the wake: exactly one host thread sends it, and a
	// second publish before the worker is up sees kAwake and sends none.
	if (knit_cas_acq_rel_32(l->parked, v, kAwake) != v)
		return false;
	KNIT_TRACE_HOST_RING(p, l->index, knit_load_relaxed_32(&l->tid));
	// Counted before the worker can run. In a worker process (the only
	// place efd_flag is set) l is this process's private view of a peer's
	// lane: the count goes to the peer's shared counters, where the host's
	// stats read it.
	knit_add_relaxed_64(p->efd_flag != nullptr ? l->peer_wakes : &l->wakes_sent, 1);
	// W3, release: pairs with the worker's acquire load of the sequence
	// after its futex wait (W4: a changed sequence = it was rung).
	knit_add_acq_rel_32(l->wake_seq, 1);
	knit_futex_wake(l->wake_seq, 1, p->futex_shared);
	host_sent_wake(p);
	return true;
}

bool steal_wake_one(Pool *p)
{
	const uint32_t n = p->nworkers;
	const uint32_t start = knit_load_relaxed_32(&p->steal.wake_cursor) % n;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t w = (start + i) % n;
		Lane *l = &p->lanes[w];
		// Only a worker that says it is parked waiting for work: a
		// spinning or running one finds the work itself, one parked for
		// return-arena room cannot claim.
		if (knit_load_relaxed_32(l->parked) != kParked)
			continue;
		if (lane_wake(p, l, false)) {
			knit_store_relaxed_32(&p->steal.wake_cursor, (w + 1) % n);
			return true;
		}
	}
	return false;
}

void host_doorbell_sleep(Pool *p, bool arm, SleepRecheck recheck, void *arg, bool *refill)
{
	if (p->rings) {
		ring_sleep(p, arm, recheck, arg, refill);
		return;
	}
	// D4, acquire: pairs with the add in host_event() (H2) / the worker's
	// ring (D3), so a bump we compare against below is never older than
	// what we re-check.
	const uint32_t seq = knit_load_acquire_32(p->db_seq);
	// Announce the waiter; the seq_cst fence below orders it before our
	// re-check (the Dekker pair with host_event() and dispatch_unlock()).
	knit_add_acq_rel_32(&p->host_waiters, 1);
	if (arm) {
		// A refill arm never replaces kArmedAny: that may be another
		// waiting host thread's (a knit_call on a line, another reaper),
		// which must be rung for any result. The CAS leaves it, and we
		// wait as it asks (our re-check then counts results too). An arm
		// for any result may replace a refill arm: that only rings its
		// sleeper sooner.
		if (refill != nullptr && *refill) {
			uint32_t v = knit_load_relaxed_32(p->db_armed);
			while (v != kArmedAny) {
				const uint32_t seen =
					knit_cas_relaxed_32(p->db_armed, v, kArmedRefill);
				if (seen == v)
					break;
				v = seen;
			}
			*refill = v != kArmedAny;
		} else {
			knit_store_relaxed_32(p->db_armed, kArmedAny);
		}
		count_arm(p);
	}
	// D1 (Dekker): pairs with the worker's D2 fence between its release
	// store of A and its load of armed (worker_ring), with the H1 fence in
	// host_event() between its progress and its load of host_waiters, with
	// the H1 fence in enqueue() (api.cpp) between its store of a new
	// earliest_deadline and its load of host_waiters, and with the fence in
	// dispatch_unlock() after its release: either they see us armed/waiting
	// or we see their work (or deadline) in the re-check. Armed for a
	// refill (L3): with the fences of L1 and L2.
	knit_fence_seq_cst();
	int64_t wake = -1;
	if (!recheck(p, arg, &wake)) {
		// A process pool without ring pages (no futex_waitv: kernels
		// before 5.16, qemu-user; or KNIT_PROC_NAMED_SHM): D2/D3 are
		// only as good as the armed word, which a worker process can
		// clear (and db_seq, which it can bump or freeze): the watchdog
		// bounds the sleep so the waiter re-checks (wake.h). Thread pools
		// sleep untimed, as the pairs promise.
		if (p->untrusted_workers) {
			const int64_t cap = knit_now_ns() + kProcDoorbellWatchdogNs;
			if (wake < 0 || wake > cap)
				wake = cap;
		}
		knit_futex_wait(p->db_seq, seq, wake, p->futex_shared);
		if (arm && knit_load_relaxed_32(p->db_seq) != seq)
			count_rung(p);
	}
	// acq_rel: nothing pairs with the decrement beyond the counter itself
	// (a waker that still sees us only sends a wake nobody needs).
	knit_add_acq_rel_32(&p->host_waiters, (uint32_t)-1);
}

void host_event(Pool *p, bool to_fd)
{
	// H1 (Dekker): pairs with the D1 fence in host_doorbell_sleep() between
	// its waiter count increment and its re-check: either it sees our
	// progress or we see it.
	knit_fence_seq_cst();
	if (knit_load_relaxed_32(&p->host_waiters) != 0) {
		// H2, release: pairs with the acquire load of the sequence (D4).
		knit_add_acq_rel_32(p->db_seq, 1);
		knit_futex_wake(p->db_seq, INT_MAX, p->futex_shared);
	}
	if (to_fd)
		efd_sync(p);
}

bool host_work_pending(Pool *p, int64_t now)
{
	if (knit_load_relaxed_32(&p->inline_queued) != 0)
		return true;
	int64_t ed = earliest_deadline(p);
	if (ed != 0 &&
	    ed <= (now != 0 ? now : knit_now_ns())) // now 0: the clock only for a deadline
		return true;
	// A worker being retired has stopped: the pass that retires it fails
	// its calls. Acquire: pairs with its release store of ACKNOWLEDGED.
	if (knit_load_relaxed_32(&p->lanes_distrusted) != 0)
		for (uint32_t i = 0; i < p->nworkers; i++)
			if (lane_state(&p->lanes[i]) == kLaneDistrusted &&
			    knit_load_acquire_32(p->lanes[i].stop) == kStopAcknowledged)
				return true;
	return false;
}

bool work_pending(Pool *p, int64_t now)
{
	if (host_work_pending(p, now))
		return true;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (lane_state(l) == kLaneRetired)
			continue; // never reaped again: its A says nothing
		// Acquire: pairs with the worker's release store of A (P1): a
		// result published before our arm is seen here, else rung.
		if (knit_load_acquire_32(l->ret.publish_word()) !=
		    knit_load_relaxed_32(&l->ret_seen))
			return true;
	}
	return false;
}

// ---- the completion eventfd -------------------------------------------------------------
//
// Contract (knit_completion_fd(3)): the fd is readable if and only if a
// knit_complete(..., 0) would return at least one completion (or
// -KNIT_ECLOSED: the pool is stopped and drained, so a loop learns of it).
// It is a level, kept by two rules that hold on every thread:
//  - whoever makes something pending (a worker publishing results, a host
//    completing calls, a dispatcher holder leaving work behind) does so
//    BEFORE it calls efd_sync(), which writes;
//  - whoever clears it (efd_sync() finding nothing pending, as
//    knit_complete() does before it returns) reads the fd FIRST and
//    re-checks afterwards, writing again when something is pending.
// The eventfd's own lock orders a write before a later read, so a clearer
// that swallowed a write sees what preceded it; the seq_cst fences below
// make that independent of the kernel. So nothing pending is ever left
// unreadable (no stranded result), and the last thread to act leaves the fd
// unreadable when nothing is pending (no spurious wake-up once quiet).
//
// Work that needs a dispatcher pass (results to reap, inline calls, expired
// deadlines) counts only while nobody holds the dispatcher: a loop woken
// then could not run the pass (its try-lock fails) and would spin until
// the holder lets go. The holder's dispatch_unlock() re-checks after its
// release instead. Dekker: its release + fence + work_pending() against the
// caller's fence (after its progress: the worker's publish, a clear) + load
// of dispatch_lock here: either the holder sees the work or we see it gone.

void efd_sync(Pool *p)
{
	// Acquire: pairs with the release store of efd_on in knit_completion_fd()
	// (the fd number is visible with the flag).
	if (!knit_load_acquire_32(&p->efd_on))
		return;
	if (efd_pending(p)) {
		efd_write(p);
		// A reaper may have emptied everything before our write landed:
		// look again, and take a write that signals nothing back. Pairs
		// with the fence after the clear below (on the reaper's thread).
		knit_fence_seq_cst();
		if (efd_pending(p))
			return;
	}
	efd_clear(p);
	// Pairs with the fence above and with the producers' ordering of their
	// progress before their write: whatever preceded a write we swallowed
	// is visible to the re-check.
	knit_fence_seq_cst();
	if (efd_pending(p))
		efd_write(p);
}

} // namespace knit::detail
