/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pylayout: where the fields an out-of-process reader needs sit in one CPython version's
 * structures (byte offsets, x86-64, default non-debug, GIL builds).
 *
 * 3.8-3.12: a table, each figure from the CPython header named beside it at that version's
 * release tag and checked against the DWARF of the interpreters built on this machine kind
 * (test/runtime/test_python.c re-checks them against running interpreters).
 * 3.13-3.14: the interpreter publishes its own offsets in _Py_DebugOffsets at the start of
 * _PyRuntime (cookie "xdebugpy"); pylayout__from_debug_offsets() reads them, so a patch
 * release that moves a field needs no new table (the structure's own layout differs between
 * 3.13 and 3.14: each is known; a later one is refused until it is).
 */
#ifndef SPANPROF_RUNTIME_PYTHON_PYLAYOUT_H
#define SPANPROF_RUNTIME_PYTHON_PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/python/pylines.h"

/* How a thread state leads to its innermost frame. */
enum pylayout_tstate_frame {
	PYLAYOUT_TSTATE_FRAME =
	    1,			/* 3.8-3.10 PyThreadState.frame, 3.13-3.14 current_frame: direct */
	PYLAYOUT_TSTATE_CFRAME, /* 3.11-3.12 PyThreadState.cframe -> _PyCFrame.current_frame */
};

/* What a frame's instruction field holds, and how it becomes a byte offset in the bytecode. */
enum pylayout_instr {
	PYLAYOUT_LASTI_BYTES = 1, /* 3.8-3.9 int f_lasti: byte offset (-1 before the first) */
	PYLAYOUT_LASTI_UNITS,	  /* 3.10 int f_lasti: 2-byte code units (-1 before the first) */
	PYLAYOUT_INSTR_PTR,	  /* 3.11+ pointer into co_code_adaptive (prev_instr, instr_ptr) */
};

#define PYLAYOUT_NO_OWNER 0xffu /* frame owner value absent in this version */

struct pylayout {
	uint32_t
	    version_hex; /* PY_VERSION_HEX of the interpreter (0x030b07f0), or major.minor only */
	uint8_t major, minor;
	enum pylines_format lines;
	enum pylayout_tstate_frame tstate_frame_kind;
	enum pylayout_instr instr_kind;
	int interpreter_frames; /* 3.11+: frames are _PyInterpreterFrame (owner, entry frames) */

	/* _PyRuntimeState */
	uint32_t runtime_interpreters_head;
	uint32_t
	    runtime_autotss_key; /* Py_tss_t {int _is_initialized; pthread_key_t _key}; 0 unknown */
	/* PyInterpreterState */
	uint32_t interp_next, interp_threads_head;
	/* PyThreadState */
	uint32_t tstate_prev, tstate_next, tstate_interp, tstate_thread_id,
	    tstate_native_thread_id;   /* 0: absent */
	uint32_t tstate_frame;	       /* frame, cframe or current_frame */
	uint32_t cframe_current_frame; /* CFRAME only */
	/* PyFrameObject (3.8-3.10) or _PyInterpreterFrame (3.11+) */
	uint32_t frame_previous, frame_code, frame_instr, frame_owner; /* owner: 3.11+ only */
	uint32_t frame_is_entry; /* 3.11 only (0: absent; 3.12+ mark entries with owner_cstack) */
	/* Low bits of the frame's code field that are a tag, not address: 3.14's f_executable is
	 * a _PyStackRef (3: Py_TAG_BITS; both set, a tagged int). 0: a plain pointer. */
	uint32_t frame_code_tag;
	uint8_t owner_generator, owner_cstack; /* PYLAYOUT_NO_OWNER when the version has none */
	/* PyCodeObject */
	uint32_t code_filename, code_name, code_qualname; /* qualname 0: absent (3.8-3.10) */
	uint32_t code_linetable, code_firstlineno;
	uint32_t code_adaptive;	      /* co_code_adaptive, 3.11+ (0: absent) */
	uint32_t code_firsttraceable; /* _co_firsttraceable, 3.11-3.12 and 3.14 (0: unknown) */
	/* co_version, where each code object made takes the next number of a counter that never
	 * goes back (0: none). 3.12: one counter per process. 3.13-3.14: one per interpreter, so
	 * that a version tells code objects apart only while the process has had one interpreter:
	 * runtime_interpreters_next_id says so (below). */
	uint32_t code_version;
	/* _PyRuntimeState.interpreters.next_id (3.13-3.14; 0: not needed, or unknown): the count of
	 * interpreters made, 1 while the main one is the only one there has been. */
	uint32_t runtime_interpreters_next_id;
	/* PyObject, PyUnicodeObject (PEP 393 compact forms), PyBytesObject */
	uint32_t object_type; /* ob_type */
	uint32_t unicode_length, unicode_state;
	uint32_t unicode_ascii_size;	 /* sizeof(PyASCIIObject): compact ASCII data follows */
	uint32_t unicode_compact_size;	 /* sizeof(PyCompactUnicodeObject): other compact data */
	uint32_t bytes_size, bytes_sval; /* ob_size, ob_sval */
	/* Bytes to read from each structure to cover every field above. */
	uint32_t tstate_read, frame_read, code_read;
};

/*
 * The table's layout of CPython @major.@minor (3.8-3.12) into @out (zeroed first; version_hex
 * set to major.minor with micro 0). 0, or -ENOTSUP for a version the table does not cover
 * (3.13+ publish their own: use pylayout__from_debug_offsets()).
 */
int pylayout__for_version(unsigned int major, unsigned int minor, struct pylayout *out);

/* Bytes of _Py_DebugOffsets pylayout__from_debug_offsets() may need: the largest known (3.14). */
#define PYLAYOUT_DEBUG_OFFSETS_SIZE 760

/*
 * Parses the @len bytes of _Py_DebugOffsets read from the start of a 3.13+ process's
 * _PyRuntime (Include/internal/pycore_runtime.h at v3.13.0; pycore_debug_offsets.h from 3.14)
 * into @out. The structure's own layout is that of the release it came with: 3.13 (584 bytes)
 * and 3.14 (760 bytes) are known; @len must cover the release's.
 * Returns 0; -EINVAL (no "xdebugpy" cookie, @len short, or an offset outside the size the
 * structure itself declares: garbage); -ENOTSUP (a free-threaded build, whose objects have
 * another header, or a version whose _Py_DebugOffsets layout is not known: 3.15+).
 */
int pylayout__from_debug_offsets(const void *buf, size_t len, struct pylayout *out);

#endif /* SPANPROF_RUNTIME_PYTHON_PYLAYOUT_H */
