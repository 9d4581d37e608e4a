/* SPDX-License-Identifier: Apache-2.0 */
/*
 * minidebuginfo: the symbol table some distributions (Fedora, RHEL, CentOS) ship inside stripped
 * binaries, in the section .gnu_debugdata: an xz stream (the .xz container format, "The .xz
 * File Format" 1.x, tukaani.org) holding a whole ELF file whose .symtab keeps the function
 * symbols that are not in the binary's .dynsym (GDB manual, "MiniDebugInfo"). Decoded with
 * liblzma. The symbols of that inner ELF use the outer file's virtual addresses.
 */
#ifndef SPANPROF_SYMBOLS_MINIDEBUGINFO_H
#define SPANPROF_SYMBOLS_MINIDEBUGINFO_H

#include <stdbool.h>
#include <stdint.h>

#include <gelf.h>

/* Largest decoded inner ELF accepted (real ones are tens of KiB to a few MiB). */
#define MINIDEBUGINFO_MAX_BYTES (64u << 20)
/* Memory liblzma may use to decode (xz -9 needs 65 MiB; find-debuginfo uses the default -6). */
#define MINIDEBUGINFO_MEMLIMIT (96u << 20)

/*
 * True when @elf (opened by the caller on a file) has a non-empty .gnu_debugdata section.
 */
bool minidebuginfo__present(Elf *elf);

/*
 * Decodes the .gnu_debugdata section of @elf, whose bytes are read with pread from @fd (the
 * descriptor @elf reads; a regular file of @file_size bytes), into an unlinked temporary file
 * (in /var/tmp, else /tmp) and returns its descriptor, owned by the caller, positioned
 * anywhere: read it with pread or libelf. The content is checked to be an xz stream that
 * decodes completely to at most MINIDEBUGINFO_MAX_BYTES starting with the ELF magic; the caller
 * validates the ELF itself.
 * Errors (negative errno): -ENOENT no such section (or SHT_NOBITS, empty); -EBADMSG corrupt or
 * truncated xz data, a stream that is not xz, trailing garbage, output over the limit or not
 * ELF; -ENOMEM; other -errno from reading or writing.
 */
int minidebuginfo__extract(Elf *elf, int fd, uint64_t file_size);

#endif /* SPANPROF_SYMBOLS_MINIDEBUGINFO_H */
