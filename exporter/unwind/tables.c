/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include <bpf/bpf.h>

#include "unwind/rows.h"
#include "unwind/tables.h"
#include "util/util.h"

/* Executable PT_LOAD segments of the ELF file fd. 0 or -errno. */
static int read_exec_segs(int fd, struct utable *t)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;
	GElf_Phdr ph;
	int err = 0;

	if (!elf)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &n)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	t->segs = calloc(n ? n : 1, sizeof(*t->segs));
	if (!t->segs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		t->segs[t->nsegs].offset = ph.p_offset;
		t->segs[t->nsegs].vaddr = ph.p_vaddr;
		t->segs[t->nsegs].filesz = ph.p_filesz;
		t->nsegs++;
	}
cleanup:
	elf_end(elf);
	return err;
}

static void table_unload(struct unwinder *u, struct utable *t)
{
	struct unwind_table_desc none = {0};

	if (t->id == UNWIND_TABLE_NONE)
		return;
	/* No mapping list refers to the id any more: clear, then reuse its rows and id. */
	bpf_map_update_elem(u->o.maps.tables_fd, &t->id, &none, BPF_ANY);
	rows_free(u, t->first, t->count);
	u->free_ids[u->nfree_ids++] = t->id;
	u->st.tables--;
	u->st.row_bytes -= (uint64_t)t->count * sizeof(struct unwind_row);
	t->id = UNWIND_TABLE_NONE;
	t->count = 0;
}

static void idle_unlink(struct unwinder *u, struct utable *t)
{
	if (!t->idle)
		return;
	if (t->idle_prev)
		t->idle_prev->idle_next = t->idle_next;
	else
		u->idle_head = t->idle_next;
	if (t->idle_next)
		t->idle_next->idle_prev = t->idle_prev;
	else
		u->idle_tail = t->idle_prev;
	t->idle_prev = t->idle_next = NULL;
	t->idle = 0;
	u->idle_rows -= t->count;
}

static void table_free(struct unwinder *u, struct utable *t)
{
	idle_unlink(u, t);
	if (t->id != UNWIND_TABLE_NONE)
		u->st.tables_freed++;
	if (t->id != UNWIND_TABLE_NONE && t->jit)
		u->st.jit_tables--;
	table_unload(u, t);
	HASH_DEL(u->files, t);
	free(t->segs);
	free(t);
	u->st.files--;
}

/* Frees the oldest idle table: 0, or -ENOSPC when there is none. */
int idle_evict_one(struct unwinder *u)
{
	if (!u->idle_head)
		return -ENOSPC;
	table_free(u, u->idle_head);
	return 0;
}

/* Rows of a table being built go straight into its chunks (cfi_sink). */
struct load_ctx {
	struct unwinder *u;
	struct utable *t;
	uint32_t done; /* rows written */
	int allocated; /* t->first..+count reserved */
	struct cfi_stats st;
};

static int load_begin(void *ctx, uint32_t count, uint64_t base, const struct cfi_stats *st)
{
	struct load_ctx *l = ctx;
	int err;

	l->st = *st;
	if (!count)
		return -ENODATA;
	l->t->base = base;
	/* Idle tables make room first. */
	while (!l->u->nfree_ids)
		if (idle_evict_one(l->u))
			return -ENOSPC;
	while ((err = rows_alloc(l->u, count, &l->t->first)) == -ENOSPC)
		if (idle_evict_one(l->u))
			return -ENOSPC;
	if (err)
		return err;
	l->t->count = count;
	l->allocated = 1;
	return 0;
}

static int load_write(void *ctx, const struct unwind_row *rows, uint32_t n)
{
	struct load_ctx *l = ctx;

	while (n) {
		uint32_t r = l->t->first + l->done,
			 left = UNWIND_CHUNK_ROWS - r % UNWIND_CHUNK_ROWS;
		int err;

		if (left > n)
			left = n;
		err = chunk_write(l->u, r / UNWIND_CHUNK_ROWS, r % UNWIND_CHUNK_ROWS, rows, left);
		if (err)
			return err;
		l->done += left;
		rows += left;
		n -= left;
	}
	return 0;
}

/*
 * The end of a build whose rows went to @l (error @err): publishes the table's descriptor, or
 * frees its rows and sets t->err. Failures leave t->id NONE.
 */
static void table_store(struct unwinder *u, struct utable *t, struct load_ctx *l, int err,
			uint64_t t0)
{
	struct unwind_table_desc d;

	if (!err && l->done != t->count)
		err = -EIO;
	if (err)
		goto fail;
	t->id = u->free_ids[--u->nfree_ids];
	d.first = t->first;
	d.count = t->count;
	if (bpf_map_update_elem(u->o.maps.tables_fd, &t->id, &d, BPF_ANY)) {
		err = -errno;
		u->free_ids[u->nfree_ids++] = t->id;
		t->id = UNWIND_TABLE_NONE;
		goto fail;
	}
	t->err = 0;
	u->st.tables++;
	u->st.row_bytes += (uint64_t)t->count * sizeof(struct unwind_row);
	if (t->jit)
		u->st.jit_tables++;
	goto done;
fail:
	if (l->allocated)
		rows_free(u, t->first, t->count);
	t->count = 0;
	t->err = err;
	if (err == -ENOSPC) {
		t->full_gen = u->free_gen;
		if (t->jit)
			u->st.jit_full++;
		else
			u->st.tables_full++;
	} else if (t->jit) {
		u->st.jit_empty++;
	} else {
		u->st.no_cfi++;
	}
done:
	u->st.build_ns += util__mono_ns() - t0;
}

/*
 * Builds the table of fd and loads its rows. The rows are written into the chunks as they are
 * assembled: no copy of the table stays in this process.
 */
static void table_load(struct unwinder *u, struct utable *t, int fd)
{
	struct load_ctx l = {.u = u, .t = t};
	struct cfi_sink sink = {.begin = load_begin, .write = load_write, .ctx = &l};
	uint64_t t0 = util__mono_ns();
	int err = 0;

	u->st.builds++;
	t->count = 0;
	if (!t->segs)
		err = read_exec_segs(fd, t);
	if (!err)
		err = cfi__build_fd_stream(fd, NULL, &sink);
	table_store(u, t, &l, err, t0);
}

/*
 * The JIT CFI table of process @pid (started at @start_boot_ns) from @cfi: a new entry of the
 * file table under a key no file has, built from every code load's .eh_frame (each FDE kept to
 * its own code). NULL on ENOMEM; a table without rows has id NONE.
 */
struct utable *jit_table_new(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			     const struct jitproc_cfi *cfi)
{
	struct cfi_eh_frame *fr = calloc(cfi->n ? cfi->n : 1, sizeof(*fr));
	struct utable *t = calloc(1, sizeof(*t));
	struct load_ctx l = {.u = u, .t = t};
	struct cfi_sink sink = {.begin = load_begin, .write = load_write, .ctx = &l};
	uint64_t t0 = util__mono_ns();
	int err;

	if (!fr || !t) {
		free(fr);
		free(t);
		return NULL;
	}
	t->key = (struct file_key){JIT_KEY_DEV, pid, start_boot_ns, ++u->jit_seq};
	t->id = UNWIND_TABLE_NONE;
	t->jit = 1;
	t->jit_lo = UINT64_MAX;
	for (size_t i = 0; i < cfi->n; i++) {
		const struct jitdump_unwind *e = &cfi->v[i];

		fr[i] = (struct cfi_eh_frame){e->eh_frame, e->eh_frame_size, e->eh_frame_addr,
					      e->code_addr, e->code_addr + e->code_size};
		if (e->code_addr < t->jit_lo)
			t->jit_lo = e->code_addr;
		if (e->code_addr + e->code_size > t->jit_hi)
			t->jit_hi = e->code_addr + e->code_size;
	}
	HASH_ADD(hh, u->files, key, sizeof(t->key), t);
	u->st.files++;
	u->st.jit_builds++;
	err = cfi__build_eh_frames(fr, cfi->n, &sink);
	free(fr);
	u->st.jit_fdes += l.st.fdes;
	u->st.jit_fdes_skipped += l.st.skipped_bad_cie + l.st.skipped_bad_fde +
				  l.st.skipped_outside_text + l.st.skipped_overlap;
	table_store(u, t, &l, err, t0);
	return t;
}

/* The table of the open file fd (identity key), built on first use. NULL on ENOMEM. */
struct utable *table_get(struct unwinder *u, const struct file_key *key, int fd)
{
	struct utable *t;

	HASH_FIND(hh, u->files, key, sizeof(*key), t);
	if (t) {
		idle_unlink(u, t); /* in use again */
		/* Refused for lack of room: try again once something was freed. */
		if (t->err == -ENOSPC && t->full_gen != u->free_gen)
			table_load(u, t, fd);
		return t;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->key = *key;
	t->id = UNWIND_TABLE_NONE;
	HASH_ADD(hh, u->files, key, sizeof(t->key), t);
	u->st.files++;
	table_load(u, t, fd);
	return t;
}

void table_put(struct unwinder *u, struct utable *t)
{
	if (--t->refs)
		return;
	/* A process's JIT table is no other's: never kept idle. */
	if (t->id == UNWIND_TABLE_NONE || t->count > IDLE_MAX_ROWS || t->jit) {
		table_free(u, t);
		return;
	}
	t->idle = 1;
	t->idle_since = util__mono_ns();
	t->idle_prev = u->idle_tail;
	if (u->idle_tail)
		u->idle_tail->idle_next = t;
	else
		u->idle_head = t;
	u->idle_tail = t;
	u->idle_rows += t->count;
	while (u->idle_rows > IDLE_MAX_ROWS)
		idle_evict_one(u);
}
