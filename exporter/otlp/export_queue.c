/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "otlp/export_queue.h"

struct export_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct export_request *head, *tail;
	size_t max_bytes;
	size_t bytes;	   /* waiting + held */
	size_t count;	   /* waiting + held */
	size_t held_bytes; /* held by the sender */
	uint64_t seq;
	int closed;
	uint64_t pushed, dropped, dropped_samples;
	uint64_t dropped_samples_by_type[PROFILE_NTYPES];
};

/* Counts one dropped request of @samples samples of @type. Lock held. */
static void count_drop(struct export_queue *q, uint64_t samples, int type)
{
	q->dropped++;
	q->dropped_samples += samples;
	if (type >= 0 && type < PROFILE_NTYPES)
		q->dropped_samples_by_type[type] += samples;
}

struct export_queue *export_queue__new(size_t max_bytes)
{
	struct export_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->max_bytes = max_bytes;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	return q;
}

static void free_request(struct export_request *r)
{
	free(r->data);
	free(r);
}

void export_queue__free(struct export_queue *q)
{
	struct export_request *r, *next;

	if (!q)
		return;
	for (r = q->head; r; r = next) {
		next = r->next;
		free_request(r);
	}
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* Drops waiting requests, oldest first, until @need more bytes fit. Lock held. */
static void make_room(struct export_queue *q, size_t need)
{
	while (q->head && q->bytes + need > q->max_bytes) {
		struct export_request *r = q->head;

		q->head = r->next;
		if (!q->head)
			q->tail = NULL;
		q->bytes -= r->len;
		q->count--;
		count_drop(q, r->samples, r->type);
		free_request(r);
	}
}

int export_queue__push(struct export_queue *q, uint8_t *data, size_t len, uint64_t samples,
		       int type)
{
	struct export_request *r;
	int err = 0;

	pthread_mutex_lock(&q->lock);
	if (q->closed || len > q->max_bytes) {
		err = q->closed ? -EPIPE : 0;
		count_drop(q, samples, type);
		free(data);
		goto unlock;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		count_drop(q, samples, type);
		free(data);
		goto unlock;
	}
	make_room(q, len);
	r->data = data;
	r->len = len;
	r->samples = samples;
	r->type = type;
	r->seq = ++q->seq;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->bytes += len;
	q->count++;
	q->pushed++;
	pthread_cond_broadcast(&q->cond);
unlock:
	pthread_mutex_unlock(&q->lock);
	return err;
}

struct export_request *export_queue__take(struct export_queue *q, int timeout_ms)
{
	struct export_request *r = NULL;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout_ms > 0) {
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&q->lock);
	while (!q->head && !q->closed && timeout_ms != 0) {
		int rc = timeout_ms < 0 ? pthread_cond_wait(&q->cond, &q->lock)
					: pthread_cond_timedwait(&q->cond, &q->lock, &until);

		if (rc == ETIMEDOUT)
			break;
	}
	r = q->head;
	if (r) {
		q->head = r->next;
		if (!q->head)
			q->tail = NULL;
		r->next = NULL;
		q->held_bytes += r->len;
	}
	pthread_mutex_unlock(&q->lock);
	return r;
}

void export_queue__done(struct export_queue *q, struct export_request *r, int dropped)
{
	if (!r)
		return;
	pthread_mutex_lock(&q->lock);
	q->held_bytes -= r->len;
	q->bytes -= r->len;
	q->count--;
	if (dropped)
		count_drop(q, r->samples, r->type);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	free_request(r);
}

int export_queue__should_drop(struct export_queue *q, const struct export_request *r)
{
	int drop;

	pthread_mutex_lock(&q->lock);
	/* Only the waiting requests are newer: the held one is the oldest. */
	drop = q->bytes > q->max_bytes && q->head;
	pthread_mutex_unlock(&q->lock);
	(void)r;
	return drop;
}

void export_queue__close(struct export_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = 1;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

int export_queue__closed(struct export_queue *q)
{
	int c;

	pthread_mutex_lock(&q->lock);
	c = q->closed;
	pthread_mutex_unlock(&q->lock);
	return c;
}

void export_queue__stats(struct export_queue *q, struct export_queue_stats *out)
{
	pthread_mutex_lock(&q->lock);
	out->pushed = q->pushed;
	out->dropped = q->dropped;
	out->dropped_samples = q->dropped_samples;
	for (int t = 0; t < PROFILE_NTYPES; t++)
		out->dropped_samples_by_type[t] = q->dropped_samples_by_type[t];
	out->queued = q->count;
	out->queued_bytes = q->bytes;
	pthread_mutex_unlock(&q->lock);
}
