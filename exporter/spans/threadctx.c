// SPDX-License-Identifier: Apache-2.0
/* threadctx: OTEP 4947 thread-context records, checked and parsed from a copy. */
#include <stdbool.h>
#include <string.h>

#include "spans/threadctx.h"

uint16_t threadctx__attrs_size(const uint8_t *rec)
{
	uint16_t v;

	memcpy(&v, rec + THREADCTX_OFF_ATTRS_SIZE, sizeof(v)); /* host endian, maybe unaligned */
	return v;
}

enum threadctx_status threadctx__check_header(const uint8_t *rec, size_t len)
{
	static const uint8_t zero[THREADCTX_TRACE_ID_LEN];
	uint16_t attrs;

	if (!rec || len < THREADCTX_HEADER_SIZE)
		return THREADCTX_TRUNCATED;
	if (rec[THREADCTX_OFF_VALID] != 1)
		return THREADCTX_NOT_VALID;
	if (!memcmp(rec + THREADCTX_OFF_TRACE_ID, zero, sizeof(zero)))
		return THREADCTX_ZERO_TRACE;
	attrs = threadctx__attrs_size(rec);
	if (attrs > THREADCTX_MAX_ATTRS)
		return THREADCTX_ATTRS_TOO_BIG;
	if (len - THREADCTX_HEADER_SIZE < attrs)
		return THREADCTX_TRUNCATED;
	return THREADCTX_OK;
}

int threadctx__parse_attrs(const uint8_t *data, size_t len, size_t nkeys,
			   void (*fn)(void *ctx, uint8_t key_index, const uint8_t *value,
				      size_t len),
			   void *ctx)
{
	/* Where each key's last value starts (offset + 1; 0 = absent) and its length. */
	uint16_t at[THREADCTX_MAX_KEYS] = {0};
	uint8_t vlen[THREADCTX_MAX_KEYS];
	size_t pos = 0, k;
	int n = 0;

	if (!data)
		return 0;
	if (len > THREADCTX_MAX_ATTRS)
		len = THREADCTX_MAX_ATTRS; /* keeps every offset within u16 */
	if (nkeys > THREADCTX_MAX_KEYS)
		nkeys = THREADCTX_MAX_KEYS;
	while (len - pos >= 2 && len - pos - 2 >= data[pos + 1]) {
		k = data[pos];
		if (k < nkeys) {
			at[k] = (uint16_t)(pos + 2 + 1);
			vlen[k] = data[pos + 1];
		}
		pos += 2 + (size_t)data[pos + 1];
	}
	for (k = 0; k < nkeys; k++) {
		if (!at[k])
			continue;
		if (fn)
			fn(ctx, (uint8_t)k, data + at[k] - 1, vlen[k]);
		n++;
	}
	return n;
}

void threadctx__hex(const uint8_t *id, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = 0;
}
