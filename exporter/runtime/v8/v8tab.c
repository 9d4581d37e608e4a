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
#include "runtime/runtime.h"
#include "runtime/v8/v8tab.h"
#include "sampler.h"
#include "util/util.h"

/* Files remembered (identity -> layout or not V8); past this the memory starts over. */
#define MAX_FILES 16384

/* What the table keeps per file (runtime_ops.file_size): the layout of a V8 file. */
struct v8file {
	struct v8meta meta;
};

/* A node process's instance (runtime_proc.inst). */
struct v8inst {
	struct v8proc *p;
	struct v8_desc desc; /* as written to v8_procs (start_boot_ns: the entry's) */
};

struct v8tab {
	struct runtime_table *procs;
	struct v8tab_stats st;	   /* processes, live and files_inspected: the table's */
	struct v8proc_stats freed; /* naming counters of the entries freed */
};

static void add_naming(struct v8proc_stats *to, const struct v8proc *p)
{
	struct v8proc_stats s;

	v8proc__stats(p, &s);
	for (int i = 0; i < V8PROC_ERR_COUNT; i++)
		to->errors[i] += s.errors[i];
	to->hits += s.hits;
	to->misses += s.misses;
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

/* runtime_ops.candidate: the executable (the first mapping), or a libnode. */
static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];
	const char *base = strrchr(m->path, '/');

	if (!m->inode || m->path[0] != '/')
		return false;
	base = base ? base + 1 : m->path;
	return i == 0 || !strncmp(base, "libnode.so", 10);
}

/* runtime_ops.file_read: V8's postmortem metadata of the file of mapping @m (v8meta__read()). */
static enum runtime_verdict file_read(void *rt, uint32_t pid, const struct procmap *m, void *data)
{
	struct v8tab *t = rt;
	struct v8file *f = data;
	Elf *elf;
	int fd, err;

	fd = procmaps__open_file((int)pid, m, NULL, 0);
	if (fd < 0)
		return RUNTIME_FILE_UNKNOWN;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf ? v8meta__read(elf, &f->meta) : -EINVAL;
	if (elf)
		elf_end(elf);
	close(fd);
	if (err == -ENOTSUP) {
		t->st.unsupported++;
		return RUNTIME_FILE_UNUSABLE;
	}
	return err ? RUNTIME_FILE_OTHER : RUNTIME_FILE_RUNTIME;
}

/* runtime_ops.proc_new: a reader of @e's process with the layout of its V8 file. */
static void *proc_new(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
		      const struct procmap *m, void *data, int *err)
{
	const struct v8file *f = data;
	struct v8inst *vi;

	(void)rt;
	(void)maps;
	(void)m;
	if (!f) {
		*err = -EINVAL;
		return NULL;
	}
	vi = calloc(1, sizeof(*vi));
	if (!vi) {
		*err = -ENOMEM;
		return NULL;
	}
	v8tab__desc(&f->meta, &vi->desc);
	vi->p = v8proc__new((pid_t)e->pid, &f->meta);
	if (vi->p)
		return vi;
	*err = errno ? -errno : -EINVAL;
	free(vi);
	return NULL;
}

static void proc_free(void *rt, void *inst, bool keep_counters)
{
	struct v8tab *t = rt;
	struct v8inst *vi = inst;

	if (keep_counters)
		add_naming(&t->freed, vi->p);
	v8proc__free(vi->p);
	free(vi);
}

/* runtime_ops.desc: struct v8_desc (bpf/v8.h), pinned to the process's start time. */
static int desc(void *rt, const struct runtime_proc *e, void *out)
{
	const struct v8inst *vi = e->inst;
	struct v8_desc *d = out;

	(void)rt;
	*d = vi->desc;
	d->start_boot_ns = e->start_boot_ns;
	return 0;
}

static void proc_failed(void *rt, struct runtime_proc *e, int err)
{
	struct v8tab *t = rt;

	(void)e;
	(void)err;
	t->st.failed++;
}

static const struct runtime_ops v8_ops = {
    .name = "v8",
    .max_files = MAX_FILES,
    .file_size = sizeof(struct v8file),
    .desc_size = sizeof(struct v8_desc),
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .desc = desc,
    .proc_failed = proc_failed,
};

struct v8tab *v8tab__new(int procs_fd, __u64 *proc_known)
{
	struct v8tab *t = calloc(1, sizeof(*t));
	struct runtime_bpf bpf = {
	    .procs_fd = procs_fd, .proc_known = proc_known, .map_bit = SP_PROC_KNOWN_V8};

	if (!t)
		return NULL;
	t->procs = runtime_table__new(&v8_ops, t, &bpf);
	if (!t->procs) {
		free(t);
		return NULL;
	}
	return t;
}

void v8tab__free(struct v8tab *t)
{
	if (!t)
		return;
	runtime_table__free(t->procs);
	free(t);
}

void v8tab__maps_hook(struct v8tab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps)
{
	runtime_table__maps_hook(t->procs, pid, start_boot_ns, maps);
}

struct v8proc *v8tab__find(struct v8tab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct v8inst *vi = runtime_table__find(t->procs, pid, start_boot_ns);

	return vi ? vi->p : NULL;
}

struct runtime_table *v8tab__table(struct v8tab *t)
{
	return t->procs;
}

static void add_inst_naming(void *ctx, void *inst)
{
	const struct v8inst *vi = inst;

	add_naming(ctx, vi->p);
}

void v8tab__stats(const struct v8tab *t, struct v8tab_stats *out)
{
	struct runtime_stats rs;

	*out = t->st;
	runtime_table__stats(t->procs, &rs);
	out->processes = rs.processes;
	out->live = rs.live;
	out->files_inspected = rs.files_other;
	out->naming = t->freed;
	runtime_table__each_inst(t->procs, add_inst_naming, &out->naming);
}
