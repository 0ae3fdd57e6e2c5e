/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_map.c - knit_map(3): one task over an array of items,
 * every item ending in exactly one completion at its own index, in input
 * order, each failing on its own (task errors, timeouts, a worker crash),
 * a cancel from another thread ending the items not started; bytes items;
 * thread and process pools on lanes and steal; EBUSY from a task of the
 * pool; every bad argument refused with its code and nothing written.
 */
#include "api/kt.h"

#include <pthread.h>
#include <stdlib.h>

static knit_value_t *i64_items(size_t n, int64_t base)
{
	knit_value_t *v = calloc(n ? n : 1, sizeof *v);
	cr_assert(v != NULL);
	for (size_t i = 0; i < n; i++)
		v[i] = kt_i64(base + (int64_t)i);
	return v;
}

static void release_all(knit_pool_t *pool, knit_completion_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(knit_completion_release(pool, &out[i]), 0);
}

/* Echo n items through pool, checking order and values. */
static void echo_map(knit_pool_t *pool, uint32_t echo, size_t n, uint32_t chunk)
{
	knit_value_t *args = i64_items(n, 1000);
	knit_completion_t *out = calloc(n ? n : 1, sizeof *out);
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = chunk;
	cr_assert_eq(knit_map(pool, echo, args, n, out, &o), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
		cr_assert_eq(out[i].result.type, KNIT_VALUE_I64);
		cr_assert_eq(out[i].result.i64, 1000 + (int64_t)i, "item %zu out of order", i);
		cr_assert_eq((uintptr_t)out[i].user_data, i);
	}
	release_all(pool, out, n);
	free(out);
	free(args);
}

static knit_pool_t *pool_topo(uint32_t workers, uint32_t topology, int procs)
{
	knit_pool_options_t o;
	if (procs)
		kt_proc_opts(&o, workers);
	else
		kt_opts(&o, workers);
	o.topology = topology;
	if (!procs)
		return kt_pool(&o);
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(&o, NULL, 0, &pool);
	cr_assert_eq(rc, 0, "knit_pool_create: %s: %s", knit_strerror(rc), knit_last_error());
	return pool;
}

static void orders(uint32_t workers, uint32_t topology, int procs)
{
	knit_pool_t *pool = pool_topo(workers, topology, procs);
	const uint32_t echo = kt_id(pool, "echo");
	static const size_t ns[] = {0, 1, 1000, 100000};
	for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
		echo_map(pool, echo, ns[k], 0);
	echo_map(pool, echo, 1000, 1);
	echo_map(pool, echo, 1000, 7);
	echo_map(pool, echo, 100, 1u << 30); /* clamped: still whole and in order */
	/* The pool serves plain calls after maps: nothing of a map left over. */
	knit_completion_t c;
	knit_value_t v = kt_i64(5);
	cr_assert_eq(knit_call(pool, echo, &v, &c, KT_TICKETED_NS), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(kt_quiet(pool, 20), 0, "a map left a completion behind");
	kt_destroy(pool);
}

KT(map, order_threads_one) { orders(1, KNIT_TOPOLOGY_AUTO, 0); }
KT(map, order_threads_lanes) { orders(2, KNIT_TOPOLOGY_LANES, 0); }
KT(map, order_threads_steal) { orders(2, KNIT_TOPOLOGY_STEAL, 0); }
KT(map, order_procs_lanes) { orders(2, KNIT_TOPOLOGY_LANES, 1); }
KT(map, order_procs_steal) { orders(2, KNIT_TOPOLOGY_STEAL, 1); }

/* Items fail on their own: "fail" fails items with a non-zero argument. */
KT(map, per_item_failure)
{
	knit_pool_t *pool = pool_topo(2, KNIT_TOPOLOGY_AUTO, 0);
	const uint32_t fail = kt_id(pool, "fail");
	const size_t n = 300;
	knit_value_t *args = calloc(n, sizeof *args);
	for (size_t i = 0; i < n; i++)
		args[i] = kt_i64(i % 3 == 0 ? 9 : 0);
	knit_completion_t *out = calloc(n, sizeof *out);
	cr_assert_eq(knit_map(pool, fail, args, n, out, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		if (i % 3 == 0) {
			cr_expect_eq(out[i].status, -KNIT_ETASK, "item %zu", i);
			cr_expect_eq(out[i].result.type, KNIT_VALUE_ERROR);
			cr_expect_eq(out[i].result.code, 9);
		} else
			cr_expect_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
	}
	release_all(pool, out, n);
	free(out);
	free(args);
	kt_destroy(pool);
}

/* A per-item timeout (from the item's enqueue): the last item sleeps past
 * it and times out, the others, with no call queued behind it, not. */
KT(map, timeout)
{
	knit_pool_t *pool = pool_topo(2, KNIT_TOPOLOGY_LANES, 0);
	const uint32_t sleep = kt_id(pool, "sleep");
	const size_t n = 8;
	knit_value_t args[8];
	for (size_t i = 0; i < n; i++)
		args[i] = kt_i64(i == 7 ? 3000 : 0);
	knit_completion_t out[8];
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = 1;
	o.timeout_ms = 200;
	cr_assert_eq(knit_map(pool, sleep, args, n, out, &o), 0);
	cr_expect_eq(out[7].status, -KNIT_ETIMEDOUT, "%d", out[7].status);
	for (size_t i = 0; i < n; i++)
		if (i != 7)
			cr_expect_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
	release_all(pool, out, n);
	kt_destroy(pool);
}

struct canceller {
	volatile int flag;
	int after; /* blocked items started before the flag goes up */
};

static void *cancel_thread(void *arg)
{
	struct canceller *c = arg;
	kt_wait_started(c->after);
	__atomic_store_n(&c->flag, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Cancelled from another thread while items block: each item ends with
 * exactly one status, 0 or -KNIT_ECANCELED, and the blocked ones and those
 * never started are cancelled. */
static void cancels(uint32_t topology, uint32_t chunk)
{
	knit_pool_t *pool = pool_topo(2, topology, 0);
	const uint32_t block = kt_id(pool, "block");
	kt_gate_close();
	atomic_store(&kt_started, 0);
	const size_t n = 1000;
	knit_value_t *args = i64_items(n, 0);
	knit_completion_t *out = calloc(n, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i].status = 12345; /* not a status a map gives */
	struct canceller c = {0, 2};
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = chunk;
	o.cancel = &c.flag;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, cancel_thread, &c), 0);
	cr_assert_eq(knit_map(pool, block, args, n, out, &o), 0);
	pthread_join(th, NULL);
	size_t cancelled = 0;
	for (size_t i = 0; i < n; i++) {
		cr_assert(out[i].status == 0 || out[i].status == -KNIT_ECANCELED, "item %zu: %d", i,
			  out[i].status);
		cancelled += out[i].status == -KNIT_ECANCELED;
	}
	/* At most the two blocked items' windows ran; the rest never started. */
	cr_expect_geq(cancelled, n - 2 * chunk, "only %zu cancelled", cancelled);
	kt_gate_open();
	release_all(pool, out, n);
	cr_expect_eq(kt_quiet(pool, 50), 0, "a cancelled map left a completion behind");
	free(out);
	free(args);
	kt_destroy(pool);
}

/* chunk 16: packed chunks (a cancel ends a chunk in flight whole); chunk
 * 1: one call per item. */
KT(map, cancel_lanes) { cancels(KNIT_TOPOLOGY_LANES, 16); }
KT(map, cancel_steal) { cancels(KNIT_TOPOLOGY_STEAL, 16); }
KT(map, cancel_calls) { cancels(KNIT_TOPOLOGY_LANES, 1); }

/* A flag already up: nothing runs, every item cancelled. */
KT(map, cancel_before)
{
	knit_pool_t *pool = kt_pool_n(1);
	const uint32_t echo = kt_id(pool, "echo");
	knit_value_t args[5];
	for (int i = 0; i < 5; i++)
		args[i] = kt_i64(i);
	knit_completion_t out[5];
	volatile int flag = 1;
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.cancel = &flag;
	cr_assert_eq(knit_map(pool, echo, args, 5, out, &o), 0);
	for (int i = 0; i < 5; i++) {
		cr_expect_eq(out[i].status, -KNIT_ECANCELED);
		cr_expect_eq(out[i].result.type, KNIT_VALUE_NONE);
	}
	release_all(pool, out, 5);
	kt_destroy(pool);
}

/* Bytes items in, bytes results out (inline and arena sizes). */
static void bytes_map(int procs)
{
	knit_pool_t *pool = pool_topo(2, KNIT_TOPOLOGY_AUTO, procs);
	const uint32_t echo = kt_id(pool, "echo");
	const size_t n = 64;
	static const size_t lens[] = {0, 1, 63, 200, 5000, 70000};
	uint8_t *pat = kt_pattern(70000);
	knit_value_t args[64];
	for (size_t i = 0; i < n; i++)
		args[i] = kt_bytes(pat, lens[i % 6]);
	knit_completion_t out[64];
	cr_assert_eq(knit_map(pool, echo, args, n, out, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
		cr_assert_eq(out[i].result.type, KNIT_VALUE_BYTES);
		cr_assert_eq(out[i].result.len, lens[i % 6], "item %zu", i);
		cr_assert(out[i].result.len == 0 ||
			  memcmp(out[i].result.data, pat, out[i].result.len) == 0);
	}
	release_all(pool, out, n);
	free(pat);
	kt_destroy(pool);
}

KT(map, bytes_threads) { bytes_map(0); }
KT(map, bytes_procs) { bytes_map(1); }

/* A worker process crashes on item 7: that item gets -KNIT_ECRASHED; an item
 * in flight beside it may share its fate (the call semantics: a worker's
 * taken calls die with it), at most the map's window of 2 * chunk; every
 * other item its echo, each once. */
static void crash(uint32_t topology, uint32_t chunk)
{
	knit_pool_t *pool = pool_topo(2, topology, 1);
	const uint32_t segv = kt_id(pool, "segv_at");
	const size_t n = 200;
	knit_value_t *args = i64_items(n, 0);
	knit_completion_t *out = calloc(n, sizeof *out);
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = chunk;
	cr_assert_eq(knit_map(pool, segv, args, n, out, &o), 0);
	cr_expect_eq(out[7].status, -KNIT_ECRASHED, "%d", out[7].status);
	size_t crashed = 0;
	for (size_t i = 0; i < n; i++) {
		if (out[i].status == -KNIT_ECRASHED) {
			crashed++;
			continue;
		}
		cr_expect_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
		cr_expect_eq(out[i].result.i64, (int64_t)i);
	}
	cr_expect_leq(crashed, 2 * chunk, "%zu crashed", crashed);
	/* The respawned worker serves the next map whole. */
	echo_map(pool, kt_id(pool, "echo"), 500, 0);
	release_all(pool, out, n);
	free(out);
	free(args);
	kt_destroy(pool);
}

/* chunk 8: packed (the chunk that crashed, and one more of its lane's,
 * end -KNIT_ECRASHED whole); chunk 1: one call per item. */
KT(map, crash_lanes) { crash(KNIT_TOPOLOGY_LANES, 8); }
KT(map, crash_steal) { crash(KNIT_TOPOLOGY_STEAL, 8); }
KT(map, crash_calls) { crash(KNIT_TOPOLOGY_LANES, 1); }

/* ---- packed chunks ------------------------------------------------------------------- */

static uint64_t enqueued(knit_pool_t *pool)
{
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	cr_assert_eq(knit_pool_stats(pool, &st, sizeof st), 0);
	return st.enqueued;
}

/* A packed chunk is one call: 1000 items in chunks of 100 are 10 calls, in
 * chunks of 1 (one call per item) 1000; a timeout makes every item its own
 * call whatever the chunk. */
KT(map, packed_calls)
{
	knit_pool_t *pool = kt_pool_n(2);
	const uint32_t echo = kt_id(pool, "echo");
	uint64_t e0 = enqueued(pool);
	echo_map(pool, echo, 1000, 100);
	cr_expect_eq(enqueued(pool) - e0, 10);
	e0 = enqueued(pool);
	echo_map(pool, echo, 1000, 1);
	cr_expect_eq(enqueued(pool) - e0, 1000);
	knit_value_t *args = i64_items(100, 0);
	knit_completion_t out[100];
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = 50;
	o.timeout_ms = 60000;
	e0 = enqueued(pool);
	cr_assert_eq(knit_map(pool, echo, args, 100, out, &o), 0);
	cr_expect_eq(enqueued(pool) - e0, 100);
	for (size_t i = 0; i < 100; i++)
		cr_expect_eq(out[i].result.i64, (int64_t)i);
	release_all(pool, out, 100);
	free(args);
	kt_destroy(pool);
}

/* Every kind of value through a packed chunk, in and out, beside errors. */
static void values_map(int procs)
{
	knit_pool_t *pool = pool_topo(2, KNIT_TOPOLOGY_AUTO, procs);
	const uint32_t echo = kt_id(pool, "echo");
	static const char msg[] = "an error value";
	knit_value_t args[7];
	args[0] = kt_none();
	args[1] = kt_i64(-7);
	args[2].type = KNIT_VALUE_BOOL;
	args[2].i64 = 1;
	memset(&args[3], 0, sizeof args[3]);
	args[3].type = KNIT_VALUE_F64;
	args[3].f64 = -0.5;
	args[4] = kt_bytes(msg, 5);
	memset(&args[5], 0, sizeof args[5]);
	args[5].type = KNIT_VALUE_STRING;
	args[5].data = msg;
	args[5].len = sizeof msg - 1;
	memset(&args[6], 0, sizeof args[6]);
	args[6].type = KNIT_VALUE_ERROR;
	args[6].code = 42;
	args[6].data = msg;
	args[6].len = sizeof msg - 1;
	knit_completion_t out[7];
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = 7;
	cr_assert_eq(knit_map(pool, echo, args, 7, out, &o), 0);
	for (size_t i = 0; i < 7; i++) {
		cr_assert_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
		cr_assert_eq(out[i].result.type, args[i].type, "item %zu", i);
		cr_expect_eq((uintptr_t)out[i].user_data, i);
	}
	cr_expect_eq(out[1].result.i64, -7);
	cr_expect_eq(out[2].result.i64, 1);
	cr_expect(out[3].result.f64 == -0.5);
	cr_expect_eq(out[4].result.len, 5);
	cr_expect(memcmp(out[4].result.data, msg, 5) == 0);
	for (size_t i = 5; i < 7; i++) {
		cr_expect_eq(out[i].result.len, sizeof msg - 1);
		cr_expect_str_eq((const char *)out[i].result.data, msg);
	}
	cr_expect_eq(out[6].result.code, 42);
	release_all(pool, out, 7);
	kt_destroy(pool);
}

KT(map, packed_values_threads) { values_map(0); }
KT(map, packed_values_procs) { values_map(1); }

/* A chunk's outcomes share one call's limit: an item whose result does
 * not fit what the chunk's earlier items left ends -KNIT_ETOOBIG on its
 * own; one call per item (chunk 1), each fits. */
KT(map, packed_result_room)
{
	knit_pool_options_t po;
	kt_opts(&po, 1);
	po.payload_max_bytes = 1u << 20;
	po.max_payload_bytes = 64u << 10;
	knit_pool_t *pool = kt_pool(&po);
	const uint32_t alloc = kt_id(pool, "alloc");
	knit_value_t args[4] = {kt_i64(40000), kt_i64(40000), kt_i64(10), kt_i64(40000)};
	knit_completion_t out[4];
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = 4;
	cr_assert_eq(knit_map(pool, alloc, args, 4, out, &o), 0);
	static const int want[4] = {0, -KNIT_ETOOBIG, 0, -KNIT_ETOOBIG};
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(out[i].status, want[i], "item %zu: %d", i, out[i].status);
		if (want[i] == 0)
			cr_expect_eq(out[i].result.len, (size_t)args[i].i64);
		else
			cr_expect_eq(out[i].result.type, KNIT_VALUE_NONE);
	}
	release_all(pool, out, 4);
	o.chunk = 1;
	cr_assert_eq(knit_map(pool, alloc, args, 4, out, &o), 0);
	for (size_t i = 0; i < 4; i++)
		cr_expect_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
	release_all(pool, out, 4);
	kt_destroy(pool);
}

/* ---- a pool with an inline lane: the caller helps ------------------------------------ */

static knit_pool_t *pool_inline(uint32_t workers)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.inline_lane = KNIT_INLINE_LAST;
	return kt_pool(&o);
}

/* The caller runs items itself, on the inline lane (knit_ctx_lane is
 * `workers`, the item's ticket 0): at least its first piece, and all of
 * items cheaper than a hand-off; every item once, in order, whole. */
KT(map, inline_helps)
{
	knit_pool_t *pool = pool_inline(1);
	const uint32_t echo = kt_id(pool, "echo");
	echo_map(pool, echo, 1000, 0);
	echo_map(pool, echo, 100000, 0);
	echo_map(pool, echo, 1000, 7);
	const uint32_t lane = kt_id(pool, "lane");
	const size_t n = 2000;
	knit_value_t *args = i64_items(n, 0);
	knit_completion_t *out = calloc(n, sizeof *out);
	cr_assert_eq(knit_map(pool, lane, args, n, out, NULL), 0);
	size_t caller = 0;
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
		cr_assert(out[i].result.i64 == 0 || out[i].result.i64 == 1, "item %zu ran on %lld",
			  i, (long long)out[i].result.i64);
		if (out[i].result.i64 == 1) {
			caller++;
			cr_expect_eq(out[i].ticket, 0, "item %zu", i);
		} else {
			cr_expect_neq(out[i].ticket, 0, "item %zu", i);
		}
	}
	cr_expect_geq(caller, 64, "the caller ran %zu items", caller);
	release_all(pool, out, n);
	free(out);
	free(args);
	/* Items dearer than a hand-off: chunks go to the worker while the
	 * caller runs pieces itself; both ran some, each item once. */
	const uint32_t sleep = kt_id(pool, "sleep");
	knit_value_t sargs[200];
	knit_completion_t sout[200];
	for (size_t i = 0; i < 200; i++)
		sargs[i] = kt_i64(1);
	cr_assert_eq(knit_map(pool, sleep, sargs, 200, sout, NULL), 0);
	size_t by_caller = 0;
	for (size_t i = 0; i < 200; i++) {
		cr_assert_eq(sout[i].status, 0, "item %zu: %d", i, sout[i].status);
		cr_expect_eq((uintptr_t)sout[i].user_data, i);
		by_caller += sout[i].ticket == 0;
	}
	cr_expect(by_caller >= 64 && by_caller < 200, "the caller ran %zu of 200", by_caller);
	release_all(pool, sout, 200);
	cr_expect_eq(kt_quiet(pool, 20), 0, "a helping map left a completion behind");
	kt_destroy(pool);
}

/* Failures, errors and bytes from items the caller ran are each item's own,
 * as a worker's are. */
KT(map, inline_outcomes)
{
	knit_pool_t *pool = pool_inline(2);
	const uint32_t fail = kt_id(pool, "fail");
	const size_t n = 300;
	knit_value_t *args = calloc(n, sizeof *args);
	for (size_t i = 0; i < n; i++)
		args[i] = kt_i64(i % 3 == 0 ? 9 : 0);
	knit_completion_t *out = calloc(n, sizeof *out);
	cr_assert_eq(knit_map(pool, fail, args, n, out, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		if (i % 3 == 0) {
			cr_expect_eq(out[i].status, -KNIT_ETASK, "item %zu", i);
			cr_expect_eq(out[i].result.code, 9);
		} else
			cr_expect_eq(out[i].status, 0, "item %zu: %d", i, out[i].status);
	}
	release_all(pool, out, n);
	free(out);
	free(args);
	const uint32_t echo = kt_id(pool, "echo");
	uint8_t *pat = kt_pattern(5000);
	knit_value_t b[64];
	for (size_t i = 0; i < 64; i++)
		b[i] = kt_bytes(pat, (i * 79) % 5000);
	knit_completion_t bo[64];
	cr_assert_eq(knit_map(pool, echo, b, 64, bo, NULL), 0);
	for (size_t i = 0; i < 64; i++) {
		cr_assert_eq(bo[i].status, 0, "item %zu: %d", i, bo[i].status);
		cr_assert_eq(bo[i].result.len, (i * 79) % 5000);
		cr_assert(bo[i].result.len == 0 ||
			  memcmp(bo[i].result.data, pat, bo[i].result.len) == 0);
	}
	release_all(pool, bo, 64);
	free(pat);
	kt_destroy(pool);
}

/* ---- from a task of the same pool ---------------------------------------------- */

static knit_pool_t *own_pool;

static int t_nop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	ret->type = KNIT_VALUE_NONE;
	return 0;
}

static int t_probe(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	knit_value_t v = kt_none();
	knit_completion_t c;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = knit_map(own_pool, 0, &v, 1, &c, NULL);
	return 0;
}

static const knit_task_t own_tasks[] = {
	{"a_nop", t_nop, 0, 0, NULL, {0, 0}},
	{"b_probe", t_probe, 0, 0, NULL, {0, 0}},
};

KT(map, ebusy_from_task)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	cr_assert_eq(knit_pool_create(&o, own_tasks, 2, &own_pool), 0);
	knit_value_t v = kt_none();
	knit_completion_t c;
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(knit_call(own_pool, 1, &v, &c, KT_TICKETED_NS), 0);
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.i64, -KNIT_EBUSY);
	}
	cr_assert_eq(knit_map(own_pool, 0, &v, 1, &c, NULL), 0);
	cr_expect_eq(c.status, 0);
	kt_destroy(own_pool);
	/* An item the map's caller runs itself (an inline lane) is in a task
	 * of the pool too. */
	kt_opts(&o, 1);
	o.inline_lane = KNIT_INLINE_LAST;
	cr_assert_eq(knit_pool_create(&o, own_tasks, 2, &own_pool), 0);
	cr_assert_eq(knit_map(own_pool, 1, &v, 1, &c, NULL), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.ticket, 0, "the caller ran it");
	cr_expect_eq(c.result.i64, -KNIT_EBUSY);
	kt_destroy(own_pool);
}

/* Items that are not valid values, or over the per-call limit, end on
 * their own, never run; the items beside them run: packed, one call per
 * item, and with the caller helping. */
static void bad_items(int inl, uint32_t chunk)
{
	knit_pool_options_t po;
	kt_opts(&po, 1);
	po.payload_max_bytes = 1u << 20;
	po.max_payload_bytes = 64u << 10;
	if (inl)
		po.inline_lane = KNIT_INLINE_LAST;
	knit_pool_t *pool = kt_pool(&po);
	const uint32_t echo = kt_id(pool, "echo");
	uint8_t *pat = kt_pattern(70000);
	knit_value_t a[7];
	a[0] = kt_i64(1);
	memset(&a[1], 0, sizeof a[1]);
	a[1].type = 99;
	memset(&a[2], 0, sizeof a[2]);
	a[2].type = KNIT_VALUE_BOOL;
	a[2].i64 = 2;
	memset(&a[3], 0, sizeof a[3]);
	a[3].type = KNIT_VALUE_BYTES;
	a[3].len = 5; /* NULL data */
	a[4] = kt_i64(4);
	a[5] = kt_bytes(pat, 70000);
	a[6] = kt_bytes(pat, 100);
	static const int want[7] = {0, -KNIT_EINVAL, -KNIT_EINVAL, -KNIT_EINVAL, 0, -KNIT_ETOOBIG,
				    0};
	knit_completion_t out[7];
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.chunk = chunk;
	cr_assert_eq(knit_map(pool, echo, a, 7, out, &o), 0);
	for (size_t i = 0; i < 7; i++) {
		cr_expect_eq(out[i].status, want[i], "item %zu: %d", i, out[i].status);
		cr_expect_eq((uintptr_t)out[i].user_data, i);
		if (want[i] != 0)
			cr_expect_eq(out[i].result.type, KNIT_VALUE_NONE, "item %zu", i);
	}
	cr_expect_eq(out[4].result.i64, 4);
	cr_expect_eq(out[6].result.len, 100);
	release_all(pool, out, 7);
	free(pat);
	kt_destroy(pool);
}

KT(map, bad_items_packed) { bad_items(0, 0); }
KT(map, bad_items_calls) { bad_items(0, 1); }
KT(map, bad_items_helped) { bad_items(1, 0); }

/* ---- bad arguments ------------------------------------------------------------------ */

KT(map, argument_errors)
{
	knit_pool_t *pool = kt_pool_n(1);
	const uint32_t echo = kt_id(pool, "echo");
	knit_value_t v = kt_i64(1);
	knit_completion_t c;
	memset(&c, 0x5a, sizeof c);
	knit_map_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	cr_expect_eq(knit_map(NULL, echo, &v, 1, &c, NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_map(pool, echo, NULL, 1, &c, NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_map(pool, echo, &v, 1, NULL, NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_map(pool, 100000, &v, 1, &c, NULL), -KNIT_ENOTASK);
	cr_expect_eq(knit_map(pool, 100000, NULL, 0, NULL, NULL), -KNIT_ENOTASK);
	o.size = 4;
	cr_expect_eq(knit_map(pool, echo, &v, 1, &c, &o), -KNIT_EVERSION);
	o.size = sizeof o + 8;
	cr_expect_eq(knit_map(pool, echo, &v, 1, &c, &o), -KNIT_EVERSION);
	o.size = sizeof o;
	o.flags = KNIT_CALL_LANE;
	cr_expect_eq(knit_map(pool, echo, &v, 1, &c, &o), -KNIT_EINVAL);
	o.flags = KNIT_CALL_HIGH | KNIT_CALL_LOW;
	cr_expect_eq(knit_map(pool, echo, &v, 1, &c, &o), -KNIT_EINVAL);
	o.flags = 1u << 20;
	cr_expect_eq(knit_map(pool, echo, &v, 1, &c, &o), -KNIT_EINVAL);
	o.flags = 0;
	o.reserved[1] = 1;
	cr_expect_eq(knit_map(pool, echo, &v, 1, &c, &o), -KNIT_EINVAL);
	/* Nothing was written, nothing enqueued. */
	unsigned char *b = (unsigned char *)&c;
	for (size_t i = 0; i < sizeof c; i++)
		cr_assert_eq(b[i], 0x5a);
	cr_expect_eq(kt_quiet(pool, 20), 0);
	/* n = 0: valid with NULL arrays. */
	cr_expect_eq(knit_map(pool, echo, NULL, 0, NULL, NULL), 0);
	/* A stopped pool refuses the map. */
	cr_assert_eq(knit_stop(pool, KNIT_STOP_DRAIN, KT_TICKETED_NS), 0);
	cr_expect_eq(knit_map(pool, echo, &v, 1, &c, NULL), -KNIT_ECLOSED);
	kt_destroy(pool);
}
