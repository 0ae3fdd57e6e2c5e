// SPDX-License-Identifier: MIT
// src/task.cpp - one task run (src/task.h has the contract): the runner,
// its result check and error cut, the run's allocations, and the
// knit_ctx_* entries.
#include "src/common.h"

#include <stdlib.h>
#include <string.h>

#include "src/chunk.h"
#include "src/codec.h"
#include "src/error.h"
#include "src/lane.h"
#include "src/runtime.h"
#include "src/task.h"

namespace knit::detail {

namespace {

int cmp_task(const void *a, const void *b)
{
	return strcmp(static_cast<const TaskEntry *>(a)->name,
		      static_cast<const TaskEntry *>(b)->name);
}

// The map chunk task's name (never looked up: its id is the pool's ntasks).
const char kChunkTaskName[] = "knit_map chunk";
const char kChunkMalformed[] = "malformed map chunk";
const char kChunkNoMemory[] = "no memory for a map chunk's outcomes";

int chunk_task(knit_ctx *ctx, const knit_value_t *arg, knit_value_t *ret);

int task_table_build_impl(Pool *p, const knit_task_t *tasks, size_t ntasks)
{
	size_t bytes = 0;
	for (size_t i = 0; i < ntasks; i++) {
		const knit_task_t &t = tasks[i];
		if (t.name == nullptr || t.name[0] == '\0')
			return error_set(-KNIT_EINVAL, "task %zu has %s name", i,
					 t.name == nullptr ? "a NULL" : "an empty");
		if (t.fn == nullptr)
			return error_set(-KNIT_EINVAL, "task %zu (\"%.200s\") has a NULL fn", i,
					 t.name);
		if ((t.flags & ~(uint32_t)KNIT_TASK_ABORTABLE) != 0)
			return error_set(-KNIT_EINVAL,
					 "task %zu (\"%.200s\") has unknown flags 0x%x", i, t.name,
					 t.flags);
		// Reserved members must be zero, so a program that sets one a
		// later release defines is refused here, not silently ignored.
		if (t.reserved[0] != 0 || t.reserved[1] != 0)
			return error_set(
				-KNIT_EINVAL,
				"task %zu (\"%.200s\") has a reserved member that is not 0", i,
				t.name);
		bytes += strlen(t.name) + 1;
	}
	// One entry more than the caller's: the map chunk task, at id ntasks
	// (kept out of the name order and of every lookup by name).
	p->tasks = static_cast<TaskEntry *>(calloc(ntasks + 1, sizeof(TaskEntry)));
	p->names = static_cast<char *>(malloc(bytes));
	if (p->tasks == nullptr || p->names == nullptr)
		return error_set(-KNIT_ENOMEM, "out of memory for the task table (%zu tasks)",
				 ntasks);
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
			return error_set(-KNIT_EINVAL, "two tasks are named \"%.200s\"",
					 p->tasks[i].name);
	p->ntasks = (uint32_t)ntasks;
	TaskEntry &m = p->tasks[ntasks];
	m.name = kChunkTaskName;
	m.fn = chunk_task;
	return 0;
}

const char kInvalidResult[] = "task returned an invalid value";
// Ends an error message cut to max_payload_bytes.
const char kTruncatedMark[] = " [truncated]";

struct AllocHead {
	AllocHead *next;
	uint64_t pad; // keeps the payload 16-byte aligned
};

// The first `cap` bytes of a too-long error message, the last of them
// replaced by kTruncatedMark (documented in knit_complete(3)), in a block
// freed with the run's knit_ctx_alloc blocks. Leaves *out's bytes empty when
// there is no memory.
void error_truncate(knit_ctx *ctx, const knit_value_t &err, uint64_t cap, knit_value_t *out)
{
	out->data = nullptr;
	out->len = 0;
	// err.len > cap, so at least cap bytes of the message are readable.
	AllocHead *h = static_cast<AllocHead *>(malloc(sizeof(AllocHead) + cap + 1));
	if (h == nullptr)
		return;
	h->next = static_cast<AllocHead *>(ctx->allocs);
	ctx->allocs = h;
	char *b = reinterpret_cast<char *>(h + 1);
	const uint64_t m = sizeof kTruncatedMark - 1;
	if (cap >= m) {
		memcpy(b, err.data, cap - m);
		memcpy(b + cap - m, kTruncatedMark, m);
	} else {
		memcpy(b, kTruncatedMark, cap); // no room for any of the message
	}
	b[cap] = 0;
	out->data = b;
	out->len = (uint32_t)cap;
}

// The chunk task's own failure (the chunk's call ends -KNIT_ETASK with
// this error, code the status every item of it gets: src/map.cpp).
int chunk_fail(knit_value_t *ret, int code, const char *msg, size_t len)
{
	ret->type = KNIT_VALUE_ERROR;
	ret->code = code;
	ret->data = msg;
	ret->len = len;
	return 1;
}

// The map chunk task (src/chunk.h): run the items of a chunk in order, each
// a run of the items' task on this call's context (its abort bit, its
// allocations), and answer with their outcomes, written as they come into
// one block freed with the run's knit_ctx_alloc blocks. Once the call's
// abort bit is up (the map was cancelled) the items left are answered
// -KNIT_ECANCELED, never run; after a malformed entry, -KNIT_EPROTO. An
// outcome whose bytes do not fit what the chunk's earlier items left of
// the per-call limit becomes -KNIT_ETOOBIG.
int chunk_task(knit_ctx *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	Pool *p = ctx->pool;
	const uint64_t cap = p->cfg.max_payload_bytes;
	ChunkReader r;
	uint32_t task = 0;
	const uint32_t max_count =
		cap > kChunkHeadBytes ? (uint32_t)((cap - kChunkHeadBytes) / kChunkEntryBytes) : 0;
	if (arg->type != KNIT_VALUE_BYTES ||
	    chunk_open(&r, arg->data, arg->len, kChunkItems, max_count, &task) != 0 ||
	    task >= p->ntasks)
		return chunk_fail(ret, -KNIT_EPROTO, kChunkMalformed, sizeof kChunkMalformed - 1);
	const uint32_t count = r.count;
	const uint64_t fixed = chunk_bytes(count, 0);
	uint64_t size = fixed; // the block's bytes (grown for payloads)
	AllocHead *h = static_cast<AllocHead *>(malloc(sizeof(AllocHead) + size));
	if (h == nullptr)
		return chunk_fail(ret, -KNIT_ENOMEM, kChunkNoMemory, sizeof kChunkNoMemory - 1);
	ChunkWriter w;
	chunk_begin(&w, reinterpret_cast<uint8_t *>(h + 1), kChunkOutcomes, 0, count);
	const TaskEntry &te = p->tasks[task];
	const bool abortable = ctx->abort_bit >= 0;
	int32_t rest = 0; // the status of the items left unrun, once one is set
	const int64_t t0 = knit_now_ns();
	for (uint32_t i = 0; i < count; i++) {
		if (rest == 0 && abortable && knit_ctx_aborted(ctx) == 1)
			rest = -KNIT_ECANCELED;
		int32_t status;
		knit_value_t v;
		if (rest == 0 && chunk_next(&r, kChunkItems, &status, &v) != 0)
			rest = -KNIT_EPROTO;
		if (rest != 0) {
			chunk_put_scalar(&w, rest, KNIT_VALUE_NONE, 0);
			continue;
		}
		knit_value_t out;
		memset(&out, 0, sizeof out);
		out.type = KNIT_VALUE_NONE;
		ctx->task_data = te.data; // t_task_pool is ours already (run_task)
		const int rc = te.fn(ctx, &v, &out);
		if (KNIT_LIKELY(rc == 0 && chunk_scalar_ok(out))) {
			chunk_put_scalar(&w, 0, out.type, chunk_scalar_word(out));
			continue;
		}
		TaskOutcome o;
		task_outcome(p, ctx, rc, out, &o);
		const uint64_t room = chunk_payload_bytes(o.value);
		if (room != 0) {
			if (w.data + room > cap) {
				chunk_put_scalar(&w, -KNIT_ETOOBIG, KNIT_VALUE_NONE, 0);
				continue;
			}
			if (w.data + room > size) {
				uint64_t grown =
					size * 2 > w.data + room ? size * 2 : w.data + room;
				if (grown > cap)
					grown = cap;
				void *g = realloc(h, sizeof(AllocHead) + grown);
				if (g == nullptr) {
					chunk_put_scalar(&w, -KNIT_ENOMEM, KNIT_VALUE_NONE, 0);
					continue;
				}
				h = static_cast<AllocHead *>(g);
				w.base = reinterpret_cast<uint8_t *>(h + 1);
				size = grown;
			}
		}
		chunk_put(&w, o.status, o.value);
	}
	// The items' run time, for the host's estimate of a burst's calls
	// (src/calls.h riders): the head's second word, saturated.
	const int64_t took = knit_now_ns() - t0;
	const uint32_t ns = took <= 0 ? 0u : took >= 0xFFFFFFFFll ? 0xFFFFFFFFu : (uint32_t)took;
	memcpy(reinterpret_cast<uint8_t *>(h + 1) + offsetof(ChunkHead, task), &ns, sizeof ns);
	h->next = static_cast<AllocHead *>(ctx->allocs);
	ctx->allocs = h;
	ret->type = KNIT_VALUE_BYTES;
	ret->data = h + 1;
	ret->len = w.data;
	return 0;
}

} // namespace

__thread const Pool *t_task_pool;

void run_task(Pool *p, knit_ctx *ctx, uint32_t task, const knit_value_t &arg, TaskOutcome *out)
{
	knit_value_t ret;
	memset(&ret, 0, sizeof ret);
	ret.type = KNIT_VALUE_NONE;
	ctx->task_data = p->tasks[task].data;
	const Pool *const outer = t_task_pool;
	t_task_pool = p;
	const int rc = p->tasks[task].fn(ctx, &arg, &ret);
	t_task_pool = outer;
	task_outcome(p, ctx, rc, ret, out);
}

void task_outcome_slow(Pool *p, knit_ctx *ctx, int rc, const knit_value_t &ret, TaskOutcome *out)
{
	const uint64_t cap = p->cfg.max_payload_bytes;
	if (rc == 0) {
		int v = codec_value_check(ret, cap);
		if (v == 0) {
			// The common outcome: the task's value as it is (every field
			// written, no clearing first).
			out->status = 0;
			out->value = ret;
			return;
		}
		memset(&out->value, 0, sizeof out->value);
		if (v == -KNIT_ETOOBIG) {
			out->status = -KNIT_ETOOBIG;
		} else {
			out->status = -KNIT_ETASK;
			out->value.type = KNIT_VALUE_ERROR;
			out->value.code = -KNIT_EINVAL;
			out->value.data = kInvalidResult;
			out->value.len = sizeof kInvalidResult - 1;
		}
		return;
	}
	memset(&out->value, 0, sizeof out->value);
	out->status = -KNIT_ETASK;
	if (ret.type == KNIT_VALUE_ERROR) {
		int v = codec_value_check(ret, cap);
		if (v == 0) {
			out->value = ret;
			return;
		}
		if (v == -KNIT_ETOOBIG) {
			// The error is what the caller needs: keep its code, and cut
			// the message to the cap, marked (or drop it when there is no
			// memory for the cut copy).
			out->value.type = KNIT_VALUE_ERROR;
			out->value.code = ret.code;
			error_truncate(ctx, ret, cap, &out->value);
			return;
		}
	}
	out->value.type = KNIT_VALUE_ERROR;
	out->value.code = rc;
	out->value.data = nullptr;
	out->value.len = 0;
}

void ctx_free_allocs(knit_ctx *ctx)
{
	AllocHead *h = static_cast<AllocHead *>(ctx->allocs);
	while (h != nullptr) {
		AllocHead *next = h->next;
		free(h);
		h = next;
	}
	ctx->allocs = nullptr;
}

int task_table_build(Pool *p, const knit_task_t *tasks, size_t ntasks)
{
	return task_table_build_impl(p, tasks, ntasks);
}

} // namespace knit::detail

using namespace knit::detail;

extern "C" KNIT_API int knit_ctx_aborted(const knit_ctx_t *ctx) KNIT_NOEXCEPT
{
	if (ctx == nullptr)
		return -KNIT_EINVAL;
	if (ctx->abort_bit < 0)
		return 0;
	const uint32_t b = (uint32_t)ctx->abort_bit;
	// Acquire: pairs with the host's OR in knit_cancel(SIGNAL).
	return (knit_load_acquire_32(&ctx->pool->abort_words[b / 32]) >> (b % 32)) & 1;
}

extern "C" KNIT_API int64_t knit_ctx_deadline_ns(const knit_ctx_t *ctx) KNIT_NOEXCEPT
{
	if (ctx == nullptr)
		return -KNIT_EINVAL;
	return ctx->deadline_ns;
}

extern "C" KNIT_API int knit_ctx_lane(const knit_ctx_t *ctx) KNIT_NOEXCEPT
{
	if (ctx == nullptr)
		return -KNIT_EINVAL;
	return (int)ctx->lane;
}

extern "C" KNIT_API void *knit_ctx_task_data(const knit_ctx_t *ctx) KNIT_NOEXCEPT
{
	return ctx != nullptr ? ctx->task_data : nullptr;
}

extern "C" KNIT_API void *knit_ctx_alloc(knit_ctx_t *ctx, size_t size) KNIT_NOEXCEPT
{
	if (ctx == nullptr || size == 0 || size > ctx->pool->cfg.max_payload_bytes)
		return nullptr;
	// The first block of a worker run comes from the return arena, so a
	// result built in it ships without a copy. Not while older results wait
	// for room (they go first), and only while the arena has room now.
	Lane *l = ctx->wlane;
	if (l != nullptr && !ctx->res.live && l->local->pend_count == 0 && size < 0xFFFFFFFFu &&
	    l->wret.reserve((uint32_t)size, &ctx->res) == 0)
		return ctx->res.data;
	AllocHead *h = static_cast<AllocHead *>(malloc(sizeof(AllocHead) + size));
	if (h == nullptr)
		return nullptr;
	h->next = static_cast<AllocHead *>(ctx->allocs);
	ctx->allocs = h;
	return h + 1;
}
