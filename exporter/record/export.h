/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export: a run's OTLP export (--endpoint): the exporter's start, the export intervals (each
 * one encoded into requests and queued as it ends, in sample time), and at the end the last
 * interval and the bounded flush of both senders. Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_EXPORT_H
#define SPANPROF_RECORD_EXPORT_H

#include <stdint.h>

#include "record/recorder.h"
#include "record/report.h"

/*
 * An export interval closes on the clock this long after its end when no later sample closed
 * it: the drain thread moves samples to the queue every 10 ms, so those taken before the end
 * are in by then (unless the agent is behind: then a later sample closes it).
 */
#define RECORD_EXPORT_GRACE_NS (250 * 1000000ull)

/*
 * With --endpoint: the OTLP exporter of the profiles (r->exporter) and, with --self-metrics,
 * the sender of the agent's metrics (r->metrics). 0 (also without --endpoint), or 1 after a
 * line naming what is wrong (the TLS files, the endpoint).
 */
int record__start_export(struct recorder *r);

/*
 * The end of an exporting run, sampling stopped at @t_stop_boot (CLOCK_BOOTTIME): the last,
 * partial interval is queued, then both senders get one --flush-timeout to drain (a second
 * signal gives up); the last self-metrics request carries the final figures. Nothing without
 * senders.
 */
void record__finish_export(struct recorder *r, struct sampler *s, uint64_t t_stop_boot);

/*
 * Exit status of an exporting run: 1 when samples were taken but none reached the Collector (the
 * report's problem line says so, report.c).
 */
int record__export_result(const struct report_data *d);

/*
 * Ends the current export interval at @end_boot (CLOCK_BOOTTIME ns): encodes its samples into
 * requests, queues them, and starts a new interval with an empty profile.
 */
void record__export_interval(struct recorder *r, uint64_t end_boot);

/*
 * Ends the export intervals that ended before @boot_ns (CLOCK_BOOTTIME): one request each that
 * holds samples, none for an empty one.
 */
void record__export_due(struct recorder *r, uint64_t boot_ns);

#endif /* SPANPROF_RECORD_EXPORT_H */
