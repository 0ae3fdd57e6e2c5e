// SPDX-License-Identifier: MIT
// src/workers_thread.cpp - the thread backend of the worker seam
// (src/workers.h): each worker lane's worker is a thread of this process,
// started placed as the options ask, joined at destroy. A worker thread
// cannot be killed: distrusting one asks it to stop (its lane retires once
// it acknowledged: dispatch_pass, lane_lost), and a call past the hard
// timeout stops the whole pool.
#include "src/common.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>

#include "src/error.h"
#include "src/lane.h"
#include "src/task.h"
#include "src/wake.h"
#include "src/workers.h"

namespace knit::detail {

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

namespace {

// Worker i's name, knit-wI (i < KNIT_MAX_WORKERS: two digits at most).
void worker_name(uint32_t i, char name[16])
{
	memcpy(name, "knit-w", 6);
	if (i >= 10)
		name[6] = (char)('0' + i / 10), name[7] = (char)('0' + i % 10), name[8] = 0;
	else
		name[6] = (char)('0' + i), name[7] = 0;
}

// A worker thread's whole life: the options' start hook, the worker loop
// (src/worker.cpp) until it acknowledged its stop, the stop hook. The pool
// outlives the thread (it is freed only after the join).
void *thread_main(void *arg)
{
	Lane *l = static_cast<Lane *>(arg);
	Pool *p = l->pool;
	// Our documented name first (knit_pool_create(3)), so that the start
	// hook already runs under it. index < KNIT_MAX_WORKERS: two digits.
	char name[16];
	worker_name(l->index, name);
	pthread_setname_np(pthread_self(), name);
	if (p->thread_start_hook != nullptr)
		p->thread_start_hook(p->thread_hook_arg, l->index);
	worker_main(l);
	if (p->thread_stop_hook != nullptr)
		p->thread_stop_hook(p->thread_hook_arg, l->index);
	return nullptr;
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
		const int e = pthread_create(&l->thread, nullptr, thread_main, l);
		return e == 0 ? 0
			      : error_set_errno(-KNIT_ESYSTEM, e, "cannot start worker thread %u",
						l->index);
	}
	cpu_set_t want, got;
	l->cpu = worker_cpus(p->cfg, l->index, &want);
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return error_set(-KNIT_ESYSTEM, "cannot start worker thread %u: pthread_attr_init",
				 l->index);
	int e = pthread_attr_setaffinity_np(&attr, sizeof want, &want);
	if (e == 0)
		e = pthread_create(&l->thread, &attr, thread_main, l);
	pthread_attr_destroy(&attr);
	if (e == EINVAL)
		return error_set(-KNIT_EINVAL,
				 "cpu_mask: no CPU of worker %u's set is one the process may use",
				 l->index);
	if (e != 0)
		return error_set_errno(-KNIT_ESYSTEM, e, "cannot start worker thread %u", l->index);
	l->started = true;
	if (pthread_getaffinity_np(l->thread, sizeof got, &got) != 0)
		return error_set(-KNIT_ESYSTEM, "cannot read worker thread %u's CPU affinity back",
				 l->index);
	return CPU_EQUAL(&want, &got) ? 0
				      : error_set(-KNIT_EINVAL,
						  "cpu_mask: a CPU of worker %u's set is one the "
						  "process may not use",
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
		// Named here too, so that the name is there when create returns
		// (the thread also names itself before its start hook runs).
		char name[16];
		worker_name(i, name);
		pthread_setname_np(l->thread, name);
	}
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	return rc;
}

void join_workers(Pool *p)
{
	if (p->lanes == nullptr)
		return; // a create that failed before the lanes existed
	for (uint32_t i = 0; i < p->nworkers; i++) {
		Lane *l = &p->lanes[i];
		if (l->started) {
			pthread_join(l->thread, nullptr);
			l->started = false;
		}
	}
}

int thread_check(const knit_task_t *tasks, size_t ntasks)
{
	if (tasks == nullptr || ntasks == 0 || ntasks > 65535)
		return error_set(
			-KNIT_EINVAL,
			"thread workers need a task table: tasks is %s, ntasks %zu (1..65535)",
			tasks != nullptr ? "set" : "NULL", ntasks);
	return 0;
}

int thread_tasks(Pool *p, const knit_pool_options_t *, const knit_task_t *tasks, size_t ntasks)
{
	return task_table_build(p, tasks, ntasks);
}

int thread_region(Pool *p, const knit_pool_options_t *, const RegionPlan &plan, const char **what)
{
	*what = "";
	return region_create(RegionKind::kAnonymous, plan.total, "knitting", &p->region);
}

int thread_start(Pool *p, const knit_pool_options_t *opts, const RegionPlan &)
{
	p->thread_start_hook = opts->worker_start;
	p->thread_stop_hook = opts->worker_stop;
	p->thread_hook_arg = opts->worker_hook_arg;
	const int rc = start_workers(p); // records its message
	if (rc != 0) {
		// Stop the workers already running (they see REQUESTED and leave).
		request_worker_stop(p);
		join_workers(p);
	}
	return rc;
}

void thread_distrust(Pool *p, uint32_t w)
{
	Lane *l = &p->lanes[w];
	if (l->state != kLaneLive)
		return;
	lane_set_state(p, l, kLaneDistrusted);
	// RUNNING -> REQUESTED, as request_worker_stop(): acq_rel, pairs with
	// the worker's acquire load of the stop word at the top of its pass.
	knit_cas_acq_rel_32(l->stop, kStopRunning, kStopRequested);
	// W1: pairs with the worker's W2 fence in worker_park().
	knit_fence_seq_cst();
	lane_wake(p, l, false);
}

bool thread_hard_kill(Pool *, uint32_t) { return false; }
void thread_forget(Pool *) {}
void thread_stats(Pool *, knit_pool_stats_t *) {}
void thread_completion_fd_on(Pool *) {}
int32_t thread_pid(Pool *, uint32_t) { return 0; }

} // namespace

const WorkerOps kThreadWorkers = {
	.check = thread_check,
	.tasks = thread_tasks,
	.isolated = nullptr, // one region, one mapping: nothing to isolate
	.region = thread_region,
	.start = thread_start,
	.stop_check = nullptr, // a thread writes its stop word only as the protocol says
	.distrust = thread_distrust,
	.hard_kill = thread_hard_kill,
	.shutdown = join_workers,
	.forget = thread_forget,
	.stats = thread_stats,
	.completion_fd_on = thread_completion_fd_on,
	.stop_poll_ns = -1,
	.destroy_stop_ns = -1,
	.line_spill = false,
	.futex_shared = false,
	.pid = thread_pid,
	.cancel_kill = nullptr, // a thread cannot be killed alone: KNIT_CANCEL_KILL is -KNIT_EINVAL
	.failed_why = nullptr,  // a thread pool never fails
	.retire_due = nullptr,  // a thread is never recycled (options refuse the marks)
};

} // namespace knit::detail
