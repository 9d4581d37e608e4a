// SPDX-License-Identifier: Apache-2.0
/*
 * read_json: OTLP/JSON profiles for `spanprof view` (read_json.h), as the Collector file
 * exporter writes them by default (one ProfilesData per line) or as one document: the JSON
 * mapping of opentelemetry-proto profiles/v1development/profiles.proto (the OTLP
 * specification, "JSON Protobuf Encoding": lowerCamelCase keys, snake_case accepted too, 64-bit
 * integers as numbers or strings, trace/span/profile ids in hex as pdata writes them, base64
 * accepted too). Each document is decoded into the protobuf-c structs, then merged by
 * read_otlp.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "otlp/otlp_pb.h"
#include "util/util.h"
#include "view/read_common.h"
#include "view/read_json.h"
#include "view/read_otlp.h"
#include "view/read_traces.h"

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
	return rd__fail(c->r, "%s %zu: \"%s\" %s", c->ctx, c->idx, key, what);
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
	b = rd__arena_alloc(&c->r->arena, want);
	if (!b)
		return rd__oom(c->r);
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
	*out = rd__arena_alloc(&c->r->arena, *n * size);
	return *out ? 0 : rd__oom(c->r);
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
	void *p = rd__arena_zalloc(&c->r->arena, size);

	if (!p)
		rd__oom(c->r);
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
				return rd__fail(c->r, "stringTable %zu is not a string", i);
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
		return rd__fail(r, "not a JSON object (OTLP/JSON ProfilesData)");
	if (!jget(root, "resourceProfiles", "resource_profiles") && !jget(root, "dictionary", NULL))
		return rd__fail(r,
				"a JSON object with neither resourceProfiles nor dictionary: not "
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

/* --- OTLP/JSON traces (trace/v1/trace.proto): only what names a span ------------------------ */

static int j_span(struct jc *c, json_object *o, pb_span *s)
{
	json_object *name = jget(o, "name", NULL);
	int err = jid(c, o, "traceId", "trace_id", 16, &s->trace_id);

	if (!err)
		err = jid(c, o, "spanId", "span_id", 8, &s->span_id);
	if (!err)
		err = jid(c, o, "parentSpanId", "parent_span_id", 8, &s->parent_span_id);
	if (!err)
		err = juint(c, o, "startTimeUnixNano", "start_time_unix_nano",
			    &s->start_time_unix_nano);
	if (!err)
		err = juint(c, o, "endTimeUnixNano", "end_time_unix_nano", &s->end_time_unix_nano);
	if (!err && name && !json_object_is_type(name, json_type_null)) {
		if (!json_object_is_type(name, json_type_string))
			return jfail(c, "name", "is not a string");
		s->name = (char *)json_object_get_string(name);
	}
	return err;
}

static int j_ss(struct jc *c, json_object *o, pb_ss *ss)
{
	return JMSGS(c, o, "spans", NULL, pb_span, TR(span__init), &ss->spans, &ss->n_spans,
		     j_span);
}

static int j_rs(struct jc *c, json_object *o, pb_rs *rs)
{
	json_object *res = jget(o, "resource", NULL);
	int err = 0;

	if (res && json_object_is_type(res, json_type_object)) {
		rs->resource = jnew(c, sizeof(*rs->resource));
		if (!rs->resource)
			return -ENOMEM;
		opentelemetry__proto__resource__v1__resource__init(rs->resource);
		err = JMSGS(c, res, "attributes", NULL, pb_kv,
			    opentelemetry__proto__common__v1__key_value__init,
			    &rs->resource->attributes, &rs->resource->n_attributes, j_kv);
	}
	if (!err)
		err = JMSGS(c, o, "scopeSpans", "scope_spans", pb_ss, TR(scope_spans__init),
			    &rs->scope_spans, &rs->n_scope_spans, j_ss);
	return err;
}

static int j_tdata(struct rd *r, json_object *root, pb_tdata *td)
{
	struct jc c = {.r = r, .ctx = "TracesData", .idx = 0};

	TR(traces_data__init)(td);
	return JMSGS(&c, root, "resourceSpans", "resource_spans", pb_rs, TR(resource_spans__init),
		     &td->resource_spans, &td->n_resource_spans, j_rs);
}

/* Whether document @root is OTLP/JSON traces (TracesData) rather than profiles. */
static bool j_is_traces(json_object *root)
{
	return json_object_is_type(root, json_type_object) &&
	       jget(root, "resourceSpans", "resource_spans") &&
	       !jget(root, "resourceProfiles", "resource_profiles");
}

static unsigned line_of(const char *p, size_t off)
{
	unsigned line = 1;

	for (size_t i = 0; i < off; i++)
		line += p[i] == '\n';
	return line;
}

int rd__otlp_json(struct rd *r, const char *p, size_t n)
{
	json_tokener *tok = json_tokener_new_ex(64);
	size_t off = 0, ndocs = 0;
	int err = 0;

	r->format = FMT_JSON;
	if (!tok)
		return rd__oom(r);
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
				err = rd__fail(r, "the JSON ends early: the file is truncated");
			else
				err = rd__fail(r, "invalid JSON at line %u: %s",
					       line_of(p, off + json_tokener_get_parse_end(tok)),
					       json_tokener_error_desc(je));
			break;
		}
		off += json_tokener_get_parse_end(tok);
		if (j_is_traces(root)) {
			pb_tdata td;

			if (!ndocs++)
				r->format = FMT_TRACES_JSON;
			err = j_tdata(r, root, &td);
			if (!err)
				err = rd__traces_add(r, &td);
		} else {
			ndocs++;
			err = j_data(r, root, &pd);
			if (!err)
				err = rd__otlp_add(r, &pd);
		}
		json_object_put(root);
		rd__arena_free(&r->arena);
	}
	json_tokener_free(tok);
	if (!err)
		r->where[0] = '\0';
	return err;
}
