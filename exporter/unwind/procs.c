/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "process/proclife.h"
#include "process/procmaps.h"
#include "symbols/loadbias.h"
#include "unwind/procs.h"
#include "unwind/tables.h"

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
int update_locked(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
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
		if (jt && jt->id != UNWIND_TABLE_NONE && procmaps__anon_code(m->path) &&
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

/* A process named on the command line, by the builder (JOB_PRELOAD). u->lock held. */
int load_named(struct unwinder *u, uint32_t pid)
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
int load_unsampled(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns)
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

void remove_locked(struct unwinder *u, uint32_t pid)
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
