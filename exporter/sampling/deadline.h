/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deadline: call a function at a given CLOCK_MONOTONIC time from a thread of its own, whatever
 * the main thread is busy with (record: stop sampling when --duration is over even while the
 * main thread is still reading maps or building CFI tables).
 */
#ifndef SPANPROF_DEADLINE_H
#define SPANPROF_DEADLINE_H

#include <stdint.h>

struct deadline;

/*
 * Starts a thread that calls @fn(@ctx) once, at @at_ns (CLOCK_MONOTONIC nanoseconds; a time
 * already past calls it at once), unless deadline__free() comes first. @fn runs on that thread:
 * it must be safe against what the caller's thread does meanwhile. NULL and errno (ENOMEM,
 * EAGAIN) on failure. Free with deadline__free().
 */
struct deadline *deadline__new(uint64_t at_ns, void (*fn)(void *ctx), void *ctx);

/* CLOCK_MONOTONIC ns when @fn was called (after it returned), 0 while it has not been; NULL: 0. */
uint64_t deadline__fired(const struct deadline *d);

/*
 * Cancels the call if it has not happened and waits for the thread: after it, @fn is not running
 * and deadline__fired() is final. Idempotent; NULL is a no-op.
 */
void deadline__cancel(struct deadline *d);

/* deadline__cancel(), then frees @d; NULL is a no-op. */
void deadline__free(struct deadline *d);

#endif
