// SPDX-License-Identifier: Apache-2.0
/*
 * fpproof: the frame-pointer steps a CFI walk took through files without CFI, checked against
 * the code they went through (docs/unwinding.md, "Truncation markers"). Nothing says RBP is a
 * frame pointer in such code: a function that did not set one up (or not yet, or no longer)
 * leaves its caller's RBP there, and the step reads its caller's caller. A step is proven when
 * the function holding the PC begins with PUSH %rbp; MOV %rsp,%rbp and the PC lies past that
 * prologue and before its epilogue (symcache__frame_pointer()); a stack whose steps are all
 * proven and whose walk ended at _start (RBP 0 there by the psABI) is complete.
 */
#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "symbols/symbolize.h"

bool resolve_fp__check(struct resolve *r, struct profile *p, const struct frame_ctx *f,
		       uint32_t loc, bool exact, bool last, struct fp_tally *t)
{
	const struct profile_location *l;
	enum sym_fp fp;
	uint64_t vaddr;

	/* JIT code and Go code have their own rules (jitproc, the Go caller marker). */
	if (!loc || loc == LOC_DEFERRED || f->rt != FRAME_RT_FILE || !f->m.obj)
		return false;
	l = profile__location(p, loc);
	if (!l || l->kind == FRAME_GO)
		return false;
	/*
	 * A file with CFI was walked by its rows, but where they leave a gap (_start of crt1.o,
	 * hand-written code): the last frame of a walk ended by a frame-pointer step is such a PC.
	 */
	if (!(last && r->fp_end) && symcache__has_cfi(f->m.obj))
		return false;
	if (elf_object__file_offset_to_vaddr(f->m.obj, f->pc - f->m.start + f->m.file_offset,
					     &vaddr))
		return false;
	fp = symcache__frame_pointer(r->syms, f->m.obj, exact ? vaddr : vaddr - 1, exact);
	t->steps++;
	t->root = last && fp == SYM_FP_ROOT;
	/* The last frame's step kept nothing: the walk's own reason stands (or _start ends it). */
	return !last && fp != SYM_FP_KEPT;
}
