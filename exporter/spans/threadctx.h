/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threadctx: the Thread-Local Context Record that otel_thread_ctx_v1 points to (OTEP 4947).
 * Byte-packed, host endian, 2-byte aligned start:
 *   trace_id u8[16] | span_id u8[8] | valid u8 | trace_flags u8 | attrs_data_size u16 |
 *   attrs_data u8[attrs_data_size]: entries {key_index u8, length u8, value u8[length]}.
 * The header is 28 bytes and the whole record at most 640 bytes. Key names come from the process
 * context's threadlocal.attribute_key_map (OTEP 4719, see procctx.h). Pure functions over bytes
 * already copied out of the process (the BPF side copies the record at sampling time).
 */
#ifndef SPANPROF_THREADCTX_H
#define SPANPROF_THREADCTX_H

#include <stddef.h>
#include <stdint.h>

#define THREADCTX_HEADER_SIZE 28
#define THREADCTX_MAX_ATTRS 612 /* attrs_data bytes: 640 - header */
#define THREADCTX_MAX_RECORD (THREADCTX_HEADER_SIZE + THREADCTX_MAX_ATTRS)
/* Field offsets inside the record. */
#define THREADCTX_OFF_TRACE_ID 0
#define THREADCTX_OFF_SPAN_ID 16
#define THREADCTX_OFF_VALID 24
#define THREADCTX_OFF_TRACE_FLAGS 25
#define THREADCTX_OFF_ATTRS_SIZE 26
#define THREADCTX_TRACE_ID_LEN 16
#define THREADCTX_SPAN_ID_LEN 8
#define THREADCTX_MAX_KEYS 256 /* key_index is a u8 */

enum threadctx_status {
	THREADCTX_OK = 0,
	THREADCTX_NOT_VALID,	 /* valid != 1: no span active, or being written */
	THREADCTX_ZERO_TRACE,	 /* trace id all zero */
	THREADCTX_ATTRS_TOO_BIG, /* attrs_data_size > THREADCTX_MAX_ATTRS */
	THREADCTX_TRUNCATED, /* @len shorter than the header, or than header + attrs_data_size */
};

/*
 * Checks the record header of the @len bytes at @rec, in this order: TRUNCATED (len < 28),
 * NOT_VALID, ZERO_TRACE, ATTRS_TOO_BIG, TRUNCATED (len < 28 + attrs_data_size).
 * THREADCTX_OK means trace id, span id, flags and attrs_data_size bytes of attributes can be used.
 */
enum threadctx_status threadctx__check_header(const uint8_t *rec, size_t len);

/* attrs_data_size of a record whose header is at least THREADCTX_HEADER_SIZE bytes. */
uint16_t threadctx__attrs_size(const uint8_t *rec);

/*
 * Walks the @len bytes (at most THREADCTX_MAX_ATTRS are looked at) of attrs_data at @data:
 * entries {key_index u8, length u8, value[length]};
 * stops when the rest can't hold an entry (fewer than 2 bytes, or a length past the end). The
 * LAST occurrence of a key index wins; key indexes >= @nkeys (the key map's size, at most 256)
 * are ignored. Calls @fn(@ctx, key_index, value, length) once per surviving key, in increasing
 * key_index order; value points into @data (length may be 0). Returns the number of calls.
 */
int threadctx__parse_attrs(const uint8_t *data, size_t len, size_t nkeys,
			   void (*fn)(void *ctx, uint8_t key_index, const uint8_t *value,
				      size_t len),
			   void *ctx);

/* Lower-case hex of the @n bytes at @id into @out (2 * @n + 1 bytes, NUL-terminated):
 * a trace id gives 32 characters, a span id 16. */
void threadctx__hex(const uint8_t *id, size_t n, char *out);

#endif /* SPANPROF_THREADCTX_H */
