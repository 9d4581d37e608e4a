/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procs: each process's list of executable mappings, with the table and bias of each, built from
 * its maps and written to the BPF walker's process map. u->lock held.
 */
#ifndef SPANPROF_UNWIND_PROCS_H
#define SPANPROF_UNWIND_PROCS_H

#include <stdint.h>

#include "unwind/unwinder_state.h"

/* unwinder__update_process() with u->lock held. */
int update_locked(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
		  const struct procmaps *maps);

/* Forgets process @pid: its entry in the BPF process map, its references to tables. */
void remove_locked(struct unwinder *u, uint32_t pid);

/*
 * (Re-)loads process (@pid, @start_boot_ns) from its maps without the process table: a new
 * process at its exec (nothing but its tables is needed before its first sample; the process
 * table reads the rest then), and its re-reads until then. A PID gone or reused meanwhile is
 * left alone. u->lock held. 0 or -errno.
 */
int load_unsampled(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns);

/* A process named on the command line, by the builder (JOB_PRELOAD). u->lock held. */
int load_named(struct unwinder *u, uint32_t pid);

#endif /* SPANPROF_UNWIND_PROCS_H */
