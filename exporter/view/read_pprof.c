// SPDX-License-Identifier: Apache-2.0
/*
 * read_pprof: pprof profiles for `spanprof view` (read_pprof.h): github.com/google/pprof
 * proto/profile.proto, as exporter/output/pprof.c and the Go runtime write it. The profile is
 * checked whole (every id and string index), then merged into the view_doc; pprof has no
 * frame types, so kernel frames, spanprof's markers and CPython frames are told apart by
 * their addresses and names.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "pprof/profile.pb-c.h"
#include "profile/stackend.h"
#include "util/util.h"
#include "view/doc.h"
#include "view/read_common.h"
#include "view/read_pprof.h"

typedef Perftools__Profiles__Profile pp_profile;

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
			return rd__fail((r),                                                       \
					fmt ": string %lld is outside the string table (%zu)",     \
					##__VA_ARGS__, (long long)(i), (x)->p->n_string_table);    \
	} while (0)

static int pp_check(struct rd *r, struct pp *x)
{
	const pp_profile *p = x->p;
	uint32_t v;

	if (!p->n_string_table || p->string_table[0][0])
		return rd__fail(r,
				"not a pprof profile: its string table does not start with \"\"");
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
			return rd__fail(r, "mapping %zu: id %llu is 0 or repeated", i,
					(unsigned long long)p->mapping[i]->id);
	}
	for (size_t i = 0; i < p->n_function; i++) {
		PP_STR(r, x, p->function[i]->name, "function %zu name", i);
		PP_STR(r, x, p->function[i]->system_name, "function %zu system name", i);
		PP_STR(r, x, p->function[i]->filename, "function %zu file", i);
		if (!idmap_put(&x->fn, p->function[i]->id, (uint32_t)i))
			return rd__fail(r, "function %zu: id %llu is 0 or repeated", i,
					(unsigned long long)p->function[i]->id);
	}
	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		if (l->mapping_id && !idmap_get(&x->map, l->mapping_id, &v))
			return rd__fail(r, "location %zu: no mapping has id %llu", i,
					(unsigned long long)l->mapping_id);
		for (size_t j = 0; j < l->n_line; j++)
			if (l->line[j]->function_id &&
			    !idmap_get(&x->fn, l->line[j]->function_id, &v))
				return rd__fail(r, "location %zu: no function has id %llu", i,
						(unsigned long long)l->line[j]->function_id);
		if (!idmap_put(&x->loc, l->id, (uint32_t)i))
			return rd__fail(r, "location %zu: id %llu is 0 or repeated", i,
					(unsigned long long)l->id);
	}
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (s->n_value != p->n_sample_type)
			return rd__fail(r, "sample %zu has %zu values for %zu sample types", i,
					s->n_value, p->n_sample_type);
		for (size_t j = 0; j < s->n_location_id; j++)
			if (!idmap_get(&x->loc, s->location_id[j], &v))
				return rd__fail(r, "sample %zu: no location has id %llu", i,
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
		if (rd__push_frame(r, &x->frames, &at, name, file, ln->line))
			return -ENOMEM;
		x->loc_n[li]++;
	}
	if (!l->n_line) {
		if (rd__push_frame(r, &x->frames, &at, 0, 0, 0))
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
	if (rd__grow_tmp(&x->tmp, &x->tmp_cap, n))
		return rd__oom(r);
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
		if (has_trace && has_span &&
		    !(rd__all_zero(trace, 16) && rd__all_zero(span_id, 8))) {
			span = TRY(r, view_doc__span(r->d, trace, span_id, last_proc));
			for (uint32_t j = 0; j < nctx; j++) {
				int32_t k = TRY(r, pp_sidx(r, x, ctx[j]->key));
				int32_t v = TRY(r, pp_sidx(r, x, ctx[j]->str));

				if (view_doc__span_attr(r->d, span, k, v))
					return rd__oom(r);
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
				return rd__oom(r);
		}
	}
	return 0;
}

int rd__pprof(struct rd *r, const uint8_t *data, size_t n)
{
	ProtobufCAllocator alloc = {
	    .alloc = rd__pb_alloc, .free = rd__pb_free, .allocator_data = &r->arena};
	struct pp x = {0};
	int err;

	r->format = FMT_PPROF;
	x.p = perftools__profiles__profile__unpack(&alloc, n, data);
	if (!x.p) {
		err = rd__fail(r, "corrupt pprof protobuf: protobuf-c cannot decode it");
		goto cleanup;
	}
	if (idmap_init(&x.fn, x.p->n_function) || idmap_init(&x.map, x.p->n_mapping) ||
	    idmap_init(&x.loc, x.p->n_location)) {
		err = rd__oom(r);
		goto cleanup;
	}
	x.str = malloc((x.p->n_string_table + 1) * sizeof(*x.str));
	x.loc_first = malloc((x.p->n_location + 1) * sizeof(*x.loc_first));
	x.loc_n = calloc(x.p->n_location + 1, sizeof(*x.loc_n));
	x.types = calloc(x.p->n_sample_type + 1, sizeof(*x.types));
	if (!x.str || !x.loc_first || !x.loc_n || !x.types) {
		err = rd__oom(r);
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
	rd__arena_free(&r->arena);
	return err;
}
