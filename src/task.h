// SPDX-License-Identifier: MIT
// src/task.h - the room of one task run: the worker-side context a task sees
// (knit_ctx: its lane, abort bit, deadline, allocations), the runner that
// calls the task and classifies what it returned, and the knit_ctx_* ABI
// entries. Used by the three places a task runs: a worker lane's loop
// (src/worker.cpp), the inline lane (src/dispatch.cpp) and the synchronous
// call line (src/syncline.cpp). Implemented in src/task.cpp.
#ifndef KNIT_SRC_TASK_H
#define KNIT_SRC_TASK_H

#include "src/common.h"

#include "src/codec.h"
#include "src/runtime.h"

// The worker-side context of the C ABI (knit_ctx_t).
struct knit_ctx {
	knit::detail::Pool *pool;
	uint32_t lane;
	int32_t abort_bit; // -1 = none
	int64_t deadline_ns;
	void *task_data; // the running task's knit_task_t.data
	void *allocs;    // knit_ctx_alloc blocks, freed after the result is shipped
	// Worker lanes only (nullptr on the inline lane): the first
	// knit_ctx_alloc of a run reserves room in the return arena, and a
	// result pointing at it is published in place (no copy).
	knit::detail::Lane *wlane;
	knit::detail::Reservation res;
};

namespace knit::detail {

// What a task run produced: a frame status and a value whose bytes stay
// valid until ctx_free_allocs() (they point into the task's memory).
struct TaskOutcome {
	int32_t status; // 0, -KNIT_ETASK or -KNIT_ETOOBIG
	knit_value_t value;
};

// Set up *ctx for one run on lane `lane`: abort_bit -1 = none, deadline_ns 0
// = none, wlane the worker lane whose return arena knit_ctx_alloc may
// reserve from (nullptr: every block is malloc'd). run_task sets task_data.
inline void ctx_init(knit_ctx *ctx, Pool *p, uint32_t lane, int32_t abort_bit, int64_t deadline_ns,
		     Lane *wlane)
{
	ctx->pool = p;
	ctx->lane = lane;
	ctx->abort_bit = abort_bit;
	ctx->deadline_ns = deadline_ns;
	ctx->allocs = nullptr;
	ctx->wlane = wlane;
	memset(&ctx->res, 0, sizeof ctx->res);
}

// Run task `task` on the calling thread (a worker, or a host thread for the
// inline lane or a line) with *ctx, and classify what it returned (see
// TaskOutcome).
void run_task(Pool *p, knit_ctx *ctx, uint32_t task, const knit_value_t &arg, TaskOutcome *out);
// run_task's classification of what a task function returned (rc, *ret)
// into *out: the result as it is when valid, else the documented
// -KNIT_ETASK or -KNIT_ETOOBIG outcome (an error message over the cap cut,
// in a block of ctx's). task_outcome_slow is the complete one;
// task_outcome takes the common case (rc 0, a valid value) inline, where
// a call would cost as much as the case (every no-op call runs it).
void task_outcome_slow(Pool *p, knit_ctx *ctx, int rc, const knit_value_t &ret, TaskOutcome *out);
inline void task_outcome(Pool *p, knit_ctx *ctx, int rc, const knit_value_t &ret, TaskOutcome *out)
{
	if (KNIT_LIKELY(rc == 0) && codec_value_check(ret, p->cfg.max_payload_bytes) == 0) {
		out->status = 0;
		out->value = ret;
		return;
	}
	task_outcome_slow(p, ctx, rc, ret, out);
}
// Free every block knit_ctx_alloc handed out during this run.
void ctx_free_allocs(knit_ctx *ctx);

// Copy, validate and sort the pool's task table (p->tasks, p->names,
// p->ntasks): names are copied into one block and ids are indexes in name
// order. 0, or -KNIT_EINVAL / -KNIT_ENOMEM with knit_last_error() set. Both
// worker backends build their table with it (threads from the caller's
// array, processes from the task library).
int task_table_build(Pool *p, const knit_task_t *tasks, size_t ntasks);

} // namespace knit::detail

#endif
