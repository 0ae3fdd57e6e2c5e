/* SPDX-License-Identifier: MIT */
/*
 * tests/api/test_values.c - every value type through a task and back: none,
 * bool, i64 extremes, f64 specials (NaN bits, -0.0, inf), bytes and strings
 * around the 512-byte inline boundary up to 1 MiB, errors (set by the task,
 * or from a bare non-zero return), knit_ctx_alloc results, a result over the
 * per-call cap.
 */
#include "api/kt.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static knit_pool_t *P;

static void setup(void) { P = kt_pool_n(1); }

static void teardown(void) { kt_destroy(P); }

/* Call `name` with arg; assert the call itself succeeded. */
static knit_completion_t call(const char *name, knit_value_t arg)
{
	knit_completion_t c;
	int rc = knit_call(P, kt_id(P, name), &arg, &c, 0);
	cr_assert_eq(rc, 0, "knit_call(%s): %d", name, rc);
	return c;
}

/* The task sees exactly the argument sent (hash computed on the worker). */
static void check_arg(knit_value_t v)
{
	knit_completion_t c = call("inspect", v);
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_I64);
	cr_expect_eq(c.result.i64, kt_value_hash(&v),
		     "task saw a different value (type %u len %zu)", v.type, v.len);
	knit_completion_release(P, &c);
}

TestSuite(values, .init = setup, .fini = teardown, .timeout = KT_TIMEOUT);

Test(values, none)
{
	knit_completion_t c = call("echo", kt_none());
	cr_expect_eq(c.status, 0);
	cr_expect_eq(c.result.type, KNIT_VALUE_NONE);
	check_arg(kt_none());
}

Test(values, bool)
{
	for (int b = 0; b <= 1; b++) {
		knit_completion_t c = call("echo", kt_bool(b));
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.type, KNIT_VALUE_BOOL);
		cr_expect_eq(c.result.i64, b);
		check_arg(kt_bool(b));
	}
}

Test(values, i64_extremes)
{
	int64_t vals[] = {0, 1, -1, INT64_MIN, INT64_MAX, INT64_MIN + 1, 0x0123456789abcdefll};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		knit_completion_t c = call("echo", kt_i64(vals[i]));
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.type, KNIT_VALUE_I64);
		cr_expect_eq(c.result.i64, vals[i], "i64 %lld came back %lld", (long long)vals[i],
			     (long long)c.result.i64);
		check_arg(kt_i64(vals[i]));
	}
}

static uint64_t bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return u;
}

static double from_bits(uint64_t u)
{
	double d;
	memcpy(&d, &u, 8);
	return d;
}

Test(values, f64_specials)
{
	double vals[] = {0.0,
			 -0.0,
			 1.5,
			 -2.25,
			 INFINITY,
			 -INFINITY,
			 NAN,
			 DBL_MAX,
			 -DBL_MAX,
			 DBL_MIN,
			 DBL_TRUE_MIN,
			 M_PI,
			 from_bits(0x7ff8000000000123ull), /* quiet NaN with a payload */
			 from_bits(0xfff8000000000000ull) /* negative NaN */};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		knit_completion_t c = call("echo", kt_f64(vals[i]));
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.type, KNIT_VALUE_F64);
		cr_expect_eq(
			bits(c.result.f64), bits(vals[i]), "f64 bits %016llx came back %016llx",
			(unsigned long long)bits(vals[i]), (unsigned long long)bits(c.result.f64));
		check_arg(kt_f64(vals[i]));
	}
	knit_completion_t c = call("echo", kt_f64(-0.0));
	cr_expect(signbit(c.result.f64) && c.result.f64 == 0.0, "-0.0 lost its sign");
}

static const size_t sizes[] = {0, 1, 2, 63, 64, 511, 512, 513, 4095, 4096, 4097, 65536, 1 << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

Test(values, bytes_echo)
{
	for (size_t i = 0; i < NSIZES; i++) {
		uint8_t *b = kt_pattern(sizes[i]);
		knit_completion_t c = call("echo", kt_bytes(b, sizes[i]));
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.type, KNIT_VALUE_BYTES);
		cr_expect_eq(c.result.len, sizes[i], "len %zu came back %zu", sizes[i],
			     c.result.len);
		cr_expect(kt_is_pattern(c.result.data, c.result.len), "bytes of size %zu changed",
			  sizes[i]);
		knit_completion_release(P, &c);
		check_arg(kt_bytes(b, sizes[i]));
		free(b);
	}
}

Test(values, bytes_result_from_task)
{
	for (size_t i = 0; i < NSIZES; i++) {
		knit_completion_t c = call("bytes", kt_i64((int64_t)sizes[i]));
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.type, KNIT_VALUE_BYTES);
		cr_expect_eq(c.result.len, sizes[i]);
		cr_expect(kt_is_pattern(c.result.data, c.result.len), "bytes of size %zu changed",
			  sizes[i]);
		knit_completion_release(P, &c);
	}
}

Test(values, strings_nul_terminated)
{
	for (size_t i = 0; i < NSIZES; i++) {
		/* from the task */
		knit_completion_t c = call("string", kt_i64((int64_t)sizes[i]));
		cr_expect_eq(c.status, 0);
		cr_expect_eq(c.result.type, KNIT_VALUE_STRING);
		cr_expect_eq(c.result.len, sizes[i]);
		cr_assert_not_null(c.result.data, "string data NULL (len %zu)", sizes[i]);
		cr_expect(kt_is_pattern(c.result.data, c.result.len));
		cr_expect_eq(((const char *)c.result.data)[c.result.len], '\0',
			     "string of %zu not NUL-terminated", sizes[i]);
		knit_completion_release(P, &c);
		/* echoed: the argument the task sees is NUL-terminated too */
		uint8_t *b = kt_pattern(sizes[i]);
		c = call("echo", kt_str((const char *)b, sizes[i]));
		cr_expect_eq(c.result.type, KNIT_VALUE_STRING);
		cr_expect_eq(c.result.len, sizes[i]);
		cr_expect(kt_is_pattern(c.result.data, c.result.len));
		cr_expect_eq(((const char *)c.result.data)[c.result.len], '\0');
		knit_completion_release(P, &c);
		c = call("str_nul", kt_str((const char *)b, sizes[i]));
		cr_expect_eq(c.result.type, KNIT_VALUE_BOOL);
		cr_expect_eq(c.result.i64, 1,
			     "string argument of %zu not NUL-terminated in the task", sizes[i]);
		check_arg(kt_str((const char *)b, sizes[i]));
		free(b);
	}
}

Test(values, string_with_embedded_nul)
{
	const char s[] = "ab\0cd";
	knit_completion_t c = call("echo", kt_str(s, 5));
	cr_expect_eq(c.result.len, 5);
	cr_expect_eq(memcmp(c.result.data, s, 6), 0);
	knit_completion_release(P, &c);
}

Test(values, error_set_by_task)
{
	int32_t codes[] = {0, 1, -5, INT32_MAX, INT32_MIN};
	for (size_t i = 0; i < 5; i++) {
		knit_completion_t c = call("error", kt_i64(codes[i]));
		char want[64];
		snprintf(want, sizeof want, "task error %d", (int)codes[i]);
		cr_expect_eq(c.status, -KNIT_ETASK);
		cr_expect_eq(c.result.type, KNIT_VALUE_ERROR);
		cr_expect_eq(c.result.code, codes[i]);
		cr_expect_eq(c.result.len, strlen(want));
		cr_assert_not_null(c.result.data);
		cr_expect_str_eq((const char *)c.result.data, want,
				 "error message (NUL-terminated)");
		knit_completion_release(P, &c);
	}
}

Test(values, error_as_argument)
{
	check_arg(kt_err(-12, "an error passed in"));
	check_arg(kt_err(7, ""));
	char *big = (char *)kt_pattern(3000);
	knit_value_t e = kt_err(3, NULL);
	e.data = big;
	e.len = 3000;
	check_arg(e);
	free(big);
}

Test(values, nonzero_return_without_ret)
{
	int codes[] = {1, 42, -7, -KNIT_EINVAL, INT32_MAX};
	for (size_t i = 0; i < 5; i++) {
		knit_completion_t c = call("fail", kt_i64(codes[i]));
		cr_expect_eq(c.status, -KNIT_ETASK, "return %d: status %d", codes[i], c.status);
		cr_expect_eq(c.result.type, KNIT_VALUE_ERROR);
		cr_expect_eq(c.result.code, codes[i], "error code %d, want the returned %d",
			     c.result.code, codes[i]);
		knit_completion_release(P, &c);
	}
}

Test(values, nonzero_return_with_non_error_ret)
{
	/* ret was set to I64 77, not an ERROR: the result is an error value
	 * whose code is the returned value. */
	knit_completion_t c = call("fail_set", kt_i64(13));
	cr_expect_eq(c.status, -KNIT_ETASK);
	cr_expect_eq(c.result.type, KNIT_VALUE_ERROR);
	cr_expect_eq(c.result.code, 13);
	knit_completion_release(P, &c);
}

Test(values, ctx_alloc_results)
{
	for (size_t i = 0; i < NSIZES; i++) {
		if (sizes[i] == 0)
			continue;
		knit_completion_t c = call("alloc", kt_i64((int64_t)sizes[i]));
		cr_expect_eq(c.status, 0, "alloc %zu: status %d (code %d)", sizes[i], c.status,
			     c.result.code);
		cr_expect_eq(c.result.type, KNIT_VALUE_BYTES);
		cr_expect_eq(c.result.len, sizes[i]);
		cr_expect(kt_is_pattern(c.result.data, c.result.len), "alloc result of %zu changed",
			  sizes[i]);
		knit_completion_release(P, &c);
	}
}

Test(values, ctx_alloc_refusals)
{
	cr_expect_null(knit_ctx_alloc(NULL, 16));
	knit_completion_t c = call("alloc_probe", kt_i64(0));
	cr_expect_eq(c.result.i64, 1, "knit_ctx_alloc(ctx, 0) must be NULL");
	c = call("alloc_probe", kt_i64((8ll << 20) + 1));
	cr_expect_eq(c.result.i64, 1, "knit_ctx_alloc over max_payload_bytes must be NULL");
	c = call("alloc_probe", kt_i64(8ll << 20));
	cr_expect_eq(c.result.i64, 0, "knit_ctx_alloc of exactly max_payload_bytes");
	c = call("alloc_probe", kt_i64(100));
	cr_expect_eq(c.result.i64, 0);
}

Test(values, many_mixed_in_flight)
{
	/* Lots of calls of mixed sizes in flight at once (arena reuse). */
	enum { N = 300 };
	uint32_t bytes = kt_id(P, "bytes"), string = kt_id(P, "string");
	static knit_completion_t out[N];
	for (int i = 0; i < N; i++) {
		size_t n = (i * 7919) % 5 == 0 ? (size_t)(70000 + i) : (size_t)(i * 13 % 1500);
		kt_enq(P, i % 2 ? bytes : string, kt_i64((int64_t)n), (void *)(uintptr_t)(n + 1));
	}
	cr_assert_eq(kt_reap(P, out, N), N);
	for (int i = 0; i < N; i++) {
		size_t n = (uintptr_t)out[i].user_data - 1;
		cr_expect_eq(out[i].status, 0);
		cr_expect_eq(out[i].result.len, n);
		cr_expect(kt_is_pattern(out[i].result.data, n));
		knit_completion_release(P, &out[i]);
	}
}

/* A result over the per-call cap: the task ran, the result cannot ship. */
Test(values_cap, result_too_big, .timeout = KT_TIMEOUT)
{
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.payload_max_bytes = 64 * 1024; /* cap 8 KiB */
	knit_pool_t *pool = kt_pool(&o);
	knit_value_t v = kt_i64(8 * 1024 + 1);
	knit_completion_t c;
	cr_assert_eq(knit_call(pool, kt_id(pool, "bytes"), &v, &c, 0), 0);
	cr_expect_eq(c.status, -KNIT_ETOOBIG, "status %d", c.status);
	knit_completion_release(pool, &c);
	v = kt_i64(8 * 1024);
	cr_assert_eq(knit_call(pool, kt_id(pool, "bytes"), &v, &c, 0), 0);
	cr_expect_eq(c.status, 0, "exactly the cap ships");
	cr_expect(kt_is_pattern(c.result.data, c.result.len));
	knit_completion_release(pool, &c);
	v = kt_i64(8 * 1024 + 1);
	cr_assert_eq(knit_call(pool, kt_id(pool, "string"), &v, &c, 0), 0);
	cr_expect_eq(c.status, -KNIT_ETOOBIG, "string status %d", c.status);
	knit_completion_release(pool, &c);
	/* The pool keeps working. */
	v = kt_i64(100);
	cr_assert_eq(knit_call(pool, kt_id(pool, "bytes"), &v, &c, 0), 0);
	cr_expect_eq(c.status, 0);
	knit_completion_release(pool, &c);
	kt_destroy(pool);
}

/* A failing task whose error message is longer than max_payload_bytes keeps
 * its status (-KNIT_ETASK) and its code; the message is cut to the cap and
 * ends with the documented marker " [truncated]". On worker and inline lanes. */
static void error_long_case(uint32_t inline_lane)
{
	static const char mark[] = " [truncated]";
	const size_t m = sizeof mark - 1;
	knit_pool_options_t o;
	kt_opts(&o, 1);
	o.max_payload_bytes = 1000;
	o.inline_lane = inline_lane;
	knit_pool_t *pool = kt_pool(&o);
	uint32_t id = kt_id(pool, "error_long");
	const size_t lens[] = {0, 10, 999, 1000, 1001, 5000, 200000};
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		const knit_value_t a = kt_i64((int64_t)lens[k]);
		knit_completion_t c;
		cr_assert_eq(knit_call(pool, id, &a, &c, 0), 0);
		cr_expect_eq(c.status, -KNIT_ETASK, "len %zu: status %d", lens[k], c.status);
		cr_expect_eq(c.result.type, KNIT_VALUE_ERROR, "len %zu", lens[k]);
		cr_expect_eq(c.result.code, 4242, "len %zu: code %d", lens[k], c.result.code);
		const char *d = c.result.data;
		if (lens[k] <= 1000) {
			cr_expect_eq(c.result.len, lens[k]);
			cr_expect(d != NULL && kt_is_pattern(d, lens[k]), "len %zu: message intact",
				  lens[k]);
		} else {
			cr_expect_eq(c.result.len, 1000, "len %zu: cut to the cap, got %u", lens[k],
				     c.result.len);
			cr_assert_not_null(d);
			cr_expect(kt_is_pattern(d, 1000 - m), "len %zu: prefix kept", lens[k]);
			cr_expect_eq(memcmp(d + 1000 - m, mark, m), 0, "len %zu: marked truncated",
				     lens[k]);
			cr_expect_eq(d[1000], 0, "NUL-terminated");
		}
		knit_completion_release(pool, &c);
	}
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	if (inline_lane != KNIT_INLINE_OFF)
		cr_expect_gt(s.inline_calls, 0, "the inline lane ran some");
	else
		cr_expect_eq(s.lane[0].calls, sizeof lens / sizeof lens[0]);
	kt_destroy(pool);
}

Test(values, long_error_message_keeps_code) { error_long_case(KNIT_INLINE_OFF); }

Test(values, long_error_message_keeps_code_inline) { error_long_case(KNIT_INLINE_FIRST); }
