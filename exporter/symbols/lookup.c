// SPDX-License-Identifier: Apache-2.0
/*
 * lookup: symcache__lookup() and the address cache, idle objects (lookup.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/go/gopclntab.h"
#include "symbols/dwarfframes.h"
#include "symbols/load.h"
#include "symbols/objcache.h"
#include "symbols/plt.h"
#include "symbols/symcache.h"
#include "symbols/symtab.h"

/* One object's address cache may use this share of the budget before it is dropped. */
#define ADDR_CACHE_SHARE 8

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

static int resolve(struct elf_object *o, uint64_t vaddr, struct sym_frame *out, int max)
{
	struct symcache *c = o->cache;
	const struct csym *s = symc_find_symbol(o, vaddr);
	const struct sname *name = s ? symc_sym_name(o, s) : NULL;
	bool phys_linkage = false;
	uint64_t phys_lo = 0;
	int n = 0;

	bool go = o->go && gopclntab__covers(o->go, vaddr);

	if (o->dwarf)
		n = symc_dwarf_frames(o, vaddr, out, max, &phys_linkage, &phys_lo);
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

		if (symc_plt_stub_name(o, vaddr, &plt_system, &plt_function)) {
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
	symc_charge(o, size + ENTRY_OVERHEAD);
}

/*
 * Releases what holds @o's files open: its descriptors (main file, debug file, inflated
 * DWARF) and, when loaded, its DWARF (a mapping pins the file too). Symbols, names read and
 * the address cache stay; names not read yet wait for symc_refresh_idle().
 */
static void close_idle_object(struct elf_object *o)
{
	struct symcache *c = o->cache;

	if (o->loaded) {
		if ((o->dwarf || o->go) && !addr_cache__own_strings(o))
			addr_cache__clear(o);
		symc_drop_dwarf(o);
		symc_drop_go(o);
		o->names_fd = -1;
		o->idle_closed = true;
	}
	symc_close_fd(c, &o->fd);
	symc_close_fd(c, &o->dbg_fd);
	symc_close_fd(c, &o->inflated_fd);
	symc_close_fd(c, &o->mini_fd);
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
	o->last_used = symc_now_ns();
	HASH_FIND(hh, o->addrs, &vaddr, sizeof(vaddr), e);
	if (e) {
		c->stats.cache_hits++;
		symc_lru_touch(o);
		n = e->n < max ? e->n : max;
		memcpy(out, e->frames, n * sizeof(*out));
		return n;
	}
	if (o->idle_closed)
		symc_refresh_idle(o);
	if (elf_object__load(o)) {
		c->stats.misses++;
		return 0;
	}
	symc_lru_touch(o);
	n = resolve(o, vaddr, frames, MAX_FRAMES);
	addr_cache__add(o, vaddr, frames, n);
	/* Strings of @o's frames stay valid: @o is never the one unloaded. */
	symc_make_room(c, o, 0);
	if (n > max)
		n = max;
	memcpy(out, frames, n * sizeof(*out));
	return n;
}

int symcache__go_frame_pending(struct symcache *c, struct elf_object *o, uint64_t vaddr)
{
	if (!c || !o || !o->maybe_go)
		return 0;
	o->last_used = symc_now_ns();
	if (o->idle_closed)
		symc_refresh_idle(o);
	if (elf_object__load(o) || !o->go)
		return 0;
	symc_lru_touch(o);
	return gopclntab__frame_pending(o->go, vaddr) == 1;
}
