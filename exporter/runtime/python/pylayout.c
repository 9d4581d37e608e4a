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
 * 3.13's _Py_DebugOffsets: byte positions of the u64 fields used, inside the structure
 * (Include/internal/pycore_runtime.h at v3.13.0). Each group starts with its structure's size.
 */
enum {
	DO_VERSION = 8,
	DO_FREE_THREADED = 16,
	DO_RUNTIME_SIZE = 24,
	DO_RUNTIME_INTERPRETERS_HEAD = 40,
	DO_INTERP_SIZE = 48,
	DO_INTERP_NEXT = 64,
	DO_INTERP_THREADS_HEAD = 72,
	DO_TSTATE_SIZE = 152,
	DO_TSTATE_PREV = 160,
	DO_TSTATE_NEXT = 168,
	DO_TSTATE_INTERP = 176,
	DO_TSTATE_CURRENT_FRAME = 184,
	DO_TSTATE_THREAD_ID = 192,
	DO_TSTATE_NATIVE_THREAD_ID = 200,
	DO_FRAME_SIZE = 224,
	DO_FRAME_PREVIOUS = 232,
	DO_FRAME_EXECUTABLE = 240,
	DO_FRAME_INSTR_PTR = 248,
	DO_FRAME_OWNER = 264,
	DO_CODE_SIZE = 272,
	DO_CODE_FILENAME = 280,
	DO_CODE_NAME = 288,
	DO_CODE_QUALNAME = 296,
	DO_CODE_LINETABLE = 304,
	DO_CODE_FIRSTLINENO = 312,
	DO_CODE_ADAPTIVE = 344,
	DO_OBJECT_SIZE = 352,
	DO_OBJECT_TYPE = 360,
	DO_BYTES_SIZE = 512,
	DO_BYTES_OB_SIZE = 520,
	DO_BYTES_SVAL = 528,
	DO_UNICODE_SIZE = 536,
	DO_UNICODE_STATE = 544,
	DO_UNICODE_LENGTH = 552,
	DO_UNICODE_ASCII_SIZE = 560,
};

_Static_assert(PYLAYOUT_DEBUG_OFFSETS_SIZE == 584, "3.13 _Py_DebugOffsets is 584 bytes");

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
	struct pylayout *l = out;
	uint64_t version;
	uint32_t owner = 0;
	bool ok = true;

	memset(out, 0, sizeof(*out));
	if (len < PYLAYOUT_DEBUG_OFFSETS_SIZE || memcmp(b, "xdebugpy", 8))
		return -EINVAL;
	version = u64_at(b, DO_VERSION);
	if (version >> 24 != 3 || ((version >> 16) & 0xff) < 13)
		return -EINVAL; /* the cookie is there only from 3.13 on */
	if (((version >> 16) & 0xff) != 13)
		return -ENOTSUP;
	if (u64_at(b, DO_FREE_THREADED))
		return -ENOTSUP;
	l->version_hex = (uint32_t)version;
	l->major = 3;
	l->minor = 13;
	l->interpreter_frames = 1;
	l->tstate_frame_kind = PYLAYOUT_TSTATE_FRAME;
	l->instr_kind = PYLAYOUT_INSTR_PTR;
	l->lines = PYLINES_PEP657;
	ok &= field(b, DO_RUNTIME_SIZE, DO_RUNTIME_INTERPRETERS_HEAD, 8,
		    &l->runtime_interpreters_head);
	ok &= field(b, DO_INTERP_SIZE, DO_INTERP_NEXT, 8, &l->interp_next);
	ok &= field(b, DO_INTERP_SIZE, DO_INTERP_THREADS_HEAD, 8, &l->interp_threads_head);
	ok &= field(b, DO_TSTATE_SIZE, DO_TSTATE_PREV, 8, &l->tstate_prev);
	ok &= field(b, DO_TSTATE_SIZE, DO_TSTATE_NEXT, 8, &l->tstate_next);
	ok &= field(b, DO_TSTATE_SIZE, DO_TSTATE_INTERP, 8, &l->tstate_interp);
	ok &= field(b, DO_TSTATE_SIZE, DO_TSTATE_CURRENT_FRAME, 8, &l->tstate_frame);
	ok &= field(b, DO_TSTATE_SIZE, DO_TSTATE_THREAD_ID, 8, &l->tstate_thread_id);
	ok &= field(b, DO_TSTATE_SIZE, DO_TSTATE_NATIVE_THREAD_ID, 8, &l->tstate_native_thread_id);
	ok &= field(b, DO_FRAME_SIZE, DO_FRAME_PREVIOUS, 8, &l->frame_previous);
	ok &= field(b, DO_FRAME_SIZE, DO_FRAME_EXECUTABLE, 8, &l->frame_code);
	ok &= field(b, DO_FRAME_SIZE, DO_FRAME_INSTR_PTR, 8, &l->frame_instr);
	ok &= field(b, DO_FRAME_SIZE, DO_FRAME_OWNER, 1, &owner);
	ok &= field(b, DO_CODE_SIZE, DO_CODE_FILENAME, 8, &l->code_filename);
	ok &= field(b, DO_CODE_SIZE, DO_CODE_NAME, 8, &l->code_name);
	ok &= field(b, DO_CODE_SIZE, DO_CODE_QUALNAME, 8, &l->code_qualname);
	ok &= field(b, DO_CODE_SIZE, DO_CODE_LINETABLE, 8, &l->code_linetable);
	ok &= field(b, DO_CODE_SIZE, DO_CODE_FIRSTLINENO, 4, &l->code_firstlineno);
	/* co_code_adaptive is the trailing array: it may sit at the declared size itself. */
	ok &= field(b, DO_CODE_SIZE, DO_CODE_ADAPTIVE, 0, &l->code_adaptive);
	ok &= field(b, DO_OBJECT_SIZE, DO_OBJECT_TYPE, 8, &l->object_type);
	ok &= field(b, DO_BYTES_SIZE, DO_BYTES_OB_SIZE, 8, &l->bytes_size);
	ok &= field(b, DO_BYTES_SIZE, DO_BYTES_SVAL, 0, &l->bytes_sval);
	ok &= field(b, DO_UNICODE_SIZE, DO_UNICODE_STATE, 4, &l->unicode_state);
	ok &= field(b, DO_UNICODE_SIZE, DO_UNICODE_LENGTH, 8, &l->unicode_length);
	ok &= field(b, DO_UNICODE_SIZE, DO_UNICODE_ASCII_SIZE, 0, &l->unicode_ascii_size);
	/* pyproc.c reads a str's and a bytes' header (and an object's type) into 64 bytes. */
	ok &= l->unicode_state + 4 <= 64 && l->unicode_length + 8 <= 64 &&
	      l->bytes_size + 8 <= 64 && l->object_type + 8 <= 64;
	if (!ok)
		return -EINVAL;
	l->frame_owner = owner;
	/* asciiobject_size is a size, not an offset: read it as such. */
	l->unicode_ascii_size = (uint32_t)u64_at(b, DO_UNICODE_ASCII_SIZE);
	if (l->unicode_ascii_size < 32 || l->unicode_ascii_size > 256)
		return -EINVAL;
	/* PyCompactUnicodeObject adds utf8_length and utf8 (Include/cpython/unicodeobject.h). */
	l->unicode_compact_size = l->unicode_ascii_size + 16;
	/* enum _frameowner: Include/internal/pycore_frame.h at v3.13.0. */
	l->owner_generator = 1;
	l->owner_cstack = 3;
	/*
	 * Not in _Py_DebugOffsets, so from the v3.13.0 headers, for 3.13 alone: co_version
	 * (Include/cpython/code.h, _PyCode_DEF: after co_framesize, 4 bytes), numbered from the
	 * interpreter's own counter (Objects/codeobject.c init_code(): func_state.next_version);
	 * and next_id, 16 bytes after interpreters.head (Include/internal/pycore_runtime.h:
	 * struct pyinterpreters {PyMutex mutex; head; main; int64_t next_id}).
	 */
	if (u64_at(b, DO_CODE_SIZE) >= 96 && l->runtime_interpreters_head % 8 == 0 &&
	    u64_at(b, DO_RUNTIME_SIZE) >= (uint64_t)l->runtime_interpreters_head + 24) {
		l->code_version = 92;
		l->runtime_interpreters_next_id = l->runtime_interpreters_head + 16;
	}
	set_read_sizes(l);
	return 0;
}
