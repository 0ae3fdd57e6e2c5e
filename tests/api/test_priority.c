/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_priority.c - priority classes (KNIT_CALL_HIGH, normal,
 * KNIT_CALL_LOW, 1.2): the worker is held in a blocked call and its lane
 * filled until calls wait in the backlog; then calls of the three classes are
 * enqueued interleaved and the worker released. The "record" task logs the
 * order the calls start in, which must be: what was in the lane already,
 * then every high call, then every normal one, then every low one, each class
 * in enqueue order. Run on the shared list (lanes, one worker), on a lane's
 * pinned queue (two workers, all pinned to lane 1), through knit_enqueue_many,
 * and on the steal topology's submit queue (one blocked worker of two
 * unblocked last). Also: both flags at once is -KNIT_EINVAL, and the
 * per-class counters of knit_pool_stats.
 */
#include "api/kt.h"

#define NS_PER_MS 1000000LL

static const uint32_t class_flag[3] = {KNIT_CALL_HIGH, 0, KNIT_CALL_LOW};

/* Enqueue record(arg) in class k (0 high, 1 normal, 2 low). */
static void enq_class(knit_pool_t *pool, int k, int64_t arg, int pin_lane)
{
	knit_call_options_t o = {.size = sizeof o, .flags = class_flag[k]};
	if (pin_lane >= 0) {
		o.flags |= KNIT_CALL_LANE;
		o.lane = (uint32_t)pin_lane;
	}
	knit_value_t a = kt_i64(arg);
	knit_ticket_t t;
	int rc = knit_enqueue_ex(pool, kt_id(pool, "record"), &a, NULL, &o, &t);
	cr_assert_eq(rc, 0, "knit_enqueue_ex(class %d): %s", k, knit_strerror(rc));
}

/* Fill the lane(s) behind the blocked call(s) with normal fillers (arg
 * -1000 - i) until one waits in the backlog; returns how many. */
static int fill(knit_pool_t *pool, int pin_lane)
{
	knit_pool_stats_t s;
	for (int i = 0; i < 4000; i++) {
		enq_class(pool, 1, -1000 - i, pin_lane);
		kt_stats(pool, &s);
		if (s.backlog > 0)
			return i + 1;
	}
	cr_assert_fail("no call ever waited in the backlog");
	return 0;
}

/* The interleaved calls: arg = class * 100 + i, for i < n per class. */
static void interleave(knit_pool_t *pool, int n, int pin_lane, int many)
{
	if (!many) {
		for (int i = 0; i < n; i++)
			for (int k = 2; k >= 0;
			     k--) /* low first: enqueue order is the worst case */
				enq_class(pool, k, k * 100 + i, pin_lane);
		return;
	}
	knit_request_t r[3 * 64];
	knit_value_t a[3 * 64];
	knit_call_options_t o[3];
	cr_assert(n <= 64);
	for (int k = 0; k < 3; k++) {
		o[k] = (knit_call_options_t){.size = sizeof o[k], .flags = class_flag[k]};
		if (pin_lane >= 0) {
			o[k].flags |= KNIT_CALL_LANE;
			o[k].lane = (uint32_t)pin_lane;
		}
	}
	int m = 0;
	for (int i = 0; i < n; i++)
		for (int k = 2; k >= 0; k--) {
			a[m] = kt_i64(k * 100 + i);
			r[m] = (knit_request_t){
				.task = kt_id(pool, "record"), .arg = &a[m], .opts = &o[k]};
			m++;
		}
	int done = 0;
	while (done < m) {
		int rc = knit_enqueue_many(pool, r + done, (uint32_t)(m - done), NULL);
		cr_assert(rc > 0, "knit_enqueue_many: %d", rc);
		done += rc;
	}
}

/* After release: the records past the fillers already in the lane. */
static void check_order(knit_pool_t *pool, int fillers, int blocks, int n)
{
	const int total = blocks + fillers + 3 * n;
	knit_completion_t c[64];
	int got = 0;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (got < total && kt_now_ns() < end) {
		int rc = knit_complete(pool, c, 64, 50 * NS_PER_MS);
		cr_assert(rc >= 0);
		for (int i = 0; i < rc; i++)
			cr_expect_eq(c[i].status, 0);
		got += rc;
	}
	cr_assert_eq(got, total);
	cr_assert_eq(atomic_load(&kt_nrecords), fillers + 3 * n);
	/* The fillers that were in the lane run first, in order; the last
	 * filler waited in the backlog (normal class). */
	int pos = 0;
	while (pos < fillers && kt_records[pos].arg <= -1000)
		pos++;
	cr_expect_geq(pos, fillers - 1, "only %d fillers ran before the rest", pos);
	int next[3] = {0, 0, 0}, last_class = 0, late_filler = pos < fillers;
	for (int i = pos; i < fillers + 3 * n; i++) {
		int64_t v = kt_records[i].arg;
		if (v <= -1000) {
			/* the backlogged filler: first of the normal class */
			cr_expect(late_filler && last_class <= 1 && next[1] == 0,
				  "record %d: the waiting filler ran out of its class's order", i);
			late_filler = 0;
			last_class = 1;
			continue;
		}
		int k = (int)(v / 100), j = (int)(v % 100);
		cr_assert(k >= 0 && k < 3 && j < n, "record %d: %lld", i, (long long)v);
		cr_expect_geq(k, last_class, "record %d: class %d ran after class %d", i, k,
			      last_class);
		cr_expect_eq(j, next[k], "record %d: class %d call %d, want %d (FIFO)", i, k, j,
			     next[k]);
		if (k == 1 && late_filler) {
			cr_expect_fail("record %d: a normal call overtook the normal filler that "
				       "waited first",
				       i);
			late_filler = 0;
		}
		next[k] = j + 1;
		last_class = k;
	}
	cr_expect(next[0] == n && next[1] == n && next[2] == n);
}

static void run_case(uint32_t workers, uint32_t topology, int pin_lane, int many)
{
	enum { N = 20 };
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = topology;
	o.max_pending = 4096;
	knit_pool_t *pool = kt_pool(&o);
	atomic_store(&kt_nrecords, 0);
	kt_gate_close();
	/* Hold every worker that would run these calls. */
	int blocks = pin_lane >= 0 ? 1 : (int)workers;
	for (int b = 0; b < blocks; b++) {
		knit_call_options_t po = {.size = sizeof po};
		if (pin_lane >= 0) {
			po.flags = KNIT_CALL_LANE;
			po.lane = (uint32_t)pin_lane;
		}
		knit_value_t a = kt_none();
		knit_ticket_t t;
		cr_assert_eq(knit_enqueue_ex(pool, kt_id(pool, "block"), &a, NULL, &po, &t), 0);
	}
	cr_assert(kt_wait_started(blocks), "the blocking calls did not start");
	int fillers = fill(pool, pin_lane);
	interleave(pool, N, pin_lane, many);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.class_enqueued[0], (uint64_t)N);
	cr_expect_eq(s.class_enqueued[2], (uint64_t)N);
	cr_expect_eq(s.class_enqueued[1], (uint64_t)(N + fillers + blocks));
	cr_expect_eq(s.class_backlogged[0], (uint64_t)N);
	cr_expect_eq(s.class_backlogged[2], (uint64_t)N);
	cr_expect_eq(s.class_backlogged[0] + s.class_backlogged[1] + s.class_backlogged[2],
		     s.backlogged);
	kt_gate_open();
	check_order(pool, fillers, blocks, N);
	kt_destroy(pool);
}

KT(priority, shared_list_lanes) { run_case(1, KNIT_TOPOLOGY_LANES, -1, 0); }

KT(priority, shared_list_burst) { run_case(1, KNIT_TOPOLOGY_LANES, -1, 1); }

KT(priority, pinned_queue) { run_case(2, KNIT_TOPOLOGY_LANES, 1, 0); }

KT(priority, pinned_queue_burst) { run_case(2, KNIT_TOPOLOGY_LANES, 1, 1); }

KT(priority, bad_flags)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_call_options_t o = {.size = sizeof o, .flags = KNIT_CALL_HIGH | KNIT_CALL_LOW};
	knit_value_t a = kt_i64(1);
	knit_ticket_t t;
	cr_expect_eq(knit_enqueue_ex(pool, kt_id(pool, "echo"), &a, NULL, &o, &t), -KNIT_EINVAL);
	knit_completion_t c;
	cr_expect_eq(knit_call_ex(pool, kt_id(pool, "echo"), &a, &o, NULL, &c, 0), -KNIT_EINVAL);
	/* A high call with nothing waiting runs at once, as any other. */
	o.flags = KNIT_CALL_HIGH;
	cr_assert_eq(knit_call_ex(pool, kt_id(pool, "echo"), &a, &o, NULL, &c, 0), 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 1);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.class_enqueued[0], 1);
	cr_expect_eq(s.class_enqueued[2], 0);
	kt_destroy(pool);
}
