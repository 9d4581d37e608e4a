// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_encode: struct profile -> ExportProfilesServiceRequest (profiles v1development).
 *
 * The request is built as protobuf-c structs and packed once. The request dictionary is a
 * subset of the profile's tables, renumbered: one remap array per profile table (sized from
 * it) gives an element's request index. A remap entry is trusted only if the request table
 * still holds that source element at that index, so starting a new request or rolling back
 * a sample that did not fit is just truncating the request tables: no clearing, no hashing.
 * Only sample attributes (thread ids, cpus...) have no profile table; they go through one
 * fixed-size open-addressing table checked the same way.
 *
 * Sizes are tracked while building: each dictionary element and sample is sized exactly
 * when it is made, and each length prefix that can still grow is counted at its maximum,
 * so the running total is an upper bound of the packed request.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "otlp/otlp_pb.h"
#include "otlp/otlp_encode.h"
#include "otlp/htlhash.h"

#ifndef SPANPROF_VERSION
#define SPANPROF_VERSION "0.0.0"
#endif

#define ANY_STRING ANY(STRING_VALUE)
#define ANY_INT ANY(INT_VALUE)

#define ARENA_CHUNK (256u << 10)
/* Bytes a length prefix may grow by (varint of a length < 2^35 is at most 5 bytes). */
#define LEN_SLOP 5

/* Strings the encoder adds to every request's string table. */
enum extra_string {
	XS_SAMPLES,
	XS_COUNT,
	XS_CPU,
	XS_NANOSECONDS,
	XS_THREAD_ID,
	XS_THREAD_NAME,
	XS_CPU_NUMBER,
	XS_FRAME_TYPE,
	XS_BUILD_ID_GNU,
	XS_BUILD_ID_HTL,
	XS_LOCK_ADDRESS,
	/* The value types of the profile types other than CPU (profile__type_info()). */
	XS_ALLOC_OBJECTS,
	XS_ALLOC_SPACE,
	XS_BYTES,
	XS_SPACE,
	XS_CONTENTIONS,
	XS_DELAY,
	XS_OFF_CPU,
	XS_EVENTS,
	XS_COUNT_ALL,
};

static const char *const extra_text[XS_COUNT_ALL] = {
    [XS_SAMPLES] = "samples",
    [XS_COUNT] = "count",
    [XS_CPU] = "cpu",
    [XS_NANOSECONDS] = "nanoseconds",
    [XS_THREAD_ID] = "thread.id",
    [XS_THREAD_NAME] = "thread.name",
    [XS_CPU_NUMBER] = "cpu.logical_number",
    [XS_FRAME_TYPE] = "profile.frame.type",
    [XS_BUILD_ID_GNU] = "process.executable.build_id.gnu",
    [XS_BUILD_ID_HTL] = "process.executable.build_id.htlhash",
    [XS_LOCK_ADDRESS] = "lock.address",
    [XS_ALLOC_OBJECTS] = "alloc_objects",
    [XS_ALLOC_SPACE] = "alloc_space",
    [XS_BYTES] = "bytes",
    [XS_SPACE] = "space",
    [XS_CONTENTIONS] = "contentions",
    [XS_DELAY] = "delay",
    [XS_OFF_CPU] = "off_cpu",
    [XS_EVENTS] = "events",
};

/* Kinds of attribute_table entries; an entry is identified by (kind, v). */
enum attr_kind {
	AK_NONE,
	AK_TID,	       /* v: thread id */
	AK_COMM,       /* v: profile string index of the thread name */
	AK_CPU,	       /* v: cpu number */
	AK_FRAME_TYPE, /* v: enum frame_kind */
	AK_BUILD_ID,   /* v: profile string index of the hex build id */
	AK_HTL,	       /* v: first 8 bytes of the hash; aux: a mapping with that hash */
	AK_CTX,	       /* v: key string << 32 | value string (profile indices): thread context */
	AK_LOCK,       /* v: lock address (LOCK samples) */
};

struct attr_key {
	uint64_t v;
	uint32_t kind;
	uint32_t aux;
};

struct hslot {
	uint64_t v;
	uint32_t kind; /* AK_NONE: free */
	uint32_t idx;  /* request attribute index (checked before use) */
};

/* A request table: its elements and the source index each came from. */
struct tab {
	uint32_t n, cap;
	uint32_t *src;
	struct attr_key *keys; /* attribute table only */
	void **el;
};

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;
	max_align_t data[];
};

struct htl {
	uint8_t state; /* 0: not tried, 1: unavailable, 2: hex valid */
	char hex[33];
	uint64_t key;
};

/* Where a process's samples sit in the sorted order. */
struct proc {
	uint32_t first, n;
	bool timestamps; /* every sample has count == ntimestamps > 0 */
	uint32_t type;	 /* enum profile_type of every sample of the chunk */
	uint32_t which;	 /* the value it carries: 0 or 1 (profile_type_info.values) */
};

/* Profiles of one process share its ResourceProfiles: at most one per type and value. */
#define MAX_PROFILES_PER_RESOURCE 8

struct mark {
	uint32_t nstr, nmap, nfn, nloc, nstack, nattr, nlink, nrp, nsamples;
	uint32_t last_nprofiles, last_pid; /* of the last ResourceProfiles */
	size_t dict_bytes, body_bytes;
	uint64_t events;
};

struct enc {
	const struct profile *p;
	size_t max;
	const char *host, *scope_name, *scope_version;
	const struct otlp_encode_opts *o;
	otlp_emit_fn emit;
	void *emit_ctx;

	uint32_t ns;		      /* profile strings; extras follow at ns + k */
	uint32_t xs_id[XS_COUNT_ALL]; /* string id of each extra (aliases an equal profile one) */
	uint32_t *str_map, *map_map, *fn_map, *loc_map, *stack_map, *link_map;
	struct tab str, map, fn, loc, stack, attr, link;
	struct hslot *hash;
	uint32_t hash_mask;
	struct htl *htl; /* per profile mapping */

	struct arena_chunk *arena;
	pb_rp **rps;
	uint32_t nrp, cap_rp;
	size_t dict_bytes, body_bytes;
	uint64_t events; /* sum of the counts of the request's samples */
	uint32_t type;	 /* enum profile_type of the request's samples (one per request) */

	/* The last ResourceProfiles' scope (a process's next Profile joins it) and its pid. */
	pb_sp *last_sp;
	uint32_t last_pid;
	/* The Profile being filled. */
	pb_profile *prof;
	const struct proc *cur;
	uint32_t nsamples;
	/*
	 * With per-sample attributes left out (o->omit_sample_attrs), its Samples by identity
	 * {stack, attributes, link}: slot + 1 per entry, 0 empty (open addressing); entries of
	 * slots rolled back (>= nsamples) are skipped. The last add_sample() that merged into
	 * Sample @merged_slot replaced @merged_old there (undone by mark_rollback()).
	 */
	uint32_t *merge, merge_mask;
	uint32_t merged_slot;
	pb_sample *merged_old;

	uint8_t *buf;
	size_t buf_cap;
	uint64_t id_counter;
};

static const pb_mapping zero_mapping = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__MAPPING__INIT;
static const pb_location zero_location =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LOCATION__INIT;
static const pb_function zero_function =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__FUNCTION__INIT;
static const pb_link zero_link = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;
static const pb_stack zero_stack = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__STACK__INIT;
static const pb_kvu zero_kvu =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT;
static char empty_string[] = "";

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Encoded size of a length-delimited field with a one-byte tag (field numbers < 16). */
static size_t field_len(size_t payload)
{
	return 1 + varint_len(payload) + payload;
}

static size_t msg_field_len(const void *m)
{
	return field_len(protobuf_c_message_get_packed_size((const ProtobufCMessage *)m));
}

/* --- arena: every protobuf-c struct of one request, freed at once ------------------------- */

static void *arena_alloc(struct enc *e, size_t size)
{
	struct arena_chunk *c = e->arena;
	size_t al = sizeof(max_align_t);
	void *r;

	size = (size + al - 1) / al * al;
	if (!c || c->size - c->used < size) {
		size_t cs = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cs);
		if (!c)
			return NULL;
		c->size = cs;
		c->used = 0;
		c->next = e->arena;
		e->arena = c;
	}
	r = (char *)c->data + c->used;
	c->used += size;
	memset(r, 0, size);
	return r;
}

static void arena_free(struct enc *e)
{
	while (e->arena) {
		struct arena_chunk *n = e->arena->next;

		free(e->arena);
		e->arena = n;
	}
}

/* --- request tables ----------------------------------------------------------------------- */

static int tab_push(struct tab *t, uint32_t src, const struct attr_key *key, void *el)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 64;
		void **el2 = realloc(t->el, cap * sizeof(*el2));
		uint32_t *src2;

		if (!el2)
			return -ENOMEM;
		t->el = el2;
		src2 = realloc(t->src, cap * sizeof(*src2));
		if (!src2)
			return -ENOMEM;
		t->src = src2;
		if (key) {
			struct attr_key *k2 = realloc(t->keys, cap * sizeof(*k2));

			if (!k2)
				return -ENOMEM;
			t->keys = k2;
		}
		t->cap = cap;
	}
	t->src[t->n] = src;
	if (key)
		t->keys[t->n] = *key;
	t->el[t->n] = el;
	return (int)t->n++;
}

static void tab_free(struct tab *t)
{
	free(t->src);
	free(t->keys);
	free(t->el);
}

/* Request index of source element @src if the request already holds it, else 0. */
static uint32_t remap_get(const uint32_t *map, const struct tab *t, uint32_t src)
{
	uint32_t dst = map[src];

	return dst && dst < t->n && t->src[dst] == src ? dst : 0;
}

/* Empties the request: every table back to its zero element. */
static void request_reset(struct enc *e)
{
	e->str.n = e->map.n = e->fn.n = e->loc.n = e->stack.n = e->attr.n = e->link.n = 1;
	e->nrp = 0;
	e->prof = NULL;
	e->last_sp = NULL;
	e->nsamples = 0;
	/* The dictionary's own tag and length, and each table's zero element (2 bytes each). */
	e->dict_bytes = 1 + LEN_SLOP + 7 * 2;
	e->body_bytes = 0;
	e->events = 0;
	arena_free(e);
}

static struct mark mark_get(const struct enc *e)
{
	return (struct mark){
	    .nstr = e->str.n,
	    .nmap = e->map.n,
	    .nfn = e->fn.n,
	    .nloc = e->loc.n,
	    .nstack = e->stack.n,
	    .nattr = e->attr.n,
	    .nlink = e->link.n,
	    .nrp = e->nrp,
	    .last_nprofiles = e->last_sp ? (uint32_t)e->last_sp->n_profiles : 0,
	    .last_pid = e->last_pid,
	    .nsamples = e->nsamples,
	    .dict_bytes = e->dict_bytes,
	    .body_bytes = e->body_bytes,
	    .events = e->events,
	};
}

static void mark_rollback(struct enc *e, const struct mark *m)
{
	e->str.n = m->nstr;
	e->map.n = m->nmap;
	e->fn.n = m->nfn;
	e->loc.n = m->nloc;
	e->stack.n = m->nstack;
	e->attr.n = m->nattr;
	e->link.n = m->nlink;
	e->nrp = m->nrp;
	e->last_sp = e->nrp ? e->rps[e->nrp - 1]->scope_profiles[0] : NULL;
	if (e->last_sp)
		e->last_sp->n_profiles = m->last_nprofiles;
	e->last_pid = m->last_pid;
	if (e->merged_old && e->merged_slot < m->nsamples)
		e->prof->samples[e->merged_slot] = e->merged_old;
	e->merged_old = NULL;
	e->nsamples = m->nsamples;
	e->dict_bytes = m->dict_bytes;
	e->body_bytes = m->body_bytes;
	e->events = m->events;
}

static size_t request_estimate(const struct enc *e)
{
	return e->dict_bytes + e->body_bytes;
}

/* --- dictionary elements ------------------------------------------------------------------ */

/* @sid: a profile string index, or ns + extra. Returns the request index, or -ENOMEM. */
static int add_string(struct enc *e, uint32_t sid)
{
	uint32_t dst;
	char *s;
	int r;

	if (sid == 0)
		return 0;
	dst = remap_get(e->str_map, &e->str, sid);
	if (dst)
		return (int)dst;
	s = (char *)(sid < e->ns ? profile__string(e->p, sid) : extra_text[sid - e->ns]);
	r = tab_push(&e->str, sid, NULL, s);
	if (r < 0)
		return r;
	e->str_map[sid] = (uint32_t)r;
	e->dict_bytes += field_len(strlen(s));
	return r;
}

static int add_extra(struct enc *e, enum extra_string x)
{
	return add_string(e, e->xs_id[x]);
}

/* add_extra() of one of the extra_text strings, by its text. */
static int add_extra_text(struct enc *e, const char *text)
{
	for (int x = 0; x < XS_COUNT_ALL; x++)
		if (!strcmp(extra_text[x], text))
			return add_extra(e, (enum extra_string)x);
	return -EINVAL; /* a value type missing from extra_text: a bug */
}

static uint64_t hslot_hash(uint32_t kind, uint64_t v)
{
	uint64_t h = (v ^ ((uint64_t)kind << 59)) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

/* Returns the attribute_table index of (kind, v), adding it if needed; or -ENOMEM. */
static int add_attr(struct enc *e, enum attr_kind kind, uint64_t v, uint32_t aux)
{
	struct attr_key key = {.v = v, .kind = kind, .aux = aux};
	struct hslot *s;
	pb_kvu *kv;
	pb_any *val;
	int k, r;

	for (uint32_t i = hslot_hash(kind, v) & e->hash_mask;; i = (i + 1) & e->hash_mask) {
		s = &e->hash[i];
		if (s->kind == AK_NONE || (s->kind == kind && s->v == v))
			break;
	}
	if (s->kind != AK_NONE && s->idx < e->attr.n && e->attr.keys[s->idx].kind == kind &&
	    e->attr.keys[s->idx].v == v)
		return (int)s->idx;

	kv = arena_alloc(e, sizeof(*kv));
	val = arena_alloc(e, sizeof(*val));
	if (!kv || !val)
		return -ENOMEM;
	PB(key_value_and_unit__init)(kv);
	opentelemetry__proto__common__v1__any_value__init(val);
	switch (kind) {
	case AK_TID:
		k = add_extra(e, XS_THREAD_ID);
		val->value_case = ANY_INT;
		val->int_value = (int64_t)v;
		break;
	case AK_CPU:
		k = add_extra(e, XS_CPU_NUMBER);
		val->value_case = ANY_INT;
		val->int_value = (int64_t)v;
		break;
	case AK_COMM:
		k = add_extra(e, XS_THREAD_NAME);
		val->value_case = ANY_STRING;
		val->string_value = (char *)profile__string(e->p, (uint32_t)v);
		break;
	case AK_FRAME_TYPE:
		k = add_extra(e, XS_FRAME_TYPE);
		val->value_case = ANY_STRING;
		val->string_value = (char *)profile__frame_type((enum frame_kind)v);
		break;
	case AK_BUILD_ID:
		k = add_extra(e, XS_BUILD_ID_GNU);
		val->value_case = ANY_STRING;
		val->string_value = (char *)profile__string(e->p, (uint32_t)v);
		break;
	case AK_HTL:
		k = add_extra(e, XS_BUILD_ID_HTL);
		val->value_case = ANY_STRING;
		val->string_value = e->htl[aux].hex;
		break;
	case AK_LOCK:
		k = add_extra(e, XS_LOCK_ADDRESS);
		val->value_case = ANY_INT;
		val->int_value = (int64_t)v;
		break;
	case AK_CTX:
		/* The key map's name, through the string table like the other attributes. */
		k = add_string(e, (uint32_t)(v >> 32));
		val->value_case = ANY_STRING;
		val->string_value = (char *)profile__string(e->p, (uint32_t)v);
		break;
	default:
		return -EINVAL;
	}
	if (k < 0)
		return k;
	kv->key_strindex = k;
	kv->value = val;
	r = tab_push(&e->attr, 0, &key, kv);
	if (r < 0)
		return r;
	s->kind = kind;
	s->v = v;
	s->idx = (uint32_t)r;
	e->dict_bytes += msg_field_len(kv);
	return r;
}

static void htl_compute(struct enc *e, uint32_t mi, uint32_t pid)
{
	const struct profile_mapping *m = profile__mapping(e->p, mi);
	const char *path = profile__string(e->p, m->filename);
	struct htl *h = &e->htl[mi];
	char full[PATH_MAX];
	int n;

	h->state = 1;
	if (e->o && e->o->no_file_hash)
		return;
	if (!path || path[0] != '/')
		return; /* [vdso], [anon:...], memfd: nothing to hash */
	/* The process's own view of the path first: it may live in another mount namespace. */
	n = snprintf(full, sizeof(full), "/proc/%u/root%s", pid, path);
	if ((n < 0 || (size_t)n >= sizeof(full) || otlp__htlhash_file(full, h->hex)) &&
	    otlp__htlhash_file(path, h->hex))
		return;
	memcpy(full, h->hex, 16);
	full[16] = '\0';
	h->key = strtoull(full, NULL, 16);
	h->state = 2;
}

static int add_mapping(struct enc *e, uint32_t mi, uint32_t pid)
{
	const struct profile_mapping *m;
	int32_t attrs[2];
	uint32_t na = 0;
	pb_mapping *pm;
	int r, fn;

	if (mi == 0)
		return 0;
	r = (int)remap_get(e->map_map, &e->map, mi);
	if (r)
		return r;
	m = profile__mapping(e->p, mi);
	fn = add_string(e, m->filename);
	if (fn < 0)
		return fn;
	if (m->build_id) {
		r = add_attr(e, AK_BUILD_ID, m->build_id, 0);
		if (r < 0)
			return r;
		attrs[na++] = r;
	}
	if (e->htl[mi].state == 0)
		htl_compute(e, mi, pid);
	if (e->htl[mi].state == 2) {
		/*
		 * Keyed by 64 bits of the hash: mappings of one file share one entry. (Two
		 * different files agreeing on 64 bits of SHA-256 is not a case to design for.)
		 */
		r = add_attr(e, AK_HTL, e->htl[mi].key, mi);
		if (r < 0)
			return r;
		attrs[na++] = r;
	}
	pm = arena_alloc(e, sizeof(*pm) + na * sizeof(int32_t));
	if (!pm)
		return -ENOMEM;
	PB(mapping__init)(pm);
	pm->memory_start = m->memory_start;
	pm->memory_limit = m->memory_limit;
	pm->file_offset = m->file_offset;
	pm->filename_strindex = fn;
	pm->n_attribute_indices = na;
	pm->attribute_indices = (int32_t *)(pm + 1);
	memcpy(pm->attribute_indices, attrs, na * sizeof(int32_t));
	r = tab_push(&e->map, mi, NULL, pm);
	if (r < 0)
		return r;
	e->map_map[mi] = (uint32_t)r;
	e->dict_bytes += msg_field_len(pm);
	return r;
}

static int add_function(struct enc *e, uint32_t fi)
{
	const struct profile_function *f;
	pb_function *pf;
	int r, name, sys, file;

	if (fi == 0)
		return 0;
	r = (int)remap_get(e->fn_map, &e->fn, fi);
	if (r)
		return r;
	f = profile__function(e->p, fi);
	name = add_string(e, f->name);
	sys = add_string(e, f->system_name);
	file = add_string(e, f->filename);
	if (name < 0 || sys < 0 || file < 0)
		return -ENOMEM;
	pf = arena_alloc(e, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	PB(function__init)(pf);
	pf->name_strindex = name;
	pf->system_name_strindex = sys;
	pf->filename_strindex = file;
	r = tab_push(&e->fn, fi, NULL, pf);
	if (r < 0)
		return r;
	e->fn_map[fi] = (uint32_t)r;
	e->dict_bytes += msg_field_len(pf);
	return r;
}

static int add_location(struct enc *e, uint32_t li, uint32_t pid)
{
	const struct profile_location *l;
	const struct profile_line *lines;
	pb_location *pl;
	pb_line *pln;
	int r, mi, ft = 0;

	r = (int)remap_get(e->loc_map, &e->loc, li);
	if (r)
		return r;
	l = profile__location(e->p, li);
	lines = profile__location_lines(e->p, li);
	mi = add_mapping(e, l->mapping, pid);
	if (mi < 0)
		return mi;
	if (profile__frame_type(l->kind)) {
		ft = add_attr(e, AK_FRAME_TYPE, l->kind, 0);
		if (ft < 0)
			return ft;
	}
	pl = arena_alloc(e, sizeof(*pl) + l->nlines * sizeof(pb_line *) + sizeof(int32_t));
	pln = arena_alloc(e, l->nlines * sizeof(*pln));
	if (!pl || (l->nlines && !pln))
		return -ENOMEM;
	PB(location__init)(pl);
	pl->mapping_index = mi;
	pl->address = l->address;
	pl->lines = (pb_line **)(pl + 1);
	pl->attribute_indices = (int32_t *)(pl->lines + l->nlines);
	if (ft) {
		pl->attribute_indices[0] = ft;
		pl->n_attribute_indices = 1;
	}
	for (uint32_t i = 0; i < l->nlines; i++) {
		int f = add_function(e, lines[i].function);

		if (f < 0)
			return f;
		PB(line__init)(&pln[i]);
		pln[i].function_index = f;
		pln[i].line = lines[i].line;
		pl->lines[i] = &pln[i];
	}
	pl->n_lines = l->nlines;
	r = tab_push(&e->loc, li, NULL, pl);
	if (r < 0)
		return r;
	e->loc_map[li] = (uint32_t)r;
	e->dict_bytes += msg_field_len(pl);
	return r;
}

static int add_stack(struct enc *e, uint32_t si, uint32_t pid)
{
	const struct profile_stack *st;
	const uint32_t *locs;
	pb_stack *ps;
	int r;

	if (si == 0)
		return 0;
	r = (int)remap_get(e->stack_map, &e->stack, si);
	if (r)
		return r;
	st = profile__stack(e->p, si);
	locs = profile__stack_locations(e->p, si);
	ps = arena_alloc(e, sizeof(*ps) + st->nlocations * sizeof(int32_t));
	if (!ps)
		return -ENOMEM;
	PB(stack__init)(ps);
	ps->location_indices = (int32_t *)(ps + 1);
	for (uint32_t i = 0; i < st->nlocations; i++) {
		int l = add_location(e, locs[i], pid);

		if (l < 0)
			return l;
		ps->location_indices[i] = l;
	}
	ps->n_location_indices = st->nlocations;
	r = tab_push(&e->stack, si, NULL, ps);
	if (r < 0)
		return r;
	e->stack_map[si] = (uint32_t)r;
	e->dict_bytes += msg_field_len(ps);
	return r;
}

/* Link of the span a sample was taken in (OTLP Link: trace_id 16 bytes, span_id 8). */
static int add_link(struct enc *e, uint32_t li)
{
	const struct profile_link *l;
	pb_link *pl;
	int r;

	if (li == 0)
		return 0;
	r = (int)remap_get(e->link_map, &e->link, li);
	if (r)
		return r;
	l = profile__link(e->p, li);
	pl = arena_alloc(e, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	PB(link__init)(pl);
	pl->trace_id.data = (uint8_t *)l->trace_id;
	pl->trace_id.len = sizeof(l->trace_id);
	pl->span_id.data = (uint8_t *)l->span_id;
	pl->span_id.len = sizeof(l->span_id);
	r = tab_push(&e->link, li, NULL, pl);
	if (r < 0)
		return r;
	e->link_map[li] = (uint32_t)r;
	e->dict_bytes += msg_field_len(pl);
	return r;
}

/* --- resources, profiles, samples --------------------------------------------------------- */

static void random_id(struct enc *e, uint8_t id[16])
{
	struct timespec ts;
	uint64_t x;

	if (getrandom(id, 16, GRND_NONBLOCK) == 16)
		return;
	/* No entropy yet (early boot): unique per process is all a profile id needs. */
	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ++e->id_counter;
	for (int i = 0; i < 2; i++) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid());

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		memcpy(id + 8 * i, &z, 8);
	}
}

static pb_kv *kv_new(struct enc *e, const char *key, const char *s, int64_t iv, bool is_int)
{
	pb_kv *kv = arena_alloc(e, sizeof(*kv));
	pb_any *v = arena_alloc(e, sizeof(*v));

	if (!kv || !v)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key = (char *)key;
	kv->value = v;
	if (is_int) {
		v->value_case = ANY_INT;
		v->int_value = iv;
	} else {
		v->value_case = ANY_STRING;
		v->string_value = (char *)s;
	}
	return kv;
}

static char *arena_strcat(struct enc *e, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = arena_alloc(e, la + lb + 1);

	if (s) {
		memcpy(s, a, la);
		memcpy(s + la, b, lb + 1);
	}
	return s;
}

static bool own_key(const char *k)
{
	static const char *const keys[] = {
	    "service.name", "process.pid", "process.executable.name", "process.executable.path",
	    "container.id", "host.name"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(k, keys[i]) == 0)
			return true;
	return false;
}

/* Whether @key is among the first @n attributes (a process's own value must not repeat it). */
static bool emitted(pb_kv *const *kvs, uint32_t n, const char *key)
{
	for (uint32_t i = 0; i < n; i++)
		if (kvs[i] && strcmp(kvs[i]->key, key) == 0)
			return true;
	return false;
}

/* Kubernetes attributes (--k8s, k8smeta.h): those known, none invented. */
static uint32_t k8s_attrs(struct enc *e, const struct procmeta *pm, pb_kv **kvs)
{
	const char *node = e->o ? e->o->k8s_node_name : NULL;
	uint32_t n = 0;

	if (pm && pm->k8s) {
		if (pm->pod_uid[0])
			kvs[n++] = kv_new(e, "k8s.pod.uid", pm->pod_uid, 0, false);
		if (pm->k8s->pod_name)
			kvs[n++] = kv_new(e, "k8s.pod.name", pm->k8s->pod_name, 0, false);
		if (pm->k8s->namespace)
			kvs[n++] = kv_new(e, "k8s.namespace.name", pm->k8s->namespace, 0, false);
		if (pm->k8s->container_name)
			kvs[n++] =
			    kv_new(e, "k8s.container.name", pm->k8s->container_name, 0, false);
	}
	if (node && *node)
		kvs[n++] = kv_new(e, "k8s.node.name", node, 0, false);
	return n;
}

static int build_resource(struct enc *e, uint32_t pid, uint32_t process_name, pb_resource *res)
{
	const struct procmeta *pm = NULL;
	const char *name = profile__string(e->p, process_name), *service;
	uint32_t cap = 6 + 5 + PROCMETA_MAX_ATTRS, n = 0, own;
	pb_kv **kvs = arena_alloc(e, cap * sizeof(*kvs));

	if (!kvs)
		return -ENOMEM;
	if (e->o && e->o->process_meta && e->o->process_meta(e->o->ctx, pid, &pm))
		pm = NULL;
	if (pm && pm->exe_name && *pm->exe_name)
		name = pm->exe_name;
	if (pm && pm->service_name)
		service = pm->service_name;
	else if (name && *name)
		service = arena_strcat(e, "unknown_service:", name);
	else
		service = "unknown_service";
	if (!service)
		return -ENOMEM;

	kvs[n++] = kv_new(e, "service.name", service, 0, false);
	kvs[n++] = kv_new(e, "process.pid", NULL, pid, true);
	if (name && *name)
		kvs[n++] = kv_new(e, "process.executable.name", name, 0, false);
	if (pm && pm->exe_path)
		kvs[n++] = kv_new(e, "process.executable.path", pm->exe_path, 0, false);
	if (pm && pm->container_id[0])
		kvs[n++] = kv_new(e, "container.id", pm->container_id, 0, false);
	if (e->host && *e->host)
		kvs[n++] = kv_new(e, "host.name", e->host, 0, false);
	n += k8s_attrs(e, pm, kvs + n);
	own = n;
	for (uint32_t i = 0; pm && i < pm->nattrs && n < cap; i++)
		if (!own_key(pm->attrs[i].key) && !emitted(kvs, own, pm->attrs[i].key))
			kvs[n++] = kv_new(e, pm->attrs[i].key, pm->attrs[i].value, 0, false);
	for (uint32_t i = 0; i < n; i++)
		if (!kvs[i])
			return -ENOMEM;
	res->attributes = kvs;
	res->n_attributes = n;
	return 0;
}

/* Starts the ResourceProfiles / ScopeProfiles / Profile of process @c in the request. */
static int chunk_begin(struct enc *e, const struct proc *c, const uint32_t *order)
{
	const struct profile_sample *first = profile__sample(e->p, order[c->first]);
	const struct profile_meta *meta = profile__meta(e->p);
	/* The process's earlier Profile (another type) is the last one of the request: join it. */
	bool join = e->nrp > 0 && e->last_sp && e->last_pid == first->key.pid &&
		    e->last_sp->n_profiles < MAX_PROFILES_PER_RESOURCE;
	pb_rp *rp = NULL;
	pb_sp *sp = NULL;
	pb_resource *res = NULL;
	pb_scope *scope = NULL;
	pb_profile *prof = arena_alloc(e, sizeof(*prof) + 16);
	pb_vt *st = arena_alloc(e, sizeof(*st)), *pt = arena_alloc(e, sizeof(*pt));
	pb_sample **samples = arena_alloc(e, c->n * sizeof(*samples));
	const struct profile_type_info *ti;
	int err, a, b, x, y;

	if (!join) {
		rp = arena_alloc(e, sizeof(*rp) + sizeof(pb_sp *));
		sp = arena_alloc(e, sizeof(*sp) + MAX_PROFILES_PER_RESOURCE * sizeof(pb_profile *));
		res = arena_alloc(e, sizeof(*res));
		scope = arena_alloc(e, sizeof(*scope));
		if (!rp || !sp || !res || !scope)
			return -ENOMEM;
	}
	if (!prof || !st || !pt || !samples)
		return -ENOMEM;
	PB(profile__init)(prof);
	PB(value_type__init)(st);
	PB(value_type__init)(pt);
	if (!join) {
		PB(resource_profiles__init)(rp);
		PB(scope_profiles__init)(sp);
		opentelemetry__proto__resource__v1__resource__init(res);
		opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
		err = build_resource(e, first->key.pid, first->key.process_name, res);
		if (err)
			return err;
		scope->name = (char *)e->scope_name;
		scope->version = (char *)e->scope_version;
	}

	ti = profile__type_info(c->type);
	a = add_extra_text(e, ti->values[c->which].type);
	b = add_extra_text(e, ti->values[c->which].unit);
	x = add_extra_text(e, ti->period.type);
	y = add_extra_text(e, ti->period.unit);
	if (a < 0 || b < 0 || x < 0 || y < 0)
		return a < 0 ? a : b < 0 ? b : x < 0 ? x : y;
	st->type_strindex = a;
	st->unit_strindex = b;
	pt->type_strindex = x;
	pt->unit_strindex = y;
	prof->sample_type = st;
	prof->period_type = pt;
	if (c->type == PROFILE_CPU) {
		prof->period = (int64_t)meta->period_nano;
		if (!prof->period && meta->frequency_hz)
			prof->period = 1000000000ll / meta->frequency_hz;
	} else {
		prof->period = 1;
	}
	prof->profile_id.data = (uint8_t *)(prof + 1);
	prof->profile_id.len = 16;
	random_id(e, prof->profile_id.data);
	prof->samples = samples;
	e->merge = NULL;
	e->merged_old = NULL;
	if (e->o && e->o->omit_sample_attrs) {
		uint32_t cap = 16;

		while (cap < 2 * c->n)
			cap *= 2;
		e->merge = arena_alloc(e, cap * sizeof(*e->merge));
		if (!e->merge)
			return -ENOMEM;
		memset(e->merge, 0, cap * sizeof(*e->merge));
		e->merge_mask = cap - 1;
	}

	/* Size with the window fields at their largest, and room for the prefixes to grow. */
	prof->time_unix_nano = UINT64_MAX;
	prof->duration_nano = UINT64_MAX;
	if (join) {
		e->last_sp->profiles[e->last_sp->n_profiles++] = prof;
		e->body_bytes += msg_field_len(prof) + 3 * LEN_SLOP;
	} else {
		rp->resource = res;
		rp->scope_profiles = (pb_sp **)(rp + 1);
		rp->scope_profiles[0] = sp;
		rp->n_scope_profiles = 1;
		sp->scope = scope;
		sp->profiles = (pb_profile **)(sp + 1);
		sp->profiles[0] = prof;
		sp->n_profiles = 1;

		if (e->nrp == e->cap_rp) {
			uint32_t cap = e->cap_rp ? 2 * e->cap_rp : 16;
			pb_rp **n = realloc(e->rps, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			e->rps = n;
			e->cap_rp = cap;
		}
		e->rps[e->nrp++] = rp;
		e->last_sp = sp;
		e->last_pid = first->key.pid;
		e->body_bytes += msg_field_len(rp) + 3 * LEN_SLOP;
	}
	prof->time_unix_nano = 0;
	prof->duration_nano = 0;
	e->prof = prof;
	e->cur = c;
	e->nsamples = 0;
	return 0;
}

static uint32_t sample_identity_hash(const pb_sample *ps)
{
	uint64_t h = (uint64_t)(uint32_t)ps->stack_index * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)(uint32_t)ps->link_index << 32;

	for (size_t j = 0; j < ps->n_attribute_indices; j++)
		h = (h ^ (uint32_t)ps->attribute_indices[j]) * 0x100000001b3ull;
	return (uint32_t)(h ^ h >> 31);
}

static bool same_identity(const pb_sample *a, const pb_sample *b)
{
	return a->stack_index == b->stack_index && a->link_index == b->link_index &&
	       a->n_attribute_indices == b->n_attribute_indices &&
	       !memcmp(a->attribute_indices, b->attribute_indices,
		       a->n_attribute_indices * sizeof(*a->attribute_indices));
}

/* @dst = @a followed by @b (@na, @nb elements of @size bytes), in the arena; or NULL. */
static void *arena_concat(struct enc *e, const void *a, size_t na, const void *b, size_t nb,
			  size_t size)
{
	uint8_t *d = arena_alloc(e, (na + nb) * size);

	if (d) {
		memcpy(d, a, na * size);
		memcpy(d + na * size, b, nb * size);
	}
	return d;
}

/*
 * Adds @ps to the Profile being filled: merged into the Sample of the same identity if there is
 * one (left-out attributes make samples of several threads or CPUs one), else appended.
 */
static int put_sample(struct enc *e, pb_sample *ps)
{
	pb_sample *old, *m;
	uint32_t h, slot;

	if (!e->merge) {
		e->prof->samples[e->nsamples++] = ps;
		e->body_bytes += msg_field_len(ps);
		return 0;
	}
	for (h = sample_identity_hash(ps) & e->merge_mask;; h = (h + 1) & e->merge_mask) {
		slot = e->merge[h];
		if (!slot)
			break;
		/* (A Sample with timestamps never takes one without: values and timestamps pair.)
		 */
		if (slot - 1 < e->nsamples && same_identity(e->prof->samples[slot - 1], ps) &&
		    !e->prof->samples[slot - 1]->n_timestamps_unix_nano ==
			!ps->n_timestamps_unix_nano)
			break;
	}
	if (!slot) {
		e->merge[h] = e->nsamples + 1;
		e->prof->samples[e->nsamples++] = ps;
		e->body_bytes += msg_field_len(ps);
		return 0;
	}
	old = e->prof->samples[slot - 1];
	m = arena_alloc(e, sizeof(*m));
	if (!m)
		return -ENOMEM;
	*m = *old;
	if (old->n_timestamps_unix_nano || ps->n_timestamps_unix_nano) {
		m->timestamps_unix_nano =
		    arena_concat(e, old->timestamps_unix_nano, old->n_timestamps_unix_nano,
				 ps->timestamps_unix_nano, ps->n_timestamps_unix_nano,
				 sizeof(*m->timestamps_unix_nano));
		m->n_timestamps_unix_nano =
		    old->n_timestamps_unix_nano + ps->n_timestamps_unix_nano;
		if (!m->timestamps_unix_nano)
			return -ENOMEM;
	}
	if (old->n_values > 1 || ps->n_values > 1 || m->n_timestamps_unix_nano) {
		/* One value per event (or none: CPU with timestamps): side by side. */
		if (old->n_values || ps->n_values) {
			m->values = arena_concat(e, old->values, old->n_values, ps->values,
						 ps->n_values, sizeof(*m->values));
			m->n_values = old->n_values + ps->n_values;
			if (!m->values)
				return -ENOMEM;
		}
	} else {
		m->values = arena_alloc(e, sizeof(*m->values));
		if (!m->values)
			return -ENOMEM;
		m->values[0] =
		    (old->n_values ? old->values[0] : 0) + (ps->n_values ? ps->values[0] : 0);
		m->n_values = 1;
	}
	e->body_bytes += msg_field_len(m) - msg_field_len(old);
	e->prof->samples[slot - 1] = m;
	e->merged_slot = slot - 1;
	e->merged_old = old;
	return 0;
}

static int add_sample(struct enc *e, uint32_t i)
{
	const struct profile_sample *s = profile__sample(e->p, i);
	const struct profile_attrset *as = profile__attrset(e->p, s->key.attrs);
	uint32_t nctx = as ? as->nattrs : 0;
	unsigned int omit = e->o ? e->o->omit_sample_attrs : 0;
	pb_sample *ps =
	    arena_alloc(e, sizeof(*ps) + sizeof(int64_t) + (4 + (size_t)nctx) * sizeof(int32_t));
	int st, a;

	e->merged_old = NULL;
	if (!ps)
		return -ENOMEM;
	PB(sample__init)(ps);
	st = add_stack(e, s->key.stack, s->key.pid);
	if (st < 0)
		return st;
	ps->stack_index = st;
	if (s->key.link) {
		a = add_link(e, s->key.link);
		if (a < 0)
			return a;
		ps->link_index = a;
	}
	ps->values = (int64_t *)(ps + 1);
	ps->attribute_indices = (int32_t *)(ps->values + 1);
	if (!(omit & OTLP_SAMPLE_THREAD_ID)) {
		a = add_attr(e, AK_TID, s->key.tid, 0);
		if (a < 0)
			return a;
		ps->attribute_indices[ps->n_attribute_indices++] = a;
	}
	if (s->key.comm && !(omit & OTLP_SAMPLE_THREAD_NAME)) {
		a = add_attr(e, AK_COMM, s->key.comm, 0);
		if (a < 0)
			return a;
		ps->attribute_indices[ps->n_attribute_indices++] = a;
	}
	if (!(omit & OTLP_SAMPLE_CPU)) {
		a = add_attr(e, AK_CPU, s->key.cpu, 0);
		if (a < 0)
			return a;
		ps->attribute_indices[ps->n_attribute_indices++] = a;
	}
	if (s->key.addr) {
		a = add_attr(e, AK_LOCK, s->key.addr, 0);
		if (a < 0)
			return a;
		ps->attribute_indices[ps->n_attribute_indices++] = a;
	}
	for (uint32_t j = 0; j < nctx; j++) {
		const struct profile_attr *pa = profile__attrset_attrs(e->p, s->key.attrs) + j;

		a = add_attr(e, AK_CTX, (uint64_t)pa->key << 32 | pa->value, 0);
		if (a < 0)
			return a;
		ps->attribute_indices[ps->n_attribute_indices++] = a;
	}
	if (e->cur->type != PROFILE_CPU && s->ntimestamps) {
		/* One value per event, with its timestamp. */
		int64_t *v = arena_alloc(e, s->ntimestamps * sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (uint32_t j = 0; j < s->ntimestamps; j++)
			v[j] = (int64_t)profile__event_value(e->p, s, j, e->cur->which);
		ps->values = v;
		ps->n_values = s->ntimestamps;
		ps->timestamps_unix_nano = s->timestamps_unix_nano;
		ps->n_timestamps_unix_nano = s->ntimestamps;
	} else if (e->cur->timestamps) {
		ps->timestamps_unix_nano = s->timestamps_unix_nano;
		ps->n_timestamps_unix_nano = s->ntimestamps;
	} else {
		ps->values[0] = (int64_t)profile__sample_value(e->p, s, e->cur->which);
		ps->n_values = 1;
	}
	a = put_sample(e, ps);
	if (a < 0)
		return a;
	/* Events sent: each event once, on the first Profile of its type. */
	if (e->cur->type == PROFILE_CPU)
		e->events += s->count;
	else if (!(profile__type_info(e->cur->type)->otlp_values & ((1u << e->cur->which) - 1)))
		e->events += s->ntimestamps ? s->ntimestamps : 1;
	return 0;
}

/* Sets the window of the current Profile so that it holds every timestamp of its samples. */
static void chunk_finish(struct enc *e)
{
	const struct profile_meta *meta = profile__meta(e->p);
	pb_profile *prof = e->prof;
	uint64_t start = meta->start_unix_nano, end = start + meta->duration_nano;
	uint64_t lo = UINT64_MAX, hi = 0;

	prof->n_samples = e->nsamples;
	for (uint32_t i = 0; i < e->nsamples; i++) {
		const pb_sample *s = prof->samples[i];

		for (size_t j = 0; j < s->n_timestamps_unix_nano; j++) {
			uint64_t t = s->timestamps_unix_nano[j];

			lo = t < lo ? t : lo;
			hi = t > hi ? t : hi;
		}
	}
	if (lo <= hi) {
		/* Widen rather than clamp: the timestamps are the truth, meta a plan. */
		if (start == 0 || lo < start)
			start = lo;
		if (end <= hi)
			end = hi + 1;
	}
	prof->time_unix_nano = start;
	prof->duration_nano = end > start ? end - start : 0;
}

static int request_flush(struct enc *e)
{
	pb_request req =
	    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	pb_dict dict = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	size_t len;
	int err;

	if (e->nrp == 0)
		return 0;
	dict.mapping_table = (pb_mapping **)e->map.el;
	dict.n_mapping_table = e->map.n;
	dict.location_table = (pb_location **)e->loc.el;
	dict.n_location_table = e->loc.n;
	dict.function_table = (pb_function **)e->fn.el;
	dict.n_function_table = e->fn.n;
	dict.link_table = (pb_link **)e->link.el;
	dict.n_link_table = e->link.n;
	dict.string_table = (char **)e->str.el;
	dict.n_string_table = e->str.n;
	dict.attribute_table = (pb_kvu **)e->attr.el;
	dict.n_attribute_table = e->attr.n;
	dict.stack_table = (pb_stack **)e->stack.el;
	dict.n_stack_table = e->stack.n;
	req.dictionary = &dict;
	req.resource_profiles = e->rps;
	req.n_resource_profiles = e->nrp;

	len = protobuf_c_message_get_packed_size(&req.base);
	if (len > e->max)
		return -E2BIG; /* the estimate is an upper bound: this is a bug */
	if (len > e->buf_cap) {
		uint8_t *b = realloc(e->buf, len);

		if (!b)
			return -ENOMEM;
		e->buf = b;
		e->buf_cap = len;
	}
	protobuf_c_message_pack(&req.base, e->buf);
	err = e->emit(e->emit_ctx, e->buf, len, e->events, e->type);
	request_reset(e);
	return err;
}

/* Profile type first (one request per type), then pid, then first-seen order. */
static int cmp_by_type_pid(const void *a, const void *b, void *p)
{
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct profile_sample *sa = profile__sample(p, ia), *sb = profile__sample(p, ib);

	if (sa->key.type != sb->key.type)
		return sa->key.type < sb->key.type ? -1 : 1;
	if (sa->key.pid != sb->key.pid)
		return sa->key.pid < sb->key.pid ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

/* Adds process @c (samples order[c->first ...]), splitting it over requests if needed. */
static int encode_process(struct enc *e, const struct proc *c, const uint32_t *order)
{
	struct mark pm = mark_get(e), sm;
	bool shared = e->nrp > 0; /* the request already holds other processes */
	int err;

	err = chunk_begin(e, c, order);
	if (err)
		return err;
	for (uint32_t k = 0; k < c->n; k++) {
		sm = mark_get(e);
		err = add_sample(e, order[c->first + k]);
		if (err)
			return err;
		if (request_estimate(e) <= e->max)
			continue;
		mark_rollback(e, &sm);
		if (shared) {
			/* Keep the process whole: move it to a request of its own. */
			mark_rollback(e, &pm);
			err = request_flush(e);
			if (err)
				return err;
			shared = false;
			pm = mark_get(e);
			err = chunk_begin(e, c, order);
			if (err)
				return err;
			k = UINT32_MAX; /* restart at sample 0 */
			continue;
		}
		if (e->nsamples == 0)
			return -E2BIG; /* one sample alone is over the limit */
		/* The process alone is too big: this part goes now, the rest in new requests. */
		chunk_finish(e);
		err = request_flush(e);
		if (err)
			return err;
		err = chunk_begin(e, c, order);
		if (err)
			return err;
		k--;
	}
	if (request_estimate(e) > e->max)
		return -E2BIG; /* the process header alone */
	chunk_finish(e);
	return 0;
}

static void enc_free(struct enc *e)
{
	free(e->str_map);
	free(e->map_map);
	free(e->fn_map);
	free(e->loc_map);
	free(e->stack_map);
	free(e->link_map);
	free(e->hash);
	free(e->htl);
	tab_free(&e->str);
	tab_free(&e->map);
	tab_free(&e->fn);
	tab_free(&e->loc);
	tab_free(&e->stack);
	tab_free(&e->attr);
	tab_free(&e->link);
	arena_free(e);
	free(e->rps);
	free(e->buf);
}

int otlp__encode(const struct profile *p, const struct otlp_encode_opts *o, otlp_emit_fn emit,
		 void *emit_ctx)
{
	struct enc e = {.p = p, .o = o, .emit = emit, .emit_ctx = emit_ctx};
	uint32_t nsamples = profile__nsamples(p), nproc = 0, *order = NULL;
	struct proc *procs = NULL;
	char host[256];
	size_t hcap, nctx = 0;
	int err = 0;

	if (nsamples == 0)
		return 0;
	e.max = o && o->max_request_bytes ? o->max_request_bytes : OTLP_DEFAULT_MAX_REQUEST;
	e.scope_name = o && o->scope_name ? o->scope_name : "spanprof";
	e.scope_version = o && o->scope_version ? o->scope_version : SPANPROF_VERSION;
	if (o && o->host_name) {
		e.host = o->host_name;
	} else {
		if (gethostname(host, sizeof(host)))
			host[0] = '\0';
		host[sizeof(host) - 1] = '\0';
		e.host = host;
	}

	e.ns = profile__nstrings(p);
	e.str_map = calloc(e.ns + XS_COUNT_ALL, sizeof(*e.str_map));
	e.map_map = calloc(profile__nmappings(p), sizeof(*e.map_map));
	e.fn_map = calloc(profile__nfunctions(p), sizeof(*e.fn_map));
	e.loc_map = calloc(profile__nlocations(p), sizeof(*e.loc_map));
	e.stack_map = calloc(profile__nstacks(p), sizeof(*e.stack_map));
	e.link_map = calloc(profile__nlinks(p), sizeof(*e.link_map));
	e.htl = calloc(profile__nmappings(p), sizeof(*e.htl));
	/* Distinct attributes: <= 3 per sample + frame types + 2 per mapping; load <= 1/2. */
	/* Thread-context attributes: at most every attribute of every attribute set. */
	for (uint32_t i = 1; i < profile__nattrsets(p); i++)
		nctx += profile__attrset(p, i)->nattrs;
	hcap = 64;
	while (hcap < 2 * (4 * (size_t)nsamples + 2 * profile__nmappings(p) + 8 + nctx))
		hcap *= 2;
	e.hash = calloc(hcap, sizeof(*e.hash));
	e.hash_mask = (uint32_t)(hcap - 1);
	order = malloc(nsamples * sizeof(*order));
	procs = malloc(2 * (size_t)nsamples * sizeof(*procs)); /* <= 2 Profiles per group */
	if (!e.str_map || !e.map_map || !e.fn_map || !e.loc_map || !e.stack_map || !e.link_map ||
	    !e.htl || !e.hash || !order || !procs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int x = 0; x < XS_COUNT_ALL; x++) {
		uint32_t i = profile__find_string(p, extra_text[x]);

		e.xs_id[x] = i ? i : e.ns + (uint32_t)x;
	}
	/* Every table's zero element, at index 0 of each request. */
	if (tab_push(&e.str, 0, NULL, empty_string) < 0 ||
	    tab_push(&e.map, 0, NULL, (void *)&zero_mapping) < 0 ||
	    tab_push(&e.fn, 0, NULL, (void *)&zero_function) < 0 ||
	    tab_push(&e.loc, 0, NULL, (void *)&zero_location) < 0 ||
	    tab_push(&e.stack, 0, NULL, (void *)&zero_stack) < 0 ||
	    tab_push(&e.attr, 0, &(struct attr_key){0}, (void *)&zero_kvu) < 0 ||
	    tab_push(&e.link, 0, NULL, (void *)&zero_link) < 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	request_reset(&e);

	/* Group samples by type, then process, keeping their first-seen order inside each. */
	for (uint32_t i = 0; i < nsamples; i++)
		order[i] = i;
	qsort_r(order, nsamples, sizeof(*order), cmp_by_type_pid, (void *)p);
	/* Then one chunk (an OTLP Profile) per process, type and value the type sends. */
	for (uint32_t i = 0, first = 0; i < nsamples; i++) {
		const struct profile_sample *s = profile__sample(p, order[i]), *next;
		const struct profile_type_info *ti;
		bool ts = true;

		next = i + 1 < nsamples ? profile__sample(p, order[i + 1]) : NULL;
		if (next && next->key.pid == s->key.pid && next->key.type == s->key.type)
			continue;
		for (uint32_t j = first; j <= i; j++) {
			const struct profile_sample *x = profile__sample(p, order[j]);

			ts &= x->count > 0 && x->ntimestamps == x->count;
		}
		ti = profile__type_info(s->key.type);
		for (uint32_t w = 0; ti && w < ti->nvalues; w++)
			if (ti->otlp_values & (1u << w))
				procs[nproc++] = (struct proc){.first = first,
							       .n = i + 1 - first,
							       .timestamps = ts,
							       .type = s->key.type,
							       .which = w};
		first = i + 1;
	}
	/*
	 * One type per request: a backend that refuses a type (not retryable) must not take the
	 * other types' samples with it, so a new type starts a new request.
	 */
	for (uint32_t i = 0; i < nproc; i++) {
		if (i && procs[i].type != procs[i - 1].type) {
			err = request_flush(&e);
			if (err)
				goto cleanup;
		}
		e.type = procs[i].type;
		err = encode_process(&e, &procs[i], order);
		if (err)
			goto cleanup;
	}
	err = request_flush(&e);
cleanup:
	enc_free(&e);
	free(order);
	free(procs);
	return err;
}
