// SPDX-License-Identifier: MIT
// tests/unit/test_lane.cpp - white-box: the loss of a lane's worker through
// lane_lost (src/lane.h), both fates, on a thread pool whose worker 1 the
// test plays once it has stopped:
//  - respawn (what a process pool's monitor does): the call whose result the
//    dead worker published completes with it; the call it had started (its
//    slot marked in the started mask) fails -KNIT_ECRASHED; the calls it had
//    only taken or never seen come back in again[], in place order, and run
//    on the successor (the test, attached afresh to the zeroed words);
//  - retire (a worker thread gone for good): its calls fail -KNIT_ECRASHED,
//    the lane takes no new call (a pinned one fails at placement), the rest
//    of the pool serves on.
// Every call ends in exactly one completion with the status named here.
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

#include <sched.h>
#include <time.h>

#include "knitting.h"
#include "src/lane.h"
#include "src/layout.h"
#include "src/lock2.h"
#include "src/runtime.h"
#include "src/wake.h"

using namespace knit::detail;

namespace {

int64_t mono_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int t_echo(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	*ret = *arg;
	return 0;
}

const knit_task_t kTasks[] = {{"echo", t_echo, 0, 0}};

struct Fix {
	knit_pool_t *pool;
	Pool *p;
	// Every completion seen, by ticket.
	struct Seen {
		knit_ticket_t t;
		int32_t status;
		int64_t value;
		uint32_t times;
	} seen[32];
	uint32_t nseen;
};

void open_pool(Fix *f)
{
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.topology = KNIT_TOPOLOGY_LANES;
	o.park_ms = 60000;
	assert_int_equal(knit_pool_create(&o, kTasks, 1, &f->pool), 0);
	f->p = &f->pool->p;
	f->nseen = 0;
}

void hold_dispatcher(Pool *p)
{
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (!dispatch_trylock(p)) {
		assert_true(mono_ns() < end);
		sched_yield();
	}
}

// Stop worker w alone and wait (bounded) until it has left its loop: from
// then on the test plays it (its endpoints are idle).
void stop_one_worker(Fix *f, uint32_t w)
{
	Lane *l = &f->p->lanes[w];
	uint32_t expect = kStopRunning;
	__atomic_compare_exchange_n(l->stop, &expect, kStopRequested, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	knit_fence_seq_cst(); // W1, as request_worker_stop
	lane_wake(f->p, l, false);
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (__atomic_load_n(l->stop, __ATOMIC_ACQUIRE) != kStopAcknowledged && mono_ns() < end) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, nullptr);
	}
	assert_int_equal(__atomic_load_n(l->stop, __ATOMIC_ACQUIRE), kStopAcknowledged);
}

knit_ticket_t enq_pinned(Fix *f, uint32_t lane, int64_t v)
{
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.flags = KNIT_CALL_LANE;
	o.lane = lane;
	knit_value_t a;
	memset(&a, 0, sizeof a);
	a.type = KNIT_VALUE_I64;
	a.i64 = v;
	knit_ticket_t t = 0;
	assert_int_equal(knit_enqueue_ex(f->pool, 0, &a, nullptr, &o, &t), 0);
	return t;
}

knit_ticket_t enq(Fix *f, int64_t v)
{
	knit_value_t a;
	memset(&a, 0, sizeof a);
	a.type = KNIT_VALUE_I64;
	a.i64 = v;
	knit_ticket_t t = 0;
	assert_int_equal(knit_enqueue(f->pool, 0, &a, nullptr, &t), 0);
	return t;
}

// Take every completion there is now (host passes included) into f->seen.
void collect(Fix *f, int64_t timeout_ns)
{
	knit_completion_t c;
	while (knit_complete(f->pool, &c, 1, timeout_ns) == 1) {
		uint32_t i = 0;
		while (i < f->nseen && f->seen[i].t != c.ticket)
			i++;
		if (i == f->nseen) {
			assert_true(f->nseen < 32);
			f->seen[f->nseen++] = Fix::Seen{c.ticket, c.status, c.result.i64, 0};
		}
		f->seen[i].times++;
		knit_completion_release(f->pool, &c);
		timeout_ns = 0;
	}
}

// Ticket t completed exactly once, with status (and, for 0, value).
void expect_once(Fix *f, knit_ticket_t t, int32_t status, int64_t value)
{
	const int64_t end = mono_ns() + 10ll * 1000000000;
	for (;;) {
		for (uint32_t i = 0; i < f->nseen; i++)
			if (f->seen[i].t == t) {
				assert_int_equal(f->seen[i].times, 1);
				assert_int_equal(f->seen[i].status, status);
				if (status == 0)
					assert_int_equal(f->seen[i].value, value);
				return;
			}
		if (mono_ns() >= end)
			break;
		collect(f, 20ll * 1000000);
	}
	fail_msg("no completion for ticket %llx", (unsigned long long)t);
}

// The call placed in request slot `slot` of lane l (the host's own record).
uint32_t slot_of(Lane *l, knit_ticket_t t)
{
	for (uint32_t s = 0; s < kLanes; s++)
		if (((l->req_known >> s) & 1u) && l->req_ticket[s] == ticket_index(t) &&
		    l->req_gen[s] == ticket_gen(t))
			return s;
	fail_msg("ticket %llx has no recorded slot", (unsigned long long)t);
	return 0;
}

// The worker's answer to the frame it took from slot `slot` (decoded).
void publish_echo(Lane *l, const FrameHead &h, const knit_value_t &v)
{
	FrameHead rh;
	memset(&rh, 0, sizeof rh);
	rh.task = h.task;
	rh.ticket = h.ticket;
	rh.generation = h.generation;
	rh.status = 0;
	assert_true(l->wret.publish(rh, v) >= 0);
}

// A successor on lane l: the worker's endpoints attached to the lane's
// (zeroed) words, as a respawned worker process attaches its own.
void attach_successor(Pool *p, Lane *l)
{
	const uint64_t cap = align_up(p->cfg.payload_max_bytes, kArenaGranule);
	uint8_t *req_lock = l->block + kLaneOffReqLock;
	uint8_t *ret_lock = l->block + kLaneOffRetLock;
	ArenaShared req_sh = lock_arena_shared(req_lock, l->block + lane_req_arena_offset(), cap);
	ArenaShared ret_sh =
		lock_arena_shared(ret_lock, l->block + lane_ret_arena_offset(cap), cap);
	ConsumerLimits wl = {p->ntasks, p->tickets.capacity(), kReqFlagsMask};
	assert_int_equal(l->wreq.attach(req_lock, req_sh, wl), 0);
	assert_int_equal(l->wret.attach(ret_lock, ret_sh, p->cfg.max_payload_bytes), 0);
}

void test_lost_respawn_then_retire(void **)
{
	Fix f;
	open_pool(&f);
	Pool *p = f.p;
	Lane *l = &p->lanes[1];
	stop_one_worker(&f, 1);
	// The host records each slot's call, as for a worker process.
	hold_dispatcher(p);
	l->rerun = true;
	dispatch_unlock(p);

	const knit_ticket_t ran = enq_pinned(&f, 1, 10);     // ran, result published
	const knit_ticket_t running = enq_pinned(&f, 1, 11); // started, no result
	const knit_ticket_t taken = enq_pinned(&f, 1, 12);   // taken, not started
	const knit_ticket_t unseen = enq_pinned(&f, 1, 13);  // never taken
	assert_int_equal(l->inflight, 4u);

	// The dying worker, played: decode three frames, run the first (retire
	// its slot, publish its result), mark the second started.
	uint32_t snap = l->wreq.pending();
	assert_int_equal(__builtin_popcount(snap), 4);
	const uint32_t s_ran = slot_of(l, ran), s_running = slot_of(l, running),
		       s_taken = slot_of(l, taken);
	FrameHead h;
	knit_value_t v;
	assert_int_equal(l->wreq.decode(s_ran, &h, &v), 0);
	publish_echo(l, h, v);
	assert_int_equal(l->wreq.decode(s_running, &h, &v), 0);
	assert_int_equal(l->wreq.decode(s_taken, &h, &v), 0);
	uint32_t *started = reinterpret_cast<uint32_t *>(l->ext + kLaneExtOffStarted);
	__atomic_store_n(started, 1u << s_running, __ATOMIC_RELAXED);
	assert_int_equal(l->wreq.retire(1u << s_ran), 1u << s_ran);

	hold_dispatcher(p);
	LaneLoss loss = {-KNIT_ECRASHED, kLaneRespawn, nullptr, nullptr, {}, 0};
	const uint32_t produced = lane_lost(p, 1, &loss);
	assert_int_equal(produced, 2u); // the published result, the started call
	assert_int_equal(loss.nagain, 2u);
	assert_int_equal(ticket_of(loss.again[0]), taken); // in place order
	assert_int_equal(ticket_of(loss.again[1]), unseen);
	for (uint32_t i = 0; i < loss.nagain; i++) {
		assert_int_equal(loss.again[i]->completed, 0u);
		assert_int_equal(loss.again[i]->lane, kNoLane);
		assert_true((loss.again[i]->holds & kHoldHostQueue) != 0);
	}
	assert_int_equal(lane_state(l), kLaneLive);
	assert_int_equal(l->inflight, 0u);
	assert_int_equal(__atomic_load_n(l->stop, __ATOMIC_ACQUIRE), kStopRunning);
	assert_int_equal(__atomic_load_n(started, __ATOMIC_RELAXED), 0u); // the words are reset
	// The monitor's part: ahead of the backlog, placed on the fresh lane.
	dispatch_backlog_requeue(p, loss.again, loss.nagain);
	dispatch_flush_backlog(p);
	assert_int_equal(l->inflight, 2u);
	dispatch_unlock(p);

	// The successor runs what came back.
	attach_successor(p, l);
	snap = l->wreq.pending();
	assert_int_equal(__builtin_popcount(snap), 2);
	int slot;
	while ((slot = l->wreq.next_lane(&snap)) >= 0) {
		assert_int_equal(l->wreq.decode((uint32_t)slot, &h, &v), 0);
		publish_echo(l, h, v);
	}
	l->wreq.retire_taken();

	expect_once(&f, ran, 0, 10);
	expect_once(&f, running, -KNIT_ECRASHED, 0);
	expect_once(&f, taken, 0, 12);
	expect_once(&f, unseen, 0, 13);

	// Then the lane is lost for good: its call fails, nothing is placed there
	// again, the other worker serves on.
	const knit_ticket_t held = enq_pinned(&f, 1, 14);
	assert_int_equal(l->inflight, 1u);
	hold_dispatcher(p);
	LaneLoss gone = {-KNIT_ECRASHED, kLaneRetire, nullptr, nullptr, {}, 0};
	assert_int_equal(lane_lost(p, 1, &gone), 1u);
	assert_int_equal(gone.nagain, 0u);
	assert_int_equal(lane_state(l), kLaneRetired);
	assert_int_equal(lane_lost(p, 1, &gone), 0u); // idempotent
	dispatch_unlock(p);
	const knit_ticket_t refused = enq_pinned(&f, 1, 15);
	const knit_ticket_t elsewhere = enq(&f, 16);
	expect_once(&f, held, -KNIT_ECRASHED, 0);
	expect_once(&f, refused, -KNIT_ECRASHED, 0);
	expect_once(&f, elsewhere, 0, 16);

	assert_int_equal(knit_stop(f.pool, KNIT_STOP_DRAIN, 10ll * 1000000000), 0);
	collect(&f, 0);
	assert_int_equal(f.nseen, 7u);
	for (uint32_t i = 0; i < f.nseen; i++)
		assert_int_equal(f.seen[i].times, 1u);
	assert_int_equal(__atomic_load_n(&p->outstanding, __ATOMIC_RELAXED), 0u);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

// The retire fate alone, as the pass takes it for a distrusted worker: a
// placed call and one the worker published fail and complete, once each.
void test_lost_retire(void **)
{
	Fix f;
	open_pool(&f);
	Pool *p = f.p;
	Lane *l = &p->lanes[0];
	stop_one_worker(&f, 0);
	const knit_ticket_t answered = enq_pinned(&f, 0, 20);
	const knit_ticket_t lost = enq_pinned(&f, 0, 21);
	uint32_t snap = l->wreq.pending();
	assert_int_equal(__builtin_popcount(snap), 2);
	int slot = l->wreq.next_lane(&snap);
	FrameHead h;
	knit_value_t v;
	assert_true(slot >= 0);
	assert_int_equal(l->wreq.decode((uint32_t)slot, &h, &v), 0);
	const knit_ticket_t first = ticket_pack(h.generation, h.ticket);
	publish_echo(l, h, v);
	l->wreq.retire_taken();
	hold_dispatcher(p);
	LaneLoss loss = {-KNIT_EPROTO, kLaneRetire, nullptr, nullptr, {}, 0};
	assert_int_equal(lane_lost(p, 0, &loss), 2u);
	assert_int_equal(lane_state(l), kLaneRetired);
	assert_int_equal(p->lanes_retired, 1u);
	dispatch_unlock(p);
	const knit_ticket_t other = first == answered ? lost : answered;
	expect_once(&f, first, 0, first == answered ? 20 : 21);
	expect_once(&f, other, -KNIT_EPROTO, 0);
	const knit_ticket_t next = enq(&f, 22);
	expect_once(&f, next, 0, 22);
	assert_int_equal(knit_stop(f.pool, KNIT_STOP_DRAIN, 10ll * 1000000000), 0);
	collect(&f, 0);
	assert_int_equal(f.nseen, 3u);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lost_respawn_then_retire),
		cmocka_unit_test(test_lost_retire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
