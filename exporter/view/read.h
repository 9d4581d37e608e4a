/* SPDX-License-Identifier: Apache-2.0 */
/* view/read: the readers of `spanprof view`'s inputs, each merged into a view_doc (view/doc.h). */
#ifndef SPANPROF_VIEW_READ_H
#define SPANPROF_VIEW_READ_H

#include <stddef.h>

#include "view/doc.h"

/*
 * Reads @path into @d: a file (format detected from its content: OTLP
 * ExportProfilesServiceRequest / ProfilesData, the Collector file exporter's length-prefixed
 * proto or OTLP/JSON lines, pprof, OTLP traces in any of the OTLP forms (they name spans and
 * add no samples), each gzip- or zlib-compressed or not) or a directory (each
 * *.binpb, profile.pb.gz, *.json and *.jsonl in it, in name order). Each file becomes one
 * input; what could not be read is in its error, and the messages it held before the damage
 * are kept. Returns the number of inputs that loaded (fully or partly), or -ENOMEM.
 */
int view_read__path(struct view_doc *d, const char *path);
/* Reads one file's bytes as input @name (what view_read__path does per file). Same return. */
int view_read__buffer(struct view_doc *d, const char *name, const void *data, size_t len);

#endif /* SPANPROF_VIEW_READ_H */
