// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "runtime/python/pymerge.h"

bool pymerge__is_loop_symbol(const char *name)
{
	static const char loop[] = "_PyEval_EvalFrameDefault";
	size_t n = sizeof(loop) - 1;

	return name && !strncmp(name, loop, n) && (!name[n] || !strcmp(name + n, ".cold"));
}

struct out {
	struct pymerge_item *items;
	size_t n, cap;
};

static int put(struct out *o, uint32_t kind, uint32_t index)
{
	if (o->n == o->cap)
		return -ENOSPC;
	o->items[o->n].kind = kind;
	o->items[o->n].index = index;
	o->n++;
	return 0;
}

/* The native frames unchanged, then the marker @mark (0: none). */
static int native_only(size_t n_native, unsigned int mark, struct out *o)
{
	size_t i;
	int err = 0;

	for (i = 0; i < n_native && !err; i++)
		err = put(o, PYMERGE_NATIVE, (uint32_t)i);
	if (!err && mark)
		err = put(o, PYMERGE_MARKER, mark);
	return err ? err : (int)o->n;
}

int pymerge__stack(const bool *is_loop, size_t n_native, const struct py_frame *py, size_t n_py,
		   unsigned int py_stop, bool native_cut, struct pymerge_item *out, size_t cap)
{
	struct out o = {.items = out, .cap = cap};
	size_t loops = 0, groups = 0, i, j = 0, placed = 0, full;
	bool early = py_stop != PY_STOP_END && py_stop != PY_STOP_NO_TSTATE, open_group;
	int err = 0;

	for (i = 0; i < n_native; i++)
		loops += is_loop[i];
	for (i = 0; i < n_py; i++)
		groups += !!(py[i].flags & PY_FRAME_ENTRY);
	/* Frames after the last entry mark: a group whose outer end was not recorded. */
	open_group = n_py && !(py[n_py - 1].flags & PY_FRAME_ENTRY);
	if (py_stop == PY_STOP_NONE || (!loops && !n_py && !early))
		return native_only(n_native, 0, &o); /* not walked, or no Python at all */
	if (early && native_cut && groups + open_group > loops) {
		/*
		 * Both walks were cut, the native one nearer the leaf (with -X perf, 3.12+, each
		 * Python call costs the native stack several frames): every loop call kept has its
		 * group; the Python frames past the native cut go with it (its marker says so).
		 */
		early = false;
		open_group = false;
	}
	if (!early && !open_group && (groups == loops || (native_cut && groups > loops)))
		full = loops;
	else if (early && groups + open_group <= loops)
		full = groups;
	else
		return native_only(n_native, PYMERGE_MARK_UNPLACED, &o);
	for (i = 0; i < n_native && !err; i++) {
		if (!is_loop[i] || placed > full || (placed == full && !(early && open_group))) {
			err = put(&o, PYMERGE_NATIVE, (uint32_t)i);
			continue;
		}
		/* This loop call's group: Python frames up to and including its entry frame. */
		for (; j < n_py && !err; j++) {
			err = put(&o, PYMERGE_PYTHON, (uint32_t)j);
			if (py[j].flags & PY_FRAME_ENTRY) {
				j++;
				break;
			}
		}
		if (placed == full && !err) /* the open group: cut here */
			err = put(&o, PYMERGE_MARKER, py_stop);
		placed++;
		if (early && !open_group && placed == full && !err)
			err = put(&o, PYMERGE_MARKER, py_stop);
	}
	if (!err && early && !open_group && full == 0)
		err = put(&o, PYMERGE_MARKER, py_stop);
	return err ? err : (int)o.n;
}
