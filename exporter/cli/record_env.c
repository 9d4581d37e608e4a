/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record_env: the OpenTelemetry exporter environment (OTEL_EXPORTER_OTLP_*) applied to the
 * options of `spanprof record` (cli/record_env.h), with the precedence
 * flag > environment > configuration file > default.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/otel_env.h"
#include "otlp/endpoint.h"
#include "cli/record_env.h"

/* One line, naming what is wrong and what to do. Returns -EINVAL. */
static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("spanprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

static int add_env_header(void *ctx, const char *key, const char *value)
{
	struct record_opts *o = ctx;

	if (o->nheaders >= RECORD_MAX_HEADERS)
		return -E2BIG;
	/* Options live as long as the process: these copies are never freed. */
	o->headers[o->nheaders].key = strdup(key);
	o->headers[o->nheaders].value = strdup(value);
	if (!o->headers[o->nheaders].key || !o->headers[o->nheaders].value)
		return -ENOMEM;
	o->nheaders++;
	return 0;
}

int record_env__apply(struct record_opts *o, const struct record_flags_set *f)
{
	char why[256];
	const char *v;
	char *end;
	double ms;
	int b;

	if (!f->endpoint && (v = otel_env__exporter("ENDPOINT"))) {
		if (endpoint__parse(v, NULL, why, sizeof(why)))
			return fail(
			    "OTEL_EXPORTER_OTLP_%sENDPOINT: %s",
			    v == getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") ? "PROFILES_" : "",
			    why);
		o->endpoint = v;
	}
	if (!f->insecure && (v = otel_env__exporter("INSECURE"))) {
		b = otel_env__bool(v);
		if (b < 0)
			return fail("OTEL_EXPORTER_OTLP_INSECURE wants true or false, not '%s'", v);
		o->insecure = b; /* false: TLS even for a loopback endpoint without a scheme */
	}
	if (!f->export_timeout && (v = otel_env__exporter("TIMEOUT"))) {
		errno = 0;
		ms = strtod(v, &end);
		if (errno || end == v || *end || !(ms > 0))
			return fail("OTEL_EXPORTER_OTLP_TIMEOUT wants milliseconds, not '%s'", v);
		o->export_timeout_s = ms / 1000;
	}
	if (!f->gzip && (v = otel_env__exporter("COMPRESSION"))) {
		if (strcmp(v, "gzip") && strcmp(v, "none"))
			return fail("OTEL_EXPORTER_OTLP_COMPRESSION wants gzip or none, not '%s'",
				    v);
		o->gzip = !strcmp(v, "gzip");
	}
	if (!f->tls_ca && (v = otel_env__exporter("CERTIFICATE")))
		o->tls_ca = v;
	if (!f->tls_cert && (v = otel_env__exporter("CLIENT_CERTIFICATE")))
		o->tls_cert = v;
	if (!f->tls_key && (v = otel_env__exporter("CLIENT_KEY")))
		o->tls_key = v;
	/*
	 * Environment headers first; a flag's header with the same key replaces them. Without
	 * --header the headers are the configuration file's, and the environment's win instead.
	 */
	if ((v = otel_env__exporter("HEADERS"))) {
		struct record_header flag_headers[RECORD_MAX_HEADERS];
		size_t nflag = o->nheaders;
		int skipped;

		memcpy(flag_headers, o->headers, sizeof(flag_headers[0]) * nflag);
		o->nheaders = 0;
		skipped = otel_env__parse_list(v, add_env_header, o);
		if (skipped < 0)
			return fail("OTEL_EXPORTER_OTLP_HEADERS: %s", strerror(-skipped));
		if (skipped > 0)
			fprintf(stderr,
				"spanprof: warning: %d malformed entries in "
				"OTEL_EXPORTER_OTLP_HEADERS ignored (want key=value,...)\n",
				skipped);
		for (size_t i = 0; i < nflag; i++) {
			size_t j;

			for (j = 0; j < o->nheaders; j++)
				if (!strcasecmp(o->headers[j].key, flag_headers[i].key))
					break;
			if (j < o->nheaders && !f->headers)
				continue;
			if (j == o->nheaders && o->nheaders >= RECORD_MAX_HEADERS)
				return fail("at most %d headers", RECORD_MAX_HEADERS);
			if (j == o->nheaders)
				o->nheaders++;
			o->headers[j] = flag_headers[i];
		}
	}
	/* gRPC metadata keys are lower-case; keys and values are checked here, not per call. */
	for (size_t i = 0; i < o->nheaders; i++) {
		for (char *c = o->headers[i].key; *c; c++) {
			*c = tolower((unsigned char)*c);
			if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
				return fail(
				    "header name '%s' is not valid gRPC metadata (letters, digits, "
				    "'-', '_' and '.' only)",
				    o->headers[i].key);
		}
		if (strlen(o->headers[i].key) > 4 &&
		    !strcmp(o->headers[i].key + strlen(o->headers[i].key) - 4, "-bin"))
			return fail("binary header '%s' is not supported", o->headers[i].key);
		for (const char *c = o->headers[i].value; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				return fail("the value of header '%s' has a control or non-ASCII "
					    "character",
					    o->headers[i].key);
	}
	/* The checks across options (TLS files, endpoint scheme): check_across() in main.c. */
	return 0;
}
