/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pidwatch: have all the processes given with --pid exited? (as 'perf record -p' stops)
 *
 * Each process is held by a pidfd (pidfd_open(2), Linux 5.3), which becomes readable when the
 * process exits; a PID reused later by another process is not mistaken for it.
 */
#ifndef SPANPROF_PIDWATCH_H
#define SPANPROF_PIDWATCH_H

#include <stddef.h>
#include <stdint.h>

struct pidwatch;

/*
 * Watches the @n processes @pids (thread group ids; duplicates are fine). NULL and errno:
 * ENOMEM; ESRCH when one of them no longer exists; ENOSYS or another pidfd_open() error when
 * processes cannot be watched (the caller then keeps running without this check). @pids is
 * copied; the caller owns the result and frees it with pidwatch__free().
 */
struct pidwatch *pidwatch__new(const uint32_t *pids, size_t n);

/* Frees @w and closes its descriptors; NULL is a no-op. */
void pidwatch__free(struct pidwatch *w);

/*
 * How many of the watched processes still run (a zombie has exited). Never blocks. A process
 * whose state cannot be polled counts as running.
 */
size_t pidwatch__running(struct pidwatch *w);

#endif
