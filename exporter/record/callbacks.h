/* SPDX-License-Identifier: Apache-2.0 */
/*
 * callbacks: what the stages call back into the run with: the sampler's samples (event samples
 * weighed first), exec paths and process notifications, and the process table's hooks (new maps,
 * new JIT CFI) fanned out to the stages that read them. Each takes the recorder as @ctx.
 * Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_CALLBACKS_H
#define SPANPROF_RECORD_CALLBACKS_H

#include <stdint.h>

#include "record/recorder.h"
#include "sampler.h"

struct jitproc_cfi;

/*
 * sampler_opts.cb: one sample (@ctx the recorder). Closes the export intervals that ended before
 * it was taken, weighs an event sample (sampler__event_values()) and hands it to
 * ingest__sample(); a sample that could not be added is counted in user_drops. Returns 0.
 */
int record__on_sample(void *ctx, const struct sp_sample *s);

/* File identities (bpf/fileid.bpf.h): a process exec'd this file. */
int record__on_exec_path(void *ctx, const struct sp_exec_path *e);

/*
 * sampler_opts.event_cb: a process notification (exec, exit, new process, mmap, name; @ctx the
 * recorder) for the CFI unwinder, the span links and the runtimes. Exits wait in r->exits for
 * record__handle_exits(). Returns 0.
 */
int record__on_unwind_event(void *ctx, const struct unwind_event *e);

/* The exits noted by record__on_unwind_event(), once the samples taken before them are in. */
void record__handle_exits(struct recorder *r, struct sampler *s);

/* Every reader of a process's maps: the CFI unwinder, the span links, the CPython finder. */
void record__maps_hooks(void *ctx, uint32_t pid, uint64_t start_boot_ns,
			const struct procmaps *maps);

/* A process's JIT CFI changed (its jitdump unwinding records; jitproc_cfi_hook): the unwinder's,
 * with the process's maps, if CFI is on. */
void record__jit_cfi_hook(void *ctx, uint32_t pid, struct jitproc_cfi *cfi);

#endif /* SPANPROF_RECORD_CALLBACKS_H */
