/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwinder: loads CFI tables (exporter/unwind/cfi.h) into the BPF walker's maps and keeps, per
 * process, the list of its executable mappings with the table and bias of each (bpf/unwind_walk.h).
 * Design, map layout and counters: docs/unwinding.md.
 *
 * Tables are keyed by file identity (device, inode, size, mtime of the mapped file; the vDSO is
 * one shared image), built once, shared by every process that maps the file, and reference
 * counted: the table of a file no process maps any more is freed and its rows reused. Rows live
 * in 512 KiB chunks created on demand up to a byte limit; a file whose table does not fit is
 * walked with frame pointers (counted in tables_full).
 *
 * Tables are built on a thread of the unwinder's own (the builder), never on the caller's:
 * unwinder__maps_hook() and unwinder__note_event() only queue work, by priority (a new process's
 * own files at its exec, then processes whose samples are arriving, then re-reads after mmap and
 * exec notifications), at most one job per process (the latest maps win). Until a process's
 * tables are in, its samples are walked as today for an unloaded process (the walker marks them
 * "[truncated: not loaded yet]").
 *
 * Ownership: the unwinder borrows the sampler's maps (sampler__unwind_maps()) and owns the chunk
 * maps it creates and its thread; free it before or after the sampler, but stop calling it once
 * the sampler is gone. Calls come from one thread (the agent's main thread); the builder is the
 * only other one.
 */
#ifndef SPANPROF_UNWINDER_H
#define SPANPROF_UNWINDER_H

#include <stdint.h>

#include "process/procmaps.h"
#include "runtime/jit/jitproc.h"
#include "sampling/sampler_user.h"
#include "unwind/unwinder_types.h" /* struct unwinder_opts, struct unwinder_stats */

struct unwinder;

/* NULL + errno (ENOMEM, or EINVAL for unusable maps). */
struct unwinder *unwinder__new(const struct unwinder_opts *opts);
/* Deletes every table, chunk and mapping list it made. NULL is a no-op. */
void unwinder__free(struct unwinder *u);

/*
 * Replaces, at once (on the caller's thread, waiting for a build the builder has under way), the
 * mapping list of process pid (started at start_boot_ns, the group leader's
 * CLOCK_BOOTTIME start, which the walker checks) with the executable mappings of maps, loading
 * the tables of files not loaded yet. Files are opened through /proc/PID/map_files/START-END, else
 * /proc/PID/root/PATH; the vDSO from this agent's own copy. maps with no entry (an unreadable
 * maps file: the process is gone) removes the process. 0 or -errno (-ENOSPC: the process map is
 * full; -ENOMEM).
 */
int unwinder__update_process(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			     const struct procmaps *maps);
/*
 * Queues process pid for the builder thread, first among its jobs: it loads the tables of the
 * process's current /proc/PID/maps with an unknown start time (0, which the walker accepts until
 * the first sample's maps read replaces it). For processes named on the command line: sampling
 * starts without waiting for their tables; samples taken before they are in are marked "not
 * loaded yet" (the leaf only), as for any process the agent has not loaded. Never waits for a
 * build; 0 (a job it has no memory for is counted as dropped: the first sample loads the process).
 */
int unwinder__preload(struct unwinder *u, uint32_t pid);
/* unwinder__preload() requests not run yet by the builder (0: their tables are in, or failed). */
int unwinder__preloads_pending(const struct unwinder *u);
/* Queues unwinder__update_process() for the builder thread (with a copy of the executable
 * mappings of maps), shaped as the process table's maps hook (proctab__set_maps_hook()); ctx is
 * the unwinder. Never waits for a build. */
void unwinder__maps_hook(void *ctx, uint32_t pid, uint64_t start_boot_ns,
			 const struct procmaps *maps);
/*
 * Process @pid's JIT call frame information changed (its jitdump unwinding records; shaped as
 * proctab_jit_cfi_hook, process/proctab.h): takes @cfi (freed here or later), and queues, as
 * unwinder__maps_hook() does with @maps, the process's update, whose anonymous executable
 * mappings then walk with a table built from @cfi (a synthetic per-process "file": rows of every
 * code load's .eh_frame, relative to its lowest code page), replacing the one built before.
 * Where the table has no row (code without an unwinding record, gaps), frame pointers as before.
 * Never waits for a build.
 */
void unwinder__jit_cfi_hook(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			    const struct procmaps *maps, struct jitproc_cfi *cfi);

/* Forgets process pid and releases its tables. Unknown pids are ignored. */
void unwinder__remove_process(struct unwinder *u, uint32_t pid);

/* Handles a notification from the walker (sampler_opts.event_cb): UNWIND_EVENT_NEW and
 * UNWIND_EVENT_EXIT queue the load or the removal for the builder; mmap and exec ask for a
 * re-read (unwinder__tick()). Never waits for a build. */
void unwinder__note_event(struct unwinder *u, const struct unwind_event *e);
/*
 * Re-reads (through unwinder_opts.refresh) the maps of processes notified at least 20 ms ago
 * (bursts of mmaps coalesce); the builder then loads them. Call after each poll. (The builder
 * itself forgets, every few seconds, processes whose exit notification was lost.)
 */
void unwinder__tick(struct unwinder *u);
/* Milliseconds until the next notified re-read is due (0: now), or -1 when none is pending:
 * the agent's poll should not sleep past it. */
int unwinder__next_due_ms(const struct unwinder *u);

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *out);

#endif /* SPANPROF_UNWINDER_H */
