/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime: the one interface of a runtime with per-process state, and the shared part that owns
 * the per-process lifecycle of every such runtime. On it: the runtimes whose frames BPF walks
 * from a per-process descriptor (CPython: runtime/python/pytab.h; V8: runtime/v8/v8tab.h;
 * HotSpot: runtime/jvm/hstab.h; PHP: runtime/php/phptab.h) and the JIT maps, which only name
 * (perf maps and jitdump files: runtime/jit/jitprocs.h; no BPF map, no descriptor). Go's code
 * is named per file by the symbolizer (.gopclntab, runtime/go/) and is not on it.
 *
 * A runtime is a folder under exporter/runtime/ that fills a struct runtime_ops (below) and
 * creates a struct runtime_table with it; the process's instance it creates is all the state it
 * keeps of a process (the process table, process/, keeps none of a runtime's). The table then
 * does, for every runtime alike:
 *
 *   - after each read of a process's maps (runtime_table__maps_hook(): the process table's maps
 *     hook, i.e. its first sample, a re-read after exec or dlopen, or --pid before sampling), it
 *     looks at the candidate files the process maps (ops.candidate), reads each file once per
 *     identity (device, inode; ops.file_read) and remembers the verdict, so the executable of
 *     every process of the host is inspected once, not at each maps read (past ops.max_files
 *     verdicts all are forgotten and read again; a verdict that cannot be stored, ENOMEM, is
 *     taken as a file not read);
 *   - on the first file that is the runtime, creates the process's instance (ops.proc_new),
 *     checks that the process still runs under its PID (proclife__check(): every read above was
 *     of this process only then), and describes it to BPF: the descriptor ops.desc fills is
 *     written to the runtime's BPF map (tgid -> descriptor: the runtime's struct in
 *     bpf/NAME.h, struct py_desc of bpf/python.h, struct v8_desc of bpf/v8.h, which its BPF
 *     walk reads) and the process marked in the sampler's proc_known bitmap
 *     (sp_proc_entry_write(), bpf/sampler.h), so that BPF's exec and exit hooks drop it
 *     themselves (a runtime without a map, runtime_bpf.procs_fd -1, only gets its instance);
 *   - refreshes it: a later maps read that still finds the same file changes nothing, except
 *     that a start time learned since (a process described before sampling, start time 0) is
 *     written into the descriptor (ops.desc again), and ops.proc_maps, where the runtime has
 *     one, sees the new maps (what was mapped since) and says whether the process still runs
 *     the runtime, in place of the file's presence; a read that no longer finds the file (exec,
 *     unmapped) or a PID reused (another start time) drops the entry and looks again;
 *   - drops it: at exec (runtime_table__exec()), and for processes that are gone, found every
 *     RUNTIME_SWEEP_NS by runtime_table__tick(): undescribed at once (ops.undescribe, then the
 *     descriptor deleted), freed at the next sweep (after their last samples were named);
 *   - counts what is common (struct runtime_stats); a runtime counts the rest (failures by
 *     reason, naming errors) in its own context, ops.proc_failed and ops.proc_free being told.
 *
 * The agent starts each runtime's table in record/stages.c and lists it in recorder.runtimes,
 * which passes it every maps read, exec, tick and batch of samples (record/callbacks.c,
 * record/record.c).
 *
 * What stays the runtime's own: naming the frames BPF recorded or the PCs of its code
 * (resolve/NAME.c or resolve/frame.c ask the runtime's face, e.g. pytab__find() or
 * jitprocs__find(), which call runtime_table__find() for the instance), its
 * stats section (report_json.c, docs/stats-json.md) and anything beyond the lifecycle (CPython's
 * code-object cache: ops.tick and ops.new_batch).
 *
 * Ownership: the table owns its entries (struct runtime_proc) and their per-file data (ops.
 * file_size bytes each, zeroed, freed with the verdict); the runtime owns each instance
 * (created by ops.proc_new, freed by ops.proc_free, which the table calls). Pointers the table
 * returns (instances, entries, file data) are valid until the next call that may drop entries or
 * forget files: runtime_table__maps_hook(), __exec(), __tick(), __free().
 *
 * Errors: nothing is fatal; a failure leaves the process without a descriptor (its native
 * frames only) and is counted. Callbacks return 0 or -errno as documented below.
 *
 * Threading: not thread safe; the table and its callbacks run on the caller's (the agent's
 * main) thread.
 */
#ifndef SPANPROF_RUNTIME_RUNTIME_H
#define SPANPROF_RUNTIME_RUNTIME_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

struct procmap;
struct procmaps;

/* The largest BPF descriptor a runtime may have (bytes). */
#define RUNTIME_MAX_DESC 512
/* Entries whose runtime was not ready (ops.proc_new -EAGAIN) looked at again per sweep. */
#define RUNTIME_RETRIES_PER_SWEEP 16
/* Processes are checked for exit at most this often (ns). */
#define RUNTIME_SWEEP_NS (5 * 1000000000ull)

/* A file's identity as /proc/PID/maps gives it. */
struct runtime_file_key {
	uint64_t ino;
	uint32_t dev_major, dev_minor;
};

/* What ops.file_read found in a file. */
enum runtime_verdict {
	RUNTIME_FILE_UNKNOWN = 0, /* not read (unopenable, process gone): not remembered */
	RUNTIME_FILE_OTHER,	  /* not the runtime: remembered, counted (files_other) */
	RUNTIME_FILE_UNUSABLE,	  /* the runtime, not usable (the runtime counts it): remembered */
	RUNTIME_FILE_RUNTIME,	  /* the runtime: remembered, its data serves every process */
};

/* One process that maps the runtime's file, owned by the table. */
struct runtime_proc {
	uint32_t pid;
	uint64_t start_boot_ns;	      /* 0: not known yet (described before sampling) */
	struct runtime_file_key file; /* the runtime's file it maps */
	void *inst;		      /* the runtime's instance; NULL: creation failed (counted) */
	uint64_t gone_ns;	      /* when it was found gone (CLOCK_MONOTONIC); 0: alive */
	int described;		      /* its descriptor is in the BPF map */
	int again;		      /* proc_new said -EAGAIN (not ready): looked at again */
	UT_hash_handle hh;
};

/*
 * A runtime: what the table calls. @rt is the runtime's context (runtime_table__new()). Every
 * callback but the ones marked required may be NULL.
 */
struct runtime_ops {
	const char *name; /* "python", "v8": the log's and the docs' word */
	/* File verdicts remembered; past this many the memory starts over (0: 16384). */
	size_t max_files;
	/* Bytes of per-file data ops.file_read fills (zeroed first; 0: none). */
	size_t file_size;
	/* Size of the BPF descriptor ops.desc fills (required with a map; <= RUNTIME_MAX_DESC). */
	size_t desc_size;

	/* Required. Whether mapping @i of @maps (executable mappings, [0] the executable) may be
	 * the runtime's file: cheap, from its path; no file is read. */
	bool (*candidate)(const struct procmaps *maps, size_t i);
	/* Required. Reads the file of mapping @m of process @pid once for every process of it
	 * (its offsets, symbols, version) into @data (ops.file_size bytes, zeroed). */
	enum runtime_verdict (*file_read)(void *rt, uint32_t pid, const struct procmap *m,
					  void *data);
	/* Required. The instance of process @e (pid, start time and file set; inst NULL) of the
	 * runtime's file @m of @maps, @data that file's (NULL when it is no longer remembered:
	 * read it again); NULL + *@err (-errno) when it has none; -EAGAIN: the runtime is not
	 * set up yet, asked again at the process's next maps read or sweep. */
	void *(*proc_new)(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
			  const struct procmap *m, void *data, int *err);
	/* Required. Frees instance @inst; @keep_counters: fold its counters into the runtime's
	 * (0 for an instance that never was described). */
	void (*proc_free)(void *rt, void *inst, bool keep_counters);
	/* Required with a map (NULL: no descriptor, for a runtime that only names). Fills @out
	 * (ops.desc_size bytes) with @e's descriptor, its start time included; 0 or -errno (no
	 * descriptor). */
	int (*desc)(void *rt, const struct runtime_proc *e, void *out);
	/* A later maps read of @e's process (@maps), @e with an instance: follows what the process
	 * mapped since (the JIT: jitdump files; proc_new sees the first read's maps itself) and
	 * says whether the process still runs the runtime (false: its entry is dropped and the
	 * maps looked at again, as when its file is no longer mapped). NULL: while its file
	 * (e->file) is mapped. */
	bool (*proc_maps)(void *rt, struct runtime_proc *e, const struct procmaps *maps);
	/* @e's process was described (for the first time), or its creation failed with @err
	 * (proc_new's, the PID's check's, or the map write's): for the runtime's counters. */
	void (*proc_described)(void *rt, struct runtime_proc *e);
	void (*proc_failed)(void *rt, struct runtime_proc *e, int err);
	/* Before @e's descriptor is deleted (exit, exec, the table freed): what the runtime hangs
	 * off it in BPF goes first. Called only for entries with an instance. */
	void (*undescribe)(void *rt, struct runtime_proc *e);
	/* No candidate file of @maps is the runtime (e.g. to say why an interpreter-like
	 * executable gets no frames). */
	void (*no_file)(void *rt, const struct procmaps *maps);
	/* runtime_table__tick() before its sweep, @sweep: whether the sweep runs now (@now:
	 * CLOCK_MONOTONIC ns); runtime_table__new_batch(): a new batch of samples. */
	void (*tick)(void *rt, uint64_t now, bool sweep);
	void (*new_batch)(void *rt);
};

/* What every runtime counts alike. */
struct runtime_stats {
	uint64_t processes;   /* processes described to BPF */
	uint64_t live;	      /* entries with an instance in the table now */
	uint64_t files_other; /* candidate files found not to be the runtime */
};

/* Where the descriptors go: the runtime's BPF map and the sampler's bitmap it marks. */
struct runtime_bpf {
	int procs_fd;	      /* tgid -> descriptor; -1: none (the table only names) */
	__u64 *proc_known;    /* sampler__proc_known(); NULL with procs_fd -1 */
	unsigned int map_bit; /* enum sp_proc_known_map (bpf/sampler.h) */
};

struct runtime_table;

/* A table for runtime @ops (kept by pointer: static) with context @rt. NULL + errno (ENOMEM;
 * EINVAL: ops.desc_size over RUNTIME_MAX_DESC). */
struct runtime_table *runtime_table__new(const struct runtime_ops *ops, void *rt,
					 const struct runtime_bpf *bpf);
/* Drops every entry (descriptors deleted, instances freed) and the file verdicts; NULL: no-op. */
void runtime_table__free(struct runtime_table *t);

/*
 * The mappings of process (@pid, @start_boot_ns) were read (@maps: its executable mappings;
 * NULL: read here, as before sampling, @start_boot_ns 0 then: any start time). Creates,
 * refreshes or drops its entry as the file comment says. A read that found no mapping (it
 * failed, or was dropped: PID reused) changes nothing.
 */
void runtime_table__maps_hook(struct runtime_table *t, uint32_t pid, uint64_t start_boot_ns,
			      const struct procmaps *maps);
/* Process @pid exec'd: its entry goes (the next maps read looks again). */
void runtime_table__exec(struct runtime_table *t, uint32_t pid);
/* The entry of @pid (any start time), or NULL. */
struct runtime_proc *runtime_table__get(struct runtime_table *t, uint32_t pid);
/* The instance naming a sample of (@pid, @start_boot_ns; 0: any), or NULL. */
void *runtime_table__find(struct runtime_table *t, uint32_t pid, uint64_t start_boot_ns);
/* (Re)writes @e's descriptor (after its ops.desc changed); 0 or -errno. */
int runtime_table__describe(struct runtime_table *t, struct runtime_proc *e);
/* Calls @fn for each entry (@fn must not drop entries). */
void runtime_table__each(struct runtime_table *t, void (*fn)(void *ctx, struct runtime_proc *e),
			 void *ctx);
/* The per-file data (ops.file_size bytes) of file @k if its verdict is remembered, else NULL. */
void *runtime_table__file(struct runtime_table *t, const struct runtime_file_key *k);
/* Each call: ops.tick; every RUNTIME_SWEEP_NS: processes gone are undescribed, and those found
 * gone at the sweep before are freed. */
void runtime_table__tick(struct runtime_table *t);
/* A new batch of samples (ops.new_batch). */
void runtime_table__new_batch(struct runtime_table *t);
void runtime_table__stats(const struct runtime_table *t, struct runtime_stats *out);
/* Each instance in the table (for the runtime's counters of live processes). */
void runtime_table__each_inst(const struct runtime_table *t, void (*fn)(void *ctx, void *inst),
			      void *ctx);

#endif /* SPANPROF_RUNTIME_RUNTIME_H */
