/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of resolve/ share; nothing outside resolve/ includes this (resolve.h is the
 * face). One sample goes through them top to bottom, from resolve__sample() (resolve.c):
 *
 * - resolve.c: the sample: its process, its kernel PCs, its user stack, its end marker;
 * - frame.c: each user PC found once (resolve_frame__find(): mapping, object, runtime), then
 *   named (resolve_frame__name(): native or Go code of a file, JIT code, an address);
 * - callers.c: above a libgcc unwinder entry, whether a caller is the frame's;
 * - fpproof.c: whether a frame-pointer step through code without CFI read the frame's caller;
 * - python.c: CPython frames in place of the interpreter loop's (whose naming waits for them);
 * - v8.c: JavaScript frames in place of, or after, V8's native ones;
 * - names.c: symbolizer frames to profile lines; naming again when debug files arrive.
 */
#ifndef SPANPROF_RESOLVE_IMPL_H
#define SPANPROF_RESOLVE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "process/proctab.h"
#include "profile/profile.h"
#include "resolve/resolve_stats.h"
#include "php.h"
#include "runtime/python/pymerge.h"
#include "sampler.h"

struct pyproc;
struct pytab;
struct v8tab;
struct hstab;
struct phptab;
struct jitprocs;
struct objtally;

/* Inline chains deeper than this are cut (outermost frames kept last). */
#define MAX_INLINE 16

/* Python frames of one sample at most (two ustack slots each, at most PY_MAX_FRAMES). */
#define MAX_PY_FRAMES PY_MAX_FRAMES
/* User-stack locations resolve__user() gives at most: the PCs and a Go marker. */
#define MAX_USER_LOCS (SP_MAX_USTACK + 1)

/*
 * A user location not named yet: a PC of the interpreter loop in a sample whose Python frames
 * may take its place (resolve_py__merge()), named only if the merge keeps it.
 */
#define LOC_DEFERRED UINT32_MAX

/* Whose code a user PC is, as its mapping says (resolve_frame__find()). */
enum frame_runtime {
	/* In no mapping the agent knows: an address (frame_ctx.err says why). */
	FRAME_RT_UNMAPPED,
	/*
	 * Machine code of a file: native or Go (the symbolizer's names say which), CPython's
	 * interpreter loop among them (resolve_py__in_loop(), by the address).
	 */
	FRAME_RT_FILE,
	/* JIT code (anonymous executable memory), named by the process's perf map or jitdump. */
	FRAME_RT_JIT,
};

/*
 * One user frame, found once and handed to every step that names or checks it: its PC, how it
 * was found, and what proctab__mapping() said of that PC (one lookup per frame).
 */
struct frame_ctx {
	uint64_t pc;	       /* process virtual address, as the stack holds it */
	enum profile_pc at;    /* PC_EXACT: the sampled PC; PC_RETURN: a return address */
	enum frame_runtime rt; /* whose code it is */
	int err;	       /* FRAME_RT_UNMAPPED: proctab__mapping()'s -ENOENT or -ENOKEY */
	/*
	 * Not FRAME_RT_UNMAPPED: the mapping holding pc. m.path and m.slot are borrowed from the
	 * process table until its next lookup (a maps re-read frees them):
	 * resolve_frame__model_mapping() reads them once, before any other lookup.
	 */
	struct proc_mapping m;
	/* FRAME_RT_JIT: the process whose JIT state names it (jitprocs__find() at the naming:
	 * a maps read meanwhile may have dropped it). */
	uint32_t pid;
	uint64_t pstart_boot_ns;
	bool mapping_known; /* resolve_frame__model_mapping() ran: mapping is the model's index (0:
			       none) */
	uint32_t mapping;
};

/* What symcache__call_target() said of return addresses, cached (callers.c). */
struct call_seen;

/* Scratch for merging one sample's Python frames (resolve__set_python()), python.c. */
struct py_scratch {
	struct py_frame py[MAX_PY_FRAMES];
	bool is_loop[MAX_USER_LOCS];
	struct pymerge_item items[MAX_USER_LOCS + MAX_PY_FRAMES + 1];
	uint32_t native[MAX_USER_LOCS];
	/*
	 * Per user location, where it is LOC_DEFERRED: its frame as found (m.path and m.slot
	 * cleared: the model's mapping index is known), to be named if the merge keeps it.
	 */
	struct frame_ctx deferred[MAX_USER_LOCS];
};

/* PHP frames placed per sample at most. */
#define MAX_PHP_FRAMES PHP_MAX_FRAMES

/* Scratch of resolve_php__merge(). */
struct php_scratch {
	struct py_frame mark[MAX_PHP_FRAMES]; /* entry marks, as pymerge reads them */
	bool is_vm[MAX_USER_LOCS];
	struct pymerge_item items[MAX_USER_LOCS + MAX_PHP_FRAMES + 1];
	uint32_t native[MAX_USER_LOCS];
};

struct resolve {
	struct proctab *procs;
	struct symcache *syms;
	struct ksyms *ksyms;
	uint32_t gen; /* bumped by resolve__profile_reset(): cached mapping indices are stale */
	int short_names;
	struct resolve_stats stats;
	/* resolve__user(): the user PCs kept when it cut the stack at an unproven caller; else 0 */
	uint32_t user_cut;
	/* resolve__user(): why it cut (enum sp_ustack_end), when user_cut is set */
	uint32_t cut_end;
	/*
	 * The sample's sp_sample.fp_steps, set before resolve__user() (0: no frame-pointer step to
	 * check); resolve__user() sets fp_complete when every such step was proven and the walk
	 * ended at _start (resolve/fpproof.c).
	 */
	uint32_t fp_steps;
	bool fp_end; /* ... and its walk ended in a frame-pointer step (RBP 0 or unknown) */
	bool fp_complete;
	/* resolve_callers__refuted()'s answers, by file and return address */
	struct call_seen *calls;
	uint32_t ncalls;
	struct pytab *python;	/* NULL: Python frames ignored */
	struct py_scratch *pys; /* allocated with the first Python sample */
	/*
	 * The interpreter of the sample being resolved while its interpreter-loop frames are
	 * deferred (resolve_py__defer_loop()); NULL: every PC is named at once.
	 */
	struct pyproc *defer_py;
	struct objtally *objs;	  /* user frames per file, named or not: the end-of-run report */
	struct jitprocs *jit;	  /* NULL: JIT code not named */
	struct v8tab *v8;	  /* NULL: V8 frames ignored */
	struct hstab *jvm;	  /* NULL: Java frames ignored */
	struct phptab *php;	  /* NULL: PHP frames ignored */
	struct php_scratch *phps; /* allocated with the first PHP sample */
	/* scratch of resolve_v8__merge(), allocated with the first V8 sample */
	uint32_t *v8locs;
	/* The sample being named (CLOCK_BOOTTIME; UINT64_MAX outside resolve__sample()): JIT
	 * code announced after it, over other code, does not name it (jitproc__lookup()). */
	uint64_t sample_boot_ns;
};

/* --- fpproof.c ---------------------------------------------------------------------------- */

/* One stack's frame-pointer steps through code without CFI, as resolve_fp__check() saw them. */
struct fp_tally {
	uint32_t steps; /* frames in files without CFI (each left by a frame-pointer step) */
	bool root;	/* the last of them is _start, after its XOR %ebp,%ebp */
};

/*
 * Checks the frame-pointer step the walk took out of found frame @f (named @loc; @exact: the
 * sampled PC; @last: the walk kept nothing above it) when its file has no CFI, or when it is
 * the last frame of a walk a frame-pointer step ended (r->fp_end), counting it in @t. Returns true
 * when the stack must be cut above @f: its function is not proven to have set up its frame pointer
 * there, so the caller the step read may be its caller's caller.
 */
bool resolve_fp__check(struct resolve *r, struct profile *p, const struct frame_ctx *f,
		       uint32_t loc, bool exact, bool last, struct fp_tally *t);

/* --- frame.c ------------------------------------------------------------------------------ */

/*
 * Finds user PC @pc of @proc (@at: how the walk found it) into @f: its mapping (@vmas: the
 * sample's file identities as proctab__note_vmas() returned them, or NULL), object and runtime.
 * The one proctab__mapping() of the frame; nothing is counted or interned yet.
 */
void resolve_frame__find(struct resolve *r, struct proc *proc, uint64_t pc, enum profile_pc at,
			 const struct sp_vmas *vmas, struct frame_ctx *f);

/* The model's mapping of found frame @f (not FRAME_RT_UNMAPPED), interned once per frame. */
uint32_t resolve_frame__model_mapping(struct resolve *r, struct profile *p, struct frame_ctx *f);

/*
 * The location of found frame @f. For the sampled PC (@pending non-NULL), also sets *@pending
 * when it is Go code without its frame set up yet (its caller is missing from a frame-pointer
 * walk). LOC_DEFERRED, with nothing interned, for a PC of the interpreter loop not interned yet
 * while r->defer_py says a merge may replace it (@defer): the frame is then counted as named
 * in the objects' tally, and named by a later call without @defer if it stays.
 */
uint32_t resolve_frame__name(struct resolve *r, struct profile *p, struct frame_ctx *f,
			     int *pending, bool defer);

/* --- callers.c ---------------------------------------------------------------------------- */

/*
 * Whether found frame @caller (its PC a return address) is refuted as the caller of the frame
 * below it: location @callee, found as frame @callee_f, whose call site is @callee_pc. May look
 * up @callee_pc (another PC): @caller is then found again. Details in callers.c.
 */
bool resolve_callers__refuted(struct resolve *r, struct proc *proc, struct profile *p,
			      uint32_t callee, const struct frame_ctx *callee_f, uint64_t callee_pc,
			      struct frame_ctx *caller, const struct sp_vmas *vmas, bool entry);

/* Whether location @loc is a libgcc unwinder entry that may be installing a handler. */
bool resolve_callers__eh_installing(struct profile *p, uint32_t loc);

/* Forgets every resolve_callers__refuted() answer. */
void resolve_callers__clear(struct resolve *r);

/* --- python.c ----------------------------------------------------------------------------- */

/*
 * Before sample @s (@uu user PCs) is named: whether its interpreter-loop frames may wait for
 * resolve_py__merge() (sets r->defer_py).
 */
void resolve_py__defer_loop(struct resolve *r, const struct sp_sample *s, uint32_t uu);

/*
 * Whether found frame @f (a file's code, @vaddr: the link-time address named, pc - 1 for a
 * return address) is in the interpreter loop of r->defer_py.
 */
bool resolve_py__in_loop(const struct resolve *r, const struct frame_ctx *f, uint64_t vaddr);

/*
 * Replaces, in the @n user locations @locs of sample @s (@uu user PCs; room for @cap), each
 * interpreter-loop frame by the Python frames it ran. Returns the new number of locations.
 */
uint32_t resolve_py__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			   uint32_t uu, uint32_t *locs, uint32_t n, uint32_t cap);

/* --- jvm.c -------------------------------------------------------------------------------- */

/*
 * Names the Java frames of sample @s (bpf/hotspot.h records from ustack slot @first) and puts
 * each in the place of its native frame among the @n user locations @locs (one per PC: @n ==
 * @uu). A frame that cannot be named keeps its native location. Returns @n.
 */
uint32_t resolve_jvm__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			    uint32_t first, uint32_t *locs, uint32_t n, uint32_t uu);

/* --- php.c -------------------------------------------------------------------------------- */

/*
 * Names the PHP frames of sample @s (bpf/php.h records from ustack slot @first) and puts them in
 * place of the Zend VM's execute_ex frames among the @n user locations @locs (leaf first, room
 * for @cap). Returns the new number of locations.
 */
uint32_t resolve_php__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			    uint32_t first, uint32_t *locs, uint32_t n, uint32_t cap);

/* --- v8.c --------------------------------------------------------------------------------- */

/*
 * Puts the V8 frames of sample @s (after slot @first of ustack) in the @n native user locations
 * @locs (one per ustack PC; room for @cap). Returns the new number of locations.
 */
uint32_t resolve_v8__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			   uint32_t first, uint32_t *locs, uint32_t n, uint32_t cap);

/* --- names.c ------------------------------------------------------------------------------ */

/*
 * The location of machine code at @address (@at: how it was found) in model mapping @mapping,
 * named by the symbolizer's @frames (@n, innermost first; 0: an unnamed address).
 */
uint32_t resolve_names__intern_frames(struct profile *p, uint32_t mapping, uint64_t address,
				      enum frame_kind kind, enum profile_pc at,
				      const struct sym_frame *frames, int n, int short_names);

#endif
