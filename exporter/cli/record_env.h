/* SPDX-License-Identifier: Apache-2.0 */
/* record_env: the OTEL_EXPORTER_OTLP_* environment applied to `spanprof record`'s options. */
#ifndef SPANPROF_RECORD_ENV_H
#define SPANPROF_RECORD_ENV_H

#include "record/record.h"

/*
 * Fills the export options that no flag set from the OpenTelemetry exporter
 * environment variables (OTEL_EXPORTER_OTLP_[PROFILES_]ENDPOINT, _HEADERS,
 * _TIMEOUT, _COMPRESSION, _INSECURE, _CERTIFICATE, _CLIENT_CERTIFICATE,
 * _CLIENT_KEY; the signal-specific one wins), then the defaults.
 * @flag_set tells which fields came from flags; values already in @o that no flag set (from
 * a configuration file) are replaced by the environment's. Headers are merged by name: a
 * flag's replaces the environment's, the environment's replaces the file's.
 * 0 or -EINVAL (message printed).
 */
struct record_flags_set {
	int endpoint, insecure, tls_ca, tls_cert, tls_key, headers, gzip, export_timeout;
};
int record_env__apply(struct record_opts *o, const struct record_flags_set *flag_set);

#endif
