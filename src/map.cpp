// SPDX-License-Identifier: MIT
// map.cpp - knit_map: one task over an array of arguments, results in input
// order (see knit_map(3)).
//
// The host side only. Two ways to carry items, both reaped through
// knit_complete_tickets on the map's own tickets (a map never reaps another
// caller's completion):
//  - packed (the default): a chunk of items travels as one call of the
//    chunk task (src/chunk.h has the bytes, src/task.cpp the worker's loop):
//    one frame out with the items, one back with their outcomes, so a
//    frame carries many items. At most two chunks per worker are in
//    flight. A chunk is one call: its worker's death, a cancel or a stop
//    ends all of its items alike.
//    A pool with an inline lane (its host thread runs calls too) has the
//    map's caller run items itself, a piece at a time, while the chunks it
//    sent are in flight (help()).
//  - one call per item (chunk 1, or a timeout that must hold per item, or
//    a pool with a hard timeout): items go out in bursts of calls
//    (knit_enqueue_many), at most two bursts in flight, and each item's
//    completion is its call's.
#include "src/common.h"
#include <stdlib.h>
#include "src/calls.h"
#include "src/chunk.h"
#include "src/codec.h"
#include "src/runtime.h"
#include "src/task.h"

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

// Reap what completed of the n tickets in flight (knit_complete_tickets
// hands them back in list order, so one walk pairs them): done(i, c) for
// the completion c of tickets[i], keep(to, from) for each ticket still in
// flight as the list closes up (tickets[] itself is moved here). *n
// becomes the count left. Returns the count reaped, or a negative code
// from knit_complete_tickets.
template <class Done, class Keep>
int reap_in_order(knit_pool_t *pool, knit_ticket_t *tickets, uint32_t *n, knit_completion_t *buf,
		  int64_t timeout_ns, Done done, Keep keep)
{
	const int got = knit_complete_tickets(pool, tickets, *n, buf, *n, timeout_ns);
	if (got <= 0)
		return got;
	uint32_t kept = 0;
	int j = 0;
	for (uint32_t i = 0; i < *n; i++) {
		if (j < got && buf[j].ticket == tickets[i]) {
			done(i, buf[j]);
			j++;
		} else {
			tickets[kept] = tickets[i];
			keep(kept, i);
			kept++;
		}
	}
	*n = kept;
	return got;
}

// Reaps what completed of the calls in flight into out[]. The count, or a
// negative code.
int reap(MapRun *m, int64_t timeout_ns)
{
	return reap_in_order(
		m->pool, m->tickets, &m->nin, m->buf, timeout_ns,
		[m](uint32_t, const knit_completion_t &c) {
			const uintptr_t idx = reinterpret_cast<uintptr_t>(c.user_data);
			m->out[idx] = c;
			m->state[idx] = kEnded;
		},
		[](uint32_t, uint32_t) {});
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

// An item's argument checked as an enqueue checks it: 0, or the code the
// item ends with on its own, never run (-KNIT_EINVAL: not a valid value;
// -KNIT_ETOOBIG: over the per-call limit). A scalar passes at a glance.
inline int item_check(const Pool *p, const knit_value_t &a)
{
	if (KNIT_LIKELY(chunk_scalar_ok(a)))
		return 0;
	return codec_value_check(a, p->cfg.max_payload_bytes);
}

// ---- packed chunks ------------------------------------------------------------------

constexpr uint32_t kPackAutoMax = 1024; // items per automatic chunk, at most

// The automatic chunk of a packed map: n / (4 * workers) in [1,
// kPackAutoMax] (four chunks per worker: enough to balance, few enough
// that a frame's cost is spread over many items), the caller counted as a
// worker when it helps.
uint32_t pack_auto(const Pool *p, size_t n, bool helps)
{
	const size_t per = n / (4u * ((p->nworkers == 0 ? 1u : p->nworkers) + (helps ? 1u : 0u)));
	if (per < 1)
		return 1;
	return per > kPackAutoMax ? kPackAutoMax : static_cast<uint32_t>(per);
}

struct PackRun {
	knit_pool_t *pool;
	Pool *p;
	uint32_t task;
	const knit_value_t *args;
	knit_completion_t *out;
	knit_ticket_t *tickets; // the chunks in flight, in enqueue order
	size_t *first;          // and their first items
	uint32_t *count;        // and item counts
	uint32_t *lane;         // and lanes (pinned: a helping map's)
	knit_completion_t *buf; // a reap's completions
	uint32_t nin;
	bool cancelled;
	bool timed; // a helping map: its costs are measured
	// A helping map's costs to the caller (ns an item, -1 unknown): running
	// an item itself, and sending one (packing its chunk, unpacking its
	// outcomes). help_pays() compares them.
	int64_t run_ns;
	int64_t pack_ns;
	int64_t unpack_ns;
};

// A cost estimate moved a quarter of the way to sample x (the first
// sample taken whole).
int64_t cost_update(int64_t est, int64_t x) { return est < 0 ? x : est + (x - est) / 4; }

// What sending an item costs the caller before it has measured it: packing
// it and unpacking its outcome, a few ns each (knit-bench knit.map1000 on
// the machine the README's bench section names: 8 and 6).
constexpr int64_t kPackPriorNs = 8;
constexpr int64_t kUnpackPriorNs = 6;

// Does a helping map send its next chunk? Only while sending an item
// costs the caller less than running it itself: an item cheaper than its
// packing runs on the caller alone (a hand-off would cost more than the
// work it hands off). The caller runs a piece first, to know what an item
// costs.
bool send_pays(const PackRun *m)
{
	if (m->run_ns < 0)
		return false;
	const int64_t pack = m->pack_ns < 0 ? kPackPriorNs : m->pack_ns;
	const int64_t unpack = m->unpack_ns < 0 ? kUnpackPriorNs : m->unpack_ns;
	return pack + unpack < m->run_ns;
}

// Items out[first .. first + got) of a chunk took their outcomes' bytes as
// private copies: register them with the pool (one hold of mu), so that
// knit_completion_release frees each.
void adopt_bytes(PackRun *m, size_t first, uint32_t got)
{
	Pool *p = m->p;
	pthread_mutex_lock(&p->mu);
	for (uint32_t i = 0; i < got; i++) {
		knit_completion_t *d = &m->out[first + i];
		if (codec_has_bytes(d->result.type) && d->result.data != nullptr)
			hand_out_bytes_locked(
				p,
				const_cast<uint8_t *>(static_cast<const uint8_t *>(d->result.data)),
				d);
	}
	pthread_mutex_unlock(&p->mu);
}

// The completion c of a chunk of `count` items from `first`: every item's
// own completion in out[]. The outcomes are read from the pool's private
// copy of the result (a worker process's bytes, untrusted: chunk_next
// checks each), and items it does not answer end with -KNIT_ECANCELED
// (the map was cancelled: the worker saw the abort bit) or -KNIT_EPROTO.
void unpack(PackRun *m, const knit_completion_t &c, size_t first, uint32_t count)
{
	int st = c.status;
	uint32_t got = 0;
	if (st == 0) {
		ChunkReader r;
		uint32_t ns; // the items' run time: not used here
		bool bytes = false;
		if (c.result.type == KNIT_VALUE_BYTES &&
		    chunk_open(&r, c.result.data, c.result.len, kChunkOutcomes, count, &ns) == 0) {
			for (; got < r.count; got++) {
				const size_t i = first + got;
				knit_completion_t *d = &m->out[i];
				int32_t s;
				// Read straight into the completion (a copy through a
				// local stalls on its store forwarding).
				if (chunk_next(&r, kChunkOutcomes, &s, &d->result) != 0)
					break; // this item and the rest: synth() below
				d->ticket = c.ticket;
				d->user_data = reinterpret_cast<void *>(static_cast<uintptr_t>(i));
				d->status = s;
				d->task = m->task;
				d->reserved[0] = 0;
				d->reserved[1] = 0;
				if (KNIT_LIKELY(!codec_has_bytes(d->result.type)))
					continue;
				const knit_value_t v = d->result; // a view into the chunk
				uint8_t *b;
				if (value_copy_bytes(v, &d->result, &b) != 0) {
					d->status = -KNIT_ENOMEM;
					memset(&d->result, 0, sizeof d->result);
					d->result.type = KNIT_VALUE_NONE;
				}
				bytes = bytes || b != nullptr;
			}
		}
		if (bytes)
			adopt_bytes(m, first, got);
		st = m->cancelled ? -KNIT_ECANCELED : -KNIT_EPROTO;
	} else if (st == -KNIT_ETASK) {
		// The chunk task's own refusal (src/task.cpp chunk_task): out of
		// memory, or a chunk it could not read.
		st = c.result.type == KNIT_VALUE_ERROR && c.result.code == -KNIT_ENOMEM
			     ? -KNIT_ENOMEM
			     : -KNIT_EPROTO;
	}
	for (uint32_t j = got; j < count; j++)
		synth(&m->out[first + j], first + j, st, m->task);
}

// Reap what completed of the chunks in flight into out[]. The count, or a
// negative code.
int pack_reap(PackRun *m, int64_t timeout_ns)
{
	return reap_in_order(
		m->pool, m->tickets, &m->nin, m->buf, timeout_ns,
		[m](uint32_t i, knit_completion_t &c) {
			const int64_t t0 = m->timed ? knit_now_ns() : 0;
			unpack(m, c, m->first[i], m->count[i]);
			if (m->timed)
				m->unpack_ns = cost_update(
					m->unpack_ns, (knit_now_ns() - t0) / (int64_t)m->count[i]);
			(void)knit_completion_release(m->pool, &c);
		},
		[m](uint32_t to, uint32_t from) {
			m->first[to] = m->first[from];
			m->count[to] = m->count[from];
			m->lane[to] = m->lane[from];
		});
}

// Every chunk still in flight ends with `status` for all of its items.
void pack_fail_inflight(PackRun *m, int status)
{
	for (uint32_t i = 0; i < m->nin; i++)
		for (uint32_t j = 0; j < m->count[i]; j++)
			synth(&m->out[m->first[i] + j], m->first[i] + j, status, m->task);
	m->nin = 0;
}

// The pieces the caller runs between looks at its chunks and at the cancel
// flag: kHelpFirst items first (to learn what an item costs), then about
// kHelpPieceNs of items, at most kHelpPieceMax.
constexpr uint32_t kHelpFirst = 8;
constexpr int64_t kHelpPieceNs = 20000;
constexpr uint32_t kHelpPieceMax = 1024;

uint32_t help_piece(int64_t run_ns)
{
	if (run_ns < 0)
		return kHelpFirst;
	const int64_t k = kHelpPieceNs / (run_ns < 1 ? 1 : run_ns);
	return k < 1 ? 1 : k > kHelpPieceMax ? kHelpPieceMax : static_cast<uint32_t>(k);
}

// The map's caller runs items out[first .. first + k) itself, on the
// inline lane (a pool with one: its host thread runs calls anyway), as a
// worker runs a chunk's: each a run of the task (knit_ctx_lane is the
// inline lane's index, no abort bit, no deadline), its outcome checked as
// any task's (task_outcome) and its bytes the item's own copy.
void help(PackRun *m, size_t first, uint32_t k)
{
	Pool *p = m->p;
	knit_ctx ctx;
	ctx_init(&ctx, p, p->nworkers, -1, 0, nullptr);
	const TaskEntry &te = p->tasks[m->task];
	const Pool *const outer = t_task_pool;
	t_task_pool = p; // a call into this pool from the task: -KNIT_EBUSY
	bool bytes = false;
	for (uint32_t j = 0; j < k; j++) {
		const size_t i = first + j;
		knit_completion_t *d = &m->out[i];
		const int bad = item_check(p, m->args[i]);
		if (KNIT_UNLIKELY(bad != 0)) {
			synth(d, i, bad, m->task);
			continue;
		}
		knit_value_t ret;
		memset(&ret, 0, sizeof ret);
		ret.type = KNIT_VALUE_NONE;
		ctx.task_data = te.data;
		const int rc = te.fn(&ctx, &m->args[i], &ret);
		d->ticket = 0; // no call carried it
		d->user_data = reinterpret_cast<void *>(static_cast<uintptr_t>(i));
		d->task = m->task;
		d->reserved[0] = 0;
		d->reserved[1] = 0;
		d->result.code = 0;
		d->result.data = nullptr;
		d->result.len = 0;
		if (KNIT_LIKELY(rc == 0 && chunk_scalar_ok(ret))) {
			// As a scalar comes back from a worker: its own field only.
			d->status = 0;
			d->result.type = ret.type;
			d->result.i64 = ret.type == KNIT_VALUE_F64 || ret.type == KNIT_VALUE_NONE
						? 0
						: ret.i64;
			d->result.f64 = ret.type == KNIT_VALUE_F64 ? ret.f64 : 0;
			continue;
		}
		TaskOutcome o;
		task_outcome(p, &ctx, rc, ret, &o);
		d->status = o.status;
		uint8_t *b = nullptr;
		if (value_copy(o.value, &d->result, &b) != 0) {
			d->status = -KNIT_ENOMEM;
			memset(&d->result, 0, sizeof d->result);
			d->result.type = KNIT_VALUE_NONE;
		}
		bytes = bytes || b != nullptr;
	}
	t_task_pool = outer;
	ctx_free_allocs(&ctx);
	if (bytes)
		adopt_bytes(m, first, k);
}

int map_packed(knit_pool_t *pool, Pool *p, uint32_t task, const knit_value_t *args, size_t n,
	       knit_completion_t *out, const knit_map_options_t &o)
{
	const uint64_t cap = p->cfg.max_payload_bytes;
	// A chunk's items take at most half the per-call limit, so that
	// outcomes as large as their items (an echo) fit the result.
	const uint64_t room = cap / 2;
	// The caller helps where the pool has an inline lane (help()).
	const bool helps = p->cfg.inline_lane != KNIT_INLINE_OFF && p->nworkers != 0;
	uint32_t chunk = o.chunk != 0 ? o.chunk : pack_auto(p, n, helps);
	const uint32_t max_count = room > kChunkHeadBytes
					   ? (uint32_t)((room - kChunkHeadBytes) / kChunkEntryBytes)
					   : 1;
	if (chunk > max_count)
		chunk = max_count;
	if (chunk > n)
		chunk = static_cast<uint32_t>(n);
	const uint32_t pend = p->cfg.max_pending / 2 == 0 ? 1 : p->cfg.max_pending / 2;
	uint32_t window = 2 * (p->nworkers == 0 ? 1 : p->nworkers);
	if (window > pend)
		window = pend;
	const uint32_t flags = o.flags | (o.cancel != nullptr ? (uint32_t)KNIT_CALL_ABORTABLE : 0u);
	knit_call_options_t copts = {sizeof copts, flags, 0, 0};
	PackRun m = {pool,    p,       task, args,  out,   nullptr, nullptr, nullptr,
		     nullptr, nullptr, 0,    false, helps, -1,      -1,      -1};
	m.tickets = static_cast<knit_ticket_t *>(calloc(window, sizeof *m.tickets));
	m.first = static_cast<size_t *>(calloc(window, sizeof *m.first));
	m.count = static_cast<uint32_t *>(calloc(window, sizeof *m.count));
	m.lane = static_cast<uint32_t *>(calloc(window, sizeof *m.lane));
	m.buf = static_cast<knit_completion_t *>(calloc(window, sizeof *m.buf));
	uint8_t *scratch = nullptr; // a chunk's items, until its enqueue copies them
	uint64_t scratch_cap = 0;
	int rc = 0;
	size_t next = 0; // items sent or ended: [0, next)
	if (m.tickets == nullptr || m.first == nullptr || m.count == nullptr || m.lane == nullptr ||
	    m.buf == nullptr) {
		rc = -KNIT_ENOMEM;
		goto done;
	}
	while (next < n || m.nin > 0) {
		// Acquire: pairs with the setter's release store (knit_map(3)).
		if (!m.cancelled && o.cancel != nullptr &&
		    __atomic_load_n(o.cancel, __ATOMIC_ACQUIRE) != 0) {
			m.cancelled = true;
			// A chunk in flight ends cancelled unless it completed first
			// (its worker sees the abort bit and stops between items).
			for (uint32_t i = 0; i < m.nin; i++)
				knit_cancel(pool, m.tickets[i], KNIT_CANCEL_NOW);
			for (size_t i = next; i < n; i++)
				synth(&out[i], i, -KNIT_ECANCELED, task);
			next = n;
		}
		while (next < n && m.nin < window && (!helps || send_pays(&m))) {
			const int64_t t0 = helps ? knit_now_ns() : 0;
			// The next chunk: up to `chunk` items within `room` bytes (a
			// lone item may use the whole limit; one that cannot fit even
			// so ends -KNIT_ETOOBIG on its own).
			uint32_t k = 0;
			uint64_t payload = 0;
			while (next + k < n && k < chunk) {
				// A scalar takes an entry only, and `chunk` entries fit
				// the room (max_count).
				if (KNIT_LIKELY(chunk_scalar_ok(args[next + k]))) {
					k++;
					continue;
				}
				// Not a valid value, or over the limit: it ends on its
				// own (the chunk stops before it).
				const int bad = item_check(p, args[next + k]);
				if (bad != 0 && k > 0)
					break;
				if (bad != 0) {
					synth(&out[next], next, bad, task);
					next++;
					continue;
				}
				const uint64_t r = chunk_payload_bytes(args[next + k]);
				const uint64_t total = chunk_bytes(k + 1, payload + r);
				if (k == 0 && total > cap) {
					synth(&out[next], next, -KNIT_ETOOBIG, task);
					next++;
					continue;
				}
				if (k > 0 && total > room)
					break;
				payload += r;
				k++;
			}
			if (k == 0)
				continue;
			const uint64_t len = chunk_bytes(k, payload);
			if (len > scratch_cap) {
				void *b = realloc(scratch, len);
				if (b == nullptr) {
					if (next == 0 && m.nin == 0) {
						rc = -KNIT_ENOMEM;
						goto done;
					}
					for (size_t i = next; i < n; i++)
						synth(&out[i], i, -KNIT_ENOMEM, task);
					next = n;
					break;
				}
				scratch = static_cast<uint8_t *>(b);
				scratch_cap = len;
			}
			ChunkWriter w;
			chunk_begin(&w, scratch, kChunkItems, task, k);
			for (uint32_t i = 0; i < k; i++)
				chunk_put(&w, 0, args[next + i]);
			knit_value_t a;
			memset(&a, 0, sizeof a);
			a.type = KNIT_VALUE_BYTES;
			a.data = scratch;
			a.len = len;
			// A helping map pins its chunks to the worker lane with the
			// fewest of them in flight: on the inline lane a chunk would
			// run on this thread, packed for nothing.
			if (helps) {
				uint32_t best = 0, least = UINT32_MAX;
				for (uint32_t l = 0; l < p->nworkers; l++) {
					uint32_t c = 0;
					for (uint32_t i = 0; i < m.nin; i++)
						c += m.lane[i] == l;
					if (c < least) {
						least = c;
						best = l;
					}
				}
				copts.flags |= KNIT_CALL_LANE;
				copts.lane = best;
			}
			const int e =
				map_chunk_enqueue(pool, &a, nullptr, &copts, &m.tickets[m.nin]);
			if (e == -KNIT_EAGAIN && m.nin > 0)
				break; // the backlog (or the abort bits) full: reap first
			if (e < 0) {
				if (next == 0 && m.nin == 0) {
					rc = e; // nothing sent: the map is refused
					goto done;
				}
				for (size_t i = next; i < n; i++)
					synth(&out[i], i, e, task);
				next = n;
				break;
			}
			m.first[m.nin] = next;
			m.count[m.nin] = k;
			m.lane[m.nin] = copts.lane;
			m.nin++;
			next += k;
			if (helps)
				m.pack_ns =
					cost_update(m.pack_ns, (knit_now_ns() - t0) / (int64_t)k);
		}
		if (helps && next < n) {
			// Take in what came back (the window refills next round),
			// then run a piece of the items not sent: every round, so
			// that what an item costs the caller stays measured.
			const int got = m.nin > 0 ? pack_reap(&m, 0) : 0;
			if (got < 0) {
				pack_fail_inflight(&m, got);
				for (size_t i = next; i < n; i++)
					synth(&out[i], i, got, task);
				break;
			}
			const uint32_t piece = help_piece(m.run_ns);
			const uint32_t k =
				n - next < piece ? static_cast<uint32_t>(n - next) : piece;
			const int64_t t0 = knit_now_ns();
			help(&m, next, k);
			m.run_ns = cost_update(m.run_ns, (knit_now_ns() - t0) / (int64_t)k);
			next += k;
			continue;
		}
		if (m.nin == 0)
			continue;
		const int64_t wait = (o.cancel != nullptr && !m.cancelled) ? kCancelPollNs : -1;
		const int got = pack_reap(&m, wait);
		if (got < 0 || (got == 0 && wait < 0)) {
			// The pool no longer hands these back (stopped and drained,
			// or reaped by another caller of knit_complete).
			pack_fail_inflight(&m, got < 0 ? got : -KNIT_ECLOSED);
			break;
		}
	}
done:
	free(scratch);
	free(m.tickets);
	free(m.first);
	free(m.count);
	free(m.lane);
	free(m.buf);
	return rc;
}

int map_calls(knit_pool_t *pool, Pool *p, uint32_t task, const knit_value_t *args, size_t n,
	      knit_completion_t *out, const knit_map_options_t &o);

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
	// One call per item where a chunk's call could not keep the item's
	// own terms: chunk 1 (asked for), a timeout (each item's holds from
	// its enqueue, and a call past it ends at once), a hard timeout (it
	// would be the chunk's).
	const bool timed = (o.flags & KNIT_CALL_NO_TIMEOUT) == 0 &&
			   (o.timeout_ms != 0 || p->tasks[task].timeout_ms != 0);
	if (o.chunk != 1 && !timed && p->cfg.hard_timeout_ms == 0)
		return map_packed(pool, p, task, args, n, out, o);
	return map_calls(pool, p, task, args, n, out, o);
}

namespace {

int map_calls(knit_pool_t *pool, Pool *p, uint32_t task, const knit_value_t *args, size_t n,
	      knit_completion_t *out, const knit_map_options_t &o)
{
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
			// An item that is not a valid value, or over the limit, ends
			// on its own; a burst stops before it.
			const int bad = item_check(p, args[next]);
			if (bad != 0) {
				synth(&out[next], next, bad, task);
				state[next] = kEnded;
				next++;
				continue;
			}
			uint32_t k = window - m.nin;
			if (k > chunk)
				k = chunk;
			if (k > n - next)
				k = static_cast<uint32_t>(n - next);
			for (uint32_t i = 1; i < k; i++)
				if (item_check(p, args[next + i]) != 0) {
					k = i;
					break;
				}
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

} // namespace
