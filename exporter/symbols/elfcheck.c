// SPDX-License-Identifier: Apache-2.0
/* First checks of an ELF file: see elfcheck.h. */
#include <errno.h>
#include <stddef.h>

#include <string.h>

#include "symbols/elfcheck.h"

bool elfcheck__libelf_ready(void)
{
	static int state; /* 0 unknown, 1 ok, -1 failed */

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

int elfcheck__within(Elf *elf, uint64_t size)
{
	GElf_Ehdr ehdr;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		return -EINVAL;
	if (ehdr.e_shoff > size ||
	    (size - ehdr.e_shoff) / (ehdr.e_shentsize ? ehdr.e_shentsize : 1) < ehdr.e_shnum)
		return -EINVAL;
	if (ehdr.e_phoff > size ||
	    (size - ehdr.e_phoff) / (ehdr.e_phentsize ? ehdr.e_phentsize : 1) < ehdr.e_phnum)
		return -EINVAL;
	return 0;
}

int elfcheck__x86_64(Elf *elf, GElf_Ehdr *ehdr, size_t *nph)
{
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return -EINVAL;
	if (gelf_getclass(elf) != ELFCLASS64)
		return -ENOTSUP;
	if (!gelf_getehdr(elf, ehdr))
		return -EINVAL;
	if (ehdr->e_machine != EM_X86_64 || (ehdr->e_type != ET_EXEC && ehdr->e_type != ET_DYN))
		return -ENOTSUP;
	if (elf_getphdrnum(elf, nph))
		return -EINVAL;
	return 0;
}

int elfcheck__symtab(Elf_Scn *scn, struct elfcheck_symtab *t)
{
	GElf_Shdr shdr;

	t->data = NULL;
	t->n = 0;
	t->strndx = 0;
	if (!gelf_getshdr(scn, &shdr) || shdr.sh_entsize != sizeof(Elf64_Sym))
		return -EINVAL;
	t->strndx = shdr.sh_link;
	t->data = elf_getdata(scn, NULL);
	if (!t->data)
		return shdr.sh_size ? -EINVAL : 0;
	t->n = t->data->d_size / sizeof(Elf64_Sym);
	return 0;
}

int elfcheck__sections(Elf *elf, Elf_Scn **dynsym, Elf_Scn **symtab, Elf_Scn **dynamic)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	*dynsym = *symtab = NULL;
	if (dynamic)
		*dynamic = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			return -EINVAL;
		if (shdr.sh_type == SHT_DYNSYM && !*dynsym)
			*dynsym = scn;
		else if (shdr.sh_type == SHT_SYMTAB && !*symtab)
			*symtab = scn;
		else if (dynamic && shdr.sh_type == SHT_DYNAMIC && !*dynamic)
			*dynamic = scn;
	}
	return 0;
}

Elf_Scn *elfcheck__section(Elf *elf, const char *name, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	size_t stridx;
	const char *sname;

	if (!elf || elf_getshdrstrndx(elf, &stridx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, shdr))
			return NULL;
		sname = elf_strptr(elf, stridx, shdr->sh_name);
		if (sname && !strcmp(sname, name))
			return scn;
	}
	return NULL;
}

bool elfcheck__has_data(Elf *elf, const char *name)
{
	GElf_Shdr shdr;

	return elfcheck__section(elf, name, &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size;
}

int elfcheck__read_vaddr(Elf *elf, uint64_t vaddr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (vaddr < sh.sh_addr || vaddr + len > sh.sh_addr + sh.sh_size ||
		    vaddr + len < vaddr)
			continue;
		if (sh.sh_type == SHT_NOBITS)
			return -ENOENT;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || vaddr - sh.sh_addr + len > data->d_size)
			return -EINVAL;
		memcpy(buf, (const char *)data->d_buf + (vaddr - sh.sh_addr), len);
		return 0;
	}
	return -ENOENT;
}
