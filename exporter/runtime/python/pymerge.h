/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pymerge: one stack, root to leaf as a reader expects it, from a sample's native frames and
 * its Python frames (bpf/python.h, struct py_frame with PY_FRAME_ENTRY): each native frame of
 * the interpreter loop is replaced by the Python frames that call of the loop was running, so
 * native start-up, Python frames, then the C extension or libc code they called read in their
 * true order. Pure: no I/O, no state.
 *
 * Groups: the Python frames (innermost first) split after each PY_FRAME_ENTRY frame; group k
 * (innermost first) belongs to the k-th interpreter-loop frame counted from the leaf, because
 * each call of the loop from C pushes one native frame and marks its outermost Python frame.
 */
#ifndef SPANPROF_RUNTIME_PYTHON_PYMERGE_H
#define SPANPROF_RUNTIME_PYTHON_PYMERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python.h"

enum pymerge_kind {
	PYMERGE_NATIVE = 1, /* index into the native frames */
	PYMERGE_PYTHON,	    /* index into the Python frames */
	PYMERGE_MARKER,	    /* index: enum pymerge_marker, a frame saying why a stack is partial */
};

/* Marker indexes: enum py_stop values say why the Python frames end early; and this one: */
#define PYMERGE_MARK_UNPLACED 0x100 /* loop frames and Python groups disagree: native only */

struct pymerge_item {
	uint32_t kind;	/* enum pymerge_kind */
	uint32_t index; /* see kind */
};

/*
 * True for the native symbols of the interpreter loop, whose frames Python frames replace:
 * _PyEval_EvalFrameDefault and a compiler's split-off part of it ("_PyEval_EvalFrameDefault.cold",
 * seen in some distributions' builds).
 */
bool pymerge__is_loop_symbol(const char *name);

/*
 * Merges, leaf first as samples carry frames: @n_native native frames of which @is_loop[i] says
 * whether frame i is an interpreter-loop frame; @n_py Python frames @py (innermost first), the
 * walk having stopped for @py_stop (enum py_stop); @native_cut true when the native walk was
 * cut before the outermost frame. Writes leaf first into @out, room for @cap items
 * (n_native + n_py + 1 always suffices), and returns the items written, or -ENOSPC.
 *  - Complete (py_stop END): each loop frame is replaced by its group when the counts agree;
 *    with the native stack cut, more groups than loop frames is fine (the outer ones are
 *    dropped, as their native frames are).
 *  - Ended early (DEPTH, READ_FAILED, BAD_CODE, TOO_MANY_THREADS): the complete groups replace
 *    the innermost loop frames, the frames of the group left open replace the next one, then a
 *    marker (index: the py_stop value) says why; the outer loop frames stay native.
 *  - Any other disagreement (frames read while a call was being set up, a thread without a
 *    thread state inside the loop): the native frames as they are, then a PYMERGE_MARK_UNPLACED
 *    marker at the root end. No Python frame is placed where it is not proven to belong.
 * Not walked (PY_STOP_NONE), or no loop frame and no Python frame: the native frames unchanged.
 */
int pymerge__stack(const bool *is_loop, size_t n_native, const struct py_frame *py, size_t n_py,
		   unsigned int py_stop, bool native_cut, struct pymerge_item *out, size_t cap);

#endif /* SPANPROF_RUNTIME_PYTHON_PYMERGE_H */
