/* SPDX-License-Identifier: Apache-2.0 */
/*
 * samplequeue: the records of the sample ring buffer (struct sp_sample, struct sp_exec_path,
 * bpf/sampler.h), moved out of the ring as soon as they arrive and kept, compacted, until the
 * agent's main thread gets to them. The ring is sized for about one second of samples; the main
 * thread may be busy for longer (CFI tables and symbols of a new binary, a loaded machine): a
 * thread that only copies keeps the ring from filling meanwhile (sampler.c).
 *
 * A sample keeps only what it uses: its header, kstack_len kernel PCs, ustack_len user PCs and
 * its Python and V8 frames (2 * py_len + 3 * v8_len slots after them), ctx_len bytes of context and
 * vmas.n file identities: a few hundred bytes instead of ~6.5 KiB. Not thread-safe: the caller
 * locks.
 */
#ifndef SPANPROF_SAMPLEQUEUE_H
#define SPANPROF_SAMPLEQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "sampler.h"

struct samplequeue;

/*
 * A queue holding at most @max_bytes of records (memory blocks counted whole). NULL and errno
 * (ENOMEM). Free with samplequeue__free().
 */
struct samplequeue *samplequeue__new(size_t max_bytes);
void samplequeue__free(struct samplequeue *q);

/*
 * Appends one ring record (@data, @size bytes: a struct sp_sample, or any other record, kept as
 * is). 0, -EINVAL (a sample whose lengths exceed its arrays: dropped), -ENOSPC (the queue is
 * full: dropped), -ENOMEM. The caller counts what was dropped.
 */
int samplequeue__push(struct samplequeue *q, const void *data, size_t size);

/*
 * Moves every queued record to @into (emptied first), leaving @q empty: the caller then reads
 * @into with samplequeue__pop() without holding @q's lock.
 */
void samplequeue__take(struct samplequeue *q, struct samplequeue *into);

/*
 * The oldest record, removed: a sample is rebuilt whole into @scratch (at least sizeof(struct
 * sp_sample) bytes, unused slots zeroed) and *@size is sizeof(struct sp_sample); another record
 * is copied as is. Returns @scratch, or NULL when the queue is empty.
 */
void *samplequeue__pop(struct samplequeue *q, void *scratch, size_t *size);

/* Bytes held now (whole blocks), and the most ever held. */
size_t samplequeue__bytes(const struct samplequeue *q);
size_t samplequeue__peak_bytes(const struct samplequeue *q);

/* Bytes a sample takes in the queue (its compact form, without the queue's own header). */
size_t samplequeue__sample_bytes(const struct sp_sample *s);

#endif /* SPANPROF_SAMPLEQUEUE_H */
