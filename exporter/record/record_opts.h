/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record_opts: the settings of one `spanprof record` run (filled by exporter/cli/ from options,
 * the configuration file and the environment) and their defaults and limits. A header of its
 * own so that the record/ modules read them without including the conductor's record.h.
 */
#ifndef SPANPROF_RECORD_OPTS_H
#define SPANPROF_RECORD_OPTS_H

#include <stddef.h>
#include <stdint.h>

#define RECORD_DEFAULT_HZ 19
#define RECORD_MAX_HZ 10000
#define RECORD_MAX_PIDS 4096
#define RECORD_MAX_HEADERS 32
#define RECORD_DEFAULT_SYMCACHE_MB 12
/* What the symbol cache's budget may grow to when it thrashes (docs/performance.md). */
#define RECORD_DEFAULT_SYMCACHE_MAX_MB 32
#define RECORD_DEFAULT_DEBUGINFOD_CACHE_MB 1024
#define RECORD_DEFAULT_UNWIND_MB 256
#define RECORD_MAX_CTX_UPROBES 16
/* CPython processes described to the BPF walk at once (64 bytes each). */
#define RECORD_PYTHON_MAX_PROCS 4096
#define RECORD_DEFAULT_ALLOC_SAMPLE_BYTES (512u << 10)
#define RECORD_DEFAULT_LOCK_MIN_WAIT_NS 10000ull /* 10 us */
#define RECORD_DEFAULT_OFFCPU_MIN_NS 1000000ull	 /* 1 ms */
#define RECORD_MAX_TARGETS 256 /* values of each targeting flag (--exe, --cgroup, ...) */

struct record_opts {
	uint32_t frequency_hz;		/* per CPU */
	double duration_s;		/* 0: until SIGINT/SIGTERM */
	uint32_t pids[RECORD_MAX_PIDS]; /* as given: processes or threads */
	size_t npids;
	const char *output_dir; /* NULL with an endpoint: no local files */
	int quiet;		/* no progress line */
	int verbose;		/* --verbose: the full accounting at the end (record/report.h) */
	const char
	    *stats_json;      /* --stats-json FILE: every counter as JSON at the end; NULL: none */
	uint32_t ringbuf_mb;  /* --ring-buffer-mb: sample ring buffer; 0: sized from HZ and CPUs */
	uint32_t symcache_mb; /* symbolizer memory budget */
	/* --symbol-cache-max-mb: what it may grow to (at least symcache_mb: fixed) */
	uint32_t symcache_max_mb;
	double slow_file_timeout_s; /* deadline of a copy from FUSE or a network file system */
	/* --debuginfod: servers (exporter/symbols/debuginfod.h); NULL: $DEBUGINFOD_URLS, "": off */
	const char *debuginfod_urls;
	uint32_t debuginfod_cache_mb; /* client cache bound; 0: the library's age-based cleaning */
	uint32_t unwind_max_mb; /* CFI unwind tables (docs/unwinding.md); 0: frame pointers only */
	int no_span_links;	/* don't read thread contexts (docs/span-links.md) */
	/* --context-uprobe BINARY:SYMBOL[:MODE]: mode is SP_CTXP_* of bpf/sampler.h. */
	struct record_ctx_uprobe {
		char *binary, *symbol;
		uint32_t mode;
	} ctx_uprobes[RECORD_MAX_CTX_UPROBES];
	size_t nctx_uprobes;
	/*
	 * --profile: profile types, bit 1 << PROFILE_* (exporter/profile/profile.h); 0 = CPU only.
	 * Settings of the event types (docs/profile-types.md).
	 */
	uint32_t profile_types;
	uint64_t alloc_sample_bytes; /* --alloc-sample-bytes: mean bytes between samples; 0: all */
	uint64_t alloc_min_bytes;    /* --alloc-min-bytes */
	uint64_t lock_min_wait_ns;   /* --lock-min-wait */
	uint64_t offcpu_min_ns;	     /* --offcpu-min */
	/*
	 * Targeting (exporter/sampling/targets.h, docs/deploy.md): with any of these or --pid, a
	 * process is sampled when it matches any of them. Paths are under SPANPROF_HOST_ROOT.
	 */
	const char *exes[RECORD_MAX_TARGETS]; /* --exe PATH */
	size_t nexes;
	const char *cgroups[RECORD_MAX_TARGETS]; /* --cgroup PATH (cgroup v2) */
	size_t ncgroups;
	const char *container_ids[RECORD_MAX_TARGETS]; /* --container-id ID (>= 12 hex digits) */
	size_t ncontainer_ids;
	const char *k8s_pods[RECORD_MAX_TARGETS]; /* --k8s-pod UID|NAMESPACE/NAME */
	size_t nk8s_pods;
	int k8s;	  /* --k8s: Kubernetes resource attributes (exporter/process/k8smeta.h) */
	int java_perfmap; /* --java-perfmap: ask JVMs for their perf map (docs/jit.md) */
	int no_python;	  /* --no-python: no CPython frames (docs/python.md) */
	int no_python_code_cache;	  /* --no-python-code-cache (docs/python.md) */
	double python_code_cache_after_s; /* --python-code-cache-after */
	int no_v8;	 /* --no-v8: no JavaScript frames from V8's structures (docs/node.md) */
	int no_jvm;	 /* --no-jvm: no Java frames from HotSpot's structures (docs/java.md) */
	int short_names; /* --short-names: C++/Rust names without parameters and templates */

	/* OTLP export (all unset: local files only). */
	const char *endpoint; /* host:port, http://host:port or https://host:port */
	int insecure;	      /* -1: decide from the endpoint (loopback or http:// = plaintext) */
	const char *tls_ca, *tls_cert, *tls_key;
	struct record_header {
		char *key, *value;
	} headers[RECORD_MAX_HEADERS];
	size_t nheaders;
	int gzip;
	double export_interval_s;
	double export_timeout_s;
	double flush_timeout_s; /* on SIGINT/SIGTERM, wait this long for the queue to drain */
	size_t max_request_bytes;
	size_t queue_bytes;
	/* OTLP_SAMPLE_* bits (otlp/otlp_encode.h): per-sample attributes sent (--sample-attributes)
	 */
	unsigned int otlp_sample_attrs;

	/* Self-telemetry (docs/self-telemetry.md). */
	double stats_interval_s; /* stats lines (and --self-metrics requests) this often; 0: off */
	int self_metrics;	 /* also send them as OTLP metrics to the endpoint */
	int log_level;		 /* SELFSTATS_LOG_*; the stats lines are info */
};

#endif
