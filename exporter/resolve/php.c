/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PHP frames (runtime/php/): the PHP frames the BPF walk gave a sample (bpf/php.h), named and put
 * in place of the Zend VM's own native frames (execute_ex): each execute_ex call runs the PHP
 * frames from the innermost one down to the first entered from C (PHP_FRAME_ENTRY), as each
 * call of CPython's loop runs its group, so the placing is runtime/python/pymerge.h's, fed
 * with the PHP frames' entry marks. Internal (C) functions the engine called appear as PHP
 * frames (their class::function) above the native frames that run them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "runtime/php/phptab.h"
#include "runtime/python/pymerge.h"

/* Marker names of the PHP stack's early ends (enum php_stop, bpf/php.h). */
#define PHP_MARKER_NAME(n, d) [PHP_STOP_##n] = "[php stack cut: " d "]",
static const char *const php_marker_names[PHP_STOP_COUNT] = {PHP_STOPS(PHP_MARKER_NAME)};
#undef PHP_MARKER_NAME
#define PHP_UNPLACED_NAME "[php frames not placed: native stack only]"
/* ... because no native frame lies in a known mapping: the process's maps were not read (it
 * exited before the agent read its first sample). */
#define PHP_UNMAPPED_NAME "[php frames not placed: process maps not read]"
#define PHP_UNNAMED_NAME "[php frame not named]"
/* Marker addresses: apart from the stack ends' and CPython's (resolve/python.c). */
#define PHP_MARKER_BASE 0x20000u

/* Whether @name is the Zend VM's executor, whose frames PHP frames replace: execute_ex (and a
 * compiler's split-off part of it). */
static bool is_vm_symbol(const char *name)
{
	static const char vm[] = "execute_ex";

	return name && !strncmp(name, vm, sizeof(vm) - 1) &&
	       (!name[sizeof(vm) - 1] || !strcmp(name + sizeof(vm) - 1, ".cold"));
}

static bool is_vm_location(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_line *lines;
	const struct profile_function *fn;

	if (!l || l->kind != FRAME_NATIVE || !l->nlines)
		return false;
	lines = profile__location_lines(p, loc);
	/* The physical function: the last line (the ones before it were inlined into it). */
	fn = profile__function(p, lines[l->nlines - 1].function);
	return fn && is_vm_symbol(profile__string(p, fn->system_name));
}

/*
 * Whether location @loc is code of opcache's JIT: unnamed machine code in its buffer, which
 * opcache maps from /dev/zero (shared memory) or anonymously. The tracing and function JITs run
 * their code in execute_ex's own stack frame (the hybrid VM's), so a JIT PC stands where that
 * execute_ex frame is; the native walk cannot step past it (no CFI), and stops there.
 */
static bool is_jit_location(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_mapping *m;
	const char *path;

	if (!l || (l->kind != FRAME_NATIVE && !frame_kind__is_jit(l->kind)))
		return false;
	if (l->kind == FRAME_NATIVE && l->nlines)
		return false;
	if (!l->mapping)
		return true;
	m = profile__mapping(p, l->mapping);
	path = m ? profile__string(p, m->filename) : NULL;
	return !path || !path[0] || !strncmp(path, "/dev/zero", 9) || !strncmp(path, "[anon", 5);
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

/* Whether none of the native frames @locs (@n) lies in a mapping the agent knows. */
static bool none_mapped(struct profile *p, const uint32_t *locs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_location *l = profile__location(p, locs[i]);

		if (l && l->kind == FRAME_NATIVE && l->mapping)
			return false;
	}
	return true;
}

/* The marker of pymerge marker index @mark: a py_stop value (php_stop_of() mapped it) or
 * PYMERGE_MARK_UNPLACED (@unmapped: no native frame in a known mapping); @stop: the sample's
 * php_stop. */
static uint32_t php_marker_location(struct profile *p, uint32_t mark, uint32_t stop, bool unmapped)
{
	const char *name = stop < PHP_STOP_COUNT ? php_marker_names[stop] : NULL;

	if (mark == PYMERGE_MARK_UNPLACED) {
		name = unmapped ? PHP_UNMAPPED_NAME : PHP_UNPLACED_NAME;
		stop = PHP_STOP_COUNT + unmapped;
	}
	if (!name)
		return 0;
	return named_location(p, PHP_MARKER_BASE + stop, name, FRAME_ABORT);
}

/* The py_stop pymerge__stack() reads for php_stop @stop. */
static unsigned int py_stop_of(uint32_t stop)
{
	switch (stop) {
	case PHP_STOP_END:
	case PHP_STOP_IDLE:
		return PY_STOP_END;
	case PHP_STOP_DEPTH:
		return PY_STOP_DEPTH;
	case PHP_STOP_BAD_FRAME:
		return PY_STOP_BAD_CODE;
	default:
		return PY_STOP_READ_FAILED;
	}
}

/*
 * The location of PHP frame record @w0, @w1: function "Class::function" (or "function"), its
 * file (none for an internal function) and line. Keyed by (line, function): equal frames of
 * any process share it. A frame that cannot be named is one placeholder, never a guess.
 */
static uint32_t php_location(struct resolve *r, struct phpproc *pp, struct profile *p, uint64_t w0,
			     uint64_t w1, bool no_line)
{
	struct profile_function fn = {0};
	struct profile_line line = {0};
	struct php_frame_name nm;
	char name[1024];

	if (phpproc__name(pp, w0, w1, &nm)) {
		r->stats.php.frames_unnamed++;
		return named_location(p, 0, PHP_UNNAMED_NAME, FRAME_PHP);
	}
	if (nm.klass)
		snprintf(name, sizeof(name), "%s::%s", nm.klass, nm.function);
	else
		snprintf(name, sizeof(name), "%s", nm.function);
	fn.name = fn.system_name = profile__intern_string(p, name);
	fn.filename = profile__intern_string(p, nm.file ? nm.file : "");
	line.function = profile__intern_function(p, &fn);
	line.line = no_line ? 0 : nm.line;
	if (!line.function)
		return 0;
	r->stats.php.frames_named++;
	return profile__intern_location_version(p, 0, (uint64_t)line.line, FRAME_PHP, line.function,
						&line, 1);
}

uint32_t resolve_php__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			    uint32_t first, uint32_t *locs, uint32_t n, uint32_t cap)
{
	struct php_scratch *x = r->phps;
	uint32_t nphp = s->php_len, i, out = 0, vms = 0, jit_frame = UINT32_MAX;
	bool placed = false, cut = false, unplaced = false, unmapped;
	struct phpproc *pp;
	int m;

	if (n > MAX_USER_LOCS || first + 2u * nphp > SP_MAX_USTACK)
		return n;
	pp = phptab__find(r->php, s->pid, s->pstart_boot_ns);
	if (!pp) {
		r->stats.php.no_process++;
		return n;
	}
	if (!x) {
		x = r->phps = calloc(1, sizeof(*x));
		if (!x)
			return n;
	}
	if (nphp > MAX_PHP_FRAMES)
		nphp = MAX_PHP_FRAMES;
	for (i = 0; i < nphp; i++) {
		uint64_t w0 = s->ustack[first + 2 * i];

		/* pymerge reads only the entry marks; the code slot says which record. */
		x->mark[i].code = i;
		x->mark[i].offset = 0;
		x->mark[i].flags = (w0 & PHP_FRAME_ENTRY) ? PY_FRAME_ENTRY : 0;
	}
	unmapped = none_mapped(p, locs, n);
	for (i = 0; i < n; i++) {
		x->native[i] = locs[i];
		x->is_vm[i] = is_vm_location(p, locs[i]);
		vms += x->is_vm[i];
	}
	/*
	 * The native walk stopped in JIT code: that frame is the outermost execute_ex call it
	 * reached, and it runs every PHP frame left (their native frames lost with the cut, as
	 * the marker after says): their groups become one.
	 */
	if (n && (s->ustack_end != SP_USTACK_COMPLETE || r->user_cut) &&
	    is_jit_location(p, locs[n - 1])) {
		uint32_t groups = 0;

		x->is_vm[n - 1] = true;
		vms++;
		for (i = 0; i < nphp; i++) {
			if (!(x->mark[i].flags & PY_FRAME_ENTRY))
				continue;
			if (++groups >= vms && i + 1 < nphp)
				x->mark[i].flags &= ~PY_FRAME_ENTRY;
		}
		if (nphp)
			x->mark[nphp - 1].flags |= PY_FRAME_ENTRY;
		r->stats.php.jit_cut++;
		/*
		 * The JIT code runs the first user frame of that group, and keeps its opline in no
		 * place the walk reads: the saved one and the VM's register (R15) hold an opline of
		 * the trace's entry, or older (seen: a loop's frame named at its function's first
		 * line). Its line is not known.
		 */
		for (i = 0, groups = 0; i < nphp && groups + 1 < vms; i++)
			groups += !!(x->mark[i].flags & PY_FRAME_ENTRY);
		for (; i < nphp; i++) {
			uint64_t w0 = s->ustack[first + 2 * i];

			if (((w0 >> PHP_TYPE_SHIFT) & PHP_TYPE_MASK) == PHP_INTERNAL_FUNCTION)
				continue;
			jit_frame = i;
			r->stats.php.jit_lines_unknown++;
			break;
		}
	}
	m = pymerge__stack(x->is_vm, n, x->mark, nphp, py_stop_of(s->php_stop),
			   s->ustack_end != SP_USTACK_COMPLETE || r->user_cut, x->items,
			   sizeof(x->items) / sizeof(x->items[0]));
	if (m < 0)
		return n;
	for (i = 0; i < (uint32_t)m; i++) {
		const struct pymerge_item *it = &x->items[i];
		uint32_t loc = 0;

		if (it->kind == PYMERGE_NATIVE) {
			loc = x->native[it->index];
		} else if (it->kind == PYMERGE_PYTHON) {
			loc = php_location(r, pp, p, s->ustack[first + 2 * it->index],
					   s->ustack[first + 2 * it->index + 1],
					   it->index == jit_frame);
			placed = true;
		} else if (it->kind == PYMERGE_MARKER) {
			loc = php_marker_location(p, it->index, s->php_stop, unmapped);
			if (it->index == PYMERGE_MARK_UNPLACED)
				unplaced = true;
			else
				cut = true;
		}
		if (loc && out < cap)
			locs[out++] = loc;
	}
	if (placed)
		r->stats.php.merged++;
	if (placed && cut)
		r->stats.php.cut++;
	if (unplaced)
		r->stats.php.unplaced++;
	return out;
}
