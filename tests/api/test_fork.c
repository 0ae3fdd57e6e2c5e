/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_fork.c - a pool inherited across fork(2) is dead in the
 * child only: every entry there returns its documented code (no hang, no
 * crash), knit_pool_destroy in the child frees the child's copy without
 * touching the words it shares with the parent, and the parent's pool keeps
 * serving before, during and after children that call every entry point and
 * exit (directly, and through exit() with an atexit() destroy). The
 * child's destroy frees the child's copy of result bytes the parent held
 * (and their table): LeakSanitizer finds nothing under ASan; elsewhere the
 * bytes' own mapping is gone.
 *
 * Children report by exit status (0 = every check held, else the number of
 * the first failed check); an alarm turns a hang in a child into SIGALRM.
 */
#include "api/kt.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

static knit_pool_t *g_pool;

/* Every entry point, in the child. Returns 0 or the failed check's number. */
static int child_checks(knit_pool_t *pool, uint32_t echo, knit_ticket_t pending,
			knit_completion_t *held)
{
	knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = 1};
	knit_ticket_t t = 0;
	knit_completion_t c;
	knit_call_options_t o = {.size = sizeof o};
	knit_pool_stats_t s = {.size = sizeof s};
	if (knit_enqueue(pool, echo, &v, NULL, &t) != -KNIT_ECLOSED)
		return 1;
	if (knit_enqueue_ex(pool, echo, &v, NULL, &o, &t) != -KNIT_ECLOSED)
		return 2;
	if (knit_call(pool, echo, &v, &c, 0) != -KNIT_ECLOSED)
		return 3;
	if (knit_complete(pool, &c, 1, 0) != -KNIT_ECLOSED)
		return 4;
	if (knit_complete(pool, &c, 1, -1) != -KNIT_ECLOSED) /* must not block */
		return 5;
	if (knit_cancel(pool, pending, KNIT_CANCEL_NOW) != -KNIT_ECLOSED)
		return 6;
	if (knit_cancel(pool, pending, KNIT_CANCEL_SIGNAL) != -KNIT_ECLOSED)
		return 7;
	if (knit_completion_fd(pool) != -KNIT_ECLOSED)
		return 8;
	if (knit_pool_stats(pool, &s, sizeof s) != -KNIT_ECLOSED)
		return 9;
	/* Private memory only: these keep working. */
	if (knit_pool_task_id(pool, "echo") != (int)echo)
		return 10;
	if (knit_completion_release(pool, held) != 0)
		return 11;
	if (knit_stop(pool, KNIT_STOP_DRAIN, -1) != -KNIT_ECLOSED) /* must not hang */
		return 12;
	if (knit_stop(pool, KNIT_STOP_CANCEL, -1) != -KNIT_ECLOSED)
		return 13;
	return 0;
}

static int g_exit_status;

static void destroy_at_exit(void)
{
	if (knit_pool_destroy(g_pool) != 0)
		_exit(60);
}

/* Registered first, so it runs last, after the destroy: ends the child
 * with its status before a leak checker's own exit handler (ASan's LSan)
 * reports what the parent's threads had allocated at the fork and would
 * have freed in the parent. */
static void end_child(void) { _exit(g_exit_status); }

/* The parent serves: a knit_call and an enqueue + reap, both bounded. */
static void parent_serves(knit_pool_t *pool, uint32_t echo, int64_t x)
{
	knit_completion_t c;
	knit_value_t v = kt_i64(x);
	cr_assert_eq(knit_call(pool, echo, &v, &c, (int64_t)(KT_BOUND_S * 1e9)), 0);
	cr_expect_eq(c.status, 0, "parent knit_call: status %d", c.status);
	cr_expect_eq(c.result.i64, x);
	knit_completion_release(pool, &c);
	knit_ticket_t t = kt_enq(pool, echo, kt_i64(x + 1), (void *)(intptr_t)x);
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, t);
	cr_expect_eq(c.status, 0, "parent enqueue: status %d", c.status);
	cr_expect_eq(c.result.i64, x + 1);
	knit_completion_release(pool, &c);
}

static int wait_child(pid_t pid)
{
	int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	int st = 0;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (kt_now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			cr_assert_fail("child %d hung", (int)pid);
		}
		kt_sleep_ms(5);
	}
	cr_assert(WIFEXITED(st), "child killed by signal %d (SIGALRM = hung)",
		  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return WEXITSTATUS(st);
}

/* pin: place the blocking call on worker lane 0 (lanes topology), so an
 * inline lane never runs it on the host. */
static void fork_test(knit_pool_t *pool, int pin)
{
	kt_gate_close();
	uint32_t echo = kt_id(pool, "echo");
	int fd = knit_completion_fd(pool); /* inherited too */
	cr_assert_geq(fd, 0);
	parent_serves(pool, echo, 10);
	/* A call in flight across the forks, and a completion held by the
	 * caller (the child releases its own copy). */
	knit_ticket_t pending =
		pin ? kt_enq_ex(pool, kt_id(pool, "block"), kt_i64(5), NULL, KNIT_CALL_LANE, 0, 0)
		    : kt_enq(pool, kt_id(pool, "block"), kt_i64(5), NULL);
	cr_assert(kt_wait_started(1));
	knit_completion_t held;
	cr_assert_eq(knit_call(pool, kt_id(pool, "bytes"),
			       &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 4096}, &held, 0),
		     0);
	cr_assert_eq(held.status, 0);

	for (int how = 0; how < 2; how++) {
		pid_t pid = fork();
		cr_assert_geq(pid, 0, "fork");
		if (pid == 0) {
			alarm(10);
			int rc = child_checks(pool, echo, pending, &held);
			if (how == 0) {
				if (knit_pool_destroy(pool) != 0 && rc == 0)
					rc = 50;
				_exit(rc);
			}
			g_pool = pool;
			g_exit_status = rc;
			atexit(end_child);
			atexit(destroy_at_exit);
			exit(rc);
		}
		int st = wait_child(pid);
		cr_expect_eq(st, 0, "child (%s) failed check %d", how ? "exit + atexit" : "destroy",
			     st);
		parent_serves(pool, echo, 100 + 10 * how);
	}
	/* The call in flight across the forks was not touched by the children. */
	kt_gate_open();
	knit_completion_t c;
	kt_reap1(pool, &c);
	cr_expect_eq(c.ticket, pending);
	cr_expect_eq(c.status, 0, "call in flight across fork: status %d", c.status);
	cr_expect_eq(c.result.i64, 5);
	knit_completion_release(pool, &c);
	knit_completion_release(pool, &held);
	knit_pool_stats_t s = {.size = sizeof s};
	kt_stats(pool, &s);
	cr_expect_eq(s.pending, 0);
	/* The parent's stop and destroy still work (no child stopped it). */
	cr_expect_eq(knit_stop(pool, KNIT_STOP_DRAIN, (int64_t)(KT_BOUND_S * 1e9)), 0);
	kt_destroy(pool);
}

KT(fork, child_dead_parent_serves) { fork_test(kt_pool_n(2), 0); }

KT(fork, child_dead_parent_serves_lanes)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.balancer = KNIT_BALANCE_FIRST_IDLE; /* the parent's calls avoid the blocked lane */
	fork_test(kt_pool(&o), 1);
}

KT(fork, child_dead_parent_serves_inline)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.inline_lane = KNIT_INLINE_LAST;
	o.topology = KNIT_TOPOLOGY_LANES;
	o.balancer = KNIT_BALANCE_FIRST_IDLE;
	fork_test(kt_pool(&o), 1);
}

/* A pool created in the child works there (only inherited pools are dead). */
KT(fork, pool_created_in_child_works)
{
	knit_pool_t *parent = kt_pool_n(1);
	/* One round trip first: the worker has finished starting (thread set-up
	 * takes allocator and sanitizer-runtime locks) and sits idle, so the
	 * fork cannot catch one of those locks held; the child, which creates
	 * threads of its own, would then block on it for good. */
	parent_serves(parent, kt_id(parent, "echo"), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(10);
		knit_pool_t *pool = NULL;
		if (knit_pool_create(NULL, kt_tasks, KT_NTASKS, &pool) != 0)
			_exit(1);
		int echo = knit_pool_task_id(pool, "echo");
		knit_completion_t c;
		knit_value_t v = {.type = KNIT_VALUE_I64, .i64 = 3};
		if (knit_call(pool, (uint32_t)echo, &v, &c, 0) != 0 || c.status != 0 ||
		    c.result.i64 != 3)
			_exit(2);
		if (knit_pool_destroy(pool) != 0)
			_exit(3);
		if (knit_pool_destroy(parent) != 0)
			_exit(4);
		_exit(0);
	}
	cr_expect_eq(wait_child(pid), 0);
	parent_serves(parent, kt_id(parent, "echo"), 1);
	kt_destroy(parent);
}

/* Bytes of the "alloc" task of KT_PROC_LIB: 'a' + i % 26. */
static int alloc_pattern(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)('a' + i % 26))
			return 0;
	return 1;
}

/* Result bytes the parent reaped and holds, then forks: the child's destroy
 * frees its copy of them and of the table that tracks them. A process pool,
 * so that no task ran on a host thread the child lacks (its thread-local
 * buffers would look leaked). Under ASan a leak check in the child finds
 * nothing; in a plain build the bytes are one malloc'd mapping of their own
 * (the mmap threshold is fixed below them), and after the destroy that
 * mapping is gone. */
KT(fork, child_destroy_frees_held_bytes)
{
	enum { kBytes = 1 << 20 };
#if !defined(__SANITIZE_ADDRESS__)
	cr_assert_eq(mallopt(M_MMAP_THRESHOLD, 64 * 1024), 1);
#endif
	knit_pool_options_t o;
	kt_proc_opts(&o, 1);
	o.payload_max_bytes = 16u << 20;
	o.max_payload_bytes = 2u << 20;
	knit_pool_t *pool = NULL;
	cr_assert_eq(knit_pool_create(&o, NULL, 0, &pool), 0);
	knit_completion_t held = kt_proc_call(pool, "alloc", kt_i64(kBytes));
	cr_assert_eq(held.status, 0);
	cr_assert_eq(held.result.len, (size_t)kBytes);
	cr_assert(alloc_pattern(held.result.data, kBytes));
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
		alarm(10);
		if (knit_pool_destroy(pool) != 0)
			_exit(1);
#if defined(__SANITIZE_ADDRESS__)
		/* 0: no leak (it prints what leaked otherwise). */
		_exit(__lsan_do_recoverable_leak_check() != 0 ? 2 : 0);
#else
		const long page = sysconf(_SC_PAGESIZE);
		void *at = (void *)((uintptr_t)held.result.data & ~(uintptr_t)(page - 1));
		/* msync fails with ENOMEM on an address that is not mapped. */
		_exit(msync(at, (size_t)page, MS_ASYNC) != 0 && errno == ENOMEM ? 0 : 3);
#endif
	}
	int st = wait_child(pid);
	cr_expect_eq(st, 0, "child: %s",
		     st == 2   ? "LeakSanitizer found a leak"
		     : st == 3 ? "the held bytes were not freed"
			       : "destroy failed");
	/* The parent's copy is untouched. */
	cr_assert(alloc_pattern(held.result.data, kBytes));
	cr_assert_eq(knit_completion_release(pool, &held), 0);
	kt_destroy(pool);
}
