/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load: INTERNAL to exporter/symbols/. Loading an object's heavy part -- its symbols (symtab.h),
 * its DWARF (the file's or its debug file's, debugfile.h; mapped, compressed sections inflated
 * once into an unlinked file; left out when larger than the budget) and a Go binary's
 * .gopclntab -- after making room under the byte budget by unloading the least recently used
 * objects. Defines elf_object__debug_file() of symbolize.h.
 * Formats: ELF gABI "Section Compression" (Elf64_Chdr, ELFCOMPRESS_ZLIB; zlib, RFC 1950), the
 * DWARF sections by their .debug_* names, Go's table: exporter/runtime/go/gopclntab.h.
 */
#ifndef SPANPROF_SYMBOLS_LOAD_H
#define SPANPROF_SYMBOLS_LOAD_H

#include <stddef.h>

struct elf_object;
struct symcache;

/*
 * Unloads least recently used objects, never @keep, until @need more bytes fit in the budget
 * (objects without DWARF first, the answers kept over unloads last). Never fails.
 */
void symc_make_room(struct symcache *c, struct elf_object *keep, size_t need);
/*
 * Loads symbols and DWARF of @o (its first lookup, or the first after an unload). Failures leave
 * that part empty; -ENOENT when the file cannot be read again (lookups then answer nothing).
 */
int elf_object__load(struct elf_object *o);

#endif /* SPANPROF_SYMBOLS_LOAD_H */
