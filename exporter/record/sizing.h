/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sizing: the memory a run sets itself: the sample ring buffer's size and glibc malloc's
 * settings (docs/performance.md). Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_SIZING_H
#define SPANPROF_RECORD_SIZING_H

#include <stdint.h>

#include "record/record_opts.h"

/* Free heap pages are handed back this often (record__tune_malloc()). */
#define RECORD_TRIM_NS (2 * 1000000000ull)

/*
 * Ring buffer size: one second of samples with every CPU busy, as a power of
 * two within [512 KiB, 64 MiB]. A thread of the sampler empties it into a queue every 10 ms
 * (sampling/samplequeue.h), so it only has to hold what comes while that thread waits for a
 * CPU on a loaded machine, without pinning memory that an idle machine never touches.
 */
uint32_t record__ringbuf_size(const struct record_opts *o);

/*
 * glibc malloc, tuned for a long-running agent with a memory target (docs/performance.md):
 * a fixed mmap threshold sends the large, short-lived buffers (CFI tables being built, inflated
 * DWARF, encoded requests) to their own mappings, returned whole on free, instead of letting the
 * dynamic threshold grow and leave them as holes in the heap; two arenas for the few threads;
 * free heap pages are handed back every RECORD_TRIM_NS.
 */
void record__tune_malloc(void);

#endif /* SPANPROF_RECORD_SIZING_H */
