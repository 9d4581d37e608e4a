/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <unistd.h>

#include "record/record_util.h"
#include "record/selftel.h"
#include "telemetry/selfstats.h"

void record__self_telemetry(struct recorder *r, struct sampler *s, const struct symcache *syms,
			    int log)
{
	struct selfstats_sources src = {
	    .start_unix_ns = r->start_unix,
	    .sampler = s,
	    .procs = r->procs,
	    .resolve = r->in.resolve,
	    .syms = syms,
	    .unwinder = r->unwinder,
	    .links = r->in.links,
	    .jit = r->jit,
	    .python = r->python,
	    .profiles = r->exporter,
	    .metrics = r->metrics,
	    .samples = r->samples,
	    .samples_oom = r->user_drops,
	    .link_drops = r->in.link_drops,
	    .encode_failures = r->encode_failures,
	    .profile_types = r->opts->profile_types,
	    .type_samples = r->type_samples,
	};
	struct selfstats st;
	uint8_t *buf;
	size_t len;

	selfstats__collect(&src, &st);
	if (log && r->opts->log_level >= SELFSTATS_LOG_INFO) {
		if (!r->opts->quiet && isatty(STDERR_FILENO))
			fputs("\r\033[K", stderr); /* over the progress line */
		selfstats__log(stderr, &st);
	}
	if (r->metrics && !selfstats__encode(&st, &r->self_res, SPANPROF_VERSION, &buf, &len))
		otlp_exporter__submit(r->metrics, buf, len, 0, EXPORT_NO_TYPE);
}

int record__start_self_metrics(struct recorder *r, const struct otlp_exporter_opts *profiles)
{
	struct otlp_exporter_opts mo = *profiles;

	if (selfstats__resource_from_env(&r->self_res))
		return record__fail("out of memory while starting");
	mo.method = OTLP_METRICS_METHOD;
	mo.what = "data points";
	mo.binpb_dir = NULL;
	mo.queue_bytes = SELFSTATS_QUEUE_BYTES;
	r->metrics = otlp_exporter__new(&mo);
	if (!r->metrics)
		return record__fail("cannot set up the --self-metrics export to '%s': %s",
				    r->opts->endpoint, strerror(errno));
	return 0;
}
