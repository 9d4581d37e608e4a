/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plt: INTERNAL to exporter/symbols/. Reads an object's machine code (x86-64) from its file for
 * what its calls and jumps reach: PLT entries ([ENDBR64] [BND] JMP *disp32(%rip), as .plt,
 * .plt.sec and .plt.got hold them) and the GOT slots they jump through, named by the relocation
 * that fills the slot (R_X86_64_JUMP_SLOT in .rela.plt, R_X86_64_GLOB_DAT in .rela.dyn: a
 * dynamic symbol; R_X86_64_RELATIVE: an address of the object itself). Gives lookups the names
 * of PLT stubs, NAME@plt as perf writes them (symc_plt_stub_name()), and defines
 * symcache__call_target(), symcache__function_start() and symcache__jumps_out() of symbolize.h.
 * Formats: ELF gABI (relocation entries, symbol table), x86-64 psABI (PLT, relocation types),
 * the Intel SDM encodings of CALL (E8, FF /2), JMP (E9, EB, FF /4) and Jcc (0F 8x, 7x).
 */
#ifndef SPANPROF_SYMBOLS_PLT_H
#define SPANPROF_SYMBOLS_PLT_H

#include <stdbool.h>
#include <stdint.h>

struct elf_object;

/*
 * When @vaddr of @o (a file virtual address, in one of its PLT sections) is where an instruction
 * of a PLT entry starts and that entry jumps through a GOT slot relocated against the dynamic
 * symbol NAME: *@system = "NAME@plt", *@function = its demangled form with "@plt" (both interned:
 * owned by @o, valid as a frame's strings), and true. Else false: only the relocation the stub
 * really jumps through names it.
 */
bool symc_plt_stub_name(struct elf_object *o, uint64_t vaddr, const char **system,
			const char **function);

#endif /* SPANPROF_SYMBOLS_PLT_H */
