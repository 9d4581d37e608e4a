/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report: what `spanprof record` tells the user on stderr while it runs and when it ends: the
 * progress line, the end-of-run summary (samples, losses by reason, frames not named, unwinding,
 * file identities, span links, targeting), and with SPANPROF_DEBUG where the memory went. Reads
 * the recorder's stages (record/recorder.h); changes nothing.
 */
#ifndef SPANPROF_REPORT_H
#define SPANPROF_REPORT_H

#include <stdint.h>

struct recorder;
struct sampler;
struct symcache;

/*
 * The progress line: elapsed time since @t0 (CLOCK_MONOTONIC ns) at @now, samples, drops,
 * processes, samples in spans, per type with several, the export queue. On a terminal it is
 * rewritten in place; @final ends it with a newline.
 */
void report__progress(struct recorder *r, struct sampler *s, uint64_t t0, uint64_t now, int final);

/* The end-of-run summary of a run that sampled for @secs seconds. */
void report__summary(struct recorder *r, struct sampler *s, double secs);

/* SPANPROF_DEBUG: the symbol cache's and malloc's memory (docs/performance.md). */
void report__memory(struct symcache *syms);

#endif
