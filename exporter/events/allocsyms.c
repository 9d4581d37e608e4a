// SPDX-License-Identifier: Apache-2.0
/* Allocator entry points of an ELF file: see allocsyms.h. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "events/allocsyms.h"
#include "symbols/elfcheck.h"

static const struct {
	const char *name;
	uint32_t kind;
	int cxx; /* operator new: only in a file that defines malloc */
} entries[] = {
    {"malloc", ALLOC_KIND_ARG1, 0},
    {"calloc", ALLOC_KIND_CALLOC, 0},
    {"realloc", ALLOC_KIND_ARG2, 0},
    {"aligned_alloc", ALLOC_KIND_ARG2, 0},
    {"memalign", ALLOC_KIND_ARG2, 0},
    {"posix_memalign", ALLOC_KIND_ARG3, 0},
    {"valloc", ALLOC_KIND_ARG1, 0},
    {"pvalloc", ALLOC_KIND_ARG1, 0},
    /* operator new / new[] (size_t), (size_t, nothrow_t const&), (size_t, align_val_t), ... */
    {"_Znwm", ALLOC_KIND_ARG1, 1},
    {"_Znam", ALLOC_KIND_ARG1, 1},
    {"_ZnwmRKSt9nothrow_t", ALLOC_KIND_ARG1, 1},
    {"_ZnamRKSt9nothrow_t", ALLOC_KIND_ARG1, 1},
    {"_ZnwmSt11align_val_t", ALLOC_KIND_ARG1, 1},
    {"_ZnamSt11align_val_t", ALLOC_KIND_ARG1, 1},
    {"_ZnwmSt11align_val_tRKSt9nothrow_t", ALLOC_KIND_ARG1, 1},
    {"_ZnamSt11align_val_tRKSt9nothrow_t", ALLOC_KIND_ARG1, 1},
};

#define NENTRIES (sizeof(entries) / sizeof(entries[0]))
_Static_assert(NENTRIES <= ALLOC_MAX_FUNCS, "every entry point fits one alloc_file");

static int entry_index(const char *name)
{
	/* Every name starts with one of these: skip the string compares for the rest. */
	if (name[0] != 'm' && name[0] != 'c' && name[0] != 'r' && name[0] != 'a' &&
	    name[0] != 'p' && name[0] != 'v' && name[0] != '_')
		return -1;
	for (size_t i = 0; i < NENTRIES; i++)
		if (!strcmp(name, entries[i].name))
			return (int)i;
	return -1;
}

/*
 * Scans the symbol table @scn: found[i] receives the defined function named entries[i].name
 * (the first one). 0 or -EINVAL on a broken table.
 */
static int scan_symbols(Elf *elf, Elf_Scn *scn, GElf_Sym *found, int *have)
{
	struct elfcheck_symtab t;
	GElf_Sym s;
	const char *name;
	int k, err;

	err = elfcheck__symtab(scn, &t);
	if (err)
		return err;
	for (size_t i = 1; i < t.n; i++) {
		if (!gelf_getsym(t.data, (int)i, &s))
			return -EINVAL;
		if (!s.st_name || s.st_shndx == SHN_UNDEF || !s.st_value ||
		    GELF_ST_TYPE(s.st_info) != STT_FUNC || GELF_ST_BIND(s.st_info) == STB_LOCAL)
			continue;
		name = elf_strptr(elf, t.strndx, s.st_name);
		if (!name)
			return -EINVAL;
		k = entry_index(name);
		if (k < 0 || have[k])
			continue;
		found[k] = s;
		have[k] = 1;
	}
	return 0;
}

int allocsyms__find(Elf *elf, struct allocsyms *out)
{
	Elf_Scn *dynsym, *symtab;
	GElf_Sym found[NENTRIES];
	int have[NENTRIES] = {0};
	GElf_Ehdr ehdr;
	GElf_Phdr ph;
	size_t nph, i, j;
	int err, interp = 0;

	memset(out, 0, sizeof(*out));
	err = elfcheck__x86_64(elf, &ehdr, &nph);
	if (err)
		return err;
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_INTERP)
			interp = 1;
	}
	err = elfcheck__sections(elf, &dynsym, &symtab, NULL);
	if (err)
		return err;
	if (dynsym && (err = scan_symbols(elf, dynsym, found, have)))
		return err;
	/* A static executable keeps its malloc in .symtab (libraries export what they define). */
	if (symtab && !interp && (err = scan_symbols(elf, symtab, found, have)))
		return err;
	if (!have[0]) /* no malloc here: this file's operator new calls another file's */
		for (i = 0; i < NENTRIES; i++)
			if (entries[i].cxx)
				have[i] = 0;

	for (i = 0; i < NENTRIES; i++) {
		struct allocsym *e = &out->e[out->n];

		if (!have[i])
			continue;
		for (j = 0; j < out->n; j++)
			if (out->e[j].vaddr == found[i].st_value)
				break;
		if (j < out->n) /* an alias of an entry already taken */
			continue;
		/* The executable segment holding the code: the uprobe wants a file offset. */
		for (j = 0; j < nph; j++) {
			if (!gelf_getphdr(elf, (int)j, &ph))
				return -EINVAL;
			if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
			    found[i].st_value >= ph.p_vaddr &&
			    found[i].st_value - ph.p_vaddr < ph.p_filesz)
				break;
		}
		if (j == nph)
			continue; /* not in any code segment: not a function we can probe */
		e->name = entries[i].name;
		e->kind = entries[i].kind;
		e->vaddr = found[i].st_value;
		e->size = found[i].st_size ? found[i].st_size : 1;
		e->offset = found[i].st_value - ph.p_vaddr + ph.p_offset;
		out->n++;
	}
	return 0;
}

int allocsyms__find_fd(int fd, struct allocsyms *out)
{
	struct stat st;
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	if (!elfcheck__libelf_ready())
		return -ENOSYS;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	/* Section and program headers inside the file: a truncated copy is refused. */
	err = elfcheck__within(elf, (uint64_t)st.st_size);
	if (!err)
		err = allocsyms__find(elf, out);
out:
	elf_end(elf);
	return err;
}
