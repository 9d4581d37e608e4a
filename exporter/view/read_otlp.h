/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view/read_otlp: the reader of OTLP profiles v1development in protobuf (opentelemetry-proto
 * opentelemetry/proto/profiles/v1development/profiles.proto), for `spanprof view`; internal to
 * exporter/view/ (the face is view/read.h). A message is checked whole (every index in range)
 * before any of it is merged into the document, so a damaged message adds nothing.
 */
#ifndef SPANPROF_VIEW_READ_OTLP_H
#define SPANPROF_VIEW_READ_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "otlp/otlp_pb.h"
#include "view/read_common.h"

/*
 * Checks one ProfilesData (or ExportProfilesServiceRequest) @pd whole, then merges it into
 * @r's document. @pd is borrowed (read_json.c builds one from OTLP/JSON). Returns 0, -EINVAL
 * (the reason in @r) or -ENOMEM.
 */
int rd__otlp_add(struct rd *r, const pb_data *pd);

/* One binary ProfilesData / ExportProfilesServiceRequest, @n bytes at @p. Same returns. */
int rd__otlp_proto(struct rd *r, const uint8_t *p, size_t n);

/*
 * The Collector file exporter's `format: proto`: [4-byte big-endian length][ProfilesData]...
 * The messages before a damaged one are kept. Same returns.
 */
int rd__otlp_stream(struct rd *r, const uint8_t *p, size_t n);

#endif /* SPANPROF_VIEW_READ_OTLP_H */
