/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stages: the start and stop of the run's optional stages, each wired to the sampler's maps and
 * to the resolver: the CFI unwinder (docs/unwinding.md), span links (docs/span-links.md),
 * CPython frames (docs/python.md) and V8 frames (docs/node.md). The --pid processes (@pids,
 * @n thread groups) are described before sampling starts. Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_STAGES_H
#define SPANPROF_RECORD_STAGES_H

#include <stddef.h>
#include <stdint.h>

#include "record/recorder.h"

/*
 * The CFI unwinder (r->unwinder; left NULL with a warning when it cannot start: frame pointers
 * only). Before sampling starts, so that even the first samples of --pid processes get CFI.
 */
void record__start_unwinder(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n);

/*
 * Span links (docs/span-links.md): descriptors of the --pid processes before sampling starts.
 * 0 (also with --no-span-links), or 1 after a message (out of memory, a --context-uprobe that
 * could not be attached).
 */
int record__start_span_links(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n);

/*
 * CPython frames (docs/python.md): the table that describes CPython processes to the BPF walk
 * and names their frames; the --pid processes are looked at before sampling starts (so that
 * their first samples carry Python frames), the host's others by record__scan_python() once it
 * runs.
 */
/*
 * JIT code named from perf maps and jitdump files (runtime/jit/jitprocs.h, r->jit): every
 * process that maps JIT memory, from its first maps read on (nothing to read before sampling).
 * A warning when it cannot start (ENOMEM): JIT code stays addresses. Before sampling, with the
 * resolve step.
 */
void record__start_jit(struct recorder *r);
void record__stop_jit(struct recorder *r);

void record__start_python(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n);

/*
 * Without --pid, the CPython processes already running, found by a /proc scan right after
 * sampling starts (as the unwinder's scan: start-up does not wait for the host's processes),
 * so that they get Python frames before their first sample reaches the agent.
 */
void record__scan_python(struct recorder *r, size_t npids);

/* Frees r->python (NULL: nothing). Before the sampler whose map it writes to. */
void record__stop_python(struct recorder *r);

/*
 * V8 frames (docs/node.md): the table that describes node processes to the BPF frame reader and
 * names their JavaScript functions; the --pid processes are looked at before sampling starts.
 */
void record__start_v8(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n);

/* Frees r->v8 (NULL: nothing). Before the sampler whose map it writes to. */
void record__stop_v8(struct recorder *r);
/* Java frames of HotSpot JVMs (docs/java.md): r->jvm, with the CFI walk. */
void record__start_jvm(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n);
/* Frees r->jvm (NULL: nothing). Before the sampler whose map it writes to. */
void record__stop_jvm(struct recorder *r);
/* PHP frames of PHP processes (docs/php.md): r->php, with the CFI walk. */
void record__start_php(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n);
/* Frees r->php (NULL: nothing). Before the sampler whose map it writes to. */
void record__stop_php(struct recorder *r);

#endif /* SPANPROF_RECORD_STAGES_H */
