/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_completion_fd.c - the contract of knit_completion_fd(3) in
 * an epoll(7) event loop: the descriptor is readable if and only if a
 * knit_complete(..., 0) would return at least one completion.
 *
 * - No result is stranded: the loop "wait for the fd, then knit_complete(0)
 *   until it returns 0" collects every completion while other threads
 *   enqueue (and so hold the dispatcher try-lock the loop's knit_complete
 *   loses), over many trials. A stranded result shows as an epoll_wait that
 *   times out (a hang guard, far above any real wait) with calls missing.
 * - No spurious readiness: once the loop has reaped everything and the pool
 *   is idle, the fd is not readable, and an idle second brings zero
 *   wake-ups.
 * - Inline-lane calls are completions a knit_complete(0) would produce, so
 *   they make the fd readable too.
 */
#include "api/kt.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#define ENQUEUERS 2
#define PER_THREAD 150
#define TRIALS 40
/* Hang guard of one epoll_wait while completions are owed. */
#define GUARD_MS 5000

struct enq_arg {
	knit_pool_t *pool;
	uint32_t task;
	int n;
	int failed;
};

static void *enqueuer(void *arg)
{
	struct enq_arg *a = arg;
	for (int i = 0; i < a->n; i++) {
		knit_value_t v = kt_i64(i);
		int rc;
		/* The backlog may fill: retry (the loop reaps meanwhile). */
		while ((rc = knit_enqueue(a->pool, a->task, &v, NULL, NULL)) == -KNIT_EAGAIN)
			kt_sleep_ms(1);
		if (rc != 0)
			a->failed++;
	}
	return NULL;
}

static int fd_readable_now(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Reap with knit_complete(0) until it returns 0; returns what was reaped. */
static int reap_all(knit_pool_t *pool)
{
	knit_completion_t c[32];
	int total = 0, n;
	while ((n = knit_complete(pool, c, 32, 0)) > 0) {
		for (int i = 0; i < n; i++) {
			cr_expect_eq(c[i].status, 0, "status %d", c[i].status);
			knit_completion_release(pool, &c[i]);
		}
		total += n;
	}
	cr_assert_eq(n, 0, "knit_complete(0): %d", n);
	return total;
}

/* One epoll loop until `want` completions arrived; returns the wake-ups. */
static int event_loop(knit_pool_t *pool, int ep, int want, int trial)
{
	int got = 0, wakes = 0;
	while (got < want) {
		struct epoll_event ev;
		int rc = epoll_wait(ep, &ev, 1, GUARD_MS);
		cr_assert_geq(rc, 0, "epoll_wait");
		if (rc == 0) {
			knit_pool_stats_t s;
			kt_stats(pool, &s);
			cr_assert_fail(
				"trial %d: %d of %d completions, then the fd stayed unreadable "
				"(pending %llu): a result was stranded",
				trial, got, want, (unsigned long long)s.pending);
		}
		wakes++;
		got += reap_all(pool); /* no read: knit_complete keeps the level */
	}
	cr_assert_eq(got, want);
	return wakes;
}

static void run_trials(knit_pool_t *pool, const char *task)
{
	int fd = knit_completion_fd(pool);
	cr_assert_geq(fd, 0, "knit_completion_fd: %d", fd);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	cr_assert_geq(ep, 0);
	struct epoll_event ev = {.events = EPOLLIN};
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	uint32_t id = kt_id(pool, task);
	for (int trial = 0; trial < TRIALS; trial++) {
		pthread_t th[ENQUEUERS];
		struct enq_arg a[ENQUEUERS];
		for (int i = 0; i < ENQUEUERS; i++) {
			a[i] = (struct enq_arg){.pool = pool, .task = id, .n = PER_THREAD};
			cr_assert_eq(pthread_create(&th[i], NULL, enqueuer, &a[i]), 0);
		}
		event_loop(pool, ep, ENQUEUERS * PER_THREAD, trial);
		for (int i = 0; i < ENQUEUERS; i++) {
			pthread_join(th[i], NULL);
			cr_assert_eq(a[i].failed, 0);
		}
		/* Everything reaped and nothing in flight: a worker may still be
		 * between publishing its last result and settling the fd, so let
		 * it finish; after that the fd must not be readable. */
		kt_sleep_ms(20);
		cr_assert(!fd_readable_now(fd),
			  "trial %d: fd readable after a full reap of an idle pool", trial);
		cr_assert_eq(reap_all(pool), 0);
	}
	/* An idle second: zero wake-ups. */
	struct epoll_event out;
	cr_expect_eq(epoll_wait(ep, &out, 1, 1000), 0, "idle pool woke the event loop");
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_eq(s.pending, 0);
	cr_expect_eq(s.completed, (uint64_t)TRIALS * ENQUEUERS * PER_THREAD);
	close(ep);
}

KT(completion_fd, epoll_no_stranded_no_spurious)
{
	knit_pool_t *pool = kt_pool_n(2);
	run_trials(pool, "echo");
	kt_destroy(pool);
}

KT(completion_fd, epoll_no_stranded_no_spurious_lanes)
{
	knit_pool_t *pool = kt_pool_lanes(2);
	run_trials(pool, "echo");
	kt_destroy(pool);
}

KT(completion_fd, epoll_inline_lane)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.inline_lane = KNIT_INLINE_FIRST;
	o.topology = KNIT_TOPOLOGY_LANES;
	knit_pool_t *pool = kt_pool(&o);
	run_trials(pool, "echo");
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	cr_expect_gt(s.inline_calls, 0, "no call ran on the inline lane");
	kt_destroy(pool);
}

/* A reap that empties the queue leaves the fd unreadable, also when the
 * caller never reads the fd itself. */
KT(completion_fd, reap_clears_without_read)
{
	knit_pool_t *pool = kt_pool_n(1);
	int fd = knit_completion_fd(pool);
	cr_assert_geq(fd, 0);
	cr_expect(!fd_readable_now(fd), "fresh pool: fd readable");
	uint32_t echo = kt_id(pool, "echo");
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 5; i++)
			kt_enq(pool, echo, kt_i64(i), NULL);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int got = 0;
		while (got < 5) {
			cr_assert_eq(poll(&p, 1, GUARD_MS), 1,
				     "round %d: fd never readable (%d of 5)", round, got);
			got += reap_all(pool);
		}
		cr_assert_eq(got, 5);
		kt_sleep_ms(5);
		cr_assert(!fd_readable_now(fd), "round %d: fd readable after a full reap", round);
	}
	kt_destroy(pool);
}

/* A call whose timeout passes while its task runs (or while it waits for a
 * lane) is completed by a dispatcher pass; the descriptor must become
 * readable when the deadline passes although nothing else happens (no
 * result, no other call into the library), and a reap that takes the
 * expired call leaves it unreadable. Counts only: the wait is a hang guard. */
static void deadline_wakes_loop(uint32_t topology)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.topology = topology;
	knit_pool_t *pool = kt_pool(&o);
	int fd = knit_completion_fd(pool);
	cr_assert_geq(fd, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	kt_gate_close();
	uint32_t block = kt_id(pool, "block");
	for (int round = 0; round < 3; round++) {
		knit_ticket_t t = kt_enq_ex(pool, block, kt_i64(round), NULL, 0, 30, 0);
		cr_assert(kt_wait_started(round + 1), "round %d: the task never started", round);
		/* No call into the library from here on until the fd says so. */
		int rc = epoll_wait(ep, &ev, 1, GUARD_MS);
		cr_assert_eq(rc, 1, "round %d: the deadline passed and the fd stayed unreadable",
			     round);
		knit_completion_t c;
		cr_assert_eq(knit_complete(pool, &c, 1, 0), 1,
			     "round %d: readable, nothing to reap", round);
		cr_expect_eq(c.ticket, t);
		cr_expect_eq(c.status, -KNIT_ETIMEDOUT, "round %d: status %d", round, c.status);
		knit_completion_release(pool, &c);
		cr_expect(!fd_readable_now(fd), "round %d: fd readable after the reap", round);
		/* Let the task end (its late result is dropped) before the next. */
		kt_gate_open();
		kt_sleep_ms(20);
		kt_gate_close();
		cr_expect_eq(knit_complete(pool, &c, 1, 0), 0);
	}
	close(ep);
	kt_gate_open();
	kt_destroy(pool);
}

KT(completion_fd, deadline_makes_readable_lanes) { deadline_wakes_loop(KNIT_TOPOLOGY_LANES); }

KT(completion_fd, deadline_makes_readable_steal) { deadline_wakes_loop(KNIT_TOPOLOGY_STEAL); }

/* A call that completes before its deadline leaves nothing behind: once it
 * is reaped the fd stays unreadable when its (now irrelevant) deadline
 * passes. */
KT(completion_fd, met_deadline_leaves_fd_quiet)
{
	knit_pool_t *pool = kt_pool_n(1);
	int fd = knit_completion_fd(pool);
	cr_assert_geq(fd, 0);
	uint32_t echo = kt_id(pool, "echo");
	kt_enq_ex(pool, echo, kt_i64(7), NULL, 0, 40, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, GUARD_MS), 1, "the result never made the fd readable");
	cr_assert_eq(reap_all(pool), 1);
	kt_sleep_ms(80); /* past the deadline */
	cr_expect(!fd_readable_now(fd), "fd readable for a deadline of a call already reaped");
	kt_destroy(pool);
}
