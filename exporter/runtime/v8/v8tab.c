// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <uthash.h>

#include "process/proclife.h"
#include "process/procmaps.h"
#include "runtime/v8/v8tab.h"
#include "sampler.h"
#include "util/util.h"

/* Files remembered (identity -> layout or not V8); past this the cache starts over. */
#define MAX_FILES 16384
/* Processes are checked for exit at most this often. */
#define SWEEP_NS (5 * 1000000000ull)

struct v8file {
	struct {
		uint64_t ino;
		uint32_t dev_major, dev_minor;
	} key;
	int err; /* v8meta__read()'s answer: 0 V8 (meta valid), else not usable */
	struct v8meta meta;
	UT_hash_handle hh;
};

struct v8entry {
	uint32_t pid;
	uint64_t start_boot_ns; /* 0: not known yet */
	uint64_t ino;		/* the V8 file it maps */
	uint32_t dev_major, dev_minor;
	struct v8proc *p;
	struct v8_desc desc; /* as written to v8_procs */
	uint64_t gone_ns;    /* when found gone (0: alive): freed a while later */
	int described;
	UT_hash_handle hh;
};

struct v8tab {
	int procs_fd;
	__u64 *proc_known;
	struct v8entry *procs;
	struct v8file *files;
	size_t nfiles;
	uint64_t last_sweep_ns;
	struct v8tab_stats st;
	struct v8proc_stats freed; /* naming counters of the entries freed */
};

struct v8tab *v8tab__new(int procs_fd, __u64 *proc_known)
{
	struct v8tab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->procs_fd = procs_fd;
	t->proc_known = proc_known;
	t->last_sweep_ns = util__mono_ns();
	elf_version(EV_CURRENT);
	return t;
}

static void add_naming(struct v8proc_stats *to, const struct v8proc *p)
{
	struct v8proc_stats s;

	v8proc__stats(p, &s);
	for (int i = 0; i < V8PROC_ERR_COUNT; i++)
		to->errors[i] += s.errors[i];
	to->hits += s.hits;
	to->misses += s.misses;
}

static void entry_drop(struct v8tab *t, struct v8entry *e)
{
	if (e->described && t->procs_fd >= 0)
		bpf_map_delete_elem(t->procs_fd, &e->pid);
	if (e->p) {
		add_naming(&t->freed, e->p);
		v8proc__free(e->p);
		t->st.live--;
	}
	HASH_DEL(t->procs, e);
	free(e);
}

void v8tab__free(struct v8tab *t)
{
	struct v8entry *e, *etmp;
	struct v8file *f, *ftmp;

	if (!t)
		return;
	HASH_ITER (hh, t->procs, e, etmp)
		entry_drop(t, e);
	HASH_ITER (hh, t->files, f, ftmp) {
		HASH_DEL(t->files, f);
		free(f);
	}
	free(t);
}

void v8tab__desc(const struct v8meta *m, struct v8_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->fp_context = m->fp_context;
	d->fp_function = m->fp_function;
	d->fp_bytecode_array = m->fp_bytecode_array;
	d->fp_bytecode_offset = m->fp_bytecode_offset;
	d->heap_object_map = m->heap_object_map;
	d->map_instance_type = m->map_instance_type;
	d->jsfunction_shared = m->jsfunction_shared;
	d->sfi_name_or_scope_info = m->sfi_name_or_scope_info;
	d->type_jsfunction_first = m->type_jsfunction_first;
	d->type_jsfunction_last = m->type_jsfunction_last;
	d->type_bytecode_array = m->type_bytecode_array;
	d->type_sfi = m->type_sfi;
}

/* A file that may embed V8: the executable (the first mapping), or a libnode. */
static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];
	const char *base = strrchr(m->path, '/');

	if (!m->inode || m->path[0] != '/')
		return false;
	base = base ? base + 1 : m->path;
	return i == 0 || !strncmp(base, "libnode.so", 10);
}

/* The verdict on the file of mapping @m: cached, else read (NULL: could not be opened). */
static struct v8file *file_of(struct v8tab *t, uint32_t pid, const struct procmap *m)
{
	struct v8file *f, *tmp, key = {0};
	Elf *elf;
	int fd;

	key.key.ino = m->inode;
	key.key.dev_major = m->dev_major;
	key.key.dev_minor = m->dev_minor;
	HASH_FIND(hh, t->files, &key.key, sizeof(key.key), f);
	if (f)
		return f;
	fd = procmaps__open_file((int)pid, m, NULL, 0);
	if (fd < 0)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return NULL;
	}
	f->key = key.key;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	f->err = elf ? v8meta__read(elf, &f->meta) : -EINVAL;
	if (elf)
		elf_end(elf);
	close(fd);
	if (f->err == -ENOTSUP)
		t->st.unsupported++;
	else if (f->err)
		t->st.files_inspected++;
	if (t->nfiles >= MAX_FILES) {
		struct v8file *g;

		HASH_ITER (hh, t->files, g, tmp) {
			HASH_DEL(t->files, g);
			free(g);
		}
		t->nfiles = 0;
	}
	HASH_ADD(hh, t->files, key, sizeof(f->key), f);
	t->nfiles++;
	return f;
}

static int describe(struct v8tab *t, struct v8entry *e)
{
	int err = 0;

	e->desc.start_boot_ns = e->start_boot_ns;
	/* Marked: the exec and exit hooks forget only marked PIDs' entries. */
	if (t->procs_fd >= 0)
		err = sp_proc_entry_write(t->proc_known, SP_PROC_KNOWN_V8, t->procs_fd, e->pid,
					  &e->desc);
	if (err)
		return err;
	e->described = 1;
	return 0;
}

void v8tab__maps_hook(struct v8tab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps)
{
	struct procmaps own = {0};
	const struct procmap *found = NULL;
	struct v8file *f = NULL;
	struct v8entry *e;

	if (!maps) {
		if (procmaps__read_filtered((int)pid, PROCMAPS_EXEC_ONLY, &own))
			return;
		maps = &own;
	}
	if (!maps->n)
		goto out;
	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (e && start_boot_ns && e->start_boot_ns && e->start_boot_ns != start_boot_ns) {
		entry_drop(t, e); /* PID reused */
		e = NULL;
	}
	if (e && procmaps__find_file(maps, e->ino, e->dev_major, e->dev_minor)) {
		if (!e->start_boot_ns && start_boot_ns) {
			/* Pin the descriptor to this process now that its start time is known. */
			e->start_boot_ns = start_boot_ns;
			if (e->described)
				describe(t, e);
		}
		goto out;
	}
	if (e) {
		entry_drop(t, e);
		e = NULL;
	}
	for (size_t i = 0; i < maps->n && !found; i++) {
		if (!candidate(maps, i))
			continue;
		f = file_of(t, pid, &maps->maps[i]);
		if (f && !f->err)
			found = &maps->maps[i];
	}
	if (!found)
		goto out;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto out;
	e->pid = pid;
	e->start_boot_ns = start_boot_ns;
	e->ino = found->inode;
	e->dev_major = found->dev_major;
	e->dev_minor = found->dev_minor;
	HASH_ADD(hh, t->procs, pid, sizeof(e->pid), e);
	v8tab__desc(&f->meta, &e->desc);
	e->p = v8proc__new((pid_t)pid, &f->meta);
	/* Every read above was of this process only if it still runs under its PID now. */
	if (!e->p || (start_boot_ns && proclife__check(pid, start_boot_ns)) || describe(t, e)) {
		t->st.failed++;
		if (e->p) {
			v8proc__free(e->p);
			e->p = NULL;
		}
		goto out;
	}
	t->st.processes++;
	t->st.live++;
out:
	procmaps__clear(&own);
}

void v8tab__exec(struct v8tab *t, uint32_t pid)
{
	struct v8entry *e;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (e)
		entry_drop(t, e);
}

struct v8proc *v8tab__find(struct v8tab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct v8entry *e;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (!e || (e->start_boot_ns && start_boot_ns && e->start_boot_ns != start_boot_ns))
		return NULL;
	return e->p;
}

void v8tab__tick(struct v8tab *t)
{
	uint64_t now = util__mono_ns();
	struct v8entry *e, *tmp;
	int err;

	if (now - t->last_sweep_ns < SWEEP_NS)
		return;
	t->last_sweep_ns = now;
	HASH_ITER (hh, t->procs, e, tmp) {
		if (e->gone_ns) {
			/* The samples taken before the exit are named by now. */
			entry_drop(t, e);
			continue;
		}
		err = proclife__check(e->pid, e->start_boot_ns);
		if (err == -ESRCH || err == -ESTALE) {
			if (e->described && t->procs_fd >= 0)
				bpf_map_delete_elem(t->procs_fd, &e->pid);
			e->described = 0;
			e->gone_ns = now;
		}
	}
}

void v8tab__stats(const struct v8tab *t, struct v8tab_stats *out)
{
	const struct v8entry *e, *tmp;

	*out = t->st;
	out->naming = t->freed;
	HASH_ITER (hh, t->procs, e, tmp)
		if (e->p)
			add_naming(&out->naming, e->p);
}
