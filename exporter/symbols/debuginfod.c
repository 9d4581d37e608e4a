// SPDX-License-Identifier: Apache-2.0
/*
 * debuginfod: background fetches of debug files by build ID through libdebuginfod.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

/* uthash must not exit() on allocation failure: record it and fail the call. */
static __thread bool hash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

#include "symbols/debuginfod.h"

/* The longest GNU build ID seen in practice is 20 bytes (SHA-1); allow up to 64. */
#define MAX_BUILD_ID_HEX 128

struct entry {
	UT_hash_handle hh;
	struct entry *next; /* in the queue */
	int state;	    /* enum dbgfetch_state */
	uint64_t failed_ns; /* CLOCK_MONOTONIC of the failure, for DBGFETCH_FAILED */
	char *path;	    /* DBGFETCH_FOUND */
	char id[];
};

struct worker {
	struct dbgfetch *f;
	pthread_t thread;
	bool started;
	uint64_t deadline_ns; /* of the request in hand */
	int cancelled;	      /* progress() stopped it: -ETIME or -ECANCELED */
};

struct dbgfetch {
	pthread_mutex_t lock;
	pthread_cond_t work; /* queue not empty, or stopping */
	pthread_cond_t idle; /* a request finished */
	struct entry *entries;
	struct entry *head, *tail; /* queue */
	unsigned int queued, in_flight, max_queued, nworkers;
	uint64_t timeout_ns;
	uint64_t generation;
	volatile int stopping;
	struct dbgfetch_stats stats;
	struct worker *workers;
	/* Client cache bound (opts.cache_max_bytes); trim_pending: a worker trims next. */
	char cache_dir[PATH_MAX];
	uint64_t cache_max_bytes;
	int trim_pending;
	pthread_mutex_t trim_lock; /* one trim at a time */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Called by libdebuginfod while it works: non-zero cancels (agent stopping, or too slow). */
static int progress(debuginfod_client *client, long a, long b)
{
	struct worker *w = debuginfod_get_user_data(client);

	(void)a;
	(void)b;
	if (__atomic_load_n(&w->f->stopping, __ATOMIC_RELAXED))
		w->cancelled = -ECANCELED;
	else if (mono_ns() > w->deadline_ns)
		w->cancelled = -ETIME;
	return w->cancelled != 0;
}

static void finish(struct dbgfetch *f, struct entry *e, int rc, char *path)
{
	pthread_mutex_lock(&f->lock);
	if (rc >= 0 && path) {
		e->state = DBGFETCH_FOUND;
		e->path = path;
		f->stats.found++;
		__atomic_store_n(&f->trim_pending, 1, __ATOMIC_RELAXED);
	} else {
		free(path);
		if (rc == -ENOENT) {
			e->state = DBGFETCH_MISSING;
			f->stats.missing++;
		} else {
			e->state = DBGFETCH_FAILED;
			e->failed_ns = mono_ns();
			f->stats.failed++;
			f->stats.last_error = rc < 0 ? rc : -EIO;
		}
	}
	f->in_flight--;
	f->generation++;
	pthread_cond_broadcast(&f->idle);
	pthread_mutex_unlock(&f->lock);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct dbgfetch *f = w->f;
	debuginfod_client *client = debuginfod_begin();
	struct entry *e;
	char *path;
	int rc;

	if (client) {
		debuginfod_set_user_data(client, w);
		debuginfod_set_progressfn(client, progress);
	}
	for (;;) {
		/* At start and after each file received: the cache within its bound. */
		if (__atomic_exchange_n(&f->trim_pending, 0, __ATOMIC_RELAXED))
			dbgfetch__trim_cache(f);
		pthread_mutex_lock(&f->lock);
		while (!f->head && !f->stopping)
			pthread_cond_wait(&f->work, &f->lock);
		if (f->stopping) {
			pthread_mutex_unlock(&f->lock);
			break;
		}
		e = f->head;
		f->head = e->next;
		if (!f->head)
			f->tail = NULL;
		e->next = NULL;
		f->queued--;
		f->in_flight++;
		pthread_mutex_unlock(&f->lock);

		path = NULL;
		if (client) {
			w->deadline_ns = mono_ns() + f->timeout_ns;
			w->cancelled = 0;
			/* build_id_len 0: the ID is given as lower-case hex. */
			rc = debuginfod_find_debuginfo(client, (const unsigned char *)e->id, 0,
						       &path);
			if (rc >= 0)
				close(rc);
			else if (w->cancelled)
				rc = w->cancelled; /* whatever the library made of it: no answer */
		} else {
			rc = -ENOMEM;
		}
		finish(f, e, rc, path);
	}
	if (client)
		debuginfod_end(client);
	return NULL;
}

static bool urls_set(const char *urls)
{
	return urls && urls[strspn(urls, " \t\n")];
}

struct dbgfetch *dbgfetch__new(const struct dbgfetch_opts *opts)
{
	const char *urls = opts && opts->urls ? opts->urls : getenv(DEBUGINFOD_URLS_ENV_VAR);
	struct dbgfetch *f;
	unsigned int i;
	int err;

	if (!urls_set(urls)) {
		errno = ENOENT;
		return NULL;
	}
	/* libdebuginfod reads its servers from the environment only: before any thread. */
	if (opts && opts->urls && setenv(DEBUGINFOD_URLS_ENV_VAR, opts->urls, 1))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->trim_lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->idle, NULL);
	f->nworkers = opts && opts->max_parallel ? opts->max_parallel : DBGFETCH_DEFAULT_PARALLEL;
	f->max_queued = opts && opts->max_queued ? opts->max_queued : DBGFETCH_DEFAULT_MAX_QUEUED;
	f->timeout_ns =
	    (uint64_t)(opts && opts->timeout_s ? opts->timeout_s : DBGFETCH_DEFAULT_TIMEOUT_S) *
	    1000000000ull;
	f->cache_max_bytes = opts ? opts->cache_max_bytes : 0;
	if (f->cache_max_bytes && !dbgfetch__cache_dir(f->cache_dir, sizeof(f->cache_dir)))
		f->trim_pending = 1;
	f->workers = calloc(f->nworkers, sizeof(*f->workers));
	if (!f->workers) {
		dbgfetch__free(f);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < f->nworkers; i++) {
		f->workers[i].f = f;
		err = pthread_create(&f->workers[i].thread, NULL, worker_main, &f->workers[i]);
		if (err) {
			dbgfetch__free(f);
			errno = err;
			return NULL;
		}
		f->workers[i].started = true;
	}
	return f;
}

void dbgfetch__free(struct dbgfetch *f)
{
	struct entry *e, *tmp;
	unsigned int i;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	__atomic_store_n(&f->stopping, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&f->work);
	pthread_mutex_unlock(&f->lock);
	for (i = 0; f->workers && i < f->nworkers; i++)
		if (f->workers[i].started)
			pthread_join(f->workers[i].thread, NULL);
	HASH_ITER (hh, f->entries, e, tmp) {
		HASH_DEL(f->entries, e);
		free(e->path);
		free(e);
	}
	free(f->workers);
	pthread_cond_destroy(&f->work);
	pthread_cond_destroy(&f->idle);
	pthread_mutex_destroy(&f->trim_lock);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static bool valid_id(const char *id, size_t len)
{
	size_t i;

	if (len < 2 || len > MAX_BUILD_ID_HEX || len % 2)
		return false;
	for (i = 0; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

/* Appends @e to the queue, or fails it when the queue is full. Under the lock. */
static int enqueue(struct dbgfetch *f, struct entry *e)
{
	if (f->queued >= f->max_queued) {
		e->state = DBGFETCH_FAILED;
		e->failed_ns = mono_ns();
		f->stats.dropped++;
		return DBGFETCH_FAILED;
	}
	e->state = DBGFETCH_PENDING;
	e->next = NULL;
	if (f->tail)
		f->tail->next = e;
	else
		f->head = e;
	f->tail = e;
	f->queued++;
	f->stats.requests++;
	pthread_cond_signal(&f->work);
	return DBGFETCH_PENDING;
}

int dbgfetch__request(struct dbgfetch *f, const char *build_id, const char **path)
{
	size_t len = build_id ? strlen(build_id) : 0;
	struct entry *e;
	int state;

	if (!f || !valid_id(build_id, len))
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	HASH_FIND(hh, f->entries, build_id, len, e);
	if (!e) {
		e = calloc(1, sizeof(*e) + len + 1);
		if (!e) {
			pthread_mutex_unlock(&f->lock);
			return -ENOMEM;
		}
		memcpy(e->id, build_id, len + 1);
		hash_oom = false;
		HASH_ADD(hh, f->entries, id[0], len, e);
		if (hash_oom) {
			free(e);
			pthread_mutex_unlock(&f->lock);
			return -ENOMEM;
		}
		state = enqueue(f, e);
	} else if (e->state == DBGFETCH_FAILED &&
		   mono_ns() - e->failed_ns >= DBGFETCH_RETRY_S * 1000000000ull) {
		state = enqueue(f, e);
	} else {
		state = e->state;
	}
	if (state == DBGFETCH_FOUND && path)
		*path = e->path;
	pthread_mutex_unlock(&f->lock);
	return state;
}

uint64_t dbgfetch__generation(struct dbgfetch *f)
{
	uint64_t g;

	pthread_mutex_lock(&f->lock);
	g = f->generation;
	pthread_mutex_unlock(&f->lock);
	return g;
}

unsigned int dbgfetch__wait(struct dbgfetch *f, unsigned int timeout_ms)
{
	struct timespec until;
	unsigned int left;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&f->lock);
	while (f->queued + f->in_flight &&
	       pthread_cond_timedwait(&f->idle, &f->lock, &until) != ETIMEDOUT)
		;
	left = f->queued + f->in_flight;
	pthread_mutex_unlock(&f->lock);
	return left;
}

void dbgfetch__stats(struct dbgfetch *f, struct dbgfetch_stats *out)
{
	pthread_mutex_lock(&f->lock);
	*out = f->stats;
	out->pending = f->queued + f->in_flight;
	out->in_flight = f->in_flight;
	pthread_mutex_unlock(&f->lock);
}

int dbgfetch__cache_dir(char *buf, size_t size)
{
	const char *env = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR), *home = getenv("HOME");
	const char *xdg = getenv("XDG_CACHE_HOME");
	struct stat st;
	int n;

	if (env && *env)
		n = snprintf(buf, size, "%s", env);
	else if (!home || !*home)
		return -ENOENT;
	else if ((n = snprintf(buf, size, "%s/.debuginfod_client_cache", home)) > 0 &&
		 (size_t)n < size && !stat(buf, &st) && S_ISDIR(st.st_mode))
		;
	else if (xdg && *xdg)
		n = snprintf(buf, size, "%s/debuginfod_client", xdg);
	else
		n = snprintf(buf, size, "%s/.cache/debuginfod_client", home);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

struct cache_file {
	char *path;
	uint64_t size;
	int64_t used;	 /* latest of atime and mtime, seconds */
	int64_t changed; /* mtime, seconds */
	dev_t dev;
	ino_t ino;
};

struct cache_walk {
	struct cache_file *files;
	size_t n, cap;
	uint64_t total;
	int err;
};

/* Cache entries nest a level or two (build ID, then files): a bound against loops and odd trees. */
#define CACHE_MAX_DEPTH 4

/* Regular files under @dir; those directly in the top directory (control files) count but stay. */
static void cache_collect(const char *dir, int depth, struct cache_walk *w)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);
	void *p;

	if (!d) {
		if (!depth)
			w->err = -errno;
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
			sizeof(path) ||
		    lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth < CACHE_MAX_DEPTH)
				cache_collect(path, depth + 1, w);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		w->total += (uint64_t)st.st_size;
		if (!depth)
			continue;
		if (w->n == w->cap) {
			p = realloc(w->files, (w->cap ? 2 * w->cap : 64) * sizeof(*w->files));
			if (!p) {
				w->err = -ENOMEM;
				break;
			}
			w->files = p;
			w->cap = w->cap ? 2 * w->cap : 64;
		}
		w->files[w->n].path = strdup(path);
		if (!w->files[w->n].path) {
			w->err = -ENOMEM;
			break;
		}
		w->files[w->n].size = (uint64_t)st.st_size;
		w->files[w->n].dev = st.st_dev;
		w->files[w->n].ino = st.st_ino;
		w->files[w->n].changed = st.st_mtim.tv_sec;
		w->files[w->n].used =
		    st.st_atim.tv_sec > st.st_mtim.tv_sec ? st.st_atim.tv_sec : st.st_mtim.tv_sec;
		w->n++;
	}
	closedir(d);
}

static int cache_file_cmp(const void *a, const void *b)
{
	const struct cache_file *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

/*
 * True when this run handed out @c's file (a DBGFETCH_FOUND result, compared by device and
 * inode, whatever the spelling of the path): the symbolizer may open it again.
 */
static bool handed_out(struct dbgfetch *f, const struct cache_file *c)
{
	struct entry *e, *tmp;
	struct stat st;
	bool found = false;

	pthread_mutex_lock(&f->lock);
	HASH_ITER (hh, f->entries, e, tmp)
		if (e->path && !stat(e->path, &st) && st.st_dev == c->dev && st.st_ino == c->ino) {
			found = true;
			break;
		}
	pthread_mutex_unlock(&f->lock);
	return found;
}

int dbgfetch__trim_cache(struct dbgfetch *f)
{
	struct cache_walk w = {0};
	struct timespec now;
	char *slash;
	size_t i;
	int removed = 0;

	if (!f || !f->cache_max_bytes || !f->cache_dir[0])
		return 0;
	pthread_mutex_lock(&f->trim_lock);
	clock_gettime(CLOCK_REALTIME, &now);
	cache_collect(f->cache_dir, 0, &w);
	if (!w.err && w.total > f->cache_max_bytes) {
		qsort(w.files, w.n, sizeof(*w.files), cache_file_cmp);
		for (i = 0; i < w.n && w.total > f->cache_max_bytes; i++) {
			if (now.tv_sec - w.files[i].changed < DBGFETCH_CACHE_BUSY_S ||
			    handed_out(f, &w.files[i]) || unlink(w.files[i].path))
				continue;
			w.total -= w.files[i].size;
			removed++;
			/* Its build-ID directory, once empty (else rmdir fails: fine). */
			slash = strrchr(w.files[i].path, '/');
			if (slash) {
				*slash = 0;
				rmdir(w.files[i].path);
			}
		}
	}
	for (i = 0; i < w.n; i++)
		free(w.files[i].path);
	free(w.files);
	pthread_mutex_lock(&f->lock);
	f->stats.cache_evicted += (uint64_t)removed;
	if (!w.err)
		f->stats.cache_bytes = w.total;
	pthread_mutex_unlock(&f->lock);
	pthread_mutex_unlock(&f->trim_lock);
	return w.err ? w.err : removed;
}
