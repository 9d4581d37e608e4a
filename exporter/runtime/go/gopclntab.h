/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gopclntab: names Go functions from the PC/line table every Go binary carries for its own
 * stack traces (`.gopclntab`, the runtime's `pcHeader`), so a binary built with
 * `-ldflags='-s -w'` (no .symtab, no DWARF) is still named: function, file, line and the
 * chain of inlined calls at a PC.
 *
 * Format (facts from the Go runtime's src/runtime/symtab.go, runtime2.go (`_func`),
 * symtabinl.go (`inlinedCall`), internal/abi/symtab.go (magics, PCDATA/FUNCDATA indexes) and
 * debug/gosym): layouts of Go 1.16-1.17 (magic 0xfffffffa: absolute entry addresses and
 * funcdata pointers), 1.18-1.19 (0xfffffff0) and 1.20 and later (0xfffffff1), little-endian,
 * 8-byte pointers, PC quantum 1 (amd64). The 1.2-1.15 layout is reported as -ENOTSUP.
 *
 * The table is found by its section name, else the symbol `runtime.pclntab`, else (in a file
 * without section headers) by scanning the read-only PT_LOAD segments for its header, checked
 * against the function table. The
 * runtime's `moduledata` (found in the writable segments: a word holding the table's address,
 * in the file or as the addend of an R_X86_64_RELATIVE relocation, as position-independent
 * and -buildmode=c-shared files keep it; checked field by field; its layout chosen by the
 * Go version of the build info) gives the text base and `gofunc` (the base of inline trees).
 * Without it: the symbol `runtime.text`, the header's text start (1.18-1.25) or the `.text` section
 * for the base, the symbol `go:func.*` for inline trees. Without inline trees, a PC inside
 * inlined code is named by its physical function only, with no file:line (which would be the
 * inlined callee's).
 *
 * Every read is bounds-checked against the file's bytes: a corrupt table gives an error, never
 * a read outside the image or a name that the table does not hold for that PC.
 */
#ifndef SPANPROF_RUNTIME_GO_GOPCLNTAB_H
#define SPANPROF_RUNTIME_GO_GOPCLNTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gopclntab;

/*
 * Cheap first test on the headers: false when @elf is certainly no Go binary (it has sections
 * and neither .gopclntab nor .go.buildinfo), so the caller need not map it for
 * gopclntab__open(). True for files without section headers (the table is then searched for).
 */
bool gopclntab__maybe(Elf *elf);

/*
 * Reads the table of the ELF file whose bytes are @image (@size bytes, normally the whole
 * file mapped read-only); @elf is a libelf handle of the same file, used only during this
 * call (sections, program headers, .symtab). The table keeps pointers into @image, which must
 * stay mapped and unchanged until gopclntab__free().
 * Returns the table, or NULL with errno: ENOENT (no Go table: not a Go binary), ENOTSUP (a
 * Go layout older than 1.16, or not amd64), EINVAL (a table that fails its checks), ENOMEM.
 */
struct gopclntab *gopclntab__open(Elf *elf, const void *image, size_t size);
/* NULL is a no-op. Does not unmap the image. */
void gopclntab__free(struct gopclntab *t);

/* One frame at a PC. Strings point into the image (NUL-terminated, checked). */
struct gopclntab_frame {
	const char *function; /* Go symbol name, e.g. "main.(*server).handle" */
	const char *file;     /* source path as the compiler recorded it; NULL if unknown */
	int line;	      /* 1-based; 0 if unknown */
};

/*
 * The frames at ELF virtual address @vaddr (for a return address, pass the call site, i.e.
 * return address - 1): inlined calls innermost first, the physical function last, at most
 * @max. Returns the number of frames, 0 when @vaddr is in no Go function of the table,
 * -EINVAL when the table is corrupt where it describes @vaddr, -E2BIG when the inline chain
 * is longer than @max (nothing written that could be taken for a whole chain).
 */
int gopclntab__lookup(const struct gopclntab *t, uint64_t vaddr, struct gopclntab_frame *out,
		      int max);

/* Whether @vaddr lies in a function of the table (Go code, not C linked in by cgo). */
bool gopclntab__covers(const struct gopclntab *t, uint64_t vaddr);

/*
 * Whether, at @vaddr, the Go function holding it has not set up its frame pointer: nothing
 * pushed yet (its stack-pointer delta, the `pcsp` table, is 0: a frameless function, the
 * instructions before `PUSHQ BP` or after `POPQ BP`), or BP pushed with `MOVQ SP, BP` still
 * to run. A frame-pointer walk that starts there skips the function's caller (it reads the
 * caller's saved frame). 1 or 0; -ENOENT for an address of no Go function or a function
 * without the table; -EINVAL for a corrupt table. Only meaningful for the innermost frame (the
 * sampled PC), not for return addresses.
 */
int gopclntab__frame_pending(const struct gopclntab *t, uint64_t vaddr);

/* Number of functions in the table. */
size_t gopclntab__nfuncs(const struct gopclntab *t);
/*
 * Function @i (0 <= i < nfuncs, ordered by address): its entry ELF vaddr, the first address
 * past it (the next function's entry, or the end of the text), and its name. 0 or -EINVAL.
 */
int gopclntab__func(const struct gopclntab *t, size_t i, uint64_t *entry, uint64_t *end,
		    const char **name);
/* 116 (Go 1.16-1.17 layout), 118 (Go 1.18-1.19) or 120 (Go 1.20 and later). */
int gopclntab__layout(const struct gopclntab *t);
/* Whether inline trees can be read (1.16-1.17: always; later: moduledata.gofunc found). */
int gopclntab__has_inline(const struct gopclntab *t);
/* The table's position in the image: byte offset and length (for page accounting). */
void gopclntab__extent(const struct gopclntab *t, size_t *offset, size_t *len);

/*
 * The first section of @elf named @name, its header in *@sh; NULL when there is none or the
 * section name table can't be read (unreadable section headers are skipped). Also used by
 * golabels.c (the .go.buildinfo section).
 */
Elf_Scn *gopclntab__section(Elf *elf, const char *name, GElf_Shdr *sh);

/*
 * The Go version in the build info of the ELF file @image (@size bytes; @elf a libelf handle of
 * the same file): the `.go.buildinfo` section, header "\xff Go buildinf:", pointer size, flags
 * (bit 1: strings inline, Go 1.18+), then at offset 32 the version as a uvarint-prefixed string
 * (src/debug/buildinfo/buildinfo.go). Writes it NUL-terminated into @out (@len bytes).
 * Returns 0, -ENOENT (no build info: not Go), -ENOTSUP (pre-1.18 format), -EINVAL (corrupt).
 */
int gopclntab__go_version(Elf *elf, const void *image, size_t size, char *out, size_t len);

/* The minor version of "go1.N", "go1.N.P", "go1.NrcK" (and "devel go1.N-..."): N, or -1. */
int gopclntab__go_minor(const char *version);

#endif /* SPANPROF_RUNTIME_GO_GOPCLNTAB_H */
