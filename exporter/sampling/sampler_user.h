/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler: loads bpf/sampler.bpf.c, opens one software cpu-clock perf event per
 * online CPU, attaches the program to each and delivers struct sp_sample
 * records (bpf/sampler.h) from the ring buffer to a callback.
 */
#ifndef SPANPROF_SAMPLER_USER_H
#define SPANPROF_SAMPLER_USER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "filter.h"
#include "sampler.h"
#include "unwind_walk.h"

struct sampler;

/* Called for each record; the record is only valid during the call. Return 0 to go on. */
typedef int (*sampler_cb)(void *ctx, const struct sp_sample *s);
/*
 * Called for each executable path record (bpf/fileid.bpf.h): a process exec'd the file; the
 * record is only valid during the call.
 */
typedef int (*sampler_exec_path_cb)(void *ctx, const struct sp_exec_path *e);
/* Called for each unwinder notification (exec, mmap, exit of a process with CFI tables). */
typedef int (*sampler_event_cb)(void *ctx, const struct unwind_event *e);

struct sampler_opts {
	uint32_t frequency_hz; /* samples per second per CPU */
	const uint32_t *pids;  /* thread group ids to sample; NULL/0: every process */
	size_t npids;
	uint32_t ringbuf_bytes; /* power of two, >= page size; 0: 4 MiB */
	sampler_cb cb;
	void *ctx;
	/*
	 * CFI unwinding (docs/unwinding.md): 0 leaves it off (frame pointers only); else the
	 * walker and its exec/exit/mmap hooks are loaded, with room for this many 512 KiB chunks
	 * of rows (an exporter/unwind/unwinder.h fills them through sampler__unwind_maps()).
	 */
	uint32_t unwind_max_chunks;
	uint32_t unwind_max_tables; /* table descriptors; 0: 16384 */
	uint32_t unwind_max_procs;  /* processes with tables; 0: 8192 */
	sampler_event_cb event_cb;  /* may be NULL */
	int start_disabled;	    /* samples are ignored until sampler__start() */
	/*
	 * Thread context (OTEP 4947, docs/span-links.md): non-zero loads the reader; the agent
	 * fills the per-process descriptors (sampler__threadctx_maps()). ctx_uprobes: number of
	 * --context-uprobe attachments to come (loads their programs and the thread-exit hook).
	 */
	int threadctx;
	uint32_t threadctx_max_procs; /* 0: 8192 */
	size_t ctx_uprobes;
	/*
	 * Profile types (bit 1 << SP_PROF_*, bpf/sampler.h; docs/profile-types.md); 0: CPU only.
	 * CPU opens the cpu-clock perf events (frequency_hz); each other type loads and attaches
	 * its programs (exporter/sampling/sampler_events.h) with the settings below.
	 */
	uint32_t profile_types;
	uint64_t alloc_sample_bytes; /* mean bytes between two allocation samples; 0: every one */
	uint64_t alloc_min_bytes;    /* allocations below this size are not counted */
	uint64_t lock_min_wait_ns;   /* lock waits below this are not sampled */
	uint64_t offcpu_min_ns;	     /* blocked periods below this are not sampled */
	/*
	 * Targeting (bpf/filter.bpf.h): room for this many executables / cgroup ids; 0 leaves
	 * that filter out. The agent fills them through sampler__filter_maps()
	 * (exporter/sampling/targets.h). A process is sampled when it matches any loaded filter,
	 * --pid included.
	 */
	uint32_t filter_exe_max;
	uint32_t filter_cgroup_max;
	/* File identities (bpf/fileid.bpf.h): executable paths; NULL leaves the hook out. */
	sampler_exec_path_cb exec_path_cb;
	/*
	 * Python frames (bpf/python.bpf.h): room for this many CPython processes; 0 leaves the
	 * walk out (--no-python). The agent fills py_procs (runtime/python/pytab.h).
	 */
	uint32_t python_max_procs;
	/*
	 * Python: keep code objects across samples (bpf/python.h, the code-object cache), with a
	 * uprobe on each CPython file's code-object deallocation; 0: every walk reads each code
	 * object (--no-python-code-cache).
	 */
	int python_code_cache;
	/*
	 * Start-up timeline (--verbose): when not NULL, each step of sampler__new() (kernel probes,
	 * BPF object open, load, each program's verification, attaches) is logged there by
	 * sampler__startup_mark() against startup_t0_ns (CLOCK_MONOTONIC ns, the agent's launch).
	 */
	FILE *startup_log;
	uint64_t startup_t0_ns;
};

/* The targeting maps (bpf/filter.h): -1 for a filter that is not loaded. */
struct sampler_filter_maps {
	int exe_fd;    /* BPF_MAP_TYPE_HASH: struct sp_exe_key -> __u8 1 */
	int cgroup_fd; /* BPF_MAP_TYPE_HASH: __u64 cgroup v2 id -> __u8 1 */
	uint32_t exe_max, cgroup_max;
};

/* The thread-context maps: tgid -> struct sp_tls_loc, tid -> struct sp_ctx_thread. */
struct sampler_threadctx_maps {
	int procs_fd;
	int threads_fd;
	int go_procs_fd; /* goroutine labels: tgid -> struct sp_go_loc */
};

/* File descriptors of the walker's maps (owned by the sampler) and their sizes. */
struct sampler_unwind_maps {
	int chunks_fd; /* BPF_MAP_TYPE_ARRAY_OF_MAPS: slot -> struct unwind_chunk array */
	int tables_fd; /* BPF_MAP_TYPE_ARRAY: table id -> struct unwind_table_desc */
	int procs_fd;  /* BPF_MAP_TYPE_HASH: tgid -> struct unwind_proc */
	uint32_t max_chunks, max_tables, max_procs;
	/* proc_known, mapped (bpf/sampler.h): sp_proc_known_set() around each procs_fd write. */
	__u64 *proc_known;
};

/*
 * Loads and attaches everything. NULL + errno on failure, with a message on
 * stderr naming what failed (load, a CPU's perf event, an attach).
 * Everything created so far is released on failure.
 */
struct sampler *sampler__new(const struct sampler_opts *opts);
/* Detaches and frees everything (links, perf events, maps). NULL is a no-op. */
void sampler__free(struct sampler *s);
/* Waits up to @timeout_ms for records and delivers them. Returns records handled or -errno. */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Delivers what is already in the ring buffer without waiting. */
int sampler__drain(struct sampler *s);
/*
 * The sample ring is emptied by a thread of its own into a queue (sampling/samplequeue.h) that
 * sampler__poll() and sampler__drain() deliver from. What became of it so far (safe to call
 * while the drain thread runs).
 */
struct sampler_queue_stats {
	uint64_t lost;	   /* records the queue had no memory for: dropped in the agent */
	uint64_t full;	   /* drain passes that left the ring to fill: the queue had no room for
			    * it (the agent behind delivering); BPF counts what the ring then
			    * loses as ring-buffer drops */
	size_t peak_bytes; /* the most memory the queue held */
	size_t max_bytes;  /* its bound */
};
void sampler__queue_stats(struct sampler *s, struct sampler_queue_stats *out);
/* Sums the per-CPU counters into @out[SP_STAT_MAX]. 0 or -errno. */
int sampler__stats(struct sampler *s, uint64_t out[SP_STAT_MAX]);
/* Number of perf events (CPUs) attached (0 without the CPU profile type). */
int sampler__ncpus(const struct sampler *s);
/* The mappings of process @pid were (re)read: the event types attach to new files. */
struct procmaps;
void sampler__maps_hook(struct sampler *s, uint32_t pid, const struct procmaps *maps);
/*
 * The count and value of event sample @e for the profile (sampler_event_type.values):
 * CPU samples count 1 with value 0.
 */
void sampler__event_values(struct sampler *s, const struct sp_sample *e, uint64_t *count,
			   uint64_t *value);
/* The event types' own summary lines (sampler_event_type.summary) on @f. */
void sampler__event_summary(struct sampler *s, FILE *f);
/* One counter of an event type's own state: @name a static snake_case string. */
struct sampler_counter {
	const char *name;
	uint64_t value;
};
#define SAMPLER_MAX_COUNTERS 8
/*
 * The own counters of event type @type (SP_PROF_*; sampler_event_type.counters) into @out (room
 * for SAMPLER_MAX_COUNTERS). Returns how many (0: none, or the type is not recorded).
 */
size_t sampler__event_counters(struct sampler *s, uint32_t type, struct sampler_counter *out);
/* The walker's maps: 0, or -ENOTSUP when the sampler was made without unwinding. */
int sampler__unwind_maps(const struct sampler *s, struct sampler_unwind_maps *out);
/* The Python walk's maps: tgid -> struct py_desc, per-CPU counters by enum py_stop. */
struct sampler_python_maps {
	int procs_fd;
	int stats_fd;
	__u64 *proc_known; /* as sampler_unwind_maps.proc_known, for procs_fd */
	int epochs_fd;	   /* tgid -> struct py_code_epoch; -1: no code-object cache */
};

/* The Python walk's maps: 0, or -ENOTSUP when the walk is not loaded. */
int sampler__python_maps(const struct sampler *s, struct sampler_python_maps *out);
/*
 * Attaches the code-deallocation uprobe (bpf/python.bpf.h on_py_code_dealloc) for process @pid
 * alone (the kernel patches that process's memory only) at file offset @offset of the ELF file
 * @path (the agent passes /proc/PID/map_files/START-END). Kept until
 * sampler__detach_python_dealloc() or sampler__free(). Its handle (>= 0), or -ENOTSUP (no
 * code-object cache), -ENOMEM, or the attach's -errno.
 */
int sampler__attach_python_dealloc(struct sampler *s, uint32_t pid, const char *path,
				   uint64_t offset);
/*
 * Detaches the uprobe of @handle (sampler__attach_python_dealloc()) of process @pid; a handle
 * that is not @pid's (free, or another process's) is a no-op.
 */
void sampler__detach_python_dealloc(struct sampler *s, int handle, uint32_t pid);
/*
 * The Python walk's per-CPU counters summed into @out[@n] (index 0: samples walked; then one
 * per enum py_stop, then the PY_STAT_CODE_* counters, bpf/python.h). 0, -ENOTSUP (not loaded)
 * or -ENOMEM.
 */
int sampler__python_stats(struct sampler *s, uint64_t *out, uint32_t n);

/*
 * V8 frames (bpf/v8.bpf.h): the v8_procs map (tgid -> struct v8_desc) the agent fills
 * (runtime/v8/v8tab.h), loaded with the CFI walk: its fd, or -ENOTSUP (unwinding off).
 */
int sampler__v8_procs_fd(const struct sampler *s);
/*
 * The proc_known bitmap (bpf/sampler.h), mapped: SP_PROC_KNOWN_WORDS words the writers of
 * per-process entries mark (sp_proc_known_set()), owned by the sampler; NULL when neither
 * walker is loaded.
 */
__u64 *sampler__proc_known(const struct sampler *s);
/* The first @n V8 counters (enum v8_stat, bpf/v8.h) summed over the CPUs. 0, -ENOTSUP, -ENOMEM. */
int sampler__v8_stats(struct sampler *s, uint64_t *out, uint32_t n);

/*
 * HotSpot frames (bpf/hotspot.bpf.h): the hs_procs map (tgid -> struct hs_desc) the agent
 * fills (exporter/runtime/jvm/hstab.c), -ENOTSUP without the CFI walk; and the walk's counters
 * (enum hs_stat, summed over CPUs into @out[0..n)).
 */
int sampler__hs_procs_fd(const struct sampler *s);
int sampler__hs_stats(struct sampler *s, uint64_t *out, uint32_t n);

/*
 * PHP frames (bpf/php.bpf.h): the php_procs map (tgid -> struct php_desc) the agent fills
 * (exporter/runtime/php/phptab.c), -ENOTSUP without the CFI walk; and the walk's counters
 * (enum php_stop, then PHP_STAT_*, summed over CPUs into @out[0..n)).
 */
int sampler__php_procs_fd(const struct sampler *s);
int sampler__php_stats(struct sampler *s, uint64_t *out, uint32_t n);
/* The thread-context maps: 0, or -ENOTSUP when the reader is not loaded. */
int sampler__threadctx_maps(const struct sampler *s, struct sampler_threadctx_maps *out);
/*
 * Attaches a context uprobe to @func in the ELF file @binary (every process mapping it).
 * @mode: SP_CTXP_* (bpf/sampler.h): an argument number (entry probe), SP_CTXP_TLS (return
 * probe reading otel_thread_ctx_v1) and/or SP_CTXP_CLEAR (return probe ending the context).
 * 0 or -errno (message on stderr naming the binary and function).
 */
int sampler__attach_ctx_uprobe(struct sampler *s, const char *binary, const char *func,
			       uint32_t mode);
/* The targeting maps (owned by the sampler). */
void sampler__filter_maps(const struct sampler *s, struct sampler_filter_maps *out);
/*
 * One line of the start-up timeline on @f (NULL: nothing): "spanprof: start-up +S.SSS s: WHAT",
 * S the seconds since @t0_ns (CLOCK_MONOTONIC ns), WHAT from printf-style @fmt.
 */
void sampler__startup_mark(FILE *f, uint64_t t0_ns, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Starts sampling when the sampler was made with start_disabled. */
void sampler__start(struct sampler *s);
/*
 * Stops sampling before the final drain: the perf events are disabled and every program stops
 * taking samples of any type (the flag sampler__start() set). What the ring holds stays there
 * for sampler__drain(). Cheap and idempotent: may be called from a sample callback.
 */
void sampler__stop(struct sampler *s);

#endif
