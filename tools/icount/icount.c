// SPDX-License-Identifier: MIT
// tools/icount/icount.c - the driver of tools/icount/icount.sh: NB batches of
// BS no-op calls on a 1-worker pool through knit_enqueue (MODE "one", the
// default) or one knit_enqueue_many per batch (MODE "many"), knit_complete
// and knit_completion_release. Between the enqueues and the reap it waits, outside
// those three entries, until the worker has run the batch (knit_pool_stats),
// so that under callgrind the host's instructions per call in each entry do
// not depend on how valgrind schedules the threads.
#include <knitting.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int t_nop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)arg;
	(void)ret;
	return 0;
}

static uint64_t lane_calls(knit_pool_t *p)
{
	static knit_pool_stats_t s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	knit_pool_stats(p, &s, sizeof s);
	return s.lane[0].calls;
}

int main(int argc, char **argv)
{
	const int nb = argc > 1 ? atoi(argv[1]) : 2000;
	const int bs = argc > 2 ? atoi(argv[2]) : 32;
	const char *mode = argc > 3 ? argv[3] : "one";
	const int many = strcmp(mode, "many") == 0;
	const int timed = strcmp(mode, "timed") == 0; // "one" with KNIT_POOL_INFO_TIMING
	if (nb <= 0 || bs <= 0 || bs > 32 || (!many && !timed && strcmp(mode, "one") != 0)) {
		fprintf(stderr, "usage: icount [batches] [batch size 1..32] [one|many|timed]\n");
		return 2;
	}
	const knit_task_t tasks[] = {{"nop", t_nop, 0, 0}};
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = 1;
	o.info_flags = timed ? KNIT_POOL_INFO_TIMING : 0;
	knit_pool_t *p = NULL;
	if (knit_pool_create(&o, tasks, 1, &p) != 0)
		return 2;
	knit_completion_t c[32];
	uint64_t ran = 0;
	knit_value_t a[32];
	knit_request_t rq[32];
	memset(a, 0, sizeof a);
	memset(rq, 0, sizeof rq);
	for (int b = 0; b < nb; b++) {
		for (int i = 0; i < bs; i++) {
			a[i].type = KNIT_VALUE_I64;
			a[i].i64 = i;
			rq[i].arg = &a[i];
			rq[i].user_data = (void *)(uintptr_t)(i + 1);
			if (!many && knit_enqueue(p, 0, &a[i], rq[i].user_data, NULL) != 0)
				return 3;
		}
		if (many && knit_enqueue_many(p, rq, (uint32_t)bs, NULL) != bs)
			return 3;
		ran += (uint64_t)bs;
		while (lane_calls(p) < ran)
			usleep(50);
		usleep(50); // the worker's publish of its last result
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
	knit_pool_destroy(p);
	printf("icount: %d batches of %d (%s)\n", nb, bs, mode);
	return 0;
}
