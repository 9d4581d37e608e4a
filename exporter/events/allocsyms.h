/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allocsyms: the allocator entry points an ELF file defines, for the alloc profile's uprobes
 * (exporter/events/ev_alloc.c, bpf/alloc.h; docs/profile-types.md).
 *
 * The C entry points (malloc, calloc, realloc, aligned_alloc, memalign, posix_memalign, valloc,
 * pvalloc) of any file that defines them: libc.so.6, an allocator library (jemalloc, tcmalloc,
 * mimalloc), a static executable. The C++ operator new family (_Znwm, _Znam and their nothrow
 * and align_val_t forms, Itanium C++ ABI mangling for a 64-bit size_t) only in a file that also
 * defines malloc: libstdc++'s operator new is a wrapper around the malloc of another file, which
 * is probed already (probing both would count each new twice), while an allocator library's own
 * operator new has its own fast path that never enters malloc.
 *
 * Symbols are defined STT_FUNC entries (GNU_IFUNC resolvers are not the function) of .dynsym;
 * .symtab is read too for an executable without a program interpreter (static, static-pie),
 * whose malloc is usually in .symtab only. Names with the same address (glibc's memalign and
 * aligned_alloc) give one entry, the first in the order above.
 */
#ifndef SPANPROF_ALLOCSYMS_H
#define SPANPROF_ALLOCSYMS_H

#include <gelf.h>
#include <stdint.h>

#include "alloc.h"

struct allocsym {
	const char *name; /* static string: the symbol's name */
	uint32_t kind;	  /* enum alloc_kind: where the size is */
	uint64_t vaddr;	  /* ELF virtual address (st_value) */
	uint64_t size;	  /* st_size, at least 1 */
	uint64_t offset;  /* file offset of vaddr (for the uprobe) */
};

struct allocsyms {
	uint32_t n; /* entries used in e, at most ALLOC_MAX_FUNCS */
	struct allocsym e[ALLOC_MAX_FUNCS];
};

/*
 * Fills @out with the allocator entry points @elf defines (n = 0: none). Reads nothing but @elf.
 * Returns 0, -ENOTSUP (not an x86-64 ELF64 file), -EINVAL (corrupt symbol tables or headers:
 * never crashes).
 */
int allocsyms__find(Elf *elf, struct allocsyms *out);

/*
 * The same for the open file @fd (its own libelf handle; the offset of @fd is not used).
 * 0, -ENOEXEC (not ELF), or the errors above.
 */
int allocsyms__find_fd(int fd, struct allocsyms *out);

#endif /* SPANPROF_ALLOCSYMS_H */
