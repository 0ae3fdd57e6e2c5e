/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_map.c - knit_map from several threads at once on one
 * pool, beside plain calls.
 *
 * Three mapper threads (more than the cores of a 2-core machine, so a
 * mapper is often preempted between a chunk's send and its reap) each run
 * maps of random size (1..3000 items) and random chunk (0 = automatic, 1 =
 * one call per item, or 2..300) of "neg" (I64 -> -I64) or "blob" (I64 n ->
 * a STRING of n bytes: inline and arena sizes, each item's own bytes),
 * while a fourth thread makes knit_calls on the same pool. Pools: 2 worker
 * threads on lanes, on steal, and on lanes with an inline lane (the
 * mapping caller helps).
 *
 * Every item of every map ends in exactly one completion at its own index
 * with its own value (and bytes, released one by one); every knit_call gets
 * its own answer; afterwards the pool is quiet (no completion left behind:
 * a map reaps only its own tickets) and stats.enqueued equals
 * stats.completed.
 *
 * Size: ROUNDS maps per mapper natively, /8 under ThreadSanitizer, /4
 * under AddressSanitizer; KNIT_STRESS_SCALE multiplies them. Exit 0 pass,
 * 1 fail. Nothing is timed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knitting.h"

#include "stress/stress.h"

#define SAN_DIV STRESS_SAN_DIV(8, 4)
#define MAPPERS 3
#define ROUNDS 120
#define T_BLOB 0 /* STRESS_NEG_BLOB_TASKS: name order */
#define T_NEG 1

static knit_pool_t *pool;
static long rounds;
static atomic_int mappers_done;

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *mapper(void *arg)
{
	uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(uintptr_t)arg + 1;
	knit_value_t *args = calloc(3000, sizeof *args);
	knit_completion_t *out = calloc(3000, sizeof *out);
	if (args == NULL || out == NULL) {
		FAIL("out of memory");
		goto end;
	}
	for (long r = 0; r < rounds && atomic_load(&failures) == 0; r++) {
		const size_t n = 1 + (size_t)(rng_next(&rng) % 3000);
		const int blob = rng_next(&rng) % 4 == 0;
		const uint64_t c = rng_next(&rng) % 8;
		knit_map_options_t o;
		memset(&o, 0, sizeof o);
		o.size = sizeof o;
		o.chunk = c == 0 ? 0 : c == 1 ? 1 : 2 + (uint32_t)(rng_next(&rng) % 299);
		for (size_t i = 0; i < n; i++) {
			memset(&args[i], 0, sizeof args[i]);
			args[i].type = KNIT_VALUE_I64;
			args[i].i64 =
				blob ? 1 + (int64_t)((i * 37 + (size_t)r) % 700) : (int64_t)i + r;
			out[i].status = 12345; /* not a status a map gives */
		}
		const int rc = knit_map(pool, blob ? T_BLOB : T_NEG, args, n, out, &o);
		CHECK(rc == 0, "knit_map: %d", rc);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			const knit_completion_t *d = &out[i];
			CHECK(d->status == 0, "round %ld item %zu of %zu (chunk %u): status %d", r,
			      i, n, o.chunk, d->status);
			CHECK((uintptr_t)d->user_data == i, "item %zu: user_data %p", i,
			      d->user_data);
			if (blob) {
				const size_t len = (size_t)args[i].i64;
				CHECK(d->result.type == KNIT_VALUE_STRING && d->result.len == len,
				      "item %zu: type %u len %zu", i, d->result.type,
				      d->result.len);
				const char *b = d->result.data;
				for (size_t j = 0; b != NULL && j < d->result.len; j++)
					if (b[j] != 'x') {
						FAIL("item %zu: byte %zu is %d", i, j, b[j]);
						break;
					}
			} else {
				CHECK(d->result.type == KNIT_VALUE_I64 &&
					      d->result.i64 == -args[i].i64,
				      "item %zu: %lld", i, (long long)d->result.i64);
			}
			CHECK(knit_completion_release(pool, &out[i]) == 0, "item %zu: release", i);
		}
	}
end:
	free(args);
	free(out);
	atomic_fetch_add(&mappers_done, 1);
	return NULL;
}

static void *caller(void *arg)
{
	(void)arg;
	long calls = 0;
	while (atomic_load(&mappers_done) < MAPPERS) {
		knit_value_t v;
		memset(&v, 0, sizeof v);
		v.type = KNIT_VALUE_I64;
		v.i64 = calls;
		knit_completion_t c;
		const int rc = knit_call(pool, T_NEG, &v, &c, -1);
		CHECK(rc == 0 && c.status == 0 && c.result.i64 == -calls, "call %ld: %d %d %lld",
		      calls, rc, c.status, (long long)c.result.i64);
		knit_completion_release(pool, &c);
		calls++;
	}
	printf("  %ld knit_calls beside the maps\n", calls);
	return NULL;
}

static void run(const char *name, uint32_t topology, uint32_t inline_lane)
{
	static const knit_task_t tasks[] = STRESS_NEG_BLOB_TASKS;
	knit_pool_options_t po;
	memset(&po, 0, sizeof po);
	po.size = sizeof po;
	po.workers = 2;
	po.topology = topology;
	po.inline_lane = inline_lane;
	int rc = knit_pool_create(&po, tasks, 2, &pool);
	if (rc != 0) {
		FAIL("%s: knit_pool_create: %d (%s)", name, rc, knit_last_error());
		return;
	}
	atomic_store(&mappers_done, 0);
	pthread_t m[MAPPERS], c;
	for (int i = 0; i < MAPPERS; i++)
		pthread_create(&m[i], NULL, mapper, (void *)(uintptr_t)(i + 1));
	pthread_create(&c, NULL, caller, NULL);
	for (int i = 0; i < MAPPERS; i++)
		pthread_join(m[i], NULL);
	pthread_join(c, NULL);
	knit_completion_t left;
	rc = knit_complete(pool, &left, 1, 0);
	CHECK(rc == 0, "%s: a completion left behind (%d)", name, rc);
	knit_pool_stats_t st;
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	CHECK(knit_pool_stats(pool, &st, sizeof st) == 0, "%s: stats", name);
	CHECK(st.enqueued == st.completed && st.pending == 0,
	      "%s: enqueued %llu completed %llu pending %llu", name,
	      (unsigned long long)st.enqueued, (unsigned long long)st.completed,
	      (unsigned long long)st.pending);
	printf("%s: %d mappers x %ld maps, %llu calls; %d failures\n", name, MAPPERS, rounds,
	       (unsigned long long)st.enqueued, atomic_load(&failures));
	knit_pool_destroy(pool);
}

int main(void)
{
	double scale = 1.0 / SAN_DIV;
	const char *e = getenv("KNIT_STRESS_SCALE");
	if (e && *e && strtod(e, NULL) > 0)
		scale *= strtod(e, NULL);
	rounds = (long)(ROUNDS * scale);
	if (rounds < 10)
		rounds = 10;
	run("lanes", KNIT_TOPOLOGY_LANES, KNIT_INLINE_OFF);
	run("steal", KNIT_TOPOLOGY_STEAL, KNIT_INLINE_OFF);
	run("lanes+inline", KNIT_TOPOLOGY_LANES, KNIT_INLINE_LAST);
	return atomic_load(&failures) ? 1 : 0;
}
