/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue: the builder's queue of jobs, at most one per process, by priority, and the notified
 * re-reads waiting for their time. u->qlock held.
 */
#ifndef SPANPROF_UNWIND_QUEUE_H
#define SPANPROF_UNWIND_QUEUE_H

#include <stdint.h>

#include "unwind/unwinder_state.h"

/* Frees job @j (not queued any more) and its copy of the maps. */
void job_free(struct job *j);

/*
 * Queues @kind for @pid at @prio, replacing the job queued for it (the latest request is the
 * process's current state), except that a re-read (JOB_RELOAD, JOB_REREAD, JOB_MMAPPED) never
 * replaces another job (any of them loads the process as well), nor does a JOB_UPDATE replace a
 * JOB_NEW (which reads the maps when it runs). Takes ownership of @maps' contents
 * (NULL: none). qlock held.
 */
void queue_job(struct unwinder *u, uint32_t pid, int kind, int prio, uint64_t start_boot_ns,
	       struct procmaps *maps);

/* Asks for a re-read of @pid's maps REFRESH_DELAY_NS from now (one per pid at a time). qlock
 * held. */
void schedule_refresh(struct unwinder *u, uint32_t pid, int prio);

/* Asks the builder to re-read new process @pid REFRESH_DELAY_NS from now. qlock held. */
void schedule_new_reread(struct unwinder *u, uint32_t pid);

/* The executable mappings of @maps (those update_locked() reads), copied into @out. */
int copy_exec_maps(const struct procmaps *maps, struct procmaps *out);

#endif /* SPANPROF_UNWIND_QUEUE_H */
