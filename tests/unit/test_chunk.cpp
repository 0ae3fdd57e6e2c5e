// SPDX-License-Identifier: MIT
// tests/unit/test_chunk.cpp - a knit_map chunk's bytes (src/chunk.h): every
// kind of value goes through the writer and comes back whole from the
// reader; the reader refuses a short buffer, another magic, a count whose
// entries do not fit, a payload past the end, a string without its NUL, a
// BOOL that is not 0/1, an unknown type, a code on a non-ERROR value and a
// status the magic does not allow; once failed it stays failed; and on
// random bytes it never reads outside the buffer (every view it hands out
// lies inside) -- run under ASan in check-sanitizers.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" { // cmocka 1.1 has no C++ guards of its own
#include <cmocka.h>
}

#include "knitting.h"
#include "src/chunk.h"

using namespace knit::detail;

namespace {

const char kMsg[] = "hello, chunk";

knit_value_t val(uint32_t type)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = type;
	return v;
}

// Seven values, one of each type.
void sample(knit_value_t v[7])
{
	v[0] = val(KNIT_VALUE_NONE);
	v[1] = val(KNIT_VALUE_BOOL);
	v[1].i64 = 1;
	v[2] = val(KNIT_VALUE_I64);
	v[2].i64 = -123456789012345;
	v[3] = val(KNIT_VALUE_F64);
	v[3].f64 = -0.0;
	v[4] = val(KNIT_VALUE_BYTES);
	v[4].data = kMsg;
	v[4].len = 5;
	v[5] = val(KNIT_VALUE_STRING);
	v[5].data = kMsg;
	v[5].len = sizeof kMsg - 1;
	v[6] = val(KNIT_VALUE_ERROR);
	v[6].code = -77;
	v[6].data = kMsg;
	v[6].len = 8;
}

// Write vals as a chunk of this magic (statuses st) into a fresh buffer.
uint8_t *write_chunk(uint32_t magic, const knit_value_t *vals, const int32_t *st, uint32_t n,
		     uint64_t *len)
{
	uint64_t payload = 0;
	for (uint32_t i = 0; i < n; i++)
		payload += chunk_payload_bytes(vals[i]);
	*len = chunk_bytes(n, payload);
	uint8_t *b = static_cast<uint8_t *>(malloc(*len));
	assert_non_null(b);
	ChunkWriter w;
	chunk_begin(&w, b, magic, 3, n);
	for (uint32_t i = 0; i < n; i++)
		chunk_put(&w, st != nullptr ? st[i] : 0, vals[i]);
	assert_int_equal(w.data, *len);
	return b;
}

void round_trip(void **)
{
	knit_value_t v[7];
	sample(v);
	static const uint32_t magics[] = {kChunkItems, kChunkOutcomes};
	for (uint32_t magic : magics) {
		uint64_t len;
		uint8_t *b = write_chunk(magic, v, nullptr, 7, &len);
		ChunkReader r;
		uint32_t task = 0;
		assert_int_equal(chunk_open(&r, b, len, magic, 7, &task), 0);
		assert_int_equal(task, 3);
		assert_int_equal(r.count, 7);
		for (int i = 0; i < 7; i++) {
			int32_t st = 1;
			knit_value_t got;
			assert_int_equal(chunk_next(&r, magic, &st, &got), 0);
			assert_int_equal(st, 0);
			assert_int_equal(got.type, v[i].type);
			assert_int_equal(got.i64, v[i].i64);
			assert_memory_equal(&got.f64, &v[i].f64, sizeof got.f64);
			assert_int_equal(got.len, v[i].len);
			assert_int_equal(got.code, v[i].code);
			if (codec_has_bytes(v[i].type)) {
				const uint8_t *d = static_cast<const uint8_t *>(got.data);
				assert_true(d >= b && d + got.len <= b + len);
				assert_memory_equal(d, v[i].data, v[i].len);
				if (v[i].type != KNIT_VALUE_BYTES)
					assert_int_equal(d[got.len], 0);
			}
		}
		int32_t st;
		knit_value_t got;
		assert_int_equal(chunk_next(&r, magic, &st, &got), -KNIT_EPROTO); // none left
		free(b);
	}
}

// The outcome statuses the reader takes, and those it does not.
void statuses(void **)
{
	const knit_value_t none = val(KNIT_VALUE_NONE);
	knit_value_t err = val(KNIT_VALUE_ERROR);
	err.data = kMsg;
	err.len = 3;
	struct Case {
		uint32_t magic;
		int32_t status;
		knit_value_t v;
		bool ok;
	} cases[] = {
		{kChunkOutcomes, -KNIT_ETASK, err, true},
		{kChunkOutcomes, -KNIT_ETASK, none, false},
		{kChunkOutcomes, -KNIT_ETOOBIG, none, true},
		{kChunkOutcomes, -KNIT_ECANCELED, none, true},
		{kChunkOutcomes, -KNIT_EPROTO, none, true},
		{kChunkOutcomes, -KNIT_ENOMEM, none, true},
		{kChunkOutcomes, -KNIT_ETOOBIG, err, false},
		{kChunkOutcomes, -KNIT_ECRASHED, none, false},
		{kChunkOutcomes, 5, none, false},
		{kChunkItems, -KNIT_ETASK, err, false},
		{kChunkItems, -KNIT_ECANCELED, none, false},
	};
	for (const Case &c : cases) {
		uint64_t len;
		uint8_t *b = write_chunk(c.magic, &c.v, &c.status, 1, &len);
		ChunkReader r;
		uint32_t task;
		assert_int_equal(chunk_open(&r, b, len, c.magic, 1, &task), 0);
		int32_t st = 99;
		knit_value_t got;
		const int rc = chunk_next(&r, c.magic, &st, &got);
		printf("# magic %x status %d type %u: %d\n", c.magic, c.status, c.v.type, rc);
		assert_int_equal(rc, c.ok ? 0 : -KNIT_EPROTO);
		if (c.ok)
			assert_int_equal(st, c.status);
		else
			assert_int_equal(got.type, KNIT_VALUE_NONE);
		free(b);
	}
}

// Entry i of a written chunk, patched.
ChunkEntry *entry(uint8_t *b, uint32_t i)
{
	return reinterpret_cast<ChunkEntry *>(b + kChunkHeadBytes + i * kChunkEntryBytes);
}

// chunk_next of every entry of b after `patch`: the index of the first
// failure, or -1.
int first_bad(const knit_value_t *v, uint32_t n, void (*patch)(uint8_t *b, uint64_t *len))
{
	uint64_t len;
	uint8_t *b = write_chunk(kChunkItems, v, nullptr, n, &len);
	patch(b, &len);
	ChunkReader r;
	uint32_t task;
	int bad = -2; // the open failed
	if (chunk_open(&r, b, len, kChunkItems, n, &task) == 0) {
		bad = -1;
		for (uint32_t i = 0; i < n; i++) {
			int32_t st;
			knit_value_t got;
			if (chunk_next(&r, kChunkItems, &st, &got) != 0) {
				bad = (int)i;
				// Failed for good: the rest fail too.
				assert_int_equal(chunk_next(&r, kChunkItems, &st, &got),
						 -KNIT_EPROTO);
				break;
			}
		}
	}
	free(b);
	return bad;
}

void malformed(void **)
{
	knit_value_t v[7];
	sample(v);
	// Unpatched: whole.
	assert_int_equal(first_bad(v, 7, [](uint8_t *, uint64_t *) {}), -1);
	// The head.
	assert_int_equal(first_bad(v, 7, [](uint8_t *, uint64_t *len) { *len = 15; }), -2);
	assert_int_equal(first_bad(v, 7, [](uint8_t *b, uint64_t *) { b[0] ^= 1; }), -2);
	assert_int_equal(first_bad(v, 7,
				   [](uint8_t *b, uint64_t *) {
					   ChunkHead h;
					   memcpy(&h, b, sizeof h);
					   h.zero = 1;
					   memcpy(b, &h, sizeof h);
				   }),
			 -2);
	// A count over the caller's bound, or whose entries pass the end.
	assert_int_equal(first_bad(v, 7,
				   [](uint8_t *b, uint64_t *) {
					   ChunkHead h;
					   memcpy(&h, b, sizeof h);
					   h.count = 8;
					   memcpy(b, &h, sizeof h);
				   }),
			 -2);
	assert_int_equal(first_bad(v, 7, [](uint8_t *, uint64_t *len) { *len = 16 + 16 * 6; }), -2);
	// The payloads cut short: the last (the ERROR's) no longer fits.
	assert_int_equal(first_bad(v, 7, [](uint8_t *, uint64_t *len) { *len -= 8; }), 6);
	// A BYTES length past the end.
	assert_int_equal(
		first_bad(v, 7, [](uint8_t *b, uint64_t *) { entry(b, 4)->word = 1u << 20; }), 4);
	// A string without its NUL.
	assert_int_equal(first_bad(v, 7,
				   [](uint8_t *b, uint64_t *len) {
					   // entries, then BYTES' 8 bytes, then the string's
					   b[*len - 16 - 16 + 12] = 'x';
				   }),
			 5);
	// BOOL 2, an unknown type, a code on an I64, a status on an item.
	assert_int_equal(first_bad(v, 7, [](uint8_t *b, uint64_t *) { entry(b, 1)->word = 2; }), 1);
	assert_int_equal(first_bad(v, 7, [](uint8_t *b, uint64_t *) { entry(b, 2)->type = 7; }), 2);
	assert_int_equal(first_bad(v, 7, [](uint8_t *b, uint64_t *) { entry(b, 2)->code = 1; }), 2);
	assert_int_equal(first_bad(v, 7, [](uint8_t *b, uint64_t *) { entry(b, 0)->status = -1; }),
			 0);
}

// Random bytes, and random patches of a good chunk: the reader never
// hands out a view outside the buffer (ASan sees any read past it).
void random_bytes(void **)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;
	auto rnd = [&x] {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		return x;
	};
	knit_value_t v[7];
	sample(v);
	uint64_t good_len;
	uint8_t *good = write_chunk(kChunkOutcomes, v, nullptr, 7, &good_len);
	unsigned ok = 0, bad = 0;
	for (int round = 0; round < 20000; round++) {
		uint64_t len = good_len;
		uint8_t *b = static_cast<uint8_t *>(malloc(len));
		assert_non_null(b);
		memcpy(b, good, len);
		const int flips = 1 + (int)(rnd() % 4);
		for (int k = 0; k < flips; k++)
			b[rnd() % len] = (uint8_t)rnd();
		if (round % 4 == 0)
			len = rnd() % (len + 1);
		ChunkReader r;
		uint32_t task;
		if (chunk_open(&r, b, len, kChunkOutcomes, 7, &task) != 0) {
			bad++;
			free(b);
			continue;
		}
		for (uint32_t i = 0; i < r.count; i++) {
			int32_t st;
			knit_value_t got;
			if (chunk_next(&r, kChunkOutcomes, &st, &got) != 0) {
				bad++;
				break;
			}
			ok++;
			if (codec_has_bytes(got.type)) {
				const uint8_t *d = static_cast<const uint8_t *>(got.data);
				assert_true(d >= b && d + got.len <= b + len);
				if (got.type != KNIT_VALUE_BYTES)
					assert_true(d + got.len < b + len && d[got.len] == 0);
			}
		}
		free(b);
	}
	printf("# %u entries read, %u chunks refused\n", ok, bad);
	assert_true(ok > 0 && bad > 0);
	free(good);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(statuses),
		cmocka_unit_test(malformed),
		cmocka_unit_test(random_bytes),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
