// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/python/pylayout.h"

#define MAX3(a, b, c) ((a) > (b) ? ((a) > (c) ? (a) : (c)) : ((b) > (c) ? (b) : (c)))

/* Read sizes: the furthest field of each structure plus 8 bytes. */
static void set_read_sizes(struct pylayout *l)
{
	uint32_t t = MAX3(l->tstate_next, l->tstate_interp, l->tstate_thread_id);

	t = MAX3(t, l->tstate_native_thread_id, l->tstate_frame);
	l->tstate_read = t + 8;
	t = MAX3(l->frame_previous, l->frame_code, l->frame_instr);
	l->frame_read = (l->frame_owner > t ? l->frame_owner : t) + 8;
	t = MAX3(l->code_filename, l->code_name, l->code_qualname);
	t = MAX3(t, l->code_linetable, l->code_firstlineno);
	t = MAX3(t, l->code_firsttraceable, l->object_type);
	l->code_read = (l->code_version > t ? l->code_version : t) + 8;
}

/* What every 3.x up to 3.12 shares: PyObject and PyBytesObject (Include/object.h,
 * Include/bytesobject.h / cpython/bytesobject.h), PEP 393 string headers
 * (Include/cpython/unicodeobject.h: state, a bit field, after length and hash). */
static void common(struct pylayout *l, unsigned int major, unsigned int minor)
{
	l->major = major;
	l->minor = minor;
	l->version_hex = major << 24 | minor << 16;
	l->object_type = 8;
	l->unicode_length = 16;
	l->unicode_state = 32;
	l->bytes_size = 16;
	l->bytes_sval = 32;
	l->owner_generator = PYLAYOUT_NO_OWNER;
	l->owner_cstack = PYLAYOUT_NO_OWNER;
}

/* 3.8-3.10: PyFrameObject frames. */
static void frame_objects(struct pylayout *l, unsigned int minor)
{
	l->tstate_frame_kind = PYLAYOUT_TSTATE_FRAME;
	l->instr_kind = minor >= 10 ? PYLAYOUT_LASTI_UNITS : PYLAYOUT_LASTI_BYTES;
	l->lines = minor >= 10 ? PYLINES_PEP626 : PYLINES_LNOTAB;
	/* _PyRuntimeState.interpreters.head, .gilstate.autoTSSkey: 3.8
	 * Include/internal/pycore_pystate.h, 3.9-3.10 Include/internal/pycore_runtime.h. */
	l->runtime_interpreters_head = 32;
	l->runtime_autotss_key = minor == 8 ? 1392 : 584;
	/* PyInterpreterState.next, .tstate_head: 3.8 pycore_pystate.h, 3.9-3.10
	 * Include/internal/pycore_interp.h. */
	l->interp_next = 0;
	l->interp_threads_head = 8;
	/* struct _ts .prev, .next, .interp, .frame, .thread_id: Include/cpython/pystate.h. */
	l->tstate_prev = 0;
	l->tstate_next = 8;
	l->tstate_interp = 16;
	l->tstate_frame = 24;
	l->tstate_thread_id = 176;
	/* PyFrameObject .f_back, .f_code, .f_lasti: 3.8 Include/frameobject.h, 3.9-3.10
	 * Include/cpython/frameobject.h (3.10 dropped f_valuestack's neighbours: f_lasti moved). */
	l->frame_previous = 24;
	l->frame_code = 32;
	l->frame_instr = minor >= 10 ? 96 : 104;
	/* PyCodeObject .co_firstlineno, .co_filename, .co_name, .co_lnotab (3.10: .co_linetable):
	 * 3.8 Include/code.h, 3.9-3.10 Include/cpython/code.h. */
	l->code_firstlineno = 40;
	l->code_filename = 104;
	l->code_name = 112;
	l->code_linetable = 120;
	/* PyASCIIObject (with wstr) and PyCompactUnicodeObject (utf8_length, utf8, wstr_length). */
	l->unicode_ascii_size = 48;
	l->unicode_compact_size = 72;
}

/* 3.11-3.12: _PyInterpreterFrame reached through _PyCFrame. */
static void interpreter_frames(struct pylayout *l, unsigned int minor)
{
	bool v12 = minor == 12;

	l->interpreter_frames = 1;
	l->tstate_frame_kind = PYLAYOUT_TSTATE_CFRAME;
	l->instr_kind = PYLAYOUT_INSTR_PTR;
	l->lines = PYLINES_PEP657;
	/* _PyRuntimeState.interpreters.head; autoTSSkey (3.11 in .gilstate, 3.12 top level):
	 * Include/internal/pycore_runtime.h. */
	l->runtime_interpreters_head = 40;
	l->runtime_autotss_key = v12 ? 1544 : 592;
	/* PyInterpreterState.next, .threads.head: Include/internal/pycore_interp.h. */
	l->interp_next = 0;
	l->interp_threads_head = v12 ? 72 : 16;
	/* struct _ts .prev, .next, .interp, .cframe, .thread_id, .native_thread_id and
	 * _PyCFrame.current_frame: Include/cpython/pystate.h. */
	l->tstate_prev = 0;
	l->tstate_next = 8;
	l->tstate_interp = 16;
	l->tstate_frame = 56;
	l->tstate_thread_id = v12 ? 136 : 152;
	l->tstate_native_thread_id = v12 ? 144 : 160;
	l->cframe_current_frame = v12 ? 0 : 8;
	/* _PyInterpreterFrame .f_code, .previous, .prev_instr, .owner, .is_entry (3.11) and
	 * enum _frameowner:
	 * Include/internal/pycore_frame.h. */
	l->frame_code = v12 ? 0 : 32;
	l->frame_previous = v12 ? 8 : 48;
	l->frame_instr = 56;
	l->frame_owner = v12 ? 70 : 69;
	l->frame_is_entry = v12 ? 0 : 68;
	l->owner_generator = 1;
	l->owner_cstack = v12 ? 3 : PYLAYOUT_NO_OWNER;
	/* PyCodeObject (_PyCode_DEF): Include/cpython/code.h. */
	l->code_firstlineno = v12 ? 68 : 72;
	l->code_filename = 112;
	l->code_name = 120;
	l->code_qualname = 128;
	l->code_linetable = 136;
	l->code_firsttraceable = v12 ? 176 : 168;
	/* 3.12's co_version, from the counter _Py_next_func_version (Include/internal/
	 * pycore_code.h; Objects/codeobject.c init_code()); 3.11 has none. */
	l->code_version = v12 ? 92 : 0;
	l->code_adaptive = v12 ? 192 : 184;
	/* 3.12 removed wstr (PEP 623): PyASCIIObject 40, PyCompactUnicodeObject 56 bytes. */
	l->unicode_ascii_size = v12 ? 40 : 48;
	l->unicode_compact_size = v12 ? 56 : 72;
}

int pylayout__for_version(unsigned int major, unsigned int minor, struct pylayout *out)
{
	memset(out, 0, sizeof(*out));
	if (major != 3 || minor < 8 || minor > 12)
		return -ENOTSUP;
	common(out, major, minor);
	if (minor <= 10)
		frame_objects(out, minor);
	else
		interpreter_frames(out, minor);
	set_read_sizes(out);
	return 0;
}

/*
 * Byte positions, inside _Py_DebugOffsets, of the u64 fields used: the structure's own layout
 * is that of the release it came with. Each group starts with its structure's size.
 * 3.13: Include/internal/pycore_runtime.h at v3.13.0 (584 bytes).
 * 3.14: Include/internal/pycore_debug_offsets.h at v3.14 (760 bytes; interpreter_state gained
 * threads_main, code_object_generation and tlbc_generation, interpreter_frame stackpointer and
 * tlbc_index, code_object co_tlbc, and set_object, gen_object, llist_node and
 * debugger_support joined): positions from offsetof() on Debian's 3.14.10 headers
 * (libpython3.14-dev), the values read from a running 3.14.10 matching them.
 */
struct do_pos {
	uint32_t size; /* of the whole structure */
	uint32_t runtime_size, runtime_interpreters_head;
	uint32_t interp_size, interp_next, interp_threads_head;
	uint32_t tstate_size, tstate_prev, tstate_next, tstate_interp, tstate_current_frame,
	    tstate_thread_id, tstate_native_thread_id;
	uint32_t frame_size, frame_previous, frame_executable, frame_instr_ptr, frame_owner;
	uint32_t code_size, code_filename, code_name, code_qualname, code_linetable,
	    code_firstlineno, code_adaptive;
	uint32_t object_size, object_type;
	uint32_t bytes_size, bytes_ob_size, bytes_sval;
	uint32_t unicode_size, unicode_state, unicode_length, unicode_ascii_size;
};

#define DO_VERSION 8
#define DO_FREE_THREADED 16

static const struct do_pos do_313 = {
    .size = 584,
    .runtime_size = 24,
    .runtime_interpreters_head = 40,
    .interp_size = 48,
    .interp_next = 64,
    .interp_threads_head = 72,
    .tstate_size = 152,
    .tstate_prev = 160,
    .tstate_next = 168,
    .tstate_interp = 176,
    .tstate_current_frame = 184,
    .tstate_thread_id = 192,
    .tstate_native_thread_id = 200,
    .frame_size = 224,
    .frame_previous = 232,
    .frame_executable = 240,
    .frame_instr_ptr = 248,
    .frame_owner = 264,
    .code_size = 272,
    .code_filename = 280,
    .code_name = 288,
    .code_qualname = 296,
    .code_linetable = 304,
    .code_firstlineno = 312,
    .code_adaptive = 344,
    .object_size = 352,
    .object_type = 360,
    .bytes_size = 512,
    .bytes_ob_size = 520,
    .bytes_sval = 528,
    .unicode_size = 536,
    .unicode_state = 544,
    .unicode_length = 552,
    .unicode_ascii_size = 560,
};

static const struct do_pos do_314 = {
    .size = 760,
    .runtime_size = 24,
    .runtime_interpreters_head = 40,
    .interp_size = 48,
    .interp_next = 64,
    .interp_threads_head = 72,
    .tstate_size = 176,
    .tstate_prev = 184,
    .tstate_next = 192,
    .tstate_interp = 200,
    .tstate_current_frame = 208,
    .tstate_thread_id = 216,
    .tstate_native_thread_id = 224,
    .frame_size = 248,
    .frame_previous = 256,
    .frame_executable = 264,
    .frame_instr_ptr = 272,
    .frame_owner = 288,
    .code_size = 312,
    .code_filename = 320,
    .code_name = 328,
    .code_qualname = 336,
    .code_linetable = 344,
    .code_firstlineno = 352,
    .code_adaptive = 384,
    .object_size = 400,
    .object_type = 408,
    .bytes_size = 592,
    .bytes_ob_size = 600,
    .bytes_sval = 608,
    .unicode_size = 616,
    .unicode_state = 624,
    .unicode_length = 632,
    .unicode_ascii_size = 640,
};

_Static_assert(PYLAYOUT_DEBUG_OFFSETS_SIZE == 760, "the largest _Py_DebugOffsets known: 3.14's");

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* A field offset inside a structure of the declared size (at @size_at): false for garbage. */
static bool field(const uint8_t *b, size_t size_at, size_t at, size_t width, uint32_t *out)
{
	uint64_t size = u64_at(b, size_at), off = u64_at(b, at);

	if (size > (1u << 20) || off > size || width > size - off)
		return false;
	*out = (uint32_t)off;
	return true;
}

int pylayout__from_debug_offsets(const void *buf, size_t len, struct pylayout *out)
{
	const uint8_t *b = buf;
	const struct do_pos *d;
	struct pylayout *l = out;
	uint64_t version;
	unsigned int minor;
	uint32_t owner = 0;
	bool ok = true;

	memset(out, 0, sizeof(*out));
	if (len < DO_FREE_THREADED + 8 || memcmp(b, "xdebugpy", 8))
		return -EINVAL;
	version = u64_at(b, DO_VERSION);
	minor = (version >> 16) & 0xff;
	if (version >> 24 != 3 || minor < 13)
		return -EINVAL; /* the cookie is there only from 3.13 on */
	if (minor == 13)
		d = &do_313;
	else if (minor == 14)
		d = &do_314;
	else
		return -ENOTSUP; /* 3.15+: a layout of the structure not known yet */
	if (len < d->size)
		return -EINVAL;
	if (u64_at(b, DO_FREE_THREADED))
		return -ENOTSUP;
	l->version_hex = (uint32_t)version;
	l->major = 3;
	l->minor = minor;
	l->interpreter_frames = 1;
	l->tstate_frame_kind = PYLAYOUT_TSTATE_FRAME;
	l->instr_kind = PYLAYOUT_INSTR_PTR;
	l->lines = PYLINES_PEP657;
	ok &= field(b, d->runtime_size, d->runtime_interpreters_head, 8,
		    &l->runtime_interpreters_head);
	ok &= field(b, d->interp_size, d->interp_next, 8, &l->interp_next);
	ok &= field(b, d->interp_size, d->interp_threads_head, 8, &l->interp_threads_head);
	ok &= field(b, d->tstate_size, d->tstate_prev, 8, &l->tstate_prev);
	ok &= field(b, d->tstate_size, d->tstate_next, 8, &l->tstate_next);
	ok &= field(b, d->tstate_size, d->tstate_interp, 8, &l->tstate_interp);
	ok &= field(b, d->tstate_size, d->tstate_current_frame, 8, &l->tstate_frame);
	ok &= field(b, d->tstate_size, d->tstate_thread_id, 8, &l->tstate_thread_id);
	ok &= field(b, d->tstate_size, d->tstate_native_thread_id, 8, &l->tstate_native_thread_id);
	ok &= field(b, d->frame_size, d->frame_previous, 8, &l->frame_previous);
	ok &= field(b, d->frame_size, d->frame_executable, 8, &l->frame_code);
	ok &= field(b, d->frame_size, d->frame_instr_ptr, 8, &l->frame_instr);
	ok &= field(b, d->frame_size, d->frame_owner, 1, &owner);
	ok &= field(b, d->code_size, d->code_filename, 8, &l->code_filename);
	ok &= field(b, d->code_size, d->code_name, 8, &l->code_name);
	ok &= field(b, d->code_size, d->code_qualname, 8, &l->code_qualname);
	ok &= field(b, d->code_size, d->code_linetable, 8, &l->code_linetable);
	ok &= field(b, d->code_size, d->code_firstlineno, 4, &l->code_firstlineno);
	/* co_code_adaptive is the trailing array: it may sit at the declared size itself. */
	ok &= field(b, d->code_size, d->code_adaptive, 0, &l->code_adaptive);
	ok &= field(b, d->object_size, d->object_type, 8, &l->object_type);
	ok &= field(b, d->bytes_size, d->bytes_ob_size, 8, &l->bytes_size);
	ok &= field(b, d->bytes_size, d->bytes_sval, 0, &l->bytes_sval);
	ok &= field(b, d->unicode_size, d->unicode_state, 4, &l->unicode_state);
	ok &= field(b, d->unicode_size, d->unicode_length, 8, &l->unicode_length);
	ok &= field(b, d->unicode_size, d->unicode_ascii_size, 0, &l->unicode_ascii_size);
	/* pyproc.c reads a str's and a bytes' header (and an object's type) into 64 bytes. */
	ok &= l->unicode_state + 4 <= 64 && l->unicode_length + 8 <= 64 &&
	      l->bytes_size + 8 <= 64 && l->object_type + 8 <= 64;
	if (!ok)
		return -EINVAL;
	l->frame_owner = owner;
	/* asciiobject_size is a size, not an offset: read it as such. */
	l->unicode_ascii_size = (uint32_t)u64_at(b, d->unicode_ascii_size);
	if (l->unicode_ascii_size < 32 || l->unicode_ascii_size > 256)
		return -EINVAL;
	/* PyCompactUnicodeObject adds utf8_length and utf8 (Include/cpython/unicodeobject.h). */
	l->unicode_compact_size = l->unicode_ascii_size + 16;
	/*
	 * enum _frameowner (3.13 Include/internal/pycore_frame.h, 3.14
	 * Include/internal/pycore_interpframe_structs.h): the frame the interpreter loop pushes
	 * on the C stack at each entry from C is FRAME_OWNED_BY_CSTACK (3) in 3.13 and
	 * FRAME_OWNED_BY_INTERPRETER (3) in 3.14 (Python/ceval.c _PyEval_EvalFrameDefault:
	 * entry.frame.owner), whose CSTACK (4) no frame takes.
	 */
	l->owner_generator = 1;
	l->owner_cstack = 3;
	/*
	 * 3.14: f_executable is a _PyStackRef (Include/internal/pycore_stackref.h, GIL build:
	 * Py_TAG_BITS 3; the object is the bits with Py_TAG_REFCNT (1) cleared, and both bits
	 * set are a tagged int, never a code object).
	 */
	if (minor >= 14)
		l->frame_code_tag = 3;
	/*
	 * Not in _Py_DebugOffsets, so from the release's own headers, for that release alone,
	 * and only while the structures are the size those headers give: co_version
	 * (Include/cpython/code.h, _PyCode_DEF: after co_framesize, 4 bytes), numbered from the
	 * interpreter's own counter (Objects/codeobject.c init_code(): func_state.next_version);
	 * next_id, 16 bytes after interpreters.head (Include/internal/pycore_runtime.h, 3.14
	 * pycore_runtime_structs.h: struct pyinterpreters {PyMutex mutex; head; main; int64_t
	 * next_id}); 3.14: _co_firsttraceable (Include/cpython/code.h: 192, sizeof(PyCodeObject)
	 * 216 in a GIL build; offsetof() on Debian's 3.14.10 headers; in a running 3.14.10, the
	 * index of each code object's RESUME, as dis lists it).
	 */
	if (u64_at(b, d->code_size) >= 96 && l->runtime_interpreters_head % 8 == 0 &&
	    u64_at(b, d->runtime_size) >= (uint64_t)l->runtime_interpreters_head + 24) {
		l->code_version = 92;
		l->runtime_interpreters_next_id = l->runtime_interpreters_head + 16;
	}
	if (minor == 14 && u64_at(b, d->code_size) == 216 && l->code_adaptive == 208)
		l->code_firsttraceable = 192;
	set_read_sizes(l);
	return 0;
}
