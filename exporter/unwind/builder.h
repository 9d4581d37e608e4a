/* SPDX-License-Identifier: Apache-2.0 */
/*
 * builder: the builder thread, which runs the queue's jobs (u->lock held for one job at a time)
 * and the housekeeping.
 */
#ifndef SPANPROF_UNWIND_BUILDER_H
#define SPANPROF_UNWIND_BUILDER_H

#include <stdint.h>

#include "unwind/unwinder_state.h"

/*
 * The builder: takes the most urgent job (a new process's own files first, then processes
 * whose samples are arriving, then notified re-reads), builds what it needs with u->lock held,
 * and does the housekeeping at least once a second. The agent's main thread only queues.
 */
void *builder(void *arg);

#endif /* SPANPROF_UNWIND_BUILDER_H */
