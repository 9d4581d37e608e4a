// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/python/pyelf.h"
#include "symbols/elfcheck.h"
#include "symbols/loadbias.h"

struct wanted {
	const char *name;
	GElf_Sym sym;
	bool found;
};

enum { W_RUNTIME, W_VERSION, W_CODE, W_UNICODE, W_BYTES, W_TSS, W_LOOP, W_LOOP_COLD, W_COUNT };

/* Fills the symbols of @w defined in symbol table section @scn (first definition wins). */
static int scan_symbols(Elf *elf, Elf_Scn *scn, struct wanted *w)
{
	const char *name;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	size_t i, n, k;

	if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -EINVAL;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -EINVAL;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; i < n; i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			return -EINVAL;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name)
			continue;
		for (k = 0; k < W_COUNT; k++) {
			if (!w[k].found && !strcmp(name, w[k].name)) {
				w[k].sym = sym;
				w[k].found = true;
			}
		}
	}
	return 0;
}

int pyelf__version_from_name(const char *path, unsigned int *major, unsigned int *minor)
{
	const char *base = path ? strrchr(path, '/') : NULL;
	unsigned int ma, mi;
	int n = 0;

	base = base ? base + 1 : path;
	if (!base)
		return -ENOENT;
	if (!strncmp(base, "lib", 3))
		base += 3;
	if (sscanf(base, "python%u.%u%n", &ma, &mi, &n) != 2 || ma != 3 || mi > 99)
		return -ENOENT;
	/* python3.11, python3.11d, libpython3.11.so.1.0, libpython3.8m.so: nothing else. */
	base += n;
	while (*base == 'd' || *base == 'm' || *base == 't' || *base == 'u')
		base++;
	if (*base && strncmp(base, ".so", 3))
		return -ENOENT;
	*major = ma;
	*minor = mi;
	return 0;
}

int pyelf__inspect(Elf *elf, const char *path, struct pyelf_info *out)
{
	struct wanted w[W_COUNT] = {
	    [W_RUNTIME] = {.name = "_PyRuntime"},
	    [W_VERSION] = {.name = "Py_Version"},
	    [W_CODE] = {.name = "PyCode_Type"},
	    [W_UNICODE] = {.name = "PyUnicode_Type"},
	    [W_BYTES] = {.name = "PyBytes_Type"},
	    [W_TSS] = {.name = "_Py_tss_tstate"},
	    [W_LOOP] = {.name = "_PyEval_EvalFrameDefault"},
	    [W_LOOP_COLD] = {.name = "_PyEval_EvalFrameDefault.cold"},
	};
	Elf_Scn *scn = NULL, *pyruntime = NULL;
	unsigned int major, minor;
	size_t shstrndx, i, nph;
	const char *name;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	GElf_Phdr ph;
	uint64_t v;
	int err;

	memset(out, 0, sizeof(*out));
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    !gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx) ||
	    elf_getphdrnum(elf, &nph))
		return -EINVAL;
	if (eh.e_machine != EM_X86_64)
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -EINVAL;
		if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) {
			err = scan_symbols(elf, scn, w);
			if (err)
				return err;
		}
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".PyRuntime"))
			pyruntime = scn;
	}
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD || out->n_loads >= PYELF_MAX_LOADS)
			continue;
		out->loads[out->n_loads].vaddr = ph.p_vaddr;
		out->loads[out->n_loads].offset = ph.p_offset;
		out->loads[out->n_loads].filesz = ph.p_filesz;
		out->n_loads++;
	}
	if (w[W_RUNTIME].found && w[W_RUNTIME].sym.st_value) {
		out->runtime_vaddr = w[W_RUNTIME].sym.st_value;
		out->runtime_size = w[W_RUNTIME].sym.st_size;
	} else if (pyruntime && gelf_getshdr(pyruntime, &sh)) {
		out->runtime_vaddr = sh.sh_addr;
		out->runtime_size = sh.sh_size;
	}
	/* The loop too: without it no Python frame has a place (a binary defining the other two
	 * names, but not an interpreter, would have its every stack marked). */
	if (!out->runtime_vaddr || !w[W_CODE].found || !w[W_LOOP].found)
		return -ENOENT;
	out->code_type_vaddr = w[W_CODE].sym.st_value;
	out->unicode_type_vaddr = w[W_UNICODE].found ? w[W_UNICODE].sym.st_value : 0;
	out->bytes_type_vaddr = w[W_BYTES].found ? w[W_BYTES].sym.st_value : 0;
	for (i = 0; i < PYELF_LOOP_PARTS; i++) {
		const GElf_Sym *ls = &w[W_LOOP + i].sym;

		if (w[W_LOOP + i].found && GELF_ST_TYPE(ls->st_info) == STT_FUNC && ls->st_value &&
		    ls->st_size) {
			out->loop[i].vaddr = ls->st_value;
			out->loop[i].size = ls->st_size;
		}
	}
	if (w[W_TSS].found && GELF_ST_TYPE(w[W_TSS].sym.st_info) == STT_TLS) {
		out->tss_tstate_offset = w[W_TSS].sym.st_value;
		out->has_tss_tstate = 1;
	}
	if (w[W_VERSION].found && w[W_VERSION].sym.st_size >= 4 &&
	    !elfcheck__read_vaddr(elf, w[W_VERSION].sym.st_value, &v, sizeof(v)) &&
	    (v >> 24) == 3) {
		out->version_hex = (uint32_t)v;
		out->version_source = PYELF_VERSION_SYMBOL;
	} else if (!pyelf__version_from_name(path, &major, &minor)) {
		out->version_hex = major << 24 | minor << 16;
		out->version_source = PYELF_VERSION_FILENAME;
	} else {
		return -ENOTSUP;
	}
	out->major = out->version_hex >> 24;
	out->minor = (out->version_hex >> 16) & 0xff;
	return 0;
}

bool pyelf__in_loop(const struct pyelf_info *info, uint64_t vaddr)
{
	for (unsigned int i = 0; i < PYELF_LOOP_PARTS; i++)
		if (info->loop[i].size && vaddr >= info->loop[i].vaddr &&
		    vaddr - info->loop[i].vaddr < info->loop[i].size)
			return true;
	return false;
}

int pyelf__load_bias(const struct pyelf_info *info, uint64_t map_start, uint64_t file_offset,
		     uint64_t *bias)
{
	unsigned int i;

	for (i = 0; i < info->n_loads; i++) {
		/* A mapping starts on a page: compare the page-aligned file ranges. */
		uint64_t off = info->loads[i].offset & ~0xfffull;
		uint64_t end = info->loads[i].offset + info->loads[i].filesz;

		if (file_offset < off || file_offset >= (end > off ? end : off + 1))
			continue;
		*bias = loadbias__of(map_start, file_offset, info->loads[i].vaddr,
				     info->loads[i].offset, 0x1000);
		return 0;
	}
	return -ENOENT;
}
