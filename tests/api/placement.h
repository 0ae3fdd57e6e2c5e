/* SPDX-License-Identifier: MIT */
/*
 * tests/api/placement.h - what the CPU placement tests of thread pools
 * (test_placement.c) and process pools (test_proc_placement.c) share: the
 * CPUs this process may use, and the placements knit_pool_create must
 * refuse with -KNIT_EINVAL, whatever the worker kind.
 */
#ifndef KT_PLACEMENT_H
#define KT_PLACEMENT_H

#include "api/kt.h"

#include <sched.h>
#include <stdio.h>

/* CPUs 0..63 of s, as bits. */
static inline uint64_t cpu_low_bits(const cpu_set_t *s)
{
	uint64_t bits = 0;
	for (int c = 0; c < 64; c++)
		if (CPU_ISSET(c, s))
			bits |= 1ull << c;
	return bits;
}

/* CPUs 0..63 the calling thread may use (the test's own affinity). */
static inline uint64_t allowed_bits(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	cr_assert_eq(sched_getaffinity(0, sizeof s, &s), 0);
	return cpu_low_bits(&s);
}

/* The n-th (0-based) set bit of v, or -1. */
static inline int nth_cpu(uint64_t v, int n)
{
	for (int c = 0; c < 64; c++)
		if (((v >> c) & 1) && n-- == 0)
			return c;
	return -1;
}

/* The highest CPU of a non-empty v. */
static inline int highest_cpu(uint64_t v)
{
	cr_assert_neq(v, 0);
	return 63 - __builtin_clzll(v);
}

/* The two lowest CPUs of ok, as bits; the test is skipped (and says so)
 * when ok has fewer. */
static inline uint64_t two_cpus_or_skip(uint64_t ok)
{
	if (__builtin_popcountll(ok) < 2) {
		printf("SKIP: needs two usable CPUs\n");
		fflush(stdout);
		cr_skip_test("needs two usable CPUs");
	}
	return (1ull << nth_cpu(ok, 0)) | (1ull << nth_cpu(ok, 1));
}

/* A CPU number the process may not use (not in its affinity), or -1 when
 * every one of 1024 CPUs is usable. */
static inline int unusable_cpu(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	cr_assert_eq(sched_getaffinity(0, sizeof s, &s), 0);
	for (int c = KNIT_CPU_MASK_WORDS * 64 - 1; c >= 0; c--)
		if (!CPU_ISSET(c, &s))
			return c;
	return -1;
}

/* The refused placements: `init` fills the options of a pool of n workers
 * (the test's kind), `refused` checks knit_pool_create answers -KNIT_EINVAL
 * (and whatever else a refusal must leave, e.g. no child). */
typedef void (*placement_init_fn)(knit_pool_options_t *o, uint32_t workers);
typedef void (*placement_refused_fn)(const knit_pool_options_t *o, const char *what);
static inline void placement_errors(placement_init_fn init, placement_refused_fn refused)
{
	knit_pool_options_t o;
	const int bad = unusable_cpu();
	cr_assert_neq(bad, -1, "this machine allows 1024 CPUs");
	const int good = nth_cpu(allowed_bits(), 0);

	init(&o, 1);
	o.cpu_mask[bad / 64] = 1ull << (bad % 64);
	refused(&o, "only an unusable CPU");

	init(&o, 2);
	o.cpu_mask[bad / 64] |= 1ull << (bad % 64);
	o.cpu_mask[good / 64] |= 1ull << (good % 64);
	refused(&o, "a usable and an unusable CPU");

	init(&o, 2);
	o.cpu_mask[bad / 64] |= 1ull << (bad % 64);
	o.cpu_mask[good / 64] |= 1ull << (good % 64);
	o.cpu_flags = KNIT_CPU_ONE_PER_WORKER; /* worker 0 or 1 lands on `bad` */
	refused(&o, "one per worker, one of them unusable");

	init(&o, 1);
	o.cpu_flags = KNIT_CPU_ONE_PER_WORKER;
	refused(&o, "one per worker out of an empty set");

	init(&o, 1);
	o.cpu_mask[good / 64] = 1ull << (good % 64);
	o.cpu_flags = 1u << 5;
	refused(&o, "unknown flag");

	init(&o, 1);
	o.cpu_mask[good / 64] = 1ull << (good % 64);
	o.reserved1 = 1;
	refused(&o, "reserved1");
}

#endif
