/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel_env: the OpenTelemetry SDK environment variables spanprof honours
 * (opentelemetry-specification, "OTLP Exporter Configuration" and
 * "Environment Variable Specification").
 */
#ifndef SPANPROF_OTEL_ENV_H
#define SPANPROF_OTEL_ENV_H

#include <stddef.h>

/*
 * Value of OTEL_EXPORTER_OTLP_PROFILES_<name>, else OTEL_EXPORTER_OTLP_<name>,
 * else NULL. Empty values count as unset. The string belongs to the environment.
 */
const char *otel_env__exporter(const char *name);

/*
 * Parses a W3C-baggage-like list "k1=v1,k2=v2" (OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_RESOURCE_ATTRIBUTES): entries are trimmed of spaces, values are
 * percent-decoded. Calls @cb with NUL-terminated copies (valid only during
 * the call) for each well-formed entry; entries without '=' or with an empty
 * key are skipped and counted. Returns the number skipped, or -ENOMEM, or the
 * first negative value @cb returned.
 */
int otel_env__parse_list(const char *s, int (*cb)(void *ctx, const char *key, const char *value),
			 void *ctx);

/* Parses "true"/"false" (case-insensitive) as OTel booleans: 1, 0, or -EINVAL. */
int otel_env__bool(const char *s);

#endif
