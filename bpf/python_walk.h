/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Python frame walk's shared half: finding the sampled thread's own CPython thread state
 * and stepping through its frames, one step per call, with the layout of struct py_desc
 * (bpf/python.h). Compiled by BPF and, as ordinary C, by the agent's tests
 * (test/test_python.c), which run the very same steps against live interpreters.
 *
 * The thread's own state, never the GIL holder's: the state whose thread_id is the sampled
 * thread's pthread_t (on x86-64 glibc and musl, pthread_self() is the thread pointer, the
 * task's fsbase), or from 3.11 on whose native_thread_id is its TID as the process itself sees
 * it: in the PID namespace the process lives in (a container's), which the caller passes as
 * @tid, never the host's TID. A thread that never ran Python has none (PY_STOP_NO_TSTATE).
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
 * step reads the frame's fields from a window of the page the frame is in, that holds many
 * frames (3.11+: the thread's data stack; before, heap frame objects often side by side), and
 * the code object's in one more read (and its name's hash in another, but on 3.12) unless the
 * frame before had the same code object: from one read to three a frame, far fewer on deep
 * stacks (a field past the span buffer, in a layout not seen yet, is read alone).
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
 * is @fsbase and TID @tid (in the process's own PID namespace); 0 when the search goes on (the
 * cursor moved); or -PY_STOP_NO_TSTATE (every state seen), -PY_STOP_READ_FAILED.
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

/*
 * Bytes of a frame's fields and of a code object's read at once, and of a frame window (the
 * most of one page of the thread's data stack read in one go): powers of two, for the BPF masks.
 */
#define PYWALK_FRAME_SPAN 128
#define PYWALK_CODE_SPAN 256
#define PYWALK_WINDOW 4096

/*
 * What one walk remembers from frame to frame (zeroed at its start, with pywalk__walk_begin()):
 * the window of frames read last, and the code object checked last (its fingerprint and first
 * traceable instruction), so that a recursion or a loop of calls reads it once.
 */
struct pywalk_memo {
	__u64 win_base, code;
	__u32 win_len, fp;
	__s32 first;
	__u32 pad;
	__u64 file, file_key; /* the co_filename str keyed last, and its key */
	__u32 steps;	      /* frame steps of the walk so far */
	__u32 cached, read;   /* code objects from the code-object cache, read */
	__u32 pad2;
	/* The code object the step under way read, to be put in the code-object cache once the
	 * step is proven intact (0: none). In memory, not a local: 6.1's BPF stack bound. */
	__u64 fill;
};

/* The process a walk is of, for the code-object cache (bpf/python.h): @epoch 0, none. */
struct pywalk_cache_key {
	__u64 epoch;
	__u32 tgid;
	__u32 pad;
};

/*
 * Where the steps copy what they read and what a walk remembers (in BPF: a per-CPU map value,
 * shared by every program of the CPU: off the BPF stack, whose 512 bytes the deepest call chain
 * uses up on 6.1). @window holds the process's bytes [memo.win_base, memo.win_base +
 * memo.win_len); PYWALK_FRAME_SPAN bytes of slack after it, so that a frame's fields at any
 * offset of the window stay inside the buffer. @gen: bumped by each walk that starts; a walk
 * that finds another number after using the buffer was interrupted by a walk on the same CPU
 * (a CPU sample in NMI inside an off-CPU or lock sample) that overwrote it meanwhile.
 */
struct pywalk_buf {
	__u8 window[PYWALK_WINDOW + PYWALK_FRAME_SPAN];
	__u8 code[PYWALK_CODE_SPAN];
	__u8 str[PYWALK_STR_BUF]; /* a co_filename str's bytes (pywalk__file_key()) */
	/* pywalk__file_key()'s working values (here, not on the BPF stack: 6.1's 512 bytes). */
	__u64 str_length;
	__u32 str_state, str_data_off, str_nbytes, str_pad;
	struct pywalk_memo memo;
	__u64 gen;
	struct pywalk_code_slot cache[PY_CODE_CACHE_SLOTS]; /* this CPU's code-object cache */
};

/* Starts a walk's use of @b: its memory cleared; returns the walk's generation. */
static __always_inline __u64 pywalk__walk_begin(struct pywalk_buf *b)
{
	__builtin_memset(&b->memo, 0, sizeof(b->memo));
	return ++b->gen;
}

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
		*v = pywalk__load8(buf + off);
		return 0;
	}
	return PYWALK_READ_USER(rctx, v, base + off) ? -1 : 0;
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
 * Whether @tstate, the thread state this thread had at an earlier sample, is still its own: 1
 * when it is in its interpreter's list of thread states (its neighbour points back at it, or,
 * alone, the interpreter's list starts with it) and its thread id is the sampled thread's
 * (@fsbase, or @tid, its TID in its own PID namespace, from 3.11 on), with its innermost frame in
 * *@frame (0: none); else 0 (freed, or another thread's since: search again). One read of the
 * state's first bytes (@b->code as the buffer, the frame pointer taken from it too) and one of its
 * neighbour's: a freed state fails both, its list links being the allocator's by then; 3.11-3.12
 * one more, of the _PyCFrame.
 */
static __always_inline int pywalk__tstate_check(void *rctx, const struct py_desc *d, __u64 tstate,
						__u64 fsbase, __u32 tid, struct pywalk_buf *b,
						__u64 *frame)
{
	__u32 id_off = d->has_native_thread_id ? d->tstate_native_thread_id : d->tstate_thread_id;
	__u64 id = 0, prev = 0, next = 0, interp = 0, back = 0;
	__u32 span;

	if (!tstate)
		return 0;
	span = pywalk__max(pywalk__max(pywalk__max(d->tstate_prev, d->tstate_next),
				       pywalk__max(d->tstate_interp, id_off)),
			   d->tstate_frame) +
	       8;
	if (pywalk__read_span(rctx, b->code, PYWALK_CODE_SPAN, tstate, span) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, id_off, &id))
		return 0;
	if (id != (d->has_native_thread_id ? (__u64)tid : fsbase))
		return 0;
	if (pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, d->tstate_prev, &prev) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, d->tstate_next, &next) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, d->tstate_interp, &interp) ||
	    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, tstate, d->tstate_frame, frame))
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
	if (back != tstate)
		return 0;
	if (d->tstate_frame_kind == PY_TSTATE_CFRAME && *frame &&
	    PYWALK_READ_USER(rctx, frame, *frame + d->cframe_current_frame))
		return 0;
	return 1;
}

/*
 * The frame at @f's fields (@span bytes) as a pointer into @b->window: from the window read
 * last (@m) when they lie in it, else from a new one, within @f's page (memory the frame
 * itself is in, never a neighbour mapping), so that the frames out of it come without a read.
 * 3.11+, where a thread's frames are contiguous in its data stack, callers below callees: from
 * the start of the page up to @f's fields' end. Before 3.11, frames are heap objects, of one
 * size per code object, that the allocator (pymalloc's pools of a page, or malloc) often puts
 * side by side: the whole page. A frame across a page end: just its fields. NULL when
 * unreadable.
 */
static __always_inline const __u8 *pywalk__frame_bytes(void *rctx, const struct py_desc *d, __u64 f,
						       __u32 span, struct pywalk_buf *b,
						       struct pywalk_memo *m)
{
	__u64 start = f, len = span, o = f - m->win_base;

	if (m->win_len && f >= m->win_base && o + span <= m->win_len)
		return b->window + (o & (PYWALK_WINDOW - 1));
	if ((f & (PYWALK_WINDOW - 1)) + span <= PYWALK_WINDOW) {
		start = f & ~(__u64)(PYWALK_WINDOW - 1);
		/* 3.11+: the callers lie below; before, anywhere in the heap (often the page). */
		len = d->interpreter_frames ? f - start + span : PYWALK_WINDOW;
	}
#ifdef __BPF__
	asm volatile("" : "+r"(len));
#endif
	if (len < 8 || len > PYWALK_WINDOW)
		return NULL;
	m->win_len = 0;
	if (PYWALK_READ_SPAN(rctx, b->window, start, len))
		return NULL;
	m->win_base = start;
	m->win_len = (__u32)len;
	return b->window + ((f - start) & (PYWALK_WINDOW - 1));
}

/*
 * The key of the str at @file (a code object's co_filename: pywalk__str_key()) into *@key:
 * PYWALK_STR_UNKEYED for one not keyed (the agent refuses those frames). Reads the str from
 * its start to the end of its page (at most PYWALK_STR_BUF bytes), then, if its characters
 * go on past that, them alone (the object's own memory). 0, or -1 when unreadable.
 */
static __always_inline int pywalk__file_key(void *rctx, const struct py_desc *d, __u64 file,
					    struct pywalk_buf *b, __u64 *key)
{
	__u64 n = pywalk__str_span(file, (__u32)d->unicode_ascii_size + 1);
	__u32 sf = d->unicode_state, lf = d->unicode_length;

	PYWALK_OPAQUE(n);
	if (n < 8 || n > PYWALK_STR_BUF || PYWALK_READ_SPAN(rctx, b->str, file, n))
		return -1;
	if (lf + 8 > n || sf + 4 > n)
		return -1;
	PYWALK_OPAQUE(lf);
	PYWALK_OPAQUE(sf);
	b->str_length = pywalk__load8(b->str + (lf & (PYWALK_STR_BUF - 1)));
	b->str_state = pywalk__load4(b->str + (sf & (PYWALK_STR_BUF - 1)));
	if (pywalk__str_layout(b->str_length, b->str_state, d->unicode_ascii_size,
			       d->unicode_compact_size, &b->str_data_off, &b->str_nbytes)) {
		*key = PYWALK_STR_UNKEYED;
		return 0;
	}
	if ((__u64)b->str_data_off + b->str_nbytes <= n) {
		*key = pywalk__str_key(b->str, b->str_data_off, b->str_nbytes, b->str_length,
				       b->str_state);
		return 0;
	}
	{
		/* 64 bits: the bound checked on the very register the helper gets. */
		__u64 len = b->str_nbytes;

		PYWALK_OPAQUE(len);
		if (len < 1 || len > PYWALK_STR_MAX ||
		    PYWALK_READ_SPAN(rctx, b->str, file + b->str_data_off, len))
			return -1;
	}
	*key = pywalk__str_key(b->str, 0, b->str_nbytes, b->str_length, b->str_state);
	return 0;
}

/*
 * Whether @slot holds code object @code of the process @ck with the epoch of @ck: then its
 * value (fingerprint | first traceable instruction << 32) into *@val. Each word is loaded once
 * (a walk in NMI may be rewriting the slot meanwhile): the words checked are the words used.
 */
static __always_inline int pywalk__slot_get(const struct pywalk_code_slot *slot, __u64 code,
					    const struct pywalk_cache_key *ck, __u64 *val)
{
	const volatile struct pywalk_code_slot *v = slot;
	__u64 c = v->code, e = v->epoch, x = v->val, k = v->check;

	if (c != code || e != ck->epoch || k != pywalk__slot_check(c, e, x, ck->tgid))
		return 0;
	*val = x;
	return 1;
}

/*
 * One frame: from *@frame (moved to the next frame out) fills @out and returns 1; or returns 0
 * for a frame CPython does not list (skipped), 2 for a C-stack entry frame (skipped; the frame
 * recorded just before it, if any, is the outermost of its interpreter-loop call: the caller
 * sets PY_FRAME_ENTRY on it), -PY_STOP_END at the end of the list, or -PY_STOP_READ_FAILED /
 * -PY_STOP_BAD_CODE. @gen: the walk's, from pywalk__walk_begin(@b) before its first frame.
 * @ck: the process and its code epoch, read at the walk's start (epoch 0: no code-object
 * cache). Reads: the frame's window when the frame is not in the last one, the code object's
 * fields when it is neither the last frame's code object nor in the code-object cache, and
 * then its name's hash unless the code object has a version (3.12); nothing else. A code
 * object read from a frame other than the walk's first is put in the cache.
 */
static __always_inline int pywalk__frame_step(void *rctx, const struct py_desc *d, __u64 *frame,
					      struct py_frame *out, struct pywalk_buf *b, __u64 gen,
					      const struct pywalk_cache_key *ck)
{
	struct pywalk_memo *m = &b->memo;
	__u64 f = *frame, code = 0, instr = 0, type = 0, owner = 0, first = 0, entry = 0;
	__u64 name = 0, hash = 0, line = 0, version = 0, file = 0, file_key = 0;
	__u64 hit = 0;
	const __u8 *fb;
	__u32 span, fp;
	__s64 offset;

	m->steps++;
	m->fill = 0;
	if (!f)
		return -PY_STOP_END;
	/* The frame's fields in one read: they all lie in its first bytes. */
	span = pywalk__max(
		   pywalk__max(d->frame_previous, d->frame_code),
		   pywalk__max(d->frame_instr, d->interpreter_frames
						   ? pywalk__max(d->frame_owner, d->frame_is_entry)
						   : 0)) +
	       8;
	if (span > PYWALK_FRAME_SPAN)
		return -PY_STOP_READ_FAILED;
	fb = pywalk__frame_bytes(rctx, d, f, span, b, m);
	if (!fb || pywalk__field(rctx, fb, PYWALK_FRAME_SPAN, f, d->frame_previous, frame) ||
	    pywalk__field(rctx, fb, PYWALK_FRAME_SPAN, f, d->frame_code, &code) ||
	    pywalk__field(rctx, fb, PYWALK_FRAME_SPAN, f, d->frame_instr, &instr))
		return -PY_STOP_READ_FAILED;
	if (d->interpreter_frames) {
		if (pywalk__field(rctx, fb, PYWALK_FRAME_SPAN, f, d->frame_owner, &owner))
			return -PY_STOP_READ_FAILED;
		owner &= 0xff;
		if (d->frame_is_entry &&
		    pywalk__field(rctx, fb, PYWALK_FRAME_SPAN, f, d->frame_is_entry, &entry))
			return -PY_STOP_READ_FAILED;
	} else {
		entry = 1; /* 3.8-3.10: one loop call per frame */
	}
	if (b->gen != gen)
		return -PY_STOP_READ_FAILED; /* the buffer overwritten while the fields were copied
					      */
	if (d->interpreter_frames && d->owner_cstack != PY_NO_OWNER && owner == d->owner_cstack)
		return 2;
	if (d->frame_code_tag) {
		/* 3.14's _PyStackRef: a tagged int is no code object; else the tag bits off. */
		if ((code & d->frame_code_tag) == d->frame_code_tag)
			return -PY_STOP_BAD_CODE;
		code &= ~(__u64)d->frame_code_tag;
	}
	if (!code)
		return -PY_STOP_BAD_CODE;
	if (code == m->code) {
		fp = m->fp;
		first = (__u64)(__s64)m->first;
	} else if (ck->epoch &&
		   pywalk__slot_get(&b->cache[pywalk__slot_index(code)], code, ck, &hit)) {
		/* Proven by an earlier walk of this process, no code object freed since. */
		fp = (__u32)hit & PY_FRAME_FP_MASK;
		first = (__u64)(__s64)(__s32)(hit >> 32);
		m->code = code;
		m->fp = fp;
		m->first = (__s32)first;
		m->cached++;
	} else {
		/* The code object's fields in one read (its type first: garbage is not read on). */
		span = pywalk__max(pywalk__max(pywalk__max(d->object_type, d->code_name),
					       pywalk__max(d->code_firstlineno, d->code_version)),
				   pywalk__max(d->code_firsttraceable, d->code_filename)) +
		       8;
		if (pywalk__read_span(rctx, b->code, PYWALK_CODE_SPAN, code, span) ||
		    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code, d->object_type, &type))
			return -PY_STOP_BAD_CODE;
		if (type != d->code_type)
			return -PY_STOP_BAD_CODE;
		if (pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code, d->code_name, &name) ||
		    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code, d->code_firstlineno,
				  &line) ||
		    (d->code_firsttraceable && pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code,
							     d->code_firsttraceable, &first)) ||
		    (d->code_version && pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code,
						      d->code_version, &version)))
			return -PY_STOP_READ_FAILED;
		/* What tells a reallocated code object (see py_desc): its version, in the span
		 * read, else its name's hash and its file's key, a read each (the file's once
		 * per walk while the frames stay in one file). */
		if (!(__u32)version) {
			if (PYWALK_READ_USER(rctx, &hash, name + d->unicode_hash) ||
			    pywalk__field(rctx, b->code, PYWALK_CODE_SPAN, code, d->code_filename,
					  &file))
				return -PY_STOP_READ_FAILED;
			if (!file || file != m->file) {
				m->file = 0;
				if (pywalk__file_key(rctx, d, file, b, &m->file_key))
					return -PY_STOP_READ_FAILED;
				m->file = file;
			}
			file_key = m->file_key;
		}
		first = (__u64)(__s64)(__s32)first;
		fp = pywalk__fingerprint(pywalk__code_key((__u32)version, hash, file_key),
					 (__u32)line);
		m->code = code;
		m->fp = fp;
		m->first = (__s32)first;
		m->read++;
		/* Not from the innermost frame: it may be half made or half gone (its code pointer
		 * a freed object's) while the thread was stopped in its call or return. Nor from a
		 * code object whose count is 0: on its way out (a frame below a callback that its
		 * deallocation runs, as 3.11.0 left one linked), its uprobe hit already counted. */
		span = (__u32)d->object_type - 8; /* ob_refcnt: just before ob_type */
		PYWALK_OPAQUE(span);
		if (m->steps > 1 && span <= PYWALK_CODE_SPAN - 8 &&
		    pywalk__load8(b->code + (span & (PYWALK_CODE_SPAN - 1))))
			m->fill = code;
	}
	if (d->instr_kind == PY_INSTR_PTR) {
		offset = (__s64)(instr - (code + d->code_adaptive));
		if (offset < 0)
			offset = -1; /* prev_instr starts one code unit before the first */
		/* _PyFrame_IsIncomplete(): not listed before its first traceable instruction. */
		if (d->code_firsttraceable && owner != d->owner_generator &&
		    offset < (__s64)first * 2)
			return 0;
	} else {
		offset = (__s32)instr;
		if (offset < 0)
			offset = -1;
		else if (d->instr_kind == PY_INSTR_LASTI_UNITS)
			offset *= 2;
	}
	/* What to fill, loaded before the check that proves it this step's own (not a walk's
	 * that interrupted this one after the check). */
	hit = *(volatile __u64 *)&m->fill;
	if (*(volatile __u64 *)&b->gen != gen)
		return -PY_STOP_READ_FAILED; /* the memory of the walk overwritten meanwhile */
	if (ck->epoch && hit == code) {
		/* fp and first are in registers now, from bytes the check above proved intact. */
		struct pywalk_code_slot *slot = &b->cache[pywalk__slot_index(code)];
		__u64 val = fp | (__u64)(__u32)(__s32)first << 32;

		slot->code = code;
		slot->epoch = ck->epoch;
		slot->val = val;
		slot->check = pywalk__slot_check(code, ck->epoch, val, ck->tgid);
	}
	out->code = code;
	out->offset = (__s32)offset;
	out->flags = ((entry & 0xff) ? PY_FRAME_ENTRY : 0) | fp << PY_FRAME_FP_SHIFT;
	return 1;
}

#ifndef __BPF__
/*
 * The whole walk as plain loops (the BPF program drives the same steps from bpf_loop): the
 * frames of the thread with thread pointer @fsbase and TID @tid (in the process's own PID
 * namespace), innermost first, at most @max into @out (*@n used), with the buffer (and
 * code-object cache) @b and the cache key @ck (epoch 0: no cache). Returns why it stopped (enum
 * py_stop): END when the stack is complete.
 */
static inline int pywalk__run_cached(void *rctx, const struct py_desc *d, __u64 fsbase, __u32 tid,
				     const struct pywalk_cache_key *ck, struct pywalk_buf *bp,
				     struct py_frame *out, int max, int *n)
{
	struct pywalk_cursor c;
	struct pywalk_buf *const b = bp;
	__u64 frame = 0, gen;
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
	gen = pywalk__walk_begin(b);
	for (i = 0; i < PY_MAX_FRAME_STEPS; i++) {
		if (*n >= max)
			return frame ? PY_STOP_DEPTH : PY_STOP_END;
		r = pywalk__frame_step(rctx, d, &frame, &out[*n], b, gen, ck);
		if (r < 0)
			return -r;
		if (r == 2 && *n > 0)
			out[*n - 1].flags |= PY_FRAME_ENTRY;
		else if (r == 1)
			*n += 1;
	}
	return PY_STOP_DEPTH;
}

/* pywalk__run_cached() without the code-object cache. */
static inline int pywalk__run(void *rctx, const struct py_desc *d, __u64 fsbase, __u32 tid,
			      struct py_frame *out, int max, int *n)
{
	static struct pywalk_buf b; /* over 20 KiB: not on the stack */
	const struct pywalk_cache_key none = {0};

	return pywalk__run_cached(rctx, d, fsbase, tid, &none, &b, out, max, n);
}
#endif /* !__BPF__ */

#endif /* PYWALK_READ_USER */
#endif /* SPANPROF_PYTHON_WALK_H */
