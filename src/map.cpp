// SPDX-License-Identifier: MIT
// map.cpp - knit_map: one task over an array of arguments, results in input
// order (see knit_map(3)).
//
// The host side only, over the public entries: items go out in bursts of
// `chunk` calls (knit_enqueue_many, one publish per burst), at most two
// bursts in flight, and come back through knit_complete_tickets on this
// map's own tickets, so a map never reaps another caller's completion. Each
// item is one ordinary call: stealing, lanes, process workers, deadlines,
// crash handling and exactly-once all apply to it unchanged, and its
// completion (status and result) is the one out[i] gets.
#include "src/common.h"
#include <stdlib.h>
#include "src/runtime.h"

using namespace knit::detail;

namespace {

constexpr uint32_t kAutoChunkMin = 16;
constexpr uint32_t kAutoChunkMax = 16;
constexpr int64_t kCancelPollNs = 1000000; // a cancel flag is read at least this often

// An item that ended without a call: empty result, its status.
void synth(knit_completion_t *c, size_t i, int status, uint32_t task)
{
	memset(c, 0, sizeof *c);
	c->result.type = KNIT_VALUE_NONE;
	c->status = status;
	c->task = task;
	c->user_data = reinterpret_cast<void *>(static_cast<uintptr_t>(i));
}

// The automatic burst: n / (4 * workers) within [kAutoChunkMin,
// kAutoChunkMax]. Two bursts of 16 stay within a lane's 32-call queue, so
// no item goes through the backlog (knit-bench: bursts of 512 backlogged
// 97% of items and ran knit.map1000 at 0.29x task_group, bursts of 16 at
// 0.39x, same machine, noisy).
uint32_t auto_chunk(const Pool *p, size_t n)
{
	const size_t per = n / (4u * (p->nworkers == 0 ? 1u : p->nworkers));
	if (per < kAutoChunkMin)
		return kAutoChunkMin;
	return per > kAutoChunkMax ? kAutoChunkMax : static_cast<uint32_t>(per);
}

enum : char { kNotSent = 0, kInFlight = 1, kEnded = 2 };

struct MapRun {
	knit_pool_t *pool;
	uint32_t task;
	knit_completion_t *out;
	knit_ticket_t *tickets; // in flight, in enqueue order
	knit_completion_t *buf; // a reap's completions
	char *state;            // per item: kNotSent, kInFlight, kEnded
	uint32_t nin;
};

// Reaps what completed of the tickets in flight into out[] and drops them
// from the list (complete_tickets hands them back in list order). Returns
// the count, or a negative code from knit_complete_tickets.
int reap(MapRun *m, int64_t timeout_ns)
{
	const int got =
		knit_complete_tickets(m->pool, m->tickets, m->nin, m->buf, m->nin, timeout_ns);
	if (got <= 0)
		return got;
	uint32_t keep = 0;
	int j = 0;
	for (uint32_t i = 0; i < m->nin; i++) {
		if (j < got && m->buf[j].ticket == m->tickets[i]) {
			const uintptr_t idx = reinterpret_cast<uintptr_t>(m->buf[j].user_data);
			m->out[idx] = m->buf[j];
			m->state[idx] = kEnded;
			j++;
		} else {
			m->tickets[keep++] = m->tickets[i];
		}
	}
	m->nin = keep;
	return got;
}

// The items still in flight end with `status`: the pool no longer hands
// them back.
void fail_inflight(MapRun *m, size_t upto, int status)
{
	for (size_t i = 0; i < upto; i++)
		if (m->state[i] == kInFlight) {
			synth(&m->out[i], i, status, m->task);
			m->state[i] = kEnded;
		}
	m->nin = 0;
}

} // namespace

extern "C" KNIT_API int knit_map(knit_pool_t *pool, uint32_t task, const knit_value_t *args,
				 size_t n, knit_completion_t *out,
				 const knit_map_options_t *opt) KNIT_NOEXCEPT
{
	if (pool == nullptr || (n > 0 && (args == nullptr || out == nullptr)))
		return -KNIT_EINVAL;
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	if (opt != nullptr) {
		if (opt->size < offsetof(knit_map_options_t, reserved) + sizeof o.reserved ||
		    opt->size > sizeof o)
			return -KNIT_EVERSION;
		memcpy(&o, opt, sizeof o);
		const uint32_t known =
			KNIT_CALL_ABORTABLE | KNIT_CALL_NO_TIMEOUT | KNIT_CALL_HIGH | KNIT_CALL_LOW;
		if ((o.flags & ~known) != 0 ||
		    (o.flags & (KNIT_CALL_HIGH | KNIT_CALL_LOW)) ==
			    (KNIT_CALL_HIGH | KNIT_CALL_LOW) ||
		    o.reserved[0] != 0 || o.reserved[1] != 0)
			return -KNIT_EINVAL;
	}
	Pool *p = &pool->p;
	if (in_task_of(p))
		return -KNIT_EBUSY;
	if (pool_forked(p))
		return -KNIT_ECLOSED;
	if (task >= p->ntasks)
		return -KNIT_ENOTASK;
	if (n == 0)
		return 0;

	uint32_t chunk = o.chunk != 0 ? o.chunk : auto_chunk(p, n);
	const uint32_t pend = p->cfg.max_pending / 2 == 0 ? 1 : p->cfg.max_pending / 2;
	if (chunk > pend)
		chunk = pend;
	if (chunk > n)
		chunk = static_cast<uint32_t>(n);
	const uint32_t window = 2 * chunk;

	knit_call_options_t copts = {sizeof copts, o.flags, o.timeout_ms, 0};
	knit_request_t *reqs = static_cast<knit_request_t *>(calloc(chunk, sizeof *reqs));
	knit_ticket_t *tickets = static_cast<knit_ticket_t *>(calloc(window, sizeof *tickets));
	knit_completion_t *buf = static_cast<knit_completion_t *>(calloc(window, sizeof *buf));
	char *state = static_cast<char *>(calloc(n, 1));
	if (reqs == nullptr || tickets == nullptr || buf == nullptr || state == nullptr) {
		free(reqs);
		free(tickets);
		free(buf);
		free(state);
		return -KNIT_ENOMEM;
	}
	MapRun m = {pool, task, out, tickets, buf, state, 0};
	size_t next = 0; // items enqueued or ended: [0, next)
	bool cancelled = false;
	int rc = 0;
	while (next < n || m.nin > 0) {
		// Acquire: pairs with the setter's store (knit_map(3) asks for
		// a release store, e.g. __atomic_store_n(flag, 1, __ATOMIC_RELEASE),
		// or any store before a lock or join the map's thread also uses).
		if (!cancelled && o.cancel != nullptr &&
		    __atomic_load_n(o.cancel, __ATOMIC_ACQUIRE) != 0) {
			cancelled = true;
			// Calls in flight end cancelled unless they completed first;
			// either way each hands back exactly one completion.
			for (uint32_t i = 0; i < m.nin; i++)
				knit_cancel(pool, m.tickets[i], KNIT_CANCEL_NOW);
			for (size_t i = next; i < n; i++) {
				synth(&out[i], i, -KNIT_ECANCELED, task);
				state[i] = kEnded;
			}
			next = n;
		}
		while (next < n && m.nin < window) {
			uint32_t k = window - m.nin;
			if (k > chunk)
				k = chunk;
			if (k > n - next)
				k = static_cast<uint32_t>(n - next);
			for (uint32_t i = 0; i < k; i++) {
				reqs[i].task = task;
				reqs[i].arg = &args[next + i];
				reqs[i].user_data = reinterpret_cast<void *>(next + i);
				reqs[i].opts = &copts;
			}
			const int e = knit_enqueue_many(pool, reqs, k, &m.tickets[m.nin]);
			if (e == -KNIT_EAGAIN && m.nin > 0)
				break; // the backlog is full: reap first
			if (e < 0) {
				if (next == 0 && m.nin == 0) {
					rc = e; // nothing enqueued: the map is refused
					goto done;
				}
				for (size_t i = next; i < n; i++) {
					synth(&out[i], i, e, task);
					state[i] = kEnded;
				}
				next = n;
				break;
			}
			for (int i = 0; i < e; i++)
				state[next + static_cast<size_t>(i)] = kInFlight;
			m.nin += static_cast<uint32_t>(e);
			next += static_cast<size_t>(e);
		}
		if (m.nin == 0)
			continue;
		const int64_t wait = (o.cancel != nullptr && !cancelled) ? kCancelPollNs : -1;
		const int got = reap(&m, wait);
		if (got < 0 || (got == 0 && wait < 0)) {
			// The pool no longer hands these back (stopped and drained,
			// or reaped by another caller of knit_complete).
			const int st = got < 0 ? got : -KNIT_ECLOSED;
			fail_inflight(&m, next, st);
			break;
		}
	}
done:
	free(reqs);
	free(tickets);
	free(buf);
	free(state);
	return rc;
}
