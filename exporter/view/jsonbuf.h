/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonbuf: JSON text (RFC 8259) written into one growing buffer, for the document of
 * `spanprof view` (view/doc.c). Start with a zeroed struct jsonbuf; every writer appends, and the
 * first allocation failure makes the buffer "oom": later writes do nothing and
 * jsonbuf__finish() reports -ENOMEM, so callers check once, at the end. Strings are escaped
 * (jsonbuf__jstr(): control characters, quotes, backslashes, invalid UTF-8 as U+FFFD, "</" and
 * "<!--", so the text can sit inside an HTML <script>). The buffer is the caller's after
 * jsonbuf__finish() (free() it).
 */
#ifndef SPANPROF_VIEW_JSONBUF_H
#define SPANPROF_VIEW_JSONBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jsonbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

/* Room for @more bytes and the final NUL; false (and the buffer oom) when it can't grow. */
bool jsonbuf__room(struct jsonbuf *b, size_t more);
/* @n raw bytes of @s. */
void jsonbuf__put(struct jsonbuf *b, const void *s, size_t n);
/* The NUL-terminated text @s, raw (JSON punctuation, keys known to need no escape). */
void jsonbuf__lit(struct jsonbuf *b, const char *s);
void jsonbuf__ch(struct jsonbuf *b, char c);
/* A JSON number: @v in decimal. */
void jsonbuf__i64(struct jsonbuf *b, int64_t v);
void jsonbuf__u64(struct jsonbuf *b, uint64_t u);
/* A JSON string of the @n bytes at @str, escaped. */
void jsonbuf__jstr(struct jsonbuf *b, const char *str, size_t n);
/* A JSON string of the lower-case hex of the @n bytes at @p. */
void jsonbuf__hex(struct jsonbuf *b, const uint8_t *p, size_t n);
/* "@k": (the key is not escaped). */
void jsonbuf__key(struct jsonbuf *b, const char *k);
/* "@key":[...] of the int32 (col32) or int64 (col64) field at @base of @n elements @stride
 * bytes apart (an array of structs, or a plain array with @stride its element size). */
void jsonbuf__col32(struct jsonbuf *b, const char *key, const void *base, size_t n, size_t stride);
void jsonbuf__col64(struct jsonbuf *b, const char *key, const void *base, size_t n, size_t stride);
/* The NUL-terminated text into *@out (the caller frees it) and its length, or -ENOMEM (and the
 * buffer freed). */
int jsonbuf__finish(struct jsonbuf *b, char **out, size_t *len);

#endif /* SPANPROF_VIEW_JSONBUF_H */
