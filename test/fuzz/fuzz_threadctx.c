// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: an OTEP 4947 thread-context record, as the BPF side copies it, through
 * threadctx__check_header() and threadctx__parse_attrs() (exporter/spans/threadctx.c). The
 * attributes are parsed with the key map sizes the agent meets (none, the input's own choice, all
 * 256, and more than a u8 can index), and every callback must name a key below that size, in
 * increasing order, with a value inside the bytes given.
 */
#include <string.h>

#include "fuzz.h"
#include "spans/threadctx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

struct walk {
	const uint8_t *data;
	size_t len, nkeys;
	int calls, last_key;
};

static void on_attr(void *ctx, uint8_t key, const uint8_t *value, size_t len)
{
	struct walk *w = ctx;

	FUZZ_CHECK(key < w->nkeys && (int)key > w->last_key);
	FUZZ_CHECK(len <= 255 && value >= w->data + 2);
	/* Inside the bytes given, and inside the THREADCTX_MAX_ATTRS looked at. */
	FUZZ_CHECK((size_t)(value - w->data) + len <= w->len);
	FUZZ_CHECK((size_t)(value - w->data) + len <= THREADCTX_MAX_ATTRS);
	w->last_key = key;
	w->calls++;
}

static void walk(const uint8_t *data, size_t len, size_t nkeys)
{
	struct walk w = {.data = data, .len = len, .nkeys = nkeys, .last_key = -1};
	int n;

	n = threadctx__parse_attrs(data, len, nkeys, on_attr, &w);
	FUZZ_CHECK(n == w.calls && n >= 0 && (size_t)n <= nkeys);
	FUZZ_CHECK(threadctx__parse_attrs(data, len, nkeys, NULL, NULL) == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hex[2 * THREADCTX_TRACE_ID_LEN + 1];
	enum threadctx_status st;
	uint16_t attrs;
	/* A copy of exactly @size bytes: ASan then catches a read past the record. */
	uint8_t *rec = malloc(size ? size : 1);

	if (!rec)
		return 0;
	memcpy(rec, data, size);
	st = threadctx__check_header(rec, size);
	FUZZ_CHECK(st >= THREADCTX_OK && st <= THREADCTX_TRUNCATED);
	if (st == THREADCTX_OK) {
		attrs = threadctx__attrs_size(rec);
		FUZZ_CHECK(attrs <= THREADCTX_MAX_ATTRS && THREADCTX_HEADER_SIZE + attrs <= size);
		threadctx__hex(rec + THREADCTX_OFF_TRACE_ID, THREADCTX_TRACE_ID_LEN, hex);
		FUZZ_CHECK(strlen(hex) == 2 * THREADCTX_TRACE_ID_LEN);
		threadctx__hex(rec + THREADCTX_OFF_SPAN_ID, THREADCTX_SPAN_ID_LEN, hex);
		FUZZ_CHECK(strlen(hex) == 2 * THREADCTX_SPAN_ID_LEN);
		walk(rec + THREADCTX_HEADER_SIZE, attrs, 0);
		walk(rec + THREADCTX_HEADER_SIZE, attrs, rec[THREADCTX_OFF_TRACE_FLAGS]);
		walk(rec + THREADCTX_HEADER_SIZE, attrs, THREADCTX_MAX_KEYS);
	} else if (size >= THREADCTX_HEADER_SIZE && rec[THREADCTX_OFF_VALID] != 1) {
		FUZZ_CHECK(st == THREADCTX_NOT_VALID); /* the order threadctx.h gives */
	}
	/* The whole input as attrs_data: lengths beyond THREADCTX_MAX_ATTRS are clamped. */
	walk(rec, size, 1000);
	free(rec);
	return 0;
}
