/* SPDX-License-Identifier: Apache-2.0 */
/*
 * v8tab: the node processes of a run (any executable or libnode embedding V8 with its
 * postmortem metadata, runtime/v8/v8meta.h). After each read of a process's maps (the process
 * table's maps hook) it looks at the process's executable and its libnode, and when one carries
 * the metadata, writes the descriptor the BPF frame reader uses (bpf/v8.h, struct v8_desc, map
 * v8_procs) and keeps a v8proc to name the frames (v8tab__find()). The lifecycle is the runtime
 * interface's (runtime/runtime.h: v8tab.c fills its struct runtime_ops): files are inspected
 * once per identity (device, inode); gone processes are swept by runtime_table__tick() of
 * v8tab__table(); BPF drops a descriptor itself at exit and exec. Failures are counted, never
 * fatal. Not thread safe.
 */
#ifndef SPANPROF_RUNTIME_V8_V8TAB_H
#define SPANPROF_RUNTIME_V8_V8TAB_H

#include <stdint.h>

#include "runtime/v8/v8proc.h"
#include "v8.h"

struct procmaps;

struct v8tab_stats {
	uint64_t processes;	    /* node processes described to BPF */
	uint64_t live;		    /* ... in the table now */
	uint64_t unsupported;	    /* V8 files whose metadata lacks what the agent reads */
	uint64_t failed;	    /* processes left without: gone, unreadable, map full */
	uint64_t files_inspected;   /* executables found not to be V8 */
	struct v8proc_stats naming; /* every process's, the freed ones' included */
};

struct v8tab;

/*
 * @procs_fd: the v8_procs map (-1: none, the table only names); @proc_known: the sampler's
 * bitmap its writes mark (sampler__proc_known(); NULL with procs_fd -1). NULL + errno (ENOMEM).
 */
struct v8tab *v8tab__new(int procs_fd, __u64 *proc_known);
/* Deletes the descriptors it wrote; NULL is a no-op. */
void v8tab__free(struct v8tab *t);

/*
 * Process (@pid, @start_boot_ns) had its maps read (@maps: executable mappings; NULL before
 * sampling: read here, @start_boot_ns 0). Describes it when it runs V8 (unless already done for
 * the same file).
 */
void v8tab__maps_hook(struct v8tab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps);
/* The reader naming (@pid, @start_boot_ns)'s frames, or NULL. Valid until the next call above. */
struct v8proc *v8tab__find(struct v8tab *t, uint32_t pid, uint64_t start_boot_ns);
void v8tab__stats(const struct v8tab *t, struct v8tab_stats *out);
/* The table of node processes (runtime/runtime.h), for the runtime-agnostic calls. Owned by @t. */
struct runtime_table *v8tab__table(struct v8tab *t);

/* The descriptor of layout @m for BPF (start_boot_ns left 0). */
void v8tab__desc(const struct v8meta *m, struct v8_desc *out);

#endif /* SPANPROF_RUNTIME_V8_V8TAB_H */
