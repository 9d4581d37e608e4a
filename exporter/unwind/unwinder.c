/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwinder: the face (unwind/unwinder.h): the calls of the agent's main thread, which queue work
 * for the builder (builder.c, queue.c) or update a process at once (procs.c), and the lifecycle.
 */
#include <errno.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>
#include <utlist.h>

#include "unwind/builder.h"
#include "unwind/procs.h"
#include "unwind/queue.h"
#include "unwind/rows.h"
#include "unwind/tables.h"
#include "unwind/unwinder.h"
#include "util/util.h"

int unwinder__update_process(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			     const struct procmaps *maps)
{
	int err;

	pthread_mutex_lock(&u->lock);
	err = update_locked(u, pid, start_boot_ns, maps);
	pthread_mutex_unlock(&u->lock);
	return err;
}

void unwinder__remove_process(struct unwinder *u, uint32_t pid)
{
	pthread_mutex_lock(&u->lock);
	remove_locked(u, pid);
	pthread_mutex_unlock(&u->lock);
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
