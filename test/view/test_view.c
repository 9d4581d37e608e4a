// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of `spanprof view` (exporter/view/read.c, exporter/view/doc.c): each input
 * format built here from one scenario (OTLP protobuf with protobuf-c, the length-prefixed stream,
 * OTLP/JSON lines as the Collector's pdata writes them, gzipped pprof as exporter/output/pprof.c
 * writes it), merging, spans, time buckets, damaged inputs, the OTLP traces files that name
 * the spans (protobuf and JSON), and the document itself parsed back with json-c and checked
 * against docs/view-format.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <argp.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <zlib.h>

#include "opentelemetry/proto/trace/v1/trace.pb-c.h"
#include "otlp/otlp_pb.h"
#include "pprof/profile.pb-c.h"
#include "view/doc.h"
#include "view/read.h"
#include "view/view.h"

#define T0 1764441600000000000ull /* 2025-11-29 18:40:00 UTC */
#define MS 1000000ull
#define PERIOD 52631578 /* 19 Hz */

/* --- scenario ----------------------------------------------------------------------------- */

/*
 * Frame names in a stack (leaf first, as OTLP and pprof list them): "x[k]" a kernel frame,
 * "?" an unsymbolized frame (no line) of /usr/bin/app at 0x1234, "inner@outer" one location
 * where inner was inlined into outer. Others: a function in /usr/bin/app.
 */
struct t_sample {
	int stack;
	int64_t tid; /* 0: no thread.id */
	const char *tname;
	int link; /* 0: none, else 1 + index in links */
	int nts;
	uint64_t ts[4];
	int64_t value; /* when nts == 0 */
	const char *ctx_key, *ctx_val;
};

struct t_proc {
	const char *service, *exe;
	int64_t pid;
	const char *type, *unit; /* NULL: samples/count with period cpu/nanoseconds */
	int nsamples;
	const struct t_sample *samples;
};

struct t_msg {
	int nstacks;
	const char *const *stacks[8];
	int nlinks;
	const char *links[4][2]; /* trace id hex, span id hex */
	int nprocs;
	const struct t_proc *procs;
};

static const char *const st_main[] = {"c", "b", "a", "main", NULL};
static const char *const st_kern[] = {"do_syscall_64[k]", "write", "b", "a", "main", NULL};
static const char *const st_inl[] = {"leaf@mid", "?", "main", NULL};

/* --- a bump allocator for the builders (reset per scenario) ------------------------------- */

static char heap[4 << 20];
static size_t heap_used;

static void *talloc(size_t n)
{
	void *p;

	n = (n + 15) & ~(size_t)15;
	assert_true(heap_used + n <= sizeof(heap));
	p = heap + heap_used;
	heap_used += n;
	memset(p, 0, n);
	return p;
}

static char *tstrdup(const char *s)
{
	char *p = talloc(strlen(s) + 1);

	strcpy(p, s);
	return p;
}

/* --- OTLP builder ------------------------------------------------------------------------- */

struct ob {
	pb_dict *d;
	size_t cap;
};

static int32_t ob_str(struct ob *b, const char *s)
{
	pb_dict *d = b->d;

	for (size_t i = 0; i < d->n_string_table; i++)
		if (!strcmp(d->string_table[i], s))
			return (int32_t)i;
	d->string_table[d->n_string_table] = tstrdup(s);
	return (int32_t)d->n_string_table++;
}

static pb_any *any_str(const char *s)
{
	pb_any *a = talloc(sizeof(*a));

	opentelemetry__proto__common__v1__any_value__init(a);
	a->value_case = ANY(STRING_VALUE);
	a->string_value = tstrdup(s);
	return a;
}

static pb_any *any_int(int64_t v)
{
	pb_any *a = talloc(sizeof(*a));

	opentelemetry__proto__common__v1__any_value__init(a);
	a->value_case = ANY(INT_VALUE);
	a->int_value = v;
	return a;
}

static int32_t ob_attr(struct ob *b, const char *key, pb_any *v)
{
	pb_dict *d = b->d;
	int32_t k = ob_str(b, key);
	pb_kvu *a;

	for (size_t i = 1; i < d->n_attribute_table; i++) {
		pb_kvu *x = d->attribute_table[i];

		if (x->key_strindex == k && x->value->value_case == v->value_case &&
		    (v->value_case == ANY(INT_VALUE)
			 ? x->value->int_value == v->int_value
			 : !strcmp(x->value->string_value, v->string_value)))
			return (int32_t)i;
	}
	a = talloc(sizeof(*a));
	PB(key_value_and_unit__init)(a);
	a->key_strindex = k;
	a->value = v;
	d->attribute_table[d->n_attribute_table] = a;
	return (int32_t)d->n_attribute_table++;
}

static int32_t ob_function(struct ob *b, const char *name)
{
	pb_dict *d = b->d;
	int32_t n = ob_str(b, name);
	char file[64];
	pb_function *f;

	for (size_t i = 1; i < d->n_function_table; i++)
		if (d->function_table[i]->name_strindex == n)
			return (int32_t)i;
	f = talloc(sizeof(*f));
	PB(function__init)(f);
	f->name_strindex = n;
	f->system_name_strindex = n;
	snprintf(file, sizeof(file), "src/%s.c", name);
	f->filename_strindex = ob_str(b, file);
	d->function_table[d->n_function_table] = f;
	return (int32_t)d->n_function_table++;
}

static pb_line *mkline(struct ob *b, const char *fn)
{
	pb_line *l = talloc(sizeof(*l));

	PB(line__init)(l);
	l->function_index = ob_function(b, fn);
	l->line = (int64_t)strlen(fn) * 10;
	return l;
}

/* The location of frame name @name (see struct t_sample). */
static int32_t ob_location(struct ob *b, const char *name)
{
	pb_dict *d = b->d;
	pb_location *l = talloc(sizeof(*l));
	char fn[64];
	const char *at = strchr(name, '@');
	size_t n = strlen(name);

	PB(location__init)(l);
	l->attribute_indices = talloc(sizeof(int32_t));
	l->lines = talloc(2 * sizeof(pb_line *));
	if (n > 4 && !strcmp(name + n - 4, "[go]")) {
		snprintf(fn, sizeof(fn), "%.*s", (int)(n - 4), name);
		l->mapping_index = 1;
		l->address = 0x2000 + n;
		l->lines[l->n_lines++] = mkline(b, fn);
		l->attribute_indices[l->n_attribute_indices++] =
		    ob_attr(b, "profile.frame.type", any_str("go"));
	} else if (n > 4 && !strcmp(name + n - 4, "[py]")) {
		snprintf(fn, sizeof(fn), "%.*s", (int)(n - 4), name);
		l->address = 12; /* the line: a CPython frame has no code address */
		l->lines[l->n_lines++] = mkline(b, fn);
		l->attribute_indices[l->n_attribute_indices++] =
		    ob_attr(b, "profile.frame.type", any_str("cpython"));
	} else if (n > 3 && !strcmp(name + n - 3, "[k]")) {
		snprintf(fn, sizeof(fn), "%.*s", (int)(n - 3), name);
		l->address = 0xffffffff81000000ull + n;
		l->lines[l->n_lines++] = mkline(b, fn);
		l->attribute_indices[l->n_attribute_indices++] =
		    ob_attr(b, "profile.frame.type", any_str("kernel"));
	} else {
		l->mapping_index = 1;
		l->address = 0x1234;
		l->attribute_indices[l->n_attribute_indices++] =
		    ob_attr(b, "profile.frame.type", any_str("native"));
		if (at) {
			snprintf(fn, sizeof(fn), "%.*s", (int)(at - name), name);
			l->lines[l->n_lines++] = mkline(b, fn); /* innermost first */
			l->lines[l->n_lines++] = mkline(b, at + 1);
		} else if (strcmp(name, "?")) {
			l->lines[l->n_lines++] = mkline(b, name);
		}
	}
	d->location_table[d->n_location_table] = l;
	return (int32_t)d->n_location_table++;
}

static pb_kv *kv(const char *key, pb_any *v)
{
	pb_kv *k = talloc(sizeof(*k));

	opentelemetry__proto__common__v1__key_value__init(k);
	k->key = tstrdup(key);
	k->value = v;
	return k;
}

static void hex_to(const char *hex, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

static pb_vt *vt(struct ob *b, const char *t, const char *u)
{
	pb_vt *v = talloc(sizeof(*v));

	PB(value_type__init)(v);
	v->type_strindex = ob_str(b, t);
	v->unit_strindex = ob_str(b, u);
	return v;
}

/* The ProfilesData of @m (each table's element 0 the zero value, as OTLP wants). */
static pb_data *build_otlp(const struct t_msg *m)
{
	pb_data *pd = talloc(sizeof(*pd));
	pb_dict *d = talloc(sizeof(*d));
	struct ob b = {.d = d};
	pb_mapping *mp = talloc(sizeof(*mp));

	PB(profiles_data__init)(pd);
	PB(profiles_dictionary__init)(d);
	pd->dictionary = d;
	d->string_table = talloc(256 * sizeof(char *));
	d->function_table = talloc(64 * sizeof(void *));
	d->location_table = talloc(64 * sizeof(void *));
	d->mapping_table = talloc(2 * sizeof(void *));
	d->attribute_table = talloc(64 * sizeof(void *));
	d->stack_table = talloc(16 * sizeof(void *));
	d->link_table = talloc(8 * sizeof(void *));
	ob_str(&b, "");
	d->function_table[d->n_function_table++] = talloc(sizeof(pb_function));
	PB(function__init)(d->function_table[0]);
	d->location_table[d->n_location_table++] = talloc(sizeof(pb_location));
	PB(location__init)(d->location_table[0]);
	d->mapping_table[d->n_mapping_table++] = talloc(sizeof(pb_mapping));
	PB(mapping__init)(d->mapping_table[0]);
	d->attribute_table[d->n_attribute_table++] = talloc(sizeof(pb_kvu));
	PB(key_value_and_unit__init)(d->attribute_table[0]);
	d->stack_table[d->n_stack_table++] = talloc(sizeof(pb_stack));
	PB(stack__init)(d->stack_table[0]);
	d->link_table[d->n_link_table++] = talloc(sizeof(pb_link));
	PB(link__init)(d->link_table[0]);

	PB(mapping__init)(mp);
	mp->memory_start = 0x1000;
	mp->memory_limit = 0x9000;
	mp->filename_strindex = ob_str(&b, "/usr/bin/app");
	d->mapping_table[d->n_mapping_table++] = mp;

	for (int i = 0; i < m->nstacks; i++) {
		pb_stack *s = talloc(sizeof(*s));

		PB(stack__init)(s);
		s->location_indices = talloc(16 * sizeof(int32_t));
		for (int j = 0; m->stacks[i][j]; j++)
			s->location_indices[s->n_location_indices++] =
			    ob_location(&b, m->stacks[i][j]);
		d->stack_table[d->n_stack_table++] = s;
	}
	for (int i = 0; i < m->nlinks; i++) {
		pb_link *l = talloc(sizeof(*l));

		PB(link__init)(l);
		l->trace_id.len = 16;
		l->trace_id.data = talloc(16);
		hex_to(m->links[i][0], l->trace_id.data, 16);
		l->span_id.len = 8;
		l->span_id.data = talloc(8);
		hex_to(m->links[i][1], l->span_id.data, 8);
		d->link_table[d->n_link_table++] = l;
	}

	pd->resource_profiles = talloc(m->nprocs * sizeof(pb_rp *));
	for (int i = 0; i < m->nprocs; i++) {
		const struct t_proc *tp = &m->procs[i];
		pb_rp *rp = talloc(sizeof(*rp));
		pb_sp *sp = talloc(sizeof(*sp));
		pb_profile *p = talloc(sizeof(*p));
		pb_resource *res = talloc(sizeof(*res));

		PB(resource_profiles__init)(rp);
		PB(scope_profiles__init)(sp);
		PB(profile__init)(p);
		opentelemetry__proto__resource__v1__resource__init(res);
		res->attributes = talloc(3 * sizeof(pb_kv *));
		if (tp->service)
			res->attributes[res->n_attributes++] =
			    kv("service.name", any_str(tp->service));
		res->attributes[res->n_attributes++] = kv("process.pid", any_int(tp->pid));
		res->attributes[res->n_attributes++] =
		    kv("process.executable.name", any_str(tp->exe));
		rp->resource = res;
		rp->scope_profiles = talloc(sizeof(pb_sp *));
		rp->scope_profiles[rp->n_scope_profiles++] = sp;
		sp->profiles = talloc(sizeof(pb_profile *));
		sp->profiles[sp->n_profiles++] = p;
		p->sample_type =
		    vt(&b, tp->type ? tp->type : "samples", tp->unit ? tp->unit : "count");
		p->period_type = vt(&b, "cpu", "nanoseconds");
		p->period = PERIOD;
		p->time_unix_nano = T0;
		p->duration_nano = 10000 * MS;
		p->samples = talloc(tp->nsamples * sizeof(pb_sample *));
		for (int j = 0; j < tp->nsamples; j++) {
			const struct t_sample *ts = &tp->samples[j];
			pb_sample *s = talloc(sizeof(*s));

			PB(sample__init)(s);
			s->stack_index = ts->stack + 1;
			s->link_index = ts->link;
			s->attribute_indices = talloc(3 * sizeof(int32_t));
			if (ts->tid)
				s->attribute_indices[s->n_attribute_indices++] =
				    ob_attr(&b, "thread.id", any_int(ts->tid));
			if (ts->tname)
				s->attribute_indices[s->n_attribute_indices++] =
				    ob_attr(&b, "thread.name", any_str(ts->tname));
			if (ts->ctx_key)
				s->attribute_indices[s->n_attribute_indices++] =
				    ob_attr(&b, ts->ctx_key, any_str(ts->ctx_val));
			if (ts->nts) {
				s->timestamps_unix_nano = talloc(ts->nts * sizeof(uint64_t));
				memcpy(s->timestamps_unix_nano, ts->ts, ts->nts * sizeof(uint64_t));
				s->n_timestamps_unix_nano = (size_t)ts->nts;
			} else {
				s->values = talloc(sizeof(int64_t));
				s->values[0] = ts->value;
				s->n_values = 1;
			}
			p->samples[p->n_samples++] = s;
		}
		pd->resource_profiles[pd->n_resource_profiles++] = rp;
	}
	return pd;
}

static uint8_t *pack_otlp(const struct t_msg *m, size_t *len)
{
	pb_data *pd = build_otlp(m);
	uint8_t *buf;

	*len = PB(profiles_data__get_packed_size)(pd);
	buf = talloc(*len);
	PB(profiles_data__pack)(pd, buf);
	return buf;
}

/* --- OTLP/JSON, as pdata writes it: camelCase, 64-bit integers as strings, ids in hex ---- */

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void jhex(FILE *f, const ProtobufCBinaryData *b)
{
	fputc('"', f);
	for (size_t i = 0; i < b->len; i++)
		fprintf(f, "%02x", b->data[i]);
	fputc('"', f);
}

static void jints(FILE *f, const char *key, const int32_t *a, size_t n)
{
	if (!n)
		return;
	fprintf(f, ",\"%s\":[", key);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? "," : "", a[i]);
	fputc(']', f);
}

static void jany(FILE *f, const pb_any *a)
{
	if (a->value_case == ANY(STRING_VALUE)) {
		fputs("{\"stringValue\":", f);
		jstr(f, a->string_value);
		fputc('}', f);
	} else {
		fprintf(f, "{\"intValue\":\"%lld\"}", (long long)a->int_value);
	}
}

static char *json_otlp(const struct t_msg *m)
{
	pb_data *pd = build_otlp(m);
	pb_dict *d = pd->dictionary;
	char *out;
	size_t len;
	FILE *f = open_memstream(&out, &len);

	fputs("{\"resourceProfiles\":[", f);
	for (size_t i = 0; i < pd->n_resource_profiles; i++) {
		pb_rp *rp = pd->resource_profiles[i];
		pb_profile *p = rp->scope_profiles[0]->profiles[0];

		fputs(i ? ",{\"resource\":{\"attributes\":[" : "{\"resource\":{\"attributes\":[",
		      f);
		for (size_t j = 0; j < rp->resource->n_attributes; j++) {
			fprintf(f, "%s{\"key\":", j ? "," : "");
			jstr(f, rp->resource->attributes[j]->key);
			fputs(",\"value\":", f);
			jany(f, rp->resource->attributes[j]->value);
			fputc('}', f);
		}
		fprintf(f,
			"]},\"scopeProfiles\":[{\"scope\":{\"name\":\"spanprof\"},\"profiles\":[{"
			"\"sampleType\":{\"typeStrindex\":%d,\"unitStrindex\":%d},\"samples\":[",
			p->sample_type->type_strindex, p->sample_type->unit_strindex);
		for (size_t j = 0; j < p->n_samples; j++) {
			pb_sample *s = p->samples[j];

			fprintf(f, "%s{\"stackIndex\":%d", j ? "," : "", s->stack_index);
			jints(f, "attributeIndices", s->attribute_indices, s->n_attribute_indices);
			if (s->link_index)
				fprintf(f, ",\"linkIndex\":%d", s->link_index);
			if (s->n_values)
				fprintf(f, ",\"values\":[\"%lld\"]", (long long)s->values[0]);
			if (s->n_timestamps_unix_nano) {
				fputs(",\"timestampsUnixNano\":[", f);
				for (size_t k = 0; k < s->n_timestamps_unix_nano; k++)
					fprintf(f, "%s\"%llu\"", k ? "," : "",
						(unsigned long long)s->timestamps_unix_nano[k]);
				fputc(']', f);
			}
			fputc('}', f);
		}
		fprintf(f,
			"],\"timeUnixNano\":\"%llu\",\"durationNano\":\"%llu\",\"periodType\":{"
			"\"typeStrindex\":%d,\"unitStrindex\":%d},\"period\":\"%lld\","
			"\"profileId\":\"0102030405060708090a0b0c0d0e0f10\"}]}]}",
			(unsigned long long)p->time_unix_nano, (unsigned long long)p->duration_nano,
			p->period_type->type_strindex, p->period_type->unit_strindex,
			(long long)p->period);
	}
	fputs("],\"dictionary\":{\"mappingTable\":[{}", f);
	for (size_t i = 1; i < d->n_mapping_table; i++)
		fprintf(
		    f,
		    ",{\"memoryStart\":\"%llu\",\"memoryLimit\":\"%llu\",\"filenameStrindex\":%d}",
		    (unsigned long long)d->mapping_table[i]->memory_start,
		    (unsigned long long)d->mapping_table[i]->memory_limit,
		    d->mapping_table[i]->filename_strindex);
	fputs("],\"locationTable\":[{}", f);
	for (size_t i = 1; i < d->n_location_table; i++) {
		pb_location *l = d->location_table[i];

		fprintf(f, ",{\"address\":\"%llu\"", (unsigned long long)l->address);
		if (l->mapping_index)
			fprintf(f, ",\"mappingIndex\":%d", l->mapping_index);
		if (l->n_lines) {
			fputs(",\"lines\":[", f);
			for (size_t j = 0; j < l->n_lines; j++)
				fprintf(f, "%s{\"functionIndex\":%d,\"line\":\"%lld\"}",
					j ? "," : "", l->lines[j]->function_index,
					(long long)l->lines[j]->line);
			fputc(']', f);
		}
		jints(f, "attributeIndices", l->attribute_indices, l->n_attribute_indices);
		fputc('}', f);
	}
	fputs("],\"functionTable\":[{}", f);
	for (size_t i = 1; i < d->n_function_table; i++)
		fprintf(
		    f, ",{\"nameStrindex\":%d,\"systemNameStrindex\":%d,\"filenameStrindex\":%d}",
		    d->function_table[i]->name_strindex, d->function_table[i]->system_name_strindex,
		    d->function_table[i]->filename_strindex);
	fputs("],\"linkTable\":[{}", f);
	for (size_t i = 1; i < d->n_link_table; i++) {
		fputs(",{\"traceId\":", f);
		jhex(f, &d->link_table[i]->trace_id);
		fputs(",\"spanId\":", f);
		jhex(f, &d->link_table[i]->span_id);
		fputc('}', f);
	}
	fputs("],\"stringTable\":[", f);
	for (size_t i = 0; i < d->n_string_table; i++) {
		if (i)
			fputc(',', f);
		jstr(f, d->string_table[i]);
	}
	fputs("],\"attributeTable\":[{}", f);
	for (size_t i = 1; i < d->n_attribute_table; i++) {
		fprintf(f, ",{\"keyStrindex\":%d,\"value\":", d->attribute_table[i]->key_strindex);
		jany(f, d->attribute_table[i]->value);
		fputc('}', f);
	}
	fputs("],\"stackTable\":[{}", f);
	for (size_t i = 1; i < d->n_stack_table; i++) {
		fputs(",{", f);
		jints(f, "locationIndices", d->stack_table[i]->location_indices,
		      d->stack_table[i]->n_location_indices);
		fputc('}', f);
	}
	fputs("]}}", f);
	fclose(f);
	/* jints writes a leading comma: the stack objects start with one. */
	for (char *p = strstr(out, "{,\"location"); p; p = strstr(p, "{,\"location"))
		memmove(p + 1, p + 2, strlen(p + 2) + 1);
	return out;
}

/* --- pprof, as exporter/output/pprof.c writes it -------------------------------------------------
 */

typedef Perftools__Profiles__Profile pp_profile;

struct pb_pp {
	pp_profile *p;
};

static int64_t pp_str(pp_profile *p, const char *s)
{
	for (size_t i = 0; i < p->n_string_table; i++)
		if (!strcmp(p->string_table[i], s))
			return (int64_t)i;
	p->string_table[p->n_string_table] = tstrdup(s);
	return (int64_t)p->n_string_table++;
}

static uint64_t pp_function(pp_profile *p, const char *name)
{
	int64_t n = pp_str(p, name);
	char file[64];
	Perftools__Profiles__Function *f;

	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->name == n)
			return p->function[i]->id;
	f = talloc(sizeof(*f));
	perftools__profiles__function__init(f);
	f->id = p->n_function + 1;
	f->name = n;
	f->system_name = n;
	snprintf(file, sizeof(file), "src/%s.c", name);
	f->filename = pp_str(p, file);
	p->function[p->n_function++] = f;
	return f->id;
}

static Perftools__Profiles__Line *pp_line(pp_profile *p, const char *fn)
{
	Perftools__Profiles__Line *l = talloc(sizeof(*l));

	perftools__profiles__line__init(l);
	l->function_id = pp_function(p, fn);
	l->line = (int64_t)strlen(fn) * 10;
	return l;
}

static uint64_t pp_location(pp_profile *p, const char *name)
{
	Perftools__Profiles__Location *l = talloc(sizeof(*l));
	const char *at = strchr(name, '@');
	size_t n = strlen(name);
	char fn[64];

	perftools__profiles__location__init(l);
	l->id = p->n_location + 1;
	l->line = talloc(2 * sizeof(void *));
	if (n > 3 && !strcmp(name + n - 3, "[k]")) {
		snprintf(fn, sizeof(fn), "%.*s", (int)(n - 3), name);
		l->address = 0xffffffff81000000ull + n; /* kernel: no mapping */
		l->line[l->n_line++] = pp_line(p, fn);
	} else {
		l->mapping_id = 1;
		l->address = 0x1234;
		if (at) {
			snprintf(fn, sizeof(fn), "%.*s", (int)(at - name), name);
			l->line[l->n_line++] = pp_line(p, fn);
			l->line[l->n_line++] = pp_line(p, at + 1);
		} else if (strcmp(name, "?")) {
			l->line[l->n_line++] = pp_line(p, name);
		}
	}
	p->location[p->n_location++] = l;
	return l->id;
}

static Perftools__Profiles__Label *label(pp_profile *p, const char *k, const char *s, int64_t num)
{
	Perftools__Profiles__Label *l = talloc(sizeof(*l));

	perftools__profiles__label__init(l);
	l->key = pp_str(p, k);
	if (s)
		l->str = pp_str(p, s);
	else
		l->num = num;
	return l;
}

/* The pprof of @m: values [count, count * period], labels pid, tid, comm, process, trace_id,
 * span_id and the thread context. */
static uint8_t *pack_pprof(const struct t_msg *m, size_t *len)
{
	pp_profile *p = talloc(sizeof(*p));
	Perftools__Profiles__Mapping *mp = talloc(sizeof(*mp));
	Perftools__Profiles__ValueType *vts = talloc(3 * sizeof(*vts));
	uint64_t locs[8][16];
	int nloc[8];
	uint8_t *buf;

	perftools__profiles__profile__init(p);
	p->string_table = talloc(256 * sizeof(char *));
	p->function = talloc(64 * sizeof(void *));
	p->location = talloc(64 * sizeof(void *));
	p->mapping = talloc(sizeof(void *));
	p->sample = talloc(64 * sizeof(void *));
	p->sample_type = talloc(2 * sizeof(void *));
	pp_str(p, "");
	for (int i = 0; i < 3; i++)
		perftools__profiles__value_type__init(&vts[i]);
	vts[0].type = pp_str(p, "samples");
	vts[0].unit = pp_str(p, "count");
	vts[1].type = pp_str(p, "cpu");
	vts[1].unit = pp_str(p, "nanoseconds");
	vts[2] = vts[1];
	p->sample_type[0] = &vts[0];
	p->sample_type[1] = &vts[1];
	p->n_sample_type = 2;
	p->period_type = &vts[2];
	p->period = PERIOD;
	perftools__profiles__mapping__init(mp);
	mp->id = 1;
	mp->memory_start = 0x1000;
	mp->memory_limit = 0x9000;
	mp->filename = pp_str(p, "/usr/bin/app");
	p->mapping[p->n_mapping++] = mp;
	for (int i = 0; i < m->nstacks; i++) {
		nloc[i] = 0;
		for (int j = 0; m->stacks[i][j]; j++)
			locs[i][nloc[i]++] = pp_location(p, m->stacks[i][j]);
	}
	for (int i = 0; i < m->nprocs; i++) {
		const struct t_proc *tp = &m->procs[i];

		for (int j = 0; j < tp->nsamples; j++) {
			const struct t_sample *ts = &tp->samples[j];
			Perftools__Profiles__Sample *s = talloc(sizeof(*s));
			int64_t count = ts->nts ? ts->nts : ts->value;

			perftools__profiles__sample__init(s);
			s->location_id = locs[ts->stack];
			s->n_location_id = (size_t)nloc[ts->stack];
			s->value = talloc(2 * sizeof(int64_t));
			s->value[0] = count;
			s->value[1] = count * PERIOD;
			s->n_value = 2;
			s->label = talloc(8 * sizeof(void *));
			s->label[s->n_label++] = label(p, "pid", NULL, tp->pid);
			if (ts->tid)
				s->label[s->n_label++] = label(p, "tid", NULL, ts->tid);
			if (ts->tname)
				s->label[s->n_label++] = label(p, "comm", ts->tname, 0);
			s->label[s->n_label++] = label(p, "process", tp->exe, 0);
			if (ts->link) {
				s->label[s->n_label++] =
				    label(p, "trace_id", m->links[ts->link - 1][0], 0);
				s->label[s->n_label++] =
				    label(p, "span_id", m->links[ts->link - 1][1], 0);
			}
			if (ts->ctx_key)
				s->label[s->n_label++] = label(p, ts->ctx_key, ts->ctx_val, 0);
			p->sample[p->n_sample++] = s;
		}
	}
	*len = perftools__profiles__profile__get_packed_size(p);
	buf = talloc(*len);
	perftools__profiles__profile__pack(p, buf);
	return buf;
}

/* --- files -------------------------------------------------------------------------------- */

static char tmpdir[] = "/tmp/spanprof-test-view-XXXXXX";

static const char *path_of(const char *name)
{
	static char bufs[64][512];
	static int k;
	char *b = bufs[k++ % 64];

	snprintf(b, 512, "%s/%s", tmpdir, name);
	return b;
}

static const char *write_file(const char *name, const void *data, size_t len)
{
	const char *p = path_of(name);
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	return p;
}

static const char *write_gz(const char *name, const void *data, size_t len)
{
	const char *p = path_of(name);
	gzFile g = gzopen(p, "wb");

	assert_non_null(g);
	assert_int_equal(gzwrite(g, data, (unsigned)len), (int)len);
	gzclose(g);
	return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* Length-prefixed ProfilesData messages (the Collector file exporter's format: proto). */
static const char *write_stream(const char *name, const struct t_msg *const *msgs, int n)
{
	const char *p = path_of(name);
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	for (int i = 0; i < n; i++) {
		size_t len;
		uint8_t *b = pack_otlp(msgs[i], &len);
		uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
				  (uint8_t)len};

		fwrite(hdr, 1, 4, f);
		fwrite(b, 1, len, f);
	}
	fclose(f);
	return p;
}

static const char *write_jsonl(const char *name, const struct t_msg *const *msgs, int n)
{
	const char *p = path_of(name);
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	for (int i = 0; i < n; i++) {
		char *j = json_otlp(msgs[i]);

		fprintf(f, "%s\n", j);
		free(j);
	}
	fclose(f);
	return p;
}

/* --- the document, parsed back ------------------------------------------------------------ */

static json_object *jget(json_object *o, const char *k)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("the document has no \"%s\"", k);
	return v;
}

/* Member @k of @o, or NULL (optional keys). */
static json_object *jget_opt(json_object *o, const char *k)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static size_t alen(json_object *a)
{
	assert_true(json_object_is_type(a, json_type_array));
	return json_object_array_length(a);
}

static int64_t aint(json_object *a, size_t i)
{
	return json_object_get_int64(json_object_array_get_idx(a, i));
}

static const char *sget(json_object *doc, int64_t i)
{
	json_object *s = jget(doc, "strings");

	assert_true(i >= 0 && (size_t)i < alen(s));
	return json_object_get_string(json_object_array_get_idx(s, i));
}

/* Every column of a table as long as the first; every value an index in @limit (or -1). */
static size_t check_columns(json_object *t, const char *const *cols, size_t ncols)
{
	size_t n = alen(jget(t, cols[0]));

	for (size_t i = 1; i < ncols; i++)
		assert_int_equal(alen(jget(t, cols[i])), n);
	return n;
}

static void check_range(json_object *a, int64_t lo, int64_t hi)
{
	for (size_t i = 0; i < alen(a); i++) {
		int64_t v = aint(a, i);

		if (v < lo || v >= hi)
			fail_msg("index %lld at %zu outside [%lld, %lld)", (long long)v, i,
				 (long long)lo, (long long)hi);
	}
}

/* docs/view-format.md: the shape, column lengths and every index. */
static void check_doc(json_object *doc)
{
	static const char *const fcols[] = {"name", "file", "line", "module", "kind", "type"};
	static const char *const pcols[] = {"pid", "name", "service"};
	static const char *const tcols[] = {"process", "tid", "name"};
	static const char *const scols[] = {"trace_id", "span_id", "attrs", "process"};
	static const char *const rcols[] = {"type", "stack", "thread", "span", "bucket", "value"};
	json_object *fr = jget(doc, "frames"), *pr = jget(doc, "processes");
	json_object *th = jget(doc, "threads"), *sp = jget(doc, "spans"), *rw = jget(doc, "rows");
	json_object *stacks = jget(doc, "stacks"), *tm = jget(doc, "time");
	size_t nstr = alen(jget(doc, "strings")), nfr, np, nt, ns, nstacks = alen(stacks);
	int64_t nb = json_object_get_int64(jget(tm, "buckets"));

	assert_string_equal(json_object_get_string(jget(doc, "format")), "spanprof-view/1");
	assert_string_equal(sget(doc, 0), "");
	nfr = check_columns(fr, fcols, 6);
	check_range(jget(fr, "name"), 1, (int64_t)nstr);
	check_range(jget(fr, "file"), 0, (int64_t)nstr);
	check_range(jget(fr, "module"), 0, (int64_t)nstr);
	check_range(jget(fr, "kind"), 0, VIEW_FRAME_CPYTHON + 1);
	check_range(jget(fr, "type"), 0, (int64_t)nstr);
	for (size_t i = 0; i < nstacks; i++)
		check_range(json_object_array_get_idx(stacks, i), 0, (int64_t)nfr);
	check_range(jget(doc, "services"), 0, (int64_t)nstr);
	np = check_columns(pr, pcols, 3);
	check_range(jget(pr, "name"), 0, (int64_t)nstr);
	check_range(jget(pr, "service"), 0, (int64_t)alen(jget(doc, "services")));
	nt = check_columns(th, tcols, 3);
	check_range(jget(th, "process"), 0, (int64_t)np);
	check_range(jget(th, "name"), 0, (int64_t)nstr);
	ns = check_columns(sp, scols, 4);
	check_range(jget(sp, "process"), -1, (int64_t)np);
	for (size_t i = 0; i < ns; i++) {
		assert_int_equal(strlen(json_object_get_string(
				     json_object_array_get_idx(jget(sp, "trace_id"), i))),
				 32);
		assert_int_equal(strlen(json_object_get_string(
				     json_object_array_get_idx(jget(sp, "span_id"), i))),
				 16);
		assert_true(json_object_is_type(json_object_array_get_idx(jget(sp, "attrs"), i),
						json_type_object));
	}
	check_columns(rw, rcols, 6);
	check_range(jget(rw, "type"), 0, (int64_t)alen(jget(doc, "profile_types")));
	check_range(jget(rw, "stack"), 0, (int64_t)nstacks);
	check_range(jget(rw, "thread"), -1, (int64_t)nt);
	check_range(jget(rw, "span"), -1, (int64_t)ns);
	check_range(jget(rw, "bucket"), -1, nb);
	assert_true(nb >= 0 && nb <= VIEW_MAX_BUCKETS);
	if (nb) {
		assert_true(json_object_get_int64(jget(tm, "bucket_ns")) >= 1000000);
		assert_int_equal(json_object_get_int64(jget(tm, "bucket_ns")) % 1000000, 0);
	}
	jget(doc, "initial");
	jget(doc, "inputs");
	jget(doc, "title");
	jget(doc, "generated_unix_ns");
}

/* Reads @paths into a finished document, its JSON parsed back and checked. */
static json_object *load(struct view_doc **out, const char *const *paths, int n)
{
	struct view_doc *d = view_doc__new();
	json_object *doc;
	char *json;
	size_t len;

	assert_non_null(d);
	for (int i = 0; i < n; i++)
		assert_true(view_read__path(d, paths[i]) >= 0);
	assert_int_equal(view_doc__finish(d), 0);
	assert_int_equal(view_doc__json(d, &json, &len), 0);
	assert_int_equal(strlen(json), len);
	doc = json_tokener_parse(json);
	if (!doc)
		fail_msg("the document is not valid JSON:\n%.2000s", json);
	free(json);
	check_doc(doc);
	if (out)
		*out = d;
	else
		view_doc__free(d);
	return doc;
}

static json_object *load1(const char *path)
{
	return load(NULL, &path, 1);
}

static json_object *input(json_object *doc, size_t i)
{
	return json_object_array_get_idx(jget(doc, "inputs"), i);
}

static const char *input_error(json_object *doc, size_t i)
{
	json_object *e = jget(input(doc, i), "error");

	return json_object_is_type(e, json_type_null) ? NULL : json_object_get_string(e);
}

static void no_input_error(json_object *doc, size_t i)
{
	const char *e = input_error(doc, i);

	if (e)
		fail_msg("input %zu: unexpected error: %s", i, e);
}

static int64_t input_samples(json_object *doc, size_t i)
{
	return json_object_get_int64(jget(input(doc, i), "samples"));
}

/* "a;b;c" (root first) of stack @i. */
static void stack_text(json_object *doc, int64_t i, char *out, size_t n)
{
	json_object *st = json_object_array_get_idx(jget(doc, "stacks"), i);
	json_object *names = jget(jget(doc, "frames"), "name");
	size_t o = 0;

	out[0] = '\0';
	for (size_t k = 0; k < alen(st); k++)
		o += (size_t)snprintf(out + o, n - o, "%s%s", k ? ";" : "",
				      sget(doc, aint(names, aint(st, k))));
}

/*
 * The rows as sorted text lines "type|stack|service/pid/tid/thread|span|bucket value",
 * with equal keys summed: what the page would show, independent of table order.
 */
static char *canon(json_object *doc, bool with_bucket)
{
	json_object *rw = jget(doc, "rows"), *th = jget(doc, "threads"),
		    *pr = jget(doc, "processes");
	json_object *sp = jget(doc, "spans"), *types = jget(doc, "profile_types");
	size_t n = alen(jget(rw, "type"));
	char **lines = calloc(n + 1, sizeof(char *));
	int64_t *vals = calloc(n + 1, sizeof(int64_t));
	size_t nl = 0, cap = 1 << 16, o = 0;
	char *out = malloc(cap);

	for (size_t i = 0; i < n; i++) {
		char st[1024], thr[256] = "-", spn[64] = "-", key[1600];
		int64_t t = aint(jget(rw, "thread"), i), s = aint(jget(rw, "span"), i);
		size_t j;

		stack_text(doc, aint(jget(rw, "stack"), i), st, sizeof(st));
		if (t >= 0) {
			int64_t p = aint(jget(th, "process"), (size_t)t);

			snprintf(thr, sizeof(thr), "%s/%lld/%lld/%s",
				 sget(doc, aint(jget(doc, "services"),
						(size_t)aint(jget(pr, "service"), (size_t)p))),
				 (long long)aint(jget(pr, "pid"), (size_t)p),
				 (long long)aint(jget(th, "tid"), (size_t)t),
				 sget(doc, aint(jget(th, "name"), (size_t)t)));
		}
		if (s >= 0)
			snprintf(spn, sizeof(spn), "%s",
				 json_object_get_string(
				     json_object_array_get_idx(jget(sp, "span_id"), (size_t)s)));
		snprintf(key, sizeof(key), "%s|%s|%s|%s|%lld",
			 json_object_get_string(jget(
			     json_object_array_get_idx(types, (size_t)aint(jget(rw, "type"), i)),
			     "name")),
			 st, thr, spn, with_bucket ? (long long)aint(jget(rw, "bucket"), i) : 0ll);
		for (j = 0; j < nl && strcmp(lines[j], key); j++)
			;
		if (j == nl)
			lines[nl++] = strdup(key);
		vals[j] += aint(jget(rw, "value"), i);
	}
	for (size_t i = 0; i < nl; i++)
		for (size_t j = i + 1; j < nl; j++)
			if (strcmp(lines[j], lines[i]) < 0) {
				char *t = lines[i];
				int64_t v = vals[i];

				lines[i] = lines[j], vals[i] = vals[j];
				lines[j] = t, vals[j] = v;
			}
	for (size_t i = 0; i < nl; i++) {
		o += (size_t)snprintf(out + o, cap - o, "%s %lld\n", lines[i], (long long)vals[i]);
		free(lines[i]);
	}
	free(lines);
	free(vals);
	return out;
}

/* --- the scenarios ------------------------------------------------------------------------ */

#define TRACE1 "4bf92f3577b34da6a3ce929d0e0e4736"
#define SPAN1 "00f067aa0ba902b7"
#define TRACE2 "5bf92f3577b34da6a3ce929d0e0e4736"
#define SPAN2 "10f067aa0ba902b7"

static const struct t_sample app_samples[] = {
    {.stack = 0, .tid = 101, .tname = "worker", .nts = 3, .ts = {T0, T0 + 2 * MS, T0 + 900 * MS}},
    {.stack = 1,
     .tid = 101,
     .tname = "worker",
     .link = 1,
     .nts = 2,
     .ts = {T0 + 1000 * MS, T0 + 1001 * MS},
     .ctx_key = "http.route",
     .ctx_val = "/checkout"},
    {.stack = 2, .tid = 102, .tname = "io", .nts = 1, .ts = {T0 + 1999 * MS}},
    {.stack = 0, .tid = 102, .tname = "io", .link = 2, .nts = 1, .ts = {T0 + 500 * MS}},
};

static const struct t_proc app_proc = {
    .service = "checkout", .exe = "app", .pid = 4242, .nsamples = 4, .samples = app_samples};

static const struct t_msg msg_app = {
    .nstacks = 3,
    .stacks = {st_main, st_kern, st_inl},
    .nlinks = 2,
    .links = {{TRACE1, SPAN1}, {TRACE2, SPAN2}},
    .nprocs = 1,
    .procs = &app_proc,
};

static const struct t_sample db_samples[] = {
    {.stack = 0, .tid = 7, .tname = "db", .nts = 2, .ts = {T0 + 100 * MS, T0 + 150 * MS}},
    {.stack = 1, .tid = 7, .tname = "db", .nts = 1, .ts = {T0 + 1500 * MS}},
};

static const struct t_proc two_procs[] = {
    {.service = "checkout", .exe = "app", .pid = 4242, .nsamples = 4, .samples = app_samples},
    {.service = "db", .exe = "postgres", .pid = 77, .nsamples = 2, .samples = db_samples},
};

static const struct t_msg msg_two = {
    .nstacks = 3,
    .stacks = {st_main, st_kern, st_inl},
    .nlinks = 2,
    .links = {{TRACE1, SPAN1}, {TRACE2, SPAN2}},
    .nprocs = 2,
    .procs = two_procs,
};

static int setup(void **state)
{
	heap_used = 0;
	return 0;
}

/* --- tests -------------------------------------------------------------------------------- */

static int64_t find_frame(json_object *doc, const char *name)
{
	json_object *names = jget(jget(doc, "frames"), "name");

	for (size_t i = 0; i < alen(names); i++)
		if (!strcmp(sget(doc, aint(names, i)), name))
			return (int64_t)i;
	return -1;
}

static void test_otlp_proto(void **state)
{
	size_t len;
	uint8_t *buf = pack_otlp(&msg_app, &len);
	const char *p = write_file("one.binpb", buf, len);
	json_object *doc = load1(p), *fr, *types;
	char *c;
	int64_t f;

	assert_string_equal(json_object_get_string(jget(input(doc, 0), "format")), "otlp-proto");
	no_input_error(doc, 0);
	assert_int_equal(input_samples(doc, 0), 7);
	types = jget(doc, "profile_types");
	assert_int_equal(alen(types), 1);
	assert_string_equal(
	    json_object_get_string(jget(json_object_array_get_idx(types, 0), "name")), "cpu");
	assert_int_equal(json_object_get_int64(jget(json_object_array_get_idx(types, 0), "period")),
			 PERIOD);
	/* Frames: file, line, module, kind; unsymbolized and inlined ones. */
	fr = jget(doc, "frames");
	f = find_frame(doc, "main");
	assert_true(f >= 0);
	assert_string_equal(sget(doc, aint(jget(fr, "file"), (size_t)f)), "src/main.c");
	assert_int_equal(aint(jget(fr, "line"), (size_t)f), 40);
	assert_string_equal(sget(doc, aint(jget(fr, "module"), (size_t)f)), "/usr/bin/app");
	assert_int_equal(aint(jget(fr, "kind"), (size_t)f), VIEW_FRAME_NATIVE);
	assert_string_equal(sget(doc, aint(jget(fr, "type"), (size_t)f)), "native");
	f = find_frame(doc, "do_syscall_64");
	assert_int_equal(aint(jget(fr, "kind"), (size_t)f), VIEW_FRAME_KERNEL);
	assert_string_equal(sget(doc, aint(jget(fr, "type"), (size_t)f)), "kernel");
	assert_int_equal(aint(jget(fr, "module"), (size_t)f), 0);
	assert_true(find_frame(doc, "[app+0x234]") >= 0);

	c = canon(doc, false);
	/* Root first; the inline chain as outer then inner. */
	assert_non_null(strstr(c, "cpu|main;a;b;c|checkout/4242/101/worker|-|0 3\n"));
	assert_non_null(
	    strstr(c, "cpu|main;a;b;write;do_syscall_64|checkout/4242/101/worker|" SPAN1 "|0 2\n"));
	assert_non_null(strstr(c, "cpu|main;[app+0x234];mid;leaf|checkout/4242/102/io|-|0 1\n"));
	assert_non_null(strstr(c, "cpu|main;a;b;c|checkout/4242/102/io|" SPAN2 "|0 1\n"));
	free(c);
	json_object_put(doc);
}

/* A Go frame (profile.frame.type go) keeps its kind in the page's document. */
static void test_go_frames(void **state)
{
	static const char *const st_go[] = {"main.handler[go]", "main", NULL};
	static const struct t_sample s = {.stack = 0, .tid = 5, .tname = "gosvc", .value = 3};
	static const struct t_proc proc = {
	    .service = "gosvc", .exe = "gosvc", .pid = 77, .nsamples = 1, .samples = &s};
	static const struct t_msg m = {
	    .nstacks = 1, .stacks = {st_go}, .nprocs = 1, .procs = &proc};
	size_t len;
	uint8_t *buf = pack_otlp(&m, &len);
	json_object *doc = load1(write_file("go.binpb", buf, len)), *fr = jget(doc, "frames");

	no_input_error(doc, 0);
	assert_int_equal(aint(jget(fr, "kind"), (size_t)find_frame(doc, "main.handler")),
			 VIEW_FRAME_GO);
	assert_int_equal(aint(jget(fr, "kind"), (size_t)find_frame(doc, "main")),
			 VIEW_FRAME_NATIVE);
	/* The frame type itself, for the page's colours (docs/view-format.md, frames.type). */
	assert_string_equal(
	    sget(doc, aint(jget(fr, "type"), (size_t)find_frame(doc, "main.handler"))), "go");
	assert_string_equal(sget(doc, aint(jget(fr, "type"), (size_t)find_frame(doc, "main"))),
			    "native");
	json_object_put(doc);
}

/* A CPython frame (profile.frame.type cpython) keeps its kind: the page gives it its colour. */
static void test_python_frames(void **state)
{
	static const char *const st_py[] = {"app.Handler.get[py]", "_PyEval_EvalFrameDefault",
					    "main", NULL};
	static const struct t_sample s = {.stack = 0, .tid = 5, .tname = "pysvc", .value = 3};
	static const struct t_proc proc = {
	    .service = "pysvc", .exe = "python3", .pid = 78, .nsamples = 1, .samples = &s};
	static const struct t_msg m = {
	    .nstacks = 1, .stacks = {st_py}, .nprocs = 1, .procs = &proc};
	size_t len;
	uint8_t *buf = pack_otlp(&m, &len);
	json_object *doc = load1(write_file("py.binpb", buf, len)), *fr = jget(doc, "frames");

	no_input_error(doc, 0);
	assert_int_equal(aint(jget(fr, "kind"), (size_t)find_frame(doc, "app.Handler.get")),
			 VIEW_FRAME_CPYTHON);
	assert_int_equal(aint(jget(fr, "kind"), (size_t)find_frame(doc, "main")),
			 VIEW_FRAME_NATIVE);
	json_object_put(doc);
}

static void test_formats_agree(void **state)
{
	const struct t_msg *msgs[] = {&msg_app, &msg_two};
	size_t len;
	uint8_t *b1, *b2;
	const char *bin[2], *gz, *stream, *jsonl, *pprof;
	json_object *d_bin, *d_gz, *d_stream, *d_json, *d_pprof;
	char *c_bin, *c_gz, *c_stream, *c_json, *c_pprof, *c_bin_nob;

	b1 = pack_otlp(&msg_app, &len);
	bin[0] = write_file("a.binpb", b1, len);
	gz = write_gz("a.binpb.gz", b1, len);
	b2 = pack_otlp(&msg_two, &len);
	bin[1] = write_file("b.binpb", b2, len);
	stream = write_stream("stream.binpb", msgs, 2);
	jsonl = write_jsonl("file.jsonl", msgs, 2);

	d_bin = load(NULL, bin, 2);
	no_input_error(d_bin, 0);
	no_input_error(d_bin, 1);
	d_stream = load1(stream);
	d_json = load1(jsonl);
	assert_string_equal(json_object_get_string(jget(input(d_stream, 0), "format")),
			    "otlp-proto-stream");
	assert_string_equal(json_object_get_string(jget(input(d_json, 0), "format")), "otlp-json");
	no_input_error(d_json, 0);
	assert_int_equal(input_samples(d_json, 0), 7 + 10);
	c_bin = canon(d_bin, true);
	c_stream = canon(d_stream, true);
	c_json = canon(d_json, true);
	assert_string_equal(c_stream, c_bin);
	assert_string_equal(c_json, c_bin);
	/* The same process in two inputs: one process, its rows summed. */
	assert_int_equal(alen(jget(jget(d_bin, "processes"), "pid")), 2);
	assert_int_equal(alen(jget(d_bin, "services")), 2);
	assert_non_null(strstr(c_bin, "cpu|main;a;b;c|checkout/4242/101/worker|-|0 4\n"));
	assert_non_null(strstr(c_bin, "cpu|main;a;b;c|checkout/4242/101/worker|-|90 2\n"));

	d_gz = load1(gz);
	c_gz = canon(d_gz, true);
	d_pprof = NULL;
	{
		json_object *d1 = load1(bin[0]);
		char *c1 = canon(d1, true);

		assert_string_equal(c_gz, c1);
		free(c1);
		json_object_put(d1);
	}

	/* pprof has no timestamps: compare without buckets. */
	heap_used = 0;
	b1 = pack_pprof(&msg_app, &len);
	pprof = write_gz("profile.pb.gz", b1, len);
	d_pprof = load1(pprof);
	assert_string_equal(json_object_get_string(jget(input(d_pprof, 0), "format")), "pprof");
	assert_int_equal(json_object_get_int64(jget(jget(d_pprof, "time"), "buckets")), 0);
	c_pprof = canon(d_pprof, false);
	{
		const char *one = bin[0];
		json_object *d1 = load(NULL, &one, 1);

		c_bin_nob = canon(d1, false);
		json_object_put(d1);
	}
	/* pprof has no service name: the service differs, the rest must not. */
	for (char *s = strstr(c_pprof, "unknown_service:app"); s;
	     s = strstr(s, "unknown_service:app"))
		memmove(s, "checkout", 8), memmove(s + 8, s + 19, strlen(s + 19) + 1);
	assert_string_equal(c_pprof, c_bin_nob);

	free(c_bin);
	free(c_gz);
	free(c_stream);
	free(c_json);
	free(c_pprof);
	free(c_bin_nob);
	json_object_put(d_bin);
	json_object_put(d_gz);
	json_object_put(d_stream);
	json_object_put(d_json);
	json_object_put(d_pprof);
}

static void test_pprof(void **state)
{
	size_t len;
	uint8_t *b = pack_pprof(&msg_two, &len);
	const char *plain = write_file("plain.pprof", b, len), *gz = write_gz("p.pb.gz", b, len);
	json_object *doc = load1(gz), *types, *t, *sp;
	char *c;

	assert_int_equal(input_samples(doc, 0), 10);
	types = jget(doc, "profile_types");
	assert_int_equal(alen(types), 1); /* samples/count + cpu/nanoseconds: one "cpu" */
	t = json_object_array_get_idx(types, 0);
	assert_string_equal(json_object_get_string(jget(t, "name")), "cpu");
	assert_string_equal(json_object_get_string(jget(t, "unit")), "count");
	assert_int_equal(aint(jget(jget(doc, "rows"), "bucket"), 0), -1);
	c = canon(doc, false);
	assert_non_null(strstr(c, "cpu|main;a;b;write;do_syscall_64|unknown_service:app/4242/101/"
				  "worker|" SPAN1 "|0 2\n"));
	assert_non_null(strstr(c, "cpu|main;a;b;c|unknown_service:postgres/77/7/db|-|0 2\n"));
	free(c);
	/* Kernel frames are told by their address; the span keeps its context attributes. */
	assert_int_equal(
	    aint(jget(jget(doc, "frames"), "kind"), (size_t)find_frame(doc, "do_syscall_64")),
	    VIEW_FRAME_KERNEL);
	sp = jget(doc, "spans");
	assert_int_equal(alen(jget(sp, "span_id")), 2);
	assert_string_equal(json_object_get_string(jget(
				json_object_array_get_idx(jget(sp, "attrs"), 0), "http.route")),
			    "/checkout");
	json_object_put(doc);

	doc = load1(plain); /* not compressed */
	no_input_error(doc, 0);
	assert_int_equal(input_samples(doc, 0), 10);
	json_object_put(doc);
}

static void test_spans(void **state)
{
	static const struct t_sample s1[] = {
	    {.stack = 0,
	     .tid = 1,
	     .link = 1,
	     .nts = 1,
	     .ts = {T0},
	     .ctx_key = "http.route",
	     .ctx_val = "/a"},
	    {.stack = 0,
	     .tid = 1,
	     .link = 1,
	     .nts = 1,
	     .ts = {T0 + MS},
	     .ctx_key = "user",
	     .ctx_val = "bob"},
	    {.stack = 0, .tid = 1, .link = 2, .nts = 1, .ts = {T0 + 2 * MS}},
	    {.stack = 0,
	     .tid = 1,
	     .link = 3,
	     .nts = 1,
	     .ts = {T0 + 3 * MS},
	     .ctx_key = "x",
	     .ctx_val = "not in a span"},
	};
	static const struct t_sample s2[] = {
	    {.stack = 0, .tid = 2, .link = 2, .nts = 1, .ts = {T0 + 4 * MS}},
	};
	static const struct t_proc procs[] = {
	    {.service = "a", .exe = "a", .pid = 1, .nsamples = 4, .samples = s1},
	    {.service = "b", .exe = "b", .pid = 2, .nsamples = 1, .samples = s2},
	};
	static const struct t_msg m = {
	    .nstacks = 1,
	    .stacks = {st_main},
	    .nlinks = 3,
	    .links = {{TRACE1, SPAN1},
		      {TRACE2, SPAN2},
		      {"00000000000000000000000000000000", "0000000000000000"}},
	    .nprocs = 2,
	    .procs = procs,
	};
	size_t len;
	uint8_t *b = pack_otlp(&m, &len);
	json_object *doc = load1(write_file("spans.binpb", b, len)), *sp, *attrs, *rows;

	sp = jget(doc, "spans");
	assert_int_equal(alen(jget(sp, "trace_id")), 2); /* the all-zero link is no span */
	assert_string_equal(
	    json_object_get_string(json_object_array_get_idx(jget(sp, "trace_id"), 0)), TRACE1);
	assert_string_equal(
	    json_object_get_string(json_object_array_get_idx(jget(sp, "span_id"), 0)), SPAN1);
	attrs = json_object_array_get_idx(jget(sp, "attrs"), 0);
	assert_int_equal(json_object_object_length(attrs), 2);
	assert_string_equal(json_object_get_string(jget(attrs, "http.route")), "/a");
	assert_string_equal(json_object_get_string(jget(attrs, "user")), "bob");
	assert_int_equal(aint(jget(sp, "process"), 0), 0);
	assert_int_equal(aint(jget(sp, "process"), 1), -1); /* seen in two processes */
	assert_int_equal(json_object_object_length(json_object_array_get_idx(jget(sp, "attrs"), 1)),
			 0);
	rows = jget(doc, "rows");
	{
		int nospan = 0;

		for (size_t i = 0; i < alen(jget(rows, "span")); i++)
			nospan += aint(jget(rows, "span"), i) == -1;
		assert_int_equal(nospan, 1);
	}
	json_object_put(doc);
}

static void test_buckets(void **state)
{
	/* 10 s of samples from a non-whole millisecond: 200 buckets of 50 ms. */
	static const struct t_sample s[] = {
	    {.stack = 0,
	     .tid = 1,
	     .nts = 4,
	     .ts = {T0 + 123456, T0 + 49 * MS, T0 + 50 * MS, T0 + 10000 * MS - 1}},
	    {.stack = 0, .tid = 1, .nts = 2, .ts = {T0 + 49 * MS + 1, T0 + 5000 * MS}},
	    {.stack = 0, .tid = 1, .value = 5}, /* no timestamp: bucket -1 */
	};
	static const struct t_proc p = {
	    .service = "s", .exe = "e", .pid = 1, .nsamples = 3, .samples = s};
	static const struct t_msg m = {.nstacks = 1, .stacks = {st_main}, .nprocs = 1, .procs = &p};
	size_t len;
	uint8_t *b = pack_otlp(&m, &len);
	json_object *doc = load1(write_file("buckets.binpb", b, len)), *tm = jget(doc, "time");
	char *c;

	assert_int_equal(json_object_get_int64(jget(tm, "start_unix_ns")), (int64_t)T0);
	assert_int_equal(json_object_get_int64(jget(tm, "bucket_ns")), 50 * MS);
	assert_int_equal(json_object_get_int64(jget(tm, "buckets")), 200);
	c = canon(doc, true);
	assert_string_equal(c, "cpu|main;a;b;c|s/1/1/|-|-1 5\n"
			       "cpu|main;a;b;c|s/1/1/|-|0 3\n"
			       "cpu|main;a;b;c|s/1/1/|-|1 1\n"
			       "cpu|main;a;b;c|s/1/1/|-|100 1\n"
			       "cpu|main;a;b;c|s/1/1/|-|199 1\n");
	free(c);
	json_object_put(doc);

	/* A short range: 1 ms buckets, never more than 200. */
	{
		static const struct t_sample s2[] = {
		    {.stack = 0, .tid = 1, .nts = 2, .ts = {T0 + 500000, T0 + 2 * MS + 10}},
		};
		static const struct t_proc p2 = {
		    .service = "s", .exe = "e", .pid = 1, .nsamples = 1, .samples = s2};
		static const struct t_msg m2 = {
		    .nstacks = 1, .stacks = {st_main}, .nprocs = 1, .procs = &p2};

		b = pack_otlp(&m2, &len);
		doc = load1(write_file("short.binpb", b, len));
		tm = jget(doc, "time");
		assert_int_equal(json_object_get_int64(jget(tm, "bucket_ns")), MS);
		assert_int_equal(json_object_get_int64(jget(tm, "buckets")), 3);
		json_object_put(doc);
	}
}

/* Each cut of a valid file is an error that names the damage; the intact file still loads. */
static void check_cuts(const char *name, const uint8_t *data, size_t len, const char *good)
{
	size_t cuts[] = {1, 3, 7, len / 5, len / 3, len / 2, len * 2 / 3, len - 9, len - 1};

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		const char *paths[2] = {write_file(name, data, cuts[i]), good};
		json_object *doc = load(NULL, paths, 2);
		const char *err = input_error(doc, 0);

		if (!err)
			fail_msg("%s cut at %zu of %zu bytes loaded without an error", name,
				 cuts[i], len);
		assert_true(strlen(err) > 10);
		no_input_error(doc, 1);
		assert_true(input_samples(doc, 1) > 0);
		json_object_put(doc);
	}
}

static void test_truncated(void **state)
{
	const struct t_msg *msgs[] = {&msg_app, &msg_two};
	size_t len, glen;
	uint8_t *b = pack_otlp(&msg_two, &len), *data;
	const char *good = write_file("good.binpb", b, len), *p;
	json_object *doc;
	const char *err;

	check_cuts("cut.binpb", b, len, good);

	p = write_gz("gz.binpb", b, len);
	data = slurp(p, &glen);
	check_cuts("cut-gz.binpb", data, glen, good);
	free(data);

	p = write_stream("s.binpb", msgs, 2);
	data = slurp(p, &glen);
	check_cuts("cut-stream.binpb", data, glen, good);
	/* Cut inside the second message: the first one is kept. */
	p = write_file("s2.binpb", data, glen - 10);
	doc = load1(p);
	err = input_error(doc, 0);
	assert_non_null(err);
	assert_non_null(strstr(err, "message 2"));
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(input_samples(doc, 0), 7);
	json_object_put(doc);
	free(data);

	p = write_jsonl("j.jsonl", msgs, 2);
	data = slurp(p, &glen);
	check_cuts("cut.jsonl", data, glen - 1 /* the last newline */, good);
	p = write_file("j2.jsonl", data, glen - 40);
	doc = load1(p);
	err = input_error(doc, 0);
	assert_non_null(strstr(err, "line 2"));
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(input_samples(doc, 0), 7);
	json_object_put(doc);
	free(data);

	heap_used = 0;
	b = pack_pprof(&msg_two, &len);
	p = write_gz("pp.pb.gz", b, len);
	data = slurp(p, &glen);
	check_cuts("cut.pb.gz", data, glen, good);
	free(data);
}

static void test_corrupt(void **state)
{
	const char *good, *paths[6];
	size_t len;
	uint8_t *b = pack_otlp(&msg_app, &len), garbage[4096];
	json_object *doc;
	unsigned seed = 12345;
	char *j, *bad;

	good = write_file("ok.binpb", b, len);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)((seed = seed * 1103515245 + 12345) >> 16);
	paths[0] = write_file("garbage.binpb", garbage, sizeof(garbage));
	paths[1] = write_file("empty.binpb", "", 0);
	paths[2] = write_file("folded.json", "main;a;b 12\nmain;c 3\n", 21);
	paths[3] = write_file("other.json", "{\"hello\": [1, 2]}\n", 18);
	paths[4] = good;
	paths[5] = path_of("does-not-exist.binpb");
	doc = load(NULL, paths, 6);
	for (int i = 0; i < 6; i++)
		if (i != 4) {
			assert_non_null(input_error(doc, (size_t)i));
			assert_int_equal(input_samples(doc, (size_t)i), 0);
		}
	assert_non_null(strstr(input_error(doc, 1), "empty"));
	assert_non_null(strstr(input_error(doc, 3), "not OTLP"));
	assert_non_null(strstr(input_error(doc, 5), "No such file"));
	no_input_error(doc, 4);
	assert_int_equal(input_samples(doc, 4), 7);
	json_object_put(doc);

	/* Zeros read as a stream of empty messages: not a profile, said so. */
	memset(garbage, 0, sizeof(garbage));
	doc = load1(write_file("zeros.binpb", garbage, sizeof(garbage)));
	assert_non_null(strstr(input_error(doc, 0), "1024 empty messages and nothing else"));
	assert_int_equal(input_samples(doc, 0), 0);
	json_object_put(doc);

	/* A length prefix of 16 MiB (first byte 1, not 0) is still a stream's. */
	doc = load1(write_file("big.binpb", "\x01\x00\x00\x00\x0a\x00", 6));
	assert_string_equal(json_object_get_string(jget(input(doc, 0), "format")),
			    "otlp-proto-stream");
	assert_non_null(strstr(input_error(doc, 0), "16777216 bytes announced"));
	json_object_put(doc);

	/* An index out of range: the message adds nothing, the message before it stays. */
	j = json_otlp(&msg_app);
	bad = malloc(2 * strlen(j) + 8);
	strcpy(bad, j);
	strcat(bad, "\n");
	strcat(bad, j);
	{
		char *si = strstr(bad + strlen(j), "\"stackIndex\":1");

		assert_non_null(si);
		memcpy(si, "\"stackIndex\":9", 14);
	}
	doc = load1(write_file("badindex.jsonl", bad, strlen(bad)));
	assert_non_null(strstr(input_error(doc, 0), "line 2"));
	assert_non_null(strstr(input_error(doc, 0), "stack_table"));
	assert_int_equal(input_samples(doc, 0), 7);
	assert_int_equal(alen(jget(jget(doc, "rows"), "type")), 5);
	json_object_put(doc);
	free(j);
	free(bad);
}

static void test_dirs(void **state)
{
	char dir[600], empty[600];
	size_t len;
	uint8_t *b = pack_otlp(&msg_app, &len);
	const char *paths[1];
	json_object *doc;
	struct view_doc *d;

	snprintf(dir, sizeof(dir), "%s/dir", tmpdir);
	snprintf(empty, sizeof(empty), "%s/empty", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(empty, 0755), 0);
	write_file("dir/profiles-000002.binpb", b, len);
	write_file("dir/profiles-000001.binpb", b, len);
	write_file("dir/profile.folded", "main;a 1\n", 9); /* not an input */
	write_file("dir/notes.txt", "x", 1);
	paths[0] = dir;
	doc = load(&d, paths, 1);
	assert_int_equal(alen(jget(doc, "inputs")), 2);
	assert_non_null(
	    strstr(json_object_get_string(jget(input(doc, 0), "path")), "profiles-000001.binpb"));
	assert_int_equal(view_doc__nsamples(d), 14);
	view_doc__free(d);
	json_object_put(doc);

	paths[0] = empty;
	doc = load(&d, paths, 1);
	assert_non_null(strstr(input_error(doc, 0), "no profiles in this directory"));
	assert_int_equal(view_read__path(d, empty), 0);
	view_doc__free(d);
	json_object_put(doc);
}

static void test_json_variants(void **state)
{
	/* snake_case keys, numbers instead of strings, base64 ids, an ExportProfilesService-
	 * Request pretty-printed over several lines. */
	static const char doc_text[] =
	    "{\n \"resource_profiles\": [{\"resource\": {\"attributes\": [\n"
	    "   {\"key\": \"service.name\", \"value\": {\"stringValue\": \"svc\"}},\n"
	    "   {\"key\": \"process.pid\", \"value\": {\"intValue\": 12}}]},\n"
	    "  \"scope_profiles\": [{\"profiles\": [{\"sample_type\": {\"type_strindex\": 1, "
	    "\"unit_strindex\": 2},\n"
	    "   \"samples\": [{\"stack_index\": 1, \"link_index\": 1, \"values\": [3], "
	    "\"attribute_indices\": [1]}]}]}]}],\n"
	    " \"dictionary\": {\"string_table\": [\"\", \"alloc_space\", \"bytes\", \"f\", "
	    "\"thread.id\"],\n"
	    "  \"function_table\": [{}, {\"name_strindex\": 3}],\n"
	    "  \"location_table\": [{}, {\"lines\": [{\"function_index\": 1, \"line\": 7}]}],\n"
	    "  \"stack_table\": [{}, {\"location_indices\": [1]}],\n"
	    "  \"attribute_table\": [{}, {\"key_strindex\": 4, \"value\": {\"int_value\": "
	    "\"9\"}}],\n"
	    "  \"link_table\": [{}, {\"trace_id\": \"S/kvNXezTaajzpKdDg5HNg==\", \"span_id\": "
	    "\"APBnqgupArc=\"}]}}\n";
	json_object *doc = load1(write_file("pretty.json", doc_text, sizeof(doc_text) - 1));
	json_object *t;
	char *c;

	no_input_error(doc, 0);
	t = json_object_array_get_idx(jget(doc, "profile_types"), 0);
	assert_string_equal(json_object_get_string(jget(t, "name")), "alloc_space");
	assert_string_equal(json_object_get_string(jget(t, "unit")), "bytes");
	assert_int_equal(input_samples(doc, 0), 1); /* bytes are not samples */
	c = canon(doc, true);
	assert_string_equal(c, "alloc_space|f|svc/12/9/|" SPAN1 "|-1 3\n");
	assert_string_equal(json_object_get_string(
				json_object_array_get_idx(jget(jget(doc, "spans"), "trace_id"), 0)),
			    TRACE1);
	free(c);
	json_object_put(doc);
}

/* The document inside a <script> element: no "</script>", strings intact, UTF-8 valid. */
static void test_escaping(void **state)
{
	struct view_doc *d = view_doc__new();
	const char bad_utf8[] = "caf\xc3\xa9 \xff\xfe <!-- x";
	const char *tmpl = "<html><script id=\"spanprof-data\" type=\"application/json\">"
			   "\"__SPANPROF_DATA__\"</script></html>";
	int32_t n1, n2, n3, f1, f2, f3, st, ty, pr, th, se;
	int32_t frames[3];
	char *json, *page, *s, *e;
	size_t len, plen;
	json_object *doc, *strings;

	assert_int_equal(view_doc__input_begin(d, "mem"), 0);
	n1 = view_doc__string(d, "operator</script><script>alert(1)", 33);
	n2 = view_doc__string(d, bad_utf8, sizeof(bad_utf8) - 1);
	n3 = view_doc__string(d, "tab\there \"quoted\" back\\slash \x01",
			      strlen("tab\there \"quoted\" back\\slash \x01"));
	f1 = view_doc__frame(d, n1, 0, 0, 0, VIEW_FRAME_NATIVE, 0);
	f2 = view_doc__frame(d, n2, 0, 0, 0, VIEW_FRAME_OTHER, 0);
	f3 = view_doc__frame(d, n3, 0, 0, 0, VIEW_FRAME_KERNEL, 0);
	assert_int_equal(view_doc__frame(d, n1, 0, 0, 0, VIEW_FRAME_NATIVE, 0), f1);
	frames[0] = f1, frames[1] = f2, frames[2] = f3;
	st = view_doc__stack(d, frames, 3);
	ty = view_doc__profile_type(d, "samples", "count", "cpu", "nanoseconds", 1);
	pr = view_doc__process(d, view_doc__string(d, "svc", 3), 1, 0);
	th = view_doc__thread(d, pr, 1, 0);
	se = view_doc__series(d, ty, st, th, -1);
	assert_int_equal(view_doc__add(d, se, 1, 0, 1), 0);
	assert_int_equal(view_doc__input_end(d, "test", NULL), 0);
	assert_int_equal(view_doc__finish(d), 0);
	assert_int_equal(view_doc__json(d, &json, &len), 0);
	assert_null(strstr(json, "</"));
	assert_null(strstr(json, "<!--"));
	assert_non_null(strstr(json, "operator<\\/script><script>alert(1)"));
	doc = json_tokener_parse(json);
	assert_non_null(doc);
	check_doc(doc);
	strings = jget(doc, "strings");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(strings, (size_t)n1)),
			    "operator</script><script>alert(1)");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(strings, (size_t)n2)),
			    "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd <!-- x");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(strings, (size_t)n3)),
			    "tab\there \"quoted\" back\\slash \x01");
	json_object_put(doc);

	/* The page: the token replaced, the script element closed once, by the template. */
	assert_int_equal(view__page(d, tmpl, strlen(tmpl), &page, &plen), 0);
	assert_null(strstr(page, "__SPANPROF_DATA__"));
	s = strstr(page, "application/json\">") + strlen("application/json\">");
	e = strstr(page, "</script>");
	assert_true(e > s);
	assert_null(strstr(e + 1, "</script>"));
	assert_int_equal((size_t)(e - s), len);
	assert_memory_equal(s, json, len);
	free(page);
	assert_int_equal(view__page(d, "<html></html>", 13, &page, &plen), -EINVAL);
	free(json);
	view_doc__free(d);

	/* The template embedded in the binary has the placeholder. */
	assert_non_null(memmem(spanprof_view_page,
			       (size_t)(spanprof_view_page_end - spanprof_view_page),
			       VIEW_PAGE_TOKEN, strlen(VIEW_PAGE_TOKEN)));
}

/* The command: exit status, default output path, --span-id in "initial". */
static int run_view(char **argv, int argc)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		argp_err_exit_status = 2;
		_exit(view__main(argc, argv));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_command(void **state)
{
	char dir[600], html[700];
	size_t len, plen;
	uint8_t *b = pack_otlp(&msg_app, &len);
	const char *good;
	char *page, *s;
	json_object *doc;

	snprintf(dir, sizeof(dir), "%s/cmd", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	good = write_file("cmd/profiles-000001.binpb", b, len);
	write_file("cmd/broken.jsonl", "{\"resourceProfiles\": [", 22);
	{
		char *argv[] = {"view", dir, "--span-id", "00F067AA0BA902B7", NULL};

		assert_int_equal(run_view(argv, 4), 0);
	}
	snprintf(html, sizeof(html), "%s/profile.html", dir);
	page = (char *)slurp(html, &plen);
	page[plen] = '\0';
	s = strstr(page, "{\"format\"");
	assert_non_null(s);
	*strstr(s, "</script>") = '\0';
	doc = json_tokener_parse(s);
	assert_non_null(doc);
	check_doc(doc);
	assert_string_equal(json_object_get_string(jget(jget(doc, "initial"), "span_id")),
			    "00f067aa0ba902b7");
	assert_non_null(input_error(doc, 0)); /* broken.jsonl, first in name order */
	no_input_error(doc, 1);
	json_object_put(doc);
	free(page);
	{
		char out[700];
		char *argv[] = {"view", (char *)good, "-o", out, NULL};

		snprintf(out, sizeof(out), "%s/other.html", tmpdir);
		assert_int_equal(run_view(argv, 4), 0);
		assert_int_equal(access(out, R_OK), 0);
	}
	{
		char *argv[] = {"view", (char *)path_of("cmd/broken.jsonl"), NULL};

		assert_int_equal(run_view(argv, 2), 1);
	}
	{
		char *argv[] = {"view", dir, "--span-id", "123", NULL};

		assert_int_equal(run_view(argv, 4), 2);
	}
	{
		char *argv[] = {"view", dir, "--serve", "0.0.0.0:8080", NULL};

		assert_int_equal(run_view(argv, 4), 2);
	}
	{
		char *argv[] = {"view", NULL};

		assert_int_equal(run_view(argv, 1), 2);
	}
}

/* --- traces files ------------------------------------------------------------------------- */

/* One span of a traces file: ids in hex, parent NULL for a root span. */
struct t_span {
	const char *trace, *span, *parent, *name;
	uint64_t start, end;
};

#define TRACE3 "6bf92f3577b34da6a3ce929d0e0e4736"
#define SPAN3 "20f067aa0ba902b7"
#define PARENT1 "a0a1a2a3a4a5a6a7"

/* span 1 and 2 of msg_app (1 in service "frontend", 2 in "db"), and one that has no samples */
static const struct t_span spans_fe[] = {
    {TRACE1, SPAN1, PARENT1, "GET /checkout", T0 + 990 * MS, T0 + 1010 * MS},
    {TRACE3, SPAN3, NULL, "no samples", T0, T0 + MS},
};
static const struct t_span spans_db[] = {
    {TRACE2, SPAN2, NULL, "SELECT orders", T0 + 400 * MS, T0 + 600 * MS},
};

/* A TracesData of one resource (service.name @service) holding @n spans, packed. */
static uint8_t *pack_traces(const char *service, const struct t_span *sp, int n, size_t *len)
{
	Opentelemetry__Proto__Trace__V1__TracesData td;
	Opentelemetry__Proto__Trace__V1__ResourceSpans rs, *rsp = &rs;
	Opentelemetry__Proto__Trace__V1__ScopeSpans ss, *ssp = &ss;
	Opentelemetry__Proto__Trace__V1__Span spans[4], *spp[4];
	pb_resource res;
	pb_kv *attr = kv("service.name", any_str(service));
	uint8_t ids[4][32], *out;

	assert_true(n <= 4);
	opentelemetry__proto__trace__v1__traces_data__init(&td);
	opentelemetry__proto__trace__v1__resource_spans__init(&rs);
	opentelemetry__proto__trace__v1__scope_spans__init(&ss);
	opentelemetry__proto__resource__v1__resource__init(&res);
	res.n_attributes = 1;
	res.attributes = &attr;
	rs.resource = &res;
	td.n_resource_spans = 1;
	td.resource_spans = &rsp;
	rs.n_scope_spans = 1;
	rs.scope_spans = &ssp;
	ss.n_spans = (size_t)n;
	ss.spans = spp;
	for (int i = 0; i < n; i++) {
		Opentelemetry__Proto__Trace__V1__Span *x = &spans[i];

		opentelemetry__proto__trace__v1__span__init(x);
		/* ids as long as their hex says (a wrong length makes a damaged file) */
		hex_to(sp[i].trace, ids[i], strlen(sp[i].trace) / 2);
		hex_to(sp[i].span, ids[i] + 16, strlen(sp[i].span) / 2);
		x->trace_id = (ProtobufCBinaryData){strlen(sp[i].trace) / 2, ids[i]};
		x->span_id = (ProtobufCBinaryData){strlen(sp[i].span) / 2, ids[i] + 16};
		if (sp[i].parent) {
			hex_to(sp[i].parent, ids[i] + 24, 8);
			x->parent_span_id = (ProtobufCBinaryData){8, ids[i] + 24};
		}
		x->name = (char *)sp[i].name;
		x->kind = OPENTELEMETRY__PROTO__TRACE__V1__SPAN__SPAN_KIND__SPAN_KIND_SERVER;
		x->start_time_unix_nano = sp[i].start;
		x->end_time_unix_nano = sp[i].end;
		spp[i] = x;
	}
	*len = opentelemetry__proto__trace__v1__traces_data__get_packed_size(&td);
	out = talloc(*len ? *len : 1);
	opentelemetry__proto__trace__v1__traces_data__pack(&td, out);
	return out;
}

/* The same as one OTLP/JSON line, as the Collector's pdata writes it (times as strings). */
static void json_traces(FILE *f, const char *service, const struct t_span *sp, int n)
{
	fprintf(f,
		"{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
		"\"value\":{\"stringValue\":\"%s\"}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"t\"},"
		"\"spans\":[",
		service);
	for (int i = 0; i < n; i++)
		fprintf(f,
			"%s{\"traceId\":\"%s\",\"spanId\":\"%s\",\"parentSpanId\":\"%s\","
			"\"flags\":257,\"name\":\"%s\",\"kind\":2,\"startTimeUnixNano\":\"%llu\","
			"\"endTimeUnixNano\":\"%llu\",\"status\":{}}",
			i ? "," : "", sp[i].trace, sp[i].span, sp[i].parent ? sp[i].parent : "",
			sp[i].name, (unsigned long long)sp[i].start, (unsigned long long)sp[i].end);
	fprintf(f, "]}]}]}\n");
}

/* The index of span @span_id in the document's spans, or fails. */
static size_t span_at(json_object *doc, const char *span_id)
{
	json_object *ids = jget(jget(doc, "spans"), "span_id");

	for (size_t i = 0; i < alen(ids); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(ids, i)), span_id))
			return i;
	fail_msg("span %s is not in the document", span_id);
	return 0;
}

/* Checks the trace columns of msg_app's two spans as spans_fe and spans_db name them. */
static void check_named(json_object *doc)
{
	static const char *const cols[] = {"trace_id",	    "name",	   "service",
					   "start_unix_ns", "end_unix_ns", "duration_ns",
					   "parent_span_id"};
	json_object *sp = jget(doc, "spans");
	size_t a = span_at(doc, SPAN1), b = span_at(doc, SPAN2);
	size_t ns = check_columns(sp, cols, 7);

	assert_int_equal(ns, 2); /* the span without samples is not listed */
	check_range(jget(sp, "name"), 0, (int64_t)alen(jget(doc, "strings")));
	check_range(jget(sp, "service"), 0, (int64_t)alen(jget(doc, "strings")));
	assert_string_equal(sget(doc, aint(jget(sp, "name"), a)), "GET /checkout");
	assert_string_equal(sget(doc, aint(jget(sp, "service"), a)), "frontend");
	assert_int_equal(aint(jget(sp, "duration_ns"), a), 20 * MS);
	assert_int_equal((uint64_t)aint(jget(sp, "start_unix_ns"), a), T0 + 990 * MS);
	assert_string_equal(
	    json_object_get_string(json_object_array_get_idx(jget(sp, "parent_span_id"), a)),
	    PARENT1);
	assert_string_equal(sget(doc, aint(jget(sp, "name"), b)), "SELECT orders");
	assert_string_equal(sget(doc, aint(jget(sp, "service"), b)), "db");
	assert_int_equal(aint(jget(sp, "duration_ns"), b), 200 * MS);
	assert_true(json_object_is_type(json_object_array_get_idx(jget(sp, "parent_span_id"), b),
					json_type_null));
}

static int64_t input_int(json_object *doc, size_t i, const char *key)
{
	return json_object_get_int64(jget(input(doc, i), key));
}

/* A directory with a profile and the file exporter's traces stream (format: proto). */
static void test_traces_proto(void **state)
{
	char dir[600];
	size_t len, l1, l2;
	uint8_t *b = pack_otlp(&msg_app, &len);
	uint8_t *t1 = pack_traces("frontend", spans_fe, 2, &l1);
	uint8_t *t2 = pack_traces("db", spans_db, 1, &l2);
	const char *paths[1] = {dir};
	json_object *doc;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/tproto", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	write_file("tproto/profiles.binpb", b, len);
	f = fopen(path_of("tproto/traces.binpb"), "wb");
	assert_non_null(f);
	for (int i = 0; i < 2; i++) {
		size_t l = i ? l2 : l1;
		uint8_t hdr[4] = {(uint8_t)(l >> 24), (uint8_t)(l >> 16), (uint8_t)(l >> 8),
				  (uint8_t)l};

		fwrite(hdr, 1, 4, f);
		fwrite(i ? t2 : t1, 1, l, f);
	}
	fclose(f);
	doc = load(NULL, paths, 1);
	assert_int_equal(alen(jget(doc, "inputs")), 2);
	no_input_error(doc, 0);
	no_input_error(doc, 1);
	assert_string_equal(json_object_get_string(jget(input(doc, 1), "format")),
			    "otlp-traces-proto-stream");
	assert_int_equal(input_samples(doc, 1), 0);
	assert_int_equal(input_int(doc, 1, "spans"), 3);
	assert_int_equal(input_int(doc, 1, "spans_matched"), 2);
	assert_null(jget_opt(input(doc, 0), "spans")); /* a profile has no span count */
	check_named(doc);
	json_object_put(doc);

	/* One TracesData message (no length prefix), given before the profile. */
	{
		const char *two[2];
		size_t lb;
		uint8_t *both = pack_traces("frontend", spans_fe, 1, &lb);

		two[0] = write_file("single-traces.binpb", both, lb);
		two[1] = path_of("tproto/profiles.binpb");
		doc = load(NULL, two, 2);
		no_input_error(doc, 0);
		assert_string_equal(json_object_get_string(jget(input(doc, 0), "format")),
				    "otlp-traces-proto");
		assert_int_equal(input_int(doc, 0, "spans_matched"), 1);
		assert_string_equal(
		    sget(doc, aint(jget(jget(doc, "spans"), "name"), span_at(doc, SPAN1))),
		    "GET /checkout");
		assert_int_equal(aint(jget(jget(doc, "spans"), "name"), span_at(doc, SPAN2)), 0);
		json_object_put(doc);
	}
}

/* The file exporter's default OTLP/JSON lines, given explicitly, before the profile. */
static void test_traces_json(void **state)
{
	size_t len;
	uint8_t *b = pack_otlp(&msg_app, &len);
	const char *paths[2];
	json_object *doc;
	FILE *f;

	paths[0] = path_of("traces.jsonl");
	f = fopen(paths[0], "w");
	assert_non_null(f);
	json_traces(f, "frontend", spans_fe, 2);
	json_traces(f, "db", spans_db, 1);
	json_traces(f, "db", spans_db, 1); /* a retried export: the same span twice */
	fclose(f);
	paths[1] = write_file("profiles-for-json.binpb", b, len);
	doc = load(NULL, paths, 2);
	no_input_error(doc, 0);
	no_input_error(doc, 1);
	assert_string_equal(json_object_get_string(jget(input(doc, 0), "format")),
			    "otlp-traces-json");
	assert_int_equal(input_int(doc, 0, "spans"), 4);
	assert_int_equal(input_int(doc, 0, "spans_matched"), 2);
	check_named(doc);
	json_object_put(doc);

	/* The same file gzipped. */
	{
		size_t tl;
		uint8_t *t = slurp(paths[0], &tl);
		const char *keep = paths[0];

		paths[0] = write_gz("traces.jsonl.gz", t, tl);
		doc = load(NULL, paths, 2);
		no_input_error(doc, 0);
		assert_string_equal(json_object_get_string(jget(input(doc, 0), "format")),
				    "otlp-traces-json");
		check_named(doc);
		json_object_put(doc);
		free(t);
		paths[0] = keep;
	}

	/* Traces that match no span of the profiles: no error, no name. */
	paths[0] = path_of("other-traces.jsonl");
	f = fopen(paths[0], "w");
	assert_non_null(f);
	json_traces(f, "frontend", spans_fe + 1, 1);
	fclose(f);
	doc = load(NULL, paths, 2);
	no_input_error(doc, 0);
	assert_int_equal(input_int(doc, 0, "spans"), 1);
	assert_int_equal(input_int(doc, 0, "spans_matched"), 0);
	assert_int_equal(aint(jget(jget(doc, "spans"), "name"), 0), 0);
	assert_int_equal(alen(jget(jget(doc, "spans"), "span_id")), 2);
	json_object_put(doc);
}

/* Damaged traces files: a message naming the place, the spans before it kept, no crash. */
static void test_traces_damaged(void **state)
{
	static const struct t_span bad_id[] = {
	    {TRACE1, "00f067aa0ba9", NULL, "short span id", T0, T0 + MS},
	};
	size_t len, lt;
	uint8_t *b = pack_otlp(&msg_app, &len);
	uint8_t *t = pack_traces("frontend", spans_fe, 2, &lt);
	const char *paths[2];
	json_object *doc;
	FILE *f;

	paths[1] = write_file("profiles-for-damage.binpb", b, len);

	/* JSON: a good line, then a span id that is no id, then a cut line */
	paths[0] = path_of("bad-traces.jsonl");
	f = fopen(paths[0], "w");
	assert_non_null(f);
	json_traces(f, "frontend", spans_fe, 1);
	json_traces(f, "frontend", bad_id, 1);
	fclose(f);
	doc = load(NULL, paths, 2);
	assert_non_null(input_error(doc, 0));
	assert_non_null(strstr(input_error(doc, 0), "line 2"));
	assert_non_null(strstr(input_error(doc, 0), "spanId"));
	no_input_error(doc, 1);
	assert_int_equal(input_int(doc, 0, "spans"), 1); /* line 1 kept */
	assert_string_equal(sget(doc, aint(jget(jget(doc, "spans"), "name"), span_at(doc, SPAN1))),
			    "GET /checkout");
	json_object_put(doc);

	f = fopen(paths[0], "w");
	assert_non_null(f);
	fputs("{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":", f);
	fclose(f);
	doc = load(NULL, paths, 2);
	assert_non_null(strstr(input_error(doc, 0), "truncated"));
	json_object_put(doc);

	/* proto stream cut in the middle of its message */
	{
		uint8_t *s = malloc(lt + 4);

		s[0] = (uint8_t)(lt >> 24);
		s[1] = (uint8_t)(lt >> 16);
		s[2] = (uint8_t)(lt >> 8);
		s[3] = (uint8_t)lt;
		memcpy(s + 4, t, lt);
		paths[0] = write_file("cut-traces.binpb", s, 4 + lt - 10);
		doc = load(NULL, paths, 2);
		assert_non_null(strstr(input_error(doc, 0), "truncated"));
		no_input_error(doc, 1);
		assert_int_equal(alen(jget(jget(doc, "spans"), "span_id")), 2);
		json_object_put(doc);
		free(s);
	}

	/* proto with a 6-byte span id: read as traces (its times say so), the id named */
	{
		size_t lbad;
		uint8_t *bad = pack_traces("frontend", bad_id, 1, &lbad);

		paths[0] = write_file("bad-id-traces.binpb", bad, lbad);
		doc = load(NULL, paths, 2);
		assert_non_null(strstr(input_error(doc, 0), "spanId of 6 bytes"));
		assert_string_equal(json_object_get_string(jget(input(doc, 0), "format")),
				    "otlp-traces-proto");
		no_input_error(doc, 1);
		json_object_put(doc);
	}
}

static int group_setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_otlp_proto, setup),
	    cmocka_unit_test_setup(test_go_frames, setup),
	    cmocka_unit_test_setup(test_python_frames, setup),
	    cmocka_unit_test_setup(test_formats_agree, setup),
	    cmocka_unit_test_setup(test_pprof, setup),
	    cmocka_unit_test_setup(test_spans, setup),
	    cmocka_unit_test_setup(test_buckets, setup),
	    cmocka_unit_test_setup(test_truncated, setup),
	    cmocka_unit_test_setup(test_corrupt, setup),
	    cmocka_unit_test_setup(test_dirs, setup),
	    cmocka_unit_test_setup(test_json_variants, setup),
	    cmocka_unit_test_setup(test_escaping, setup),
	    cmocka_unit_test_setup(test_command, setup),
	    cmocka_unit_test_setup(test_traces_proto, setup),
	    cmocka_unit_test_setup(test_traces_json, setup),
	    cmocka_unit_test_setup(test_traces_damaged, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
