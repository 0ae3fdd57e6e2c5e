// SPDX-License-Identifier: MIT
// src/pool.cpp - pool creation and destruction, the task table, statistics.
//
// knit_pool_create validates everything first (options, tasks), then builds
// the pool in one direction with a single undo path: the task table sorted
// by name, the shared region (one anonymous shared mapping, lazily
// committed) carved into the pool header and the lane blocks, the lock
// endpoints of both sides, the host tables, and last the worker threads. A
// failure at any step undoes every step before it.
#include "src/common.h"

#include <errno.h>
#include <new>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include "src/error.h"
#include "src/pool.h"
#include "src/syncline.h"
#include "src/proc.h"

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
// at the fork).
void pool_free_forked(knit_pool *kp)
{
	Pool *p = &kp->p;
	proc_forget(p);
	p->tickets.fini();
	p->heap.fini();
	free(p->abort_in_use);
	for (uint32_t i = 0; i < p->nlanes; i++)
		free(p->lanes[i].local);
	free(p->lanes);
	pool_free_common(kp);
}

int cmp_task(const void *a, const void *b)
{
	return strcmp(static_cast<const TaskEntry *>(a)->name, static_cast<const TaskEntry *>(b)->name);
}

// Copy, validate and sort the task table. Names are copied into one block.
int build_tasks(Pool *p, const knit_task_t *tasks, size_t ntasks)
{
	size_t bytes = 0;
	for (size_t i = 0; i < ntasks; i++) {
		const knit_task_t &t = tasks[i];
		if (t.name == nullptr || t.name[0] == '\0')
			return error_set(-KNIT_EINVAL, "task %zu has %s name", i, t.name == nullptr ? "a NULL" : "an empty");
		if (t.fn == nullptr)
			return error_set(-KNIT_EINVAL, "task %zu (\"%.200s\") has a NULL fn", i, t.name);
		if ((t.flags & ~(uint32_t)KNIT_TASK_ABORTABLE) != 0)
			return error_set(-KNIT_EINVAL, "task %zu (\"%.200s\") has unknown flags 0x%x", i, t.name, t.flags);
		// Reserved members must be zero, so a program that sets one a
		// later release defines is refused here, not silently ignored.
		if (t.reserved[0] != 0 || t.reserved[1] != 0)
			return error_set(-KNIT_EINVAL, "task %zu (\"%.200s\") has a reserved member that is not 0", i,
					 t.name);
		bytes += strlen(t.name) + 1;
	}
	p->tasks = static_cast<TaskEntry *>(calloc(ntasks, sizeof(TaskEntry)));
	p->names = static_cast<char *>(malloc(bytes));
	if (p->tasks == nullptr || p->names == nullptr)
		return error_set(-KNIT_ENOMEM, "out of memory for the task table (%zu tasks)", ntasks);
	char *w = p->names;
	for (size_t i = 0; i < ntasks; i++) {
		size_t n = strlen(tasks[i].name) + 1;
		memcpy(w, tasks[i].name, n);
		p->tasks[i].name = w;
		p->tasks[i].fn = tasks[i].fn;
		p->tasks[i].data = tasks[i].data;
		p->tasks[i].timeout_ms = tasks[i].timeout_ms;
		p->tasks[i].flags = tasks[i].flags;
		w += n;
	}
	// Ids identify, names order: the id is the index in strcmp order, so it
	// does not depend on the order the caller listed the tasks in.
	qsort(p->tasks, ntasks, sizeof(TaskEntry), cmp_task);
	for (size_t i = 1; i < ntasks; i++)
		if (strcmp(p->tasks[i - 1].name, p->tasks[i].name) == 0)
			return error_set(-KNIT_EINVAL, "two tasks are named \"%.200s\"", p->tasks[i].name);
	p->ntasks = (uint32_t)ntasks;
	return 0;
}

} // namespace

int knit::detail::pool_build_tasks(Pool *p, const knit_task_t *tasks, size_t ntasks)
{
	return build_tasks(p, tasks, ntasks);
}

namespace {

uint64_t arena_capacity(const PoolConfig &cfg) { return align_up(cfg.payload_max_bytes, kArenaGranule); }

struct RegionPlan {
	uint64_t line_off; // the worker lanes' lines (src/syncline.h)
	uint64_t abort_off;
	uint64_t spill_off; // process pools: the lines' spill slots (src/syncline.h), else 0
	uint64_t lanes_off;
	uint64_t stride;
	uint64_t steal_off; // steal topology: the steal area (steal.h), else 0
	uint64_t total;
};

static_assert(kLineBytes == 2 * kBlock, "lane_tail_bytes (pool.h) counts a line as two blocks");

// isolated: a process pool whose lanes each carry their tail (pool.h).
RegionPlan plan_region(const PoolConfig &cfg, uint32_t nlanes, uint32_t abort_words, bool isolated)
{
	RegionPlan r;
	const uint64_t cap = arena_capacity(cfg);
	r.line_off = line_area_off(nlanes);
	r.abort_off = align_up(r.line_off + (uint64_t)cfg.workers * kLineBytes, kBlock);
	uint64_t end = r.abort_off + (uint64_t)abort_words * 4;
	r.spill_off = 0;
	if (cfg.processes) {
		r.spill_off = line_spill_off(r.abort_off, abort_words);
		end = r.spill_off + (uint64_t)cfg.workers * line_spill_stride(cfg);
	}
	r.lanes_off = align_up(end, kArenaAlign);
	r.stride = lane_block_bytes(cap, cap) + (isolated ? lane_tail_bytes(line_spill_stride(cfg)) : 0);
	r.total = r.lanes_off + (uint64_t)cfg.workers * r.stride;
	r.steal_off = 0;
	if (cfg.topology == KNIT_TOPOLOGY_STEAL) {
		r.steal_off = align_up(r.total, kArenaAlign);
		r.total = r.steal_off + steal_area_bytes(cap);
	}
	return r;
}

// Commit the first `bytes` of an arena now (payload_initial_bytes): one write
// per page, so the pages exist before the first call needs them.
void prefault(uint8_t *base, uint64_t bytes)
{
	const uint64_t page = region_page_size();
	for (uint64_t off = 0; off < bytes; off += page)
		__atomic_store_n(base + off, (uint8_t)0, __ATOMIC_RELAXED);
}

// Attach the host producer and every worker's consumer to the steal area at
// `area` (4096-aligned, steal_area_bytes(arena_cap) bytes of the pool
// region). Returns 0 or -KNIT_ESYSTEM.
int steal_attach(Pool *p, uint8_t *area, uint64_t arena_cap)
{
	StealHost &s = p->steal;
	s.ctl = area;
	s.lock = area + kStealLockOff;
	uint8_t *arena = s.lock + lock_arena_offset();
	prefault(arena, min_of(p->cfg.payload_initial_bytes, arena_cap));
	ArenaShared sh = steal_submit_arena(s.ctl, s.lock, arena_cap);
	if (s.req.attach_steal(s.lock, sh, p->cfg.max_payload_bytes, s.ctl, p->nworkers) != 0)
		return -KNIT_ESYSTEM; // geometry we computed ourselves: cannot happen
	ConsumerLimits wl = {p->ntasks, p->tickets.capacity(), kReqFlagsMask};
	for (uint32_t i = 0; i < p->nworkers; i++) {
		if (p->lanes[i].sc.attach(s.lock, sh, wl, s.ctl, p->nworkers, i, p->cfg.steal_g) != 0)
			return -KNIT_ESYSTEM;
		// One call per claim: a worker never holds calls it has not
		// started (steal.h, claim size).
		p->lanes[i].sc.set_take_max(1);
		p->lanes[i].sc.set_stop_word(p->lanes[i].stop);
		// Its signal words are the control block's (layout.h): a
		// worker process's peers wake it without mapping its lane.
		p->lanes[i].wake_seq = word_at(s.ctl, steal_wake_offset(i));
		p->lanes[i].parked = word_at(s.ctl, steal_parked_offset(i));
		p->lanes[i].peer_wakes = reinterpret_cast<uint64_t *>(s.ctl + steal_peerw_offset(i));
	}
	s.staged = 0;
	s.wake_cursor = 0;
	s.unclaimed = 0;
	for (uint32_t i = 0; i < kMaxStealConsumers; i++)
		s.ack_seen[i] = 0; // a fresh control block: every ACK is 0
	s.on = true;
	return 0;
}

int attach_lane(Pool *p, Lane *l, uint8_t *block)
{
	const uint64_t cap = arena_capacity(p->cfg);
	l->block = block;
	l->wake_seq = word_at(block, kLaneOffWake);
	l->parked = word_at(block, kLaneOffParked);
	l->stop = word_at(block, kLaneOffStop);
	uint8_t *req_lock = block + kLaneOffReqLock;
	uint8_t *ret_lock = block + kLaneOffRetLock;
	uint8_t *req_arena = block + lane_req_arena_offset();
	uint8_t *ret_arena = block + lane_ret_arena_offset(cap);
	if (p->cfg.topology != KNIT_TOPOLOGY_STEAL) // stealing: requests use the submit lock
		prefault(req_arena, min_of(p->cfg.payload_initial_bytes, cap));
	prefault(ret_arena, min_of(p->cfg.payload_initial_bytes, cap));
	ArenaShared req_sh = lock_arena_shared(req_lock, req_arena, cap);
	ArenaShared ret_sh = lock_arena_shared(ret_lock, ret_arena, cap);
	const uint64_t per_call = p->cfg.max_payload_bytes;
	ConsumerLimits wl = {p->ntasks, p->tickets.capacity(), kReqFlagsMask};
	ConsumerLimits hl = {p->ntasks, p->tickets.capacity(), 0};
	int rc = l->req.attach(req_lock, req_sh, per_call);
	if (rc == 0)
		rc = l->wreq.attach(req_lock, req_sh, wl);
	if (rc == 0)
		rc = l->wret.attach(ret_lock, ret_sh, per_call);
	if (rc == 0)
		rc = l->ret.attach(ret_lock, ret_sh, hl);
	if (rc != 0)
		return -KNIT_ESYSTEM; // geometry we computed ourselves: cannot happen
	l->local = static_cast<WorkerLocal *>(calloc(1, sizeof(WorkerLocal)));
	return l->local ? 0 : -KNIT_ENOMEM;
}

// Worker i's CPU set under the placement options, and the one CPU it is
// pinned to (-1 when the set has more than one).
int32_t worker_cpus(const PoolConfig &cfg, uint32_t i, cpu_set_t *set)
{
	CPU_ZERO(set);
	uint32_t n = 0, last = 0;
	for (uint32_t c = 0; c < KNIT_CPU_MASK_WORDS * 64; c++)
		if ((cfg.cpu_mask[c / 64] >> (c % 64)) & 1)
			n++, last = c;
	if (!cfg.one_per_worker) {
		for (uint32_t c = 0; c < KNIT_CPU_MASK_WORDS * 64; c++)
			if ((cfg.cpu_mask[c / 64] >> (c % 64)) & 1)
				CPU_SET(c, set);
		return n == 1 ? (int32_t)last : -1;
	}
	uint32_t want = i % n; // n > 0: options_resolve refuses the flag on an empty mask
	for (uint32_t c = 0; c < KNIT_CPU_MASK_WORDS * 64; c++)
		if (((cfg.cpu_mask[c / 64] >> (c % 64)) & 1) && want-- == 0) {
			CPU_SET(c, set);
			return (int32_t)c;
		}
	return -1; // not reached
}

// Start worker i, placed as asked. glibc applies an attribute's affinity to
// the new thread before it runs its start routine, and fails the create when
// the kernel refuses every CPU; the kernel silently drops the CPUs the
// process may not use from a wider set, so the set is read back and must be
// exactly what was asked. 0, -KNIT_EINVAL (a CPU the process may not use;
// the thread, if started, is left for the caller to stop) or -KNIT_ESYSTEM,
// the message recorded (src/error.h).
int start_worker(Pool *p, Lane *l)
{
	if (!p->cfg.place) {
		const int e = pthread_create(&l->thread, nullptr, worker_main, l);
		return e == 0 ? 0 : error_set_errno(-KNIT_ESYSTEM, e, "cannot start worker thread %u", l->index);
	}
	cpu_set_t want, got;
	l->cpu = worker_cpus(p->cfg, l->index, &want);
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return error_set(-KNIT_ESYSTEM, "cannot start worker thread %u: pthread_attr_init", l->index);
	int e = pthread_attr_setaffinity_np(&attr, sizeof want, &want);
	if (e == 0)
		e = pthread_create(&l->thread, &attr, worker_main, l);
	pthread_attr_destroy(&attr);
	if (e == EINVAL)
		return error_set(-KNIT_EINVAL, "cpu_mask: no CPU of worker %u's set is one the process may use",
				 l->index);
	if (e != 0)
		return error_set_errno(-KNIT_ESYSTEM, e, "cannot start worker thread %u", l->index);
	l->started = true;
	if (pthread_getaffinity_np(l->thread, sizeof got, &got) != 0)
		return error_set(-KNIT_ESYSTEM, "cannot read worker thread %u's CPU affinity back", l->index);
	return CPU_EQUAL(&want, &got)
		       ? 0
		       : error_set(-KNIT_EINVAL, "cpu_mask: a CPU of worker %u's set is one the process may not use",
				   l->index);
}

// Start every worker thread with all async signals blocked (signals belong
// to the application's threads). Returns 0, -KNIT_EINVAL (placement) or
// -KNIT_ESYSTEM.
int start_workers(Pool *p)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = 0;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		rc = start_worker(p, l);
		if (rc != 0)
			break;
		l->started = true;
		char name[16] = "knit-w";
		// i < KNIT_MAX_WORKERS: at most two digits.
		if (i >= 10)
			name[6] = (char)('0' + i / 10), name[7] = (char)('0' + i % 10), name[8] = 0;
		else
			name[6] = (char)('0' + i), name[7] = 0;
		pthread_setname_np(l->thread, name);
	}
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	return rc;
}

void join_workers(Pool *p)
{
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (l->started) {
			pthread_join(l->thread, nullptr);
			l->started = false;
		}
	}
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
	proc_shutdown(p); // process pools: no child is left after this
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

int32_t knit::detail::pool_worker_cpus(const PoolConfig &cfg, uint32_t i, cpu_set_t *set)
{
	return worker_cpus(cfg, i, set);
}

namespace {

// knit_pool_create's body: every failure returns its code with the
// calling thread's message recorded (src/error.h).
int pool_create(const knit_pool_options_t *opts, const knit_task_t *tasks, size_t ntasks, knit_pool_t **out)
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
	if (cfg.processes && (tasks != nullptr || ntasks != 0))
		return error_set(-KNIT_EINVAL, "process workers take their tasks from task_library: tasks must be "
					       "NULL and ntasks 0 (they are %s and %zu)",
				 tasks != nullptr ? "set" : "NULL", ntasks);
	if (!cfg.processes && (tasks == nullptr || ntasks == 0 || ntasks > 65535))
		return error_set(-KNIT_EINVAL, "thread workers need a task table: tasks is %s, ntasks %zu (1..65535)",
				 tasks != nullptr ? "set" : "NULL", ntasks);
	// options_resolve read only opts->size bytes; so do we.
	knit_pool_options_t popts;
	memset(&popts, 0, sizeof popts);
	if (cfg.processes)
		memcpy(&popts, opts, opts->size);
	pthread_once(&g_atfork_once, register_atfork);
	if (g_atfork_rc != 0) // pthread_atfork fails only for want of memory
		return error_set(-KNIT_ENOMEM, "out of memory for the fork handler (pthread_atfork)");

	void *mem = nullptr;
	if (posix_memalign(&mem, alignof(knit_pool), sizeof(knit_pool)) != 0)
		return error_set(-KNIT_ENOMEM, "out of memory for the pool (%zu bytes)", sizeof(knit_pool));
	memset(mem, 0, sizeof(knit_pool));
	knit_pool *kp = new (mem) knit_pool();
	Pool *p = &kp->p;
	p->cfg = cfg;
	p->fork_gen = knit_load_relaxed_32(&g_fork_gen);
	p->efd = -1;
	p->tfd = -1;
	p->epfd = -1;
	p->region.fd = -1;
	pthread_mutex_init(&p->mu, nullptr);
	__cds_wfcq_init(&p->bq_head, &p->bq_tail);

	if (cfg.processes) {
		void *dl = nullptr;
		rc = proc_load_tasks(p, popts.task_library, &dl); // records its message
		if (rc == 0 && (rc = proc_host_new(p, dl)) != 0) // owns dl from here on
			error_set(rc, "out of memory for the process pool's host state");
	} else {
		rc = build_tasks(p, tasks, ntasks);
	}
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

	// Tickets: every lane's in-flight slots plus the backlog bound.
	const uint64_t cap = (uint64_t)p->nlanes * kLaneInflightMax + cfg.max_pending;
	if (p->tickets.init((uint32_t)cap) != 0 || p->heap.init((uint32_t)cap) != 0) {
		pool_free(kp);
		return error_set(-KNIT_ENOMEM, "out of memory for %llu call records", (unsigned long long)cap);
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

	const bool named = cfg.processes && (popts.proc_flags & KNIT_PROC_NAMED_SHM) != 0;
	const bool isolated = cfg.processes && proc_isolation_possible(named);
	RegionPlan plan = plan_region(cfg, p->nlanes, p->abort_nwords, isolated);
	if (named)
		rc = proc_region_create_named(p, plan.total); // unlinked by proc_shutdown
	else
		rc = region_create(cfg.processes ? RegionKind::kMemfd : RegionKind::kAnonymous, plan.total,
				   "knitting", &p->region, !isolated); // isolated: sealed read-only below
	if (rc == 0 && isolated)
		rc = proc_isolate(p, plan.lanes_off, plan.stride, plan.steal_off);
	if (rc != 0) {
		pool_free(kp);
		return error_set(rc, "cannot create the pool's shared memory (%llu bytes%s): %s",
				 (unsigned long long)plan.total,
				 cfg.processes && (popts.proc_flags & KNIT_PROC_NAMED_SHM) != 0 ? ", a named shm object"
				 : cfg.processes							  ? ", a memfd"
													  : "",
				 knit_strerror(rc));
	}
	uint8_t *base = p->region.base;
	p->db_seq = word_at(base, kPoolOffDoorbellSeq);
	p->db_armed = word_at(base, kPoolOffDoorbellArmed);
	p->abort_words = word_at(base, plan.abort_off);
	p->futex_shared = cfg.processes ? 1 : 0; // process workers share the futex words
	for (uint32_t i = 0; i < p->nlanes; i++) {
		Lane *l = &p->lanes[i];
		l->ext = lane_ext(p, i);
		l->peer_wakes = lane_counter(l->ext, kWcPeerWakes);
		if (l->is_inline)
			continue;
		uint8_t *block = base + plan.lanes_off + (uint64_t)i * plan.stride;
		l->line = base + plan.line_off + (uint64_t)i * kLineBytes;
		if (cfg.processes)
			l->line_spill_area = base + plan.spill_off + (uint64_t)i * line_spill_stride(cfg);
		if (isolated) {
			// The lane's tail (pool.h): in the lane's own pages.
			uint8_t *tail = block + lane_block_bytes(arena_capacity(cfg), arena_capacity(cfg));
			l->ext = tail;
			l->peer_wakes = lane_counter(l->ext, kWcPeerWakes);
			l->line = tail + kLaneExtBytes;
			l->line_spill_area = tail + kLaneExtBytes + kLineBytes;
		}
		rc = attach_lane(p, l, block);
		if (rc != 0) {
			pool_free(kp);
			return error_set(rc, "cannot attach lane %u: %s", i, knit_strerror(rc));
		}
	}
	if (cfg.topology == KNIT_TOPOLOGY_STEAL) {
		rc = steal_attach(p, base + plan.steal_off, arena_capacity(cfg));
		if (rc != 0) {
			pool_free(kp);
			return error_set(rc, "cannot attach the steal area: %s", knit_strerror(rc));
		}
	}

	if (cfg.processes) {
		// Both record their message (src/proc.h).
		rc = proc_prepare(p, &popts, cfg, p->region.size, plan.lanes_off, plan.stride, plan.abort_off,
				  plan.steal_off);
		if (rc == 0)
			rc = proc_start(p);
		if (rc != 0) {
			pool_free(kp);
			return rc;
		}
		*out = kp;
		return 0;
	}
	rc = start_workers(p); // records its message
	if (rc != 0) {
		// Stop the workers already running (they see REQUESTED and leave).
		request_worker_stop(p);
		join_workers(p);
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
	if (rc != 0 && !error_recorded()) // a path without its own message: the code's text at least
		error_set(rc, "%s", knit_strerror(rc));
	errno = saved_errno;
	return rc;
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
	// Cancel what is left and wait (without limit) for every acknowledgement:
	// a worker stuck in a task is waited for (threads cannot be killed).
	// Worker processes get kExitGraceNs, then pool_free kills what is left.
	knit_stop(pool, KNIT_STOP_CANCEL, p->proc != nullptr ? kExitGraceNs : -1);
	join_workers(p);
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

extern "C" KNIT_API int knit_pool_stats(knit_pool_t *pool, knit_pool_stats_t *stats, size_t size) KNIT_NOEXCEPT
{
	error_clear(); // a recording entry (src/error.h)
	if (pool == nullptr || stats == nullptr)
		return error_set(-KNIT_EINVAL, "%s is NULL", pool == nullptr ? "pool" : "stats");
	if (size < offsetof(knit_pool_stats_t, lane) || size > sizeof(knit_pool_stats_t))
		return error_set(-KNIT_EVERSION, "size %zu is not a knit_pool_stats_t size this library knows (%zu..%zu)",
				 size, offsetof(knit_pool_stats_t, lane), sizeof(knit_pool_stats_t));
	// The size field is checked like every other size field of the ABI, and
	// must agree with the argument (the caller's idea of the struct).
	if (stats->size < offsetof(knit_pool_stats_t, lane) || stats->size > sizeof(knit_pool_stats_t))
		return error_set(-KNIT_EVERSION,
				 "stats->size %u is not a knit_pool_stats_t size this library knows (%zu..%zu; set it "
				 "to the size argument)",
				 stats->size, offsetof(knit_pool_stats_t, lane), sizeof(knit_pool_stats_t));
	if (stats->size != size)
		return error_set(-KNIT_EINVAL, "stats->size %u differs from the size argument %zu", stats->size, size);
	Pool *p = &pool->p;
	if (pool_forked(p)) // its counters are the parent's
		return error_set(-KNIT_ECLOSED, "the pool was created before a fork: this process is the child");
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
	s.pending = knit_load_relaxed_64(&p->outstanding) + knit_load_relaxed_64(&p->line_outstanding);
	s.backlog = knit_load_relaxed_64(&p->backlog_count);
	s.backlog_high_water = knit_load_relaxed_64(&p->backlog_hw);
	s.doorbell_arms = knit_load_relaxed_64(&p->st_doorbell_arms);
	s.doorbell_wakes = knit_load_relaxed_64(&p->st_doorbell_wakes);
	s.inline_calls = knit_load_relaxed_64(&p->st_inline_calls);
	s.proto_errors = knit_load_relaxed_64(&p->st_proto_errors);
	s.late_drops = knit_load_relaxed_64(&p->st_late_drops);
	s.arena_committed_bytes = arena_committed_bytes(p);
	proc_stats(p, &s.spawns, &s.crashes, &s.respawns, &s.hard_kills);
	s.backlogged = knit_load_relaxed_64(&p->st_backlogged);
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
		ls.wakes_sent = knit_load_relaxed_64(&l->wakes_sent) +
		                knit_load_relaxed_64(l->peer_wakes);
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
