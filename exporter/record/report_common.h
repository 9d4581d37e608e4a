/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_common: the few helpers the parts of the end-of-run report share (report.c,
 * report_progress.c, report_accounting.c, report_problems.c); inside exporter/record/ only, the
 * face is record/report.h.
 */
#ifndef SPANPROF_REPORT_COMMON_H
#define SPANPROF_REPORT_COMMON_H

#include <stdint.h>

#include "record/record_describe.h"
#include "record/record_opts.h"
#include "sampler.h"
#include "telemetry/selfstats.h"

static inline unsigned long long u(uint64_t v)
{
	return (unsigned long long)v;
}

/* Samples lost in BPF to a full ring buffer, every profile type recorded. */
static inline uint64_t ringbuf_drops(const struct record_opts *o, const uint64_t *st)
{
	return selfstats_ringbuf_drops(st, record__selected_types(o));
}

/* Samples BPF handed to user space, every profile type. */
static inline uint64_t samples_taken(const uint64_t *st)
{
	uint64_t taken = 0;

	for (uint32_t t = 0; t < SP_PROF_NTYPES; t++)
		taken += st[sp_stat_type_samples(t)];
	return taken;
}

#endif /* SPANPROF_REPORT_COMMON_H */
