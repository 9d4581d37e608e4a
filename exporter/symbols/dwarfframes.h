/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dwarfframes: INTERNAL to exporter/symbols/. The frames DWARF gives an address of a loaded
 * object: its compile unit (every unit's ranges indexed once, symc_index_cus()), the concrete
 * function holding it (each unit's DW_TAG_subprogram ranges, indexed at the unit's first
 * lookup), the inline chain down to the innermost DW_TAG_inlined_subroutine with each call site
 * (DW_AT_call_file, DW_AT_call_line, DW_AT_call_column), the names (the linkage name demangled,
 * else DW_AT_name, for C++ qualified by its scopes), and file:line:column from the unit's line
 * table, copied out of libdw (16 bytes a row) and kept over unloads. Charges to the budget what
 * libdw keeps of each unit. Strings in frames are libdw's or interned in the object (see
 * addr_cache__own_strings()).
 * Formats: DWARF 5 sections 2.17 (code addresses and ranges), 3.1 (unit entries), 3.3
 * (subroutine entries; 3.3.8 inlined subroutines), 2.13.2 (declarations completing
 * non-defining ones), 6.2 (line number information).
 */
#ifndef SPANPROF_SYMBOLS_DWARFFRAMES_H
#define SPANPROF_SYMBOLS_DWARFFRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include <elfutils/libdw.h>

struct elf_object;
struct sym_frame;

/*
 * Indexes the compile units of o->dwarf_elf read through @dw into o->cus and o->cu_ranges
 * (charged to the index). 0, or -ENOMEM (what was built stays for the caller to free).
 */
int symc_index_cus(struct elf_object *o, Dwarf *dw);
/*
 * The frames of @pc, innermost first, the physical function last, at most @max (<= MAX_FRAMES)
 * into @out; 0 when no unit holds @pc. *@phys_linkage: the physical function's name came from a
 * linkage name; *@phys_lo: the start of its range holding @pc (0 when no function is known).
 */
int symc_dwarf_frames(struct elf_object *o, uint64_t pc, struct sym_frame *out, int max,
		      bool *phys_linkage, uint64_t *phys_lo);

#endif /* SPANPROF_SYMBOLS_DWARFFRAMES_H */
