/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record: the `spanprof record` job. Samples every CPU (or the given
 * processes), symbolizes on the host and writes profile.pb.gz,
 * profile.folded and flamegraph.svg into the output directory when sampling
 * ends (duration over, SIGINT or SIGTERM).
 */
#ifndef SPANPROF_RECORD_H
#define SPANPROF_RECORD_H

#include "record/record_opts.h"

/* Runs the job. Returns the process exit code (0 ok, 1 failure, 2 usage). */
int record__run(const struct record_opts *o);

#endif
