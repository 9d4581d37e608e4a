/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rows: the unwinder's row memory, BPF array maps of UNWIND_CHUNK_ROWS rows (chunks) created on
 * demand up to the byte limit, and the ranges of rows each table holds in them. u->lock held.
 */
#ifndef SPANPROF_UNWIND_ROWS_H
#define SPANPROF_UNWIND_ROWS_H

#include <stdint.h>

#include "unwind/unwinder_state.h"

/* Reserves count rows: *first is their global index. 0, -ENOSPC (limit) or -errno. */
int rows_alloc(struct unwinder *u, uint32_t count, uint32_t *first);

void rows_free(struct unwinder *u, uint32_t first, uint32_t count);

/*
 * Copies n rows to row off of chunk slot. The chunk is mapped only for the copy: a mapping of a
 * BPF array holds all its pages resident in this process (RSS) for as long as it exists.
 */
int chunk_write(struct unwinder *u, uint32_t slot, uint32_t off, const struct unwind_row *src,
		uint32_t n);

void chunk_release(struct unwinder *u, uint32_t slot);

#endif /* SPANPROF_UNWIND_ROWS_H */
