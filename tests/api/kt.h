/* SPDX-License-Identifier: MIT */
/*
 * tests/api/kt.h - shared helpers of the black-box API tests (Criterion,
 * linked against libknitting.so). Everything here uses only the public ABI.
 *
 * - A fixed table of test tasks (kt_tasks, KT_NTASKS) registered by every
 *   pool made with kt_pool(); tests look ids up by name (kt_id) so they never
 *   depend on the table's order.
 * - A gate the "block" tasks wait on (kt_gate_close/open), a counter of tasks
 *   that started, and a small log the "record" task appends to.
 * - Bounded waits: every wait ends after a safety bound (KT_BOUND_S seconds)
 *   and fails the test then, so a bug shows as a failure, never a hang. No
 *   test asserts on elapsed time; clocks only bound waits.
 *
 * Each Criterion test runs in its own process, so the globals start fresh.
 */
#ifndef KNIT_TESTS_API_KT_H
#define KNIT_TESTS_API_KT_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "knitting.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define KT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define KT_SANITIZED 1
#endif
#endif
#ifndef KT_SANITIZED
#define KT_SANITIZED 0
#endif

/* AddressSanitizer: a worker process built with it turns SIGSEGV into an
 * exit of its own, reserves terabytes of address space (no RLIMIT_AS fits)
 * and keeps freed memory resident (quarantine): the tests of those three
 * skip under it, saying so. */
#if defined(__SANITIZE_ADDRESS__)
#define KT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KT_ASAN 1
#endif
#endif
#ifndef KT_ASAN
#define KT_ASAN 0
#endif

/* Skip the running test, printing why (Criterion keeps the reason quiet
 * at its default verbosity). */
#define KT_SKIP(why)                                                                               \
	do {                                                                                       \
		fprintf(stderr, "SKIP %s: %s\n", __func__, (why));                                 \
		cr_skip_test("%s", (why));                                                         \
	} while (0)

#if defined(__SANITIZE_THREAD__)
#define KT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KT_TSAN 1
#endif
#endif
#ifndef KT_TSAN
#define KT_TSAN 0
#endif

/* Safety bound of every wait (a hang turns into a failure after this). */
#define KT_BOUND_S 20.0
/* Criterion's per-test limit: the last line of defence against a hang. */
#define KT_TIMEOUT 90.0
/* A knit_call timeout that never expires in a test: a call with a timeout
 * is not eligible for the synchronous fast path (knit_call(3)), so this
 * keeps a knit_call on the ticketed path, where a test observes the
 * backlog, the lanes' arenas or the steal claims. */
#define KT_TICKETED_NS ((int64_t)(KT_TIMEOUT * 1e9))
#define KT(suite, name) Test(suite, name, .timeout = KT_TIMEOUT)

/* Park watchdog used by kt_opts(): long enough that an idle worker never
 * reaches it within a test, so watchdog_expiries must stay 0. */
#define KT_PARK_MS 60000u

/* ---- the task table ------------------------------------------------------- */
/*
 * name          flags / timeout    what it does
 * abort_loop    ABORTABLE          loops until knit_ctx_aborted() (bounded);
 *                                  returns I64 1 if it saw the abort, 0 if not
 * abort_plain   -                  same function, task not abortable
 * aborted       -                  returns I64 knit_ctx_aborted(ctx)
 * aborted_abortable ABORTABLE      same as aborted
 * alloc         -                  arg I64 n: result BYTES of n pattern bytes
 *                                  built in knit_ctx_alloc() memory
 * alloc_probe   -                  arg I64 n: returns I64 1 if knit_ctx_alloc(n)
 *                                  gave NULL, 0 if it gave memory
 * block         -                  counts itself started, waits for the gate
 *                                  (bounded), returns arg
 * block_t50     timeout 50 ms      same as block
 * block_bytes   -                  block, then as bytes
 * bytes         -                  arg I64 n: result BYTES of n pattern bytes
 *                                  (from a malloc'd buffer, copied by the library)
 * deadline      -                  returns I64 knit_ctx_deadline_ns(ctx)
 * echo          -                  result = arg
 * error         -                  arg I64 c: sets ret to ERROR{code c,
 *                                  message "task error <c>"}, returns 1
 * error_long    -                  arg I64 n: sets ret to ERROR{code 4242,
 *                                  message of n pattern chars}, returns 3
 * fail          -                  returns arg I64 without touching ret
 * fail_set      -                  sets ret to I64 77, returns arg I64
 * inspect       -                  returns I64 kt_value_hash(arg)
 * lane          -                  returns I64 knit_ctx_lane(ctx)
 * record        -                  appends {arg I64, pthread_self, lane} to the
 *                                  record log, returns arg
 * sleep         -                  arg I64 ms: sleeps that long, returns arg
 * sleep_t50     timeout 50 ms      same as sleep
 * str_nul       -                  returns BOOL: arg is a STRING whose byte at
 *                                  data[len] is NUL
 * string        -                  arg I64 n: result STRING of n pattern chars
 * task_data     data = &kt_task_data_cookie
 *                                  returns I64 (intptr_t)knit_ctx_task_data(ctx)
 */
extern int kt_task_data_cookie;
extern const knit_task_t kt_tasks[];
extern const size_t KT_NTASKS;

/* The pattern byte at index i of a pattern buffer (never NUL). */
static inline uint8_t kt_pat(size_t i) { return (uint8_t)('A' + (i * 7 + i / 251) % 26); }

/* The gate the block tasks wait on; closed at process start. */
void kt_gate_close(void);
void kt_gate_open(void);
extern atomic_int kt_started; /* block tasks that have started */
/* Wait (bounded) until at least n block tasks have started; 1 if so. */
int kt_wait_started(int n);

/* abort_loop runs that ended, and those of them that saw their abort bit. */
extern atomic_int kt_abort_done;
extern atomic_int kt_abort_seen;
/* Wait (bounded) until at least n abort_loop runs ended; 1 if so. */
int kt_wait_abort_done(int n);

/* Record log of the "record" task. */
#define KT_RECORD_MAX 4096
struct kt_record {
	int64_t arg;
	pthread_t thread;
	int lane;
};
extern struct kt_record kt_records[KT_RECORD_MAX];
extern atomic_int kt_nrecords;

/* FNV-1a over a value's type, code, scalar and bytes (what "inspect" returns). */
int64_t kt_value_hash(const knit_value_t *v);
uint64_t kt_fnv1a(const void *p, size_t n, uint64_t h);

/* ---- pools ----------------------------------------------------------------- */
/* Options: zeroed, size set, `workers` workers, park_ms = KT_PARK_MS. */
void kt_opts(knit_pool_options_t *o, uint32_t workers);
/* A pool over kt_tasks (asserts creation succeeded). */
knit_pool_t *kt_pool(const knit_pool_options_t *o);
/* A pool with kt_opts(workers). */
knit_pool_t *kt_pool_n(uint32_t workers);
/* The same with topology LANES (tests that pin calls with KNIT_CALL_LANE:
 * AUTO picks STEAL for 2..31 workers, where pinning is -KNIT_EINVAL). */
knit_pool_t *kt_pool_lanes(uint32_t workers);
/* Id of a task by name (asserts it exists). */
uint32_t kt_id(knit_pool_t *pool, const char *name);
/* Assert watchdog_expiries == 0 on every lane, then destroy (asserts 0). */
void kt_destroy(knit_pool_t *pool);
/* Stats snapshot (asserts the call succeeds). */
void kt_stats(knit_pool_t *pool, knit_pool_stats_t *s);

/* ---- values ---------------------------------------------------------------- */
knit_value_t kt_none(void);
knit_value_t kt_bool(int b);
knit_value_t kt_i64(int64_t v);
knit_value_t kt_f64(double v);
knit_value_t kt_bytes(const void *p, size_t n);
knit_value_t kt_str(const char *p, size_t n);
knit_value_t kt_err(int32_t code, const char *msg);
/* malloc'd pattern buffer of n bytes (n may be 0: returns a valid pointer). */
uint8_t *kt_pattern(size_t n);
/* 1 if p[0..n) is the pattern. */
int kt_is_pattern(const void *p, size_t n);

/* ---- calls and completions ---------------------------------------------- */
/* Enqueue, asserting it returned 0; returns the ticket. */
/* A burst of n requests of task: request i takes argument I64 base + i
 * (in v[i]) and user_data i + 1, no options. */
void kt_fill_reqs(knit_request_t *r, knit_value_t *v, int n, uint32_t task, int64_t base);
knit_ticket_t kt_enq(knit_pool_t *pool, uint32_t task, knit_value_t arg, void *ud);
knit_ticket_t kt_enq_ex(knit_pool_t *pool, uint32_t task, knit_value_t arg, void *ud,
			uint32_t flags, uint32_t timeout_ms, uint32_t lane);
/* Reap until n completions were collected into out[] or the safety bound
 * passed; returns how many were collected. Completions are not released. */
int kt_reap(knit_pool_t *pool, knit_completion_t *out, int n);
/* Reap exactly one (asserts it arrives within the bound). */
void kt_reap1(knit_pool_t *pool, knit_completion_t *out);
/* Poll for `ms` milliseconds; returns the completions seen (released). */
int kt_quiet(knit_pool_t *pool, int ms);

/* ---- process pools ---------------------------------------------------------- */
/* The test task library of process pools (tests/api/tasklib/proc_tasks.c). */
#define KT_PROC_LIB KT_BUILD_DIR "/tests/lib/proc_tasks.so"
/* kt_opts() for a process pool running KT_PROC_LIB. */
void kt_proc_opts(knit_pool_options_t *o, uint32_t workers);
/* knit_call of `task` by name with a KT_BOUND_S timeout; asserts it was made. */
knit_completion_t kt_proc_call(knit_pool_t *p, const char *task, knit_value_t arg);
/* Children of this process (any state, zombies included), on any thread. */
int kt_count_children(void);
/* Bounded sleep helpers. */
void kt_sleep_ms(int ms);
int64_t kt_now_ns(void);

#endif /* KNIT_TESTS_API_KT_H */
