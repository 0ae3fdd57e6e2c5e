// SPDX-License-Identifier: MIT
// tests/unit/test_timing.cpp - the per-call timing's words and clock
// (src/info.h, src/tick.h): a timed response's packed deadline word
// round-trips for every start the host's span allows (a start read a little
// before the enqueue included), and says "read the side words" exactly when
// it cannot tell; the host's clamp keeps whatever a worker says inside the
// span it saw; tick_ns never makes two adjoining spans longer than their
// union, and measures a sleep as at least what it slept.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/info.h"
#include "src/tick.h"

using namespace knit::detail;

namespace {

void test_pack_round_trip(void **)
{
	const int64_t enqs[] = {1, 1000, 0xFFFFFFF0ll, 0x100000000ll - 3, 0x7FFFFFF012345678ll};
	const int64_t offs[] = {-100, -1, 0, 1, 77, 0x7FFFFFFFll - 1000, 0xFFFFll};
	const int64_t runs[] = {0, 1, 5000, 0xFFFFFFFEll};
	for (int64_t enq : enqs)
		for (int64_t off : offs)
			for (int64_t run : runs) {
				const int64_t start = enq + off, end = start + run;
				const int64_t now = end > enq + 10 ? end + 10 : enq + 10;
				int64_t s = -1, e = -1;
				const bool ok =
					timing_unpack(timing_pack(start, end), enq, now, &s, &e);
				if (now - enq >= kPackedSpan) {
					assert_false(ok); // the span is too long to tell
					continue;
				}
				assert_true(ok);
				assert_int_equal(s, start);
				assert_int_equal(e, end);
			}
}

void test_pack_cannot_tell(void **)
{
	int64_t s, e;
	// A run of 2^32 ticks or more saturates: the side words tell.
	assert_false(timing_unpack(timing_pack(10, 10 + 0x100000000ll), 5, 20, &s, &e));
	// A span of kPackedSpan ticks: the low half is ambiguous.
	assert_false(timing_unpack(timing_pack(10, 20), 5, 5 + kPackedSpan, &s, &e));
	assert_true(timing_unpack(timing_pack(10, 20), 5, 4 + kPackedSpan, &s, &e));
	// An end before the start packs as a run of 0.
	assert_true(timing_unpack(timing_pack(50, 40), 5, 100, &s, &e));
	assert_int_equal(s, 50);
	assert_int_equal(e, 50);
}

// A note left by an earlier use of the record (its generation 1, a death
// told): the reap writes it whole for the call's use (generation 2).
CallNote note_before()
{
	CallNote n;
	memset(&n, 0, sizeof n);
	n.gen = 1;
	n.flags = KNIT_INFO_LANE | KNIT_INFO_DEATH;
	n.wait = 77;
	return n;
}

Call call_of_gen(uint32_t gen)
{
	Call c;
	memset(&c, 0, sizeof c);
	c.gen = gen;
	return c;
}

void test_clamp(void **)
{
	const int64_t enq = 1000, now = 2000;
	struct {
		int64_t start, end, wait, run;
	} cases[] = {
		{1100, 1500, 100, 400}, // honest
		{900, 1500, 0, 500},    // started "before" the enqueue
		{1100, 2500, 100, 900}, // ended "after" the reap
		{2500, 2600, 1000, 0},  // started after the reap
		{1500, 1200, 500, 0},   // ended before it started
		{0, INT64_MAX, 0, 1000},
	};
	const Call c = call_of_gen(2);
	for (const auto &k : cases) {
		CallNote n = note_before();
		info_ran_locked(&n, &c, 3, 42, enq, k.start, k.end, -1, now);
		assert_int_equal(n.gen, 2);
		assert_int_equal(n.flags, KNIT_INFO_LANE | KNIT_INFO_TIMING);
		assert_int_equal(n.lane, 3);
		assert_int_equal(n.pid, 42);
		assert_int_equal(n.wait, k.wait);
		assert_int_equal(n.run, k.run);
		assert_true(n.wait >= 0 && n.run >= 0 && n.wait + n.run <= now - enq);
	}
	// Not told: the lane only.
	CallNote n = note_before();
	info_ran_locked(&n, &c, 1, 0, enq, -1, 0, -1, now);
	assert_int_equal(n.gen, 2);
	assert_int_equal(n.flags, KNIT_INFO_LANE);
	// CPU time: flagged when measured.
	n = note_before();
	info_ran_locked(&n, &c, 1, 0, enq, 1100, 1200, 7, now);
	assert_int_equal(n.flags, KNIT_INFO_LANE | KNIT_INFO_TIMING | KNIT_INFO_CPU);
	assert_int_equal(n.cpu_ns, 7);
}

// The reap's packed path (info_ran_packed_locked keeps the words in the
// record, timing_packed_decode turns them into a wait and a run at the
// lookup) gives what the general one (timing_unpack, then
// info_ran_locked) writes, for every word it takes, honest or not, and
// refuses the words that path reads the side words for.
void test_packed_as_general(void **)
{
	const int64_t enqs[] = {1000, ((int64_t)1 << 32) - 10, ((int64_t)1 << 40) + 3};
	const int64_t offs[] = {-300, -1, 0, 1, 50, 400, 999, 1000, 1001, 5000};
	const int64_t runs[] = {0, 1, 100, 999, 1000, 100000, (int64_t)kRunSaturated - 1};
	const int64_t spans[] = {1000, kPackedSpan - 1};
	int compared = 0;
	for (int64_t enq : enqs)
		for (int64_t span : spans)
			for (int64_t off : offs)
				for (int64_t run : runs) {
					const int64_t now = enq + span;
					const uint64_t w = timing_pack(enq + off, enq + off + run);
					Call c = call_of_gen(5);
					CallNote a = note_before();
					int64_t s = 0, e = 0;
					assert_true(timing_unpack(w, enq, now, &s, &e));
					info_ran_locked(&a, &c, 2, 9, enq, s, e, -1, now);
					assert_true(info_ran_packed_locked(&c, 2, 9, enq, w, now));
					assert_int_equal(c.ran_packed, 1);
					assert_int_equal(c.ran.lane, 2);
					assert_int_equal(c.ran.pid, 9);
					assert_int_equal(c.ran.span, span);
					int64_t wait = -1, ran = -1;
					timing_packed_decode(c.ran.word, c.ran.span, &wait, &ran);
					assert_int_equal(wait, a.wait);
					assert_int_equal(ran, a.run);
					compared++;
				}
	assert_int_equal(compared, 3 * 2 * 10 * 7);
	// Any word, a hostile worker's: a wait and a run inside the span.
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		const int64_t span = (int64_t)(x % (uint64_t)kPackedSpan);
		int64_t wait = -1, ran = -1;
		timing_packed_decode(x, span, &wait, &ran);
		assert_true(wait >= 0 && ran >= 0 && wait + ran <= span);
	}
	// A span the low half cannot tell, and a saturated run: refused,
	// the record untouched.
	Call c = call_of_gen(5);
	assert_false(info_ran_packed_locked(&c, 2, 9, 1000, timing_pack(1100, 1200),
					    1000 + kPackedSpan));
	assert_false(info_ran_packed_locked(
		&c, 2, 9, 1000, timing_pack(1100, 1100 + (int64_t)kRunSaturated), 5000));
	assert_int_equal(c.ran_packed, 0);
	assert_int_equal(c.ran.span, 0);
}

void test_tick_ns(void **)
{
	tick_init();
	assert_int_equal(tick_ns(0), 0);
	assert_int_equal(tick_ns(-5), 0);
	const int64_t t0 = tick_now();
	struct timespec ts = {0, 3000000};
	nanosleep(&ts, nullptr);
	const int64_t t1 = tick_now();
	assert_true(t1 > t0);
	// A 3 ms sleep reads as at least 3 ms, less the calibration's error
	// (well under 1%); no upper bound: a loaded machine sleeps longer.
	assert_true(tick_ns(t1 - t0) >= 2970000);
	// Adjoining spans: the parts' ns never add up to more than the whole's.
	for (int64_t a = 1; a < 100000; a = a * 3 + 1)
		for (int64_t b = 1; b < 100000; b = b * 7 + 3)
			assert_true(tick_ns(a) + tick_ns(b) <= tick_ns(a + b));
	// Monotone in the span.
	int64_t prev = 0;
	for (int64_t k = 1; k < 1 << 20; k += 4093) {
		const int64_t v = tick_ns(k);
		assert_true(v >= prev);
		prev = v;
	}
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_round_trip), cmocka_unit_test(test_pack_cannot_tell),
		cmocka_unit_test(test_clamp),           cmocka_unit_test(test_packed_as_general),
		cmocka_unit_test(test_tick_ns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
