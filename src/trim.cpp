// SPDX-License-Identifier: MIT
// src/trim.cpp - giving payload arena memory back once a lane is idle.
//
// The arenas live in the pool's shared region and are committed page by page
// as payloads pass through them; a burst of large payloads would otherwise
// keep its high-water mark committed for the life of the pool. Only an
// arena's producer may trim it (the allocation table is its private state,
// arena.h), so each side trims what it produces, off the hot path:
//
//  - a worker trims its lane's return arena when a park times out: it has
//    then been idle for park_ms, and no result is waiting for room. Without
//    a watchdog (park_ms 0, the default) a worker parks with that timeout
//    only while its arena holds bytes above the floor (worker_arena_trimmable),
//    so an idle pool that has trimmed (or never grew) wakes no one;
//  - the host (the dispatcher holder, once per pass) trims a lane's request
//    arena, or under STEAL the shared submit arena, once it has had nothing
//    in flight for park_ms. The test is a few loads per lane per pass; the
//    madvise happens once per idle period (after it the arena's high-water
//    mark is at the floor and trim() returns at once).
//
// Trimming never goes below payload_initial_bytes (the commit the user asked
// for at creation), nor below an allocation still in use: trim() reclaims
// what consumers have freed (acquire, pairs with their release XOR) and gives
// back only pages above every live allocation.
#include "src/common.h"

#include "src/lane.h"
#include "src/runtime.h"

namespace knit::detail {

namespace {

uint64_t keep_bytes(const Pool *p) { return p->cfg.payload_initial_bytes; }

// One idle clock: true when the arena has been idle for park_ms. `busy`
// restarts it.
bool idle_long_enough(int64_t *since, bool busy, int64_t now, int64_t idle_ns)
{
	if (busy) {
		*since = 0;
		return false;
	}
	if (*since == 0) {
		*since = now;
		return false;
	}
	return now - *since >= idle_ns;
}

uint64_t committed(const LockProducer &prod, uint64_t keep, uint64_t cap)
{
	const uint64_t page = region_page_size();
	return min_of(align_up(max_of(prod.arena_high_water(), min_of(keep, cap)), page), cap);
}

} // namespace

void host_arena_trim(Pool *p, int64_t now)
{
	const int64_t idle_ns = (int64_t)p->cfg.park_ms * 1000000;
	const uint64_t keep = keep_bytes(p);
	if (p->steal.on) {
		// An isolated process pool's submit arena is in the memfd sealed
		// F_SEAL_FUTURE_WRITE (src/proc.h), where the kernel refuses to
		// punch holes (MADV_REMOVE: EPERM): it keeps its pages.
		if (p->isolated || p->steal.req.arena_high_water() <= keep)
			return; // nothing above the floor: skip the ACK loads of idle()
		bool busy = p->steal.staged != 0 || !p->steal.req.idle();
		if (now == 0)
			now = knit_now_ns();
		if (idle_long_enough(&p->submit_idle_ns, busy, now, idle_ns))
			(void)p->steal.req.trim_arena(&p->region, keep);
		return;
	}
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (l->req.arena_high_water() <= keep)
			continue;
		bool busy = l->inflight != 0 || l->staged != 0;
		if (now == 0)
			now = knit_now_ns();
		if (idle_long_enough(&l->req_idle_ns, busy, now, idle_ns))
			(void)l->req.trim_arena(&p->region, keep);
	}
}

void worker_arena_trim(Lane *l)
{
	if (l->local->pend_count != 0)
		return; // results are waiting for room: not idle
	(void)l->wret.trim_arena(&l->pool->region, keep_bytes(l->pool));
}

bool worker_arena_trimmable(Lane *l) { return l->wret.arena_high_water() > keep_bytes(l->pool); }

uint64_t arena_committed_bytes(Pool *p)
{
	const uint64_t cap = align_up(p->cfg.payload_max_bytes, kArenaGranule);
	const uint64_t keep = keep_bytes(p);
	uint64_t sum = 0;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (!p->steal.on)
			sum += committed(l->req, keep, cap);
		sum += committed(l->wret, keep, cap);
	}
	if (p->steal.on)
		sum += committed(p->steal.req, keep, cap);
	return sum;
}

} // namespace knit::detail
