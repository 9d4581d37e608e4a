/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython frames (runtime/python/): the Python frames the BPF walk gave a sample, named and put
 * in place of the interpreter-loop frames of its native stack. While a sample's merge is to
 * run, the loop's own PCs wait unnamed (LOC_DEFERRED, their found frames kept): the merge
 * names only those it keeps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "runtime/python/pyelf.h"
#include "runtime/python/pymerge.h"
#include "runtime/python/pyproc.h"
#include "runtime/python/pytab.h"

/* Marker names of the Python stack's early ends (enum py_stop, bpf/python.h). */
#define PY_MARKER_NAME(n, d) [PY_STOP_##n] = "[python stack cut: " d "]",
static const char *const py_marker_names[PY_STOP_COUNT] = {PY_STOPS(PY_MARKER_NAME)};
#undef PY_MARKER_NAME
#define PY_UNPLACED_NAME "[python frames not placed: native stack only]"
#define PY_UNNAMED_NAME "[python frame not named]"
/* Marker addresses: apart from the stack-end reasons (profile/stackend.h) of the same kind. */
#define PY_MARKER_BASE 0x10000u

/*
 * Whether sample @s (@uu user PCs) will go through resolve_py__merge() with Python frames to
 * place: then r->defer_py names its interpreter, and resolve__user() leaves the interpreter
 * loop's PCs unnamed (LOC_DEFERRED) until the merge says which stay. The loop's leaf PC is a new
 * address at almost every sample of a busy interpreter: naming it (its DWARF inline chain and
 * line) was most of the agent's symbol work on a host of Python processes, for a frame the
 * Python frames replace.
 */
void resolve_py__defer_loop(struct resolve *r, const struct sp_sample *s, uint32_t uu)
{
	r->defer_py = NULL;
	if (!r->python || !s->py_stop || !s->py_len || uu + 1 > MAX_USER_LOCS)
		return;
	if (!r->pys && !(r->pys = calloc(1, sizeof(*r->pys))))
		return;
	r->defer_py = pytab__find(r->python, s->pid, s->pstart_boot_ns);
}

/*
 * Whether frame @f (its PC a return address when so found), at link-time address @vaddr of its
 * file, is in the interpreter loop of r->defer_py: the mapping is of the file the interpreter
 * found CPython in (same path, and the address agrees with its load bias), and the address is
 * in _PyEval_EvalFrameDefault as that file's symbol table bounds it (pyelf__in_loop()), the
 * symbol the symbolizer would name it by.
 */
bool resolve_py__in_loop(const struct resolve *r, const struct frame_ctx *f, uint64_t vaddr)
{
	const struct pyproc *py = r->defer_py;
	const struct proc_mapping *m = &f->m;
	const char *path = pyproc__path(py);

	return m->obj && !m->jit && path && m->path && !strcmp(path, m->path) &&
	       vaddr + pyproc__bias(py) == f->pc - (f->at == PC_RETURN) &&
	       pyelf__in_loop(pyproc__elf(py), vaddr);
}

/* Location @i of the current sample's user locations, named now if it was deferred. */
static uint32_t named_user_location(struct resolve *r, struct profile *p, const uint32_t *locs,
				    uint32_t i)
{
	if (locs[i] != LOC_DEFERRED)
		return locs[i];
	return resolve_frame__name(r, p, &r->pys->deferred[i], NULL, false);
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
uint32_t resolve_py__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			   uint32_t uu, uint32_t *locs, uint32_t n, uint32_t cap)
{
	uint32_t npy = s->py_len, i, out = 0, room;
	struct py_scratch *x = r->pys;
	bool placed = false, cut = false, unplaced = false, hide;
	struct pyproc *py;
	int m;

	/* Deferred frames only when the merge is to run (resolve_py__defer_loop()); named on every
	 * way out. */
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
