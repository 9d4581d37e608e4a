/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outputs: the local files of a recording, written from the profile model by every writer of
 * this folder: per selected profile type, DIR/<stem>.pb.gz (pprof.h), DIR/<stem>.folded
 * (folded.h) and DIR/flamegraph[-<type>].svg (flamegraph.h), with the stems of
 * profile__type_info(); and, for `spanprof view`, every sample with its times and frame types
 * as OTLP in DIR/profile.otlp.pb.gz (otlpfile.h).
 */
#ifndef SPANPROF_OUTPUTS_H
#define SPANPROF_OUTPUTS_H

#include <stdint.h>

#include "profile/profile.h"

/*
 * Writes the files of the profile types in @types (a mask of 1 << enum profile_type) of @p into
 * the existing directory @dir. A file that can't be written is named on stderr and the others
 * are still written; the files written are listed in one line ("spanprof: wrote ..."). Returns
 * 0, or 1 when any file failed.
 */
int outputs__write_dir(const struct profile *p, const char *dir, uint32_t types);

#endif
