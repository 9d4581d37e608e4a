// SPDX-License-Identifier: Apache-2.0
/*
 * read_common: what the readers of `spanprof view` share (read_common.h): the arena their
 * decoded messages live in, the reader state and its error, a scan of protobuf's wire format
 * (protobuf.dev/programming-guides/encoding) and the frames of a location.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view/doc.h"
#include "view/read_common.h"

/* --- arena: every decoded message, freed at once ------------------------------------------ */

void *rd__arena_alloc(struct arena *a, size_t size)
{
	struct arena_chunk *c = a->head;
	size_t al = sizeof(max_align_t);
	void *p;

	size = (size + al - 1) / al * al;
	if (!size)
		size = al;
	if (!c || c->size - c->used < size) {
		size_t cs = size > (1u << 20) ? size : (1u << 20);

		c = malloc(sizeof(*c) + cs);
		if (!c)
			return NULL;
		c->size = cs;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += size;
	return p;
}

void *rd__arena_zalloc(struct arena *a, size_t size)
{
	void *p = rd__arena_alloc(a, size);

	if (p)
		memset(p, 0, size);
	return p;
}

void rd__arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *n = a->head->next;

		free(a->head);
		a->head = n;
	}
}

void *rd__pb_alloc(void *ad, size_t size)
{
	return rd__arena_alloc(ad, size);
}

void rd__pb_free(void *ad, void *p)
{
}

/* --- reader state ------------------------------------------------------------------------- */

int rd__fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->err[0])
		return -EINVAL;
	n = snprintf(r->err, sizeof(r->err), "%s", r->where);
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int rd__oom(struct rd *r)
{
	r->oom = true;
	return -ENOMEM;
}

/* --- protobuf wire scan ------------------------------------------------------------------- */

static bool varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (*i >= n)
			return false;
		x |= (uint64_t)(p[*i] & 0x7f) << shift;
		if (!(p[(*i)++] & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

int rd__scan_fields(const uint8_t *p, size_t n, uint32_t *maxfield, char *why, size_t wl)
{
	size_t i = 0;

	*maxfield = 0;
	why[0] = '\0';
	while (i < n) {
		size_t at = i;
		uint64_t tag, len;
		uint32_t field;

		if (!varint(p, n, &i, &tag)) {
			snprintf(why, wl, "the field tag at byte %zu is cut off", at);
			return -EINVAL;
		}
		field = (uint32_t)(tag >> 3);
		if (field == 0 || tag >> 32) {
			snprintf(why, wl, "byte %zu holds no valid field tag", at);
			return -EINVAL;
		}
		switch (tag & 7) {
		case 0:
			if (!varint(p, n, &i, &len)) {
				snprintf(why, wl, "field %u at byte %zu is cut off", field, at);
				return at && field <= 15 ? -E2BIG : -EINVAL;
			}
			break;
		case 1:
		case 5:
			len = (tag & 7) == 1 ? 8 : 4;
			if (n - i < len) {
				snprintf(why, wl, "field %u at byte %zu is cut off", field, at);
				return at && field <= 15 ? -E2BIG : -EINVAL;
			}
			i += len;
			break;
		case 2:
			if (!varint(p, n, &i, &len)) {
				snprintf(why, wl, "the length of field %u at byte %zu is cut off",
					 field, at);
				return at && field <= 15 ? -E2BIG : -EINVAL;
			}
			if (len > n - i) {
				snprintf(
				    why, wl,
				    "field %u at byte %zu holds %llu bytes but only %zu remain",
				    field, at, (unsigned long long)len, n - i);
				return at && field <= 15 && *maxfield <= 15 ? -E2BIG : -EINVAL;
			}
			i += len;
			break;
		default:
			snprintf(why, wl, "byte %zu holds an unknown wire type (%u)", at,
				 (unsigned)(tag & 7));
			return -EINVAL;
		}
		if (field > *maxfield)
			*maxfield = field;
	}
	return 0;
}

/* --- frames ------------------------------------------------------------------------------- */

const char *rd__base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* A frame without a function name: "[file+0xoffset]" (as folded stacks name it) or "[unknown]". */
static int32_t unknown_name(struct rd *r, const char *mapfile, uint64_t start, uint64_t offset,
			    uint64_t address)
{
	char buf[320];
	int n;

	if (mapfile && *mapfile) {
		uint64_t off = address >= start ? address - start + offset : address;

		n = snprintf(buf, sizeof(buf), "[%s+0x%llx]", rd__base_name(mapfile),
			     (unsigned long long)off);
		if (n >= (int)sizeof(buf))
			n = sizeof(buf) - 1;
		return view_doc__string(r->d, buf, (size_t)n);
	}
	return view_doc__string(r->d, "[unknown]", 9);
}

int rd__fpool_push(struct fpool *p, int32_t v)
{
	if (p->n == p->cap) {
		size_t c = p->cap ? 2 * p->cap : 1024;
		int32_t *nf = realloc(p->f, c * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		p->f = nf;
		p->cap = c;
	}
	p->f[p->n++] = v;
	return 0;
}

int rd__push_frame(struct rd *r, struct fpool *frames, const struct loc_site *s, int32_t name,
		   int32_t file, int64_t line)
{
	int32_t f;

	if (!name)
		name = TRY(r, unknown_name(r, s->mapfile, s->start, s->offset, s->address));
	f = TRY(r, view_doc__frame(r->d, name, file, line, s->module, s->kind, s->type));
	return rd__fpool_push(frames, f) ? rd__oom(r) : 0;
}

int rd__grow_tmp(int32_t **tmp, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	free(*tmp);
	*cap = n < 256 ? 256 : 2 * n;
	*tmp = malloc(*cap * sizeof(**tmp));
	return *tmp ? 0 : -ENOMEM;
}

bool rd__all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int rd__frames(struct rd *r, const uint8_t *p, size_t n,
	       int (*each)(struct rd *r, const uint8_t *p, size_t n), unsigned *nmsg,
	       size_t *nonempty)
{
	size_t off = 0;
	unsigned msg = 1;
	int err;

	*nonempty = 0;
	for (; off < n; msg++) {
		uint32_t len;

		snprintf(r->where, sizeof(r->where), "message %u (byte %zu): ", msg, off);
		if (n - off < 4)
			return rd__fail(r, "its 4-byte length is cut off: the file is truncated");
		len = (uint32_t)p[off] << 24 | (uint32_t)p[off + 1] << 16 |
		      (uint32_t)p[off + 2] << 8 | p[off + 3];
		if (len > n - off - 4)
			return rd__fail(r, "%u bytes announced, %zu left: the file is truncated",
					len, n - off - 4);
		err = each(r, p + off + 4, len);
		if (err)
			return err;
		*nonempty += len > 0;
		off += 4 + (size_t)len;
	}
	r->where[0] = '\0';
	*nmsg = msg - 1;
	return 0;
}
