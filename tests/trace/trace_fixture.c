// SPDX-License-Identifier: MIT
/*
 * trace_fixture - a probe-emitting stand-in for a pool, to test knit-trace
 * apart from the runtime. It fires every src/trace.h probe from the threads
 * a real pool would fire them from, with a real futex park / ring between a
 * host thread and two worker threads, and prints what it did in the same
 * STATS format as trace_pool, so tests/trace/run.sh checks both the same way.
 *
 *   trace_fixture GOFILE [CALLS_PER_LANE]
 *
 * Waits (bounded) until GOFILE exists, so the tracer can attach first. Every
 * call is cold: the host rings a worker only after it announced it parked
 * and is asleep in the kernel (or about to be). Each lane's last call
 * carries a synchronous-line id, as a knit_call served on the lane's line.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "src/trace.h"

#define LANES 2

struct lane {
	_Atomic uint32_t word;   /* the wake word a worker parks on */
	_Atomic uint32_t parked; /* 1 once the worker announced it parks */
	_Atomic uint32_t stop;
	_Atomic uint64_t ticket; /* the call to run */
	_Atomic uint32_t tid;
	uint64_t parks, wakes_sent, wakes_received, calls, doorbell_rings, sync_calls;
	pthread_t thread;
};

static struct fixture_pool {
	struct lane lane[LANES];
	_Atomic uint32_t done_word; /* host's doorbell: bumped per finished call */
	_Atomic uint64_t done_ticket;
	uint64_t doorbell_arms, doorbell_wakes, completed, enqueued, sync_calls;
} P;

static long futex(_Atomic uint32_t *w, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static void *worker(void *arg)
{
	struct lane *l = arg;
	uint32_t lane = (uint32_t)(l - P.lane);

	atomic_store(&l->tid, (uint32_t)syscall(SYS_gettid));
	for (;;) {
		uint32_t seq = atomic_load(&l->word);
		uint64_t t;

		l->parks++;
		KNIT_TRACE_WORKER_PARK(&P, lane, seq);
		atomic_store(&l->parked, 1);
		while (atomic_load(&l->word) == seq)
			futex(&l->word, FUTEX_WAIT, seq);
		l->wakes_received++;
		if (atomic_load(&l->stop)) {
			KNIT_TRACE_WORKER_WAKE(&P, lane, KNIT_TRACE_WAKE_STOP);
			KNIT_TRACE_STOP_ACK(&P, lane);
			return NULL;
		}
		KNIT_TRACE_WORKER_WAKE(&P, lane, KNIT_TRACE_WAKE_RUNG);
		t = atomic_load(&l->ticket);
		KNIT_TRACE_TASK_START(&P, lane, t);
		l->calls++;
		KNIT_TRACE_TASK_DONE(&P, lane, t, (t & 1) ? -11 : 0);
		l->doorbell_rings++;
		KNIT_TRACE_DOORBELL_RING(&P, lane);
		atomic_store(&P.done_ticket, t);
		atomic_fetch_add(&P.done_word, 1);
		futex(&P.done_word, FUTEX_WAKE, 1);
	}
}

/* Wait until worker `l` announced it parks, then give it a moment to reach
 * futex_wait (bounded: 5 s of 1 ms naps). */
static int wait_parked(struct lane *l)
{
	struct timespec ms = {0, 1000000};

	for (int i = 0; i < 5000; i++) {
		if (atomic_load(&l->parked)) {
			nanosleep(&ms, NULL);
			return 0;
		}
		nanosleep(&ms, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct timespec ms = {0, 1000000};
	uint64_t ticket = 0, id;
	long calls = 20;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: trace_fixture GOFILE [CALLS_PER_LANE]\n");
		return 2;
	}
	if (argc > 2)
		calls = atol(argv[2]);
	for (i = 0; i < 30000 && access(argv[1], F_OK); i++)
		nanosleep(&ms, NULL);
	if (access(argv[1], F_OK)) {
		fprintf(stderr, "FAIL: no go signal (%s) within 30 s\n", argv[1]);
		return 1;
	}

	for (i = 0; i < LANES; i++)
		if (pthread_create(&P.lane[i].thread, NULL, worker, &P.lane[i])) {
			fprintf(stderr, "FAIL: pthread_create\n");
			return 1;
		}
	for (long c = 0; c < calls * LANES; c++) {
		struct lane *l = &P.lane[c % LANES];
		uint32_t lane = (uint32_t)(c % LANES), seen;

		if (wait_parked(l)) {
			fprintf(stderr, "FAIL: worker %u never parked\n", lane);
			return 1;
		}
		atomic_store(&l->parked, 0);
		ticket++;
		/* Each lane's last call stands for a knit_call on its synchronous
		 * line: a line id instead of a ticket (src/trace.h). */
		id = ticket;
		if (c >= (calls - 1) * LANES) {
			id = (ticket << 32) | (KNIT_TRACE_LINE_ID_BASE + lane);
			l->sync_calls++;
			P.sync_calls++;
		}
		P.enqueued++;
		KNIT_TRACE_TASK_ENQUEUE(&P, lane, id);
		atomic_store(&l->ticket, id);
		seen = atomic_load(&P.done_word);
		atomic_fetch_add(&l->word, 1);
		l->wakes_sent++;
		KNIT_TRACE_HOST_RING(&P, lane, atomic_load(&l->tid));
		futex(&l->word, FUTEX_WAKE, 1);

		P.doorbell_arms++;
		KNIT_TRACE_DOORBELL_ARM(&P);
		while (atomic_load(&P.done_ticket) != id) {
			futex(&P.done_word, FUTEX_WAIT, seen);
			seen = atomic_load(&P.done_word);
		}
		P.doorbell_wakes++;
		KNIT_TRACE_DOORBELL_WAKE(&P);
		P.completed++;
		KNIT_TRACE_TASK_COMPLETE(&P, id, (ticket & 1) ? -11 : 0);
	}
	for (i = 0; i < LANES; i++) {
		struct lane *l = &P.lane[i];

		if (wait_parked(l)) {
			fprintf(stderr, "FAIL: worker %d never parked\n", i);
			return 1;
		}
		KNIT_TRACE_STOP_REQUEST(&P, (uint32_t)i);
		atomic_store(&l->stop, 1);
		atomic_fetch_add(&l->word, 1);
		l->wakes_sent++; /* a stop wake is a ring too, as in the runtime */
		KNIT_TRACE_HOST_RING(&P, (uint32_t)i, atomic_load(&l->tid));
		futex(&l->word, FUTEX_WAKE, 1);
		pthread_join(l->thread, NULL);
	}

	printf("STATS {\"pool\":\"%p\",\"workers\":%d,\"enqueued\":%llu,\"completed\":%llu,"
	       "\"doorbell_arms\":%llu,\"doorbell_wakes\":%llu,\"sync_calls\":%llu,"
	       "\"knit_calls\":%llu,\"lanes\":[",
	       (void *)&P, LANES, (unsigned long long)P.enqueued, (unsigned long long)P.completed,
	       (unsigned long long)P.doorbell_arms, (unsigned long long)P.doorbell_wakes,
	       (unsigned long long)P.sync_calls, (unsigned long long)P.sync_calls);
	for (i = 0; i < LANES; i++) {
		struct lane *l = &P.lane[i];
		printf("%s{\"lane\":%d,\"parks\":%llu,\"wakes_sent\":%llu,\"wakes_received\":%llu,"
		       "\"watchdog_expiries\":0,\"calls\":%llu,\"doorbell_rings\":%llu,"
		       "\"knit_calls\":%llu}",
		       i ? "," : "", i, (unsigned long long)l->parks,
		       (unsigned long long)l->wakes_sent, (unsigned long long)l->wakes_received,
		       (unsigned long long)l->calls, (unsigned long long)l->doorbell_rings,
		       (unsigned long long)l->sync_calls);
	}
	printf("]}\n");
	return 0;
}
