/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jitprocs: JIT code (perf maps, jitdump files) as a runtime on the runtime interface
 * (runtime/runtime.h). A process is the JIT's when it maps memory a JIT may run code from
 * (anonymous executable memory, shared anonymous "/dev/zero", a memfd: procmaps__anon_code())
 * or a jitdump file (procmaps__jitdump_path()); its instance is its struct jitproc
 * (runtime/jit/jitproc.h), which names that code from the files the runtime writes. Nothing is
 * read until a PC falls in JIT code.
 *
 * No BPF walk, no descriptor: the table only names (its runtime_bpf.procs_fd is -1). Every
 * later maps read hands the instance the jitdump files mapped since (runtime_ops.proc_maps); it
 * stays while the process maps any such memory, and goes at exec (a new executable may be
 * another runtime) and when the process is gone (the table's sweep). Every instance counts into
 * the one struct jitproc_stats of the table, which outlives them.
 *
 * Not thread safe: the agent's main thread (the maps reads' and the resolve step's).
 */
#ifndef SPANPROF_RUNTIME_JIT_JITPROCS_H
#define SPANPROF_RUNTIME_JIT_JITPROCS_H

#include <stdint.h>

#include "runtime/jit/jitproc.h"

struct jitprocs;
struct runtime_table;
struct procmaps;

struct jitprocs_opts {
	unsigned int flags; /* jitproc__new() flags: JITPROC_JAVA_PERFMAP (--java-perfmap) or 0 */
	/* Given every change of a process's JIT CFI (jitproc_cfi_hook; NULL: the copies are
	 * freed), with @cfi_ctx. */
	jitproc_cfi_hook cfi_hook;
	void *cfi_ctx;
};

/* A table with options @o (NULL: none). NULL + errno (ENOMEM). */
struct jitprocs *jitprocs__new(const struct jitprocs_opts *o);
/* Frees every instance; NULL is a no-op. */
void jitprocs__free(struct jitprocs *t);
/* The runtime table (for the conductor's list of runtimes: maps reads, exec, tick). */
struct runtime_table *jitprocs__table(struct jitprocs *t);
/* runtime_table__maps_hook() of the table. */
void jitprocs__maps_hook(struct jitprocs *t, uint32_t pid, uint64_t start_boot_ns,
			 const struct procmaps *maps);
/*
 * The JIT state of process (@pid, @start_boot_ns; 0: any) if it maps JIT memory, else NULL;
 * owned by the table, valid until the next call that may drop entries (runtime.h): look it up
 * again after any maps read.
 */
struct jitproc *jitprocs__find(struct jitprocs *t, uint32_t pid, uint64_t start_boot_ns);
/* The counters of every process's JIT naming, live and gone. */
const struct jitproc_stats *jitprocs__stats(const struct jitprocs *t);

#endif /* SPANPROF_RUNTIME_JIT_JITPROCS_H */
