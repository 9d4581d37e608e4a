/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof: writes a profile as a gzipped perftools.profiles.Profile
 * (github.com/google/pprof proto/profile.proto; otlp-proto/pprof/profile.proto),
 * the file `go tool pprof` and Pyroscope read.
 */
#ifndef SPANPROF_PPROF_H
#define SPANPROF_PPROF_H

#include <zlib.h>

#include "profile/profile.h"

/*
 * Writes @p to @path (via @path.tmp, renamed on success). Layout:
 *  - sample_type [samples/count, cpu/nanoseconds], values [count,
 *    count * meta.period_nano]; period_type cpu/nanoseconds, period =
 *    meta.period_nano; default_sample_type "cpu"; time_nanos and
 *    duration_nanos from the meta;
 *  - string_table is the profile's (same indices) plus a few names appended;
 *  - mapping, location and function ids are the profile's indices (the zero
 *    elements are left out); lines keep the profile order, innermost first;
 *    lines without a function are dropped;
 *  - has_functions/filenames/line_numbers/inline_frames are set on a mapping
 *    when any of its locations has that information;
 *  - labels: pid (num), tid (num), comm (str, thread name), process (str);
 *    samples that differ only by CPU are merged.
 * Returns 0 or -errno (-ENOMEM, -EIO for a compression failure, or the
 * file system's error).
 */
int pprof__write(const struct profile *p, const char *path);
/*
 * The samples of profile type @type (enum profile_type) only, with that type's two sample
 * types (profile__type_info()); LOCK samples carry a numeric label lock_address.
 * pprof__write() is the CPU profile. Same errors, plus -EINVAL for an unknown type.
 */
int pprof__write_type(const struct profile *p, const char *path, uint32_t type);

/*
 * A gzip file written at PATH.tmp and renamed onto PATH, so that PATH is never seen half-written
 * (profile.pb.gz here, profile.otlp.pb.gz in otlpfile.c). gz_out__open(): 0 or -errno, nothing
 * to clean up on error. gz_out__close(): closes the stream; with @err 0 renames it onto @path
 * (a gzip write error becomes the result), else removes PATH.tmp. Returns the final error (@err
 * when it was not 0).
 */
struct gz_out {
	gzFile gz;
	char *tmp;
};
int gz_out__open(struct gz_out *o, const char *path);
int gz_out__close(struct gz_out *o, const char *path, int err);

#endif /* SPANPROF_PPROF_H */
