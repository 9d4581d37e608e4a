/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve: the step that turns a sample's PCs into profile locations.
 *
 * One PC goes process -> mapping -> object -> frames: the process table (process/proctab.h) says
 * which mapping holds it and which file that is, the symbol cache (symbols/symbolize.h) or
 * kallsyms names it (the inline chain, innermost first), and only then is the result interned in
 * the profile model (profile/profile.h), once per (mapping, PC): a PC seen before in the same
 * profile is not named again. Nothing below this step builds locations, and nothing in it owns
 * processes or files. Each user PC's mapping, object and runtime are found once, and that frame
 * is handed to every step that checks or names it (resolve/resolve_impl.h, struct frame_ctx).
 *
 * Non-leaf PCs are return addresses: they are named at pc - 1, so that the call site, not the
 * instruction after it, is named (the location keeps the real PC).
 *
 * Ownership: the resolver borrows the process table, the symbol cache and the kernel symbols
 * (each may outlive it; ksyms may be NULL: kernel frames stay addresses). Not thread-safe.
 */
#ifndef SPANPROF_RESOLVE_H
#define SPANPROF_RESOLVE_H

#include <stdint.h>

#include "profile/profile.h"
#include "resolve/resolve_stats.h"
#include "sampler.h"

struct proctab;
struct proc;
struct symcache;
struct ksyms;
struct sp_vmas;
struct sp_sample;
struct resolve;

/*
 * Locations of one sample at most: both stacks, a GO_MISSING_CALLER marker, a Python marker
 * (Python frames take two user slots each in the sample and replace at least one native frame
 * per group: a merged user stack never outgrows the slots plus one marker) and the marker of a
 * cut stack.
 */
#define RESOLVE_MAX_LOCATIONS (SP_MAX_KSTACK + SP_MAX_USTACK + 3)

/* Name of the frame standing for a caller the frame-pointer walk skipped (Go, no frame yet). */
#define GO_MISSING_CALLER "[caller unknown: Go function without its frame yet]"

/* NULL + errno (ENOMEM). */
struct resolve *resolve__new(struct proctab *procs, struct symcache *syms, struct ksyms *ksyms);
/* Names kernel PCs from @ksyms from now on (borrowed, may be NULL), e.g. once loaded on a thread.
 */
void resolve__set_ksyms(struct resolve *r, struct ksyms *ksyms);
/* NULL is a no-op. */
void resolve__free(struct resolve *r);
/*
 * @on: name native functions (not Go's) for display without parameter lists and template
 * arguments (symbols/shortname.h); the full name stays the function's system_name.
 */
void resolve__set_short_names(struct resolve *r, int on);

struct pytab;
/*
 * Names the Python frames of samples (sp_sample.py_len, bpf/python.h) from @py's processes and
 * merges them into the native stacks (runtime/python/pymerge.h): each interpreter-loop frame is
 * replaced by the Python frames it ran (kind FRAME_CPYTHON). Borrowed; NULL: Python frames are
 * ignored.
 */
void resolve__set_python(struct resolve *r, struct pytab *py);

struct v8tab;
/*
 * Names the JavaScript frames of node samples (sp_sample.v8_len, bpf/v8.h) from @v8's processes
 * (kind FRAME_V8JS) and places them among the native frames. Borrowed; NULL: ignored.
 */
void resolve__set_v8(struct resolve *r, struct v8tab *v8);
struct jitprocs;
/*
 * Names PCs in JIT code (anonymous executable memory, proc_mapping.jit) from the perf maps and
 * jitdump files of @jit's processes (runtime/jit/jitprocs.h; kind FRAME_JIT, or its runtime's:
 * jitproc__kind()). Borrowed; NULL: such PCs are addresses of their mapping, as in a file
 * without symbols.
 */
void resolve__set_jit(struct resolve *r, struct jitprocs *jit);
struct hstab;
/* Names the Java frames of JVM samples (sp_sample.hs_len, bpf/hotspot.h) from @jvm's processes
 * (kind FRAME_JVM) in place of their native frames. Borrowed; NULL: ignored. */
void resolve__set_jvm(struct resolve *r, struct hstab *jvm);
struct phptab;
/* Names the PHP frames of PHP samples (sp_sample.php_len, bpf/php.h) from @php's processes (kind
 * FRAME_PHP) in place of the Zend VM's native frames. Borrowed; NULL: ignored. */
void resolve__set_php(struct resolve *r, struct phptab *php);

/*
 * Appends to @locs the locations of @n kernel PCs (leaf first), named from kallsyms (kind
 * FRAME_KERNEL). Returns the number appended (<= n; fewer only on ENOMEM).
 */
uint32_t resolve__kernel(struct resolve *r, struct profile *p, const uint64_t *pcs, uint32_t n,
			 uint32_t *locs);

/*
 * Appends to @locs the locations of @n user PCs (leaf first) of @proc; a zero PC ends the stack
 * (where a frame-pointer chain ends). @vmas: the file identities the sample carries (bpf/sampler.h,
 * process/fileid.h), or NULL: a PC outside the process's known mappings is then named through the
 * entry of @vmas holding it, as if /proc/PID/maps had been read. Returns the number appended:
 * at most @n + 1 (a GO_MISSING_CALLER marker after a Go leaf sampled before its function set up
 * its frame, unless @sample_flags (SP_SAMPLE_*) has SP_SAMPLE_LEAF_CFI: @locs needs room for it).
 */
uint32_t resolve__user(struct resolve *r, struct proc *proc, struct profile *p, const uint64_t *pcs,
		       uint32_t n, const struct sp_vmas *vmas, uint32_t sample_flags,
		       uint32_t *locs);

/*
 * The whole stack of sample @s (bpf/sampler.h): its kernel PCs, then its user PCs, each leaf
 * first (with Python frames in place of the interpreter loop's, resolve__set_python()), then,
 * when the user stack does not end at an outermost frame, the marker saying why
 * (profile/stackend.h), into @locs (room for RESOLVE_MAX_LOCATIONS entries). The process's entry is
 * found first (its maps read on its first sample), before anything slow: the process may be
 * about to exit (a kernel thread has none). Returns the number of locations.
 */
uint32_t resolve__sample(struct resolve *r, struct profile *p, const struct sp_sample *s,
			 uint32_t *locs);

/*
 * Names again the native locations of @p that have no name yet, in files whose debug file
 * arrived since they were made (symcache__pick_up_debug_files(), symbols/debuginfod.h): each
 * keeps its index, so the stacks and samples holding it are named too. Files are found by build
 * ID; a return address is named at the call before it (profile_location.roles; a location met
 * both as a leaf and as a return address only if the two agree). Returns the number of
 * locations named.
 */
int resolve__name_again(struct resolve *r, struct profile *p);

/* Forgets the profile indices the resolver cached. Call after profile__reset() of the model. */
void resolve__profile_reset(struct resolve *r);

const struct resolve_stats *resolve__stats(const struct resolve *r);

struct objtally;
/* User frames per file, named or not (resolve/objtally.h). Owned by @r. */
const struct objtally *resolve__objects(const struct resolve *r);

#endif
