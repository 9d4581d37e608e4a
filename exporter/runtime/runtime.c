// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "process/proclife.h"
#include "process/procmaps.h"
#include "runtime/runtime.h"
#include "sampler.h"
#include "util/util.h"

#define DEFAULT_MAX_FILES 16384

struct runtime_file {
	struct runtime_file_key key;
	enum runtime_verdict verdict;
	UT_hash_handle hh;
	_Alignas(16) unsigned char data[]; /* ops.file_size bytes */
};

struct runtime_table {
	const struct runtime_ops *ops;
	void *rt;
	struct runtime_bpf bpf;
	struct runtime_proc *procs;
	struct runtime_file *files;
	size_t nfiles;
	uint64_t last_sweep_ns;
	struct runtime_stats st;
};

struct runtime_table *runtime_table__new(const struct runtime_ops *ops, void *rt,
					 const struct runtime_bpf *bpf)
{
	struct runtime_table *t;

	if (ops->desc_size > RUNTIME_MAX_DESC) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ops = ops;
	t->rt = rt;
	t->bpf = *bpf;
	t->last_sweep_ns = util__mono_ns();
	elf_version(EV_CURRENT);
	return t;
}

/* @e's descriptor out of BPF: what the runtime hangs off it first. */
static void undescribe(struct runtime_table *t, struct runtime_proc *e)
{
	if (e->inst && t->ops->undescribe)
		t->ops->undescribe(t->rt, e);
	if (e->described && t->bpf.procs_fd >= 0)
		bpf_map_delete_elem(t->bpf.procs_fd, &e->pid);
	e->described = 0;
}

static void entry_free(struct runtime_table *t, struct runtime_proc *e)
{
	undescribe(t, e);
	if (e->inst) {
		t->ops->proc_free(t->rt, e->inst, true);
		t->st.live--;
	}
	HASH_DEL(t->procs, e);
	free(e);
}

static void files_clear(struct runtime_table *t)
{
	struct runtime_file *f, *tmp;

	HASH_ITER (hh, t->files, f, tmp) {
		HASH_DEL(t->files, f);
		free(f);
	}
	t->nfiles = 0;
}

void runtime_table__free(struct runtime_table *t)
{
	struct runtime_proc *e, *tmp;

	if (!t)
		return;
	HASH_ITER (hh, t->procs, e, tmp)
		entry_free(t, e);
	files_clear(t);
	free(t);
}

static struct runtime_file_key key_of(const struct procmap *m)
{
	struct runtime_file_key k = {
	    .ino = m->inode, .dev_major = m->dev_major, .dev_minor = m->dev_minor};

	return k;
}

static struct runtime_file *file_find(const struct runtime_table *t,
				      const struct runtime_file_key *k)
{
	struct runtime_file *f;

	HASH_FIND(hh, t->files, k, sizeof(*k), f);
	return f;
}

void *runtime_table__file(struct runtime_table *t, const struct runtime_file_key *k)
{
	struct runtime_file *f = file_find(t, k);

	return f ? f->data : NULL;
}

/* The verdict on the file of mapping @m of @pid: remembered, else read (and remembered). */
static enum runtime_verdict verdict_of(struct runtime_table *t, uint32_t pid,
				       const struct procmap *m)
{
	struct runtime_file_key k = key_of(m);
	struct runtime_file *f = file_find(t, &k);
	size_t max = t->ops->max_files ? t->ops->max_files : DEFAULT_MAX_FILES;

	if (f)
		return f->verdict;
	f = calloc(1, sizeof(*f) + t->ops->file_size);
	if (!f)
		return RUNTIME_FILE_UNKNOWN;
	f->key = k;
	f->verdict = t->ops->file_read(t->rt, pid, m, f->data);
	if (f->verdict == RUNTIME_FILE_UNKNOWN) {
		free(f); /* looked at again next time */
		return RUNTIME_FILE_UNKNOWN;
	}
	if (f->verdict == RUNTIME_FILE_OTHER)
		t->st.files_other++;
	if (t->nfiles >= max)
		files_clear(t);
	HASH_ADD(hh, t->files, key, sizeof(f->key), f);
	t->nfiles++;
	return f->verdict;
}

int runtime_table__describe(struct runtime_table *t, struct runtime_proc *e)
{
	_Alignas(16) unsigned char d[RUNTIME_MAX_DESC];
	int err;

	if (!e->inst)
		return -EINVAL;
	memset(d, 0, t->ops->desc_size);
	/* A runtime without a BPF map (it only names: the JIT's) has no descriptor. */
	err = t->ops->desc ? t->ops->desc(t->rt, e, d) : 0;
	/* Marked: the exec and exit hooks forget only marked PIDs' entries. */
	if (!err && t->bpf.procs_fd >= 0)
		err = sp_proc_entry_write(t->bpf.proc_known, t->bpf.map_bit, t->bpf.procs_fd,
					  e->pid, d);
	if (err)
		return err;
	e->described = 1;
	return 0;
}

/* @e's instance, of the runtime's file @m of @maps, created and described; counts the outcome. */
static void attach(struct runtime_table *t, struct runtime_proc *e, const struct procmaps *maps,
		   const struct procmap *m)
{
	struct runtime_file *f = file_find(t, &e->file);
	int err = 0;

	e->inst = t->ops->proc_new(t->rt, e, maps, m,
				   f && f->verdict == RUNTIME_FILE_RUNTIME ? f->data : NULL, &err);
	if (!e->inst && !err)
		err = -EINVAL;
	/* Every read above was of this process only if it still runs under its PID now. */
	if (!err && e->start_boot_ns)
		err = proclife__check(e->pid, e->start_boot_ns);
	if (!err)
		err = runtime_table__describe(t, e);
	/* Not ready yet (a runtime in its first moments): looked at again, at the next maps read
	 * or sweep. */
	e->again = err == -EAGAIN;
	if (!err) {
		t->st.processes++;
		t->st.live++;
		if (t->ops->proc_described)
			t->ops->proc_described(t->rt, e);
		return;
	}
	if (e->inst) {
		t->ops->proc_free(t->rt, e->inst, false);
		e->inst = NULL;
	}
	if (t->ops->proc_failed)
		t->ops->proc_failed(t->rt, e, err);
}

/* Whether @e's process still runs the runtime after a maps read found @maps (ops.proc_maps). */
static bool still_runs(struct runtime_table *t, struct runtime_proc *e, const struct procmaps *maps)
{
	bool mapped =
	    procmaps__find_file(maps, e->file.ino, e->file.dev_major, e->file.dev_minor) != NULL;

	if (e->inst && t->ops->proc_maps)
		return t->ops->proc_maps(t->rt, e, maps);
	return mapped;
}

void runtime_table__maps_hook(struct runtime_table *t, uint32_t pid, uint64_t start_boot_ns,
			      const struct procmaps *maps)
{
	struct procmaps own = {0};
	const struct procmap *found = NULL;
	struct runtime_proc *e;

	if (!maps) {
		if (procmaps__read_filtered((int)pid, PROCMAPS_EXEC_ONLY, &own))
			return;
		maps = &own;
	}
	/* A read that failed (or was dropped: PID reused) says nothing about the runtime. */
	if (!maps->n)
		goto out;
	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (e && start_boot_ns && e->start_boot_ns && e->start_boot_ns != start_boot_ns) {
		entry_free(t, e); /* the PID was reused */
		e = NULL;
	}
	/* Nothing changed: the runtime's file is still mapped (or the runtime says it still runs).
	 */
	if (e && still_runs(t, e, maps)) {
		if (!e->start_boot_ns && start_boot_ns) {
			/* Pin the descriptor to this process now that its start time is known. */
			e->start_boot_ns = start_boot_ns;
			if (e->described)
				runtime_table__describe(t, e);
		}
		found =
		    procmaps__find_file(maps, e->file.ino, e->file.dev_major, e->file.dev_minor);
		if (!e->inst && e->again && found)
			attach(t, e, maps, found);
		goto out;
	}
	if (e) {
		entry_free(t, e); /* exec'd, or unmapped: look again */
		e = NULL;
	}
	for (size_t i = 0; i < maps->n && !found; i++)
		if (t->ops->candidate(maps, i) &&
		    verdict_of(t, pid, &maps->maps[i]) == RUNTIME_FILE_RUNTIME)
			found = &maps->maps[i];
	if (!found) {
		if (t->ops->no_file)
			t->ops->no_file(t->rt, maps);
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto out;
	e->pid = pid;
	e->start_boot_ns = start_boot_ns;
	e->file = key_of(found);
	HASH_ADD(hh, t->procs, pid, sizeof(e->pid), e);
	attach(t, e, maps, found);
out:
	procmaps__clear(&own);
}

void runtime_table__exec(struct runtime_table *t, uint32_t pid)
{
	struct runtime_proc *e = runtime_table__get(t, pid);

	if (e)
		entry_free(t, e);
}

struct runtime_proc *runtime_table__get(struct runtime_table *t, uint32_t pid)
{
	struct runtime_proc *e;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	return e;
}

void *runtime_table__find(struct runtime_table *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct runtime_proc *e = runtime_table__get(t, pid);

	if (!e || (e->start_boot_ns && start_boot_ns && e->start_boot_ns != start_boot_ns))
		return NULL;
	return e->inst;
}

void runtime_table__each(struct runtime_table *t, void (*fn)(void *ctx, struct runtime_proc *e),
			 void *ctx)
{
	struct runtime_proc *e, *tmp;

	HASH_ITER (hh, t->procs, e, tmp)
		fn(ctx, e);
}

void runtime_table__each_inst(const struct runtime_table *t, void (*fn)(void *ctx, void *inst),
			      void *ctx)
{
	const struct runtime_proc *e, *tmp;

	HASH_ITER (hh, t->procs, e, tmp)
		if (e->inst)
			fn(ctx, e->inst);
}

void runtime_table__tick(struct runtime_table *t)
{
	uint64_t now = util__mono_ns();
	bool sweep = now - t->last_sweep_ns >= RUNTIME_SWEEP_NS;
	struct runtime_proc *e, *tmp;
	int err;

	if (t->ops->tick)
		t->ops->tick(t->rt, now, sweep);
	if (!sweep)
		return;
	t->last_sweep_ns = now;
	/* Entries not ready at their last look: their maps read again (a few per sweep). */
	{
		uint32_t again[RUNTIME_RETRIES_PER_SWEEP];
		uint64_t start[RUNTIME_RETRIES_PER_SWEEP];
		size_t n = 0;

		HASH_ITER (hh, t->procs, e, tmp)
			if (!e->inst && e->again && !e->gone_ns && n < RUNTIME_RETRIES_PER_SWEEP) {
				again[n] = e->pid;
				start[n++] = e->start_boot_ns;
			}
		for (size_t i = 0; i < n; i++)
			runtime_table__maps_hook(t, again[i], start[i], NULL);
	}
	HASH_ITER (hh, t->procs, e, tmp) {
		if (e->gone_ns) {
			/* Found gone a sweep ago: the samples taken before the exit are named. */
			entry_free(t, e);
			continue;
		}
		err = proclife__check(e->pid, e->start_boot_ns);
		if (err == -ESRCH || err == -ESTALE) {
			undescribe(t, e);
			e->gone_ns = now;
		}
	}
}

void runtime_table__new_batch(struct runtime_table *t)
{
	if (t->ops->new_batch)
		t->ops->new_batch(t->rt);
}

void runtime_table__stats(const struct runtime_table *t, struct runtime_stats *out)
{
	*out = t->st;
}
