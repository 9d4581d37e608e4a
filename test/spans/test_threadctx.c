// SPDX-License-Identifier: Apache-2.0
/* Unit tests of threadctx (OTEP 4947 records): headers, attributes, garbage and truncation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spans/threadctx.h"

struct seen {
	int n;
	uint8_t key[THREADCTX_MAX_KEYS];
	char value[THREADCTX_MAX_KEYS][256];
	size_t len[THREADCTX_MAX_KEYS];
};

static void collect(void *ctx, uint8_t key_index, const uint8_t *value, size_t len)
{
	struct seen *s = ctx;

	s->key[s->n] = key_index;
	memcpy(s->value[s->n], value, len);
	s->value[s->n][len] = 0;
	s->len[s->n] = len;
	s->n++;
}

/* A record with a non-zero trace id, valid = 1, and @attrs (@n bytes) as attrs_data. */
static size_t make_record(uint8_t *rec, const void *attrs, uint16_t n)
{
	int i;

	memset(rec, 0, THREADCTX_MAX_RECORD);
	for (i = 0; i < 16; i++)
		rec[i] = (uint8_t)(0xa0 + i);
	for (i = 0; i < 8; i++)
		rec[16 + i] = (uint8_t)(0x10 * i + 1);
	rec[THREADCTX_OFF_VALID] = 1;
	rec[THREADCTX_OFF_TRACE_FLAGS] = 1;
	memcpy(rec + THREADCTX_OFF_ATTRS_SIZE, &n, 2);
	if (n)
		memcpy(rec + THREADCTX_HEADER_SIZE, attrs, n);
	return THREADCTX_HEADER_SIZE + n;
}

static void test_header(void **state)
{
	uint8_t rec[THREADCTX_MAX_RECORD];
	size_t len = make_record(rec, "\0\1x", 3);
	uint16_t big;

	assert_int_equal(threadctx__check_header(rec, len), THREADCTX_OK);
	assert_int_equal(threadctx__check_header(rec, sizeof(rec)), THREADCTX_OK);
	assert_int_equal(threadctx__attrs_size(rec), 3);
	assert_int_equal(threadctx__check_header(rec, len - 1), THREADCTX_TRUNCATED);
	assert_int_equal(threadctx__check_header(rec, THREADCTX_HEADER_SIZE - 1),
			 THREADCTX_TRUNCATED);
	assert_int_equal(threadctx__check_header(NULL, 100), THREADCTX_TRUNCATED);
	rec[THREADCTX_OFF_VALID] = 0;
	assert_int_equal(threadctx__check_header(rec, len), THREADCTX_NOT_VALID);
	rec[THREADCTX_OFF_VALID] = 2;
	assert_int_equal(threadctx__check_header(rec, len), THREADCTX_NOT_VALID);
	rec[THREADCTX_OFF_VALID] = 1;
	memset(rec, 0, 16);
	assert_int_equal(threadctx__check_header(rec, len), THREADCTX_ZERO_TRACE);
	rec[15] = 1; /* one non-zero byte is enough */
	assert_int_equal(threadctx__check_header(rec, len), THREADCTX_OK);
	big = THREADCTX_MAX_ATTRS;
	memcpy(rec + THREADCTX_OFF_ATTRS_SIZE, &big, 2);
	assert_int_equal(threadctx__check_header(rec, THREADCTX_MAX_RECORD), THREADCTX_OK);
	big = THREADCTX_MAX_ATTRS + 1;
	memcpy(rec + THREADCTX_OFF_ATTRS_SIZE, &big, 2);
	assert_int_equal(threadctx__check_header(rec, 4096), THREADCTX_ATTRS_TOO_BIG);
	big = 0xffff;
	memcpy(rec + THREADCTX_OFF_ATTRS_SIZE, &big, 2);
	assert_int_equal(threadctx__check_header(rec, 4096), THREADCTX_ATTRS_TOO_BIG);
}

static void test_hex(void **state)
{
	uint8_t rec[THREADCTX_MAX_RECORD];
	char trace[33], span[17];

	make_record(rec, NULL, 0);
	threadctx__hex(rec + THREADCTX_OFF_TRACE_ID, THREADCTX_TRACE_ID_LEN, trace);
	threadctx__hex(rec + THREADCTX_OFF_SPAN_ID, THREADCTX_SPAN_ID_LEN, span);
	assert_string_equal(trace, "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
	assert_string_equal(span, "0111213141516171");
	threadctx__hex((const uint8_t *)"\xff\x00\x0f", 3, trace);
	assert_string_equal(trace, "ff000f");
	threadctx__hex(NULL, 0, trace);
	assert_string_equal(trace, "");
}

static void test_attrs(void **state)
{
	/* key 2 "GET", key 0 "svc", key 2 again "POST" (wins), key 9 out of range, key 1 empty */
	static const uint8_t attrs[] = {2, 3,	'G', 'E', 'T', 0, 3, 's', 'v', 'c', 2,
					4, 'P', 'O', 'S', 'T', 9, 2, 'n', 'o', 1,   0};
	struct seen s = {0};

	assert_int_equal(threadctx__parse_attrs(attrs, sizeof(attrs), 3, collect, &s), 3);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.key[0], 0);
	assert_string_equal(s.value[0], "svc");
	assert_int_equal(s.key[1], 1);
	assert_int_equal(s.len[1], 0);
	assert_int_equal(s.key[2], 2);
	assert_string_equal(s.value[2], "POST");

	/* With 10 keys, key 9 counts; with none, nothing does. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(threadctx__parse_attrs(attrs, sizeof(attrs), 10, collect, &s), 4);
	assert_string_equal(s.value[3], "no");
	assert_int_equal(threadctx__parse_attrs(attrs, sizeof(attrs), 0, collect, &s), 0);
	/* A callback is optional: the count alone. */
	assert_int_equal(threadctx__parse_attrs(attrs, sizeof(attrs), 256, NULL, NULL), 4);
	/* More than 256 keys is the same as 256 (key_index is a u8). */
	assert_int_equal(threadctx__parse_attrs(attrs, sizeof(attrs), 100000, NULL, NULL), 4);
	assert_int_equal(threadctx__parse_attrs(NULL, 10, 3, NULL, NULL), 0);
	assert_int_equal(threadctx__parse_attrs(attrs, 0, 3, NULL, NULL), 0);
}

static void test_attrs_truncated(void **state)
{
	static const uint8_t attrs[] = {0, 3, 'a', 'b', 'c', 1, 2, 'd', 'e'};
	struct seen s;
	size_t len;

	/* Every cut: the first entry needs 5 bytes, the second 4 more. */
	for (len = 0; len <= sizeof(attrs); len++) {
		memset(&s, 0, sizeof(s));
		int n = threadctx__parse_attrs(attrs, len, 2, collect, &s);

		assert_int_equal(n, len < 5 ? 0 : len < 9 ? 1 : 2);
		if (n)
			assert_string_equal(s.value[0], "abc");
	}
	/* A length running past the end stops the walk: the entry before it survives. */
	static const uint8_t over[] = {0, 1, 'x', 1, 200, 'y'};
	memset(&s, 0, sizeof(s));
	assert_int_equal(threadctx__parse_attrs(over, sizeof(over), 2, collect, &s), 1);
	assert_string_equal(s.value[0], "x");
	/* A trailing lone byte is ignored. */
	static const uint8_t lone[] = {0, 0, 1};
	assert_int_equal(threadctx__parse_attrs(lone, sizeof(lone), 2, NULL, NULL), 1);
}

/* Random bytes: no crash, every reported value inside the input, count bounded by the keys. */
static void test_garbage(void **state)
{
	uint8_t buf[THREADCTX_MAX_RECORD + 64];
	struct seen s;
	size_t len, i;
	int iter, n;

	srand(3);
	for (iter = 0; iter < 20000; iter++) {
		len = (size_t)rand() % sizeof(buf);
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)rand();
		if (iter & 1)
			buf[THREADCTX_OFF_VALID % (len ? len : 1)] = 1;
		(void)threadctx__check_header(buf, len);
		memset(&s, 0, sizeof(s));
		n = threadctx__parse_attrs(buf, len, (size_t)rand() % 300, collect, &s);
		assert_true(n >= 0 && n <= 256);
		assert_int_equal(n, s.n);
		for (i = 1; i < (size_t)s.n; i++)
			assert_true(s.key[i - 1] < s.key[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header),  cmocka_unit_test(test_hex),
	    cmocka_unit_test(test_attrs),   cmocka_unit_test(test_attrs_truncated),
	    cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
