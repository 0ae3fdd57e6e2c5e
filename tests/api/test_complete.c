/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_complete.c - knit_complete, knit_completion_release and
 * knit_completion_fd: argument checks, poll and timeout, max, several
 * reapers (each completion exactly once), the eventfd, and knit_call's
 * completions never reaching knit_complete callers.
 */
#include "api/kt.h"

#include <sys/epoll.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

KT(complete, bad_args)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c[2];
	cr_expect_eq(knit_complete(NULL, c, 1, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_complete(pool, NULL, 1, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_complete(pool, c, 0, 0), -KNIT_EINVAL);
	/* A bad call must not eat a completion. */
	kt_enq(pool, kt_id(pool, "echo"), kt_i64(1), NULL);
	for (int i = 0; i < 50; i++) {
		cr_expect_eq(knit_complete(pool, c, 0, 1000000), -KNIT_EINVAL);
		cr_expect_eq(knit_complete(pool, NULL, 2, 1000000), -KNIT_EINVAL);
	}
	kt_reap1(pool, c);
	cr_expect_eq(c[0].result.i64, 1);
	kt_destroy(pool);
}

KT(complete, poll_and_timeout_empty)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c;
	cr_expect_eq(knit_complete(pool, &c, 1, 0), 0);
	cr_expect_eq(knit_complete(pool, &c, 1, 20 * 1000 * 1000), 0);
	kt_destroy(pool);
}

KT(complete, respects_max)
{
	enum { N = 40 };
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo");
	for (int i = 0; i < N; i++)
		kt_enq(pool, echo, kt_i64(i), NULL);
	knit_completion_t out[N + 8];
	int got = 0;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (got < N && kt_now_ns() < end) {
		/* canary past max */
		memset(&out[got + 3], 0x5A, sizeof out[0]);
		int rc = knit_complete(pool, out + got, 3, 50 * 1000 * 1000);
		cr_assert(rc >= 0 && rc <= 3, "knit_complete(max 3) returned %d", rc);
		unsigned char *canary = (unsigned char *)&out[got + 3];
		for (size_t b = 0; b < sizeof out[0]; b++)
			cr_assert_eq(canary[b], 0x5A, "wrote past max");
		got += rc;
	}
	cr_expect_eq(got, N);
	kt_destroy(pool);
}

KT(complete, negative_timeout_waits)
{
	knit_pool_t *pool = kt_pool_n(1);
	kt_enq(pool, kt_id(pool, "sleep"), kt_i64(50), (void *)7);
	knit_completion_t c;
	int rc = knit_complete(pool, &c, 1, -1);
	cr_assert_eq(rc, 1, "knit_complete(-1) returned %d", rc);
	cr_expect_eq(c.user_data, (void *)7);
	cr_expect_eq(c.status, 0);
	kt_destroy(pool);
}

KT(complete, release_rules)
{
	knit_pool_t *pool = kt_pool_n(1);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "bytes"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 4096}, &c, 0),
		     0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(knit_completion_release(NULL, &c), -KNIT_EINVAL);
	cr_expect_eq(knit_completion_release(pool, NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_completion_release(pool, &c), 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE, "released completion is empty");
	cr_expect_null(c.result.data);
	cr_expect_eq(c.result.len, 0);
	cr_expect_eq(knit_completion_release(pool, &c), 0, "second release");
	/* A completion without bytes. */
	cr_assert_eq(knit_call(pool, kt_id(pool, "echo"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 4}, &c, 0),
		     0);
	cr_expect_eq(knit_completion_release(pool, &c), 0);
	cr_expect_eq(knit_completion_release(pool, &c), 0);
	/* A zeroed completion the library never filled. */
	memset(&c, 0, sizeof c);
	cr_expect_eq(knit_completion_release(pool, &c), 0);
	kt_destroy(pool);
}

/* Bad input to knit_completion_release returns -KNIT_EINVAL and never
 * frees anything it does not own (ASan turns a bad free into a failure). */
KT(complete, release_rejects_what_it_does_not_own)
{
	knit_pool_t *pool = kt_pool_n(1);
	const knit_value_t n = kt_i64(300);
	knit_completion_t c, copy;
	cr_assert_eq(knit_call(pool, kt_id(pool, "string"), &n, &c, 0), 0);
	cr_assert_eq(c.status, 0);
	cr_assert_eq(c.result.type, KNIT_VALUE_STRING);
	copy = c;
	cr_expect_eq(knit_completion_release(pool, &c), 0);
	/* The copy names bytes that were freed already. */
	cr_expect_eq(knit_completion_release(pool, &copy), -KNIT_EINVAL);
	/* A completion the library never handed out (stack garbage). */
	knit_completion_t junk;
	memset(&junk, 0xA5, sizeof junk);
	cr_expect_eq(knit_completion_release(pool, &junk), -KNIT_EINVAL);
	/* Bytes the library does not own, with no handle. */
	char mine[8] = "mine";
	memset(&junk, 0, sizeof junk);
	junk.result = kt_str(mine, 4);
	cr_expect_eq(knit_completion_release(pool, &junk), -KNIT_EINVAL);
	/* A live completion's handle with the data pointer of another. */
	knit_completion_t a, b;
	cr_assert_eq(knit_call(pool, kt_id(pool, "string"), &n, &a, 0), 0);
	cr_assert_eq(knit_call(pool, kt_id(pool, "string"), &n, &b, 0), 0);
	copy = a;
	copy.result.data = b.result.data;
	cr_expect_eq(knit_completion_release(pool, &copy), -KNIT_EINVAL);
	/* ... and the real ones still release, exactly once each. */
	cr_expect_eq(knit_completion_release(pool, &a), 0);
	cr_expect_eq(knit_completion_release(pool, &b), 0);
	cr_expect_eq(knit_completion_release(pool, &copy), -KNIT_EINVAL);
	/* A failed knit_call leaves *out empty: releasing it is harmless. */
	memset(&c, 0xA5, sizeof c);
	cr_expect_eq(knit_call(pool, 9999, &n, &c, 0), -KNIT_ENOTASK);
	cr_expect_eq(c.ticket, 0);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	cr_expect_null(c.result.data);
	cr_expect_eq(c.reserved[0], 0);
	cr_expect_eq(knit_completion_release(pool, &c), 0);
	memset(&c, 0xA5, sizeof c);
	cr_expect_eq(knit_call(NULL, 0, &n, &c, 0), -KNIT_EINVAL);
	cr_expect_eq(c.ticket, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, -1), 0);
	memset(&c, 0xA5, sizeof c);
	cr_expect_eq(knit_call(pool, kt_id(pool, "echo"), &n, &c, 0), -KNIT_ECLOSED);
	cr_expect_eq(c.ticket, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	cr_expect_eq(knit_completion_release(pool, &c), 0);
	kt_destroy(pool);
}

KT(complete, unreleased_freed_by_destroy)
{
	/* Results reaped but never released, and results never reaped: destroy
	 * must cope (no crash, no use after free under ASan). That it frees
	 * them is proven by tests/stress/pool_stop_races under ASan: Criterion's
	 * test processes skip the leak check at exit. */
	knit_pool_t *pool = kt_pool_n(1);
	uint32_t bytes = kt_id(pool, "bytes");
	knit_completion_t c[4];
	for (int i = 0; i < 4; i++)
		kt_enq(pool, bytes, kt_i64(5000 + i), NULL);
	cr_assert_eq(kt_reap(pool, c, 2), 2);
	kt_sleep_ms(50);
	kt_destroy(pool);
}

/* ---- several reapers ------------------------------------------------------------ */

enum { MR_N = 3000 };
static atomic_int mr_seen[MR_N];
static atomic_int mr_total;

struct reaper_arg {
	knit_pool_t *pool;
	int bad;
};

static void *reaper(void *p)
{
	struct reaper_arg *a = p;
	knit_completion_t out[16];
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (atomic_load(&mr_total) < MR_N && kt_now_ns() < end) {
		int rc = knit_complete(a->pool, out, 16, 20 * 1000 * 1000);
		if (rc < 0) {
			a->bad++;
			break;
		}
		for (int i = 0; i < rc; i++) {
			intptr_t k = (intptr_t)out[i].user_data - 1;
			if (k < 0 || k >= MR_N || out[i].status != 0 || out[i].result.i64 != k)
				a->bad++;
			else
				atomic_fetch_add(&mr_seen[k], 1);
			knit_completion_release(a->pool, &out[i]);
		}
		atomic_fetch_add(&mr_total, rc);
	}
	return NULL;
}

KT(complete, three_reapers_exactly_once)
{
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo");
	struct reaper_arg a[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		a[i] = (struct reaper_arg){pool, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, reaper, &a[i]), 0);
	}
	for (int i = 0; i < MR_N; i++) {
		knit_value_t v = kt_i64(i);
		int rc;
		int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
		while ((rc = knit_enqueue(pool, echo, &v, (void *)(intptr_t)(i + 1), NULL)) ==
			       -KNIT_EAGAIN &&
		       kt_now_ns() < end)
			kt_sleep_ms(1);
		cr_assert_eq(rc, 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(a[i].bad, 0, "reaper %d saw %d bad completions", i, a[i].bad);
	}
	cr_expect_eq(atomic_load(&mr_total), MR_N);
	for (int i = 0; i < MR_N; i++)
		cr_expect_eq(atomic_load(&mr_seen[i]), 1, "call %d seen %d times", i,
			     atomic_load(&mr_seen[i]));
	kt_destroy(pool);
}

/* ---- knit_call vs knit_complete ---------------------------------------------- */

struct caller_arg {
	knit_pool_t *pool;
	uint32_t echo;
	int base, n, bad;
};

static void *caller(void *p)
{
	struct caller_arg *a = p;
	for (int i = 0; i < a->n; i++) {
		knit_value_t v = kt_i64(a->base + i);
		knit_completion_t c;
		int rc = knit_call(a->pool, a->echo, &v, &c, 0);
		if (rc != 0 || c.status != 0 || c.result.type != KNIT_VALUE_I64 ||
		    c.result.i64 != a->base + i)
			a->bad++;
		if (rc == 0)
			knit_completion_release(a->pool, &c);
	}
	return NULL;
}

KT(complete, knit_call_never_reaches_complete)
{
	int n = KT_SANITIZED ? 200 : 1000;
	knit_pool_t *pool = kt_pool_n(2);
	uint32_t echo = kt_id(pool, "echo");
	struct caller_arg a[2] = {{pool, echo, 0, n, 0}, {pool, echo, 1000000, n, 0}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, caller, &a[i]), 0);
	/* The main thread reaps; it also enqueues its own calls, tagged, which
	 * are the only completions it may see. */
	int mine = 0, foreign = 0, enq = 0;
	knit_completion_t out[8];
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	void *tag = (void *)0x7a67;
	int done = 0;
	while (kt_now_ns() < end) {
		if (enq < 200) {
			kt_enq(pool, echo, kt_i64(-1), tag);
			enq++;
		}
		int rc = knit_complete(pool, out, 8, 1000 * 1000);
		cr_assert(rc >= 0);
		for (int i = 0; i < rc; i++) {
			if (out[i].user_data == tag && out[i].result.i64 == -1)
				mine++;
			else
				foreign++;
			knit_completion_release(pool, &out[i]);
		}
		for (int t = 0; t < 2; t++)
			if (!(done & (1 << t)) && pthread_tryjoin_np(th[t], NULL) == 0)
				done |= 1 << t;
		if (done == 3 && mine == enq)
			break;
	}
	cr_assert_eq(done, 3, "callers did not finish");
	cr_expect_eq(a[0].bad, 0);
	cr_expect_eq(a[1].bad, 0);
	cr_expect_eq(foreign, 0, "%d knit_call completions were handed to knit_complete", foreign);
	cr_expect_eq(mine, enq);
	kt_destroy(pool);
}

/*
 * A host blocked in knit_complete(-1) sleeps until something happens or the
 * next call deadline passes, never on a periodic watchdog. Every sleep arms
 * the doorbell once, so doorbell_arms counts the blocked host's wake-ups: it
 * must not move over an idle interval (the interval only gives a periodic
 * wake-up time to show; nothing is asserted about elapsed time).
 */
static void *blocked_reaper(void *arg)
{
	knit_pool_t *pool = arg;
	knit_completion_t c;
	int rc = knit_complete(pool, &c, 1, -1);
	if (rc == 1)
		knit_completion_release(pool, &c);
	return (void *)(intptr_t)rc;
}

static void idle_blocked_no_wakes(int with_far_deadline)
{
	knit_pool_t *pool = kt_pool_n(1);
	if (with_far_deadline) /* outstanding, deadline a minute away */
		kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(1), NULL, 0, 60000, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, blocked_reaper, pool), 0);
	knit_pool_stats_t s;
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	do {
		kt_sleep_ms(10);
		kt_stats(pool, &s);
	} while (s.doorbell_arms == 0 && kt_now_ns() < end);
	cr_assert_geq(s.doorbell_arms, 1, "the reaper never went to sleep");
	kt_sleep_ms(100); /* it is inside the futex wait by now */
	kt_stats(pool, &s);
	const uint64_t arms0 = s.doorbell_arms, wakes0 = s.doorbell_wakes;
	kt_sleep_ms(2500);
	kt_stats(pool, &s);
	cr_expect_eq(s.doorbell_arms, arms0, "idle blocked host woke %llu times",
		     (unsigned long long)(s.doorbell_arms - arms0));
	cr_expect_eq(s.doorbell_wakes, wakes0);
	if (with_far_deadline)
		kt_gate_open(); /* its completion releases the reaper */
	else
		kt_enq(pool, kt_id(pool, "echo"), kt_i64(1), NULL);
	void *rc;
	cr_assert_eq(pthread_join(th, &rc), 0);
	cr_expect_eq((intptr_t)rc, 1, "knit_complete(-1) returned %d", (int)(intptr_t)rc);
	kt_destroy(pool);
}

KT(complete, idle_blocked_nothing_pending_no_wakes) { idle_blocked_no_wakes(0); }

KT(complete, idle_blocked_far_deadline_no_wakes) { idle_blocked_no_wakes(1); }

/* ---- knit_completion_fd ------------------------------------------------------------ */

KT(complete, fd_null) { cr_expect_eq(knit_completion_fd(NULL), -KNIT_EINVAL); }

KT(complete, fd_properties)
{
	knit_pool_t *pool = kt_pool_n(1);
	int fd = knit_completion_fd(pool);
	cr_assert_geq(fd, 0, "knit_completion_fd: %d", fd);
	cr_expect_eq(knit_completion_fd(pool), fd, "same fd on the second call");
	int fdfl = fcntl(fd, F_GETFD);
	cr_expect(fdfl >= 0 && (fdfl & FD_CLOEXEC), "the descriptor is close-on-exec");
	/* An epoll instance: it can itself be watched by the caller's epoll. */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	cr_expect_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0, "not pollable by epoll");
	close(ep);
	kt_destroy(pool);
	/* Owned by the pool: closed by destroy. */
	cr_expect_eq(fcntl(fd, F_GETFD), -1, "fd still open after destroy");
}

static int wait_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (kt_now_ns() < end) {
		int rc = poll(&p, 1, 100);
		if (rc == 1 && (p.revents & POLLIN))
			return 1;
	}
	return 0;
}

KT(complete, fd_readable_after_completion)
{
	knit_pool_t *pool = kt_pool_n(1);
	int fd = knit_completion_fd(pool);
	cr_assert_geq(fd, 0);
	uint32_t sleep = kt_id(pool, "sleep");
	for (int round = 0; round < 5; round++) {
		/* The host is not inside knit_complete: only the worker's ring can
		 * make the fd readable. */
		kt_enq(pool, sleep, kt_i64(round == 0 ? 0 : 20), (void *)(intptr_t)(round + 1));
		cr_assert(wait_readable(fd), "round %d: eventfd never became readable", round);
		uint64_t v;
		ssize_t r = read(fd, &v, sizeof v);
		cr_expect(r == 8 || r == -1, "read");
		knit_completion_t c;
		int got = 0;
		int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
		/* Readable means "completions may be waiting": poll until ours. */
		while (got == 0 && kt_now_ns() < end) {
			got = knit_complete(pool, &c, 1, 0);
			cr_assert_geq(got, 0);
			if (!got)
				kt_sleep_ms(1);
		}
		cr_assert_eq(got, 1);
		cr_expect_eq(c.user_data, (void *)(intptr_t)(round + 1));
		cr_expect_eq(c.status, 0);
	}
	kt_destroy(pool);
}
