// SPDX-License-Identifier: MIT
// tests/unit/test_lock2.cpp - the lock2 lane protocol, transition by
// transition, and the exact behaviours lock2.h promises:
// ring lane choice (FIFO), stale-shadow reuse order, descending round-robin
// consumption, batch retire and batch publish with one store each, publish
// fails iff 32 lanes are in flight, A == B after a full drain, toggle wrap
// across generations, re-attach to used memory.
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

#include "src/layout.h"
#include "src/lock2.h"
#include "src/region.h"

using namespace knit::detail;

namespace {

constexpr uint64_t kCap = 1u << 20;

struct Fix {
	Region region;
	uint8_t *lock;
	ArenaShared arena;
	LockProducer prod;
	LockConsumer cons;
	ConsumerLimits limits;
};

uint32_t word(Fix *f, uint32_t off) { return *word_at(f->lock, off); }
uint32_t A(Fix *f) { return word(f, kLockOffA); }
uint32_t B(Fix *f) { return word(f, kLockOffB); }

int setup(void **state)
{
	Fix *f = new Fix();
	int rc = region_create(RegionKind::kAnonymous, lock_region_bytes(kCap), "test_lock2",
			       &f->region);
	if (rc != 0)
		return -1;
	f->lock = f->region.base;
	f->arena = lock_arena_shared(f->lock, f->lock + lock_arena_offset(), kCap);
	f->limits = ConsumerLimits{1000, 1u << 20, 0xFFFFu};
	if (f->prod.attach(f->lock, f->arena, kCap / 2) != 0)
		return -1;
	if (f->cons.attach(f->lock, f->arena, f->limits) != 0)
		return -1;
	*state = f;
	return 0;
}

int teardown(void **state)
{
	Fix *f = (Fix *)*state;
	region_destroy(&f->region);
	delete f;
	return 0;
}

FrameHead head_for(uint32_t seq)
{
	FrameHead h{};
	h.task = seq % 1000;
	h.ticket = seq;
	h.generation = seq * 7u;
	h.deadline_ns = seq;
	return h;
}

knit_value_t i64v(int64_t v)
{
	knit_value_t x{};
	x.type = KNIT_VALUE_I64;
	x.i64 = v;
	return x;
}

// Publish one I64 frame carrying seq; returns the lane.
int pub(Fix *f, uint32_t seq) { return f->prod.publish(head_for(seq), i64v((int64_t)seq * 3)); }

// Decode lane and check it carries seq.
void expect_lane(Fix *f, uint32_t lane, uint32_t seq)
{
	FrameHead h;
	knit_value_t v;
	assert_int_equal(f->cons.decode(lane, &h, &v), 0);
	assert_int_equal(h.fault, 0);
	assert_int_equal(h.ticket, seq);
	assert_int_equal(h.generation, seq * 7u);
	assert_int_equal(h.deadline_ns, seq);
	assert_int_equal(v.type, KNIT_VALUE_I64);
	assert_int_equal(v.i64, (int64_t)seq * 3);
}

void test_attach_fresh(void **state)
{
	Fix *f = (Fix *)*state;
	assert_int_equal(A(f), 0);
	assert_int_equal(B(f), 0);
	assert_int_equal(f->cons.pending(), 0);
	assert_int_equal(f->prod.free_cached(), 0xFFFFFFFFu);
	assert_true(f->prod.idle());
	// nothing pending: a drain does nothing and stores nothing
	assert_int_equal(
		f->cons.drain([](uint32_t, int, const FrameHead &, const knit_value_t &) {}), 0);
	assert_int_equal(B(f), 0);
}

void test_attach_invalid(void **state)
{
	Fix *f = (Fix *)*state;
	LockProducer p;
	LockConsumer c;
	assert_int_equal(p.attach(nullptr, f->arena, 100), -KNIT_EINVAL);
	assert_int_equal(p.attach(f->lock + 4, f->arena, 100), -KNIT_EINVAL);
	assert_int_equal(p.attach(f->lock, f->arena, 0), -KNIT_EINVAL);
	ArenaShared bad = f->arena;
	bad.capacity = 100; // not a granule multiple
	assert_int_equal(p.attach(f->lock, bad, 100), -KNIT_EINVAL);
	assert_int_equal(c.attach(f->lock, bad, f->limits), -KNIT_EINVAL);
	assert_int_equal(c.attach(nullptr, f->arena, f->limits), -KNIT_EINVAL);
	// unattached endpoints refuse instead of crashing
	assert_int_equal(p.publish(head_for(0), i64v(0)), -KNIT_EINVAL);
	assert_int_equal(c.pending(), 0);
	FrameHead h;
	knit_value_t v;
	assert_int_equal(c.decode(0, &h, &v), -KNIT_EINVAL);
}

// Each publish flips exactly one, previously free, bit of A: the highest.
void test_publish_single_bit_highest(void **state)
{
	Fix *f = (Fix *)*state;
	uint32_t prev = A(f);
	for (uint32_t i = 0; i < 32; i++) {
		int lane = pub(f, i);
		assert_int_equal(lane, 31 - (int)i);
		uint32_t now = A(f);
		assert_int_equal(now ^ prev, 1u << lane);
		assert_int_equal(__builtin_popcount(now ^ B(f)), (int)i + 1);
		prev = now;
	}
	assert_int_equal(A(f), 0xFFFFFFFFu);
	assert_int_equal(f->cons.pending(), 0xFFFFFFFFu);
}

// Publish fails iff all 32 lanes are in flight; nothing changes when it does.
void test_full_iff_32_in_flight(void **state)
{
	Fix *f = (Fix *)*state;
	for (uint32_t i = 0; i < 32; i++)
		assert_true(pub(f, i) >= 0);
	assert_int_equal(pub(f, 99), -KNIT_EAGAIN);
	assert_int_equal(A(f), 0xFFFFFFFFu);
	assert_int_equal(f->prod.staged(), 0);
	// a full queue still rejects never-publishable values first
	knit_value_t big{};
	big.type = KNIT_VALUE_BYTES;
	big.len = kCap; // > per_call_max
	big.data = "";
	assert_int_equal(f->prod.publish(head_for(1), big), -KNIT_ETOOBIG);
	// retire exactly one lane (the first taken: 31) -> exactly one publish fits
	uint32_t snap = f->cons.pending();
	int lane = f->cons.next_lane(&snap);
	assert_int_equal(lane, 31);
	expect_lane(f, 31, 0);
	assert_int_equal(f->cons.retire_taken(), 1u << 31);
	assert_int_equal(pub(f, 32), 31);
	assert_int_equal(pub(f, 33), -KNIT_EAGAIN);
}

// Stale shadow: fill 31..2, consumer acks 31 and 30, the next two publishes
// use 1 and 0 (stale shadow), only then the producer refreshes and reuses 31
// then 30.
void test_stale_shadow_reuse_order(void **state)
{
	Fix *f = (Fix *)*state;
	for (uint32_t i = 0; i < 30; i++)
		assert_int_equal(pub(f, i), 31 - (int)i);
	uint32_t snap = f->cons.pending();
	assert_int_equal(snap, 0xFFFFFFFCu);
	assert_int_equal(f->cons.next_lane(&snap), 31);
	expect_lane(f, 31, 0);
	assert_int_equal(f->cons.next_lane(&snap), 30);
	expect_lane(f, 30, 1);
	assert_int_equal(f->cons.retire_taken(), 0xC0000000u);
	assert_int_equal(B(f), 0xC0000000u);
	// The producer has not looked at B: its cached free set is {1, 0}.
	assert_int_equal(f->prod.free_cached(), 0x3u);
	assert_int_equal(pub(f, 30), 1);
	assert_int_equal(pub(f, 31), 0);
	assert_int_equal(f->prod.free_cached(), 0u); // exhausted: next publish refreshes
	assert_int_equal(pub(f, 32), 31);
	assert_int_equal(pub(f, 33), 30);
	assert_int_equal(pub(f, 34), -KNIT_EAGAIN);
}

// Descending round-robin: first pass takes the highest; afterwards the
// highest pending lane strictly below the last one taken, else wrap to the
// highest.
void test_round_robin_order(void **state)
{
	Fix *f = (Fix *)*state;
	for (uint32_t i = 0; i < 32; i++)
		pub(f, i);
	// consume only 31 and 30
	uint32_t snap = f->cons.pending();
	assert_int_equal(f->cons.next_lane(&snap), 31);
	expect_lane(f, 31, 0);
	assert_int_equal(f->cons.next_lane(&snap), 30);
	expect_lane(f, 30, 1);
	f->cons.retire_taken();
	// producer refreshes (cache empty) and republishes lane 31
	assert_int_equal(pub(f, 32), 31);
	// pending = {31, 29..0}; cursor = 30 -> 29, 28, ..., 0, then wrap to 31
	snap = f->cons.pending();
	assert_int_equal(snap, 0xBFFFFFFFu);
	for (int want = 29; want >= 0; want--) {
		int lane = f->cons.next_lane(&snap);
		assert_int_equal(lane, want);
		expect_lane(f, (uint32_t)lane, 31u - (uint32_t)want);
	}
	assert_int_equal(f->cons.next_lane(&snap), 31);
	expect_lane(f, 31, 32);
	assert_int_equal(f->cons.next_lane(&snap), -1);
	assert_int_equal(f->cons.retire_taken(), 0xBFFFFFFFu);
	assert_int_equal(A(f), B(f));
}

// All lanes consumed in one pass are retired with ONE store of B: B does not
// move while the pass decodes, then moves by exactly the consumed set.
void test_batch_retire_one_store(void **state)
{
	Fix *f = (Fix *)*state;
	for (uint32_t i = 0; i < 7; i++)
		pub(f, i);
	uint32_t snap = f->cons.pending();
	assert_int_equal(snap, 0xFE000000u);
	uint32_t seq = 0;
	int lane;
	while ((lane = f->cons.next_lane(&snap)) >= 0) {
		expect_lane(f, (uint32_t)lane, seq++);
		assert_int_equal(B(f), 0);                 // no store yet
		assert_int_equal(f->cons.pending(), snap); // taken lanes are not pending again
	}
	assert_int_equal(f->cons.taken(), 0xFE000000u);
	// retire a subset first: only taken lanes can be retired
	assert_int_equal(f->cons.retire(0x80000001u), 0x80000000u);
	assert_int_equal(B(f), 0x80000000u);
	assert_int_equal(f->cons.retire_taken(), 0x7E000000u);
	assert_int_equal(B(f), 0xFE000000u);
	assert_int_equal(A(f), B(f));
	assert_int_equal(f->cons.retire_taken(), 0u); // nothing left: no store
	// the drain helper: one pass, one store
	for (uint32_t i = 0; i < 5; i++)
		pub(f, 100 + i);
	uint32_t got = 0;
	uint32_t n =
		f->cons.drain([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &v) {
			assert_int_equal(rc, 0);
			assert_int_equal(h.ticket, 100 + got);
			assert_int_equal(v.i64, (int64_t)(100 + got) * 3);
			got++;
		});
	assert_int_equal(n, 5);
	assert_int_equal(A(f), B(f));
}

// stage() writes lanes without touching A; flush() publishes them all with
// one store; the consumer sees none of them before.
void test_batch_publish_one_store(void **state)
{
	Fix *f = (Fix *)*state;
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(f->prod.stage(head_for(i), i64v((int64_t)i * 3)), 31 - (int)i);
	assert_int_equal(A(f), 0);
	assert_int_equal(f->cons.pending(), 0);
	assert_int_equal(f->prod.staged(), 0xE0000000u);
	assert_int_equal(f->prod.free_cached(), 0x1FFFFFFFu); // staged lanes are not free
	assert_false(f->prod.idle());
	assert_int_equal(f->prod.flush(), 0xE0000000u);
	assert_int_equal(A(f), 0xE0000000u);
	assert_int_equal(f->prod.flush(), 0u); // nothing staged: nothing stored
	assert_int_equal(A(f), 0xE0000000u);
	uint32_t snap = f->cons.pending();
	assert_int_equal(snap, 0xE0000000u);
	for (uint32_t i = 0; i < 3; i++)
		expect_lane(f, (uint32_t)f->cons.next_lane(&snap), i);
	f->cons.retire_taken();
	// publish() also flushes lanes staged before it
	f->prod.stage(head_for(10), i64v(30));
	assert_int_equal(A(f), 0xE0000000u);
	assert_true(f->prod.publish(head_for(11), i64v(33)) >= 0);
	assert_int_equal(__builtin_popcount(A(f) ^ B(f)), 2);
	// staging stops at 32
	f->cons.drain([](uint32_t, int, const FrameHead &, const knit_value_t &) {});
	for (uint32_t i = 0; i < 32; i++)
		assert_true(f->prod.stage(head_for(i), i64v((int64_t)i * 3)) >= 0);
	assert_int_equal(f->prod.stage(head_for(99), i64v(0)), -KNIT_EAGAIN);
	assert_int_equal(f->prod.flush(), 0xFFFFFFFFu);
	assert_int_equal(A(f) ^ B(f), 0xFFFFFFFFu);
}

// Many generations: the toggle bits wrap (a lane's A bit goes 0->1->0...),
// exactly-once delivery, A == B after every full drain.
void test_toggle_wrap_generations(void **state)
{
	Fix *f = (Fix *)*state;
	uint32_t seq = 0, next = 0;
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	uint32_t seen_a_bits_set = 0, seen_a_bits_clear = 0;
	const uint32_t max_frames = 3000 * 32;
	uint8_t *done = (uint8_t *)calloc(max_frames, 1);
	for (int gen = 0; gen < 3000; gen++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		uint32_t k = 1 + (uint32_t)(rng % 32);
		uint32_t ok = 0;
		for (uint32_t i = 0; i < k; i++)
			if (pub(f, seq) >= 0) {
				seq++;
				ok++;
			}
		assert_true(ok >= 1);
		seen_a_bits_set |= A(f);
		seen_a_bits_clear |= ~A(f);
		// drain partially or fully
		bool partial = (rng >> 40) & 1;
		uint32_t snap = f->cons.pending();
		int lane;
		uint32_t took = 0;
		while ((lane = f->cons.next_lane(&snap)) >= 0) {
			FrameHead h;
			knit_value_t v;
			assert_int_equal(f->cons.decode((uint32_t)lane, &h, &v), 0);
			// FIFO (lock2.h, "Order"): the frame taken is the earliest
			// not delivered yet, after partial drains and wraps too
			assert_int_equal(h.ticket, next);
			assert_int_equal(done[h.ticket], 0);
			done[h.ticket] = 1;
			while (done[next])
				next++;
			assert_int_equal(v.i64, (int64_t)h.ticket * 3);
			if (partial && ++took == 3)
				break;
		}
		f->cons.retire_taken();
		if (!partial) {
			assert_int_equal(A(f), B(f));
			assert_int_equal(f->cons.pending(), 0);
		}
	}
	// every lane's bit was seen both set and clear in A
	assert_int_equal(seen_a_bits_set, 0xFFFFFFFFu);
	assert_int_equal(seen_a_bits_clear, 0xFFFFFFFFu);
	f->cons.drain([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &) {
		assert_int_equal(rc, 0);
		done[h.ticket] = 1;
	});
	while (done[next])
		next++;
	assert_int_equal(next, seq); // everything published was delivered once
	assert_int_equal(A(f), B(f));
	free(done);
}

// Exactly-once bookkeeping across generations with the ordering check above
// done strictly: every ticket delivered once.
void test_exactly_once(void **state)
{
	Fix *f = (Fix *)*state;
	const uint32_t total = 20000;
	uint8_t *got = (uint8_t *)calloc(total, 1);
	uint32_t seq = 0, delivered = 0;
	uint64_t rng = 12345;
	while (delivered < total) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t k = (uint32_t)(rng >> 59); // 0..31 publishes
		for (uint32_t i = 0; i < k && seq < total; i++)
			if (pub(f, seq) >= 0)
				seq++;
		uint32_t limit = (uint32_t)(rng >> 33) % 8; // consume up to limit lanes
		uint32_t snap = f->cons.pending();
		int lane;
		for (uint32_t n = 0; n <= limit && (lane = f->cons.next_lane(&snap)) >= 0; n++) {
			FrameHead h;
			knit_value_t v;
			assert_int_equal(f->cons.decode((uint32_t)lane, &h, &v), 0);
			assert_true(h.ticket < total);
			assert_int_equal(got[h.ticket], 0);
			got[h.ticket] = 1;
			delivered++;
		}
		f->cons.retire_taken();
	}
	assert_int_equal(seq, total);
	assert_int_equal(A(f), B(f));
	free(got);
}

// Endpoints re-created over used memory load the shared words: in-flight
// lanes stay in flight and are delivered, free lanes are reused correctly.
void test_reattach_used_memory(void **state)
{
	Fix *f = (Fix *)*state;
	for (uint32_t i = 0; i < 40; i++) { // wrap some bits first
		pub(f, i);
		f->cons.drain([](uint32_t, int, const FrameHead &, const knit_value_t &) {});
	}
	for (uint32_t i = 0; i < 5; i++)
		pub(f, 100 + i);
	uint32_t snap = f->cons.pending();
	int l0 = f->cons.next_lane(&snap);
	FrameHead h;
	knit_value_t v;
	assert_int_equal(f->cons.decode((uint32_t)l0, &h, &v), 0);
	assert_int_equal(h.ticket, 100);
	f->cons.retire_taken();
	const uint32_t a = A(f), b = B(f);
	assert_int_equal(__builtin_popcount(a ^ b), 4);

	LockProducer p2;
	LockConsumer c2;
	assert_int_equal(p2.attach(f->lock, f->arena, kCap / 2), 0);
	assert_int_equal(c2.attach(f->lock, f->arena, f->limits), 0);
	assert_int_equal(p2.published(), a);
	assert_int_equal(p2.free_cached(), ~(a ^ b));
	assert_int_equal(c2.pending(), a ^ b);
	// fill the queue with the new producer: it must not touch the 4 in-flight lanes
	uint32_t added = 0;
	while (p2.publish(head_for(200 + added), i64v((int64_t)(200 + added) * 3)) >= 0)
		added++;
	assert_int_equal(added, 28);
	assert_int_equal(A(f) ^ B(f), 0xFFFFFFFFu);
	uint32_t old_seen = 0, new_seen = 0;
	c2.drain([&](uint32_t, int rc, const FrameHead &hh, const knit_value_t &vv) {
		assert_int_equal(rc, 0);
		assert_int_equal(vv.i64, (int64_t)hh.ticket * 3);
		if (hh.ticket >= 101 && hh.ticket <= 104)
			old_seen |= 1u << (hh.ticket - 101);
		else if (hh.ticket >= 200 && hh.ticket < 228)
			new_seen++;
		else
			fail_msg("unexpected ticket %u", hh.ticket);
	});
	assert_int_equal(old_seen, 0xF);
	assert_int_equal(new_seen, 28);
	assert_int_equal(A(f), B(f));
	assert_true(p2.idle());
}

// decode() refuses caller bugs without touching anything.
void test_decode_caller_errors(void **state)
{
	Fix *f = (Fix *)*state;
	FrameHead h;
	knit_value_t v;
	assert_int_equal(f->cons.decode(32, &h, &v), -KNIT_EINVAL);
	assert_int_equal(f->cons.decode(31, &h, &v), -KNIT_EINVAL); // not in flight
	pub(f, 1);
	assert_int_equal(f->cons.decode(31, &h, &v), 0); // decode without pending(): loads A itself
	assert_int_equal(f->cons.decode(31, &h, &v), -KNIT_EINVAL); // already taken
	assert_int_equal(f->cons.retire(0xFFFFFFFFu), 1u << 31);
	assert_int_equal(A(f), B(f));
	// a B-only change (no A toggle) is not a publication
	*word_at(f->lock, kLockOffB) ^= 1u; // simulate noise in B: consumer uses its mirror
	assert_int_equal(f->cons.pending(), 0);
	*word_at(f->lock, kLockOffB) ^= 1u;
}

// Quiescence as the runtime sees it: idle() after everything is retired.
void test_idle(void **state)
{
	Fix *f = (Fix *)*state;
	assert_true(f->prod.idle());
	pub(f, 1);
	assert_false(f->prod.idle());
	f->cons.drain([](uint32_t, int, const FrameHead &, const knit_value_t &) {});
	assert_true(f->prod.idle());
	assert_int_equal(f->prod.refresh(), 0xFFFFFFFFu);
}

// The scalar fast path of stage() writes the same task line words as the
// general encoder (codec_encode + the head), for every scalar type and the
// values the codec normalises or must keep bit for bit.
void test_scalar_stage_words(void **state)
{
	Fix *f = (Fix *)*state;
	const double nan_payload = __builtin_nan("0x5a5");
	const double vals_f[] = {0.0, -0.0, 1.5, __builtin_inf(), -__builtin_inf(), nan_payload};
	const int64_t vals_i[] = {0, 1, -1, 2, INT64_MIN, INT64_MAX};
	uint32_t seq = 1;
	for (uint32_t type = KNIT_VALUE_NONE; type <= KNIT_VALUE_F64; type++) {
		for (uint32_t k = 0; k < 6; k++, seq++) {
			knit_value_t v{};
			v.type = type;
			v.i64 = vals_i[k];
			v.f64 = vals_f[k];
			v.code = 77; // ignored for scalars
			FrameHead h = head_for(seq);
			h.flags = seq & 0xFF;
			h.status = -(int32_t)(seq % 3);
			const int lane = f->prod.stage(h, v);
			assert_true(lane >= 0);
			TaskLine ref;
			memset(&ref, 0xA5, sizeof ref);
			assert_int_equal(codec_encode(v, nullptr, nullptr, &ref), 0);
			ref.task = h.task;
			ref.flags = h.flags;
			ref.ticket = h.ticket;
			ref.generation = h.generation;
			ref.status = h.status;
			ref.deadline = h.deadline_ns;
			assert_memory_equal(f->lock + lock_task_offset((uint32_t)lane), &ref,
					    sizeof ref);
			f->prod.flush();
			FrameHead got;
			knit_value_t view;
			assert_int_equal(f->cons.pending() & (1u << lane), 1u << lane);
			assert_int_equal(f->cons.decode((uint32_t)lane, &got, &view), 0);
			knit_value_t want{};
			uint32_t slot;
			assert_int_equal(codec_decode(ref,
						      f->lock + lock_inline_offset((uint32_t)lane),
						      f->arena, 0, &want, &slot),
					 0);
			assert_memory_equal(&view, &want, sizeof view);
			f->cons.retire_taken();
		}
	}
	assert_true(f->prod.idle());
}

uint64_t rng_step(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

// decode() with its inline scalar path against the reference: the head
// checks and codec_decode() over the same words, for task lines close to a
// scalar frame (every scalar type and its neighbours, stray where / vlen /
// BOOL values, heads inside and outside the limits), each published by a
// raw toggle of A as a hostile producer could.
void test_scalar_decode_matches_codec(void **state)
{
	Fix *f = (Fix *)*state;
	uint64_t rs = 0x9E3779B97F4A7C15ull;
	uint32_t a = A(f);
	for (uint32_t round = 0; round < 20000; round++) {
		const uint32_t lane = (uint32_t)(rng_step(&rs) % 32);
		const uint64_t r = rng_step(&rs);
		TaskLine t;
		memset(&t, 0, sizeof t);
		t.task = (r & 1) ? (uint32_t)(rng_step(&rs) % 1200) : (uint32_t)(r >> 8) % 1000;
		t.flags = (r & 2) ? (uint32_t)rng_step(&rs) : (uint32_t)(r >> 16) & 0xFFFF;
		t.ticket = (r & 4) ? (uint32_t)rng_step(&rs) : (uint32_t)(r >> 20) & 0xFFFFF;
		t.generation = (uint32_t)rng_step(&rs);
		const int32_t statuses[] = {0,
					    -1,
					    -5,
					    1,
					    -(int32_t)KNIT_ERROR_MAX_,
					    -(int32_t)KNIT_ERROR_MAX_ + 1,
					    INT32_MIN};
		t.status = (r & 8) ? statuses[(r >> 24) % 7] : 0;
		t.vtype = (r & 16) ? (uint32_t)(r >> 28) % 9 : (uint32_t)(r >> 28) % 4;
		t.vcode = (r & 32) ? (int32_t)rng_step(&rs) : 0;
		t.vlen = (r & 64) ? (uint32_t)(r >> 32) % 3 : 0;
		const uint64_t scalars[] = {0, 1, 2, ~0ull, r};
		t.scalar = scalars[(r >> 36) % 5];
		t.deadline = rng_step(&rs);
		t.where = (r & 128) ? (uint32_t)(r >> 40) % 4 : 0;
		t.arena_slot = (r & 256) ? (uint32_t)(r >> 44) % 70 : 0;
		t.arena_off = (r & 512) ? (uint32_t)rng_step(&rs) % 4096 : 0;
		t.reserved = (uint32_t)(r >> 56);
		memcpy(f->lock + lock_task_offset(lane), &t, sizeof t);
		memset(f->lock + lock_inline_offset(lane), (r >> 48) & 1 ? 'x' : 0, kInlineBytes);
		a ^= 1u << lane;
		*word_at(f->lock, kLockOffA) = a;
		assert_int_equal(f->cons.pending(), 1u << lane);

		FrameHead h;
		knit_value_t v;
		const int rc = f->cons.decode(lane, &h, &v);

		uint32_t fault = 0;
		if (t.task >= f->limits.task_count)
			fault |= kFaultTask;
		if (t.ticket >= f->limits.ticket_count)
			fault |= kFaultTicket;
		if ((t.flags & ~f->limits.flags_mask) != 0)
			fault |= kFaultFlags;
		if (t.status > 0 || t.status <= -(int32_t)KNIT_ERROR_MAX_)
			fault |= kFaultStatus;
		knit_value_t want;
		uint32_t slot;
		if (codec_decode(t, f->lock + lock_inline_offset(lane), f->arena, 0, &want,
				 &slot) != 0)
			fault |= kFaultValue;
		if (fault != 0)
			memset(&want, 0, sizeof want);
		assert_int_equal(rc, fault != 0 ? -KNIT_EPROTO : 0);
		assert_int_equal(h.fault, fault);
		assert_int_equal(h.task, t.task);
		assert_int_equal(h.flags, t.flags);
		assert_int_equal(h.ticket, t.ticket);
		assert_int_equal(h.generation, t.generation);
		assert_int_equal(h.status, t.status);
		assert_int_equal(h.deadline_ns, t.deadline);
		assert_memory_equal(&v, &want, sizeof v);
		f->cons.retire_taken(); // frees an arena slot a frame may have named
		assert_int_equal(B(f), a);
	}
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_attach_fresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_publish_single_bit_highest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_iff_32_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_shadow_reuse_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_round_robin_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_retire_one_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_publish_one_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_toggle_wrap_generations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exactly_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reattach_used_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_decode_caller_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scalar_stage_words, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scalar_decode_matches_codec, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
