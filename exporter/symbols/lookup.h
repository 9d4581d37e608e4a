/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lookup: INTERNAL to exporter/symbols/. The frames of an address: from the address cache, else
 * from DWARF (dwarfframes.h), else a Go binary's .gopclntab, else the symbol table (symtab.h),
 * else a PLT stub's name (plt.h); the answers kept per object in its address cache; objects
 * idle for symcache_opts.idle_s releasing their descriptors and DWARF. Defines
 * symcache__lookup(), symcache__close_idle() and symcache__go_frame_pending() of symbolize.h.
 */
#ifndef SPANPROF_SYMBOLS_LOOKUP_H
#define SPANPROF_SYMBOLS_LOOKUP_H

#include <stdbool.h>

struct elf_object;

/*
 * @o was closed while idle: re-loads it from the very same file if it can be opened again, else
 * goes on with what stayed in memory (counted once in stats.idle_reopen_errors).
 */
void symc_refresh_idle(struct elf_object *o);
/*
 * Copies the strings of @o's cached frames that libdw or the Go table own into o->strings, so
 * they outlive its DWARF. false on ENOMEM (some may be copied).
 */
bool addr_cache__own_strings(struct elf_object *o);

#endif /* SPANPROF_SYMBOLS_LOOKUP_H */
