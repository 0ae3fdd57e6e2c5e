/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_create.c - knit_pool_create, knit_pool_task_id,
 * knit_pool_destroy: argument checks, every option's validation (one bad
 * value per test), defaults, task-name ordering, and the steal seam.
 */
#include "api/kt.h"

#include <stdio.h>
#include <stdlib.h>

static int noop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	(void)ret;
	return 0;
}

static int ret_1(knit_ctx_t *c, const knit_value_t *a, knit_value_t *r)
{
	(void)c, (void)a;
	*r = kt_i64(1);
	return 0;
}
static int ret_2(knit_ctx_t *c, const knit_value_t *a, knit_value_t *r)
{
	(void)c, (void)a;
	*r = kt_i64(2);
	return 0;
}
static int ret_3(knit_ctx_t *c, const knit_value_t *a, knit_value_t *r)
{
	(void)c, (void)a;
	*r = kt_i64(3);
	return 0;
}
static int ret_4(knit_ctx_t *c, const knit_value_t *a, knit_value_t *r)
{
	(void)c, (void)a;
	*r = kt_i64(4);
	return 0;
}

static const knit_task_t one_task[] = {{"noop", noop, 0, 0}};

/* Create with opts and one task; returns the code, destroys a made pool. */
static int try_create(const knit_pool_options_t *o)
{
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(o, one_task, 1, &pool);
	if (rc == 0) {
		cr_assert_not_null(pool);
		cr_assert_eq(knit_pool_destroy(pool), 0);
	}
	return rc;
}

static int try_tasks(const knit_task_t *t, size_t n)
{
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(NULL, t, n, &pool);
	if (rc == 0)
		cr_assert_eq(knit_pool_destroy(pool), 0);
	return rc;
}

#define EXPECT_OPT(field, value, code)                                                             \
	do {                                                                                       \
		knit_pool_options_t o;                                                             \
		kt_opts(&o, 1);                                                                    \
		o.field = (value);                                                                 \
		int rc_ = try_create(&o);                                                          \
		cr_expect_eq(rc_, (code), #field " = " #value ": expected %d, got %d (%s)",        \
			     (code), rc_, knit_strerror(rc_));                                     \
	} while (0)

/* ---- arguments -------------------------------------------------------------- */

KT(create, null_out) { cr_expect_eq(knit_pool_create(NULL, one_task, 1, NULL), -KNIT_EINVAL); }

KT(create, null_tasks)
{
	knit_pool_t *pool = (knit_pool_t *)0x1;
	cr_expect_eq(knit_pool_create(NULL, NULL, 1, &pool), -KNIT_EINVAL);
}

KT(create, zero_tasks)
{
	knit_pool_t *pool = NULL;
	cr_expect_eq(knit_pool_create(NULL, one_task, 0, &pool), -KNIT_EINVAL);
}

KT(create, too_many_tasks)
{
	size_t n = 65536;
	knit_task_t *t = calloc(n, sizeof *t);
	char *names = calloc(n, 8);
	cr_assert(t && names);
	for (size_t i = 0; i < n; i++) {
		snprintf(names + 8 * i, 8, "t%05zx", i);
		t[i].name = names + 8 * i;
		t[i].fn = noop;
	}
	cr_expect_eq(try_tasks(t, n), -KNIT_EINVAL, "65536 tasks must be refused");
	/* 65535 is the largest accepted count. */
	cr_expect_eq(try_tasks(t, n - 1), 0, "65535 tasks must be accepted");
	free(t);
	free(names);
}

KT(create, task_null_name)
{
	knit_task_t t[] = {{NULL, noop, 0, 0}};
	cr_expect_eq(try_tasks(t, 1), -KNIT_EINVAL);
}

KT(create, task_empty_name)
{
	knit_task_t t[] = {{"", noop, 0, 0}};
	cr_expect_eq(try_tasks(t, 1), -KNIT_EINVAL);
}

KT(create, task_duplicate_name)
{
	knit_task_t t[] = {{"a", noop, 0, 0}, {"b", noop, 0, 0}, {"a", ret_1, 0, 0}};
	cr_expect_eq(try_tasks(t, 3), -KNIT_EINVAL);
}

KT(create, task_null_fn)
{
	knit_task_t t[] = {{"a", noop, 0, 0}, {"b", NULL, 0, 0}};
	cr_expect_eq(try_tasks(t, 2), -KNIT_EINVAL);
}

KT(create, task_unknown_flags)
{
	knit_task_t t[] = {{"a", noop, 0, 1u << 1}};
	cr_expect_eq(try_tasks(t, 1), -KNIT_EINVAL);
	knit_task_t u[] = {{"a", noop, 0, 0x80000000u}};
	cr_expect_eq(try_tasks(u, 1), -KNIT_EINVAL);
	knit_task_t ok[] = {{"a", noop, 0, KNIT_TASK_ABORTABLE}};
	cr_expect_eq(try_tasks(ok, 1), 0);
}

KT(create, null_opts_defaults)
{
	knit_pool_t *pool = NULL;
	cr_assert_eq(knit_pool_create(NULL, one_task, 1, &pool), 0);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.workers, 1, "workers default 1, got %u", s.workers);
	cr_expect_eq(s.lanes, 1);
	cr_expect_eq(s.topology, KNIT_TOPOLOGY_LANES);
	cr_expect_eq(knit_pool_destroy(pool), 0);
}

KT(create, workers_zero_means_one)
{
	knit_pool_options_t o;
	kt_opts(&o, 0);
	knit_pool_t *pool = kt_pool(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.workers, 1);
	kt_destroy(pool);
}

KT(create, workers_count_reported)
{
	knit_pool_t *pool = kt_pool_n(3);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.workers, 3);
	cr_expect_eq(s.lanes, 3);
	kt_destroy(pool);
}

/* ---- struct size ------------------------------------------------------------- */

KT(create, opts_size_zero)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.size = 0;
	cr_expect_eq(try_create(&o), -KNIT_EVERSION);
}

KT(create, opts_size_too_big)
{
	struct {
		knit_pool_options_t o;
		uint64_t extra[4];
	} big;
	memset(&big, 0, sizeof big);
	kt_opts(&big.o, 1);
	big.o.size = sizeof big.o + 8;
	cr_expect_eq(try_create(&big.o), -KNIT_EVERSION);
}

KT(create, opts_size_shorter_reads_prefix_only)
{
	/* An older caller's struct: only size and workers. Everything after is
	 * garbage that must not be read (it would be invalid if it were). */
	knit_pool_options_t o;
	memset(&o, 0xEE, sizeof o);
	o.size = offsetof(knit_pool_options_t, topology);
	o.workers = 2;
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(&o, kt_tasks, KT_NTASKS, &pool);
	cr_assert_eq(rc, 0, "short opts: %d", rc);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.workers, 2);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 5}, &c, 0),
		     0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 5);
	knit_completion_release(pool, &c);
	cr_expect_eq(knit_pool_destroy(pool), 0);
}

KT(create, opts_reserved_nonzero) { EXPECT_OPT(reserved0, 1, -KNIT_EINVAL); }

/* ---- each option, one bad value per expectation ---------------------------- */

KT(create, workers_over_max)
{
	EXPECT_OPT(workers, KNIT_MAX_WORKERS + 1, -KNIT_EINVAL);
	EXPECT_OPT(workers, UINT32_MAX, -KNIT_EINVAL);
}

KT(create, topology_unknown)
{
	EXPECT_OPT(topology, 3, -KNIT_EINVAL);
	EXPECT_OPT(topology, UINT32_MAX, -KNIT_EINVAL);
	EXPECT_OPT(topology, KNIT_TOPOLOGY_LANES, 0);
	EXPECT_OPT(topology, KNIT_TOPOLOGY_AUTO, 0);
}

KT(create, balancer_unknown)
{
	EXPECT_OPT(balancer, 5, -KNIT_EINVAL);
	for (uint32_t b = 0; b <= 4; b++)
		EXPECT_OPT(balancer, b, 0);
}

KT(create, inline_lane_unknown)
{
	EXPECT_OPT(inline_lane, 3, -KNIT_EINVAL);
	EXPECT_OPT(inline_lane, KNIT_INLINE_FIRST, 0);
	EXPECT_OPT(inline_lane, KNIT_INLINE_LAST, 0);
}

KT(create, doorbell_unknown)
{
	EXPECT_OPT(doorbell, 3, -KNIT_EINVAL);
	EXPECT_OPT(doorbell, KNIT_DOORBELL_ON, 0);
	EXPECT_OPT(doorbell, KNIT_DOORBELL_OFF, 0);
}

/*
 * THE STEAL SEAM (issue 5 landed): an explicit KNIT_TOPOLOGY_STEAL is
 * accepted (also with one worker), AUTO picks STEAL for 2 workers; the
 * combinations below stay errors. More in tests/api/test_steal.c.
 */
KT(create, steal_supported)
{
	EXPECT_OPT(topology, KNIT_TOPOLOGY_STEAL, 0);
	knit_pool_t *pool = kt_pool_n(2);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.topology, KNIT_TOPOLOGY_STEAL, "AUTO with 2 workers picks STEAL");
	kt_destroy(pool);
}

KT(create, steal_with_balancer_or_inline)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.balancer = KNIT_BALANCE_RANDOM;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL);
	kt_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_STEAL;
	o.inline_lane = KNIT_INLINE_LAST;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL);
}

KT(create, auto_with_inline_or_balancer_is_lanes)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.inline_lane = KNIT_INLINE_LAST;
	knit_pool_t *pool = kt_pool(&o);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.topology, KNIT_TOPOLOGY_LANES);
	cr_expect_eq(s.lanes, 3);
	kt_destroy(pool);
	kt_opts(&o, 2);
	o.balancer = KNIT_BALANCE_FIRST_IDLE;
	pool = kt_pool(&o);
	kt_stats(pool, &s);
	cr_expect_eq(s.topology, KNIT_TOPOLOGY_LANES);
	kt_destroy(pool);
}

KT(create, payload_max_bounds)
{
	EXPECT_OPT(payload_max_bytes, 64 * 1024 - 1, -KNIT_EINVAL);
	EXPECT_OPT(payload_max_bytes, 64 * 1024, 0);
	EXPECT_OPT(payload_max_bytes, (4ull << 30) - 64 + 1, -KNIT_EINVAL);
	EXPECT_OPT(payload_max_bytes, UINT64_MAX, -KNIT_EINVAL);
	/* The largest allowed value is only reserved, committed on use. */
	EXPECT_OPT(payload_max_bytes, (4ull << 30) - 64, 0);
}

KT(create, payload_initial_over_max)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.payload_max_bytes = 1 << 20;
	o.payload_initial_bytes = (1 << 20) + 1;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL);
	o.payload_initial_bytes = 1 << 20;
	cr_expect_eq(try_create(&o), 0);
	/* Against the default max (64 MiB). */
	kt_opts(&o, 1);
	o.payload_initial_bytes = (64ull << 20) + 1;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL);
}

KT(create, max_payload_over_eighth)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.payload_max_bytes = 1 << 20;
	o.max_payload_bytes = (1 << 20) / 8 + 1;
	cr_expect_eq(try_create(&o), -KNIT_EINVAL);
	o.max_payload_bytes = (1 << 20) / 8;
	cr_expect_eq(try_create(&o), 0);
	/* Against the default max (64 MiB -> 8 MiB). */
	EXPECT_OPT(max_payload_bytes, (8ull << 20) + 1, -KNIT_EINVAL);
	EXPECT_OPT(max_payload_bytes, 8ull << 20, 0);
}

KT(create, spin_us_bounds)
{
	EXPECT_OPT(spin_us, 1000000 + 1, -KNIT_EINVAL);
	EXPECT_OPT(spin_us, 1000000, 0);
	EXPECT_OPT(spin_us, KNIT_ZERO, 0);
	EXPECT_OPT(spin_us, 0, 0);
}

KT(create, park_ms_zero_refused)
{
	EXPECT_OPT(park_ms, KNIT_ZERO, -KNIT_EINVAL);
	EXPECT_OPT(park_ms, 0, 0);
	EXPECT_OPT(park_ms, 1, 0);
}

KT(create, other_options_accept_any)
{
	EXPECT_OPT(stall_free_loops, KNIT_ZERO, 0);
	EXPECT_OPT(stall_free_loops, 1000, 0);
	EXPECT_OPT(max_backoff_ms, 1, 0);
	EXPECT_OPT(abort_capacity, 1, 0);
	EXPECT_OPT(hard_timeout_ms, 1000, 0);
	EXPECT_OPT(max_pending, 1, 0);
	EXPECT_OPT(inline_batch, 8, 0);
}

/* ---- task ids ------------------------------------------------------------------- */

KT(create, task_ids_sorted_bytewise)
{
	/* strcmp order: "B" < "a" < "ab" < "b". */
	knit_task_t t[] = {
		{"b", ret_4, 0, 0},
		{"ab", ret_3, 0, 0},
		{"B", ret_1, 0, 0},
		{"a", ret_2, 0, 0},
	};
	knit_pool_t *pool = NULL;
	cr_assert_eq(knit_pool_create(NULL, t, 4, &pool), 0);
	cr_expect_eq(knit_pool_task_id(pool, "B"), 0);
	cr_expect_eq(knit_pool_task_id(pool, "a"), 1);
	cr_expect_eq(knit_pool_task_id(pool, "ab"), 2);
	cr_expect_eq(knit_pool_task_id(pool, "b"), 3);
	/* Id i runs the task at sorted position i. */
	for (uint32_t id = 0; id < 4; id++) {
		knit_completion_t c;
		cr_assert_eq(knit_call(pool, id, NULL, &c, 0), 0);
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.task, id);
		cr_expect_eq(c.result.type, KNIT_VALUE_I64);
		cr_expect_eq(c.result.i64, (int64_t)id + 1, "id %u ran the wrong function", id);
		knit_completion_release(pool, &c);
	}
	cr_expect_eq(knit_pool_destroy(pool), 0);
}

KT(create, task_id_errors)
{
	knit_pool_t *pool = kt_pool_n(1);
	cr_expect_eq(knit_pool_task_id(pool, "no such task"), -KNIT_ENOTASK);
	cr_expect_eq(knit_pool_task_id(pool, ""), -KNIT_ENOTASK);
	cr_expect_eq(knit_pool_task_id(pool, "Echo"), -KNIT_ENOTASK);
	cr_expect_eq(knit_pool_task_id(pool, "ech"), -KNIT_ENOTASK);
	cr_expect_eq(knit_pool_task_id(pool, NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_pool_task_id(NULL, "echo"), -KNIT_EINVAL);
	kt_destroy(pool);
}

KT(create, task_names_copied)
{
	char name[16];
	strcpy(name, "mutable");
	knit_task_t t[] = {{name, ret_1, 0, 0}};
	knit_pool_t *pool = NULL;
	cr_assert_eq(knit_pool_create(NULL, t, 1, &pool), 0);
	strcpy(name, "changed");
	cr_expect_eq(knit_pool_task_id(pool, "mutable"), 0);
	cr_expect_eq(knit_pool_task_id(pool, "changed"), -KNIT_ENOTASK);
	cr_expect_eq(knit_pool_destroy(pool), 0);
}

KT(create, destroy_null) { cr_expect_eq(knit_pool_destroy(NULL), -KNIT_EINVAL); }

KT(create, many_pools_sequentially)
{
	for (int i = 0; i < 20; i++) {
		knit_pool_t *pool = kt_pool_n(1 + i % 3);
		knit_completion_t c;
		cr_assert_eq(knit_call(pool, kt_id(pool, "echo"),
				       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = i}, &c, 0),
			     0);
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.i64, i);
		kt_destroy(pool);
	}
}

KT(create, two_pools_at_once)
{
	knit_pool_t *a = kt_pool_n(1), *b = kt_pool_n(2);
	knit_completion_t c;
	cr_assert_eq(knit_call(a, kt_id(a, "echo"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 1}, &c, 0),
		     0);
	cr_expect_eq(c.result.i64, 1);
	cr_assert_eq(knit_call(b, kt_id(b, "echo"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 2}, &c, 0),
		     0);
	cr_expect_eq(c.result.i64, 2);
	kt_destroy(a);
	kt_destroy(b);
}
