/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <utlist.h>

#include "unwind/queue.h"
#include "util/util.h"

/* --- the builder's queue (u->qlock) ---------------------------------------------------------- */

void job_free(struct job *j)
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
void queue_job(struct unwinder *u, uint32_t pid, int kind, int prio, uint64_t start_boot_ns,
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
void schedule_refresh(struct unwinder *u, uint32_t pid, int prio)
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
void schedule_new_reread(struct unwinder *u, uint32_t pid)
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
int copy_exec_maps(const struct procmaps *maps, struct procmaps *out)
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
