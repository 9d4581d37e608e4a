/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tables: one file's CFI table (or one process's JIT CFI), built from the file, loaded into the
 * rows, shared by every process that maps the file (reference counted) and kept a while idle.
 * u->lock held.
 */
#ifndef SPANPROF_UNWIND_TABLES_H
#define SPANPROF_UNWIND_TABLES_H

#include <stdint.h>

#include "unwind/unwinder_state.h"

/* The table of the open file fd (identity key), built on first use. NULL on ENOMEM. */
struct utable *table_get(struct unwinder *u, const struct file_key *key, int fd);

/*
 * The JIT CFI table of process @pid (started at @start_boot_ns) from @cfi: a new entry of the
 * file table under a key no file has, built from every code load's .eh_frame (each FDE kept to
 * its own code). NULL on ENOMEM; a table without rows has id NONE.
 */
struct utable *jit_table_new(struct unwinder *u, uint32_t pid, uint64_t start_boot_ns,
			     const struct jitproc_cfi *cfi);

void table_put(struct unwinder *u, struct utable *t);

/* Frees the oldest idle table: 0, or -ENOSPC when there is none. */
int idle_evict_one(struct unwinder *u);

#endif /* SPANPROF_UNWIND_TABLES_H */
