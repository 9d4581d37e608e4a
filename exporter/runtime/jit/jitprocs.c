// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "runtime/jit/jitprocs.h"
#include "runtime/runtime.h"

struct jitprocs {
	struct runtime_table *procs;
	struct jitprocs_opts o;
	struct jitproc_stats st;
};

/* A mapping whose code a JIT names: its memory, or a jitdump file naming it. */
static bool jit_mapping(const struct procmap *m)
{
	uint32_t pid;

	return procmaps__anon_code(m->path) || procmaps__jitdump_path(m->path, &pid);
}

/* runtime_ops.candidate */
static bool candidate(const struct procmaps *maps, size_t i)
{
	return jit_mapping(&maps->maps[i]);
}

/* runtime_ops.file_read: the mapping itself says it (nothing to read). */
static enum runtime_verdict file_read(void *rt, uint32_t pid, const struct procmap *m, void *data)
{
	(void)rt;
	(void)pid;
	(void)m;
	(void)data;
	return RUNTIME_FILE_RUNTIME;
}

/* The jitdump files of @maps followed by @j (jitproc__saw_mapping() ignores the rest). */
static void follow_dumps(struct jitproc *j, const struct procmaps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		jitproc__saw_mapping(j, maps->maps[i].path);
}

/* The cfi hook of every instance, when the table has none: the copy goes. */
static void cfi_drop(void *ctx, uint32_t pid, struct jitproc_cfi *cfi)
{
	(void)ctx;
	(void)pid;
	jitproc_cfi__free(cfi);
}

static void *proc_new(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
		      const struct procmap *m, void *data, int *err)
{
	struct jitprocs *t = rt;
	char link[64], exe[PATH_MAX];
	struct jitproc *j;
	ssize_t n;

	(void)m;
	(void)data;
	/* Which runtime the code is (frame kind, hint): the executable, as /proc/PID/exe says. */
	snprintf(link, sizeof(link), "/proc/%u/exe", e->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0)
		exe[n] = '\0';
	j = jitproc__new(e->pid, n > 0 ? exe : NULL, t->o.flags, &t->st);
	if (!j) {
		*err = -errno;
		return NULL;
	}
	jitproc__set_cfi_hook(j, t->o.cfi_hook ? t->o.cfi_hook : cfi_drop, t->o.cfi_ctx);
	follow_dumps(j, maps);
	return j;
}

/* runtime_ops.proc_maps: new jitdump files followed; the JIT's while it maps JIT memory. */
static bool proc_maps(void *rt, struct runtime_proc *e, const struct procmaps *maps)
{
	bool any = false;

	(void)rt;
	follow_dumps(e->inst, maps);
	for (size_t i = 0; i < maps->n && !any; i++)
		any = jit_mapping(&maps->maps[i]);
	return any;
}

static void proc_free(void *rt, void *inst, bool keep_counters)
{
	(void)rt;
	(void)keep_counters; /* every instance counts into the table's stats as it goes */
	jitproc__free(inst);
}

static const struct runtime_ops jit_ops = {
    .name = "jit",
    /* Verdicts cost nothing to find again (file_read reads nothing): few kept. */
    .max_files = 256,
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .proc_maps = proc_maps,
};

struct jitprocs *jitprocs__new(const struct jitprocs_opts *o)
{
	struct runtime_bpf bpf = {.procs_fd = -1};
	struct jitprocs *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (o)
		t->o = *o;
	t->procs = runtime_table__new(&jit_ops, t, &bpf);
	if (!t->procs) {
		free(t);
		return NULL;
	}
	return t;
}

void jitprocs__free(struct jitprocs *t)
{
	if (!t)
		return;
	runtime_table__free(t->procs);
	free(t);
}

struct runtime_table *jitprocs__table(struct jitprocs *t)
{
	return t->procs;
}

void jitprocs__maps_hook(struct jitprocs *t, uint32_t pid, uint64_t start_boot_ns,
			 const struct procmaps *maps)
{
	runtime_table__maps_hook(t->procs, pid, start_boot_ns, maps);
}

struct jitproc *jitprocs__find(struct jitprocs *t, uint32_t pid, uint64_t start_boot_ns)
{
	return runtime_table__find(t->procs, pid, start_boot_ns);
}

const struct jitproc_stats *jitprocs__stats(const struct jitprocs *t)
{
	return &t->st;
}
