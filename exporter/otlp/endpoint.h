/* SPDX-License-Identifier: Apache-2.0 */
/*
 * endpoint: the one check of an OTLP/gRPC endpoint (--endpoint, the `endpoint:` key,
 * OTEL_EXPORTER_OTLP_(PROFILES_)ENDPOINT), at parse time, and the gRPC target it names.
 */
#ifndef SPANPROF_ENDPOINT_H
#define SPANPROF_ENDPOINT_H

#include <stddef.h>

#define ENDPOINT_DEFAULT_PORT 4317 /* OTLP/gRPC default (OTLP spec, "OTLP/gRPC") */
#define ENDPOINT_MAX_HOST 253	   /* longest DNS name (RFC 1035 2.3.4) */

enum endpoint_scheme { ENDPOINT_NO_SCHEME, ENDPOINT_HTTP, ENDPOINT_HTTPS };

struct endpoint {
	enum endpoint_scheme scheme;
	unsigned port;			     /* 1..65535 */
	char host[ENDPOINT_MAX_HOST + 1];    /* without brackets for IPv6 */
	char target[ENDPOINT_MAX_HOST + 10]; /* "host:port" or "[v6]:port", for gRPC */
};

/*
 * Parses @s, one of host:port, [v6]:port, http://host[:port], https://host[:port], with an
 * optional trailing "/" and nothing else after the port (gRPC has no path). A scheme without a
 * port means port 4317, as the OTel exporter spec says for OTLP/gRPC; without a scheme the port
 * is required. The host: letters, digits, '-', '.', '_' (between brackets: an IPv6 address,
 * hex digits, ':', '.', and a '%' zone). Fills @out (may be NULL) and returns 0; -EINVAL with a
 * message naming the bad part (no trailing newline, never the raw control characters) in @why
 * (@why_len bytes, may be 0).
 */
int endpoint__parse(const char *s, struct endpoint *out, char *why, size_t why_len);

#endif
