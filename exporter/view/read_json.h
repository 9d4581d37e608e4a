/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view/read_json: the reader of OTLP/JSON profiles (the JSON mapping of opentelemetry-proto
 * profiles/v1development/profiles.proto), as the Collector file exporter writes them by default,
 * for `spanprof view`; internal to exporter/view/ (the face is view/read.h).
 */
#ifndef SPANPROF_VIEW_READ_JSON_H
#define SPANPROF_VIEW_READ_JSON_H

#include <stddef.h>

#include "view/read_common.h"

/*
 * OTLP/JSON documents one after the other, @n bytes at @p: one per line as the file exporter
 * writes them, or a single (pretty-printed) document. Each is merged by rd__otlp_add()
 * (read_otlp.h); the documents before a damaged one are kept, its line is in the message.
 * Returns 0, -EINVAL (the reason in @r) or -ENOMEM.
 */
int rd__otlp_json(struct rd *r, const char *p, size_t n);

#endif /* SPANPROF_VIEW_READ_JSON_H */
