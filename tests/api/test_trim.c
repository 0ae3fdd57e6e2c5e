/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_trim.c - payload arenas give their memory back once a lane
 * is idle. A burst of 8 MiB round trips commits shared memory (RssShmem of
 * this process grows by at least the payload); after the burst, with the
 * host polling (each poll is a dispatcher pass) and the workers parked, the
 * shared RSS must come back to near where it started, arena_trims must have
 * counted it and arena_committed_bytes must say so. Lanes and steal topology.
 * Counts only: the wait for the give-back is bounded (a hang guard), never
 * timed.
 */
#include <stdlib.h>

#include "api/kt.h"

#define MIB (1024L * 1024L)
#define PAYLOAD (8 * MIB)
#define BURST 7
#define PARK_MS 20u

/* Resident shared memory of this process in bytes (the pool's region is an
 * anonymous shared mapping: its committed pages count here), or -1. */
static long rss_shmem(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "RssShmem: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static uint64_t total_trims(const knit_pool_stats_t *s)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->lanes; i++)
		n += s->lane[i].arena_trims;
	return n;
}

static void burst_then_idle(uint32_t topology)
{
	knit_pool_options_t o;
	kt_opts(&o, 2);
	o.topology = topology;
	o.park_ms = PARK_MS; /* idle = parked this long: keeps the test short */
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	knit_completion_t c;
	knit_pool_stats_t s;

	cr_assert_eq(
		knit_call(pool, echo, &(knit_value_t){.type = KNIT_VALUE_I64, .i64 = 1}, &c, -1),
		0);
	cr_assert_eq(c.status, 0);
	knit_completion_release(pool, &c);
	kt_stats(pool, &s);
	cr_expect_eq(s.topology, topology);
	const uint64_t trims0 = total_trims(&s);
	const uint64_t committed0 = s.arena_committed_bytes;
	const long base = rss_shmem();
	cr_assert_geq(base, 0, "no RssShmem in /proc/self/status");

	/* The measurement must see the arenas: sampled right after each call
	 * returns, while the argument still sits in the request arena (the host
	 * trims it only at a pass after park_ms without a call in flight), the
	 * highest sample holds at least one payload. A sample taken only after
	 * the whole burst could miss it on a loaded machine: a lane idle for
	 * park_ms between two calls may already have given its pages back. */
	uint8_t *buf = kt_pattern(PAYLOAD);
	long peak = -1;
	uint64_t committed_peak = 0;
	for (int i = 0; i < BURST; i++) {
		knit_value_t arg = kt_bytes(buf, PAYLOAD);
		cr_assert_eq(knit_call(pool, echo, &arg, &c, -1), 0);
		const long r = rss_shmem();
		kt_stats(pool, &s);
		if (r > peak)
			peak = r;
		if (s.arena_committed_bytes > committed_peak)
			committed_peak = s.arena_committed_bytes;
		cr_assert_eq(c.status, 0, "call %d: status %d", i, c.status);
		cr_assert_eq(c.result.len, (uint64_t)PAYLOAD);
		cr_assert(kt_is_pattern(c.result.data, PAYLOAD));
		knit_completion_release(pool, &c);
	}
	free(buf);
	cr_assert_geq(peak, base + PAYLOAD, "shared RSS %ld -> at most %ld during the burst", base,
		      peak);
	cr_assert_geq(committed_peak, committed0 + (uint64_t)PAYLOAD,
		      "arena_committed_bytes at most %llu during the burst",
		      (unsigned long long)committed_peak);

	/* Idle: the host only polls (a dispatcher pass each), the workers park
	 * and their watchdog expires. Bounded by KT_BOUND_S. */
	long now_rss = peak;
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	while (kt_now_ns() < end) {
		cr_assert_eq(knit_complete(pool, &c, 1, 0), 0);
		now_rss = rss_shmem();
		kt_stats(pool, &s);
		if (now_rss <= base + MIB && s.arena_committed_bytes <= committed0 + MIB)
			break;
		kt_sleep_ms(10);
	}
	cr_expect_leq(now_rss, base + MIB,
		      "shared RSS %ld -> %ld after the burst -> %ld after idle", base, peak,
		      now_rss);
	cr_expect_leq(s.arena_committed_bytes, committed0 + MIB,
		      "arena_committed_bytes %llu -> %llu", (unsigned long long)committed0,
		      (unsigned long long)s.arena_committed_bytes);
	cr_expect_gt(total_trims(&s), trims0, "arena_trims did not count the give-back");

	/* The pool still serves large payloads after giving the pages back. */
	buf = kt_pattern(PAYLOAD);
	knit_value_t arg = kt_bytes(buf, PAYLOAD);
	cr_assert_eq(knit_call(pool, echo, &arg, &c, -1), 0);
	cr_assert_eq(c.status, 0);
	cr_assert(kt_is_pattern(c.result.data, PAYLOAD));
	knit_completion_release(pool, &c);
	free(buf);
	/* Not kt_destroy: the short park_ms makes watchdog expiries expected. */
	cr_assert_eq(knit_pool_destroy(pool), 0);
}

KT(trim, lanes_give_back_after_idle) { burst_then_idle(KNIT_TOPOLOGY_LANES); }

KT(trim, steal_give_back_after_idle) { burst_then_idle(KNIT_TOPOLOGY_STEAL); }

KT(trim, idle_pool_keeps_initial_commit)
{
	/* payload_initial_bytes is a floor: trimming never goes below it. */
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.park_ms = PARK_MS;
	o.payload_initial_bytes = 2 * MIB;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t echo = kt_id(pool, "echo");
	knit_completion_t c;
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	/* One lane: request and return arena, 2 MiB each, committed at creation. */
	cr_expect_eq(s.arena_committed_bytes, 4 * (uint64_t)MIB);
	uint8_t *buf = kt_pattern(PAYLOAD);
	knit_value_t arg = kt_bytes(buf, PAYLOAD);
	cr_assert_eq(knit_call(pool, echo, &arg, &c, -1), 0);
	cr_assert_eq(c.status, 0);
	knit_completion_release(pool, &c);
	free(buf);
	const int64_t end = kt_now_ns() + (int64_t)(KT_BOUND_S * 1e9);
	do {
		cr_assert_eq(knit_complete(pool, &c, 1, 0), 0);
		kt_stats(pool, &s);
		if (s.lane[0].arena_trims >= 2)
			break;
		kt_sleep_ms(10);
	} while (kt_now_ns() < end);
	cr_expect_geq(s.lane[0].arena_trims, 2, "both arenas trimmed (%llu)",
		      (unsigned long long)s.lane[0].arena_trims);
	cr_expect_eq(s.arena_committed_bytes, 4 * (uint64_t)MIB);
	cr_assert_eq(knit_pool_destroy(pool), 0);
}
