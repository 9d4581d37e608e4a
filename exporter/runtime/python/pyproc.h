/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pyproc: one CPython interpreter in one live process, read from the outside
 * (process_vm_readv, else /proc/PID/mem): where it is (runtime/python/pyelf.h), how its
 * structures are laid out (runtime/python/pylayout.h), its threads and their Python frames,
 * and the names and lines of its code objects.
 *
 * The frame walk here is the user-space twin of the BPF walk (tests, diagnostics, and the
 * reference the BPF step is checked against): per thread state, innermost frame first, one
 * {code object address, instruction byte offset} per Python frame, the C-stack entry frames and
 * incomplete frames of 3.11+ left out as CPython's own frame list leaves them out.
 *
 * Naming: pyproc__code() caches, per code object address, its qualified name, file, first line
 * and line table (one read of the code object and of each of its strings the first time). A
 * freed code object whose address is reused by another must never lend its name: each entry
 * keeps the fields it was named from (type, name and file pointers, line table pointer, first
 * line) and is checked again against the process, with one read, the first time it is used in
 * each epoch (pyproc__new_epoch(): call it once per batch of samples taken together). Once the
 * process has exited, cached entries are served as they are (its last samples are named after
 * it is gone; the read that found it gone is counted).
 *
 * Bad input (a process that exits or unmaps mid-read, garbage where an object should be, a
 * string or table out of bounds) is an error return and a counter by reason, never a crash.
 * Not thread safe: one pyproc is used by one thread at a time.
 */
#ifndef SPANPROF_RUNTIME_PYTHON_PYPROC_H
#define SPANPROF_RUNTIME_PYTHON_PYPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/python/pyelf.h"
#include "runtime/python/pylayout.h"

/* Why a read of the interpreter's memory failed: X(name, description). */
#define PYPROC_ERRORS(X)                                                                           \
	X(READ, "memory not readable (unmapped or changing)")                                      \
	X(GONE, "process exited")                                                                  \
	X(TYPE, "not an object of the expected type (garbage or freed)")                           \
	X(STRING, "string not compact, too long or of an unknown kind")                            \
	X(LINETABLE, "line table out of bounds or malformed")                                      \
	X(LOOP, "list longer than its bound (cycle or garbage)")                                   \
	X(STALE, "cached code object freed and its address reused (renamed)")

enum pyproc_error {
#define PYPROC_ENUM(n, d) PYPROC_ERR_##n,
	PYPROC_ERRORS(PYPROC_ENUM)
#undef PYPROC_ENUM
	    PYPROC_ERR_COUNT
};

/* Short name ("read", "gone", ...) and description of @e; "?" out of range. */
/*
 * @name (an enum name in upper case, A-Z and _) in lower case, made once into @cache (@size
 * bytes, zeroed before the first call; a longer name is cut) and returned from there.
 */
const char *pyproc__lower_name(const char *name, char *cache, size_t size);
const char *pyproc__error_name(enum pyproc_error e);
const char *pyproc__error_desc(enum pyproc_error e);

struct pyproc_stats {
	uint64_t errors[PYPROC_ERR_COUNT];
	uint64_t code_hits, code_misses; /* pyproc__code() served from the cache / read */
};

struct pyproc;
struct procmap;
struct procmaps;

/*
 * Finds the CPython interpreter of process @pid: the files mapped whose base name holds
 * "python" (python3.X executables, libpython3.X.so), then the executable itself, inspected
 * with pyelf__inspect(); then the layout: _Py_DebugOffsets read from the process for 3.13+,
 * pylayout__for_version() for 3.8-3.12.
 * Returns a new pyproc (pyproc__free()), or NULL with errno: ENOENT (no CPython mapped: not an
 * error; PyPy and shell scripts land here), ENOTSUP (CPython of a version or build not handled:
 * a one-line message naming it and the file is written to @why, @why_len bytes, when @why is
 * not NULL, for the caller to log once), ESRCH (gone), EACCES/EPERM, EINVAL (corrupt file or
 * debug offsets: @why says so too), ENOMEM.
 */
struct pyproc *pyproc__new(pid_t pid, char *why, size_t why_len);

/*
 * pyproc__new() for an interpreter file already inspected: the file of mapping @m of @maps
 * (process @pid's mappings, read by the caller; the load bias comes from them), @info and
 * @inspected what pyproc__inspect_file() gave for that file (0 or -ENOTSUP; kept per file by the
 * caller, so that each process of the same interpreter neither re-reads its maps nor re-reads
 * the file). The layout is still the process's own (3.13+: its _Py_DebugOffsets). Same returns,
 * EINVAL also for a NULL argument.
 */
struct pyproc *pyproc__new_in_file(pid_t pid, const struct procmaps *maps, const struct procmap *m,
				   const struct pyelf_info *info, int inspected, char *why,
				   size_t why_len);

/*
 * Inspects the file of mapping @m of process @pid (opened through /proc/PID/map_files, else its
 * path; pyelf__inspect()) into @info. Returns pyelf__inspect()'s result, or -ESRCH (gone), or
 * the open's -errno.
 */
int pyproc__inspect_file(pid_t pid, const struct procmap *m, struct pyelf_info *info);
void pyproc__free(struct pyproc *p);

const struct pylayout *pyproc__layout(const struct pyproc *p);
const struct pyelf_info *pyproc__elf(const struct pyproc *p);
/* Runtime address of _PyRuntime, and the load bias of the file that holds it. */
uint64_t pyproc__runtime(const struct pyproc *p);
uint64_t pyproc__bias(const struct pyproc *p);
/* The file the interpreter was found in, as /proc/PID/maps names it. Owned by @p. */
const char *pyproc__path(const struct pyproc *p);

struct pyframe {
	uint64_t code;	/* address of the code object (id() of it in the process) */
	int64_t offset; /* byte offset of the instruction in the bytecode; -1: not started */
};

struct pythread {
	uint64_t tstate;	   /* PyThreadState address */
	uint64_t thread_id;	   /* pthread_t (threading.get_ident()) */
	uint64_t native_thread_id; /* TID in its own PID namespace, 3.11+ (0 before: not kept) */
	struct pyframe *frames;	   /* innermost first, @n_frames */
	size_t n_frames;
	int truncated; /* the walk stopped early: garbage, unreadable or more than the bound */
};

/* Frames kept per thread by pyproc__threads(). */
#define PYPROC_MAX_FRAMES 1024

/*
 * Walks every interpreter's thread states and each one's frames. @out receives an array of
 * @n threads (free with pyproc__threads_free()). A thread whose walk hits garbage is kept,
 * truncated. 0, or -ESRCH (gone), -EFAULT (runtime unreadable), -ENOMEM; errors are counted.
 */
int pyproc__threads(struct pyproc *p, struct pythread **out, size_t *n);
void pyproc__threads_free(struct pythread *t, size_t n);

struct pycode_info {
	const char *qualname; /* co_qualname (3.11+), else co_name; UTF-8 */
	const char *filename; /* co_filename, UTF-8 */
	int firstlineno;
	/* pywalk__fingerprint() (bpf/python.h) of co_version (3.12-3.13, when not 0) or else
	 * co_name's hash and co_filename's contents, and co_firstlineno, as read; and of the
	 * contents alone (the key the walk takes when its descriptor has no version). A frame
	 * whose PY_FRAME_FP bits match neither (pycode__fingerprint_matches()) was of another
	 * code object. */
	uint32_t fingerprint, content_fingerprint;
	uint32_t version;    /* co_version as read (0: none, or not used for this version) */
	bool version_unique; /* the version told it from every other code object at the read */
};

/*
 * Whether a frame the BPF walk recorded with fingerprint @fingerprint (its PY_FRAME_FP bits)
 * was of the code object @ci describes: its contents' fingerprint, or its version's while
 * versions are unique in the process (3.13: one interpreter so far).
 */
bool pycode__fingerprint_matches(const struct pycode_info *ci, uint32_t fingerprint);

/*
 * The names of the code object at @code (cached; see above). @out points into @p's cache:
 * valid until the next call on @p. 0, or -ESRCH, -EFAULT, -EINVAL (not a code object or
 * garbage strings); errors are counted.
 */
int pyproc__code(struct pyproc *p, uint64_t code, const struct pycode_info **out);

/*
 * Line executing at byte offset @offset of code object @code (pylines__addr2line() on the
 * cached line table): the line, or -ENOENT (no line for that instruction), or the errors of
 * pyproc__code().
 */
int pyproc__line(struct pyproc *p, uint64_t code, int64_t offset);

/* Starts a new epoch: each cached code object is checked again the next time it is used. */
void pyproc__new_epoch(struct pyproc *p);

const struct pyproc_stats *pyproc__stats(const struct pyproc *p);

struct py_desc;
/*
 * The descriptor the Python frame walk (bpf/python_walk.h) works from, for this interpreter:
 * its addresses in the process and its layout. start_boot_ns is left 0 (the caller's: the
 * process identity it keys the descriptor with). 0, or -EINVAL when an offset does not fit the
 * descriptor's 16 bits (a layout no release has had).
 */
int pyproc__desc(const struct pyproc *p, struct py_desc *out);
/*
 * Whether the descriptor changed since pyproc__desc() was last asked for it (3.13: a second
 * interpreter was seen, and frames are keyed by contents from then on): then it is to be
 * written again. Clears the mark.
 */
bool pyproc__desc_changed(struct pyproc *p);

/*
 * Where the interpreter frees code objects: the process address in PyCode_Type.tp_dealloc
 * (code_dealloc(), Objects/codeobject.c, 3.8-3.13; struct _typeobject of
 * Include/cpython/object.h: the object header (a PyVarObject), then tp_name, tp_basicsize,
 * tp_itemsize, tp_dealloc), read from the process, into *@addr. The type is checked first: its
 * tp_name must be "code". 0, or -EINVAL (not so: no such function can be trusted), -ESRCH
 * (gone), -EFAULT (unreadable).
 */
int pyproc__code_dealloc(struct pyproc *p, uint64_t *addr);

#endif /* SPANPROF_RUNTIME_PYTHON_PYPROC_H */
