// SPDX-License-Identifier: Apache-2.0
/*
 * plt: PLT entries and GOT slots read from an object's code -- PLT stub names (NAME@plt), call
 * targets, jumps out of a function (plt.h). Formats: ELF gABI relocations, x86-64 psABI PLT.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "symbols/elfcheck.h"
#include "symbols/objcache.h"
#include "symbols/plt.h"
#include "symbols/symcache.h"
#include "symbols/symtab.h"

/* Frames of an inline chain symcache__call_target() asks for: the physical function is last. */
#define CALL_TARGET_FRAMES 16

/* Reads @len bytes of @o at file virtual address @vaddr (within one PT_LOAD's file part). */
static int read_vaddr(struct elf_object *o, uint64_t vaddr, void *buf, size_t len)
{
	for (size_t i = 0; i < o->nloads; i++) {
		const GElf_Phdr *p = &o->loads[i];

		if (vaddr < p->p_vaddr || vaddr - p->p_vaddr > p->p_filesz ||
		    p->p_filesz - (vaddr - p->p_vaddr) < len)
			continue;
		if (o->fd < 0 && symc_reopen(o))
			return -ENOENT;
		return pread(o->fd, buf, len, (off_t)(p->p_offset + (vaddr - p->p_vaddr))) ==
			       (ssize_t)len
			   ? 0
			   : -EIO;
	}
	return -ENOENT;
}

/*
 * What GOT slot @got (a file virtual address) of @o holds, by its relocation: the dynamic symbol
 * it is relocated against (R_X86_64_JUMP_SLOT in .rela.plt, R_X86_64_GLOB_DAT in .rela.dyn),
 * copied into @name (@len bytes); or, R_X86_64_RELATIVE, an address of @o itself, into *@local
 * (0 otherwise). 1 when one was found, 0 when no relocation names the slot, or -errno.
 */
static int got_slot(struct elf_object *o, uint64_t got, char *name, size_t len, uint64_t *local)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, symsh;
	int err = 0, found = 0;
	Elf *elf;

	*local = 0;
	if (o->fd < 0 && symc_reopen(o))
		return -ENOENT;
	elf = symc_elf_from_fd(o->fd, ELF_C_READ, (uint64_t)o->size, &err);
	if (!elf)
		return err ? err : -EIO;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		Elf_Scn *symscn;
		Elf_Data *rel, *syms;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		symscn = elf_getscn(elf, sh.sh_link);
		if (!symscn || !gelf_getshdr(symscn, &symsh) || symsh.sh_type != SHT_DYNSYM)
			continue;
		rel = elf_getdata(scn, NULL);
		syms = elf_getdata(symscn, NULL);
		if (!rel || !syms)
			continue;
		/* What the section's data holds, whatever a corrupt sh_size says. */
		n = rel->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n && i <= INT_MAX; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *s;

			if (!gelf_getrela(rel, (int)i, &r) || r.r_offset != got)
				continue;
			if (GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE && r.r_addend > 0) {
				*local = (uint64_t)r.r_addend;
				found = 1;
				break;
			}
			if (!GELF_R_SYM(r.r_info) ||
			    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
				break;
			s = elf_strptr(elf, symsh.sh_link, sym.st_name);
			if (s && *s) {
				snprintf(name, len, "%s", s);
				found = 1;
			}
			break;
		}
	}
	elf_end(elf);
	return found;
}

/*
 * Whether @target of @o begins a PLT entry, [ENDBR64] [BND] JMP *disp32(%rip) (as .plt, .plt.sec
 * and .plt.got hold them), and then the GOT slot it jumps through into *@slot and, when @insns
 * is not NULL, the offsets from @target where its instructions start into @insns[0..2]: the
 * JMP (after an ENDBR64), and the two a lazy-binding .plt entry has after it (PUSH imm32; JMP
 * rel32 to PLT0); the entry itself starts at 0.
 */
static bool plt_entry_slot(struct elf_object *o, uint64_t target, uint64_t *slot, uint32_t insns[3])
{
	unsigned char stub[12];
	size_t k = 0, jmp;
	int32_t rel;

	if (read_vaddr(o, target, stub, sizeof(stub)))
		return false;
	if (stub[0] == 0xf3 && stub[1] == 0x0f && stub[2] == 0x1e && stub[3] == 0xfa)
		k = 4;
	jmp = k;
	if (stub[k] == 0xf2)
		k++;
	if (stub[k] != 0xff || stub[k + 1] != 0x25)
		return false;
	memcpy(&rel, stub + k + 2, sizeof(rel));
	*slot = target + k + 6 + (uint64_t)(int64_t)rel;
	if (insns) {
		insns[0] = (uint32_t)jmp;
		insns[1] = (uint32_t)(k + 6);
		insns[2] = (uint32_t)(k + 6 + 5);
	}
	return true;
}

/*
 * The name of what a call or jump to @target of @o reaches: through a PLT entry ([ENDBR64] [BND]
 * JMP *disp32(%rip)), the symbol its GOT slot is relocated against; else the symbol holding
 * @target (its system name). 1 with @name set, 0 when nothing names it, or -errno.
 */
static int target_name(struct symcache *c, struct elf_object *o, uint64_t target, char *name,
		       size_t len)
{
	struct sym_frame f[CALL_TARGET_FRAMES];
	uint64_t slot, local;
	int n;

	if (plt_entry_slot(o, target, &slot, NULL)) {
		n = got_slot(o, slot, name, len, &local);
		if (n != 1 || !local)
			return n;
		target = local;
	}
	n = symcache__lookup(c, o, target, f, CALL_TARGET_FRAMES);
	if (n <= 0 || !f[n - 1].system_name)
		return n < 0 ? n : 0;
	snprintf(name, len, "%s", f[n - 1].system_name);
	return 1;
}

int symcache__call_target(struct symcache *c, struct elf_object *o, uint64_t vaddr, char *name,
			  size_t len, uint64_t *target)
{
	unsigned char insn[6];
	uint64_t t, slot;
	int32_t rel;
	int err;

	*target = 0;
	if (vaddr < sizeof(insn) || !len)
		return -EINVAL;
	err = read_vaddr(o, vaddr - sizeof(insn), insn, sizeof(insn));
	if (err)
		return err;
	/* CALL *disp32(%rip) through a GOT slot (-fno-plt, Rust): the slot's symbol or address. */
	if (insn[0] == 0xff && insn[1] == 0x15) {
		memcpy(&rel, insn + 2, sizeof(rel));
		err = got_slot(o, vaddr + (uint64_t)(int64_t)rel, name, len, &t);
		if (err != 1 || !t)
			return err;
		*target = t;
		return target_name(c, o, t, name, len);
	}
	if (insn[1] != 0xe8)
		return 0; /* an indirect call through a register or memory, or none */
	memcpy(&rel, insn + 2, sizeof(rel));
	t = vaddr + (uint64_t)(int64_t)rel;
	/* A function of @o itself, not a PLT entry (whose ENDBR64 a CET function starts with too).
	 */
	if (!plt_entry_slot(o, t, &slot, NULL))
		*target = t;
	return target_name(c, o, t, name, len);
}

/* Bytes of a function symcache__jumps_out() reads at most. */
#define JUMPS_SCAN_MAX 4096

/* The symbol of @o holding @vaddr and its end, or NULL. @o must be loaded. */
static const struct csym *symbol_extent(const struct elf_object *o, uint64_t vaddr, uint64_t *end)
{
	const struct csym *s = symc_find_symbol(o, vaddr);

	if (s)
		*end = s->size			    ? s->addr + s->size
		       : s + 1 < o->syms + o->nsyms ? s[1].addr
						    : symc_segment_end(o, s->addr);
	return s;
}

int symcache__function_start(struct symcache *c, struct elf_object *o, uint64_t vaddr,
			     uint64_t *start)
{
	struct sym_frame f[CALL_TARGET_FRAMES];
	const struct csym *s;
	uint64_t end;

	if (symcache__lookup(c, o, vaddr, f, CALL_TARGET_FRAMES) < 0 || !o->loaded)
		return -ENOENT;
	s = symbol_extent(o, vaddr, &end);
	if (!s)
		return -ENOENT;
	*start = s->addr;
	return 0;
}

/*
 * Whether a jump from the function @name of @o (@start, @end) to @target goes to another
 * function: not inside this one nor into its own split-off part ("name.cold"), and to the very
 * start of a function symbol or of a PLT entry (bytes that only look like a jump almost never
 * point there).
 */
static bool leaves(struct symcache *c, struct elf_object *o, const char *name, uint64_t start,
		   uint64_t end, uint64_t target)
{
	char to[256];
	size_t n = strlen(name);
	const struct csym *t;
	uint64_t slot;

	if (target >= start && target < end)
		return false;
	/* @o is loaded (symcache__jumps_out()): its symbols are looked at, not the lookup cache. */
	t = symc_find_symbol(o, target);
	if (!t || t->addr != target)
		return plt_entry_slot(o, target, &slot, NULL);
	return !(target_name(c, o, target, to, sizeof(to)) == 1 && !strncmp(to, name, n) &&
		 !strncmp(to + n, ".cold", 5));
}

int symcache__jumps_out(struct symcache *c, struct elf_object *o, uint64_t func)
{
	struct sym_frame f[CALL_TARGET_FRAMES];
	const struct csym *s;
	const struct sname *sn;
	unsigned char *code;
	uint64_t end;
	size_t len;
	int32_t rel;
	int out = 1; /* unreadable or unknown: it may */

	if (symcache__lookup(c, o, func, f, CALL_TARGET_FRAMES) <= 0 || !o->loaded)
		return 1;
	s = symbol_extent(o, func, &end);
	sn = s && s->addr == func ? symc_sym_name(o, s) : NULL;
	if (!sn)
		return 1;
	len = end - func < JUMPS_SCAN_MAX ? (size_t)(end - func) : JUMPS_SCAN_MAX;
	if (len < 2 || end - func > JUMPS_SCAN_MAX || !(code = malloc(len)))
		return 1;
	if (!read_vaddr(o, func, code, len)) {
		out = 0;
		/*
		 * Byte patterns, each checked against where it leads: JMP and Jcc (rel32, rel8) to
		 * the very start of another function or a PLT entry, and JMP through a GOT slot.
		 * A jump through a register (a switch table, or a tail call through a function
		 * pointer) is not counted.
		 */
		for (size_t i = 0; i + 2 <= len && !out; i++) {
			uint64_t next;

			if (code[i] == 0xff && code[i + 1] == 0x25 && i + 6 <= len) {
				uint64_t local;
				char to[256];

				/* JMP *disp32(%rip): through a GOT slot a relocation fills. */
				memcpy(&rel, code + i + 2, sizeof(rel));
				out = got_slot(o, func + i + 6 + (uint64_t)(int64_t)rel, to,
					       sizeof(to), &local) == 1;
			} else if (code[i] == 0xe9 && i + 5 <= len) {
				memcpy(&rel, code + i + 1, sizeof(rel));
				next = func + i + 5;
				out = leaves(c, o, sn->name, func, end,
					     next + (uint64_t)(int64_t)rel);
			} else if (code[i] == 0x0f && i + 6 <= len &&
				   (code[i + 1] & 0xf0) == 0x80) {
				memcpy(&rel, code + i + 2, sizeof(rel));
				next = func + i + 6;
				out = leaves(c, o, sn->name, func, end,
					     next + (uint64_t)(int64_t)rel);
			} else if (code[i] == 0xeb || (code[i] & 0xf0) == 0x70) {
				/* JMP, Jcc rel8: the assembler shortens a jump to a neighbour. */
				next = func + i + 2;
				out = leaves(c, o, sn->name, func, end,
					     next + (uint64_t)(int64_t)(int8_t)code[i + 1]);
			}
		}
	}
	free(code);
	return out;
}

/*
 * The names of the PLT stub holding @vaddr of @o, as perf names them: NAME@plt into *@system
 * and the demangled NAME@plt into *@function (interned), when @vaddr is where an instruction of
 * an entry of one of its PLT sections starts (a stub calls nothing: a sampled PC in it is an
 * instruction's start), that entry jumps through a GOT slot relocated against the dynamic
 * symbol NAME. Else false (PLT0, .plt's lazy-binding halves of IBT entries, a slot without a
 * symbol, an offset no instruction starts at, as an entry size the section header misstates
 * would give): an address is named only from the relocation its stub really jumps through.
 */
bool symc_plt_stub_name(struct elf_object *o, uint64_t vaddr, const char **system,
			const char **function)
{
	char name[512], dname[600];
	uint64_t entry, slot, local;
	uint32_t insns[3], at;
	const char *d;

	for (unsigned int i = 0; i < o->nplts; i++) {
		const struct plt_section *ps = &o->plts[i];

		if (vaddr < ps->vaddr || vaddr - ps->vaddr >= ps->size)
			continue;
		entry = ps->vaddr + (vaddr - ps->vaddr) / ps->entsize * ps->entsize;
		at = (uint32_t)(vaddr - entry);
		if (!plt_entry_slot(o, entry, &slot, insns) ||
		    (at && at != insns[0] && at != insns[1] && at != insns[2]) ||
		    got_slot(o, slot, name, sizeof(name), &local) != 1 || local ||
		    strlen(name) + 5 > sizeof(name)) /* cut: not the symbol's name */
			return false;
		d = symc_demangle(o, name);
		snprintf(dname, sizeof(dname), "%s@plt", d ? d : name);
		strcat(name, "@plt");
		*system = symc_intern(o, name);
		*function = symc_intern(o, dname);
		return *system && *function;
	}
	return false;
}

bool symcache__has_cfi(struct elf_object *o)
{
	Elf *elf;

	if (o->cfi)
		return o->cfi > 0;
	if (o->fd < 0 && symc_reopen(o))
		return true;
	elf = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return true;
	o->cfi = elfcheck__has_data(elf, ".eh_frame") || elfcheck__has_data(elf, ".debug_frame")
		     ? 1
		     : -1;
	elf_end(elf);
	return o->cfi > 0;
}

enum sym_fp symcache__frame_pointer(struct symcache *c, struct elf_object *o, uint64_t vaddr,
				    bool exact)
{
	static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	static const unsigned char prologue[4] = {0x55, 0x48, 0x89, 0xe5};
	static const unsigned char root[2] = {0x31, 0xed};
	unsigned char code[8], at[2];
	uint64_t start, end, body;
	const struct sname *sn;
	const struct csym *s;
	size_t skip = 0;

	if (symcache__function_start(c, o, vaddr, &start) || !(s = symbol_extent(o, vaddr, &end)))
		return SYM_FP_UNPROVEN;
	if (end - start < sizeof(code) || read_vaddr(o, start, code, sizeof(code)))
		return SYM_FP_UNPROVEN;
	if (!memcmp(code, endbr64, sizeof(endbr64)))
		skip = sizeof(endbr64);
	sn = symc_sym_name(o, s);
	if (sn && !strcmp(sn->name, "_start") && !memcmp(code + skip, root, sizeof(root)))
		return vaddr >= start + skip + sizeof(root) ? SYM_FP_ROOT : SYM_FP_UNPROVEN;
	if (memcmp(code + skip, prologue, sizeof(prologue)))
		return SYM_FP_UNPROVEN;
	body = start + skip + sizeof(prologue);
	if (!exact)
		return vaddr >= body ? SYM_FP_KEPT : SYM_FP_UNPROVEN;
	/* The sampled PC: at the PUSH, the MOV or a RET the walker takes the address at RSP. */
	if (vaddr == start + skip || vaddr == start + skip + 1)
		return SYM_FP_KEPT;
	if (vaddr < body || read_vaddr(o, vaddr - 1, at, sizeof(at)))
		return SYM_FP_UNPROVEN;
	if (at[1] == 0xc3)
		return SYM_FP_KEPT;
	return at[0] == 0x5d || at[0] == 0xc9 ? SYM_FP_UNPROVEN : SYM_FP_KEPT;
}
