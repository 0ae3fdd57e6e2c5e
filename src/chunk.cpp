// SPDX-License-Identifier: MIT
// src/chunk.cpp - a knit_map chunk's writer start and its total reader
// (src/chunk.h has the layout).
#include "src/chunk.h"

namespace knit::detail {

void chunk_begin(ChunkWriter *w, uint8_t *buf, uint32_t magic, uint32_t task, uint32_t count)
{
	const ChunkHead h = {magic, task, count, 0};
	memcpy(buf, &h, sizeof h);
	w->base = buf;
	w->count = count;
	w->next = 0;
	w->data = chunk_bytes(count, 0);
}

int chunk_open(ChunkReader *r, const void *buf, uint64_t len, uint32_t magic, uint32_t max_count,
	       uint32_t *task)
{
	r->base = static_cast<const uint8_t *>(buf);
	r->len = len;
	r->count = 0;
	r->next = 0;
	r->data = 0;
	ChunkHead h;
	if (buf == nullptr || len < sizeof h)
		return -KNIT_EPROTO;
	memcpy(&h, buf, sizeof h);
	if (h.magic != magic || h.zero != 0 || h.count > max_count || chunk_bytes(h.count, 0) > len)
		return -KNIT_EPROTO;
	r->count = h.count;
	r->data = chunk_bytes(h.count, 0);
	*task = h.task;
	return 0;
}

int chunk_next_slow(ChunkReader *r, uint32_t magic, int32_t *status, knit_value_t *v)
{
	if (r->next >= r->count)
		return -KNIT_EPROTO;
	ChunkEntry e;
	memcpy(&e, r->base + kChunkHeadBytes + (uint64_t)r->next * kChunkEntryBytes, sizeof e);
	// What is left of the buffer for payloads (r->data <= r->len always).
	const uint64_t left = r->len - r->data;
	const uint8_t *payload = r->base + r->data;
	const bool bytes = codec_has_bytes(e.type);
	// codec_words_ok reads payload[word] only when word < left.
	if (!codec_words_ok(e.type, e.word, payload, left))
		goto bad;
	if (magic == kChunkItems) {
		if (e.status != 0)
			goto bad;
	} else if (!(e.status == 0 || (e.status == -KNIT_ETASK && e.type == KNIT_VALUE_ERROR) ||
		     (e.type == KNIT_VALUE_NONE &&
		      (e.status == -KNIT_ETOOBIG || e.status == -KNIT_ECANCELED ||
		       e.status == -KNIT_EPROTO || e.status == -KNIT_ENOMEM)))) {
		goto bad;
	}
	if (e.type != KNIT_VALUE_ERROR && e.code != 0)
		goto bad;
	*v = codec_value_of(e.type, e.code, e.word, payload);
	*status = e.status;
	if (bytes) {
		// Its padded room (word < left or word <= left, so no overflow).
		const uint64_t room = (codec_stored_bytes(e.type, e.word) + 7) & ~(uint64_t)7;
		if (room > left)
			goto bad;
		r->data += room;
	}
	r->next++;
	return 0;
bad:
	r->next = r->count; // failed for good
	memset(v, 0, sizeof *v);
	v->type = KNIT_VALUE_NONE;
	return -KNIT_EPROTO;
}

} // namespace knit::detail
