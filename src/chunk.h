// SPDX-License-Identifier: MIT
// src/chunk.h - the byte layout of a knit_map chunk: the items of one chunk
// packed into one call's BYTES argument, and their outcomes packed into
// that call's BYTES result, so that one frame carries many items. The host
// writes items and reads outcomes (src/map.cpp); a worker reads items and
// writes outcomes (src/task.cpp, the chunk task). Both readers are total:
// every entry they hand out lies inside the buffer and is a well-formed
// value, and anything else is -KNIT_EPROTO (a worker process's outcomes
// are untrusted; the host reads them from its own copy of the result).
//
// Layout (native byte order: host and workers share one machine):
//   head     16 bytes: magic (kChunkItems or kChunkOutcomes), task (items:
//            the task every item runs; outcomes: the items' run time in ns,
//            saturated, a hint the host never trusts), count, 0
//   entries  count * 16 bytes, ChunkEntry, in item order
//   payload  the entries' bytes in entry order, each padded to 8 bytes; a
//            STRING's or ERROR's bytes end with a NUL (in the padded room,
//            not counted in its length)
// An entry: status (items: 0; outcomes: 0, -KNIT_ETASK with an ERROR
// value, or -KNIT_ETOOBIG with none), the value's type, its code (ERROR),
// and its word: the int64 (BOOL, I64), the IEEE-754 bits (F64), the
// payload's length (BYTES, STRING, ERROR), 0 (NONE).
#ifndef KNIT_SRC_CHUNK_H
#define KNIT_SRC_CHUNK_H

#include "src/common.h"

#include "knitting.h"
#include "src/codec.h"

namespace knit::detail {

inline constexpr uint32_t kChunkItems = 0x4d54494bu;    // "KITM"
inline constexpr uint32_t kChunkOutcomes = 0x54554f4bu; // "KOUT"
inline constexpr uint64_t kChunkHeadBytes = 16;
inline constexpr uint64_t kChunkEntryBytes = 16;

struct ChunkHead {
	uint32_t magic;
	uint32_t task;
	uint32_t count;
	uint32_t zero;
};
static_assert(sizeof(ChunkHead) == kChunkHeadBytes, "chunk head");

struct ChunkEntry {
	int16_t status;
	uint16_t type;
	int32_t code;
	uint64_t word;
};
static_assert(sizeof(ChunkEntry) == kChunkEntryBytes, "chunk entry");

// The payload room of value v in a chunk (its stored bytes padded to 8).
inline uint64_t chunk_payload_bytes(const knit_value_t &v)
{
	if (!codec_has_bytes(v.type))
		return 0;
	return (codec_stored_bytes(v.type, v.len) + 7) & ~(uint64_t)7;
}

// The bytes a chunk of `count` entries whose payload rooms sum to
// `payload` takes.
inline uint64_t chunk_bytes(uint32_t count, uint64_t payload)
{
	return kChunkHeadBytes + (uint64_t)count * kChunkEntryBytes + payload;
}

// Writes a chunk into a buffer of chunk_bytes(count, the entries' payload
// rooms) bytes; chunk_put exactly `count` times, with values accepted by
// codec_value_check.
struct ChunkWriter {
	uint8_t *base;
	uint32_t count;
	uint32_t next;
	uint64_t data; // the next payload's offset
};

void chunk_begin(ChunkWriter *w, uint8_t *buf, uint32_t magic, uint32_t task, uint32_t count);

// Is v a scalar (NONE, BOOL 0/1, I64, F64): one entry, no payload?
inline bool chunk_scalar_ok(const knit_value_t &v)
{
	return v.type == KNIT_VALUE_NONE || v.type == KNIT_VALUE_I64 || v.type == KNIT_VALUE_F64 ||
	       (v.type == KNIT_VALUE_BOOL && (uint64_t)v.i64 <= 1);
}

// A scalar's entry word (chunk_scalar_ok(v)).
inline uint64_t chunk_scalar_word(const knit_value_t &v)
{
	if (v.type == KNIT_VALUE_F64) {
		uint64_t bits;
		memcpy(&bits, &v.f64, sizeof bits);
		return bits;
	}
	return v.type == KNIT_VALUE_NONE ? 0 : (uint64_t)v.i64;
}

// The next entry, of a scalar (or of no value: type NONE, word 0).
inline void chunk_put_scalar(ChunkWriter *w, int32_t status, uint32_t type, uint64_t word)
{
	const ChunkEntry e = {(int16_t)status, (uint16_t)type, 0, word};
	memcpy(w->base + kChunkHeadBytes + (uint64_t)w->next * kChunkEntryBytes, &e, sizeof e);
	w->next++;
}

// The next entry, of any value accepted by codec_value_check, its payload
// (if any) at w->data: the buffer has chunk_payload_bytes(v) bytes there.
inline void chunk_put(ChunkWriter *w, int32_t status, const knit_value_t &v)
{
	if (!codec_has_bytes(v.type)) {
		chunk_put_scalar(w, status, v.type, chunk_scalar_word(v));
		return;
	}
	const ChunkEntry e = {(int16_t)status, (uint16_t)v.type,
			      v.type == KNIT_VALUE_ERROR ? v.code : 0, (uint64_t)v.len};
	memcpy(w->base + kChunkHeadBytes + (uint64_t)w->next * kChunkEntryBytes, &e, sizeof e);
	w->next++;
	uint8_t *d = w->base + w->data;
	if (v.len != 0)
		memcpy(d, v.data, v.len);
	const uint64_t room = chunk_payload_bytes(v);
	memset(d + v.len, 0, room - v.len); // the NUL and the padding
	w->data += room;
}

// Reads a chunk: chunk_open, then chunk_next up to `count` times.
struct ChunkReader {
	const uint8_t *base;
	uint64_t len;
	uint32_t count;
	uint32_t next;
	uint64_t data; // the next payload's offset
};

// Open buf[0 .. len) as a chunk of this magic: 0 with *task and r->count
// (at most max_count) set, or -KNIT_EPROTO (too short, another magic, a
// count over max_count or one whose entries do not fit).
int chunk_open(ChunkReader *r, const void *buf, uint64_t len, uint32_t magic, uint32_t max_count,
	       uint32_t *task);

// The next entry: 0 with its status and a view of its value (bytes inside
// the buffer), or -KNIT_EPROTO (none left, or malformed: an unknown type, a
// BOOL not 0/1, a payload outside the buffer, a string without its NUL, a
// status the chunk's magic does not allow). After an error the reader
// stays failed. An item's status is 0; an outcome's is 0 (any value),
// -KNIT_ETASK (an ERROR value), or with no value -KNIT_ETOOBIG,
// -KNIT_ECANCELED, -KNIT_EPROTO or -KNIT_ENOMEM (src/task.cpp chunk_task).
int chunk_next_slow(ChunkReader *r, uint32_t magic, int32_t *status, knit_value_t *v);

inline int chunk_next(ChunkReader *r, uint32_t magic, int32_t *status, knit_value_t *v)
{
	if (KNIT_LIKELY(r->next < r->count)) {
		ChunkEntry e;
		memcpy(&e, r->base + kChunkHeadBytes + (uint64_t)r->next * kChunkEntryBytes,
		       sizeof e);
		// The common entry: status 0 and a scalar.
		if (KNIT_LIKELY(e.status == 0 && e.code == 0 &&
				(e.type == KNIT_VALUE_NONE || e.type == KNIT_VALUE_I64 ||
				 e.type == KNIT_VALUE_F64 ||
				 (e.type == KNIT_VALUE_BOOL && e.word <= 1)))) {
			v->type = e.type;
			v->code = 0;
			v->i64 = e.type == KNIT_VALUE_F64 ? 0 : (int64_t)e.word;
			const uint64_t bits = e.type == KNIT_VALUE_F64 ? e.word : 0;
			memcpy(&v->f64, &bits, sizeof bits);
			v->data = nullptr;
			v->len = 0;
			*status = 0;
			r->next++;
			return 0;
		}
	}
	return chunk_next_slow(r, magic, status, v);
}

} // namespace knit::detail

#endif
