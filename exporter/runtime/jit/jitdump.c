/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/jit/jitdump.h"

/* Sizes of the fixed parts (jitdump-specification.txt). */
#define FILE_HEADER 40u	  /* magic .. flags */
#define RECORD_HEADER 16u /* id, total_size, timestamp */
#define LOAD_FIXED 40u	  /* pid, tid, vma, code_addr, code_size, code_index */
#define MOVE_FIXED 40u	  /* pid, tid, vma, old_code_addr, new_code_addr, code_size, index */
#define DEBUG_FIXED 16u	  /* code_addr, nr_entry */
#define DEBUG_ENTRY 16u	  /* code_addr, line, discrim; then the file name */
#define UNWIND_FIXED 24u  /* unwinding_size, eh_frame_hdr_size, mapped_size */
/* A record body read at most this far: a code load's name, a debug info's rows. */
#define BODY_MAX (1u << 20)
/* A file header longer than this is not one. */
#define HEADER_MAX 4096u
/* Rows kept of one debug info record. */
#define MAX_ROWS 65536u

struct jitdump {
	struct jittab *tab;
	uint64_t offset; /* bytes consumed: header and complete records */
	dev_t dev;
	ino_t ino;
	uint64_t max_file_bytes;
	bool header, closed, corrupt, full;
	/* The file header read (its timestamp tells a writer that started the file again). */
	unsigned char hdr[FILE_HEADER];
	/* The last debug info, for the code load at its address that follows it. */
	uint64_t debug_addr;
	struct jittab_line *rows;
	uint32_t nrows;
	char *names; /* the rows' file names */
	/* The last unwinding record's .eh_frame, for the code load that follows it. */
	uint8_t *pend;
	uint32_t pend_size;
	/* Call frame information of the code in place, sorted by code_addr, non-overlapping. */
	struct jitdump_unwind *unw;
	size_t nunw, capunw;
	uint64_t unw_bytes, unw_gen;
	struct jitdump_stats st;
};

struct jitdump *jitdump__new(uint32_t max_entries, uint64_t max_bytes, uint64_t max_file_bytes)
{
	struct jitdump *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->tab = jittab__new(max_entries, max_bytes);
	if (!d->tab) {
		free(d);
		return NULL;
	}
	d->max_file_bytes = max_file_bytes;
	return d;
}

static void forget_debug(struct jitdump *d)
{
	free(d->rows);
	free(d->names);
	d->rows = NULL;
	d->names = NULL;
	d->nrows = 0;
}

/* Drops the pending unwinding record (counted unused). */
static void forget_pending(struct jitdump *d)
{
	if (!d->pend)
		return;
	free(d->pend);
	d->pend = NULL;
	d->pend_size = 0;
	d->st.unwind_unused++;
}

static void forget_unwind(struct jitdump *d)
{
	forget_pending(d);
	if (d->nunw)
		d->unw_gen++;
	for (size_t i = 0; i < d->nunw; i++)
		free(d->unw[i].eh_frame);
	free(d->unw);
	d->unw = NULL;
	d->nunw = d->capunw = 0;
	d->unw_bytes = 0;
}

/* Index of the first entry ending after @addr (entries are sorted and do not overlap). */
static size_t unwind_first_after(const struct jitdump *d, uint64_t addr)
{
	size_t lo = 0, hi = d->nunw;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->unw[mid].code_addr + d->unw[mid].code_size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Removes the entry at @i, handing its .eh_frame to the caller. */
static struct jitdump_unwind unwind_take(struct jitdump *d, size_t i)
{
	struct jitdump_unwind e = d->unw[i];

	memmove(&d->unw[i], &d->unw[i + 1], (d->nunw - i - 1) * sizeof(*d->unw));
	d->nunw--;
	d->unw_bytes -= e.eh_frame_size;
	d->unw_gen++;
	return e;
}

/* Code at [@start, @start + @size) was replaced or moved over: its CFI no longer applies. */
static void unwind_drop_range(struct jitdump *d, uint64_t start, uint64_t size)
{
	size_t i = unwind_first_after(d, start);

	while (i < d->nunw && d->unw[i].code_addr < start + size) {
		struct jitdump_unwind e = unwind_take(d, i);

		free(e.eh_frame);
		d->st.unwind_dropped++;
	}
}

/* Inserts @e (its range free: unwind_drop_range() first). 0 or -ENOMEM (@e not freed). */
static int unwind_insert(struct jitdump *d, const struct jitdump_unwind *e)
{
	size_t i = unwind_first_after(d, e->code_addr);

	if (d->nunw == d->capunw) {
		size_t cap = d->capunw ? 2 * d->capunw : 16;
		struct jitdump_unwind *v = realloc(d->unw, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->unw = v;
		d->capunw = cap;
	}
	memmove(&d->unw[i + 1], &d->unw[i], (d->nunw - i) * sizeof(*d->unw));
	d->unw[i] = *e;
	d->nunw++;
	d->unw_bytes += e->eh_frame_size;
	d->unw_gen++;
	return 0;
}

void jitdump__free(struct jitdump *d)
{
	if (!d)
		return;
	forget_unwind(d);
	forget_debug(d);
	jittab__free(d->tab);
	free(d);
}

static uint32_t u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Reads exactly @len bytes at @off: 0, -EIO, or -EAGAIN (the file ends before). */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -EIO;
		if (!n)
			return -EAGAIN;
		got += (size_t)n;
	}
	return 0;
}

static int read_header(struct jitdump *d, int fd, uint64_t size)
{
	unsigned char h[FILE_HEADER];
	uint32_t total;
	int err;

	if (size < FILE_HEADER)
		return -EAGAIN;
	err = read_at(fd, h, sizeof(h), 0);
	if (err)
		return err;
	total = u32(h + 8);
	/* Another byte order, version or header size: not a file this reader can follow. */
	if (u32(h) != JITDUMP_MAGIC || u32(h + 4) != JITDUMP_VERSION || total < FILE_HEADER ||
	    total > HEADER_MAX)
		return -EBADMSG;
	d->header = true;
	d->offset = total;
	memcpy(d->hdr, h, sizeof(h));
	return 0;
}

/*
 * 1 when the file still starts with the header read: a writer that truncated it and started
 * again (same inode, as long as what was read or longer) wrote its own header (another
 * timestamp, pid), and what was read of the old file must go. 0 when not, -EIO.
 */
static int same_header(const struct jitdump *d, int fd)
{
	unsigned char h[FILE_HEADER];
	int err = read_at(fd, h, sizeof(h), 0);

	if (err == -EIO)
		return err;
	return !err && !memcmp(h, d->hdr, sizeof(h));
}

/* JIT_CODE_DEBUG_INFO: keeps its rows for the code load at its address. */
static void take_debug(struct jitdump *d, const unsigned char *b, size_t len)
{
	const unsigned char *p = b + DEBUG_FIXED, *end = b + len;
	uint64_t nr;
	size_t names_len = 0;
	const char *prev = NULL;

	forget_debug(d);
	if (len < DEBUG_FIXED) {
		d->st.bad_records++;
		return;
	}
	d->debug_addr = u64(b);
	nr = u64(b + 8);
	if (nr > MAX_ROWS)
		nr = MAX_ROWS;
	d->rows = calloc(nr ? nr : 1, sizeof(*d->rows));
	d->names = malloc(len);
	if (!d->rows || !d->names) {
		forget_debug(d);
		return;
	}
	for (uint64_t i = 0; i < nr; i++) {
		const unsigned char *nul;
		struct jittab_line *r = &d->rows[d->nrows];

		if (end - p < (ptrdiff_t)DEBUG_ENTRY + 1)
			break;
		nul = memchr(p + DEBUG_ENTRY, '\0', end - (p + DEBUG_ENTRY));
		if (!nul)
			break;
		r->addr = u64(p);
		r->line = u32(p + 8);
		if (nul - (p + DEBUG_ENTRY) == 1 && p[DEBUG_ENTRY] == 0xff) {
			r->file = prev; /* "the same file as the previous row" */
		} else {
			size_t n = (size_t)(nul - (p + DEBUG_ENTRY)) + 1;

			memcpy(d->names + names_len, p + DEBUG_ENTRY, n);
			r->file = prev = d->names + names_len;
			names_len += n;
		}
		d->nrows++;
		p = nul + 1;
	}
	if (d->nrows < nr)
		d->st.bad_records++;
	d->st.debug_infos++;
}

static int take_load(struct jitdump *d, const unsigned char *b, size_t len)
{
	const unsigned char *nul;
	uint64_t code_addr, code_size;
	int err;

	if (len < LOAD_FIXED + 1 || !(nul = memchr(b + LOAD_FIXED, '\0', len - LOAD_FIXED))) {
		d->st.bad_records++;
		return 0;
	}
	code_addr = u64(b + 16);
	code_size = u64(b + 24);
	err = jittab__add(d->tab, code_addr, code_size, (const char *)b + LOAD_FIXED,
			  (size_t)(nul - (b + LOAD_FIXED)),
			  d->debug_addr == code_addr ? d->rows : NULL,
			  d->debug_addr == code_addr ? d->nrows : 0);
	forget_debug(d);
	d->debug_addr = 0;
	if (err == -EINVAL) {
		forget_pending(d);
		d->st.bad_records++;
		return 0;
	}
	if (err) {
		forget_pending(d);
		return err;
	}
	d->st.loads++;
	/* The code there before is gone, and its CFI with it; this code's own comes next. */
	unwind_drop_range(d, code_addr, code_size);
	if (d->pend) {
		struct jitdump_unwind e = {
		    .code_addr = code_addr,
		    .code_size = code_size,
		    .eh_frame_addr = code_addr + ((code_size + 7) & ~7ull),
		    .eh_frame_size = d->pend_size,
		    .eh_frame = d->pend,
		};

		if (unwind_insert(d, &e))
			return -ENOMEM; /* d->pend still owns it */
		d->pend = NULL;
		d->pend_size = 0;
		d->st.unwind_used++;
	}
	return 0;
}

/*
 * JIT_CODE_UNWINDING_INFO: keeps its .eh_frame for the code load that follows. Sizes that do
 * not fit the record (or the part of it read) are counted, never followed.
 */
static void take_unwind(struct jitdump *d, const unsigned char *b, size_t len)
{
	uint64_t usize, hsize, esize;

	d->st.unwinding_infos++;
	forget_pending(d); /* a second record before any code load: the first one is unused */
	if (len < UNWIND_FIXED) {
		d->st.unwind_bad++;
		return;
	}
	usize = u64(b);
	hsize = u64(b + 8);
	if (usize > len - UNWIND_FIXED || hsize > usize) {
		d->st.unwind_bad++;
		return;
	}
	/* No .eh_frame: V8 writes such a record before code it has no CFI for. */
	if (hsize == usize) {
		d->st.unwind_empty++;
		return;
	}
	esize = usize - hsize;
	if (d->unw_bytes + esize > JITDUMP_MAX_UNWIND_BYTES) {
		d->st.unwind_full++;
		return;
	}
	d->pend = malloc(esize);
	if (!d->pend) {
		d->st.unwind_full++;
		return;
	}
	memcpy(d->pend, b + UNWIND_FIXED, esize);
	d->pend_size = (uint32_t)esize;
}

/* A code move: its CFI (if any) moves along; CFI of code at the new place is dropped. */
static int unwind_move(struct jitdump *d, uint64_t old_addr, uint64_t new_addr, uint64_t size)
{
	size_t i = unwind_first_after(d, old_addr);
	struct jitdump_unwind e;
	int err;

	if (i == d->nunw || d->unw[i].code_addr != old_addr) {
		unwind_drop_range(d, new_addr, size);
		return 0;
	}
	e = unwind_take(d, i);
	unwind_drop_range(d, new_addr, size);
	e.eh_frame_addr = e.eh_frame_addr - old_addr + new_addr;
	e.code_addr = new_addr;
	e.code_size = size;
	err = unwind_insert(d, &e);
	if (err)
		free(e.eh_frame);
	return err;
}

/* JIT_CODE_MOVE: the code at the old address is now at the new one (same name, rows moved). */
static int take_move(struct jitdump *d, const unsigned char *b, size_t len)
{
	struct jittab_line *rows = NULL;
	struct jittab_sym s;
	uint64_t old_addr, new_addr, size;
	char *name = NULL, *file = NULL;
	int err;

	if (len < MOVE_FIXED) {
		d->st.bad_records++;
		return 0;
	}
	old_addr = u64(b + 16);
	new_addr = u64(b + 24);
	size = u64(b + 32);
	/* The old code must be found among what was committed: commit what is staged first. */
	err = jittab__commit(d->tab);
	if (err)
		return err;
	err = jittab__lookup(d->tab, old_addr, &s);
	if (err || s.start != old_addr) {
		d->st.moves_unknown++;
		/* Whatever was at the new address is gone all the same. */
		if (size)
			unwind_drop_range(d, new_addr, size);
		err = size ? jittab__remove(d->tab, new_addr, size) : 0;
		return err == -ENOMEM || err == -E2BIG ? err : 0;
	}
	/* Copies: staging may move the table's strings. */
	name = strdup(s.name);
	file = s.file ? strdup(s.file) : NULL;
	/* The row at the code's start is kept, moved with the code. */
	rows = s.file ? calloc(1, sizeof(*rows)) : NULL;
	if (!name || (s.file && (!file || !rows))) {
		free(name);
		free(file);
		free(rows);
		return -ENOMEM;
	}
	if (rows) {
		rows->addr = new_addr;
		rows->line = s.line;
		rows->file = file;
	}
	err = jittab__remove(d->tab, old_addr, s.end - s.start);
	if (!err)
		err = jittab__add(d->tab, new_addr, size ? size : s.end - s.start, name,
				  strlen(name), rows, rows ? 1 : 0);
	free(rows);
	free(name);
	free(file);
	if (err == -EINVAL) {
		d->st.bad_records++;
		return 0;
	}
	if (!err) {
		d->st.moves++;
		err = unwind_move(d, old_addr, new_addr, size ? size : s.end - s.start);
	}
	return err;
}

/* One record whose body (@len bytes read of it) is in @b. 0 or a fatal -errno. */
static int take_record(struct jitdump *d, uint32_t id, const unsigned char *b, size_t len)
{
	switch (id) {
	case JIT_CODE_LOAD:
		return take_load(d, b, len);
	case JIT_CODE_MOVE:
		return take_move(d, b, len);
	case JIT_CODE_DEBUG_INFO:
		take_debug(d, b, len);
		return 0;
	case JIT_CODE_CLOSE:
		d->closed = true;
		d->st.closes++;
		forget_pending(d);
		return 0;
	case JIT_CODE_UNWINDING_INFO:
		take_unwind(d, b, len);
		return 0;
	default:
		d->st.unknown_records++;
		return 0;
	}
}

static void reset(struct jitdump *d, const struct stat *st)
{
	if (d->offset || d->ino)
		d->st.resets++;
	jittab__clear(d->tab);
	forget_debug(d);
	forget_unwind(d);
	d->debug_addr = 0;
	d->offset = 0;
	d->header = d->closed = d->corrupt = d->full = false;
	d->dev = st->st_dev;
	d->ino = st->st_ino;
}

int jitdump__update(struct jitdump *d, int fd, const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size;
	unsigned char rh[RECORD_HEADER], *body = NULL;
	int err = 0, cerr;

	if (d->dev != st->st_dev || d->ino != st->st_ino || size < d->offset) {
		reset(d, st);
	} else if (d->header) {
		cerr = same_header(d, fd);
		if (cerr < 0)
			return cerr;
		if (!cerr)
			reset(d, st);
	}
	if (d->corrupt)
		return -EBADMSG;
	if (d->full)
		return -E2BIG;
	if (size > d->max_file_bytes)
		size = d->max_file_bytes;
	if (!d->header) {
		err = read_header(d, fd, size);
		if (err == -EAGAIN)
			return 0;
		if (err == -EBADMSG) {
			d->corrupt = true;
			d->st.corrupt++;
			d->st.corrupt_header++;
		}
		if (err)
			return err;
	}
	while (!d->closed && d->offset + RECORD_HEADER <= size) {
		uint32_t id, total;
		size_t len;

		err = read_at(fd, rh, sizeof(rh), d->offset);
		if (err)
			break;
		id = u32(rh);
		total = u32(rh + 4);
		if (total < RECORD_HEADER) {
			d->corrupt = true;
			d->st.corrupt++;
			err = -EBADMSG;
			break;
		}
		if (d->offset + total > size) {
			/* Still being written, or beyond the bound. */
			if (d->offset + total > d->max_file_bytes) {
				d->full = true;
				err = -E2BIG;
			}
			break;
		}
		len = total - RECORD_HEADER;
		if (len > BODY_MAX)
			len = BODY_MAX;
		if (id <= JIT_CODE_MOVE || id == JIT_CODE_DEBUG_INFO ||
		    id == JIT_CODE_UNWINDING_INFO) {
			if (!body)
				body = malloc(BODY_MAX);
			if (!body) {
				err = -ENOMEM;
				break;
			}
			/* A code load needs its name only, not the code after it. */
			err = read_at(fd, body, len, d->offset + RECORD_HEADER);
			if (err)
				break;
		}
		err = take_record(d, id, body, len);
		if (err) {
			if (err == -E2BIG)
				d->full = true;
			break;
		}
		d->offset += total;
		d->st.bytes += total;
	}
	free(body);
	if (err == -EAGAIN)
		err = 0;
	/* Stopped by the bound, not by the end of what was written. */
	if (!err && !d->closed && (uint64_t)st->st_size > size &&
	    d->offset + RECORD_HEADER > size) {
		d->full = true;
		err = -E2BIG;
	}
	cerr = jittab__commit(d->tab);
	if (cerr == -E2BIG)
		d->full = true;
	return err ? err : cerr;
}

int jitdump__lookup(const struct jitdump *d, uint64_t addr, struct jittab_sym *out)
{
	if (d->full)
		return -E2BIG;
	return jittab__lookup(d->tab, addr, out);
}

size_t jitdump__unwind(const struct jitdump *d, const struct jitdump_unwind **out)
{
	*out = d->unw;
	return d->nunw;
}

uint64_t jitdump__unwind_gen(const struct jitdump *d)
{
	return d->unw_gen;
}

uint64_t jitdump__offset(const struct jitdump *d)
{
	return d->offset;
}

const struct jitdump_stats *jitdump__stats(const struct jitdump *d)
{
	return &d->st;
}

const struct jittab *jitdump__table(const struct jitdump *d)
{
	return d->tab;
}
