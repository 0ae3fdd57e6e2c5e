/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_publish.c - a worker publishes results while it runs the
 * rest of a batch: a finished call's result never waits behind more than one
 * further task of the same batch (the early publish of src/worker.cpp).
 */
#include "api/kt.h"

KT(publish, result_not_held_behind_a_blocked_task)
{
	knit_pool_t *pool = kt_pool_lanes(1);
	uint32_t sleep = kt_id(pool, "sleep"), echo = kt_id(pool, "echo"),
		 block = kt_id(pool, "block");
	/* X keeps the worker busy while A, B and C are published, so the worker
	 * takes A, B and C as one batch when X is done. */
	knit_ticket_t x = kt_enq(pool, sleep, kt_i64(300), NULL);
	knit_ticket_t a = kt_enq(pool, echo, kt_i64(7), NULL);
	knit_ticket_t b = kt_enq(pool, sleep, kt_i64(20), NULL);
	knit_ticket_t c = kt_enq(pool, block, kt_i64(9), NULL);
	cr_assert(x && a && b && c);
	/* A must come back while C is still blocked on the gate: after A, at
	 * most one further task (B, or C if the worker took X, A, B and C as
	 * one batch) may run before A is published. A worker that published
	 * only at the end of a batch would hold A until the gate opens (never,
	 * here: the reap would time out). B may come back on either side. */
	int got_x = 0, got_a = 0, got_b = 0, got_c = 0;
	while (!(got_x && got_a)) {
		knit_completion_t done;
		kt_reap1(pool, &done);
		cr_assert_neq(done.ticket, c, "the blocked call completed before its gate opened");
		cr_expect_eq(done.status, 0);
		got_x += done.ticket == x;
		got_a += done.ticket == a;
		got_b += done.ticket == b;
	}
	cr_expect(kt_wait_started(1), "C never started");
	kt_gate_open();
	while (!(got_b && got_c)) {
		knit_completion_t done;
		kt_reap1(pool, &done);
		cr_expect_eq(done.status, 0);
		got_b += done.ticket == b;
		got_c += done.ticket == c;
		if (done.ticket == c)
			cr_expect_eq(done.result.i64, 9);
	}
	cr_expect(got_x == 1 && got_a == 1 && got_b == 1 && got_c == 1, "X %d A %d B %d C %d",
		  got_x, got_a, got_b, got_c);
	kt_destroy(pool);
}
