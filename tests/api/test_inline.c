/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_inline.c - the inline lane (KNIT_INLINE_FIRST / LAST):
 * calls the balancer routes there run on the host thread that runs the
 * dispatcher pass (inside knit_complete / knit_call), in FIFO order, never
 * before such a pass; the lane is part of the balancer's rotation;
 * knit_ctx_lane reports the inline lane's index.
 *
 * Lane numbering as tested: worker lanes are 0..workers-1 (what
 * KNIT_CALL_LANE accepts: lane >= worker lanes is -KNIT_EINVAL, so the
 * inline lane cannot be pinned) and the inline lane's index is `workers`,
 * its position in the stats array ("last in the array"), for FIRST as well
 * as LAST; FIRST/LAST only place it in the balancer's rotation. (The header
 * comment "KNIT_INLINE_FIRST: the calling host thread is lane 0" reads
 * otherwise; reported to the lead as an ambiguity.)
 */
#include "api/kt.h"

static knit_pool_t *inline_pool(uint32_t workers, uint32_t where, uint32_t batch)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.inline_lane = where;
	o.inline_batch = batch;
	return kt_pool(&o);
}

static void fifo_on_host(uint32_t workers, uint32_t where, uint32_t batch)
{
	enum { N = 120 };
	knit_pool_t *pool = inline_pool(workers, where, batch);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_assert_eq(s.lanes, workers + 1);
	cr_expect_eq(s.workers, workers);
	uint32_t record = kt_id(pool, "record");
	for (int i = 0; i < N; i++)
		kt_enq(pool, record, kt_i64(i), (void *)(intptr_t)(i + 1));
	/* Nothing runs on the host until a host thread runs a dispatcher pass. */
	int n0 = atomic_load(&kt_nrecords);
	for (int i = 0; i < n0; i++)
		cr_expect(!pthread_equal(kt_records[i].thread, pthread_self()),
			  "an inline call ran before any dispatcher pass");
	static knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N);
	for (int i = 0; i < N; i++)
		cr_expect_eq(out[i].status, 0);
	int n = atomic_load(&kt_nrecords);
	cr_assert_eq(n, N);
	pthread_t self = pthread_self();
	int on_host = 0;
	int64_t last = -1;
	for (int i = 0; i < n; i++) {
		if (pthread_equal(kt_records[i].thread, self)) {
			on_host++;
			cr_expect_gt(kt_records[i].arg, last,
				     "inline lane not FIFO: call %lld ran after %lld",
				     (long long)kt_records[i].arg, (long long)last);
			last = kt_records[i].arg;
			cr_expect_eq(kt_records[i].lane, (int)workers,
				     "inline knit_ctx_lane %d, want %u", kt_records[i].lane,
				     workers);
		} else {
			cr_expect(kt_records[i].lane >= 0 && kt_records[i].lane < (int)workers,
				  "worker call reported lane %d", kt_records[i].lane);
		}
	}
	cr_expect_gt(on_host, 0, "the balancer never used the inline lane");
	kt_stats(pool, &s);
	cr_expect_eq(s.inline_calls, (uint64_t)on_host, "stats.inline_calls %llu, ran on host %d",
		     (unsigned long long)s.inline_calls, on_host);
	cr_expect_eq(s.lane[workers].calls, (uint64_t)on_host,
		     "stats lane[%u] (inline, last) calls %llu", workers,
		     (unsigned long long)s.lane[workers].calls);
	kt_destroy(pool);
}

KT(inline_lane, first_fifo_on_host) { fifo_on_host(1, KNIT_INLINE_FIRST, 0); }

KT(inline_lane, last_fifo_on_host) { fifo_on_host(2, KNIT_INLINE_LAST, 0); }

KT(inline_lane, batch_fifo_on_host) { fifo_on_host(1, KNIT_INLINE_LAST, 7); }

KT(inline_lane, worker_lanes_stay_off_host)
{
	knit_pool_t *pool = inline_pool(2, KNIT_INLINE_FIRST, 0);
	uint32_t record = kt_id(pool, "record");
	for (int i = 0; i < 20; i++)
		kt_enq_ex(pool, record, kt_i64(i), NULL, KNIT_CALL_LANE, 0, (uint32_t)(i % 2));
	knit_completion_t out[20];
	cr_assert_eq(kt_reap(pool, out, 20), 20);
	int n = atomic_load(&kt_nrecords);
	cr_assert_eq(n, 20);
	for (int i = 0; i < n; i++) {
		cr_expect(!pthread_equal(kt_records[i].thread, pthread_self()),
			  "worker-lane call ran on the host");
		cr_expect(kt_records[i].lane == (int)(kt_records[i].arg % 2),
			  "call %lld ran on lane %d", (long long)kt_records[i].arg,
			  kt_records[i].lane);
	}
	/* lane 2 is not a worker lane (2 workers + inline) */
	knit_call_options_t co = {sizeof co, KNIT_CALL_LANE, 0, 2};
	cr_expect_eq(knit_enqueue_ex(pool, record, NULL, NULL, &co, NULL), -KNIT_EINVAL);
	kt_destroy(pool);
}

static void rotation(uint32_t where)
{
	/* Round robin over 2 worker lanes + the inline lane: an equal share each. */
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.inline_lane = where;
	o.balancer = KNIT_BALANCE_ROUND_ROBIN;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t lane = kt_id(pool, "lane");
	enum { N = 30 };
	for (int i = 0; i < N; i++)
		kt_enq(pool, lane, kt_none(), NULL);
	knit_completion_t out[N];
	cr_assert_eq(kt_reap(pool, out, N), N);
	int per[3] = {0};
	for (int i = 0; i < N; i++) {
		cr_assert(out[i].result.i64 >= 0 && out[i].result.i64 < 3, "lane %lld",
			  (long long)out[i].result.i64);
		per[out[i].result.i64]++;
	}
	cr_expect_eq(per[0], N / 3, "lane 0: %d", per[0]);
	cr_expect_eq(per[1], N / 3, "lane 1: %d", per[1]);
	cr_expect_eq(per[2], N / 3, "inline lane: %d", per[2]);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.inline_calls, (uint64_t)per[2]);
	kt_destroy(pool);
}

KT(inline_lane, in_balancer_rotation_last) { rotation(KNIT_INLINE_LAST); }

KT(inline_lane, in_balancer_rotation_first) { rotation(KNIT_INLINE_FIRST); }

KT(inline_lane, first_is_first_in_rotation)
{
	/* FIRST: the very first call of a round-robin pool goes to the inline
	 * lane; LAST: to worker lane 0. */
	for (int w = 0; w < 2; w++) {
		knit_pool_t *pool =
			inline_pool(2, w == 0 ? KNIT_INLINE_FIRST : KNIT_INLINE_LAST, 0);
		knit_completion_t c;
		cr_assert_eq(knit_call(pool, kt_id(pool, "lane"), NULL, &c, 0), 0);
		cr_expect_eq(c.result.i64, w == 0 ? 2 : 0, "%s: first call ran on lane %lld",
			     w == 0 ? "FIRST" : "LAST", (long long)c.result.i64);
		kt_destroy(pool);
	}
}

KT(inline_lane, knit_call_runs_inline)
{
	/* knit_call routed to the inline lane runs the task itself (it runs the
	 * dispatcher pass while it waits). */
	knit_pool_t *pool = inline_pool(1, KNIT_INLINE_FIRST, 0);
	uint32_t record = kt_id(pool, "record");
	for (int i = 0; i < 20; i++) {
		knit_completion_t c;
		knit_value_t v = kt_i64(i);
		cr_assert_eq(knit_call(pool, record, &v, &c, 0), 0);
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.i64, i);
	}
	int n = atomic_load(&kt_nrecords), on_host = 0;
	cr_assert_eq(n, 20);
	for (int i = 0; i < n; i++)
		if (pthread_equal(kt_records[i].thread, pthread_self())) {
			on_host++;
			cr_expect_eq(kt_records[i].lane, 1);
		}
	cr_expect_eq(on_host, 10, "round robin over 2 lanes: %d of 20 knit_calls inline", on_host);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.inline_calls, (uint64_t)on_host);
	kt_destroy(pool);
}

KT(inline_lane, stop_drain_runs_inline_calls)
{
	knit_pool_t *pool = inline_pool(1, KNIT_INLINE_LAST, 0);
	uint32_t record = kt_id(pool, "record");
	for (int i = 0; i < 10; i++)
		kt_enq(pool, record, kt_i64(i), NULL);
	cr_assert_eq(knit_stop(pool, KNIT_STOP_DRAIN, 30ll * 1000 * 1000 * 1000), 0);
	knit_completion_t out[10];
	cr_assert_eq(kt_reap(pool, out, 10), 10);
	for (int i = 0; i < 10; i++)
		cr_expect_eq(out[i].status, 0, "DRAIN: call status %d", out[i].status);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.inline_calls, 5, "DRAIN ran %llu inline calls",
		     (unsigned long long)s.inline_calls);
	cr_expect_eq(atomic_load(&kt_nrecords), 10);
	kt_destroy(pool);
}

KT(inline_lane, stop_cancel_closes_inline_calls)
{
	/* Worker lane 0 blocked; 10 round-robin calls: 5 queue behind the
	 * blocker, 5 wait on the inline lane (no dispatcher pass ran). CANCEL:
	 * all 11 complete with -KNIT_ECLOSED and none of the 10 ever runs. */
	knit_pool_t *pool = inline_pool(1, KNIT_INLINE_LAST, 0);
	uint32_t record = kt_id(pool, "record");
	kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(-1), NULL, KNIT_CALL_LANE, 0, 0);
	cr_assert(kt_wait_started(1));
	for (int i = 0; i < 10; i++)
		kt_enq(pool, record, kt_i64(i), NULL);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, 50 * 1000 * 1000), -KNIT_ETIMEDOUT,
		     "stop acknowledged by a worker stuck in a task");
	kt_gate_open();
	cr_expect_eq(knit_stop(pool, KNIT_STOP_CANCEL, 30ll * 1000 * 1000 * 1000), 0);
	knit_completion_t out[11];
	cr_assert_eq(kt_reap(pool, out, 11), 11);
	for (int i = 0; i < 11; i++)
		cr_expect_eq(out[i].status, -KNIT_ECLOSED, "CANCEL: status %d", out[i].status);
	kt_sleep_ms(20);
	int n = atomic_load(&kt_nrecords);
	for (int i = 0; i < n; i++)
		cr_expect(!pthread_equal(kt_records[i].thread, pthread_self()),
			  "an inline call ran after a CANCEL stop");
	kt_destroy(pool);
}
