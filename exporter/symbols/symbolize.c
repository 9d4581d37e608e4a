// SPDX-License-Identifier: Apache-2.0
/*
 * symbolize: ELF symbol tables and DWARF (libelf, libdw) to names, files and
 * lines. Formats: ELF gABI (program headers, symbol tables, notes), the GNU
 * build-id note and .gnu_debuglink (GDB manual, "Separate Debug Files"),
 * DWARF 5 sections 2.17 (code addresses and ranges), 3.3.8 (inlined
 * subroutines, DW_AT_call_file/line/column) and 6.2 (line number table).
 *
 * Memory: an object has a light part, kept until symcache__free() (path,
 * build ID, PT_LOAD headers, an open descriptor), and a heavy part loaded on
 * its first lookup and unloaded again, least recently used first, when the
 * cache goes over its byte budget; the frames it answered outlive an unload (still
 * charged) until the budget needs their bytes too. Headers are read with pread (ELF_C_READ),
 * never by mapping the file. Symbols become a compact sorted array (address,
 * size, offset of the name in the string table); names are read with pread
 * only for symbols a lookup hits. Only DWARF is mapped (libdw wants whole
 * sections; mapping touches only the pages used; compressed sections are
 * first inflated into an unlinked file), charged to the budget at a quarter
 * of its size, and its touched pages are dropped by symcache__trim(). Line
 * tables libdw reads are charged as they are read. Not thread-safe.
 *
 * Descriptors follow the working set: an object neither opened nor looked up for
 * symcache_opts.idle_s closes its descriptors and, if loaded, drops its DWARF (the mapping
 * pins the file as a descriptor does), keeping its symbols, the names read and the frames
 * already answered (their strings copied out of libdw's memory). A later lookup of an
 * address not answered before re-opens the very same file (reopen()) and re-loads the
 * object; if the file is gone it answers from what stayed in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

/* uthash must not exit() on allocation failure: record it and fail the call. */
static __thread bool hash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

#include "runtime/go/gopclntab.h"
#include "symbols/debuginfod.h"
#include "symbols/elfcheck.h"
#include "symbols/minidebuginfo.h"
#include "symbols/symbolize.h"

#define HOST_DEBUG_DIR "/usr/lib/debug"
/* Deepest inline chain kept; real code rarely nests more than ~10. */
#define MAX_FRAMES 32
/* Namespaces/classes nest shallowly; the bound guards against DWARF loops. */
#define MAX_DIE_DEPTH 32
/* One object's address cache may use this share of the budget before it is dropped. */
#define ADDR_CACHE_SHARE 8
/* Symbol tables are read in chunks of this many bytes (no full copy in memory). */
#define SYMTAB_CHUNK 65536
/* Longest symbol name read; C++ template names reach a few KiB. */
#define MAX_NAME_LEN (1 << 16)
/* Unloading this much at once returns free heap pages to the kernel. */
#define TRIM_BYTES (1u << 20)
/* ... at most this often (ns): under a budget that thrashes, every load unloads megabytes. */
#define TRIM_INTERVAL_NS 1000000000ull
/*
 * Mapped sections shared by every unit (abbreviations, strings, range lists) are charged this
 * fraction of their size: lookups touch a few of their pages. The DIEs and the line program of
 * a unit are charged in full when a lookup first uses the unit (charge_unit()); location lists
 * are never read. symcache__trim() drops the touched pages, so this bounds what is resident.
 */
#define MAPPED_DWARF_SHARE 4
/*
 * What libdw keeps per line table row once a CU's line table is read in the Dwarf handle of a
 * loaded object (struct Dwarf_Line_s and its share of the array, in its memory blocks, until
 * dwarf_end(): about 82 bytes a row with elfutils 0.188, measured with mallinfo2() on libpython's
 * ceval.c units), plus the file table. Only when a unit's lines could not be copied out
 * (read_unit_lines()).
 */
#define LINE_BYTES 80
#define LINE_FILE_BYTES 64
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
	uint64_t unit_bytes; /* its DIEs' extent in .debug_info (index_cus()) */
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
	 * until drop_kept().
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
	size_t nunits;	    /* units of every type in .debug_info (index_cus()), kept with cus */
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

static unsigned int default_max_fds(void)
{
	struct rlimit rl;
	rlim_t n = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		n = rl.rlim_cur;
	n /= 4;
	return n < 64 ? 64 : n > 65536 ? 65536 : (unsigned int)n;
}

struct symcache *symcache__new(const struct symcache_opts *opts)
{
	struct symcache *c;

	if (!elfcheck__libelf_ready()) {
		errno = ENOSYS;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max_bytes = opts && opts->max_bytes ? opts->max_bytes : SYMCACHE_DEFAULT_MAX_BYTES;
	c->bound =
	    opts && opts->max_bytes_bound > c->max_bytes ? opts->max_bytes_bound : c->max_bytes;
	c->stats.budget = c->max_bytes;
	c->max_fds = opts && opts->max_fds ? opts->max_fds : default_max_fds();
	c->idle_ns =
	    (opts && opts->idle_s ? opts->idle_s : SYMCACHE_DEFAULT_IDLE_S) * 1000000000ull;
	if (opts && opts->debug_dir) {
		c->debug_dir = strdup(opts->debug_dir);
		if (!c->debug_dir) {
			free(c);
			errno = ENOMEM;
			return NULL;
		}
	}
	return c;
}

/*
 * Drops the resident pages of @o's mapped DWARF (ELF_C_READ_MMAP: a PROT_READ, MAP_PRIVATE
 * mapping, so no page was ever written and every one reads back from the file unchanged).
 */
static void drop_mapped_pages(struct elf_object *o)
{
	size_t len;
	char *img = elf_rawfile(o->dwarf_elf, &len);

	if (img)
		madvise((void *)((uintptr_t)img & ~(uintptr_t)4095), len + ((uintptr_t)img & 4095),
			MADV_DONTNEED);
}

static void charge(struct elf_object *o, size_t n)
{
	struct symcache_stats *st = &o->cache->stats;

	o->bytes += n;
	st->bytes += n;
	if (st->bytes > st->bytes_peak)
		st->bytes_peak = st->bytes;
}

/* charge() for what drop_index() frees. */
static void charge_index(struct elf_object *o, size_t n)
{
	charge(o, n);
	o->index_bytes += n;
}

/* charge() for what drop_dwarf() frees. */
static void charge_dwarf(struct elf_object *o, size_t n)
{
	charge(o, n);
	o->dwarf_bytes += n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Takes the bytes of @o's accounted part *@part (one of its *_bytes) off the budget. */
static void uncharge(struct elf_object *o, size_t *part)
{
	o->bytes -= *part;
	o->cache->stats.bytes -= *part;
	*part = 0;
}

/* charge_dwarf() for pages of the mapped DWARF, which symcache__trim() drops. */
static void charge_pages(struct elf_object *o, size_t n)
{
	charge_dwarf(o, n);
	o->page_bytes += n;
}

/* The mapped DWARF's pages were dropped: takes their charge off until lookups touch them. */
static void uncharge_pages(struct elf_object *o)
{
	o->dwarf_bytes -= o->page_bytes;
	uncharge(o, &o->page_bytes);
	o->shared_pages_charged = false;
	for (size_t i = 0; i < o->ncus; i++)
		o->cus[i].pages_charged = false;
}

static void addr_cache__clear(struct elf_object *o)
{
	struct addr_entry *e, *tmp;

	HASH_ITER (hh, o->addrs, e, tmp) {
		HASH_DEL(o->addrs, e);
		free(e);
	}
	uncharge(o, &o->addr_bytes);
}

static void lru_unlink(struct elf_object *o)
{
	struct symcache *c = o->cache;

	if (o->lru_prev)
		o->lru_prev->lru_next = o->lru_next;
	else if (c->lru_head == o)
		c->lru_head = o->lru_next;
	if (o->lru_next)
		o->lru_next->lru_prev = o->lru_prev;
	else if (c->lru_tail == o)
		c->lru_tail = o->lru_prev;
	o->lru_prev = o->lru_next = NULL;
}

static void lru_touch(struct elf_object *o)
{
	struct symcache *c = o->cache;

	if (c->lru_head == o)
		return;
	lru_unlink(o);
	o->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = o;
	c->lru_head = o;
	if (!c->lru_tail)
		c->lru_tail = o;
}

static void close_fd(struct symcache *c, int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		c->stats.fds--;
		*fd = -1;
	}
}

/*
 * Frees @o's DWARF (libdw handle, its Elf and mapping, CU and function indexes, line tables)
 * and what was charged for it. Frames in the address cache may point into it: the caller
 * clears them or copies their strings first. Does not close dwarf_fd (it is o->fd or dbg_fd).
 */
static void drop_dwarf(struct elf_object *o)
{
	size_t i;

	/*
	 * The CU ranges, function ranges and lines stay (drop_index()); what points into this
	 * Dwarf handle goes.
	 */
	for (i = 0; i < o->ncus; i++)
		o->cus[i].die_ok = o->cus[i].charged = o->cus[i].pages_charged = false;
	if (o->dwarf)
		dwarf_end(o->dwarf);
	if (o->dwarf_elf)
		elf_end(o->dwarf_elf);
	o->dwarf = NULL;
	o->dwarf_elf = NULL;
	o->dwarf_mapped = false;
	o->shared_pages_charged = false;
	o->page_bytes = 0; /* in dwarf_bytes, uncharged below */
	o->units_found = 0;
	o->dwarf_fd = -1;
	uncharge(o, &o->dwarf_bytes);
}

/* Frees @o's Go table and its mapping (frames pointing into it: as for drop_dwarf()). */
static void drop_go(struct elf_object *o)
{
	size_t off, len;

	if (o->go) {
		gopclntab__extent(o->go, &off, &len);
		gopclntab__free(o->go);
		o->go = NULL;
		o->bytes -= len / MAPPED_DWARF_SHARE;
		o->cache->stats.bytes -= len / MAPPED_DWARF_SHARE;
	}
	if (o->go_map)
		munmap(o->go_map, o->go_map_len);
	o->go_map = NULL;
	o->go_map_len = 0;
}

/* Frees the frames answered (the address cache) and the strings they use. */
static void drop_answers(struct elf_object *o)
{
	struct istr *s, *stmp;

	addr_cache__clear(o);
	HASH_ITER (hh, o->strings, s, stmp) {
		HASH_DEL(o->strings, s);
		free(s);
	}
	uncharge(o, &o->string_bytes);
}

/* Frees the sorted symbols and the CU ranges (and the CUs' function indexes). */
static void drop_index(struct elf_object *o)
{
	for (size_t i = 0; i < o->ncus; i++) {
		free(o->cus[i].funcs);
		free(o->cus[i].lines);
	}
	free(o->cus);
	free(o->cu_ranges);
	o->cus = NULL;
	o->cu_ranges = NULL;
	o->ncus = o->ncu_ranges = 0;
	free(o->syms);
	o->syms = NULL;
	o->nsyms = 0;
	o->names_in_dbg = false;
	o->strtab_off = o->strtab_size = 0;
	o->mini_names = false;
	o->mini_strtab_off = o->mini_strtab_size = 0;
	uncharge(o, &o->index_bytes);
}

/*
 * Frees what an unload with keep_answers left: the answers and the indexes. The object leaves
 * the LRU list unless it is loaded.
 */
static void drop_kept(struct elf_object *o)
{
	drop_answers(o);
	drop_index(o);
	if (!o->loaded)
		lru_unlink(o);
}

static bool addr_cache__own_strings(struct elf_object *o);

/*
 * Frees the heavy part; the object can be loaded again from its light part. With
 * @keep_answers, the frames already answered stay (their strings copied out of the symbol
 * names, DWARF and Go table freed here), and so do the sorted symbols, CU ranges, function
 * ranges and line tables, still
 * charged to the budget and on the LRU list: the same addresses are answered again without a
 * load, and a re-load for a new address skips the symbol sort and the CU walk (the file is the
 * same, so are its answers and indexes), until make_room() needs their bytes too
 * (drop_kept()). Without, everything goes (a better source of names arrived).
 */
static void elf_object__unload(struct elf_object *o, bool keep_answers)
{
	struct symcache *c = o->cache;
	struct sname *n, *ntmp;
	struct scope_name *sn, *sntmp;
	size_t kept;

	if (!o->loaded) {
		if (!keep_answers)
			drop_kept(o);
		return;
	}
	if (!keep_answers)
		drop_index(o);
	if (!keep_answers || !o->addrs || !addr_cache__own_strings(o))
		drop_answers(o);
	HASH_ITER (hh, o->names, n, ntmp) {
		HASH_DEL(o->names, n);
		free(n);
	}
	HASH_ITER (hh, o->scope_names, sn, sntmp) {
		HASH_DEL(o->scope_names, sn);
		free(sn);
	}
	drop_dwarf(o);
	drop_go(o);
	close_fd(c, &o->dbg_fd);
	o->names_fd = -1;
	kept = o->addr_bytes + o->string_bytes + o->index_bytes;
	c->stats.bytes -= o->bytes - kept;
	o->bytes = kept;
	o->loaded = false;
	o->idle_closed = o->reopen_failed = false;
	c->stats.objects_loaded--;
	if (!kept)
		lru_unlink(o);
}

static void elf_object__free(struct elf_object *o)
{
	if (!o)
		return;
	elf_object__unload(o, false);
	drop_kept(o);
	close_fd(o->cache, &o->fd);
	close_fd(o->cache, &o->inflated_fd);
	close_fd(o->cache, &o->mini_fd);
	free(o->loads);
	free(o->path);
	free(o->orig_path);
	free(o->build_id);
	free(o->debug_path);
	free(o);
}

void symcache__free(struct symcache *c)
{
	struct obj_key *k, *ktmp;
	struct elf_object *o, *next;

	if (!c)
		return;
	HASH_ITER (hh, c->keys, k, ktmp) {
		HASH_DEL(c->keys, k);
		free(k);
	}
	for (o = c->objects; o; o = next) {
		next = o->next;
		elf_object__free(o);
	}
	free(c->debug_dir);
	free(c);
}

/* Grows the budget, up to its bound, when objects unloaded for room were needed again. */
static void grow_if_thrashing(struct symcache *c)
{
	uint64_t reloads = c->stats.reloads - c->trim_reloads;
	size_t step = c->max_bytes / 2 > (1u << 20) ? c->max_bytes / 2 : (1u << 20);

	c->trim_reloads = c->stats.reloads;
	if (reloads < SYMCACHE_THRASH_RELOADS || c->max_bytes >= c->bound)
		return;
	c->max_bytes = c->bound - c->max_bytes > step ? c->max_bytes + step : c->bound;
	c->stats.budget = c->max_bytes;
	c->stats.budget_grown++;
}

void symcache__trim(struct symcache *c)
{
	struct elf_object *o;

	for (o = c ? c->lru_head : NULL; o; o = o->lru_next) {
		if (o->dwarf_elf && o->dwarf_fd < 0) {
			drop_mapped_pages(o);
			uncharge_pages(o);
		}
		if (o->go_map)
			madvise(o->go_map, o->go_map_len, MADV_DONTNEED);
	}
	if (c) {
		symcache__pick_up_debug_files(c);
		symcache__close_idle(c, now_ns());
		grow_if_thrashing(c);
	}
}

void symcache__stats(const struct symcache *c, struct symcache_stats *out)
{
	*out = c->stats;
}

/* Returns a copy of @s that lives until @o is unloaded, or NULL (ENOMEM). */
static const char *intern(struct elf_object *o, const char *s)
{
	struct istr *e;
	size_t len = strlen(s);

	HASH_FIND(hh, o->strings, s, len, e);
	if (e)
		return e->s;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->s, s, len + 1);
	hash_oom = false;
	HASH_ADD_KEYPTR(hh, o->strings, e->s, len, e);
	if (hash_oom) {
		free(e);
		return NULL;
	}
	charge(o, sizeof(*e) + len + 1 + ENTRY_OVERHEAD);
	o->string_bytes += sizeof(*e) + len + 1 + ENTRY_OVERHEAD;
	return e->s;
}

/*
 * Itanium C++ (_Z) and Rust names (legacy _ZN...17h<hash>E, whose hash
 * libiberty drops, and v0 _R). Returns @name itself when not mangled.
 */
static const char *demangle(struct elf_object *o, const char *name)
{
	const char *s;
	char *d;

	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return name;
	d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return name;
	s = intern(o, d);
	free(d);
	return s ? s : name;
}

/* --- ELF ----------------------------------------------------------------------------------- */

/*
 * Checks what later code relies on: headers, and section headers and loadable
 * segments within the file's @size bytes (a truncated copy fails here).
 */
static int elf_validate(Elf *elf, uint64_t size)
{
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	size_t n, i;
	Elf_Scn *scn = NULL;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		return -ENOEXEC;
	if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
		return -ENOEXEC;
	if (ehdr.e_shoff > size ||
	    (size - ehdr.e_shoff) / (ehdr.e_shentsize ? ehdr.e_shentsize : 1) < ehdr.e_shnum)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &n) || elf_getshdrnum(elf, &i) || elf_getshdrstrndx(elf, &i))
		return -ENOEXEC;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr))
			return -ENOEXEC;
		/* Debug files keep segments with no bytes whose offsets point past their end. */
		if (phdr.p_type == PT_LOAD && phdr.p_filesz &&
		    (phdr.p_offset > size || size - phdr.p_offset < phdr.p_filesz))
			return -ENOEXEC;
	}
	while ((scn = elf_nextscn(elf, scn)))
		if (!gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
	return 0;
}

/* Bytes of the .debug_* sections libdw may map: charged in full while loaded. */
/*
 * Whether mapped section @name (".debug_*") is charged when the DWARF is opened: not the DIEs
 * and the line programs (charged per unit as lookups use them, charge_unit()), nor the
 * location lists (no lookup reads them).
 */
static bool charged_at_open(const char *name)
{
	static const char *const later[] = {".debug_info", ".debug_line", ".debug_loc",
					    ".debug_loclists"};

	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++)
		if (!strcmp(name, later[i]))
			return false;
	return true;
}

/*
 * Bytes of @elf's .debug_* sections: all of them (@mapped false: libdw inflated them into
 * memory), else those charged_at_open(), at MAPPED_DWARF_SHARE.
 */
static size_t debug_sections_size(Elf *elf, bool mapped)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t stridx, n = 0;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		if (!mapped)
			n += shdr.sh_size;
		else if (charged_at_open(name))
			n += shdr.sh_size / MAPPED_DWARF_SHARE;
	}
	return n;
}

/* What a load charges for @elf's symbols: 16 bytes a function symbol of its larger table. */
static size_t symbols_estimate(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t syms = 0;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type != SHT_NOBITS &&
		    (shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM) && shdr.sh_entsize &&
		    shdr.sh_size / shdr.sh_entsize * 16 > syms)
			syms = shdr.sh_size / shdr.sh_entsize * 16;
	return syms;
}

/*
 * What @elf's DWARF may cost before anything is read. With @whole, all of it: compressed
 * sections at 3 times their size (libdw inflating them in memory), the others at
 * MAPPED_DWARF_SHARE; this decides whether it is used at all. Else what opening it charges
 * (load_dwarf()): the sections charged_at_open() at MAPPED_DWARF_SHARE of their size, compressed
 * ones at 3 times theirs (inflated into a file and mapped; reading their compression header
 * would read the whole section), or, with @in_memory (inflating into a file failed before),
 * compressed sections in full.
 */
static size_t dwarf_estimate(Elf *elf, bool whole, bool in_memory)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t stridx, n = 0;
	uint64_t size;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		if (whole) {
			n += shdr.sh_flags & SHF_COMPRESSED ? 3 * shdr.sh_size
							    : shdr.sh_size / MAPPED_DWARF_SHARE;
			continue;
		}
		size = shdr.sh_flags & SHF_COMPRESSED ? 3 * shdr.sh_size : shdr.sh_size;
		if ((shdr.sh_flags & SHF_COMPRESSED) && in_memory)
			n += size;
		else if (charged_at_open(name))
			n += size / MAPPED_DWARF_SHARE;
	}
	return n;
}

static char *hex(const unsigned char *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	s[2 * n] = 0;
	return s;
}

static char *note_build_id(Elf_Data *data)
{
	GElf_Nhdr nh;
	size_t off = 0, next, name_off, desc_off;

	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4))
			return hex((unsigned char *)data->d_buf + desc_off, nh.n_descsz);
		off = next;
	}
	return NULL;
}

/*
 * Lower-case hex of the NT_GNU_BUILD_ID note, from SHT_NOTE sections, else
 * from PT_NOTE segments (section headers may be stripped). NULL if none.
 */
static char *read_build_id(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	Elf_Data *data;
	size_t n, i;
	char *id;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && (id = note_build_id(data)))
			return id;
	}
	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz,
					    phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data && (id = note_build_id(data)))
			return id;
	}
	return NULL;
}

/*
 * The PLT sections of @elf into @o->plts (x86-64: .plt's and .plt.sec's entries are 16 bytes,
 * .plt.got's 8 or 16, as its sh_entsize says; 16 when a linker left it 0). A corrupt or
 * missing section table leaves none: PLT stubs are then not named.
 */
static void read_plts(struct elf_object *o, Elf *elf)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got"};
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	o->nplts = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn)) && o->nplts < sizeof(o->plts) / sizeof(o->plts[0])) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++) {
			if (strcmp(name, names[i]))
				continue;
			o->plts[o->nplts].vaddr = sh.sh_addr;
			o->plts[o->nplts].size = sh.sh_size;
			o->plts[o->nplts].entsize =
			    sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize : 16;
			o->nplts++;
			break;
		}
	}
}

static int read_loads(struct elf_object *o, Elf *elf)
{
	GElf_Phdr phdr;
	size_t n, i;
	void *p;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	o->loads = calloc(n ? n : 1, sizeof(*o->loads));
	if (!o->loads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr))
			return -ENOEXEC;
		if (phdr.p_type == PT_LOAD)
			o->loads[o->nloads++] = phdr;
	}
	p = realloc(o->loads, (o->nloads ? o->nloads : 1) * sizeof(*o->loads));
	if (p)
		o->loads = p;
	return 0;
}

int elf_object__file_offset_to_vaddr(const struct elf_object *o, uint64_t offset, uint64_t *vaddr)
{
	size_t i;
	int pass;

	/* Segments may share a file page; a PC belongs to the executable one. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < o->nloads; i++) {
			const GElf_Phdr *p = &o->loads[i];

			if (!pass && !(p->p_flags & PF_X))
				continue;
			if (offset >= p->p_offset && offset - p->p_offset < p->p_filesz) {
				*vaddr = offset - p->p_offset + p->p_vaddr;
				return 0;
			}
		}
	}
	return -ENOENT;
}

const char *elf_object__build_id(const struct elf_object *o)
{
	return o->build_id;
}

/* --- open and cache ------------------------------------------------------------------------ */

static struct elf_object *find_key(struct symcache *c, const char *key)
{
	struct obj_key *k;

	HASH_FIND_STR(c->keys, key, k);
	return k ? k->obj : NULL;
}

static int add_key(struct symcache *c, const char *key, struct elf_object *o)
{
	size_t len = strlen(key);
	struct obj_key *k = malloc(sizeof(*k) + len + 1);

	if (!k)
		return -ENOMEM;
	memcpy(k->key, key, len + 1);
	k->obj = o;
	hash_oom = false;
	HASH_ADD_KEYPTR(hh, c->keys, k->key, len, k);
	if (hash_oom) {
		free(k);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Reads @fd (a regular file of @size bytes) as ELF: @cmd ELF_C_READ reads
 * headers and sections with pread on demand, ELF_C_READ_MMAP maps the file.
 * NULL + *@errp (-ENOEXEC) on failure. @fd stays the caller's.
 */
static Elf *elf_from_fd(int fd, Elf_Cmd cmd, uint64_t size, int *errp)
{
	Elf *elf = elf_begin(fd, cmd, NULL);
	int err;

	if (!elf) {
		*errp = -ENOEXEC;
		return NULL;
	}
	err = elf_validate(elf, size);
	if (err) {
		elf_end(elf);
		*errp = err;
		return NULL;
	}
	return elf;
}

/* Opens @path read-only; -errno, or -ENOEXEC for what is not a regular file. */
static int open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

static void identity_key_of(char *buf, size_t len, uint64_t dev, uint64_t ino, uint64_t size,
			    int64_t mtime_sec, long mtime_nsec)
{
	snprintf(buf, len, "i:%llx:%llx:%llx:%lld.%09ld", (unsigned long long)dev,
		 (unsigned long long)ino, (unsigned long long)size, (long long)mtime_sec,
		 mtime_nsec);
}

static void identity_key(char *buf, size_t len, const struct stat *st)
{
	identity_key_of(buf, len, st->st_dev, st->st_ino, st->st_size, st->st_mtim.tv_sec,
			st->st_mtim.tv_nsec);
}

/* True when @st (fstat of an open file) is @o's file: device, inode, size and mtime. */
static bool same_file(const struct elf_object *o, const struct stat *st)
{
	return st->st_dev == o->dev && st->st_ino == o->ino && st->st_size == o->size &&
	       st->st_mtim.tv_sec == o->mtime.tv_sec && st->st_mtim.tv_nsec == o->mtime.tv_nsec;
}

/* Keeps the number of held descriptors under max_fds: unloaded objects close theirs first. */
static void limit_fds(struct symcache *c)
{
	struct elf_object *o;

	for (o = c->objects; o && c->stats.fds > c->max_fds; o = o->next)
		if (!o->loaded && o->fd >= 0)
			close_fd(c, &o->fd);
}

struct elf_object *symcache__open(struct symcache *c, const char *path, const char *orig_path)
{
	struct elf_object *o = NULL, *hit;
	char ikey[128], *bkey = NULL;
	struct stat st;
	Elf *elf = NULL;
	int err, fd;

	/* Identity first: it needs only an fstat, and most opens are repeats. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	identity_key(ikey, sizeof(ikey), &st);
	hit = find_key(c, ikey);
	if (hit) {
		hit->last_used = now_ns();
		/* Closed while idle, and the very file is open here: keep this descriptor. */
		if (hit->fd < 0 && same_file(hit, &st)) {
			hit->fd = fd;
			c->stats.fds++;
			hit->load_failed = hit->reopen_failed = false;
			limit_fds(c);
		} else {
			close(fd);
		}
		return hit;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto cleanup;
	}

	o = calloc(1, sizeof(*o));
	if (!o) {
		err = -ENOMEM;
		goto cleanup;
	}
	o->cache = c;
	o->fd = o->dbg_fd = o->names_fd = o->dwarf_fd = o->inflated_fd = o->mini_fd = -1;
	elf = elf_from_fd(fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!elf)
		goto cleanup;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->size = st.st_size;
	o->mtime = st.st_mtim;
	err = read_loads(o, elf);
	if (err)
		goto cleanup;
	read_plts(o, elf);
	o->build_id = read_build_id(elf);
	o->maybe_go = gopclntab__maybe(elf);
	elf_end(elf);
	elf = NULL;
	if (o->build_id) {
		bkey = malloc(strlen(o->build_id) + 3);
		if (!bkey) {
			err = -ENOMEM;
			goto cleanup;
		}
		sprintf(bkey, "b:%s", o->build_id);
		hit = find_key(c, bkey);
		if (hit) {
			/* Same build, another file (a copy, another container): share it. */
			err = add_key(c, ikey, hit);
			if (err)
				goto cleanup;
			elf_object__free(o);
			free(bkey);
			close(fd);
			return hit;
		}
	}
	o->path = strdup(path);
	o->orig_path = orig_path ? strdup(orig_path) : NULL;
	if (!o->path || (orig_path && !o->orig_path)) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = add_key(c, ikey, o);
	if (err)
		goto cleanup;
	if (bkey) {
		err = add_key(c, bkey, o);
		if (err) {
			struct obj_key *k;

			HASH_FIND_STR(c->keys, ikey, k);
			HASH_DEL(c->keys, k);
			free(k);
			goto cleanup;
		}
	}
	/* Kept: the file may be gone from every path (process exited) by the first lookup. */
	o->fd = fd;
	c->stats.fds++;
	o->last_used = now_ns();
	o->next = c->objects;
	c->objects = o;
	c->stats.objects++;
	free(bkey);
	limit_fds(c);
	return o;
cleanup:
	c->stats.open_errors++;
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	elf_object__free(o);
	free(bkey);
	errno = -err;
	return NULL;
}

/*
 * Re-opens a file whose descriptor was closed (over max_fds, or idle) by o->path, then
 * o->orig_path; only the very same file will do. 0, or -ENOENT.
 */
static int reopen(struct elf_object *o)
{
	const char *paths[2] = {o->path, o->orig_path};
	struct stat st;
	int i, fd;

	for (i = 0; i < 2; i++) {
		if (!paths[i] || paths[i][0] != '/')
			continue;
		fd = open_regular(paths[i], &st);
		if (fd < 0)
			continue;
		if (same_file(o, &st)) {
			o->fd = fd;
			o->cache->stats.fds++;
			return 0;
		}
		close(fd);
	}
	return -ENOENT;
}

static const struct csym *find_symbol(const struct elf_object *o, uint64_t vaddr);
static uint64_t segment_end(const struct elf_object *o, uint64_t vaddr);
static const struct sname *sym_name(struct elf_object *o, const struct csym *s);

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
		if (o->fd < 0 && reopen(o))
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
	if (o->fd < 0 && reopen(o))
		return -ENOENT;
	elf = elf_from_fd(o->fd, ELF_C_READ, (uint64_t)o->size, &err);
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
	const struct csym *s = find_symbol(o, vaddr);

	if (s)
		*end = s->size			    ? s->addr + s->size
		       : s + 1 < o->syms + o->nsyms ? s[1].addr
						    : segment_end(o, s->addr);
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
	t = find_symbol(o, target);
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
	sn = s && s->addr == func ? sym_name(o, s) : NULL;
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

/* --- separate debug files ------------------------------------------------------------------ */

static int file_crc32(const char *path, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong v = crc32(0, Z_NULL, 0);
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		v = crc32(v, buf, (uInt)n);
	if (n < 0)
		err = -errno;
	close(fd);
	*crc = (uint32_t)v;
	return err;
}

/*
 * Opens candidate debug file @path for @o. Accepted when build IDs match, or,
 * lacking one, when the .gnu_debuglink CRC (@crc, if @check_crc) matches.
 */
static Elf *try_debug_file(struct elf_object *o, const char *path, bool check_crc, uint32_t crc)
{
	struct stat st;
	Elf *elf;
	char *id;
	uint32_t got;
	int err, fd;
	bool ok;

	if (access(path, R_OK))
		return NULL;
	fd = open_regular(path, &st);
	if (fd < 0)
		return NULL;
	elf = elf_from_fd(fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!elf)
		goto reject;
	if (st.st_dev == o->dev && st.st_ino == o->ino)
		goto reject;
	id = read_build_id(elf);
	if (o->build_id && id)
		ok = !strcmp(o->build_id, id);
	else if (check_crc)
		ok = !file_crc32(path, &got) && got == crc;
	else
		ok = false;
	free(id);
	if (!ok)
		goto reject;
	o->debug_path = strdup(path);
	if (!o->debug_path)
		goto reject;
	o->dbg_fd = fd;
	o->cache->stats.fds++;
	return elf;
reject:
	if (elf)
		elf_end(elf);
	close(fd);
	return NULL;
}

/* Reads .gnu_debuglink: a NUL-terminated name, padding to 4, then a CRC32 of the debug file. */
static const char *read_debuglink(Elf *elf, uint32_t *crc)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elfcheck__section(elf, ".gnu_debuglink", &shdr);
	Elf_Data *data;
	const char *name;
	size_t len, crc_off;

	if (!scn || shdr.sh_type == SHT_NOBITS)
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size)
		return NULL;
	name = data->d_buf;
	len = strnlen(name, data->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (!len || crc_off + 4 > data->d_size)
		return NULL;
	memcpy(crc, (char *)data->d_buf + crc_off, 4);
	/* The CRC is stored in the byte order of the object. */
	if (elf_getident(elf, NULL)[EI_DATA] !=
	    (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
		*crc = __builtin_bswap32(*crc);
	return name;
}

/* Formats a candidate path and tries it; too long a path is no candidate. */
static Elf *try_debug_path(struct elf_object *o, bool check_crc, uint32_t crc, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof(path))
		return NULL;
	return try_debug_file(o, path, check_crc, crc);
}

/*
 * Searches, in order: <root>/.build-id/xx/rest.debug, then the debuglink next
 * to the file, in its .debug/ subdirectory, and under <root>/<dir of the file>,
 * for root = symcache_opts.debug_dir, then /usr/lib/debug. The Elf returned
 * reads through o->dbg_fd.
 */
static Elf *find_debug_file(struct elf_object *o, Elf *main_elf)
{
	const char *roots[2] = {o->cache->debug_dir, HOST_DEBUG_DIR};
	const char *orig = o->orig_path ? o->orig_path : o->path, *link, *slash;
	uint32_t crc = 0;
	int i, dirlen;
	Elf *elf;

	for (i = 0; i < 2 && o->build_id && strlen(o->build_id) > 2; i++) {
		if (!roots[i])
			continue;
		elf = try_debug_path(o, false, 0, "%s/.build-id/%.2s/%s.debug", roots[i],
				     o->build_id, o->build_id + 2);
		if (elf)
			return elf;
	}
	link = read_debuglink(main_elf, &crc);
	if (!link || strchr(link, '/'))
		return NULL;
	slash = strrchr(orig, '/');
	if (!slash) {
		orig = "./";
		slash = orig + 1;
	}
	dirlen = (int)(slash - orig);
	if ((elf = try_debug_path(o, true, crc, "%.*s/%s", dirlen, orig, link)))
		return elf;
	if ((elf = try_debug_path(o, true, crc, "%.*s/.debug/%s", dirlen, orig, link)))
		return elf;
	for (i = 0; i < 2 && orig[0] == '/'; i++) {
		if (!roots[i])
			continue;
		elf = try_debug_path(o, true, crc, "%s%.*s/%s", roots[i], dirlen, orig, link);
		if (elf)
			return elf;
	}
	return NULL;
}

/* --- symbol tables ------------------------------------------------------------------------- */

/* A symbol while loading: the preference orders aliases, then it is dropped. */
struct lsym {
	uint64_t addr;
	uint32_t size;
	uint32_t name;
	int pref; /* lower wins among symbols at one address */
	/*
	 * A symbol of size 0 (hand-written code such as crti's _init): the end of its section, so
	 * that it never names the next section's code (.plt after .init); 0 when unknown.
	 */
	uint64_t section_end;
};

static int lsym_cmp(const void *a, const void *b)
{
	const struct lsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->pref != y->pref)
		return x->pref - y->pref;
	return x->size > y->size ? -1 : x->size < y->size;
}

/* One symbol table to load: the first section of @type of @elf, read through @fd. */
struct symtab_src {
	Elf *elf;
	int fd;
	GElf_Word type;
};

/* The end of section @shndx of @elf when it holds @value, else 0 (unknown). */
static uint64_t section_end(Elf *elf, uint16_t shndx, uint64_t value)
{
	Elf_Scn *scn = shndx < SHN_LORESERVE ? elf_getscn(elf, shndx) : NULL;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || value < sh.sh_addr ||
	    value - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_addr + sh.sh_size;
}

/*
 * Appends the function symbols of @src to *@tmp (*@out used, *@cap allocated), with @name_bit
 * set in each name offset. With @shared (two tables in one array), names whose offset uses
 * SYM_NAME_MINI itself are left out. Sets *@str_off and *@str_size to the string table's
 * place. 0, -ENOENT (no such table) or -ENOMEM.
 */
static int collect_symbols(const struct symtab_src *src, uint32_t name_bit, bool shared,
			   struct lsym **tmp, size_t *out, size_t *cap, uint64_t *str_off,
			   uint64_t *str_size)
{
	unsigned char *buf = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr, strshdr;
	struct stat st;
	Elf *elf = src->elf;
	size_t i, n, entsize, per_chunk, done;
	int cls = gelf_getclass(elf);
	unsigned int enc = (unsigned char)elf_getident(elf, NULL)[EI_DATA];
	void *p;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == src->type)
			break;
	if (!scn)
		return -ENOENT;
	entsize = cls == ELFCLASS64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	if (shdr.sh_entsize != entsize || !gelf_getshdr(elf_getscn(elf, shdr.sh_link), &strshdr) ||
	    strshdr.sh_type != SHT_STRTAB || strshdr.sh_size > UINT32_MAX)
		return -ENOENT;
	/* A corrupt sh_size must not size the array: count only what the file holds. */
	if (fstat(src->fd, &st) || st.st_size < 0 || shdr.sh_offset > (uint64_t)st.st_size)
		return -ENOENT;
	n = shdr.sh_size / entsize;
	if (n > ((uint64_t)st.st_size - shdr.sh_offset) / entsize)
		n = ((uint64_t)st.st_size - shdr.sh_offset) / entsize;
	if (*out + n > *cap) {
		p = realloc(*tmp, (*out + n ? *out + n : 1) * sizeof(**tmp));
		if (!p)
			return -ENOMEM;
		*tmp = p;
		*cap = *out + n;
	}
	buf = malloc(SYMTAB_CHUNK);
	if (!buf)
		return -ENOMEM;
	per_chunk = SYMTAB_CHUNK / entsize;
	for (done = 0; done < n; done += per_chunk) {
		size_t cnt = n - done < per_chunk ? n - done : per_chunk;
		Elf_Data d = {.d_buf = buf, .d_type = ELF_T_SYM, .d_version = EV_CURRENT};
		ssize_t got =
		    pread(src->fd, buf, cnt * entsize, (off_t)(shdr.sh_offset + done * entsize));

		if (got <= 0)
			break;
		cnt = (size_t)got / entsize;
		d.d_size = cnt * entsize;
		if (!gelf_xlatetom(elf, &d, &d, enc))
			break;
		for (i = 0; i < cnt; i++) {
			uint64_t value, size;
			uint32_t name;
			unsigned char info;
			uint16_t shndx;

			if (cls == ELFCLASS64) {
				const Elf64_Sym *s = (const Elf64_Sym *)buf + i;

				value = s->st_value, size = s->st_size, name = s->st_name;
				info = s->st_info, shndx = s->st_shndx;
			} else {
				const Elf32_Sym *s = (const Elf32_Sym *)buf + i;

				value = s->st_value, size = s->st_size, name = s->st_name;
				info = s->st_info, shndx = s->st_shndx;
			}
			if (GELF_ST_TYPE(info) != STT_FUNC && GELF_ST_TYPE(info) != STT_GNU_IFUNC)
				continue;
			if (shndx == SHN_UNDEF || !value || !name || name >= strshdr.sh_size)
				continue;
			if (shared && (name & SYM_NAME_MINI))
				continue;
			(*tmp)[*out].addr = value;
			(*tmp)[*out].size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
			(*tmp)[*out].section_end = size ? 0 : section_end(elf, shndx, value);
			(*tmp)[*out].name = name | name_bit;
			/* At one address prefer global names over weak over local ones. */
			(*tmp)[*out].pref = GELF_ST_BIND(info) == STB_GLOBAL ? 0
					    : GELF_ST_BIND(info) == STB_WEAK ? 1
									     : 2;
			(*out)++;
		}
	}
	free(buf);
	*str_off = strshdr.sh_offset;
	*str_size = strshdr.sh_size;
	return 0;
}

/*
 * Loads the function symbols of @srcs[0] and, when @nsrc is 2, of @srcs[1] too, whose names
 * then live in the MiniDebugInfo file o->mini_fd (SYM_NAME_MINI). Tables are read in chunks
 * (never held whole); names stay in the files: only the string tables' places are kept.
 * 0, -ENOENT (no table in any source) or -ENOMEM.
 */
static int load_symbol_tables(struct elf_object *o, const struct symtab_src *srcs, int nsrc)
{
	struct lsym *tmp = NULL;
	size_t i, n, out = 0, cap = 0;
	uint64_t off, size;
	bool found = false;
	int k, err;
	void *p;

	for (k = 0; k < nsrc; k++) {
		err = collect_symbols(&srcs[k], k ? SYM_NAME_MINI : 0, nsrc > 1, &tmp, &out, &cap,
				      &off, &size);
		if (err == -ENOMEM) {
			free(tmp);
			return err;
		}
		if (err)
			continue;
		found = true;
		if (k) {
			o->mini_names = true;
			o->mini_strtab_off = off;
			o->mini_strtab_size = size;
		} else {
			o->names_fd = srcs[0].fd;
			o->strtab_off = off;
			o->strtab_size = size;
		}
	}
	if (!found) {
		free(tmp);
		return -ENOENT;
	}
	if (!tmp)
		tmp = malloc(sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	qsort(tmp, out, sizeof(*tmp), lsym_cmp);
	/* One symbol per address (aliases), compacted in place to 16 bytes each. */
	for (i = 0, n = 0; i < out; i++) {
		struct csym s = {tmp[i].addr, tmp[i].size, tmp[i].name};
		uint64_t bound = tmp[i].section_end - tmp[i].addr;

		if (n && ((struct csym *)tmp)[n - 1].addr == s.addr)
			continue;
		/* Sizeless: up to the next symbol (find_symbol()), and never past its section. */
		if (!s.size && tmp[i].section_end)
			s.size = bound > UINT32_MAX ? UINT32_MAX : (uint32_t)bound;
		memcpy((struct csym *)tmp + n++, &s, sizeof(s));
	}
	p = realloc(tmp, (n ? n : 1) * sizeof(struct csym));
	o->syms = p ? p : (struct csym *)tmp;
	o->nsyms = n;
	charge_index(o, n * sizeof(struct csym));
	return 0;
}

/* load_symbol_tables() of one table. */
static int load_symbols(struct elf_object *o, Elf *elf, int fd, GElf_Word type)
{
	struct symtab_src src = {elf, fd, type};

	return load_symbol_tables(o, &src, 1);
}

/*
 * The MiniDebugInfo of @o (@elf: its headers), decoded once into o->mini_fd and kept for
 * re-loads, opened as ELF; NULL when it has none or it is unreadable (counted once).
 */
static Elf *open_minidebuginfo(struct elf_object *o, Elf *elf)
{
	struct symcache *c = o->cache;
	struct stat st;
	Elf *mini;
	int fd, err;

	if (o->mini_failed || (o->mini_fd < 0 && !minidebuginfo__present(elf)))
		return NULL;
	if (o->mini_fd < 0) {
		fd = minidebuginfo__extract(elf, o->fd, (uint64_t)o->size);
		if (fd < 0) {
			o->mini_failed = true;
			c->stats.minidebuginfo_errors++;
			return NULL;
		}
		o->mini_fd = fd;
		c->stats.fds++;
		c->stats.minidebuginfo++;
	}
	if (fstat(o->mini_fd, &st))
		return NULL;
	mini = elf_from_fd(o->mini_fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!mini) {
		o->mini_failed = true;
		c->stats.minidebuginfo_errors++;
		c->stats.minidebuginfo--;
		close_fd(c, &o->mini_fd);
	}
	return mini;
}

/* End of the PT_LOAD segment holding @vaddr, bounding symbols of size 0. */
static uint64_t segment_end(const struct elf_object *o, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < o->nloads; i++)
		if (vaddr >= o->loads[i].p_vaddr &&
		    vaddr - o->loads[i].p_vaddr < o->loads[i].p_memsz)
			return o->loads[i].p_vaddr + o->loads[i].p_memsz;
	return vaddr;
}

static const struct csym *find_symbol(const struct elf_object *o, uint64_t vaddr)
{
	size_t lo = 0, hi = o->nsyms, mid;
	const struct csym *s;
	uint64_t end;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (o->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &o->syms[lo - 1];
	if (s->size)
		end = s->addr + s->size;
	else if (lo < o->nsyms)
		end = o->syms[lo].addr;
	else
		end = segment_end(o, s->addr);
	return vaddr < end ? s : NULL;
}

/*
 * The name of @s, read from the string table on first use and kept while @o
 * is loaded. NULL when unreadable, empty or not terminated within the table.
 */
static const struct sname *sym_name(struct elf_object *o, const struct csym *s)
{
	uint32_t idx = (uint32_t)(s - o->syms), name_off = s->name;
	uint64_t str_off = o->strtab_off, str_size = o->strtab_size;
	int fd = o->names_fd;
	char small[256], *buf = small, *nul;
	size_t cap = sizeof(small), max, len;
	struct sname *e;
	ssize_t got;

	HASH_FIND(hh, o->names, &idx, sizeof(idx), e);
	if (e)
		return e;
	if (o->mini_names && (s->name & SYM_NAME_MINI)) {
		fd = o->mini_fd;
		name_off = s->name & ~SYM_NAME_MINI;
		str_off = o->mini_strtab_off;
		str_size = o->mini_strtab_size;
	}
	if (fd < 0 || name_off >= str_size)
		return NULL;
	max = str_size - name_off;
	if (max > MAX_NAME_LEN)
		max = MAX_NAME_LEN;
	for (;;) {
		size_t want = cap < max ? cap : max;

		got = pread(fd, buf, want, (off_t)(str_off + name_off));
		if (got <= 0)
			goto fail;
		nul = memchr(buf, 0, (size_t)got);
		if (nul)
			break;
		if ((size_t)got < want || want == max)
			goto fail;
		cap *= 2;
		if (buf != small)
			free(buf);
		buf = malloc(cap);
		if (!buf)
			return NULL;
	}
	len = (size_t)(nul - buf);
	if (!len)
		goto fail;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		goto fail;
	e->idx = idx;
	memcpy(e->name, buf, len + 1);
	hash_oom = false;
	HASH_ADD(hh, o->names, idx, sizeof(e->idx), e);
	if (hash_oom) {
		free(e);
		goto fail;
	}
	charge(o, sizeof(*e) + len + 1 + ENTRY_OVERHEAD);
	e->dname = demangle(o, e->name);
	if (buf != small)
		free(buf);
	return e;
fail:
	if (buf != small)
		free(buf);
	return NULL;
}

/* --- DWARF --------------------------------------------------------------------------------- */

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int func_cmp(const void *a, const void *b)
{
	const struct func_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Address ranges of every compile unit, and the extent of its DIEs (up to the next unit's, of
 * any type), read through @dw (a handle on o->dwarf_elf); .debug_aranges is not used because
 * clang omits it.
 */
static int index_cus(struct elf_object *o, Dwarf *dw)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	Dwarf_Addr base, lo, hi;
	Dwarf_Off die_off;
	ptrdiff_t off;
	size_t cap_cus = 0, cap_ranges = 0;
	GElf_Shdr info;
	uint64_t info_size =
	    elfcheck__section(o->dwarf_elf, ".debug_info", &info) ? info.sh_size : 0;
	void *p;

	o->nunits = 0;
	while (dwarf_get_units(dw, cu, &next, &version, &unit_type, &cudie, &subdie) == 0) {
		cu = next;
		o->nunits++;
		die_off = dwarf_dieoffset(&cudie);
		/* The unit before ends where this one's DIEs start (less this one's header). */
		if (o->ncus && !o->cus[o->ncus - 1].unit_bytes && die_off > o->cus[o->ncus - 1].off)
			o->cus[o->ncus - 1].unit_bytes = die_off - o->cus[o->ncus - 1].off;
		if (unit_type != DW_UT_compile)
			continue;
		if (o->ncus == cap_cus) {
			cap_cus = cap_cus ? 2 * cap_cus : 64;
			p = realloc(o->cus, cap_cus * sizeof(*o->cus));
			if (!p)
				return -ENOMEM;
			o->cus = p;
		}
		memset(&o->cus[o->ncus], 0, sizeof(o->cus[0]));
		o->cus[o->ncus].die = cudie;
		o->cus[o->ncus].off = die_off;
		o->cus[o->ncus].unit_no = o->nunits - 1;
		/* A DIE of another handle than the object's is found again by offset. */
		o->cus[o->ncus].die_ok = dw == o->dwarf;
		off = 0;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (o->ncu_ranges == cap_ranges) {
				cap_ranges = cap_ranges ? 2 * cap_ranges : 64;
				p = realloc(o->cu_ranges, cap_ranges * sizeof(*o->cu_ranges));
				if (!p)
					return -ENOMEM;
				o->cu_ranges = p;
			}
			o->cu_ranges[o->ncu_ranges++] = (struct cu_range){lo, hi, o->ncus};
		}
		o->ncus++;
	}
	if (o->ncus && !o->cus[o->ncus - 1].unit_bytes && info_size > o->cus[o->ncus - 1].off)
		o->cus[o->ncus - 1].unit_bytes = info_size - o->cus[o->ncus - 1].off;
	if (o->ncu_ranges)
		qsort(o->cu_ranges, o->ncu_ranges, sizeof(*o->cu_ranges), range_cmp);
	charge_index(o, cap_cus * sizeof(*o->cus) + cap_ranges * sizeof(*o->cu_ranges));
	return 0;
}

static int add_func(struct cu_info *cu, size_t *cap, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	void *p;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (cu->nfuncs == *cap) {
			*cap = *cap ? 2 * *cap : 32;
			p = realloc(cu->funcs, *cap * sizeof(*cu->funcs));
			if (!p)
				return -ENOMEM;
			cu->funcs = p;
		}
		cu->funcs[cu->nfuncs++] = (struct func_range){lo, hi, dwarf_dieoffset(die)};
	}
	return 0;
}

/* Collects concrete subprograms at CU level and inside namespaces and classes. */
static int index_funcs_in(struct cu_info *cu, size_t *cap, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	int tag, err;

	if (depth > MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram) {
			err = add_func(cu, cap, &child);
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
			   tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
			   tag == DW_TAG_module) {
			err = index_funcs_in(cu, cap, &child, depth + 1);
		} else {
			err = 0;
		}
		if (err)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static struct func_range *find_func(struct elf_object *o, struct cu_info *cu, uint64_t pc)
{
	size_t lo = 0, hi, mid, cap = 0;
	struct func_range *f;

	if (!cu->indexed) {
		cu->indexed = true;
		if (index_funcs_in(cu, &cap, &cu->die, 0)) {
			free(cu->funcs);
			cu->funcs = NULL;
			cu->nfuncs = 0;
		} else if (cu->nfuncs) {
			qsort(cu->funcs, cu->nfuncs, sizeof(*cu->funcs), func_cmp);
			charge_index(o, cap * sizeof(*cu->funcs));
		}
	}
	/* No functions (funcs may be NULL: even NULL + 0 is undefined). */
	if (!cu->nfuncs)
		return NULL;
	hi = cu->nfuncs;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cu->funcs[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges of distinct functions do not nest; look back a little for overlaps. */
	for (f = cu->funcs + lo; f > cu->funcs && lo - (size_t)(f - cu->funcs) < 8; f--)
		if (pc < f[-1].hi)
			return &f[-1];
	return NULL;
}

static struct cu_info *find_cu(struct elf_object *o, uint64_t pc)
{
	size_t lo = 0, hi = o->ncu_ranges, mid, i;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (o->cu_ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* CU ranges overlap only with odd producers (LTO); a few steps back are enough. */
	for (i = lo; i > 0 && lo - i < 8; i--) {
		struct cu_info *cu = &o->cus[o->cu_ranges[i - 1].cu];

		if (pc >= o->cu_ranges[i - 1].hi)
			continue;
		/* Indexed before a re-load: its DIE again, in this Dwarf handle. */
		if (!cu->die_ok && (!o->dwarf || !dwarf_offdie(o->dwarf, cu->off, &cu->die)))
			return NULL;
		cu->die_ok = true;
		/* libdw found it reading every unit before it in turn: their records stay. */
		if (cu->unit_no >= o->units_found) {
			charge_dwarf(o, (cu->unit_no + 1 - o->units_found) * UNIT_RECORD_BYTES);
			o->units_found = cu->unit_no + 1;
		}
		return cu;
	}
	return NULL;
}

static bool has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/*
 * Finds the child of @parent holding @pc that is an inlined subroutine or a
 * lexical block; blocks without addresses are looked through.
 */
static bool find_scope_child(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *out, int depth)
{
	Dwarf_Die child;
	int tag;

	if (depth > MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return false;
	do {
		tag = dwarf_tag(&child);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block &&
		    tag != DW_TAG_try_block && tag != DW_TAG_catch_block)
			continue;
		if (dwarf_haspc(&child, pc) > 0) {
			*out = child;
			return true;
		}
		if (tag == DW_TAG_lexical_block && !has_pc_attrs(&child) &&
		    find_scope_child(&child, pc, out, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* chain[0] = the subprogram, then each inlined subroutine down to the innermost. */
static int inline_chain(Dwarf_Die *func, uint64_t pc, Dwarf_Die *chain, int max)
{
	Dwarf_Die cur = *func, next;
	int n = 0, depth;

	chain[n++] = cur;
	for (depth = 0; depth < 4 * MAX_FRAMES && find_scope_child(&cur, pc, &next, 0); depth++) {
		if (dwarf_tag(&next) == DW_TAG_inlined_subroutine) {
			if (n == max)
				break;
			chain[n++] = next;
		}
		cur = next;
	}
	return n;
}

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		return dwarf_formstring(&attr);
	return NULL;
}

static bool is_cxx(Dwarf_Die *cudie)
{
	int lang = dwarf_srclang(cudie);

	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* Appends @s (at most @n bytes) to @buf of @cap bytes holding *@len; false when it is full. */
static bool append(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > cap)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = 0;
	return true;
}

/* True when scopes[@i] of @n is inside a function (lexical blocks between them are looked through).
 */
static bool in_function(Dwarf_Die *scopes, int i, int n)
{
	int tag;

	for (i++; i < n; i++) {
		tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			return true;
		if (tag != DW_TAG_lexical_block)
			return false;
	}
	return false;
}

/*
 * The C++ name of @die qualified by its enclosing scopes, as c++filt writes scopes, when DWARF
 * gives the function no linkage name (gcc omits it for lambdas' operator() and functions only
 * ever inlined): namespaces ("(anonymous namespace)"), classes with their template arguments,
 * and enclosing functions (their demangled linkage name, for lambdas and local classes). A
 * lambda's unnamed closure class is written "{lambda}": c++filt's "{lambda(ARGS)#N}" needs the
 * mangled closure type, which DWARF does not give. Scopes are those of the declaration
 * (DW_AT_specification) of the abstract instance (DW_AT_abstract_origin): DWARF 5 sections 3.3.8
 * and 2.13.2. @name itself when no scope is known, or on ENOMEM. Cached by declaration.
 */
static const char *scoped_name(struct elf_object *o, Dwarf_Die *die, const char *name)
{
	Dwarf_Die decl = *die, ref, *scopes = NULL;
	Dwarf_Attribute attr;
	struct scope_name *sn;
	char buf[4096];
	size_t len = 0;
	const char *res = name;
	Dwarf_Off off;
	int i, n;

	for (i = 0; i < MAX_DIE_DEPTH; i++) {
		if (!dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr), &ref) &&
		    !dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr), &ref))
			break;
		decl = ref;
	}
	off = dwarf_dieoffset(&decl);
	HASH_FIND(hh, o->scope_names, &off, sizeof(off), sn);
	if (sn)
		return sn->name;
	n = dwarf_getscopes_die(&decl, &scopes);
	buf[0] = 0;
	/* scopes[0] is the DIE itself, scopes[n - 1] its compile unit. */
	for (i = n - 2; i >= 1; i--) {
		const char *sname = dwarf_diename(&scopes[i]), *linkage;
		int tag = dwarf_tag(&scopes[i]);
		bool ok = true;

		if (tag == DW_TAG_namespace) {
			sname = sname ? sname : "(anonymous namespace)";
			ok = append(buf, sizeof(buf), &len, sname, strlen(sname));
		} else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
			   tag == DW_TAG_union_type) {
			/*
			 * gcc and clang leave a lambda's closure type unnamed: the unnamed class
			 * holding the operator() named here, inside a function.
			 */
			if (!sname)
				sname = i == 1 && !strcmp(name, "operator()") &&
						in_function(scopes, i, n)
					    ? "{lambda}"
					    : "{unnamed type}";
			ok = append(buf, sizeof(buf), &len, sname, strlen(sname));
		} else if (tag == DW_TAG_subprogram) {
			linkage = die_linkage_name(&scopes[i]);
			sname = linkage ? demangle(o, linkage) : sname;
			if (!sname)
				break;
			ok = append(buf, sizeof(buf), &len, sname, strlen(sname));
		} else {
			continue; /* lexical blocks and the like name nothing */
		}
		if (!ok || !append(buf, sizeof(buf), &len, "::", 2)) {
			len = 0; /* too long: the plain name rather than a cut one */
			break;
		}
	}
	free(scopes);
	/* Interned even unscoped: the cache outlives libdw's strings (drop_dwarf()). */
	if (len && append(buf, sizeof(buf), &len, name, strlen(name)))
		res = intern(o, buf);
	else
		res = intern(o, name);
	if (!res)
		return name;
	sn = malloc(sizeof(*sn));
	if (sn) {
		sn->off = off;
		sn->name = res;
		hash_oom = false;
		HASH_ADD(hh, o->scope_names, off, sizeof(sn->off), sn);
		if (hash_oom)
			free(sn);
		else
			charge(o, sizeof(*sn) + ENTRY_OVERHEAD);
	}
	return res;
}

/* Names of @die; true when they come from a linkage name (else DW_AT_name). */
static bool die_names(struct elf_object *o, Dwarf_Die *die, Dwarf_Die *cudie, struct sym_frame *f)
{
	const char *linkage = die_linkage_name(die);
	const char *name = dwarf_diename(die);

	f->system_name = linkage ? linkage : name;
	f->function = linkage ? demangle(o, linkage) : name;
	if (linkage && f->function == linkage && name)
		f->function = name; /* not mangled after all (extern "C", asm labels) */
	if (!linkage && name && is_cxx(cudie))
		f->function = scoped_name(o, die, name);
	return linkage != NULL;
}

/* The name of file @idx of a row or a call site (NULL: none), as dwarf_filesrc() gives it. */
static const char *unit_lines__file(const struct unit_lines *ul, size_t idx)
{
	return idx < ul->nfiles ? ul->files[idx] : NULL;
}

/* @cu: the unit of the function @inl is in, whose copied file names (if any) name the file. */
static void call_site(struct cu_info *cu, Dwarf_Die *inl, struct sym_frame *caller)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Die cudie;

	/* Values past INT_MAX only come from corrupt DWARF: unknown (0). */
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &v) == 0 && v <= INT_MAX)
		caller->line = (int)v;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_column, &attr), &v) == 0 && v <= INT_MAX)
		caller->column = (int)v;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &v) != 0 ||
	    !dwarf_diecu(inl, &cudie, NULL, NULL))
		return;
	if (cu->lines && dwarf_dieoffset(&cudie) == cu->off)
		caller->file = unit_lines__file(cu->lines, v);
	else if (dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0 && v < nfiles)
		caller->file = dwarf_filesrc(files, v, NULL, NULL);
}

/* Line tables may name files relative to the CU's directory (gcc's DWARF 5 does). */
static const char *source_path(struct elf_object *o, Dwarf_Die *cudie, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir, *s;
	char buf[PATH_MAX];
	int len;

	if (!file || file[0] == '/')
		return file;
	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	if (!dir)
		return file;
	len = snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return file;
	s = intern(o, buf);
	return s ? s : file;
}

/*
 * Bytes of the line program of unit @cudie in mapped .debug_line (its unit_length field, DWARF
 * 2-5, and the field itself), bounded by the section; 0 when it has none or it is unreadable.
 */
static uint64_t line_program_bytes(struct elf_object *o, Dwarf_Die *cudie)
{
	Dwarf_Attribute attr;
	Dwarf_Word at;
	Elf_Scn *scn;
	GElf_Shdr shdr;
	Elf_Data *d;
	uint64_t len, field = 4;
	uint32_t len32;
	bool swap = (elf_getident(o->dwarf_elf, NULL)[EI_DATA] == ELFDATA2MSB) !=
		    (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);

	if (dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &at) ||
	    !(scn = elfcheck__section(o->dwarf_elf, ".debug_line", &shdr)))
		return 0;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size < 4 || at > d->d_size - 4)
		return 0;
	memcpy(&len32, (const char *)d->d_buf + at, 4);
	len = swap ? __builtin_bswap32(len32) : len32;
	if (len32 == 0xffffffffu) { /* 64-bit DWARF */
		field = 12;
		if (at > d->d_size - 12)
			return 0;
		memcpy(&len, (const char *)d->d_buf + at + 4, 8);
		if (swap)
			len = __builtin_bswap64(len);
	}
	return len > d->d_size - at - field ? d->d_size - at : len + field;
}

/*
 * Copies the line table and file names of @cu out of libdw, read through a Dwarf handle of its
 * own on the same ELF that is ended right after: libdw keeps a unit's line table (some 80 bytes
 * a row; libpython's ceval.c has 14-24 thousand rows) until its handle ends, while the copy
 * (16 bytes a row) is kept with the CU ranges and answers every later lookup of the unit, over
 * unloads too. Charges the copy (index); the pages it read are dropped.
 * NULL (nothing charged) when libdw cannot read the table or a value does not fit a row: the
 * unit's lookups then use libdw's table in the object's own handle.
 */
static struct unit_lines *read_unit_lines(struct elf_object *o, struct cu_info *cu)
{
	Dwarf *tmp = dwarf_begin_elf(o->dwarf_elf, DWARF_C_READ, NULL);
	struct unit_lines *ul = NULL;
	Dwarf_Lines *lines;
	Dwarf_Files *files, *lf;
	Dwarf_Die cudie;
	size_t nlines, nfiles, i, idx, strbytes = 0, size;
	char *str;

	if (!tmp)
		return NULL;
	if (!dwarf_offdie(tmp, cu->off, &cudie) || dwarf_getsrclines(&cudie, &lines, &nlines) ||
	    dwarf_getsrcfiles(&cudie, &files, &nfiles) || nfiles >= LINE_NO_FILE)
		goto out;
	for (i = 0; i < nfiles; i++) {
		const char *name = dwarf_filesrc(files, i, NULL, NULL);

		strbytes += name ? strlen(name) + 1 : 0;
	}
	size = sizeof(*ul) + nlines * sizeof(struct line_row) + nfiles * sizeof(char *) + strbytes;
	ul = malloc(size);
	if (!ul)
		goto out;
	ul->nrows = nlines;
	ul->nfiles = nfiles;
	ul->rows = (struct line_row *)(ul + 1);
	ul->files = (const char **)(ul->rows + nlines);
	str = (char *)(ul->files + nfiles);
	for (i = 0; i < nfiles; i++) {
		const char *name = dwarf_filesrc(files, i, NULL, NULL);

		ul->files[i] = name ? memcpy(str, name, strlen(name) + 1) : NULL;
		str += name ? strlen(name) + 1 : 0;
	}
	for (i = 0; i < nlines; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		struct line_row *r = &ul->rows[i];
		Dwarf_Addr addr;
		bool end;
		int ln, col;

		if (!l || dwarf_lineaddr(l, &addr) || dwarf_lineno(l, &ln) ||
		    dwarf_linecol(l, &col) || dwarf_lineendsequence(l, &end) || col < 0 ||
		    col > UINT16_MAX) {
			free(ul);
			ul = NULL;
			goto out;
		}
		r->addr = addr;
		r->line = ln;
		r->column = (uint16_t)col;
		/* dwarf_linesrc() names the row's file from the unit's table, as here. */
		r->file = dwarf_line_file(l, &lf, &idx) == 0 && lf == files && idx < nfiles
			      ? (uint16_t)idx
			      : LINE_NO_FILE;
		if (end)
			r->file |= LINE_END_SEQUENCE;
	}
	charge_index(o, size);
	/* libdw's table goes with the handle: give its pages back at the next make_room(). */
	o->cache->untrimmed += nlines * LINE_BYTES;
out:
	dwarf_end(tmp);
	/*
	 * A new handle finds the unit by reading the headers (and DIEs) of the units before it:
	 * pages no lookup needs (megabytes of libpython's). Once per unit over the object's life.
	 */
	if (o->dwarf_mapped)
		drop_mapped_pages(o);
	return ul;
}

/*
 * The row that names @pc: the last one (in libdw's order, sorted by address) at or below @pc,
 * unless it ends a sequence -- what dwarf_getsrc_die() answers from libdw's table. NULL: none.
 */
static const struct line_row *unit_lines__find(const struct unit_lines *ul, uint64_t pc)
{
	size_t lo = 0, hi = ul->nrows, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ul->rows[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || (ul->rows[lo - 1].file & LINE_END_SEQUENCE))
		return NULL;
	return &ul->rows[lo - 1];
}

/*
 * Charges @cu's part of the DWARF at its first lookup since the DWARF was opened: libdw's
 * records of its abbreviations, and when the unit's lines were not copied out
 * (read_unit_lines()), the line table libdw builds and keeps until dwarf_end() (read here).
 * When the DWARF is mapped, also, at the first lookup since it was opened or symcache__trim()
 * dropped its pages: the pages the lookups of the unit read (its DIEs, and the line program
 * when libdw reads it here) and the shared sections' share.
 */
static void charge_unit(struct elf_object *o, struct cu_info *cu)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t nlines = 0, nfiles = 0, n = 0;

	if (!cu->charged) {
		cu->charged = true;
		n = UNIT_ABBREV_BYTES;
		if (!cu->lines && dwarf_getsrclines(&cu->die, &lines, &nlines) == 0 &&
		    dwarf_getsrcfiles(&cu->die, &files, &nfiles) == 0)
			n += nlines * LINE_BYTES + nfiles * LINE_FILE_BYTES;
		charge_dwarf(o, n);
	}
	if (!o->dwarf_mapped)
		return;
	if (!o->shared_pages_charged) {
		o->shared_pages_charged = true;
		charge_pages(o, o->shared_page_bytes);
	}
	if (!cu->pages_charged) {
		cu->pages_charged = true;
		charge_pages(o, cu->unit_bytes + (cu->lines ? 0 : line_program_bytes(o, &cu->die)));
	}
}

/*
 * *@phys_linkage: the physical function's name came from a linkage name; *@phys_lo: the start
 * of its address range holding @pc (0 when no function is known).
 */
static int dwarf_frames(struct elf_object *o, uint64_t pc, struct sym_frame *out, int max,
			bool *phys_linkage, uint64_t *phys_lo)
{
	Dwarf_Die chain[MAX_FRAMES], fdie;
	struct cu_info *cu = find_cu(o, pc);
	struct func_range *f;
	Dwarf_Line *line;
	int n, i, ln, col;

	if (!cu)
		return 0;
	memset(out, 0, sizeof(*out) * max);
	if (!cu->lines_read) {
		cu->lines_read = true;
		cu->lines = read_unit_lines(o, cu);
	}
	/* What libdw reads of the unit and keeps: charge it, or big CUs grow memory unseen. */
	if (!cu->charged || (o->dwarf_mapped && (!cu->pages_charged || !o->shared_pages_charged)))
		charge_unit(o, cu);
	f = find_func(o, cu, pc);
	if (f && dwarf_offdie(o->dwarf, f->off, &fdie)) {
		*phys_lo = f->lo;
		n = inline_chain(&fdie, pc, chain, max);
		for (i = 0; i < n; i++) {
			bool l = die_names(o, &chain[n - 1 - i], &cu->die, &out[i]);

			if (i == n - 1)
				*phys_linkage = l;
			if (i > 0)
				call_site(cu, &chain[n - i], &out[i]);
		}
	} else {
		n = 1;
	}
	if (cu->lines) {
		const struct line_row *r = unit_lines__find(cu->lines, pc);

		if (r) {
			out[0].file = unit_lines__file(cu->lines, r->file & ~LINE_END_SEQUENCE);
			if (r->line > 0)
				out[0].line = r->line;
			if (r->column > 0)
				out[0].column = r->column;
		}
	} else if ((line = dwarf_getsrc_die(&cu->die, pc))) {
		out[0].file = dwarf_linesrc(line, NULL, NULL);
		/* A corrupt line program can step the line below 1: libdw then answers < 0. */
		if (dwarf_lineno(line, &ln) == 0 && ln > 0)
			out[0].line = ln;
		if (dwarf_linecol(line, &col) == 0 && col > 0)
			out[0].column = col;
	}
	for (i = 0; i < n; i++)
		out[i].file = source_path(o, &cu->die, out[i].file);
	return n;
}

/* --- loading and the budget ---------------------------------------------------------------- */

/*
 * Unloads least recently used objects, never @keep, until @need more bytes fit
 * in the budget. Objects without DWARF go first: re-loading them reads a symbol
 * table, while DWARF costs an index walk and maybe decompressing its sections.
 * Unloaded objects keep the frames they answered (a hot loop's addresses, asked again by
 * every process that maps the file and after every profile reset, then need no load); those
 * go last, least recently used first.
 */
static void make_room(struct symcache *c, struct elf_object *keep, size_t need)
{
	struct elf_object *o, *prev;
	uint64_t before = c->stats.bytes;
	int pass;

	for (pass = 0; pass < 3; pass++) {
		for (o = c->lru_tail; o && c->stats.bytes + need > c->max_bytes; o = prev) {
			prev = o->lru_prev;
			if (o == keep || (!pass && o->dwarf))
				continue;
			if (pass == 2) {
				drop_kept(o);
				c->stats.answers_dropped++;
			} else if (o->loaded) {
				elf_object__unload(o, true);
				o->evicted = true;
				c->stats.evictions++;
			}
		}
	}
	/* Inflated DWARF is freed in large blocks amid the heap: give the pages back. */
	c->untrimmed += before - c->stats.bytes;
	if (c->untrimmed >= TRIM_BYTES) {
		uint64_t now = now_ns();

		if (now - c->trimmed_ns >= TRIM_INTERVAL_NS) {
			malloc_trim(0);
			c->trimmed_ns = now;
			c->untrimmed = 0;
		}
	}
	limit_fds(c);
}

/* Opens the debug file found by an earlier load, through o->dbg_fd. */
static Elf *reopen_debug_file(struct elf_object *o)
{
	struct stat st;
	Elf *elf;
	int fd, err;

	if (!o->debug_path)
		return NULL;
	fd = open_regular(o->debug_path, &st);
	if (fd < 0)
		return NULL;
	elf = elf_from_fd(fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!elf) {
		close(fd);
		return NULL;
	}
	o->dbg_fd = fd;
	o->cache->stats.fds++;
	return elf;
}

/* True when a .debug_* section of @elf is compressed (SHF_COMPRESSED). */
static bool has_compressed_debug(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t stridx;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (name && !strncmp(name, ".debug_", 7))
			return true;
	}
	return false;
}

#define INFLATE_CHUNK 65536

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, buf, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf = (const char *)buf + w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/*
 * Copies @len bytes of @fd at @from to @out at @to, inflating them (zlib stream) when
 * @zlib; *@outlen: bytes written. 0 or -errno (-EBADMSG: corrupt stream).
 */
static int copy_section(int fd, uint64_t from, uint64_t len, int out, uint64_t to, bool zlib,
			unsigned char *in, unsigned char *buf, uint64_t *outlen)
{
	z_stream zs = {0};
	int zr = Z_OK, err = 0;

	*outlen = 0;
	if (zlib && inflateInit(&zs) != Z_OK)
		return -ENOMEM;
	while (zlib ? zr != Z_STREAM_END : len > 0) {
		size_t want = len < INFLATE_CHUNK ? (size_t)len : INFLATE_CHUNK;
		ssize_t n = 0;

		if (len && (!zlib || !zs.avail_in)) {
			n = pread(fd, in, want, (off_t)from);
			if (n <= 0) {
				err = n < 0 ? -errno : -EBADMSG;
				break;
			}
			from += (uint64_t)n;
			len -= (uint64_t)n;
		}
		if (!zlib) {
			err = pwrite_all(out, in, (size_t)n, to + *outlen);
			*outlen += (uint64_t)n;
			if (err)
				break;
			continue;
		}
		if (n) {
			zs.next_in = in;
			zs.avail_in = (uInt)n;
		}
		zs.next_out = buf;
		zs.avail_out = INFLATE_CHUNK;
		zr = inflate(&zs, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END) {
			err = -EBADMSG; /* also Z_BUF_ERROR: the input ended before the stream */
			break;
		}
		err = pwrite_all(out, buf, INFLATE_CHUNK - zs.avail_out, to + *outlen);
		*outlen += INFLATE_CHUNK - zs.avail_out;
		if (err)
			break;
	}
	if (zlib)
		inflateEnd(&zs);
	return err;
}

static int open_tmpfile(void)
{
	int fd = open("/var/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0)
		fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/*
 * Writes a copy of the 64-bit little-endian ELF file @fd (@hdr: its headers) with every
 * SHF_COMPRESSED section inflated (ELF gABI 4.1, "Section Compression": an Elf64_Chdr, then a
 * zlib stream; ELFCOMPRESS_ZSTD is not handled) to an unlinked file in /var/tmp (else /tmp).
 * Program headers are left out (libdw does not need them). Inflated DWARF then lives in the
 * page cache, where a mapping can drop it and read it back, instead of in this process's
 * heap. Streams in 64 KiB pieces. Returns the new descriptor or -errno (-ENOTSUP: not a format
 * handled here).
 */
static int inflate_to_file(Elf *hdr, int fd)
{
	unsigned char *in = NULL, *buf = NULL;
	GElf_Shdr *sh = NULL;
	uint64_t off = sizeof(Elf64_Ehdr), n;
	size_t shnum = 0, i;
	GElf_Ehdr eh;
	int out = -1, err = 0;

	if (!gelf_getehdr(hdr, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || elf_getshdrnum(hdr, &shnum) || !shnum)
		return -ENOTSUP;
	sh = calloc(shnum, sizeof(*sh));
	in = malloc(INFLATE_CHUNK);
	buf = malloc(INFLATE_CHUNK);
	if (!sh || !in || !buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < shnum; i++) {
		if (!gelf_getshdr(elf_getscn(hdr, i), &sh[i])) {
			err = -ENOTSUP;
			goto cleanup;
		}
	}
	out = open_tmpfile();
	if (out < 0) {
		err = out;
		goto cleanup;
	}
	for (i = 1; i < shnum; i++) {
		bool z = sh[i].sh_flags & SHF_COMPRESSED;
		uint64_t align = sh[i].sh_addralign > 1 ? sh[i].sh_addralign : 1;
		Elf64_Chdr ch = {0};

		if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_type == SHT_NULL) {
			sh[i].sh_offset = off;
			continue;
		}
		if (z) {
			if (sh[i].sh_size < sizeof(ch) ||
			    pread(fd, &ch, sizeof(ch), (off_t)sh[i].sh_offset) != sizeof(ch) ||
			    ch.ch_type != ELFCOMPRESS_ZLIB) {
				err = -ENOTSUP;
				goto cleanup;
			}
			align = ch.ch_addralign > 1 ? ch.ch_addralign : 1;
		}
		off = (off + align - 1) / align * align;
		err = copy_section(fd, sh[i].sh_offset + (z ? sizeof(ch) : 0),
				   sh[i].sh_size - (z ? sizeof(ch) : 0), out, off, z, in, buf, &n);
		if (!err && z && n != ch.ch_size)
			err = -EBADMSG;
		if (err)
			goto cleanup;
		sh[i].sh_offset = off;
		sh[i].sh_size = n;
		if (z) {
			sh[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			sh[i].sh_addralign = ch.ch_addralign;
		}
		off += n;
	}
	eh.e_shoff = (off + 7) & ~7ull;
	eh.e_phoff = 0;
	eh.e_phnum = 0;
	/* GElf_Ehdr and GElf_Shdr are the ELF64 structures. */
	err = pwrite_all(out, sh, shnum * sizeof(*sh), eh.e_shoff);
	if (!err)
		err = pwrite_all(out, &eh, sizeof(eh), 0);
cleanup:
	free(sh);
	free(in);
	free(buf);
	if (err && out >= 0)
		close(out);
	return err ? err : out;
}

/*
 * Whether the string sections libdw reads names from (.debug_str, .debug_line_str, also as
 * .zdebug_* and *.dwo) end in a NUL. libdw bounds a string's offset by its section's size but
 * does not look for the terminating NUL (dwarf_formstring()), so in a corrupt file the last
 * string would run past the section. Call after dwarf_begin_elf(): sections are inflated then.
 */
static bool dwarf_strings_terminated(Elf *elf)
{
	static const char *const names[] = {"debug_str", "debug_line_str"};
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf_Data *d;
	size_t stridx, i, len;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (!name || (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		name += name[1] == 'z' ? 2 : 1;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			len = strlen(names[i]);
			if (strncmp(name, names[i], len) ||
			    (name[len] && strcmp(name + len, ".dwo")))
				continue;
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size && ((const char *)d->d_buf)[d->d_size - 1])
				return false;
		}
	}
	return true;
}

/*
 * Opens the DWARF of @fd (@hdr: its headers) for libdw and charges its
 * sections. Plain sections are mapped (only the pages used count). Compressed
 * ones are inflated once into an unlinked file (inflate_to_file(), kept in
 * o->inflated_fd for re-loads) and mapped the same way; if that fails they are
 * read with pread and libdw inflates them all into memory (a mapping would
 * keep the compressed bytes resident too), and then @fd must stay open while
 * loaded.
 */
static void load_dwarf(struct elf_object *o, Elf *hdr, int fd)
{
	bool mapped = !has_compressed_debug(hdr);
	struct stat st;
	Dwarf *walk;
	int err;

	if (!mapped && o->inflated_fd < 0 && !o->inflate_failed) {
		o->inflated_fd = inflate_to_file(hdr, fd);
		if (o->inflated_fd >= 0)
			o->cache->stats.fds++;
		else
			o->inflate_failed = true; /* no room, or an unhandled format: pread */
	}
	if (!mapped && o->inflated_fd >= 0) {
		fd = o->inflated_fd;
		mapped = true;
	}
	if (fstat(fd, &st))
		return;
	o->dwarf_elf =
	    elf_from_fd(fd, mapped ? ELF_C_READ_MMAP : ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!o->dwarf_elf)
		return;
	if (mapped) {
		size_t len;
		char *img = elf_rawfile(o->dwarf_elf, &len);

		/* DIE walks jump around: no fault-around or read-ahead filling RSS. */
		if (img)
			madvise((void *)((uintptr_t)img & ~(uintptr_t)4095),
				len + ((uintptr_t)img & 4095), MADV_RANDOM);
		/* Mapped now: libdw needs no descriptor. */
		elf_cntl(o->dwarf_elf, ELF_C_FDDONE);
	} else {
		o->dwarf_fd = fd;
	}
	o->dwarf = dwarf_begin_elf(o->dwarf_elf, DWARF_C_READ, NULL);
	if (o->dwarf && !dwarf_strings_terminated(o->dwarf_elf)) {
		dwarf_end(o->dwarf); /* corrupt: names from the symbol table only */
		o->dwarf = NULL;
	}
	if (!o->dwarf) {
		elf_end(o->dwarf_elf);
		o->dwarf_elf = NULL;
		o->dwarf_fd = -1;
		return;
	}
	/*
	 * After dwarf_begin_elf(): inflated sections show their inflated size, all
	 * in memory. Of mapped ones, only pages a lookup touched are resident: the
	 * shared sections now, each unit's DIEs and line program at its first lookup.
	 */
	o->dwarf_mapped = mapped;
	if (mapped) {
		o->shared_page_bytes = debug_sections_size(o->dwarf_elf, true);
		o->shared_pages_charged = true;
		charge_pages(o, o->shared_page_bytes);
	} else {
		charge_dwarf(o, debug_sections_size(o->dwarf_elf, false));
	}
	/* Kept from an earlier load of the same DWARF: CU DIEs are found again by offset. */
	if (!o->cus) {
		/*
		 * Walked in a handle of its own, ended at once: the walk reads every unit's
		 * abbreviations (1-4 KiB a unit in libdw's memory until dwarf_end()), of which
		 * lookups need their units' only.
		 */
		walk = dwarf_begin_elf(o->dwarf_elf, DWARF_C_READ, NULL);
		if (index_cus(o, walk ? walk : o->dwarf)) {
			/* Out of memory: run on symbols alone. */
			free(o->cus);
			free(o->cu_ranges);
			o->cus = NULL;
			o->cu_ranges = NULL;
			o->ncus = o->ncu_ranges = 0;
		}
		if (walk) {
			dwarf_end(walk);
			o->cache->untrimmed +=
			    o->nunits * (UNIT_RECORD_BYTES + UNIT_ABBREV_BYTES / 2);
		} else {
			/* The object's own handle walked them all. */
			o->units_found = o->nunits;
			charge_dwarf(o, o->nunits * UNIT_RECORD_BYTES);
		}
		/* The index walk touched every unit header: not what lookups will need. */
		if (mapped)
			drop_mapped_pages(o);
	}
}

/*
 * The debug file of @o from debuginfod (exporter/symbols/debuginfod.h), when the fetch has
 * arrived: checked like a local one (build IDs must match). Asks for it otherwise; the answer
 * is picked up by symcache__pick_up_debug_files(). NULL when there is none (yet).
 */
static Elf *fetch_debug_file(struct elf_object *o)
{
	struct symcache *c = o->cache;
	const char *path = NULL;
	Elf *dbg;
	int state;

	if (!c->fetch || !o->build_id || o->fetch_done)
		return NULL;
	state = dbgfetch__request(c->fetch, o->build_id, &path);
	if (state == DBGFETCH_PENDING && !o->debug_pending)
		c->stats.debuginfod_requests++;
	o->debug_pending = state == DBGFETCH_PENDING;
	if (state == DBGFETCH_PENDING)
		return NULL;
	/* Answered (a failure is retried by a later load, after DBGFETCH_RETRY_S). */
	o->fetch_done = state != DBGFETCH_FAILED;
	if (state != DBGFETCH_FOUND)
		return NULL;
	dbg = try_debug_file(o, path, false, 0);
	if (dbg)
		c->stats.debuginfod_files++;
	else
		c->stats.debuginfod_rejected++;
	return dbg;
}

void symcache__set_debuginfod(struct symcache *c, struct dbgfetch *f)
{
	struct elf_object *o;

	c->fetch = f;
	c->fetch_gen = 0;
	for (o = c->objects; o; o = o->next) {
		o->debug_pending = o->fetch_done = false;
		/* Loaded already without debug info: ask now, picked up like the others. */
		if (f && o->loaded && !o->dwarf && !o->debug_path && o->build_id &&
		    dbgfetch__request(f, o->build_id, NULL) >= 0) {
			o->debug_pending = true;
			c->stats.debuginfod_requests++;
		}
	}
}

int symcache__pick_up_debug_files(struct symcache *c)
{
	struct elf_object *o;
	uint64_t gen;
	int state, n = 0;

	if (!c || !c->fetch)
		return 0;
	gen = dbgfetch__generation(c->fetch);
	if (gen == c->fetch_gen)
		return 0;
	c->fetch_gen = gen;
	for (o = c->objects; o; o = o->next) {
		if (!o->debug_pending)
			continue;
		state = dbgfetch__request(c->fetch, o->build_id, NULL);
		if (state == DBGFETCH_PENDING)
			continue;
		o->debug_pending = false;
		if (state != DBGFETCH_FOUND)
			continue;
		/* The next lookup loads it again, with the debug file: frames named anew. */
		elf_object__unload(o, false);
		n++;
	}
	return n;
}

/*
 * A Go binary's PC/line table: the file is mapped whole (read-only, private: only the pages
 * lookups touch become resident, dropped again by symcache__trim()) and charged, like mapped
 * DWARF, a share of the table's size. Anything else (not Go, a corrupt table) leaves o->go
 * NULL: names then come from the other sources.
 */
static void load_go(struct elf_object *o, Elf *elf, int fd)
{
	size_t off, len;

	if (!gopclntab__maybe(elf) || o->size <= 0)
		return;
	o->go_map = mmap(NULL, (size_t)o->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (o->go_map == MAP_FAILED) {
		o->go_map = NULL;
		return;
	}
	o->go_map_len = (size_t)o->size;
	madvise(o->go_map, o->go_map_len, MADV_RANDOM);
	o->go = gopclntab__open(elf, o->go_map, o->go_map_len);
	if (!o->go) {
		drop_go(o);
		return;
	}
	gopclntab__extent(o->go, &off, &len);
	charge(o, len / MAPPED_DWARF_SHARE);
}

/*
 * Loads symbols and DWARF of @o (first lookup, or first after an unload).
 * Failures leave that part empty; -ENOENT when the file cannot be read again.
 */
static int elf_object__load(struct elf_object *o)
{
	struct symcache *c = o->cache;
	Elf *elf = NULL, *dbg = NULL, *dwarf_src;
	bool main_dwarf, main_symtab, use_dwarf;
	int err;

	if (o->loaded)
		return 0;
	if (o->load_failed)
		return -ENOENT;
	if (o->fd < 0 && reopen(o))
		goto fail;
	elf = elf_from_fd(o->fd, ELF_C_READ, (uint64_t)o->size, &err);
	if (!elf)
		goto fail;
	o->loaded = true;
	c->stats.objects_loaded++;
	c->stats.loads++;
	if (o->evicted)
		c->stats.reloads++;
	o->evicted = false;
	lru_touch(o);

	main_dwarf = elfcheck__has_data(elf, ".debug_info");
	main_symtab = elfcheck__has_data(elf, ".symtab");
	if (!main_dwarf || !main_symtab) {
		if (!o->debug_searched)
			dbg = find_debug_file(o, elf);
		else
			dbg = reopen_debug_file(o);
		o->debug_searched = true;
	}
	if (!main_dwarf && !dbg)
		dbg = fetch_debug_file(o);
	dwarf_src = main_dwarf ? elf : dbg && elfcheck__has_data(dbg, ".debug_info") ? dbg : NULL;
	/* DWARF bigger than the whole budget would only thrash: names from symbols then. */
	use_dwarf = dwarf_src && dwarf_estimate(dwarf_src, true, false) <= c->max_bytes;
	/*
	 * Room first: the peak is then the budget, not the budget plus this object. Room for what
	 * the load charges, not for DWARF it leaves out or maps: a libc debug file's compressed
	 * DWARF counted in full emptied the cache at each of its loads.
	 */
	make_room(c, o,
		  symbols_estimate(elf) + (dbg ? symbols_estimate(dbg) : 0) +
		      (use_dwarf ? dwarf_estimate(dwarf_src, false, o->inflate_failed) : 0));

	/* Symbols kept from the last load: only where their names are read is set again. */
	if (o->syms && o->names_in_dbg && !dbg)
		drop_index(o); /* the debug file is gone: read what is left anew */
	if (o->syms)
		o->names_fd = o->names_in_dbg ? o->dbg_fd : o->fd;
	else if (main_symtab)
		load_symbols(o, elf, o->fd, SHT_SYMTAB);
	else if (!dbg || load_symbols(o, dbg, o->dbg_fd, SHT_SYMTAB)) {
		/* MiniDebugInfo keeps only what .dynsym lacks: both together. */
		struct symtab_src srcs[2] = {{elf, o->fd, SHT_DYNSYM},
					     {NULL, o->mini_fd, SHT_SYMTAB}};

		srcs[1].elf = open_minidebuginfo(o, elf);
		srcs[1].fd = o->mini_fd;
		load_symbol_tables(o, srcs, srcs[1].elf ? 2 : 1);
		if (srcs[1].elf)
			elf_end(srcs[1].elf);
	}

	if (dwarf_src && !use_dwarf)
		c->stats.dwarf_skipped++;
	else if (use_dwarf)
		load_dwarf(o, dwarf_src, dwarf_src == elf ? o->fd : o->dbg_fd);

	load_go(o, elf, o->fd);
	o->names_in_dbg = o->syms && o->dbg_fd >= 0 && o->names_fd == o->dbg_fd;

	/* Headers read with pread are not needed past loading. */
	elf_end(elf);
	if (dbg)
		elf_end(dbg);
	if (o->names_fd != o->dbg_fd && o->dwarf_fd != o->dbg_fd)
		close_fd(c, &o->dbg_fd);
	return 0;
fail:
	o->load_failed = true;
	c->stats.load_errors++;
	return -ENOENT;
}

static void refresh_idle(struct elf_object *o);

const char *elf_object__debug_file(struct elf_object *o)
{
	o->last_used = now_ns();
	if (o->idle_closed)
		refresh_idle(o);
	if (!elf_object__load(o))
		make_room(o->cache, o, 0);
	return o->debug_path;
}

/* --- lookups ------------------------------------------------------------------------------- */

/* Frames from the Go table; 0 when it has none for @vaddr (or is corrupt there). */
static int go_frames(struct elf_object *o, uint64_t vaddr, struct sym_frame *out, int max)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	int n = gopclntab__lookup(o->go, vaddr, fr, max < MAX_FRAMES ? max : MAX_FRAMES);

	for (int i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].function = fr[i].function;
		out[i].system_name = fr[i].function;
		out[i].file = fr[i].file;
		out[i].line = fr[i].line;
		out[i].go = 1;
	}
	return n > 0 ? n : 0;
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
static bool plt_stub_name(struct elf_object *o, uint64_t vaddr, const char **system,
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
		d = demangle(o, name);
		snprintf(dname, sizeof(dname), "%s@plt", d ? d : name);
		strcat(name, "@plt");
		*system = intern(o, name);
		*function = intern(o, dname);
		return *system && *function;
	}
	return false;
}

static int resolve(struct elf_object *o, uint64_t vaddr, struct sym_frame *out, int max)
{
	struct symcache *c = o->cache;
	const struct csym *s = find_symbol(o, vaddr);
	const struct sname *name = s ? sym_name(o, s) : NULL;
	bool phys_linkage = false;
	uint64_t phys_lo = 0;
	int n = 0;

	bool go = o->go && gopclntab__covers(o->go, vaddr);

	if (o->dwarf)
		n = dwarf_frames(o, vaddr, out, max, &phys_linkage, &phys_lo);
	if (n > 0) {
		struct sym_frame *phys = &out[n - 1];

		/* The symbol name is the truth for clones (foo.cold, foo.constprop.0). */
		if (name)
			phys->system_name = name->name;
		if (!phys->function && name)
			phys->function = name->dname;
		/*
		 * DWARF without a linkage name, a mangled symbol starting where the function (or
		 * this part of it) does, so the same one: c++filt's full name.
		 */
		else if (name && !phys_linkage && name->dname != name->name && s->addr == phys_lo)
			phys->function = name->dname;
		for (int i = 0; i < n; i++)
			out[i].go = go;
		c->stats.dwarf_hits++;
		return n;
	}
	/* No DWARF for it: a Go binary's own table has names, lines and inlined calls. */
	n = go ? go_frames(o, vaddr, out, max) : 0;
	if (n > 0) {
		c->stats.go_hits++;
		return n;
	}
	if (!name) {
		const char *plt_system, *plt_function;

		if (plt_stub_name(o, vaddr, &plt_system, &plt_function)) {
			memset(out, 0, sizeof(*out));
			out->function = plt_function;
			out->system_name = plt_system;
			c->stats.plt_hits++;
			return 1;
		}
		c->stats.misses++;
		return 0;
	}
	memset(out, 0, sizeof(*out));
	out->function = name->dname;
	out->system_name = name->name;
	out->go = go;
	c->stats.symtab_hits++;
	return 1;
}

/* Remembers the frames of @vaddr while @o stays loaded; bounded by a share of the budget. */
static void addr_cache__add(struct elf_object *o, uint64_t vaddr, const struct sym_frame *frames,
			    int n)
{
	size_t size = sizeof(struct addr_entry) + n * sizeof(frames[0]);
	struct addr_entry *e;

	if (o->addr_bytes + size + ENTRY_OVERHEAD > o->cache->max_bytes / ADDR_CACHE_SHARE)
		addr_cache__clear(o);
	e = malloc(size);
	if (!e)
		return;
	e->vaddr = vaddr;
	e->n = n;
	memcpy(e->frames, frames, n * sizeof(frames[0]));
	hash_oom = false;
	HASH_ADD(hh, o->addrs, vaddr, sizeof(e->vaddr), e);
	if (hash_oom) {
		free(e);
		return;
	}
	o->addr_bytes += size + ENTRY_OVERHEAD;
	charge(o, size + ENTRY_OVERHEAD);
}

/*
 * @o was closed while idle and an address it has not answered yet is asked: re-load it from
 * its file if the very same file can be opened again, else go on with what stayed in memory
 * (symbols, names read, frames answered; counted once, not retried until symcache__open()
 * meets the file again).
 */
static void refresh_idle(struct elf_object *o)
{
	struct symcache *c = o->cache;

	if (o->reopen_failed)
		return;
	if (o->fd < 0 && reopen(o)) {
		o->reopen_failed = true;
		c->stats.idle_reopen_errors++;
		return;
	}
	elf_object__unload(o, true);
	c->stats.idle_reloads++;
}

/*
 * Makes the frames cached for @o independent of its DWARF: strings libdw owns (DIE names,
 * line table file names) are copied into o->strings. false on ENOMEM.
 */
static bool addr_cache__own_strings(struct elf_object *o)
{
	struct addr_entry *e, *tmp;
	const char **s[3];
	int i, k;

	HASH_ITER (hh, o->addrs, e, tmp) {
		for (i = 0; i < e->n; i++) {
			s[0] = &e->frames[i].function;
			s[1] = &e->frames[i].system_name;
			s[2] = &e->frames[i].file;
			for (k = 0; k < 3; k++)
				if (*s[k] && !(*s[k] = intern(o, *s[k])))
					return false;
		}
	}
	return true;
}

/*
 * Releases what holds @o's files open: its descriptors (main file, debug file, inflated
 * DWARF) and, when loaded, its DWARF (a mapping pins the file too). Symbols, names read and
 * the address cache stay; names not read yet wait for refresh_idle().
 */
static void close_idle_object(struct elf_object *o)
{
	struct symcache *c = o->cache;

	if (o->loaded) {
		if ((o->dwarf || o->go) && !addr_cache__own_strings(o))
			addr_cache__clear(o);
		drop_dwarf(o);
		drop_go(o);
		o->names_fd = -1;
		o->idle_closed = true;
	}
	close_fd(c, &o->fd);
	close_fd(c, &o->dbg_fd);
	close_fd(c, &o->inflated_fd);
	close_fd(c, &o->mini_fd);
	c->stats.idle_closes++;
}

void symcache__close_idle(struct symcache *c, uint64_t now)
{
	struct elf_object *o;

	for (o = c ? c->objects : NULL; o; o = o->next) {
		if (now < o->last_used || now - o->last_used < c->idle_ns)
			continue;
		if (o->fd >= 0 || o->dbg_fd >= 0 || o->inflated_fd >= 0 || o->mini_fd >= 0 ||
		    o->dwarf_elf || o->go_map)
			close_idle_object(o);
	}
}

int symcache__lookup(struct symcache *c, struct elf_object *o, uint64_t vaddr,
		     struct sym_frame *out, int max)
{
	struct sym_frame frames[MAX_FRAMES];
	struct addr_entry *e;
	int n;

	if (!c || !o || !out || max <= 0)
		return -EINVAL;
	c->stats.lookups++;
	o->last_used = now_ns();
	HASH_FIND(hh, o->addrs, &vaddr, sizeof(vaddr), e);
	if (e) {
		c->stats.cache_hits++;
		lru_touch(o);
		n = e->n < max ? e->n : max;
		memcpy(out, e->frames, n * sizeof(*out));
		return n;
	}
	if (o->idle_closed)
		refresh_idle(o);
	if (elf_object__load(o)) {
		c->stats.misses++;
		return 0;
	}
	lru_touch(o);
	n = resolve(o, vaddr, frames, MAX_FRAMES);
	addr_cache__add(o, vaddr, frames, n);
	/* Strings of @o's frames stay valid: @o is never the one unloaded. */
	make_room(c, o, 0);
	if (n > max)
		n = max;
	memcpy(out, frames, n * sizeof(*out));
	return n;
}

int symcache__go_frame_pending(struct symcache *c, struct elf_object *o, uint64_t vaddr)
{
	if (!c || !o || !o->maybe_go)
		return 0;
	o->last_used = now_ns();
	if (o->idle_closed)
		refresh_idle(o);
	if (elf_object__load(o) || !o->go)
		return 0;
	lru_touch(o);
	return gopclntab__frame_pending(o->go, vaddr) == 1;
}

/* --- lookup by file identity (exporter/process/fileid.h) --- */
struct elf_object *symcache__find_identity(struct symcache *c, uint64_t dev, uint64_t ino,
					   uint64_t size, int64_t mtime_sec, uint32_t mtime_nsec)
{
	char key[128];

	if (mtime_nsec >= 1000000000u)
		return NULL;
	identity_key_of(key, sizeof(key), dev, ino, size, mtime_sec, mtime_nsec);
	return find_key(c, key);
}

const char *elf_object__orig_path(const struct elf_object *o)
{
	return o->orig_path ? o->orig_path : o->path;
}
/* --- end of lookup by file identity --- */

struct elf_object *symcache__find_build_id(struct symcache *c, const char *build_id)
{
	char key[160];
	int len;

	if (!c || !build_id)
		return NULL;
	len = snprintf(key, sizeof(key), "b:%s", build_id);
	return len > 0 && (size_t)len < sizeof(key) ? find_key(c, key) : NULL;
}
