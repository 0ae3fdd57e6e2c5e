// SPDX-License-Identifier: MIT
// tests/unit/test_hostile.cpp - the consumer treats the whole shared region as
// hostile. Every task-line field is set to out-of-range values one at a time,
// the shared arena words and table are corrupted, and then random bytes are
// thrown over the whole lock (thousands of iterations, fixed seeds). Each
// time: decode reports -KNIT_EPROTO (with the right fault bit) or returns a
// view that lies entirely inside the lane's inline area or the arena, the
// process never crashes, every taken lane is retired (pending() is empty and
// B == the consumer's mirror afterwards), and arena slots are freed at most
// once. The lock and the arena are heap blocks of exactly their size, so
// under `make SANITIZE=address` any read outside them is caught.
//
// Then the pool itself (white box, thread workers whose words the test
// forges while they are held inside a task): a running stamp naming a call
// another lane holds, a result for a call another worker holds (or nobody
// has claimed yet), a result under another task id and an ACK toggle of a
// lane never claimed each count as a protocol error and retire the worker
// that wrote them (asked to stop, then its remaining calls fail with
// -KNIT_EPROTO); a call another worker holds is never touched, no lane's
// in-flight count drops below the truth, and the pool serves on (a forged
// stamp never force-stops it). Dead workers (the process pool's child death,
// injected here by stopping one worker thread and playing it): the calls it
// held, claimed, or claimed and never acknowledged fail with -KNIT_ECRASHED
// exactly once and never run on a survivor.
//
// KNIT_STRESS_SCALE (positive integer, default 1) multiplies the iteration
// counts.
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
#include <time.h>

#include "knitting.h"
#include "src/codec.h"
#include "src/layout.h"
#include "src/lock2.h"
#include "src/runtime.h"
#include "src/wake.h"

using namespace knit::detail;

namespace {

constexpr uint64_t kCap = 64u << 10;
constexpr ConsumerLimits kLimits{16, 1024, 0xFFFFu};

struct Fix {
	uint8_t *lock;  // exactly kLockFixedBytes
	uint8_t *arena; // exactly kCap
	ArenaShared as;
	LockProducer prod;
	LockConsumer cons;
};

uint32_t scale()
{
	const char *s = getenv("KNIT_STRESS_SCALE");
	long v = s ? strtol(s, nullptr, 10) : 1;
	return v > 0 ? (uint32_t)v : 1;
}

uint64_t rng_state = 0x2545F4914F6CDD1Dull;
uint64_t rnd()
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

void reset(Fix *f)
{
	memset(f->lock, 0, kLockFixedBytes);
	memset(f->arena, 0, kCap);
	f->prod = LockProducer();
	f->cons = LockConsumer();
	assert_int_equal(f->prod.attach(f->lock, f->as, 32u << 10), 0);
	assert_int_equal(f->cons.attach(f->lock, f->as, kLimits), 0);
}

int setup(void **state)
{
	Fix *f = new Fix();
	f->lock = (uint8_t *)aligned_alloc(128, kLockFixedBytes);
	f->arena = (uint8_t *)aligned_alloc(64, kCap);
	f->as = lock_arena_shared(f->lock, f->arena, kCap);
	reset(f);
	*state = f;
	return 0;
}

int teardown(void **state)
{
	Fix *f = (Fix *)*state;
	free(f->lock);
	free(f->arena);
	delete f;
	return 0;
}

TaskLine *line(Fix *f, uint32_t lane)
{
	return reinterpret_cast<TaskLine *>(f->lock + lock_task_offset(lane));
}
uint32_t W(Fix *f, uint32_t off) { return *word_at(f->lock, off); }

// Every byte of a view must be readable and inside the lane's inline area or
// the arena; returns a sum of the bytes so the reads cannot be optimised away.
uint64_t check_view(Fix *f, uint32_t lane, const knit_value_t &v)
{
	if (!codec_has_bytes(v.type)) {
		assert_true(v.type <= KNIT_VALUE_F64);
		assert_int_equal(v.len, 0);
		return 0;
	}
	const uint8_t *p = (const uint8_t *)v.data;
	const uint8_t *inl = f->lock + lock_inline_offset(lane);
	const uint64_t stored = codec_stored_bytes(v.type, v.len);
	bool in_inline = p == inl && stored <= kInlineBytes;
	bool in_arena = p >= f->arena && (uint64_t)(p - f->arena) + stored <= kCap;
	assert_true(in_inline || in_arena);
	uint64_t sum = 0;
	for (size_t i = 0; i < stored; i++)
		sum += p[i];
	if (v.type != KNIT_VALUE_BYTES)
		assert_int_equal(p[v.len], 0);
	return sum;
}

struct Outcome {
	uint32_t lanes, ok, proto, faults;
};

// One consumer pass over whatever is in shared memory; checks the lane-level
// guarantees and returns what happened.
Outcome pass(Fix *f)
{
	Outcome o{};
	uint64_t sum = 0;
	o.lanes = f->cons.drain([&](uint32_t lane, int rc, const FrameHead &h,
				    const knit_value_t &v) {
		if (rc == 0) {
			o.ok++;
			assert_int_equal(h.fault, 0);
			assert_true(h.task < kLimits.task_count && h.ticket < kLimits.ticket_count);
			sum += check_view(f, lane, v);
		} else {
			assert_int_equal(rc, -KNIT_EPROTO);
			assert_int_not_equal(h.fault, 0);
			assert_int_equal(v.type, KNIT_VALUE_NONE);
			o.proto++;
			o.faults |= h.fault;
		}
	});
	(void)sum;
	// every lane of the pass was retired: nothing pending, B is our mirror
	assert_int_equal(f->cons.pending(), 0);
	assert_int_equal(f->cons.taken(), 0);
	assert_int_equal(W(f, kLockOffB), f->cons.retired_mirror());
	return o;
}

FrameHead good_head()
{
	FrameHead h{};
	h.task = 3;
	h.ticket = 77;
	h.flags = 0x1;
	return h;
}

enum Kind { kInlineString, kArenaBytes, kScalar };

// Publish one valid frame of the given kind into a fresh lock; returns its lane.
uint32_t publish_one(Fix *f, Kind k)
{
	reset(f);
	static uint8_t payload[4000];
	memset(payload, 'p', sizeof payload);
	knit_value_t v{};
	if (k == kInlineString) {
		v.type = KNIT_VALUE_STRING;
		v.data = payload;
		v.len = 100;
	} else if (k == kArenaBytes) {
		v.type = KNIT_VALUE_BYTES;
		v.data = payload;
		v.len = 3000;
	} else {
		v.type = KNIT_VALUE_I64;
		v.i64 = 5;
	}
	int lane = f->prod.publish(good_head(), v);
	assert_true(lane >= 0);
	return (uint32_t)lane;
}

struct Mutation {
	const char *name;
	Kind kind;
	void (*apply)(Fix *f, TaskLine *t);
	uint32_t fault; // expected fault bit(s); 0 = must still decode fine
};

const Mutation mutations[] = {
	{"vtype 7", kInlineString, [](Fix *, TaskLine *t) { t->vtype = 7; }, kFaultValue},
	{"vtype max", kArenaBytes, [](Fix *, TaskLine *t) { t->vtype = 0xFFFFFFFF; }, kFaultValue},
	{"vtype high bit", kScalar, [](Fix *, TaskLine *t) { t->vtype = 0x80000002; }, kFaultValue},
	{"where none for bytes", kInlineString, [](Fix *, TaskLine *t) { t->where = kWhereNone; },
	 kFaultValue},
	{"where 3", kInlineString, [](Fix *, TaskLine *t) { t->where = 3; }, kFaultValue},
	{"where max", kArenaBytes, [](Fix *, TaskLine *t) { t->where = 0xFFFFFFFF; }, kFaultValue},
	{"inline vlen 513", kInlineString,
	 [](Fix *, TaskLine *t) {
		 t->vtype = KNIT_VALUE_BYTES;
		 t->vlen = 513;
	 },
	 kFaultValue},
	{"inline string vlen 512", kInlineString, [](Fix *, TaskLine *t) { t->vlen = 512; },
	 kFaultValue},
	{"inline vlen max", kInlineString, [](Fix *, TaskLine *t) { t->vlen = 0xFFFFFFFF; },
	 kFaultValue},
	{"inline NUL missing", kInlineString,
	 [](Fix *f, TaskLine *t) {
		 f->lock[(uint8_t *)t - f->lock + kSlotOffInline + t->vlen] = 'x';
	 },
	 kFaultValue},
	{"arena slot 32", kArenaBytes, [](Fix *, TaskLine *t) { t->arena_slot = 32; }, kFaultValue},
	{"arena slot max", kArenaBytes, [](Fix *, TaskLine *t) { t->arena_slot = 0xFFFFFFFF; },
	 kFaultValue},
	{"arena slot not live", kArenaBytes, [](Fix *, TaskLine *t) { t->arena_slot ^= 1; },
	 kFaultValue},
	{"arena off = cap", kArenaBytes, [](Fix *, TaskLine *t) { t->arena_off = (uint32_t)kCap; },
	 kFaultValue},
	{"arena off near cap", kArenaBytes,
	 [](Fix *, TaskLine *t) { t->arena_off = (uint32_t)kCap - 64; }, kFaultValue},
	{"arena off max", kArenaBytes, [](Fix *, TaskLine *t) { t->arena_off = 0xFFFFFFC0; },
	 kFaultValue},
	{"arena off != table", kArenaBytes, [](Fix *, TaskLine *t) { t->arena_off += 64; },
	 kFaultValue},
	{"arena vlen > slot", kArenaBytes, [](Fix *, TaskLine *t) { t->vlen = 3200; }, kFaultValue},
	{"arena vlen = cap", kArenaBytes, [](Fix *, TaskLine *t) { t->vlen = (uint32_t)kCap; },
	 kFaultValue},
	{"arena vlen max", kArenaBytes, [](Fix *, TaskLine *t) { t->vlen = 0xFFFFFFFF; },
	 kFaultValue},
	{"table size 0", kArenaBytes,
	 [](Fix *f, TaskLine *t) { word_at(f->lock, kLockOffTable)[2 * t->arena_slot + 1] = 0; },
	 kFaultValue},
	{"table offset huge", kArenaBytes,
	 [](Fix *f, TaskLine *t) {
		 word_at(f->lock, kLockOffTable)[2 * t->arena_slot] = 0xFFFFFFC0;
		 t->arena_off = 0xFFFFFFC0;
	 },
	 kFaultValue},
	{"PB says freed", kArenaBytes,
	 [](Fix *f, TaskLine *t) { *word_at(f->lock, kLockOffPB) ^= 1u << t->arena_slot; },
	 kFaultValue},
	{"scalar with inline", kScalar, [](Fix *, TaskLine *t) { t->where = kWhereInline; },
	 kFaultValue},
	{"scalar with vlen", kScalar, [](Fix *, TaskLine *t) { t->vlen = 5; }, kFaultValue},
	{"bool 2", kScalar,
	 [](Fix *, TaskLine *t) {
		 t->vtype = KNIT_VALUE_BOOL;
		 t->scalar = 2;
	 },
	 kFaultValue},
	{"ticket = limit", kInlineString,
	 [](Fix *, TaskLine *t) { t->ticket = kLimits.ticket_count; }, kFaultTicket},
	{"ticket max", kScalar, [](Fix *, TaskLine *t) { t->ticket = 0xFFFFFFFF; }, kFaultTicket},
	{"task = limit", kScalar, [](Fix *, TaskLine *t) { t->task = kLimits.task_count; },
	 kFaultTask},
	{"flags outside mask", kScalar, [](Fix *, TaskLine *t) { t->flags = 0x10000; },
	 kFaultFlags},
	{"status 1", kScalar, [](Fix *, TaskLine *t) { t->status = 1; }, kFaultStatus},
	{"status -MAX", kScalar, [](Fix *, TaskLine *t) { t->status = -KNIT_ERROR_MAX_; },
	 kFaultStatus},
	{"status INT_MIN", kScalar, [](Fix *, TaskLine *t) { t->status = INT32_MIN; },
	 kFaultStatus},
	{"ticket bad, arena ok", kArenaBytes, [](Fix *, TaskLine *t) { t->ticket = 5000; },
	 kFaultTicket},
	// fields where any value is valid
	{"deadline max", kArenaBytes, [](Fix *, TaskLine *t) { t->deadline = UINT64_MAX; }, 0},
	{"generation max", kInlineString, [](Fix *, TaskLine *t) { t->generation = 0xFFFFFFFF; },
	 0},
	{"reserved set", kScalar, [](Fix *, TaskLine *t) { t->reserved = 0xFFFFFFFF; }, 0},
	{"status -EPROTO", kScalar, [](Fix *, TaskLine *t) { t->status = -KNIT_EPROTO; }, 0},
	{"shorter arena vlen", kArenaBytes, [](Fix *, TaskLine *t) { t->vlen = 10; }, 0},
};

void test_one_field_at_a_time(void **state)
{
	Fix *f = (Fix *)*state;
	for (const Mutation &m : mutations) {
		uint32_t lane = publish_one(f, m.kind);
		TaskLine *t = line(f, lane);
		const uint32_t slot = t->arena_slot;
		m.apply(f, t);
		Outcome o = pass(f);
		if (o.lanes != 1 ||
		    (m.fault == 0 ? o.ok != 1 : (o.proto != 1 || (o.faults & m.fault) == 0)))
			fail_msg("mutation '%s': lanes %u ok %u proto %u faults %#x", m.name,
				 o.lanes, o.ok, o.proto, o.faults);
		// the lane is retired and reusable
		assert_int_equal(W(f, kLockOffA), W(f, kLockOffB));
		assert_true(f->prod.refresh() & (1u << lane));
		// arena: a frame whose arena reference was valid had its slot freed
		// exactly once; a rejected reference frees nothing
		const uint32_t live = W(f, kLockOffPA) ^ W(f, kLockOffPB);
		if (m.kind == kArenaBytes) {
			bool value_ok = m.fault == 0 || m.fault == kFaultTicket;
			bool pb_flipped = strcmp(m.name, "PB says freed") == 0;
			if (value_ok || pb_flipped)
				assert_int_equal(live, 0);
			else
				assert_int_equal(live, 1u << slot); // leaked, never double-freed
		} else {
			assert_int_equal(live, 0);
		}
		// and the producer can still publish and the consumer decode
		knit_value_t v{};
		v.type = KNIT_VALUE_I64;
		assert_true(f->prod.publish(good_head(), v) >= 0);
		Outcome o2 = pass(f);
		assert_int_equal(o2.ok, 1);
	}
}

// Two lanes naming the same arena slot: the second is refused, the slot is
// freed once (a double free would desynchronise the allocator).
void test_double_arena_reference(void **state)
{
	Fix *f = (Fix *)*state;
	reset(f);
	static uint8_t payload[3000];
	knit_value_t v{};
	v.type = KNIT_VALUE_BYTES;
	v.data = payload;
	v.len = sizeof payload;
	int l1 = f->prod.publish(good_head(), v);
	int l2 = f->prod.publish(good_head(), v);
	assert_int_equal(l1, 31);
	assert_int_equal(l2, 30);
	const uint32_t s1 = line(f, 31)->arena_slot, s2 = line(f, 30)->arena_slot;
	assert_int_not_equal(s1, s2);
	line(f, 30)->arena_slot = s1;
	line(f, 30)->arena_off = line(f, 31)->arena_off;
	// decode both before releasing either
	uint32_t snap = f->cons.pending();
	FrameHead h;
	knit_value_t view;
	assert_int_equal(f->cons.decode((uint32_t)f->cons.next_lane(&snap), &h, &view), 0);
	assert_int_equal(f->cons.decode((uint32_t)f->cons.next_lane(&snap), &h, &view),
			 -KNIT_EPROTO);
	assert_int_equal(h.fault, kFaultValue);
	f->cons.retire_taken();
	const uint32_t live = W(f, kLockOffPA) ^ W(f, kLockOffPB);
	assert_int_equal(live, 1u << s2); // s1 freed once; s2 leaked, not aliased
	// the allocator keeps working around the leaked slot
	for (int i = 0; i < 100; i++) {
		assert_true(f->prod.publish(good_head(), v) >= 0);
		Outcome o = pass(f);
		assert_int_equal(o.ok, 1);
	}
}

void fill_random(uint8_t *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t r = rnd();
		memcpy(p + i, &r, 8);
	}
	for (; i < n; i++)
		p[i] = (uint8_t)rnd();
}

// Random bytes over the whole lock (sector, arena table, all 32 slots) and
// sometimes the arena.
void test_random_bytes(void **state)
{
	Fix *f = (Fix *)*state;
	rng_state = 0x1234567887654321ull;
	const uint32_t iters = 3000 * scale();
	uint64_t lanes = 0;
	for (uint32_t it = 0; it < iters; it++) {
		fill_random(f->lock, kLockFixedBytes);
		if (it % 4 == 0)
			fill_random(f->arena, kCap);
		f->cons = LockConsumer();
		assert_int_equal(f->cons.attach(f->lock, f->as, kLimits), 0);
		Outcome o = pass(f);
		lanes += o.lanes;
		assert_int_equal(o.ok + o.proto, o.lanes);
		Outcome o2 = pass(f); // nothing new was published
		assert_int_equal(o2.lanes, 0);
	}
	assert_true(lanes > iters * 8); // random A: about 16 lanes each time
}

// Valid frames from a real producer, then random words/bytes flipped in the
// task lines, inline areas and arena words: a mix of accepted and rejected
// frames, never a crash or an out-of-range view.
void test_mutated_valid_frames(void **state)
{
	Fix *f = (Fix *)*state;
	rng_state = 0xC0FFEE;
	const uint32_t iters = 2000 * scale();
	static uint8_t payload[6000];
	fill_random(payload, sizeof payload);
	uint64_t ok = 0, proto = 0;
	for (uint32_t it = 0; it < iters; it++) {
		reset(f);
		uint32_t n = 1 + (uint32_t)(rnd() % 32);
		for (uint32_t i = 0; i < n; i++) {
			knit_value_t v{};
			v.type = (uint32_t)(rnd() % 7);
			v.i64 = (int64_t)rnd();
			v.data = payload;
			v.len = (size_t)(rnd() % 4 == 0 ? rnd() % 6000 : rnd() % 600);
			if (v.type == KNIT_VALUE_STRING || v.type == KNIT_VALUE_ERROR)
				payload[v.len] = 0; // text must not contain the test's NUL check
			FrameHead h = good_head();
			h.ticket = (uint32_t)(rnd() % 1024);
			int rc = f->prod.publish(h, v);
			if (rc == -KNIT_EAGAIN)
				break;
			assert_true(rc >= 0);
		}
		uint32_t flips = (uint32_t)(rnd() % 6);
		for (uint32_t k = 0; k < flips; k++) {
			uint32_t r = (uint32_t)rnd();
			uint32_t lane = r % 32;
			switch ((r >> 8) % 4) {
			case 0: // a task-line word gets a random value
				((uint32_t *)line(f, lane))[(r >> 12) % 16] = (uint32_t)rnd();
				break;
			case 1: // a task-line word gets a small value
				((uint32_t *)line(f, lane))[(r >> 12) % 16] =
					(uint32_t)(rnd() % 1100);
				break;
			case 2: // a byte of the inline area
				f->lock[lock_inline_offset(lane) + (r >> 12) % kInlineBytes] =
					(uint8_t)rnd();
				break;
			default: // a word of the sector or the arena table
				word_at(f->lock, 0)[((r >> 12) % (kLockOffSlots / 4))] ^=
					1u << (rnd() % 32);
				break;
			}
		}
		Outcome o = pass(f);
		ok += o.ok;
		proto += o.proto;
	}
	// both outcomes were exercised (the test can fail either way)
	assert_true(ok > iters);
	assert_true(proto > iters / 10);
	printf("mutated frames: %llu accepted, %llu rejected\n", (unsigned long long)ok,
	       (unsigned long long)proto);
}

// ---- the pool: words written by workers ---------------------------------------------------

std::atomic<int> g_go{0};      // releases every "hold" task
std::atomic<int> g_go0{0};     // releases hold(0) only
std::atomic<int> g_started{0}; // "hold" tasks started
std::atomic<int> g_lane[8];    // worker that ran hold(i)

// Completions reaped while waiting for another one.
struct Seen {
	knit_ticket_t t;
	int32_t status;
	int64_t value;
};
Seen g_seen[16];
uint32_t g_nseen = 0;

int64_t mono_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int t_hold(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	const int64_t i = arg->i64;
	if (i >= 0 && i < 8)
		g_lane[i].store(knit_ctx_lane(ctx));
	g_started.fetch_add(1);
	// Bounded: a broken test ends instead of hanging.
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (!g_go.load() && !(i == 0 && g_go0.load()) && mono_ns() < end) {
		struct timespec ts = {0, 200000};
		nanosleep(&ts, nullptr);
	}
	*ret = *arg;
	return 0;
}

extern std::atomic<int> g_echo_runs;

int t_echo(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	g_echo_runs.fetch_add(1);
	*ret = *arg;
	return 0;
}

const knit_task_t kPoolTasks[] = {{"echo", t_echo, 0, 0}, {"hold", t_hold, 0, 0}};

struct PoolFix {
	knit_pool_t *pool;
	Pool *p;
	uint32_t hold, echo;
};

void pool_open(PoolFix *f, uint32_t topology, uint32_t hard_timeout_ms)
{
	g_go.store(0);
	g_go0.store(0);
	g_started.store(0);
	g_nseen = 0;
	for (auto &l : g_lane)
		l.store(-1);
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.topology = topology;
	o.park_ms = 60000;
	o.hard_timeout_ms = hard_timeout_ms;
	assert_int_equal(knit_pool_create(&o, kPoolTasks, 2, &f->pool), 0);
	f->p = &f->pool->p;
	f->hold = (uint32_t)knit_pool_task_id(f->pool, "hold");
	f->echo = (uint32_t)knit_pool_task_id(f->pool, "echo");
	assert_int_not_equal(f->hold, f->echo);
}

knit_ticket_t enq(PoolFix *f, uint32_t task, int64_t v)
{
	knit_value_t a;
	memset(&a, 0, sizeof a);
	a.type = KNIT_VALUE_I64;
	a.i64 = v;
	knit_ticket_t t = 0;
	assert_int_equal(knit_enqueue(f->pool, task, &a, nullptr, &t), 0);
	return t;
}

// Enqueue hold(i) and wait (bounded) until it runs; returns its worker.
uint32_t hold_call(PoolFix *f, int i, knit_ticket_t *t)
{
	const int before = g_started.load();
	*t = enq(f, f->hold, i);
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (g_started.load() == before && mono_ns() < end) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, nullptr);
	}
	assert_int_equal(g_started.load(), before + 1);
	const int w = g_lane[i].load();
	assert_true(w == 0 || w == 1);
	return (uint32_t)w;
}

// Reap (bounded) until the completion of ticket t arrives; returns its status.
int32_t reap_status(PoolFix *f, knit_ticket_t t, int64_t *value)
{
	const int64_t end = mono_ns() + 10ll * 1000000000;
	for (;;) {
		for (uint32_t i = 0; i < g_nseen; i++)
			if (g_seen[i].t == t) {
				const Seen s = g_seen[i];
				g_seen[i] = g_seen[--g_nseen];
				if (value != nullptr)
					*value = s.value;
				return s.status;
			}
		if (mono_ns() >= end)
			break;
		knit_completion_t c;
		if (knit_complete(f->pool, &c, 1, 50ll * 1000000) != 1)
			continue;
		assert_true(g_nseen < 16);
		g_seen[g_nseen++] = Seen{c.ticket, c.status, c.result.i64};
		knit_completion_release(f->pool, &c);
	}
	fail_msg("no completion for ticket %llx", (unsigned long long)t);
	return 1;
}

// Publish a forged result frame on worker w's return lock, with the worker's
// own producer endpoint: w is held inside a task (g_started told us, and
// g_go orders our use before its next one), so the endpoint is idle.
void forge_result(PoolFix *f, uint32_t w, knit_ticket_t t, uint32_t task, int64_t value)
{
	FrameHead h;
	memset(&h, 0, sizeof h);
	h.task = task;
	h.ticket = (uint32_t)t;
	h.generation = (uint32_t)(t >> 32);
	h.status = 0;
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_I64;
	v.i64 = value;
	assert_true(f->p->lanes[w].wret.publish(h, v) >= 0);
}

uint64_t proto_errors(PoolFix *f)
{
	return __atomic_load_n(&f->p->st_proto_errors, __ATOMIC_RELAXED);
}

// Release the held tasks, check the pool still serves, destroy it.
void pool_close(PoolFix *f)
{
	g_go.store(1);
	const knit_ticket_t t = enq(f, f->echo, 5);
	int64_t v = 0;
	assert_int_equal(reap_status(f, t, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(__atomic_load_n(&f->p->forced, __ATOMIC_RELAXED), 0);
	assert_int_equal(knit_stop(f->pool, KNIT_STOP_DRAIN, -1), 0);
	knit_completion_t c;
	while (knit_complete(f->pool, &c, 1, 0) == 1)
		knit_completion_release(f->pool, &c);
	assert_int_equal(knit_pool_destroy(f->pool), 0);
}

// Run host passes (collecting completions into g_seen) until pred() holds;
// bounded.
template <typename F> void pass_until(PoolFix *f, F pred)
{
	const int64_t end = mono_ns() + 10ll * 1000000000;
	while (!pred() && mono_ns() < end) {
		knit_completion_t c;
		if (knit_complete(f->pool, &c, 1, 5ll * 1000000) != 1)
			continue;
		assert_true(g_nseen < 16);
		g_seen[g_nseen++] = Seen{c.ticket, c.status, c.result.i64};
		knit_completion_release(f->pool, &c);
	}
	assert_true(pred());
}

bool retiring(PoolFix *f, uint32_t w) { return lane_state(&f->p->lanes[w]) == kLaneDistrusted; }
bool retired(PoolFix *f, uint32_t w) { return lane_state(&f->p->lanes[w]) == kLaneRetired; }

// A worker's running stamp naming a call that another lane holds: with the
// hard timeout on, an ancient start would have force-stopped the pool. It
// touches neither the pool nor the named call (its holder answers it): the
// forger is retired (asked to stop, then its lane given up), the pool
// serves on.
void test_forged_stamp_other_lane(void **)
{
	const uint32_t topo[] = {KNIT_TOPOLOGY_LANES, KNIT_TOPOLOGY_STEAL};
	for (uint32_t k = 0; k < 2; k++) {
		PoolFix f;
		pool_open(&f, topo[k], 60000);
		knit_ticket_t t0;
		const uint32_t w = hold_call(&f, 0, &t0);
		const uint32_t other = 1 - w;
		// The idle worker's stamp (it writes it only around a task).
		uint32_t *sw = reinterpret_cast<uint32_t *>(f.p->lanes[other].ext);
		__atomic_store_n(&sw[1], (uint32_t)t0, __ATOMIC_RELAXED);
		__atomic_store_n(&sw[2], (uint32_t)(t0 >> 32), __ATOMIC_RELAXED);
		__atomic_store_n(reinterpret_cast<uint64_t *>(f.p->lanes[other].ext + 16),
				 (uint64_t)1, __ATOMIC_RELAXED);
		__atomic_store_n(&sw[0], __atomic_load_n(&sw[0], __ATOMIC_RELAXED) + 2,
				 __ATOMIC_RELEASE);
		const uint64_t pe = proto_errors(&f);
		// The idle forger stops at once and is retired.
		pass_until(&f, [&] { return retired(&f, other); });
		assert_true(proto_errors(&f) >= pe + 1);
		assert_int_equal(__atomic_load_n(&f.p->forced, __ATOMIC_RELAXED), 0);
		assert_int_equal(g_nseen, 0u); // t0 untouched
		g_go.store(1);
		assert_int_equal(reap_status(&f, t0, nullptr), 0);
		pool_close(&f);
	}
}

// A result for a call that the other worker holds: it fails nothing (the
// holder answers its call), lowers no lane's in-flight count, and retires
// the worker that wrote it once that worker stops.
void test_result_from_other_worker(void **)
{
	const uint32_t topo[] = {KNIT_TOPOLOGY_LANES, KNIT_TOPOLOGY_STEAL};
	for (uint32_t k = 0; k < 2; k++) {
		PoolFix f;
		pool_open(&f, topo[k], 0);
		knit_ticket_t t0, t1;
		const uint32_t w0 = hold_call(&f, 0, &t0);
		const uint32_t w1 = hold_call(&f, 1, &t1);
		assert_int_not_equal(w0, w1);
		const uint32_t in0 = f.p->lanes[w0].inflight, in1 = f.p->lanes[w1].inflight;
		const uint64_t pe = proto_errors(&f);
		forge_result(&f, w1, t0, f.hold, 999);
		pass_until(&f, [&] { return proto_errors(&f) == pe + 1; });
		assert_true(retiring(&f, w1));
		// The counts of both lanes are the true ones (lanes: one call
		// each; steal: worker lanes count nothing).
		assert_int_equal(f.p->lanes[w0].inflight, in0);
		assert_int_equal(f.p->lanes[w1].inflight, in1);
		assert_int_equal(g_nseen, 0u); // nothing completed
		g_go.store(1);
		int64_t v = -1;
		assert_int_equal(reap_status(&f, t0, &v), 0); // answered by its holder
		assert_int_equal(v, 0);
		assert_int_equal(reap_status(&f, t1, &v), 0); // answered before it stopped
		assert_int_equal(v, 1);
		pass_until(&f, [&] { return retired(&f, w1); });
		pool_close(&f);
	}
}

// Stealing: a result for a call nobody has claimed yet (both workers held,
// the call waits in the submit queue): the call is not touched and runs.
void test_result_for_unclaimed_call(void **)
{
	PoolFix f;
	pool_open(&f, KNIT_TOPOLOGY_STEAL, 0);
	knit_ticket_t t0, t1;
	const uint32_t w0 = hold_call(&f, 0, &t0);
	hold_call(&f, 1, &t1);
	const knit_ticket_t t2 = enq(&f, f.echo, 7);
	const uint64_t pe = proto_errors(&f);
	forge_result(&f, w0, t2, f.echo, 999);
	pass_until(&f, [&] { return proto_errors(&f) == pe + 1; });
	assert_true(retiring(&f, w0));
	g_go.store(1);
	assert_int_equal(reap_status(&f, t0, nullptr), 0);
	assert_int_equal(reap_status(&f, t1, nullptr), 0);
	int64_t v = -1;
	assert_int_equal(reap_status(&f, t2, &v), 0);
	assert_int_equal(v, 7);
	pool_close(&f);
}

// A result from the worker that holds the call, under another task id: that
// call fails, and the worker is retired.
void test_result_task_mismatch(void **)
{
	const uint32_t topo[] = {KNIT_TOPOLOGY_LANES, KNIT_TOPOLOGY_STEAL};
	for (uint32_t k = 0; k < 2; k++) {
		PoolFix f;
		pool_open(&f, topo[k], 0);
		knit_ticket_t t0;
		const uint32_t w0 = hold_call(&f, 0, &t0);
		const uint64_t pe = proto_errors(&f);
		forge_result(&f, w0, t0, f.echo, 999);
		assert_int_equal(reap_status(&f, t0, nullptr), -KNIT_EPROTO);
		assert_int_equal(proto_errors(&f), pe + 1);
		assert_true(retiring(&f, w0));
		pool_close(&f);
	}
}

// Lanes: the holder sends the same result twice (a replay). The first
// completes the call; the second must not count as a frame coming back
// (before: the lane's in-flight count dropped below the calls still on it)
// nor complete anything: it retires the worker, whose other call then fails
// with -KNIT_EPROTO once it stops.
void test_duplicate_result(void **)
{
	PoolFix f;
	pool_open(&f, KNIT_TOPOLOGY_LANES, 0);
	knit_ticket_t t0;
	const uint32_t w = hold_call(&f, 0, &t0);
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.flags = KNIT_CALL_LANE;
	o.lane = w;
	knit_value_t a;
	memset(&a, 0, sizeof a);
	a.type = KNIT_VALUE_I64;
	a.i64 = 3;
	knit_ticket_t t1;
	assert_int_equal(knit_enqueue_ex(f.pool, f.echo, &a, nullptr, &o, &t1), 0);
	pass_until(&f, [&] { return f.p->lanes[w].inflight == 2; });
	const uint64_t pe = proto_errors(&f);
	// Both frames reaped in one pass, the record still live (not handed
	// out yet).
	forge_result(&f, w, t0, f.hold, 999);
	forge_result(&f, w, t0, f.hold, 999);
	int64_t v = 0;
	assert_int_equal(reap_status(&f, t0, &v), 0); // indistinguishable from the real one
	assert_int_equal(v, 999);
	pass_until(&f, [&] { return proto_errors(&f) == pe + 1; });
	assert_int_equal(f.p->lanes[w].inflight, 1u); // t1 is still on the lane
	assert_true(retiring(&f, w));
	assert_int_equal(g_nseen, 0u);
	g_go.store(1);
	assert_int_equal(reap_status(&f, t1, nullptr), -KNIT_EPROTO);
	pass_until(&f, [&] { return retired(&f, w); });
	pool_close(&f);
}

// Stealing: a worker toggles an ACK bit of a lane it never claimed (here one
// never published; it also announces that lane's region, so its peer stays
// off the lane meanwhile). The host counts it but blames nobody (an honest
// worker misled by a peer's word into claiming such a lane shows the same
// toggle); the call waiting in the submit queue is untouched and runs on
// the other, and both workers go on serving.
void test_forged_ack_toggle(void **)
{
	PoolFix f;
	pool_open(&f, KNIT_TOPOLOGY_STEAL, 0);
	knit_ticket_t t0, t1;
	const uint32_t w0 = hold_call(&f, 0, &t0);
	const uint32_t w1 = hold_call(&f, 1, &t1);
	const knit_ticket_t t2 = enq(&f, f.echo, 7); // unclaimed: the host looks at ACKs
	uint32_t *ack = word_at(f.p->steal.ctl, steal_ack_offset(w1));
	uint32_t *want = word_at(f.p->steal.ctl, steal_want_offset(w1));
	assert_int_equal(
		__atomic_load_n(word_at(f.p->steal.lock, kLockOffA), __ATOMIC_ACQUIRE) & 1u, 0u);
	const uint64_t pe = proto_errors(&f);
	__atomic_store_n(want, 1u, __ATOMIC_SEQ_CST); // region 0: lane 0, never published
	__atomic_fetch_xor(ack, 1u, __ATOMIC_RELEASE);
	// w0's honest result makes the host look at the ACK words.
	g_go0.store(1);
	assert_int_equal(reap_status(&f, t0, nullptr), 0);
	pass_until(&f, [&] { return proto_errors(&f) >= pe + 1; });
	int64_t v = -1;
	assert_int_equal(reap_status(&f, t2, &v), 0); // ran on w0
	assert_int_equal(v, 7);
	__atomic_fetch_xor(ack, 1u, __ATOMIC_RELEASE); // undo, then release the region
	__atomic_store_n(want, 0u, __ATOMIC_SEQ_CST);
	g_go.store(1);
	assert_int_equal(reap_status(&f, t1, &v), 0);
	assert_int_equal(v, 1);
	assert_false(retiring(&f, w0) || retired(&f, w0));
	assert_false(retiring(&f, w1) || retired(&f, w1));
	const knit_ticket_t t3 = enq(&f, f.echo, 9); // both still serve
	assert_int_equal(reap_status(&f, t3, &v), 0);
	assert_int_equal(v, 9);
	pool_close(&f);
}

// ---- dead workers ---------------------------------------------------------------------

std::atomic<int> g_echo_runs{0};

// Stop worker w alone and wait (bounded) until it has left its loop: from
// then on the test plays it (its endpoints are idle).
void stop_one_worker(PoolFix *f, uint32_t w)
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

// The injected death of worker w (what the process pool does on a child's
// death), under the dispatcher lock (bounded wait for it).
uint32_t worker_lost(PoolFix *f, uint32_t w, int32_t status)
{
	const int64_t end = mono_ns() + 20ll * 1000000000;
	while (!dispatch_trylock(f->p)) {
		assert_true(mono_ns() < end);
		sched_yield();
	}
	LaneLoss loss = {status, kLaneRetire, nullptr, nullptr, {}, 0};
	const uint32_t n = lane_lost(f->p, w, &loss);
	dispatch_unlock(f->p);
	return n;
}

// Steal: the dying worker (played by the test as consumer 1) holds one
// call it claimed and acknowledged (running, no result yet) and one it
// claimed, decoded and never acknowledged nor freed (the dead-claimant
// hazard). Its death completes both with -KNIT_ECRASHED, once each; neither
// runs on the survivor; the arena slot it held is given back; the pool
// keeps serving on worker 0.
void test_steal_dead_worker_calls_crash(void **)
{
	PoolFix f;
	pool_open(&f, KNIT_TOPOLOGY_STEAL, 0);
	stop_one_worker(&f, 1);
	knit_ticket_t t0;
	assert_int_equal(hold_call(&f, 0, &t0), 0u); // worker 0 is busy
	g_echo_runs.store(0);
	const knit_ticket_t ta = enq(&f, f.echo, 11);
	// Worker 1 (the test) claims ta fully: ACKed, "running".
	StealConsumer &sc = f.p->lanes[1].sc;
	uint32_t got = 0;
	const int64_t end = mono_ns() + 10ll * 1000000000;
	while (got == 0 && mono_ns() < end) {
		got = sc.claim([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &) {
			assert_int_equal(rc, 0);
			assert_int_equal(h.ticket, (uint32_t)ta);
		});
	}
	assert_int_not_equal(got, 0u);
	// tb carries an arena payload, which the dying worker never frees.
	static uint8_t big[3000];
	knit_value_t bv;
	memset(&bv, 0, sizeof bv);
	bv.type = KNIT_VALUE_BYTES;
	bv.data = big;
	bv.len = sizeof big;
	knit_ticket_t tb = 0;
	assert_int_equal(knit_enqueue(f.pool, f.echo, &bv, nullptr, &tb), 0);
	uint32_t take = 0;
	while (take == 0 && mono_ns() < end)
		take = sc.claim_begin(); // claimed, recorded ...
	assert_int_not_equal(take, 0u);
	FrameHead h;
	knit_value_t v;
	assert_int_equal(sc.decode((uint32_t)__builtin_ctz(take), &h, &v), 0);
	assert_int_equal(h.ticket, (uint32_t)tb);
	assert_int_equal(v.len, sizeof big); // ... decoded, and it dies
	uint8_t *const lock = f.p->steal.lock;
	auto arena_live = [&] {
		return __atomic_load_n(word_at(lock, kLockOffPA), __ATOMIC_ACQUIRE) ^
		       __atomic_load_n(word_at(f.p->steal.ctl, kStealOffSubmitPB),
				       __ATOMIC_ACQUIRE); // its PB (layout.h)
	};
	assert_int_not_equal(arena_live(), 0u);
	const uint64_t pe = proto_errors(&f);
	assert_int_equal(worker_lost(&f, 1, -KNIT_ECRASHED), 2u);
	assert_int_equal(arena_live(), 0u);                       // its slot given back, not leaked
	assert_int_equal(worker_lost(&f, 1, -KNIT_ECRASHED), 0u); // once
	assert_int_equal(proto_errors(&f), pe);
	assert_int_equal(reap_status(&f, ta, nullptr), -KNIT_ECRASHED);
	assert_int_equal(reap_status(&f, tb, nullptr), -KNIT_ECRASHED);
	// Worker 0 finishes its call and serves new ones; neither lost call
	// ran on it, and no second completion arrives for them.
	g_go.store(1);
	assert_int_equal(reap_status(&f, t0, nullptr), 0);
	for (int i = 0; i < 20; i++) {
		const knit_ticket_t t = enq(&f, f.echo, 100 + i);
		int64_t val = 0;
		assert_int_equal(reap_status(&f, t, &val), 0);
		assert_int_equal(val, 100 + i);
	}
	assert_int_equal(g_echo_runs.load(), 20);
	assert_int_equal(g_nseen, 0u);
	pool_close(&f);
}

// Steal: once every worker is gone, the calls still waiting in the submit
// lock (claimed by nobody) fail too, and new calls fail at once, instead
// of waiting for a claimant that will never come.
void test_steal_last_worker_lost(void **)
{
	PoolFix f;
	pool_open(&f, KNIT_TOPOLOGY_STEAL, 0);
	stop_one_worker(&f, 0);
	stop_one_worker(&f, 1);
	const knit_ticket_t ta = enq(&f, f.echo, 1);
	const knit_ticket_t tb = enq(&f, f.echo, 2);
	assert_int_equal(worker_lost(&f, 0, -KNIT_ECRASHED), 0u);
	assert_int_equal(worker_lost(&f, 1, -KNIT_ECRASHED), 2u);
	assert_int_equal(reap_status(&f, ta, nullptr), -KNIT_ECRASHED);
	assert_int_equal(reap_status(&f, tb, nullptr), -KNIT_ECRASHED);
	const knit_ticket_t tc = enq(&f, f.echo, 3);
	assert_int_equal(reap_status(&f, tc, nullptr), -KNIT_ECRASHED);
	assert_int_equal(knit_stop(f.pool, KNIT_STOP_DRAIN, 10ll * 1000000000), 0);
	assert_int_equal(g_nseen, 0u);
	assert_int_equal(knit_pool_destroy(f.pool), 0);
}

// Lanes: the calls placed on a dead worker's lane fail -KNIT_ECRASHED, new
// calls avoid the lane (a call pinned to it fails at once), and the pool
// serves on the others; once every worker lane is gone, calls fail instead
// of waiting for nobody.
void test_lanes_dead_worker_calls_crash(void **)
{
	PoolFix f;
	pool_open(&f, KNIT_TOPOLOGY_LANES, 0);
	stop_one_worker(&f, 1);
	g_echo_runs.store(0);
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.flags = KNIT_CALL_LANE;
	o.lane = 1;
	knit_value_t a;
	memset(&a, 0, sizeof a);
	a.type = KNIT_VALUE_I64;
	knit_ticket_t tp[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(knit_enqueue_ex(f.pool, f.echo, &a, nullptr, &o, &tp[i]), 0);
	const uint64_t pe = proto_errors(&f);
	assert_int_equal(worker_lost(&f, 1, -KNIT_ECRASHED), 3u);
	assert_int_equal(proto_errors(&f), pe);
	for (int i = 0; i < 3; i++)
		assert_int_equal(reap_status(&f, tp[i], nullptr), -KNIT_ECRASHED);
	assert_int_equal(f.p->lanes[1].inflight, 0u);
	knit_ticket_t tq;
	assert_int_equal(knit_enqueue_ex(f.pool, f.echo, &a, nullptr, &o, &tq), 0);
	assert_int_equal(reap_status(&f, tq, nullptr), -KNIT_ECRASHED);
	for (int i = 0; i < 20; i++) {
		const knit_ticket_t t = enq(&f, f.echo, 100 + i);
		int64_t val = 0;
		assert_int_equal(reap_status(&f, t, &val), 0);
		assert_int_equal(val, 100 + i);
	}
	assert_int_equal(g_echo_runs.load(), 20);
	assert_int_equal(g_nseen, 0u);
	pool_close(&f);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_field_at_a_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_double_arena_reference, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mutated_valid_frames, setup, teardown),
		cmocka_unit_test(test_forged_stamp_other_lane),
		cmocka_unit_test(test_result_from_other_worker),
		cmocka_unit_test(test_result_for_unclaimed_call),
		cmocka_unit_test(test_result_task_mismatch),
		cmocka_unit_test(test_forged_ack_toggle),
		cmocka_unit_test(test_duplicate_result),
		cmocka_unit_test(test_steal_dead_worker_calls_crash),
		cmocka_unit_test(test_lanes_dead_worker_calls_crash),
		cmocka_unit_test(test_steal_last_worker_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
