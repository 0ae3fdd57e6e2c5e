/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_callers.c - the 1.2 caller entries:
 *  - knit_complete_tickets: one ticket among 10 000 calls while two other
 *    threads reap with knit_complete (every completion exactly once, to one
 *    reaper); a set of tickets (only those are reaped, the rest stay for
 *    knit_complete); the documented codes for a ticket already reaped,
 *    unknown, a knit_call's, another pool's, cancelled (its completion), bad
 *    arguments, poll and timeout;
 *  - knit_wait_idle: an idle pool, a timeout while nobody reaps, a phase with
 *    two enqueuers racing and a reaper (every call enqueued before the wait
 *    began is reaped when it returns);
 *  - calls from a task into its own pool: -KNIT_EBUSY for every entry that
 *    would wait (knit_call, knit_call_ex, knit_complete, knit_complete_tickets
 *    and knit_wait_idle with a wait, knit_stop, knit_pool_destroy) on lanes,
 *    steal and the inline lane; knit_enqueue and polls work; a call into
 *    another pool works; in a process pool, a task's own nested pool.
 */
#include "api/kt.h"

#include <pthread.h>
#include <stdatomic.h>

#define NS_PER_MS 1000000LL

/* ---- knit_complete_tickets ------------------------------------------------ */

KT(callers, tickets_bad_args)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_ticket_t t = kt_enq(pool, kt_id(pool, "echo"), kt_i64(5), NULL);
	knit_completion_t c;
	cr_expect_eq(knit_complete_tickets(NULL, &t, 1, &c, 1, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_complete_tickets(pool, NULL, 1, &c, 1, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_complete_tickets(pool, &t, 0, &c, 1, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_complete_tickets(pool, &t, 1, NULL, 1, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_complete_tickets(pool, &t, 1, &c, 0, 0), -KNIT_EINVAL);
	/* Nothing was eaten by the refusals. */
	cr_assert_eq(knit_complete_tickets(pool, &t, 1, &c, 1, -1), 1);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.i64, 5);
	kt_destroy(pool);
}

KT(callers, tickets_codes)
{
	knit_pool_t *pool = kt_pool_lanes(1);
	knit_completion_t c;
	uint32_t echo = kt_id(pool, "echo");
	/* Reaped already (by this entry, then by knit_complete). */
	knit_ticket_t t = kt_enq(pool, echo, kt_i64(1), NULL);
	cr_assert_eq(knit_complete_tickets(pool, &t, 1, &c, 1, -1), 1);
	cr_expect_eq(knit_complete_tickets(pool, &t, 1, &c, 1, 0), -KNIT_ENOTFOUND);
	cr_expect_eq(knit_complete_tickets(pool, &t, 1, &c, 1, -1), -KNIT_ENOTFOUND);
	knit_ticket_t u = kt_enq(pool, echo, kt_i64(2), NULL);
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, u);
	cr_expect_eq(knit_complete_tickets(pool, &u, 1, &c, 1, -1), -KNIT_ENOTFOUND);
	/* Never issued. */
	knit_ticket_t bogus[3] = {0, ~(knit_ticket_t)0, ((knit_ticket_t)7 << 32) | 123456u};
	cr_expect_eq(knit_complete_tickets(pool, bogus, 3, &c, 1, -1), -KNIT_ENOTFOUND);
	/* A knit_call_ex's ticket is its caller's, not for reaping. */
	knit_ticket_t ct = 0;
	knit_value_t a = kt_i64(3);
	cr_assert_eq(knit_call_ex(pool, echo, &a, NULL, &ct, &c, 0), 0);
	knit_completion_release(pool, &c);
	cr_expect_eq(knit_complete_tickets(pool, &ct, 1, &c, 1, 0), -KNIT_ENOTFOUND);
	/* Poll and timeout on a call that has not run: 0, and it stays. */
	kt_gate_close();
	knit_ticket_t b = kt_enq(pool, kt_id(pool, "block"), kt_none(), NULL);
	cr_expect_eq(knit_complete_tickets(pool, &b, 1, &c, 1, 0), 0);
	cr_expect_eq(knit_complete_tickets(pool, &b, 1, &c, 1, 20 * NS_PER_MS), 0);
	/* Cancelled: its completion, -KNIT_ECANCELED. */
	knit_ticket_t q = kt_enq(pool, echo, kt_i64(4), NULL); /* queued behind the block */
	cr_assert_eq(knit_cancel(pool, q, KNIT_CANCEL_NOW), 0);
	cr_assert_eq(knit_complete_tickets(pool, &q, 1, &c, 1, -1), 1);
	cr_expect_eq(c.ticket, q);
	cr_expect_eq(c.status, -KNIT_ECANCELED);
	kt_gate_open();
	cr_assert_eq(knit_complete_tickets(pool, &b, 1, &c, 1, -1), 1);
	cr_expect_eq(c.ticket, b);
	cr_expect_eq(kt_quiet(pool, 20), 0);
	kt_destroy(pool);
}

KT(callers, tickets_of_another_pool)
{
	/* Two fresh pools: their first records have the same index. A's call is
	 * live while B's ticket is asked of A. */
	knit_pool_t *pa = kt_pool_lanes(1), *pb = kt_pool_lanes(1);
	knit_completion_t c;
	kt_gate_close();
	knit_ticket_t ta = kt_enq(pa, kt_id(pa, "block"), kt_none(), NULL);
	knit_ticket_t tb = kt_enq(pb, kt_id(pb, "echo"), kt_i64(9), NULL);
	cr_expect_neq(ta, tb, "two pools issued the same ticket");
	cr_expect_eq(knit_complete_tickets(pa, &tb, 1, &c, 1, -1), -KNIT_ENOTFOUND);
	cr_expect_eq(knit_cancel(pa, tb, KNIT_CANCEL_NOW), -KNIT_ENOTFOUND);
	kt_gate_open();
	cr_assert_eq(knit_complete_tickets(pa, &ta, 1, &c, 1, -1), 1);
	cr_assert_eq(knit_complete_tickets(pb, &tb, 1, &c, 1, -1), 1);
	cr_expect_eq(c.result.i64, 9);
	kt_destroy(pa);
	kt_destroy(pb);
}

KT(callers, tickets_set_leaves_the_rest)
{
	enum { N = 200 };
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo");
	knit_ticket_t t[N], want[N / 2];
	unsigned nw = 0;
	for (int i = 0; i < N; i++) {
		t[i] = kt_enq(pool, echo, kt_i64(i), (void *)(intptr_t)i);
		if (i % 2 == 0)
			want[nw++] = t[i];
	}
	int seen[N] = {0};
	unsigned got = 0;
	knit_completion_t out[16];
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (got < nw && kt_now_ns() < end) {
		int rc = knit_complete_tickets(pool, want, nw, out, 16, 50 * NS_PER_MS);
		cr_assert(rc >= 0 || rc == -KNIT_ENOTFOUND, "knit_complete_tickets: %d", rc);
		if (rc == -KNIT_ENOTFOUND)
			break;
		for (int k = 0; k < rc; k++) {
			int i = (int)(intptr_t)out[k].user_data;
			cr_assert(i % 2 == 0, "reaped call %d, not in the set", i);
			cr_assert_eq(seen[i], 0, "call %d reaped twice", i);
			cr_expect_eq(out[k].result.i64, i);
			seen[i] = 1;
			got++;
		}
	}
	cr_expect_eq(got, nw);
	cr_expect_eq(knit_complete_tickets(pool, want, nw, out, 16, 0), -KNIT_ENOTFOUND);
	/* The odd ones are all still there for knit_complete. */
	unsigned rest = 0;
	while (rest < N - nw && kt_now_ns() < end) {
		int rc = knit_complete(pool, out, 16, 50 * NS_PER_MS);
		cr_assert(rc >= 0);
		for (int k = 0; k < rc; k++) {
			int i = (int)(intptr_t)out[k].user_data;
			cr_assert(i % 2 == 1 && seen[i] == 0, "call %d: odd, and once", i);
			seen[i] = 1;
		}
		rest += (unsigned)rc;
	}
	cr_expect_eq(rest, N - nw);
	kt_destroy(pool);
}

/* Two threads reap with knit_complete while the main thread waits for
 * every 10th ticket by itself; every completion goes to exactly one. */
enum { RACE_N = 10000 };
static knit_pool_t *race_pool;
static atomic_int race_seen[RACE_N];
static atomic_int race_total;

static void race_count(const knit_completion_t *c)
{
	int i = (int)(intptr_t)c->user_data;
	cr_assert(i >= 0 && i < RACE_N);
	cr_assert_eq(c->result.i64, i);
	int was = atomic_fetch_add(&race_seen[i], 1);
	cr_assert_eq(was, 0, "call %d delivered twice", i);
	atomic_fetch_add(&race_total, 1);
}

static void *race_reaper(void *arg)
{
	(void)arg;
	knit_completion_t out[8];
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (atomic_load(&race_total) < RACE_N && kt_now_ns() < end) {
		int rc = knit_complete(race_pool, out, 8, 5 * NS_PER_MS);
		cr_assert(rc >= 0, "knit_complete: %d", rc);
		for (int k = 0; k < rc; k++)
			race_count(&out[k]);
	}
	return NULL;
}

static void race(knit_pool_t *pool)
{
	race_pool = pool;
	for (int i = 0; i < RACE_N; i++)
		atomic_store(&race_seen[i], 0);
	atomic_store(&race_total, 0);
	uint32_t echo = kt_id(pool, "echo");
	static knit_ticket_t t[RACE_N];
	pthread_t r[2];
	for (int k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&r[k], NULL, race_reaper, NULL), 0);
	int mine = 0, theirs = 0;
	for (int i = 0; i < RACE_N; i++) {
		knit_value_t a = kt_i64(i);
		int rc;
		while ((rc = knit_enqueue(pool, echo, &a, (void *)(intptr_t)i, &t[i])) ==
		       -KNIT_EAGAIN)
			sched_yield();
		cr_assert_eq(rc, 0);
		if (i % 10 == 9) {
			knit_completion_t c;
			knit_ticket_t w = t[i - 5];
			rc = knit_complete_tickets(pool, &w, 1, &c, 1, -1);
			cr_assert(rc == 1 || rc == -KNIT_ENOTFOUND, "knit_complete_tickets: %d",
				  rc);
			if (rc == 1) {
				cr_assert_eq(c.ticket, w);
				race_count(&c);
				mine++;
			} else {
				theirs++;
			}
		}
	}
	for (int k = 0; k < 2; k++)
		pthread_join(r[k], NULL);
	cr_expect_eq(atomic_load(&race_total), RACE_N);
	cr_expect_eq(mine + theirs, RACE_N / 10);
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.completed, (uint64_t)RACE_N);
	cr_expect_eq(s.pending, 0);
}

KT(callers, tickets_race_two_reapers_steal)
{
	knit_pool_t *pool = kt_pool_n(2);
	race(pool);
	kt_destroy(pool);
}

KT(callers, tickets_race_two_reapers_lanes)
{
	knit_pool_t *pool = kt_pool_lanes(2);
	race(pool);
	kt_destroy(pool);
}

/* ---- knit_wait_idle ---------------------------------------------------------- */

KT(callers, idle_basics)
{
	knit_pool_t *pool = kt_pool_n(1);
	cr_expect_eq(knit_wait_idle(NULL, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_wait_idle(pool, 0), 0);
	cr_expect_eq(knit_wait_idle(pool, -1), 0);
	/* Completed but not reaped: not idle; nobody reaps, so it times out. */
	kt_enq(pool, kt_id(pool, "echo"), kt_i64(1), NULL);
	cr_expect_eq(knit_wait_idle(pool, 0), -KNIT_ETIMEDOUT);
	cr_expect_eq(knit_wait_idle(pool, 20 * NS_PER_MS), -KNIT_ETIMEDOUT);
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(knit_wait_idle(pool, 0), 0);
	/* knit_call reaps itself: it leaves nothing to wait for. */
	knit_value_t a = kt_i64(2);
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"), &a, &c, 0), 0);
	cr_expect_eq(knit_wait_idle(pool, 0), 0);
	kt_destroy(pool);
}

enum { PH_PER = 3000 };
static knit_pool_t *ph_pool;
static atomic_int ph_stop;
static knit_ticket_t ph_t[2][PH_PER];
static atomic_int ph_n[2];

static void *ph_enqueuer(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint32_t echo = kt_id(ph_pool, "echo");
	for (int i = 0; i < PH_PER; i++) {
		knit_value_t a = kt_i64(i);
		int rc;
		while ((rc = knit_enqueue(ph_pool, echo, &a, NULL, &ph_t[me][i])) == -KNIT_EAGAIN)
			sched_yield();
		cr_assert_eq(rc, 0);
		atomic_store(&ph_n[me], i + 1); /* ph_t[me][i] is enqueued */
		if (i % 100 == 99)
			kt_sleep_ms(1); /* spread the phase over the waits */
	}
	return NULL;
}

static void *ph_reaper(void *arg)
{
	(void)arg;
	knit_completion_t out[8];
	while (!atomic_load(&ph_stop)) {
		int rc = knit_complete(ph_pool, out, 8, 2 * NS_PER_MS);
		cr_assert(rc >= 0);
	}
	return NULL;
}

KT(callers, idle_phase_with_racing_enqueuers)
{
	ph_pool = kt_pool_n(2);
	atomic_store(&ph_stop, 0);
	atomic_store(&ph_n[0], 0);
	atomic_store(&ph_n[1], 0);
	pthread_t e[2], r;
	cr_assert_eq(pthread_create(&r, NULL, ph_reaper, NULL), 0);
	for (int k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&e[k], NULL, ph_enqueuer, (void *)(intptr_t)k), 0);
	int rounds = 0;
	int racing = 0; /* waits that began while an enqueuer still ran */
	while (rounds < 40 &&
	       (rounds < 3 || atomic_load(&ph_n[0]) < PH_PER || atomic_load(&ph_n[1]) < PH_PER)) {
		racing += atomic_load(&ph_n[0]) < PH_PER || atomic_load(&ph_n[1]) < PH_PER;
		int before[2] = {atomic_load(&ph_n[0]), atomic_load(&ph_n[1])};
		cr_assert_eq(knit_wait_idle(ph_pool, (int64_t)(KT_BOUND_S * 1e9)), 0);
		/* Every call enqueued before the wait began is reaped: no one
		 * can reap it any more. */
		knit_completion_t c;
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < before[k]; i++)
				cr_assert_eq(
					knit_complete_tickets(ph_pool, &ph_t[k][i], 1, &c, 1, 0),
					-KNIT_ENOTFOUND,
					"enqueuer %d call %d not reaped after knit_wait_idle", k,
					i);
		rounds++;
		kt_sleep_ms(2);
	}
	for (int k = 0; k < 2; k++)
		pthread_join(e[k], NULL);
	cr_assert_eq(knit_wait_idle(ph_pool, (int64_t)(KT_BOUND_S * 1e9)), 0);
	atomic_store(&ph_stop, 1);
	pthread_join(r, NULL);
	knit_pool_stats_t s;
	kt_stats(ph_pool, &s);
	cr_expect_eq(s.completed, (uint64_t)2 * PH_PER);
	cr_log_info("knit_wait_idle: %d rounds, %d of them with enqueuers running", rounds, racing);
	kt_destroy(ph_pool);
}

/* ---- calls from a task into its own pool ------------------------------------- */

enum {
	P_CALL,
	P_CALL_EX,
	P_COMPLETE_WAIT,
	P_TICKETS_WAIT,
	P_IDLE_WAIT,
	P_STOP,
	P_DESTROY,
	P_ENQUEUE,
	P_COMPLETE_POLL,
	P_IDLE_POLL,
	P_OTHER_CALL,
	P_COUNT
};
static knit_pool_t *own_pool, *other_pool;

static int t_probe(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	knit_completion_t c;
	knit_ticket_t t = 1;
	knit_value_t none = kt_none();
	int rc;
	switch ((int)arg->i64) {
	case P_CALL:
		rc = knit_call(own_pool, 0, &none, &c, 0);
		break;
	case P_CALL_EX:
		rc = knit_call_ex(own_pool, 0, &none, NULL, NULL, &c, 0);
		break;
	case P_COMPLETE_WAIT:
		rc = knit_complete(own_pool, &c, 1, -1);
		break;
	case P_TICKETS_WAIT:
		rc = knit_complete_tickets(own_pool, &t, 1, &c, 1, -1);
		break;
	case P_IDLE_WAIT:
		rc = knit_wait_idle(own_pool, 1000 * NS_PER_MS);
		break;
	case P_STOP:
		rc = knit_stop(own_pool, KNIT_STOP_DRAIN, -1);
		break;
	case P_DESTROY:
		rc = knit_pool_destroy(own_pool);
		break;
	case P_ENQUEUE:
		rc = knit_enqueue(own_pool, 0, &none, (void *)1, NULL);
		break;
	case P_COMPLETE_POLL:
		rc = knit_complete(own_pool, &c, 1, 0);
		break;
	case P_IDLE_POLL:
		rc = knit_wait_idle(own_pool, 0);
		break;
	case P_OTHER_CALL:
		rc = knit_call(other_pool, 0, &none, &c, 0);
		if (rc == 0)
			rc = c.status;
		break;
	default:
		rc = 12345;
	}
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)rc * 1000 + knit_ctx_lane(ctx);
	return 0;
}

static int t_nop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	ret->type = KNIT_VALUE_NONE;
	return 0;
}

/* Task ids are indexes in name order: 0 = "a_nop" (what P_ENQUEUE enqueues,
 * user_data 1), 1 = "b_probe". */
static const knit_task_t own_tasks[] = {
	{"a_nop", t_nop, 0, 0, NULL, {0, 0}},
	{"b_probe", t_probe, 0, 0, NULL, {0, 0}},
};

static void probes(uint32_t workers, uint32_t topology, uint32_t inline_lane, int want_inline)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = topology;
	o.inline_lane = inline_lane;
	cr_assert_eq(knit_pool_create(&o, own_tasks, 2, &own_pool), 0);
	kt_opts(&o, 1);
	cr_assert_eq(knit_pool_create(&o, own_tasks, 2, &other_pool), 0);
	static const int want[P_COUNT] = {
		[P_CALL] = -KNIT_EBUSY,
		[P_CALL_EX] = -KNIT_EBUSY,
		[P_COMPLETE_WAIT] = -KNIT_EBUSY,
		[P_TICKETS_WAIT] = -KNIT_EBUSY,
		[P_IDLE_WAIT] = -KNIT_EBUSY,
		[P_STOP] = -KNIT_EBUSY,
		[P_DESTROY] = -KNIT_EBUSY,
		[P_ENQUEUE] = 0,
		[P_COMPLETE_POLL] = 0,
		[P_IDLE_POLL] = -KNIT_ETIMEDOUT,
		[P_OTHER_CALL] = 0,
	};
	int on_inline = 0, polled = 0;
	for (int round = 0; round < 4; round++) {
		for (int pr = 0; pr < P_COUNT; pr++) {
			knit_ticket_t t = kt_enq(own_pool, 1, kt_i64(pr), NULL);
			knit_completion_t c;
			cr_assert_eq(knit_complete_tickets(own_pool, &t, 1, &c, 1,
							   (int64_t)(KT_BOUND_S * 1e9)),
				     1, "probe %d did not complete", pr);
			cr_assert_eq(c.status, 0);
			int64_t v = c.result.i64;
			int lane = (int)(((v % 1000) + 1000) % 1000);
			int rc = (int)((v - lane) / 1000);
			if (lane == (int)workers)
				on_inline++;
			if (pr == P_COMPLETE_POLL) {
				/* It may reap what P_ENQUEUE put in (and frees nothing:
				 * a nop's completion owns no bytes). */
				cr_expect(rc == 0 || rc == 1, "probe %d on lane %d: %d", pr, lane,
					  rc);
				polled += rc > 0 ? rc : 0;
			} else
				cr_expect_eq(rc, want[pr], "probe %d on lane %d: %d (%s), want %d",
					     pr, lane, rc, knit_strerror(rc), want[pr]);
		}
	}
	if (want_inline)
		cr_expect_gt(on_inline, 0, "no probe ran on the inline lane");
	/* Every probe and what P_ENQUEUE enqueued end in exactly one
	 * completion; the pool still stops and drains from outside. */
	cr_expect_eq(knit_stop(own_pool, KNIT_STOP_DRAIN, (int64_t)(KT_BOUND_S * 1e9)), 0);
	knit_completion_t c;
	int rest = 0, rc;
	while ((rc = knit_complete(own_pool, &c, 1, 0)) > 0) {
		cr_expect_eq(c.user_data, (void *)1,
			     "only the nop calls the probes enqueued are left");
		rest += rc;
	}
	cr_expect_eq(rest + polled, 4, "%d left + %d reaped by the tasks' polls", rest, polled);
	cr_expect_eq(knit_pool_destroy(own_pool), 0);
	cr_expect_eq(knit_pool_destroy(other_pool), 0);
}

KT(callers, busy_from_task_lanes) { probes(1, KNIT_TOPOLOGY_LANES, KNIT_INLINE_OFF, 0); }

KT(callers, busy_from_task_steal) { probes(2, KNIT_TOPOLOGY_STEAL, KNIT_INLINE_OFF, 0); }

KT(callers, busy_from_task_inline_lane) { probes(1, KNIT_TOPOLOGY_LANES, KNIT_INLINE_FIRST, 1); }

KT(callers, busy_from_task_process_nested)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.task_library = KT_BUILD_DIR "/tests/lib/proc_nested.so";
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(&o, NULL, 0, &pool);
	cr_assert_eq(rc, 0, "knit_pool_create: %s: %s", knit_strerror(rc), knit_last_error());
	knit_completion_t c = kt_proc_call(pool, "nested", kt_none());
	cr_assert_eq(c.status, 0);
	cr_expect_eq(c.result.i64, -KNIT_EBUSY,
		     "nested pool in a worker process: outer*1000+inner = %lld",
		     (long long)c.result.i64);
	kt_destroy(pool);
}
