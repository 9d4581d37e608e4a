/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proctab: what the agent knows about each sampled process, and the
 * translation of its sampled PCs into profile locations.
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

#include "profile.h"
#include "runtime/jit/jitproc.h"
#include "symbolize.h"

struct proctab;
struct proc;

/* Symbolization counters, for the summary and self-telemetry. */
struct proctab_stats {
	uint64_t processes;	      /* processes seen */
	uint64_t maps_read_failed;    /* /proc/PID/maps unreadable (process gone, no permission) */
	uint64_t objects_failed;      /* executable mappings whose file could not be opened */
	uint64_t frames_unmapped;     /* user PCs outside every known mapping */
	uint64_t frames_unsymbolized; /* PCs in a known file with no symbol for them */
	uint64_t kernel_unsymbolized; /* kernel PCs with no kallsyms entry */
	uint64_t pid_reused;	      /* maps reads dropped: the PID had gone to another process */
	uint64_t processes_freed;     /* entries of exited processes freed by proctab__sweep() */
	/* File identities carried by samples (proctab__sample_user_locations(), fileid.h). */
	uint64_t frames_fileid;		/* user PCs named through the sample's file identities */
	uint64_t frames_fileid_unknown; /* PCs in a recorded file no process had shown the agent */
	uint64_t exe_fileid;		/* processes whose executable came from the identity */
	uint64_t exec_paths_opened;	/* executable paths opened (proctab__exec_path()) */
	uint64_t exec_paths_failed;	/* ... that could not be opened, or held another file */
	struct jitproc_stats jit;	/* JIT code named from perf maps and jitdump files */
};

/*
 * @syms and @ksyms are borrowed (ksyms may be NULL: kernel frames stay
 * addresses). NULL + errno on ENOMEM.
 */
struct proctab *proctab__new(struct symcache *syms, struct ksyms *ksyms);
void proctab__free(struct proctab *t);

/*
 * Finds or creates the entry of (@pid, @start_boot_ns), reading its maps on
 * creation. Never NULL except on ENOMEM: a process whose maps can't be read
 * gets an entry with no mappings (its frames become unmapped addresses).
 */
struct proc *proctab__get(struct proctab *t, uint32_t pid, uint64_t start_boot_ns);

/*
 * Appends to @locs the profile locations of @n user PCs (leaf first) of @proc.
 * Non-leaf PCs are return addresses: they are symbolized at pc - 1 so that the
 * call site, not the next line, is named. Returns the number appended (<= n).
 */
uint32_t proctab__user_locations(struct proctab *t, struct proc *proc, struct profile *p,
				 const uint64_t *pcs, uint32_t n, uint32_t *locs);
/*
 * proctab__user_locations() for a sample that carries file identities (@vmas, bpf/sampler.h,
 * exporter/fileid.h; NULL or vmas->n 0: none). A PC outside the process's known mappings (it
 * exited before its maps could be read, or mapped the file since) is named through the entry
 * of @vmas holding it, from the symbol cache's object for that file: the same mapping and
 * names as if /proc/PID/maps had been read. A file no process had shown the agent stays an
 * address (counted in frames_fileid_unknown). Also gives a process whose resource facts could
 * not be read its executable's path and name, from vmas->exe. Returns the number appended.
 */
struct sp_vmas;
struct sp_exec_path;
uint32_t proctab__sample_user_locations(struct proctab *t, struct proc *proc, struct profile *p,
					const uint64_t *pcs, uint32_t n, const struct sp_vmas *vmas,
					uint32_t *locs);
/*
 * A process exec'd the file @e->path with identity @e->file (struct sp_exec_path, bpf/sampler.h):
 * unless the symbol cache knows that file already, opens it by that path when the file there
 * still has that identity, so samples carrying it are named even if no process running it is
 * ever seen alive. Returns 1 opened, 0 known already, -ESTALE (the path holds another file now),
 * -EINVAL (not absolute) or the open's -errno; counted.
 */
int proctab__exec_path(struct proctab *t, const struct sp_exec_path *e);
/* The same for kernel PCs (kallsyms names, kind FRAME_KERNEL). */
uint32_t proctab__kernel_locations(struct proctab *t, struct profile *p, const uint64_t *pcs,
				   uint32_t n, uint32_t *locs);

/*
 * Forgets the profile indices cached in process entries. Call after
 * profile__reset() of @p, before adding to it again.
 */
void proctab__profile_reset(struct proctab *t);

/*
 * Frees the entries of processes that are gone (exited, or their PID reused: proclife.h), so
 * the table holds the live processes only, however many come and go. With @keep_current, an
 * entry sampled since the last proctab__profile_reset() stays until after the next one (the OTLP
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

const struct proctab_stats *proctab__stats(const struct proctab *t);

/* jitproc__new() flags for processes met from now on (JITPROC_JAVA_PERFMAP: --java-perfmap). */
void proctab__set_jit_flags(struct proctab *t, unsigned int flags);

/* --- CFI unwinder hooks (exporter/unwinder.h, docs/unwinding.md) --- */
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
/* --- end of CFI unwinder hooks --- */

/*
 * Called once per process right after its resource facts were read successfully, to add to
 * them (Kubernetes names with --k8s, k8smeta.h). @m belongs to the table.
 */
typedef void (*proctab_meta_hook)(void *ctx, uint32_t pid, struct procmeta *m);
/* Sets (or with NULL clears) the hook. */
void proctab__set_meta_hook(struct proctab *t, proctab_meta_hook fn, void *ctx);

#endif
