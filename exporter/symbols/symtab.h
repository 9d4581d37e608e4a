/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symtab: INTERNAL to exporter/symbols/. An object's function symbols (STT_FUNC, STT_GNU_IFUNC)
 * as a compact array sorted by address (struct csym, 16 bytes each, one per address: global
 * over weak over local names), read in chunks from .symtab (the file's, else its debug file's),
 * else .dynsym together with the .symtab of its MiniDebugInfo (.gnu_debugdata,
 * exporter/symbols/minidebuginfo.h); a symbol's name is read from the string table in the file
 * when a lookup first hits it, then kept and demangled (owned by the object until it unloads).
 * Formats: ELF gABI "Symbol Table" and "String Table"; GDB manual "MiniDebugInfo".
 */
#ifndef SPANPROF_SYMBOLS_SYMTAB_H
#define SPANPROF_SYMBOLS_SYMTAB_H

#include <stdint.h>

#include <gelf.h>

struct csym;
struct elf_object;
struct sname;

/* One symbol table to load: the first section of @type of @elf, read through @fd. */
struct symtab_src {
	Elf *elf;
	int fd;
	GElf_Word type;
};

/*
 * Loads the function symbols of @srcs[0] and, when @nsrc is 2, of @srcs[1] (MiniDebugInfo) into
 * o->syms (charged to the index). 0, -ENOENT (no table in any source) or -ENOMEM.
 */
int symc_load_symbol_tables(struct elf_object *o, const struct symtab_src *srcs, int nsrc);
/* symc_load_symbol_tables() of one table: the first section of @type of @elf, read through @fd. */
int symc_load_symbols(struct elf_object *o, Elf *elf, int fd, GElf_Word type);
/*
 * @o's MiniDebugInfo, decoded once into o->mini_fd (held by @o), opened as ELF (the caller ends
 * it); NULL when it has none or it is unreadable (counted in stats once).
 */
Elf *symc_open_minidebuginfo(struct elf_object *o, Elf *elf);
/* End of the PT_LOAD segment holding @vaddr (@vaddr itself when none does). */
uint64_t symc_segment_end(const struct elf_object *o, uint64_t vaddr);
/* The symbol of loaded @o holding @vaddr (sizeless: up to the next one), or NULL. */
const struct csym *symc_find_symbol(const struct elf_object *o, uint64_t vaddr);
/* The name of @s (owned by @o while loaded), or NULL when unreadable, empty or unterminated. */
const struct sname *symc_sym_name(struct elf_object *o, const struct csym *s);

#endif /* SPANPROF_SYMBOLS_SYMTAB_H */
