// SPDX-License-Identifier: MIT
// tests/unit/test_pool_tables.cpp - white-box checks of the runtime's host
// tables (src/calls.cpp) and option resolution (src/options.cpp): tickets
// are never 0 and never reused, capacity is a hard bound, records recycle,
// the deadline heap pops in order and removes from the middle, and every
// option rule of the ABI contract (defaults, KNIT_ZERO, errors).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/runtime.h"

using namespace knit::detail;

static uint64_t tk_unused; // alloc()'s ticket, where a test does not look at it

static void tickets_bound_and_generations(void **)
{
	TicketTable t;
	assert_int_equal(t.init(600), 0);
	Call *c[600];
	uint64_t seen_first[600];
	for (int i = 0; i < 600; i++) {
		int err = 0;
		uint64_t tk = 0;
		c[i] = t.alloc(&tk, &err);
		assert_non_null(c[i]);
		assert_true(tk == ticket_of(c[i])); // the ticket alloc() reports
		assert_int_equal(c[i]->index, (uint32_t)i);
		assert_int_equal(c[i]->live, 1);
		assert_int_equal(c[i]->abort_bit, -1);
		assert_int_equal(c[i]->heap_pos, kNoHeap);
		seen_first[i] = ticket_of(c[i]);
		assert_true(seen_first[i] != 0);
		assert_true(t.lookup((uint32_t)i) == c[i]);
	}
	int err = 0;
	assert_null(t.alloc(&tk_unused, &err));
	assert_int_equal(err, -KNIT_EAGAIN);
	// Past the live bound: no record handed out there (indexes beyond it
	// only replace worn-out records), and nothing at all past capacity().
	assert_true(t.lookup(600) == nullptr || !t.lookup(600)->live);
	assert_true(t.capacity() >= 600);
	assert_null(t.lookup(t.capacity()));
	// Recycle everything twice: same records, new generations, new tickets.
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 600; i++)
			t.free(c[i]);
		for (int i = 0; i < 600; i++) {
			Call *d = t.alloc(&tk_unused, &err);
			assert_non_null(d);
			assert_true(ticket_of(d) != seen_first[d->index]);
			assert_true(d->gen >= 2);
			c[i] = d;
		}
		assert_null(t.alloc(&tk_unused, &err));
	}
	t.fini();
}

static void tickets_lazy_chunks(void **)
{
	TicketTable t;
	assert_int_equal(t.init(1u << 20), 0);
	assert_null(t.lookup(0));
	int err = 0;
	Call *c = t.alloc(&tk_unused, &err);
	assert_non_null(c);
	assert_non_null(t.lookup(0));
	assert_null(t.lookup(kTicketChunk)); // second chunk not allocated yet
	assert_int_equal(t.high(), 1);
	t.fini();
}

// A record whose generation is about to wrap: its tickets must never repeat
// (a wrap would give generation 1 again, the ticket of its first use).
static void tickets_unique_across_generation_wrap(void **)
{
	TicketTable t;
	assert_int_equal(t.init(4), 0);
	int err = 0;
	Call *c = t.alloc(&tk_unused, &err);
	assert_non_null(c);
	const uint32_t idx = c->index;
	uint64_t seen[16];
	uint32_t n = 0;
	seen[n++] = ticket_of(c);
	t.free(c);
	// Test hook: age the free record to just below the wrap point.
	t.lookup(idx)->gen = 0xFFFFFFFDu;
	for (int i = 0; i < 6; i++) {
		c = t.alloc(&tk_unused, &err);
		assert_non_null(c);
		assert_true(c->gen != 0);
		const uint64_t tk = ticket_of(c);
		for (uint32_t k = 0; k < n; k++)
			if (seen[k] == tk)
				fail_msg("ticket %#llx handed out twice (index %u gen %u)",
					 (unsigned long long)tk, c->index, c->gen);
		seen[n++] = tk;
		t.free(c);
	}
	// The worn-out record is never handed out again, and never matches.
	const Call *old = t.lookup(idx);
	assert_true(old != nullptr && !old->live && old->gen == 0xFFFFFFFFu);
	// The live bound is still the capacity.
	Call *all[4];
	for (int i = 0; i < 4; i++) {
		all[i] = t.alloc(&tk_unused, &err);
		assert_non_null(all[i]);
		assert_true(all[i]->index != idx);
	}
	assert_null(t.alloc(&tk_unused, &err));
	assert_int_equal(err, -KNIT_EAGAIN);
	t.fini();
}

static int wrap_task(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	*ret = *arg;
	return 0;
}

// The same through the public entries: a stale ticket from before the wrap
// must not cancel the call that reuses the record afterwards.
static void tickets_no_stale_cancel_after_wrap(void **)
{
	const knit_task_t tasks[] = {{"echo", wrap_task, 0, 0}};
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 1;
	o.topology = KNIT_TOPOLOGY_LANES;
	o.park_ms = 60000;
	knit_pool_t *pool = nullptr;
	assert_int_equal(knit_pool_create(&o, tasks, 1, &pool), 0);
	Pool *p = &pool->p;
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_I64;
	v.i64 = 1;
	knit_ticket_t ta = 0;
	assert_int_equal(knit_enqueue(pool, 0, &v, nullptr, &ta), 0);
	knit_completion_t c;
	assert_int_equal(knit_complete(pool, &c, 1, -1), 1);
	assert_true(c.ticket == ta);
	knit_completion_release(pool, &c);
	// Test hook: age that record (free again) to the last generation.
	pthread_mutex_lock(&p->mu);
	Call *r = p->tickets.lookup((uint32_t)ta);
	assert_non_null(r);
	assert_int_equal(r->live, 0);
	r->gen = 0xFFFFFFFFu;
	pthread_mutex_unlock(&p->mu);
	knit_ticket_t tb = 0;
	v.i64 = 2;
	assert_int_equal(knit_enqueue(pool, 0, &v, nullptr, &tb), 0);
	assert_true(tb != ta);
	assert_int_equal(knit_cancel(pool, ta, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND);
	assert_int_equal(knit_complete(pool, &c, 1, -1), 1);
	assert_true(c.ticket == tb);
	assert_int_equal(c.status, 0);
	assert_true(c.result.i64 == 2);
	assert_int_equal(knit_pool_destroy(pool), 0);
}

static void heap_order_and_removal(void **)
{
	enum { N = 500 };
	static Call calls[N];
	DeadlineHeap h;
	assert_int_equal(h.init(N), 0);
	unsigned seed = 7;
	for (int i = 0; i < N; i++) {
		memset(&calls[i], 0, sizeof calls[i]);
		calls[i].heap_pos = kNoHeap;
		calls[i].deadline_ns = 1 + (int64_t)(rand_r(&seed) % 100000);
		h.push(&calls[i]);
	}
	assert_int_equal(h.size(), N);
	// Remove every third from wherever it sits.
	for (int i = 0; i < N; i += 3) {
		h.remove(&calls[i]);
		assert_int_equal(calls[i].heap_pos, kNoHeap);
	}
	h.remove(&calls[0]); // not in the heap: ignored
	int64_t last = 0;
	uint32_t n = 0;
	while (Call *t = h.top()) {
		assert_true(t->deadline_ns >= last);
		last = t->deadline_ns;
		h.remove(t);
		n++;
	}
	assert_int_equal(n, N - (N + 2) / 3);
	h.fini();
}

static void options_defaults(void **)
{
	PoolConfig c;
	assert_int_equal(options_resolve(nullptr, &c), 0);
	assert_int_equal(c.workers, 1);
	assert_int_equal(c.topology, KNIT_TOPOLOGY_LANES);
	assert_int_equal(c.balancer, KNIT_BALANCE_ROUND_ROBIN);
	assert_int_equal(c.inline_batch, 1);
	assert_int_equal(c.stall_free_loops, 1);
	assert_int_equal(c.max_backoff_ms, 10);
	assert_true(c.doorbell);
	assert_int_equal(c.spin_us, 50);
	assert_int_equal(c.park_ms, 1000); // the idle period of the arena trims
	assert_false(c.park_watchdog);
	assert_int_equal(c.abort_capacity, 258);
	assert_int_equal(c.max_pending, 65536);
	assert_int_equal(c.hard_timeout_ms, 0);
	assert_true(c.payload_max_bytes == 64ull << 20);
	assert_true(c.max_payload_bytes == 8ull << 20);

	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 3;
	o.doorbell = KNIT_DOORBELL_OFF;
	assert_int_equal(options_resolve(&o, &c), 0);
	assert_int_equal(c.spin_us, 50); // several workers spin too (the first CPUs - 1)
	assert_int_equal(c.stall_free_loops, 128);
	assert_false(c.doorbell);
	o.inline_lane = KNIT_INLINE_LAST;
	o.workers = 1;
	assert_int_equal(options_resolve(&o, &c), 0);
	assert_int_equal(c.spin_us, 50); // the inline lane does not count
	o.spin_us = KNIT_ZERO;
	o.stall_free_loops = KNIT_ZERO;
	o.abort_capacity = KNIT_ZERO;
	o.max_pending = KNIT_ZERO;
	assert_int_equal(options_resolve(&o, &c), 0);
	assert_int_equal(c.spin_us, 0);
	assert_int_equal(c.stall_free_loops, 0);
	assert_int_equal(c.abort_capacity, 0);
	assert_int_equal(c.max_pending, 0);
}

static void options_errors(void **)
{
	PoolConfig c;
	knit_pool_options_t o;
#define BAD(field, val, code)                                                                      \
	do {                                                                                       \
		memset(&o, 0, sizeof o);                                                           \
		o.size = sizeof o;                                                                 \
		o.field = val;                                                                     \
		assert_int_equal(options_resolve(&o, &c), code);                                   \
	} while (0)
	BAD(size, 0, -KNIT_EVERSION);
	BAD(size, sizeof o + 8, -KNIT_EVERSION);
	BAD(workers, KNIT_MAX_WORKERS + 1, -KNIT_EINVAL);
	BAD(topology, KNIT_TOPOLOGY_STEAL, 0);    /* accepted since issue 5 */
	BAD(steal_region_lanes, 3, -KNIT_EINVAL); /* not a power of two */
	BAD(topology, 7, -KNIT_EINVAL);
	BAD(balancer, 5, -KNIT_EINVAL);
	BAD(inline_lane, 3, -KNIT_EINVAL);
	BAD(doorbell, 3, -KNIT_EINVAL);
	BAD(spin_us, 1000001, -KNIT_EINVAL);
	BAD(park_ms, KNIT_ZERO, -KNIT_EINVAL);
	BAD(reserved0, 1, -KNIT_EINVAL);
	BAD(payload_max_bytes, 65535, -KNIT_EINVAL);
	BAD(payload_max_bytes, 4096ull << 20, -KNIT_EINVAL);
	BAD(payload_initial_bytes, (64ull << 20) + 1, -KNIT_EINVAL);
	BAD(max_payload_bytes, (8ull << 20) + 1, -KNIT_EINVAL);
	BAD(abort_capacity, kMaxAbortCapacity + 1, -KNIT_EINVAL);
	// A short struct: only `size` bytes are read (workers lies beyond).
	memset(&o, 0xFF, sizeof o);
	o.size = offsetof(knit_pool_options_t, workers);
	assert_int_equal(options_resolve(&o, &c), 0);
	assert_int_equal(c.workers, 1);
	// Edges that are fine.
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.payload_max_bytes = 64 * 1024;
	o.max_payload_bytes = 8 * 1024;
	assert_int_equal(options_resolve(&o, &c), 0);
	o.payload_max_bytes = (4096ull << 20) - 64;
	o.max_payload_bytes = 0;
	assert_int_equal(options_resolve(&o, &c), 0);
	assert_true(c.max_payload_bytes == o.payload_max_bytes / 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tickets_bound_and_generations),
		cmocka_unit_test(tickets_lazy_chunks),
		cmocka_unit_test(tickets_unique_across_generation_wrap),
		cmocka_unit_test(tickets_no_stale_cancel_after_wrap),
		cmocka_unit_test(heap_order_and_removal),
		cmocka_unit_test(options_defaults),
		cmocka_unit_test(options_errors),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
