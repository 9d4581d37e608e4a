/* SPDX-License-Identifier: Apache-2.0 */
/*
 * User frames: each PC of a user stack is found once (resolve_frame__find(): mapping, object,
 * runtime) and that frame is handed to every step that checks or names it (the caller check
 * above a libgcc entry, the interpreter-loop deferral, the Go pending-frame check, the naming).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "resolve/objtally.h"
#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "runtime/jit/jitprocs.h"
#include "symbols/symbolize.h"

void resolve_frame__find(struct resolve *r, struct proc *proc, uint64_t pc, enum profile_pc at,
			 const struct sp_vmas *vmas, struct frame_ctx *f)
{
	f->pc = pc;
	f->at = at;
	f->mapping_known = false;
	f->mapping = 0;
	f->pid = proc__pid(proc);
	f->pstart_boot_ns = proc__start_boot_ns(proc);
	f->err = proctab__mapping(r->procs, proc, pc, vmas, &f->m);
	if (f->err) {
		f->rt = FRAME_RT_UNMAPPED;
	} else if (f->m.jit && r->jit && jitprocs__find(r->jit, f->pid, f->pstart_boot_ns)) {
		f->rt = FRAME_RT_JIT;
	} else {
		f->rt = FRAME_RT_FILE;
	}
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

uint32_t resolve_frame__model_mapping(struct resolve *r, struct profile *p, struct frame_ctx *f)
{
	if (!f->mapping_known) {
		f->mapping = model_mapping(r, p, &f->m);
		f->mapping_known = true;
	}
	return f->mapping;
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

/*
 * Frame @f in JIT code (anonymous executable memory): named from the process's perf map or
 * jitdump (runtime/jit/jitproc.h), else an address of its runtime's kind (counted there). The
 * location is keyed by the code range too (profile__intern_location_version()), so an address
 * that later holds other code never keeps the old name.
 */
static uint32_t jit_location(struct resolve *r, struct profile *p, const struct frame_ctx *f)
{
	struct jitproc *jit = r->jit ? jitprocs__find(r->jit, f->pid, f->pstart_boot_ns) : NULL;
	enum frame_kind kind = jit ? jitproc__kind(jit) : FRAME_JIT;
	struct profile_line line;
	struct profile_function fn;
	struct jittab_sym s;

	if (!jit ||
	    jitproc__lookup(jit, f->pc - (f->at == PC_RETURN), r->sample_boot_ns, &s, stderr))
		return profile__intern_location(p, f->mapping, f->pc, kind, NULL, 0);
	fn.name = profile__intern_string(p, s.name);
	fn.system_name = fn.name;
	fn.filename = profile__intern_string(p, s.file);
	line.function = profile__intern_function(p, &fn);
	line.line = s.line;
	return profile__intern_location_version(p, f->mapping, f->pc, kind, s.id, &line, 1);
}

uint32_t resolve_frame__name(struct resolve *r, struct profile *p, struct frame_ctx *f,
			     int *pending, bool defer)
{
	int is_return = f->at == PC_RETURN;
	struct sym_frame frames[MAX_INLINE];
	const struct proc_mapping *m = &f->m;
	uint64_t vaddr;
	uint32_t loc;
	int n = 0;

	if (f->rt == FRAME_RT_UNMAPPED) {
		if (f->err == -ENOKEY)
			r->stats.frames_fileid_unknown++;
		else
			r->stats.frames_unmapped++;
		return profile__intern_location(p, 0, f->pc, FRAME_NATIVE, NULL, 0);
	}
	if (m->from_fileid)
		r->stats.frames_fileid++;
	resolve_frame__model_mapping(r, p, f);
	if (f->rt == FRAME_RT_JIT)
		return jit_location(r, p, f);
	if (pending && m->obj &&
	    !elf_object__file_offset_to_vaddr(m->obj, f->pc - m->start + m->file_offset, &vaddr))
		*pending = symcache__go_frame_pending(r->syms, m->obj, vaddr);
	/*
	 * An interpreter-loop frame waits for the merge by its address, before the location an
	 * earlier sample of that PC interned: the merge counts loop frames as deferred or by
	 * their name, and a part of the loop no symbol names (found from the CFI: pyelf.h) has
	 * none. Counted by name, such a return address (a location interned by a sample without
	 * Python frames) was no loop frame, and a group of Python frames went to the loop frame
	 * beside it.
	 */
	if (defer && r->defer_py && m->obj &&
	    !elf_object__file_offset_to_vaddr(m->obj, f->pc - m->start + m->file_offset - is_return,
					      &vaddr) &&
	    resolve_py__in_loop(r, f, vaddr)) {
		objtally__note(r->objs, m->obj, 1);
		return LOC_DEFERRED;
	}
	loc = find_user_location(p, f->mapping, f->pc, f->at);
	if (loc) {
		const struct profile_location *l = profile__location(p, loc);

		objtally__note(r->objs, m->obj, l && l->nlines);
		return loc;
	}
	if (m->obj && !elf_object__file_offset_to_vaddr(
			  m->obj, f->pc - m->start + m->file_offset - is_return, &vaddr)) {
		n = symcache__lookup(r->syms, m->obj, vaddr, frames, MAX_INLINE);
		if (n < 0)
			n = 0;
	}
	if (!n)
		r->stats.frames_unsymbolized++;
	/* A deferred frame named now was counted (as named) when it was deferred. */
	if (defer || !r->defer_py)
		objtally__note(r->objs, m->obj, n > 0);
	return resolve_names__intern_frames(p, f->mapping, f->pc, user_kind(frames, n), f->at,
					    frames, n, r->short_names);
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

/* Keeps deferred frame @f for the merge to name (its borrowed mapping fields cleared). */
static void keep_deferred(struct resolve *r, uint32_t out, const struct frame_ctx *f)
{
	struct frame_ctx *d = &r->pys->deferred[out];

	*d = *f;
	d->m.path = NULL;
	d->m.slot = NULL;
}

uint32_t resolve__user(struct resolve *r, struct proc *proc, struct profile *p, const uint64_t *pcs,
		       uint32_t n, const struct sp_vmas *vmas, uint32_t sample_flags,
		       uint32_t *locs)
{
	struct frame_ctx frames[2]; /* this PC's frame and the one below it (its callee) */
	struct fp_tally fpt = {0};
	uint32_t out = 0;

	vmas = proctab__note_vmas(r->procs, proc, vmas);
	r->user_cut = 0;
	r->fp_complete = false;
	for (uint32_t i = 0, interrupted = 1, marked = 0, above_eh = 0, eh = 0; i < n; i++) {
		struct frame_ctx *f = &frames[i & 1], *callee = &frames[(i + 1) & 1];
		int pending = 0;
		uint32_t loc;

		/* A zero return address is where the frame-pointer chain ends. */
		if (!pcs[i])
			break;
		resolve_frame__find(r, proc, pcs[i], i > 0 ? PC_RETURN : PC_EXACT, vmas, f);
		/*
		 * Above a libgcc entry that may be installing a handler, its frame's saved return
		 * address and registers may already be the handler's: a caller whose return
		 * address follows a call of another function is not the frame's (cut here).
		 */
		if (above_eh && out && locs[out - 1] != LOC_DEFERRED &&
		    resolve_callers__refuted(r, proc, p, locs[out - 1], callee,
					     pcs[i - 1] - (i > 1), f, vmas, eh)) {
			r->user_cut = i;
			r->cut_end = SP_USTACK_BAD_RA;
			r->stats.eh_install_cut++;
			break;
		}
		/*
		 * The sampled PC, or the one runtime.asyncPreempt interrupted (its frame was
		 * injected as a call there), may be Go code without its frame yet, unless a CFI row
		 * took the walk from the leaf (then the file has CFI: every caller is exact).
		 */
		loc = resolve_frame__name(
		    r, p, f,
		    interrupted && !marked && !(sample_flags & SP_SAMPLE_LEAF_CFI) ? &pending
										   : NULL,
		    true);
		if (loc == LOC_DEFERRED)
			keep_deferred(r, out, f);
		if (loc)
			locs[out++] = loc;
		interrupted = loc && loc != LOC_DEFERRED && is_async_preempt(p, loc);
		if (loc) /* eh: whether locs[out - 1] is such an entry */
			eh = loc != LOC_DEFERRED && resolve_callers__eh_installing(p, loc);
		above_eh |= eh;
		/*
		 * A frame-pointer step out of code without CFI that its function does not prove
		 * (resolve/fpproof.c): its caller may be its caller's caller. Cut above it.
		 */
		if (r->fp_steps &&
		    resolve_fp__check(r, p, f, loc, i == 0, i + 1 == n || !pcs[i + 1], &fpt)) {
			r->user_cut = i + 1;
			r->cut_end = SP_USTACK_NO_UNWIND_INFO;
			r->stats.fp_unproven_cut++;
			break;
		}
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
	/* Every frame-pointer step checked here, all proven, the last one at _start: complete. */
	if (r->fp_steps && !r->user_cut && fpt.root && fpt.steps == r->fp_steps &&
	    r->fp_steps < UINT8_MAX) {
		r->fp_complete = true;
		r->stats.fp_root_proven++;
	}
	return out;
}
