/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Callers above a libgcc unwinder entry that may be installing an exception handler: whether
 * the return address found for a frame's caller is proven wrong by the code before it (the
 * stack is then cut there, never linked to a caller that is not the frame's).
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "symbols/symbolize.h"

/* What symcache__call_target() said of one return address (resolve_callers__refuted()). */
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

void resolve_callers__clear(struct resolve *r)
{
	struct call_seen *e, *tmp;

	HASH_ITER (hh, r->calls, e, tmp) {
		HASH_DEL(r->calls, e);
		free(e);
	}
	r->ncalls = 0;
}

/*
 * Whether @loc is a libgcc unwinder entry point that installs a handler's context itself
 * (unwind.inc: uw_install_context() in _Unwind_RaiseException, _Unwind_Resume,
 * _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind). Before it returns to the handler it copies
 * the handler frame's registers into its own frame's save slots, return address included
 * (uw_install_context_1()), so a walk taken then finds the handler's function as its caller,
 * with the frames between left out, and goes astray from there.
 */
bool resolve_callers__eh_installing(struct profile *p, uint32_t loc)
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

/* What symcache__call_target() says of the instruction before @vaddr of @obj, asked once. */
static struct call_seen *call_seen(struct resolve *r, struct elf_object *obj, uint64_t vaddr)
{
	struct call_seen key = {0}, *e;

	key.key.obj = obj;
	key.key.vaddr = vaddr;
	HASH_FIND(hh, r->calls, &key.key, sizeof(key.key), e);
	if (e)
		return e;
	if (r->ncalls >= CALLS_SEEN_MAX)
		resolve_callers__clear(r);
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = key.key;
	e->got =
	    symcache__call_target(r->syms, obj, vaddr, e->called, sizeof(e->called), &e->target);
	e->jumps_out = -1;
	HASH_ADD(hh, r->calls, key, sizeof(e->key), e);
	r->ncalls++;
	return e;
}

/*
 * The mapping holding @callee_pc, the call site of frame @callee_f: that frame's own when it
 * holds it (always, but where a return address is the first byte of a mapping), else looked up
 * (another PC). Returns 0 or proctab__mapping()'s error; *@looked_up says whether it looked up.
 */
static int callee_mapping(struct resolve *r, struct proc *proc, const struct frame_ctx *callee_f,
			  uint64_t callee_pc, const struct sp_vmas *vmas, struct proc_mapping *out,
			  bool *looked_up)
{
	if (callee_f->rt != FRAME_RT_UNMAPPED && callee_pc >= callee_f->m.start &&
	    callee_pc < callee_f->m.end) {
		*out = callee_f->m;
		return 0;
	}
	*looked_up = true;
	return proctab__mapping(r->procs, proc, callee_pc, vmas, out);
}

/*
 * Whether @caller (its PC a return address), the caller found for the frame @callee_f at
 * @callee_pc (location @callee), is refuted as a return from a call that led to that frame:
 * the instruction before it is a direct call (symcache__call_target()) of a function of the
 * same file that is neither the frame's function (by address: aliases such as C1/C2
 * constructors; or by name, its ".cold" part too) nor one that may leave itself by a jump, as
 * a tail call does (symcache__jumps_out()). With @entry (the frame is a libgcc entry, whose
 * callers call it by name), a call through a PLT entry or GOT slot naming another function
 * refutes it too. A call through a register, of a function nothing names, or code that cannot
 * be read refutes nothing: such a caller is kept, as any CFI-walked one.
 */
bool resolve_callers__refuted(struct resolve *r, struct proc *proc, struct profile *p,
			      uint32_t callee, const struct frame_ctx *callee_f, uint64_t callee_pc,
			      struct frame_ctx *caller, const struct sp_vmas *vmas, bool entry)
{
	const struct profile_location *l = profile__location(p, callee);
	const struct profile_line *lines = profile__location_lines(p, callee);
	struct elf_object *obj = caller->m.obj;
	struct proc_mapping cm;
	uint64_t vaddr, cvaddr, start;
	bool looked_up = false, own;
	struct call_seen *e;
	const char *name;

	if (!l || !l->nlines || caller->rt == FRAME_RT_UNMAPPED || !obj ||
	    elf_object__file_offset_to_vaddr(
		obj, caller->pc - caller->m.start + caller->m.file_offset, &vaddr))
		return false;
	e = call_seen(r, obj, vaddr);
	if (!e || e->got != 1)
		return false;
	name = profile__string(p, profile__function(p, lines[l->nlines - 1].function)->system_name);
	if (name && same_function(e->called, name))
		return false;
	/* Through a PLT entry or GOT slot, to another file: no code of it here to look at. */
	if (!e->target)
		return entry;
	/* The frame's own function, under another name at the same address. */
	own = !callee_mapping(r, proc, callee_f, callee_pc, vmas, &cm, &looked_up) &&
	      cm.obj == obj &&
	      !elf_object__file_offset_to_vaddr(obj, callee_pc - cm.start + cm.file_offset,
						&cvaddr) &&
	      !symcache__function_start(r->syms, obj, cvaddr, &start) && start == e->target;
	/* A lookup of another PC may have read the maps again, freeing what @caller borrows. */
	if (looked_up)
		resolve_frame__find(r, proc, caller->pc, caller->at, vmas, caller);
	if (own)
		return false;
	if (e->jumps_out < 0)
		e->jumps_out = symcache__jumps_out(r->syms, obj, e->target);
	return !e->jumps_out;
}
