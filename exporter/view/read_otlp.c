// SPDX-License-Identifier: Apache-2.0
/*
 * read_otlp: OTLP profiles v1development in protobuf (opentelemetry-proto
 * opentelemetry/proto/profiles/v1development/profiles.proto) for `spanprof view`
 * (read_otlp.h): one ProfilesData or ExportProfilesServiceRequest, checked whole, then merged
 * into the view_doc; and the Collector file exporter's `format: proto` stream of them. Also
 * merges what read_json.c decodes from OTLP/JSON.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/otlp_pb.h"
#include "view/doc.h"
#include "view/read_common.h"
#include "view/read_otlp.h"

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
			return rd__fail((r),                                                       \
					fmt ": index %d is outside " table " (%zu entries%s)",     \
					##__VA_ARGS__, (int)(i), (size_t)(n),                      \
					m->dict ? "" : "; the message has no dictionary");         \
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
			return rd__fail(
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
		return rd__fpool_push(&m->frames, f) ? rd__oom(r) : 0;
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
		if (rd__push_frame(r, &m->frames, &at, name, file, ln->line))
			return -ENOMEM;
		m->loc_n[li]++;
	}
	if (!l->n_lines) {
		if (rd__push_frame(r, &m->frames, &at, 0, 0, 0))
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
	if (rd__grow_tmp(&m->tmp, &m->tmp_cap, n))
		return rd__oom(r);
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

static int32_t otlp_span(struct rd *r, struct otlp_msg *m, int32_t li, int32_t proc)
{
	const pb_link *l;

	if (!li || !m->nlink)
		return -1;
	if (m->link_span[li] != -2 && m->link_proc[li] == proc)
		return m->link_span[li];
	l = m->dict->link_table[li];
	if (l->trace_id.len != 16 || l->span_id.len != 8 ||
	    (rd__all_zero(l->trace_id.data, 16) && rd__all_zero(l->span_id.data, 8)))
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
		exe = rd__base_name(path);
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
			return rd__oom(r);
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
			return rd__oom(r);
	series = series_of(r, m, type, stack, thread, span);
	if (series < 0)
		return series;
	for (size_t i = 0; i < s->n_values; i++)
		sum += s->values[i];
	if (!s->n_timestamps_unix_nano)
		return view_doc__add(r->d, series, sum, 0, count_unit ? (uint64_t)sum : 1)
			   ? rd__oom(r)
			   : 0;
	if (s->n_values && s->n_values != s->n_timestamps_unix_nano)
		/* Values that don't pair with the timestamps: all at the first one. */
		return view_doc__add(r->d, series, sum, s->timestamps_unix_nano[0],
				     s->n_timestamps_unix_nano)
			   ? rd__oom(r)
			   : 0;
	for (size_t i = 0; i < s->n_timestamps_unix_nano; i++) {
		err = view_doc__add(r->d, series, s->n_values ? s->values[i] : 1,
				    s->timestamps_unix_nano[i], 1);
		if (err)
			return rd__oom(r);
	}
	return 0;
}

int rd__otlp_add(struct rd *r, const pb_data *pd)
{
	struct otlp_msg m;
	int err;

	err = otlp_msg_init(&m, pd);
	if (err) {
		err = rd__oom(r);
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
					err = rd__oom(r);
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

int rd__otlp_proto(struct rd *r, const uint8_t *p, size_t n)
{
	ProtobufCAllocator alloc = {
	    .alloc = rd__pb_alloc, .free = rd__pb_free, .allocator_data = &r->arena};
	char why[200];
	uint32_t maxfield;
	pb_data *pd;
	int err;

	err = rd__scan_fields(p, n, &maxfield, why, sizeof(why));
	if (err == -E2BIG)
		return rd__fail(r, "truncated OTLP protobuf: %s", why);
	if (err)
		return rd__fail(r, "corrupt OTLP protobuf: %s", why);
	if (maxfield > 2)
		return rd__fail(r, "not an OTLP ProfilesData (it has a top-level field %u)",
				maxfield);
	pd = PB(profiles_data__unpack)(&alloc, n, p);
	if (!pd) {
		rd__arena_free(&r->arena);
		return rd__fail(r, "corrupt OTLP protobuf: protobuf-c cannot decode it");
	}
	err = rd__otlp_add(r, pd);
	rd__arena_free(&r->arena);
	return err;
}

int rd__otlp_stream(struct rd *r, const uint8_t *p, size_t n)
{
	size_t nonempty = 0;
	unsigned msg;
	int err;

	r->format = FMT_STREAM;
	err = rd__frames(r, p, n, rd__otlp_proto, &msg, &nonempty);
	if (err)
		return err;
	/* Zero-filled data reads as a stream of empty messages: nothing the file exporter writes.
	 */
	if (!nonempty)
		return rd__fail(r,
				"not a profile: %u empty messages and nothing else (a zero-filled "
				"file?)",
				msg);
	return 0;
}
