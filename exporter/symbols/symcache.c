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
 * address not answered before re-opens the very same file (symc_reopen()) and re-loads the
 * object; if the file is gone it answers from what stayed in memory.
 *
 * This file is the cache itself: creation, the byte budget's accounting, the LRU list,
 * unloading and freeing objects, trimming, interned strings. The rest are modules of this
 * folder, listed in symcache.h (internal: shapes they share); symbolize.h is the face.
 */
#include <errno.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "runtime/go/gopclntab.h"
#include "symbols/elfcheck.h"
#include "symbols/symcache.h"
#include "symbols/symbolize.h"

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
void symc_drop_mapped_pages(struct elf_object *o)
{
	size_t len;
	char *img = elf_rawfile(o->dwarf_elf, &len);

	if (img)
		madvise((void *)((uintptr_t)img & ~(uintptr_t)4095), len + ((uintptr_t)img & 4095),
			MADV_DONTNEED);
}

void symc_charge(struct elf_object *o, size_t n)
{
	struct symcache_stats *st = &o->cache->stats;

	o->bytes += n;
	st->bytes += n;
	if (st->bytes > st->bytes_peak)
		st->bytes_peak = st->bytes;
}

/* symc_charge() for what symc_drop_index() frees. */
void symc_charge_index(struct elf_object *o, size_t n)
{
	symc_charge(o, n);
	o->index_bytes += n;
}

/* symc_charge() for what symc_drop_dwarf() frees. */
void symc_charge_dwarf(struct elf_object *o, size_t n)
{
	symc_charge(o, n);
	o->dwarf_bytes += n;
}

uint64_t symc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Takes the bytes of @o's accounted part *@part (one of its *_bytes) off the budget. */
void symc_uncharge(struct elf_object *o, size_t *part)
{
	o->bytes -= *part;
	o->cache->stats.bytes -= *part;
	*part = 0;
}

/* symc_charge_dwarf() for pages of the mapped DWARF, which symcache__trim() drops. */
void symc_charge_pages(struct elf_object *o, size_t n)
{
	symc_charge_dwarf(o, n);
	o->page_bytes += n;
}

/* The mapped DWARF's pages were dropped: takes their charge off until lookups touch them. */
static void uncharge_pages(struct elf_object *o)
{
	o->dwarf_bytes -= o->page_bytes;
	symc_uncharge(o, &o->page_bytes);
	o->shared_pages_charged = false;
	for (size_t i = 0; i < o->ncus; i++)
		o->cus[i].pages_charged = false;
}

void addr_cache__clear(struct elf_object *o)
{
	struct addr_entry *e, *tmp;

	HASH_ITER (hh, o->addrs, e, tmp) {
		HASH_DEL(o->addrs, e);
		free(e);
	}
	symc_uncharge(o, &o->addr_bytes);
}

/*
 * Makes the frames cached for @o independent of its DWARF: strings libdw owns (DIE names,
 * line table file names) are copied into o->strings. false on ENOMEM.
 */
bool addr_cache__own_strings(struct elf_object *o)
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
				if (*s[k] && !(*s[k] = symc_intern(o, *s[k])))
					return false;
		}
	}
	return true;
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

void symc_lru_touch(struct elf_object *o)
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

void symc_close_fd(struct symcache *c, int *fd)
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
void symc_drop_dwarf(struct elf_object *o)
{
	size_t i;

	/*
	 * The CU ranges, function ranges and lines stay (symc_drop_index()); what points into this
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
	symc_uncharge(o, &o->dwarf_bytes);
}

/* Frees @o's Go table and its mapping (frames pointing into it: as for symc_drop_dwarf()). */
void symc_drop_go(struct elf_object *o)
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
	symc_uncharge(o, &o->string_bytes);
}

/* Frees the sorted symbols and the CU ranges (and the CUs' function indexes). */
void symc_drop_index(struct elf_object *o)
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
	symc_uncharge(o, &o->index_bytes);
}

/*
 * Frees what an unload with keep_answers left: the answers and the indexes. The object leaves
 * the LRU list unless it is loaded.
 */
void symc_drop_kept(struct elf_object *o)
{
	drop_answers(o);
	symc_drop_index(o);
	if (!o->loaded)
		lru_unlink(o);
}

/*
 * Frees the heavy part; the object can be loaded again from its light part. With
 * @keep_answers, the frames already answered stay (their strings copied out of the symbol
 * names, DWARF and Go table freed here), and so do the sorted symbols, CU ranges, function
 * ranges and line tables, still
 * charged to the budget and on the LRU list: the same addresses are answered again without a
 * load, and a re-load for a new address skips the symbol sort and the CU walk (the file is the
 * same, so are its answers and indexes), until symc_make_room() needs their bytes too
 * (symc_drop_kept()). Without, everything goes (a better source of names arrived).
 */
void elf_object__unload(struct elf_object *o, bool keep_answers)
{
	struct symcache *c = o->cache;
	struct sname *n, *ntmp;
	struct scope_name *sn, *sntmp;
	size_t kept;

	if (!o->loaded) {
		if (!keep_answers)
			symc_drop_kept(o);
		return;
	}
	if (!keep_answers)
		symc_drop_index(o);
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
	symc_drop_dwarf(o);
	symc_drop_go(o);
	symc_close_fd(c, &o->dbg_fd);
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

void elf_object__free(struct elf_object *o)
{
	if (!o)
		return;
	elf_object__unload(o, false);
	symc_drop_kept(o);
	symc_close_fd(o->cache, &o->fd);
	symc_close_fd(o->cache, &o->inflated_fd);
	symc_close_fd(o->cache, &o->mini_fd);
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
			symc_drop_mapped_pages(o);
			uncharge_pages(o);
		}
		if (o->go_map)
			madvise(o->go_map, o->go_map_len, MADV_DONTNEED);
	}
	if (c) {
		symcache__pick_up_debug_files(c);
		symcache__close_idle(c, symc_now_ns());
		grow_if_thrashing(c);
	}
}

void symcache__stats(const struct symcache *c, struct symcache_stats *out)
{
	*out = c->stats;
}

/* Returns a copy of @s that lives until @o is unloaded, or NULL (ENOMEM). */
const char *symc_intern(struct elf_object *o, const char *s)
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
	symc_charge(o, sizeof(*e) + len + 1 + ENTRY_OVERHEAD);
	o->string_bytes += sizeof(*e) + len + 1 + ENTRY_OVERHEAD;
	return e->s;
}

/*
 * Itanium C++ (_Z) and Rust names (legacy _ZN...17h<hash>E, whose hash
 * libiberty drops, and v0 _R). Returns @name itself when not mangled.
 */
const char *symc_demangle(struct elf_object *o, const char *name)
{
	const char *s;
	char *d;

	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return name;
	d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return name;
	s = symc_intern(o, d);
	free(d);
	return s ? s : name;
}
