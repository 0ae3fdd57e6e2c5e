/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_errors.c - knit_strerror and knit_version; every entry with
 * a NULL pool / ctx; errno is never set by the library.
 */
#include "api/kt.h"

#include <errno.h>
#include <limits.h>

KT(errors, strerror_every_code)
{
	for (int code = 0; code < KNIT_ERROR_MAX_; code++) {
		const char *s = knit_strerror(code);
		cr_assert_not_null(s, "code %d", code);
		cr_expect_gt(strlen(s), 0, "code %d: empty text", code);
		cr_expect_str_eq(knit_strerror(-code), s, "code %d: positive and negative differ",
				 code);
		for (int other = 0; other < code; other++)
			cr_expect_str_neq(knit_strerror(other), s, "codes %d and %d share a text",
					  other, code);
	}
}

KT(errors, strerror_unknown_codes)
{
	/* INT_MIN: -INT_MIN overflows; a naive abs() indexes the table with it */
	int codes[] = {KNIT_ERROR_MAX_, -KNIT_ERROR_MAX_, 999, -999, INT_MAX, INT_MIN + 1, INT_MIN};
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		const char *s = knit_strerror(codes[i]);
		cr_assert_not_null(s, "code %d", codes[i]);
		cr_expect_gt(strlen(s), 0);
	}
}

KT(errors, version)
{
	cr_expect_eq(knit_version(), (uint32_t)KNIT_VERSION_NUMBER);
	cr_expect_eq(knit_version() >> 16, KNIT_VERSION_MAJOR);
}

KT(errors, version_compatible)
{
	const uint32_t v = KNIT_VERSION_NUMBER;
	cr_expect(KNIT_VERSION_COMPATIBLE(knit_version()),
		  "the library we run against is this build");
	cr_expect(KNIT_VERSION_COMPATIBLE(v), "the header's own version");
	cr_expect(KNIT_VERSION_COMPATIBLE(v + 1), "a newer patch release serves an older program");
	cr_expect(KNIT_VERSION_COMPATIBLE(v + (1u << 8)), "so does a newer minor release");
	cr_expect(!KNIT_VERSION_COMPATIBLE(v - 1),
		  "an older library is refused (it may lack what the header declares)");
	cr_expect(!KNIT_VERSION_COMPATIBLE(v + (1u << 16)), "another major version is refused");
	cr_expect(!KNIT_VERSION_COMPATIBLE(v - (1u << 16)), "another major version is refused");
}

KT(errors, null_pool_everywhere)
{
	knit_value_t v = kt_i64(1);
	knit_completion_t c;
	knit_pool_stats_t s = {.size = sizeof s};
	knit_ticket_t t;
	cr_expect_eq(knit_pool_task_id(NULL, "x"), -KNIT_EINVAL);
	cr_expect_eq(knit_enqueue(NULL, 0, &v, NULL, &t), -KNIT_EINVAL);
	cr_expect_eq(knit_enqueue_ex(NULL, 0, &v, NULL, NULL, &t), -KNIT_EINVAL);
	cr_expect_eq(knit_complete(NULL, &c, 1, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_completion_release(NULL, &c), -KNIT_EINVAL);
	cr_expect_eq(knit_completion_fd(NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_call(NULL, 0, &v, &c, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_cancel(NULL, 1, KNIT_CANCEL_NOW), -KNIT_EINVAL);
	cr_expect_eq(knit_stop(NULL, 0, 0), -KNIT_EINVAL);
	cr_expect_eq(knit_pool_destroy(NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_pool_stats(NULL, &s, sizeof s), -KNIT_EINVAL);
}

KT(errors, null_ctx_everywhere)
{
	cr_expect_eq(knit_ctx_aborted(NULL), -KNIT_EINVAL);
	cr_expect_eq(knit_ctx_deadline_ns(NULL), -KNIT_EINVAL);
	cr_expect_null(knit_ctx_alloc(NULL, 8));
	cr_expect_eq(knit_ctx_lane(NULL), -KNIT_EINVAL);
}

KT(errors, errno_untouched)
{
	knit_value_t v = kt_i64(1);
	knit_completion_t c;
	errno = 4242;
	/* error paths */
	knit_pool_create(NULL, NULL, 0, NULL);
	knit_enqueue(NULL, 0, &v, NULL, NULL);
	knit_complete(NULL, &c, 1, 0);
	knit_strerror(-3);
	cr_expect_eq(errno, 4242, "an error path set errno to %d", errno);
	/* a whole life cycle */
	knit_pool_t *pool = kt_pool_n(1);
	errno = 4242;
	uint32_t echo = kt_id(pool, "echo");
	cr_assert_eq(knit_call(pool, echo, &v, &c, 0), 0);
	knit_completion_release(pool, &c);
	kt_enq(pool, echo, v, NULL);
	kt_reap1(pool, &c);
	knit_complete(pool, &c, 1, 1000000); /* a timed wait with nothing to do */
	cr_expect_eq(knit_enqueue(pool, 9999, &v, NULL, NULL), -KNIT_ENOTASK);
	cr_expect_eq(errno, 4242, "the library set errno to %d", errno);
	kt_destroy(pool);
}

KT(errors, ctx_lane_in_task)
{
	knit_pool_t *pool = kt_pool_lanes(2); /* KNIT_CALL_LANE needs lanes */
	uint32_t lane = kt_id(pool, "lane");
	for (uint32_t l = 0; l < 2; l++) {
		knit_ticket_t t = kt_enq_ex(pool, lane, kt_none(), NULL, KNIT_CALL_LANE, 0, l);
		knit_completion_t c;
		kt_reap1(pool, &c);
		cr_expect_eq(c.ticket, t);
		cr_expect_eq(c.result.i64, l);
	}
	kt_destroy(pool);
}
