/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwinder_state: the unwinder's private state (struct unwinder and the tables, processes, chunks
 * and jobs it keeps), shared by the modules behind its face (unwind/unwinder.h, unwinder.c):
 * rows.c (row memory in the BPF chunks), tables.c (one file's CFI table), procs.c (per-process
 * mapping lists), queue.c (the builder's queue) and builder.c (the builder thread). Private to
 * exporter/unwind/.
 */
#ifndef SPANPROF_UNWINDER_STATE_H
#define SPANPROF_UNWINDER_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <uthash.h>

#include "unwind/cfi.h"
#include "unwind/unwinder_types.h"

/* Notifications wait this long so that a burst (ld.so mapping a library) is one re-read. */
#define REFRESH_DELAY_NS (20 * 1000 * 1000ull)
/* A process this young is re-read by the builder at each code mapping it makes. */
#define NEW_PROCESS_NS (2 * 1000 * 1000 * 1000ull)
/* Processes whose exit notification was lost are looked for this often. */
#define SWEEP_NS (5 * 1000 * 1000 * 1000ull)
/*
 * A table no process maps any more stays loaded this long (and within IDLE_MAX_ROWS in all), so
 * that a program run again and again (the compiler of a build) is not rebuilt every time. Its
 * rows are in the chunks (BPF memory, not this process's); room for a new table comes first.
 */
#define IDLE_NS (30 * 1000 * 1000 * 1000ull)
#define IDLE_MAX_ROWS ((32u << 20) / sizeof(struct unwind_row))

/* What identifies a file: the same key means the same bytes, hence the same table. */
struct file_key {
	uint64_t dev, ino, size, mtime_ns;
};

struct exec_seg {
	uint64_t offset, vaddr, filesz; /* PT_LOAD p_offset, p_vaddr, p_filesz */
};

struct utable {
	struct file_key key; /* hash key */
	uint32_t id;	     /* table id in BPF; UNWIND_TABLE_NONE: no rows loaded */
	uint32_t first;	     /* global row index of the first row */
	uint32_t count;	     /* rows */
	uint32_t refs;	     /* processes whose mapping list uses it */
	int err;	     /* why there are no rows: 0 (none needed), -ENODATA, -ENOSPC, ... */
	uint64_t full_gen;   /* -ENOSPC: u->free_gen when refused (retried after a free) */
	uint64_t base;	     /* cfi_table__base() */
	struct exec_seg *segs;
	size_t nsegs;
	uint64_t idle_since;		      /* refs == 0 with rows: when the last user went */
	struct utable *idle_prev, *idle_next; /* idle list, oldest first */
	int idle;
	int jit;		 /* a process's JIT CFI (key: JIT_KEY_DEV, pid, start, sequence) */
	uint64_t jit_lo, jit_hi; /* jit: the span of the code it describes */
	UT_hash_handle hh;
};

/* Device number of the synthetic files JIT CFI tables are keyed as (no real device has it). */
#define JIT_KEY_DEV (UINT64_MAX - 1)

struct uproc {
	uint32_t pid;		/* hash key */
	uint64_t start_boot_ns; /* of its last update (0: unknown) */
	int from_table;		/* the process table read its maps (it was sampled) */
	struct utable **tables; /* distinct tables referenced, one reference each */
	size_t ntables;
	struct utable *jit; /* its JIT CFI table (also in tables), NULL: none */
	UT_hash_handle hh;
};

/* A process's JIT CFI waiting for its next update on the builder (unwinder__jit_cfi_hook()). */
struct jit_pending {
	uint32_t pid; /* hash key */
	uint64_t start_boot_ns;
	struct jitproc_cfi *cfi;
	UT_hash_handle hh;
};

struct extent {
	uint32_t off, len; /* rows [off, off + len) of a chunk */
};

struct chunk {
	int fd;		    /* inner map; -1: slot free */
	struct extent *ext; /* allocated ranges, sorted by off */
	size_t next, cap;
	int big; /* part of a table larger than a chunk */
};

/* A notified re-read of a process's maps, due at due_ns. */
struct pending {
	uint32_t pid; /* hash key */
	uint64_t due_ns;
	int prio; /* enum job_prio of the work it leads to */
	UT_hash_handle hh;
};

/*
 * Work for the builder thread, at most one per process (the latest request wins: the maps read
 * last are the process's current ones). Queued by priority, first in first out within one.
 */
enum job_kind {
	JOB_UPDATE,  /* install maps (from the process table: a sample or a notified re-read) */
	JOB_NEW,     /* a new process at its exec: read its maps (executable ones), load them */
	JOB_RELOAD,  /* re-read a process loaded at its exec: the process table does not know it */
	JOB_REREAD,  /* re-read a new process once ld.so mapped its libraries */
	JOB_MMAPPED, /* a process loaded at its exec mapped code: re-read it now, if unsampled */
	JOB_REMOVE,  /* the process exited: forget it, release its tables */
	JOB_PRELOAD, /* a process named on the command line, at start: read its maps, load them */
};

enum job_prio {
	PRIO_NEW,     /* a new process's own files, exits (cheap, they free rows) */
	PRIO_SAMPLED, /* a process whose samples are arriving (its first maps read) */
	PRIO_OTHER,   /* re-reads after mmap/exec notifications */
	NPRIO,
};

struct job {
	uint32_t pid; /* hash key */
	int kind, prio;
	int preload; /* queued as JOB_PRELOAD (a later request may have replaced the kind) */
	uint64_t start_boot_ns;
	uint64_t queued_ns;   /* when first queued (a replacement keeps it) */
	struct procmaps maps; /* JOB_UPDATE: a copy of the executable mappings */
	struct job *prev, *next;
	UT_hash_handle hh;
};

struct unwinder {
	struct unwinder_opts o;
	/*
	 * Two locks. qlock guards the queue side (jobs, queue, pending, pub, stop, refresh_prio),
	 * which the agent's main thread uses and which never waits for a table build; lock guards
	 * everything below it (tables, chunks, processes), held by the builder thread for one job
	 * at a time and by the synchronous calls. Order: lock, then qlock.
	 */
	pthread_mutex_t qlock, lock;
	pthread_cond_t cond; /* a job was queued, or stop */
	pthread_t thread;
	int thread_started, stop;
	struct job *jobs;	  /* by pid */
	struct job *queue[NPRIO]; /* utlist DL lists */
	struct pending *pending;
	struct pending *new_pending;	 /* re-reads of new processes, by the builder itself */
	struct jit_pending *jit_pending; /* JIT CFI for the next update of each process */
	uint64_t jit_seq;		 /* (lock) the key of the next JIT table */
	int refresh_prio;		 /* the priority of the maps hook calls o.refresh makes */
	int preloads;		   /* JOB_PRELOAD jobs not run yet (unwinder__preloads_pending()) */
	struct unwinder_stats pub; /* u->st as of the last job, for unwinder__stats() */

	struct chunk *chunks; /* o.maps.max_chunks slots */
	uint32_t *free_ids;   /* stack of free table ids */
	uint32_t nfree_ids;
	struct utable *files;
	struct uproc *procs;
	struct utable *idle_head, *idle_tail; /* loaded tables no process uses */
	uint64_t idle_rows;
	uint64_t free_gen; /* bumped when rows are freed */
	uint64_t last_sweep_ns;
	struct unwind_proc *val; /* scratch BPF value */
	int vdso_fd;		 /* copy of the vDSO, -1 if none */
	int vdso_tried;
	struct unwinder_stats st;
};

#endif /* SPANPROF_UNWINDER_STATE_H */
