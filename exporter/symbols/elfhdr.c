// SPDX-License-Identifier: Apache-2.0
/*
 * elfhdr: what an object's ELF headers say (elfhdr.h). Formats: ELF gABI (headers, sections,
 * segments, notes, "Section Compression"), the GNU build-id note, x86-64 psABI PLT sections.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>

#include "symbols/elfhdr.h"
#include "symbols/symcache.h"

/*
 * Checks what later code relies on: headers, and section headers and loadable
 * segments within the file's @size bytes (a truncated copy fails here).
 */
int symc_elf_validate(Elf *elf, uint64_t size)
{
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	size_t n, i;
	Elf_Scn *scn = NULL;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		return -ENOEXEC;
	if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
		return -ENOEXEC;
	if (ehdr.e_shoff > size ||
	    (size - ehdr.e_shoff) / (ehdr.e_shentsize ? ehdr.e_shentsize : 1) < ehdr.e_shnum)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &n) || elf_getshdrnum(elf, &i) || elf_getshdrstrndx(elf, &i))
		return -ENOEXEC;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr))
			return -ENOEXEC;
		/* Debug files keep segments with no bytes whose offsets point past their end. */
		if (phdr.p_type == PT_LOAD && phdr.p_filesz &&
		    (phdr.p_offset > size || size - phdr.p_offset < phdr.p_filesz))
			return -ENOEXEC;
	}
	while ((scn = elf_nextscn(elf, scn)))
		if (!gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
	return 0;
}

/* Bytes of the .debug_* sections libdw may map: charged in full while loaded. */
/*
 * Whether mapped section @name (".debug_*") is charged when the DWARF is opened: not the DIEs
 * and the line programs (charged per unit as lookups use them, charge_unit()), nor the
 * location lists (no lookup reads them).
 */
static bool charged_at_open(const char *name)
{
	static const char *const later[] = {".debug_info", ".debug_line", ".debug_loc",
					    ".debug_loclists"};

	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++)
		if (!strcmp(name, later[i]))
			return false;
	return true;
}

/*
 * Bytes of @elf's .debug_* sections: all of them (@mapped false: libdw inflated them into
 * memory), else those charged_at_open(), at MAPPED_DWARF_SHARE.
 */
size_t symc_debug_sections_size(Elf *elf, bool mapped)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t stridx, n = 0;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		if (!mapped)
			n += shdr.sh_size;
		else if (charged_at_open(name))
			n += shdr.sh_size / MAPPED_DWARF_SHARE;
	}
	return n;
}

/* What a load charges for @elf's symbols: 16 bytes a function symbol of its larger table. */
size_t symc_symbols_estimate(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t syms = 0;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type != SHT_NOBITS &&
		    (shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM) && shdr.sh_entsize &&
		    shdr.sh_size / shdr.sh_entsize * 16 > syms)
			syms = shdr.sh_size / shdr.sh_entsize * 16;
	return syms;
}

/*
 * What @elf's DWARF may cost before anything is read. With @whole, all of it: compressed
 * sections at 3 times their size (libdw inflating them in memory), the others at
 * MAPPED_DWARF_SHARE; this decides whether it is used at all. Else what opening it charges
 * (load_dwarf()): the sections charged_at_open() at MAPPED_DWARF_SHARE of their size, compressed
 * ones at 3 times theirs (inflated into a file and mapped; reading their compression header
 * would read the whole section), or, with @in_memory (inflating into a file failed before),
 * compressed sections in full.
 */
size_t symc_dwarf_estimate(Elf *elf, bool whole, bool in_memory)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t stridx, n = 0;
	uint64_t size;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		if (whole) {
			n += shdr.sh_flags & SHF_COMPRESSED ? 3 * shdr.sh_size
							    : shdr.sh_size / MAPPED_DWARF_SHARE;
			continue;
		}
		size = shdr.sh_flags & SHF_COMPRESSED ? 3 * shdr.sh_size : shdr.sh_size;
		if ((shdr.sh_flags & SHF_COMPRESSED) && in_memory)
			n += size;
		else if (charged_at_open(name))
			n += size / MAPPED_DWARF_SHARE;
	}
	return n;
}

static char *hex(const unsigned char *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	s[2 * n] = 0;
	return s;
}

static char *note_build_id(Elf_Data *data)
{
	GElf_Nhdr nh;
	size_t off = 0, next, name_off, desc_off;

	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4))
			return hex((unsigned char *)data->d_buf + desc_off, nh.n_descsz);
		off = next;
	}
	return NULL;
}

/*
 * Lower-case hex of the NT_GNU_BUILD_ID note, from SHT_NOTE sections, else
 * from PT_NOTE segments (section headers may be stripped). NULL if none.
 */
char *symc_read_build_id(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	Elf_Data *data;
	size_t n, i;
	char *id;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && (id = note_build_id(data)))
			return id;
	}
	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz,
					    phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data && (id = note_build_id(data)))
			return id;
	}
	return NULL;
}

/*
 * The PLT sections of @elf into @o->plts (x86-64: .plt's and .plt.sec's entries are 16 bytes,
 * .plt.got's 8 or 16, as its sh_entsize says; 16 when a linker left it 0). A corrupt or
 * missing section table leaves none: PLT stubs are then not named.
 */
void symc_read_plts(struct elf_object *o, Elf *elf)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got"};
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	o->nplts = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn)) && o->nplts < sizeof(o->plts) / sizeof(o->plts[0])) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++) {
			if (strcmp(name, names[i]))
				continue;
			o->plts[o->nplts].vaddr = sh.sh_addr;
			o->plts[o->nplts].size = sh.sh_size;
			o->plts[o->nplts].entsize =
			    sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize : 16;
			o->nplts++;
			break;
		}
	}
}

int symc_read_loads(struct elf_object *o, Elf *elf)
{
	GElf_Phdr phdr;
	size_t n, i;
	void *p;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	o->loads = calloc(n ? n : 1, sizeof(*o->loads));
	if (!o->loads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr))
			return -ENOEXEC;
		if (phdr.p_type == PT_LOAD)
			o->loads[o->nloads++] = phdr;
	}
	p = realloc(o->loads, (o->nloads ? o->nloads : 1) * sizeof(*o->loads));
	if (p)
		o->loads = p;
	return 0;
}

int elf_object__file_offset_to_vaddr(const struct elf_object *o, uint64_t offset, uint64_t *vaddr)
{
	size_t i;
	int pass;

	/* Segments may share a file page; a PC belongs to the executable one. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < o->nloads; i++) {
			const GElf_Phdr *p = &o->loads[i];

			if (!pass && !(p->p_flags & PF_X))
				continue;
			if (offset >= p->p_offset && offset - p->p_offset < p->p_filesz) {
				*vaddr = offset - p->p_offset + p->p_vaddr;
				return 0;
			}
		}
	}
	return -ENOENT;
}

const char *elf_object__build_id(const struct elf_object *o)
{
	return o->build_id;
}
