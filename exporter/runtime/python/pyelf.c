// SPDX-License-Identifier: Apache-2.0
#include <dwarf.h>
#include <elfutils/libdw.h>
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

/* x86-64 DWARF register number of %rsp (psABI 3.6.2, figure 3.36). */
#define DWARF_REG_RSP 7

/*
 * The CFA rule "register + offset" at link-time address @vaddr, from @cfi (.eh_frame, libdw):
 * *@reg, *@off. 0, or -1 (no FDE there, or a CFA that is an expression).
 */
static int cfa_rule_at(Dwarf_CFI *cfi, uint64_t vaddr, uint64_t *reg, int64_t *off)
{
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t nops;
	int ret = -1;

	if (dwarf_cfi_addrframe(cfi, vaddr, &fr) || !fr)
		return -1;
	/* libdw gives a "register + offset" CFA as one DW_OP_bregx (libdw.h, dwarf_frame_cfa). */
	if (!dwarf_frame_cfa(fr, &ops, &nops) && nops == 1 && ops[0].atom == DW_OP_bregx) {
		*reg = ops[0].number;
		*off = (int64_t)ops[0].number2;
		ret = 0;
	}
	free(fr);
	return ret;
}

struct fde_range {
	uint64_t start, end;
};

static int cmp_fde_range(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The code ranges of the FDEs of @elf's .eh_frame into *@out (malloc'd, sorted by start; *@n of
 * them), walked with libdw's dwarf_next_cfi(). Only the encoding GCC and binutils give x86-64
 * code: a CIE with augmentation "zR" whose FDE pointers are DW_EH_PE_pcrel | DW_EH_PE_sdata4
 * (LSB 5.0, "Exception Frames"); FDEs of other CIEs are left out. 0, or -1.
 */
static int eh_frame_ranges(Elf *elf, struct fde_range **out, size_t *n)
{
	size_t shstrndx, cap = 0, len = 0;
	struct fde_range *v = NULL;
	Dwarf_Off off = 0, next;
	Elf_Scn *scn = NULL;
	Elf_Data *data = NULL;
	const char *name;
	GElf_Shdr sh, eh = {0};
	Dwarf_CFI_Entry ent;
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);

	*out = NULL;
	*n = 0;
	if (!ident || elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -1;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame") && sh.sh_type == SHT_PROGBITS) {
			data = elf_getdata(scn, NULL);
			eh = sh;
			break;
		}
	}
	if (!data || !data->d_buf)
		return -1;
	while (dwarf_next_cfi(ident, data, true, off, &next, &ent) == 0) {
		const uint8_t *p = ent.fde.start;
		Dwarf_CFI_Entry cie;
		Dwarf_Off cnext;
		int32_t loc;
		uint32_t range;

		if (next <= off)
			break;
		off = next;
		if (dwarf_cfi_cie_p(&ent))
			continue;
		if (dwarf_next_cfi(ident, data, true, ent.fde.CIE_pointer, &cnext, &cie) ||
		    !dwarf_cfi_cie_p(&cie) || strcmp(cie.cie.augmentation, "zR") ||
		    cie.cie.augmentation_data_size != 1 || cie.cie.augmentation_data[0] != 0x1b ||
		    ent.fde.end - p < 8)
			continue;
		memcpy(&loc, p, 4);
		memcpy(&range, p + 4, 4);
		if (len == cap) {
			struct fde_range *w = realloc(v, (cap ? cap * 2 : 1024) * sizeof(*v));

			if (!w) {
				free(v);
				return -1;
			}
			v = w;
			cap = cap ? cap * 2 : 1024;
		}
		/* pcrel: from the field's own address in the section. */
		v[len].start = eh.sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf) +
			       (uint64_t)(int64_t)loc;
		v[len].end = v[len].start + range;
		len++;
	}
	if (len)
		qsort(v, len, sizeof(*v), cmp_fde_range);
	*out = v;
	*n = len;
	return 0;
}

/* The FDE of @v (@n, sorted) whose range holds @vaddr, or NULL. */
static const struct fde_range *fde_of(const struct fde_range *v, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && vaddr < v[lo - 1].end ? &v[lo - 1] : NULL;
}

/*
 * The split-off part of the interpreter loop when the file's symbol tables do not name it (a
 * stripped binary has no "_PyEval_EvalFrameDefault.cold"): Debian sid's python3.14 keeps 1 KB of
 * _PyEval_EvalFrameDefault under its symbol and the 84 KB of its opcode bodies in a part with no
 * symbol, where nearly every sample of a busy interpreter is (Debian 12's python3.11: 14 KB of
 * its 70). GCC's hot/cold splitting gives that part an FDE of its own, which the hot part
 * branches into (jmp/jcc rel32) and which starts inside the function's frame: its first CFA
 * rule is not a function entry's (%rsp + 8) but the very rule of the hot part at the branch.
 * Each rel32 branch of the hot part's bytes (x86-64 encodings E9 and 0F 80-8F, Intel SDM) that
 * leaves it is followed to the FDE holding its target; the part is taken only when exactly one
 * FDE answers (a byte pattern that is no instruction would need to land in such an FDE too),
 * else none: loop[1] stays empty.
 */
static void find_loop_cold_part(Elf *elf, struct pyelf_info *out)
{
	uint64_t hot = out->loop[0].vaddr, size = out->loop[0].size, reg, treg;
	const struct fde_range *f, *cold = NULL;
	struct fde_range *fdes = NULL;
	int64_t off, toff;
	Dwarf_CFI *cfi = NULL;
	uint8_t *buf = NULL;
	bool ambiguous = false;
	size_t nfdes = 0;

	if (!hot || out->loop[1].size || size < 8 || size > (1u << 20))
		return;
	buf = malloc(size);
	if (!buf || elfcheck__read_vaddr(elf, hot, buf, size))
		goto cleanup;
	cfi = dwarf_getcfi_elf(elf);
	if (!cfi || eh_frame_ranges(elf, &fdes, &nfdes) || !nfdes)
		goto cleanup;
	for (uint64_t i = 0; i + 5 <= size && !ambiguous; i++) {
		uint64_t len, t;
		int32_t rel;

		if (buf[i] == 0x0f && i + 6 <= size && (buf[i + 1] & 0xf0) == 0x80) {
			len = 6;
			memcpy(&rel, buf + i + 2, 4);
		} else if (buf[i] == 0xe9) {
			len = 5;
			memcpy(&rel, buf + i + 1, 4);
		} else {
			continue;
		}
		t = hot + i + len + (uint64_t)(int64_t)rel;
		if (t >= hot && t < hot + size)
			continue;
		f = fde_of(fdes, nfdes, t);
		if (!f || f == cold || (f->start < hot + size && f->end > hot))
			continue;
		if (cfa_rule_at(cfi, f->start, &treg, &toff) ||
		    (treg == DWARF_REG_RSP && toff == 8))
			continue; /* a function's entry (a tail call), or no rule known */
		if (cfa_rule_at(cfi, hot + i, &reg, &off) || reg != treg || off != toff)
			continue;
		if (cold)
			ambiguous = true;
		cold = f;
	}
	if (cold && !ambiguous) {
		out->loop[1].vaddr = cold->start;
		out->loop[1].size = cold->end - cold->start;
		out->loop_cold_from_cfi = true;
	}
cleanup:
	if (cfi)
		dwarf_cfi_end(cfi);
	free(fdes);
	free(buf);
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
	find_loop_cold_part(elf, out);
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
