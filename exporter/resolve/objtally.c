/* SPDX-License-Identifier: Apache-2.0 */
/* objtally: user frames per file, named or not (objtally.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "resolve/objtally.h"

/* Open addressing, twice the files it holds at most: probes stay short. */
#define SLOTS (2 * OBJTALLY_MAX)

struct objtally {
	struct objtally_entry slots[SLOTS];
	size_t used;
	uint64_t frames;
};

struct objtally *objtally__new(void)
{
	return calloc(1, sizeof(struct objtally));
}

void objtally__free(struct objtally *t)
{
	free(t);
}

static size_t hash(const struct elf_object *obj)
{
	uint64_t h = (uintptr_t)obj;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h % SLOTS;
}

/* The entry of @obj; with @add a new one when there is room; else NULL. */
static struct objtally_entry *find(struct objtally *t, const struct elf_object *obj, int add)
{
	for (size_t i = hash(obj), n = 0; n < SLOTS; i = (i + 1) % SLOTS, n++) {
		struct objtally_entry *e = &t->slots[i];

		if (e->obj == obj)
			return e;
		if (e->obj)
			continue;
		if (!add || t->used >= OBJTALLY_MAX)
			return NULL;
		e->obj = obj;
		t->used++;
		return e;
	}
	return NULL;
}

void objtally__note(struct objtally *t, const struct elf_object *obj, int named)
{
	struct objtally_entry *e;

	t->frames++;
	if (!obj)
		return;
	e = find(t, obj, 1);
	if (!e)
		return;
	e->frames++;
	if (!named)
		e->unnamed++;
}

void objtally__mark_named(struct objtally *t, const struct elf_object *obj)
{
	struct objtally_entry *e = find(t, obj, 0);

	if (e)
		e->named_later = 1;
}

uint64_t objtally__frames(const struct objtally *t)
{
	return t->frames;
}

static int by_unnamed(const void *a, const void *b)
{
	const struct objtally_entry *x = a, *y = b;

	return x->unnamed < y->unnamed ? 1 : x->unnamed > y->unnamed ? -1 : 0;
}

size_t objtally__top_unnamed(const struct objtally *t, struct objtally_entry *out, size_t max)
{
	struct objtally_entry *all;
	size_t n = 0;

	if (!max)
		return 0;
	all = malloc(OBJTALLY_MAX * sizeof(*all));
	if (!all)
		return 0;
	for (size_t i = 0; i < SLOTS; i++)
		if (t->slots[i].obj && t->slots[i].unnamed && !t->slots[i].named_later)
			all[n++] = t->slots[i];
	qsort(all, n, sizeof(*all), by_unnamed);
	if (n > max)
		n = max;
	memcpy(out, all, n * sizeof(*all));
	free(all);
	return n;
}
