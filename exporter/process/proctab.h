/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proctab: what the agent knows about each sampled process: its mappings, the file (symbol
 * cache object) of each, its resource facts and the file identities its samples carried. It
 * answers "which mapping and file hold this PC" (proctab__mapping()); naming the PC and building
 * profile locations is the resolve step's (resolve/resolve.h).
 *
 * A process is identified by (pid, start time), so a reused PID never reaches
 * the previous process's mappings. Its /proc/PID/maps is read on the first
 * sample and again (rate-limited) when a PC falls outside every known mapping
 * (dlopen, JIT). The ELF files of its executable mappings are opened right
 * away, through /proc/PID/map_files (which also reaches deleted files and
 * container file systems), so a process that exits a moment later still gets
 * named frames: the symcache keeps the open files.
 */
#ifndef SPANPROF_PROCTAB_H
#define SPANPROF_PROCTAB_H

#include <stdint.h>

#include "symbols/symbolize.h"

struct proctab;
struct proc;
struct sp_vmas;
struct sp_exec_path;

/* Process table counters, for the summary and self-telemetry. */
struct proctab_stats {
	uint64_t processes;	   /* processes seen */
	uint64_t maps_read_failed; /* /proc/PID/maps unreadable (process gone, no permission) */
	uint64_t objects_failed;   /* executable mappings whose file could not be opened */
	uint64_t objects_not_elf;  /* ... of them, a regular file not parsed as ELF (ENOEXEC) */
	char first_not_elf[128];   /* the first such file, as its process maps it ("": none) */
	uint64_t pid_reused;	   /* maps reads dropped: the PID had gone to another process */
	uint64_t processes_freed;  /* entries of exited processes freed by proctab__sweep() */
	uint64_t preloads;	   /* --pid processes read before sampling (proctab__preload()) */
	uint64_t preloads_used;	   /* ... whose entry a sample then took (same start tick) */
	/* File identities carried by samples (proctab__note_vmas(), fileid.h). */
	uint64_t exe_fileid;	    /* processes whose executable came from the identity */
	uint64_t exec_paths_opened; /* executable paths opened (proctab__exec_path()) */
	uint64_t exec_paths_failed; /* ... that could not be opened, or held another file */
	uint64_t
	    parent_maps_read; /* a vfork child's unknown file looked for in its parent's maps */
};

/* @syms is borrowed: the table opens the files of mappings in it. NULL + errno on ENOMEM. */
struct proctab *proctab__new(struct symcache *syms);
void proctab__free(struct proctab *t);

/*
 * Finds or creates the entry of (@pid, @start_boot_ns), reading its maps on
 * creation. Never NULL except on ENOMEM: a process whose maps can't be read
 * gets an entry with no mappings (its frames become unmapped addresses).
 */
struct proc *proctab__get(struct proctab *t, uint32_t pid, uint64_t start_boot_ns);

/*
 * Reads process @pid's maps and opens their files now, before any sample of it (a --pid
 * process): its samples are then named even when they are read from the ring after it exited
 * (a slow or loaded machine). The entry has no start time until a sample whose start time falls
 * in the same clock tick as /proc/PID/stat's (proclife.h) takes it (proctab__get()); a sample of
 * another start time replaces it as for a reused PID. The maps hook hears the read (start time
 * 0, "any", as for unwinder__preload()), and again with the start time when a sample takes the
 * entry. Its files' symbols and debug info are loaded too. 0 (also when the PID already
 * has an entry); -ESRCH gone or without an executable mapping; -ESTALE the PID changed process
 * during the read; -ENOMEM; another -errno when /proc/PID/stat is unreadable.
 */
int proctab__preload(struct proctab *t, uint32_t pid);

/*
 * Where a user PC lies, as the table knows it. The pointers belong to the table (path, slot) or
 * the symbol cache (obj) and stay valid until the table next reads this process's maps.
 */
struct proc_mapping {
	uint64_t start;		/* first byte mapped, process virtual address */
	uint64_t end;		/* one past the last byte */
	uint64_t file_offset;	/* file offset of start */
	const char *path;	/* the file as the process sees it, or "[vdso]" */
	struct elf_object *obj; /* its object in the symbol cache; NULL: not opened */
	/*
	 * Two words the caller may keep per mapping (the resolve step keeps the profile's
	 * mapping index and its generation there); zero after each maps read. NULL for a
	 * mapping known only from a sample's file identities.
	 */
	uint32_t *slot;
	int from_fileid; /* 1: found through the sample's file identities, not /proc/PID/maps */
	/* 1: anonymous executable memory, no ELF file (procmaps__anon_code()): JIT code, named by
	 * a JIT runtime's table (runtime/jit/jitprocs.h) when the process has one. */
	int jit;
};

/*
 * The time (CLOCK_BOOTTIME ns, as sp_sample.time_boot_ns) of the sample whose PCs the next
 * proctab__mapping() calls name; 0: unknown. A PC outside the maps read before that time asks
 * a re-read at once (a library mapped since the read), whatever re-read an older sample made.
 */
void proctab__sample_time(struct proctab *t, uint64_t boot_ns);

/*
 * The mapping of @proc holding user PC @pc into @out. @vmas are the file identities the sample
 * carries (bpf/sampler.h, fileid.h; NULL: none), as returned by proctab__note_vmas(): a PC
 * outside the known mappings is found through the entry of @vmas holding it (or one earlier
 * samples of the process showed), from the symbol cache's object for that file, with no read of
 * /proc. Else a PC outside every mapping re-reads the maps (rate-limited: dlopen, JIT).
 * Returns 0; -ENOENT outside every known mapping; -ENOKEY in a recorded file no process had shown
 * the agent (its identity is printed with SPANPROF_DEBUG set).
 */
int proctab__mapping(struct proctab *t, struct proc *proc, uint64_t pc, const struct sp_vmas *vmas,
		     struct proc_mapping *out);

/*
 * Notes the file identities a sample of @proc carries (NULL: none): its mappings are kept for
 * later samples that could not record theirs, and a process whose resource facts could not be
 * read gets its executable's path and name from them. Returns @vmas, or NULL when it holds no
 * identity (samples of processes already loaded): pass that to proctab__mapping().
 */
const struct sp_vmas *proctab__note_vmas(struct proctab *t, struct proc *proc,
					 const struct sp_vmas *vmas);

/*
 * A process exec'd the file @e->path with identity @e->file (struct sp_exec_path, bpf/sampler.h):
 * unless the symbol cache knows that file already, opens it by that path when the file there
 * still has that identity, so samples carrying it are named even if no process running it is
 * ever seen alive. Returns 1 opened, 0 known already, -ESTALE (the path holds another file now),
 * -EINVAL (not absolute) or the open's -errno; counted.
 */
int proctab__exec_path(struct proctab *t, const struct sp_exec_path *e);
/*
 * A new export interval begins: proctab__sweep(keep_current) keeps the entries sampled from now
 * on until after the next one.
 */
void proctab__next_interval(struct proctab *t);

/*
 * Frees the entries of processes that are gone (exited, or their PID reused: proclife.h), so
 * the table holds the live processes only, however many come and go. With @keep_current, an
 * entry sampled since the last proctab__next_interval() stays until after the next one (the OTLP
 * encoder still asks for its resource facts). One read of /proc/PID/stat per entry: call every
 * few seconds. Returns the number freed. Pointers to freed entries become invalid.
 */
size_t proctab__sweep(struct proctab *t, int keep_current);
/* Entries in the table now. */
size_t proctab__count(const struct proctab *t);

struct procmeta;
/*
 * Resource facts of the latest process with @pid (procmeta.h), read when its
 * first sample arrived. 0 and *out (owned by the table), or -ESRCH / the
 * error the read gave. Fits otlp_encode_opts.process_meta.
 */
int proctab__meta(struct proctab *t, uint32_t pid, const struct procmeta **out);

/* Executable path of the process (from /proc/PID/exe), "" if unknown. */
const char *proc__exe(const struct proc *proc);

/* The process's PID and start time (CLOCK_BOOTTIME ns, as sp_sample.pstart_boot_ns). */
uint32_t proc__pid(const struct proc *proc);
uint64_t proc__start_boot_ns(const struct proc *proc);

const struct proctab_stats *proctab__stats(const struct proctab *t);

/* --- CFI unwinder hooks (exporter/unwind/unwinder.h, docs/unwinding.md) --- */
struct procmaps;
/*
 * Called after every read of a process's maps (maps->n == 0 when the read failed), with the
 * group leader's start time. @maps is only valid during the call.
 */
typedef void (*proctab_maps_hook)(void *ctx, uint32_t pid, uint64_t start_boot_ns,
				  const struct procmaps *maps);
/* Sets (or with NULL clears) the hook. */
void proctab__set_maps_hook(struct proctab *t, proctab_maps_hook fn, void *ctx);
/* Re-reads the maps of the latest process with @pid now (exec, mmap). 0 or -ESRCH if unknown. */
int proctab__refresh(struct proctab *t, uint32_t pid);
/*
 * The latest process with @pid: its start time and its executable mappings as last read (owned
 * by the table, valid until it next reads them or frees the entry). 0, or -ESRCH if unknown.
 */
int proctab__maps(struct proctab *t, uint32_t pid, uint64_t *start_boot_ns,
		  const struct procmaps **maps);
/* --- end of CFI unwinder hooks --- */

/*
 * Called once per process right after its resource facts were read successfully, to add to
 * them (Kubernetes names with --k8s, k8smeta.h). @m belongs to the table.
 */
typedef void (*proctab_meta_hook)(void *ctx, uint32_t pid, struct procmeta *m);
/* Sets (or with NULL clears) the hook. */
void proctab__set_meta_hook(struct proctab *t, proctab_meta_hook fn, void *ctx);

#endif
