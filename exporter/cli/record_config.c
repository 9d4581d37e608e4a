/* SPDX-License-Identifier: Apache-2.0 */
/* record_config: the effective `spanprof record` settings as YAML (record_config.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "cli/record_config.h"
#include "otlp/otlp_encode.h"
#include "sampler.h"

/* The OTLP exporter variable (OTEL_EXPORTER_OTLP_[PROFILES_]NAME) that is set, or NULL. */
static const char *env_var(const char *name, char *buf, size_t size)
{
	const char *v;

	if (!name)
		return NULL;
	snprintf(buf, size, "OTEL_EXPORTER_OTLP_PROFILES_%s", name);
	v = getenv(buf);
	if (v && *v)
		return buf;
	snprintf(buf, size, "OTEL_EXPORTER_OTLP_%s", name);
	v = getenv(buf);
	return v && *v ? buf : NULL;
}

/* A double-quoted YAML string. */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The line's comment: where the value of @key came from. */
static void put_source(FILE *f, const struct config *cfg, const char *key, const char *env)
{
	char buf[96];
	const char *var = env_var(env, buf, sizeof(buf));
	unsigned line = cfg ? config__line(cfg, key) : 0;

	if (var && line)
		fprintf(f, "  # %s (replaces file line %u)\n", var, line);
	else if (var)
		fprintf(f, "  # %s\n", var);
	else if (line)
		fprintf(f, "  # file line %u\n", line);
	else
		fprintf(f, "  # default\n");
}

static void put_unset(FILE *f, const char *key, const char *meaning)
{
	fprintf(f, "# %s: not set: %s\n", key, meaning);
}

static const char *const known_keys[] = {
    "frequency",
    "duration",
    "pid",
    "output-dir",
    "quiet",
    "verbose",
    "stats-json",
    "ring-buffer-mb",
    "symbol-cache-mb",
    "symbol-cache-max-mb",
    "slow-file-timeout",
    "unwind-max-mb",
    "no-span-links",
    "no-python",
    "no-python-code-cache",
    "python-code-cache-after",
    "short-names",
    "context-uprobe",
    "endpoint",
    "export-interval",
    "export-timeout",
    "header",
    "insecure",
    "tls-ca",
    "tls-cert",
    "tls-key",
    "compression",
    "max-request-bytes",
    "sample-attributes",
    "queue-bytes",
    "flush-timeout",
    "profile",
    "alloc-sample-bytes",
    "alloc-min-bytes",
    "lock-min-wait",
    "offcpu-min",
    "debuginfod",
    "debuginfod-cache-mb",
};

static void put_str_opt(FILE *f, const struct config *cfg, const char *key, const char *v,
			const char *env, const char *unset)
{
	if (!v) {
		put_unset(f, key, unset);
		return;
	}
	fprintf(f, "%s: ", key);
	put_string(f, v);
	put_source(f, cfg, key, env);
}

void record_config__print(FILE *f, const struct record_opts *o, const struct config *cfg)
{
	fprintf(f, "# effective settings (flag > environment > file > default)\n");
	fprintf(f, "frequency: %u", o->frequency_hz);
	put_source(f, cfg, "frequency", NULL);
	if (o->duration_s > 0) {
		fprintf(f, "duration: %g", o->duration_s);
		put_source(f, cfg, "duration", NULL);
	} else {
		put_unset(f, "duration", "until SIGINT or SIGTERM");
	}
	fprintf(f, "profile: ");
	for (uint32_t t = 0, n = 0; t < PROFILE_NTYPES; t++)
		if ((o->profile_types & (1u << t)) && profile__type_info(t))
			fprintf(f, "%s%s", n++ ? "," : "", profile__type_info(t)->name);
	put_source(f, cfg, "profile", NULL);
	fprintf(f, "alloc-sample-bytes: %llu", (unsigned long long)o->alloc_sample_bytes);
	put_source(f, cfg, "alloc-sample-bytes", NULL);
	fprintf(f, "alloc-min-bytes: %llu", (unsigned long long)o->alloc_min_bytes);
	put_source(f, cfg, "alloc-min-bytes", NULL);
	fprintf(f, "lock-min-wait: %lluns", (unsigned long long)o->lock_min_wait_ns);
	put_source(f, cfg, "lock-min-wait", NULL);
	fprintf(f, "offcpu-min: %lluns", (unsigned long long)o->offcpu_min_ns);
	put_source(f, cfg, "offcpu-min", NULL);
	if (o->npids) {
		fprintf(f, "pid: [");
		for (size_t i = 0; i < o->npids; i++)
			fprintf(f, "%s%u", i ? ", " : "", o->pids[i]);
		fprintf(f, "]");
		put_source(f, cfg, "pid", NULL);
	} else {
		put_unset(f, "pid", "every process");
	}
	put_str_opt(f, cfg, "output-dir", o->output_dir, NULL, "no local files (OTLP only)");
	fprintf(f, "quiet: %s", o->quiet ? "true" : "false");
	put_source(f, cfg, "quiet", NULL);
	fprintf(f, "verbose: %s", o->verbose ? "true" : "false");
	put_source(f, cfg, "verbose", NULL);
	put_str_opt(f, cfg, "stats-json", o->stats_json, NULL, "no counters file");
	if (o->ringbuf_mb) {
		fprintf(f, "ring-buffer-mb: %u", o->ringbuf_mb);
		put_source(f, cfg, "ring-buffer-mb", NULL);
	} else {
		put_unset(f, "ring-buffer-mb", "sized from the frequency and the CPUs");
	}
	fprintf(f, "symbol-cache-mb: %u", o->symcache_mb);
	put_source(f, cfg, "symbol-cache-mb", NULL);
	fprintf(f, "symbol-cache-max-mb: %u", o->symcache_max_mb);
	put_source(f, cfg, "symbol-cache-max-mb", NULL);
	fprintf(f, "slow-file-timeout: %g", o->slow_file_timeout_s);
	put_source(f, cfg, "slow-file-timeout", NULL);
	if (o->debuginfod_urls)
		put_str_opt(f, cfg, "debuginfod", o->debuginfod_urls, NULL, NULL);
	else if (getenv("DEBUGINFOD_URLS") && *getenv("DEBUGINFOD_URLS")) {
		fprintf(f, "debuginfod: ");
		put_string(f, getenv("DEBUGINFOD_URLS"));
		fprintf(f, "  # DEBUGINFOD_URLS\n");
	} else {
		put_unset(f, "debuginfod", "no debug files fetched (DEBUGINFOD_URLS unset)");
	}
	fprintf(f, "debuginfod-cache-mb: %u", o->debuginfod_cache_mb);
	put_source(f, cfg, "debuginfod-cache-mb", NULL);
	fprintf(f, "unwind-max-mb: %u", o->unwind_max_mb);
	put_source(f, cfg, "unwind-max-mb", NULL);
	fprintf(f, "no-span-links: %s", o->no_span_links ? "true" : "false");
	put_source(f, cfg, "no-span-links", NULL);
	fprintf(f, "no-python: %s", o->no_python ? "true" : "false");
	put_source(f, cfg, "no-python", NULL);
	fprintf(f, "no-python-code-cache: %s", o->no_python_code_cache ? "true" : "false");
	put_source(f, cfg, "no-python-code-cache", NULL);
	fprintf(f, "python-code-cache-after: %g", o->python_code_cache_after_s);
	put_source(f, cfg, "python-code-cache-after", NULL);
	fprintf(f, "no-v8: %s", o->no_v8 ? "true" : "false");
	put_source(f, cfg, "no-v8", NULL);
	fprintf(f, "no-jvm: %s", o->no_jvm ? "true" : "false");
	put_source(f, cfg, "no-jvm", NULL);
	fprintf(f, "short-names: %s", o->short_names ? "true" : "false");
	put_source(f, cfg, "short-names", NULL);
	if (o->nctx_uprobes) {
		fprintf(f, "context-uprobe: [");
		for (size_t i = 0; i < o->nctx_uprobes; i++) {
			const struct record_ctx_uprobe *u = &o->ctx_uprobes[i];
			char spec[4096];

			if (u->mode & SP_CTXP_TLS)
				snprintf(spec, sizeof(spec), "%s:%s:tls", u->binary, u->symbol);
			else
				snprintf(spec, sizeof(spec), "%s:%s:arg%u%s", u->binary, u->symbol,
					 u->mode & SP_CTXP_ARG_MASK,
					 u->mode & SP_CTXP_CLEAR ? ",scoped" : "");
			fprintf(f, "%s", i ? ", " : "");
			put_string(f, spec);
		}
		fprintf(f, "]");
		put_source(f, cfg, "context-uprobe", NULL);
	} else {
		put_unset(f, "context-uprobe", "none");
	}

	put_str_opt(f, cfg, "endpoint", o->endpoint, "ENDPOINT", "no OTLP export");
	fprintf(f, "export-interval: %g", o->export_interval_s);
	put_source(f, cfg, "export-interval", NULL);
	fprintf(f, "export-timeout: %g", o->export_timeout_s);
	put_source(f, cfg, "export-timeout", "TIMEOUT");
	if (o->nheaders) {
		fprintf(f, "header: {");
		for (size_t i = 0; i < o->nheaders; i++)
			fprintf(f, "%s%s: \"***\"", i ? ", " : "", o->headers[i].key);
		fprintf(f, "}");
		put_source(f, cfg, "header", "HEADERS");
	} else {
		put_unset(f, "header", "none");
	}
	if (o->insecure >= 0) {
		fprintf(f, "insecure: %s", o->insecure ? "true" : "false");
		put_source(f, cfg, "insecure", "INSECURE");
	} else {
		put_unset(f, "insecure", "plaintext for loopback and http:// endpoints only");
	}
	put_str_opt(f, cfg, "tls-ca", o->tls_ca, "CERTIFICATE", "system roots");
	put_str_opt(f, cfg, "tls-cert", o->tls_cert, "CLIENT_CERTIFICATE", "no client certificate");
	put_str_opt(f, cfg, "tls-key", o->tls_key, "CLIENT_KEY", "no client key");
	fprintf(f, "compression: %s", o->gzip ? "gzip" : "none");
	put_source(f, cfg, "compression", "COMPRESSION");
	fprintf(f, "max-request-bytes: %zu", o->max_request_bytes);
	put_source(f, cfg, "max-request-bytes", NULL);
	fprintf(f, "sample-attributes: ");
	if (!o->otlp_sample_attrs)
		fprintf(f, "none");
	for (unsigned int b = 1, n = 0; b <= OTLP_SAMPLE_CPU; b <<= 1)
		if (o->otlp_sample_attrs & b)
			fprintf(f, "%s%s", n++ ? "," : "",
				b == OTLP_SAMPLE_THREAD_NAME ? "thread.name"
				: b == OTLP_SAMPLE_THREAD_ID ? "thread.id"
							     : "cpu.logical_number");
	put_source(f, cfg, "sample-attributes", NULL);
	fprintf(f, "queue-bytes: %zu", o->queue_bytes);
	put_source(f, cfg, "queue-bytes", NULL);
	fprintf(f, "flush-timeout: %g", o->flush_timeout_s);
	put_source(f, cfg, "flush-timeout", NULL);

	/* Options this summary does not know yet: as the file wrote them. */
	for (size_t i = 0; cfg && i < config__nkeys(cfg); i++) {
		const char *raw, *key;
		unsigned line;
		size_t k;

		key = config__key(cfg, i, &raw, &line);
		for (k = 0; k < sizeof(known_keys) / sizeof(known_keys[0]); k++)
			if (!strcmp(known_keys[k], key))
				break;
		if (k == sizeof(known_keys) / sizeof(known_keys[0]))
			fprintf(f, "%s: %s  # file line %u, as written\n", key, raw, line);
	}
}
