/* SPDX-License-Identifier: Apache-2.0 */
/* record_config: the effective `spanprof record` settings, as `spanprof config check` prints them.
 */
#ifndef SPANPROF_RECORD_CONFIG_H
#define SPANPROF_RECORD_CONFIG_H

#include <stdio.h>

#include "cli/config.h"
#include "record/record.h"

/*
 * Prints @o as YAML that is itself a valid configuration file: one "key: value" line per
 * option, each commented with where the value came from ("file line N", the OTEL_* variable,
 * "default"); options that are not set are commented out; header values are not shown (they
 * often hold credentials). Keys @cfg (may be NULL) set that this function does not know (an
 * option newer than it) follow as written in the file. Assumes no flag was given (the case
 * of `spanprof config check`): sources are the file, the environment and the defaults.
 */
void record_config__print(FILE *f, const struct record_opts *o, const struct config *cfg);

#endif
