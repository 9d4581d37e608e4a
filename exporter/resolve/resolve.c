/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "process/proctab.h"
#include "profile/stackend.h"
#include "resolve/objtally.h"
#include "runtime/jit/jitproc.h"
#include "runtime/python/pyelf.h"
#include "runtime/python/pymerge.h"
#include "runtime/python/pyproc.h"
#include "runtime/python/pytab.h"
#include "runtime/v8/v8tab.h"
#include "sampler.h"
#include "resolve/resolve.h"
#include "symbols/shortname.h"
#include "symbols/symbolize.h"

/* Inline chains deeper than this are cut (outermost frames kept last). */
#define MAX_INLINE 16

/* Python frames of one sample at most (two ustack slots each, at most PY_MAX_FRAMES). */
#define MAX_PY_FRAMES PY_MAX_FRAMES
/* User-stack locations resolve__user() gives at most: the PCs and a Go marker. */
#define MAX_USER_LOCS (SP_MAX_USTACK + 1)

/*
 * A user location not named yet: a PC of the interpreter loop in a sample whose Python frames
 * may take its place (py_merge()), named only if the merge keeps it.
 */
#define LOC_DEFERRED UINT32_MAX

/* Scratch for merging one sample's Python frames (resolve__set_python()). */
struct py_scratch {
	struct py_frame py[MAX_PY_FRAMES];
	bool is_loop[MAX_USER_LOCS];
	struct pymerge_item items[MAX_USER_LOCS + MAX_PY_FRAMES + 1];
	uint32_t native[MAX_USER_LOCS];
	/* Per user location, where it is LOC_DEFERRED: its PC and whether it is a return address.
	 */
	uint64_t deferred_pc[MAX_USER_LOCS];
	bool deferred_ret[MAX_USER_LOCS];
};

/* The sample being resolved while its interpreter-loop frames are deferred (see defer_loop). */
struct py_defer {
	struct pyproc *py; /* its interpreter; NULL: every PC is named at once */
	struct proc *proc;
	const struct sp_vmas *vmas; /* as proctab__note_vmas() returned them */
};

/* What symcache__call_target() said of one return address (caller_refuted()). */
struct call_seen {
	struct {
		const struct elf_object *obj;
		uint64_t vaddr;
	} key;
	int got;	  /* symcache__call_target()'s answer */
	char called[256]; /* its name when got is 1 */
	uint64_t target;  /* its address, when a function of the same file */
	int jumps_out;	  /* symcache__jumps_out() of target; -1: not asked yet */
	UT_hash_handle hh;
};

/* Return addresses remembered at most: a few call sites of libgcc's entries per program. */
#define CALLS_SEEN_MAX 4096

/* Forgets every caller_refuted() answer. */
static void calls_clear(struct call_seen **calls)
{
	struct call_seen *e, *tmp;

	HASH_ITER (hh, *calls, e, tmp) {
		HASH_DEL(*calls, e);
		free(e);
	}
}

struct resolve {
	struct proctab *procs;
	struct symcache *syms;
	struct ksyms *ksyms;
	uint32_t gen; /* bumped by resolve__profile_reset(): cached mapping indices are stale */
	int short_names;
	struct resolve_stats stats;
	/* resolve__user(): the user PCs kept when it cut the stack at an unproven caller; else 0 */
	uint32_t user_cut;
	struct call_seen *calls; /* caller_refuted()'s answers, by file and return address */
	uint32_t ncalls;
	struct pytab *python;	/* NULL: Python frames ignored */
	struct py_scratch *pys; /* allocated with the first Python sample */
	struct py_defer defer;
	struct objtally *objs; /* user frames per file, named or not: the end-of-run report */
	struct v8tab *v8;      /* NULL: V8 frames ignored */
	uint32_t *v8locs;      /* scratch of v8_merge(), allocated with the first V8 sample */
	/* The sample being named (CLOCK_BOOTTIME; UINT64_MAX outside resolve__sample()): JIT
	 * code announced after it, over other code, does not name it (jitproc__lookup()). */
	uint64_t sample_boot_ns;
};

struct resolve *resolve__new(struct proctab *procs, struct symcache *syms, struct ksyms *ksyms)
{
	struct resolve *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->objs = objtally__new();
	if (!r->objs) {
		free(r);
		return NULL;
	}
	r->procs = procs;
	r->sample_boot_ns = UINT64_MAX;
	r->syms = syms;
	r->ksyms = ksyms;
	r->gen = 1;
	return r;
}

void resolve__set_ksyms(struct resolve *r, struct ksyms *ksyms)
{
	r->ksyms = ksyms;
}

void resolve__free(struct resolve *r)
{
	if (r) {
		calls_clear(&r->calls);
		free(r->pys);
		free(r->v8locs);
		objtally__free(r->objs);
	}
	free(r);
}

void resolve__set_python(struct resolve *r, struct pytab *py)
{
	r->python = py;
}

void resolve__set_v8(struct resolve *r, struct v8tab *v8)
{
	r->v8 = v8;
}

void resolve__set_short_names(struct resolve *r, int on)
{
	r->short_names = on;
}

/*
 * Interns one location: @frames is the inline chain of @address, innermost first (n == 0: an
 * unnamed address).
 */
/* The lines of @n symbolizer frames (at most MAX_INLINE), innermost first. Returns their number. */
static int frames_to_lines(struct profile *p, const struct sym_frame *frames, int n,
			   struct profile_line *lines, int short_names)
{
	struct profile_function f;
	char shortened[1024];
	const char *prev = NULL; /* full name of lines[out - 1] */
	int out = 0;

	for (int i = 0; i < n; i++) {
		const char *name = frames[i].function ? frames[i].function : frames[i].system_name;
		const char *full = name;

		/*
		 * A function "inlined into itself" (glibc's debug info says so of aliases such
		 * as __libc_write) is one frame: keep the innermost line, drop its repeat. Full
		 * names compared: two overloads that --short-names shows alike stay two frames.
		 */
		if (out && full && prev && !strcmp(full, prev))
			continue;

		f.name = 0;
		/* Go names keep their "(*T)": only C++ and Rust forms are trimmed. */
		if (short_names && name && !frames[i].go) {
			size_t len = strlen(name) + 1;
			char *buf = len <= sizeof(shortened) ? shortened : malloc(len);

			/* out of memory: the full name, which is never wrong */
			if (buf && shortname__trim(name, buf, len) >= 0)
				f.name = profile__intern_string(p, buf);
			if (buf != shortened)
				free(buf);
		}
		if (!f.name)
			f.name = profile__intern_string(p, name);
		f.system_name =
		    profile__intern_string(p, frames[i].system_name ? frames[i].system_name : full);
		f.filename = profile__intern_string(p, frames[i].file);
		lines[out].function = profile__intern_function(p, &f);
		lines[out].line = frames[i].line;
		prev = full;
		out++;
	}
	return out;
}

/* A user-space location already interned: native code, or Go code (the kind its names gave). */
static uint32_t find_user_location(struct profile *p, uint32_t mapping, uint64_t pc,
				   enum profile_pc at)
{
	uint32_t loc = profile__find_code_location(p, mapping, pc, FRAME_NATIVE, at);

	return loc ? loc : profile__find_code_location(p, mapping, pc, FRAME_GO, at);
}

/* The kind of a user-space location named by @frames: Go when its symbolizer said so. */
static enum frame_kind user_kind(const struct sym_frame *frames, int n)
{
	return n > 0 && frames[n - 1].go ? FRAME_GO : FRAME_NATIVE;
}

/* The location of machine code at @address (@at: how it was found), named by @frames (@n). */
static uint32_t intern_frames(struct profile *p, uint32_t mapping, uint64_t address,
			      enum frame_kind kind, enum profile_pc at,
			      const struct sym_frame *frames, int n, int short_names)
{
	struct profile_line lines[MAX_INLINE];
	int out = frames_to_lines(p, frames, n, lines, short_names);

	return profile__intern_code_location(p, mapping, address, kind, at, lines, out);
}

/*
 * A PC in JIT code (anonymous executable memory): named from the process's perf map or jitdump
 * (runtime/jit/jitproc.h), else an address of its runtime's kind (counted there). The location
 * is keyed by the code range too (profile__intern_location_version()), so an address that later
 * holds other code never keeps the old name.
 */
static uint32_t jit_location(struct resolve *r, struct jitproc *jit, struct profile *p,
			     uint32_t mapping, uint64_t pc, int is_return)
{
	enum frame_kind kind = jitproc__kind(jit);
	struct profile_line line;
	struct profile_function f;
	struct jittab_sym s;

	if (jitproc__lookup(jit, pc - (is_return ? 1 : 0), r->sample_boot_ns, &s, stderr))
		return profile__intern_location(p, mapping, pc, kind, NULL, 0);
	f.name = profile__intern_string(p, s.name);
	f.system_name = f.name;
	f.filename = profile__intern_string(p, s.file);
	line.function = profile__intern_function(p, &f);
	line.line = s.line;
	return profile__intern_location_version(p, mapping, pc, kind, s.id, &line, 1);
}

/* The model's mapping of @m, remembered in the table's slot for it while the profile lasts. */
static uint32_t model_mapping(struct resolve *r, struct profile *p, const struct proc_mapping *m)
{
	struct profile_mapping pm;
	uint32_t idx;

	if (m->slot && m->slot[1] == r->gen)
		return m->slot[0];
	pm.memory_start = m->start;
	pm.memory_limit = m->end;
	pm.file_offset = m->file_offset;
	pm.filename = profile__intern_string(p, m->path);
	pm.build_id = profile__intern_string(p, m->obj ? elf_object__build_id(m->obj) : NULL);
	idx = profile__intern_mapping(p, &pm);
	if (m->slot) {
		m->slot[0] = idx;
		m->slot[1] = r->gen;
	}
	return idx;
}

/*
 * Whether user PC @pc (a return address when @is_return), in mapping @m at link-time address
 * @vaddr of its file, is in the interpreter loop of @py: the mapping is of the file @py found
 * CPython in (same path, and the address agrees with @py's load bias), and the address is in
 * _PyEval_EvalFrameDefault as that file's symbol table bounds it (pyelf__in_loop()), the symbol
 * the symbolizer would name it by.
 */
static bool in_loop(const struct pyproc *py, const struct proc_mapping *m, uint64_t pc,
		    int is_return, uint64_t vaddr)
{
	const char *path = pyproc__path(py);

	return m->obj && !m->jit && path && m->path && !strcmp(path, m->path) &&
	       vaddr + pyproc__bias(py) == pc - (is_return ? 1 : 0) &&
	       pyelf__in_loop(pyproc__elf(py), vaddr);
}

/*
 * The location of user PC @pc. For the sampled PC (@pending non-NULL, not a return address),
 * also sets *@pending when it is Go code without its frame set up yet (its caller is missing
 * from a frame-pointer walk). LOC_DEFERRED, with nothing interned, for a PC of the interpreter
 * loop not interned yet while r->defer says a merge may replace it (@defer): the frame is then
 * counted as named in the objects' tally, and named by a later call without @defer if it stays.
 */
static uint32_t user_location_as(struct resolve *r, struct proc *proc, struct profile *p,
				 uint64_t pc, int is_return, const struct sp_vmas *vmas,
				 int *pending, bool defer)
{
	enum profile_pc at = is_return ? PC_RETURN : PC_EXACT;
	struct sym_frame frames[MAX_INLINE];
	struct proc_mapping m;
	uint32_t mapping, loc;
	uint64_t vaddr;
	int n = 0, err;

	err = proctab__mapping(r->procs, proc, pc, vmas, &m);
	if (err) {
		if (err == -ENOKEY)
			r->stats.frames_fileid_unknown++;
		else
			r->stats.frames_unmapped++;
		return profile__intern_location(p, 0, pc, FRAME_NATIVE, NULL, 0);
	}
	if (m.from_fileid)
		r->stats.frames_fileid++;
	mapping = model_mapping(r, p, &m);
	if (m.jit)
		return jit_location(r, proc__jit(proc), p, mapping, pc, is_return);
	if (pending && m.obj &&
	    !elf_object__file_offset_to_vaddr(m.obj, pc - m.start + m.file_offset, &vaddr))
		*pending = symcache__go_frame_pending(r->syms, m.obj, vaddr);
	loc = find_user_location(p, mapping, pc, at);
	if (loc) {
		const struct profile_location *l = profile__location(p, loc);

		objtally__note(r->objs, m.obj, l && l->nlines);
		return loc;
	}
	if (m.obj && !elf_object__file_offset_to_vaddr(
			 m.obj, pc - m.start + m.file_offset - (is_return ? 1 : 0), &vaddr)) {
		if (defer && r->defer.py && in_loop(r->defer.py, &m, pc, is_return, vaddr)) {
			objtally__note(r->objs, m.obj, 1);
			return LOC_DEFERRED;
		}
		n = symcache__lookup(r->syms, m.obj, vaddr, frames, MAX_INLINE);
		if (n < 0)
			n = 0;
	}
	if (!n)
		r->stats.frames_unsymbolized++;
	/* A deferred frame named now was counted (as named) when it was deferred. */
	if (defer || !r->defer.py)
		objtally__note(r->objs, m.obj, n > 0);
	return intern_frames(p, mapping, pc, user_kind(frames, n), at, frames, n, r->short_names);
}

static uint32_t user_location(struct resolve *r, struct proc *proc, struct profile *p, uint64_t pc,
			      int is_return, const struct sp_vmas *vmas, int *pending)
{
	return user_location_as(r, proc, p, pc, is_return, vmas, pending, true);
}

/* Location @i of the current sample's user locations, named now if it was deferred. */
static uint32_t named_user_location(struct resolve *r, struct profile *p, const uint32_t *locs,
				    uint32_t i)
{
	if (locs[i] != LOC_DEFERRED)
		return locs[i];
	return user_location_as(r, r->defer.proc, p, r->pys->deferred_pc[i],
				r->pys->deferred_ret[i], r->defer.vmas, NULL, false);
}

/* Names every deferred location of @locs (@n) in place, dropping one that cannot be interned. */
static uint32_t name_deferred(struct resolve *r, struct profile *p, uint32_t *locs, uint32_t n)
{
	uint32_t out = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t loc = named_user_location(r, p, locs, i);

		if (loc)
			locs[out++] = loc;
	}
	return out;
}

/*
 * Whether location @loc is runtime.asyncPreempt: the Go runtime's signal handler makes the
 * interrupted goroutine "call" it at the interrupted PC (runtime/preempt.go), so the frame
 * below it is interrupted code, as a leaf is.
 */
static bool is_async_preempt(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_line *lines = profile__location_lines(p, loc);

	return l && l->kind == FRAME_GO && l->nlines &&
	       !strcmp(
		   profile__string(p, profile__function(p, lines[l->nlines - 1].function)->name),
		   "runtime.asyncPreempt");
}

/*
 * Whether @loc is a libgcc unwinder entry point that installs a handler's context itself
 * (unwind.inc: uw_install_context() in _Unwind_RaiseException, _Unwind_Resume,
 * _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind). Before it returns to the handler it copies
 * the handler frame's registers into its own frame's save slots, return address included
 * (uw_install_context_1()), so a walk taken then finds the handler's function as its caller,
 * with the frames between left out, and goes astray from there.
 */
static bool eh_installing(struct profile *p, uint32_t loc)
{
	static const char *const entries[] = {"_Unwind_RaiseException", "_Unwind_Resume",
					      "_Unwind_Resume_or_Rethrow", "_Unwind_ForcedUnwind"};
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_line *lines = profile__location_lines(p, loc);
	const char *name;

	if (!l || l->kind != FRAME_NATIVE || !l->nlines)
		return false;
	name = profile__string(p, profile__function(p, lines[l->nlines - 1].function)->system_name);
	if (!name || strncmp(name, "_Unwind_", 8)) /* every frame of every sample comes here */
		return false;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!strcmp(name, entries[i]))
			return true;
	return false;
}

/*
 * Whether @called, a function a call instruction names (a dynamic symbol's name, or a symbol's),
 * is the function @frame names (a symbol table's name): a symbol version ("@@GLIBC_2.34") is
 * not part of either, and the part GCC splits off a function (".cold") is the function.
 */
static bool same_function(const char *called, const char *frame)
{
	size_t n, m;

	if (!frame)
		return false;
	n = strcspn(called, "@");
	m = strcspn(frame, "@");
	if (m > n && !strncmp(frame + n, ".cold", 5))
		m = n; /* f.cold, f.cold.0 */
	return n == m && !strncmp(called, frame, n);
}

/*
 * Whether user PC @ra, the return address found for the caller of the frame at user PC
 * @callee_pc (location @callee), is refuted as a return from a call that led to that frame:
 * the instruction before it is a direct call (symcache__call_target()) of a function of the
 * same file that is neither the frame's function (by address: aliases such as C1/C2
 * constructors; or by name, its ".cold" part too) nor one that may leave itself by a jump, as
 * a tail call does (symcache__jumps_out()). With @entry (the frame is a libgcc entry, whose
 * callers call it by name), a call through a PLT entry or GOT slot naming another function
 * refutes it too. A call through a register, of a function nothing names, or code that cannot
 * be read refutes nothing: such a caller is kept, as any CFI-walked one.
 */
static bool caller_refuted(struct resolve *r, struct proc *proc, struct profile *p, uint32_t callee,
			   uint64_t callee_pc, uint64_t ra, const struct sp_vmas *vmas, bool entry)
{
	const struct profile_location *l = profile__location(p, callee);
	const struct profile_line *lines = profile__location_lines(p, callee);
	struct call_seen key = {0}, *e;
	struct proc_mapping m, cm;
	uint64_t vaddr, cvaddr, start;
	const char *name;

	if (!l || !l->nlines || proctab__mapping(r->procs, proc, ra, vmas, &m) || !m.obj ||
	    elf_object__file_offset_to_vaddr(m.obj, ra - m.start + m.file_offset, &vaddr))
		return false;
	key.key.obj = m.obj;
	key.key.vaddr = vaddr;
	HASH_FIND(hh, r->calls, &key.key, sizeof(key.key), e);
	if (!e) {
		if (r->ncalls >= CALLS_SEEN_MAX) {
			calls_clear(&r->calls);
			r->ncalls = 0;
		}
		e = calloc(1, sizeof(*e));
		if (!e)
			return false;
		e->key = key.key;
		e->got = symcache__call_target(r->syms, m.obj, vaddr, e->called, sizeof(e->called),
					       &e->target);
		e->jumps_out = -1;
		HASH_ADD(hh, r->calls, key, sizeof(e->key), e);
		r->ncalls++;
	}
	if (e->got != 1)
		return false;
	name = profile__string(p, profile__function(p, lines[l->nlines - 1].function)->system_name);
	if (name && same_function(e->called, name))
		return false;
	/* Through a PLT entry or GOT slot, to another file: no code of it here to look at. */
	if (!e->target)
		return entry;
	/* The frame's own function, under another name at the same address. */
	if (!proctab__mapping(r->procs, proc, callee_pc, vmas, &cm) && cm.obj == m.obj &&
	    !elf_object__file_offset_to_vaddr(m.obj, callee_pc - cm.start + cm.file_offset,
					      &cvaddr) &&
	    !symcache__function_start(r->syms, m.obj, cvaddr, &start) && start == e->target)
		return false;
	if (e->jumps_out < 0)
		e->jumps_out = symcache__jumps_out(r->syms, m.obj, e->target);
	return !e->jumps_out;
}

/* The marker standing for the caller a frame-pointer walk could not see (key: no mapping). */
static uint32_t missing_caller_location(struct profile *p, uint64_t pc)
{
	struct profile_function f = {0};
	struct profile_line line = {0};
	uint32_t loc = profile__find_location(p, 0, pc, FRAME_GO);

	if (loc)
		return loc;
	f.name = profile__intern_string(p, GO_MISSING_CALLER);
	f.system_name = f.name;
	line.function = profile__intern_function(p, &f);
	return line.function ? profile__intern_location(p, 0, pc, FRAME_GO, &line, 1) : 0;
}

uint32_t resolve__user(struct resolve *r, struct proc *proc, struct profile *p, const uint64_t *pcs,
		       uint32_t n, const struct sp_vmas *vmas, uint32_t sample_flags,
		       uint32_t *locs)
{
	uint32_t out = 0;

	vmas = proctab__note_vmas(r->procs, proc, vmas);
	r->defer.vmas = vmas;
	r->user_cut = 0;
	for (uint32_t i = 0, interrupted = 1, marked = 0, above_eh = 0, eh = 0; i < n; i++) {
		int pending = 0;
		uint32_t loc;

		/* A zero return address is where the frame-pointer chain ends. */
		if (!pcs[i])
			break;
		/*
		 * Above a libgcc entry that may be installing a handler, its frame's saved return
		 * address and registers may already be the handler's: a caller whose return
		 * address follows a call of another function is not the frame's (cut here).
		 */
		if (above_eh && out && locs[out - 1] != LOC_DEFERRED &&
		    caller_refuted(r, proc, p, locs[out - 1], pcs[i - 1] - (i > 1), pcs[i], vmas,
				   eh)) {
			r->user_cut = i;
			r->stats.eh_install_cut++;
			break;
		}
		/*
		 * The sampled PC, or the one runtime.asyncPreempt interrupted (its frame was
		 * injected as a call there), may be Go code without its frame yet, unless a CFI row
		 * took the walk from the leaf (then the file has CFI: every caller is exact).
		 */
		loc = user_location(r, proc, p, pcs[i], i > 0, vmas,
				    interrupted && !marked && !(sample_flags & SP_SAMPLE_LEAF_CFI)
					? &pending
					: NULL);
		if (loc == LOC_DEFERRED) {
			r->pys->deferred_pc[out] = pcs[i];
			r->pys->deferred_ret[out] = i > 0;
		}
		if (loc)
			locs[out++] = loc;
		interrupted = loc && loc != LOC_DEFERRED && is_async_preempt(p, loc);
		if (loc) /* eh: whether locs[out - 1] is such an entry */
			eh = loc != LOC_DEFERRED && eh_installing(p, loc);
		above_eh |= eh;
		/*
		 * Go code sampled before its function set up its frame, walked by frame pointers
		 * (stripped Go files have no CFI): the walk went on from the caller's saved frame,
		 * so the next PC is the caller's caller. Said where the caller is missing, instead
		 * of a wrong adjacency (once per stack: @locs has room for one). Hook for the Go
		 * unwinding step (pcsp in BPF): drop this once it walks such frames.
		 */
		if (pending && i + 1 < n && pcs[i + 1]) {
			loc = missing_caller_location(p, pcs[i]);
			if (loc)
				locs[out++] = loc;
			marked = 1;
			r->stats.go_callers_missing++;
		}
	}
	return out;
}

uint32_t resolve__kernel(struct resolve *r, struct profile *p, const uint64_t *pcs, uint32_t n,
			 uint32_t *locs)
{
	struct sym_frame frame = {0};
	uint32_t out = 0, loc;
	uint64_t off;

	for (uint32_t i = 0; i < n; i++) {
		enum profile_pc at = i > 0 ? PC_RETURN : PC_EXACT;

		loc = profile__find_code_location(p, 0, pcs[i], FRAME_KERNEL, at);
		if (!loc) {
			frame.function =
			    r->ksyms ? ksyms__lookup(r->ksyms, pcs[i] - (i > 0), &off) : NULL;
			frame.system_name = frame.function;
			if (!frame.function)
				r->stats.kernel_unsymbolized++;
			loc = intern_frames(p, 0, pcs[i], FRAME_KERNEL, at, &frame,
					    frame.function ? 1 : 0, 0);
		}
		if (loc)
			locs[out++] = loc;
	}
	return out;
}

/* --- CPython frames (runtime/python/) ----------------------------------------------------- */

/* Marker names of the Python stack's early ends (enum py_stop, bpf/python.h). */
#define PY_MARKER_NAME(n, d) [PY_STOP_##n] = "[python stack cut: " d "]",
static const char *const py_marker_names[PY_STOP_COUNT] = {PY_STOPS(PY_MARKER_NAME)};
#undef PY_MARKER_NAME
#define PY_UNPLACED_NAME "[python frames not placed: native stack only]"
#define PY_UNNAMED_NAME "[python frame not named]"
/* Marker addresses: apart from the stack-end reasons (profile/stackend.h) of the same kind. */
#define PY_MARKER_BASE 0x10000u

static uint32_t named_location(struct profile *p, uint64_t address, enum frame_kind kind,
			       const char *name)
{
	struct profile_function fn = {0};
	struct profile_line line = {0};
	uint32_t loc = profile__find_location(p, 0, address, kind);

	if (loc)
		return loc;
	fn.name = fn.system_name = profile__intern_string(p, name);
	line.function = fn.name ? profile__intern_function(p, &fn) : 0;
	return line.function ? profile__intern_location(p, 0, address, kind, &line, 1) : 0;
}

/* The marker of pymerge item index @mark: a py_stop value or PYMERGE_MARK_UNPLACED. */
static uint32_t py_marker_location(struct profile *p, uint32_t mark)
{
	const char *name = mark < PY_STOP_COUNT ? py_marker_names[mark] : NULL;

	if (mark == PYMERGE_MARK_UNPLACED)
		name = PY_UNPLACED_NAME;
	if (!name)
		return 0;
	return named_location(p, PY_MARKER_BASE + mark, FRAME_ABORT, name);
}

/*
 * The module a file holds, as Python names it without its package: "pkg/mod.py" -> "mod",
 * "pkg/__init__.py" -> "pkg", "<frozen importlib._bootstrap>" -> "importlib._bootstrap"; ""
 * when the file says nothing ("<string>", "<stdin>").
 */
static void py_module(const char *file, char *out, size_t size)
{
	const char *base, *end;
	size_t n;

	out[0] = '\0';
	if (!file || !size)
		return;
	if (!strncmp(file, "<frozen ", 8)) {
		base = file + 8;
		end = strchr(base, '>');
	} else if (file[0] == '<') {
		return;
	} else {
		base = strrchr(file, '/');
		base = base ? base + 1 : file;
		end = strrchr(base, '.');
		if (!end || (strcmp(end, ".py") && strcmp(end, ".pyw")))
			return;
		if (!strcmp(base, "__init__.py") && base - file >= 2) {
			/* The package: the directory's name. */
			end = base - 1;
			for (base = end; base > file && base[-1] != '/'; base--)
				;
		}
	}
	n = end ? (size_t)(end - base) : strlen(base);
	if (n >= size)
		n = size - 1;
	memcpy(out, base, n);
	out[n] = '\0';
}

/*
 * The location of Python frame @f of process @py: function "module.qualname" (system name the
 * qualified name as the code object has it), its file and first line; the line executing.
 * Keyed by (line, function): equal frames of any process share it. A frame that cannot be
 * named is one placeholder location, never a guess.
 */
static uint32_t py_location(struct resolve *r, struct pyproc *py, struct profile *p,
			    const struct py_frame *f)
{
	const struct pycode_info *ci;
	struct profile_function fn = {0};
	struct profile_line line = {0};
	char module[256], name[1024];
	int ln;

	if (pyproc__code(py, f->code, &ci)) {
		r->stats.py.frames_unnamed++;
		return named_location(p, 0, FRAME_CPYTHON, PY_UNNAMED_NAME);
	}
	/* Freed and its address reused between the sample and this read: not that frame's name. */
	if (!pycode__fingerprint_matches(ci, f->flags >> PY_FRAME_FP_SHIFT & PY_FRAME_FP_MASK)) {
		r->stats.py.frames_unnamed++;
		r->stats.py.frames_stale++;
		return named_location(p, 0, FRAME_CPYTHON, PY_UNNAMED_NAME);
	}
	ln = pyproc__line(py, f->code, f->offset);
	py_module(ci->filename, module, sizeof(module));
	snprintf(name, sizeof(name), "%s%s%s", module, module[0] ? "." : "", ci->qualname);
	fn.name = profile__intern_string(p, name);
	fn.system_name = profile__intern_string(p, ci->qualname);
	fn.filename = profile__intern_string(p, ci->filename);
	line.function = profile__intern_function(p, &fn);
	line.line = ln > 0 ? ln : 0;
	if (!line.function)
		return 0;
	r->stats.py.frames_named++;
	return profile__intern_location_version(p, 0, (uint64_t)line.line, FRAME_CPYTHON,
						line.function, &line, 1);
}

/* Whether the merged stack @items (@n) places Python frames. */
static bool placed_any(const struct pymerge_item *items, int n)
{
	for (int i = 0; i < n; i++)
		if (items[i].kind == PYMERGE_PYTHON)
			return true;
	return false;
}

/* Whether location @loc is a native frame of the interpreter loop (_PyEval_EvalFrameDefault),
 * LOC_DEFERRED included (resolve__user() defers only those). */
static bool is_loop_location(struct profile *p, uint32_t loc)
{
	const struct profile_location *l;
	const struct profile_line *lines;
	const struct profile_function *fn;

	if (loc == LOC_DEFERRED)
		return true;
	l = profile__location(p, loc);
	if (!l || l->kind != FRAME_NATIVE || !l->nlines)
		return false;
	lines = profile__location_lines(p, loc);
	/* The physical function: the last line (the ones before it were inlined into it). */
	fn = profile__function(p, lines[l->nlines - 1].function);
	return fn && pymerge__is_loop_symbol(profile__string(p, fn->system_name));
}

/*
 * Whether location @loc is a CPython perf trampoline (python -X perf), named from the perf map
 * CPython writes ("py::qualname:file", JIT code): the Python frame placed beside it says the same.
 */
static bool is_py_trampoline(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_function *fn;

	if (!l || !frame_kind__is_jit(l->kind) || l->nlines != 1)
		return false;
	fn = profile__function(p, profile__location_lines(p, loc)[0].function);
	return fn && !strncmp(profile__string(p, fn->name), "py::", 4);
}

/*
 * Replaces, in the @n user locations @locs (leaf first, room for @cap) of sample @s, each
 * interpreter-loop frame by the Python frames it ran (runtime/python/pymerge.h). Returns the new
 * number of locations; @n unchanged when the sample has no Python frames to place. Locations
 * deferred by resolve__user() (LOC_DEFERRED) are loop frames: those the merge keeps are named
 * here, the others never are.
 */
static uint32_t py_merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			 uint32_t uu, uint32_t *locs, uint32_t n, uint32_t cap)
{
	uint32_t npy = s->py_len, i, out = 0, room;
	struct py_scratch *x = r->pys;
	bool placed = false, cut = false, unplaced = false, hide;
	struct pyproc *py;
	int m;

	/* Deferred frames only when the merge is to run (defer_loop()); named on every way out. */
	if (!s->py_stop || n > MAX_USER_LOCS)
		return name_deferred(r, p, locs, n);
	if (!npy && (s->py_stop == PY_STOP_END || s->py_stop == PY_STOP_NO_TSTATE)) {
		/*
		 * No Python frame: a thread that runs no Python now, unless its native stack is in
		 * the interpreter loop. Then its frames were not found (its thread state missed
		 * while the list changed, or a loop call not yet linked): the merge below marks the
		 * stack not placed instead of showing loop frames as a whole stack.
		 */
		for (i = 0; i < n; i++)
			if (is_loop_location(p, locs[i]))
				break;
		if (i == n)
			return name_deferred(r, p, locs, n);
	}
	py = pytab__find(r->python, s->pid, s->pstart_boot_ns);
	if (!py) {
		r->stats.py.no_process++;
		return name_deferred(r, p, locs, n);
	}
	if (!x) {
		x = r->pys = calloc(1, sizeof(*x));
		if (!x)
			return n; /* nothing was deferred: that needs the scratch */
	}
	room = uu < SP_MAX_USTACK ? (SP_MAX_USTACK - uu) / 2 : 0;
	if (npy > room)
		npy = room;
	if (npy > MAX_PY_FRAMES)
		npy = MAX_PY_FRAMES;
	for (i = 0; i < npy; i++)
		memcpy(&x->py[i], &s->ustack[uu + 2 * i], sizeof(x->py[i]));
	for (i = 0; i < n; i++) {
		x->native[i] = locs[i];
		x->is_loop[i] = is_loop_location(p, locs[i]);
	}
	m = pymerge__stack(x->is_loop, n, x->py, npy, s->py_stop,
			   s->ustack_end != SP_USTACK_COMPLETE || r->user_cut, x->items,
			   sizeof(x->items) / sizeof(x->items[0]));
	if (m < 0)
		return name_deferred(r, p, locs, n);
	hide = placed_any(x->items, m);
	for (i = 0; i < (uint32_t)m; i++) {
		const struct pymerge_item *it = &x->items[i];
		uint32_t loc = 0;

		if (it->kind == PYMERGE_NATIVE) {
			loc = named_user_location(r, p, x->native, it->index);
			/* -X perf trampolines: hidden where the Python frames are placed. */
			if (hide && is_py_trampoline(p, loc))
				continue;
		} else if (it->kind == PYMERGE_PYTHON) {
			loc = py_location(r, py, p, &x->py[it->index]);
			placed = true;
		} else if (it->kind == PYMERGE_MARKER) {
			loc = py_marker_location(p, it->index);
			if (it->index == PYMERGE_MARK_UNPLACED)
				unplaced = true;
			else
				cut = true;
		}
		if (loc && out < cap)
			locs[out++] = loc;
	}
	if (placed)
		r->stats.py.merged++;
	if (placed && cut)
		r->stats.py.cut++;
	if (unplaced)
		r->stats.py.unplaced++;
	else if (!placed)
		r->stats.py.dropped++;
	return out;
}

/* --- V8 frames (runtime/v8/) -------------------------------------------------------------- */

#define V8_UNNAMED_NAME "[javascript frame not named]"

/*
 * The location of a V8 frame: function (its name, file and first line), keyed by (line,
 * function) as CPython frames are. 0 when it cannot be named (counted): the caller keeps the
 * native frame.
 */
static uint32_t v8_location(struct resolve *r, struct v8proc *v8, struct profile *p,
			    const struct v8_frame *f)
{
	const struct v8fn_info *fi;
	struct profile_function fn = {0};
	struct profile_line line = {0};

	if (v8proc__function(v8, f->sfi, f->fingerprint, &fi)) {
		r->stats.v8.frames_unnamed++;
		return 0;
	}
	fn.name = fn.system_name = profile__intern_string(p, fi->name);
	fn.filename = profile__intern_string(p, fi->file);
	line.function = profile__intern_function(p, &fn);
	line.line = fi->line > 0 ? fi->line : 0;
	if (!line.function)
		return 0;
	r->stats.v8.frames_named++;
	return profile__intern_location_version(p, 0, (uint64_t)line.line, FRAME_V8JS,
						line.function, &line, 1);
}

/*
 * Whether native location @loc is a frame whose place a JavaScript function takes: JIT code (V8's
 * compiled code, named from a perf map or not), or V8's interpreter in the node executable (the
 * entry trampoline and the bytecode handlers, "Builtins_*Handler", which run inside the
 * interpreted function's frame).
 */
static bool v8_replaceable(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_function *fn;
	const char *name;
	size_t n;

	if (!l)
		return false;
	if (frame_kind__is_jit(l->kind))
		return true;
	if (l->kind != FRAME_NATIVE || !l->nlines)
		return false;
	fn = profile__function(p, profile__location_lines(p, loc)[l->nlines - 1].function);
	name = fn ? profile__string(p, fn->system_name) : NULL;
	if (!name || strncmp(name, "Builtins_", 9))
		return false;
	n = strlen(name);
	return !strncmp(name, "Builtins_Interpreter", 20) ||
	       (n > 16 && !strcmp(name + n - 7, "Handler"));
}

/*
 * Cross-check with V8's own perf map (node --perf-basic-prof): when the JIT location @loc that a
 * JavaScript frame replaces was named from it ("JS:*name file:line:col", the tier marks ~ ^ * + '
 * before the name; "LazyCompile:" and "Function:" in older nodes), counts whether its function
 * name is @name.
 */
static void v8_cross_check(struct resolve *r, struct profile *p, uint32_t loc, uint32_t js)
{
	const struct profile_location *l = profile__location(p, loc),
				      *lj = profile__location(p, js);
	const struct profile_function *fn, *fj;
	const char *perf, *name, *colon;
	size_t n;

	if (!l || !lj || !frame_kind__is_jit(l->kind) || l->nlines != 1 || lj->nlines != 1)
		return;
	fn = profile__function(p, profile__location_lines(p, loc)[0].function);
	fj = profile__function(p, profile__location_lines(p, js)[0].function);
	perf = fn ? profile__string(p, fn->name) : NULL;
	name = fj ? profile__string(p, fj->name) : NULL;
	if (!perf || !name || strncmp(perf, "JS:", 3) || !(colon = strchr(perf, ':')))
		return;
	perf = colon + 1;
	perf += strspn(perf, "~^*+'");
	n = strcspn(perf, " ");
	if (!n) /* an anonymous function: the map says nothing to compare */
		return;
	if (strlen(name) == n && !strncmp(perf, name, n))
		r->stats.v8.perfmap_agree++;
	else
		r->stats.v8.perfmap_disagree++;
}

/*
 * Puts the V8 frames of sample @s (bpf/v8.h, after slot @first of ustack) in the @n native user
 * locations @locs (leaf first, one per ustack PC; room for @cap): a JavaScript frame takes the
 * place of its JIT or interpreter frame, and follows any other native frame it was found at (a
 * builtin, or a leaf that had not set up its frame: V8_FRAME_CALLER). A frame that cannot be
 * named leaves the native one as it is. Returns the new number of locations.
 */
static uint32_t v8_merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			 uint32_t first, uint32_t *locs, uint32_t n, uint32_t cap)
{
	uint32_t nv = s->v8_len, i, j = 0, out = 0;
	struct v8_frame f[V8_MAX_FRAMES];
	struct v8proc *v8;

	if (nv > V8_MAX_FRAMES)
		nv = V8_MAX_FRAMES;
	if (first + 3 * nv > SP_MAX_USTACK)
		return n;
	v8 = v8tab__find(r->v8, s->pid, s->pstart_boot_ns);
	if (!v8) {
		r->stats.v8.no_process++;
		return n;
	}
	if (!r->v8locs) {
		r->v8locs = calloc(RESOLVE_MAX_LOCATIONS, sizeof(*r->v8locs));
		if (!r->v8locs)
			return n;
	}
	memcpy(f, &s->ustack[first], nv * sizeof(f[0]));
	for (i = 0; i < n; i++) {
		uint32_t js = 0;
		bool after = false;

		/* Records come leaf first, at most one per native frame. */
		while (j < nv && f[j].index < i)
			j++;
		if (j < nv && f[j].index == i) {
			js = v8_location(r, v8, p, &f[j]);
			after = (f[j].flags & V8_FRAME_CALLER) || !v8_replaceable(p, locs[i]);
			j++;
		}
		if (js && !after)
			v8_cross_check(r, p, locs[i], js);
		if (!js || after) {
			if (out < RESOLVE_MAX_LOCATIONS)
				r->v8locs[out++] = locs[i];
		}
		if (js && out < RESOLVE_MAX_LOCATIONS)
			r->v8locs[out++] = js;
	}
	if (out > cap)
		out = cap;
	memcpy(locs, r->v8locs, out * sizeof(*locs));
	r->stats.v8.merged++;
	return out;
}

/*
 * Whether sample @s of @proc (@uu user PCs) will go through py_merge() with Python frames to
 * place: then r->defer names its interpreter, and resolve__user() leaves the interpreter loop's
 * PCs unnamed (LOC_DEFERRED) until the merge says which stay. The loop's leaf PC is a new address
 * at almost every sample of a busy interpreter: naming it (its DWARF inline chain and line) was
 * most of the agent's symbol work on a host of Python processes, for a frame the Python frames
 * replace.
 */
static void defer_loop(struct resolve *r, struct proc *proc, const struct sp_sample *s, uint32_t uu)
{
	r->defer.py = NULL;
	if (!r->python || !s->py_stop || !s->py_len || uu + 1 > MAX_USER_LOCS)
		return;
	if (!r->pys && !(r->pys = calloc(1, sizeof(*r->pys))))
		return;
	r->defer.py = pytab__find(r->python, s->pid, s->pstart_boot_ns);
	r->defer.proc = proc;
}

uint32_t resolve__sample(struct resolve *r, struct profile *p, const struct sp_sample *s,
			 uint32_t *locs)
{
	uint32_t n = 0, ku = s->kstack_len, uu = s->ustack_len;
	struct proc *proc = NULL;

	r->sample_boot_ns = s->time_boot_ns;
	proctab__sample_time(r->procs, s->time_boot_ns);
	if (ku > SP_MAX_KSTACK)
		ku = SP_MAX_KSTACK;
	if (uu > SP_MAX_USTACK)
		uu = SP_MAX_USTACK;
	if (!(s->flags & SP_SAMPLE_KERNEL_THREAD))
		proc = proctab__get(r->procs, s->pid, s->pstart_boot_ns);
	n += resolve__kernel(r, p, (const uint64_t *)s->kstack, ku, locs);
	/* A node process V8's own structures name: its JIT misses are no reason for a hint. */
	if (proc && r->v8 && proc__jit(proc) && v8tab__find(r->v8, s->pid, s->pstart_boot_ns))
		jitproc__runtime_names(proc__jit(proc));
	if (proc) {
		uint32_t marker, nu;

		defer_loop(r, proc, s, uu);
		nu = resolve__user(r, proc, p, (const uint64_t *)s->ustack, uu, &s->vmas, s->flags,
				   locs + n);

		/* Python frames in place of the interpreter loop's (runtime/python/). */
		if (r->python && s->py_stop)
			nu = py_merge(r, p, s, uu, locs + n, nu, RESOLVE_MAX_LOCATIONS - 1 - n);
		/* JavaScript frames in place of, or after, V8's native ones (runtime/v8/): placed
		 * by native frame index, so only while each PC gave one location. */
		else if (r->v8 && s->v8_len && nu == uu)
			nu = v8_merge(r, p, s, uu + 2u * s->py_len, locs + n, nu,
				      RESOLVE_MAX_LOCATIONS - 1 - n);
		else if (s->v8_len)
			r->stats.v8.not_placed++;
		r->defer.py = NULL;
		n += nu;
		/* A stack that does not end at an outermost frame says why (profile/stackend.h). */
		marker = stackend__location(p, r->user_cut ? SP_USTACK_BAD_RA : s->ustack_end);
		if (marker)
			locs[n++] = marker;
	} else if (s->ustack_end != SP_USTACK_COMPLETE || !(s->flags & SP_SAMPLE_KERNEL_THREAD)) {
		/*
		 * No user address space: a kernel thread (complete), or a thread exiting (marked).
		 * Or a user sample whose process the table could not hold (no memory): its user
		 * frames are not shown, and the marker says the stack is not whole.
		 */
		uint32_t marker = stackend__location(
		    p, s->ustack_end != SP_USTACK_COMPLETE ? s->ustack_end : SP_USTACK_UNREADABLE);

		if (marker)
			locs[n++] = marker;
	}
	r->sample_boot_ns = UINT64_MAX;
	proctab__sample_time(r->procs, 0);
	return n;
}

/*
 * The lines naming the code of @obj at file offset @off (@at: a return address is named at the
 * call before it) into @lines (MAX_INLINE); their number, 0 when unnamed or unreadable.
 */
static int name_code(struct resolve *r, struct profile *p, struct elf_object *obj, uint64_t off,
		     enum profile_pc at, struct profile_line *lines)
{
	struct sym_frame frames[MAX_INLINE];
	uint64_t vaddr;
	int n;

	if (elf_object__file_offset_to_vaddr(obj, off - (at == PC_RETURN), &vaddr))
		return 0;
	n = symcache__lookup(r->syms, obj, vaddr, frames, MAX_INLINE);
	return n > 0 ? frames_to_lines(p, frames, n, lines, r->short_names) : 0;
}

int resolve__name_again(struct resolve *r, struct profile *p)
{
	uint32_t nloc = profile__nlocations(p), i;
	struct profile_line lines[MAX_INLINE], other[MAX_INLINE];
	int named = 0, n;

	for (i = 1; i < nloc; i++) {
		const struct profile_location *loc = profile__location(p, i);
		const struct profile_mapping *m;
		struct elf_object *obj;
		const char *id;
		uint64_t off;

		if (loc->kind != FRAME_NATIVE || loc->nlines || !loc->mapping)
			continue;
		m = profile__mapping(p, loc->mapping);
		id = m->build_id ? profile__string(p, m->build_id) : NULL;
		obj = id && *id ? symcache__find_build_id(r->syms, id) : NULL;
		if (!obj || loc->address < m->memory_start)
			continue;
		off = loc->address - m->memory_start + m->file_offset;
		n = name_code(r, p, obj, off,
			      loc->roles & PROFILE_ROLE(PC_RETURN) ? PC_RETURN : PC_EXACT, lines);
		/* One location met both as a leaf and as a return address: only if both agree. */
		if (n > 0 && loc->roles == (PROFILE_ROLE(PC_RETURN) | PROFILE_ROLE(PC_EXACT)) &&
		    !profile_lines_equal(lines, (uint32_t)n, other,
					 (uint32_t)name_code(r, p, obj, off, PC_EXACT, other)))
			continue;
		if (n > 0 && !profile__set_location_lines(p, i, lines, (uint32_t)n)) {
			named++;
			objtally__mark_named(r->objs, obj);
			if (r->stats.frames_unsymbolized)
				r->stats.frames_unsymbolized--;
		}
	}
	return named;
}

void resolve__profile_reset(struct resolve *r)
{
	r->gen++;
}

const struct resolve_stats *resolve__stats(const struct resolve *r)
{
	return &r->stats;
}

const struct objtally *resolve__objects(const struct resolve *r)
{
	return r->objs;
}
