/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "otlp/otlp_encode.h"
#include "record/export.h"
#include "record/record_util.h"
#include "record/selftel.h"
#include "record/signals.h"
#include "resolve/resolve.h"
#include "spans/spanlinks.h"

/*
 * Milliseconds from now to @end_ns (CLOCK_MONOTONIC) less @keep_ns, 0 when that is past: the
 * profiles' and the self-metrics' flushes share one --flush-timeout deadline.
 */
static uint32_t flush_ms_left(uint64_t end_ns, uint64_t keep_ns)
{
	uint64_t now = record__clock_ns(CLOCK_MONOTONIC), ms;

	if (now + keep_ns >= end_ns)
		return 0;
	ms = (end_ns - keep_ns - now) / 1000000;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

/*
 * The end of the flush kept for the final self-metrics request (one call): a quarter of
 * --flush-timeout, at most 1 s, so the profiles' flush cannot use it all when the Collector is
 * away.
 */
static uint64_t metrics_reserve(const struct record_opts *o)
{
	double ns = o->flush_timeout_s * 1e9 / 4;

	return ns > 1e9 ? 1000000000ull : (uint64_t)ns;
}

int record__export_result(const struct report_data *d)
{
	return d->samples && !d->export.samples_sent;
}

static int process_meta(void *ctx, uint32_t pid, const struct procmeta **out)
{
	struct recorder *r = ctx;
	int err = proctab__meta(r->procs, pid, out);

	/* The process context (OTEP 4719) names the service better than the environment. */
	if (!err && r->in.links)
		*out = spanlinks__meta(r->in.links, pid, *out);
	return err;
}

static int submit_request(void *ctx, const uint8_t *buf, size_t len, uint64_t samples,
			  uint32_t type)
{
	struct recorder *r = ctx;
	uint8_t *copy = malloc(len);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	/* From here the exporter counts these samples as sent or dropped. */
	r->interval_queued += samples;
	otlp_exporter__submit(r->exporter, copy, len, samples, (int)type);
	return 0;
}

void record__export_interval(struct recorder *r, uint64_t end_boot)
{
	struct otlp_encode_opts eo = {
	    .max_request_bytes = r->opts->max_request_bytes,
	    .process_meta = process_meta,
	    .ctx = r,
	    .k8s_node_name = r->k8s_node,
	    .omit_sample_attrs = OTLP_SAMPLE_ALL & ~r->opts->otlp_sample_attrs,
	};
	struct profile_meta meta = {0};
	uint64_t end_unix = end_boot + r->in.boot_to_unix_ns;
	int err;

	if (end_unix < r->in.interval_start_unix)
		end_unix = r->in.interval_start_unix;
	meta.start_unix_nano = r->in.interval_start_unix;
	meta.duration_nano = end_unix - r->in.interval_start_unix;
	meta.frequency_hz = r->opts->frequency_hz;
	meta.period_nano = 1000000000ull / r->opts->frequency_hz;
	profile__set_meta(r->in.profile, &meta);
	if (profile__nsamples(r->in.profile)) {
		err = otlp__encode(r->in.profile, &eo, submit_request, r);
		if (err) {
			r->encode_failures++;
			fprintf(stderr, "\nspanprof: encoding OTLP profiles failed: %s\n",
				strerror(err < 0 ? -err : err));
		}
	}
	/* What never reached the exporter (an encoding failure, even a partial one) is counted. */
	if (r->interval_samples > r->interval_queued)
		r->encode_dropped += r->interval_samples - r->interval_queued;
	r->interval_samples = r->interval_queued = 0;
	profile__reset(r->in.profile);
	proctab__next_interval(r->procs);
	resolve__profile_reset(r->in.resolve);
	r->in.interval_start_unix = end_unix;
}

void record__export_due(struct recorder *r, uint64_t boot_ns)
{
	while (r->exporter && boot_ns >= r->interval_end_boot) {
		record__export_interval(r, r->interval_end_boot);
		r->interval_end_boot += r->interval_ns;
	}
}

/*
 * Plaintext for http://, TLS for https://; without a scheme, as
 * --insecure / OTEL_EXPORTER_OTLP_INSECURE say, else plaintext for loopback
 * hosts (unless TLS files are given) and TLS for everything else.
 */
static int endpoint_is_plaintext(const struct record_opts *o)
{
	const char *ep = o->endpoint;

	if (!strncmp(ep, "http://", 7))
		return 1;
	if (!strncmp(ep, "https://", 8))
		return 0;
	if (o->insecure >= 0)
		return o->insecure;
	if (o->tls_ca || o->tls_cert)
		return 0;
	return !strncmp(ep, "localhost:", 10) || !strncmp(ep, "127.", 4) ||
	       !strncmp(ep, "[::1]:", 6) || !strncmp(ep, "ip6-localhost:", 14) ||
	       !strncmp(ep, "0.0.0.0:", 8) || !strncmp(ep, "[::]:", 5);
}

int record__start_export(struct recorder *r)
{
	const struct record_opts *o = r->opts;
	struct otlp_exporter_opts eo = {0};
	struct grpc_header hdrs[RECORD_MAX_HEADERS];
	char why[PATH_MAX + 64];

	if (!o->endpoint)
		return 0;
	for (size_t i = 0; i < o->nheaders; i++) {
		hdrs[i].key = o->headers[i].key;
		hdrs[i].value = o->headers[i].value;
	}
	eo.grpc.endpoint = o->endpoint;
	eo.grpc.insecure = endpoint_is_plaintext(o);
	eo.grpc.ca_file = o->tls_ca;
	eo.grpc.cert_file = o->tls_cert;
	eo.grpc.key_file = o->tls_key;
	eo.grpc.headers = hdrs;
	eo.grpc.nheaders = o->nheaders;
	eo.grpc.gzip = o->gzip;
	eo.timeout_ms = o->export_timeout_s * 1000;
	eo.queue_bytes = o->queue_bytes;
	eo.binpb_dir = o->output_dir;
	if (!eo.grpc.insecure && grpc_client__check_tls_files(&eo.grpc, why, sizeof(why)))
		return record__fail("TLS for %s: %s", o->endpoint, why);
	r->exporter = otlp_exporter__new(&eo);
	if (!r->exporter)
		return record__fail(
		    "cannot set up OTLP export to '%s': %s (check the endpoint and the TLS "
		    "files)",
		    o->endpoint, strerror(errno));
	if (o->self_metrics && record__start_self_metrics(r, &eo))
		return 1;
	return 0;
}

void record__finish_export(struct recorder *r, struct sampler *s, uint64_t t_stop_boot)
{
	const struct record_opts *o = r->opts;
	uint64_t flush_end;

	/* One flush deadline for both senders: SIGTERM -> exit within --flush-timeout. */
	flush_end = record__clock_ns(CLOCK_MONOTONIC) + (uint64_t)(o->flush_timeout_s * 1e9);
	if (r->exporter) {
		struct otlp_exporter_stats es;

		/* The last, partial interval; then give the queue a bounded time to drain. */
		record__export_due(r, t_stop_boot);
		record__export_interval(r, t_stop_boot);
		otlp_exporter__stats(r->exporter, &es);
		if (es.queued) /* even with --quiet: the one sign of life during a long stop */
			fprintf(
			    stderr,
			    "%sspanprof: sending %zu queued requests (up to %.0f s; Ctrl-C again "
			    "to give up)\n",
			    !o->quiet && isatty(2) ? "\n" : "", es.queued, o->flush_timeout_s);
		otlp_exporter__shutdown(
		    r->exporter, flush_ms_left(flush_end, r->metrics ? metrics_reserve(o) : 0),
		    record__abort_flush());
	}
	if (r->metrics) { /* the final figures, the profiles' flush included */
		record__self_telemetry(r, s, r->syms, 0);
		otlp_exporter__shutdown(r->metrics, flush_ms_left(flush_end, 0),
					record__abort_flush());
	}
}
