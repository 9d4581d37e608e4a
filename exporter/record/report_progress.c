/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_progress: the progress line of `spanprof record` while it runs (report__progress(),
 * report.h): samples, drops by where they were lost, processes, samples in spans, per profile
 * type with several, the export queue; rewritten in place on a terminal.
 */
#include <stdio.h>
#include <unistd.h>

#include "process/proctab.h"
#include "record/record_describe.h"
#include "record/recorder.h"
#include "record/report.h"
#include "record/report_common.h"

/* --- the progress line --- */

/* "  | cpu 120 alloc 12" with more than one profile type selected, else "". */
static const char *event_counts(struct recorder *r, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	if (record__ntypes(r->opts) < 2)
		return buf;
	for (uint32_t t = 0; t < PROFILE_NTYPES && len < size; t++)
		if (r->opts->profile_types & (1u << t))
			len += snprintf(buf + len, size - len, "%s %s %llu", len ? " " : "  |",
					profile__type_info(t)->name, u(r->type_samples[t]));
	return buf;
}

/*
 * "N dropped", then where they were lost when any were: in BPF to a full ring buffer (the
 * drain thread late, or the queue it empties the ring into full: the agent behind), in the
 * sample queue (no memory), in the agent (no memory).
 */
static const char *drop_counts(uint64_t ring, const struct sampler_queue_stats *q, uint64_t oom,
			       char *buf, size_t size)
{
	uint64_t all = ring + q->lost + oom;
	int len = snprintf(buf, size, "%llu dropped", u(all));

	if (all && len >= 0 && (size_t)len < size)
		snprintf(buf + len, size - len, " (ring buffer %llu%s, queue %llu, memory %llu)",
			 u(ring), q->full ? " with the queue full" : "", u(q->lost), u(oom));
	return buf;
}

void report__progress(struct recorder *r, struct sampler *s, uint64_t t0, uint64_t now, int final)
{
	uint64_t st[SP_STAT_MAX] = {0};
	struct sampler_queue_stats qs;
	char events[96], drops[128];
	double elapsed = (now - t0) / 1e9;
	int tty = isatty(STDERR_FILENO);

	char export[160] = "";

	sampler__stats(s, st);
	sampler__queue_stats(s, &qs);
	if (r->exporter) {
		struct otlp_exporter_stats es;

		otlp_exporter__stats(r->exporter, &es);
		snprintf(export, sizeof(export),
			 "  | export: %llu sent (%.1f KiB), %llu retries, %llu dropped, %zu queued",
			 u(es.requests_sent), es.bytes_sent / 1024.0, u(es.retries), u(es.dropped),
			 es.queued);
	}
	fprintf(stderr,
		"%sspanprof: %6.1fs  %8llu samples  %s  %llu processes  %llu in spans%s%s%s",
		tty ? "\r\033[K" : "", elapsed, u(r->samples),
		drop_counts(ringbuf_drops(r->opts, st), &qs, r->user_drops, drops, sizeof(drops)),
		u(proctab__stats(r->procs)->processes), u(st[SP_STAT_CTX_LINKED]),
		event_counts(r, events, sizeof(events)), export, tty && !final ? "" : "\n");
}
