/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ruby frames (runtime/ruby/): the Ruby frames the BPF walk gave a sample (bpf/ruby.h), named
 * and put in place of the Ruby VM's own native frames: each vm_exec call (rb_vm_exec, and the
 * instruction loop vm_exec_core it calls, unnamed in a stripped libruby) runs the Ruby frames
 * from the innermost one down to the first entered from C (RUBY_FRAME_ENTRY:
 * VM_FRAME_FLAG_FINISH), as each call of CPython's loop runs its group, so the placing is
 * runtime/python/pymerge.h's, fed with the Ruby frames' entry marks. C methods' frames
 * (named from Ruby's symbol table) come before the native frames that run them; one whose name
 * is not proven is left out (counted), its native frames staying.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "runtime/python/pymerge.h"
#include "runtime/ruby/rubytab.h"

/* Marker names of the Ruby stack's early ends (enum ruby_stop, bpf/ruby.h). */
#define RUBY_MARKER_NAME(n, d) [RUBY_STOP_##n] = "[ruby stack cut: " d "]",
static const char *const ruby_marker_names[RUBY_STOP_COUNT] = {RUBY_STOPS(RUBY_MARKER_NAME)};
#undef RUBY_MARKER_NAME
#define RUBY_UNPLACED_NAME "[ruby frames not placed: native stack only]"
#define RUBY_UNNAMED_NAME "[ruby frame not named]"
/* Marker addresses: apart from the stack ends', CPython's (resolve/python.c) and PHP's. */
#define RUBY_MARKER_BASE 0x30000u

/* The physical function's name of native location @loc, or NULL (no symbol). */
static const char *native_name(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_line *lines;
	const struct profile_function *fn;

	if (!l || l->kind != FRAME_NATIVE || !l->nlines)
		return NULL;
	lines = profile__location_lines(p, loc);
	/* The physical function: the last line (the ones before it were inlined into it). */
	fn = profile__function(p, lines[l->nlines - 1].function);
	return fn ? profile__string(p, fn->system_name) : NULL;
}

/* Whether @name is the VM's vm_exec (rb_vm_exec, exported), whose frames Ruby frames replace. */
static bool is_vm_exec(const char *name)
{
	return name && (!strcmp(name, "rb_vm_exec") || !strcmp(name, "rb_vm_exec.cold"));
}

/*
 * Whether native location @loc, called by the rb_vm_exec frame @caller, is the VM's own code
 * run for that call: vm_exec_core (or the exception handling beside it), named so only with a
 * symbol table, else a PC of the same mapping without a name.
 */
static bool is_vm_inner(struct profile *p, uint32_t loc, uint32_t caller)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_location *c = profile__location(p, caller);
	const char *name;

	if (!l || !c || l->kind != FRAME_NATIVE || !l->mapping || l->mapping != c->mapping)
		return false;
	name = native_name(p, loc);
	return !name || !strncmp(name, "vm_exec_core", 12) ||
	       !strncmp(name, "vm_exec_handle_exception", 24);
}

static uint32_t named_location(struct profile *p, uint64_t address, const char *name,
			       enum frame_kind kind)
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

/* The marker of pymerge marker index @mark: a py_stop value (py_stop_of() mapped it) or
 * PYMERGE_MARK_UNPLACED; @stop: the sample's ruby_stop. */
static uint32_t ruby_marker_location(struct profile *p, uint32_t mark, uint32_t stop)
{
	const char *name = stop < RUBY_STOP_COUNT ? ruby_marker_names[stop] : NULL;

	if (mark == PYMERGE_MARK_UNPLACED) {
		name = RUBY_UNPLACED_NAME;
		stop = RUBY_STOP_COUNT;
	}
	if (!name)
		return 0;
	return named_location(p, RUBY_MARKER_BASE + stop, name, FRAME_ABORT);
}

/* The py_stop pymerge__stack() reads for ruby_stop @stop. */
static unsigned int py_stop_of(uint32_t stop)
{
	switch (stop) {
	case RUBY_STOP_END:
	case RUBY_STOP_IDLE:
	case RUBY_STOP_OTHER_THREAD:
		return PY_STOP_END;
	case RUBY_STOP_DEPTH:
		return PY_STOP_DEPTH;
	case RUBY_STOP_BAD_FRAME:
		return PY_STOP_BAD_CODE;
	default:
		return PY_STOP_READ_FAILED;
	}
}

/*
 * The location of Ruby frame record @w0, @w1: function the iseq's label ("method", "block in
 * method", "<main>"), its file and line. Keyed by (line, function): equal frames of any process
 * share it. A frame that cannot be named is one placeholder, never a guess.
 */
static uint32_t ruby_location(struct resolve *r, struct rubyproc *rp, struct profile *p,
			      uint64_t w0, uint64_t w1)
{
	struct profile_function fn = {0};
	struct profile_line line = {0};
	struct ruby_frame_name nm;

	if (rubyproc__name(rp, w0, w1, &nm)) {
		r->stats.ruby.frames_unnamed++;
		return named_location(p, 0, RUBY_UNNAMED_NAME, FRAME_RUBY);
	}
	fn.name = fn.system_name = profile__intern_string(p, nm.label);
	fn.filename = profile__intern_string(p, nm.path ? nm.path : "");
	line.function = profile__intern_function(p, &fn);
	line.line = nm.line;
	if (!line.function)
		return 0;
	r->stats.ruby.frames_named++;
	return profile__intern_location_version(p, 0, (uint64_t)line.line, FRAME_RUBY,
						line.function, &line, 1);
}

uint32_t resolve_ruby__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			     uint32_t first, uint32_t *locs, uint32_t n, uint32_t cap)
{
	struct ruby_scratch *x = r->rubys;
	uint32_t nrb = s->ruby_len, i, out = 0, nn = 0, nr = 0;
	bool placed = false, cut = false, unplaced = false;
	struct rubyproc *rp;
	int m;

	if (n > MAX_USER_LOCS || first + 2u * nrb > SP_MAX_USTACK)
		return n;
	rp = rubytab__find(r->ruby, s->pid, s->pstart_boot_ns);
	if (!rp) {
		r->stats.ruby.no_process++;
		return n;
	}
	if (!x) {
		x = r->rubys = calloc(1, sizeof(*x));
		if (!x)
			return n;
	}
	if (nrb > MAX_RUBY_FRAMES)
		nrb = MAX_RUBY_FRAMES;
	/* C methods' frames not named: left out (their native frames stay). */
	for (i = 0; i < nrb; i++) {
		uint64_t w0 = s->ustack[first + 2 * i];
		struct ruby_frame_name nm;

		if (((w0 >> RUBY_KIND_SHIFT) & RUBY_KIND_MASK) != RUBY_KIND_ISEQ &&
		    rubyproc__name(rp, w0, s->ustack[first + 2 * i + 1], &nm)) {
			r->stats.ruby.cfunc_frames++;
			continue;
		}
		x->rec[nr] = i;
		x->mark[nr].code = nr;
		x->mark[nr].offset = 0;
		x->mark[nr].flags = (w0 & RUBY_FRAME_ENTRY) ? PY_FRAME_ENTRY : 0;
		nr++;
	}
	/* The VM's frames: one per vm_exec call (rb_vm_exec), its inner loop's frame folded in. */
	for (i = 0; i < n; i++) {
		bool vm = is_vm_exec(native_name(p, locs[i]));

		if (!vm && i + 1 < n && is_vm_exec(native_name(p, locs[i + 1])) &&
		    is_vm_inner(p, locs[i], locs[i + 1])) {
			r->stats.ruby.vm_inner_folded++;
			continue;
		}
		x->native[nn] = locs[i];
		x->is_vm[nn] = vm;
		nn++;
	}
	m = pymerge__stack(x->is_vm, nn, x->mark, nr, py_stop_of(s->ruby_stop),
			   s->ustack_end != SP_USTACK_COMPLETE || r->user_cut, x->items,
			   sizeof(x->items) / sizeof(x->items[0]));
	if (m < 0)
		return n;
	for (i = 0; i < (uint32_t)m; i++) {
		const struct pymerge_item *it = &x->items[i];
		uint32_t loc = 0, rec;

		if (it->kind == PYMERGE_NATIVE) {
			loc = x->native[it->index];
		} else if (it->kind == PYMERGE_PYTHON) {
			rec = x->rec[it->index];
			loc = ruby_location(r, rp, p, s->ustack[first + 2 * rec],
					    s->ustack[first + 2 * rec + 1]);
			placed = true;
		} else if (it->kind == PYMERGE_MARKER) {
			loc = ruby_marker_location(p, it->index, s->ruby_stop);
			if (it->index == PYMERGE_MARK_UNPLACED)
				unplaced = true;
			else
				cut = true;
		}
		if (loc && out < cap)
			locs[out++] = loc;
	}
	if (placed)
		r->stats.ruby.merged++;
	if (placed && cut)
		r->stats.ruby.cut++;
	if (unplaced)
		r->stats.ruby.unplaced++;
	return out;
}
