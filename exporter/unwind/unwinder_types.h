/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwinder_types: the options and counters of the unwinder (unwind/unwinder.h, its face), in a
 * header of their own so that the modules behind the face (unwinder_state.h) read them without
 * including the face.
 */
#ifndef SPANPROF_UNWINDER_TYPES_H
#define SPANPROF_UNWINDER_TYPES_H

#include <stdint.h>

#include "process/procmaps.h"
#include "runtime/jit/jitproc.h"
#include "sampling/sampler_user.h"

/* Default limit of row memory (the chunks), in bytes. */
#define UNWINDER_DEFAULT_MAX_BYTES (256ull << 20)

struct unwinder_opts {
	struct sampler_unwind_maps maps; /* from sampler__unwind_maps() */
	/*
	 * Re-reads the maps of pid (the agent's process table, which then calls
	 * unwinder__update_process()); used for exec and mmap notifications. May be NULL.
	 * Returns 0 or -ESRCH when the process is not known (then a process loaded at its exec,
	 * UNWIND_EVENT_NEW, is re-read by the unwinder itself).
	 */
	int (*refresh)(void *ctx, uint32_t pid);
	void *ctx;
};

struct unwinder_stats {
	uint64_t max_bytes;	   /* limit of chunk memory */
	uint64_t chunk_bytes;	   /* chunk memory allocated (chunks * 512 KiB) */
	uint64_t row_bytes;	   /* bytes of rows in use (8 per row) */
	uint64_t proc_bytes;	   /* BPF memory of the per-process mapping lists */
	uint64_t chunks;	   /* chunks allocated now */
	uint64_t tables;	   /* tables loaded now (files with rows) */
	uint64_t files;		   /* files known now (with or without a table) */
	uint64_t processes;	   /* processes with a mapping list now */
	uint64_t builds;	   /* tables built (cfi__build_fd calls) */
	uint64_t no_cfi;	   /* files without usable CFI (walked with frame pointers) */
	uint64_t tables_full;	   /* tables refused by the byte limit or the table count */
	uint64_t tables_freed;	   /* tables freed (no process maps their file any more) */
	uint64_t open_failed;	   /* mapped files that could not be opened */
	uint64_t procs_full;	   /* processes refused: the BPF process map is full */
	uint64_t mappings_dropped; /* executable mappings past UNWIND_MAX_MAPPINGS */
	uint64_t updates;	   /* mapping lists written */
	uint64_t events;	   /* exec/mmap/exit notifications received */
	uint64_t refreshes;	   /* maps re-read: a notification, or a first entry's re-check */
	uint64_t new_execs;	   /* new processes loaded at their exec, before any sample */
	uint64_t build_ns;	   /* time spent building and loading tables */
	uint64_t jobs;		   /* jobs the builder thread ran */
	uint64_t queued;	   /* jobs waiting now */
	uint64_t queue_max;	   /* most jobs waiting at once */
	uint64_t queue_wait_ns;	   /* total time jobs waited before the builder took them */
	uint64_t jobs_dropped;	   /* jobs not queued (out of memory: the first sample loads it) */
	/* JIT code's own CFI (jitdump unwinding records: unwinder__jit_cfi_hook()): */
	uint64_t jit_tables;	   /* JIT CFI tables loaded now (one per process at most) */
	uint64_t jit_builds;	   /* JIT CFI tables built */
	uint64_t jit_fdes;	   /* FDEs turned into rows, over every build */
	uint64_t jit_fdes_skipped; /* FDEs dropped: corrupt, unsupported, outside their code */
	uint64_t jit_empty;	   /* builds that gave no row (nothing usable) */
	uint64_t jit_full;	   /* JIT tables refused by the byte limit or the table count */
	uint64_t jit_mappings;	   /* mapping list entries written with a JIT CFI table */
};

#endif /* SPANPROF_UNWINDER_TYPES_H */
