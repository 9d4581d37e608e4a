/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recorder: the state of one `spanprof record` run, shared by the conductor (record.c), the
 * modules it runs the stages with (callbacks.c, stages.c, export.c, ...) and its report
 * (report.c). Private to exporter/record/: every stage it points to is owned by
 * record__run(), which creates them in order and frees them in reverse.
 */
#ifndef SPANPROF_RECORDER_H
#define SPANPROF_RECORDER_H

#include <stdint.h>

#include "otlp/otlp_export.h"
#include "process/proctab.h"
#include "profile/profile.h"
#include "record/ingest.h"
#include "record/record_opts.h"
#include "sampling/sampler_user.h"
#include "telemetry/selfstats.h"

struct targets;
struct k8smeta;
struct pidwatch;
struct deadline;
struct unwinder;
struct jitprocs;
struct pytab;
struct v8tab;
struct hstab;
struct phptab;
struct runtime_table;
struct dbgfetch;

/* Runtimes with a table of processes (runtime/runtime.h) at most. */
#define RECORD_MAX_RUNTIMES 8

struct recorder {
	struct ingest in; /* the sample path: resolve, model, span links */
	const struct record_opts *opts;
	struct otlp_exporter *exporter; /* NULL: local files only */
	/*
	 * The export interval, in sample time (CLOCK_BOOTTIME, as BPF stamps samples): it ends
	 * at interval_end_boot, and a sample taken later closes it before it is added, so each
	 * request holds the samples of its interval even when the main thread is late.
	 */
	uint64_t interval_end_boot;
	uint64_t interval_ns;
	uint64_t encode_failures;  /* intervals (or parts) that could not be encoded */
	uint64_t interval_samples; /* samples added since the last export_interval() */
	uint64_t interval_queued;  /* of those, handed to the exporter (queued or counted there) */
	uint64_t encode_dropped;   /* samples of intervals (or parts) that could not be encoded */
	struct proctab *procs;
	uint64_t samples;		       /* samples added to the profile */
	uint64_t type_samples[PROFILE_NTYPES]; /* the same, per profile type */
	struct sampler *sampler;
	uint64_t user_drops;	   /* samples lost in user space (ENOMEM) */
	struct unwinder *unwinder; /* CFI tables; NULL: frame pointers only */
	struct jitprocs *jit;	   /* processes with JIT code (perf maps, jitdump); NULL: ENOMEM */
	struct pytab *python;	   /* CPython processes (docs/python.md); NULL: --no-python */
	struct v8tab *v8;	   /* node processes (docs/node.md); NULL: unwinding off */
	struct hstab *jvm;	   /* HotSpot JVMs (docs/java.md); NULL: unwinding off */
	struct phptab *php;	   /* PHP processes (docs/php.md); NULL: unwinding off */
	/*
	 * The tables of the runtimes above that are on, in the order they were started: each
	 * maps read, exec and tick goes to every one (callbacks.c, record.c).
	 */
	struct runtime_table *runtimes[RECORD_MAX_RUNTIMES];
	size_t nruntimes;
	struct targets *targets;   /* --exe, --cgroup, --container-id, --k8s-pod; NULL: none */
	struct k8smeta *k8s;	   /* --k8s; NULL: no Kubernetes attributes */
	struct pidwatch *pidwatch; /* --pid alone: stop when they have all exited; else NULL */
	struct deadline *deadline; /* --duration: stops sampling on time; NULL: none */
	struct dbgfetch *fetch;	   /* --debuginfod / DEBUGINFOD_URLS; NULL: none */
	const char *k8s_node;	   /* K8S_NODE_NAME / NODE_NAME with --k8s */
	struct symcache *syms;	   /* the symbol cache (the report reads its counters) */
	int ksyms_on;		   /* kernel symbols loaded */
	uint32_t ringbuf_bytes;	   /* size of the sample ring buffer */
	/*
	 * Exits seen but not handled yet: the process's last samples may still wait in the
	 * sample ring (woken less often), and need its tables, maps and context. Handled after
	 * the next drain of the sample ring.
	 */
	struct unwind_event exits[256];
	uint32_t nexits;
	/* Self-telemetry (docs/self-telemetry.md): --self-metrics sender, the agent's resource. */
	struct otlp_exporter *metrics;
	struct selfstats_resource self_res;
	uint64_t start_unix;
};

/* A run limited to some processes (--pid or any other targeting option). */
static inline int targeted(const struct recorder *r)
{
	return r->opts->npids || r->targets;
}

#endif
