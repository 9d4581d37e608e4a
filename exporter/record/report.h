/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report: what `spanprof record` tells the user on stderr while it runs and when it ends.
 *
 * - The progress line, while it runs (report_progress.c).
 * - At the end, by default at most four lines: what was sampled (samples, processes, seconds,
 *   profile types and rate), where it went (the "wrote FILES" line of output/outputs.h, or the
 *   requests sent), and only the problems a user can act on, each with what to do (the table
 *   of problems in report_problems.c: a predicate and a message each). A clean run prints no
 *   problem.
 * - With --verbose, the full accounting instead: one line per stage (samples and losses by
 *   reason, frames not named, unwinding, file identities, JIT, span links, targeting, export,
 *   debuginfod; report_accounting.c), then the problems.
 * - With --stats-json FILE, every counter of the full accounting as JSON (report_json.c, the
 *   schema in docs/stats-json.md).
 *
 * The end of a run is in two steps: report__collect() (report.c) copies every counter of the
 * recorder's stages (record/recorder.h) into a struct report_data, plain data that outlives the
 * stages (they are freed before the outputs are written); the printers and the JSON writer read
 * only that, so tests fill one by hand. Changes nothing in the stages.
 */
#ifndef SPANPROF_REPORT_H
#define SPANPROF_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "otlp/otlp_export.h"
#include "process/k8smeta.h"
#include "process/proctab.h"
#include "profile/profile.h"
#include "record/record_opts.h"
#include "resolve/resolve.h"
#include "runtime/jit/jitproc.h"
#include "runtime/python/pytab.h"
#include "runtime/jvm/hstab.h"
#include "runtime/php/phptab.h"
#include "runtime/v8/v8tab.h"
#include "sampler.h"
#include "sampling/sampler_user.h"
#include "sampling/targets.h"
#include "spans/spanlinks.h"
#include "symbols/debuginfod.h"
#include "symbols/symbolize.h"
#include "unwind/unwinder.h"
#include "util/regfile.h"

struct recorder;
struct sampler;
struct symcache;

/* Files with the most unnamed frames kept for the report (resolve/objtally.h). */
#define REPORT_MAX_FILES 8

/* One file whose frames were unnamed. */
struct report_file {
	char path[256];	  /* as the first process that mapped it saw it */
	uint64_t frames;  /* user frames in samples in this file */
	uint64_t unnamed; /* ... without a name */
};

/* The outcome of the debuginfod fetches at the end of the run (symbols/debuginfod.h). */
struct report_debuginfod {
	struct dbgfetch_stats st;
	uint64_t rejected; /* fetched files that were not the object's (symcache_stats) */
	uint64_t named;	   /* frames named at the end, once their file had arrived */
};

/* Every counter of one run at its end. Plain data; *_on: that stage ran (else its part is 0). */
struct report_data {
	const struct record_opts *opts; /* borrowed: the run's settings */
	double secs;			/* sampling time */
	int ncpus;			/* CPUs sampled */
	uint32_t ringbuf_bytes;		/* size of the sample ring buffer */
	int targeted;			/* --pid or another targeting option */
	int ksyms_on;			/* kernel symbols loaded */

	uint64_t samples;		       /* recorded into the profile, every type */
	uint64_t user_drops;		       /* lost in the agent: out of memory */
	struct sampler_queue_stats queue;      /* between the ring and the agent: its losses */
	uint64_t link_drops;		       /* kept without their span: out of memory */
	uint64_t type_samples[PROFILE_NTYPES]; /* recorded, per profile type */
	uint64_t bpf[SP_STAT_MAX]; /* the BPF counters summed over CPUs (bpf/sampler.h) */

	struct proctab_stats procs;
	size_t procs_in_table;
	uint64_t mapped_not_regular;	 /* mapped files not opened: not regular (procmaps.h) */
	struct regfile_stats slow_files; /* files on file systems that can stall (regfile.h) */
	struct resolve_stats resolve;
	uint64_t frames_in_files; /* user frames of samples in a known file (objtally__frames) */
	struct report_file files[REPORT_MAX_FILES]; /* most unnamed frames first */
	size_t nfiles;
	struct symcache_stats syms;

	int unwind_on;
	struct unwinder_stats unwind;
	int links_on;
	struct spanlinks_stats links;
	int targets_on;
	struct targets_stats targets;
	int k8s_on;
	int k8s_node; /* K8S_NODE_NAME or NODE_NAME set */
	struct k8smeta_stats k8s;
	int export_on;
	struct otlp_exporter_stats export;
	uint64_t encode_failures; /* intervals (or parts) that could not be encoded */
	uint64_t encode_dropped;  /* samples of those */
	int metrics_on;
	struct otlp_exporter_stats metrics;
	int debuginfod_on;
	struct report_debuginfod debuginfod;

	int jit_on;		  /* JIT code named (runtime/jit/jitprocs.h) */
	struct jitproc_stats jit; /* JIT code named from perf maps and jitdump files */

	int python_on; /* CPython frames walked (not --no-python) */
	struct pytab_stats python;
	/* BPF walks: [0] all, then by end, then PY_STAT_CODE_* (bpf/python.h) */
	uint64_t python_walks[PY_STAT_COUNT];

	int v8_on; /* JavaScript frames read (the CFI walk is on) */
	struct v8tab_stats v8;
	uint64_t v8_bpf[V8_STAT_COUNT]; /* the BPF reader's counters (enum v8_stat, bpf/v8.h) */
	int jvm_on;			/* Java frames walked (the CFI walk is on) */
	struct hstab_stats jvm;
	uint64_t jvm_bpf[HS_STAT_COUNT]; /* the HotSpot walk's counters (enum hs_stat) */
	int php_on;			 /* PHP frames walked (the CFI walk is on) */
	struct phptab_stats php;
	uint64_t php_bpf[PHP_STAT_COUNT]; /* the PHP walk's counters (enum php_stop, PHP_STAT_*) */

	/* The event profile types' own counters (sampler__event_counters()). */
	struct sampler_counter event_counters[PROFILE_NTYPES][SAMPLER_MAX_COUNTERS];
	size_t nevent_counters[PROFILE_NTYPES];
	/* Their --verbose lines (sampler__event_summary()), malloc'd; NULL: none. */
	char *event_lines;
};

/*
 * Copies every counter of @r and @s into @out for a run that sampled for @secs seconds, with
 * @dbg the debuginfod outcome (NULL: debuginfod was off). Free with report__data_clear().
 */
void report__collect(struct recorder *r, struct sampler *s, double secs,
		     const struct report_debuginfod *dbg, struct report_data *out);
/* Frees what @d owns. */
void report__data_clear(struct report_data *d);

/*
 * The progress line: elapsed time since @t0 (CLOCK_MONOTONIC ns) at @now, samples, drops,
 * processes, samples in spans, per type with several, the export queue. On a terminal it is
 * rewritten in place; @final ends it with a newline.
 */
void report__progress(struct recorder *r, struct sampler *s, uint64_t t0, uint64_t now, int final);

/*
 * The first lines of the end of the run on @f: what was sampled ("spanprof: N samples from N
 * processes in S s (TYPES)"); with opts->verbose the full accounting after it (the wording of
 * every line is kept across versions: scripts read them).
 */
void report__print_head(FILE *f, const struct report_data *d);

/* Where the samples went, for an exporting run ("spanprof: sent N samples to ..."); else none. */
void report__print_where(FILE *f, const struct report_data *d);

/* A problem found: its stable id (docs/stats-json.md) and its line, without "spanprof: ". */
struct report_found {
	const char *id;
	char message[384];
};

/* The problems of @d, in the table's order (most important first), at most @max. */
size_t report__problems(const struct report_data *d, struct report_found *out, size_t max);

/*
 * The problem lines on @f: at most REPORT_MAX_PROBLEM_LINES (every one with opts->verbose),
 * the last saying how many more there are. Returns the number of problems found.
 */
#define REPORT_MAX_PROBLEM_LINES 2
size_t report__print_problems(FILE *f, const struct report_data *d);

/* SPANPROF_DEBUG: the symbol cache's and malloc's memory (docs/performance.md). */
void report__memory(struct symcache *syms);

/* --- report_json.c: --stats-json (docs/stats-json.md) --- */

/* Version of the stats file's schema: raised when a field changes meaning or goes away. */
#define REPORT_JSON_VERSION 1

struct json_object;
/* The stats document of @d (json-c). NULL + errno (ENOMEM). Caller puts it (json_object_put). */
struct json_object *report__json(const struct report_data *d);

/*
 * Writes the stats document of @d to @path, atomically: a temporary file in the same
 * directory, renamed over @path once complete. 0 or -errno (nothing written).
 */
int report__write_json(const char *path, const struct report_data *d);

#endif
