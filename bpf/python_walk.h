/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Python frame walk's shared half: finding the sampled thread's own CPython thread state
 * and stepping through its frames, one step per call, with the layout of struct py_desc
 * (bpf/python.h). Compiled by BPF and, as ordinary C, by the agent's tests
 * (test/test_python.c), which run the very same steps against live interpreters.
 *
 * The thread's own state, never the GIL holder's: the state whose thread_id is the sampled
 * thread's pthread_t (on x86-64 glibc and musl, pthread_self() is the thread pointer, the
 * task's fsbase), or from 3.11 on whose native_thread_id is its kernel TID. A thread that
 * never ran Python has none (PY_STOP_NO_TSTATE).
 *
 * A frame is recorded only when proven: its code object's type is PyCode_Type. Frames CPython
 * itself does not list are skipped: 3.12+ C-stack entry frames (owner FRAME_OWNED_BY_CSTACK)
 * and, 3.11-3.12, frames that have not reached their first traceable instruction
 * (_PyFrame_IsIncomplete, Include/internal/pycore_frame.h).
 *
 * Defined only where the includer defined PYWALK_READ_USER(rctx, dst, addr) first: reads 8
 * bytes of the sampled process at addr into the __u64 *dst, 0 on success; and
 * PYWALK_READ_SPAN(rctx, dst, addr, len): the same for 1..len bytes (len bounded by the buffer).
 *
 * Cost: each read of the process is a helper call in BPF, the bulk of a frame's time. A frame
 * step reads the frame's fields in one read of the span that holds them, the code object's in
 * one more, then its name's hash: three reads a frame (a field past the span buffer, in a
 * layout not seen yet, is read alone).
 */
#ifndef SPANPROF_PYTHON_WALK_H
#define SPANPROF_PYTHON_WALK_H

#include "python.h"

#ifdef PYWALK_READ_USER

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Where the thread-state search is: the current interpreter and thread state. */
struct pywalk_cursor {
	__u64 interp, tstate;
	__u32 interps; /* interpreters entered */
	__u32 pad;
};

/*
 * Starts the search at the first interpreter. 0, or -PY_STOP_READ_FAILED, -PY_STOP_NO_TSTATE
 * (no interpreter: not initialized yet, or finalized).
 */
static __always_inline int pywalk__tstate_begin(void *rctx, const struct py_desc *d,
						struct pywalk_cursor *c)
{
	c->interps = 0;
	c->tstate = 0;
	if (PYWALK_READ_USER(rctx, &c->interp, d->interp_head_addr))
		return -PY_STOP_READ_FAILED;
	if (!c->interp)
		return -PY_STOP_NO_TSTATE;
	if (PYWALK_READ_USER(rctx, &c->tstate, c->interp + d->interp_threads_head))
		return -PY_STOP_READ_FAILED;
	return 0;
}

/*
 * One thread state of the search: 1 when c->tstate belongs to the thread whose thread pointer
 * is @fsbase and kernel TID @tid; 0 when the search goes on (the cursor moved); or
 * -PY_STOP_NO_TSTATE (every state seen), -PY_STOP_READ_FAILED.
 */
static __always_inline int pywalk__tstate_step(void *rctx, const struct py_desc *d,
					       struct pywalk_cursor *c, __u64 fsbase, __u32 tid)
{
	__u64 v = 0;

	if (!c->tstate) {
		/* This interpreter's list is done: the next interpreter's. */
		if (++c->interps >= PY_MAX_INTERPRETERS)
			return -PY_STOP_NO_TSTATE;
		if (PYWALK_READ_USER(rctx, &c->interp, c->interp + d->interp_next))
			return -PY_STOP_READ_FAILED;
		if (!c->interp)
			return -PY_STOP_NO_TSTATE;
		if (PYWALK_READ_USER(rctx, &c->tstate, c->interp + d->interp_threads_head))
			return -PY_STOP_READ_FAILED;
		return 0;
	}
	if (d->has_native_thread_id) {
		if (PYWALK_READ_USER(rctx, &v, c->tstate + d->tstate_native_thread_id))
			return -PY_STOP_READ_FAILED;
		if (v == tid)
			return 1;
	} else {
		if (PYWALK_READ_USER(rctx, &v, c->tstate + d->tstate_thread_id))
			return -PY_STOP_READ_FAILED;
		if (v == fsbase)
			return 1;
	}
	if (PYWALK_READ_USER(rctx, &c->tstate, c->tstate + d->tstate_next))
		return -PY_STOP_READ_FAILED;
	return 0;
}

/* Bytes of a frame and of a code object read at once (powers of two, for the BPF masks). */
#define PYWALK_FRAME_SPAN 128
#define PYWALK_CODE_SPAN 256

/* Where a frame step copies the spans it reads (in BPF: a per-CPU map value). */
struct pywalk_buf {
	__u8 frame[PYWALK_FRAME_SPAN];
	__u8 code[PYWALK_CODE_SPAN];
};

static __always_inline __u32 pywalk__max(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/*
 * Reads [@base, @base + @span) into @buf (@size bytes); @span is the end of the last field
 * wanted, cut to @size. 0, or -1.
 */
static __always_inline int pywalk__read_span(void *rctx, __u8 *buf, __u32 size, __u64 base,
					     __u32 end)
{
	__u64 span = end < 8 ? 8 : end > size ? size : end;

#ifdef __BPF__
	/* The bound checked below on the very register the helper gets (not on a copy). */
	asm volatile("" : "+r"(span));
#endif
	if (span > size)
		return -1;
	return PYWALK_READ_SPAN(rctx, buf, base, span) ? -1 : 0;
}

/*
 * The 8 bytes at @base + @off into *@v: from @buf (the span read at @base, @size bytes) when
 * they are in it, else read alone. 0, or -1.
 */
static __always_inline int pywalk__field(void *rctx, const __u8 *buf, __u32 size, __u64 base,
					 __u32 off, __u64 *v)
{
	if (off <= size - 8) {
		__builtin_memcpy(v, buf + off, 8);
		return 0;
	}
	return PYWALK_READ_USER(rctx, v, base + off) ? -1 : 0;
}

/*
 * Whether @tstate, the thread state this thread had at an earlier sample, is still its own: 1
 * when it is in its interpreter's list of thread states (its neighbour points back at it, or,
 * alone, the interpreter's list starts with it) and its thread id is the sampled thread's
 * (@fsbase, or @tid from 3.11 on); else 0 (freed, or another thread's since: search again).
 * One read of the state's first bytes (@b->code as the buffer) and one of its neighbour's: a
 * freed state fails both, its list links being the allocator's by then.
 */
static __always_inline int pywalk__tstate_check(void *rctx, const struct py_desc *d, __u64 tstate,
						__u64 fsbase, __u32 tid, struct pywalk_buf *b)
{
	__u32 id_off = d->has_native_thread_id ? d->tstate_native_thread_id : d->tstate_thread_id;
	__u64 id = 0, prev = 0, next = 0, interp = 0, back = 0;
	__u32 span;

	if (!tstate)
		return 0;
	span = pywalk__max(pywalk__max(d->tstate_prev, d->tstate_next),
			   pywalk__max(d->tstate_interp, id_off)) +
	       8;
	if (pywalk__read_span(rctx, b->code, PYWALK_CODE_SPAN, tstate, span) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, id_off, &id))
		return 0;
	if (id != (d->has_native_thread_id ? (__u64)tid : fsbase))
		return 0;
	if (pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, d->tstate_prev, &prev) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, d->tstate_next, &next) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, d->tstate_interp, &interp))
		return 0;
	if (prev) {
		if (PYWALK_READ_USER(rctx, &back, prev + d->tstate_next))
			return 0;
	} else if (next) {
		if (PYWALK_READ_USER(rctx, &back, next + d->tstate_prev))
			return 0;
	} else if (!interp || PYWALK_READ_USER(rctx, &back, interp + d->interp_threads_head)) {
		return 0;
	}
	return back == tstate;
}

/* The innermost frame of thread state @tstate into *@frame (0: no Python frame). */
static __always_inline int pywalk__first_frame(void *rctx, const struct py_desc *d, __u64 tstate,
					       __u64 *frame)
{
	if (PYWALK_READ_USER(rctx, frame, tstate + d->tstate_frame))
		return -PY_STOP_READ_FAILED;
	if (d->tstate_frame_kind == PY_TSTATE_CFRAME && *frame &&
	    PYWALK_READ_USER(rctx, frame, *frame + d->cframe_current_frame))
		return -PY_STOP_READ_FAILED;
	return 0;
}

/*
 * One frame: from *@frame (moved to the next frame out) fills @out and returns 1; or returns 0
 * for a frame CPython does not list (skipped), 2 for a C-stack entry frame (skipped; the frame
 * recorded just before it, if any, is the outermost of its interpreter-loop call: the caller
 * sets PY_FRAME_ENTRY on it), -PY_STOP_END at the end of the list, or -PY_STOP_READ_FAILED /
 * -PY_STOP_BAD_CODE.
 */
static __always_inline int pywalk__frame_step(void *rctx, const struct py_desc *d, __u64 *frame,
					      struct py_frame *out, struct pywalk_buf *b)
{
	__u64 f = *frame, code = 0, instr = 0, type = 0, owner = 0, first = 0, entry = 0;
	__u64 name = 0, hash = 0, line = 0;
	__u32 span;
	__s64 offset;

	if (!f)
		return -PY_STOP_END;
	/* The frame's fields in one read: they all lie in its first bytes. */
	span = pywalk__max(
		   pywalk__max(d->frame_previous, d->frame_code),
		   pywalk__max(d->frame_instr, d->interpreter_frames
						   ? pywalk__max(d->frame_owner, d->frame_is_entry)
						   : 0)) +
	       8;
	if (pywalk__read_span(rctx, b->frame, PYWALK_FRAME_SPAN, f, span) ||
	    pywalk__field(rctx, b->frame, PYWALK_FRAME_SPAN, f, d->frame_previous, frame) ||
	    pywalk__field(rctx, b->frame, PYWALK_FRAME_SPAN, f, d->frame_code, &code) ||
	    pywalk__field(rctx, b->frame, PYWALK_FRAME_SPAN, f, d->frame_instr, &instr))
		return -PY_STOP_READ_FAILED;
	if (d->interpreter_frames) {
		if (pywalk__field(rctx, b->frame, PYWALK_FRAME_SPAN, f, d->frame_owner, &owner))
			return -PY_STOP_READ_FAILED;
		owner &= 0xff;
		if (d->owner_cstack != PY_NO_OWNER && owner == d->owner_cstack)
			return 2;
		if (d->frame_is_entry &&
		    pywalk__field(rctx, b->frame, PYWALK_FRAME_SPAN, f, d->frame_is_entry, &entry))
			return -PY_STOP_READ_FAILED;
	} else {
		entry = 1; /* 3.8-3.10: one loop call per frame */
	}
	/* The code object's fields in one read too (its type first: garbage is not read on). */
	span = pywalk__max(pywalk__max(d->object_type, d->code_name),
			   pywalk__max(d->code_firstlineno, d->code_firsttraceable)) +
	       8;
	if (!code || pywalk__read_span(rctx, b->code, PYWALK_CODE_SPAN, code, span) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code, d->object_type, &type))
		return -PY_STOP_BAD_CODE;
	if (type != d->code_type)
		return -PY_STOP_BAD_CODE;
	if (pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code, d->code_name, &name) ||
	    PYWALK_READ_USER(rctx, &hash, name + d->unicode_hash) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code, d->code_firstlineno, &line))
		return -PY_STOP_READ_FAILED;
	if (d->instr_kind == PY_INSTR_PTR) {
		offset = (__s64)(instr - (code + d->code_adaptive));
		if (offset < 0)
			offset = -1; /* prev_instr starts one code unit before the first */
		if (d->code_firsttraceable && owner != d->owner_generator) {
			if (pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code,
					  d->code_firsttraceable, &first))
				return -PY_STOP_READ_FAILED;
			if (offset < (__s64)(__s32)first * 2)
				return 0;
		}
	} else {
		offset = (__s32)instr;
		if (offset < 0)
			offset = -1;
		else if (d->instr_kind == PY_INSTR_LASTI_UNITS)
			offset *= 2;
	}
	out->code = code;
	out->offset = (__s32)offset;
	out->flags = ((entry & 0xff) ? PY_FRAME_ENTRY : 0) | pywalk__fingerprint(hash, (__u32)line)
								 << PY_FRAME_FP_SHIFT;
	return 1;
}

#ifndef __BPF__
/*
 * The whole walk as plain loops (the BPF program drives the same steps from bpf_loop): the
 * frames of the thread with thread pointer @fsbase and TID @tid, innermost first, at most
 * @max into @out (*@n used). Returns why it stopped (enum py_stop): END when the stack is
 * complete.
 */
static inline int pywalk__run(void *rctx, const struct py_desc *d, __u64 fsbase, __u32 tid,
			      struct py_frame *out, int max, int *n)
{
	struct pywalk_cursor c;
	struct pywalk_buf b;
	__u64 frame = 0;
	int i, r;

	*n = 0;
	r = pywalk__tstate_begin(rctx, d, &c);
	if (r)
		return -r;
	for (i = 0; i < PY_MAX_THREAD_STEPS; i++) {
		r = pywalk__tstate_step(rctx, d, &c, fsbase, tid);
		if (r)
			break;
	}
	if (r < 0)
		return -r;
	if (!r)
		return PY_STOP_TOO_MANY_THREADS;
	r = pywalk__first_frame(rctx, d, c.tstate, &frame);
	if (r)
		return -r;
	for (i = 0; i < PY_MAX_FRAME_STEPS; i++) {
		if (*n >= max)
			return frame ? PY_STOP_DEPTH : PY_STOP_END;
		r = pywalk__frame_step(rctx, d, &frame, &out[*n], &b);
		if (r < 0)
			return -r;
		if (r == 2 && *n > 0)
			out[*n - 1].flags |= PY_FRAME_ENTRY;
		else if (r == 1)
			*n += 1;
	}
	return PY_STOP_DEPTH;
}
#endif /* !__BPF__ */

#endif /* PYWALK_READ_USER */
#endif /* SPANPROF_PYTHON_WALK_H */
