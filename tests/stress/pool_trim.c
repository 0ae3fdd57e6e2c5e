/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/pool_trim.c - payload arenas are given back while traffic
 * keeps coming: two host threads make round trips with large payloads (a
 * task echoes its argument, and another builds its result in knit_ctx_alloc
 * memory) separated by random pauses around park_ms (5 ms), so lanes go idle
 * and trim their arenas between, and racing with, calls on other lanes and
 * in the other direction. A trim that released a page still in use would
 * hand a task or a host zeros: every byte of every argument and result is
 * checked. Lanes and steal topologies. At the end arena_trims must have
 * counted give-backs (else the test did not test anything) and the pool's
 * own arena_committed_bytes must fall back to its floor once idle.
 * Exit 0 pass, 1 fail.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knitting.h"
#include "stress/stress.h"

#define PARK_MS 5
#define MAXLEN (192 * 1024)

static uint8_t pat(uint64_t seed, size_t i) { return (uint8_t)(seed * 131 + i * 7 + (i >> 9)); }

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

/* arg: BYTES whose first 8 bytes are the seed; result: BYTES of the same
 * length built in knit_ctx_alloc memory from the seed, after checking the
 * argument (a task that sees zeros fails the call). */
static int t_build(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	uint64_t seed;
	const uint8_t *a = arg->data;

	if (arg->type != KNIT_VALUE_BYTES || arg->len < 8)
		return 2;
	memcpy(&seed, a, 8);
	for (size_t i = 8; i < arg->len; i++)
		if (a[i] != pat(seed, i))
			return 3;
	uint8_t *p = knit_ctx_alloc(ctx, arg->len);
	if (p == NULL)
		return 4;
	memcpy(p, &seed, 8);
	for (size_t i = 8; i < arg->len; i++)
		p[i] = pat(seed + 1, i);
	ret->type = KNIT_VALUE_BYTES;
	ret->data = p;
	ret->len = arg->len;
	return 0;
}

struct host {
	knit_pool_t *pool;
	int id;
	long calls;
	uint64_t rng;
};

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *host_main(void *arg)
{
	struct host *h = arg;
	uint8_t *buf = malloc(MAXLEN);

	if (buf == NULL) {
		FAIL("malloc");
		return NULL;
	}
	for (long c = 0; c < h->calls; c++) {
		size_t len = 8 + next(&h->rng) % (MAXLEN - 8);
		uint64_t seed = ((uint64_t)h->id << 40) | (uint64_t)c;
		int build = (int)(next(&h->rng) & 1);
		knit_value_t v = {.type = KNIT_VALUE_BYTES, .data = buf, .len = len};
		knit_completion_t done;

		memcpy(buf, &seed, 8);
		for (size_t i = 8; i < len; i++)
			buf[i] = pat(seed, i);
		int rc = knit_call(h->pool, build ? 0 : 1, &v, &done, 30LL * 1000000000);
		if (rc != 0) {
			FAIL("host %d call %ld: knit_call %d", h->id, c, rc);
			break;
		}
		if (done.status != 0 || done.result.type != KNIT_VALUE_BYTES ||
		    done.result.len != len) {
			FAIL("host %d call %ld: status %d type %u len %llu (want %zu)", h->id, c,
			     done.status, done.result.type, (unsigned long long)done.result.len,
			     len);
		} else {
			const uint8_t *r = done.result.data;
			uint64_t got;
			memcpy(&got, r, 8);
			CHECK(got == seed, "host %d call %ld: seed", h->id, c);
			for (size_t i = 8; i < len; i++)
				if (r[i] != pat(build ? seed + 1 : seed, i)) {
					FAIL("host %d call %ld: byte %zu of %zu is %u", h->id, c, i,
					     len, r[i]);
					break;
				}
		}
		knit_completion_release(h->pool, &done);
		/* 0..2*park_ms: about half the pauses let the lanes go idle. */
		usleep((useconds_t)(next(&h->rng) % (2 * PARK_MS * 1000)));
	}
	free(buf);
	return NULL;
}

static void run(uint32_t topology, long calls)
{
	knit_task_t tasks[] = {{.name = "build", .fn = t_build}, {.name = "echo", .fn = t_echo}};
	knit_pool_options_t o;
	knit_pool_t *pool;
	knit_pool_stats_t st;
	struct host hosts[2];
	pthread_t th[2];

	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 2;
	o.topology = topology;
	o.park_ms = PARK_MS;
	o.payload_max_bytes = 2 * 1024 * 1024; /* per-call cap 256 KiB */
	if (knit_pool_create(&o, tasks, 2, &pool) != 0) {
		FAIL("knit_pool_create");
		return;
	}
	for (int i = 0; i < 2; i++) {
		hosts[i] = (struct host){.pool = pool,
					 .id = i,
					 .calls = calls,
					 .rng = 0x9E3779B97F4A7C15ull *
						(uint64_t)(i + 1 + topology * 7)};
		pthread_create(&th[i], NULL, host_main, &hosts[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);

	/* Idle: poll (dispatcher passes) until everything is back at the floor
	 * (0: no payload_initial_bytes). Bounded: 30 s. */
	memset(&st, 0, sizeof st);
	st.size = sizeof st;
	uint64_t trims = 0;
	int64_t end = now_ns() + 30LL * 1000000000;
	do {
		knit_completion_t c;
		CHECK(knit_complete(pool, &c, 1, 0) == 0, "a completion out of nowhere");
		CHECK(knit_pool_stats(pool, &st, sizeof st) == 0, "stats");
		trims = 0;
		for (uint32_t i = 0; i < st.lanes; i++)
			trims += st.lane[i].arena_trims;
		if (st.arena_committed_bytes <= (uint64_t)st.lanes * 2 * 4096 + 4096)
			break;
		usleep(2000);
	} while (now_ns() < end);
	printf("topology %u: %ld calls x 2 hosts, %llu arena trims, %llu bytes committed after "
	       "idle\n",
	       topology, calls, (unsigned long long)trims,
	       (unsigned long long)st.arena_committed_bytes);
	CHECK(trims > 0, "no arena was ever trimmed: the test exercised nothing");
	CHECK(st.arena_committed_bytes <= (uint64_t)st.lanes * 2 * 4096 + 4096,
	      "arena_committed_bytes %llu after idle",
	      (unsigned long long)st.arena_committed_bytes);
	CHECK(knit_pool_destroy(pool) == 0, "destroy");
}

int main(void)
{
	long calls = 400 / STRESS_SAN_DIV(4, 2);

	run(KNIT_TOPOLOGY_LANES, calls);
	run(KNIT_TOPOLOGY_STEAL, calls);
	int f = atomic_load(&failures);
	printf("%s: %d failure(s)\n", f ? "FAIL" : "ok", f);
	return f ? 1 : 0;
}
