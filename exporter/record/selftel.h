/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selftel: the agent's own telemetry during a run (docs/self-telemetry.md): the stats lines and
 * the --self-metrics requests, with their sender. Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_SELFTEL_H
#define SPANPROF_RECORD_SELFTEL_H

#include "record/recorder.h"

/* Self-telemetry (docs/self-telemetry.md): the stats lines and the --self-metrics request. */
void record__self_telemetry(struct recorder *r, struct sampler *s, const struct symcache *syms,
			    int log);

/* The --self-metrics sender: the profiles' endpoint, TLS and headers, its own bounded queue. */
int record__start_self_metrics(struct recorder *r, const struct otlp_exporter_opts *profiles);

#endif /* SPANPROF_RECORD_SELFTEL_H */
