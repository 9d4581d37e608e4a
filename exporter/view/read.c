// SPDX-License-Identifier: Apache-2.0
/*
 * view_read: the inputs of `spanprof view`. Detects a file's format from its content and
 * merges its samples into a view_doc:
 *  - OTLP profiles v1development (opentelemetry-proto profiles/v1development/profiles.proto):
 *    one binary ExportProfilesServiceRequest or ProfilesData (same layout), the Collector file
 *    exporter's `format: proto` (4-byte big-endian length + ProfilesData, repeated), and its
 *    default OTLP/JSON (one ProfilesData per line; lowerCamelCase or snake_case keys, 64-bit
 *    integers as numbers or strings, trace/span/profile ids in hex as pdata writes them,
 *    base64 accepted too);
 *  - pprof (github.com/google/pprof proto/profile.proto), as exporter/output/pprof.c writes it;
 *  - any of those gzip- or zlib-compressed.
 *
 * A message is checked whole (every index in range) before any of it is merged, so a damaged
 * message adds nothing; in a stream or JSON lines file the messages before it are kept.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <zlib.h>

#include "otlp/otlp_pb.h"
#include "output/otlpfile.h"
#include "pprof/profile.pb-c.h"
#include "view/doc.h"
#include "view/read.h"
#include "util/util.h"
#include "profile/profile.h"
#include "profile/stackend.h"

typedef Perftools__Profiles__Profile pp_profile;

#define FMT_PROTO "otlp-proto"
#define FMT_STREAM "otlp-proto-stream"
#define FMT_JSON "otlp-json"
#define FMT_PPROF "pprof"

/* Decompressed inputs larger than this are refused (a zip bomb, or not a profile). */
#define MAX_INFLATED (4ull << 30)
/* Kernel addresses on x86-64 and arm64 (canonical upper half): frames of no mapping there
 * are kernel frames when the input does not say. */
#define KERNEL_ADDR_MIN 0xffff800000000000ull

/* --- arena: every decoded message, freed at once ------------------------------------------ */

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *head;
};

static void *arena_alloc(struct arena *a, size_t size)
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

static void *arena_zalloc(struct arena *a, size_t size)
{
	void *p = arena_alloc(a, size);

	if (p)
		memset(p, 0, size);
	return p;
}

static void arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *n = a->head->next;

		free(a->head);
		a->head = n;
	}
}

static void *pb_alloc(void *ad, size_t size)
{
	return arena_alloc(ad, size);
}

static void pb_free(void *ad, void *p)
{
}

/* --- reader state ------------------------------------------------------------------------- */

struct rd {
	struct view_doc *d;
	struct arena arena;
	const char *format;
	char where[64]; /* "line 3: ", "message 2 (byte 123): " */
	char err[512];
	bool oom;
};

/* Records the input's error (the first one wins). Returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int fail(struct rd *r, const char *fmt, ...)
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

static int oom(struct rd *r)
{
	r->oom = true;
	return -ENOMEM;
}

/* Fails on a negative (errno) result of a view_doc call. */
#define TRY(r, x)                                                                                  \
	({                                                                                         \
		__auto_type _v = (x);                                                              \
		if (_v < 0)                                                                        \
			return oom(r);                                                             \
		_v;                                                                                \
	})

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

/*
 * Walks the top-level fields of a protobuf message (wire format only). Returns 0 and the
 * highest field number seen, or -EINVAL with the reason in @why: what a cut-off file or a
 * file that is not protobuf looks like. -E2BIG instead when the fields so far looked like a
 * profile's (numbers up to 15) and the data stops in the middle of one: a truncated file.
 */
static int scan_fields(const uint8_t *p, size_t n, uint32_t *maxfield, char *why, size_t wl)
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

static const char *base_name(const char *path)
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

		n = snprintf(buf, sizeof(buf), "[%s+0x%llx]", base_name(mapfile),
			     (unsigned long long)off);
		if (n >= (int)sizeof(buf))
			n = sizeof(buf) - 1;
		return view_doc__string(r->d, buf, (size_t)n);
	}
	return view_doc__string(r->d, "[unknown]", 9);
}

/* Frame indices of the locations, root first, back to back (a per-message pool). */
struct fpool {
	int32_t *f;
	size_t n, cap;
};

static int fpool_push(struct fpool *p, int32_t v)
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

/* Where a location lies: what its frames are named after when they have no function name. */
struct loc_site {
	const char *mapfile; /* NULL: no mapping */
	uint64_t start, offset, address;
	int32_t module; /* doc string; 0: none */
	enum view_frame_kind kind;
	int32_t type;	       /* doc string of its profile.frame.type */
	const char *type_text; /* the same, as text */
};

/*
 * Appends one frame of the location at @s to @frames: function @name, @file and @line as doc
 * strings and a line number (0: none); @name 0 names it "[file+0xoffset]" or "[unknown]"
 * (unknown_name). Returns 0 or -ENOMEM (noted in @r).
 */
static int push_frame(struct rd *r, struct fpool *frames, const struct loc_site *s, int32_t name,
		      int32_t file, int64_t line)
{
	int32_t f;

	if (!name)
		name = TRY(r, unknown_name(r, s->mapfile, s->start, s->offset, s->address));
	f = TRY(r, view_doc__frame(r->d, name, file, line, s->module, s->kind, s->type));
	return fpool_push(frames, f) ? oom(r) : 0;
}

/* Makes the scratch array *@tmp (*@cap entries) hold at least @n. Returns 0 or -ENOMEM. */
static int grow_tmp(int32_t **tmp, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	free(*tmp);
	*cap = n < 256 ? 256 : 2 * n;
	*tmp = malloc(*cap * sizeof(**tmp));
	return *tmp ? 0 : -ENOMEM;
}

/* --- OTLP --------------------------------------------------------------------------------- */

enum attr_kind { AK_UNKNOWN, AK_IGNORE, AK_TID, AK_TNAME, AK_CTX };

struct attr_info {
	uint8_t kind;
	int32_t a, b; /* AK_TNAME: a name; AK_CTX: a key, b value (doc strings) */
	int64_t v;    /* AK_TID */
};

/* Per-message caches: dictionary index -> document index, filled on first use. */
struct otlp_msg {
	const pb_dict *dict;
	size_t nstr, nmap, nloc, nfn, nlink, nattr, nstack;
	int32_t *str;	    /* -1: not yet */
	int32_t *loc_first; /* in frames; -1: not yet */
	uint32_t *loc_n;
	struct fpool frames;
	int32_t *stack; /* -1: not yet */
	struct attr_info *attr;
	int32_t *link_span, *link_proc; /* link_span -2: not yet */
	int32_t *tmp;
	size_t tmp_cap;
	/* the last thread and series asked for: consecutive samples often share them */
	int32_t last_thread, lt_proc, lt_name;
	int64_t lt_tid;
	int32_t last_series, ls_key[4];
};

static const char *m_text(const struct otlp_msg *m, int32_t i)
{
	return i > 0 && (size_t)i < m->nstr ? m->dict->string_table[i] : "";
}

static int32_t m_sidx(struct rd *r, struct otlp_msg *m, int32_t i)
{
	if (i <= 0 || (size_t)i >= m->nstr)
		return 0;
	if (m->str[i] < 0) {
		const char *s = m->dict->string_table[i];

		m->str[i] = view_doc__string(r->d, s, strlen(s));
	}
	return m->str[i];
}

/* The string of an AnyValue, or NULL when it holds no string. */
static const char *any_string(const struct otlp_msg *m, const pb_any *v)
{
	if (!v)
		return NULL;
	if (v->value_case == ANY(STRING_VALUE))
		return v->string_value ? v->string_value : "";
	if (v->value_case == ANY(STRING_VALUE_STRINDEX))
		return m_text(m, v->string_value_strindex);
	return NULL;
}

static bool any_int(const struct otlp_msg *m, const pb_any *v, int64_t *out)
{
	const char *s;
	char *end;

	if (v && v->value_case == ANY(INT_VALUE)) {
		*out = v->int_value;
		return true;
	}
	s = any_string(m, v);
	if (!s || !*s)
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return !errno && !*end;
}

static bool idx_ok(int32_t i, size_t n)
{
	return i == 0 || (i > 0 && (size_t)i < n);
}

#define CHECK_IDX(r, i, n, table, fmt, ...)                                                        \
	do {                                                                                       \
		if (!idx_ok((i), (n)))                                                             \
			return fail((r), fmt ": index %d is outside " table " (%zu entries%s)",    \
				    ##__VA_ARGS__, (int)(i), (size_t)(n),                          \
				    m->dict ? "" : "; the message has no dictionary");             \
	} while (0)

static int check_attrs(struct rd *r, const struct otlp_msg *m, const int32_t *a, size_t n,
		       const char *what, size_t at)
{
	for (size_t i = 0; i < n; i++)
		CHECK_IDX(r, a[i], m->nattr, "attribute_table", "%s %zu attribute", what, at);
	return 0;
}

static int check_any(struct rd *r, const struct otlp_msg *m, const pb_any *v, const char *what,
		     size_t at)
{
	if (v && v->value_case == ANY(STRING_VALUE_STRINDEX))
		CHECK_IDX(r, v->string_value_strindex, m->nstr, "string_table", "%s %zu value",
			  what, at);
	return 0;
}

/* Every index of the message in range: then nothing below needs to check. */
static int otlp_check(struct rd *r, const pb_data *pd, const struct otlp_msg *m)
{
	const pb_dict *d = pd->dictionary;
	int err;

	for (size_t i = 0; d && i < d->n_mapping_table; i++) {
		const pb_mapping *mp = d->mapping_table[i];

		CHECK_IDX(r, mp->filename_strindex, m->nstr, "string_table", "mapping %zu file", i);
		if ((err = check_attrs(r, m, mp->attribute_indices, mp->n_attribute_indices,
				       "mapping", i)))
			return err;
	}
	for (size_t i = 0; d && i < d->n_function_table; i++) {
		const pb_function *f = d->function_table[i];

		CHECK_IDX(r, f->name_strindex, m->nstr, "string_table", "function %zu name", i);
		CHECK_IDX(r, f->system_name_strindex, m->nstr, "string_table",
			  "function %zu system name", i);
		CHECK_IDX(r, f->filename_strindex, m->nstr, "string_table", "function %zu file", i);
	}
	for (size_t i = 0; d && i < d->n_location_table; i++) {
		const pb_location *l = d->location_table[i];

		CHECK_IDX(r, l->mapping_index, m->nmap, "mapping_table", "location %zu mapping", i);
		for (size_t j = 0; j < l->n_lines; j++)
			CHECK_IDX(r, l->lines[j]->function_index, m->nfn, "function_table",
				  "location %zu line %zu function", i, j);
		if ((err = check_attrs(r, m, l->attribute_indices, l->n_attribute_indices,
				       "location", i)))
			return err;
	}
	for (size_t i = 0; d && i < d->n_link_table; i++) {
		const pb_link *l = d->link_table[i];

		if ((l->trace_id.len && l->trace_id.len != 16) ||
		    (l->span_id.len && l->span_id.len != 8))
			return fail(
			    r, "link %zu: a trace id is 16 bytes and a span id 8, not %zu and %zu",
			    i, l->trace_id.len, l->span_id.len);
	}
	for (size_t i = 0; d && i < d->n_attribute_table; i++) {
		const pb_kvu *a = d->attribute_table[i];

		CHECK_IDX(r, a->key_strindex, m->nstr, "string_table", "attribute %zu key", i);
		if ((err = check_any(r, m, a->value, "attribute", i)))
			return err;
	}
	for (size_t i = 0; d && i < d->n_stack_table; i++) {
		const pb_stack *s = d->stack_table[i];

		for (size_t j = 0; j < s->n_location_indices; j++)
			CHECK_IDX(r, s->location_indices[j], m->nloc, "location_table",
				  "stack %zu location", i);
	}
	for (size_t i = 0; i < pd->n_resource_profiles; i++) {
		const pb_rp *rp = pd->resource_profiles[i];

		for (size_t j = 0; rp->resource && j < rp->resource->n_attributes; j++) {
			const pb_kv *kv = rp->resource->attributes[j];

			CHECK_IDX(r, kv->key_strindex, m->nstr, "string_table",
				  "resource %zu attribute key", i);
			if ((err = check_any(r, m, kv->value, "resource attribute", j)))
				return err;
		}
		for (size_t j = 0; j < rp->n_scope_profiles; j++) {
			const pb_sp *sp = rp->scope_profiles[j];

			for (size_t k = 0; k < sp->n_profiles; k++) {
				const pb_profile *p = sp->profiles[k];

				if (p->sample_type) {
					CHECK_IDX(r, p->sample_type->type_strindex, m->nstr,
						  "string_table", "profile %zu sample type", k);
					CHECK_IDX(r, p->sample_type->unit_strindex, m->nstr,
						  "string_table", "profile %zu sample unit", k);
				}
				if (p->period_type) {
					CHECK_IDX(r, p->period_type->type_strindex, m->nstr,
						  "string_table", "profile %zu period type", k);
					CHECK_IDX(r, p->period_type->unit_strindex, m->nstr,
						  "string_table", "profile %zu period unit", k);
				}
				for (size_t s = 0; s < p->n_samples; s++) {
					const pb_sample *sa = p->samples[s];

					CHECK_IDX(r, sa->stack_index, m->nstack, "stack_table",
						  "profile %zu sample %zu stack", k, s);
					CHECK_IDX(r, sa->link_index, m->nlink, "link_table",
						  "profile %zu sample %zu link", k, s);
					if ((err =
						 check_attrs(r, m, sa->attribute_indices,
							     sa->n_attribute_indices, "sample", s)))
						return err;
				}
			}
		}
	}
	return 0;
}

static void otlp_msg_free(struct otlp_msg *m)
{
	free(m->str);
	free(m->loc_first);
	free(m->loc_n);
	free(m->frames.f);
	free(m->stack);
	free(m->attr);
	free(m->link_span);
	free(m->link_proc);
	free(m->tmp);
}

static int otlp_msg_init(struct otlp_msg *m, const pb_data *pd)
{
	const pb_dict *d = pd->dictionary;

	memset(m, 0, sizeof(*m));
	m->dict = d;
	if (d) {
		m->nstr = d->n_string_table;
		m->nmap = d->n_mapping_table;
		m->nloc = d->n_location_table;
		m->nfn = d->n_function_table;
		m->nlink = d->n_link_table;
		m->nattr = d->n_attribute_table;
		m->nstack = d->n_stack_table;
	}
	m->str = malloc((m->nstr + 1) * sizeof(*m->str));
	m->loc_first = malloc((m->nloc + 1) * sizeof(*m->loc_first));
	m->loc_n = calloc(m->nloc + 1, sizeof(*m->loc_n));
	m->stack = malloc((m->nstack + 1) * sizeof(*m->stack));
	m->attr = calloc(m->nattr + 1, sizeof(*m->attr));
	m->link_span = malloc((m->nlink + 1) * sizeof(*m->link_span));
	m->link_proc = calloc(m->nlink + 1, sizeof(*m->link_proc));
	if (!m->str || !m->loc_first || !m->loc_n || !m->stack || !m->attr || !m->link_span ||
	    !m->link_proc)
		return -ENOMEM;
	memset(m->str, 0xff, (m->nstr + 1) * sizeof(*m->str));
	memset(m->loc_first, 0xff, (m->nloc + 1) * sizeof(*m->loc_first));
	memset(m->stack, 0xff, (m->nstack + 1) * sizeof(*m->stack));
	for (size_t i = 0; i <= m->nlink; i++)
		m->link_span[i] = -2;
	m->last_thread = m->last_series = -2;
	return 0;
}

static enum view_frame_kind otlp_kind(struct otlp_msg *m, const pb_location *l, const char **type)
{
	for (size_t i = 0; i < l->n_attribute_indices; i++) {
		const pb_kvu *a;
		const char *v;

		if (!l->attribute_indices[i])
			continue;
		a = m->dict->attribute_table[l->attribute_indices[i]];
		if (strcmp(m_text(m, a->key_strindex), "profile.frame.type"))
			continue;
		v = any_string(m, a->value);
		if (!v || !*v)
			break;
		*type = v;
		if (!strcmp(v, "native"))
			return VIEW_FRAME_NATIVE;
		if (!strcmp(v, "kernel"))
			return VIEW_FRAME_KERNEL;
		if (!strcmp(v, "abort"))
			return VIEW_FRAME_ABORT;
		if (!strcmp(v, "go"))
			return VIEW_FRAME_GO;
		if (!strcmp(v, "cpython"))
			return VIEW_FRAME_CPYTHON;
		return VIEW_FRAME_OTHER;
	}
	if (!l->mapping_index && l->address >= KERNEL_ADDR_MIN) {
		*type = "kernel";
		return VIEW_FRAME_KERNEL;
	}
	*type = "native";
	return VIEW_FRAME_NATIVE;
}

/* Sets @at's kind and type from location @l's profile.frame.type. 0 or -ENOMEM. */
static int otlp_frame_kind(struct rd *r, struct otlp_msg *m, const pb_location *l,
			   struct loc_site *at)
{
	at->kind = otlp_kind(m, l, &at->type_text);
	at->type = TRY(r, view_doc__string(r->d, at->type_text, strlen(at->type_text)));
	return 0;
}

/* Frames of location @li, root first: the physical function, then what was inlined into it. */
static int otlp_location(struct rd *r, struct otlp_msg *m, int32_t li)
{
	const pb_location *l;
	const pb_mapping *mp = NULL;
	struct loc_site at = {0};
	int32_t name, f;

	if (m->loc_first[li] >= 0)
		return 0;
	m->loc_first[li] = (int32_t)m->frames.n;
	if (li == 0 && !m->nloc) {
		name = TRY(r, view_doc__string(r->d, "[unknown]", 9));
		f = TRY(r, view_doc__frame(r->d, name, 0, 0, 0, VIEW_FRAME_NATIVE, 0));
		m->loc_n[li] = 1;
		return fpool_push(&m->frames, f) ? oom(r) : 0;
	}
	l = m->dict->location_table[li];
	if (l->mapping_index)
		mp = m->dict->mapping_table[l->mapping_index];
	if (mp) {
		at.module = TRY(r, m_sidx(r, m, mp->filename_strindex));
		at.mapfile = m_text(m, mp->filename_strindex);
		at.start = mp->memory_start;
		at.offset = mp->file_offset;
	}
	at.address = l->address;
	if (otlp_frame_kind(r, m, l, &at))
		return -ENOMEM;
	for (size_t j = l->n_lines; j-- > 0;) {
		const pb_line *ln = l->lines[j];
		const pb_function *fn = ln->function_index && m->nfn
					    ? m->dict->function_table[ln->function_index]
					    : NULL;
		int32_t file = 0;

		name = 0;
		if (fn) {
			name = TRY(r, m_sidx(r, m, fn->name_strindex));
			if (!name)
				name = TRY(r, m_sidx(r, m, fn->system_name_strindex));
			file = TRY(r, m_sidx(r, m, fn->filename_strindex));
		}
		if (push_frame(r, &m->frames, &at, name, file, ln->line))
			return -ENOMEM;
		m->loc_n[li]++;
	}
	if (!l->n_lines) {
		if (push_frame(r, &m->frames, &at, 0, 0, 0))
			return -ENOMEM;
		m->loc_n[li] = 1;
	}
	return 0;
}

/* Document stack of stack_table entry @si (leaf first there, root first here). */
static int32_t otlp_stack(struct rd *r, struct otlp_msg *m, int32_t si)
{
	const pb_stack *st;
	size_t n = 0;
	int err;

	if (m->stack[si] >= 0)
		return m->stack[si];
	if (si == 0 && !m->nstack) {
		m->stack[si] = TRY(r, view_doc__stack(r->d, NULL, 0));
		return m->stack[si];
	}
	st = m->dict->stack_table[si];
	for (size_t k = 0; k < st->n_location_indices; k++) {
		err = otlp_location(r, m, st->location_indices[k]);
		if (err)
			return err;
		n += m->loc_n[st->location_indices[k]];
	}
	if (grow_tmp(&m->tmp, &m->tmp_cap, n))
		return oom(r);
	n = 0;
	for (size_t k = st->n_location_indices; k-- > 0;) {
		int32_t li = st->location_indices[k];

		memcpy(m->tmp + n, m->frames.f + m->loc_first[li], m->loc_n[li] * sizeof(int32_t));
		n += m->loc_n[li];
	}
	m->stack[si] = TRY(r, view_doc__stack(r->d, m->tmp, (uint32_t)n));
	return m->stack[si];
}

static const struct attr_info *otlp_attr(struct rd *r, struct otlp_msg *m, int32_t ai)
{
	struct attr_info *a = &m->attr[ai];
	const pb_kvu *kv;
	const char *key, *s;

	if (a->kind != AK_UNKNOWN)
		return a;
	a->kind = AK_IGNORE;
	if (!ai || !m->nattr)
		return a;
	kv = m->dict->attribute_table[ai];
	key = m_text(m, kv->key_strindex);
	s = any_string(m, kv->value);
	if (!strcmp(key, "thread.id")) {
		if (any_int(m, kv->value, &a->v))
			a->kind = AK_TID;
	} else if (!strcmp(key, "thread.name")) {
		if (s) {
			a->a = view_doc__string(r->d, s, strlen(s));
			a->kind = a->a < 0 ? AK_UNKNOWN : AK_TNAME;
		}
	} else if (s && *key) {
		/* Any other string attribute of a sample: the thread context (OTEP 4947). */
		a->a = view_doc__string(r->d, key, strlen(key));
		a->b = view_doc__string(r->d, s, strlen(s));
		a->kind = a->a < 0 || a->b < 0 ? AK_UNKNOWN : AK_CTX;
	}
	if (a->kind == AK_UNKNOWN)
		return NULL; /* out of memory */
	return a;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int32_t otlp_span(struct rd *r, struct otlp_msg *m, int32_t li, int32_t proc)
{
	const pb_link *l;

	if (!li || !m->nlink)
		return -1;
	if (m->link_span[li] != -2 && m->link_proc[li] == proc)
		return m->link_span[li];
	l = m->dict->link_table[li];
	if (l->trace_id.len != 16 || l->span_id.len != 8 ||
	    (all_zero(l->trace_id.data, 16) && all_zero(l->span_id.data, 8)))
		m->link_span[li] = -1;
	else
		m->link_span[li] =
		    TRY(r, view_doc__span(r->d, l->trace_id.data, l->span_id.data, proc));
	m->link_proc[li] = proc;
	return m->link_span[li];
}

/* The process of a resource: service.name, process.pid, process.executable.name. */
static int32_t otlp_process(struct rd *r, struct otlp_msg *m, const pb_resource *res)
{
	const char *service = NULL, *exe = NULL, *path = NULL;
	int64_t pid = 0;
	int32_t s, e;

	for (size_t i = 0; res && i < res->n_attributes; i++) {
		const pb_kv *kv = res->attributes[i];
		const char *key = kv->key && *kv->key ? kv->key : m_text(m, kv->key_strindex);
		const char *v = any_string(m, kv->value);

		if (!strcmp(key, "service.name"))
			service = v;
		else if (!strcmp(key, "process.executable.name"))
			exe = v;
		else if (!strcmp(key, "process.executable.path"))
			path = v;
		else if (!strcmp(key, "process.pid") && !any_int(m, kv->value, &pid))
			pid = 0;
	}
	if ((!exe || !*exe) && path && *path)
		exe = base_name(path);
	e = TRY(r, view_doc__string(r->d, exe ? exe : "", exe ? strlen(exe) : 0));
	if (service && *service) {
		s = TRY(r, view_doc__string(r->d, service, strlen(service)));
	} else {
		/* What the OpenTelemetry resource semantic conventions say a service without a
		 * name is called. */
		char buf[320];
		int n = snprintf(buf, sizeof(buf), "unknown_service%s%s", exe && *exe ? ":" : "",
				 exe ? exe : "");

		s = TRY(r, view_doc__string(r->d, buf,
					    n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1));
	}
	return TRY(r, view_doc__process(r->d, s, pid, e));
}

static int32_t thread_of(struct rd *r, struct otlp_msg *m, int32_t proc, bool has_tid, int64_t tid,
			 int32_t name)
{
	if (!has_tid && !name)
		return -1;
	if (!has_tid)
		tid = 0;
	if (m->last_thread >= 0 && m->lt_proc == proc && m->lt_tid == tid && m->lt_name == name)
		return m->last_thread;
	m->last_thread = TRY(r, view_doc__thread(r->d, proc, tid, name));
	m->lt_proc = proc;
	m->lt_tid = tid;
	m->lt_name = name;
	return m->last_thread;
}

static int32_t series_of(struct rd *r, struct otlp_msg *m, int32_t type, int32_t stack,
			 int32_t thread, int32_t span)
{
	int32_t key[4] = {type, stack, thread, span};

	if (m->last_series >= 0 && !memcmp(key, m->ls_key, sizeof(key)))
		return m->last_series;
	m->last_series = TRY(r, view_doc__series(r->d, type, stack, thread, span));
	memcpy(m->ls_key, key, sizeof(key));
	return m->last_series;
}

#define MAX_CTX_ATTRS 64

static int otlp_sample(struct rd *r, struct otlp_msg *m, const pb_sample *s, int32_t type,
		       bool count_unit, int32_t proc)
{
	const struct attr_info *ctx[MAX_CTX_ATTRS];
	uint32_t nctx = 0;
	bool has_tid = false;
	int64_t tid = 0, sum = 0;
	int32_t tname = 0, stack, thread, span, series;
	int err;

	if (!s->n_values && !s->n_timestamps_unix_nano)
		return 0; /* no value and no event: nothing to show */
	stack = otlp_stack(r, m, s->stack_index);
	if (stack < 0)
		return stack;
	for (size_t i = 0; i < s->n_attribute_indices; i++) {
		const struct attr_info *a = otlp_attr(r, m, s->attribute_indices[i]);

		if (!a)
			return oom(r);
		if (a->kind == AK_TID) {
			has_tid = true;
			tid = a->v;
		} else if (a->kind == AK_TNAME) {
			tname = a->a;
		} else if (a->kind == AK_CTX && nctx < MAX_CTX_ATTRS) {
			ctx[nctx++] = a;
		}
	}
	thread = thread_of(r, m, proc, has_tid, tid, tname);
	if (thread < -1)
		return thread;
	span = otlp_span(r, m, s->link_index, proc);
	if (span < -1)
		return span;
	for (uint32_t i = 0; span >= 0 && i < nctx; i++)
		if (view_doc__span_attr(r->d, span, ctx[i]->a, ctx[i]->b))
			return oom(r);
	series = series_of(r, m, type, stack, thread, span);
	if (series < 0)
		return series;
	for (size_t i = 0; i < s->n_values; i++)
		sum += s->values[i];
	if (!s->n_timestamps_unix_nano)
		return view_doc__add(r->d, series, sum, 0, count_unit ? (uint64_t)sum : 1) ? oom(r)
											   : 0;
	if (s->n_values && s->n_values != s->n_timestamps_unix_nano)
		/* Values that don't pair with the timestamps: all at the first one. */
		return view_doc__add(r->d, series, sum, s->timestamps_unix_nano[0],
				     s->n_timestamps_unix_nano)
			   ? oom(r)
			   : 0;
	for (size_t i = 0; i < s->n_timestamps_unix_nano; i++) {
		err = view_doc__add(r->d, series, s->n_values ? s->values[i] : 1,
				    s->timestamps_unix_nano[i], 1);
		if (err)
			return oom(r);
	}
	return 0;
}

/* Checks one ProfilesData (or ExportProfilesServiceRequest) whole, then merges it. */
static int otlp_add(struct rd *r, const pb_data *pd)
{
	struct otlp_msg m;
	int err;

	err = otlp_msg_init(&m, pd);
	if (err) {
		err = oom(r);
		goto cleanup;
	}
	err = otlp_check(r, pd, &m);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < pd->n_resource_profiles; i++) {
		const pb_rp *rp = pd->resource_profiles[i];
		int32_t proc = otlp_process(r, &m, rp->resource);

		if (proc < 0) {
			err = proc;
			goto cleanup;
		}
		for (size_t j = 0; j < rp->n_scope_profiles; j++) {
			const pb_sp *sp = rp->scope_profiles[j];

			for (size_t k = 0; k < sp->n_profiles; k++) {
				const pb_profile *p = sp->profiles[k];
				const pb_vt *st = p->sample_type, *pt = p->period_type;
				const char *unit = st ? m_text(&m, st->unit_strindex) : "";
				int32_t type = view_doc__profile_type(
				    r->d, st ? m_text(&m, st->type_strindex) : "", unit,
				    pt ? m_text(&m, pt->type_strindex) : "",
				    pt ? m_text(&m, pt->unit_strindex) : "", p->period);

				if (type < 0) {
					err = oom(r);
					goto cleanup;
				}
				for (size_t s = 0; s < p->n_samples; s++) {
					err = otlp_sample(r, &m, p->samples[s], type,
							  !strcmp(unit, "count"), proc);
					if (err)
						goto cleanup;
				}
			}
		}
	}
cleanup:
	otlp_msg_free(&m);
	return err;
}

/* One binary ProfilesData / ExportProfilesServiceRequest. */
static int otlp_proto(struct rd *r, const uint8_t *p, size_t n)
{
	ProtobufCAllocator alloc = {
	    .alloc = pb_alloc, .free = pb_free, .allocator_data = &r->arena};
	char why[200];
	uint32_t maxfield;
	pb_data *pd;
	int err;

	err = scan_fields(p, n, &maxfield, why, sizeof(why));
	if (err == -E2BIG)
		return fail(r, "truncated OTLP protobuf: %s", why);
	if (err)
		return fail(r, "corrupt OTLP protobuf: %s", why);
	if (maxfield > 2)
		return fail(r, "not an OTLP ProfilesData (it has a top-level field %u)", maxfield);
	pd = PB(profiles_data__unpack)(&alloc, n, p);
	if (!pd) {
		arena_free(&r->arena);
		return fail(r, "corrupt OTLP protobuf: protobuf-c cannot decode it");
	}
	err = otlp_add(r, pd);
	arena_free(&r->arena);
	return err;
}

/* The Collector file exporter's `format: proto`: [4-byte big-endian length][ProfilesData]... */
static int otlp_stream(struct rd *r, const uint8_t *p, size_t n)
{
	size_t off = 0, nonempty = 0;
	unsigned msg = 1;
	int err;

	r->format = FMT_STREAM;
	for (; off < n; msg++) {
		uint32_t len;

		snprintf(r->where, sizeof(r->where), "message %u (byte %zu): ", msg, off);
		if (n - off < 4)
			return fail(r, "its 4-byte length is cut off: the file is truncated");
		len = (uint32_t)p[off] << 24 | (uint32_t)p[off + 1] << 16 |
		      (uint32_t)p[off + 2] << 8 | p[off + 3];
		if (len > n - off - 4)
			return fail(r, "%u bytes announced, %zu left: the file is truncated", len,
				    n - off - 4);
		err = otlp_proto(r, p + off + 4, len);
		if (err)
			return err;
		nonempty += len > 0;
		off += 4 + (size_t)len;
	}
	r->where[0] = '\0';
	/* Zero-filled data reads as a stream of empty messages: nothing the file exporter writes.
	 */
	if (!nonempty)
		return fail(r,
			    "not a profile: %u empty messages and nothing else (a zero-filled "
			    "file?)",
			    msg - 1);
	return 0;
}

/* --- OTLP/JSON ---------------------------------------------------------------------------- */

/* OTLP/JSON uses lowerCamelCase keys; protobuf JSON parsers accept the proto names too. */
static json_object *jget(json_object *o, const char *camel, const char *snake)
{
	json_object *v;

	if (json_object_object_get_ex(o, camel, &v))
		return v;
	if (snake && json_object_object_get_ex(o, snake, &v))
		return v;
	return NULL;
}

struct jc {
	struct rd *r;
	const char *ctx; /* the object being read, for messages */
	size_t idx;
};

static int jfail(struct jc *c, const char *key, const char *what)
{
	return fail(c->r, "%s %zu: \"%s\" %s", c->ctx, c->idx, key, what);
}

/* A 64-bit integer: a JSON number, or a decimal string (the OTLP/JSON form of int64). */
static int jint(struct jc *c, json_object *o, const char *camel, const char *snake, int64_t *out)
{
	json_object *v = jget(o, camel, snake);
	const char *s;
	char *end;

	*out = 0;
	if (!v || json_object_is_type(v, json_type_null))
		return 0;
	switch (json_object_get_type(v)) {
	case json_type_int:
		*out = json_object_get_int64(v);
		return 0;
	case json_type_double: {
		double dv = json_object_get_double(v);

		if (dv != (double)(int64_t)dv)
			return jfail(c, camel, "is not an integer");
		*out = (int64_t)dv;
		return 0;
	}
	case json_type_string:
		s = json_object_get_string(v);
		errno = 0;
		*out = strtoll(s, &end, 10);
		if (errno || end == s || *end)
			return jfail(c, camel, "is not an integer");
		return 0;
	default:
		return jfail(c, camel, "is not an integer");
	}
}

static int juint(struct jc *c, json_object *o, const char *camel, const char *snake, uint64_t *out)
{
	json_object *v = jget(o, camel, snake);
	const char *s;
	char *end;

	*out = 0;
	if (!v || json_object_is_type(v, json_type_null))
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		if (json_object_get_int64(v) < 0 && json_object_get_uint64(v) == 0)
			return jfail(c, camel, "is negative");
		*out = json_object_get_uint64(v);
		return 0;
	}
	if (json_object_is_type(v, json_type_string)) {
		s = json_object_get_string(v);
		errno = 0;
		*out = strtoull(s, &end, 10);
		if (errno || end == s || *end || *s == '-')
			return jfail(c, camel, "is not an unsigned integer");
		return 0;
	}
	return jfail(c, camel, "is not an unsigned integer");
}

static int ji32(struct jc *c, json_object *o, const char *camel, const char *snake, int32_t *out)
{
	int64_t v;
	int err = jint(c, o, camel, snake, &v);

	if (err)
		return err;
	if (v < INT32_MIN || v > INT32_MAX)
		return jfail(c, camel, "is out of the int32 range");
	*out = (int32_t)v;
	return 0;
}

/* An array member (absent: empty). */
static int jarr(struct jc *c, json_object *o, const char *camel, const char *snake,
		json_object **arr, size_t *n)
{
	json_object *v = jget(o, camel, snake);

	*arr = NULL;
	*n = 0;
	if (!v || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return jfail(c, camel, "is not an array");
	*arr = v;
	*n = json_object_array_length(v);
	return 0;
}

static int jobj(struct jc *c, json_object *v, const char *what)
{
	if (!json_object_is_type(v, json_type_object))
		return jfail(c, what, "is not an object");
	return 0;
}

static int b64val(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

/*
 * A trace, span or profile id (@want bytes): hex as OTLP/JSON writes ids, or base64 as
 * protobuf JSON writes other bytes. Empty: no id.
 */
static int jid(struct jc *c, json_object *o, const char *camel, const char *snake, size_t want,
	       ProtobufCBinaryData *out)
{
	json_object *v = jget(o, camel, snake);
	const char *s;
	size_t len, n = 0;
	uint8_t *b;

	out->len = 0;
	out->data = NULL;
	if (!v || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return jfail(c, camel, "is not a string");
	s = json_object_get_string(v);
	len = strlen(s);
	if (!len)
		return 0;
	b = arena_alloc(&c->r->arena, want);
	if (!b)
		return oom(c->r);
	if (len == 2 * want) {
		for (size_t i = 0; i < want; i++) {
			int hi = util__hexval(s[2 * i]), lo = util__hexval(s[2 * i + 1]);

			if (hi < 0 || lo < 0)
				goto base64;
			b[i] = (uint8_t)(hi << 4 | lo);
		}
		out->data = b;
		out->len = want;
		return 0;
	}
base64:
	for (size_t i = 0, acc = 0, bits = 0; i < len && s[i] != '='; i++) {
		int x = b64val(s[i]);

		if (x < 0)
			return jfail(c, camel, "is neither hex nor base64");
		acc = acc << 6 | (size_t)x;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == want)
				return jfail(c, camel, "is longer than an id");
			b[n++] = (uint8_t)(acc >> bits);
		}
	}
	if (n != want)
		return jfail(c, camel, "has the wrong length for an id");
	out->data = b;
	out->len = want;
	return 0;
}

/*
 * A repeated field's array in *@arr (*@n elements) and room in the arena for as many elements of
 * @size bytes in *@out (NULL when there are none). Returns 0 or a negative errno (noted in @c).
 */
static int jarr_alloc(struct jc *c, json_object *o, const char *camel, const char *snake,
		      json_object **arr, size_t *n, size_t size, void **out)
{
	int err = jarr(c, o, camel, snake, arr, n);

	*out = NULL;
	if (err || !*n)
		return err;
	*out = arena_alloc(&c->r->arena, *n * size);
	return *out ? 0 : oom(c->r);
}

/* Repeated integer fields. */
static int ji32s(struct jc *c, json_object *o, const char *camel, const char *snake, int32_t **out,
		 size_t *n)
{
	json_object *arr;
	void *p;
	int err = jarr_alloc(c, o, camel, snake, &arr, n, sizeof(**out), &p);

	*out = p;
	if (err || !*n)
		return err;
	for (size_t i = 0; i < *n; i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		int64_t v;

		if (!json_object_is_type(e, json_type_int) &&
		    !json_object_is_type(e, json_type_string))
			return jfail(c, camel, "holds a non-integer");
		v = json_object_is_type(e, json_type_int)
			? json_object_get_int64(e)
			: strtoll(json_object_get_string(e), NULL, 10);
		if (v < INT32_MIN || v > INT32_MAX)
			return jfail(c, camel, "holds an integer out of the int32 range");
		(*out)[i] = (int32_t)v;
	}
	return 0;
}

static int ji64s(struct jc *c, json_object *o, const char *camel, const char *snake, int64_t **out,
		 size_t *n, bool is_unsigned)
{
	json_object *arr;
	void *p;
	int err = jarr_alloc(c, o, camel, snake, &arr, n, sizeof(**out), &p);

	*out = p;
	if (err || !*n)
		return err;
	for (size_t i = 0; i < *n; i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		const char *s;
		char *end;

		if (json_object_is_type(e, json_type_int)) {
			(*out)[i] = is_unsigned ? (int64_t)json_object_get_uint64(e)
						: json_object_get_int64(e);
			continue;
		}
		if (!json_object_is_type(e, json_type_string))
			return jfail(c, camel, "holds a non-integer");
		s = json_object_get_string(e);
		errno = 0;
		(*out)[i] = is_unsigned ? (int64_t)strtoull(s, &end, 10) : strtoll(s, &end, 10);
		if (errno || end == s || *end)
			return jfail(c, camel, "holds a non-integer");
	}
	return 0;
}

static void *jnew(struct jc *c, size_t size)
{
	void *p = arena_zalloc(&c->r->arena, size);

	if (!p)
		oom(c->r);
	return p;
}

/* An array of messages: allocates the pointers and the elements, calls @one on each. */
#define JMSGS(c, o, camel, snake, type, init, out, n, one)                                         \
	({                                                                                         \
		json_object *_arr;                                                                 \
		int _err = jarr((c), (o), (camel), (snake), &_arr, (n));                           \
		const char *_ctx = (c)->ctx;                                                       \
		size_t _idx = (c)->idx;                                                            \
		if (!_err && *(n)) {                                                               \
			type *_el = jnew((c), *(n) * sizeof(type));                                \
			*(out) = jnew((c), *(n) * sizeof(type *));                                 \
			if (!_el || !*(out))                                                       \
				_err = -ENOMEM;                                                    \
			for (size_t _i = 0; !_err && _i < *(n); _i++) {                            \
				json_object *_e = json_object_array_get_idx(_arr, _i);             \
				init(&_el[_i]);                                                    \
				(*(out))[_i] = &_el[_i];                                           \
				(c)->ctx = (camel);                                                \
				(c)->idx = _i;                                                     \
				_err = jobj((c), _e, "element");                                   \
				if (!_err)                                                         \
					_err = one((c), _e, &_el[_i]);                             \
			}                                                                          \
		}                                                                                  \
		(c)->ctx = _ctx;                                                                   \
		(c)->idx = _idx;                                                                   \
		_err;                                                                              \
	})

static int j_any(struct jc *c, json_object *o, pb_any **out)
{
	json_object *v;
	pb_any *a;

	*out = NULL;
	if (!o || !json_object_is_type(o, json_type_object))
		return 0;
	a = jnew(c, sizeof(*a));
	if (!a)
		return -ENOMEM;
	opentelemetry__proto__common__v1__any_value__init(a);
	*out = a;
	if ((v = jget(o, "stringValue", "string_value"))) {
		a->value_case = ANY(STRING_VALUE);
		a->string_value = (char *)json_object_get_string(v);
	} else if ((v = jget(o, "intValue", "int_value"))) {
		a->value_case = ANY(INT_VALUE);
		return jint(c, o, "intValue", "int_value", &a->int_value);
	} else if ((v = jget(o, "stringValueStrindex", "string_value_strindex"))) {
		a->value_case = ANY(STRING_VALUE_STRINDEX);
		return ji32(c, o, "stringValueStrindex", "string_value_strindex",
			    &a->string_value_strindex);
	} else if ((v = jget(o, "boolValue", "bool_value"))) {
		a->value_case = ANY(BOOL_VALUE);
		a->bool_value = json_object_get_boolean(v);
	} else if ((v = jget(o, "doubleValue", "double_value"))) {
		a->value_case = ANY(DOUBLE_VALUE);
		a->double_value = json_object_get_double(v);
	}
	return 0;
}

static int j_mapping(struct jc *c, json_object *o, pb_mapping *m)
{
	int err = juint(c, o, "memoryStart", "memory_start", &m->memory_start);

	if (!err)
		err = juint(c, o, "memoryLimit", "memory_limit", &m->memory_limit);
	if (!err)
		err = juint(c, o, "fileOffset", "file_offset", &m->file_offset);
	if (!err)
		err = ji32(c, o, "filenameStrindex", "filename_strindex", &m->filename_strindex);
	if (!err)
		err = ji32s(c, o, "attributeIndices", "attribute_indices", &m->attribute_indices,
			    &m->n_attribute_indices);
	return err;
}

static int j_line(struct jc *c, json_object *o, pb_line *l)
{
	int err = ji32(c, o, "functionIndex", "function_index", &l->function_index);

	if (!err)
		err = jint(c, o, "line", NULL, &l->line);
	if (!err)
		err = jint(c, o, "column", NULL, &l->column);
	return err;
}

static int j_location(struct jc *c, json_object *o, pb_location *l)
{
	int err = ji32(c, o, "mappingIndex", "mapping_index", &l->mapping_index);

	if (!err)
		err = juint(c, o, "address", NULL, &l->address);
	if (!err)
		err = JMSGS(c, o, "lines", NULL, pb_line, PB(line__init), &l->lines, &l->n_lines,
			    j_line);
	if (!err)
		err = ji32s(c, o, "attributeIndices", "attribute_indices", &l->attribute_indices,
			    &l->n_attribute_indices);
	return err;
}

static int j_function(struct jc *c, json_object *o, pb_function *f)
{
	int err = ji32(c, o, "nameStrindex", "name_strindex", &f->name_strindex);

	if (!err)
		err = ji32(c, o, "systemNameStrindex", "system_name_strindex",
			   &f->system_name_strindex);
	if (!err)
		err = ji32(c, o, "filenameStrindex", "filename_strindex", &f->filename_strindex);
	if (!err)
		err = jint(c, o, "startLine", "start_line", &f->start_line);
	return err;
}

static int j_link(struct jc *c, json_object *o, pb_link *l)
{
	int err = jid(c, o, "traceId", "trace_id", 16, &l->trace_id);

	if (!err)
		err = jid(c, o, "spanId", "span_id", 8, &l->span_id);
	return err;
}

static int j_kvu(struct jc *c, json_object *o, pb_kvu *a)
{
	int err = ji32(c, o, "keyStrindex", "key_strindex", &a->key_strindex);

	if (!err)
		err = ji32(c, o, "unitStrindex", "unit_strindex", &a->unit_strindex);
	if (!err)
		err = j_any(c, jget(o, "value", NULL), &a->value);
	return err;
}

static int j_stack(struct jc *c, json_object *o, pb_stack *s)
{
	return ji32s(c, o, "locationIndices", "location_indices", &s->location_indices,
		     &s->n_location_indices);
}

static int j_kv(struct jc *c, json_object *o, pb_kv *kv)
{
	json_object *k = jget(o, "key", NULL);
	int err;

	kv->key = k ? (char *)json_object_get_string(k) : (char *)"";
	err = ji32(c, o, "keyStrindex", "key_strindex", &kv->key_strindex);
	if (!err)
		err = j_any(c, jget(o, "value", NULL), &kv->value);
	return err;
}

static int j_vt(struct jc *c, json_object *o, pb_vt **out)
{
	int err;

	*out = NULL;
	if (!o || !json_object_is_type(o, json_type_object))
		return 0;
	*out = jnew(c, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	PB(value_type__init)(*out);
	err = ji32(c, o, "typeStrindex", "type_strindex", &(*out)->type_strindex);
	if (!err)
		err = ji32(c, o, "unitStrindex", "unit_strindex", &(*out)->unit_strindex);
	return err;
}

static int j_sample(struct jc *c, json_object *o, pb_sample *s)
{
	int err = ji32(c, o, "stackIndex", "stack_index", &s->stack_index);

	if (!err)
		err = ji32(c, o, "linkIndex", "link_index", &s->link_index);
	if (!err)
		err = ji32s(c, o, "attributeIndices", "attribute_indices", &s->attribute_indices,
			    &s->n_attribute_indices);
	if (!err)
		err = ji64s(c, o, "values", NULL, &s->values, &s->n_values, false);
	if (!err)
		err = ji64s(c, o, "timestampsUnixNano", "timestamps_unix_nano",
			    (int64_t **)&s->timestamps_unix_nano, &s->n_timestamps_unix_nano, true);
	return err;
}

static int j_profile(struct jc *c, json_object *o, pb_profile *p)
{
	int err = j_vt(c, jget(o, "sampleType", "sample_type"), &p->sample_type);

	if (!err)
		err = j_vt(c, jget(o, "periodType", "period_type"), &p->period_type);
	if (!err)
		err = jint(c, o, "period", NULL, &p->period);
	if (!err)
		err = juint(c, o, "timeUnixNano", "time_unix_nano", &p->time_unix_nano);
	if (!err)
		err = juint(c, o, "durationNano", "duration_nano", &p->duration_nano);
	if (!err)
		err = JMSGS(c, o, "samples", NULL, pb_sample, PB(sample__init), &p->samples,
			    &p->n_samples, j_sample);
	return err;
}

static int j_scope(struct jc *c, json_object *o, pb_sp *sp)
{
	return JMSGS(c, o, "profiles", NULL, pb_profile, PB(profile__init), &sp->profiles,
		     &sp->n_profiles, j_profile);
}

static int j_rp(struct jc *c, json_object *o, pb_rp *rp)
{
	json_object *res = jget(o, "resource", NULL);
	int err = 0;

	if (res && json_object_is_type(res, json_type_object)) {
		rp->resource = jnew(c, sizeof(*rp->resource));
		if (!rp->resource)
			return -ENOMEM;
		opentelemetry__proto__resource__v1__resource__init(rp->resource);
		err = JMSGS(c, res, "attributes", NULL, pb_kv,
			    opentelemetry__proto__common__v1__key_value__init,
			    &rp->resource->attributes, &rp->resource->n_attributes, j_kv);
	}
	if (!err)
		err =
		    JMSGS(c, o, "scopeProfiles", "scope_profiles", pb_sp, PB(scope_profiles__init),
			  &rp->scope_profiles, &rp->n_scope_profiles, j_scope);
	return err;
}

static int j_dict(struct jc *c, json_object *o, pb_dict *d)
{
	json_object *arr;
	int err;

	err = JMSGS(c, o, "mappingTable", "mapping_table", pb_mapping, PB(mapping__init),
		    &d->mapping_table, &d->n_mapping_table, j_mapping);
	if (!err)
		err =
		    JMSGS(c, o, "locationTable", "location_table", pb_location, PB(location__init),
			  &d->location_table, &d->n_location_table, j_location);
	if (!err)
		err =
		    JMSGS(c, o, "functionTable", "function_table", pb_function, PB(function__init),
			  &d->function_table, &d->n_function_table, j_function);
	if (!err)
		err = JMSGS(c, o, "linkTable", "link_table", pb_link, PB(link__init),
			    &d->link_table, &d->n_link_table, j_link);
	if (!err)
		err = JMSGS(c, o, "attributeTable", "attribute_table", pb_kvu,
			    PB(key_value_and_unit__init), &d->attribute_table,
			    &d->n_attribute_table, j_kvu);
	if (!err)
		err = JMSGS(c, o, "stackTable", "stack_table", pb_stack, PB(stack__init),
			    &d->stack_table, &d->n_stack_table, j_stack);
	if (!err)
		err = jarr(c, o, "stringTable", "string_table", &arr, &d->n_string_table);
	if (!err && d->n_string_table) {
		d->string_table = jnew(c, d->n_string_table * sizeof(char *));
		if (!d->string_table)
			return -ENOMEM;
		for (size_t i = 0; i < d->n_string_table; i++) {
			json_object *s = json_object_array_get_idx(arr, i);

			if (!json_object_is_type(s, json_type_string))
				return fail(c->r, "stringTable %zu is not a string", i);
			d->string_table[i] = (char *)json_object_get_string(s);
		}
	}
	return err;
}

static int j_data(struct rd *r, json_object *root, pb_data *pd)
{
	struct jc c = {.r = r, .ctx = "ProfilesData", .idx = 0};
	json_object *dict;
	int err;

	PB(profiles_data__init)(pd);
	if (!json_object_is_type(root, json_type_object))
		return fail(r, "not a JSON object (OTLP/JSON ProfilesData)");
	if (!jget(root, "resourceProfiles", "resource_profiles") && !jget(root, "dictionary", NULL))
		return fail(r, "a JSON object with neither resourceProfiles nor dictionary: not "
			       "OTLP/JSON profiles");
	err = JMSGS(&c, root, "resourceProfiles", "resource_profiles", pb_rp,
		    PB(resource_profiles__init), &pd->resource_profiles, &pd->n_resource_profiles,
		    j_rp);
	dict = jget(root, "dictionary", NULL);
	if (!err && dict && json_object_is_type(dict, json_type_object)) {
		pd->dictionary = jnew(&c, sizeof(*pd->dictionary));
		if (!pd->dictionary)
			return -ENOMEM;
		PB(profiles_dictionary__init)(pd->dictionary);
		c.ctx = "dictionary";
		err = j_dict(&c, dict, pd->dictionary);
	}
	return err;
}

static unsigned line_of(const char *p, size_t off)
{
	unsigned line = 1;

	for (size_t i = 0; i < off; i++)
		line += p[i] == '\n';
	return line;
}

/* OTLP/JSON documents one after the other: one per line as the file exporter writes them, or
 * a single (pretty-printed) document. */
static int otlp_json(struct rd *r, const char *p, size_t n)
{
	json_tokener *tok = json_tokener_new_ex(64);
	size_t off = 0;
	int err = 0;

	r->format = FMT_JSON;
	if (!tok)
		return oom(r);
	while (off < n && !err) {
		json_object *root;
		enum json_tokener_error je;
		size_t start, len;
		pb_data pd;

		while (off < n && isspace((unsigned char)p[off]))
			off++;
		if (off == n)
			break;
		start = off;
		len = n - off > INT32_MAX ? INT32_MAX : n - off;
		snprintf(r->where, sizeof(r->where), "line %u: ", line_of(p, start));
		json_tokener_reset(tok);
		root = json_tokener_parse_ex(tok, p + off, (int)len);
		je = json_tokener_get_error(tok);
		if (!root) {
			if (je == json_tokener_continue || je == json_tokener_success)
				err = fail(r, "the JSON ends early: the file is truncated");
			else
				err = fail(r, "invalid JSON at line %u: %s",
					   line_of(p, off + json_tokener_get_parse_end(tok)),
					   json_tokener_error_desc(je));
			break;
		}
		off += json_tokener_get_parse_end(tok);
		err = j_data(r, root, &pd);
		if (!err)
			err = otlp_add(r, &pd);
		json_object_put(root);
		arena_free(&r->arena);
	}
	json_tokener_free(tok);
	if (!err)
		r->where[0] = '\0';
	return err;
}

/* --- pprof -------------------------------------------------------------------------------- */

/* pprof ids (uint64, arbitrary) -> array index. */
struct idmap {
	uint64_t *keys; /* 0: free (0 is not a valid id) */
	uint32_t *vals;
	size_t mask;
};

static int idmap_init(struct idmap *m, size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n + 2)
		cap *= 2;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	m->mask = cap - 1;
	return m->keys && m->vals ? 0 : -ENOMEM;
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
}

static size_t idmap_slot(const struct idmap *m, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull >> 17) & m->mask;

	while (m->keys[i] && m->keys[i] != id)
		i = (i + 1) & m->mask;
	return i;
}

/* false when @id is 0 or already there. */
static bool idmap_put(struct idmap *m, uint64_t id, uint32_t v)
{
	size_t i;

	if (!id)
		return false;
	i = idmap_slot(m, id);
	if (m->keys[i])
		return false;
	m->keys[i] = id;
	m->vals[i] = v;
	return true;
}

static bool idmap_get(const struct idmap *m, uint64_t id, uint32_t *v)
{
	size_t i;

	if (!id)
		return false;
	i = idmap_slot(m, id);
	if (!m->keys[i])
		return false;
	*v = m->vals[i];
	return true;
}

struct pp {
	const pp_profile *p;
	struct idmap fn, map, loc;
	int32_t *str;	    /* doc string of each string_table entry; -1: not yet */
	int32_t *loc_first; /* -1: not yet */
	uint32_t *loc_n;
	struct fpool frames;
	int32_t *tmp;
	size_t tmp_cap;
	int32_t *types; /* doc profile type of each value; -1: not shown */
	int64_t k_pid, k_tid, k_comm, k_process, k_trace, k_span;
};

static const char *pp_text(const struct pp *x, int64_t i)
{
	return i > 0 && (size_t)i < x->p->n_string_table ? x->p->string_table[i] : "";
}

static int32_t pp_sidx(struct rd *r, struct pp *x, int64_t i)
{
	if (i <= 0 || (size_t)i >= x->p->n_string_table)
		return 0;
	if (x->str[i] < 0) {
		const char *s = x->p->string_table[i];

		x->str[i] = view_doc__string(r->d, s, strlen(s));
	}
	return x->str[i];
}

/*
 * pprof has no frame type: a location without mapping whose one function is named after the
 * reason its address holds is spanprof's marker of a cut stack (stackend.h).
 */
static bool pp_is_marker(const struct pp *x, const Perftools__Profiles__Location *l)
{
	const char *want = stackend__name(l->address > UINT32_MAX ? 0 : (uint32_t)l->address);
	uint32_t fi;

	if (!want || l->n_line != 1 || !idmap_get(&x->fn, l->line[0]->function_id, &fi))
		return false;
	return !strcmp(pp_text(x, x->p->function[fi]->name), want);
}

/*
 * pprof has no frame kinds: a location without a mapping whose one function is in a Python
 * source file ("*.py", "<string>", "<frozen ...>") is a CPython frame (docs/python.md); one named
 * "[python ...]" is the marker of a Python stack spanprof could not place or name whole.
 */
static int pp_python_kind(const struct pp *x, const Perftools__Profiles__Location *l)
{
	const char *file, *name;
	size_t n;
	uint32_t fi;

	if (l->n_line != 1 || !idmap_get(&x->fn, l->line[0]->function_id, &fi))
		return -1;
	name = pp_text(x, x->p->function[fi]->name);
	file = pp_text(x, x->p->function[fi]->filename);
	if (name && !strncmp(name, "[python", 7))
		return !strcmp(name, "[python frame not named]") ? VIEW_FRAME_CPYTHON
								 : VIEW_FRAME_ABORT;
	n = file ? strlen(file) : 0;
	if (n && (file[0] == '<' || (n > 3 && !strcmp(file + n - 3, ".py"))))
		return VIEW_FRAME_CPYTHON;
	return -1;
}

static int64_t pp_find(const pp_profile *p, const char *s)
{
	for (size_t i = 1; i < p->n_string_table; i++)
		if (!strcmp(p->string_table[i], s))
			return (int64_t)i;
	return -1;
}

#define PP_STR(r, x, i, fmt, ...)                                                                  \
	do {                                                                                       \
		if ((i) < 0 || (uint64_t)(i) >= (x)->p->n_string_table)                            \
			return fail((r), fmt ": string %lld is outside the string table (%zu)",    \
				    ##__VA_ARGS__, (long long)(i), (x)->p->n_string_table);        \
	} while (0)

static int pp_check(struct rd *r, struct pp *x)
{
	const pp_profile *p = x->p;
	uint32_t v;

	if (!p->n_string_table || p->string_table[0][0])
		return fail(r, "not a pprof profile: its string table does not start with \"\"");
	for (size_t i = 0; i < p->n_sample_type; i++) {
		PP_STR(r, x, p->sample_type[i]->type, "sample type %zu", i);
		PP_STR(r, x, p->sample_type[i]->unit, "sample type %zu unit", i);
	}
	if (p->period_type) {
		PP_STR(r, x, p->period_type->type, "period type");
		PP_STR(r, x, p->period_type->unit, "period unit");
	}
	for (size_t i = 0; i < p->n_mapping; i++) {
		PP_STR(r, x, p->mapping[i]->filename, "mapping %zu file", i);
		if (!idmap_put(&x->map, p->mapping[i]->id, (uint32_t)i))
			return fail(r, "mapping %zu: id %llu is 0 or repeated", i,
				    (unsigned long long)p->mapping[i]->id);
	}
	for (size_t i = 0; i < p->n_function; i++) {
		PP_STR(r, x, p->function[i]->name, "function %zu name", i);
		PP_STR(r, x, p->function[i]->system_name, "function %zu system name", i);
		PP_STR(r, x, p->function[i]->filename, "function %zu file", i);
		if (!idmap_put(&x->fn, p->function[i]->id, (uint32_t)i))
			return fail(r, "function %zu: id %llu is 0 or repeated", i,
				    (unsigned long long)p->function[i]->id);
	}
	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		if (l->mapping_id && !idmap_get(&x->map, l->mapping_id, &v))
			return fail(r, "location %zu: no mapping has id %llu", i,
				    (unsigned long long)l->mapping_id);
		for (size_t j = 0; j < l->n_line; j++)
			if (l->line[j]->function_id &&
			    !idmap_get(&x->fn, l->line[j]->function_id, &v))
				return fail(r, "location %zu: no function has id %llu", i,
					    (unsigned long long)l->line[j]->function_id);
		if (!idmap_put(&x->loc, l->id, (uint32_t)i))
			return fail(r, "location %zu: id %llu is 0 or repeated", i,
				    (unsigned long long)l->id);
	}
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (s->n_value != p->n_sample_type)
			return fail(r, "sample %zu has %zu values for %zu sample types", i,
				    s->n_value, p->n_sample_type);
		for (size_t j = 0; j < s->n_location_id; j++)
			if (!idmap_get(&x->loc, s->location_id[j], &v))
				return fail(r, "sample %zu: no location has id %llu", i,
					    (unsigned long long)s->location_id[j]);
		for (size_t j = 0; j < s->n_label; j++) {
			PP_STR(r, x, s->label[j]->key, "sample %zu label key", i);
			PP_STR(r, x, s->label[j]->str, "sample %zu label value", i);
		}
	}
	return 0;
}

static int pp_location(struct rd *r, struct pp *x, uint32_t li)
{
	const Perftools__Profiles__Location *l = x->p->location[li];
	const Perftools__Profiles__Mapping *mp = NULL;
	struct loc_site at = {0};
	int32_t name;
	uint32_t mi;

	if (x->loc_first[li] >= 0)
		return 0;
	x->loc_first[li] = (int32_t)x->frames.n;
	if (l->mapping_id && idmap_get(&x->map, l->mapping_id, &mi))
		mp = x->p->mapping[mi];
	if (mp) {
		at.module = TRY(r, pp_sidx(r, x, mp->filename));
		at.mapfile = pp_text(x, mp->filename);
		at.start = mp->memory_start;
		at.offset = mp->file_offset;
	}
	at.address = l->address;
	at.kind = !mp && l->address >= KERNEL_ADDR_MIN ? VIEW_FRAME_KERNEL : VIEW_FRAME_NATIVE;
	if (!mp && pp_is_marker(x, l))
		at.kind = VIEW_FRAME_ABORT;
	else if (!mp && pp_python_kind(x, l) >= 0)
		at.kind = pp_python_kind(x, l);
	/* pprof has no frame types: these four are what its locations tell apart. */
	at.type_text = at.kind == VIEW_FRAME_KERNEL    ? "kernel"
		       : at.kind == VIEW_FRAME_ABORT   ? "abort"
		       : at.kind == VIEW_FRAME_CPYTHON ? "cpython"
						       : "native";
	at.type = TRY(r, view_doc__string(r->d, at.type_text, strlen(at.type_text)));
	for (size_t j = l->n_line; j-- > 0;) {
		const Perftools__Profiles__Line *ln = l->line[j];
		const Perftools__Profiles__Function *fn = NULL;
		int32_t file = 0;
		uint32_t fi;

		if (idmap_get(&x->fn, ln->function_id, &fi))
			fn = x->p->function[fi];
		name = 0;
		if (fn) {
			name = TRY(r, pp_sidx(r, x, fn->name));
			if (!name)
				name = TRY(r, pp_sidx(r, x, fn->system_name));
			file = TRY(r, pp_sidx(r, x, fn->filename));
		}
		if (push_frame(r, &x->frames, &at, name, file, ln->line))
			return -ENOMEM;
		x->loc_n[li]++;
	}
	if (!l->n_line) {
		if (push_frame(r, &x->frames, &at, 0, 0, 0))
			return -ENOMEM;
		x->loc_n[li] = 1;
	}
	return 0;
}

static int32_t pp_stack(struct rd *r, struct pp *x, const Perftools__Profiles__Sample *s)
{
	size_t n = 0;
	uint32_t li;
	int err;

	for (size_t k = 0; k < s->n_location_id; k++) {
		idmap_get(&x->loc, s->location_id[k], &li);
		err = pp_location(r, x, li);
		if (err)
			return err;
		n += x->loc_n[li];
	}
	if (grow_tmp(&x->tmp, &x->tmp_cap, n))
		return oom(r);
	n = 0;
	for (size_t k = s->n_location_id; k-- > 0;) {
		idmap_get(&x->loc, s->location_id[k], &li);
		memcpy(x->tmp + n, x->frames.f + x->loc_first[li], x->loc_n[li] * sizeof(int32_t));
		n += x->loc_n[li];
	}
	return TRY(r, view_doc__stack(r->d, x->tmp, (uint32_t)n));
}

static bool parse_hex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = util__hexval(s[2 * i]), lo = util__hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* Profile types of the values: ("samples", "count") with ("cpu", "nanoseconds") is one "cpu"
 * type counted in samples, as spanprof and the Go runtime write CPU profiles. */
static int pp_types(struct rd *r, struct pp *x)
{
	const pp_profile *p = x->p;
	const char *pt = p->period_type ? pp_text(x, p->period_type->type) : "";
	const char *pu = p->period_type ? pp_text(x, p->period_type->unit) : "";
	bool has_count = false;

	for (size_t i = 0; i < p->n_sample_type; i++)
		has_count |= !strcmp(pp_text(x, p->sample_type[i]->type), "samples") &&
			     !strcmp(pp_text(x, p->sample_type[i]->unit), "count");
	for (size_t i = 0; i < p->n_sample_type; i++) {
		const char *t = pp_text(x, p->sample_type[i]->type);
		const char *u = pp_text(x, p->sample_type[i]->unit);

		x->types[i] = -1;
		if (has_count && !strcmp(t, "cpu") && !strcmp(u, "nanoseconds") &&
		    !strcmp(pt, "cpu") && !strcmp(pu, "nanoseconds"))
			continue; /* the same samples as the count, in time */
		x->types[i] = TRY(r, view_doc__profile_type(r->d, t, u, pt, pu, p->period));
	}
	return 0;
}

static int pp_add(struct rd *r, struct pp *x)
{
	const pp_profile *p = x->p;
	int32_t last_proc = -1, lp_pname = -1, shown = -1;
	int64_t lp_pid = -1;
	ssize_t count_idx = -1;
	int err;

	err = pp_types(r, x);
	if (err)
		return err;
	for (size_t i = 0; i < p->n_sample_type; i++) {
		if (x->types[i] >= 0 && shown < 0)
			shown = (int32_t)i;
		if (count_idx < 0 && !strcmp(pp_text(x, p->sample_type[i]->unit), "count"))
			count_idx = (ssize_t)i;
	}
	if (shown < 0)
		return 0;
	x->k_pid = pp_find(p, "pid");
	x->k_tid = pp_find(p, "tid");
	x->k_comm = pp_find(p, "comm");
	x->k_process = pp_find(p, "process");
	x->k_trace = pp_find(p, "trace_id");
	x->k_span = pp_find(p, "span_id");
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		const Perftools__Profiles__Label *ctx[MAX_CTX_ATTRS];
		uint8_t trace[16], span_id[8];
		bool has_tid = false, has_trace = false, has_span = false;
		int64_t pid = 0, tid = 0;
		int32_t comm = 0, pname = 0, stack, thread = -1, span = -1;
		uint32_t nctx = 0;

		for (size_t j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *lb = s->label[j];

			if (lb->key == x->k_pid)
				pid = lb->num;
			else if (lb->key == x->k_tid)
				has_tid = true, tid = lb->num;
			else if (lb->key == x->k_comm)
				comm = TRY(r, pp_sidx(r, x, lb->str));
			else if (lb->key == x->k_process)
				pname = TRY(r, pp_sidx(r, x, lb->str));
			else if (lb->key == x->k_trace)
				has_trace = parse_hex(pp_text(x, lb->str), trace, 16);
			else if (lb->key == x->k_span)
				has_span = parse_hex(pp_text(x, lb->str), span_id, 8);
			else if (lb->str && nctx < MAX_CTX_ATTRS)
				ctx[nctx++] = lb;
		}
		if (last_proc < 0 || pid != lp_pid || pname != lp_pname) {
			const char *pn = view_doc__string_text(r->d, pname);
			char svc[320];
			int n =
			    snprintf(svc, sizeof(svc), "unknown_service%s%s", *pn ? ":" : "", pn);
			int32_t si = TRY(
			    r, view_doc__string(
				   r->d, svc, n < (int)sizeof(svc) ? (size_t)n : sizeof(svc) - 1));

			last_proc = TRY(r, view_doc__process(r->d, si, pid, pname));
			lp_pid = pid;
			lp_pname = pname;
		}
		if (has_tid || comm)
			thread = TRY(r, view_doc__thread(r->d, last_proc, tid, comm));
		if (has_trace && has_span && !(all_zero(trace, 16) && all_zero(span_id, 8))) {
			span = TRY(r, view_doc__span(r->d, trace, span_id, last_proc));
			for (uint32_t j = 0; j < nctx; j++) {
				int32_t k = TRY(r, pp_sidx(r, x, ctx[j]->key));
				int32_t v = TRY(r, pp_sidx(r, x, ctx[j]->str));

				if (view_doc__span_attr(r->d, span, k, v))
					return oom(r);
			}
		}
		stack = pp_stack(r, x, s);
		if (stack < 0)
			return stack;
		for (size_t k = 0; k < p->n_sample_type; k++) {
			int32_t series;
			uint64_t samples = 0;

			if (x->types[k] < 0)
				continue;
			if ((int32_t)k == shown)
				samples = count_idx >= 0 ? (uint64_t)s->value[count_idx] : 1;
			series = TRY(r, view_doc__series(r->d, x->types[k], stack, thread, span));
			if (view_doc__add(r->d, series, s->value[k], 0, samples))
				return oom(r);
		}
	}
	return 0;
}

static int read_pprof(struct rd *r, const uint8_t *data, size_t n)
{
	ProtobufCAllocator alloc = {
	    .alloc = pb_alloc, .free = pb_free, .allocator_data = &r->arena};
	struct pp x = {0};
	int err;

	r->format = FMT_PPROF;
	x.p = perftools__profiles__profile__unpack(&alloc, n, data);
	if (!x.p) {
		err = fail(r, "corrupt pprof protobuf: protobuf-c cannot decode it");
		goto cleanup;
	}
	if (idmap_init(&x.fn, x.p->n_function) || idmap_init(&x.map, x.p->n_mapping) ||
	    idmap_init(&x.loc, x.p->n_location)) {
		err = oom(r);
		goto cleanup;
	}
	x.str = malloc((x.p->n_string_table + 1) * sizeof(*x.str));
	x.loc_first = malloc((x.p->n_location + 1) * sizeof(*x.loc_first));
	x.loc_n = calloc(x.p->n_location + 1, sizeof(*x.loc_n));
	x.types = calloc(x.p->n_sample_type + 1, sizeof(*x.types));
	if (!x.str || !x.loc_first || !x.loc_n || !x.types) {
		err = oom(r);
		goto cleanup;
	}
	memset(x.str, 0xff, (x.p->n_string_table + 1) * sizeof(*x.str));
	memset(x.loc_first, 0xff, (x.p->n_location + 1) * sizeof(*x.loc_first));
	err = pp_check(r, &x);
	if (!err)
		err = pp_add(r, &x);
cleanup:
	idmap_free(&x.fn);
	idmap_free(&x.map);
	idmap_free(&x.loc);
	free(x.str);
	free(x.loc_first);
	free(x.loc_n);
	free(x.frames.f);
	free(x.tmp);
	free(x.types);
	arena_free(&r->arena);
	return err;
}

/* --- detection ---------------------------------------------------------------------------- */

static int inflate_all(struct rd *r, const uint8_t *p, size_t n, uint8_t **out, size_t *outn)
{
	z_stream zs = {0};
	size_t cap = n * 4 + 4096, len = 0;
	uint8_t *buf = malloc(cap);
	int zr = Z_OK, err = 0;

	if (!buf)
		return oom(r);
	/* 15 + 32: a gzip or a zlib header, detected. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK) {
		free(buf);
		return oom(r);
	}
	zs.next_in = (Bytef *)p;
	zs.avail_in = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
	for (;;) {
		if (len == cap) {
			uint8_t *nb;

			if (cap >= MAX_INFLATED) {
				err = fail(r, "decompresses to more than %llu GiB: not a profile",
					   MAX_INFLATED >> 30);
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err = oom(r);
				break;
			}
			buf = nb;
		}
		zs.next_out = buf + len;
		zs.avail_out = (uInt)(cap - len > UINT32_MAX ? UINT32_MAX : cap - len);
		zr = inflate(&zs, Z_NO_FLUSH);
		len = (size_t)(zs.next_out - buf);
		if (zr == Z_STREAM_END) {
			size_t used = (size_t)(zs.next_in - p);

			/* gzip files may hold several members one after the other. */
			if (used < n && n - used >= 2 && p[used] == 0x1f && p[used + 1] == 0x8b) {
				inflateReset(&zs);
				continue;
			}
			break;
		}
		if (zr == Z_BUF_ERROR && zs.avail_out) {
			err = fail(
			    r,
			    "the compressed data ends early (%zu bytes decompressed): the file "
			    "is truncated",
			    len);
			break;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			err = fail(r, "corrupt compressed data (zlib: %s)",
				   zs.msg ? zs.msg : zError(zr));
			break;
		}
		if (zs.avail_in == 0 && zs.next_in == p + n && zs.avail_out) {
			err = fail(
			    r,
			    "the compressed data ends early (%zu bytes decompressed): the file "
			    "is truncated",
			    len);
			break;
		}
	}
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*outn = len;
	return 0;
}

static int read_bytes(struct rd *r, const uint8_t *p, size_t n, int depth)
{
	char why[200];
	uint32_t maxfield;
	size_t i = 0;
	int err;

	if (!n)
		return fail(r, depth ? "decompresses to nothing" : "empty file");
	if (n >= 2 &&
	    ((p[0] == 0x1f && p[1] == 0x8b) ||
	     (p[0] == 0x78 && (p[1] == 0x01 || p[1] == 0x5e || p[1] == 0x9c || p[1] == 0xda)))) {
		uint8_t *out;
		size_t outn;

		if (depth)
			return fail(r, "compressed twice: not a profile");
		err = inflate_all(r, p, n, &out, &outn);
		if (err)
			return err;
		err = read_bytes(r, out, outn, depth + 1);
		free(out);
		return err;
	}
	if (n >= 4 && !memcmp(p, "\x28\xb5\x2f\xfd", 4))
		return fail(r, "zstd-compressed (the file exporter's compression: zstd): "
			       "decompress it first (zstd -d)");
	if (n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		i = 3; /* a UTF-8 byte order mark before JSON */
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	if (i < n && p[i] == '{')
		return otlp_json(r, (const char *)p + i, n - i);
	/* A protobuf message never starts with field number 0 (a byte below 8): a big-endian
	 * length prefix of a message under 128 MiB does. */
	if (p[0] < 8)
		return otlp_stream(r, p, n);
	err = scan_fields(p, n, &maxfield, why, sizeof(why));
	if (err == -E2BIG)
		return fail(r, "truncated protobuf (pprof or OTLP): %s", why);
	if (err)
		return fail(r,
			    "not a profile spanprof view reads (pprof, OTLP protobuf or OTLP/JSON, "
			    "gzipped or not): %s",
			    why);
	if (maxfield > 2) {
		if (maxfield > 15)
			return fail(r,
				    "not a profile spanprof view reads (a protobuf message with "
				    "field %u at the top: neither pprof nor OTLP)",
				    maxfield);
		return read_pprof(r, p, n);
	}
	r->format = FMT_PROTO;
	return otlp_proto(r, p, n);
}

int view_read__buffer(struct view_doc *d, const char *name, const void *data, size_t len)
{
	struct rd r = {.d = d};
	const struct view_input *in;
	int err;

	err = view_doc__input_begin(d, name);
	if (err)
		return err;
	err = read_bytes(&r, data, len, 0);
	arena_free(&r.arena);
	if (r.oom)
		return -ENOMEM;
	if (view_doc__input_end(d, r.format, err ? r.err : NULL))
		return -ENOMEM;
	in = view_doc__input(d, view_doc__ninputs(d) - 1);
	return !in->error || in->samples ? 1 : 0;
}

static int read_file(struct view_doc *d, const char *path)
{
	struct stat st;
	char msg[300];
	uint8_t *buf = NULL;
	size_t off = 0;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(msg, sizeof(msg), "not a regular file");
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(msg, sizeof(msg), "cannot read: %s", strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	err = view_read__buffer(d, path, buf, off);
	free(buf);
	return err;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	err = view_doc__input_begin(d, path);
	if (!err)
		err = view_doc__input_end(d, NULL, msg);
	return err ? err : 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static bool wanted(const char *name)
{
	/* profile.pb.gz, and alloc/lock/offcpu.pb.gz of the other profile types */
	return ends_with(name, ".pb.gz") || ends_with(name, ".binpb") || ends_with(name, ".json") ||
	       ends_with(name, ".jsonl");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether @name is a pprof file of `spanprof record` ("profile.pb.gz", "alloc.pb.gz"...). */
static bool record_pprof(const char *name)
{
	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const char *stem = profile__type_info(t)->file_stem;
		size_t n = strlen(stem);

		if (!strncmp(name, stem, n) && !strcmp(name + n, ".pb.gz"))
			return true;
	}
	return false;
}

/*
 * Drops from @names (@n full paths, sorted) the pprof files of a recording that also wrote
 * OTLPFILE_NAME: it holds the same samples with their times and frame types.
 */
static void prefer_otlpfile(char **names, size_t *n)
{
	size_t k = 0;
	bool have = false;

	for (size_t i = 0; i < *n; i++) {
		const char *base = strrchr(names[i], '/');

		have |= !strcmp(base ? base + 1 : names[i], OTLPFILE_NAME);
	}
	if (!have)
		return;
	for (size_t i = 0; i < *n; i++) {
		const char *base = strrchr(names[i], '/');

		if (record_pprof(base ? base + 1 : names[i]))
			free(names[i]);
		else
			names[k++] = names[i];
	}
	*n = k;
}

static int read_dir(struct view_doc *d, const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	char **names = NULL, msg[300];
	size_t n = 0, cap = 0;
	int loaded = 0, err = 0;

	if (!dir) {
		snprintf(msg, sizeof(msg), "cannot open the directory: %s", strerror(errno));
		goto fail;
	}
	while ((de = readdir(dir))) {
		char *full;
		struct stat st;

		if (de->d_name[0] == '.' || !wanted(de->d_name))
			continue;
		if (asprintf(&full, "%s%s%s", path, ends_with(path, "/") ? "" : "/", de->d_name) <
		    0) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (stat(full, &st) || !S_ISREG(st.st_mode)) {
			free(full);
			continue;
		}
		if (n == cap) {
			char **nn;

			cap = cap ? 2 * cap : 16;
			nn = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				free(full);
				err = -ENOMEM;
				goto cleanup;
			}
			names = nn;
		}
		names[n++] = full;
	}
	if (!n) {
		snprintf(msg, sizeof(msg),
			 "no profiles in this directory (looked for *.binpb, *.pb.gz, *.json, "
			 "*.jsonl)");
		goto fail;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	prefer_otlpfile(names, &n);
	for (size_t i = 0; i < n; i++) {
		err = read_file(d, names[i]);
		if (err < 0)
			goto cleanup;
		loaded += err;
	}
	err = loaded;
	goto cleanup;
fail:
	err = view_doc__input_begin(d, path);
	if (!err)
		err = view_doc__input_end(d, NULL, msg);
cleanup:
	if (dir)
		closedir(dir);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

int view_read__path(struct view_doc *d, const char *path)
{
	struct stat st;
	char msg[300];
	int err;

	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return read_dir(d, path);
	if (!stat(path, &st))
		return read_file(d, path);
	snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
	err = view_doc__input_begin(d, path);
	if (!err)
		err = view_doc__input_end(d, NULL, msg);
	return err;
}
