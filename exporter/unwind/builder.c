/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <utlist.h>

#include "unwind/builder.h"
#include "unwind/procs.h"
#include "unwind/queue.h"
#include "unwind/tables.h"
#include "util/util.h"

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
void *builder(void *arg)
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
