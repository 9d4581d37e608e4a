/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli: entry points of exporter/cli/main.c (the command line) besides main(), declared for the
 * unit tests (test/cli/test_config.c links main.c with main renamed).
 */
#ifndef SPANPROF_CLI_H
#define SPANPROF_CLI_H

#include "cli/config.h"
#include "record/record.h"

/*
 * Fills @o for `spanprof record ARGS` (@argv[0] is the program name), in this order:
 * defaults; the flags; the configuration file (--config FILE, else $SPANPROF_CONFIG; an
 * empty name: none) for the keys no flag gave; the OTEL_EXPORTER_OTLP_* environment for
 * what no flag set (it replaces the file's values); the remaining defaults and the checks
 * across options. So: flag > environment > file > default. A bad flag exits (argp); other
 * errors are printed and 2 is returned, else 0. *@cfgp receives the file's config (NULL
 * without a file): @o points into it, free it with config__free() after the last use of @o.
 */
int cli__record_configure(int argc, char **argv, struct record_opts *o, struct config **cfgp);

/* `spanprof config check FILE...` (@argv[0] is "config"): 0 all valid, 2 otherwise. */
int cli__config_main(int argc, char **argv);

#endif
