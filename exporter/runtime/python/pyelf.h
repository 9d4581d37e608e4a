/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pyelf: is this ELF file a CPython interpreter (the executable, when it links the
 * interpreter in, as Debian's python3.11, or libpython3.X.so), which version, and where are
 * the objects an out-of-process reader starts from. Reads nothing but the file.
 *
 * Sources: the symbols CPython exports (Include/pylifecycle.h Py_Version, 3.11+; the
 * _PyRuntime state of Include/internal/pycore_runtime.h, in its own ".PyRuntime" section in
 * the 3.10+ builds seen here; the type objects PyCode_Type, PyUnicode_Type, PyBytes_Type) and
 * the ELF gABI (symbol tables, PT_LOAD, PT_TLS).
 */
#ifndef SPANPROF_RUNTIME_PYTHON_PYELF_H
#define SPANPROF_RUNTIME_PYTHON_PYELF_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/* Where the version came from, most trusted first. */
enum pyelf_version_source {
	PYELF_VERSION_NONE = 0,
	PYELF_VERSION_SYMBOL,	/* Py_Version (3.11+): PY_VERSION_HEX, micro included */
	PYELF_VERSION_FILENAME, /* python3.X / libpython3.X.so in the file name: major.minor only */
};

#define PYELF_MAX_LOADS 8
#define PYELF_LOOP_PARTS 2

struct pyelf_info {
	uint32_t version_hex; /* PY_VERSION_HEX (0x030b07f0); FILENAME: micro and release 0 */
	uint8_t major, minor;
	enum pyelf_version_source version_source;
	/* Link-time virtual addresses (runtime = vaddr + load bias); 0 when absent. */
	uint64_t runtime_vaddr, runtime_size; /* _PyRuntime symbol, else the .PyRuntime section */
	uint64_t code_type_vaddr;	      /* PyCode_Type */
	uint64_t unicode_type_vaddr;	      /* PyUnicode_Type */
	uint64_t bytes_type_vaddr;	      /* PyBytes_Type */
	/* _Py_tss_tstate (3.12+, a local TLS symbol of .symtab): offset in the module's PT_TLS
	 * block, valid when has_tss_tstate. */
	uint64_t tss_tstate_offset;
	int has_tss_tstate;
	/*
	 * The interpreter loop's code, whose native frames Python frames replace
	 * (runtime/python/pymerge.h): the function symbol _PyEval_EvalFrameDefault and, when the
	 * file's .symtab has it, its split-off "_PyEval_EvalFrameDefault.cold" (else that part as
	 * the file's CFI shows it, when it does unambiguously: find_loop_cold_part()); link-time
	 * [vaddr, vaddr + size), size 0 when absent (then only the symbolizer's names tell).
	 */
	struct {
		uint64_t vaddr, size;
	} loop[PYELF_LOOP_PARTS];
	/* loop[1] was found from the CFI, not a symbol: the symbolizer names its PCs nothing. */
	bool loop_cold_from_cfi;
	/* PT_LOAD segments, to turn a mapping of the file into a load bias. */
	struct {
		uint64_t vaddr, offset, filesz;
	} loads[PYELF_MAX_LOADS];
	unsigned int n_loads;
};

/*
 * Inspects @elf (x86-64 ELF64; @path, the file's name as mapped, may be NULL: it is only used
 * for the version of 3.8-3.10, which export no Py_Version) into @out (zeroed first).
 * A file is CPython when it defines _PyRuntime (symbol or section), PyCode_Type and the
 * interpreter loop, _PyEval_EvalFrameDefault (exported by every version).
 * Returns 0 (CPython, version known); -ENOENT: not CPython (no error: PyPy, a shell, any other
 * library); -ENOTSUP: CPython whose version could not be learnt from the file (3.8-3.10 under
 * a name without the version: @out is filled but for the version; a 3.13+ process still says
 * its version in _Py_DebugOffsets); -EINVAL: corrupt ELF (never crashes).
 */
int pyelf__inspect(Elf *elf, const char *path, struct pyelf_info *out);

/*
 * Whether link-time address @vaddr is in the interpreter loop's code of @info (its loop[]
 * ranges): a PC there is a frame of _PyEval_EvalFrameDefault, as the file's symbol table names it.
 */
bool pyelf__in_loop(const struct pyelf_info *info, uint64_t vaddr);

/*
 * Major and minor from a CPython file name: the base name of @path is python3.X, python3.Xd /
 * m / t, or libpython3.X*.so*. Returns 0, or -ENOENT.
 */
int pyelf__version_from_name(const char *path, unsigned int *major, unsigned int *minor);

/*
 * The load bias of a file whose bytes from @file_offset are mapped at @map_start (one line of
 * /proc/PID/maps): runtime address - link-time vaddr. 0, or -ENOENT when no PT_LOAD of @info
 * holds that offset.
 */
int pyelf__load_bias(const struct pyelf_info *info, uint64_t map_start, uint64_t file_offset,
		     uint64_t *bias);

#endif /* SPANPROF_RUNTIME_PYTHON_PYELF_H */
