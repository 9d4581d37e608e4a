/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>
#include <utlist.h>

#include <bpf/bpf.h>

#include "process/proclife.h"
#include "symbols/loadbias.h"
#include "unwind/cfi.h"
#include "unwind/unwinder.h"
#include "util/util.h"

/* Notifications wait this long so that a burst (ld.so mapping a library) is one re-read. */
#define REFRESH_DELAY_NS (20 * 1000 * 1000ull)
/* A process this young is re-read by the builder at each code mapping it makes. */
#define NEW_PROCESS_NS (2 * 1000 * 1000 * 1000ull)
/* Processes whose exit notification was lost are looked for this often. */
#define SWEEP_NS (5 * 1000 * 1000 * 1000ull)
/*
 * A table no process maps any more stays loaded this long (and within IDLE_MAX_ROWS in all), so
 * that a program run again and again (the compiler of a build) is not rebuilt every time. Its
 * rows are in the chunks (BPF memory, not this process's); room for a new table comes first.
 */
#define IDLE_NS (30 * 1000 * 1000 * 1000ull)
#define IDLE_MAX_ROWS ((32u << 20) / sizeof(struct unwind_row))

/* What identifies a file: the same key means the same bytes, hence the same table. */
struct file_key {
	uint64_t dev, ino, size, mtime_ns;
};

struct exec_seg {
	uint64_t offset, vaddr, filesz; /* PT_LOAD p_offset, p_vaddr, p_filesz */
};

struct utable {
	struct file_key key; /* hash key */
	uint32_t id;	     /* table id in BPF; UNWIND_TABLE_NONE: no rows loaded */
	uint32_t first;	     /* global row index of the first row */
	uint32_t count;	     /* rows */
	uint32_t refs;	     /* processes whose mapping list uses it */
	int err;	     /* why there are no rows: 0 (none needed), -ENODATA, -ENOSPC, ... */
	uint64_t full_gen;   /* -ENOSPC: u->free_gen when refused (retried after a free) */
	uint64_t base;	     /* cfi_table__base() */
	struct exec_seg *segs;
	size_t nsegs;
	uint64_t idle_since;		      /* refs == 0 with rows: when the last user went */
	struct utable *idle_prev, *idle_next; /* idle list, oldest first */
	int idle;
	int jit;		 /* a process's JIT CFI (key: JIT_KEY_DEV, pid, start, sequence) */
	uint64_t jit_lo, jit_hi; /* jit: the span of the code it describes */
	UT_hash_handle hh;
};

/* Device number of the synthetic files JIT CFI tables are keyed as (no real device has it). */
#define JIT_KEY_DEV (UINT64_MAX - 1)

struct uproc {
	uint32_t pid;		/* hash key */
	uint64_t start_boot_ns; /* of its last update (0: unknown) */
	int from_table;		/* the process table read its maps (it was sampled) */
	struct utable **tables; /* distinct tables referenced, one reference each */
	size_t ntables;
	struct utable *jit; /* its JIT CFI table (also in tables), NULL: none */
	UT_hash_handle hh;
};

/* A process's JIT CFI waiting for its next update on the builder (unwinder__jit_cfi_hook()). */
struct jit_pending {
	uint32_t pid; /* hash key */
	uint64_t start_boot_ns;
	struct jitproc_cfi *cfi;
	UT_hash_handle hh;
};

struct extent {
	uint32_t off, len; /* rows [off, off + len) of a chunk */
};

struct chunk {
	int fd;		    /* inner map; -1: slot free */
	struct extent *ext; /* allocated ranges, sorted by off */
	size_t next, cap;
	int big; /* part of a table larger than a chunk */
};

/* A notified re-read of a process's maps, due at due_ns. */
struct pending {
	uint32_t pid; /* hash key */
	uint64_t due_ns;
	int prio; /* enum job_prio of the work it leads to */
	UT_hash_handle hh;
};

/*
 * Work for the builder thread, at most one per process (the latest request wins: the maps read
 * last are the process's current ones). Queued by priority, first in first out within one.
 */
enum job_kind {
	JOB_UPDATE,  /* install maps (from the process table: a sample or a notified re-read) */
	JOB_NEW,     /* a new process at its exec: read its maps (executable ones), load them */
	JOB_RELOAD,  /* re-read a process loaded at its exec: the process table does not know it */
	JOB_REREAD,  /* re-read a new process once ld.so mapped its libraries */
	JOB_MMAPPED, /* a process loaded at its exec mapped code: re-read it now, if unsampled */
	JOB_REMOVE,  /* the process exited: forget it, release its tables */
	JOB_PRELOAD, /* a process named on the command line, at start: read its maps, load them */
};

enum job_prio {
	PRIO_NEW,     /* a new process's own files, exits (cheap, they free rows) */
	PRIO_SAMPLED, /* a process whose samples are arriving (its first maps read) */
	PRIO_OTHER,   /* re-reads after mmap/exec notifications */
	NPRIO,
};

struct job {
	uint32_t pid; /* hash key */
	int kind, prio;
	int preload; /* queued as JOB_PRELOAD (a later request may have replaced the kind) */
	uint64_t start_boot_ns;
	uint64_t queued_ns;   /* when first queued (a replacement keeps it) */
	struct procmaps maps; /* JOB_UPDATE: a copy of the executable mappings */
	struct job *prev, *next;
	UT_hash_handle hh;
};

struct unwinder {
	struct unwinder_opts o;
	/*
	 * Two locks. qlock guards the queue side (jobs, queue, pending, pub, stop, refresh_prio),
	 * which the agent's main thread uses and which never waits for a table build; lock guards
	 * everything below it (tables, chunks, processes), held by the builder thread for one job
	 * at a time and by the synchronous calls. Order: lock, then qlock.
	 */
	pthread_mutex_t qlock, lock;
	pthread_cond_t cond; /* a job was queued, or stop */
	pthread_t thread;
	int thread_started, stop;
	struct job *jobs;	  /* by pid */
	struct job *queue[NPRIO]; /* utlist DL lists */
	struct pending *pending;
	struct pending *new_pending;	 /* re-reads of new processes, by the builder itself */
	struct jit_pending *jit_pending; /* JIT CFI for the next update of each process */
	uint64_t jit_seq;		 /* (lock) the key of the next JIT table */
	int refresh_prio;		 /* the priority of the maps hook calls o.refresh makes */
	int preloads;		   /* JOB_PRELOAD jobs not run yet (unwinder__preloads_pending()) */
	struct unwinder_stats pub; /* u->st as of the last job, for unwinder__stats() */

	struct chunk *chunks; /* o.maps.max_chunks slots */
	uint32_t *free_ids;   /* stack of free table ids */
	uint32_t nfree_ids;
	struct utable *files;
	struct uproc *procs;
	struct utable *idle_head, *idle_tail; /* loaded tables no process uses */
	uint64_t idle_rows;
	uint64_t free_gen; /* bumped when rows are freed */
	uint64_t last_sweep_ns;
	struct unwind_proc *val; /* scratch BPF value */
	int vdso_fd;		 /* copy of the vDSO, -1 if none */
	int vdso_tried;
	struct unwinder_stats st;
};

/* --- chunks ---------------------------------------------------------------------------------- */

static int chunk_create(struct unwinder *u, uint32_t slot)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct chunk *c = &u->chunks[slot];
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sp_unw_chunk", sizeof(uint32_t),
			    UNWIND_CHUNK_BYTES, 1, &mo);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(u->o.maps.chunks_fd, &slot, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	c->next = 0;
	c->big = 0;
	u->st.chunks++;
	u->st.chunk_bytes += UNWIND_CHUNK_BYTES;
	return 0;
}

static void chunk_release(struct unwinder *u, uint32_t slot)
{
	struct chunk *c = &u->chunks[slot];

	if (c->fd < 0)
		return;
	bpf_map_delete_elem(u->o.maps.chunks_fd, &slot);
	close(c->fd);
	free(c->ext);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	u->st.chunks--;
	u->st.chunk_bytes -= UNWIND_CHUNK_BYTES;
}

/*
 * Copies n rows to row off of chunk slot. The chunk is mapped only for the copy: a mapping of a
 * BPF array holds all its pages resident in this process (RSS) for as long as it exists.
 */
static int chunk_write(struct unwinder *u, uint32_t slot, uint32_t off,
		       const struct unwind_row *src, uint32_t n)
{
	size_t lo = (size_t)off * sizeof(*src) & ~(size_t)4095;
	size_t hi = (size_t)(off + n) * sizeof(*src);
	char *mem;

	/* Only the pages written: the kernel maps a BPF array from a page-aligned offset. */
	hi = (hi + 4095) & ~(size_t)4095;
	mem = mmap(NULL, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED, u->chunks[slot].fd, lo);
	if (mem == MAP_FAILED)
		return -errno;
	memcpy(mem + (size_t)off * sizeof(*src) - lo, src, (size_t)n * sizeof(*src));
	munmap(mem, hi - lo);
	return 0;
}

static int chunk_add_extent(struct chunk *c, size_t at, uint32_t off, uint32_t len)
{
	if (c->next == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct extent *e = realloc(c->ext, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		c->ext = e;
		c->cap = cap;
	}
	memmove(&c->ext[at + 1], &c->ext[at], (c->next - at) * sizeof(*c->ext));
	c->ext[at].off = off;
	c->ext[at].len = len;
	c->next++;
	return 0;
}

/* First fit in a chunk shared by small tables: the row offset, or -1. */
static int64_t chunk_fit(const struct chunk *c, uint32_t count, size_t *at)
{
	uint32_t prev_end = 0;

	for (size_t i = 0; i <= c->next; i++) {
		uint32_t next_off = i < c->next ? c->ext[i].off : UNWIND_CHUNK_ROWS;

		if (next_off - prev_end >= count) {
			*at = i;
			return prev_end;
		}
		if (i < c->next)
			prev_end = c->ext[i].off + c->ext[i].len;
	}
	return -1;
}

/* Reserves count rows: *first is their global index. 0, -ENOSPC (limit) or -errno. */
static int rows_alloc(struct unwinder *u, uint32_t count, uint32_t *first)
{
	uint32_t max = u->o.maps.max_chunks, need, run = 0, slot;
	int64_t off;
	size_t at;
	int err;

	if (count <= UNWIND_CHUNK_ROWS) {
		for (slot = 0; slot < max; slot++) {
			struct chunk *c = &u->chunks[slot];

			if (c->fd < 0 || c->big || (off = chunk_fit(c, count, &at)) < 0)
				continue;
			err = chunk_add_extent(c, at, off, count);
			if (err)
				return err;
			*first = slot * UNWIND_CHUNK_ROWS + off;
			return 0;
		}
		for (slot = 0; slot < max && u->chunks[slot].fd >= 0; slot++)
			;
		if (slot == max)
			return -ENOSPC;
		err = chunk_create(u, slot);
		if (err)
			return err;
		err = chunk_add_extent(&u->chunks[slot], 0, 0, count);
		if (err) {
			chunk_release(u, slot);
			return err;
		}
		*first = slot * UNWIND_CHUNK_ROWS;
		return 0;
	}
	/* A large table takes consecutive whole chunks. */
	need = (count + UNWIND_CHUNK_ROWS - 1) / UNWIND_CHUNK_ROWS;
	for (slot = 0; slot < max && run < need; slot++)
		run = u->chunks[slot].fd < 0 ? run + 1 : 0;
	if (run < need)
		return -ENOSPC;
	slot -= need;
	for (uint32_t i = 0; i < need; i++) {
		uint32_t len = count - i * UNWIND_CHUNK_ROWS;

		err = chunk_create(u, slot + i);
		if (!err)
			err = chunk_add_extent(&u->chunks[slot + i], 0, 0,
					       len > UNWIND_CHUNK_ROWS ? UNWIND_CHUNK_ROWS : len);
		if (err) {
			for (uint32_t j = 0; j <= i; j++)
				chunk_release(u, slot + j);
			return err;
		}
		u->chunks[slot + i].big = 1;
	}
	*first = slot * UNWIND_CHUNK_ROWS;
	return 0;
}

static void rows_free(struct unwinder *u, uint32_t first, uint32_t count)
{
	uint32_t slot = first / UNWIND_CHUNK_ROWS, off = first % UNWIND_CHUNK_ROWS;
	uint32_t nchunks =
	    count <= UNWIND_CHUNK_ROWS ? 1 : (count + UNWIND_CHUNK_ROWS - 1) / UNWIND_CHUNK_ROWS;

	for (uint32_t i = 0; i < nchunks; i++, off = 0) {
		struct chunk *c = &u->chunks[slot + i];

		for (size_t j = 0; j < c->next; j++) {
			if (c->ext[j].off != off)
				continue;
			memmove(&c->ext[j], &c->ext[j + 1], (c->next - j - 1) * sizeof(*c->ext));
			c->next--;
			break;
		}
		if (!c->next)
			chunk_release(u, slot + i);
	}
	u->free_gen++;
}

/* --- tables ---------------------------------------------------------------------------------- */

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
static int idle_evict_one(struct unwinder *u)
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
static struct utable *jit_table_new(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
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
static struct utable *table_get(struct unwinder *u, const struct file_key *key, int fd)
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

static void table_put(struct unwinder *u, struct utable *t)
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

/* --- processes ------------------------------------------------------------------------------- */

/* This agent's vDSO, copied into a memfd: every 64-bit process maps the same image. */
static int vdso_fd(struct unwinder *u)
{
	struct procmaps self = {0};
	int fd = -1;

	if (u->vdso_tried)
		return u->vdso_fd;
	u->vdso_tried = 1;
	if (procmaps__read(getpid(), &self))
		return -1;
	for (size_t i = 0; i < self.n; i++) {
		const struct procmap *m = &self.maps[i];
		size_t len = m->end - m->start;

		if (strcmp(m->path, "[vdso]"))
			continue;
		fd = memfd_create("spanprof-unw-vdso", MFD_CLOEXEC);
		if (fd >= 0 && write(fd, (void *)(uintptr_t)m->start, len) != (ssize_t)len) {
			close(fd);
			fd = -1;
		}
		break;
	}
	procmaps__clear(&self);
	u->vdso_fd = fd;
	return fd;
}

static int open_mapping(struct unwinder *u, uint32_t pid, const struct procmap *m, int *owned)
{
	int fd;

	*owned = 0;
	if (!strcmp(m->path, "[vdso]"))
		return vdso_fd(u);
	if (m->path[0] != '/')
		return -1;
	fd = procmaps__open_file((int)pid, m, NULL, 0);
	*owned = fd >= 0;
	return fd;
}

static int key_of(int fd, int is_vdso, struct file_key *key)
{
	struct stat st;

	memset(key, 0, sizeof(*key));
	if (fstat(fd, &st))
		return -errno;
	if (is_vdso) {
		/* One image for all: a key no file has (device and inode all ones). */
		key->dev = key->ino = UINT64_MAX;
		key->size = st.st_size;
		return 0;
	}
	key->dev = st.st_dev;
	key->ino = st.st_ino;
	key->size = st.st_size;
	key->mtime_ns = st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
	return 0;
}

/* Bias of mapping m of a file with table t (see struct unwind_mapping), or -1 if none fits. */
static int mapping_bias(const struct utable *t, const struct procmap *m, uint64_t *bias)
{
	uint64_t lo = m->offset, hi = m->offset + (m->end - m->start);

	for (size_t i = 0; i < t->nsegs; i++) {
		const struct exec_seg *s = &t->segs[i];

		if (s->offset < hi && lo < s->offset + s->filesz) {
			/* pc -> file offset pc - start + offset -> vaddr + (p_vaddr - p_offset). */
			*bias = loadbias__of(m->start, m->offset, s->vaddr, s->offset, 1) + t->base;
			return 0;
		}
	}
	return -1;
}

static int ref_table(struct utable ***list, size_t *n, struct utable *t)
{
	struct utable **l;

	for (size_t i = 0; i < *n; i++)
		if ((*list)[i] == t)
			return 0;
	l = realloc(*list, (*n + 1) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	*list = l;
	l[(*n)++] = t;
	t->refs++;
	return 0;
}

static void proc_release(struct unwinder *u, struct utable **tables, size_t n)
{
	for (size_t i = 0; i < n; i++)
		table_put(u, tables[i]);
	free(tables);
}

static void remove_locked(struct unwinder *u, uint32_t pid);

/*
 * The JIT CFI table process @pid's update uses: built from CFI handed over since its last update
 * (unwinder__jit_cfi_hook(); a reference-less new table), else the one it has. NULL: none.
 * u->lock held.
 */
static struct utable *jit_table_of(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns)
{
	struct jit_pending *jp;
	struct jitproc_cfi *cfi = NULL;
	struct utable *t = NULL;
	struct uproc *p;
	uint64_t start = 0;

	pthread_mutex_lock(&u->qlock);
	HASH_FIND(hh, u->jit_pending, &pid, sizeof(pid), jp);
	if (jp) {
		HASH_DEL(u->jit_pending, jp);
		cfi = jp->cfi;
		start = jp->start_boot_ns;
		free(jp);
	}
	pthread_mutex_unlock(&u->qlock);
	HASH_FIND(hh, u->procs, &pid, sizeof(pid), p);
	/* Start time 0: loaded before its first sample (unwinder__preload()), any process. */
	if (cfi && (!start_boot_ns || start == start_boot_ns)) {
		if (cfi->n)
			t = jit_table_new(u, pid, start, cfi);
	} else if (!cfi && p && p->jit &&
		   (!start_boot_ns || !p->start_boot_ns || p->start_boot_ns == start_boot_ns)) {
		t = p->jit;
	}
	jitproc_cfi__free(cfi);
	return t;
}

/* unwinder__update_process() with u->lock held. */
static int update_locked(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			 const struct procmaps *maps)
{
	struct unwind_proc *v = u->val;
	struct utable **tables = NULL, *jt;
	struct uproc *p;
	size_t ntables = 0;
	int err = 0;

	if (!maps || !maps->n) {
		remove_locked(u, pid);
		return 0;
	}
	jt = jit_table_of(u, pid, start_boot_ns);
	if (jt) {
		err = ref_table(&tables, &ntables, jt);
		if (err) {
			if (!jt->refs) {
				jt->refs = 1;
				table_put(u, jt);
			}
			return err;
		}
	}
	memset(v, 0, sizeof(*v));
	v->start_boot_ns = start_boot_ns;
	for (size_t i = 0; i < maps->n; i++) {
		const struct procmap *m = &maps->maps[i];
		struct unwind_mapping *um;
		struct file_key key;
		struct utable *t;
		uint64_t bias;
		int fd, owned;

		/* [vsyscall] (kernel addresses, emulated) has no CFI and is never a caller. */
		if (!(m->prot & PROT_EXEC) || m->start >= (1ull << 63))
			continue;
		if (v->n == UNWIND_MAX_MAPPINGS) {
			u->st.mappings_dropped++;
			continue;
		}
		um = &v->maps[v->n++];
		um->start = m->start;
		um->end = m->end;
		um->table = UNWIND_TABLE_NONE;
		/* JIT code: the process's JIT CFI table where it has one (its rows' gaps: frame
		 * pointers); other anonymous code has no table: frame pointers. */
		if (jt && jt->id != UNWIND_TABLE_NONE && jitproc__is_jit_mapping(m->path) &&
		    m->start < jt->jit_hi && jt->jit_lo < m->end) {
			um->table = jt->id;
			um->bias = jt->base;
			u->st.jit_mappings++;
			continue;
		}
		fd = open_mapping(u, pid, m, &owned);
		if (fd < 0) {
			if (m->path[0] == '/')
				u->st.open_failed++;
			continue;
		}
		t = NULL;
		err = key_of(fd, !owned, &key);
		if (!err) {
			t = table_get(u, &key, fd);
			err = t ? ref_table(&tables, &ntables, t) : -ENOMEM;
		}
		if (owned)
			close(fd);
		if (t && !t->refs) {
			/* Built but never referenced (ENOMEM): free it again. */
			t->refs = 1;
			table_put(u, t);
		}
		if (err == -ENOMEM)
			goto cleanup;
		if (err) {
			err = 0;
			u->st.open_failed++;
			continue;
		}
		if (t->id != UNWIND_TABLE_NONE && !mapping_bias(t, m, &bias)) {
			um->bias = bias;
			um->table = t->id;
		}
	}
	/* Marked: the exec and exit hooks forget only marked PIDs' entries. */
	err = sp_proc_entry_write(u->o.maps.proc_known, SP_PROC_KNOWN_UNWIND, u->o.maps.procs_fd,
				  pid, v);
	if (err) {
		if (err == -E2BIG || err == -ENOMEM)
			u->st.procs_full++;
		goto cleanup;
	}
	u->st.updates++;
	HASH_FIND(hh, u->procs, &pid, sizeof(pid), p);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			bpf_map_delete_elem(u->o.maps.procs_fd, &pid);
			err = -ENOMEM;
			goto cleanup;
		}
		p->pid = pid;
		HASH_ADD(hh, u->procs, pid, sizeof(p->pid), p);
		u->st.processes++;
	}
	p->start_boot_ns = start_boot_ns;
	/* The new list is live: drop the references of the old one. */
	proc_release(u, p->tables, p->ntables);
	p->tables = tables;
	p->ntables = ntables;
	p->jit = jt;
	return 0;
cleanup:
	proc_release(u, tables, ntables);
	return err;
}

int unwinder__update_process(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			     const struct procmaps *maps)
{
	int err;

	pthread_mutex_lock(&u->lock);
	err = update_locked(u, pid, start_boot_ns, maps);
	pthread_mutex_unlock(&u->lock);
	return err;
}

/* A process named on the command line, by the builder (JOB_PRELOAD). u->lock held. */
static int load_named(struct unwinder *u, uint32_t pid)
{
	struct procmaps maps = {0};
	int err = procmaps__read_filtered(pid, PROCMAPS_EXEC_ONLY, &maps);

	if (!err)
		err = update_locked(u, pid, 0, &maps);
	procmaps__clear(&maps);
	return err;
}

/*
 * (Re-)loads process (@pid, @start_boot_ns) from its maps without the process table: a new
 * process at its exec (nothing but its tables is needed before its first sample; the process
 * table reads the rest then), and its re-reads until then. A PID gone or reused meanwhile is
 * left alone. u->lock held. 0 or -errno.
 */
static int load_unsampled(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns)
{
	struct procmaps maps = {0};
	int err = procmaps__read_filtered(pid, PROCMAPS_EXEC_ONLY, &maps);

	/* Read, then checked: the maps are this process's only if it still holds the PID. */
	if (!err)
		err = proclife__check(pid, start_boot_ns);
	if (!err)
		err = update_locked(u, pid, start_boot_ns, &maps);
	procmaps__clear(&maps);
	return err;
}

static void remove_locked(struct unwinder *u, uint32_t pid)
{
	struct jit_pending *jp;
	struct uproc *p;

	bpf_map_delete_elem(u->o.maps.procs_fd, &pid);
	pthread_mutex_lock(&u->qlock);
	HASH_FIND(hh, u->jit_pending, &pid, sizeof(pid), jp);
	if (jp) {
		HASH_DEL(u->jit_pending, jp);
		jitproc_cfi__free(jp->cfi);
		free(jp);
	}
	pthread_mutex_unlock(&u->qlock);
	HASH_FIND(hh, u->procs, &pid, sizeof(pid), p);
	if (!p)
		return;
	HASH_DEL(u->procs, p);
	proc_release(u, p->tables, p->ntables);
	free(p);
	u->st.processes--;
}

void unwinder__remove_process(struct unwinder *u, uint32_t pid)
{
	pthread_mutex_lock(&u->lock);
	remove_locked(u, pid);
	pthread_mutex_unlock(&u->lock);
}

/* --- the builder's queue (u->qlock) ---------------------------------------------------------- */

static void job_free(struct job *j)
{
	procmaps__clear(&j->maps);
	free(j);
}

/*
 * Queues @kind for @pid at @prio, replacing the job queued for it (the latest request is the
 * process's current state), except that a re-read (JOB_RELOAD, JOB_REREAD, JOB_MMAPPED) never
 * replaces another job (any of them loads the process as well), nor does a JOB_UPDATE replace a
 * JOB_NEW (which reads the maps when it runs). Takes ownership of @maps' contents
 * (NULL: none). qlock held.
 */
static void queue_job(struct unwinder *u, uint32_t pid, int kind, int prio, uint64_t start_boot_ns,
		      struct procmaps *maps)
{
	struct job *j;

	HASH_FIND(hh, u->jobs, &pid, sizeof(pid), j);
	if (j && (kind == JOB_RELOAD || kind == JOB_REREAD || kind == JOB_MMAPPED)) {
		if (prio < j->prio) {
			DL_DELETE(u->queue[j->prio], j);
			j->prio = prio;
			DL_APPEND(u->queue[j->prio], j);
		}
		return;
	}
	if (j && j->kind == JOB_NEW && kind == JOB_UPDATE) {
		/*
		 * The exec's job reads the maps when it runs, so they are no older than these: it
		 * stays, and the process counts as loaded at its exec.
		 */
		if (maps)
			procmaps__clear(maps);
		if (prio < j->prio) {
			DL_DELETE(u->queue[j->prio], j);
			j->prio = prio;
			DL_APPEND(u->queue[j->prio], j);
		}
		return;
	}
	if (j) {
		DL_DELETE(u->queue[j->prio], j);
		procmaps__clear(&j->maps);
		if (j->prio < prio) /* keep the rank it had */
			prio = j->prio;
	} else {
		j = calloc(1, sizeof(*j));
		if (!j) {
			u->pub.jobs_dropped++;
			if (maps)
				procmaps__clear(maps);
			return; /* its first sample (or the fallback re-read) loads it */
		}
		j->pid = pid;
		j->queued_ns = util__mono_ns();
		HASH_ADD(hh, u->jobs, pid, sizeof(j->pid), j);
		u->pub.queued++;
	}
	j->kind = kind;
	j->prio = prio;
	j->start_boot_ns = start_boot_ns;
	if (kind == JOB_PRELOAD && !j->preload) {
		j->preload = 1;
		u->preloads++;
	}
	if (maps) {
		j->maps = *maps;
		memset(maps, 0, sizeof(*maps));
	}
	DL_APPEND(u->queue[prio], j);
	if (u->pub.queued > u->pub.queue_max)
		u->pub.queue_max = u->pub.queued;
	pthread_cond_signal(&u->cond);
}

/* Asks for a re-read of @pid's maps REFRESH_DELAY_NS from now (one per pid at a time). qlock
 * held. */
static void schedule_refresh(struct unwinder *u, uint32_t pid, int prio)
{
	struct pending *pe;

	HASH_FIND(hh, u->pending, &pid, sizeof(pid), pe);
	if (pe) {
		if (prio < pe->prio)
			pe->prio = prio;
		return; /* already due soon: one re-read covers both */
	}
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return; /* the unknown-PC re-read remains */
	pe->pid = pid;
	pe->prio = prio;
	pe->due_ns = util__mono_ns() + REFRESH_DELAY_NS;
	HASH_ADD(hh, u->pending, pid, sizeof(pe->pid), pe);
}

/* Asks the builder to re-read new process @pid REFRESH_DELAY_NS from now. qlock held. */
static void schedule_new_reread(struct unwinder *u, uint32_t pid)
{
	struct pending *pe;

	HASH_FIND(hh, u->new_pending, &pid, sizeof(pid), pe);
	if (pe)
		return;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return; /* the mmap notifications remain */
	pe->pid = pid;
	pe->prio = PRIO_NEW;
	pe->due_ns = util__mono_ns() + REFRESH_DELAY_NS;
	HASH_ADD(hh, u->new_pending, pid, sizeof(pe->pid), pe);
	pthread_cond_signal(&u->cond);
}

/* The executable mappings of @maps (those update_locked() reads), copied into @out. */
static int copy_exec_maps(const struct procmaps *maps, struct procmaps *out)
{
	memset(out, 0, sizeof(*out));
	if (!maps || !maps->n)
		return 0;
	out->maps = calloc(maps->n, sizeof(*out->maps));
	if (!out->maps)
		return -ENOMEM;
	for (size_t i = 0; i < maps->n; i++) {
		const struct procmap *m = &maps->maps[i];
		struct procmap *c = &out->maps[out->n];

		if (!(m->prot & PROT_EXEC))
			continue;
		*c = *m;
		c->path = strdup(m->path);
		if (!c->path) {
			procmaps__clear(out);
			return -ENOMEM;
		}
		out->n++;
	}
	return 0;
}

void unwinder__maps_hook(void *ctx, uint32_t pid, uint64_t start_boot_ns,
			 const struct procmaps *maps)
{
	struct unwinder *u = ctx;
	struct procmaps copy;

	if (copy_exec_maps(maps, &copy)) {
		pthread_mutex_lock(&u->qlock);
		u->pub.jobs_dropped++;
		pthread_mutex_unlock(&u->qlock);
		return;
	}
	pthread_mutex_lock(&u->qlock);
	/* No mapping at all (an unreadable maps file: the process is gone) removes it. */
	queue_job(u, pid, copy.n ? JOB_UPDATE : JOB_REMOVE, u->refresh_prio, start_boot_ns, &copy);
	pthread_mutex_unlock(&u->qlock);
}

int unwinder__preload(struct unwinder *u, uint32_t pid)
{
	pthread_mutex_lock(&u->qlock);
	queue_job(u, pid, JOB_PRELOAD, PRIO_NEW, 0, NULL);
	pthread_mutex_unlock(&u->qlock);
	return 0;
}

int unwinder__preloads_pending(const struct unwinder *u_)
{
	struct unwinder *u = (struct unwinder *)u_; /* the lock only */
	int n;

	pthread_mutex_lock(&u->qlock);
	n = u->preloads;
	pthread_mutex_unlock(&u->qlock);
	return n;
}

void unwinder__jit_cfi_hook(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			    const struct procmaps *maps, struct jitproc_cfi *cfi)
{
	struct jit_pending *jp;

	pthread_mutex_lock(&u->qlock);
	HASH_FIND(hh, u->jit_pending, &pid, sizeof(pid), jp);
	if (!jp) {
		jp = calloc(1, sizeof(*jp));
		if (!jp) {
			pthread_mutex_unlock(&u->qlock);
			jitproc_cfi__free(cfi);
			return; /* the next change tries again */
		}
		jp->pid = pid;
		HASH_ADD(hh, u->jit_pending, pid, sizeof(jp->pid), jp);
	}
	jitproc_cfi__free(jp->cfi); /* the latest wins */
	jp->cfi = cfi;
	jp->start_boot_ns = start_boot_ns;
	pthread_mutex_unlock(&u->qlock);
	/* The update that uses it: with the maps the process table holds. */
	unwinder__maps_hook(u, pid, start_boot_ns, maps);
}

/* --- notifications --------------------------------------------------------------------------- */

void unwinder__note_event(struct unwinder *u, const struct unwind_event *e)
{
	struct pending *pe;
	uint32_t pid = e->pid;

	pthread_mutex_lock(&u->qlock);
	u->pub.events++;
	if (e->kind == UNWIND_EVENT_NEW) {
		/* At once: ld.so maps the libraries next, and the entry has them notified. */
		if (e->addr)
			queue_job(u, pid, JOB_NEW, PRIO_NEW, e->addr, NULL);
	} else if (e->kind == UNWIND_EVENT_EXIT) {
		HASH_FIND(hh, u->pending, &pid, sizeof(pid), pe);
		if (pe) {
			HASH_DEL(u->pending, pe);
			free(pe);
		}
		HASH_FIND(hh, u->new_pending, &pid, sizeof(pid), pe);
		if (pe) {
			HASH_DEL(u->new_pending, pe);
			free(pe);
		}
		queue_job(u, pid, JOB_REMOVE, PRIO_NEW, 0, NULL);
	} else {
		/*
		 * A new process (not sampled yet, or started less than NEW_PROCESS_NS ago: ld.so
		 * mapping its libraries) is re-read by the builder at once, not 20 ms later through
		 * the main thread: its first complete stacks wait for libc's table. The
		 * notification comes at the mmap's entry; the builder's re-read 20 ms after the
		 * exec, and this one, cover a read that came first.
		 */
		if (e->kind == UNWIND_EVENT_MMAP)
			queue_job(u, pid, JOB_MMAPPED, PRIO_NEW, 0, NULL);
		schedule_refresh(u, pid, PRIO_OTHER);
	}
	pthread_mutex_unlock(&u->qlock);
}

int unwinder__next_due_ms(const struct unwinder *u_)
{
	struct unwinder *u = (struct unwinder *)u_; /* the lock only */
	uint64_t now = util__mono_ns(), best = UINT64_MAX;
	const struct pending *pe, *tmp;

	pthread_mutex_lock(&u->qlock);
	HASH_ITER (hh, u->pending, pe, tmp)
		if (pe->due_ns < best)
			best = pe->due_ns;
	pthread_mutex_unlock(&u->qlock);
	if (best == UINT64_MAX)
		return -1;
	return best <= now ? 0 : (int)((best - now + 999999) / 1000000);
}

void unwinder__tick(struct unwinder *u)
{
	uint64_t now = util__mono_ns();
	struct pending *due = NULL, *pe, *tmp;

	pthread_mutex_lock(&u->qlock);
	HASH_ITER (hh, u->pending, pe, tmp) {
		if (pe->due_ns > now)
			continue;
		HASH_DEL(u->pending, pe);
		pe->hh.next = due; /* a plain list from here on */
		due = pe;
	}
	pthread_mutex_unlock(&u->qlock);
	for (pe = due; pe; pe = tmp) {
		int err = -ESRCH;

		tmp = pe->hh.next;
		pthread_mutex_lock(&u->qlock);
		u->pub.refreshes++;
		u->refresh_prio = pe->prio;
		pthread_mutex_unlock(&u->qlock);
		/* The process table re-reads the maps; its maps hook queues the update. */
		if (u->o.refresh)
			err = u->o.refresh(u->o.ctx, pe->pid);
		pthread_mutex_lock(&u->qlock);
		u->refresh_prio = PRIO_SAMPLED;
		/* Loaded at its exec, not sampled yet: the process table has none. */
		if (err == -ESRCH)
			queue_job(u, pe->pid, JOB_RELOAD, pe->prio, 0, NULL);
		pthread_mutex_unlock(&u->qlock);
		free(pe);
	}
}

/* --- the builder thread ---------------------------------------------------------------------- */

/* Whether process @p started less than NEW_PROCESS_NS ago (ld.so may still be mapping). */
static int young(const struct uproc *p)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec - p->start_boot_ns < NEW_PROCESS_NS;
}

/* Runs job @j (u->lock held). */
static void run_job(struct unwinder *u, struct job *j)
{
	struct uproc *p;
	int known;

	switch (j->kind) {
	case JOB_UPDATE:
		HASH_FIND(hh, u->procs, &j->pid, sizeof(j->pid), p);
		known = p != NULL;
		update_locked(u, j->pid, j->start_boot_ns, &j->maps);
		HASH_FIND(hh, u->procs, &j->pid, sizeof(j->pid), p);
		if (p)
			p->from_table = 1;
		/*
		 * BPF notifies mmaps only of processes that have an entry: a library mapped between
		 * this maps read and the entry's first write (ld.so right after exec, while the
		 * tables were built) would stay unknown. One re-read after the first write closes
		 * that window.
		 */
		if (!known && p) {
			pthread_mutex_lock(&u->qlock);
			schedule_refresh(u, j->pid, j->prio);
			pthread_mutex_unlock(&u->qlock);
		}
		break;
	case JOB_NEW:
		if (load_unsampled(u, j->pid, j->start_boot_ns))
			break;
		u->st.new_execs++;
		if (getenv("SPANPROF_DEBUG")) {
			struct timespec ts;

			clock_gettime(CLOCK_BOOTTIME, &ts);
			fprintf(stderr,
				"spanprof: debug: PID %u loaded at its exec, %.1f ms after it "
				"started\n",
				j->pid, (ts.tv_sec * 1e9 + ts.tv_nsec - j->start_boot_ns) / 1e6);
		}
		/*
		 * ld.so maps the libraries next: one re-read after, as for a first entry, by the
		 * builder itself (the main thread may be busy: naming frames, exporting).
		 */
		pthread_mutex_lock(&u->qlock);
		schedule_new_reread(u, j->pid);
		pthread_mutex_unlock(&u->qlock);
		break;
	case JOB_RELOAD:
		HASH_FIND(hh, u->procs, &j->pid, sizeof(j->pid), p);
		if (p && p->start_boot_ns)
			load_unsampled(u, p->pid, p->start_boot_ns);
		break;
	case JOB_MMAPPED:
		/* Older sampled processes (a JIT mapping code) wait for the notified re-read. */
		HASH_FIND(hh, u->procs, &j->pid, sizeof(j->pid), p);
		if (p && p->start_boot_ns && (!p->from_table || young(p)))
			load_unsampled(u, p->pid, p->start_boot_ns);
		break;
	case JOB_REREAD:
		HASH_FIND(hh, u->procs, &j->pid, sizeof(j->pid), p);
		if (p && p->start_boot_ns)
			load_unsampled(u, p->pid, p->start_boot_ns);
		if (p && p->from_table) {
			/* Sampled meanwhile: the process table's re-read, on the main thread. */
			pthread_mutex_lock(&u->qlock);
			schedule_refresh(u, p->pid, j->prio);
			pthread_mutex_unlock(&u->qlock);
		}
		break;
	case JOB_REMOVE:
		remove_locked(u, j->pid);
		break;
	case JOB_PRELOAD:
		load_named(u, j->pid);
		break;
	}
}

/* Idle tables past IDLE_NS, and every SWEEP_NS processes whose exit notification was lost
 * (u->lock held). */
static void housekeeping(struct unwinder *u)
{
	uint64_t now = util__mono_ns();
	struct uproc *p, *ptmp;
	char path[32];

	while (u->idle_head && now - u->idle_head->idle_since >= IDLE_NS)
		idle_evict_one(u);
	if (now - u->last_sweep_ns < SWEEP_NS)
		return;
	u->last_sweep_ns = now;
	HASH_ITER (hh, u->procs, p, ptmp) {
		snprintf(path, sizeof(path), "/proc/%u", p->pid);
		if (access(path, F_OK) && errno == ENOENT)
			remove_locked(u, p->pid);
	}
}

/* Publishes u->st for unwinder__stats(), keeping the queue's own counters (lock and qlock
 * held). */
static void publish(struct unwinder *u)
{
	struct unwinder_stats q = u->pub;

	u->pub = u->st;
	u->pub.events = q.events;
	u->pub.refreshes = q.refreshes;
	u->pub.queued = q.queued;
	u->pub.queue_max = q.queue_max;
	u->pub.jobs_dropped = q.jobs_dropped;
	u->pub.jobs = q.jobs;
	u->pub.queue_wait_ns = q.queue_wait_ns;
}

/*
 * The builder: takes the most urgent job (a new process's own files first, then processes
 * whose samples are arriving, then notified re-reads), builds what it needs with u->lock held,
 * and does the housekeeping at least once a second. The agent's main thread only queues.
 */
static void *builder(void *arg)
{
	struct unwinder *u = arg;

	pthread_mutex_lock(&u->qlock);
	while (!u->stop) {
		uint64_t now = util__mono_ns(), wait_ns = 1000000000ull;
		struct pending *pe, *ptmp;
		struct job *j = NULL;
		struct timespec ts;

		/* New processes' re-reads that are due become jobs of their own rank. */
		HASH_ITER (hh, u->new_pending, pe, ptmp) {
			if (pe->due_ns > now) {
				if (pe->due_ns - now < wait_ns)
					wait_ns = pe->due_ns - now;
				continue;
			}
			HASH_DEL(u->new_pending, pe);
			queue_job(u, pe->pid, JOB_REREAD, PRIO_NEW, 0, NULL);
			free(pe);
		}
		for (int pr = 0; pr < NPRIO && !j; pr++)
			j = u->queue[pr];
		if (!j) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += wait_ns % 1000000000ull;
			ts.tv_sec += wait_ns / 1000000000ull + ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&u->cond, &u->qlock, &ts);
			if (u->stop || u->queue[0] || u->queue[1] || u->queue[2])
				continue;
		} else {
			DL_DELETE(u->queue[j->prio], j);
			HASH_DEL(u->jobs, j);
			u->pub.queued--;
			u->pub.jobs++;
			u->pub.queue_wait_ns += util__mono_ns() - j->queued_ns;
		}
		pthread_mutex_unlock(&u->qlock);
		pthread_mutex_lock(&u->lock);
		if (j)
			run_job(u, j);
		housekeeping(u);
		pthread_mutex_lock(&u->qlock);
		publish(u); /* u->st as the lock leaves it */
		pthread_mutex_unlock(&u->qlock);
		pthread_mutex_unlock(&u->lock);
		pthread_mutex_lock(&u->qlock);
		if (j && j->preload) /* or the request for the process that replaced it */
			u->preloads--;
		if (j)
			job_free(j);
	}
	pthread_mutex_unlock(&u->qlock);
	return NULL;
}

/* --- lifecycle ------------------------------------------------------------------------------- */

struct unwinder *unwinder__new(const struct unwinder_opts *opts)
{
	struct unwinder *u;
	int err;

	if (!opts || opts->maps.chunks_fd < 0 || !opts->maps.max_chunks || !opts->maps.max_tables) {
		errno = EINVAL;
		return NULL;
	}
	elf_version(EV_CURRENT);
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->o = *opts;
	u->vdso_fd = -1;
	u->refresh_prio = PRIO_SAMPLED;
	u->last_sweep_ns = util__mono_ns();
	pthread_mutex_init(&u->qlock, NULL);
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->chunks = calloc(opts->maps.max_chunks, sizeof(*u->chunks));
	u->free_ids = calloc(opts->maps.max_tables, sizeof(*u->free_ids));
	u->val = calloc(1, sizeof(*u->val));
	if (!u->chunks || !u->free_ids || !u->val) {
		unwinder__free(u);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < opts->maps.max_chunks; i++)
		u->chunks[i].fd = -1;
	/* Lowest ids first. */
	for (uint32_t i = 0; i < opts->maps.max_tables; i++)
		u->free_ids[u->nfree_ids++] = opts->maps.max_tables - 1 - i;
	u->st.max_bytes = (uint64_t)opts->maps.max_chunks * UNWIND_CHUNK_BYTES;
	u->pub = u->st;
	err = pthread_create(&u->thread, NULL, builder, u);
	if (err) {
		unwinder__free(u);
		errno = err;
		return NULL;
	}
	u->thread_started = 1;
	return u;
}

void unwinder__free(struct unwinder *u)
{
	struct jit_pending *jp, *jptmp;
	struct pending *pe, *ptmp;
	struct uproc *p, *tmp;
	struct job *j, *jtmp;

	if (!u)
		return;
	if (u->thread_started) {
		/* A build under way finishes first (at most the time of one table). */
		pthread_mutex_lock(&u->qlock);
		u->stop = 1;
		pthread_cond_signal(&u->cond);
		pthread_mutex_unlock(&u->qlock);
		pthread_join(u->thread, NULL);
	}
	HASH_ITER (hh, u->jobs, j, jtmp) {
		HASH_DEL(u->jobs, j);
		job_free(j);
	}
	HASH_ITER (hh, u->procs, p, tmp)
		remove_locked(u, p->pid);
	while (!idle_evict_one(u))
		;
	HASH_ITER (hh, u->pending, pe, ptmp) {
		HASH_DEL(u->pending, pe);
		free(pe);
	}
	HASH_ITER (hh, u->new_pending, pe, ptmp) {
		HASH_DEL(u->new_pending, pe);
		free(pe);
	}
	HASH_ITER (hh, u->jit_pending, jp, jptmp) {
		HASH_DEL(u->jit_pending, jp);
		jitproc_cfi__free(jp->cfi);
		free(jp);
	}
	for (uint32_t i = 0; u->chunks && i < u->o.maps.max_chunks; i++)
		chunk_release(u, i);
	if (u->vdso_fd >= 0)
		close(u->vdso_fd);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	pthread_mutex_destroy(&u->qlock);
	free(u->chunks);
	free(u->free_ids);
	free(u->val);
	free(u);
}

void unwinder__stats(const struct unwinder *u_, struct unwinder_stats *out)
{
	struct unwinder *u = (struct unwinder *)u_; /* the lock only */

	pthread_mutex_lock(&u->qlock);
	*out = u->pub;
	pthread_mutex_unlock(&u->qlock);
	out->proc_bytes = out->processes * sizeof(struct unwind_proc);
}
