/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symcache.h: INTERNAL to exporter/symbols/ (the rest of the agent includes
 * symbols/symbolize.h only). The shapes the modules of the symbolizer share -- struct symcache,
 * struct elf_object and what an object holds (sorted symbols, DWARF indexes, copied line tables,
 * the address cache, interned strings) -- the constants of the accounting, and the helpers of
 * the cache core, symcache.c: the byte budget (charge*()), the LRU list, unloading and freeing
 * an object, interned strings and demangling.
 *
 * The modules, one file each (their headers say what each offers to the others; the cache core's
 * is this one; lookup.c offers nothing but symbolize.h's lookups, so it has none):
 *   symcache.c     the cache core: new/free, budget accounting, LRU, unload, trim, strings
 *   elfhdr.c       ELF headers: checks, GNU build ID, PT_LOAD, PLT sections, size estimates
 *   objcache.c     open and cache: objects by file identity and build ID, re-opening a file
 *   plt.c          PLT entries and GOT slots: PLT stub names (NAME@plt), call targets, tail jumps
 *   debugfile.c    separate debug files: build-id tree, .gnu_debuglink, debuginfod's
 *   symtab.c       symbol tables: .symtab, .dynsym, MiniDebugInfo; names read on demand
 *   dwarfframes.c  DWARF: unit and function indexes, inline chains, names, line tables
 *   load.c         loading an object's symbols and DWARF under the budget
 *   lookup.c       lookups: the frames of an address, the address cache, idle objects
 *
 * Ownership: a symcache owns its objects; an object owns what its fields point to (strings
 * handed out in frames stay valid as symbolize.h says). Errors: int functions return 0 or a
 * negative errno, pointer functions NULL, unless a function says otherwise. Not thread-safe.
 */
#ifndef SPANPROF_SYMCACHE_H
#define SPANPROF_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <elfutils/libdw.h>
#include <gelf.h>

/*
 * uthash must not exit() on allocation failure: record it and fail the call. One flag per file
 * including this header: each HASH_ADD sets and reads its own file's.
 */
static __thread bool hash_oom __attribute__((unused));
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

#include "symbols/symbolize.h"

struct gopclntab; /* exporter/runtime/go/gopclntab.h */

/* Deepest inline chain kept; real code rarely nests more than ~10. */
#define MAX_FRAMES 32

/*
 * Mapped sections shared by every unit (abbreviations, strings, range lists) are charged this
 * fraction of their size: lookups touch a few of their pages. The DIEs and the line program of
 * a unit are charged in full when a lookup first uses the unit (charge_unit()); location lists
 * are never read. symcache__trim() drops the touched pages, so this bounds what is resident.
 */
#define MAPPED_DWARF_SHARE 4

/*
 * libdw's heap for a unit (elfutils 0.188, measured with mallinfo2()): its record once a lookup
 * finds a unit past it by offset (1 KiB a unit, libpython's and libc's debug file alike), and
 * the abbreviations read once a DIE of the unit is (0.6 KiB a unit in libc's, 3.6 in libpython's).
 */
#define UNIT_RECORD_BYTES 1024
#define UNIT_ABBREV_BYTES 4096
/* Approximate bytes of one uthash entry's bookkeeping, for the accounting. */
#define ENTRY_OVERHEAD (sizeof(UT_hash_handle) + 2 * sizeof(void *))

/* A function symbol; 16 bytes, sorted by address. */
struct csym {
	uint64_t addr;
	uint32_t size; /* clamped to UINT32_MAX */
	uint32_t name; /* offset in the string table; SYM_NAME_MINI: in MiniDebugInfo's */
};

/* Set in csym.name when the name is in the MiniDebugInfo's string table (o->mini_names). */
#define SYM_NAME_MINI 0x80000000u

/* Name of a symbol a lookup hit, read from the file. */
struct sname {
	uint32_t idx; /* in elf_object.syms */
	UT_hash_handle hh;
	const char *dname; /* demangled (interned), or name */
	char name[];
};

/* A range of a concrete DW_TAG_subprogram; kept over unloads, its DIE found again by offset. */
struct func_range {
	uint64_t lo, hi;
	Dwarf_Off off;
};

/*
 * A row of a unit's line table as libdw orders it (dwarf_onesrcline()), 16 bytes instead of
 * libdw's 80 or so (struct Dwarf_Line_s in its memory blocks, kept until dwarf_end()).
 */
struct line_row {
	uint64_t addr;
	int32_t line;
	uint16_t column;
	uint16_t
	    file; /* index in unit_lines.files, LINE_NO_FILE; LINE_END_SEQUENCE set: ends one */
};

#define LINE_NO_FILE 0x7fffu
#define LINE_END_SEQUENCE 0x8000u

/*
 * A unit's line table and file names, copied out of libdw (read_unit_lines()), one block.
 * Kept with the CU ranges over unloads: a re-load answers lines without reading the line
 * program again.
 */
struct unit_lines {
	size_t nrows, nfiles;
	struct line_row *rows;
	const char **files; /* as dwarf_filesrc() names them; NULL when libdw has no name */
};

struct cu_info {
	Dwarf_Die die; /* valid while die_ok (of the Dwarf handle loaded now) */
	Dwarf_Off off; /* the CU DIE's offset: die again after a re-load */
	bool die_ok;
	struct func_range *funcs; /* sorted by lo, built on first use */
	size_t nfuncs;
	bool indexed;
	/*
	 * In the budget since its first lookup: its line table (libdw keeps it until dwarf_end)
	 * and, when the DWARF is mapped, its DIEs and its line program (charge_unit()).
	 */
	bool charged;
	bool pages_charged;  /* mapped: its DIEs' pages, since the DWARF was opened or trimmed */
	uint64_t unit_bytes; /* its DIEs' extent in .debug_info (symc_index_cus()) */
	struct unit_lines *lines; /* NULL until its first lookup, or when libdw's are used */
	bool lines_read;	  /* read_unit_lines() was tried: lines, else libdw's */
	size_t unit_no;		  /* its place among all units of .debug_info, from 0 */
};

struct cu_range {
	uint64_t lo, hi;
	size_t cu;
};

struct addr_entry {
	uint64_t vaddr;
	UT_hash_handle hh;
	int n;
	struct sym_frame frames[];
};

struct istr {
	UT_hash_handle hh;
	char s[];
};

/* scoped_name() of a declaration DIE, by its offset: the scope walk reads the whole CU. */
struct scope_name {
	Dwarf_Off off;
	UT_hash_handle hh;
	const char *name; /* interned */
};

struct elf_object {
	struct symcache *cache;
	/* Light part: kept until symcache__free(). */
	struct elf_object *next;     /* all objects */
	struct elf_object *lru_prev; /* loaded objects, most recently used first */
	struct elf_object *lru_next;
	char *path, *orig_path, *build_id, *debug_path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int fd; /* -1 when closed over max_fds */
	GElf_Phdr *loads;
	size_t nloads;
	/* Its PLT sections (.plt, .plt.sec, .plt.got): file vaddr, size, entry size. */
	struct plt_section {
		uint64_t vaddr, size, entsize;
	} plts[3];
	uint8_t nplts;
	bool debug_searched; /* debug_path is final (but for a debuginfod answer) */
	bool debug_pending;  /* asked debuginfod, no answer yet */
	bool fetch_done;     /* debuginfod answered; its file, if any, was tried */
	bool inflate_failed; /* inflate_to_file() failed: compressed DWARF via pread */
	bool maybe_go;	     /* gopclntab__maybe() of its headers: Go's table may be in it */
	int8_t cfi; /* symcache__has_cfi(): 0 not read, 1 .eh_frame or .debug_frame, -1 none */
	bool loaded;
	bool evicted;	    /* unloaded for room since its last load */
	bool load_failed;   /* file gone: lookups answer nothing */
	uint64_t last_used; /* CLOCK_MONOTONIC ns of the last open or lookup */
	bool idle_closed;   /* loaded, but descriptors and DWARF released for idleness */
	bool reopen_failed; /* idle_closed and the file could not be re-opened */
	/* Heavy part: built by elf_object__load(), freed by elf_object__unload(). */
	size_t bytes;	    /* accounted */
	size_t dwarf_bytes; /* of bytes: DWARF sections, function indexes and line tables */
	/*
	 * Of bytes: the sorted symbols, the CU ranges (syms, cus, cu_ranges) and, per unit
	 * looked up, its function ranges and line table: kept over an unload with keep_answers,
	 * so a re-load neither reads and sorts the symbol table, nor walks every CU, nor builds
	 * a unit's function ranges or reads its line program again (most of a load's time),
	 * until symc_drop_kept().
	 */
	size_t index_bytes;
	bool names_in_dbg; /* syms' names are in the debug file's string table (dbg_fd) */
	int dbg_fd;	   /* debug file, while its names may be read */
	int names_fd;	   /* o->fd or dbg_fd: file holding strtab */
	int dwarf_fd;	   /* o->fd or dbg_fd when dwarf_elf reads with pread */
	int inflated_fd;   /* light part: its compressed DWARF, inflated (unlinked file) */
	int mini_fd;	   /* light part: its .gnu_debugdata, decoded (unlinked file) */
	bool mini_failed;  /* .gnu_debugdata unreadable (counted once): .dynsym alone */
	bool mini_names;   /* syms holds names from mini_fd (SYM_NAME_MINI) */
	uint64_t mini_strtab_off, mini_strtab_size;
	uint64_t strtab_off, strtab_size;
	struct csym *syms;
	size_t nsyms;
	struct sname *names;
	/*
	 * Demangled names, source paths, and the strings of frames kept in the address cache
	 * over an unload (elf_object__unload() with keep_answers): with addrs, the part of the
	 * heavy part that outlives unloads, until drop_answers().
	 */
	struct istr *strings;
	size_t string_bytes; /* of bytes: strings' share */
	struct scope_name *scope_names;
	Elf *dwarf_elf; /* mapped, for libdw */
	Dwarf *dwarf;
	bool dwarf_mapped; /* dwarf_elf is a mapping: its units are charged as lookups use them */
	/*
	 * Of dwarf_bytes: the mapping's pages lookups may have touched since the DWARF was opened
	 * or symcache__trim() dropped them (shared sections, units' DIEs), charged again as
	 * lookups touch them after a trim.
	 */
	size_t page_bytes;
	size_t shared_page_bytes; /* what the shared sections add to page_bytes */
	bool shared_pages_charged;
	size_t nunits; /* units of every type in .debug_info (symc_index_cus()), kept with cus */
	size_t units_found; /* units libdw has a record of in o->dwarf (charged) */
	struct cu_info *cus;
	size_t ncus;
	struct cu_range *cu_ranges;
	size_t ncu_ranges;
	struct addr_entry *addrs;
	size_t addr_bytes;
	/* Go binaries: the PC/line table, reading the file mapped whole (go_map). */
	struct gopclntab *go;
	void *go_map;
	size_t go_map_len;
};

/* Cache key ("b:<build id>" or "i:<dev>:<ino>:<size>:<mtime>") to object. */
struct obj_key {
	UT_hash_handle hh;
	struct elf_object *obj;
	char key[];
};

struct symcache {
	char *debug_dir;
	size_t max_bytes;      /* the budget now */
	size_t bound;	       /* what it may grow to (symcache_opts.max_bytes_bound) */
	uint64_t trim_reloads; /* stats.reloads at the last symcache__trim() */
	unsigned int max_fds;
	uint64_t idle_ns; /* objects unused this long release their descriptors */
	struct elf_object *objects;
	struct elf_object *lru_head, *lru_tail;
	struct obj_key *keys;
	struct symcache_stats stats;
	struct dbgfetch *fetch; /* not owned; NULL: no debuginfod */
	uint64_t fetch_gen;	/* dbgfetch__generation() at the last pick-up */
	uint64_t trimmed_ns;	/* CLOCK_MONOTONIC of the last malloc_trim() */
	uint64_t untrimmed;	/* bytes unloaded (or freed by short-lived Dwarf handles) since */
};

/* --- the cache core (symcache.c) --- */

/* CLOCK_MONOTONIC now, in ns. */
uint64_t symc_now_ns(void);
/* Adds @n bytes to @o's accounted bytes and the cache's (stats.bytes, bytes_peak). */
void symc_charge(struct elf_object *o, size_t n);
/* symc_charge() for what symc_drop_index() frees (o->index_bytes: kept over unloads). */
void symc_charge_index(struct elf_object *o, size_t n);
/* symc_charge() for what symc_drop_dwarf() frees (o->dwarf_bytes). */
void symc_charge_dwarf(struct elf_object *o, size_t n);
/* symc_charge_dwarf() for pages of the mapped DWARF, which symcache__trim() drops. */
void symc_charge_pages(struct elf_object *o, size_t n);
/* Takes @o's accounted part *@part (one of its *_bytes) off the budget and zeroes it. */
void symc_uncharge(struct elf_object *o, size_t *part);
/* Drops the resident pages of @o's mapped DWARF (read-only: they read back unchanged). */
void symc_drop_mapped_pages(struct elf_object *o);
/* Frees @o's address cache and uncharges it. */
void addr_cache__clear(struct elf_object *o);
/*
 * Copies the strings of @o's cached frames that libdw or the Go table own into o->strings, so
 * they outlive its DWARF. false on ENOMEM (some may be copied).
 */
bool addr_cache__own_strings(struct elf_object *o);
/* Makes @o the most recently used object. */
void symc_lru_touch(struct elf_object *o);
/* Closes *@fd if open (stats.fds) and sets it to -1. */
void symc_close_fd(struct symcache *c, int *fd);
/* Frees @o's DWARF (libdw handle, Elf, mapping) and its charge; frames pointing into it too. */
void symc_drop_dwarf(struct elf_object *o);
/* Frees @o's Go table and the file's mapping. */
void symc_drop_go(struct elf_object *o);
/* Frees the sorted symbols, CU ranges, function ranges and line tables. */
void symc_drop_index(struct elf_object *o);
/* Frees what an unload with keep_answers left (answers and indexes). */
void symc_drop_kept(struct elf_object *o);
/* Frees @o's heavy part; with @keep_answers its frames and indexes stay (see symcache.c). */
void elf_object__unload(struct elf_object *o, bool keep_answers);
/* Frees @o and everything it holds; NULL is a no-op. */
void elf_object__free(struct elf_object *o);
/* A copy of @s owned by @o (until drop_answers()), or NULL (ENOMEM). */
const char *symc_intern(struct elf_object *o, const char *s);
/* Demangled C++/Rust @name, interned in @o; @name itself when not mangled or on failure. */
const char *symc_demangle(struct elf_object *o, const char *name);

#endif /* SPANPROF_SYMCACHE_H */
