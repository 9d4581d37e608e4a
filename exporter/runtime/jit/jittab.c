/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/jit/jittab.h"
#include "util/util.h"

#define NO_FILE UINT32_MAX
/* Ranges removed (code moved away or freed) remembered for the ranges later announced there. */
#define GRAVES 256

struct ent {
	uint64_t start, end;
	uint32_t id;
	uint32_t name;	     /* pool offset */
	uint32_t first_line; /* index in lines */
	uint32_t nlines;
	bool tomb;   /* a removal: kills what it overlaps, then goes */
	bool staged; /* not committed yet */
	/* CLOCK_BOOTTIME ns from which the name is proven (jittab_sym.since_boot_ns). */
	uint64_t since;
};

struct row {
	uint64_t addr;
	uint32_t line;
	uint32_t file; /* pool offset, NO_FILE */
};

struct jittab {
	struct ent *ents; /* [0, ncommitted) sorted, disjoint; then the staged ones in order */
	size_t nents, ncommitted, cap_ents;
	struct row *rows;
	size_t nrows, cap_rows;
	char *pool;
	size_t npool, cap_pool;
	uint32_t max_entries;
	uint64_t max_bytes;
	bool full;
	uint64_t replaced;
	/* jittab__clear()'s time: what was held before is forgotten, so ranges added since are
	 * proven only from then on. */
	uint64_t floor;
	uint64_t written_by; /* jittab__written_by(), 0: none */
	bool used;	     /* a range was ever staged: a clear forgets something */
	/*
	 * Held ranges a removal killed, with the commit's time (a ring of GRAVES): code announced
	 * there later did not run there before, so it is proven only from its own commit on. One
	 * pushed out of the ring raises the floor instead (every later range counts from then).
	 */
	struct grave {
		uint64_t start, end, when;
		uint64_t commit; /* the commit that removed it */
	} graves[GRAVES];
	uint32_t ngraves, next_grave;
	uint64_t commits; /* commits that staged something, this one included */
};

/* Ids order every range of the agent: a later one wins. */
static uint32_t next_id;

struct jittab *jittab__new(uint32_t max_entries, uint64_t max_bytes)
{
	struct jittab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_entries = max_entries;
	t->max_bytes = max_bytes;
	return t;
}

void jittab__free(struct jittab *t)
{
	if (!t)
		return;
	free(t->ents);
	free(t->rows);
	free(t->pool);
	free(t);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static size_t used_bytes(const struct jittab *t)
{
	return t->npool + t->nrows * sizeof(struct row) + t->nents * sizeof(struct ent);
}

static int pool_add(struct jittab *t, const char *s, size_t len, uint32_t *off)
{
	if (t->npool + len + 1 > UINT32_MAX - 1)
		return -E2BIG;
	if (grow((void **)&t->pool, &t->cap_pool, t->npool + len + 1, 1))
		return -ENOMEM;
	memcpy(t->pool + t->npool, s, len);
	t->pool[t->npool + len] = '\0';
	*off = (uint32_t)t->npool;
	t->npool += len + 1;
	return 0;
}

static int stage(struct jittab *t, uint64_t start, uint64_t size, bool tomb, struct ent **out)
{
	struct ent *e;

	if (!size || start + size < start)
		return -EINVAL;
	if (t->full)
		return -E2BIG;
	if (t->nents >= (size_t)t->max_entries * 2 + 1024 || used_bytes(t) > t->max_bytes) {
		t->full = true;
		return -E2BIG;
	}
	if (grow((void **)&t->ents, &t->cap_ents, t->nents + 1, sizeof(*e)))
		return -ENOMEM;
	e = &t->ents[t->nents];
	memset(e, 0, sizeof(*e));
	e->start = start;
	e->end = start + size;
	e->tomb = tomb;
	e->staged = true;
	e->since = t->floor;
	t->used = true;
	e->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	*out = e;
	return 0;
}

int jittab__add(struct jittab *t, uint64_t start, uint64_t size, const char *name, size_t name_len,
		const struct jittab_line *lines, uint32_t nlines)
{
	struct ent *e;
	size_t npool = t->npool, nrows = t->nrows;
	uint32_t name_off, last_file = NO_FILE;
	const char *last_name = NULL;
	int err;

	if (!name || !name_len || memchr(name, '\0', name_len))
		return -EINVAL;
	err = stage(t, start, size, false, &e);
	if (err)
		return err;
	err = pool_add(t, name, name_len, &name_off);
	if (err)
		goto undo;
	if (nlines) {
		err = -ENOMEM;
		if (grow((void **)&t->rows, &t->cap_rows, t->nrows + nlines, sizeof(*t->rows)))
			goto undo;
	}
	for (uint32_t i = 0; i < nlines; i++) {
		struct row *r;

		if (lines[i].addr < start || lines[i].addr >= start + size)
			continue;
		/* Rows must ascend for the lookup's search: a row out of order ends the table. */
		if (t->nrows > nrows && lines[i].addr < t->rows[t->nrows - 1].addr)
			break;
		r = &t->rows[t->nrows];
		r->addr = lines[i].addr;
		r->line = lines[i].line;
		r->file = NO_FILE;
		if (lines[i].file && last_name && !strcmp(lines[i].file, last_name)) {
			r->file = last_file;
		} else if (lines[i].file) {
			err = pool_add(t, lines[i].file, strlen(lines[i].file), &r->file);
			if (err)
				goto undo;
			last_name = lines[i].file;
			last_file = r->file;
		}
		t->nrows++;
	}
	e = &t->ents[t->nents];
	e->name = name_off;
	e->first_line = (uint32_t)nrows;
	e->nlines = (uint32_t)(t->nrows - nrows);
	t->nents++;
	return 0;
undo:
	t->npool = npool;
	t->nrows = nrows;
	return err;
}

int jittab__remove(struct jittab *t, uint64_t start, uint64_t size)
{
	struct ent *e;
	int err = stage(t, start, size, true, &e);

	if (err == -E2BIG)
		return err;
	if (err)
		return err;
	t->nents++;
	return 0;
}

/* --- commit: later ranges replace earlier overlapping ones --- */

struct heap {
	uint32_t *v; /* indices into the sorted order */
	size_t n;
	int max; /* 1: largest id on top, 0: smallest */
};

static bool above(const struct heap *h, const struct ent *es, uint32_t a, uint32_t b)
{
	return h->max ? es[a].id > es[b].id : es[a].id < es[b].id;
}

static void heap_push(struct heap *h, const struct ent *es, uint32_t x)
{
	size_t i = h->n++;

	while (i) {
		size_t p = (i - 1) / 2;

		if (!above(h, es, x, h->v[p]))
			break;
		h->v[i] = h->v[p];
		i = p;
	}
	h->v[i] = x;
}

static void heap_pop(struct heap *h, const struct ent *es)
{
	uint32_t x = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && above(h, es, h->v[c + 1], h->v[c]))
			c++;
		if (!above(h, es, h->v[c], x))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
}

static int by_start_id(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * A staged range @e surviving the commit at @now: new code where removed code was is proven
 * from @now on, and nothing before the floor.
 */
static void settle(const struct jittab *t, struct ent *e, uint64_t now)
{
	if (!e->staged)
		return;
	/*
	 * Not this commit's own removals (its ranges over them were weighed by replaced_by()), nor
	 * those before the time a range announced again inherited (the code was there after).
	 */
	for (uint32_t g = 0; g < t->ngraves; g++)
		if (t->graves[g].commit != t->commits && t->graves[g].when > e->since &&
		    t->graves[g].start < e->end && e->start < t->graves[g].end && e->since < now)
			e->since = now;
	if (e->since < t->floor)
		e->since = t->floor;
	e->staged = false;
}

/*
 * The common case, a runtime appending code at fresh addresses: no staged range is a removal or
 * overlaps another range, staged or held. Then the staged ranges are sorted and merged into the
 * held ones (strings and rows stay where they are). 1 done, 0 not that case, -ENOMEM.
 */
static int commit_disjoint(struct jittab *t, uint64_t now)
{
	size_t n = t->ncommitted, k = t->nents - n, i, j, o;
	struct ent *staged = t->ents + n, *merged;

	for (i = 0; i < k; i++)
		if (staged[i].tomb)
			return 0;
	qsort(staged, k, sizeof(*staged), by_start_id);
	for (i = 0; i < k; i++) {
		size_t lo = 0, hi = n;

		if (i + 1 < k && staged[i].end > staged[i + 1].start)
			return 0;
		/* The held range starting last at or below this one's start, and the next one. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->ents[mid].start <= staged[i].start)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && t->ents[lo - 1].end > staged[i].start)
			return 0;
		if (lo < n && t->ents[lo].start < staged[i].end)
			return 0;
	}
	merged = malloc((n + k) * sizeof(*merged));
	if (!merged)
		return -ENOMEM;
	for (i = 0; i < k; i++)
		settle(t, &staged[i], now);
	for (i = 0, j = 0, o = 0; i < n || j < k;)
		merged[o++] = j == k || (i < n && t->ents[i].start < staged[j].start) ? t->ents[i++]
										      : staged[j++];
	free(t->ents);
	t->ents = merged;
	t->nents = t->ncommitted = t->cap_ents = n + k;
	return 1;
}

/*
 * @newer replaces @older (they overlap): samples taken before this commit (@now) may have run
 * @older's code there, so @newer's name is proven only from @now on, unless it is the same
 * code announced again (same range, same name: a rewritten map's unchanged entries), which
 * keeps what @older had. Removals neither have names nor pass them on.
 */
static void replaced_by(struct jittab *t, struct ent *newer, const struct ent *older, uint64_t now)
{
	uint64_t since = now;

	if (newer->tomb && !older->tomb && !older->staged) {
		struct grave *g = &t->graves[t->next_grave];

		if (t->ngraves == GRAVES && g->when > t->floor)
			t->floor = g->when; /* forgotten: what comes later counts from then */
		*g = (struct grave){older->start, older->end, now, t->commits};
		t->next_grave = (t->next_grave + 1) % GRAVES;
		if (t->ngraves < GRAVES)
			t->ngraves++;
		return;
	}
	if (newer->tomb || older->tomb)
		return;
	if (newer->start == older->start && newer->end == older->end &&
	    !strcmp(t->pool + newer->name, t->pool + older->name))
		since = older->since;
	if (since > newer->since)
		newer->since = since;
}

void jittab__written_by(struct jittab *t, uint64_t boot_ns)
{
	t->written_by = boot_ns;
}

int jittab__commit(struct jittab *t)
{
	struct heap newest = {0}, oldest = {0};
	struct ent *es = NULL;
	struct row *rows = NULL;
	char *pool = NULL;
	bool *dead = NULL;
	size_t n = t->nents, out = 0, nrows = 0, npool = 0, live_rows = 0, live_pool = 0;
	int err = -ENOMEM;
	uint64_t now;

	if (n == t->ncommitted)
		return t->full ? -E2BIG : 0;
	now = util__boot_ns();
	if (t->written_by && t->written_by < now)
		now = t->written_by;
	t->written_by = 0;
	t->commits++;
	err = commit_disjoint(t, now);
	if (err) {
		if (err > 0 && (t->ncommitted > t->max_entries || used_bytes(t) > t->max_bytes))
			t->full = true;
		return err < 0 ? err : t->full ? -E2BIG : 0;
	}
	err = -ENOMEM;
	es = malloc(n * sizeof(*es));
	dead = calloc(n, sizeof(*dead));
	newest.v = malloc(n * sizeof(*newest.v));
	oldest.v = malloc(n * sizeof(*oldest.v));
	if (!es || !dead || !newest.v || !oldest.v)
		goto cleanup;
	memcpy(es, t->ents, n * sizeof(*es));
	qsort(es, n, sizeof(*es), by_start_id);
	newest.max = 1;
	/*
	 * Two ranges overlap iff the later-starting one starts inside the other. Sweeping by start,
	 * the ranges started before and still open are the ones the current range overlaps: it
	 * dies if one of them is newer, and kills those that are older.
	 */
	for (uint32_t i = 0; i < n; i++) {
		while (newest.n && es[newest.v[0]].end <= es[i].start)
			heap_pop(&newest, es);
		if (newest.n && es[newest.v[0]].id > es[i].id) {
			dead[i] = true;
			replaced_by(t, &es[newest.v[0]], &es[i], now);
		}
		while (oldest.n && es[oldest.v[0]].id < es[i].id) {
			uint32_t j = oldest.v[0];

			heap_pop(&oldest, es);
			if (es[j].end > es[i].start) {
				dead[j] = true;
				replaced_by(t, &es[i], &es[j], now);
			}
		}
		heap_push(&newest, es, i);
		heap_push(&oldest, es, i);
	}
	for (size_t i = 0; i < n; i++) {
		if (dead[i] || es[i].tomb)
			continue;
		live_rows += es[i].nlines;
		live_pool += strlen(t->pool + es[i].name) + 1;
		for (uint32_t k = 0; k < es[i].nlines; k++)
			if (t->rows[es[i].first_line + k].file != NO_FILE)
				live_pool +=
				    strlen(t->pool + t->rows[es[i].first_line + k].file) + 1;
	}
	rows = malloc((live_rows ? live_rows : 1) * sizeof(*rows));
	pool = malloc(live_pool ? live_pool : 1);
	if (!rows || !pool)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		struct ent *e = &es[i];
		uint32_t last_src = NO_FILE, last_dst = NO_FILE;
		size_t len;

		if (dead[i] || e->tomb) {
			/* A tombstone is not a range that was held. */
			if (!e->tomb)
				t->replaced++;
			continue;
		}
		settle(t, e, now);
		len = strlen(t->pool + e->name) + 1;
		memcpy(pool + npool, t->pool + e->name, len);
		e->name = (uint32_t)npool;
		npool += len;
		for (uint32_t k = 0; k < e->nlines; k++) {
			struct row r = t->rows[e->first_line + k];

			if (r.file != NO_FILE && r.file == last_src) {
				r.file = last_dst;
			} else if (r.file != NO_FILE) {
				last_src = r.file;
				len = strlen(t->pool + r.file) + 1;
				memcpy(pool + npool, t->pool + r.file, len);
				r.file = last_dst = (uint32_t)npool;
				npool += len;
			}
			rows[nrows + k] = r;
		}
		e->first_line = (uint32_t)nrows;
		nrows += e->nlines;
		es[out++] = *e;
	}
	free(t->ents);
	free(t->rows);
	free(t->pool);
	t->ents = es;
	t->nents = t->ncommitted = out;
	t->cap_ents = n;
	t->rows = rows;
	t->nrows = nrows;
	t->cap_rows = live_rows ? live_rows : 1;
	t->pool = pool;
	t->npool = npool;
	t->cap_pool = live_pool ? live_pool : 1;
	es = NULL;
	rows = NULL;
	pool = NULL;
	if (out > t->max_entries || used_bytes(t) > t->max_bytes)
		t->full = true;
	err = t->full ? -E2BIG : 0;
cleanup:
	free(es);
	free(rows);
	free(pool);
	free(dead);
	free(newest.v);
	free(oldest.v);
	return err;
}

void jittab__clear(struct jittab *t)
{
	if (t->used) /* the first read of a file forgets nothing */
		t->floor = util__boot_ns();
	t->nents = t->ncommitted = 0;
	t->nrows = 0;
	t->npool = 0;
	t->full = false;
}

int jittab__lookup(const struct jittab *t, uint64_t addr, struct jittab_sym *out)
{
	size_t lo = 0, hi = t->ncommitted;
	const struct ent *e;

	if (t->full)
		return -E2BIG;
	/* Last range starting at or below @addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->ents[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= t->ents[lo - 1].end)
		return -ENOENT;
	e = &t->ents[lo - 1];
	out->start = e->start;
	out->end = e->end;
	out->id = e->id;
	out->since_boot_ns = e->since;
	out->name = t->pool + e->name;
	out->file = NULL;
	out->line = 0;
	lo = 0;
	hi = e->nlines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[e->first_line + mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct row *r = &t->rows[e->first_line + lo - 1];

		out->line = r->line;
		out->file = r->file != NO_FILE ? t->pool + r->file : NULL;
	}
	return 0;
}

size_t jittab__count(const struct jittab *t)
{
	return t->ncommitted;
}

int jittab__full(const struct jittab *t)
{
	return t->full;
}

uint64_t jittab__replaced(const struct jittab *t)
{
	return t->replaced;
}

size_t jittab__bytes(const struct jittab *t)
{
	return sizeof(*t) + t->cap_ents * sizeof(struct ent) + t->cap_rows * sizeof(struct row) +
	       t->cap_pool;
}
