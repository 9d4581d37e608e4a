// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "process/procmaps.h"
#include "runtime/v8/v8proc.h"
#include "v8.h"

/* Functions cached per process; a full cache starts over. */
#define CACHE_SLOTS 4096
/* Longest name or file name read, bytes (UTF-8). */
#define MAX_STRING 1023
/* Cons strings nested deeper are not read. */
#define MAX_STRING_DEPTH 8
/* ScopeInfo slots looked at for the function name after the context locals. */
#define NAME_SLOTS 3
/* Context locals beyond this are not plausible (V8 keeps at most 2^16 - a few). */
#define MAX_CONTEXT_LOCALS 65536
/* ScopeInfo keeps local names inline below this count, else one hash table (scope-info.tq). */
#define MAX_INLINED_LOCAL_NAMES 75
/* Line ends read at most (binary search over the script's FixedArray). */
#define MAX_LINES (1u << 24)

#define NAME_ERR(n, d) [V8PROC_ERR_##n] = #n,
static const char *const error_names[V8PROC_ERR_COUNT] = {V8PROC_ERRORS(NAME_ERR)};
#undef NAME_ERR

const char *v8proc__error_name(enum v8proc_error e)
{
	return (unsigned)e < V8PROC_ERR_COUNT ? error_names[e] : "?";
}

struct entry {
	uint64_t sfi, fingerprint; /* sfi 0: empty */
	struct v8fn_info info;
};

struct v8proc {
	pid_t pid;
	struct v8meta m;
	struct entry *cache; /* CACHE_SLOTS, open addressing */
	size_t used;
	struct v8proc_stats stats;
};

struct v8proc *v8proc__new(pid_t pid, const struct v8meta *meta)
{
	struct v8proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cache = calloc(CACHE_SLOTS, sizeof(*p->cache));
	if (!p->cache) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->m = *meta;
	return p;
}

static void cache_clear(struct v8proc *p)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		if (!p->cache[i].sfi)
			continue;
		free((char *)p->cache[i].info.name);
		free((char *)p->cache[i].info.file);
		p->cache[i].sfi = 0;
	}
	p->used = 0;
}

void v8proc__free(struct v8proc *p)
{
	if (!p)
		return;
	cache_clear(p);
	free(p->cache);
	free(p);
}

void v8proc__stats(const struct v8proc *p, struct v8proc_stats *out)
{
	*out = p->stats;
}

static bool is_heap_object(uint64_t v)
{
	return (v & V8_HEAP_OBJECT_TAG_MASK) == V8_HEAP_OBJECT_TAG;
}

static bool is_smi(uint64_t v)
{
	return !(v & V8_SMI_TAG_MASK);
}

static int64_t smi_value(uint64_t v)
{
	return (int64_t)v >> 32;
}

#define ERR(e) (-(1 + V8PROC_ERR_##e))

/* The word at @addr. */
static int read_word(struct v8proc *p, uint64_t addr, uint64_t *out)
{
	return procmaps__read_mem(p->pid, addr, out, sizeof(*out)) ? ERR(READ) : 0;
}

/* The instance type of heap object @tagged into *@type. */
static int object_type(struct v8proc *p, uint64_t tagged, uint16_t *type)
{
	uint64_t map;

	if (!is_heap_object(tagged))
		return ERR(TYPE);
	if (read_word(p, tagged - V8_HEAP_OBJECT_TAG + p->m.heap_object_map, &map))
		return ERR(READ);
	if (!is_heap_object(map))
		return ERR(TYPE);
	if (procmaps__read_mem(p->pid, map - V8_HEAP_OBJECT_TAG + p->m.map_instance_type, type,
			       sizeof(*type)))
		return ERR(READ);
	return 0;
}

struct strbuf {
	char s[MAX_STRING + 1];
	size_t len;
};

/* Appends code point @c as UTF-8; ERR(STRING) when full. */
static int put_cp(struct strbuf *b, uint32_t c)
{
	char tmp[4];
	size_t n;

	if (c < 0x80) {
		tmp[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		tmp[0] = (char)(0xc0 | c >> 6);
		tmp[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else {
		tmp[0] = (char)(0xe0 | c >> 12);
		tmp[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		tmp[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	}
	if (b->len + n > MAX_STRING)
		return ERR(STRING);
	memcpy(b->s + b->len, tmp, n);
	b->len += n;
	return 0;
}

/* Appends chars [@from, @from + @count) of string @tagged (of type @type) to @b. */
static int read_string_part(struct v8proc *p, uint64_t tagged, uint16_t type, uint32_t from,
			    uint32_t count, struct strbuf *b, int depth);

static int read_string_at(struct v8proc *p, uint64_t tagged, uint32_t from, uint32_t count,
			  struct strbuf *b, int depth)
{
	uint16_t type;
	int err = object_type(p, tagged, &type);

	if (err)
		return err;
	if (type >= p->m.first_nonstring_type)
		return ERR(TYPE);
	return read_string_part(p, tagged, type, from, count, b, depth);
}

static int read_string_part(struct v8proc *p, uint64_t tagged, uint16_t type, uint32_t from,
			    uint32_t count, struct strbuf *b, int depth)
{
	uint64_t base = tagged - V8_HEAP_OBJECT_TAG, first, second, off;
	uint16_t repr = type & p->m.string_representation_mask;
	int32_t length;
	uint32_t flen, i;
	int err;

	if (depth > MAX_STRING_DEPTH)
		return ERR(STRING);
	if (procmaps__read_mem(p->pid, base + p->m.string_length, &length, sizeof(length)))
		return ERR(READ);
	if (length < 0 || (uint32_t)length < from || (uint32_t)length - from < count)
		return ERR(TYPE);
	if (count > MAX_STRING)
		return ERR(STRING);
	if (repr == p->m.seq_string_tag) {
		if ((type & p->m.string_encoding_mask) == p->m.one_byte_string_tag) {
			uint8_t chars[MAX_STRING];

			if (count &&
			    procmaps__read_mem(p->pid, base + p->m.seq_one_byte_chars + from, chars,
					       count))
				return ERR(READ);
			for (i = 0; i < count; i++)
				if ((err = put_cp(b, chars[i])))
					return err;
		} else {
			uint16_t chars[MAX_STRING];

			if (count &&
			    procmaps__read_mem(p->pid, base + p->m.seq_two_byte_chars + 2ull * from,
					       chars, 2ull * count))
				return ERR(READ);
			for (i = 0; i < count; i++) {
				/* Surrogates (outside the BMP) are not decoded: U+FFFD. */
				uint32_t c =
				    chars[i] >= 0xd800 && chars[i] < 0xe000 ? 0xfffd : chars[i];

				if ((err = put_cp(b, c)))
					return err;
			}
		}
		return 0;
	}
	if (repr == p->m.cons_string_tag) {
		int32_t l1;

		if (read_word(p, base + p->m.cons_first, &first) ||
		    read_word(p, base + p->m.cons_second, &second) ||
		    procmaps__read_mem(p->pid, first - V8_HEAP_OBJECT_TAG + p->m.string_length, &l1,
				       sizeof(l1)))
			return ERR(READ);
		if (l1 < 0 || l1 > length)
			return ERR(TYPE);
		flen = (uint32_t)l1;
		if (from < flen) {
			uint32_t n = flen - from < count ? flen - from : count;

			err = read_string_at(p, first, from, n, b, depth + 1);
			if (err)
				return err;
			from += n;
			count -= n;
		}
		return count ? read_string_at(p, second, from - flen, count, b, depth + 1) : 0;
	}
	if (repr == p->m.thin_string_tag) {
		if (read_word(p, base + p->m.thin_actual, &first))
			return ERR(READ);
		return read_string_at(p, first, from, count, b, depth + 1);
	}
	if (repr == p->m.sliced_string_tag) {
		if (read_word(p, base + p->m.sliced_parent, &first) ||
		    read_word(p, base + p->m.sliced_offset, &off))
			return ERR(READ);
		if (!is_smi(off) || smi_value(off) < 0 || smi_value(off) > INT32_MAX)
			return ERR(TYPE);
		return read_string_at(p, first, (uint32_t)smi_value(off) + from, count, b,
				      depth + 1);
	}
	return ERR(STRING); /* external strings: their characters are outside the V8 heap */
}

/* The whole string @tagged into @b (NUL-terminated). */
static int read_string(struct v8proc *p, uint64_t tagged, struct strbuf *b)
{
	int32_t length;
	int err;

	b->len = 0;
	if (!is_heap_object(tagged))
		return ERR(TYPE);
	if (procmaps__read_mem(p->pid, tagged - V8_HEAP_OBJECT_TAG + p->m.string_length, &length,
			       sizeof(length)))
		return ERR(READ);
	if (length < 0)
		return ERR(TYPE);
	if (length > MAX_STRING)
		return ERR(STRING);
	err = read_string_at(p, tagged, 0, (uint32_t)length, b, 0);
	b->s[b->len] = '\0';
	return err;
}

/*
 * The function name in ScopeInfo @tagged (scope-info.tq: flags, parameter_count,
 * context_local_count, the context locals' names (inline, or one hash table from
 * MAX_INLINED_LOCAL_NAMES on) and infos, an optional Smi (the saved class variable), then the
 * function variable's name (a String, or Smi 0 for none)), and the start position that follows
 * it (position_info, after the name's slot index and an optional inferred name): *@start -1 when
 * not found.
 */
static int scope_info_name(struct v8proc *p, uint64_t tagged, struct strbuf *b, int64_t *start)
{
	uint64_t data = tagged - V8_HEAP_OBJECT_TAG + p->m.heap_object_map + 8, ncl, slots[8];
	uint64_t idx;
	uint16_t type;
	int err, k;

	*start = -1;
	if (read_word(p, data + 8ull * p->m.scope_info_ncontext_locals, &ncl))
		return ERR(READ);
	if (!is_smi(ncl) || smi_value(ncl) < 0 || smi_value(ncl) > MAX_CONTEXT_LOCALS)
		return ERR(TYPE);
	idx = p->m.scope_info_first_vars + (uint64_t)smi_value(ncl) +
	      (smi_value(ncl) < MAX_INLINED_LOCAL_NAMES ? (uint64_t)smi_value(ncl) : 1);
	if (procmaps__read_mem(p->pid, data + 8 * idx, slots, sizeof(slots)))
		return ERR(READ);
	for (k = 0; k < NAME_SLOTS; k++) {
		if (is_smi(slots[k]))
			continue; /* the saved class variable, or Smi 0: no function name */
		err = object_type(p, slots[k], &type);
		if (err)
			return err;
		if (type >= p->m.first_nonstring_type)
			return ERR(TYPE);
		err = read_string(p, slots[k], b);
		if (err)
			return err;
		break;
	}
	if (k == NAME_SLOTS)
		return ERR(TYPE);
	/*
	 * An empty name (an anonymous function expression): the inferred name after the name's
	 * slot index, when the ScopeInfo keeps one (a String; else undefined), as V8's own
	 * SharedFunctionInfo::DebugName() does ("Module._load" for Module._load = function ...).
	 */
	if (!b->len && k + 2 < (int)(sizeof(slots) / sizeof(slots[0])) && !is_smi(slots[k + 2]) &&
	    !object_type(p, slots[k + 2], &type) && type < p->m.first_nonstring_type &&
	    read_string(p, slots[k + 2], b))
		b->len = 0, b->s[0] = '\0';
	/* Slot k + 1: the name's slot index (Smi); then maybe the inferred name; then the
	 * positions, start < end. */
	for (int j = k + 2; j + 1 < (int)(sizeof(slots) / sizeof(slots[0])) && j <= k + 3; j++) {
		if (is_smi(slots[j]) && is_smi(slots[j + 1]) &&
		    smi_value(slots[j]) < smi_value(slots[j + 1]) && smi_value(slots[j]) >= 0) {
			*start = smi_value(slots[j]);
			break;
		}
	}
	return 0;
}

/* The 1-based line of source position @pos in script @script (its line_ends), 0 unknown. */
static int script_line(struct v8proc *p, uint64_t script, int64_t pos)
{
	uint64_t ends, len, v, data;
	uint16_t type;
	uint32_t lo = 0, hi;

	if (pos < 0 || read_word(p, script - V8_HEAP_OBJECT_TAG + p->m.script_line_ends, &ends) ||
	    object_type(p, ends, &type) || type != p->m.type_fixed_array ||
	    read_word(p, ends - V8_HEAP_OBJECT_TAG + p->m.fixed_array_length, &len) ||
	    !is_smi(len) || smi_value(len) <= 0 || smi_value(len) > MAX_LINES)
		return 0;
	data = ends - V8_HEAP_OBJECT_TAG + p->m.fixed_array_data;
	hi = (uint32_t)smi_value(len);
	/* The first line whose end is at or after pos. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (read_word(p, data + 8ull * mid, &v) || !is_smi(v))
			return 0;
		if (smi_value(v) < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < (uint32_t)smi_value(len) ? (int)lo + 1 : 0;
}

/* Reads the function of SharedFunctionInfo @sfi, whose name_or_scope_info must be @fingerprint. */
static int read_function(struct v8proc *p, uint64_t sfi, uint64_t fingerprint,
			 struct v8fn_info *out)
{
	uint64_t base = sfi - V8_HEAP_OBJECT_TAG, nos, script, name;
	struct strbuf b, f;
	int64_t start = -1;
	uint16_t type;
	int err;

	err = object_type(p, sfi, &type);
	if (err)
		return err;
	if (type != p->m.type_sfi)
		return ERR(TYPE);
	if (read_word(p, base + p->m.sfi_name_or_scope_info, &nos))
		return ERR(READ);
	if (nos != fingerprint)
		return ERR(STALE);
	b.len = 0;
	b.s[0] = '\0';
	if (is_heap_object(nos)) {
		err = object_type(p, nos, &type);
		if (err)
			return err;
		if (type == p->m.type_scope_info)
			err = scope_info_name(p, nos, &b, &start);
		else if (type < p->m.first_nonstring_type)
			err = read_string(p, nos, &b);
		else
			err = ERR(TYPE);
		if (err && err != ERR(TYPE))
			return err;
		if (err)
			b.len = 0, b.s[0] = '\0'; /* no name found: anonymous */
	}
	f.len = 0;
	f.s[0] = '\0';
	if (!read_word(p, base + p->m.sfi_script_or_debug_info, &script) &&
	    !object_type(p, script, &type) && type == p->m.type_script) {
		if (!read_word(p, script - V8_HEAP_OBJECT_TAG + p->m.script_name, &name) &&
		    read_string(p, name, &f))
			f.len = 0, f.s[0] = '\0';
		out->line = script_line(p, script, start);
	} else {
		out->line = 0;
	}
	/* Re-read: the object must not have changed while it was read. */
	if (read_word(p, base + p->m.sfi_name_or_scope_info, &nos))
		return ERR(READ);
	if (nos != fingerprint)
		return ERR(STALE);
	out->name = strdup(b.len ? b.s : "(anonymous)");
	out->file = strdup(f.s);
	if (!out->name || !out->file) {
		free((char *)out->name);
		free((char *)out->file);
		return -ENOMEM;
	}
	return 0;
}

static size_t slot_of(uint64_t sfi, uint64_t fingerprint)
{
	uint64_t h = (sfi ^ (fingerprint * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 40) & (CACHE_SLOTS - 1);
}

int v8proc__function(struct v8proc *p, uint64_t sfi, uint64_t fingerprint,
		     const struct v8fn_info **out)
{
	size_t i = slot_of(sfi, fingerprint);
	struct v8fn_info info;
	int err;

	if (!sfi)
		return ERR(TYPE);
	for (;; i = (i + 1) & (CACHE_SLOTS - 1)) {
		struct entry *e = &p->cache[i];

		if (!e->sfi)
			break;
		if (e->sfi == sfi && e->fingerprint == fingerprint) {
			p->stats.hits++;
			*out = &e->info;
			return 0;
		}
	}
	p->stats.misses++;
	err = read_function(p, sfi, fingerprint, &info);
	if (err) {
		if (err < 0 && -err - 1 < V8PROC_ERR_COUNT)
			p->stats.errors[-err - 1]++;
		return err;
	}
	if (p->used >= CACHE_SLOTS / 2) {
		cache_clear(p);
		i = slot_of(sfi, fingerprint);
	}
	while (p->cache[i].sfi)
		i = (i + 1) & (CACHE_SLOTS - 1);
	p->cache[i].sfi = sfi;
	p->cache[i].fingerprint = fingerprint;
	p->cache[i].info = info;
	p->used++;
	*out = &p->cache[i].info;
	return 0;
}
