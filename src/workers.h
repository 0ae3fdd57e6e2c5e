// SPDX-License-Identifier: MIT
// src/workers.h - the seam between the pool and its kind of workers: one
// table of operations per kind (threads: src/workers_thread.cpp; processes:
// src/proc.cpp), chosen once at knit_pool_create (workers_for) and reached
// through Pool::workers, so that no other room asks which kind it serves.
// What a kind changes in a protocol stays where it bites, as a property of
// the pool or the lane that the backend sets: Lane::rerun (src/lane.h),
// Pool::rings and Pool::untrusted_workers (src/wake.h), the lines' spill
// slots (line_spill below, src/syncline.h), Pool::futex_shared.
//
// A worker's life as the rooms see it: start (every worker of the pool),
// then per lane distrust or hard_kill (the dispatcher's holder asks; the
// kind ends the worker, and its loss reaches lane_lost, src/lane.h), then
// knit_stop's lane_stop_wait for each lane, then shutdown.
#ifndef KNIT_SRC_WORKERS_H
#define KNIT_SRC_WORKERS_H

#include "src/common.h"

#include "knitting.h"
#include "src/runtime.h"

namespace knit::detail {

// Where knit_pool_create put the parts of the shared region (src/pool.cpp
// plan_region): what a worker process needs to map its view of it.
struct RegionPlan {
	uint64_t line_off; // the worker lanes' lines (src/syncline.h)
	uint64_t abort_off;
	uint64_t spill_off; // with WorkerOps::line_spill: the lines' spill slots, else 0
	uint64_t lanes_off;
	uint64_t stride;
	uint64_t steal_off; // steal topology: the steal area (steal.h), else 0
	uint64_t total;
	bool lane_tail; // each lane's stride ends in its tail (src/pool.h: an isolated
			// process pool's extension, line and spill slot)
};

struct WorkerOps {
	// knit_pool_create, before anything is built: are (tasks, ntasks)
	// what this kind takes? 0 or -KNIT_EINVAL, the message recorded.
	int (*check)(const knit_task_t *tasks, size_t ntasks);
	// Build p's task table: the caller's (threads), or the task library's
	// (processes: also makes the backend's host state). 0 or the create's
	// code, the message recorded.
	int (*tasks)(Pool *p, const knit_pool_options_t *opts, const knit_task_t *tasks,
		     size_t ntasks);
	// Does this kind isolate its workers' memory (src/proc.h,
	// "isolation"), so that each lane carries its tail? nullptr: never.
	bool (*isolated)(const knit_pool_options_t *opts);
	// Create the shared region (plan.total bytes) into p->region, laid
	// out as planned. 0 or what region_create returns; *what: how it was
	// made, for the message.
	int (*region)(Pool *p, const knit_pool_options_t *opts, const RegionPlan &plan,
		      const char **what);
	// Start every worker (the lanes attached). 0 or the create's code, the
	// message recorded; on failure no worker is left running.
	int (*start)(Pool *p, const knit_pool_options_t *opts, const RegionPlan &plan);
	// knit_stop's wait for worker w (lane_stop_wait, src/lane.h), when w's
	// stop word reads neither REQUESTED nor ACKNOWLEDGED: a worker that may
	// rewrite its stop word is checked (and killed; its lane_lost then
	// acknowledges); and at each look while w's lane is DOWN (no worker
	// now: one backing off gets its stop acknowledged on its behalf).
	// nullptr: the kind's workers cannot write it wrongly, nor go DOWN.
	void (*stop_check)(Pool *p, uint32_t w);
	// Dispatcher holder: worker w is not to be trusted any more
	// (lane_distrust, src/lane.h). Idempotent.
	void (*distrust)(Pool *p, uint32_t w);
	// Dispatcher holder: worker w ran a call past the hard timeout (that
	// call is completed). True when the kind ends that worker alone (a
	// process is killed, its lane recovered); false when it cannot (a
	// thread): the caller force-stops the pool.
	bool (*hard_kill)(Pool *p, uint32_t w);
	// knit_pool_destroy (after knit_stop) and every failed create: no
	// worker is left after it; frees the backend's state. Idempotent.
	void (*shutdown)(Pool *p);
	// knit_pool_destroy in a child of fork(2): free the backend's state,
	// signal and wait for nothing (the workers are the parent's).
	void (*forget)(Pool *p);
	// knit_pool_stats: the kind's own counters (spawns, crashes, ...) and
	// its view of each worker (s->worker[], filled for threads before).
	void (*stats)(Pool *p, knit_pool_stats_t *s);
	// knit_completion_fd made the fd (after its release store of efd_on).
	void (*completion_fd_on)(Pool *p);
	// lane_stop_wait looks at the stop word again at least this often
	// (ns; -1: only when woken): a worker that may change it with no wake.
	int64_t stop_poll_ns;
	// knit_pool_destroy's bound on knit_stop (-1: none; a thread stuck in
	// a task is waited for, it cannot be killed).
	int64_t destroy_stop_ns;
	// Each line gets a spill slot in the region for a result too big for
	// its reply block (src/syncline.h): a worker process cannot hand the
	// host memory of its own.
	bool line_spill;
	// The workers share the region's futex words across processes.
	bool futex_shared;
	// Any thread: the pid of worker w's process now (relaxed; 0 while it
	// has none, and for a thread: completion infos, src/info.h).
	int32_t (*pid)(Pool *p, uint32_t w);
	// knit_cancel(KNIT_CANCEL_KILL), holding mu, for the call (ticket
	// index, generation) it completes before releasing mu: have the worker
	// that runs it, if any, killed and replaced. 0 or -KNIT_EAGAIN (too
	// many kills pending; nothing asked). nullptr: the kind cannot kill
	// one worker (threads): the flag is -KNIT_EINVAL.
	int (*cancel_kill)(Pool *p, uint32_t index, uint32_t gen);
	// Why the pool failed (after an acquire load of Pool::failed that read
	// 1), for knit_last_error(). nullptr: the kind never fails a pool.
	const char *(*failed_why)(Pool *p);
	// Lane w's worker served recycle_calls (lane_served; the holder or a
	// line's claim holder, once per worker): recycle it. Must not block.
	// nullptr: the kind does not recycle (options refuse the marks).
	void (*retire_due)(Pool *p, uint32_t w);
};

extern const WorkerOps kThreadWorkers; // src/workers_thread.cpp
extern const WorkerOps kProcWorkers;   // src/proc.cpp

// The table of cfg's kind: the one place that asks.
inline const WorkerOps *workers_for(const PoolConfig &cfg)
{
	return cfg.processes ? &kProcWorkers : &kThreadWorkers;
}

// Worker i's CPU set under cfg's placement (cpu_mask, one_per_worker), and
// the one CPU it is pinned to (-1 when the set has more than one). Thread
// workers are started with it; a worker process places itself with it.
int32_t worker_cpus(const PoolConfig &cfg, uint32_t i, cpu_set_t *set);

} // namespace knit::detail

#endif
