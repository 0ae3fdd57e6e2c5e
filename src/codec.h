// SPDX-License-Identifier: MIT
// src/codec.h - the value codec of a lock frame: how a knit_value_t travels in
// a slot's task line (TaskLine value words), its 512-byte inline area, or the
// payload arena. Separate from the lane protocol (lock2.h) so it can be tested
// and fuzzed on its own.
//
// Placement (encoder):
//   NONE                   where = none, vlen = 0
//   BOOL / I64             scalar = the int64 (BOOL normalised to 0/1)
//   F64                    scalar = the IEEE-754 bits (NaN payloads, -0.0, inf kept)
//   BYTES                  vlen <= 512: inline; else arena (64-byte granules)
//   STRING / ERROR         bytes + a NUL at data[vlen]: vlen + 1 <= 512 inline,
//                          else arena; ERROR also carries vcode
// The decoder is total: any TaskLine bytes and any shared memory contents give
// either a view whose bytes lie entirely inside the slot's inline area or a
// live arena allocation, or -KNIT_EPROTO. It never frees anything itself.
#ifndef KNIT_SRC_CODEC_H
#define KNIT_SRC_CODEC_H

#include "knitting.h"

#include "src/arena.h"
#include "src/common.h"
#include "src/layout.h"

namespace knit::detail {

inline constexpr uint32_t kNoArenaSlot = 0xFFFFFFFFu;

// True for the types whose payload is a byte string (BYTES, STRING, ERROR).
constexpr bool codec_has_bytes(uint32_t type)
{
	return type == KNIT_VALUE_BYTES || type == KNIT_VALUE_STRING || type == KNIT_VALUE_ERROR;
}
// Bytes a payload of this type and length occupies (strings and error
// messages carry a trailing NUL).
constexpr uint64_t codec_stored_bytes(uint32_t type, uint64_t len)
{
	return type == KNIT_VALUE_BYTES ? len : len + 1;
}
// Does a payload of this type and length go in the slot's inline area?
constexpr bool codec_fits_inline(uint32_t type, uint64_t len)
{
	return codec_stored_bytes(type, len) <= kInlineBytes;
}

// Check a caller's value before anything is reserved. Returns 0,
// -KNIT_EINVAL (unknown type, NULL data with len > 0), or -KNIT_ETOOBIG
// (len > per_call_max or len does not fit a u32: never publishable).
int codec_check(const knit_value_t &v, uint64_t per_call_max);

// Check a value handed in by a caller or back by a task: codec_check, and a
// BOOL must be 0 or 1. Returns 0, -KNIT_EINVAL or -KNIT_ETOOBIG.
inline int codec_value_check(const knit_value_t &v, uint64_t per_call_max)
{
	if (v.type == KNIT_VALUE_BOOL && v.i64 != 0 && v.i64 != 1)
		return -KNIT_EINVAL;
	return codec_check(v, per_call_max);
}

// ---- the scalar-word form (a synchronous line's slots, src/syncline.h) ----
// A value as a type, an error code, one 64-bit scalar word and the payload
// bytes (strings and error messages NUL-terminated), without a TaskLine.

// The scalar word of a value: the int64 (BOOL, I64), the IEEE-754 bits
// (F64), or the payload length (BYTES, STRING, ERROR); 0 for NONE.
uint64_t codec_scalar_of(const knit_value_t &v);
// Rebuild a value of a known type from its words (the payload, if any, at
// `payload`, `scalar` bytes long). The caller checked them
// (codec_words_ok).
knit_value_t codec_value_of(uint32_t type, int32_t code, uint64_t scalar, const uint8_t *payload);
// Are these words a value that fits `capacity` payload bytes? (Type known,
// BOOL 0/1, the payload within capacity, strings and error messages
// NUL-terminated inside it.) Total: reads payload[scalar] only when
// scalar < capacity.
bool codec_words_ok(uint32_t type, uint64_t scalar, const uint8_t *payload, uint64_t capacity);

// Encode v (already accepted by codec_check) into the value words of *line
// (vtype, vcode, vlen, scalar, where, arena_slot, arena_off; other fields are
// left alone) and, for byte payloads, into inline_area (kInlineBytes, the
// slot's) or a fresh arena allocation. Returns 0, or -KNIT_EAGAIN (no arena
// room right now; nothing allocated) or -KNIT_ETOOBIG (the arena can never
// hold it). Caller: the producer thread that owns arena, with the lane private.
int codec_encode(const knit_value_t &v, uint8_t *inline_area, ArenaProducer *arena, TaskLine *line);

// Fill the value words of *line for a payload already written in place at
// arena allocation (slot, offset) of at least stored-bytes size: type must be
// BYTES, STRING or ERROR (code used for ERROR). Writes the NUL of strings.
// Returns 0 or -KNIT_EINVAL (type has no bytes).
int codec_encode_arena(uint32_t type, int32_t code, uint32_t len, uint32_t slot, uint32_t offset,
		       uint8_t *data, TaskLine *line);

// Decode the value words of a private snapshot of a task line. inline_area is
// the slot's (kInlineBytes). held_slots: arena slots this consumer already
// holds from earlier frames not yet released (a second reference to one of
// them is a protocol error: it would be a double free). On success returns 0,
// *view points into inline_area or the arena (valid until the frame is
// released/retired; bytes may still be changed by a hostile peer, copy before
// trusting them) and *arena_slot is the slot to free on release, or
// kNoArenaSlot. On a malformed frame returns -KNIT_EPROTO, *view is NONE and
// *arena_slot is kNoArenaSlot.
int codec_decode(const TaskLine &snap, const uint8_t *inline_area, const ArenaShared &arena,
		 uint32_t held_slots, knit_value_t *view, uint32_t *arena_slot);

} // namespace knit::detail

#endif
