/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugfile: INTERNAL to exporter/symbols/. The separate debug file of an object, where its
 * .symtab and DWARF are when the file itself was stripped: searched once under
 * <root>/.build-id/xx/rest.debug, else by the object's .gnu_debuglink (file name and CRC32) next
 * to the file, in its .debug/ directory and under <root>/<its directory>, for root =
 * symcache_opts.debug_dir then /usr/lib/debug; re-opened by the path found on later loads; or
 * fetched by build ID from debuginfod. A candidate is taken when build IDs match, or, without
 * one, when the .gnu_debuglink CRC matches. Defines symcache__set_debuginfod() and
 * symcache__pick_up_debug_files() of symbolize.h.
 * Formats: GDB manual, "Separate Debug Files" (the .build-id tree; .gnu_debuglink: a
 * NUL-terminated name, padding to 4, a CRC32 in the object's byte order); the GNU build-id
 * note; debuginfod (exporter/symbols/debuginfod.h).
 *
 * Each function returns the debug file as an Elf read with pread (ELF_C_READ; the caller ends
 * it) through o->dbg_fd, which @o holds (counted in stats.fds) and o->debug_path names (owned by
 * @o), or NULL: none found, none yet, or it could not be read.
 */
#ifndef SPANPROF_SYMBOLS_DEBUGFILE_H
#define SPANPROF_SYMBOLS_DEBUGFILE_H

#include <gelf.h>

struct elf_object;

/* Searches the build-id tree, then @main_elf's .gnu_debuglink (see above); sets debug_path. */
Elf *symc_find_debug_file(struct elf_object *o, Elf *main_elf);
/* Opens o->debug_path, found by an earlier load. */
Elf *symc_reopen_debug_file(struct elf_object *o);
/* debuginfod's file for o->build_id once fetched (checked as above), else asks for it. */
Elf *symc_fetch_debug_file(struct elf_object *o);

#endif /* SPANPROF_SYMBOLS_DEBUGFILE_H */
