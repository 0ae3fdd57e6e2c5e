// SPDX-License-Identifier: MIT
// tests/unit/test_steal.cpp - the work-stealing claim protocol, white box
// (src/steal.h): the region rule and its clamp, one claim step by step (2
// consumers, 4 regions of 8 lanes, two calls in one region), the producer's
// free set with stale ACK words, a junior that never contends with a
// senior's announced intent, a senior that waits for a junior and then takes
// only what the junior left, a consumer that announces WANT and dies (DEAD
// set) blocking nobody, the lanes it took and never acknowledged taken over
// by a survivor, a claimant dying after its claim (its recorded claim
// retired by the host's reap, never decoded again) and forged claim
// records ignored, claims of one call (the pool's setting) taken oldest first
// across regions and lane reuse, and exactly-once delivery for 2 and 3
// consumers (and 2 with no spare region) under many thread-driven
// interleavings.
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <vector>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "src/layout.h"
#include "src/lock2.h"
#include "src/region.h"
#include "src/steal.h"

using namespace knit::detail;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SAN_DIV 8
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SAN_DIV 8
#endif
#endif
#ifndef SAN_DIV
#define SAN_DIV 1
#endif

namespace {

constexpr uint64_t kCap = 1u << 20;
constexpr uint64_t kLockOff = kStealLockOff; // the control block: a host page and 31 consumer pages

struct Fix {
	Region region;
	uint8_t *ctl;
	uint8_t *lock;
	ArenaShared arena;
	LockProducer prod;
	StealConsumer cons[kMaxStealConsumers];
	ConsumerLimits limits;
	uint32_t n;
};

int setup(void **state)
{
	Fix *f = new Fix();
	int rc = region_create(RegionKind::kAnonymous, kLockOff + lock_region_bytes(kCap),
			       "test_steal", &f->region);
	if (rc != 0)
		return -1;
	f->ctl = f->region.base;
	f->lock = f->region.base + kLockOff;
	f->arena = lock_arena_shared(f->lock, f->lock + lock_arena_offset(), kCap);
	f->limits = ConsumerLimits{1000, 1u << 30, 0xFFFFu};
	f->n = 0;
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

// Attach the producer and n consumers with region width g.
void attach(Fix *f, uint32_t n, uint32_t g)
{
	f->n = n;
	assert_int_equal(f->prod.attach_steal(f->lock, f->arena, kCap / 8, f->ctl, n), 0);
	for (uint32_t c = 0; c < n; c++)
		assert_int_equal(f->cons[c].attach(f->lock, f->arena, f->limits, f->ctl, n, c, g),
				 0);
}

// Shared words read while consumer threads may write them: atomic loads.
uint32_t load(uint32_t *w) { return __atomic_load_n(w, __ATOMIC_ACQUIRE); }
uint32_t A(Fix *f) { return load(word_at(f->lock, kLockOffA)); }
uint32_t ACK(Fix *f, uint32_t c) { return load(word_at(f->ctl, steal_ack_offset(c))); }
uint32_t WANT(Fix *f, uint32_t c) { return load(word_at(f->ctl, steal_want_offset(c))); }
uint32_t ack_xor(Fix *f)
{
	uint32_t x = 0;
	for (uint32_t c = 0; c < f->n; c++)
		x ^= ACK(f, c);
	return x;
}

FrameHead head_for(uint32_t seq)
{
	FrameHead h;
	memset(&h, 0, sizeof h);
	h.task = 1;
	h.ticket = seq;
	h.generation = seq * 7 + 1;
	return h;
}

int publish_i64(Fix *f, uint32_t seq)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_I64;
	v.i64 = (int64_t)seq * 3;
	return f->prod.publish(head_for(seq), v);
}

// Claim with consumer c and record the tickets seen; returns the take.
uint32_t claim_into(Fix *f, uint32_t c, std::vector<uint32_t> *seen)
{
	return f->cons[c].claim([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &v) {
		assert_int_equal(rc, 0);
		assert_int_equal(v.i64, (int64_t)h.ticket * 3);
		seen->push_back(h.ticket);
	});
}

// ---- the rule ------------------------------------------------------------------------

void test_region_rule(void **)
{
	const uint32_t want[][2] = {{1, 16}, {2, 8},  {3, 8},  {4, 4},  {7, 4}, {8, 2},
				    {15, 2}, {16, 1}, {31, 1}, {32, 0}, {0, 0}};
	for (const auto &w : want)
		assert_int_equal(steal_max_region_lanes(w[0]), w[1]);
	uint32_t g = 99;
	assert_int_equal(steal_resolve_region_lanes(2, 0, &g), 0);
	assert_int_equal(g, 8);
	assert_int_equal(steal_resolve_region_lanes(2, 4, &g), 0);
	assert_int_equal(g, 4);
	assert_int_equal(steal_resolve_region_lanes(2, 16, &g), 0); // clamped
	assert_int_equal(g, 8);
	assert_int_equal(steal_resolve_region_lanes(4, 64, &g), 0); // clamped
	assert_int_equal(g, 4);
	assert_int_equal(steal_resolve_region_lanes(31, 2, &g), 0);
	assert_int_equal(g, 1);
	assert_int_equal(steal_resolve_region_lanes(2, 3, &g), -KNIT_EINVAL);
	assert_int_equal(steal_resolve_region_lanes(2, 12, &g), -KNIT_EINVAL);
	assert_int_equal(steal_resolve_region_lanes(32, 0, &g), -KNIT_EINVAL);
	assert_int_equal(steal_resolve_region_lanes(0, 0, &g), -KNIT_EINVAL);
}

void test_attach_errors(void **state)
{
	Fix *f = (Fix *)*state;
	StealConsumer c;
	assert_int_equal(c.attach(f->lock, f->arena, f->limits, f->ctl, 2, 2, 8),
			 -KNIT_EINVAL); // id
	assert_int_equal(c.attach(f->lock, f->arena, f->limits, f->ctl, 2, 0, 6),
			 -KNIT_EINVAL); // g
	assert_int_equal(c.attach(f->lock, f->arena, f->limits, f->ctl, 5, 0, 8),
			 -KNIT_EINVAL); // 4 regions
	assert_int_equal(c.attach(f->lock, f->arena, f->limits, f->ctl, 32, 0, 1), -KNIT_EINVAL);
	assert_int_equal(c.attach(f->lock, f->arena, f->limits, nullptr, 2, 0, 8), -KNIT_EINVAL);
	assert_int_equal(c.claim_begin(), 0u); // not attached: nothing
	LockProducer p;
	assert_int_equal(p.attach_steal(f->lock, f->arena, kCap / 8, f->ctl, 0), -KNIT_EINVAL);
	assert_int_equal(p.attach_steal(f->lock, f->arena, kCap / 8, f->ctl, 32), -KNIT_EINVAL);
	assert_int_equal(c.attach(f->lock, f->arena, f->limits, f->ctl, 2, 1, 16),
			 0); // no spare: allowed
}

// ---- one claim, step by step ---------------------------------------------------------------

void test_claim_example(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 2, 8);
	assert_int_equal(publish_i64(f, 1), 31);
	assert_int_equal(publish_i64(f, 2), 30);
	assert_int_equal(A(f), 0xC0000000u);
	assert_int_equal(f->cons[0].pending(), 0xC0000000u);
	std::vector<uint32_t> seen;
	// C1 claims region 3 (the oldest lane's): take both lanes, one ACK.
	assert_int_equal(claim_into(f, 1, &seen), 0xC0000000u);
	assert_int_equal(seen.size(), 2u);
	assert_int_equal(seen[0], 1u); // oldest first: lane 31 = seq 1
	assert_int_equal(seen[1], 2u);
	assert_int_equal(ACK(f, 1), 0xC0000000u);
	assert_int_equal(ACK(f, 0), 0u);
	assert_int_equal(WANT(f, 1), 0u); // released after the ACK
	assert_int_equal(f->cons[1].claims(), 1u);
	assert_int_equal(f->cons[0].pending(), 0u);
	assert_int_equal(claim_into(f, 0, &seen), 0u); // nothing left
	// The producer's cached free set excludes 30, 31 until exhaustion; a
	// refresh XORs the ACK words: everything free again.
	// The ring goes on below the last lane used (a free lane at or below
	// the ring cursor, walking down).
	assert_int_equal(f->prod.refresh(), 0xFFFFFFFFu);
	assert_int_equal(publish_i64(f, 3), 29);
	assert_int_equal(A(f), 0xE0000000u);
	assert_int_equal(A(f) ^ ack_xor(f), 0x20000000u);
	assert_int_equal(claim_into(f, 0, &seen), 0x20000000u);
	assert_int_equal(ACK(f, 0), 0x20000000u);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
	assert_true(f->prod.idle());
}

// ---- the producer's free set with stale ACK words -----------------------------------------

void test_free_set_stale_acks(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 3, 8);
	for (uint32_t s = 0; s < 32; s++)
		assert_int_equal(publish_i64(f, s), (int)(31 - s));
	assert_int_equal(publish_i64(f, 99), -KNIT_EAGAIN); // full (fresh refresh: nothing acked)
	std::vector<uint32_t> seen;
	uint32_t t0 = claim_into(f, 0, &seen); // region 3: lane 31 is the oldest
	uint32_t t2 = claim_into(f, 2, &seen); // region 2: the oldest left
	assert_int_equal(t0, 0xFF000000u);
	assert_int_equal(t2, 0x00FF0000u);
	// Oldest first within each claim.
	assert_int_equal(seen.size(), 16u);
	for (uint32_t i = 0; i < 16; i++)
		assert_int_equal(seen[i], i);
	// Cached free set is stale (nothing free) until refreshed on exhaustion.
	assert_int_equal(f->prod.free_cached(), 0u);
	// A torn read is safe: refresh sees exactly the retired lanes free.
	assert_int_equal(f->prod.refresh(), t0 | t2);
	// Publish into a freed lane (the ring is back at lane 31), then the
	// stale ACK of consumer 0 still reads correctly: the lane is busy again
	// (A flipped, ACK unchanged).
	const int lane = publish_i64(f, 100);
	assert_int_equal(lane, 31);
	assert_int_equal(f->prod.refresh(), (t0 | t2) & ~(1u << 31));
	assert_int_equal(f->cons[1].pending(), 0x0000FFFFu | (1u << 31));
	// Everyone drains; then all free.
	while (claim_into(f, 1, &seen) != 0 || claim_into(f, 0, &seen) != 0) {
	}
	assert_int_equal(seen.size(), 33u);
	assert_int_equal(f->prod.refresh(), 0xFFFFFFFFu);
	std::vector<int> cnt(128, 0);
	for (uint32_t s : seen)
		cnt[s]++;
	for (uint32_t s = 0; s < 32; s++)
		assert_int_equal(cnt[s], 1);
	assert_int_equal(cnt[100], 1);
}

// ---- seniors and juniors ---------------------------------------------------------------

void test_junior_respects_senior_intent(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 2, 8);
	assert_int_equal(publish_i64(f, 1), 31); // region 3
	// Consumer 0 (senior) owns region 3 mid-claim.
	assert_int_equal(f->cons[0].claim_begin(), 0x80000000u);
	assert_int_equal(WANT(f, 0), 1u << 3);
	// The junior sees only a senior's region pending: no claim, no announce.
	assert_int_equal(f->cons[1].claim_begin(), 0u);
	assert_int_equal(WANT(f, 1), 0u);
	assert_int_equal(f->cons[1].conflicts(), 0u);
	// Another lane of the same region: still the senior's, still no claim.
	assert_int_equal(publish_i64(f, 2), 30);
	assert_int_equal(f->cons[1].claim_begin(), 0u);
	FrameHead h;
	knit_value_t v;
	assert_int_equal(f->cons[0].decode(31, &h, &v), 0);
	assert_int_equal(h.ticket, 1u);
	assert_int_equal(f->cons[0].decode(30, &h, &v), -KNIT_EINVAL); // not in our take
	assert_int_equal(f->cons[0].claim_end(), 0x80000000u);
	assert_int_equal(WANT(f, 0), 0u);
	std::vector<uint32_t> seen;
	assert_int_equal(claim_into(f, 1, &seen), 0x40000000u);
	assert_int_equal(seen.size(), 1u);
	assert_int_equal(seen[0], 2u);
}

struct SeniorArg {
	Fix *f;
	uint32_t c;
	std::atomic<int> done{0};
	uint32_t take = 0;
	std::vector<uint32_t> seen;
};

void *senior_thread(void *p)
{
	SeniorArg *a = (SeniorArg *)p;
	a->take = claim_into(a->f, a->c, &a->seen);
	a->done.store(1);
	return nullptr;
}

void sleep_ms(int ms)
{
	struct timespec ts = {0, (long)ms * 1000000};
	nanosleep(&ts, nullptr);
}

void test_senior_waits_for_junior(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 2, 8);
	assert_int_equal(publish_i64(f, 1), 31);
	assert_int_equal(publish_i64(f, 2), 30);
	// The junior owns region 3 (lanes 30, 31) and has not ACKed yet.
	assert_int_equal(f->cons[1].claim_begin(), 0xC0000000u);
	assert_int_equal(publish_i64(f, 3), 29); // same region, published after
	SeniorArg a;
	a.f = f;
	a.c = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, nullptr, senior_thread, &a), 0);
	// The senior announces region 3, sees the junior and must wait: it
	// cannot finish while the junior holds the region (a safety property,
	// so no timing can make this flaky).
	for (int i = 0; i < 50 && WANT(f, 0) == 0; i++)
		sleep_ms(1);
	sleep_ms(20);
	assert_int_equal(a.done.load(), 0);
	assert_int_equal(WANT(f, 0), 1u << 3);
	FrameHead h;
	knit_value_t v;
	assert_int_equal(f->cons[1].decode(30, &h, &v), 0);
	assert_int_equal(f->cons[1].decode(31, &h, &v), 0);
	assert_int_equal(f->cons[1].claim_end(), 0xC0000000u);
	pthread_join(t, nullptr);
	// Fresh loads after owning the region: only what the junior left.
	assert_int_equal(a.take, 1u << 29);
	assert_int_equal(a.seen.size(), 1u);
	assert_int_equal(a.seen[0], 3u);
	assert_int_equal(f->cons[0].conflicts(), 1u);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
}

// ---- one call per claim, oldest first --------------------------------------------------

// The pool's setting (take_max 1): every claim takes one lane, and claims
// taken one after another see the calls in publish order, across regions,
// while the producer keeps publishing and reuses lanes (the ring).
void test_one_per_claim_in_order(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 2, 8);
	f->cons[0].set_take_max(1);
	f->cons[1].set_take_max(1);
	std::vector<uint32_t> seen;
	uint32_t next = 0;
	for (uint32_t round = 0; round < 40; round++) {
		// Publish a burst (up to what is free), then take a few.
		for (uint32_t k = 0; k < 1 + round % 7; k++) {
			if (publish_i64(f, next) < 0) {
				f->prod.refresh();
				if (publish_i64(f, next) < 0)
					break;
			}
			next++;
		}
		for (uint32_t k = 0; k < 1 + round % 5; k++) {
			const uint32_t take = claim_into(f, round % 2, &seen);
			if (take == 0)
				break;
			assert_int_equal(__builtin_popcount(take), 1);
		}
	}
	uint32_t take;
	while ((take = claim_into(f, 0, &seen)) != 0)
		assert_int_equal(__builtin_popcount(take), 1);
	assert_int_equal(seen.size(), next);
	for (uint32_t i = 0; i < seen.size(); i++)
		assert_int_equal(seen[i], i);
	assert_true(next > 64); // lanes were reused
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
}

// Claims of several calls (the pool's setting for cheap calls, take_max k):
// each claim takes at most k lanes of one region, the oldest pending ones,
// and the calls, claim after claim, come out in publish order.
void test_k_per_claim_in_order(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 2, 8);
	std::vector<uint32_t> seen;
	uint32_t next = 0, several = 0;
	for (uint32_t round = 0; round < 40; round++) {
		for (uint32_t k = 0; k < 1 + round % 11; k++) {
			if (publish_i64(f, next) < 0) {
				f->prod.refresh();
				if (publish_i64(f, next) < 0)
					break;
			}
			next++;
		}
		for (uint32_t k = 0; k < 1 + round % 3; k++) {
			const uint32_t kmax = 1 + (round + k) % 5;
			f->cons[round % 2].set_take_max(kmax);
			const size_t before = seen.size();
			const uint32_t take = claim_into(f, round % 2, &seen);
			if (take == 0)
				break;
			assert_true((uint32_t)__builtin_popcount(take) <= kmax);
			assert_int_equal(seen.size() - before, (size_t)__builtin_popcount(take));
			// One region: every lane of the take in the same 8.
			assert_int_equal(take & ~(0xFFu << (__builtin_ctz(take) / 8 * 8)), 0u);
			several += __builtin_popcount(take) > 1;
		}
	}
	f->cons[0].set_take_max(4);
	while (claim_into(f, 0, &seen) != 0) {
	}
	assert_int_equal(seen.size(), next);
	for (uint32_t i = 0; i < seen.size(); i++)
		assert_int_equal(seen[i], i);
	assert_true(several > 0); // some claims did take several calls
	assert_true(next > 64);   // lanes were reused
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
}

// A claim that leaves lanes behind: a peer (or the same consumer) takes the
// next one; nobody holds lanes it did not take.
void test_one_per_claim_leaves_rest_pending(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 2, 8);
	f->cons[0].set_take_max(1);
	f->cons[1].set_take_max(1);
	for (uint32_t s = 0; s < 3; s++)
		assert_int_equal(publish_i64(f, s), (int)(31 - s));
	std::vector<uint32_t> seen;
	assert_int_equal(claim_into(f, 0, &seen), 1u << 31);
	// The other two are still pending for everyone.
	assert_int_equal(f->cons[1].pending(), (1u << 30) | (1u << 29));
	assert_int_equal(claim_into(f, 1, &seen), 1u << 30);
	assert_int_equal(claim_into(f, 1, &seen), 1u << 29);
	assert_int_equal(seen.size(), 3u);
	assert_int_equal(seen[0], 0u);
	assert_int_equal(seen[1], 1u);
	assert_int_equal(seen[2], 2u);
}

// ---- dead consumers ----------------------------------------------------------------------

void test_dead_senior_blocks_nobody(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 3, 8);
	assert_int_equal(publish_i64(f, 1), 31);
	assert_int_equal(publish_i64(f, 2), 30);
	// Consumer 0 claims region 3, decodes lane 31 (its arena-free inline
	// frame), and dies before its ACK: WANT stays set, lanes un-ACKed.
	assert_int_equal(f->cons[0].claim_begin(), 0xC0000000u);
	FrameHead h;
	knit_value_t v;
	assert_int_equal(f->cons[0].decode(31, &h, &v), 0);
	// While it is alive its intent keeps juniors out of region 3.
	assert_int_equal(f->cons[1].claim_begin(), 0u);
	assert_int_equal(f->cons[2].claim_begin(), 0u);
	// The host declares it dead: survivors ignore its WANT, and the lanes
	// it took but never ACKed are still pending, so a survivor takes them
	// (the dead one never ran them: a consumer runs frames after its ACK).
	steal_mark_dead(f->ctl, 0);
	assert_int_equal(load(word_at(f->ctl, kStealOffDead)), 1u);
	std::vector<uint32_t> seen;
	assert_int_equal(claim_into(f, 1, &seen), 0xC0000000u);
	assert_int_equal(seen.size(), 2u);
	assert_int_equal(WANT(f, 0), 1u << 3); // its word is never written by others
	// Nothing is lost: the producer sees every lane free again (the dead
	// consumer's ACK word stays in the XOR, unchanged).
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
	assert_int_equal(f->prod.refresh(), 0xFFFFFFFFu);
	// And the pool goes on without it.
	for (uint32_t s = 10; s < 60; s++) {
		int lane = publish_i64(f, s);
		if (lane < 0) {
			f->prod.refresh();
			lane = publish_i64(f, s);
		}
		assert_true(lane >= 0);
		if (s % 5 == 0)
			while (claim_into(f, 1 + s % 2, &seen) != 0) {
			}
	}
	while (claim_into(f, 2, &seen) != 0 || claim_into(f, 1, &seen) != 0) {
	}
	assert_int_equal(seen.size(), 52u);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
}

void test_dead_junior_releases_waiting_senior(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 3, 8);
	assert_int_equal(publish_i64(f, 1), 31);
	// Junior 2 claims region 3 and dies mid-claim (nothing decoded).
	assert_int_equal(f->cons[2].claim_begin(), 0x80000000u);
	SeniorArg a;
	a.f = f;
	a.c = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, nullptr, senior_thread, &a), 0);
	for (int i = 0; i < 50 && WANT(f, 0) == 0; i++)
		sleep_ms(1);
	sleep_ms(20);
	assert_int_equal(a.done.load(), 0); // waits for the junior (bounded rounds + yield)
	steal_mark_dead(f->ctl, 2);         // the host: it exited
	pthread_join(t, nullptr);
	assert_int_equal(a.take, 0x80000000u); // took over the dead junior's lane
	assert_int_equal(a.seen.size(), 1u);
	assert_int_equal(a.seen[0], 1u);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
}

// A junior that keeps its WANT on the region a senior waits for (a worker
// process can write its WANT word at will) cannot keep the senior from a
// stop: once its stop word leaves RUNNING the senior withdraws, taking
// nothing. Before set_stop_word the senior waited until the junior let go.
void test_stop_ends_senior_wait(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 3, 8);
	uint32_t stop = kStopRunning;
	f->cons[0].set_stop_word(&stop);
	assert_int_equal(publish_i64(f, 1), 31);
	// Junior 2 owns region 3 and stays there.
	assert_int_equal(f->cons[2].claim_begin(), 0x80000000u);
	SeniorArg a;
	a.f = f;
	a.c = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, nullptr, senior_thread, &a), 0);
	for (int i = 0; i < 50 && WANT(f, 0) == 0; i++)
		sleep_ms(1);
	sleep_ms(20);
	assert_int_equal(a.done.load(), 0); // waits for the junior
	__atomic_store_n(&stop, kStopRequested, __ATOMIC_RELAXED);
	for (int i = 0; i < 2000 && a.done.load() == 0; i++)
		sleep_ms(1);
	const int gave_up = a.done.load();
	if (!gave_up)
		f->cons[2].claim_end(); // let the senior go, so the test can end
	pthread_join(t, nullptr);
	assert_int_equal(gave_up, 1);
	assert_int_equal(a.take, 0u); // withdrew, took nothing
	assert_int_equal(WANT(f, 0), 0u);
	assert_int_equal(WANT(f, 2), 0x8u); // the junior still owns region 3
	assert_int_equal(f->cons[2].claim_end(), 0x80000000u);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
}

// A process pool respawns a dead worker on the same consumer id: after the
// reap, steal_revive() clears CLAIM and WANT, keeps ACK and clears DEAD; a
// successor attached as that id starts from the dead one's ACK, so the
// lanes it retired (and the claim retired on its behalf) stay retired:
// nothing is decoded twice, and the successor claims like any consumer.
void test_revive_successor(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 3, 8);
	for (uint32_t c = 0; c < 3; c++)
		f->cons[c].set_take_max(1);
	std::vector<uint32_t> seen;
	// Consumer 1 runs one call, then claims a second and dies mid-claim.
	assert_int_equal(publish_i64(f, 1), 31);
	assert_int_equal(claim_into(f, 1, &seen), 1u << 31);
	assert_int_equal(publish_i64(f, 2), 30);
	assert_int_equal(publish_i64(f, 3), 29);
	assert_int_equal(f->cons[1].claim_begin(), 1u << 30);
	bool bad = true;
	assert_int_equal(steal_reap_dead(f->ctl, f->lock, 3, 8, 1, &bad), 1u << 30);
	assert_false(bad);
	// Its WANT is stale (it died owning region 3): DEAD makes peers skip it.
	assert_int_equal(WANT(f, 1), 0x8u);
	steal_revive(f->ctl, 1);
	assert_int_equal(load(word_at(f->ctl, kStealOffDead)), 0u);
	assert_int_equal(load(word_at(f->ctl, steal_claim_offset(1))), 0u);
	assert_int_equal(WANT(f, 1), 0u);
	assert_int_equal(ACK(f, 1), (1u << 31) | (1u << 30)); // kept: its own and the reaped one
	// The successor: the same id, a fresh endpoint.
	StealConsumer succ;
	assert_int_equal(succ.attach(f->lock, f->arena, f->limits, f->ctl, 3, 1, 8), 0);
	succ.set_take_max(1);
	assert_int_equal(succ.pending(), 1u << 29); // only call 3
	assert_int_equal(f->cons[0].pending(), 1u << 29);
	const uint32_t take =
		succ.claim([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &v) {
			assert_int_equal(rc, 0);
			assert_int_equal(v.i64, (int64_t)h.ticket * 3);
			seen.push_back(h.ticket);
		});
	assert_int_equal(take, 1u << 29);
	assert_int_equal(claim_into(f, 0, &seen), 0u);
	assert_int_equal(claim_into(f, 2, &seen), 0u);
	assert_int_equal(seen.size(), 2u); // calls 1 and 3 ran; call 2 was lost with the dead one
	assert_int_equal(seen[0], 1u);
	assert_int_equal(seen[1], 3u);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
	assert_int_equal(f->prod.refresh(), 0xFFFFFFFFu);
}

// A claimant dies after its claim: it decoded the lane (and freed its arena
// slot, as the pool's worker does before its ACK) and never acknowledged it.
// Its claim record names the lane; the host's reap retires it on its behalf
// and returns it (its call is lost, not run twice), so no survivor decodes
// it again -- with only the DEAD bit a survivor would take the lane and
// decode a frame whose arena slot is already free (or reused).
void test_dead_claimant_after_claim(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 3, 8);
	for (uint32_t c = 0; c < 3; c++)
		f->cons[c].set_take_max(1); // the pool's setting
	static uint8_t big[3000];
	memset(big, 0xAB, sizeof big);
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_BYTES;
	v.data = big;
	v.len = sizeof big;
	assert_int_equal(f->prod.publish(head_for(1), v), 31); // arena payload
	assert_int_equal(publish_i64(f, 2), 30);
	const uint32_t pa0 =
		load(word_at(f->lock, kLockOffPA)) ^ load(word_at(f->lock, kLockOffPB));
	assert_int_not_equal(pa0, 0u); // one arena slot live
	// Consumer 1 claims lane 31: the record is there before any decode.
	assert_int_equal(f->cons[1].claim_begin(), 1u << 31);
	assert_int_equal(load(word_at(f->ctl, steal_claim_offset(1))), 1u << 31);
	assert_int_equal(ACK(f, 1), 0u); // ACK itself unchanged
	FrameHead h;
	knit_value_t view;
	assert_int_equal(f->cons[1].decode(31, &h, &view), 0);
	assert_int_equal(view.len, sizeof big);
	f->cons[1].release(31); // arena slot freed
	assert_int_equal(load(word_at(f->lock, kLockOffPA)) ^ load(word_at(f->lock, kLockOffPB)),
			 0u);
	// ... and dies. The host reaps it.
	bool bad = true;
	assert_int_equal(steal_reap_dead(f->ctl, f->lock, 3, 8, 1, &bad), 1u << 31);
	assert_false(bad);
	assert_int_equal(load(word_at(f->ctl, kStealOffDead)), 1u << 1);
	assert_int_equal(load(word_at(f->ctl, steal_claim_offset(1))), 0u);
	assert_int_equal(ACK(f, 1), 1u << 31); // retired on its behalf
	// Survivors see only lane 30; nobody decodes lane 31 again.
	assert_int_equal(f->cons[0].pending(), 1u << 30);
	assert_int_equal(f->cons[2].pending(), 1u << 30);
	std::vector<uint32_t> seen;
	assert_int_equal(claim_into(f, 2, &seen), 1u << 30);
	assert_int_equal(claim_into(f, 0, &seen), 0u);
	assert_int_equal(seen.size(), 1u);
	assert_int_equal(seen[0], 2u);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
	assert_int_equal(f->prod.refresh(), 0xFFFFFFFFu);
	// A second reap finds nothing (the record is cleared).
	assert_int_equal(steal_reap_dead(f->ctl, f->lock, 3, 8, 1, &bad), 0u);
	assert_false(bad);
	// A consumer that dies between claims (record 0) loses nothing.
	assert_int_equal(publish_i64(f, 3), 29);
	assert_int_equal(claim_into(f, 0, &seen), 1u << 29);
	assert_int_equal(steal_reap_dead(f->ctl, f->lock, 3, 8, 0, &bad), 0u);
	assert_false(bad);
	assert_int_equal(A(f) ^ ack_xor(f), 0u);
}

// The arena slot of a lost lane: a claimant that died before freeing it
// leaves it live, and the producer gives it back after the reap; one that
// freed it (and whose range the producer has since handed to another
// frame) must not be freed again.
void test_dead_claimant_arena(void **state)
{
	Fix *f = (Fix *)*state;
	attach(f, 2, 8);
	for (uint32_t c = 0; c < 2; c++)
		f->cons[c].set_take_max(1);
	static uint8_t big[3000];
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_BYTES;
	v.data = big;
	v.len = sizeof big;
	auto live = [&] {
		return load(word_at(f->lock, kLockOffPA)) ^ load(word_at(f->lock, kLockOffPB));
	};
	// 1. Dies after decoding, before freeing.
	assert_int_equal(f->prod.publish(head_for(1), v), 31);
	assert_int_equal(f->cons[1].claim_begin(), 1u << 31);
	FrameHead h;
	knit_value_t view;
	assert_int_equal(f->cons[1].decode(31, &h, &view), 0);
	assert_int_not_equal(live(), 0u);
	bool bad = true;
	const uint32_t lost = steal_reap_dead(f->ctl, f->lock, 2, 8, 1, &bad);
	assert_int_equal(lost, 1u << 31);
	f->prod.reclaim_lost(lost);
	assert_int_equal(live(), 0u); // given back
	f->prod.reclaim_lost(lost);   // twice: nothing more
	assert_int_equal(live(), 0u);
	// 2. Survivor 0 now: dies after freeing; the producer reuses the range
	// for the next frame, which a reclaim of the lost lane must not free.
	assert_int_equal(f->prod.publish(head_for(2), v), 30);
	assert_int_equal(f->cons[0].claim_begin(), 1u << 30);
	assert_int_equal(f->cons[0].decode(30, &h, &view), 0);
	f->cons[0].release(30);
	assert_int_equal(live(), 0u);
	const uint32_t lost0 = steal_reap_dead(f->ctl, f->lock, 2, 8, 0, &bad);
	assert_int_equal(lost0, 1u << 30);
	assert_false(bad);
	assert_true(f->prod.publish(head_for(3), v) >= 0); // the freed slot again
	const uint32_t now = live();
	assert_int_not_equal(now, 0u);
	f->prod.reclaim_lost(lost0);
	assert_int_equal(live(), now); // the new frame's allocation stays
}

// The claim record is worker-written memory: a forged one must never make
// the host toggle a lane the dead consumer did not own (that would retire a
// call nobody ran, or republish a retired lane). Each forgery is reported
// (bad) and ignored; the consumer is still marked dead and the real pending
// lanes stay for the survivors.
void test_reap_forged_claim(void **state)
{
	Fix *f = (Fix *)*state;
	struct Forgery {
		const char *name;
		uint32_t want, claim;
	};
	// Region width 8: regions 0..3. Lanes 31 and 30 are published (region 3).
	const Forgery forged[] = {
		{"no region announced", 0, 1u << 31},
		{"two regions announced", (1u << 3) | (1u << 2), 1u << 31},
		{"region out of range", 1u << 7, 1u << 31},
		{"lanes outside the region", 1u << 3, (1u << 31) | (1u << 5)},
		{"lane never published", 1u << 3, 1u << 29},
		{"whole word", 0xFFFFFFFFu, 0xFFFFFFFFu},
	};
	for (const Forgery &fg : forged) {
		memset(f->ctl, 0, kLockOff);
		memset(f->lock, 0, lock_arena_offset());
		f->prod = LockProducer();
		for (uint32_t c = 0; c < 3; c++)
			f->cons[c] = StealConsumer();
		attach(f, 3, 8);
		assert_int_equal(publish_i64(f, 1), 31);
		assert_int_equal(publish_i64(f, 2), 30);
		*word_at(f->ctl, steal_want_offset(1)) = fg.want;
		*word_at(f->ctl, steal_claim_offset(1)) = fg.claim;
		bool bad = false;
		const uint32_t lost = steal_reap_dead(f->ctl, f->lock, 3, 8, 1, &bad);
		if (lost != 0 || !bad)
			fail_msg("forgery '%s': lost %#x bad %d", fg.name, lost, (int)bad);
		assert_int_equal(ACK(f, 1), 0u); // nothing toggled on its behalf
		assert_int_equal(load(word_at(f->ctl, kStealOffDead)), 1u << 1);
		std::vector<uint32_t> seen;
		while (claim_into(f, 0, &seen) != 0) {
		}
		assert_int_equal(seen.size(), 2u); // both calls still delivered, once
		assert_int_equal(A(f) ^ ack_xor(f), 0u);
	}
	// Out-of-range arguments: nothing read, nothing marked.
	bool bad = false;
	assert_int_equal(steal_reap_dead(f->ctl, f->lock, 3, 8, 3, &bad), 0u);
	assert_int_equal(steal_reap_dead(f->ctl, f->lock, 3, 6, 2, &bad), 0u);
	assert_int_equal(steal_reap_dead(nullptr, f->lock, 3, 8, 2, &bad), 0u);
	assert_int_equal(load(word_at(f->ctl, kStealOffDead)) & (1u << 2), 0u);
}

// ---- exactly once under threads ----------------------------------------------------------

struct Race {
	Fix *f;
	uint32_t total;
	std::atomic<uint32_t> consumed{0};
	std::atomic<int> failed{0};
	std::vector<std::atomic<uint8_t>> seen;
	uint64_t claims[kMaxStealConsumers] = {};
	uint64_t conflicts[kMaxStealConsumers] = {};
	int64_t deadline;
	explicit Race(uint32_t n) : seen(n) {}
};

struct ConsArg {
	Race *r;
	uint32_t c;
};

int64_t now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint32_t xs(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

void *race_consumer(void *p)
{
	ConsArg *a = (ConsArg *)p;
	Race *r = a->r;
	StealConsumer &sc = r->f->cons[a->c];
	uint32_t rng = 0x9E3779B9u * (a->c + 1);
	while (r->consumed.load() < r->total && !r->failed.load()) {
		if (now_ns() > r->deadline) {
			r->failed.store(1);
			break;
		}
		uint32_t n = 0;
		sc.claim([&](uint32_t, int rc, const FrameHead &h, const knit_value_t &v) {
			bool ok = rc == 0 && h.ticket < r->total;
			if (ok && h.ticket % 7 == 0) {
				// Arena payload: check every byte.
				const uint8_t *d = (const uint8_t *)v.data;
				ok = v.type == KNIT_VALUE_BYTES && v.len == 700;
				for (uint32_t i = 0; ok && i < v.len; i++)
					ok = d[i] == (uint8_t)(h.ticket + i);
			} else if (ok) {
				ok = v.type == KNIT_VALUE_I64 && v.i64 == (int64_t)h.ticket * 3;
			}
			if (!ok || r->seen[h.ticket].fetch_add(1) != 0)
				r->failed.store(1);
			n++;
		});
		r->consumed.fetch_add(n);
		// Random interleavings: sometimes yield, sometimes pause a little.
		uint32_t k = xs(&rng) % 16;
		if (k == 0)
			sched_yield();
		else if (k < 4)
			for (uint32_t i = 0; i < (xs(&rng) % 200); i++)
				__asm__ __volatile__("" ::: "memory");
		if (n == 0)
			sched_yield();
	}
	r->claims[a->c] = sc.claims();
	r->conflicts[a->c] = sc.conflicts();
	return nullptr;
}

void race(Fix *f, uint32_t n, uint32_t g, uint32_t total, uint32_t take_max = 0)
{
	attach(f, n, g);
	for (uint32_t c = 0; c < n; c++)
		f->cons[c].set_take_max(take_max);
	Race r(total);
	r.f = f;
	r.total = total;
	r.deadline = now_ns() + 60ll * 1000000000;
	pthread_t t[kMaxStealConsumers];
	ConsArg args[kMaxStealConsumers];
	for (uint32_t c = 0; c < n; c++) {
		args[c] = ConsArg{&r, c};
		assert_int_equal(pthread_create(&t[c], nullptr, race_consumer, &args[c]), 0);
	}
	uint8_t buf[700];
	uint32_t rng = 12345;
	for (uint32_t s = 0; s < total && !r.failed.load();) {
		knit_value_t v;
		memset(&v, 0, sizeof v);
		if (s % 7 == 0) {
			for (uint32_t i = 0; i < sizeof buf; i++)
				buf[i] = (uint8_t)(s + i);
			v.type = KNIT_VALUE_BYTES;
			v.data = buf;
			v.len = sizeof buf;
		} else {
			v.type = KNIT_VALUE_I64;
			v.i64 = (int64_t)s * 3;
		}
		// Batches of 1..8 frames per store of A.
		int lane = f->prod.stage(head_for(s), v);
		if (lane == -KNIT_EAGAIN) {
			f->prod.flush();
			sched_yield();
			if (now_ns() > r.deadline)
				r.failed.store(1);
			continue;
		}
		assert_true(lane >= 0);
		s++;
		if (xs(&rng) % 8 == 0 || s == total)
			f->prod.flush();
	}
	f->prod.flush();
	for (uint32_t c = 0; c < n; c++)
		pthread_join(t[c], nullptr);
	assert_int_equal(r.failed.load(), 0);
	assert_int_equal(r.consumed.load(), total);
	for (uint32_t s = 0; s < total; s++)
		assert_int_equal(r.seen[s].load(), 1);
	assert_int_equal(A(f) ^ ack_xor(f), 0u); // every lane retired exactly once
	assert_true(f->prod.idle());
	uint64_t claims = 0, conflicts = 0;
	for (uint32_t c = 0; c < n; c++)
		claims += r.claims[c], conflicts += r.conflicts[c];
	assert_true(claims > 0);
	printf("# %u consumers, g = %u: %u frames, %llu claims, %llu conflicts\n", n, g, total,
	       (unsigned long long)claims, (unsigned long long)conflicts);
}

uint32_t race_total()
{
	uint32_t total = 100000 / SAN_DIV;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e && *e && strtod(e, nullptr) > 0)
		total = (uint32_t)(total * strtod(e, nullptr));
	return total < 500 ? 500 : total;
}

void test_exactly_once_2(void **state)
{
	race((Fix *)*state, 2, steal_max_region_lanes(2), race_total());
}
void test_exactly_once_3(void **state)
{
	race((Fix *)*state, 3, steal_max_region_lanes(3), race_total());
}
// No spare region (steal.h: the spare is for progress, not for safety).
void test_exactly_once_2_no_spare(void **state) { race((Fix *)*state, 2, 16, race_total() / 2); }
// Narrow regions: many claims per burst.
void test_exactly_once_3_g1(void **state) { race((Fix *)*state, 3, 1, race_total() / 2); }
// The pool's setting: one lane per claim, wide regions.
void test_exactly_once_3_one_per_claim(void **state)
{
	race((Fix *)*state, 3, steal_max_region_lanes(3), race_total() / 2, 1);
}

// Claims of up to 4 calls with wide regions (cheap calls).
void test_exactly_once_3_four_per_claim(void **state)
{
	race((Fix *)*state, 3, steal_max_region_lanes(3), race_total() / 2, 4);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_region_rule),
		cmocka_unit_test_setup_teardown(test_attach_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_example, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_set_stale_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_junior_respects_senior_intent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_senior_waits_for_junior, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_per_claim_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_per_claim_leaves_rest_pending, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dead_senior_blocks_nobody, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_junior_releases_waiting_senior, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dead_claimant_after_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_ends_senior_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_revive_successor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reap_forged_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_claimant_arena, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exactly_once_2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exactly_once_3, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exactly_once_2_no_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exactly_once_3_g1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exactly_once_3_one_per_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exactly_once_3_four_per_claim, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_k_per_claim_in_order, setup, teardown),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
