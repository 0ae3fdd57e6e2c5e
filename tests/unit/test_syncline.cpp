// SPDX-License-Identifier: MIT
// tests/unit/test_syncline.cpp - the synchronous call line (src/syncline.h)
// white box: the region words are forged to check that nothing read from
// the line is trusted.
//  - worker side (S3, S4): an out-of-sequence request word is counted as a
//    protocol error once and never served; requests with a bad task id, lane
//    echo, type, BOOL value, length or a string without its NUL are answered
//    -KNIT_EPROTO without running the task (the test plays the claim holder
//    with the room's own words);
//  - caller side (S6): a forged reply (wrong lane echo, unknown status, an
//    inline length beyond the slot, a spill that is not there) completes the
//    call with -KNIT_EPROTO, counts it, and retires the line: later calls on
//    that pool take the ticketed path;
//  - the region layout: each worker lane's line lies in the line area,
//    after the lane extensions and before the abort bitmap.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include <atomic>
#include <pthread.h>
#include <time.h>

#include "knitting.h"
#include "src/runtime.h"
#include "src/syncline.h"
#include "src/wake.h"

using namespace knit::detail;

namespace {

std::atomic<int> g_go{0};
std::atomic<int> g_started{0};
std::atomic<int> g_ran{0};

int64_t mono_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, nullptr);
}

int t_echo(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	g_ran.fetch_add(1);
	*ret = *arg;
	return 0;
}

int t_hold(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	g_started.fetch_add(1);
	const int64_t end = mono_ns() + 20ll * 1000000000; // bounded
	while (!g_go.load() && mono_ns() < end)
		nap_us(200);
	*ret = *arg;
	return 0;
}

const knit_task_t kTasks[] = {{"echo", t_echo, 0, 0}, {"hold", t_hold, 0, 0}};
constexpr uint32_t kEcho = 0, kHold = 1; // name order

struct Fix {
	knit_pool_t *pool;
	Pool *p;
	Lane *l;
};

void open_pool(Fix *f, uint32_t workers)
{
	g_go.store(0);
	g_started.store(0);
	g_ran.store(0);
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = workers;
	assert_int_equal(knit_pool_create(&o, kTasks, 2, &f->pool), 0);
	f->p = &f->pool->p;
	f->l = &f->p->lanes[0];
	assert_int_equal(knit_pool_task_id(f->pool, "echo"), (int)kEcho);
}

uint64_t proto_errors(Fix *f) { return knit_load_relaxed_64(&f->p->st_proto_errors); }

knit_value_t i64(int64_t v)
{
	knit_value_t a;
	memset(&a, 0, sizeof a);
	a.type = KNIT_VALUE_I64;
	a.i64 = v;
	return a;
}

// A ticketed echo (a timeout keeps it off the line); returns its ticket.
knit_ticket_t ticketed_echo(Fix *f, int64_t v)
{
	knit_value_t a = i64(v);
	knit_completion_t c;
	assert_int_equal(knit_call(f->pool, kEcho, &a, &c, 60ll * 1000000000), 0);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.result.i64, v);
	assert_int_not_equal(c.ticket, 0);
	return c.ticket;
}

uint32_t *word(uint8_t *slot, uint64_t off) { return reinterpret_cast<uint32_t *>(slot + off); }

// An out-of-sequence request word: counted once, never served; the line
// then still serves real calls.
void test_forged_request_seq(void **)
{
	Fix f;
	open_pool(&f, 1);
	uint8_t *rq = f.l->line + kLineOffRequest;
	knit_store_release_32(word(rq, kLineOffSeq), 7); // neither served (0) nor served + 1
	const int ran0 = g_ran.load();
	ticketed_echo(&f, 1); // the worker runs passes (line_serve looks)
	ticketed_echo(&f, 2);
	assert_int_equal(proto_errors(&f), 1);
	assert_int_equal(g_ran.load(), ran0 + 2); // only the two ticketed calls ran
	// Put the word back where the worker expects it (as if never forged).
	knit_store_release_32(word(rq, kLineOffSeq), 0);
	knit_value_t a = i64(5);
	knit_completion_t c;
	assert_int_equal(knit_call(f.pool, kEcho, &a, &c, 0), 0);
	assert_int_equal(c.ticket, 0);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.result.i64, 5);
	assert_int_equal(proto_errors(&f), 1);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

// Play the claim holder: publish a request with the given words and wait
// for the reply; returns the reply's status.
int32_t forged_request(Fix *f, uint32_t task, uint32_t lane, uint32_t type, uint64_t scalar,
		       const void *payload, size_t n)
{
	Lane *l = f->l;
	assert_int_equal(knit_cas_acq_rel_32(&l->line_state, kLineIdle, kLineClaimed), kLineIdle);
	uint8_t *rq = l->line + kLineOffRequest;
	const uint64_t seq64 = knit_load_relaxed_64(&l->line_seq) + 1;
	const uint32_t s = (uint32_t)seq64;
	memcpy(rq + kLineOffTask, &task, 4);
	memcpy(rq + kLineOffRqLane, &lane, 4);
	memcpy(rq + kLineOffType, &type, 4);
	memcpy(rq + kLineOffScalar, &scalar, 8);
	memset(rq + kLineHeadBytes, 'z', kLinePayload);
	if (n != 0)
		memcpy(rq + kLineHeadBytes, payload, n);
	knit_store_relaxed_64(&l->line_seq, seq64);
	knit_store_release_32(word(rq, kLineOffSeq), s);
	knit_fence_seq_cst();
	lane_wake(f->p, l, false);
	uint8_t *rp = l->line + kLineOffReply;
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (knit_load_acquire_32(word(rp, kLineOffSeq)) != s && mono_ns() < end)
		nap_us(50);
	assert_int_equal(knit_load_acquire_32(word(rp, kLineOffSeq)), s);
	int32_t status;
	memcpy(&status, rp + kLineOffStatus, 4);
	uint32_t echo_lane;
	memcpy(&echo_lane, rp + kLineOffLane, 4);
	assert_int_equal(echo_lane, l->index);
	// Counted completed like a line call, then released.
	knit_store_relaxed_64(&l->line_done, knit_load_relaxed_64(&l->line_done) + 1);
	knit_store_release_32(&l->line_state, kLineIdle);
	return status;
}

void test_bad_requests_not_run(void **)
{
	Fix f;
	open_pool(&f, 1);
	const int ran0 = g_ran.load();
	const char str[] = "abc";
	// Bad task id, lane echo, type, BOOL value, length, missing NUL.
	assert_int_equal(forged_request(&f, 99, 0, KNIT_VALUE_I64, 1, nullptr, 0), -KNIT_EPROTO);
	assert_int_equal(forged_request(&f, kEcho, 3, KNIT_VALUE_I64, 1, nullptr, 0), -KNIT_EPROTO);
	assert_int_equal(forged_request(&f, kEcho, 0, 77, 1, nullptr, 0), -KNIT_EPROTO);
	assert_int_equal(forged_request(&f, kEcho, 0, KNIT_VALUE_BOOL, 2, nullptr, 0),
			 -KNIT_EPROTO);
	assert_int_equal(
		forged_request(&f, kEcho, 0, KNIT_VALUE_BYTES, kLinePayload + 1, nullptr, 0),
		-KNIT_EPROTO);
	assert_int_equal(forged_request(&f, kEcho, 0, KNIT_VALUE_STRING, 3, str, 3),
			 -KNIT_EPROTO); // 'z' after it
	assert_int_equal(forged_request(&f, kEcho, 0, KNIT_VALUE_STRING, kLinePayload, nullptr, 0),
			 -KNIT_EPROTO);
	assert_int_equal(g_ran.load(), ran0);
	// A good one through the same words runs.
	assert_int_equal(forged_request(&f, kEcho, 0, KNIT_VALUE_STRING, 3, str, 4), 0);
	assert_int_equal(g_ran.load(), ran0 + 1);
	// The pool's own calls still use the line.
	knit_value_t a = i64(8);
	knit_completion_t c;
	assert_int_equal(knit_call(f.pool, kEcho, &a, &c, 0), 0);
	assert_int_equal(c.ticket, 0);
	assert_int_equal(c.result.i64, 8);
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	assert_int_equal(knit_pool_stats(f.pool, &st, sizeof st), 0);
	assert_int_equal(st.sync_calls, 9); // 8 forged requests + 1 call
	assert_int_equal(st.enqueued, st.completed);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

struct Caller {
	knit_pool_t *pool;
	int rc;
	knit_completion_t c;
};

void *hold_caller(void *arg)
{
	Caller *k = static_cast<Caller *>(arg);
	knit_value_t a = i64(42);
	k->rc = knit_call(k->pool, kHold, &a, &k->c, 0);
	return nullptr;
}

enum Forge { kBadLane, kBadStatus, kBadLength, kNoSpill };

// While the worker holds the caller's task, publish a forged reply with the
// worker's words: the caller must reject it.
void forged_reply(Forge how)
{
	Fix f;
	open_pool(&f, 1);
	Caller k = {f.pool, -1, {}};
	pthread_t t;
	pthread_create(&t, nullptr, hold_caller, &k);
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (g_started.load() == 0 && mono_ns() < end)
		nap_us(100);
	assert_int_equal(g_started.load(), 1);
	Lane *l = f.l;
	uint8_t *rp = l->line + kLineOffReply;
	const uint32_t s = (uint32_t)knit_load_relaxed_64(&l->line_seq);
	uint32_t lane = l->index, type = KNIT_VALUE_I64, where = kLineWhereInline;
	int32_t status = 0;
	uint64_t scalar = 1;
	if (how == kBadLane)
		lane = 5;
	if (how == kBadStatus)
		status = -KNIT_EAGAIN;
	if (how == kBadLength) {
		type = KNIT_VALUE_BYTES;
		scalar = kLinePayload + 1;
	}
	if (how == kNoSpill) {
		type = KNIT_VALUE_BYTES;
		scalar = 500;
		where = kLineWhereSpill; // but line_spill is empty
	}
	memcpy(rp + kLineOffLane, &lane, 4);
	memcpy(rp + kLineOffStatus, &status, 4);
	memcpy(rp + kLineOffType, &type, 4);
	memcpy(rp + kLineOffScalar, &scalar, 8);
	memcpy(rp + kLineOffWhere, &where, 4);
	knit_store_release_32(word(rp, kLineOffSeq), s);
	host_event(f.p, false); // ring a caller asleep on the doorbell
	pthread_join(t, nullptr);
	assert_int_equal(k.rc, 0);
	assert_int_equal(k.c.status, -KNIT_EPROTO);
	assert_int_equal(k.c.ticket, 0);
	assert_int_equal(k.c.result.type, KNIT_VALUE_NONE);
	assert_int_equal(proto_errors(&f), 1);
	assert_int_equal(knit_load_relaxed_32(&l->line_state), kLineRetired);
	g_go.store(1);
	// A retired line is never claimed again: ticketed from now on.
	knit_value_t a = i64(3);
	knit_completion_t c;
	assert_int_equal(knit_call(f.pool, kEcho, &a, &c, 0), 0);
	assert_int_not_equal(c.ticket, 0);
	assert_int_equal(c.result.i64, 3);
	assert_int_equal(knit_stop(f.pool, KNIT_STOP_DRAIN, -1), 0);
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	assert_int_equal(knit_pool_stats(f.pool, &st, sizeof st), 0);
	assert_int_equal(st.sync_calls, 1);
	assert_int_equal(st.enqueued, 2);
	assert_int_equal(st.completed, 2);
	assert_int_equal(st.pending, 0);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

void test_reply_bad_lane(void **) { forged_reply(kBadLane); }
void test_reply_bad_status(void **) { forged_reply(kBadStatus); }
void test_reply_bad_length(void **) { forged_reply(kBadLength); }
void test_reply_missing_spill(void **) { forged_reply(kNoSpill); }

void test_line_area_layout(void **)
{
	Fix f;
	open_pool(&f, 3);
	uint8_t *base = f.p->region.base;
	const uint64_t area = line_area_off(f.p->nlanes);
	assert_true(area >= kPoolOffLaneExt + (uint64_t)f.p->nlanes * kLaneExtBytes);
	for (uint32_t i = 0; i < f.p->nworkers; i++) {
		assert_ptr_equal(f.p->lanes[i].line, base + area + (uint64_t)i * kLineBytes);
		assert_int_equal((uintptr_t)f.p->lanes[i].line % kBlock, 0);
	}
	assert_true(reinterpret_cast<uint8_t *>(f.p->abort_words) >=
		    base + area + f.p->nworkers * kLineBytes);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

// The worker of a line call is lost (a process worker's death, a thread
// worker retired for a protocol error) while it runs the call: the caller
// must end, exactly once, with the status of the loss, and the lost
// worker's line is never claimed again; the other worker keeps serving.
struct Lost {
	Caller k;
	std::atomic<int> done;
};

void *lost_caller(void *arg)
{
	Lost *x = static_cast<Lost *>(arg);
	hold_caller(&x->k);
	x->done.store(1);
	return nullptr;
}

void test_worker_lost_during_line_call(void **)
{
	Fix f;
	open_pool(&f, 2);
	Lost x;
	x.k = {f.pool, -1, {}};
	x.done.store(0);
	pthread_t t;
	pthread_create(&t, nullptr, lost_caller, &x);
	int64_t end = mono_ns() + 20ll * 1000000000;
	while (g_started.load() == 0 && mono_ns() < end)
		nap_us(100);
	assert_int_equal(g_started.load(), 1);
	uint32_t w = 0;
	while (w < 2 && knit_load_relaxed_32(&f.p->lanes[w].line_state) != kLineClaimed)
		w++;
	assert_true(w < 2);
	while (!dispatch_trylock(f.p)) {
		assert_true(mono_ns() < end);
		sched_yield();
	}
	LaneLoss loss = {-KNIT_ECRASHED, kLaneRetire, nullptr, nullptr, {}, 0};
	lane_lost(f.p, w, &loss);
	dispatch_unlock(f.p);
	// The caller returns while the lost worker still runs its task.
	end = mono_ns() + 20ll * 1000000000;
	while (x.done.load() == 0 && mono_ns() < end)
		nap_us(100);
	const int returned = x.done.load();
	g_go.store(1); // let the task end either way (bounded) before asserting
	pthread_join(t, nullptr);
	assert_int_equal(returned, 1);
	assert_int_equal(x.k.rc, 0);
	assert_int_equal(x.k.c.status, -KNIT_ECRASHED);
	assert_int_equal(x.k.c.result.type, KNIT_VALUE_NONE);
	assert_int_equal(knit_load_relaxed_32(&f.p->lanes[w].line_state), kLineLost);
	// The survivor serves; the lost line is never claimed again.
	for (int i = 0; i < 50; i++) {
		knit_value_t a = i64(i);
		knit_completion_t c;
		assert_int_equal(knit_call(f.pool, kEcho, &a, &c, 0), 0);
		assert_int_equal(c.status, 0);
		assert_int_equal(c.result.i64, i);
	}
	assert_int_equal(knit_load_relaxed_32(&f.p->lanes[w].line_state), kLineLost);
	assert_int_equal(knit_stop(f.pool, KNIT_STOP_DRAIN, -1), 0);
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	assert_int_equal(knit_pool_stats(f.pool, &st, sizeof st), 0);
	assert_int_equal(st.enqueued, 51);
	assert_int_equal(st.completed, 51);
	assert_int_equal(st.pending, 0);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

// A line lost while idle is never claimed.
void test_idle_line_of_lost_worker_not_claimed(void **)
{
	Fix f;
	open_pool(&f, 2);
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (!dispatch_trylock(f.p)) {
		assert_true(mono_ns() < end);
		sched_yield();
	}
	LaneLoss loss = {-KNIT_ECRASHED, kLaneRetire, nullptr, nullptr, {}, 0};
	lane_lost(f.p, 0, &loss);
	dispatch_unlock(f.p);
	assert_int_equal(knit_load_relaxed_32(&f.p->lanes[0].line_state), kLineRetired);
	for (int i = 0; i < 50; i++) {
		knit_value_t a = i64(i);
		knit_completion_t c;
		assert_int_equal(knit_call(f.pool, kEcho, &a, &c, 0), 0);
		assert_int_equal(c.status, 0);
	}
	assert_int_equal(knit_load_relaxed_64(&f.p->lanes[0].line_seq), 0u);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_request_seq),
		cmocka_unit_test(test_bad_requests_not_run),
		cmocka_unit_test(test_reply_bad_lane),
		cmocka_unit_test(test_reply_bad_status),
		cmocka_unit_test(test_reply_bad_length),
		cmocka_unit_test(test_reply_missing_spill),
		cmocka_unit_test(test_line_area_layout),
		cmocka_unit_test(test_worker_lost_during_line_call),
		cmocka_unit_test(test_idle_line_of_lost_worker_not_claimed),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
