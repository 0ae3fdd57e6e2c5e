// SPDX-License-Identifier: MIT
// tests/unit/test_codec.cpp - the value codec through a real lock: every value
// type round-trips (scalars bit-exact, byte payloads at every placement
// boundary), the arena path for big values, the zero-copy reservation path,
// -KNIT_ETOOBIG for never-publishable values, -KNIT_EAGAIN when the arena is
// full and success once the consumer has freed.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/codec.h"
#include "src/layout.h"
#include "src/lock2.h"
#include "src/region.h"

using namespace knit::detail;

namespace {

struct Fix {
	Region region;
	uint8_t *lock;
	uint64_t cap;
	ArenaShared arena;
	LockProducer prod;
	LockConsumer cons;
};

Fix *make(uint64_t cap, uint64_t per_call_max)
{
	Fix *f = new Fix();
	if (region_create(RegionKind::kAnonymous, lock_region_bytes(cap), "test_codec",
			  &f->region) != 0)
		return nullptr;
	f->lock = f->region.base;
	f->cap = cap;
	f->arena = lock_arena_shared(f->lock, f->lock + lock_arena_offset(), cap);
	if (f->prod.attach(f->lock, f->arena, per_call_max) != 0)
		return nullptr;
	if (f->cons.attach(f->lock, f->arena, ConsumerLimits{16, 1u << 20, 0xFFFFFFFFu}) != 0)
		return nullptr;
	return f;
}

void destroy(Fix *f)
{
	region_destroy(&f->region);
	delete f;
}

int setup(void **state)
{
	Fix *f = make(1u << 20, 256u << 10);
	if (f == nullptr)
		return -1;
	*state = f;
	return 0;
}

int teardown(void **state)
{
	destroy((Fix *)*state);
	return 0;
}

knit_value_t bytes_value(uint32_t type, const void *data, size_t len, int32_t code = 0)
{
	knit_value_t v{};
	v.type = type;
	v.data = data;
	v.len = len;
	v.code = code;
	return v;
}

FrameHead head(uint32_t ticket)
{
	FrameHead h{};
	h.task = 3;
	h.flags = 0x10001;
	h.ticket = ticket;
	h.generation = 0xDEADBEEF;
	h.status = -KNIT_ETASK;
	h.deadline_ns = 0xFFFFFFFFFFFFFFFFull;
	return h;
}

const TaskLine *line_of(Fix *f, uint32_t lane)
{
	return reinterpret_cast<const TaskLine *>(f->lock + lock_task_offset(lane));
}

// Publish v, decode it, return the view (valid until finish()) and the lane.
int roundtrip(Fix *f, const knit_value_t &v, knit_value_t *out, uint32_t ticket = 7)
{
	int lane = f->prod.publish(head(ticket), v);
	assert_true(lane >= 0);
	uint32_t snap = f->cons.pending();
	assert_int_equal(snap, 1u << lane);
	assert_int_equal(f->cons.next_lane(&snap), lane);
	FrameHead h;
	assert_int_equal(f->cons.decode((uint32_t)lane, &h, out), 0);
	assert_int_equal(h.task, 3);
	assert_int_equal(h.flags, 0x10001);
	assert_int_equal(h.ticket, ticket);
	assert_int_equal(h.generation, 0xDEADBEEF);
	assert_int_equal(h.status, -KNIT_ETASK);
	assert_true(h.deadline_ns == 0xFFFFFFFFFFFFFFFFull);
	assert_int_equal(h.fault, 0);
	return lane;
}

void finish(Fix *f)
{
	f->cons.retire_taken();
	assert_true(f->prod.idle());
}

void test_scalars(void **state)
{
	Fix *f = (Fix *)*state;
	knit_value_t v{}, out;

	v.type = KNIT_VALUE_NONE;
	roundtrip(f, v, &out);
	assert_int_equal(out.type, KNIT_VALUE_NONE);
	finish(f);

	const int64_t bools[] = {0, 1, 5, -1};
	for (int64_t b : bools) {
		v = knit_value_t{};
		v.type = KNIT_VALUE_BOOL;
		v.i64 = b;
		roundtrip(f, v, &out);
		assert_int_equal(out.type, KNIT_VALUE_BOOL);
		assert_int_equal(out.i64, b != 0 ? 1 : 0); // normalised
		finish(f);
	}

	const int64_t ints[] = {0, 1, -1, INT64_MIN, INT64_MAX, 0x0123456789ABCDEFll};
	for (int64_t i : ints) {
		v = knit_value_t{};
		v.type = KNIT_VALUE_I64;
		v.i64 = i;
		int lane = roundtrip(f, v, &out);
		assert_int_equal(out.type, KNIT_VALUE_I64);
		assert_true(out.i64 == i);
		assert_int_equal(line_of(f, (uint32_t)lane)->where, kWhereNone);
		finish(f);
	}

	uint64_t nan_payload = 0x7FF8000000C0FFEEull;
	double weird_nan;
	memcpy(&weird_nan, &nan_payload, 8);
	const double dbls[] = {0.0, -0.0, 1.5, -1e308, INFINITY, -INFINITY, NAN, weird_nan, 5e-324};
	for (double d : dbls) {
		v = knit_value_t{};
		v.type = KNIT_VALUE_F64;
		v.f64 = d;
		roundtrip(f, v, &out);
		assert_int_equal(out.type, KNIT_VALUE_F64);
		assert_memory_equal(&out.f64, &d, 8); // bit exact: NaN payload, sign of zero
		finish(f);
	}
}

// Bytes, strings and error messages at every placement boundary.
void test_byte_payloads(void **state)
{
	Fix *f = (Fix *)*state;
	const uint32_t types[] = {KNIT_VALUE_BYTES, KNIT_VALUE_STRING, KNIT_VALUE_ERROR};
	const size_t lens[] = {0, 1, 63, 64, 65, 510, 511, 512, 513, 1000, 4096, 65536, 200000};
	uint8_t *src = (uint8_t *)malloc(200001);
	for (size_t i = 0; i < 200001; i++)
		src[i] = (uint8_t)(i * 131 + 7) | 1; // never 0: the NUL check sees ours
	uint32_t ticket = 0;
	for (uint32_t type : types) {
		for (size_t len : lens) {
			knit_value_t out;
			int32_t code = type == KNIT_VALUE_ERROR ? -12345 : 0;
			int lane = roundtrip(f, bytes_value(type, src, len, code), &out, ticket++);
			assert_int_equal(out.type, type);
			assert_int_equal(out.len, len);
			assert_int_equal(out.code, code);
			assert_non_null(out.data);
			if (len > 0)
				assert_memory_equal(out.data, src, len);
			if (type != KNIT_VALUE_BYTES)
				assert_int_equal(((const uint8_t *)out.data)[len],
						 0); // NUL after text
			const TaskLine *tl = line_of(f, (uint32_t)lane);
			// the exact boundary: 512 bytes inline for bytes, 511 + NUL for text
			bool inl = type == KNIT_VALUE_BYTES ? len <= 512 : len <= 511;
			assert_int_equal(tl->where, inl ? kWhereInline : kWhereArena);
			const uint8_t *p = (const uint8_t *)out.data;
			if (inl) {
				assert_ptr_equal(p, f->lock + lock_inline_offset((uint32_t)lane));
			} else {
				assert_true(p >= f->arena.base && p + len < f->arena.base + f->cap);
				assert_int_equal((p - f->arena.base) % 64, 0);
			}
			finish(f);
		}
	}
	free(src);
}

// Big values go through the arena; several in flight at once do not alias.
void test_arena_many_in_flight(void **state)
{
	Fix *f = (Fix *)*state;
	static uint8_t buf[32][20000];
	for (uint32_t i = 0; i < 32; i++) {
		memset(buf[i], (int)(i + 1), sizeof buf[i]);
		size_t len = 600 + i * 500;
		assert_true(f->prod.publish(head(i), bytes_value(KNIT_VALUE_BYTES, buf[i], len)) >=
			    0);
	}
	uint32_t n = 0;
	f->cons.drain([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &v) {
		assert_int_equal(rc, 0);
		assert_int_equal(v.len, 600 + h.ticket * 500);
		assert_memory_equal(v.data, buf[h.ticket], v.len);
		n++;
	});
	assert_int_equal(n, 32);
	assert_true(f->prod.idle());
}

void test_too_big_and_invalid(void **state)
{
	Fix *f = (Fix *)*state;
	static uint8_t big[(256u << 10) + 2];
	// exactly per_call_max is fine, one more is never publishable
	knit_value_t out;
	roundtrip(f, bytes_value(KNIT_VALUE_BYTES, big, 256u << 10), &out);
	finish(f);
	roundtrip(f, bytes_value(KNIT_VALUE_STRING, big, 256u << 10), &out); // + NUL still fits
	finish(f);
	uint32_t a = *word_at(f->lock, kLockOffA);
	assert_int_equal(
		f->prod.publish(head(1), bytes_value(KNIT_VALUE_BYTES, big, (256u << 10) + 1)),
		-KNIT_ETOOBIG);
	assert_int_equal(
		f->prod.publish(head(1), bytes_value(KNIT_VALUE_STRING, big, (256u << 10) + 1)),
		-KNIT_ETOOBIG);
	assert_int_equal(*word_at(f->lock, kLockOffA), a); // refused: nothing published
	// malformed values
	knit_value_t v{};
	v.type = 7;
	assert_int_equal(f->prod.publish(head(1), v), -KNIT_EINVAL);
	v.type = 0xFFFFFFFF;
	assert_int_equal(f->prod.publish(head(1), v), -KNIT_EINVAL);
	assert_int_equal(f->prod.publish(head(1), bytes_value(KNIT_VALUE_BYTES, nullptr, 3)),
			 -KNIT_EINVAL);
	assert_int_equal(*word_at(f->lock, kLockOffA), a);
	// NULL with len 0 is an empty payload
	roundtrip(f, bytes_value(KNIT_VALUE_STRING, nullptr, 0), &out);
	assert_int_equal(out.len, 0);
	finish(f);

	// per_call_max above the arena capacity: the arena says "never fits"
	Fix *g = make(64u << 10, 1u << 20);
	assert_non_null(g);
	static uint8_t huge[100u << 10];
	assert_int_equal(g->prod.publish(head(1), bytes_value(KNIT_VALUE_BYTES, huge, sizeof huge)),
			 -KNIT_ETOOBIG);
	assert_int_equal(g->prod.reserve(sizeof huge, nullptr), -KNIT_EINVAL);
	Reservation r{};
	assert_int_equal(g->prod.reserve(sizeof huge, &r), -KNIT_ETOOBIG);
	assert_int_equal(g->prod.reserve((1u << 20) + 1, &r), -KNIT_ETOOBIG);
	assert_int_equal(*word_at(g->lock, kLockOffA), 0);
	destroy(g);
}

// A full arena is backpressure: -KNIT_EAGAIN, nothing published or leaked,
// success after the consumer frees.
void test_arena_full_eagain(void **state)
{
	(void)state;
	Fix *f = make(64u << 10, 60u << 10);
	assert_non_null(f);
	static uint8_t a[40u << 10], b[40u << 10];
	memset(a, 'a', sizeof a);
	memset(b, 'b', sizeof b);
	assert_int_equal(f->prod.publish(head(1), bytes_value(KNIT_VALUE_BYTES, a, sizeof a)), 31);
	const uint32_t A0 = *word_at(f->lock, kLockOffA);
	const uint32_t free0 = f->prod.free_cached();
	for (int i = 0; i < 3; i++)
		assert_int_equal(
			f->prod.publish(head(2), bytes_value(KNIT_VALUE_BYTES, b, sizeof b)),
			-KNIT_EAGAIN);
	assert_int_equal(*word_at(f->lock, kLockOffA), A0); // nothing published
	assert_int_equal(f->prod.free_cached(), free0);     // no lane used up
	assert_int_equal(f->prod.staged(), 0);
	// small values still flow while the arena is full
	knit_value_t small = bytes_value(KNIT_VALUE_BYTES, b, 100);
	assert_int_equal(f->prod.publish(head(3), small), 30);
	// the consumer copies out and frees; now the big one fits
	uint32_t n = 0;
	f->cons.drain([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &v) {
		assert_int_equal(rc, 0);
		if (h.ticket == 1)
			assert_memory_equal(v.data, a, sizeof a);
		n++;
	});
	assert_int_equal(n, 2);
	int lane = f->prod.publish(head(2), bytes_value(KNIT_VALUE_BYTES, b, sizeof b));
	assert_true(lane >= 0);
	f->cons.drain([&](uint32_t, int rc, const FrameHead &, const knit_value_t &v) {
		assert_int_equal(rc, 0);
		assert_int_equal(v.len, sizeof b);
		assert_memory_equal(v.data, b, sizeof b);
	});
	assert_true(f->prod.idle());
	destroy(f);
}

// Zero-copy: the caller writes the payload in place; the consumer's view
// points at the very bytes that were reserved.
void test_zero_copy_reserve(void **state)
{
	Fix *f = (Fix *)*state;
	Reservation r{};
	assert_int_equal(f->prod.reserve(10000, &r), 0);
	assert_int_equal(r.live, 1);
	assert_int_equal(r.capacity, 10000);
	assert_int_equal(f->prod.reserve(10, &r), -KNIT_EINVAL); // still live
	for (uint32_t i = 0; i < 9000; i++)
		r.data[i] = (uint8_t)('a' + i % 26);
	uint8_t *where = r.data;
	int lane = f->prod.publish_reserved(head(5), KNIT_VALUE_STRING, 0, 9000, &r);
	assert_true(lane >= 0);
	assert_int_equal(r.live, 0);
	FrameHead h;
	knit_value_t v;
	uint32_t snap = f->cons.pending();
	assert_int_equal(f->cons.next_lane(&snap), lane);
	assert_int_equal(f->cons.decode((uint32_t)lane, &h, &v), 0);
	assert_ptr_equal(v.data, where); // no second copy
	assert_int_equal(v.type, KNIT_VALUE_STRING);
	assert_int_equal(v.len, 9000);
	assert_int_equal(((const uint8_t *)v.data)[9000], 0);
	assert_int_equal(((const uint8_t *)v.data)[8999], 'a' + 8999 % 26);
	finish(f);

	// a small payload may be published from a reservation too (arena placement)
	assert_int_equal(f->prod.reserve(16, &r), 0);
	memcpy(r.data, "result", 6);
	assert_true(f->prod.publish_reserved(head(6), KNIT_VALUE_ERROR, 42, 6, &r) >= 0);
	f->cons.drain([](uint32_t, int rc, const FrameHead &, const knit_value_t &vv) {
		assert_int_equal(rc, 0);
		assert_int_equal(vv.type, KNIT_VALUE_ERROR);
		assert_int_equal(vv.code, 42);
		assert_int_equal(vv.len, 6);
		assert_memory_equal(vv.data, "result\0", 7);
	});
	assert_true(f->prod.idle());

	// bad uses
	assert_int_equal(f->prod.reserve(100, &r), 0);
	assert_int_equal(f->prod.stage_reserved(head(1), KNIT_VALUE_I64, 0, 5, &r), -KNIT_EINVAL);
	assert_int_equal(f->prod.stage_reserved(head(1), KNIT_VALUE_BYTES, 0, 101, &r),
			 -KNIT_EINVAL);
	assert_int_equal(r.live, 1);
	// no free lane: the reservation survives, publish later
	knit_value_t iv{};
	iv.type = KNIT_VALUE_I64;
	for (int i = 0; i < 32; i++)
		assert_true(f->prod.publish(head(100 + (uint32_t)i), iv) >= 0);
	assert_int_equal(f->prod.publish_reserved(head(1), KNIT_VALUE_BYTES, 0, 100, &r),
			 -KNIT_EAGAIN);
	assert_int_equal(r.live, 1);
	f->cons.drain([](uint32_t, int rc, const FrameHead &, const knit_value_t &) {
		assert_int_equal(rc, 0);
	});
	memset(r.data, 0x5A, 100);
	assert_true(f->prod.publish_reserved(head(1), KNIT_VALUE_BYTES, 0, 100, &r) >= 0);
	f->cons.drain([](uint32_t, int rc, const FrameHead &, const knit_value_t &vv) {
		assert_int_equal(rc, 0);
		assert_int_equal(vv.len, 100);
		assert_int_equal(((const uint8_t *)vv.data)[99], 0x5A);
	});
	// cancel gives the space back: a full-arena reservation works afterwards
	assert_int_equal(f->prod.reserve(200000, &r), 0);
	f->prod.cancel(&r);
	assert_int_equal(r.live, 0);
	f->prod.cancel(&r); // idempotent
	assert_true(f->prod.idle());
	for (int i = 0; i < 4; i++) {
		assert_int_equal(f->prod.reserve(250000, &r), 0);
		f->prod.cancel(&r);
	}
}

// Zero-copy reservations are bounded by the arena too: EAGAIN when full.
void test_zero_copy_arena_full(void **state)
{
	(void)state;
	Fix *f = make(64u << 10, 60u << 10);
	assert_non_null(f);
	Reservation r1{}, r2{};
	assert_int_equal(f->prod.reserve(40u << 10, &r1), 0);
	assert_int_equal(f->prod.reserve(40u << 10, &r2), -KNIT_EAGAIN);
	assert_int_equal(r2.live, 0);
	memset(r1.data, 1, 40u << 10);
	assert_true(f->prod.publish_reserved(head(1), KNIT_VALUE_BYTES, 0, 40u << 10, &r1) >= 0);
	f->cons.drain([](uint32_t, int rc, const FrameHead &, const knit_value_t &) {
		assert_int_equal(rc, 0);
	});
	assert_int_equal(f->prod.reserve(40u << 10, &r2), 0);
	f->prod.cancel(&r2);
	destroy(f);
}

// The decoder alone (codec.h): views point only into the given areas.
void test_codec_direct(void **state)
{
	(void)state;
	static uint8_t inline_area[kInlineBytes];
	uint32_t pa = 0, pb = 0, table[64] = {};
	alignas(64) static uint8_t arena_data[4096];
	ArenaShared as{&pa, &pb, table, arena_data, sizeof arena_data};
	TaskLine tl{};
	knit_value_t v;
	uint32_t slot;
	tl.vtype = KNIT_VALUE_STRING;
	tl.where = kWhereInline;
	tl.vlen = 3;
	memcpy(inline_area, "abc", 4);
	assert_int_equal(codec_decode(tl, inline_area, as, 0, &v, &slot), 0);
	assert_int_equal(slot, kNoArenaSlot);
	assert_ptr_equal(v.data, inline_area);
	inline_area[3] = 'x'; // NUL missing
	assert_int_equal(codec_decode(tl, inline_area, as, 0, &v, &slot), -KNIT_EPROTO);
	assert_int_equal(v.type, KNIT_VALUE_NONE);
	// arena reference to a slot that is not live
	tl.where = kWhereArena;
	tl.arena_slot = 0;
	tl.arena_off = 0;
	assert_int_equal(codec_decode(tl, inline_area, as, 0, &v, &slot), -KNIT_EPROTO);
	// make it live: PA bit 0, table {0, 64}
	pa = 1;
	table[0] = 0;
	table[1] = 64;
	memcpy(arena_data, "abc", 4);
	assert_int_equal(codec_decode(tl, inline_area, as, 0, &v, &slot), 0);
	assert_int_equal(slot, 0);
	assert_ptr_equal(v.data, arena_data);
	// a slot this consumer already holds: second reference refused
	assert_int_equal(codec_decode(tl, inline_area, as, 1u, &v, &slot), -KNIT_EPROTO);
	assert_int_equal(slot, kNoArenaSlot);
	// longer than the slot's range
	tl.vlen = 64;
	assert_int_equal(codec_decode(tl, inline_area, as, 0, &v, &slot), -KNIT_EPROTO);
	// codec_check limits
	knit_value_t c{};
	c.type = KNIT_VALUE_BYTES;
	c.len = 10;
	c.data = "0123456789";
	assert_int_equal(codec_check(c, 10), 0);
	assert_int_equal(codec_check(c, 9), -KNIT_ETOOBIG);
	c.len = 0xFFFFFFFFull;
	assert_int_equal(codec_check(c, UINT64_MAX), -KNIT_ETOOBIG);
	assert_true(codec_fits_inline(KNIT_VALUE_BYTES, 512));
	assert_false(codec_fits_inline(KNIT_VALUE_BYTES, 513));
	assert_true(codec_fits_inline(KNIT_VALUE_STRING, 511));
	assert_false(codec_fits_inline(KNIT_VALUE_STRING, 512));
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_scalars, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_payloads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arena_many_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_big_and_invalid, setup, teardown),
		cmocka_unit_test(test_arena_full_eagain),
		cmocka_unit_test_setup_teardown(test_zero_copy_reserve, setup, teardown),
		cmocka_unit_test(test_zero_copy_arena_full),
		cmocka_unit_test(test_codec_direct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
