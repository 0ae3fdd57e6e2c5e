/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_proc_line.c - knit_call's fast path (the synchronous call
 * line) on process pools: a call with nothing to track goes over the line
 * (stats.sync_calls counts it) with every value type, a result too big for
 * the reply block comes back through the lane's spill slot intact, a worker
 * that dies during a line call ends that call with -KNIT_ECRASHED and the
 * pool serves on (respawned, over the line again: the host reopens it for
 * the new worker), and a pool out of respawns ends it the same way and
 * refuses further calls; a knit_call still waiting on the line of a worker
 * that dies before it started the call is sent again and completes with
 * its own result.
 */
#include "api/kt.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

static knit_pool_t *line_pool(uint32_t workers, uint32_t respawn_max)
{
	knit_pool_options_t o;
	kt_proc_opts(&o, workers);
	o.respawn_max = respawn_max;
	/* Every respawn at once: a lane backing off takes no line call (it
	 * goes the ticketed way, test_proc_restart.c), and these tests count
	 * the calls that take the line right after a respawn. */
	o.respawn_backoff_ms = KNIT_ZERO;
	knit_pool_t *p = NULL;
	const int rc = knit_pool_create(&o, NULL, 0, &p);
	cr_assert_eq(rc, 0, "process pool create: %s", knit_strerror(rc));
	return p;
}

static uint64_t sync_calls(knit_pool_t *p)
{
	knit_pool_stats_t s;
	kt_stats(p, &s);
	return s.sync_calls;
}

/* knit_call with no timeout (the line's calls). */
static knit_completion_t line_call(knit_pool_t *p, const char *task, knit_value_t arg)
{
	knit_completion_t c;
	const int rc = knit_call(p, kt_id(p, task), &arg, &c, 0);
	cr_assert_eq(rc, 0, "knit_call(%s): %s", task, knit_strerror(rc));
	return c;
}

static knit_value_t str_value(const char *s)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_STRING;
	v.data = s;
	v.len = strlen(s);
	return v;
}

KT(proc_line, every_type_over_the_line)
{
	knit_pool_t *p = line_pool(1, 0);
	const uint64_t s0 = sync_calls(p);
	uint32_t calls = 0;

	knit_completion_t c = line_call(p, "echo", kt_i64(-42));
	cr_assert(c.status == 0 && c.result.type == KNIT_VALUE_I64 && c.result.i64 == -42);
	knit_completion_release(p, &c), calls++;

	knit_value_t f;
	memset(&f, 0, sizeof f);
	f.type = KNIT_VALUE_F64;
	f.f64 = 2.5;
	c = line_call(p, "echo", f);
	cr_assert(c.status == 0 && c.result.type == KNIT_VALUE_F64 && c.result.f64 == 2.5);
	knit_completion_release(p, &c), calls++;

	knit_value_t b;
	memset(&b, 0, sizeof b);
	b.type = KNIT_VALUE_BOOL;
	b.i64 = 1;
	c = line_call(p, "echo", b);
	cr_assert(c.status == 0 && c.result.type == KNIT_VALUE_BOOL && c.result.i64 == 1);
	knit_completion_release(p, &c), calls++;

	c = line_call(p, "echo", str_value("over the line"));
	cr_assert(c.status == 0 && c.result.type == KNIT_VALUE_STRING && c.result.len == 13 &&
		  strcmp((const char *)c.result.data, "over the line") == 0);
	knit_completion_release(p, &c), calls++;

	c = line_call(p, "error", kt_i64(-77));
	cr_assert_eq(c.status, -KNIT_ETASK);
	cr_assert(c.result.type == KNIT_VALUE_ERROR && c.result.code == -77 && c.result.len == 10 &&
		  memcmp(c.result.data, "task error", 10) == 0);
	knit_completion_release(p, &c), calls++;

	/* Bytes built in knit_ctx_alloc memory: inline, then far past the
	 * reply block (the spill slot). */
	const int64_t sizes[] = {40, 5000, 1 << 20};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		c = line_call(p, "alloc", kt_i64(sizes[k]));
		cr_assert_eq(c.status, 0, "alloc %lld: %s", (long long)sizes[k],
			     knit_strerror(c.status));
		cr_assert_eq(c.result.type, KNIT_VALUE_BYTES);
		cr_assert_eq(c.result.len, (size_t)sizes[k]);
		const char *d = c.result.data;
		for (int64_t i = 0; i < sizes[k]; i++)
			cr_assert_eq(d[i], (char)('a' + i % 26), "alloc %lld: byte %lld",
				     (long long)sizes[k], (long long)i);
		knit_completion_release(p, &c), calls++;
	}
	cr_assert_eq(sync_calls(p) - s0, calls, "every call took the line");
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.pending, 0);
	cr_assert_eq(s.proto_errors, 0);
	kt_destroy(p);
}

/* A worker that dies running a line call: that call ends with
 * -KNIT_ECRASHED, the next ones are served by the respawned worker. */
KT(proc_line, crash_ends_only_its_call)
{
	knit_pool_t *p = line_pool(1, 0);
	const int64_t pid0 = line_call(p, "pid", kt_none()).result.i64;
	const uint64_t s0 = sync_calls(p);
	knit_completion_t c = line_call(p, "exit", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED, "%s", knit_strerror(c.status));
	cr_assert_eq(sync_calls(p) - s0, 1, "the crashed call went over the line");
	for (int i = 0; i < 5; i++) {
		c = line_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.result.i64, i);
	}
	c = line_call(p, "pid", kt_none());
	cr_assert_eq(c.status, 0);
	cr_assert_neq(c.result.i64, pid0, "respawned");
	cr_assert_eq(sync_calls(p) - s0, 7, "the respawned worker's line took the next six");
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 1);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.pending, 0);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* No respawns: the line call that crashed the only worker ends with
 * -KNIT_ECRASHED, and the failed pool refuses the next call. */
KT(proc_line, crash_without_respawn_fails_the_pool)
{
	knit_pool_t *p = line_pool(1, KNIT_ZERO);
	(void)line_call(p, "echo", kt_i64(1));
	knit_completion_t c = line_call(p, "exit", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED, "%s", knit_strerror(c.status));
	knit_value_t a = kt_i64(2);
	cr_assert_eq(knit_call(p, kt_id(p, "echo"), &a, &c, 0), -KNIT_ECRASHED);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

/* Two workers, a crash on one: calls keep going over the other's line. */
KT(proc_line, the_other_line_serves_on)
{
	knit_pool_t *p = line_pool(2, 0);
	knit_completion_t c = line_call(p, "exit", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	const uint64_t s0 = sync_calls(p);
	for (int i = 0; i < 20; i++) {
		c = line_call(p, "echo", kt_i64(i));
		cr_assert_eq(c.status, 0);
		cr_assert_eq(c.result.i64, i);
	}
	cr_assert_eq(sync_calls(p) - s0, 20, "the surviving line took them");
	kt_destroy(p);
}

/* The respawned worker of a lane whose worker served a line request must
 * not serve that request again (the reopened line starts after the host's
 * last request): the lane's calls count is the calls the host made, one
 * each, and the line takes the calls after the respawn. */
KT(proc_line, respawned_worker_does_not_rerun_a_line_request)
{
	knit_pool_t *p = line_pool(1, 0);
	knit_completion_t c = line_call(p, "pid", kt_none());
	cr_assert_eq(c.status, 0);
	cr_assert_eq(sync_calls(p), 1);
	/* A ticketed call (a timeout) kills the worker. */
	c = kt_proc_call(p, "exit", kt_none());
	cr_assert_eq(c.status, -KNIT_ECRASHED);
	for (int i = 0; i < 3; i++) {
		c = line_call(p, "echo", kt_i64(i));
		cr_assert(c.status == 0 && c.result.i64 == i);
	}
	knit_pool_stats_t s;
	kt_stats(p, &s);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.sync_calls, 4, "the line reopened for the respawned worker");
	cr_assert_eq(s.lane[0].calls, 4,
		     "pid once and three echoes (the exit never returned), got %llu",
		     (unsigned long long)s.lane[0].calls);
	kt_destroy(p);
}

/* A 1-worker pool whose worker dies again and again, during a line call
 * and during a ticketed one: after each respawn the line is reopened and
 * takes every knit_call (sync_calls rises by exactly their number), each
 * call ends in exactly one completion with its own value, and nothing ran
 * twice (the lane's calls count is the calls that returned a result). */
KT(proc_line, line_reopens_after_each_respawn)
{
	knit_pool_t *p = line_pool(1, 0);
	const uint32_t rounds = 4, per = 10;
	uint64_t ran = 0;
	knit_pool_stats_t s;
	for (uint32_t r = 0; r < rounds; r++) {
		knit_completion_t c;
		if (r % 2 == 0) {
			c = line_call(p, "exit", kt_none()); /* dies on the line */
		} else {
			c = kt_proc_call(p, "exit", kt_none()); /* dies on a ticketed call */
		}
		cr_assert_eq(c.status, -KNIT_ECRASHED, "round %u: %s", r, knit_strerror(c.status));
		const uint64_t s0 = sync_calls(p);
		for (uint32_t i = 0; i < per; i++) {
			const int64_t v = (int64_t)(r * 1000 + i);
			c = line_call(p, "echo", kt_i64(v));
			cr_assert_eq(c.status, 0, "round %u call %u: %s", r, i,
				     knit_strerror(c.status));
			cr_assert_eq(c.result.i64, v);
			knit_completion_release(p, &c);
			ran++;
		}
		cr_assert_eq(sync_calls(p) - s0, per,
			     "round %u: every call after the respawn took the line (%llu)", r,
			     (unsigned long long)(sync_calls(p) - s0));
		kt_stats(p, &s);
		cr_assert_eq(s.respawns, r + 1);
	}
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, rounds);
	cr_assert_eq(s.pending, 0);
	cr_assert_eq(s.proto_errors, 0);
	cr_assert_eq(s.enqueued, s.completed,
		     "one completion per call: %llu enqueued, %llu completed",
		     (unsigned long long)s.enqueued, (unsigned long long)s.completed);
	cr_assert_eq(s.lane[0].calls, ran, "nothing ran twice: %llu runs for %llu calls",
		     (unsigned long long)s.lane[0].calls, (unsigned long long)ran);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}

struct waiter {
	knit_pool_t *p;
	knit_completion_t c;
	int rc;
};

static void *wait_on_line(void *arg)
{
	struct waiter *w = arg;
	knit_value_t v = kt_i64(77);
	w->rc = knit_call(w->p, kt_id(w->p, "echo"), &v, &w->c, 0);
	return NULL;
}

/* A knit_call waits on the line of a worker busy in a long ticketed task;
 * the worker is killed before it ever looked at the line. The ticketed
 * call it was running fails; the waiting knit_call never started, so it is
 * sent again (as an unstarted ticketed call is) and completes with its own
 * result, on the respawned worker; the stats count it once. */
KT(proc_line, waiting_call_survives_its_workers_death)
{
	knit_pool_t *p = line_pool(1, 0);
	const int64_t pid = line_call(p, "pid", kt_none()).result.i64;
	knit_pool_stats_t s0;
	kt_stats(p, &s0);
	const knit_ticket_t busy = kt_enq(p, kt_id(p, "sleep"), kt_i64(400), NULL);
	kt_sleep_ms(50); /* the worker runs the sleep */
	struct waiter w = {p, {0}, -1};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, wait_on_line, &w), 0);
	/* The knit_call is on the line once it counts as enqueued there
	 * (bounded wait; the worker is asleep in its task meanwhile). */
	knit_pool_stats_t s;
	for (int i = 0; i < 400; i++) {
		kt_stats(p, &s);
		if (s.enqueued == s0.enqueued + 2)
			break;
		kt_sleep_ms(1);
	}
	cr_assert_eq(s.enqueued, s0.enqueued + 2, "the sleep and the knit_call were made");
	kt_sleep_ms(50);
	cr_assert_eq(kill((pid_t)pid, SIGKILL), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w.rc, 0, "knit_call: %s", knit_strerror(w.rc));
	cr_assert_eq(w.c.status, 0, "the call the dead worker never started: %s",
		     knit_strerror(w.c.status));
	cr_assert_eq(w.c.result.i64, 77);
	knit_completion_t c;
	kt_reap1(p, &c);
	cr_assert_eq(c.ticket, busy);
	cr_assert_eq(c.status, -KNIT_ECRASHED, "the call it was running fails");
	knit_completion_release(p, &c);
	kt_stats(p, &s);
	cr_assert_eq(s.crashes, 1);
	cr_assert_eq(s.respawns, 1);
	cr_assert_eq(s.pending, 0);
	cr_assert_eq(s.enqueued, s0.enqueued + 2, "each call counted once");
	cr_assert_eq(s.completed, s0.completed + 2);
	kt_destroy(p);
	cr_assert_eq(kt_count_children(), 0);
}
