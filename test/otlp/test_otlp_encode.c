// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/otlp/otlp_encode.c. Every request the encoder emits is checked twice:
 * (a) unpacked with protobuf-c and checked field by field against the profile it came from
 *     (table [0] zero values, no duplicates, index bounds, resources, attributes, windows,
 *     every sample exactly once);
 * (b) decoded by otlpcheck (integration/otlpcheck: the pinned Collector's pdata decoder plus
 *     its validator), whose JSON summary must say ok with no warnings and the right totals.
 * The test fails, never skips, when otlpcheck could not be built.
 */
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "otlp/otlp_encode.h"
#include "otlp/htlhash.h"
#include "process/procmeta.h"
#include "profile/profile.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    pb_request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile pb_profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample pb_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Location pb_location;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit pb_kvu;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_kv;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any;
#define REQ_UNPACK                                                                                 \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack
#define REQ_FREE                                                                                   \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked
#define ANY_STRING OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

#define T0 1700000000000000000ull /* window start of the hand-made profiles */
#define PERIOD 10000000ull	  /* 100 Hz */
#define DURATION 5000000000ull

/* --- growable helpers ------------------------------------------------------------------- */

struct bufs {
	uint8_t **buf;
	size_t *len;
	size_t n;
	size_t max_seen;
	uint64_t events;   /* sum of what emit was told */
	int fail_at;	   /* emit returns -EPIPE on this call (1-based); 0: never */
	uint32_t *type;	   /* per request: the profile type emit was told */
	uint64_t *samples; /* per request: the samples emit was told */
};

static int collect(void *ctx, const uint8_t *buf, size_t len, uint64_t samples, uint32_t type)
{
	struct bufs *b = ctx;

	b->events += samples;
	if (b->fail_at && (int)b->n + 1 == b->fail_at)
		return -EPIPE;
	b->buf = realloc(b->buf, (b->n + 1) * sizeof(*b->buf));
	b->len = realloc(b->len, (b->n + 1) * sizeof(*b->len));
	b->type = realloc(b->type, (b->n + 1) * sizeof(*b->type));
	b->samples = realloc(b->samples, (b->n + 1) * sizeof(*b->samples));
	assert_non_null(b->buf);
	assert_non_null(b->len);
	assert_non_null(b->type);
	assert_non_null(b->samples);
	b->type[b->n] = type;
	b->samples[b->n] = samples;
	b->buf[b->n] = malloc(len);
	assert_non_null(b->buf[b->n]);
	memcpy(b->buf[b->n], buf, len);
	b->len[b->n++] = len;
	if (len > b->max_seen)
		b->max_seen = len;
	return 0;
}

static void bufs_free(struct bufs *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->buf[i]);
	free(b->buf);
	free(b->len);
	free(b->type);
	free(b->samples);
	memset(b, 0, sizeof(*b));
}

struct strv {
	char **s;
	size_t n, cap;
};

static void strv_add(struct strv *v, char *s)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 64;
		v->s = realloc(v->s, v->cap * sizeof(*v->s));
		assert_non_null(v->s);
	}
	v->s[v->n++] = s;
}

static void strv_free(struct strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->s[i]);
	free(v->s);
	memset(v, 0, sizeof(*v));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A tiny string builder. */
struct sb {
	char *s;
	size_t n, cap;
};

static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		assert_true(k >= 0);
		if (b->s && b->n + (size_t)k < b->cap)
			break;
		b->cap = (b->cap + (size_t)k + 1) * 2;
		b->s = realloc(b->s, b->cap);
		assert_non_null(b->s);
		if (b->n == 0)
			b->s[0] = '\0';
	}
	b->n += (size_t)k;
}

/* --- profile construction ------------------------------------------------------------------ */

struct ids {
	uint32_t st_user, st_kernel, st_inline, st_other;
	uint32_t map_exe, map_lib;
	char exe_path[PATH_MAX];
	char lib_path[PATH_MAX];
};

static const char *fixture(const char *name, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", OTLP_FIXTURES, name);
	return out;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	n = getline(&line, &cap, f);
	fclose(f);
	assert_true(n > 0);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	return line;
}

static uint32_t str(struct profile *p, const char *s)
{
	uint32_t i = profile__intern_string(p, s);

	assert_true(i != 0);
	return i;
}

static uint32_t func(struct profile *p, const char *name, const char *sys, const char *file)
{
	struct profile_function f = {str(p, name), sys ? str(p, sys) : 0, file ? str(p, file) : 0};
	uint32_t i = profile__intern_function(p, &f);

	assert_true(i != 0);
	return i;
}

static uint32_t loc(struct profile *p, uint32_t mapping, uint64_t addr, enum frame_kind kind,
		    const struct profile_line *lines, uint32_t n)
{
	uint32_t i = profile__intern_location(p, mapping, addr, kind, lines, n);

	assert_true(i != 0);
	return i;
}

/* A sample with a link and an attribute set (indices of the profile, 0: none). */
static void add_linked(struct profile *p, uint32_t stack, uint32_t pid, uint32_t tid, uint32_t cpu,
		       const char *comm, const char *proc, uint64_t t, uint64_t count,
		       uint32_t link, uint32_t attrs)
{
	struct profile_sample_key k = {
	    .stack = stack,
	    .pid = pid,
	    .tid = tid,
	    .cpu = cpu,
	    .comm = comm ? str(p, comm) : 0,
	    .process_name = proc ? str(p, proc) : 0,
	    .link = link,
	    .attrs = attrs,
	};

	assert_int_equal(profile__add_sample(p, &k, t, count), 0);
}

/* A sample without link or attributes. */
static void add(struct profile *p, uint32_t stack, uint32_t pid, uint32_t tid, uint32_t cpu,
		const char *comm, const char *proc, uint64_t t, uint64_t count)
{
	add_linked(p, stack, pid, tid, cpu, comm, proc, t, count, 0, 0);
}

/* Link number @n (> 0): ids derived from n, never zero. */
static struct profile_link link_n(uint32_t n)
{
	struct profile_link l;

	for (int i = 0; i < 16; i++)
		l.trace_id[i] = (uint8_t)(0x10 * (n % 16) + i);
	for (int i = 0; i < 8; i++)
		l.span_id[i] = (uint8_t)(n >> (8 * (i % 4))) ^ (uint8_t)(0xa0 + i);
	l.trace_id[0] = (uint8_t)n;
	l.trace_id[15] = 0xff;
	return l;
}

static uint32_t intern_link(struct profile *p, uint32_t n)
{
	struct profile_link l = link_n(n);
	uint32_t i = profile__intern_link(p, &l);

	assert_true(i != 0);
	return i;
}

/*
 * Three processes: 100 (timestamps, metadata from the callback, inline frames, fixture
 * files as mappings), 200 (no metadata, a kernel stack, one timestamp before the window),
 * 300 (a sample without timestamp: values). Strings the encoder adds ("samples", "count",
 * "thread.id") are also profile strings, to check they are not duplicated.
 */
static struct profile *make_profile(struct ids *ids)
{
	struct profile *p = profile__new();
	struct profile_meta meta = {T0, DURATION, PERIOD, 100};
	struct profile_mapping m_exe = {0x400000, 0x500000, 0, 0, 0};
	struct profile_mapping m_lib = {0x7f0000000000, 0x7f0000100000, 0x1000, 0, 0};
	uint32_t f_main, f_work, f_inl, f_sys, f_count, l_main, l_work, l_inl, l_k1, l_k2, l_lib;
	uint32_t s[4];

	assert_non_null(p);
	profile__set_meta(p, &meta);
	fixture("htl-large.bin", ids->exe_path, sizeof(ids->exe_path));
	fixture("htl-small.bin", ids->lib_path, sizeof(ids->lib_path));
	m_exe.filename = str(p, ids->exe_path);
	m_exe.build_id = str(p, "0123456789abcdef0123456789abcdef01234567");
	m_lib.filename = str(p, ids->lib_path);
	ids->map_exe = profile__intern_mapping(p, &m_exe);
	ids->map_lib = profile__intern_mapping(p, &m_lib);
	assert_true(ids->map_exe && ids->map_lib);

	f_main = func(p, "main", "main", "/src/app.c");
	f_work = func(p, "work(int)", "_Z4worki", "/src/app.c");
	f_inl = func(p, "inlined_helper", NULL, "/src/helper.h");
	f_sys = func(p, "do_syscall_64", NULL, NULL);
	f_count = func(p, "count", "samples", "thread.id"); /* names equal to encoder strings */

	l_main =
	    loc(p, ids->map_exe, 0x401000, FRAME_NATIVE, (struct profile_line[]){{f_main, 10}}, 1);
	l_work =
	    loc(p, ids->map_exe, 0x402000, FRAME_NATIVE, (struct profile_line[]){{f_work, 20}}, 1);
	/* Inline chain: innermost first. */
	l_inl = loc(p, ids->map_exe, 0x403000, FRAME_NATIVE,
		    (struct profile_line[]){{f_inl, 5}, {f_work, 22}}, 2);
	l_k1 =
	    loc(p, 0, 0xffffffff81000000ull, FRAME_KERNEL, (struct profile_line[]){{f_sys, 0}}, 1);
	l_k2 = loc(p, 0, 0xffffffff81000100ull, FRAME_KERNEL, NULL, 0); /* unsymbolized */
	/* A Go frame (frame type "go"), in the library mapping. */
	l_lib = loc(p, ids->map_lib, 0x7f0000001234, FRAME_GO,
		    (struct profile_line[]){{f_count, 1}}, 1);

	s[0] = profile__intern_stack(p, (uint32_t[]){l_work, l_main}, 2);
	s[1] = profile__intern_stack(p, (uint32_t[]){l_k2, l_k1, l_work, l_main}, 4);
	s[2] = profile__intern_stack(p, (uint32_t[]){l_inl, l_main}, 2);
	s[3] = profile__intern_stack(p, (uint32_t[]){l_lib, l_main}, 2);
	ids->st_user = s[0];
	ids->st_kernel = s[1];
	ids->st_inline = s[2];
	ids->st_other = s[3];

	/* pid 100: two threads, same stack on two cpus, repeated samples. */
	add(p, s[0], 100, 101, 0, "worker", "app", T0 + 1000, 1);
	add(p, s[0], 100, 101, 0, "worker", "app", T0 + 2000, 1);
	add(p, s[0], 100, 101, 1, "worker", "app", T0 + 3000, 1);
	add(p, s[2], 100, 102, 1, "helper", "app", T0 + 4000, 1);
	add(p, s[3], 100, 102, 3, "helper", "app", T0 + DURATION - 1, 1);
	add(p, s[1], 100, 100, 2, "app", "app", T0 + 5000, 1);
	/* pid 200: one timestamp before the window, one after it. */
	add(p, s[1], 200, 200, 0, "kworker", "daemon", T0 - 500, 1);
	add(p, s[1], 200, 200, 0, "kworker", "daemon", T0 + DURATION + 7, 1);
	add(p, s[0], 200, 201, 5, NULL, "daemon", T0 + 10, 1);
	/* pid 300: counts without timestamps. */
	add(p, s[0], 300, 300, 0, "batch", "batch", 0, 3);
	add(p, s[3], 300, 300, 1, "batch", "batch", T0 + 20, 1);
	return p;
}

/* Process metadata of the hand-made profile: pid 100 known, 200 gone, 300 no callback data. */
static struct procmeta meta100;

static int fake_meta(void *ctx, uint32_t pid, const struct procmeta **out)
{
	(*(int *)ctx)++;
	if (pid == 100) {
		*out = &meta100;
		return 0;
	}
	return pid == 200 ? -ESRCH : -ENOENT;
}

static void setup_meta100(void)
{
	static char svc[] = "svc-a", path[] = "/opt/app/bin/app", name[] = "app";
	static char k1[] = "deployment.environment.name", v1[] = "prod";
	static char k2[] = "service.name", v2[] = "other";
	static char k3[] = "host.name", v3[] = "evil";
	static struct procmeta_attr attrs[3];

	attrs[0] = (struct procmeta_attr){k1, v1};
	attrs[1] = (struct procmeta_attr){k2, v2};
	attrs[2] = (struct procmeta_attr){k3, v3};
	memset(&meta100, 0, sizeof(meta100));
	meta100.service_name = svc;
	meta100.exe_path = path;
	meta100.exe_name = name;
	snprintf(meta100.container_id, sizeof(meta100.container_id), "%s",
		 "3f4b6c1d2e9a8b7c6d5e4f30211203a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0");
	meta100.attrs = attrs;
	meta100.nattrs = 3;
}

/* --- the protobuf-c side --------------------------------------------------------------------- */

static const pb_kvu *attr_at(const pb_dict *d, int32_t i)
{
	assert_true(i > 0 && (size_t)i < d->n_attribute_table);
	return d->attribute_table[i];
}

static const char *dstr(const pb_dict *d, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < d->n_string_table);
	return d->string_table[i];
}

/* Attribute @key among @idx, or NULL; fails on a duplicate key. */
static const pb_any *find_attr(const pb_dict *d, const int32_t *idx, size_t n, const char *key)
{
	const pb_any *v = NULL;

	for (size_t i = 0; i < n; i++) {
		const pb_kvu *a = attr_at(d, idx[i]);

		assert_true(a->key_strindex > 0);
		if (strcmp(dstr(d, a->key_strindex), key) == 0) {
			assert_null(v);
			v = a->value;
			assert_non_null(v);
		}
	}
	return v;
}

static const pb_any *resource_attr(const Opentelemetry__Proto__Resource__V1__Resource *r,
				   const char *key)
{
	const pb_any *v = NULL;

	for (size_t i = 0; i < r->n_attributes; i++) {
		if (strcmp(r->attributes[i]->key, key) == 0) {
			assert_null(v); /* keys are unique */
			v = r->attributes[i]->value;
		}
	}
	return v;
}

static void assert_any_string(const pb_any *v, const char *s)
{
	assert_non_null(v);
	assert_int_equal(v->value_case, ANY_STRING);
	assert_string_equal(v->string_value, s);
}

static void assert_any_int(const pb_any *v, int64_t x)
{
	assert_non_null(v);
	assert_int_equal(v->value_case, ANY_INT);
	assert_int_equal(v->int_value, x);
}

/* No two elements of a table pack to the same bytes. */
static void assert_unique(const ProtobufCMessage *const *el, size_t n, const char *table)
{
	uint8_t **packed = calloc(n, sizeof(*packed));
	size_t *len = calloc(n, sizeof(*len));

	assert_non_null(packed);
	assert_non_null(len);
	for (size_t i = 0; i < n; i++) {
		len[i] = protobuf_c_message_get_packed_size(el[i]);
		packed[i] = malloc(len[i] + 1);
		protobuf_c_message_pack(el[i], packed[i]);
		for (size_t j = 0; j < i; j++)
			if (len[i] == len[j] && memcmp(packed[i], packed[j], len[i]) == 0)
				fail_msg("%s[%zu] duplicates [%zu]", table, i, j);
	}
	for (size_t i = 0; i < n; i++)
		free(packed[i]);
	free(packed);
	free(len);
}

static void check_dictionary(const pb_dict *d)
{
	assert_non_null(d);
	/* Element 0 of every table exists and is the zero value. */
	assert_true(d->n_string_table >= 1);
	assert_string_equal(d->string_table[0], "");
	assert_true(d->n_mapping_table >= 1 && d->n_location_table >= 1 &&
		    d->n_function_table >= 1 && d->n_attribute_table >= 1 && d->n_stack_table >= 1);
	assert_int_equal(protobuf_c_message_get_packed_size(&d->mapping_table[0]->base), 0);
	assert_int_equal(protobuf_c_message_get_packed_size(&d->location_table[0]->base), 0);
	assert_int_equal(protobuf_c_message_get_packed_size(&d->function_table[0]->base), 0);
	assert_int_equal(protobuf_c_message_get_packed_size(&d->attribute_table[0]->base), 0);
	assert_int_equal(protobuf_c_message_get_packed_size(&d->stack_table[0]->base), 0);
	/* Link [0] is the empty Link{}; the others have a full trace id and span id. */
	assert_true(d->n_link_table >= 1);
	assert_int_equal(protobuf_c_message_get_packed_size(&d->link_table[0]->base), 0);
	for (size_t i = 1; i < d->n_link_table; i++) {
		assert_int_equal(d->link_table[i]->trace_id.len, 16);
		assert_int_equal(d->link_table[i]->span_id.len, 8);
		assert_memory_not_equal(d->link_table[i]->trace_id.data, (uint8_t[16]){0}, 16);
		assert_memory_not_equal(d->link_table[i]->span_id.data, (uint8_t[8]){0}, 8);
	}

	for (size_t i = 0; i < d->n_string_table; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(d->string_table[i], d->string_table[j]) == 0)
				fail_msg("string_table[%zu] duplicates [%zu] (%s)", i, j,
					 d->string_table[i]);
	assert_unique((const ProtobufCMessage *const *)d->mapping_table, d->n_mapping_table,
		      "mapping_table");
	assert_unique((const ProtobufCMessage *const *)d->location_table, d->n_location_table,
		      "location_table");
	assert_unique((const ProtobufCMessage *const *)d->function_table, d->n_function_table,
		      "function_table");
	assert_unique((const ProtobufCMessage *const *)d->attribute_table, d->n_attribute_table,
		      "attribute_table");
	assert_unique((const ProtobufCMessage *const *)d->stack_table, d->n_stack_table,
		      "stack_table");
	assert_unique((const ProtobufCMessage *const *)d->link_table, d->n_link_table,
		      "link_table");

	/* Every index in range; every non-zero element used as documented. */
	for (size_t i = 1; i < d->n_attribute_table; i++) {
		assert_true(d->attribute_table[i]->key_strindex > 0);
		dstr(d, d->attribute_table[i]->key_strindex);
		assert_non_null(d->attribute_table[i]->value);
	}
	for (size_t i = 1; i < d->n_function_table; i++) {
		dstr(d, d->function_table[i]->name_strindex);
		dstr(d, d->function_table[i]->system_name_strindex);
		dstr(d, d->function_table[i]->filename_strindex);
	}
	for (size_t i = 1; i < d->n_mapping_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Mapping *m =
		    d->mapping_table[i];

		dstr(d, m->filename_strindex);
		for (size_t j = 0; j < m->n_attribute_indices; j++)
			attr_at(d, m->attribute_indices[j]);
	}
	for (size_t i = 1; i < d->n_location_table; i++) {
		const pb_location *l = d->location_table[i];

		assert_true(l->mapping_index >= 0 && (size_t)l->mapping_index < d->n_mapping_table);
		for (size_t j = 0; j < l->n_lines; j++)
			assert_true(l->lines[j]->function_index > 0 &&
				    (size_t)l->lines[j]->function_index < d->n_function_table);
	}
	for (size_t i = 1; i < d->n_stack_table; i++) {
		assert_true(d->stack_table[i]->n_location_indices > 0);
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++) {
			int32_t li = d->stack_table[i]->location_indices[j];

			assert_true(li > 0 && (size_t)li < d->n_location_table);
		}
	}
}

/* The frames of a stack as text, leaf first, from the request's dictionary. */
static void otlp_frames(const pb_dict *d, int32_t si, struct sb *b)
{
	assert_true(si > 0 && (size_t)si < d->n_stack_table);
	for (size_t j = 0; j < d->stack_table[si]->n_location_indices; j++) {
		const pb_location *l = d->location_table[d->stack_table[si]->location_indices[j]];
		const pb_any *ft = find_attr(d, l->attribute_indices, l->n_attribute_indices,
					     "profile.frame.type");
		const char *file =
		    l->mapping_index
			? dstr(d, d->mapping_table[l->mapping_index]->filename_strindex)
			: "";

		assert_non_null(ft);
		sb_printf(b, "[%s %s 0x%" PRIx64, ft->string_value, file, l->address);
		for (size_t k = 0; k < l->n_lines; k++) {
			const Opentelemetry__Proto__Profiles__V1development__Function *f =
			    d->function_table[l->lines[k]->function_index];

			sb_printf(b, " %s/%s/%s:%" PRId64, dstr(d, f->name_strindex),
				  dstr(d, f->system_name_strindex), dstr(d, f->filename_strindex),
				  l->lines[k]->line);
		}
		sb_printf(b, "]");
	}
}

/* The same text from the profile model. */
static void model_frames(const struct profile *p, uint32_t si, struct sb *b)
{
	const struct profile_stack *st = profile__stack(p, si);
	const uint32_t *locs = profile__stack_locations(p, si);

	for (uint32_t j = 0; j < st->nlocations; j++) {
		const struct profile_location *l = profile__location(p, locs[j]);
		const struct profile_line *lines = profile__location_lines(p, locs[j]);
		const char *file =
		    l->mapping ? profile__string(p, profile__mapping(p, l->mapping)->filename) : "";

		sb_printf(b, "[%s %s 0x%" PRIx64,
			  l->kind == FRAME_KERNEL ? "kernel"
			  : l->kind == FRAME_GO	  ? "go"
						  : "native",
			  file, l->address);
		for (uint32_t k = 0; k < l->nlines; k++) {
			const struct profile_function *f = profile__function(p, lines[k].function);

			sb_printf(b, " %s/%s/%s:%" PRId64, profile__string(p, f->name),
				  profile__string(p, f->system_name),
				  profile__string(p, f->filename), lines[k].line);
		}
		sb_printf(b, "]");
	}
}

/* Per process: does the encoder use timestamps (every sample has count == ntimestamps)? */
static bool model_ts_mode(const struct profile *p, uint32_t pid)
{
	for (uint32_t i = 0; i < profile__nsamples(p); i++) {
		const struct profile_sample *s = profile__sample(p, i);

		if (s->key.pid == pid && (s->count == 0 || s->count != s->ntimestamps))
			return false;
	}
	return true;
}

static void sb_hex(struct sb *b, const uint8_t *data, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "%02x", data[i]);
}

/* The sample's span and thread-context attributes (in their order) as text. */
static void model_link_ctx(const struct profile *p, const struct profile_sample *s, struct sb *b)
{
	const struct profile_attrset *as = profile__attrset(p, s->key.attrs);
	const struct profile_attr *a = profile__attrset_attrs(p, s->key.attrs);

	sb_printf(b, " link=");
	if (s->key.link) {
		sb_hex(b, profile__link(p, s->key.link)->trace_id, 16);
		sb_printf(b, "/");
		sb_hex(b, profile__link(p, s->key.link)->span_id, 8);
	} else {
		sb_printf(b, "-");
	}
	sb_printf(b, " ctx=");
	for (uint32_t j = 0; j < as->nattrs; j++)
		sb_printf(b, "%s=%s;", profile__string(p, a[j].key),
			  profile__string(p, a[j].value));
}

static void model_keys(const struct profile *p, struct strv *out)
{
	for (uint32_t i = 0; i < profile__nsamples(p); i++) {
		const struct profile_sample *s = profile__sample(p, i);
		struct sb b = {0};

		sb_printf(&b, "pid=%u tid=%u cpu=%u comm=%s n=%" PRIu64, s->key.pid, s->key.tid,
			  s->key.cpu, profile__string(p, s->key.comm), s->count);
		model_link_ctx(p, s, &b);
		sb_printf(&b, " ts=");
		if (model_ts_mode(p, s->key.pid))
			for (uint32_t j = 0; j < s->ntimestamps; j++)
				sb_printf(&b, "%" PRIu64 ",", s->timestamps_unix_nano[j]);
		sb_printf(&b, " ");
		model_frames(p, s->key.stack, &b);
		strv_add(out, b.s);
	}
}

struct check_opts {
	const char *host;
	bool meta; /* fake_meta was used: pid 100 has full metadata */
};

/*
 * Checks one request and appends one key per sample to @keys; pids seen to @pids (one
 * ResourceProfiles per pid per request).
 */
static void check_request(const struct profile *p, const uint8_t *buf, size_t len,
			  const struct check_opts *co, struct strv *keys, uint32_t *pids,
			  size_t *npids)
{
	const struct profile_meta *meta = profile__meta(p);
	pb_request *req = REQ_UNPACK(NULL, len, buf);
	const pb_dict *d;
	bool *link_used;

	assert_non_null(req);
	d = req->dictionary;
	check_dictionary(d);
	link_used = calloc(d->n_link_table, sizeof(*link_used));
	assert_non_null(link_used);
	assert_true(req->n_resource_profiles > 0);
	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
		    req->resource_profiles[r];
		const pb_any *v;
		const pb_profile *pr;
		int64_t pid;

		assert_non_null(rp->resource);
		v = resource_attr(rp->resource, "process.pid");
		assert_non_null(v);
		assert_int_equal(v->value_case, ANY_INT);
		pid = v->int_value;
		for (size_t k = 0; k < r; k++) {
			const pb_any *o =
			    resource_attr(req->resource_profiles[k]->resource, "process.pid");
			assert_true(o->int_value != pid); /* one ResourceProfiles per process */
		}
		pids[(*npids)++] = (uint32_t)pid;

		if (co->host)
			assert_any_string(resource_attr(rp->resource, "host.name"), co->host);
		if (co->meta && pid == 100) {
			assert_any_string(resource_attr(rp->resource, "service.name"), "svc-a");
			assert_any_string(resource_attr(rp->resource, "process.executable.name"),
					  "app");
			assert_any_string(resource_attr(rp->resource, "process.executable.path"),
					  "/opt/app/bin/app");
			assert_any_string(resource_attr(rp->resource, "container.id"),
					  meta100.container_id);
			assert_any_string(
			    resource_attr(rp->resource, "deployment.environment.name"), "prod");
		} else if (pid == 200 || pid == 300) {
			/* No metadata: named after the process name the samples carry. */
			const char *name = pid == 200 ? "daemon" : "batch";
			char svc[64];

			snprintf(svc, sizeof(svc), "unknown_service:%s", name);
			assert_any_string(resource_attr(rp->resource, "service.name"), svc);
			assert_any_string(resource_attr(rp->resource, "process.executable.name"),
					  name);
			assert_null(resource_attr(rp->resource, "process.executable.path"));
			assert_null(resource_attr(rp->resource, "container.id"));
		}
		assert_non_null(resource_attr(rp->resource, "service.name"));

		assert_int_equal(rp->n_scope_profiles, 1);
		assert_string_equal(rp->scope_profiles[0]->scope->name, "spanprof");
		assert_string_equal(rp->scope_profiles[0]->scope->version, "9.9.9-test");
		assert_int_equal(rp->scope_profiles[0]->n_profiles, 1);
		pr = rp->scope_profiles[0]->profiles[0];

		assert_string_equal(dstr(d, pr->sample_type->type_strindex), "samples");
		assert_string_equal(dstr(d, pr->sample_type->unit_strindex), "count");
		assert_string_equal(dstr(d, pr->period_type->type_strindex), "cpu");
		assert_string_equal(dstr(d, pr->period_type->unit_strindex), "nanoseconds");
		assert_int_equal(pr->period, meta->period_nano);
		assert_int_equal(pr->profile_id.len, 16);
		assert_true(pr->time_unix_nano <= meta->start_unix_nano);
		assert_true(pr->time_unix_nano + pr->duration_nano >=
			    meta->start_unix_nano + meta->duration_nano);
		assert_true(pr->n_samples > 0);

		for (size_t i = 0; i < pr->n_samples; i++) {
			const pb_sample *s = pr->samples[i];
			const pb_any *tid, *cpu, *comm;
			struct sb b = {0};
			uint64_t n;

			tid =
			    find_attr(d, s->attribute_indices, s->n_attribute_indices, "thread.id");
			cpu = find_attr(d, s->attribute_indices, s->n_attribute_indices,
					"cpu.logical_number");
			comm = find_attr(d, s->attribute_indices, s->n_attribute_indices,
					 "thread.name");
			assert_non_null(tid);
			assert_non_null(cpu);
			assert_int_equal(tid->value_case, ANY_INT);
			assert_int_equal(cpu->value_case, ANY_INT);
			if (comm)
				assert_int_equal(comm->value_case, ANY_STRING);
			/* Either timestamps (one per event) or one value, never both. */
			if (s->n_timestamps_unix_nano) {
				assert_int_equal(s->n_values, 0);
				n = s->n_timestamps_unix_nano;
			} else {
				assert_int_equal(s->n_values, 1);
				n = (uint64_t)s->values[0];
			}
			/* Same shape for every sample of a profile. */
			assert_int_equal(!!s->n_timestamps_unix_nano,
					 !!pr->samples[0]->n_timestamps_unix_nano);
			sb_printf(&b,
				  "pid=%" PRId64 " tid=%" PRId64 " cpu=%" PRId64
				  " comm=%s n=%" PRIu64 " link=",
				  pid, tid->int_value, cpu->int_value,
				  comm ? comm->string_value : "", n);
			/* The span: a link of this request, or 0. */
			assert_true(s->link_index >= 0 && (size_t)s->link_index < d->n_link_table);
			if (s->link_index) {
				const Opentelemetry__Proto__Profiles__V1development__Link *l =
				    d->link_table[s->link_index];

				link_used[s->link_index] = true;
				sb_hex(&b, l->trace_id.data, l->trace_id.len);
				sb_printf(&b, "/");
				sb_hex(&b, l->span_id.data, l->span_id.len);
			} else {
				sb_printf(&b, "-");
			}
			/* Thread-context attributes: string values, after the thread's own. */
			sb_printf(&b, " ctx=");
			for (size_t j = 0; j < s->n_attribute_indices; j++) {
				const pb_kvu *a = attr_at(d, s->attribute_indices[j]);
				const char *key = dstr(d, a->key_strindex);

				if (!strcmp(key, "thread.id") || !strcmp(key, "thread.name") ||
				    !strcmp(key, "cpu.logical_number"))
					continue;
				assert_int_equal(a->value->value_case, ANY_STRING);
				sb_printf(&b, "%s=%s;", key, a->value->string_value);
			}
			sb_printf(&b, " ts=");
			for (size_t j = 0; j < s->n_timestamps_unix_nano; j++) {
				uint64_t t = s->timestamps_unix_nano[j];

				assert_true(t >= pr->time_unix_nano);
				assert_true(t < pr->time_unix_nano + pr->duration_nano);
				sb_printf(&b, "%" PRIu64 ",", t);
			}
			sb_printf(&b, " ");
			otlp_frames(d, s->stack_index, &b);
			strv_add(keys, b.s);
		}
	}
	/* The request carries only the links its samples point at. */
	for (size_t i = 1; i < d->n_link_table; i++)
		if (!link_used[i])
			fail_msg("link_table[%zu] is not used by any sample of the request", i);
	free(link_used);
	REQ_FREE(req, NULL);
}

/* Checks that @b holds every sample of @p exactly once; returns the number of requests. */
static void check_all(const struct profile *p, const struct bufs *b, const struct check_opts *co,
		      size_t max_request)
{
	struct strv got = {0}, want = {0};
	uint32_t *pids = calloc(profile__nsamples(p) * b->n + 1, sizeof(*pids));
	size_t npids = 0;

	assert_non_null(pids);
	for (size_t i = 0; i < b->n; i++) {
		if (max_request)
			assert_true(b->len[i] <= max_request);
		check_request(p, b->buf[i], b->len[i], co, &got, pids, &npids);
	}
	model_keys(p, &want);
	assert_int_equal(got.n, want.n);
	assert_int_equal(b->events, profile__total_count(p));
	qsort(got.s, got.n, sizeof(*got.s), cmp_str);
	qsort(want.s, want.n, sizeof(*want.s), cmp_str);
	for (size_t i = 0; i < got.n; i++)
		if (strcmp(got.s[i], want.s[i]))
			fail_msg("sample %zu differs:\n  got  %s\n  want %s", i, got.s[i],
				 want.s[i]);
	strv_free(&got);
	strv_free(&want);
	free(pids);
}

/* --- the independent decoder ----------------------------------------------------------------- */

/* Writes the requests to files, runs otlpcheck on them, returns its JSON output. */
static char *run_otlpcheck(const struct bufs *b, int *status)
{
	char dir[] = "/tmp/otlpenc-test-XXXXXX", path[PATH_MAX], cmd[65536];
	struct sb out = {0};
	size_t n = 0;
	FILE *f;

	if (access(OTLPCHECK, X_OK))
		fail_msg("otlpcheck is missing (%s): the independent decoder could not be built. "
			 "Build it with `cd integration/otlpcheck && go build` (log: %s.log).",
			 OTLPCHECK, OTLPCHECK);
	assert_non_null(mkdtemp(dir));
	n += snprintf(cmd + n, sizeof(cmd) - n, "%s -compact", OTLPCHECK);
	for (size_t i = 0; i < b->n; i++) {
		snprintf(path, sizeof(path), "%s/req%zu.bin", dir, i);
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(b->buf[i], 1, b->len[i], f), b->len[i]);
		fclose(f);
		n += snprintf(cmd + n, sizeof(cmd) - n, " %s", path);
		assert_true(n < sizeof(cmd));
	}
	f = popen(cmd, "r");
	assert_non_null(f);
	for (;;) {
		char chunk[4096];
		size_t k = fread(chunk, 1, sizeof(chunk), f);

		if (k == 0)
			break;
		sb_printf(&out, "%.*s", (int)k, chunk);
	}
	*status = pclose(f);
	for (size_t i = 0; i < b->n; i++) {
		snprintf(path, sizeof(path), "%s/req%zu.bin", dir, i);
		unlink(path);
	}
	rmdir(dir);
	if (!out.s)
		fail_msg("otlpcheck printed nothing (status %d)", *status);
	/* OTLP_TEST_VERBOSE=1 shows what the decoder saw. */
	if (getenv("OTLP_TEST_VERBOSE"))
		fprintf(stderr, "%s\n", out.s);
	return out.s;
}

static void expect_in(const char *json, const char *needle)
{
	if (!strstr(json, needle))
		fail_msg("otlpcheck output lacks %s:\n%s", needle, json);
}

/* otlpcheck must accept everything, warn about nothing, and count every event. */
static char *check_with_otlpcheck(const struct profile *p, const struct bufs *b)
{
	uint64_t events = 0, samples = profile__nsamples(p);
	char want[256];
	const char *s;
	int status;
	char *json = run_otlpcheck(b, &status);

	if (status != 0)
		fail_msg("otlpcheck exit status %d:\n%s", status, json);
	expect_in(json, "\"ok\":true");
	expect_in(json, "\"errors\":[]");
	expect_in(json, "\"warnings\":[]");
	/* Sum the per-message totals. */
	for (s = json; (s = strstr(s, "\"totals\":{")); s++) {
		unsigned long long rp, pr, sm, ev;

		if (sscanf(s,
			   "\"totals\":{\"resource_profiles\":%llu,\"profiles\":%llu,"
			   "\"samples\":%llu,\"events\":%llu}",
			   &rp, &pr, &sm, &ev) != 4)
			fail_msg("unexpected totals in %s", json);
		events += ev;
		samples -= sm;
	}
	snprintf(want, sizeof(want), "%" PRIu64, profile__total_count(p));
	if (events != profile__total_count(p) || samples != 0)
		fail_msg("otlpcheck counted %" PRIu64 " events (want %s), %" PRIu64
			 " samples too few:\n%s",
			 events, want, samples, json);
	return json;
}

/* --- tests ------------------------------------------------------------------------------------ */

static struct otlp_encode_opts test_opts(int *calls)
{
	return (struct otlp_encode_opts){
	    .host_name = "testhost",
	    .scope_name = "spanprof",
	    .scope_version = "9.9.9-test",
	    .process_meta = fake_meta,
	    .ctx = calls,
	};
}

static void test_encode_fields(void **state)
{
	struct ids ids;
	struct profile *p = make_profile(&ids);
	int calls = 0;
	struct otlp_encode_opts o = test_opts(&calls);
	struct check_opts co = {.host = "testhost", .meta = true};
	struct bufs b = {0};
	pb_request *req;
	const pb_dict *d;
	char path[PATH_MAX], *htl_large, *htl_small;
	const pb_profile *prof[3];

	setup_meta100();
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	assert_int_equal(b.n, 1);   /* small: one request */
	assert_int_equal(calls, 3); /* metadata asked once per process */
	check_all(p, &b, &co, OTLP_DEFAULT_MAX_REQUEST);

	/* Details the generic check does not cover. */
	req = REQ_UNPACK(NULL, b.len[0], b.buf[0]);
	assert_non_null(req);
	d = req->dictionary;
	assert_int_equal(req->n_resource_profiles, 3);
	for (int i = 0; i < 3; i++)
		prof[i] = req->resource_profiles[i]->scope_profiles[0]->profiles[0];
	/* Ascending pid order: 100, 200, 300. */
	assert_any_int(resource_attr(req->resource_profiles[0]->resource, "process.pid"), 100);
	assert_any_int(resource_attr(req->resource_profiles[2]->resource, "process.pid"), 300);
	/* The process's own service.name and host.name are not overridden by its attributes. */
	assert_any_string(resource_attr(req->resource_profiles[0]->resource, "host.name"),
			  "testhost");
	/* pid 100: the meta window exactly; 200: widened both ways; 300: values. */
	assert_int_equal(prof[0]->time_unix_nano, T0);
	assert_int_equal(prof[0]->duration_nano, DURATION);
	assert_int_equal(prof[1]->time_unix_nano, T0 - 500);
	assert_int_equal(prof[1]->duration_nano, DURATION + 7 + 500 + 1);
	assert_int_equal(prof[2]->n_samples, 2);
	assert_int_equal(prof[2]->samples[0]->n_values, 1);
	assert_int_equal(prof[2]->samples[0]->values[0], 3);
	assert_int_equal(prof[2]->samples[1]->values[0], 1);
	assert_int_equal(prof[2]->samples[1]->n_timestamps_unix_nano, 0);
	assert_int_equal(prof[0]->n_samples, 5); /* two events of tid 101 on cpu 0 are one sample */
	assert_int_equal(prof[0]->samples[0]->n_timestamps_unix_nano, 2);
	assert_memory_not_equal(prof[0]->profile_id.data, prof[1]->profile_id.data, 16);
	assert_memory_not_equal(prof[0]->profile_id.data, (uint8_t[16]){0}, 16);

	/* Mappings: build ids and htlhash of the fixture files. */
	htl_large = read_text(fixture("htl-large.bin.htlhash", path, sizeof(path)));
	htl_small = read_text(fixture("htl-small.bin.htlhash", path, sizeof(path)));
	assert_int_equal(d->n_mapping_table, 3);
	for (size_t i = 1; i < d->n_mapping_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Mapping *m =
		    d->mapping_table[i];
		const char *file = dstr(d, m->filename_strindex);
		const pb_any *gnu = find_attr(d, m->attribute_indices, m->n_attribute_indices,
					      "process.executable.build_id.gnu");
		const pb_any *htl = find_attr(d, m->attribute_indices, m->n_attribute_indices,
					      "process.executable.build_id.htlhash");

		if (strcmp(file, ids.exe_path) == 0) {
			assert_int_equal(m->memory_start, 0x400000);
			assert_int_equal(m->memory_limit, 0x500000);
			assert_any_string(gnu, "0123456789abcdef0123456789abcdef01234567");
			assert_any_string(htl, htl_large);
		} else {
			assert_string_equal(file, ids.lib_path);
			assert_int_equal(m->file_offset, 0x1000);
			assert_null(gnu);
			assert_any_string(htl, htl_small);
		}
	}
	/* One attribute entry per distinct value, shared by samples and processes. */
	{
		size_t ntid = 0;

		for (size_t i = 1; i < d->n_attribute_table; i++)
			if (strcmp(dstr(d, d->attribute_table[i]->key_strindex), "thread.id") == 0)
				ntid++;
		assert_int_equal(ntid, 6); /* 100, 101, 102, 200, 201, 300 */
	}
	REQ_FREE(req, NULL);
	free(htl_large);
	free(htl_small);

	/* (b) The Collector's decoder agrees. */
	{
		char *json = check_with_otlpcheck(p, &b);

		/* Inline chain innermost first, physical function after it, leaf first. */
		expect_in(json, "\"frames\":[\"inlined_helper\",\"work(int)\",\"main\"]");
		expect_in(json, "\"frame_types\":[\"kernel\",\"kernel\",\"native\",\"native\"]");
		expect_in(json, "\"frame_types\":[\"go\",\"native\"]");
		expect_in(json,
			  "\"sample_type\":\"samples:count\",\"period_type\":\"cpu:nanoseconds\"");
		expect_in(json, "\"attributes\":{\"cpu.logical_number\":1,\"thread.id\":102,"
				"\"thread.name\":\"helper\"}");
		expect_in(json, "\"service.name\":\"svc-a\"");
		expect_in(json, "\"service.name\":\"unknown_service:daemon\"");
		expect_in(json, "\"name\":\"spanprof\",\"version\":\"9.9.9-test\"");
		expect_in(json, "\"container.id\":\"3f4b6c1d2e9a8b7c6d5e4f30211203a4b5c6d7e8f9a0b1"
				"c2d3e4f5a6b7c8d9e0\"");
		free(json);
	}
	bufs_free(&b);
	profile__free(p);
}

static void test_encode_defaults_and_errors(void **state)
{
	struct ids ids;
	struct profile *p = make_profile(&ids), *empty = profile__new();
	struct bufs b = {0};
	struct otlp_encode_opts o = {.max_request_bytes = 64, .no_file_hash = 1};

	/* No samples: nothing emitted. */
	assert_int_equal(otlp__encode(empty, NULL, collect, &b), 0);
	assert_int_equal(b.n, 0);
	/* A limit smaller than one sample. */
	assert_int_equal(otlp__encode(p, &o, collect, &b), -E2BIG);
	bufs_free(&b);
	/* The emit callback's error stops the encoding. */
	b.fail_at = 1;
	assert_int_equal(otlp__encode(p, NULL, collect, &b), -EPIPE);
	assert_int_equal(b.n, 0);
	bufs_free(&b);

	/* All defaults (NULL options): still valid, gethostname() as host.name. */
	assert_int_equal(otlp__encode(p, NULL, collect, &b), 0);
	assert_int_equal(b.n, 1);
	{
		pb_request *req = REQ_UNPACK(NULL, b.len[0], b.buf[0]);
		char host[256] = "";

		assert_non_null(req);
		gethostname(host, sizeof(host) - 1);
		check_dictionary(req->dictionary);
		assert_string_equal(req->resource_profiles[0]->scope_profiles[0]->scope->name,
				    "spanprof");
		assert_any_string(resource_attr(req->resource_profiles[0]->resource, "host.name"),
				  host);
		assert_any_string(
		    resource_attr(req->resource_profiles[0]->resource, "service.name"),
		    "unknown_service:app");
		REQ_FREE(req, NULL);
	}
	free(check_with_otlpcheck(p, &b));
	bufs_free(&b);

	/* host.name "" means none; no_file_hash means no htlhash. */
	o = (struct otlp_encode_opts){.host_name = "", .no_file_hash = 1};
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	{
		pb_request *req = REQ_UNPACK(NULL, b.len[0], b.buf[0]);
		const pb_dict *d = req->dictionary;

		assert_null(resource_attr(req->resource_profiles[0]->resource, "host.name"));
		for (size_t i = 1; i < d->n_string_table; i++)
			assert_string_not_equal(d->string_table[i],
						"process.executable.build_id.htlhash");
		REQ_FREE(req, NULL);
	}
	bufs_free(&b);
	profile__free(p);
	profile__free(empty);
}

/* --k8s: the Kubernetes attributes known, and the agent's node name on every resource. */
static struct procmeta k8s_meta100;

static int k8s_meta(void *ctx, uint32_t pid, const struct procmeta **out)
{
	if (pid != 100 && pid != 200)
		return -ESRCH;
	*out = pid == 100 ? &k8s_meta100 : ctx;
	return 0;
}

static void test_encode_k8s_attributes(void **state)
{
	static char svc[] = "checkout", pod[] = "checkout-7d9f", ns[] = "shop";
	static char k1[] = "k8s.pod.name", v1[] = "from-the-environment";
	static char k2[] = "k8s.deployment.name", v2[] = "checkout";
	struct procmeta_attr attrs[2] = {{k1, v1}, {k2, v2}};
	struct procmeta_k8s k8s = {.pod_name = pod, .namespace = ns};
	/* pid 200: a pod uid in its cgroup path, but no --k8s names: no k8s.pod.uid either. */
	struct procmeta meta200 = {.service_name = svc};
	struct otlp_encode_opts o = {.host_name = "h",
				     .no_file_hash = 1,
				     .process_meta = k8s_meta,
				     .ctx = &meta200,
				     .k8s_node_name = "node-1"};
	struct ids ids;
	struct profile *p = make_profile(&ids);
	struct bufs b = {0};
	pb_request *req;
	int seen = 0;

	memset(&k8s_meta100, 0, sizeof(k8s_meta100));
	k8s_meta100.service_name = svc;
	k8s_meta100.k8s = &k8s;
	k8s_meta100.attrs = attrs;
	k8s_meta100.nattrs = 2;
	strcpy(k8s_meta100.pod_uid, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
	strcpy(meta200.pod_uid, k8s_meta100.pod_uid);

	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	assert_int_equal(b.n, 1);
	req = REQ_UNPACK(NULL, b.len[0], b.buf[0]);
	assert_non_null(req);
	for (size_t i = 0; i < req->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Resource__V1__Resource *res =
		    req->resource_profiles[i]->resource;
		int64_t pid = resource_attr(res, "process.pid")->int_value;

		/* Every resource: the node. resource_attr() also asserts that keys are unique. */
		assert_any_string(resource_attr(res, "k8s.node.name"), "node-1");
		if (pid == 100) {
			seen++;
			assert_any_string(resource_attr(res, "k8s.pod.uid"),
					  "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
			/* The kubelet's name wins over the process's own claim. */
			assert_any_string(resource_attr(res, "k8s.pod.name"), "checkout-7d9f");
			assert_any_string(resource_attr(res, "k8s.namespace.name"), "shop");
			assert_null(resource_attr(res, "k8s.container.name"));
			/* Attributes spanprof does not set are the process's. */
			assert_any_string(resource_attr(res, "k8s.deployment.name"), "checkout");
		} else {
			seen += pid == 200;
			assert_null(resource_attr(res, "k8s.pod.uid"));
			assert_null(resource_attr(res, "k8s.pod.name"));
		}
	}
	assert_int_equal(seen, 2);
	REQ_FREE(req, NULL);
	free(check_with_otlpcheck(p, &b));
	bufs_free(&b);

	/* Without a node name (no --k8s): no k8s.* at all for a process without names. */
	o.k8s_node_name = NULL;
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	req = REQ_UNPACK(NULL, b.len[0], b.buf[0]);
	assert_non_null(req);
	for (size_t i = 0; i < req->n_resource_profiles; i++)
		assert_null(resource_attr(req->resource_profiles[i]->resource, "k8s.node.name"));
	REQ_FREE(req, NULL);
	bufs_free(&b);
	profile__free(p);
}

static void test_htlhash_file(void **state)
{
	char path[PATH_MAX], hex[33];
	char *want;

	want = read_text(fixture("htl-large.bin.htlhash", path, sizeof(path)));
	assert_int_equal(otlp__htlhash_file(fixture("htl-large.bin", path, sizeof(path)), hex), 0);
	assert_string_equal(hex, want);
	free(want);
	want = read_text(fixture("htl-small.bin.htlhash", path, sizeof(path)));
	assert_int_equal(otlp__htlhash_file(fixture("htl-small.bin", path, sizeof(path)), hex), 0);
	assert_string_equal(hex, want);
	free(want);
	assert_int_equal(otlp__htlhash_file("/nonexistent/file", hex), -ENOENT);
	assert_int_equal(otlp__htlhash_file("/tmp", hex), -EINVAL);
}

/* Hashes are remembered per file identity: a rewritten file is hashed again. */
static void test_htlhash_cache_follows_file_changes(void **state)
{
	char dir[] = "/tmp/spanprof-htl-XXXXXX", path[PATH_MAX], first[33], again[33], changed[33];
	struct timespec later[2] = {{0, UTIME_OMIT}, {2000000000, 0}};
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	f = fopen(path, "w");
	fputs("first content", f);
	fclose(f);
	assert_int_equal(otlp__htlhash_file(path, first), 0);
	assert_int_equal(otlp__htlhash_file(path, again), 0);
	assert_string_equal(first, again);
	/* Same size, other bytes, other mtime: the cached value must not be reused. */
	f = fopen(path, "w");
	fputs("other content", f);
	fclose(f);
	assert_int_equal(utimensat(AT_FDCWD, path, later, 0), 0);
	assert_int_equal(otlp__htlhash_file(path, changed), 0);
	assert_string_not_equal(first, changed);
	unlink(path);
	rmdir(dir);
}

/*
 * Many processes and stacks, deterministic. With @nlinks, most samples are in one of
 * @nlinks spans (and then carry one of three context attribute sets).
 */
static struct profile *make_big_profile(uint32_t nproc, uint32_t per_proc, uint32_t nstacks,
					uint32_t nlinks)
{
	struct profile *p = profile__new();
	struct profile_meta meta = {T0, DURATION, PERIOD, 100};
	uint32_t *stacks = calloc(nstacks, sizeof(*stacks));
	uint32_t sets[3] = {0};
	uint64_t rnd = 42;

	assert_non_null(p);
	assert_non_null(stacks);
	profile__set_meta(p, &meta);
	for (uint32_t s = 0; s < nstacks; s++) {
		uint32_t locs[12], depth = 2 + s % 10;
		char name[64];
		struct profile_mapping m = {0x400000 + 0x100000ull * (s % 7),
					    0x500000 + 0x100000ull * (s % 7), 0, 0, 0};
		uint32_t mi;

		snprintf(name, sizeof(name), "/usr/lib/lib%u.so", s % 7);
		m.filename = str(p, name);
		mi = profile__intern_mapping(p, &m);
		for (uint32_t d = 0; d < depth; d++) {
			struct profile_line l;

			snprintf(name, sizeof(name), "fn_%u_%u", s % 13, d);
			l.function = func(p, name, name, "/src/gen.c");
			l.line = d + 1;
			locs[d] =
			    loc(p, mi, m.memory_start + 16 * (s % 13) + d, FRAME_NATIVE, &l, 1);
		}
		stacks[s] = profile__intern_stack(p, locs, depth);
		assert_true(stacks[s] != 0);
	}
	if (nlinks) {
		struct profile_attr a[2] = {{str(p, "http.route"), str(p, "/api/items")},
					    {str(p, "tenant"), str(p, "acme")}};

		sets[1] = profile__intern_attrset(p, a, 2);
		sets[2] = profile__intern_attrset(p, a, 1);
		a[0].value = str(p, "/api/users");
		sets[0] = profile__intern_attrset(p, a, 1);
		assert_true(sets[0] && sets[1] && sets[2]);
	}
	for (uint32_t pr = 0; pr < nproc; pr++) {
		char comm[32];

		snprintf(comm, sizeof(comm), "proc%u", pr);
		for (uint32_t i = 0; i < per_proc; i++) {
			uint32_t li = nlinks ? (i * 7 + pr * 3) % (nlinks + 1) : 0;

			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			add_linked(p, stacks[(rnd >> 33) % nstacks], 1000 + pr, 1000 + pr + (i % 4),
				   (rnd >> 20) % 8, comm, comm, T0 + (rnd >> 30) % DURATION, 1,
				   li ? intern_link(p, li) : 0, li ? sets[(i + pr) % 3] : 0);
		}
	}
	free(stacks);
	return p;
}

static void count_pid_requests(const struct bufs *b, uint32_t pid, size_t *nreq)
{
	*nreq = 0;
	for (size_t i = 0; i < b->n; i++) {
		pb_request *req = REQ_UNPACK(NULL, b->len[i], b->buf[i]);

		assert_non_null(req);
		for (size_t r = 0; r < req->n_resource_profiles; r++)
			if (resource_attr(req->resource_profiles[r]->resource, "process.pid")
				->int_value == pid)
				(*nreq)++;
		REQ_FREE(req, NULL);
	}
}

/*
 * Whole processes are kept together: a pid found in several requests must be alone in all
 * of them but the last one (its tail may share a request with the processes after it).
 */
static void assert_split_only_alone(const struct bufs *b)
{
	uint32_t seen[65536] = {0};

	for (size_t i = 0; i < b->n; i++) {
		pb_request *req = REQ_UNPACK(NULL, b->len[i], b->buf[i]);

		assert_non_null(req);
		for (size_t r = 0; r < req->n_resource_profiles; r++) {
			uint32_t pid = (uint32_t)resource_attr(req->resource_profiles[r]->resource,
							       "process.pid")
					   ->int_value;
			size_t n;

			assert_true(pid < 65536);
			count_pid_requests(b, pid, &n);
			if (++seen[pid] < n && req->n_resource_profiles != 1)
				fail_msg("pid %u is split over %zu requests but shares request %zu "
					 "(part %u)",
					 pid, n, i, seen[pid]);
		}
		REQ_FREE(req, NULL);
	}
}

static void test_split_whole_processes(void **state)
{
	/* Few, shallow stacks: samples, not the dictionary, make the size. */
	struct profile *p = make_big_profile(12, 40, 3, 0);
	struct otlp_encode_opts o = {
	    .host_name = "h", .scope_version = "9.9.9-test", .no_file_hash = 1};
	struct check_opts co = {.host = "h"};
	struct bufs one = {0}, b = {0};

	/* First, everything in one request: its size sets a limit that forces splits. */
	assert_int_equal(otlp__encode(p, &o, collect, &one), 0);
	assert_int_equal(one.n, 1);
	o.max_request_bytes = one.len[0] / 3;
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	assert_true(b.n >= 3);
	check_all(p, &b, &co, o.max_request_bytes);
	/* Processes are grouped, and none is split (each fits alone). */
	assert_true(b.n < 12);
	for (uint32_t pid = 1000; pid < 1012; pid++) {
		size_t n;

		count_pid_requests(&b, pid, &n);
		assert_int_equal(n, 1);
	}
	free(check_with_otlpcheck(p, &b));
	print_message("  %zu bytes in one request; limit %zu: %zu requests, largest %zu\n",
		      one.len[0], o.max_request_bytes, b.n, b.max_seen);
	bufs_free(&one);
	bufs_free(&b);
	profile__free(p);
}

/*
 * Encodes @p with request limits from 300 bytes to @hi in steps of 25: -E2BIG is accepted only
 * below the smallest workable limit, every limit from there on must work and be respected
 * (check_all). Returns that smallest limit; fails the test when no limit works.
 */
static size_t sweep_limits(const struct profile *p, struct otlp_encode_opts *o,
			   const struct check_opts *co, size_t hi)
{
	struct bufs b = {0};
	size_t smallest = 0;

	for (size_t lim = 300; lim <= hi; lim += 25) {
		int err;

		o->max_request_bytes = lim;
		err = otlp__encode(p, o, collect, &b);
		if (err == -E2BIG && !smallest) {
			bufs_free(&b);
			continue;
		}
		assert_int_equal(err, 0);
		if (!smallest)
			smallest = lim;
		check_all(p, &b, co, lim);
		bufs_free(&b);
	}
	assert_true(smallest);
	return smallest;
}

static void test_split_one_process(void **state)
{
	struct profile *p = make_big_profile(1, 600, 50, 0);
	struct otlp_encode_opts o = {.host_name = "h",
				     .scope_version = "9.9.9-test",
				     .no_file_hash = 1,
				     .max_request_bytes = 3000};
	struct check_opts co = {.host = "h"};
	struct bufs b = {0};
	size_t n;

	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	assert_true(b.n >= 4);
	check_all(p, &b, &co, o.max_request_bytes);
	count_pid_requests(&b, 1000, &n);
	assert_int_equal(n, b.n); /* the one process, in every request */
	free(check_with_otlpcheck(p, &b));
	print_message("  limit %zu: %zu requests, largest %zu\n", o.max_request_bytes, b.n,
		      b.max_seen);
	bufs_free(&b);

	/*
	 * Around the smallest workable limit: below it -E2BIG, from it on every limit works
	 * and is respected.
	 */
	print_message("  smallest workable limit: %zu bytes\n", sweep_limits(p, &o, &co, 2000));
	profile__free(p);
}

static void test_split_mixed(void **state)
{
	/* Processes of very different sizes: small ones grouped, the big one split. */
	struct profile *q = make_big_profile(6, 10, 40, 0);
	struct otlp_encode_opts o = {.host_name = "h",
				     .scope_version = "9.9.9-test",
				     .no_file_hash = 1,
				     .max_request_bytes = 4000};
	struct check_opts co = {.host = "h"};
	struct bufs b = {0};

	/* Make pid 1003 large. */
	for (uint32_t i = 0; i < 400; i++)
		add(q, 1 + i % (profile__nstacks(q) - 1), 1003, 5000 + i % 50, i % 4, "big", "big",
		    T0 + 1000 * i, 1);
	assert_int_equal(otlp__encode(q, &o, collect, &b), 0);
	check_all(q, &b, &co, o.max_request_bytes);
	assert_split_only_alone(&b);
	{
		size_t n;

		count_pid_requests(&b, 1003, &n);
		assert_true(n >= 2);
		for (uint32_t pid = 1000; pid < 1006; pid++) {
			count_pid_requests(&b, pid, &n);
			if (pid != 1003)
				assert_int_equal(n, 1);
		}
	}
	free(check_with_otlpcheck(q, &b));
	bufs_free(&b);
	profile__free(q);
}

/* Index of the link with these ids in the request's link_table, 0 if none; fails if twice. */
static int32_t find_link(const pb_dict *d, const struct profile_link *l)
{
	int32_t found = 0;

	for (size_t i = 1; i < d->n_link_table; i++) {
		if (!memcmp(d->link_table[i]->trace_id.data, l->trace_id, 16) &&
		    !memcmp(d->link_table[i]->span_id.data, l->span_id, 8)) {
			assert_int_equal(found, 0);
			found = (int32_t)i;
		}
	}
	return found;
}

/* Attribute table entries with this key and string value. */
static size_t count_attr(const pb_dict *d, const char *key, const char *value)
{
	size_t n = 0;

	for (size_t i = 1; i < d->n_attribute_table; i++) {
		const pb_kvu *a = d->attribute_table[i];

		if (!strcmp(dstr(d, a->key_strindex), key) && a->value->value_case == ANY_STRING &&
		    !strcmp(a->value->string_value, value))
			n++;
	}
	return n;
}

/*
 * make_profile() plus samples in spans: pid 100 runs st_user on tid 101 / cpu 0 outside any
 * span (from make_profile), in span A, in span B, and in span A with context attributes;
 * pid 400 runs in span A too (one link for both processes) and in span C. Span D is in the
 * profile but no sample uses it.
 */
static struct profile *make_linked_profile(struct ids *ids, uint32_t link[4], uint32_t set[3])
{
	struct profile *p = make_profile(ids);
	struct profile_attr a[2];

	for (uint32_t i = 0; i < 4; i++)
		link[i] = intern_link(p, 1 + i);
	a[0] = (struct profile_attr){str(p, "http.route"), str(p, "/api/v1")};
	a[1] = (struct profile_attr){str(p, "enduser.id"), str(p, "alice")};
	set[0] = profile__intern_attrset(p, a, 2);
	set[1] = profile__intern_attrset(p, a, 1); /* shares http.route=/api/v1 */
	/* A value equal to a thread name, and an empty value. */
	a[0].value = str(p, "worker");
	a[1].value = 0;
	set[2] = profile__intern_attrset(p, a, 2);
	assert_true(set[0] && set[1] && set[2]);

	add_linked(p, ids->st_user, 100, 101, 0, "worker", "app", T0 + 6000, 1, link[0], 0);
	add_linked(p, ids->st_user, 100, 101, 0, "worker", "app", T0 + 6500, 1, link[0], 0);
	add_linked(p, ids->st_user, 100, 101, 0, "worker", "app", T0 + 7000, 1, link[1], 0);
	add_linked(p, ids->st_user, 100, 101, 0, "worker", "app", T0 + 8000, 1, link[0], set[0]);
	add_linked(p, ids->st_user, 100, 101, 0, "worker", "app", T0 + 8500, 1, 0, set[1]);
	add_linked(p, ids->st_inline, 100, 102, 1, "helper", "app", T0 + 9000, 1, link[1], set[2]);
	add_linked(p, ids->st_kernel, 400, 400, 3, "linked", "linked", T0 + 100, 1, link[0],
		   set[1]);
	add_linked(p, ids->st_kernel, 400, 400, 3, "linked", "linked", T0 + 200, 1, link[2],
		   set[0]);
	return p;
}

static void test_encode_links_and_context(void **state)
{
	struct ids ids;
	uint32_t link[4], set[3];
	struct profile *p = make_linked_profile(&ids, link, set);
	int calls = 0;
	struct otlp_encode_opts o = test_opts(&calls);
	struct check_opts co = {.host = "testhost", .meta = true};
	struct bufs b = {0};
	int32_t want[4];
	pb_request *req;
	const pb_dict *d;

	setup_meta100();
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	assert_int_equal(b.n, 1);
	/* Every sample with its link and its attributes, links used and each once. */
	check_all(p, &b, &co, OTLP_DEFAULT_MAX_REQUEST);

	req = REQ_UNPACK(NULL, b.len[0], b.buf[0]);
	assert_non_null(req);
	d = req->dictionary;
	/* The empty Link and the three links samples use; not the unused one. */
	assert_int_equal(d->n_link_table, 4);
	for (int i = 0; i < 4; i++)
		want[i] = find_link(d, profile__link(p, link[i]));
	assert_true(want[0] > 0 && want[1] > 0 && want[2] > 0);
	assert_int_equal(want[3], 0);
	/* Context attributes: one entry per distinct (key, value), key by string index. */
	assert_int_equal(count_attr(d, "http.route", "/api/v1"), 1);
	assert_int_equal(count_attr(d, "http.route", "worker"), 1);
	assert_int_equal(count_attr(d, "enduser.id", "alice"), 1);
	assert_int_equal(count_attr(d, "enduser.id", ""), 1);

	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const pb_profile *pr = req->resource_profiles[r]->scope_profiles[0]->profiles[0];
		int64_t pid =
		    resource_attr(req->resource_profiles[r]->resource, "process.pid")->int_value;
		size_t on_user = 0, seen_mask = 0;

		for (size_t i = 0; i < pr->n_samples; i++) {
			const pb_sample *s = pr->samples[i];
			const int32_t *ai = s->attribute_indices;
			size_t na = s->n_attribute_indices;
			const pb_any *route = find_attr(d, ai, na, "http.route");
			const pb_any *user = find_attr(d, ai, na, "enduser.id");

			if (pid == 400) {
				/* Span A shares its entry with pid 100's span A. */
				assert_true(s->link_index == want[0] || s->link_index == want[2]);
				assert_any_string(route, "/api/v1");
				if (s->link_index == want[2])
					assert_any_string(user, "alice");
				else
					assert_null(user);
				continue;
			}
			if (find_attr(d, ai, na, "thread.id")->int_value != 101 ||
			    find_attr(d, ai, na, "cpu.logical_number")->int_value != 0)
				continue;
			/* One stack on one thread and cpu: one sample per {link, attributes}. */
			on_user++;
			if (s->link_index == 0 && !route) {
				seen_mask |= 1; /* make_profile's two events */
				assert_int_equal(s->n_timestamps_unix_nano, 2);
			} else if (s->link_index == 0) {
				seen_mask |= 2;
				assert_any_string(route, "/api/v1");
				assert_null(user);
			} else if (s->link_index == want[0] && !route) {
				seen_mask |= 4;
				assert_int_equal(s->n_timestamps_unix_nano, 2);
				assert_int_equal(s->timestamps_unix_nano[0], T0 + 6000);
				assert_int_equal(s->timestamps_unix_nano[1], T0 + 6500);
			} else if (s->link_index == want[0]) {
				seen_mask |= 8;
				assert_any_string(route, "/api/v1");
				assert_any_string(user, "alice");
			} else {
				seen_mask |= 16;
				assert_int_equal(s->link_index, want[1]);
				assert_null(route);
				assert_null(user);
			}
		}
		if (pid == 100) {
			assert_int_equal(on_user, 5);
			assert_int_equal(seen_mask, 31);
		}
	}
	REQ_FREE(req, NULL);

	/* The Collector's decoder sees the same links and attributes. */
	{
		char *json = check_with_otlpcheck(p, &b);
		struct sb want_link = {0};

		sb_printf(&want_link, "\"link\":{\"trace_id\":\"");
		sb_hex(&want_link, profile__link(p, link[0])->trace_id, 16);
		sb_printf(&want_link, "\",\"span_id\":\"");
		sb_hex(&want_link, profile__link(p, link[0])->span_id, 8);
		sb_printf(&want_link, "\"}");
		expect_in(json, want_link.s);
		/* Span A: 3 events in pid 100 (2 + 1 with attributes), 1 in pid 400. */
		want_link.s[want_link.n - 1] = '\0';
		sb_printf(&want_link, ",\"events\":3}");
		expect_in(json, want_link.s + strlen("\"link\":"));
		expect_in(json, "\"attributes\":{\"cpu.logical_number\":0,\"enduser.id\":\"alice\","
				"\"http.route\":\"/api/v1\",\"thread.id\":101,"
				"\"thread.name\":\"worker\"}");
		expect_in(json, "\"attributes\":{\"cpu.logical_number\":1,\"enduser.id\":\"\","
				"\"http.route\":\"worker\","
				"\"thread.id\":102,\"thread.name\":\"helper\"}");
		free(want_link.s);
		free(json);
	}
	bufs_free(&b);
	profile__free(p);
}

/* Samples in spans over split requests: each request holds the links it needs, no more. */
static void test_split_links(void **state)
{
	struct otlp_encode_opts o = {
	    .host_name = "h", .scope_version = "9.9.9-test", .no_file_hash = 1};
	struct check_opts co = {.host = "h"};
	struct profile *p = make_big_profile(12, 40, 3, 10);
	struct bufs one = {0}, b = {0};
	size_t links_sent = 0;

	/* Many processes, grouped in requests. */
	assert_int_equal(otlp__encode(p, &o, collect, &one), 0);
	assert_int_equal(one.n, 1);
	o.max_request_bytes = one.len[0] / 3;
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	assert_true(b.n >= 3);
	check_all(p, &b, &co, o.max_request_bytes);
	free(check_with_otlpcheck(p, &b));
	bufs_free(&one);
	bufs_free(&b);
	profile__free(p);

	/* One process over many requests: links repeat where their samples do. */
	p = make_big_profile(1, 600, 50, 40);
	o.max_request_bytes = 3000;
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	assert_true(b.n >= 4);
	check_all(p, &b, &co, o.max_request_bytes);
	free(check_with_otlpcheck(p, &b));
	for (size_t i = 0; i < b.n; i++) {
		pb_request *req = REQ_UNPACK(NULL, b.len[i], b.buf[i]);

		assert_non_null(req);
		assert_true(req->dictionary->n_link_table > 1);
		links_sent += req->dictionary->n_link_table - 1;
		REQ_FREE(req, NULL);
	}
	assert_true(links_sent > 40);
	print_message("  limit %zu: %zu requests, %zu links sent for 40 spans\n",
		      o.max_request_bytes, b.n, links_sent);
	bufs_free(&b);

	/* Every workable limit: rolled-back samples leave no link behind. */
	sweep_limits(p, &o, &co, 2500);
	profile__free(p);
}

static int count_emit(void *ctx, const uint8_t *buf, size_t len, uint64_t samples, uint32_t type)
{
	*(size_t *)ctx += len;
	return 0;
}

static void test_encode_speed(void **state)
{
	struct profile *p = make_big_profile(200, 250, 2000, 0); /* 50k samples */
	struct otlp_encode_opts o = {.host_name = "h", .no_file_hash = 1};
	struct timespec t0, t1;
	size_t bytes = 0;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(otlp__encode(p, &o, count_emit, &bytes), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	print_message("  %u samples -> %zu bytes in %.1f ms\n", profile__nsamples(p), bytes, ms);
	/* Generous: it runs every 5 s and must stay a small fraction of that. */
	assert_true(ms < 1000);
	profile__free(p);
}

/* Per request: value sums per "type/unit" Profile, events, and the lock addresses seen. */
struct type_sums {
	char name[8][64];
	int64_t sum[8];
	size_t nvalues[8];
	uint32_t n;
	uint32_t max_profiles_per_resource;
	uint32_t resources; /* ResourceProfiles seen */
	int64_t lock_addr;
};

static void sum_types(const uint8_t *buf, size_t len, struct type_sums *t)
{
	pb_request *req = REQ_UNPACK(NULL, len, buf);
	const pb_dict *d;

	assert_non_null(req);
	d = req->dictionary;
	check_dictionary(d);
	t->resources += (uint32_t)req->n_resource_profiles;
	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
		    req->resource_profiles[r]->scope_profiles[0];

		for (size_t k = 0; k < r; k++) /* one ResourceProfiles per process */
			assert_true(
			    resource_attr(req->resource_profiles[k]->resource, "process.pid")
				->int_value !=
			    resource_attr(req->resource_profiles[r]->resource, "process.pid")
				->int_value);
		if (sp->n_profiles > t->max_profiles_per_resource)
			t->max_profiles_per_resource = (uint32_t)sp->n_profiles;
		for (size_t i = 0; i < sp->n_profiles; i++) {
			const pb_profile *pr = sp->profiles[i];
			char name[64];
			uint32_t j;

			snprintf(name, sizeof(name), "%s/%s",
				 dstr(d, pr->sample_type->type_strindex),
				 dstr(d, pr->sample_type->unit_strindex));
			for (j = 0; j < t->n && strcmp(t->name[j], name); j++)
				;
			if (j == t->n) {
				assert_true(t->n < 8);
				strcpy(t->name[t->n++], name);
			}
			for (size_t k = 0; k < pr->n_samples; k++) {
				const pb_sample *sm = pr->samples[k];
				const pb_any *a =
				    find_attr(d, sm->attribute_indices, sm->n_attribute_indices,
					      "lock.address");

				if (sm->n_values && !sm->n_timestamps_unix_nano &&
				    !strcmp(name, "samples/count")) {
					/* CPU samples with counts, not a time per event. */
					assert_int_equal(sm->n_values, 1);
					t->sum[j] += sm->values[0];
					t->nvalues[j] += 1;
				} else if (sm->n_values) {
					/* Event profiles: a value per event, each with its time. */
					assert_int_equal(sm->n_values, sm->n_timestamps_unix_nano);
					for (size_t v = 0; v < sm->n_values; v++)
						t->sum[j] += sm->values[v];
					t->nvalues[j] += sm->n_values;
				} else {
					t->sum[j] += (int64_t)sm->n_timestamps_unix_nano;
				}
				for (size_t v = 0; v < sm->n_timestamps_unix_nano; v++) {
					assert_true(sm->timestamps_unix_nano[v] >=
						    pr->time_unix_nano);
					assert_true(sm->timestamps_unix_nano[v] <
						    pr->time_unix_nano + pr->duration_nano);
				}
				if (a) {
					assert_int_equal(a->value_case, ANY_INT);
					t->lock_addr = a->int_value;
				}
			}
		}
	}
	REQ_FREE(req, NULL);
}

static int64_t type_sum(const struct type_sums *t, const char *name)
{
	for (uint32_t j = 0; j < t->n; j++)
		if (!strcmp(t->name[j], name))
			return t->sum[j];
	fail_msg("no %s Profile", name);
	return -1;
}

/* 1 when Profile name "type/unit" is one the encoder sends for profile type @type. */
static int name_of_type(const char *name, uint32_t type)
{
	const struct profile_type_info *ti = profile__type_info(type);
	char want[64];

	for (uint32_t w = 0; ti && w < ti->nvalues; w++) {
		snprintf(want, sizeof(want), "%s/%s", ti->values[w].type, ti->values[w].unit);
		if ((ti->otlp_values & (1u << w)) && !strcmp(name, want))
			return 1;
	}
	return 0;
}

/*
 * Each profile type goes in requests of its own (a backend refusing one type must not take
 * the others with it): one request per type when they fit, each self-contained (its own
 * dictionary, otlpcheck accepts it) with one ResourceProfiles per process and one Profile per
 * value of the type (CPU: samples/count with timestamps; alloc: two; lock: two; offcpu:
 * off_cpu), a value per event; the samples emit is told per request add up to each type's
 * events; splitting keeps every event exactly once and each request of one type.
 */
static void test_encode_profile_types(void **state)
{
	struct profile *p = profile__new();
	struct profile_meta meta = {.start_unix_nano = T0,
				    .duration_nano = DURATION,
				    .period_nano = PERIOD,
				    .frequency_hz = 100};
	struct otlp_encode_opts o = {
	    .host_name = "h", .scope_version = "9.9.9-test", .no_file_hash = 1};
	struct profile_sample_key k = {0};
	struct type_sums t;
	struct bufs b = {0};
	uint32_t f, l[4], st[4];
	/* Events of each type (enum profile_type order): pid 4242 has 200 of each, pid 5000
	 * 50 CPU and 50 off-CPU. */
	const uint64_t want_events[PROFILE_NTYPES] = {[PROFILE_CPU] = 250,
						      [PROFILE_ALLOC] = 200,
						      [PROFILE_LOCK] = 200,
						      [PROFILE_OFFCPU] = 250};
	int status;
	char *json;

	(void)state;
	assert_non_null(p);
	profile__set_meta(p, &meta);
	for (int i = 0; i < 4; i++) {
		char name[16];
		struct profile_line line;

		snprintf(name, sizeof(name), "fn%d", i);
		f = func(p, name, NULL, NULL);
		line = (struct profile_line){f, 10 + i};
		l[i] = loc(p, 0, 0x1000 + i, FRAME_NATIVE, &line, 1);
		st[i] = profile__intern_stack(p, l, i + 1);
	}
	k.pid = 4242;
	k.tid = 4243;
	k.comm = str(p, "app");
	k.process_name = k.comm;
	for (uint32_t i = 0; i < 200; i++) {
		k.stack = st[i % 4];
		k.type = PROFILE_CPU;
		k.addr = 0;
		assert_int_equal(profile__add_sample(p, &k, T0 + 1000 + i, 1), 0);
		k.type = PROFILE_ALLOC;
		assert_int_equal(profile__add_event(p, &k, T0 + 2000 + i, 3, 1000 + i), 0);
		k.type = PROFILE_OFFCPU;
		assert_int_equal(profile__add_event(p, &k, T0 + 3000 + i, 1, 2000000), 0);
		k.type = PROFILE_LOCK;
		k.addr = 0x7fffdeadb000;
		assert_int_equal(profile__add_event(p, &k, T0 + 4000 + i, 1, 15000), 0);
	}
	/* A second process, interleaved with the first: CPU and off-CPU only. */
	k.pid = 5000;
	k.tid = 5001;
	k.comm = str(p, "other");
	k.process_name = k.comm;
	k.addr = 0;
	for (uint32_t i = 0; i < 50; i++) {
		k.stack = st[(i + 1) % 4];
		k.type = PROFILE_OFFCPU;
		assert_int_equal(profile__add_event(p, &k, T0 + 5000 + i, 1, 2000000), 0);
		k.type = PROFILE_CPU;
		assert_int_equal(profile__add_sample(p, &k, T0 + 6000 + i, 1), 0);
	}

	/* 2000 bytes: every type (a few KiB each) over several requests. */
	for (size_t lim = 0; lim <= 2000; lim += 2000) {
		uint64_t events[PROFILE_NTYPES] = {0};

		o.max_request_bytes = lim;
		memset(&t, 0, sizeof(t));
		assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
		for (size_t i = 0; i < b.n; i++) {
			struct type_sums one = {0};

			/* Each request: one type only, whatever its Profiles. */
			assert_true(b.type[i] < PROFILE_NTYPES);
			if (i)
				assert_true(b.type[i] >=
					    b.type[i - 1]); /* a type's requests in a row */
			sum_types(b.buf[i], b.len[i], &one);
			assert_true(one.n > 0);
			for (uint32_t j = 0; j < one.n; j++)
				if (!name_of_type(one.name[j], b.type[i]))
					fail_msg("request %zu of type %s holds a %s Profile", i,
						 profile__type_info(b.type[i])->name, one.name[j]);
			events[b.type[i]] += b.samples[i];
			sum_types(b.buf[i], b.len[i], &t);
		}
		assert_int_equal(t.n, 6);
		assert_int_equal(type_sum(&t, "samples/count"), 250);
		assert_int_equal(type_sum(&t, "alloc_objects/count"), 600);
		assert_int_equal(type_sum(&t, "alloc_space/bytes"), 200 * 1000 + 199 * 200 / 2);
		assert_int_equal(type_sum(&t, "off_cpu/nanoseconds"), 250 * 2000000ll);
		assert_int_equal(type_sum(&t, "contentions/count"), 200);
		assert_int_equal(type_sum(&t, "delay/nanoseconds"), 200 * 15000ll);
		assert_int_equal(t.lock_addr, 0x7fffdeadb000);
		/* Events sent, per type: each event once (CPU samples, one per event else). */
		for (int ty = 0; ty < PROFILE_NTYPES; ty++)
			assert_int_equal(events[ty], want_events[ty]);
		assert_int_equal(b.events, 4 * 200 + 2 * 50);
		if (!lim) {
			/* One request per type, in enum order; both processes where they have it.
			 */
			assert_int_equal(b.n, PROFILE_NTYPES);
			for (uint32_t i = 0; i < b.n; i++)
				assert_int_equal(b.type[i], i);
			/* cpu 2 + alloc 1 + lock 1 + offcpu 2 ResourceProfiles. */
			assert_int_equal(t.resources, 6);
			/* alloc and lock: two values, two Profiles in the process's resource. */
			assert_int_equal(t.max_profiles_per_resource, 2);
		} else {
			assert_true(b.n > PROFILE_NTYPES);
			for (size_t i = 0; i < b.n; i++)
				assert_true(b.len[i] <= lim);
		}
		json = run_otlpcheck(&b, &status);
		if (status != 0)
			fail_msg("otlpcheck exit status %d:\n%s", status, json);
		expect_in(json, "\"ok\":true");
		expect_in(json, "\"errors\":[]");
		free(json);
		bufs_free(&b);
	}
	profile__free(p);
}

/*
 * Samples of one request's Profiles: none repeats the identity {stack, attributes, link} of
 * another; *with_tid / *with_cpu / *with_name count Samples carrying each attribute.
 */
static void check_identities(const uint8_t *buf, size_t len, size_t *with_tid, size_t *with_cpu,
			     size_t *with_name, size_t *nsamples)
{
	pb_request *req = REQ_UNPACK(NULL, len, buf);
	const pb_dict *d;

	assert_non_null(req);
	d = req->dictionary;
	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
		    req->resource_profiles[r]->scope_profiles[0];

		for (size_t i = 0; i < sp->n_profiles; i++) {
			const pb_profile *pr = sp->profiles[i];

			for (size_t k = 0; k < pr->n_samples; k++) {
				const pb_sample *a = pr->samples[k];

				*nsamples += 1;
				*with_tid += !!find_attr(d, a->attribute_indices,
							 a->n_attribute_indices, "thread.id");
				*with_cpu +=
				    !!find_attr(d, a->attribute_indices, a->n_attribute_indices,
						"cpu.logical_number");
				*with_name += !!find_attr(d, a->attribute_indices,
							  a->n_attribute_indices, "thread.name");
				for (size_t m = 0; m < k; m++) {
					const pb_sample *b = pr->samples[m];

					if (a->stack_index == b->stack_index &&
					    a->link_index == b->link_index &&
					    a->n_attribute_indices == b->n_attribute_indices &&
					    !memcmp(a->attribute_indices, b->attribute_indices,
						    a->n_attribute_indices * sizeof(int32_t)))
						fail_msg("samples %zu and %zu of a Profile are one",
							 m, k);
				}
			}
		}
	}
	REQ_FREE(req, NULL);
}

/*
 * --sample-attributes: per-sample attributes left out, the samples of four threads on two CPUs
 * that are then equal in all else become one Sample, with every event and value of theirs
 * (CPU with timestamps, CPU with counts, off-CPU and alloc values per event), whole requests
 * and split ones alike.
 */
static void test_omitted_sample_attributes_merge_samples(void **state)
{
	struct profile *p = profile__new();
	struct profile_meta meta = {.start_unix_nano = T0,
				    .duration_nano = DURATION,
				    .period_nano = PERIOD,
				    .frequency_hz = 100};
	struct otlp_encode_opts o = {.host_name = "h", .no_file_hash = 1};
	struct profile_sample_key k = {0};
	struct bufs b = {0};
	uint32_t f, l[3], st[3];
	struct type_sums full = {0};
	int status;
	char *json;

	(void)state;
	assert_non_null(p);
	profile__set_meta(p, &meta);
	for (int i = 0; i < 3; i++) {
		char name[16];
		struct profile_line line;

		snprintf(name, sizeof(name), "fn%d", i);
		f = func(p, name, NULL, NULL);
		line = (struct profile_line){f, 10 + i};
		l[i] = loc(p, 0, 0x1000 + i, FRAME_NATIVE, &line, 1);
		st[i] = profile__intern_stack(p, l, i + 1);
	}
	k.pid = 4242;
	k.comm = str(p, "app");
	k.process_name = k.comm;
	for (uint32_t i = 0; i < 240; i++) {
		k.stack = st[i % 3];
		k.tid = 4243 + i % 4;
		k.cpu = i % 2;
		k.type = PROFILE_CPU;
		assert_int_equal(profile__add_sample(p, &k, T0 + 1000 + i, 1), 0);
		k.type = PROFILE_OFFCPU;
		assert_int_equal(profile__add_event(p, &k, T0 + 3000 + i, 1, 1000 + i), 0);
		k.type = PROFILE_ALLOC;
		assert_int_equal(profile__add_event(p, &k, T0 + 2000 + i, 3, 100 + i), 0);
	}
	/* A process whose CPU samples carry counts, not a timestamp per event. */
	k.pid = 5000;
	k.comm = str(p, "other");
	k.process_name = k.comm;
	k.type = PROFILE_CPU;
	for (uint32_t i = 0; i < 60; i++) {
		k.stack = st[i % 3];
		k.tid = 5001 + i % 4;
		k.cpu = i % 2;
		assert_int_equal(profile__add_sample(p, &k, T0 + 7000 + i, 3), 0);
	}
	assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
	for (size_t i = 0; i < b.n; i++)
		sum_types(b.buf[i], b.len[i], &full);
	bufs_free(&b);

	for (size_t lim = 0; lim <= 1500; lim += 1500) {
		size_t tid = 0, cpu = 0, name = 0, n = 0;
		struct type_sums t = {0};

		o.max_request_bytes = lim;
		o.omit_sample_attrs = OTLP_SAMPLE_THREAD_ID | OTLP_SAMPLE_CPU;
		assert_int_equal(otlp__encode(p, &o, collect, &b), 0);
		for (size_t i = 0; i < b.n; i++) {
			if (lim)
				assert_true(b.len[i] <= lim);
			sum_types(b.buf[i], b.len[i], &t);
			check_identities(b.buf[i], b.len[i], &tid, &cpu, &name, &n);
		}
		assert_int_equal(tid, 0);
		assert_int_equal(cpu, 0);
		assert_int_equal(name, n);
		assert_int_equal(t.n, full.n);
		for (uint32_t j = 0; j < t.n; j++) {
			assert_string_equal(t.name[j], full.name[j]);
			assert_int_equal(t.sum[j], full.sum[j]);
			/* A value per event, kept; counts summed: a value per Sample. */
			if (strcmp(t.name[j], "samples/count"))
				assert_int_equal(t.nvalues[j], full.nvalues[j]);
			else
				assert_true(t.nvalues[j] < full.nvalues[j]);
		}
		assert_int_equal(b.events, 3 * 240 + 60 * 3);
		if (!lim) {
			/* Per process and type: a Sample per stack (4 Profiles, alloc has two). */
			assert_int_equal(n, 3 * (1 + 1 + 2) + 3);
		} else {
			assert_true(b.n > PROFILE_NTYPES);
		}
		json = run_otlpcheck(&b, &status);
		if (status != 0)
			fail_msg("otlpcheck exit status %d:\n%s", status, json);
		expect_in(json, "\"ok\":true");
		free(json);
		bufs_free(&b);
	}
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_htlhash_file),
	    cmocka_unit_test(test_htlhash_cache_follows_file_changes),
	    cmocka_unit_test(test_encode_fields),
	    cmocka_unit_test(test_encode_defaults_and_errors),
	    cmocka_unit_test(test_encode_k8s_attributes),
	    cmocka_unit_test(test_split_whole_processes),
	    cmocka_unit_test(test_split_one_process),
	    cmocka_unit_test(test_split_mixed),
	    cmocka_unit_test(test_encode_links_and_context),
	    cmocka_unit_test(test_split_links),
	    cmocka_unit_test(test_encode_speed),
	    cmocka_unit_test(test_encode_profile_types),
	    cmocka_unit_test(test_omitted_sample_attributes_merge_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
