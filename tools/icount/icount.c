// SPDX-License-Identifier: MIT
// tools/icount/icount.c - the driver of tools/icount/icount.sh: NB batches of
// BS no-op calls through knit_enqueue (MODE "one", the default) or one
// knit_enqueue_many per batch (MODE "many"), knit_complete and
// knit_completion_release, on a pool of WORKERS workers (environment, default
// 1) of topology TOPOLOGY (environment: auto, the default, steal or lanes).
// With "one", "many" and "timed" it waits between the enqueues and the reap,
// outside those three entries, until the workers have run the batch
// (knit_pool_stats), so that under callgrind the host's instructions per call
// in each entry do not depend on how valgrind schedules the threads; BS is
// then at most 32 (one lock's worth). MODE "free" (BS up to 1000) does not
// wait: the host enqueues the whole batch and reaps it as knit-bench's batch
// cases do, so its counts (and its instructions, which then depend on the
// schedule) include the backlog's passes and the wakes that a batch larger
// than the submit lock causes. Every mode ends with one line of counts per
// call from knit_pool_stats (backlog passes, futex wakes, parks, spins,
// steal claims and conflicts, doorbell arms) and the run's throughput
// (meaningful only outside valgrind).
#include <knitting.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int t_nop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	(void)ret;
	return 0;
}

static knit_pool_stats_t g_st;

static const knit_pool_stats_t *stats(knit_pool_t *p)
{
	memset(&g_st, 0, sizeof g_st);
	g_st.size = sizeof g_st;
	knit_pool_stats(p, &g_st, sizeof g_st);
	return &g_st;
}

static uint64_t lane_calls(knit_pool_t *p)
{
	const knit_pool_stats_t *s = stats(p);
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->lanes; i++)
		n += s->lane[i].calls;
	return n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const int nb = argc > 1 ? atoi(argv[1]) : 2000;
	const int bs = argc > 2 ? atoi(argv[2]) : 32;
	const char *mode = argc > 3 ? argv[3] : "one";
	const int many = strcmp(mode, "many") == 0;
	const int timed = strcmp(mode, "timed") == 0; // "one" with KNIT_POOL_INFO_TIMING
	const int free_run = strcmp(mode, "free") == 0;
	const char *we = getenv("WORKERS"), *te = getenv("TOPOLOGY");
	const int workers = we != NULL && *we != 0 ? atoi(we) : 1;
	const char *topo = te != NULL && *te != 0 ? te : "auto";
	const uint32_t topology = strcmp(topo, "steal") == 0   ? KNIT_TOPOLOGY_STEAL
				  : strcmp(topo, "lanes") == 0 ? KNIT_TOPOLOGY_LANES
							       : KNIT_TOPOLOGY_AUTO;
	if (nb <= 0 || bs <= 0 || bs > (free_run ? 1000 : 32) ||
	    (!many && !timed && !free_run && strcmp(mode, "one") != 0) || workers < 1 ||
	    workers > KNIT_MAX_WORKERS ||
	    (strcmp(topo, "auto") != 0 && topology == KNIT_TOPOLOGY_AUTO)) {
		fprintf(stderr, "usage: [WORKERS=n] [TOPOLOGY=auto|steal|lanes] icount [batches] "
				"[batch size 1..32, free: 1..1000] [one|many|timed|free]\n");
		return 2;
	}
	const knit_task_t tasks[] = {{"nop", t_nop, 0, 0}};
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = (uint32_t)workers;
	o.topology = topology;
	o.info_flags = timed ? KNIT_POOL_INFO_TIMING : 0;
	knit_pool_t *p = NULL;
	if (knit_pool_create(&o, tasks, 1, &p) != 0)
		return 2;
	knit_completion_t c[32];
	uint64_t ran = 0;
	static knit_value_t a[1000];
	static knit_request_t rq[1000];
	memset(a, 0, sizeof a);
	memset(rq, 0, sizeof rq);
	const knit_pool_stats_t s0 = *stats(p);
	const uint64_t t0 = now_ns();
	uint64_t enq_ns = 0;
	for (int b = 0; b < nb; b++) {
		const uint64_t e0 = now_ns();
		for (int i = 0; i < bs; i++) {
			a[i].type = KNIT_VALUE_I64;
			a[i].i64 = i;
			rq[i].arg = &a[i];
			rq[i].user_data = (void *)(uintptr_t)(i + 1);
			if (!many) {
				int rc;
				while ((rc = knit_enqueue(p, 0, &a[i], rq[i].user_data, NULL)) ==
				       -KNIT_EAGAIN)
					usleep(50);
				if (rc != 0)
					return 3;
			}
		}
		if (many && knit_enqueue_many(p, rq, (uint32_t)bs, NULL) != bs)
			return 3;
		ran += (uint64_t)bs;
		enq_ns += now_ns() - e0;
		if (!free_run) {
			while (lane_calls(p) < ran)
				usleep(50);
			usleep(50); // the worker's publish of its last result
		}
		for (int got = 0; got < bs;) {
			const int k = knit_complete(p, c, 32, -1);
			if (k <= 0)
				return 4;
			for (int j = 0; j < k; j++) {
				if (c[j].status != 0 || knit_completion_release(p, &c[j]) != 0)
					return 5;
			}
			got += k;
		}
	}
	const double ns = (double)(now_ns() - t0);
	const knit_pool_stats_t *s1 = stats(p);
	const double n = (double)nb * bs;
	uint64_t wakes = 0, parks = 0, spins = 0, claims = 0, conflicts = 0;
	for (uint32_t i = 0; i < s1->lanes; i++) {
		wakes += s1->lane[i].wakes_sent - s0.lane[i].wakes_sent;
		parks += s1->lane[i].parks - s0.lane[i].parks;
		spins += s1->lane[i].spins - s0.lane[i].spins;
		claims += s1->lane[i].steal_claims - s0.lane[i].steal_claims;
		conflicts += s1->lane[i].steal_conflicts - s0.lane[i].steal_conflicts;
	}
	const char *tn = s1->topology == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
	knit_pool_destroy(p);
	printf("icount: %d batches of %d (%s), %d worker(s), %s\n", nb, bs, mode, workers, tn);
	printf("counts per call: backlogged %.4f  wakes_sent %.4f  parks %.4f  spins %.4f  "
	       "steal_claims %.4f  steal_conflicts %.4f  doorbell_arms %.4f  doorbell_wakes %.4f"
	       "  (%.2f M calls/s, %.0f%% of it enqueuing)\n",
	       (double)(s1->backlogged - s0.backlogged) / n, (double)wakes / n, (double)parks / n,
	       (double)spins / n, (double)claims / n, (double)conflicts / n,
	       (double)(s1->doorbell_arms - s0.doorbell_arms) / n,
	       (double)(s1->doorbell_wakes - s0.doorbell_wakes) / n, n / ns * 1e3,
	       100.0 * (double)enq_ns / ns);
	return 0;
}
