// SPDX-License-Identifier: MIT
// src/spin.cpp - the room of spinning policy (src/spin.h has the contract):
// the process's CPU cap and spin slots, the host's spin judgement before a
// sleep, its after-wake spin estimator, and the refill arm.
#include "src/common.h"

#include <unistd.h>

#include "src/lane.h"
#include "src/runtime.h"
#include "src/spin.h"
#include "src/wake.h"

namespace knit::detail {

namespace {

// This thread's wake -> result estimate, ns (0: no sample yet): peak-hold.
__thread int64_t t_wake_est;
// Host threads in their after-wake spin (process-wide; relaxed, a count).
uint32_t g_host_spinners;
uint32_t g_cpu_cap; // spin_cap_of_machine() + 1, cached (0: not read yet)

// The first guess, before any sample.
constexpr int64_t kWakeGuessNs = 50 * 1000;

// host_spin_worth()'s memory: the last look found every CPU taken; a spin
// with every CPU taken came up empty (skip the next); the sleep being timed.
__thread bool t_cpus_full;
__thread bool t_skip_spin;
__thread int64_t t_sleep_at;

uint32_t online_cpus()
{
	uint32_t cap = knit_load_relaxed_32(&g_cpu_cap);
	if (cap == 0) {
		// A benign race: every thread reads the same. Read once per
		// process: a sandboxed worker may no longer open /sys
		// (src/sandbox.h), so it reads it before.
		const long n = sysconf(_SC_NPROCESSORS_ONLN);
		cap = n > 1 ? (uint32_t)n : 1;
		knit_store_relaxed_32(&g_cpu_cap, cap);
	}
	return cap;
}

// The steal submit lock's lanes published and not yet claimed: the
// producer's A XOR every consumer's ACK (any thread). Acquire: pairs with
// the producer's release store of A (S5) and the consumers' release stores
// of ACK (S2, L3 in wake.h).
uint32_t submit_pending(Pool *p)
{
	uint32_t m = knit_load_acquire_32(word_at(p->steal.lock, kLockOffA));
	for (uint32_t c = 0; c < p->nworkers; c++)
		m ^= knit_load_acquire_32(word_at(p->steal.ctl, steal_ack_offset(c)));
	return m;
}

// The XOR of every consumer's ACK word: it changes with every claim (relaxed:
// only compared with this thread's last look).
uint32_t submit_acks(Pool *p)
{
	uint32_t x = 0;
	for (uint32_t c = 0; c < p->nworkers; c++)
		x ^= knit_load_relaxed_32(word_at(p->steal.ctl, steal_ack_offset(c)));
	return x;
}

// Is a worker awake and not running calls (woken, or spinning), so that it
// claims what is pending without a wake? A worker process's busy hint is
// its own (Lane::busy is a thread lane's): then no, and the wake is sent.
bool claimer_awake(Pool *p)
{
	if (p->untrusted_workers)
		return false;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (knit_load_relaxed_32(l->parked) == kAwake &&
		    knit_load_relaxed_32(&l->busy) == 0)
			return true;
	}
	return false;
}

// host_steal_unstick()'s memory: the ACK XOR at this thread's last look.
__thread uint32_t t_unstick_acks;
__thread const Pool *t_unstick_pool;

// Lanes: is some worker lane (not retired) at or below the low-water mark
// (frames published and not yet retired)? *live: how many lanes are not
// retired (counted up to the first low one). Any thread. Acquire loads of A
// and B (lock2.h outstanding_shared): B pairs with the worker's release
// store C3 (L3 in wake.h).
bool lane_low(Pool *p, uint32_t *live)
{
	*live = 0;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (lane_state(l) == kLaneRetired)
			continue; // never placed on again: its words say nothing
		++*live;
		if ((uint32_t)__builtin_popcount(l->req.outstanding_shared()) <=
		    kLaneRefillLowWater)
			return true;
	}
	return false;
}

// host_refill_arm() without the CPU look. Steal: more lanes pending in the
// submit lock than the mark. Lanes: every worker lane above its mark, and
// enough calls in the backlog to fill every lane, so the refill the ring
// asks for tops up each lane: the last calls of a backlog are then placed
// as each slot comes back (an arm for any result), not split round robin
// between a lane at the mark and a fuller one, which would leave the lanes
// unequal when the backlog runs out (the makespan's tail).
bool refill_wanted(Pool *p)
{
	const uint64_t backlog = knit_load_relaxed_64(&p->backlog_count);
	if (p->untrusted_workers || backlog == 0) // Pool::untrusted_workers: never a refill
		return false;
	if (p->steal.on)
		return (uint32_t)__builtin_popcount(submit_pending(p)) > kRefillLowWater;
	uint32_t live;
	return !lane_low(p, &live) && live != 0 && backlog >= (uint64_t)live * kLaneInflightMax;
}

} // namespace

bool steal_host_wake_pays(Pool *p)
{
	StealHost &s = p->steal;
	// A worker process writes its own estimate: not trusted for this.
	if (p->untrusted_workers)
		return true;
	const bool refresh = (s.svc_tick++ % kSvcRefresh) == 0;
	uint32_t awake = 0;
	uint64_t svc = 0; // the slowest awake worker's estimate
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (refresh)
			s.svc_ns[i] = knit_load_relaxed_64(lane_counter(l->ext, kWcServiceNs));
		if (knit_load_relaxed_32(l->parked) != kAwake)
			continue;
		if (s.svc_ns[i] == 0)
			return true; // an awake worker we know nothing about
		awake++;
		if (s.svc_ns[i] > svc)
			svc = s.svc_ns[i];
	}
	if (awake == 0)
		return true;
	const uint64_t work = (uint64_t)__builtin_popcount(s.unclaimed) * svc;
	return work > (uint64_t)kWakePaysNs * awake;
}

void host_steal_unstick(Pool *p, int64_t *slice_ns)
{
	if (!p->steal.on)
		return;
	if (submit_pending(p) == 0) {
		t_unstick_pool = nullptr;
		return;
	}
	const uint32_t acks = submit_acks(p);
	if (t_unstick_pool == p && t_unstick_acks == acks && !claimer_awake(p))
		steal_wake_one(p); // nothing claimed since the last look
	t_unstick_pool = p;
	t_unstick_acks = acks;
	if (*slice_ns < 0 || *slice_ns > kUnstickNs)
		*slice_ns = kUnstickNs;
}

uint32_t g_spinners;

uint32_t spin_cap_of_machine() { return online_cpus() - 1; }

// Only a count: nothing is published through it, so relaxed is enough.
bool spin_slot_acquire(uint32_t *spinners, uint32_t cap)
{
	uint32_t n = knit_load_relaxed_32(spinners);
	while (n < cap) {
		const uint32_t seen = knit_cas_relaxed_32(spinners, n, n + 1);
		if (seen == n)
			return true;
		n = seen;
	}
	return false;
}

void spin_slot_release(uint32_t *spinners) { knit_fetch_add_relaxed_32(spinners, (uint32_t)-1); }

bool host_spin_cpu_free(Pool *p)
{
	const uint32_t cpus = online_cpus();
	uint32_t awake = 0;
	for (uint32_t i = 0; i < p->nworkers; i++)
		if (knit_load_relaxed_32(p->lanes[i].parked) == kAwake && ++awake >= cpus)
			return false;
	return true;
}

bool host_spin_worth(Pool *p)
{
	t_cpus_full = !host_spin_cpu_free(p);
	if (t_cpus_full && refill_wanted(p))
		return false; // the wait arms for a refill (host_refill_arm)
	return !t_cpus_full || !t_skip_spin;
}

void host_spin_outcome(bool found)
{
	if (t_cpus_full)
		t_skip_spin = !found;
}

void host_sleep_begin()
{
	if (t_cpus_full && t_skip_spin)
		t_sleep_at = knit_now_ns();
}

void host_sleep_end()
{
	// A sleep a spin would have covered: spin again next time.
	if (t_sleep_at != 0 && knit_now_ns() - t_sleep_at < kHostSpinNs)
		t_skip_spin = false;
	t_sleep_at = 0;
	t_cpus_full = false;
}

int64_t host_wake_spin_begin(Pool *p, int64_t now)
{
	SentWake *w = host_sent_wake_last();
	if (w->pool != p || w->at == 0)
		return 0;
	const int64_t e = t_wake_est != 0 ? t_wake_est : kWakeGuessNs;
	const int64_t end = w->at + min_of(2 * e, kHostWakeSpinMaxNs);
	if (end <= now) {
		w->at = 0; // stale (the thread did not wait for it): no sample
		return 0;
	}
	const uint32_t cap = online_cpus();
	// One host spinner, and only beside fewer spinning workers than their
	// own cap (CPUs - 1): with it, never more spinners than CPUs.
	if (knit_load_relaxed_32(&g_spinners) + 1 >= cap || !spin_slot_acquire(&g_host_spinners, 1))
		return 0;
	return end;
}

void host_wake_spin_done() { spin_slot_release(&g_host_spinners); }

void host_wake_seen(Pool *p)
{
	SentWake *w = host_sent_wake_last();
	if (w->pool != p || w->at == 0)
		return;
	// Capped: a sample that includes our own sleep, or a preempted worker,
	// may only raise the average to the spin's bound.
	const int64_t d = min_of(knit_now_ns() - w->at, kHostWakeSpinMaxNs);
	w->at = 0;
	// Wake times have a long tail (a busy CPU): a slower wake raises the
	// estimate at once, faster ones lower it slowly (1/16 of the gap), so
	// the window covers the tail, not the mean.
	t_wake_est = d > t_wake_est ? d : t_wake_est + (d - t_wake_est) / 16;
}

int64_t host_spin_open(Pool *p, HostSpin *s, int64_t now, int64_t budget)
{
	if (!host_spin_worth(p))
		return 0;
	if (now == 0)
		now = knit_now_ns();
	s->judged = true;
	s->wake_end = host_wake_spin_begin(p, now);
	s->end = max_of(now + budget, s->wake_end);
	return now;
}

void host_spin_close(HostSpin *s, bool found)
{
	if (s->wake_end != 0)
		host_wake_spin_done();
	if (s->judged)
		host_spin_outcome(found);
}

int64_t host_backoff_ns(const Pool *p, uint32_t stall)
{
	uint64_t rung =
		stall > p->cfg.stall_free_loops + 1 ? stall - p->cfg.stall_free_loops - 1 : 0;
	if (rung > p->cfg.max_backoff_ms)
		rung = p->cfg.max_backoff_ms;
	return (int64_t)rung * 1000000;
}

bool host_refill_arm(Pool *p) { return refill_wanted(p) && !host_spin_cpu_free(p); }

bool host_refill_recheck(Pool *p)
{
	if (p->steal.on) {
		if ((uint32_t)__builtin_popcount(submit_pending(p)) <= kRefillLowWater)
			return true;
	} else {
		uint32_t live;
		// L3 (lanes): after the D1 fence, against the worker's L1 fence
		// between its retire (B) and its load of armed.
		if (lane_low(p, &live) || live == 0)
			return true;
	}
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (lane_state(l) == kLaneRetired)
			continue; // never reaped again: its words say nothing
		// L3: after the D1 fence, against the worker's W2 fence (L2).
		const uint32_t st = knit_load_relaxed_32(l->parked);
		if (st == kParkedForRoom)
			return true; // its results wait for our reap
		// A worker that parked before we armed rang nobody: its results
		// are ours to take now. Acquire: pairs with its release store of
		// A (P1).
		if (st != kAwake && knit_load_acquire_32(l->ret.publish_word()) !=
					    knit_load_relaxed_32(&l->ret_seen))
			return true;
	}
	return false;
}

} // namespace knit::detail
