// SPDX-License-Identifier: Apache-2.0
/*
 * profile: deduplicated tables in flat arrays, with uthash indexes on top.
 *
 * Each table is a growable array (element 0 is the zero value). Its uthash
 * index lives in separate entries taken from a slab, so the entries never
 * move; the keys they point at are inside the arrays, which do move when they
 * grow. After such a move, rebase_*() re-points every entry at its key. That
 * keeps one copy of each key and costs O(n) only when an array doubles.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Allocation failures in uthash are reported (hh.tbl == NULL), never fatal. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>
/*
 * Lookups here are bound by cache misses along bucket chains. uthash doubles
 * its buckets when a chain reaches 10, which lets chains average 2-4; at 5
 * they average about 1 (measured with cachegrind: ~30% fewer L1 misses per
 * lookup) for ~12 more bytes of buckets per entry.
 */
#undef HASH_BKT_CAPACITY_THRESH
#define HASH_BKT_CAPACITY_THRESH 5U

#include "profile/profile.h"

/* Keys are hashed and compared as raw bytes: they must have no padding. */
_Static_assert(sizeof(struct profile_mapping) == 32, "profile_mapping has padding");
_Static_assert(sizeof(struct profile_function) == 12, "profile_function has padding");
_Static_assert(sizeof(struct profile_sample_key) == 48, "profile_sample_key has padding");
_Static_assert(sizeof(struct profile_link) == 24, "profile_link has padding");
_Static_assert(sizeof(struct profile_attr) == 8, "profile_attr has padding");

#define MIN_CAP 16
#define SLAB_BLOCK 256 /* entries per slab block: 16 KiB blocks for 64-byte entries */

/* Index entry for tables whose key lives in the table itself. */
struct hent {
	UT_hash_handle hh;
	uint32_t idx;
};

/* Locations are keyed by a subset of their fields: keep that key here. */
struct loc_key {
	uint64_t address;
	uint32_t mapping;
	uint32_t kind;
	uint32_t version; /* JIT code: the range's id (profile__intern_location_version) */
	uint32_t at;	  /* enum profile_pc: how a location of machine code was met */
};

struct loc_ent {
	UT_hash_handle hh;
	struct loc_key key;
	uint32_t idx;
};

/* Fixed-size allocator: stable addresses, freed only as a whole. */
struct slab {
	size_t size;
	char **blocks;
	uint32_t nblocks;
	uint32_t used; /* entries handed out since the last reset */
};

struct profile {
	char *chars; /* every string, NUL-terminated, back to back */
	uint32_t nchars, cap_chars;
	uint32_t *str_off; /* string index -> offset in chars */
	uint32_t nstrings, cap_strings;
	struct hent *string_idx;

	struct profile_mapping *mappings;
	uint32_t nmappings, cap_mappings;
	struct hent *mapping_idx;

	struct profile_function *functions;
	uint32_t nfunctions, cap_functions;
	struct hent *function_idx;

	struct profile_location *locations;
	uint32_t nlocations, cap_locations;
	struct loc_ent *location_idx;
	struct profile_line *lines;
	uint32_t nlines, cap_lines;

	struct profile_stack *stacks;
	uint32_t nstacks, cap_stacks;
	struct hent *stack_idx;
	uint32_t *stack_pool;
	uint32_t npool, cap_pool;

	struct profile_link *links;
	uint32_t nlinks, cap_links;
	struct hent *link_idx;

	struct profile_attrset *attrsets;
	uint32_t nattrsets, cap_attrsets;
	struct hent *attrset_idx;
	struct profile_attr *attr_pool;
	uint32_t nattrpool, cap_attrpool;

	struct profile_sample *samples;
	uint32_t nsamples, cap_samples;
	struct hent *sample_idx;
	uint64_t total;

	struct profile_meta meta;
	struct slab hents;
	struct slab locents;
};

static void *slab__alloc(struct slab *s)
{
	uint32_t b = s->used / SLAB_BLOCK;

	if (b == s->nblocks) {
		char **blocks = realloc(s->blocks, (b + 1) * sizeof(*blocks));

		if (!blocks)
			return NULL;
		s->blocks = blocks;
		blocks[b] = malloc(s->size * SLAB_BLOCK);
		if (!blocks[b])
			return NULL;
		s->nblocks++;
	}
	return s->blocks[b] + s->size * (s->used++ % SLAB_BLOCK);
}

/* Gives back the entry handed out last (after a failed hash insert). */
static void slab__unalloc(struct slab *s)
{
	s->used--;
}

static void slab__release(struct slab *s)
{
	for (uint32_t i = 0; i < s->nblocks; i++)
		free(s->blocks[i]);
	free(s->blocks);
	s->blocks = NULL;
	s->nblocks = 0;
	s->used = 0;
}

/*
 * Makes room for @want elements of @elem bytes in *@arr (doubling).
 * Returns 1 if the array moved, 0 if not, -ENOMEM.
 */
static int reserve(void **arr, uint32_t *cap, size_t want, size_t elem)
{
	size_t ncap = *cap ? *cap : MIN_CAP;
	void *old = *arr, *mem;

	if (want <= *cap)
		return 0;
	while (ncap < want)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		return -ENOMEM; /* indices are 32-bit */
	mem = realloc(old, ncap * elem);
	if (!mem)
		return -ENOMEM;
	*arr = mem;
	*cap = ncap;
	return mem != old;
}

/* Re-points index entries at keys stored at base + idx * stride. */
static void rebase_fixed(struct hent *head, const void *base, size_t stride)
{
	struct hent *e, *tmp;

	HASH_ITER (hh, head, e, tmp)
		e->hh.key = (const char *)base + (size_t)e->idx * stride;
}

static void rebase_strings(struct profile *p)
{
	struct hent *e, *tmp;

	HASH_ITER (hh, p->string_idx, e, tmp)
		e->hh.key = p->chars + p->str_off[e->idx];
}

static void rebase_stacks(struct profile *p)
{
	struct hent *e, *tmp;

	HASH_ITER (hh, p->stack_idx, e, tmp)
		e->hh.key = p->stack_pool + p->stacks[e->idx].first;
}

static void rebase_attrsets(struct profile *p)
{
	struct hent *e, *tmp;

	HASH_ITER (hh, p->attrset_idx, e, tmp)
		e->hh.key = p->attr_pool + p->attrsets[e->idx].first;
}

static bool is_zero(const void *mem, size_t n)
{
	const unsigned char *c = mem;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

static bool in_range(const void *ptr, const void *base, size_t bytes)
{
	const char *c = ptr, *b = base;

	return b && c >= b && c < b + bytes;
}

/* Installs the zero element of every table; the arrays have room for it. */
static void profile__init_tables(struct profile *p)
{
	p->chars[0] = '\0';
	p->nchars = 1;
	p->str_off[0] = 0;
	p->nstrings = 1;
	memset(&p->mappings[0], 0, sizeof(p->mappings[0]));
	p->nmappings = 1;
	memset(&p->functions[0], 0, sizeof(p->functions[0]));
	p->nfunctions = 1;
	memset(&p->locations[0], 0, sizeof(p->locations[0]));
	p->nlocations = 1;
	p->nlines = 0;
	memset(&p->stacks[0], 0, sizeof(p->stacks[0]));
	p->nstacks = 1;
	p->npool = 0;
	memset(&p->links[0], 0, sizeof(p->links[0]));
	p->nlinks = 1;
	memset(&p->attrsets[0], 0, sizeof(p->attrsets[0]));
	p->nattrsets = 1;
	p->nattrpool = 0;
	p->nsamples = 0;
	p->total = 0;
	memset(&p->meta, 0, sizeof(p->meta));
}

struct profile *profile__new(void)
{
	struct profile *p = calloc(1, sizeof(*p));
	int err = 0;

	if (!p)
		return NULL;
	p->hents.size = sizeof(struct hent);
	p->locents.size = sizeof(struct loc_ent);
	if (reserve((void **)&p->chars, &p->cap_chars, 1, 1) < 0 ||
	    reserve((void **)&p->str_off, &p->cap_strings, 1, sizeof(*p->str_off)) < 0 ||
	    reserve((void **)&p->mappings, &p->cap_mappings, 1, sizeof(*p->mappings)) < 0 ||
	    reserve((void **)&p->functions, &p->cap_functions, 1, sizeof(*p->functions)) < 0 ||
	    reserve((void **)&p->locations, &p->cap_locations, 1, sizeof(*p->locations)) < 0 ||
	    reserve((void **)&p->stacks, &p->cap_stacks, 1, sizeof(*p->stacks)) < 0 ||
	    reserve((void **)&p->links, &p->cap_links, 1, sizeof(*p->links)) < 0 ||
	    reserve((void **)&p->attrsets, &p->cap_attrsets, 1, sizeof(*p->attrsets)) < 0) {
		err = ENOMEM;
		goto cleanup;
	}
	profile__init_tables(p);
	return p;

cleanup:
	profile__free(p);
	errno = err;
	return NULL;
}

static void profile__clear_indexes(struct profile *p)
{
	for (uint32_t i = 0; i < p->nsamples; i++) {
		free(p->samples[i].timestamps_unix_nano);
		free(p->samples[i].event_values);
	}
	HASH_CLEAR(hh, p->string_idx);
	HASH_CLEAR(hh, p->mapping_idx);
	HASH_CLEAR(hh, p->function_idx);
	HASH_CLEAR(hh, p->location_idx);
	HASH_CLEAR(hh, p->stack_idx);
	HASH_CLEAR(hh, p->link_idx);
	HASH_CLEAR(hh, p->attrset_idx);
	HASH_CLEAR(hh, p->sample_idx);
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	profile__clear_indexes(p);
	slab__release(&p->hents);
	slab__release(&p->locents);
	free(p->chars);
	free(p->str_off);
	free(p->mappings);
	free(p->functions);
	free(p->locations);
	free(p->lines);
	free(p->stacks);
	free(p->stack_pool);
	free(p->links);
	free(p->attrsets);
	free(p->attr_pool);
	free(p->samples);
	free(p);
}

void profile__reset(struct profile *p)
{
	/*
	 * Capacities are kept: the next window is likely the same size, and
	 * this avoids reallocating every table every few seconds.
	 */
	profile__clear_indexes(p);
	p->hents.used = 0;
	p->locents.used = 0;
	profile__init_tables(p);
}

/* Adds @e to @head under @key; false (and the slab entry returned) on ENOMEM. */
#define INDEX_ADD(p, slab, head, e, key, len, hv)                                                  \
	({                                                                                         \
		HASH_ADD_KEYPTR_BYHASHVALUE(hh, head, key, len, hv, e);                            \
		bool ok_ = (e)->hh.tbl != NULL;                                                    \
		if (!ok_)                                                                          \
			slab__unalloc(&(p)->slab);                                                 \
		ok_;                                                                               \
	})

uint32_t profile__find_string(const struct profile *p, const char *s)
{
	struct hent *e = NULL;
	size_t len;
	unsigned hv;

	if (!s || !*s)
		return 0;
	len = strlen(s);
	HASH_VALUE(s, len, hv);
	HASH_FIND_BYHASHVALUE(hh, p->string_idx, s, len, hv, e);
	return e ? e->idx : 0;
}

uint32_t profile__intern_string(struct profile *p, const char *s)
{
	struct hent *e = NULL;
	size_t len, src_off = 0;
	bool inside;
	uint32_t idx;
	unsigned hv;
	int moved;

	if (!s || !*s)
		return 0;
	len = strlen(s);
	HASH_VALUE(s, len, hv);
	HASH_FIND_BYHASHVALUE(hh, p->string_idx, s, len, hv, e);
	if (e)
		return e->idx;

	/* s may be a suffix of a string we hold: find it again if chars moves. */
	inside = in_range(s, p->chars, p->nchars);
	if (inside)
		src_off = s - p->chars;
	if (p->nchars + len + 1 > UINT32_MAX)
		goto nomem; /* str_off is 32-bit */
	moved = reserve((void **)&p->chars, &p->cap_chars, p->nchars + len + 1, 1);
	if (moved < 0)
		goto nomem;
	if (moved)
		rebase_strings(p);
	if (inside)
		s = p->chars + src_off;
	if (reserve((void **)&p->str_off, &p->cap_strings, p->nstrings + 1, sizeof(uint32_t)) < 0)
		goto nomem;
	e = slab__alloc(&p->hents);
	if (!e)
		goto nomem;

	idx = p->nstrings;
	memmove(p->chars + p->nchars, s, len + 1);
	e->idx = idx;
	if (!INDEX_ADD(p, hents, p->string_idx, e, p->chars + p->nchars, len, hv))
		goto nomem;
	p->str_off[idx] = p->nchars;
	p->nchars += len + 1;
	p->nstrings++;
	return idx;

nomem:
	errno = ENOMEM;
	return 0;
}

uint32_t profile__intern_mapping(struct profile *p, const struct profile_mapping *m)
{
	struct hent *e = NULL;
	uint32_t idx;
	unsigned hv;
	int moved;

	if (is_zero(m, sizeof(*m)))
		return 0;
	if (m->filename >= p->nstrings || m->build_id >= p->nstrings) {
		errno = EINVAL;
		return 0;
	}
	HASH_VALUE(m, sizeof(*m), hv);
	HASH_FIND_BYHASHVALUE(hh, p->mapping_idx, m, sizeof(*m), hv, e);
	if (e)
		return e->idx;

	moved = reserve((void **)&p->mappings, &p->cap_mappings, p->nmappings + 1, sizeof(*m));
	if (moved < 0)
		goto nomem;
	if (moved)
		rebase_fixed(p->mapping_idx, p->mappings, sizeof(*m));
	e = slab__alloc(&p->hents);
	if (!e)
		goto nomem;
	idx = p->nmappings;
	p->mappings[idx] = *m;
	e->idx = idx;
	if (!INDEX_ADD(p, hents, p->mapping_idx, e, &p->mappings[idx], sizeof(*m), hv))
		goto nomem;
	p->nmappings++;
	return idx;

nomem:
	errno = ENOMEM;
	return 0;
}

uint32_t profile__intern_function(struct profile *p, const struct profile_function *f)
{
	struct hent *e = NULL;
	uint32_t idx;
	unsigned hv;
	int moved;

	if (is_zero(f, sizeof(*f)))
		return 0;
	if (f->name >= p->nstrings || f->system_name >= p->nstrings || f->filename >= p->nstrings) {
		errno = EINVAL;
		return 0;
	}
	HASH_VALUE(f, sizeof(*f), hv);
	HASH_FIND_BYHASHVALUE(hh, p->function_idx, f, sizeof(*f), hv, e);
	if (e)
		return e->idx;

	moved = reserve((void **)&p->functions, &p->cap_functions, p->nfunctions + 1, sizeof(*f));
	if (moved < 0)
		goto nomem;
	if (moved)
		rebase_fixed(p->function_idx, p->functions, sizeof(*f));
	e = slab__alloc(&p->hents);
	if (!e)
		goto nomem;
	idx = p->nfunctions;
	p->functions[idx] = *f;
	e->idx = idx;
	if (!INDEX_ADD(p, hents, p->function_idx, e, &p->functions[idx], sizeof(*f), hv))
		goto nomem;
	p->nfunctions++;
	return idx;

nomem:
	errno = ENOMEM;
	return 0;
}

static struct loc_key loc_key(uint32_t mapping, uint64_t address, enum frame_kind kind)
{
	struct loc_key k;

	memset(&k, 0, sizeof(k));
	k.address = address;
	k.mapping = mapping;
	k.kind = kind;
	return k;
}

const char *profile__frame_type(enum frame_kind k)
{
	static const char *const names[FRAME__NKINDS] = {
	    [FRAME_NATIVE] = "native", [FRAME_KERNEL] = "kernel", [FRAME_ABORT] = "abort",
	    [FRAME_GO] = "go",	       [FRAME_JIT] = "jit",	  [FRAME_V8JS] = "v8js",
	    [FRAME_JVM] = "jvm",       [FRAME_DOTNET] = "dotnet", [FRAME_CPYTHON] = "cpython",
	    [FRAME_PHP] = "php",
	};

	return (unsigned)k < FRAME__NKINDS ? names[k] : NULL;
}

uint32_t profile__find_code_location(const struct profile *p, uint32_t mapping, uint64_t address,
				     enum frame_kind kind, enum profile_pc at)
{
	struct loc_key k = loc_key(mapping, address, kind);
	struct loc_ent *e = NULL;

	k.at = at;
	HASH_FIND(hh, p->location_idx, &k, sizeof(k), e);
	return e ? e->idx : 0;
}

uint32_t profile__find_location(const struct profile *p, uint32_t mapping, uint64_t address,
				enum frame_kind kind)
{
	return profile__find_code_location(p, mapping, address, kind, PC_RETURN);
}

uint32_t profile__intern_location(struct profile *p, uint32_t mapping, uint64_t address,
				  enum frame_kind kind, const struct profile_line *lines,
				  uint32_t nlines)
{
	return profile__intern_location_version(p, mapping, address, kind, 0, lines, nlines);
}

static uint32_t intern_location(struct profile *p, uint32_t mapping, uint64_t address,
				enum frame_kind kind, uint32_t version, enum profile_pc at,
				const struct profile_line *lines, uint32_t nlines)
{
	struct loc_key k = loc_key(mapping, address, kind);
	struct profile_location *loc;
	struct loc_ent *e = NULL;
	size_t src_off = 0;
	bool inside;
	uint32_t idx;
	unsigned hv;

	k.version = version;
	k.at = at;
	if (is_zero(&k, sizeof(k)))
		return 0;
	if (mapping >= p->nmappings || (unsigned)kind >= FRAME__NKINDS || (nlines && !lines))
		goto inval;
	for (uint32_t i = 0; i < nlines; i++)
		if (lines[i].function >= p->nfunctions)
			goto inval;
	HASH_VALUE(&k, sizeof(k), hv);
	HASH_FIND_BYHASHVALUE(hh, p->location_idx, &k, sizeof(k), hv, e);
	if (e)
		return e->idx;
	if (!version) {
		/* The other role's location, if named alike, is this one too. */
		struct loc_key other = k;

		other.at = at == PC_EXACT ? PC_RETURN : PC_EXACT;
		HASH_FIND(hh, p->location_idx, &other, sizeof(other), e);
		if (e && profile_lines_equal(p->lines + p->locations[e->idx].first_line,
					     p->locations[e->idx].nlines, lines, nlines)) {
			idx = e->idx;
			e = slab__alloc(&p->locents);
			if (!e)
				goto nomem;
			e->key = k;
			e->idx = idx;
			if (!INDEX_ADD(p, locents, p->location_idx, e, &e->key, sizeof(k), hv))
				goto nomem;
			p->locations[idx].roles |= PROFILE_ROLE(at);
			return idx;
		}
	}

	inside = in_range(lines, p->lines, (size_t)p->nlines * sizeof(*lines));
	if (inside)
		src_off = lines - p->lines;
	if ((size_t)p->nlines + nlines > UINT32_MAX ||
	    reserve((void **)&p->lines, &p->cap_lines, (size_t)p->nlines + nlines, sizeof(*lines)) <
		0 ||
	    reserve((void **)&p->locations, &p->cap_locations, p->nlocations + 1, sizeof(*loc)) < 0)
		goto nomem;
	if (inside)
		lines = p->lines + src_off;
	e = slab__alloc(&p->locents);
	if (!e)
		goto nomem;
	idx = p->nlocations;
	e->key = k;
	e->idx = idx;
	if (!INDEX_ADD(p, locents, p->location_idx, e, &e->key, sizeof(k), hv))
		goto nomem;

	loc = &p->locations[idx];
	loc->mapping = mapping;
	loc->address = address;
	loc->kind = kind;
	loc->nlines = nlines;
	loc->first_line = p->nlines;
	loc->roles = PROFILE_ROLE(at);
	if (nlines)
		memmove(p->lines + p->nlines, lines, nlines * sizeof(*lines));
	p->nlines += nlines;
	p->nlocations++;
	return idx;

inval:
	errno = EINVAL;
	return 0;
nomem:
	errno = ENOMEM;
	return 0;
}

uint32_t profile__intern_location_version(struct profile *p, uint32_t mapping, uint64_t address,
					  enum frame_kind kind, uint32_t version,
					  const struct profile_line *lines, uint32_t nlines)
{
	return intern_location(p, mapping, address, kind, version, PC_RETURN, lines, nlines);
}

uint32_t profile__intern_code_location(struct profile *p, uint32_t mapping, uint64_t address,
				       enum frame_kind kind, enum profile_pc at,
				       const struct profile_line *lines, uint32_t nlines)
{
	return intern_location(p, mapping, address, kind, 0, at, lines, nlines);
}

int profile__set_location_lines(struct profile *p, uint32_t loc, const struct profile_line *lines,
				uint32_t nlines)
{
	if (!loc || loc >= p->nlocations || (nlines && !lines) ||
	    in_range(lines, p->lines, (size_t)p->nlines * sizeof(*lines)))
		return -EINVAL;
	for (uint32_t i = 0; i < nlines; i++)
		if (lines[i].function >= p->nfunctions)
			return -EINVAL;
	if ((size_t)p->nlines + nlines > UINT32_MAX ||
	    reserve((void **)&p->lines, &p->cap_lines, (size_t)p->nlines + nlines, sizeof(*lines)) <
		0)
		return -ENOMEM;
	/* The old lines stay in the pool, unreferenced: this is rare (late debug files). */
	if (nlines)
		memcpy(p->lines + p->nlines, lines, nlines * sizeof(*lines));
	p->locations[loc].first_line = p->nlines;
	p->locations[loc].nlines = nlines;
	p->nlines += nlines;
	return 0;
}

uint32_t profile__intern_stack(struct profile *p, const uint32_t *locations, uint32_t n)
{
	size_t bytes = (size_t)n * sizeof(*locations), src_off = 0;
	struct hent *e = NULL;
	bool inside;
	uint32_t idx;
	unsigned hv;
	int moved;

	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		/* 0 is no location: most likely a failed intern upstream. */
		if (!locations[i] || locations[i] >= p->nlocations) {
			errno = EINVAL;
			return 0;
		}
	}
	HASH_VALUE(locations, bytes, hv);
	HASH_FIND_BYHASHVALUE(hh, p->stack_idx, locations, bytes, hv, e);
	if (e)
		return e->idx;

	inside = in_range(locations, p->stack_pool, (size_t)p->npool * sizeof(*locations));
	if (inside)
		src_off = locations - p->stack_pool;
	if ((size_t)p->npool + n > UINT32_MAX)
		goto nomem;
	moved = reserve((void **)&p->stack_pool, &p->cap_pool, (size_t)p->npool + n,
			sizeof(*locations));
	if (moved < 0)
		goto nomem;
	if (moved)
		rebase_stacks(p);
	if (inside)
		locations = p->stack_pool + src_off;
	if (reserve((void **)&p->stacks, &p->cap_stacks, p->nstacks + 1, sizeof(*p->stacks)) < 0)
		goto nomem;
	e = slab__alloc(&p->hents);
	if (!e)
		goto nomem;
	idx = p->nstacks;
	memmove(p->stack_pool + p->npool, locations, bytes);
	e->idx = idx;
	if (!INDEX_ADD(p, hents, p->stack_idx, e, p->stack_pool + p->npool, bytes, hv))
		goto nomem;
	p->stacks[idx].nlocations = n;
	p->stacks[idx].first = p->npool;
	p->npool += n;
	p->nstacks++;
	return idx;

nomem:
	errno = ENOMEM;
	return 0;
}

uint32_t profile__intern_link(struct profile *p, const struct profile_link *l)
{
	struct hent *e = NULL;
	uint32_t idx;
	unsigned hv;
	int moved;

	if (is_zero(l, sizeof(*l)))
		return 0;
	HASH_VALUE(l, sizeof(*l), hv);
	HASH_FIND_BYHASHVALUE(hh, p->link_idx, l, sizeof(*l), hv, e);
	if (e)
		return e->idx;
	moved = reserve((void **)&p->links, &p->cap_links, p->nlinks + 1, sizeof(*l));
	if (moved < 0)
		goto nomem;
	if (moved)
		rebase_fixed(p->link_idx, p->links, sizeof(*l));
	e = slab__alloc(&p->hents);
	if (!e)
		goto nomem;
	idx = p->nlinks;
	p->links[idx] = *l;
	e->idx = idx;
	if (!INDEX_ADD(p, hents, p->link_idx, e, &p->links[idx], sizeof(*l), hv))
		goto nomem;
	p->nlinks++;
	return idx;

nomem:
	errno = ENOMEM;
	return 0;
}

uint32_t profile__intern_attrset(struct profile *p, const struct profile_attr *attrs, uint32_t n)
{
	size_t bytes = (size_t)n * sizeof(*attrs);
	struct hent *e = NULL;
	uint32_t idx;
	unsigned hv;
	int moved;

	if (!n)
		return 0;
	if (in_range(attrs, p->attr_pool, (size_t)p->nattrpool * sizeof(*attrs))) {
		errno = EINVAL; /* callers pass their own arrays */
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!attrs[i].key || attrs[i].key >= p->nstrings || attrs[i].value >= p->nstrings) {
			errno = EINVAL;
			return 0;
		}
	}
	HASH_VALUE(attrs, bytes, hv);
	HASH_FIND_BYHASHVALUE(hh, p->attrset_idx, attrs, bytes, hv, e);
	if (e)
		return e->idx;
	if ((size_t)p->nattrpool + n > UINT32_MAX)
		goto nomem;
	moved = reserve((void **)&p->attr_pool, &p->cap_attrpool, (size_t)p->nattrpool + n,
			sizeof(*attrs));
	if (moved < 0)
		goto nomem;
	if (moved)
		rebase_attrsets(p);
	if (reserve((void **)&p->attrsets, &p->cap_attrsets, p->nattrsets + 1,
		    sizeof(*p->attrsets)) < 0)
		goto nomem;
	e = slab__alloc(&p->hents);
	if (!e)
		goto nomem;
	idx = p->nattrsets;
	memcpy(p->attr_pool + p->nattrpool, attrs, bytes);
	e->idx = idx;
	if (!INDEX_ADD(p, hents, p->attrset_idx, e, p->attr_pool + p->nattrpool, bytes, hv))
		goto nomem;
	p->attrsets[idx].nattrs = n;
	p->attrsets[idx].first = p->nattrpool;
	p->nattrpool += n;
	p->nattrsets++;
	return idx;

nomem:
	errno = ENOMEM;
	return 0;
}

/*
 * Timestamp arrays carry no capacity field: their capacity is 2 for up to 2
 * entries and the next power of two above. They grow when full.
 */
static int sample__append_time(struct profile_sample *s, uint64_t t, const uint64_t *ev)
{
	uint32_t n = s->ntimestamps;

	if (n == UINT32_MAX)
		return -ENOMEM;
	if (n == 0 || (n >= 2 && !(n & (n - 1)))) {
		size_t cap = n ? 2 * (size_t)n : 2;
		uint64_t *ts = realloc(s->timestamps_unix_nano, cap * sizeof(*ts));

		if (!ts)
			return -ENOMEM;
		s->timestamps_unix_nano = ts;
		if (ev) {
			uint64_t *v = realloc(s->event_values, 2 * cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->event_values = v;
		}
	}
	if (ev) {
		s->event_values[2 * (size_t)n] = ev[0];
		s->event_values[2 * (size_t)n + 1] = ev[1];
	}
	s->timestamps_unix_nano[s->ntimestamps++] = t;
	return 0;
}

static int sample__add(struct profile *p, const struct profile_sample_key *key,
		       uint64_t time_unix_nano, uint64_t count, const uint64_t *ev);

int profile__add_sample(struct profile *p, const struct profile_sample_key *key,
			uint64_t time_unix_nano, uint64_t count)
{
	return sample__add(p, key, time_unix_nano, count, NULL);
}

int profile__add_event(struct profile *p, const struct profile_sample_key *key,
		       uint64_t time_unix_nano, uint64_t count, uint64_t value)
{
	uint64_t ev[2] = {count, value};

	if (key->type == PROFILE_CPU || key->type >= PROFILE_NTYPES || !time_unix_nano)
		return -EINVAL;
	return sample__add(p, key, time_unix_nano, count, ev);
}

static int sample__add(struct profile *p, const struct profile_sample_key *key,
		       uint64_t time_unix_nano, uint64_t count, const uint64_t *ev)
{
	struct profile_sample *s;
	struct hent *e = NULL;
	unsigned hv;
	int moved;

	if (key->stack >= p->nstacks || key->comm >= p->nstrings ||
	    key->process_name >= p->nstrings || key->link >= p->nlinks ||
	    key->attrs >= p->nattrsets || key->type >= PROFILE_NTYPES || key->pad ||
	    (!ev && key->type != PROFILE_CPU))
		return -EINVAL;
	HASH_VALUE(key, sizeof(*key), hv);
	HASH_FIND_BYHASHVALUE(hh, p->sample_idx, key, sizeof(*key), hv, e);
	if (e) {
		s = &p->samples[e->idx];
		if (time_unix_nano && sample__append_time(s, time_unix_nano, ev))
			return -ENOMEM;
		s->count += count;
		s->value += ev ? ev[1] : 0;
		p->total += count;
		return 0;
	}

	if (p->nsamples == UINT32_MAX)
		return -ENOMEM;
	moved = reserve((void **)&p->samples, &p->cap_samples, (size_t)p->nsamples + 1, sizeof(*s));
	if (moved < 0)
		return -ENOMEM;
	if (moved)
		rebase_fixed(p->sample_idx, p->samples, sizeof(*s));
	s = &p->samples[p->nsamples];
	memset(s, 0, sizeof(*s));
	s->key = *key;
	if (time_unix_nano && sample__append_time(s, time_unix_nano, ev))
		goto nomem;
	e = slab__alloc(&p->hents);
	if (!e)
		goto nomem;
	e->idx = p->nsamples;
	if (!INDEX_ADD(p, hents, p->sample_idx, e, &s->key, sizeof(*key), hv))
		goto nomem;
	s->count = count;
	s->value = ev ? ev[1] : 0;
	p->total += count;
	p->nsamples++;
	return 0;

nomem:
	free(s->timestamps_unix_nano);
	s->timestamps_unix_nano = NULL;
	free(s->event_values);
	s->event_values = NULL;
	return -ENOMEM;
}

uint32_t profile__nstrings(const struct profile *p)
{
	return p->nstrings;
}

const char *profile__string(const struct profile *p, uint32_t i)
{
	return i < p->nstrings ? p->chars + p->str_off[i] : NULL;
}

uint32_t profile__nmappings(const struct profile *p)
{
	return p->nmappings;
}

const struct profile_mapping *profile__mapping(const struct profile *p, uint32_t i)
{
	return i < p->nmappings ? &p->mappings[i] : NULL;
}

uint32_t profile__nfunctions(const struct profile *p)
{
	return p->nfunctions;
}

const struct profile_function *profile__function(const struct profile *p, uint32_t i)
{
	return i < p->nfunctions ? &p->functions[i] : NULL;
}

uint32_t profile__nlocations(const struct profile *p)
{
	return p->nlocations;
}

const struct profile_location *profile__location(const struct profile *p, uint32_t i)
{
	return i < p->nlocations ? &p->locations[i] : NULL;
}

const struct profile_line *profile__location_lines(const struct profile *p, uint32_t i)
{
	if (i >= p->nlocations || !p->locations[i].nlines)
		return NULL;
	return p->lines + p->locations[i].first_line;
}

uint32_t profile__nstacks(const struct profile *p)
{
	return p->nstacks;
}

const struct profile_stack *profile__stack(const struct profile *p, uint32_t i)
{
	return i < p->nstacks ? &p->stacks[i] : NULL;
}

const uint32_t *profile__stack_locations(const struct profile *p, uint32_t i)
{
	if (i >= p->nstacks || !p->stacks[i].nlocations)
		return NULL;
	return p->stack_pool + p->stacks[i].first;
}

uint32_t profile__nlinks(const struct profile *p)
{
	return p->nlinks;
}

const struct profile_link *profile__link(const struct profile *p, uint32_t i)
{
	return i < p->nlinks ? &p->links[i] : NULL;
}

uint32_t profile__nattrsets(const struct profile *p)
{
	return p->nattrsets;
}

const struct profile_attrset *profile__attrset(const struct profile *p, uint32_t i)
{
	return i < p->nattrsets ? &p->attrsets[i] : NULL;
}

const struct profile_attr *profile__attrset_attrs(const struct profile *p, uint32_t i)
{
	return i < p->nattrsets ? p->attr_pool + p->attrsets[i].first : NULL;
}

uint32_t profile__nsamples(const struct profile *p)
{
	return p->nsamples;
}

const struct profile_sample *profile__sample(const struct profile *p, uint32_t i)
{
	return i < p->nsamples ? &p->samples[i] : NULL;
}

uint64_t profile__total_count(const struct profile *p)
{
	return p->total;
}

void profile__set_meta(struct profile *p, const struct profile_meta *m)
{
	p->meta = *m;
}

const struct profile_meta *profile__meta(const struct profile *p)
{
	return &p->meta;
}

/* What an index holds besides its entries (those are counted in the slabs). */
#define BUCKET_BYTES(head)                                                                         \
	((head) ? sizeof(UT_hash_table) +                                                          \
		      (size_t)(head)->hh.tbl->num_buckets * sizeof(UT_hash_bucket)                 \
		: 0)

size_t profile__memory_usage(const struct profile *p)
{
	size_t bytes = sizeof(*p);

	bytes += p->cap_chars + (size_t)p->cap_strings * sizeof(*p->str_off);
	bytes += (size_t)p->cap_mappings * sizeof(*p->mappings);
	bytes += (size_t)p->cap_functions * sizeof(*p->functions);
	bytes += (size_t)p->cap_locations * sizeof(*p->locations);
	bytes += (size_t)p->cap_lines * sizeof(*p->lines);
	bytes += (size_t)p->cap_stacks * sizeof(*p->stacks);
	bytes += (size_t)p->cap_pool * sizeof(*p->stack_pool);
	bytes += (size_t)p->cap_links * sizeof(*p->links);
	bytes += (size_t)p->cap_attrsets * sizeof(*p->attrsets);
	bytes += (size_t)p->cap_attrpool * sizeof(*p->attr_pool);
	bytes += (size_t)p->cap_samples * sizeof(*p->samples);
	bytes += (size_t)p->hents.nblocks * SLAB_BLOCK * p->hents.size;
	bytes += (size_t)p->locents.nblocks * SLAB_BLOCK * p->locents.size;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		uint32_t n = p->samples[i].ntimestamps, cap = 2;

		while (cap < n)
			cap *= 2;
		bytes += n ? cap * sizeof(uint64_t) : 0;
		bytes += p->samples[i].event_values ? 2 * cap * sizeof(uint64_t) : 0;
	}
	bytes += BUCKET_BYTES(p->string_idx) + BUCKET_BYTES(p->mapping_idx) +
		 BUCKET_BYTES(p->function_idx) + BUCKET_BYTES(p->location_idx) +
		 BUCKET_BYTES(p->stack_idx) + BUCKET_BYTES(p->link_idx) +
		 BUCKET_BYTES(p->attrset_idx) + BUCKET_BYTES(p->sample_idx);
	return bytes;
}

static const struct profile_type_info type_info[PROFILE_NTYPES] = {
    [PROFILE_CPU] =
	{
	    .name = "cpu",
	    .file_stem = "profile",
	    .title = "spanprof CPU profile",
	    .nvalues = 2,
	    .values = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	    .otlp_values = 1 << 0,
	    .period = {"cpu", "nanoseconds"},
	},
    [PROFILE_ALLOC] =
	{
	    .name = "alloc",
	    .file_stem = "alloc",
	    .title = "spanprof allocation profile (bytes)",
	    .nvalues = 2,
	    .values = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}},
	    .otlp_values = 1 << 0 | 1 << 1,
	    .period = {"space", "bytes"},
	},
    [PROFILE_LOCK] =
	{
	    .name = "lock",
	    .file_stem = "lock",
	    .title = "spanprof lock contention profile (wait time)",
	    .nvalues = 2,
	    .values = {{"contentions", "count"}, {"delay", "nanoseconds"}},
	    .otlp_values = 1 << 0 | 1 << 1,
	    .period = {"contentions", "count"},
	},
    [PROFILE_OFFCPU] =
	{
	    .name = "offcpu",
	    .file_stem = "offcpu",
	    .title = "spanprof off-CPU profile (time blocked)",
	    .nvalues = 2,
	    .values = {{"events", "count"}, {"off_cpu", "nanoseconds"}},
	    .otlp_values = 1 << 1,
	    .period = {"off_cpu", "nanoseconds"},
	},
};

const struct profile_type_info *profile__type_info(uint32_t type)
{
	return type < PROFILE_NTYPES ? &type_info[type] : NULL;
}

int profile__type_by_name(const char *name)
{
	for (int t = 0; t < PROFILE_NTYPES; t++)
		if (!strcmp(name, type_info[t].name))
			return t;
	return -1;
}

uint64_t profile__sample_value(const struct profile *p, const struct profile_sample *s,
			       uint32_t which)
{
	if (which == 0)
		return s->count;
	if (s->key.type == PROFILE_CPU)
		return s->count * p->meta.period_nano;
	return s->value;
}

uint64_t profile__event_value(const struct profile *p, const struct profile_sample *s, uint32_t i,
			      uint32_t which)
{
	if (s->event_values && i < s->ntimestamps)
		return s->event_values[2 * (size_t)i + (which ? 1 : 0)];
	return which ? p->meta.period_nano : 1;
}
