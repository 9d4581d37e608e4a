/* SPDX-License-Identifier: Apache-2.0 */
/* jsonbuf: JSON text into a growing buffer (view/jsonbuf.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view/jsonbuf.h"

bool jsonbuf__room(struct jsonbuf *b, size_t more)
{
	size_t c;
	char *np;

	if (b->oom)
		return false;
	if (b->n + more + 1 <= b->cap)
		return true;
	c = b->cap ? b->cap : 1 << 16;
	while (c < b->n + more + 1)
		c *= 2;
	np = realloc(b->p, c);
	if (!np) {
		b->oom = true;
		return false;
	}
	b->p = np;
	b->cap = c;
	return true;
}

void jsonbuf__put(struct jsonbuf *b, const void *s, size_t n)
{
	if (!jsonbuf__room(b, n))
		return;
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

void jsonbuf__lit(struct jsonbuf *b, const char *s)
{
	jsonbuf__put(b, s, strlen(s));
}

void jsonbuf__ch(struct jsonbuf *b, char c)
{
	if (jsonbuf__room(b, 1))
		b->p[b->n++] = c;
}

void jsonbuf__i64(struct jsonbuf *b, int64_t v)
{
	char tmp[24], *e = tmp + sizeof(tmp), *q = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do {
		*--q = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--q = '-';
	jsonbuf__put(b, q, (size_t)(e - q));
}

void jsonbuf__u64(struct jsonbuf *b, uint64_t u)
{
	char tmp[24], *e = tmp + sizeof(tmp), *q = e;

	do {
		*--q = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	jsonbuf__put(b, q, (size_t)(e - q));
}

/* Length of the valid UTF-8 sequence at @s (RFC 3629), 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0; /* overlong, surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

/* A JSON string that can sit inside an HTML <script> (jsonbuf.h). */
void jsonbuf__jstr(struct jsonbuf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run;

	jsonbuf__ch(b, '"');
	while (i < n) {
		unsigned char c = s[i];
		size_t l;

		/* Plain ASCII runs are copied as they are. */
		for (run = i; run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' &&
			      s[run] != '\\' && s[run] != '<';
		     run++)
			;
		if (run > i) {
			jsonbuf__put(b, s + i, run - i);
			i = run;
			continue;
		}
		switch (c) {
		case '"':
			jsonbuf__lit(b, "\\\"");
			i++;
			continue;
		case '\\':
			jsonbuf__lit(b, "\\\\");
			i++;
			continue;
		case '\n':
			jsonbuf__lit(b, "\\n");
			i++;
			continue;
		case '\t':
			jsonbuf__lit(b, "\\t");
			i++;
			continue;
		case '\r':
			jsonbuf__lit(b, "\\r");
			i++;
			continue;
		case '<':
			if (i + 1 < n && s[i + 1] == '/')
				jsonbuf__lit(b, "<\\/"), i += 2;
			else if (n - i >= 4 && !memcmp(s + i, "<!--", 4))
				jsonbuf__lit(b, "\\u003c!--"), i += 4;
			else
				jsonbuf__ch(b, '<'), i++;
			continue;
		}
		if (c < 0x20) {
			char esc[8];

			snprintf(esc, sizeof(esc), "\\u%04x", c);
			jsonbuf__put(b, esc, 6);
			i++;
			continue;
		}
		l = utf8_len(s + i, n - i);
		if (l) {
			jsonbuf__put(b, s + i, l);
			i += l;
		} else {
			jsonbuf__lit(b, "\\ufffd");
			i++;
		}
	}
	jsonbuf__ch(b, '"');
}

void jsonbuf__hex(struct jsonbuf *b, const uint8_t *p, size_t n)
{
	static const char hx[] = "0123456789abcdef";

	if (!jsonbuf__room(b, 2 * n + 2))
		return;
	b->p[b->n++] = '"';
	for (size_t i = 0; i < n; i++) {
		b->p[b->n++] = hx[p[i] >> 4];
		b->p[b->n++] = hx[p[i] & 15];
	}
	b->p[b->n++] = '"';
}

void jsonbuf__key(struct jsonbuf *b, const char *k)
{
	jsonbuf__ch(b, '"');
	jsonbuf__lit(b, k);
	jsonbuf__lit(b, "\":");
}

/* A column of int32 fields of an array of structs (or of a plain array: @stride sizeof). */
void jsonbuf__col32(struct jsonbuf *b, const char *key, const void *base, size_t n, size_t stride)
{
	const char *p = base;

	jsonbuf__key(b, key);
	jsonbuf__ch(b, '[');
	for (size_t i = 0; i < n; i++, p += stride) {
		int32_t v;

		memcpy(&v, p, sizeof(v));
		if (i)
			jsonbuf__ch(b, ',');
		jsonbuf__i64(b, v);
	}
	jsonbuf__ch(b, ']');
}

void jsonbuf__col64(struct jsonbuf *b, const char *key, const void *base, size_t n, size_t stride)
{
	const char *p = base;

	jsonbuf__key(b, key);
	jsonbuf__ch(b, '[');
	for (size_t i = 0; i < n; i++, p += stride) {
		int64_t v;

		memcpy(&v, p, sizeof(v));
		if (i)
			jsonbuf__ch(b, ',');
		jsonbuf__i64(b, v);
	}
	jsonbuf__ch(b, ']');
}

/* The NUL-terminated buffer of @b, or -ENOMEM (and @b freed). */
int jsonbuf__finish(struct jsonbuf *b, char **out, size_t *len)
{
	if (b->oom || !jsonbuf__room(b, 0)) {
		free(b->p);
		return -ENOMEM;
	}
	b->p[b->n] = '\0';
	*out = b->p;
	*len = b->n;
	return 0;
}
