// SPDX-License-Identifier: MIT
// src/codec.cpp - value encode/decode for lock frames (see codec.h for the
// placement rules). The encoder trusts its caller (after codec_check); the
// decoder trusts nothing: every word of the task line snapshot and every
// arena reference is bounds-checked with 64-bit arithmetic before a byte is
// touched, so a decode can only look inside the slot's inline area or inside
// a live arena allocation.
#include "src/common.h"

#include "src/codec.h"

namespace knit::detail {

int codec_check(const knit_value_t &v, uint64_t per_call_max)
{
	switch (v.type) {
	case KNIT_VALUE_NONE:
	case KNIT_VALUE_BOOL:
	case KNIT_VALUE_I64:
	case KNIT_VALUE_F64:
		return 0;
	case KNIT_VALUE_BYTES:
	case KNIT_VALUE_STRING:
	case KNIT_VALUE_ERROR:
		if (v.data == nullptr && v.len > 0)
			return -KNIT_EINVAL;
		// vlen is a u32 and a string needs one more byte for its NUL.
		if (v.len > per_call_max || (uint64_t)v.len >= 0xFFFFFFFFull)
			return -KNIT_ETOOBIG;
		return 0;
	default:
		return -KNIT_EINVAL;
	}
}

uint64_t codec_scalar_of(const knit_value_t &v)
{
	if (v.type == KNIT_VALUE_BOOL || v.type == KNIT_VALUE_I64)
		return (uint64_t)v.i64;
	if (v.type == KNIT_VALUE_F64) {
		uint64_t bits;
		memcpy(&bits, &v.f64, sizeof bits);
		return bits;
	}
	if (codec_has_bytes(v.type))
		return (uint64_t)v.len;
	return 0;
}

knit_value_t codec_value_of(uint32_t type, int32_t code, uint64_t scalar, const uint8_t *payload)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = type;
	if (type == KNIT_VALUE_BOOL || type == KNIT_VALUE_I64) {
		v.i64 = (int64_t)scalar;
	} else if (type == KNIT_VALUE_F64) {
		memcpy(&v.f64, &scalar, sizeof v.f64);
	} else if (codec_has_bytes(type)) {
		v.data = payload;
		v.len = (size_t)scalar;
		if (type == KNIT_VALUE_ERROR)
			v.code = code;
	}
	return v;
}

bool codec_words_ok(uint32_t type, uint64_t scalar, const uint8_t *payload, uint64_t capacity)
{
	switch (type) {
	case KNIT_VALUE_NONE:
	case KNIT_VALUE_I64:
	case KNIT_VALUE_F64:
		return true;
	case KNIT_VALUE_BOOL:
		return scalar <= 1;
	case KNIT_VALUE_BYTES:
		return scalar <= capacity;
	case KNIT_VALUE_STRING:
	case KNIT_VALUE_ERROR:
		return scalar < capacity && payload[scalar] == 0;
	default:
		return false;
	}
}

static void clear_value_words(TaskLine *line, uint32_t type)
{
	line->vtype = type;
	line->vcode = 0;
	line->vlen = 0;
	line->scalar = 0;
	line->where = kWhereNone;
	line->arena_slot = 0;
	line->arena_off = 0;
	line->reserved = 0;
}

int codec_encode(const knit_value_t &v, uint8_t *inline_area, ArenaProducer *arena, TaskLine *line)
{
	clear_value_words(line, v.type);
	switch (v.type) {
	case KNIT_VALUE_NONE:
		return 0;
	case KNIT_VALUE_BOOL:
		line->scalar = v.i64 != 0 ? 1 : 0;
		return 0;
	case KNIT_VALUE_I64:
		line->scalar = (uint64_t)v.i64;
		return 0;
	case KNIT_VALUE_F64:
		memcpy(&line->scalar, &v.f64, sizeof line->scalar);
		return 0;
	case KNIT_VALUE_BYTES:
	case KNIT_VALUE_STRING:
	case KNIT_VALUE_ERROR:
		break;
	default:
		return -KNIT_EINVAL;
	}
	const uint32_t len = (uint32_t)v.len;
	const uint64_t stored = codec_stored_bytes(v.type, len);
	line->vcode = v.type == KNIT_VALUE_ERROR ? v.code : 0;
	line->vlen = len;
	uint8_t *dst;
	if (stored <= kInlineBytes) {
		dst = inline_area;
		line->where = kWhereInline;
	} else {
		uint32_t slot, off;
		int rc = arena->alloc((uint32_t)stored, &slot, &off);
		if (rc != 0)
			return rc;
		dst = arena->at(off);
		line->where = kWhereArena;
		line->arena_slot = slot;
		line->arena_off = off;
	}
	if (len > 0)
		memcpy(dst, v.data, len);
	if (v.type != KNIT_VALUE_BYTES)
		dst[len] = 0;
	return 0;
}

int codec_encode_arena(uint32_t type, int32_t code, uint32_t len, uint32_t slot, uint32_t offset,
		       uint8_t *data, TaskLine *line)
{
	if (!codec_has_bytes(type))
		return -KNIT_EINVAL;
	clear_value_words(line, type);
	line->vcode = type == KNIT_VALUE_ERROR ? code : 0;
	line->vlen = len;
	line->where = kWhereArena;
	line->arena_slot = slot;
	line->arena_off = offset;
	if (type != KNIT_VALUE_BYTES)
		data[len] = 0;
	return 0;
}

int codec_decode(const TaskLine &snap, const uint8_t *inline_area, const ArenaShared &arena,
		 uint32_t held_slots, knit_value_t *view, uint32_t *arena_slot)
{
	memset(view, 0, sizeof *view);
	view->type = KNIT_VALUE_NONE;
	*arena_slot = kNoArenaSlot;

	const uint32_t type = snap.vtype;
	switch (type) {
	case KNIT_VALUE_NONE:
	case KNIT_VALUE_BOOL:
	case KNIT_VALUE_I64:
	case KNIT_VALUE_F64:
		if (snap.where != kWhereNone || snap.vlen != 0)
			return -KNIT_EPROTO;
		if (type == KNIT_VALUE_NONE) {
			return 0;
		} else if (type == KNIT_VALUE_BOOL) {
			if (snap.scalar > 1)
				return -KNIT_EPROTO;
			view->i64 = (int64_t)snap.scalar;
		} else if (type == KNIT_VALUE_I64) {
			view->i64 = (int64_t)snap.scalar;
		} else {
			memcpy(&view->f64, &snap.scalar, sizeof view->f64);
		}
		view->type = type;
		return 0;
	case KNIT_VALUE_BYTES:
	case KNIT_VALUE_STRING:
	case KNIT_VALUE_ERROR:
		break;
	default:
		return -KNIT_EPROTO;
	}

	const uint32_t len = snap.vlen;
	const uint64_t stored = codec_stored_bytes(type, len); // <= 2^32: no overflow in u64
	const uint8_t *data;
	uint32_t slot = kNoArenaSlot;
	if (snap.where == kWhereInline) {
		if (stored > kInlineBytes)
			return -KNIT_EPROTO;
		data = inline_area;
	} else if (snap.where == kWhereArena) {
		slot = snap.arena_slot;
		const uint64_t off = snap.arena_off;
		if (slot >= kArenaSlots || (held_slots >> slot) & 1u)
			return -KNIT_EPROTO;
		if (arena.capacity > kArenaMaxCapacity || off > arena.capacity ||
		    stored > arena.capacity - off)
			return -KNIT_EPROTO;
		// stored <= capacity <= 2^32 - 64 here, so it fits the u32 argument.
		if (arena_check(arena, slot, (uint32_t)off, (uint32_t)stored) != 0)
			return -KNIT_EPROTO;
		data = arena.base + off;
	} else {
		return -KNIT_EPROTO;
	}
	if (type != KNIT_VALUE_BYTES && data[len] != 0)
		return -KNIT_EPROTO;
	view->type = type;
	view->code = type == KNIT_VALUE_ERROR ? snap.vcode : 0;
	view->data = data;
	view->len = len;
	*arena_slot = slot;
	return 0;
}

} // namespace knit::detail
