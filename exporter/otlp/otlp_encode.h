/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_encode: turns a struct profile into OTLP ExportProfilesServiceRequest messages.
 *
 * Format: opentelemetry-proto v1.11 (same wire as v1.10), package
 * opentelemetry.proto.collector.profiles.v1development / profiles.v1development, the version
 * the Collector in integration/collector decodes (see otlp-proto/). Conventions: the OTel
 * eBPF profiler's, which Grafana Pyroscope reads (docs: design-notes.md section 1).
 *
 * One profile type per request: the samples of each type (--profile cpu, offcpu, alloc, lock;
 * all the values it sends) go in requests of their own, never with another type's. A backend
 * that refuses a type with a non-retryable status (Pyroscope: "sample values length mismatch"
 * for off-CPU) then loses that type only, and the agent can count what it lost per type.
 *
 * Each request is self-contained: one deduplicated ProfilesDictionary whose every table
 * starts with its zero value (string_table[0] = "", link_table[0] = Link{}), one
 * ResourceProfiles per process (pid) with one ScopeProfiles and one Profile in it:
 *   resource: service.name, process.pid (int), process.executable.name,
 *             process.executable.path, container.id (when known), host.name, with --k8s
 *             k8s.pod.uid, k8s.pod.name, k8s.namespace.name, k8s.container.name (those known,
 *             procmeta.k8s) and k8s.node.name, plus the other OTEL_RESOURCE_ATTRIBUTES of the
 *             process (a key spanprof already set is not repeated);
 *   profile:  sample_type samples/count, period_type cpu/nanoseconds, period = meta period,
 *             time_unix_nano/duration_nano = the recording window (widened, if needed, so
 *             that every timestamp lies in [time, time + duration)), random profile_id;
 *   sample:   stack_index, attribute_indices {thread.id, thread.name, cpu.logical_number,
 *             less those omit_sample_attrs leaves out; then samples equal in all else, which
 *             the proto identifies as one, are one Sample: their events together},
 *             timestamps_unix_nano (one per event) when every sample of the process has as
 *             many timestamps as its count, else values = [count] and no timestamps;
 *   location: profile.frame.type = native | kernel | abort (the marker of a cut stack,
 *             exporter/profile/stackend.h);
 *   mapping:  process.executable.build_id.gnu, process.executable.build_id.htlhash (hex of
 *             the first 16 bytes of SHA-256(first 4 KiB || last 4 KiB || size as big-endian
 *             u64) of the mapped file, when it can be read).
 * Attribute table keys use key_strindex: it is the only key field of KeyValueAndUnit in the
 * pinned proto. Attribute values are inline (string_value / int_value).
 *
 * Size: no request is larger than max_request_bytes. Whole processes (of one type) are
 * grouped into a request while they fit; a process that does not fit alone is split across requests
 * (by samples, each part its own Profile with its own profile_id).
 */
#ifndef SPANPROF_OTLP_ENCODE_H
#define SPANPROF_OTLP_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "process/procmeta.h"
#include "profile/profile.h"

#define OTLP_DEFAULT_MAX_REQUEST (4u << 20) /* the Collector's default gRPC receive limit */

/*
 * Per-sample attributes a caller may leave out (struct otlp_encode_opts.omit_sample_attrs): a
 * backend that makes every sample attribute a series label (Grafana Pyroscope) gets a series
 * per thread or CPU from them (docs/otlp.md, "Series").
 */
#define OTLP_SAMPLE_THREAD_ID 1u   /* thread.id */
#define OTLP_SAMPLE_THREAD_NAME 2u /* thread.name */
#define OTLP_SAMPLE_CPU 4u	   /* cpu.logical_number */
#define OTLP_SAMPLE_ALL (OTLP_SAMPLE_THREAD_ID | OTLP_SAMPLE_THREAD_NAME | OTLP_SAMPLE_CPU)

struct otlp_encode_opts {
	/* host.name; NULL: gethostname(); "": no host.name attribute. */
	const char *host_name;
	/* InstrumentationScope; NULL: "spanprof" and SPANPROF_VERSION. */
	const char *scope_name;
	const char *scope_version;
	/* Largest serialized request, in bytes; 0: OTLP_DEFAULT_MAX_REQUEST. */
	size_t max_request_bytes;
	/*
	 * Resource facts of @pid. Returns 0 and sets *out (owned by the callee, valid until
	 * otlp__encode() returns), or a negative errno: the process is then described by the
	 * process name its samples carry. NULL: no callback (tests, or no /proc access).
	 */
	int (*process_meta)(void *ctx, uint32_t pid, const struct procmeta **out);
	void *ctx;
	/* k8s.node.name on every resource (--k8s: the agent's K8S_NODE_NAME); NULL: none. */
	const char *k8s_node_name;
	/* Non-zero: skip the htlhash file reads (tests with fake paths, or a caller's policy). */
	int no_file_hash;
	/* OTLP_SAMPLE_* bits: per-sample attributes left out (0: every one sent). */
	unsigned int omit_sample_attrs;
};

/*
 * Called once per request with the serialized ExportProfilesServiceRequest (@len bytes,
 * <= max_request_bytes), the number of profiling samples (events: the sum of the sample
 * counts) it carries and the profile type of all of them (enum profile_type).
 * @buf belongs to the encoder and is valid during the call only.
 * A non-zero return stops the encoding and is returned by otlp__encode().
 */
typedef int (*otlp_emit_fn)(void *ctx, const uint8_t *buf, size_t len, uint64_t samples,
			    uint32_t type);

/*
 * Encodes every sample of @p (types in enum profile_type order, then processes in ascending
 * pid order) into one or more requests, each of one type, and hands each to @emit. A profile
 * without samples emits nothing.
 * @o may be NULL (all defaults). Reads @p only; keeps nothing after it returns.
 * Returns 0, -ENOMEM, -E2BIG when one sample with its stack alone is larger than the
 * limit (nothing more is emitted), or the first non-zero return of @emit.
 */
int otlp__encode(const struct profile *p, const struct otlp_encode_opts *o, otlp_emit_fn emit,
		 void *emit_ctx);

#endif /* SPANPROF_OTLP_ENCODE_H */
