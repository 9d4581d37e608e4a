/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlpfile: the samples of a local recording as OTLP, with their times and frame types, for
 * `spanprof view` (pprof has neither: its samples carry no timestamps and its locations no
 * profile.frame.type).
 */
#ifndef SPANPROF_OTLPFILE_H
#define SPANPROF_OTLPFILE_H

#include "profile/profile.h"

/* The file's name in the output directory; `spanprof view DIR` reads it instead of the pprof
 * files beside it (they hold the same samples). */
#define OTLPFILE_NAME "profile.otlp.pb.gz"

/*
 * Writes every sample of @p (all profile types) to @path, through @path.tmp renamed on
 * success, gzipped: the OpenTelemetry Collector file exporter's `format: proto` stream, i.e.
 * each ExportProfilesServiceRequest of otlp__encode() (same layout as ProfilesData), prefixed
 * by its length as a 4-byte big-endian integer. Resources are described from the samples
 * alone (pid and process name; no file reads). Returns 0, 1 when @p has no sample (no file
 * is written), or a negative errno (-ENOMEM, -E2BIG from the encoder, or the write's).
 */
int otlpfile__write(const struct profile *p, const char *path);

#endif /* SPANPROF_OTLPFILE_H */
