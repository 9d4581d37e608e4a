/* SPDX-License-Identifier: Apache-2.0 */
/* deadline: a function called at a CLOCK_MONOTONIC time from its own thread (deadline.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "sampling/deadline.h"
#include "util/util.h"

struct deadline {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	uint64_t at_ns;
	void (*fn)(void *ctx);
	void *ctx;
	int cancelled; /* under lock */
	int joined;
	uint64_t _Atomic fired_ns; /* read without the lock */
};

static void *run(void *arg)
{
	struct deadline *d = arg;
	struct timespec at = {.tv_sec = d->at_ns / 1000000000ull,
			      .tv_nsec = d->at_ns % 1000000000ull};
	int cancelled;

	pthread_mutex_lock(&d->lock);
	while (!d->cancelled && util__mono_ns() < d->at_ns)
		pthread_cond_timedwait(&d->cond, &d->lock, &at);
	cancelled = d->cancelled;
	pthread_mutex_unlock(&d->lock);
	if (!cancelled) {
		d->fn(d->ctx);
		d->fired_ns = util__mono_ns();
	}
	return NULL;
}

struct deadline *deadline__new(uint64_t at_ns, void (*fn)(void *ctx), void *ctx)
{
	struct deadline *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;
	int err;

	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->at_ns = at_ns;
	d->fn = fn;
	d->ctx = ctx;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&d->thread, NULL, run, d);
	if (err) {
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->lock);
		free(d);
		errno = err;
		return NULL;
	}
	return d;
}

uint64_t deadline__fired(const struct deadline *d)
{
	return d ? d->fired_ns : 0;
}

void deadline__cancel(struct deadline *d)
{
	if (!d || d->joined)
		return;
	pthread_mutex_lock(&d->lock);
	d->cancelled = 1;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	d->joined = 1;
}

void deadline__free(struct deadline *d)
{
	if (!d)
		return;
	deadline__cancel(d);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
