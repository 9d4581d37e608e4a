/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export_queue: a bounded FIFO of serialized requests between the sampling
 * thread (producer) and the sender thread (consumer).
 *
 * The bound is on bytes. When a push would exceed it, the oldest requests
 * waiting are dropped (and counted) to make room: fresh data is worth more
 * than old data while the Collector is unreachable. A request the sender holds
 * (taken, not yet done) still counts toward the bound, so memory stays
 * bounded; the sender learns through export_queue__should_drop() that its
 * request must give way. Thread-safe.
 */
#ifndef SPANPROF_EXPORT_QUEUE_H
#define SPANPROF_EXPORT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* A request that carries no profile type (self-metrics): counted in the totals only. */
#define EXPORT_NO_TYPE (-1)

struct export_queue;

struct export_request {
	uint8_t *data; /* owned by the request */
	size_t len;
	uint64_t samples; /* samples it carries, for end-to-end accounting */
	int type;	  /* enum profile_type of all of them, or EXPORT_NO_TYPE */
	uint64_t seq;	  /* 1, 2, ... in push order */
	struct export_request *next;
};

struct export_queue_stats {
	uint64_t pushed, dropped, dropped_samples;
	/* dropped_samples by the requests' profile type (EXPORT_NO_TYPE ones: in none). */
	uint64_t dropped_samples_by_type[PROFILE_NTYPES];
	size_t queued, queued_bytes; /* waiting + held by the sender */
};

/* NULL + errno. */
struct export_queue *export_queue__new(size_t max_bytes);
/* Frees the queue and every request still in it. NULL is a no-op. */
void export_queue__free(struct export_queue *q);

/*
 * Takes ownership of @data (malloc'd) carrying @samples samples of profile type @type (enum
 * profile_type, or EXPORT_NO_TYPE). A request larger than the whole bound is dropped at once.
 * Returns 0, or -EPIPE after export_queue__close() (the data is freed and counted as dropped).
 */
int export_queue__push(struct export_queue *q, uint8_t *data, size_t len, uint64_t samples,
		       int type);

/*
 * Waits up to @timeout_ms (-1: forever) for a request and hands it to the
 * caller, who must give it back with export_queue__done(). NULL on timeout,
 * or when the queue is closed and empty.
 */
struct export_request *export_queue__take(struct export_queue *q, int timeout_ms);
/* Frees a request returned by take (sent, rejected or dropped). */
void export_queue__done(struct export_queue *q, struct export_request *r, int dropped);
/* 1 when @r (taken, being retried) should be dropped to respect the bound. */
int export_queue__should_drop(struct export_queue *q, const struct export_request *r);

/* No more pushes; take() returns what is left, then NULL. Wakes waiters. */
void export_queue__close(struct export_queue *q);
int export_queue__closed(struct export_queue *q);
void export_queue__stats(struct export_queue *q, struct export_queue_stats *out);

#endif
