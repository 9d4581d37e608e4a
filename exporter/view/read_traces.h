/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view/read_traces: the reader of OTLP traces (opentelemetry-proto
 * opentelemetry/proto/trace/v1/trace.proto), as a Collector's file exporter writes them next to
 * the profiles, for `spanprof view`; internal to exporter/view/ (the face is view/read.h). The
 * spans give the spans of the samples their names, services and times
 * (view_doc__trace_span()); they add no samples. A message is checked whole before any of it
 * is recorded, so a damaged message adds nothing.
 */
#ifndef SPANPROF_VIEW_READ_TRACES_H
#define SPANPROF_VIEW_READ_TRACES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#include "opentelemetry/proto/trace/v1/trace.pb-c.h"
#include "view/read_common.h"

typedef Opentelemetry__Proto__Trace__V1__TracesData pb_tdata;
typedef Opentelemetry__Proto__Trace__V1__ResourceSpans pb_rs;
typedef Opentelemetry__Proto__Trace__V1__ScopeSpans pb_ss;
typedef Opentelemetry__Proto__Trace__V1__Span pb_span;

/* TR(name) names a generated function of the trace package: TR(span__init)(s). */
#define TR(name) opentelemetry__proto__trace__v1__##name

/* The formats a traces input is named with. */
#define FMT_TRACES_PROTO "otlp-traces-proto"
#define FMT_TRACES_STREAM "otlp-traces-proto-stream"
#define FMT_TRACES_JSON "otlp-traces-json"

/*
 * Whether the protobuf message of @n bytes at @p looks like a TracesData (or
 * ExportTraceServiceRequest) rather than a ProfilesData, from its wire format alone: its first
 * resource_spans[].scope_spans[].spans[] element has a fixed64 field 7 or 8 (the start and end
 * times; a Profile has bytes and a varint there) or a 16-byte field 1 and an 8-byte field 2 (the
 * ids). A message too damaged or empty to tell is not traces.
 */
bool rd__traces_like(const uint8_t *p, size_t n);

/*
 * Checks one TracesData @td whole (ids of 16 and 8 bytes), then records its spans. @td is
 * borrowed (read_json.c builds one from OTLP/JSON). Spans with an all-zero trace or span id
 * are no spans and are skipped. Returns 0, -EINVAL (the reason in @r) or -ENOMEM.
 */
int rd__traces_add(struct rd *r, const pb_tdata *td);

/* One binary TracesData / ExportTraceServiceRequest, @n bytes at @p. Same returns. */
int rd__traces_proto(struct rd *r, const uint8_t *p, size_t n);

/*
 * The Collector file exporter's `format: proto` for traces: [4-byte big-endian length]
 * [TracesData]... The messages before a damaged one are kept. Same returns.
 */
int rd__traces_stream(struct rd *r, const uint8_t *p, size_t n);

#endif /* SPANPROF_VIEW_READ_TRACES_H */
