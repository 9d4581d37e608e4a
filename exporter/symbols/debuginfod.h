/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfod: fetches separate debug files by GNU build ID from debuginfod servers, in the
 * background, with elfutils' libdebuginfod client (debuginfod_find_debuginfo(3); protocol:
 * debuginfod(8), GET /buildid/<hex>/debuginfo). The library keeps the on-disk cache
 * (DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client or
 * ~/.cache/debuginfod_client), remembers failed queries there (cache_miss_s, 10 minutes by
 * default) and honours DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXTIME, DEBUGINFOD_MAXSIZE and
 * DEBUGINFOD_RETRY_LIMIT (debuginfod-client-config(7)). The library cleans its cache by age
 * only (max_unused_age_s); opts.cache_max_bytes bounds its size too: least recently used
 * files go first.
 *
 * A dbgfetch owns a bounded queue and max_parallel worker threads, each with its own client
 * handle (a handle serves one thread at a time). Callers only enqueue and read results: no
 * call but dbgfetch__wait() and dbgfetch__free() blocks on the network, so a request may be
 * made from the resolve step. Results are kept for the whole run: a found file's path, a
 * server's "not found" for good, a failure (server down, slow, cancelled) until
 * DBGFETCH_RETRY_S have passed. All functions are thread-safe.
 */
#ifndef SPANPROF_SYMBOLS_DEBUGINFOD_H
#define SPANPROF_SYMBOLS_DEBUGINFOD_H

#include <stdint.h>

#define DBGFETCH_DEFAULT_PARALLEL 2
#define DBGFETCH_DEFAULT_MAX_QUEUED 256
/* Whole-request deadline (connect, wait, download), unless opts.timeout_s says otherwise. */
#define DBGFETCH_DEFAULT_TIMEOUT_S 30
/* A failed request (not a "not found") may be tried again after this long. */
#define DBGFETCH_RETRY_S 300
/* Files changed this recently may be the library's downloads in progress: never evicted. */
#define DBGFETCH_CACHE_BUSY_S 60

struct dbgfetch;

struct dbgfetch_opts {
	/*
	 * Space-separated server URLs (debuginfod-client-config(7)); NULL: DEBUGINFOD_URLS
	 * from the environment. Given, it replaces DEBUGINFOD_URLS in this process's
	 * environment (the library reads nothing else), before any thread starts.
	 */
	const char *urls;
	unsigned int max_parallel; /* requests in flight at once; 0: DBGFETCH_DEFAULT_PARALLEL */
	unsigned int max_queued;   /* waiting requests; beyond: dropped, counted (0: default) */
	unsigned int timeout_s;	   /* per request, in seconds; 0: DBGFETCH_DEFAULT_TIMEOUT_S */
	/*
	 * Bytes the client cache may hold: checked at start and after each file received, least
	 * recently used files (latest of access and modification time) removed first, never
	 * the control files at its top, files changed in the last DBGFETCH_CACHE_BUSY_S, nor the
	 * files this run handed out. 0: no bound but the library's age-based cleaning.
	 */
	uint64_t cache_max_bytes;
};

/*
 * Starts the workers. NULL + errno: ENOENT when no URL is configured (neither @opts->urls nor
 * DEBUGINFOD_URLS, or only blanks: nothing to do, not an error for the caller to report),
 * ENOMEM, or the error of pthread_create(). @opts may be NULL.
 */
struct dbgfetch *dbgfetch__new(const struct dbgfetch_opts *opts);
/* Cancels requests in flight (within about a second), joins the workers, frees. NULL: no-op. */
void dbgfetch__free(struct dbgfetch *f);

enum dbgfetch_state {
	DBGFETCH_PENDING = 0, /* queued or in flight */
	DBGFETCH_FOUND,	      /* *path is the debug file in the cache */
	DBGFETCH_MISSING,     /* the servers have none (or said so recently: cached miss) */
	DBGFETCH_FAILED,      /* no answer: down, slow, refused, cancelled, queue full */
};

/*
 * The state of the debug file of @build_id (lower-case hex of the NT_GNU_BUILD_ID note, at
 * most 64 bytes of ID) and, for DBGFETCH_FOUND, its path in *@path (owned by @f, valid until
 * dbgfetch__free()). A build ID not asked before (or failed DBGFETCH_RETRY_S ago) is queued
 * and DBGFETCH_PENDING returned, or DBGFETCH_FAILED when the queue is full. -EINVAL for a
 * malformed ID, -ENOMEM.
 */
int dbgfetch__request(struct dbgfetch *f, const char *build_id, const char **path);

/*
 * Number of results that arrived since dbgfetch__new(): a caller compares it with the value
 * it saw last to learn, cheaply, whether anything pending may have changed.
 */
uint64_t dbgfetch__generation(struct dbgfetch *f);

/*
 * The client cache directory as debuginfod-client-config(7) says the library picks it:
 * DEBUGINFOD_CACHE_PATH, else $HOME/.debuginfod_client_cache when it exists (deprecated), else
 * $XDG_CACHE_HOME/debuginfod_client, else $HOME/.cache/debuginfod_client. Writes it to @buf of
 * @size bytes; 0, or -ENOENT (no HOME) or -ENAMETOOLONG.
 */
int dbgfetch__cache_dir(char *buf, size_t size);

/*
 * Brings the client cache under opts.cache_max_bytes (see there). Returns the number of files
 * removed, or a negative errno (the directory unreadable). 0 without a bound.
 */
int dbgfetch__trim_cache(struct dbgfetch *f);

/*
 * Waits until no request is queued or in flight, or @timeout_ms (milliseconds) has passed.
 * Returns the number of requests still queued or in flight.
 */
unsigned int dbgfetch__wait(struct dbgfetch *f, unsigned int timeout_ms);

struct dbgfetch_stats {
	uint64_t requests;	/* build IDs queued (retries included) */
	uint64_t found;		/* debug files received (or found in the cache) */
	uint64_t missing;	/* servers have no such file */
	uint64_t failed;	/* no answer: server down, slow (timeout), refused, cancelled */
	uint64_t dropped;	/* not queued: max_queued waiting already */
	uint64_t cache_evicted; /* files removed from the client cache to stay within its bound */
	uint64_t cache_bytes;	/* bytes in the client cache after the last trim */
	uint64_t pending;	/* gauge: queued or in flight */
	uint64_t in_flight;	/* gauge: of those, in a worker's hands */
	int last_error;		/* negative errno of the last failure, 0 if none */
};
void dbgfetch__stats(struct dbgfetch *f, struct dbgfetch_stats *out);

#endif /* SPANPROF_SYMBOLS_DEBUGINFOD_H */
