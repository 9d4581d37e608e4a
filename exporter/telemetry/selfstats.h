/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfstats: spanprof's own telemetry (docs/self-telemetry.md).
 *
 * One snapshot (struct selfstats) holds every counter and gauge of the agent at one instant:
 * samples taken and lost (per reason), unwinder fallbacks and walk stops (per reason),
 * symbolization misses, processes tracked, BPF map fill, the export queues and the results and
 * durations of Export calls, and the agent's CPU time and resident memory. From it:
 * - selfstats__log() writes the "spanprof: info: stats ..." lines (key=value, greppable);
 * - selfstats__encode() builds an OTLP ExportMetricsServiceRequest (opentelemetry-proto
 *   v1.11.0, metrics/v1) with every metric under the "spanprof." prefix, for
 *   /opentelemetry.proto.collector.metrics.v1.MetricsService/Export.
 *
 * Counters are cumulative since the agent started (OTLP CUMULATIVE temporality, start time =
 * the agent's start); gauges are the value at the snapshot. The snapshot is plain data:
 * selfstats_collect.c fills it from the agent's modules, tests fill it by hand.
 *
 * The agent's resource (struct selfstats_resource) follows the OpenTelemetry resource SDK
 * specification: service.name from OTEL_SERVICE_NAME, else from OTEL_RESOURCE_ATTRIBUTES,
 * else "spanprof"; the other OTEL_RESOURCE_ATTRIBUTES entries (W3C Baggage style,
 * percent-decoded, parsed by procmeta__parse_resource_attributes()); service.version,
 * service.instance.id (random per run), host.name and process.pid unless those variables set
 * them.
 */
#ifndef SPANPROF_SELFSTATS_H
#define SPANPROF_SELFSTATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "otlp/otlp_export.h"
#include "runtime/python/pytab.h"
#include "sampler.h"

/* Log levels of --log-level; self-telemetry lines are SELFSTATS_LOG_INFO. */
enum selfstats_log_level {
	SELFSTATS_LOG_ERROR,
	SELFSTATS_LOG_WARN,
	SELFSTATS_LOG_INFO,
	SELFSTATS_LOG_DEBUG,
};

/* "error", "warn", "info" or "debug" -> level; -EINVAL otherwise. */
int selfstats__parse_log_level(const char *s);

/* Bound of the --self-metrics send queue (one request is a few KiB). */
#define SELFSTATS_QUEUE_BYTES (1u << 20)

#define SELFSTATS_MAX_MAPS 8
#define SELFSTATS_MAX_EXPORTERS 2

/* One BPF map that can fill up. */
struct selfstats_map {
	const char *name;  /* static string, e.g. "unwind_procs" */
	uint64_t entries;  /* in use now */
	uint64_t capacity; /* max_entries */
	uint64_t bytes;	   /* memory charged for it (kernel's memlock figure, or chunk bytes) */
};

/* One OTLP exporter (the profiles one, the self-metrics one). */
struct selfstats_export {
	const char *signal; /* static: "profiles" or "metrics" */
	struct otlp_exporter_stats st;
};

struct selfstats {
	uint64_t time_unix_ns;	/* when the snapshot was taken */
	uint64_t start_unix_ns; /* when the agent started: start of every cumulative counter */

	/* Samples (user space). */
	uint64_t samples;	  /* recorded into profiles, every profile type */
	uint64_t samples_oom;	  /* lost in user space: out of memory */
	uint64_t link_drops;	  /* kept without their span: out of memory */
	uint64_t encode_failures; /* export intervals (or parts) that could not be encoded */
	/* The BPF per-CPU counters, summed (enum sp_stat of bpf/sampler.h). */
	uint64_t bpf[SP_STAT_MAX];
	/*
	 * Profile types (--profile, enum sp_profile_type): bit t set = type t recorded; its name
	 * ("cpu", "alloc", ...: a static string) and the samples recorded for it. The drops per
	 * type are in bpf[sp_stat_type_drop(t)].
	 */
	uint32_t profile_types;
	const char *type_names[SP_PROF_NTYPES];
	uint64_t type_recorded[SP_PROF_NTYPES];
	int cfi;	/* CFI unwinder on: the SP_STAT_UNW_* counters mean something */
	int span_links; /* thread-context reader on: the SP_STAT_CTX_* counters mean something */

	/* Symbolization, per frame. */
	uint64_t frames_unmapped;	 /* user PC outside every known mapping */
	uint64_t frames_unsymbolized;	 /* in a known file, no symbol */
	uint64_t kernel_unsymbolized;	 /* kernel PC, no kallsyms entry */
	uint64_t maps_read_failed;	 /* /proc/PID/maps unreadable */
	uint64_t objects_failed;	 /* executable mappings whose file could not be opened */
	uint64_t symcache_bytes;	 /* gauge: symbol tables and DWARF held */
	uint64_t frames_fileid;		 /* named through the samples' file identities */
	uint64_t frames_fileid_unknown;	 /* ... in a file no process had shown the agent */
	uint64_t jit_named, jit_unnamed; /* JIT frames named from perf maps / jitdump, or not */
	uint64_t debuginfod_requests;	 /* files that asked debuginfod for their debug file */
	uint64_t debuginfod_files;	 /* loads that used a fetched debug file */

	/* Processes. */
	uint64_t processes_seen;	/* counter: processes sampled since the start */
	uint64_t processes_tracked;	/* gauge: entries of the symbolizer's process table */
	uint64_t processes_unwind;	/* gauge: processes with CFI mapping lists */
	uint64_t processes_span_links;	/* gauge: processes with a thread-context descriptor */
	uint64_t unwind_tables_refused; /* counter: tables refused, memory or table limit */
	uint64_t unwind_procs_refused;	/* counter: processes refused, BPF process map full */

	struct selfstats_map maps[SELFSTATS_MAX_MAPS];
	size_t nmaps;

	struct selfstats_export exports[SELFSTATS_MAX_EXPORTERS];
	size_t nexports;

	/*
	 * CPython frames (runtime/python/, docs/python.md), when the walk is on (python set): the
	 * BPF walks ([0] every walk, [PY_STOP_x] the walks that ended so), the table of
	 * interpreters, and what became of the walked samples and frames (resolve_stats.py).
	 */
	int python;
	uint64_t py_walks[PY_STOP_COUNT];
	struct pytab_stats py_table;
	uint64_t py_samples_placed, py_samples_cut, py_samples_unplaced, py_samples_dropped;
	uint64_t py_samples_no_process;
	uint64_t py_frames_named, py_frames_unnamed, py_frames_stale;

	/* The agent process: getrusage() and /proc/self/statm. */
	double cpu_user_s, cpu_system_s;
	uint64_t rss_bytes;
};

/*
 * Samples lost in BPF to a full ring buffer, summed over the profile types in @types (bit t =
 * enum sp_profile_type t). @bpf: the summed per-CPU counters, SP_STAT_MAX entries indexed by
 * enum sp_stat (bpf/sampler.h).
 */
static inline uint64_t selfstats_ringbuf_drops(const uint64_t *bpf, uint32_t types)
{
	uint64_t n = 0;

	for (uint32_t t = 0; t < SP_PROF_NTYPES; t++)
		if (types & (1u << t))
			n += bpf[sp_stat_type_drop(t)];
	return n;
}

/*
 * Writes the snapshot as lines "spanprof: info: stats <group> key=value ..." to @f (groups:
 * samples, unwind, symbols, processes, maps, export, agent). Keys are unique across the lines;
 * docs/self-telemetry.md lists them.
 */
void selfstats__log(FILE *f, const struct selfstats *st);

/* A resource attribute of the agent: a string, or an integer when is_int. Owns key and str. */
struct selfstats_attr {
	char *key;
	char *str;
	int64_t i;
	int is_int;
};

#define SELFSTATS_MAX_RESOURCE_ATTRS 40

struct selfstats_resource {
	struct selfstats_attr attrs[SELFSTATS_MAX_RESOURCE_ATTRS]; /* service.name first */
	size_t nattrs;
};

/*
 * Builds the agent's resource from the values of OTEL_SERVICE_NAME (@service_name_env) and
 * OTEL_RESOURCE_ATTRIBUTES (@attrs_env), both may be NULL; then adds service.version
 * (@version), host.name (@host), service.instance.id (@instance_id) and process.pid (@pid)
 * unless @attrs_env gave them (the operator's value wins). A malformed @attrs_env is discarded
 * whole, as the specification asks: returns -EINVAL with @out still complete (without those
 * attributes); else 0, or -ENOMEM (@out empty). Free with selfstats__resource_clear().
 */
int selfstats__resource_build(const char *service_name_env, const char *attrs_env,
			      const char *version, const char *host, const char *instance_id,
			      int64_t pid, struct selfstats_resource *out);

/*
 * The same from this process: getenv(), gethostname(), getpid() and a random version-4 UUID
 * (getrandom) as service.instance.id. Prints a warning for a malformed OTEL_RESOURCE_ATTRIBUTES.
 * 0 or -ENOMEM.
 */
int selfstats__resource_from_env(struct selfstats_resource *out);

/* Value of @key, or NULL (integers: NULL). */
const char *selfstats__resource_get(const struct selfstats_resource *r, const char *key);

/* Frees what @r owns and empties it. NULL is a no-op. */
void selfstats__resource_clear(struct selfstats_resource *r);

/*
 * Encodes @st as a serialized opentelemetry.proto.collector.metrics.v1.ExportMetricsService-
 * Request: one ResourceMetrics (@res), one ScopeMetrics (scope "spanprof", @scope_version),
 * the metrics of docs/self-telemetry.md. On success *@out is a malloc'd buffer (caller frees)
 * of *@len bytes; returns 0 or -ENOMEM.
 */
int selfstats__encode(const struct selfstats *st, const struct selfstats_resource *res,
		      const char *scope_version, uint8_t **out, size_t *len);

/* --- collection (selfstats_collect.c): the live agent's modules --- */
struct sampler;
struct jitprocs;
struct proctab;
struct symcache;
struct unwinder;
struct spanlinks;
struct resolve;
struct pytab;

/* What selfstats__collect() reads. Pointers may be NULL (that part is left out). */
struct selfstats_sources {
	uint64_t start_unix_ns;
	struct sampler *sampler;
	const struct proctab *procs;
	const struct resolve *resolve;
	const struct symcache *syms;
	const struct unwinder *unwinder;
	const struct spanlinks *links;
	const struct jitprocs *jit; /* NULL: JIT code is not named */
	const struct pytab *python; /* NULL: the Python walk is off */
	struct otlp_exporter *profiles, *metrics;
	/* record.c's own counters */
	uint64_t samples, samples_oom, link_drops, encode_failures;
	uint32_t profile_types;	      /* --profile mask; 0: CPU only */
	const uint64_t *type_samples; /* [SP_PROF_NTYPES] recorded per type; may be NULL */
};

/*
 * Fills @out from @src, the BPF maps (entries counted by walking the keys of the hash maps,
 * memory from /proc/self/fdinfo) and this process's rusage and /proc/self/statm. Never fails:
 * what cannot be read stays 0.
 */
void selfstats__collect(const struct selfstats_sources *src, struct selfstats *out);

/*
 * Resident set size in bytes from a /proc/PID/statm line (@text; second field, in pages of
 * @page_size bytes). 0 or -EINVAL.
 */
int selfstats__parse_statm(const char *text, long page_size, uint64_t *rss_bytes);

#endif
