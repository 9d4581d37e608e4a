// SPDX-License-Identifier: Apache-2.0
/*
 * read_traces: OTLP traces for `spanprof view` (read_traces.h): opentelemetry-proto
 * trace/v1/trace.proto TracesData (and collector/trace/v1/trace_service.proto
 * ExportTraceServiceRequest, the same layout), one message or the Collector file exporter's
 * length-prefixed stream; read_json.c decodes the OTLP/JSON form into the same structs. Only
 * what names a span is kept: ids, parent id, name, start and end times, the resource's
 * service.name.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "otlp/otlp_pb.h"
#include "view/read_common.h"
#include "view/read_traces.h"

/* --- detection by wire format ------------------------------------------------------------- */

static bool wire_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (unsigned s = 0; s < 64 && *i < n; s += 7) {
		uint8_t b = p[(*i)++];

		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* One field of a message: its number, wire type, and for wire type 2 its payload. */
struct wire_field {
	uint32_t num, type;
	const uint8_t *data;
	size_t len;
};

/* The next field at *@i of @p (@n bytes). false at the end or on damage. */
static bool wire_next(const uint8_t *p, size_t n, size_t *i, struct wire_field *f)
{
	uint64_t tag, v;

	if (*i >= n || !wire_varint(p, n, i, &tag) || !(tag >> 3) || tag >> 32)
		return false;
	f->num = (uint32_t)(tag >> 3);
	f->type = (uint32_t)(tag & 7);
	f->data = NULL;
	f->len = 0;
	switch (f->type) {
	case 0:
		return wire_varint(p, n, i, &v);
	case 1:
	case 5:
		v = f->type == 1 ? 8 : 4;
		if (n - *i < v)
			return false;
		*i += v;
		return true;
	case 2:
		if (!wire_varint(p, n, i, &v) || v > n - *i)
			return false;
		f->data = p + *i;
		f->len = (size_t)v;
		*i += (size_t)v;
		return true;
	default:
		return false;
	}
}

/* The payload of the first length-delimited field @num of a message. */
static bool wire_first(const uint8_t *p, size_t n, uint32_t num, const uint8_t **out, size_t *len)
{
	struct wire_field f;
	size_t i = 0;

	while (wire_next(p, n, &i, &f))
		if (f.num == num && f.type == 2) {
			*out = f.data;
			*len = f.len;
			return true;
		}
	return false;
}

bool rd__traces_like(const uint8_t *p, size_t n)
{
	const uint8_t *rs, *ss, *leaf;
	size_t rsn, ssn, leafn, i = 0;
	bool id16 = false, id8 = false;
	struct wire_field f;

	/* TracesData.resource_spans = 1 -> ResourceSpans.scope_spans = 2 -> ScopeSpans.spans = 2;
	 * ProfilesData has the same shape down to its profiles (and a dictionary = 2). */
	if (!wire_first(p, n, 1, &rs, &rsn) || !wire_first(rs, rsn, 2, &ss, &ssn) ||
	    !wire_first(ss, ssn, 2, &leaf, &leafn))
		return false;
	while (wire_next(leaf, leafn, &i, &f)) {
		if ((f.num == 7 || f.num == 8) && f.type == 1)
			return true; /* Span.start/end_time_unix_nano, fixed64 */
		id16 |= f.num == 1 && f.type == 2 && f.len == 16;
		id8 |= f.num == 2 && f.type == 2 && f.len == 8;
	}
	return id16 && id8;
}

/* --- recording ---------------------------------------------------------------------------- */

/* The resource's service.name as a doc string; 0 when it has none. */
static int32_t service_of(struct rd *r, const pb_resource *res)
{
	for (size_t i = 0; res && i < res->n_attributes; i++) {
		const pb_kv *kv = res->attributes[i];

		if (kv->key && !strcmp(kv->key, "service.name") && kv->value &&
		    kv->value->value_case == ANY(STRING_VALUE) && kv->value->string_value)
			return TRY(r, view_doc__string(r->d, kv->value->string_value,
						       strlen(kv->value->string_value)));
	}
	return 0;
}

/* Checks the ids of every span of @td; the first wrong one fails with its place. */
static int check_ids(struct rd *r, const pb_tdata *td)
{
	for (size_t a = 0; a < td->n_resource_spans; a++) {
		const pb_rs *rs = td->resource_spans[a];

		for (size_t b = 0; b < rs->n_scope_spans; b++) {
			const pb_ss *ss = rs->scope_spans[b];

			for (size_t c = 0; c < ss->n_spans; c++) {
				const pb_span *s = ss->spans[c];
				const char *bad = NULL;
				size_t len = 0;

				if (s->trace_id.len != 16 && s->trace_id.len != 0)
					bad = "traceId", len = s->trace_id.len;
				else if (s->span_id.len != 8 && s->span_id.len != 0)
					bad = "spanId", len = s->span_id.len;
				else if (s->parent_span_id.len != 8 && s->parent_span_id.len != 0)
					bad = "parentSpanId", len = s->parent_span_id.len;
				if (bad)
					return rd__fail(
					    r,
					    "resourceSpans %zu, scopeSpans %zu, span %zu: "
					    "%s of %zu bytes (an id has %d): not OTLP traces",
					    a, b, c, bad, len, bad[0] == 't' ? 16 : 8);
			}
		}
	}
	return 0;
}

int rd__traces_add(struct rd *r, const pb_tdata *td)
{
	int err = check_ids(r, td);

	if (err)
		return err;
	for (size_t a = 0; a < td->n_resource_spans; a++) {
		const pb_rs *rs = td->resource_spans[a];
		int32_t service = service_of(r, rs->resource);

		if (service < 0)
			return service;
		for (size_t b = 0; b < rs->n_scope_spans; b++) {
			const pb_ss *ss = rs->scope_spans[b];

			for (size_t c = 0; c < ss->n_spans; c++) {
				const pb_span *s = ss->spans[c];
				struct view_trace_span t = {
				    .service = service,
				    .start_unix_ns = s->start_time_unix_nano,
				    .end_unix_ns = s->end_time_unix_nano,
				};

				if (!s->trace_id.len || !s->span_id.len ||
				    rd__all_zero(s->trace_id.data, 16) ||
				    rd__all_zero(s->span_id.data, 8))
					continue; /* no span: nothing to name */
				if (s->parent_span_id.len)
					t.parent_span_id = s->parent_span_id.data;
				if (s->name && *s->name)
					t.name = TRY(
					    r, view_doc__string(r->d, s->name, strlen(s->name)));
				TRY(r, view_doc__trace_span(r->d, s->trace_id.data, s->span_id.data,
							    &t));
			}
		}
	}
	return 0;
}

int rd__traces_proto(struct rd *r, const uint8_t *p, size_t n)
{
	ProtobufCAllocator alloc = {
	    .alloc = rd__pb_alloc, .free = rd__pb_free, .allocator_data = &r->arena};
	pb_tdata *td;
	int err;

	if (!r->format)
		r->format = FMT_TRACES_PROTO;
	td = TR(traces_data__unpack)(&alloc, n, p);
	if (!td) {
		rd__arena_free(&r->arena);
		return rd__fail(r, "corrupt OTLP traces protobuf: protobuf-c cannot decode it "
				   "(truncated or not a TracesData)");
	}
	err = rd__traces_add(r, td);
	rd__arena_free(&r->arena);
	return err;
}

int rd__traces_stream(struct rd *r, const uint8_t *p, size_t n)
{
	size_t nonempty;
	unsigned msg;

	r->format = FMT_TRACES_STREAM;
	return rd__frames(r, p, n, rd__traces_proto, &msg, &nonempty);
}
