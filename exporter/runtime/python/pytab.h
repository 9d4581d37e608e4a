/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pytab: the CPython processes of a run. After each read of a process's maps (the process table's
 * maps hook: its first sample, a refresh after exec or dlopen, or --pid before sampling starts)
 * it finds out whether the process runs CPython (runtime/python/pyproc.h), and if so writes the
 * descriptor the BPF walk reads (bpf/python.h, struct py_desc, map py_procs) and keeps the
 * process's pyproc to name its frames (pytab__find()). A version it cannot handle is named once
 * per file in the log; that process keeps its native frames.
 *
 * The lifecycle is the runtime interface's (runtime/runtime.h: pytab.c fills its struct
 * runtime_ops): files that are not CPython are remembered by identity (device, inode), so the
 * executable of every process of the host is inspected once, not at each maps read. Entries of
 * processes that are gone (exit, PID reused) are swept by runtime_table__tick(); BPF drops the
 * descriptor itself at exit and exec (bpf/python.bpf.h). What is CPython's own: the
 * code-object cache (its uprobe and epochs, at each tick and new batch below), pytab__scan(),
 * the counters by reason.
 *
 * Every failure is counted by reason (struct pytab_stats), never fatal. Not thread safe.
 */
#ifndef SPANPROF_RUNTIME_PYTHON_PYTAB_H
#define SPANPROF_RUNTIME_PYTHON_PYTAB_H

#include <stdint.h>
#include <stdio.h>

#include "python.h"
#include "runtime/python/pyproc.h"

struct procmaps;

/* Code objects a process frees a second above which its code-deallocation uprobe goes. */
#define PYTAB_MAX_FREES_PER_S 1000
/*
 * Processes with the code-object cache at once (each a uprobe, a perf event descriptor, and a
 * consumer every hit of that place runs through), and processes given it per call of
 * runtime_table__tick() (each attach walks the mappings of its file).
 */
#define PYTAB_MAX_CACHED 64
#define PYTAB_CACHE_ON_PER_TICK 8

/* Why a process that maps CPython got no descriptor: X(name, description). */
#define PYTAB_FAILURES(X)                                                                          \
	X(UNSUPPORTED, "CPython version or build not handled (named in the log)")                  \
	X(GONE, "process exited while being read")                                                 \
	X(UNREADABLE, "memory or file unreadable")                                                 \
	X(CORRUPT, "corrupt file or debug offsets")                                                \
	X(MAP_FULL, "descriptor map full")

enum pytab_failure {
#define PYTAB_ENUM(n, d) PYTAB_FAIL_##n,
	PYTAB_FAILURES(PYTAB_ENUM)
#undef PYTAB_ENUM
	    PYTAB_FAIL_COUNT
};

/* Short name ("unsupported", ...) and description of @f; "?" out of range. */
const char *pytab__failure_name(enum pytab_failure f);
/*
 * Short name of why a BPF walk stopped (enum py_stop of bpf/python.h: "end", "read_failed",
 * ...), as --stats-json and the self-metrics spell it; "?" for PY_STOP_NONE or out of range.
 */
const char *pytab__stop_name(unsigned int stop);
const char *pytab__failure_desc(enum pytab_failure f);

struct pytab_stats {
	uint64_t processes;			/* CPython processes described to BPF */
	uint64_t live;				/* ... in the table now */
	uint64_t failed[PYTAB_FAIL_COUNT];	/* processes mapping CPython left without */
	uint64_t files_inspected;		/* candidate files found not to be CPython */
	uint64_t name_errors[PYPROC_ERR_COUNT]; /* reads naming frames that failed, by reason */
	uint64_t code_hits, code_misses;	/* code objects named from the cache / read */
	/* Processes given the code-deallocation uprobe (the BPF code-object cache), and those
	 * where attaching it failed (their walks read every code object). */
	uint64_t dealloc_hooks, dealloc_failed;
	/* Processes whose uprobe was taken off again: code objects freed too often. */
	uint64_t dealloc_dropped;
};

struct pytab_opts {
	int procs_fd; /* py_procs (tgid -> struct py_desc); -1: none (the table only names) */
	/* The sampler's bitmap the procs_fd writes mark (sampler__proc_known()); NULL: none. */
	__u64 *proc_known;
	FILE *log; /* the once-per-file messages; NULL: stderr */
	/*
	 * The code-object cache (bpf/python.h): py_code_epochs (tgid -> struct py_code_epoch), -1:
	 * none; how to attach the code-deallocation uprobe for process @pid at file offset
	 * @offset of @path (a handle >= 0, or -errno; sampler__attach_python_dealloc()), NULL:
	 * none, and to detach it again (sampler__detach_python_dealloc()); and how long after a
	 * process is described its cache starts (ns; 0: at the next tick).
	 */
	int epochs_fd;
	int (*attach_dealloc)(void *ctx, uint32_t pid, const char *path, uint64_t offset);
	void (*detach_dealloc)(void *ctx, int handle, uint32_t pid);
	uint64_t cache_after_ns;
	void *attach_ctx;
};

struct pytab;

/* NULL + errno (ENOMEM). */
struct pytab *pytab__new(const struct pytab_opts *o);
/* Deletes the descriptors it wrote and frees everything; NULL is a no-op. */
void pytab__free(struct pytab *t);

/*
 * The mappings of process (@pid, @start_boot_ns) were read (@maps: its executable mappings; NULL
 * before sampling starts, @start_boot_ns 0 then: any start time). Finds its interpreter unless
 * nothing changed since the last look (same interpreter file still mapped, or no candidate file
 * but those known not to be CPython), and writes or removes its descriptor. A read that found no
 * mapping (it failed) changes nothing.
 */
void pytab__maps_hook(struct pytab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps);

/*
 * Processes running before sampling starts (whole host or targeting options; --pid processes go
 * through pytab__maps_hook() with no maps): reads the executable mappings of every process of
 * the host (proclife__each()) and, for those that map a file named like an interpreter
 * ("python" in its name, not an extension module's "*.cpython-*"), finds the interpreter as
 * pytab__maps_hook() does, with start time 0 ("any": the first sample's maps read sets it).
 * So their first samples carry Python frames, instead of the ones taken before their first
 * sample reached the agent's main thread going without. A process whose interpreter is in a
 * file named otherwise is found at its first sample, as before. Calls @found(@ctx, pid) for
 * each process described (e.g. to queue its CFI tables first); @found may be NULL. Returns the
 * processes described; failures are counted as at any maps read.
 */
size_t pytab__scan(struct pytab *t, void (*found)(void *ctx, uint32_t pid), void *ctx);

/* Process @pid exec'd: its entry goes (the next maps read looks again). */
void pytab__exec(struct pytab *t, uint32_t pid);

/*
 * The pyproc naming the Python frames of a sample of (@pid, @start_boot_ns), or NULL (not a
 * CPython process the table knows). Owned by the table; valid until runtime_table__tick() or the
 * next pytab__maps_hook()/pytab__exec() of that PID.
 */
struct pyproc *pytab__find(struct pytab *t, uint32_t pid, uint64_t start_boot_ns);

/*
 * What the runtime-agnostic calls on pytab__table() do for CPython:
 * - runtime_table__new_batch(), at each batch of samples: cached code objects are checked
 *   again (pyproc__new_epoch()); a descriptor that changed (pyproc__desc_changed()) is
 *   written again.
 * - runtime_table__tick(), often (each call): gives processes described for
 *   pytab_opts.cache_after_ns their code-object cache (a uprobe for the process alone, then its
 *   epoch). Every few seconds: forgets processes that are gone (after their last samples were
 *   named), and takes the cache off a process that freed more than PYTAB_MAX_FREES_PER_S code
 *   objects a second since the last sweep (each free costs it a uprobe hit, about 1 us): its
 *   walks read every code object from then on (logged once per file, counted).
 */

/* The table of CPython processes (runtime/runtime.h), for the runtime-agnostic calls
 * (runtime_table__maps_hook(), __exec(), __tick(), __new_batch()). Owned by @t. */
struct runtime_table *pytab__table(struct pytab *t);

/* The counters, every process's naming errors included. */
void pytab__stats(const struct pytab *t, struct pytab_stats *out);

#endif /* SPANPROF_RUNTIME_PYTHON_PYTAB_H */
