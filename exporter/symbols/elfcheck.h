/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfcheck: the first checks every reader of a profiled process's ELF files makes (System V
 * gABI "ELF Header", "Program Header" and "Sections"; the x86-64 psABI for the machine), shared
 * by allocsyms.c (allocator uprobes), tlsctx.c (the thread context's TLS variable), the
 * symbolizer and MiniDebugInfo.
 * Read-only on a libelf handle the caller owns; nothing is allocated.
 */
#ifndef SPANPROF_ELFCHECK_H
#define SPANPROF_ELFCHECK_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/* libelf's elf_version(EV_CURRENT), asked once: false when this libelf can't be used. */
bool elfcheck__libelf_ready(void);

/*
 * The ELF header and the section and program header tables of @elf lie within the file's
 * @size bytes (a truncated copy is refused before libelf reads past its end).
 * 0, or -EINVAL (not ELF, or a table past the end).
 */
int elfcheck__within(Elf *elf, uint64_t size);

/*
 * @elf is an ELF64 x86-64 executable or shared object (ET_EXEC or ET_DYN): fills *@ehdr and
 * *@nph (program headers). 0, -EINVAL (NULL, not ELF, unreadable headers) or -ENOTSUP
 * (another class, machine or type).
 */
int elfcheck__x86_64(Elf *elf, GElf_Ehdr *ehdr, size_t *nph);

/*
 * The first SHT_DYNSYM, SHT_SYMTAB and SHT_DYNAMIC sections of @elf, NULL when absent;
 * @dynamic may be NULL when not wanted. 0, or -EINVAL on an unreadable section header.
 */
int elfcheck__sections(Elf *elf, Elf_Scn **dynsym, Elf_Scn **symtab, Elf_Scn **dynamic);

/*
 * The first section of @elf named @name (".gopclntab", ".gnu_debuglink", ...), its header in
 * *@shdr; NULL when there is none, or when the section name table or a section header before it
 * can't be read (a damaged file is not searched further).
 */
Elf_Scn *elfcheck__section(Elf *elf, const char *name, GElf_Shdr *shdr);

/* @elf has a section @name with bytes in the file (not SHT_NOBITS, not empty). */
bool elfcheck__has_data(Elf *elf, const char *name);

/*
 * Copies @len bytes at link-time virtual address @vaddr of @elf from the allocated section
 * holding them all (a variable's initial value: .data, .rodata). 0, -ENOENT (no such section,
 * or SHT_NOBITS: zero-initialised, not in the file) or -EINVAL (section data unreadable).
 */
int elfcheck__read_vaddr(Elf *elf, uint64_t vaddr, void *buf, size_t len);

/* A symbol table section's entries (ELF64: Elf64_Sym, gABI "Symbol Table"). */
struct elfcheck_symtab {
	Elf_Data *data; /* owned by libelf; NULL when the table has no data */
	size_t n;	/* entries, the null entry 0 included; 0 when data is NULL */
	size_t strndx;	/* section index of the table's string table (sh_link) */
};

/*
 * Opens the symbol table section @scn into @t (read the entries with gelf_getsym(t->data, i)
 * and their names with elf_strptr(elf, t->strndx, st_name)). 0, or -EINVAL when its header
 * is unreadable, its entries are not Elf64_Sym or its data can't be read.
 */
int elfcheck__symtab(Elf_Scn *scn, struct elfcheck_symtab *t);

#endif
