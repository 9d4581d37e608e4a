/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfhdr: INTERNAL to exporter/symbols/. What an object's ELF headers say, read with libelf from
 * an Elf opened with ELF_C_READ (pread: nothing mapped, nothing kept): the checks later code
 * relies on, the GNU build ID, the PT_LOAD segments, the PLT sections, and what loading its
 * symbols and DWARF will charge to the budget. Also elf_object__file_offset_to_vaddr() and
 * elf_object__build_id() of symbolize.h.
 * Formats: ELF gABI (ELF header, section header table, program header table, note section,
 * symbol table; "Section Compression" for SHF_COMPRESSED), the GNU build-id note
 * (NT_GNU_BUILD_ID, name "GNU"), x86-64 psABI for the PLT sections (.plt, .plt.sec, .plt.got).
 */
#ifndef SPANPROF_SYMBOLS_ELFHDR_H
#define SPANPROF_SYMBOLS_ELFHDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

struct elf_object;

/* 0, or -ENOEXEC: not ET_EXEC/ET_DYN, or headers or loadable bytes past the file's @size. */
int symc_elf_validate(Elf *elf, uint64_t size);
/* Bytes of @elf's .debug_* sections to charge: all (@mapped false), else a share of some. */
size_t symc_debug_sections_size(Elf *elf, bool mapped);
/* Bytes a load charges for @elf's symbols: 16 a function symbol of its larger table. */
size_t symc_symbols_estimate(Elf *elf);
/* Bytes @elf's DWARF may cost, whole (@whole) or what opening it charges (see elfhdr.c). */
size_t symc_dwarf_estimate(Elf *elf, bool whole, bool in_memory);
/* Lower-case hex of the NT_GNU_BUILD_ID note (malloc'd: the caller frees it), or NULL. */
char *symc_read_build_id(Elf *elf);
/* @o->plts, @o->nplts from @elf's PLT sections; none when its section table is unusable. */
void symc_read_plts(struct elf_object *o, Elf *elf);
/*
 * @o->loads (allocated, owned by @o, freed by elf_object__free() also on failure) and
 * @o->nloads: @elf's PT_LOAD headers. 0, -ENOEXEC or -ENOMEM.
 */
int symc_read_loads(struct elf_object *o, Elf *elf);

#endif /* SPANPROF_SYMBOLS_ELFHDR_H */
