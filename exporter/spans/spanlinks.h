/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spanlinks: the agent's side of span links (docs/span-links.md).
 *
 * For each profiled process it
 * - finds where the process keeps the OTEP 4947 thread-context variable
 *   otel_thread_ctx_v1 (exporter/spans/tlsctx.h) and hands that descriptor to the BPF
 *   sampler (map "tls_procs", struct sp_tls_loc of bpf/sampler.h), which then
 *   copies the record of the sampled thread into each sample;
 * - reads the OTEP 4719 process context (exporter/spans/procctx.h): service.name and
 *   other resource attributes, and the key map that names the record's attributes;
 * - turns a sample's record into a link (trace id, span id) and a set of sample
 *   attributes of the profile (exporter/profile/profile.h).
 *
 * Descriptors are computed when the agent reads a process's maps (first sample,
 * exec, a new executable mapping), retried while the loader has not resolved the
 * variable yet, and dropped when the process exits. Not thread-safe.
 */
#ifndef SPANPROF_SPANLINKS_H
#define SPANPROF_SPANLINKS_H

#include <stdint.h>

#include "sampler.h"

struct profile;
struct procmaps;
struct procmeta;
struct spanlinks;
struct unwind_event;

struct spanlinks_opts {
	int procs_fd;	  /* BPF map tls_procs (tgid -> struct sp_tls_loc) */
	int allow_symtab; /* also look for the variable in .symtab (static executables) */
	int go_procs_fd;  /* BPF map go_procs (tgid -> struct sp_go_loc); <= 0: no Go labels */
};

struct spanlinks_stats {
	uint64_t processes;	 /* processes with a thread-context descriptor now */
	uint64_t contexts;	 /* processes with a process context now */
	uint64_t processes_seen; /* processes given a descriptor, over the whole run */
	uint64_t contexts_seen;	 /* processes whose process context was read, over the run */
	uint64_t resolve_errors; /* descriptors that could not be computed (not ENOENT) */
	uint64_t retries;	 /* descriptors retried (loader had not resolved the slot) */
	uint64_t links;		 /* samples that got a link */
	uint64_t bad_records;	 /* records rejected in user space (should stay 0) */
	uint64_t go_processes;	 /* Go processes whose goroutine labels are read, over the run */
	uint64_t go_unsupported; /* Go processes whose labels can't be read (version, layout) */
	uint64_t go_links;	 /* samples linked by span_id/trace_id goroutine labels */
	uint64_t go_labeled;	 /* samples that carry goroutine labels */
	uint64_t go_bad_ids;	 /* span_id/trace_id labels that are no hex id: not linked */
};

/* NULL + errno on ENOMEM. */
struct spanlinks *spanlinks__new(const struct spanlinks_opts *o);
/* Removes every descriptor it put in the BPF map and frees everything. NULL is a no-op. */
void spanlinks__free(struct spanlinks *sl);

/* proctab maps hook (exporter/process/proctab.h): (re)computes the process's descriptor and
 * context. */
void spanlinks__maps_hook(void *ctx, uint32_t pid, uint64_t start_boot_ns,
			  const struct procmaps *maps);
/* Exec, exit and mapping-name notifications from the BPF hooks. */
void spanlinks__note_event(struct spanlinks *sl, const struct unwind_event *e);
/* Retries and periodic re-reads; call about once a second. */
void spanlinks__tick(struct spanlinks *sl);

/*
 * The link and attribute set of a sample whose record (s->ctx, s->ctx_len bytes, already
 * checked in BPF) is non-empty: interns them into @p. *link and *attrs are 0 when the sample
 * has no (valid) record. Returns 0 or -ENOMEM.
 * With SP_SAMPLE_GO_LABELS, s->ctx holds goroutine labels (exporter/runtime/go/golabels.h):
 * each becomes a sample attribute (key and value as the program set them), and a `span_id`
 * (16 hex digits) with a `trace_id` (32) becomes the link instead of their attributes. A span
 * id without a trace id stays an attribute only (an OTLP link needs both).
 */
int spanlinks__sample(struct spanlinks *sl, struct profile *p, const struct sp_sample *s,
		      uint32_t *link, uint32_t *attrs);

/*
 * The process's resource as the OTLP encoder wants it: @base (from /proc) with the process
 * context's service.name and resource attributes on top. Returns @base when the process has
 * no context. The result stays valid until the next call for the same process or
 * spanlinks__tick()/spanlinks__free().
 */
const struct procmeta *spanlinks__meta(struct spanlinks *sl, uint32_t pid,
				       const struct procmeta *base);

void spanlinks__stats(const struct spanlinks *sl, struct spanlinks_stats *out);

#endif
