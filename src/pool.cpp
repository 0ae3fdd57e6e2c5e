// SPDX-License-Identifier: MIT
// src/pool.cpp - pool creation, stop and destruction, the task table,
// statistics.
//
// knit_pool_create validates everything first (options, tasks), then builds
// the pool in one direction with a single undo path: the task table sorted
// by name, the shared region (lazily committed; its kind is the workers'
// choice) carved into the pool header and the lane blocks, the lock
// endpoints of both sides, the host tables, and last the workers. A failure
// at any step undoes every step before it. Every step that depends on the
// kind of workers is one operation of its table (src/workers.h).
#include "src/common.h"

#include <errno.h>
#include <new>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include "src/error.h"
#include "src/info.h"
#include "src/lane.h"
#include "src/runtime.h"
#include "src/syncline.h"
#include "src/wake.h"
#include "src/workers.h"

using namespace knit::detail;

namespace knit::detail {
uint32_t g_fork_gen;
} // namespace knit::detail

namespace {

// The fork handler is registered once, by the first knit_pool_create (a
// pool exists only after it ran, so no fork before it matters).
pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
int g_atfork_rc;

void on_fork_child() { knit_store_relaxed_32(&g_fork_gen, knit_load_relaxed_32(&g_fork_gen) + 1); }

void register_atfork() { g_atfork_rc = pthread_atfork(nullptr, nullptr, on_fork_child); }

// What both ways of freeing a pool end with: our mapping of the region,
// the completion descriptor's three fds, the task table, the pool itself.
void pool_free_common(knit_pool *kp)
{
	Pool *p = &kp->p;
	region_destroy(&p->region);
	if (p->efd >= 0)
		knit_sys_close(p->efd);
	if (p->tfd >= 0)
		knit_sys_close(p->tfd);
	if (p->epfd >= 0)
		knit_sys_close(p->epfd);
	free(p->tasks);
	free(p->names);
	kp->~knit_pool();
	free(kp);
}

// knit_pool_destroy in a fork child: free the child's copy of the host
// tables and close its copy of the eventfd, and nothing else. The shared
// region is only unmapped (our mapping; the parent's stays); no stop word,
// futex or thread is touched. Payload buffers of calls are not freed: the
// fork may have caught one changing hands (freed, pointer not cleared yet)
// in a thread that does not exist here, and a leak in the child beats a
// double free. The mutex is not destroyed (a parent thread may have held it
// at the fork). The bytes of completions handed out and never released,
// and their table, are freed as in the parent when mu was free at the fork:
// every change to the table is made under mu (owned_register_locked,
// release_owned), so it was whole; held, it may have been half-way through
// a realloc, and is left.
void pool_free_forked(knit_pool *kp)
{
	Pool *p = &kp->p;
	if (p->workers != nullptr)
		p->workers->forget(p);
	if (pthread_mutex_trylock(&p->mu) == 0) {
		for (uint32_t i = 0; i < p->owned_n; i++)
			free(p->owned[i].buf);
		free(p->owned);
		p->owned = nullptr;
		p->owned_n = p->owned_cap = p->owned_free = 0;
		pthread_mutex_unlock(&p->mu);
	}
	p->tickets.fini();
	p->heap.fini();
	info_fini(p);
	free(p->abort_in_use);
	for (uint32_t i = 0; i < p->nlanes; i++)
		free(p->lanes[i].local);
	free(p->lanes);
	pool_free_common(kp);
}

} // namespace

namespace {

uint64_t arena_capacity(const PoolConfig &cfg)
{
	return align_up(cfg.payload_max_bytes, kArenaGranule);
}

static_assert(kLineBytes == 2 * kBlock, "lane_tail_bytes (pool.h) counts a line as two blocks");

// lane_tail: each lane carries its tail (pool.h; an isolated process pool).
RegionPlan plan_region(const PoolConfig &cfg, bool line_spill, bool lane_tail, uint32_t nlanes,
		       uint32_t abort_words)
{
	RegionPlan r;
	const uint64_t cap = arena_capacity(cfg);
	r.line_off = line_area_off(nlanes);
	r.abort_off = align_up(r.line_off + (uint64_t)cfg.workers * kLineBytes, kBlock);
	uint64_t end = r.abort_off + (uint64_t)abort_words * 4;
	r.spill_off = 0;
	if (line_spill) {
		r.spill_off = line_spill_off(r.abort_off, abort_words);
		end = r.spill_off + (uint64_t)cfg.workers * line_spill_stride(cfg);
	}
	r.lanes_off = align_up(end, kArenaAlign);
	r.stride = lane_block_bytes(cap, cap) +
		   (lane_tail ? lane_tail_bytes(line_spill_stride(cfg)) : 0);
	r.total = r.lanes_off + (uint64_t)cfg.workers * r.stride;
	r.steal_off = 0;
	if (cfg.topology == KNIT_TOPOLOGY_STEAL) {
		r.steal_off = align_up(r.total, kArenaAlign);
		r.total = r.steal_off + steal_area_bytes(cap);
	}
	return r;
}

// Free every record's buffers, the completion queue's results, and the
// tables. Workers are joined; nothing else runs.
void free_host_state(Pool *p)
{
	if (p->tickets.capacity() != 0) {
		for (uint32_t i = 0; i < p->tickets.high(); i++) {
			Call *c = p->tickets.lookup(i);
			if (c == nullptr)
				continue;
			free(c->arg_buf);
			c->arg_buf = nullptr;
			free(c->result_buf);
			c->result_buf = nullptr;
		}
	}
	p->tickets.fini();
	p->heap.fini();
	info_fini(p);
	// Bytes of completions handed out and never released die with the pool.
	for (uint32_t i = 0; i < p->owned_n; i++)
		free(p->owned[i].buf);
	free(p->owned);
	p->owned = nullptr;
	p->owned_n = p->owned_cap = p->owned_free = 0;
	free(p->abort_in_use);
	p->abort_in_use = nullptr;
}

void pool_free(knit_pool *kp)
{
	Pool *p = &kp->p;
	if (p->workers != nullptr)
		p->workers->shutdown(p); // no worker is left after this
	free_host_state(p);
	if (p->lanes != nullptr) {
		for (uint32_t i = 0; i < p->nlanes; i++) {
			free(p->lanes[i].local);
			p->lanes[i].~Lane();
		}
		free(p->lanes);
	}
	pthread_mutex_destroy(&p->mu);
	pool_free_common(kp);
}

} // namespace

namespace {

// knit_pool_create's body: every failure returns its code with the
// calling thread's message recorded (src/error.h).
int pool_create(const knit_pool_options_t *opts, const knit_task_t *tasks, size_t ntasks,
		knit_pool_t **out)
{
	if (out == nullptr)
		return error_set(-KNIT_EINVAL, "out is NULL");
	*out = nullptr;
	PoolConfig cfg;
	int rc = options_resolve(opts, &cfg);
	if (rc != 0)
		return rc;
	// Thread pools take function pointers, process pools a task library
	// (options_resolve checked it is named) and no table here.
	const WorkerOps *ops = workers_for(cfg);
	rc = ops->check(tasks, ntasks);
	if (rc != 0)
		return rc;
	// options_resolve read only opts->size bytes; so do we.
	knit_pool_options_t popts;
	memset(&popts, 0, sizeof popts);
	if (opts != nullptr)
		memcpy(&popts, opts, opts->size);
	pthread_once(&g_atfork_once, register_atfork);
	if (g_atfork_rc != 0) // pthread_atfork fails only for want of memory
		return error_set(-KNIT_ENOMEM,
				 "out of memory for the fork handler (pthread_atfork)");

	void *mem = nullptr;
	if (posix_memalign(&mem, alignof(knit_pool), sizeof(knit_pool)) != 0)
		return error_set(-KNIT_ENOMEM, "out of memory for the pool (%zu bytes)",
				 sizeof(knit_pool));
	memset(mem, 0, sizeof(knit_pool));
	knit_pool *kp = new (mem) knit_pool();
	Pool *p = &kp->p;
	p->born_ns = knit_now_ns();
	p->cfg = cfg;
	p->ride_ok = !cfg.timing && cfg.hard_timeout_ms == 0;
	p->fork_gen = knit_load_relaxed_32(&g_fork_gen);
	p->efd = -1;
	p->tfd = -1;
	p->epfd = -1;
	p->region.fd = -1;
	p->workers = ops;
	pthread_mutex_init(&p->mu, nullptr);
	__cds_wfcq_init(&p->bq_head, &p->bq_tail);

	rc = ops->tasks(p, &popts, tasks, ntasks); // records its message
	if (rc != 0) {
		pool_free(kp);
		return rc;
	}

	p->nworkers = cfg.workers;
	p->nlanes = cfg.workers + (cfg.inline_lane != KNIT_INLINE_OFF ? 1 : 0);
	// Rotation: the inline lane first (FIRST) or last (LAST).
	uint32_t k = 0;
	if (cfg.inline_lane == KNIT_INLINE_FIRST)
		p->order[k++] = p->nworkers;
	for (uint32_t i = 0; i < p->nworkers; i++)
		p->order[k++] = i;
	if (cfg.inline_lane == KNIT_INLINE_LAST)
		p->order[k++] = p->nworkers;
	p->rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)p ^ (uint64_t)knit_now_ns();
	p->owned_salt = p->rng * 0xD6E8FEB86659FD93ull;

	// Tickets: every lane's in-flight slots plus the backlog bound; as many
	// again for carriers (src/calls.h riders: each takes a slot or a place
	// in the backlog), which count apart, so that the calls' bound stays
	// what knit_enqueue(3) says.
	const uint64_t cap = (uint64_t)p->nlanes * kLaneInflightMax + cfg.max_pending;
	if (p->tickets.init((uint32_t)cap, (uint32_t)cap) != 0 ||
	    p->heap.init((uint32_t)cap) != 0) {
		pool_free(kp);
		return error_set(-KNIT_ENOMEM, "out of memory for %llu call records",
				 (unsigned long long)cap);
	}
	if (info_init(p) != 0) {
		pool_free(kp);
		return error_set(-KNIT_ENOMEM, "out of memory for %u completion infos",
				 cfg.info_records);
	}
	p->abort_nwords = (cfg.abort_capacity + 31) / 32;
	p->abort_in_use = static_cast<uint32_t *>(calloc(p->abort_nwords ? p->abort_nwords : 1, 4));
	// Lane is 128-byte aligned (its host and worker halves): calloc's
	// alignment is not enough.
	void *lanes_mem = nullptr;
	if (posix_memalign(&lanes_mem, alignof(Lane), (size_t)p->nlanes * sizeof(Lane)) == 0)
		memset(lanes_mem, 0, (size_t)p->nlanes * sizeof(Lane));
	p->lanes = static_cast<Lane *>(lanes_mem);
	if (p->abort_in_use == nullptr || p->lanes == nullptr) {
		pool_free(kp);
		return error_set(-KNIT_ENOMEM, "out of memory for %u lanes", p->nlanes);
	}
	for (uint32_t i = 0; i < p->nlanes; i++) {
		new (&p->lanes[i]) Lane();
		p->lanes[i].pool = p;
		p->lanes[i].index = i;
		p->lanes[i].is_inline = i >= p->nworkers;
		p->lanes[i].cpu = -1;
	}

	const bool lane_tail = ops->isolated != nullptr && ops->isolated(&popts);
	RegionPlan plan = plan_region(cfg, ops->line_spill, lane_tail, p->nlanes, p->abort_nwords);
	plan.lane_tail = lane_tail;
	const char *what = "";
	rc = ops->region(p, &popts, plan, &what);
	if (rc != 0) {
		pool_free(kp);
		return error_set(rc, "cannot create the pool's shared memory (%llu bytes%s): %s",
				 (unsigned long long)plan.total, what, knit_strerror(rc));
	}
	uint8_t *base = p->region.base;
	p->db_seq = word_at(base, kPoolOffDoorbellSeq);
	p->db_armed = word_at(base, kPoolOffDoorbellArmed);
	p->abort_words = word_at(base, plan.abort_off);
	p->futex_shared = ops->futex_shared ? 1 : 0; // process workers share the futex words
	for (uint32_t i = 0; i < p->nlanes; i++) {
		Lane *l = &p->lanes[i];
		l->ext = lane_ext(p, i);
		l->peer_wakes = lane_counter(l->ext, kWcPeerWakes);
		if (l->is_inline)
			continue;
		uint8_t *block = base + plan.lanes_off + (uint64_t)i * plan.stride;
		l->line = base + plan.line_off + (uint64_t)i * kLineBytes;
		if (plan.spill_off != 0)
			l->line_spill_area =
				base + plan.spill_off + (uint64_t)i * line_spill_stride(cfg);
		if (plan.lane_tail) {
			// The lane's tail (pool.h): in the lane's own pages.
			uint8_t *tail =
				block + lane_block_bytes(arena_capacity(cfg), arena_capacity(cfg));
			l->ext = tail;
			l->peer_wakes = lane_counter(l->ext, kWcPeerWakes);
			l->line = tail + kLaneExtBytes;
			l->line_spill_area = tail + kLaneExtBytes + kLineBytes;
		}
		rc = lane_attach(p, l, block);
		if (rc != 0) {
			pool_free(kp);
			return error_set(rc, "cannot attach lane %u: %s", i, knit_strerror(rc));
		}
	}
	if (cfg.topology == KNIT_TOPOLOGY_STEAL) {
		rc = lanes_attach_steal(p, base + plan.steal_off);
		if (rc != 0) {
			pool_free(kp);
			return error_set(rc, "cannot attach the steal area: %s", knit_strerror(rc));
		}
	}

	rc = ops->start(p, &popts, plan); // records its message; leaves no worker on failure
	if (rc != 0) {
		pool_free(kp);
		return rc;
	}
	*out = kp;
	return 0;
}

} // namespace

extern "C" KNIT_API int knit_pool_create(const knit_pool_options_t *opts, const knit_task_t *tasks,
					 size_t ntasks, knit_pool_t **out) KNIT_NOEXCEPT
{
	// The library sets no errno (libknitting(7)): the failure paths' system
	// calls may, so the caller's value is put back.
	const int saved_errno = errno;
	error_clear();
	const int rc = pool_create(opts, tasks, ntasks, out);
	if (rc != 0 &&
	    !error_recorded()) // a path without its own message: the code's text at least
		error_set(rc, "%s", knit_strerror(rc));
	errno = saved_errno;
	return rc;
}

namespace {

bool drained_ready(Pool *p, void *) { return none_outstanding(p); }

// knit_stop's body, also knit_pool_destroy's first step. The pool closes
// (enqueue fails from now on), then: CANCEL completes every call with
// -KNIT_ECLOSED; DRAIN runs passes until every accepted call completed.
// Then every worker is asked to stop, and each one's acknowledgement is
// waited for (lane_stop_wait), all by the same deadline.
int pool_stop(Pool *p, uint32_t flags, int64_t timeout_ns)
{
	const int64_t deadline =
		timeout_ns < 0 ? -1 : deadline_after(knit_now_ns(), timeout_ns, -1);
	pthread_mutex_lock(&p->mu);
	knit_store_relaxed_32(&p->closed, 1);
	pthread_mutex_unlock(&p->mu);
	host_event(p, true); // waiters re-evaluate (enqueue is closed now)

	if (flags == KNIT_STOP_CANCEL) {
		cancel_all(p);
		line_cancel_all(p); // S8: after closed and host_event's fence
		backlog_drop_completed(p, deadline);
	} else if (!knit_load_relaxed_32(&p->workers_stopping)) {
		// DRAIN: run passes until every accepted call completed.
		if (!host_wait(p, drained_ready, nullptr, deadline, false))
			return -KNIT_ETIMEDOUT;
	}
	request_worker_stop(p);
	for (uint32_t i = 0; i < p->nworkers; i++)
		if (!lane_stop_wait(p, i, deadline))
			return -KNIT_ETIMEDOUT;
	host_event(p, true);
	return 0;
}

} // namespace

extern "C" KNIT_API int knit_stop(knit_pool_t *pool, uint32_t flags,
				  int64_t timeout_ns) KNIT_NOEXCEPT
{
	if (pool == nullptr)
		return -KNIT_EINVAL;
	if (in_task_of(&pool->p))
		return -KNIT_EBUSY; // it would wait for the task that asks
	if ((flags & ~(uint32_t)(KNIT_STOP_DRAIN | KNIT_STOP_CANCEL)) != 0 ||
	    flags == (KNIT_STOP_DRAIN | KNIT_STOP_CANCEL))
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p))
		return -KNIT_ECLOSED; // the stop words are the parent's workers'
	return pool_stop(p, flags, timeout_ns);
}

extern "C" KNIT_API int knit_pool_destroy(knit_pool_t *pool) KNIT_NOEXCEPT
{
	if (pool == nullptr)
		return -KNIT_EINVAL;
	Pool *p = &pool->p;
	if (pool_forked(p)) {
		pool_free_forked(pool);
		return 0;
	}
	if (in_task_of(p))
		return -KNIT_EBUSY; // it would wait for the task that asks
	// Cancel what is left and wait (without limit) for every acknowledgement:
	// a worker stuck in a task is waited for (threads cannot be killed).
	// Worker processes get kExitGraceNs, then pool_free kills what is left.
	pool_stop(p, KNIT_STOP_CANCEL, p->workers->destroy_stop_ns);
	p->workers->shutdown(p);
	line_free(p); // spills of cancelled line calls nobody took
	pool_free(pool);
	return 0;
}

extern "C" KNIT_API int knit_pool_task_id(const knit_pool_t *pool, const char *name) KNIT_NOEXCEPT
{
	if (pool == nullptr || name == nullptr)
		return -KNIT_EINVAL;
	const Pool *p = &pool->p;
	uint32_t lo = 0, hi = p->ntasks;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->tasks[mid].name, name);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -KNIT_ENOTASK;
}

extern "C" KNIT_API int knit_pool_stats(knit_pool_t *pool, knit_pool_stats_t *stats,
					size_t size) KNIT_NOEXCEPT
{
	error_clear(); // a recording entry (src/error.h)
	if (pool == nullptr || stats == nullptr)
		return error_set(-KNIT_EINVAL, "%s is NULL", pool == nullptr ? "pool" : "stats");
	if (size < offsetof(knit_pool_stats_t, lane) || size > sizeof(knit_pool_stats_t))
		return error_set(
			-KNIT_EVERSION,
			"size %zu is not a knit_pool_stats_t size this library knows (%zu..%zu)",
			size, offsetof(knit_pool_stats_t, lane), sizeof(knit_pool_stats_t));
	// The size field is checked like every other size field of the ABI, and
	// must agree with the argument (the caller's idea of the struct).
	if (stats->size < offsetof(knit_pool_stats_t, lane) ||
	    stats->size > sizeof(knit_pool_stats_t))
		return error_set(-KNIT_EVERSION,
				 "stats->size %u is not a knit_pool_stats_t size this library "
				 "knows (%zu..%zu; set it "
				 "to the size argument)",
				 stats->size, offsetof(knit_pool_stats_t, lane),
				 sizeof(knit_pool_stats_t));
	if (stats->size != size)
		return error_set(-KNIT_EINVAL, "stats->size %u differs from the size argument %zu",
				 stats->size, size);
	Pool *p = &pool->p;
	if (pool_forked(p)) // its counters are the parent's
		return error_set(-KNIT_ECLOSED,
				 "the pool was created before a fork: this process is the child");
	knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = (uint32_t)size;
	s.lanes = p->nlanes;
	s.topology = p->cfg.topology;
	s.workers = p->nworkers;
	uint64_t line_enq, line_done;
	line_stats(p, &line_enq, &line_done);
	s.enqueued = knit_load_relaxed_64(&p->st_enqueued) + line_enq;
	s.completed = knit_load_relaxed_64(&p->st_completed) + line_done;
	s.sync_calls = line_done;
	s.pending =
		knit_load_relaxed_64(&p->outstanding) + knit_load_relaxed_64(&p->line_outstanding);
	s.backlog = knit_load_relaxed_64(&p->backlog_count);
	s.backlog_high_water = knit_load_relaxed_64(&p->backlog_hw);
	s.doorbell_arms = knit_load_relaxed_64(&p->st_doorbell_arms);
	s.doorbell_wakes = knit_load_relaxed_64(&p->st_doorbell_wakes);
	s.inline_calls = knit_load_relaxed_64(&p->st_inline_calls);
	s.proto_errors = knit_load_relaxed_64(&p->st_proto_errors);
	s.late_drops = knit_load_relaxed_64(&p->st_late_drops);
	s.shared_calls = knit_load_relaxed_64(&p->st_shared_calls);
	s.shared_frames = knit_load_relaxed_64(&p->st_shared_frames);
	s.arena_committed_bytes = arena_committed_bytes(p);
	// The supervisor's view (knit_worker_stats_t): the lane's own count and
	// state; a worker thread lives as long as the pool. The kind fills in
	// the rest (a process's pid, memory, age; booting and retiring).
	const int64_t now = knit_now_ns();
	for (uint32_t i = 0; i < p->nworkers && i < KNIT_MAX_WORKERS; i++) {
		Lane *l = &p->lanes[i];
		knit_worker_stats_t &ws = s.worker[i];
		ws.calls = knit_load_relaxed_64(&l->served);
		ws.age_ns = (uint64_t)(now - p->born_ns);
		ws.state = lane_state(l) == kLaneRetired ? KNIT_WORKER_NONE : KNIT_WORKER_SERVING;
	}
	p->workers->stats(p, &s);
	s.backlogged = knit_load_relaxed_64(&p->st_backlogged);
	s.class_enqueued[0] = knit_load_relaxed_64(&p->st_class_enqueued[0]);
	s.class_enqueued[2] = knit_load_relaxed_64(&p->st_class_enqueued[1]);
	// Read apart, relaxed: a call counted in its class after our read of
	// enqueued must not make normal wrap.
	const uint64_t hl = s.class_enqueued[0] + s.class_enqueued[2];
	s.class_enqueued[1] = s.enqueued > hl ? s.enqueued - hl : 0;
	for (uint32_t k = 0; k < kClasses; k++)
		s.class_backlogged[k] = knit_load_relaxed_64(&p->st_class_backlogged[k]);
	for (uint32_t i = 0; i < p->nlanes; i++) {
		Lane *l = &p->lanes[i];
		knit_lane_stats_t &ls = s.lane[i];
		if (l->is_inline) {
			ls.cpu = -1;
			ls.calls = s.inline_calls;
			continue;
		}
		ls.calls = knit_load_relaxed_64(lane_counter(l->ext, kWcCalls));
		ls.parks = knit_load_relaxed_64(lane_counter(l->ext, kWcParks));
		ls.wakes_sent =
			knit_load_relaxed_64(&l->wakes_sent) + knit_load_relaxed_64(l->peer_wakes);
		ls.wakes_received = knit_load_relaxed_64(lane_counter(l->ext, kWcWakesReceived));
		ls.watchdog_expiries = knit_load_relaxed_64(lane_counter(l->ext, kWcWatchdog));
		ls.spins = knit_load_relaxed_64(lane_counter(l->ext, kWcSpins));
		ls.doorbell_rings = knit_load_relaxed_64(lane_counter(l->ext, kWcDoorbellRings));
		ls.steal_claims = knit_load_relaxed_64(lane_counter(l->ext, kWcStealClaims));
		ls.steal_conflicts = knit_load_relaxed_64(lane_counter(l->ext, kWcStealConflicts));
		ls.spurious_wakes = knit_load_relaxed_64(lane_counter(l->ext, kWcSpurious));
		ls.arena_trims = l->req.arena_trims() + l->wret.arena_trims();
		ls.cpu = l->cpu;
	}
	memcpy(stats, &s, size);
	return 0;
}
