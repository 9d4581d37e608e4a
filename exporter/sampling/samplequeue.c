/* SPDX-License-Identifier: Apache-2.0 */
/* The compacted queue of ring records: see samplequeue.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/samplequeue.h"

#define BLOCK_BYTES (256u << 10)

/* One record in a block: its header, then its bytes, padded to 8. */
struct rec {
	uint32_t bytes;	  /* bytes stored after this header */
	uint32_t size;	  /* the ring record's size */
	uint32_t compact; /* 1: a compacted struct sp_sample */
	uint32_t pad;
};

struct block {
	struct block *next;
	size_t used, read; /* bytes written, bytes popped */
	unsigned char data[];
};

struct samplequeue {
	struct block *head, *tail;
	size_t bytes, peak, max;
};

_Static_assert(BLOCK_BYTES - sizeof(struct block) >= sizeof(struct rec) + sizeof(struct sp_sample),
	       "a whole sample fits in a block");

#define KSTACK_OFF offsetof(struct sp_sample, kstack)
#define TAIL_OFF offsetof(struct sp_sample, ctx_len)
#define TAIL_HDR (offsetof(struct sp_sample, ctx) - TAIL_OFF)
#define VMAS_HDR offsetof(struct sp_vmas, vma)

struct samplequeue *samplequeue__new(size_t max_bytes)
{
	struct samplequeue *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->max = max_bytes;
	return q;
}

static void free_blocks(struct block *b)
{
	while (b) {
		struct block *n = b->next;

		free(b);
		b = n;
	}
}

void samplequeue__free(struct samplequeue *q)
{
	if (!q)
		return;
	free_blocks(q->head);
	free(q);
}

/* Whether the lengths of @s fit its arrays (BPF never writes more; a bad one is kept whole). */
static int sample_sane(const struct sp_sample *s)
{
	return s->kstack_len <= SP_MAX_KSTACK && sp_ustack_slots(s) <= SP_MAX_USTACK &&
	       s->ctx_len <= SP_CTX_MAX && s->vmas.n <= SP_MAX_VMAS;
}

size_t samplequeue__sample_bytes(const struct sp_sample *s)
{
	if (!sample_sane(s))
		return sizeof(*s);
	return KSTACK_OFF + 8u * s->kstack_len + 8u * sp_ustack_slots(s) + TAIL_HDR + s->ctx_len +
	       VMAS_HDR + sizeof(s->vmas.vma[0]) * s->vmas.n;
}

static unsigned char *put(unsigned char *p, const void *src, size_t n)
{
	memcpy(p, src, n);
	return p + n;
}

static void compact(const struct sp_sample *s, unsigned char *p)
{
	/* The lengths first (py_len, v8_len are in the tail): expand() reads them before the
	 * arrays. */
	p = put(p, s, KSTACK_OFF);
	p = put(p, &s->ctx_len, TAIL_HDR);
	p = put(p, s->kstack, 8u * s->kstack_len);
	p = put(p, s->ustack, 8u * sp_ustack_slots(s));
	p = put(p, s->ctx, s->ctx_len);
	p = put(p, &s->vmas, VMAS_HDR);
	put(p, s->vmas.vma, sizeof(s->vmas.vma[0]) * s->vmas.n);
}

static const unsigned char *get(void *dst, const unsigned char *p, size_t n)
{
	memcpy(dst, p, n);
	return p + n;
}

static void expand(const unsigned char *p, struct sp_sample *s)
{
	memset(s, 0, sizeof(*s));
	p = get(s, p, KSTACK_OFF);
	p = get(&s->ctx_len, p, TAIL_HDR);
	p = get(s->kstack, p, 8u * s->kstack_len);
	p = get(s->ustack, p, 8u * sp_ustack_slots(s));
	p = get(s->ctx, p, s->ctx_len);
	p = get(&s->vmas, p, VMAS_HDR);
	get(s->vmas.vma, p, sizeof(s->vmas.vma[0]) * s->vmas.n);
}

int samplequeue__push(struct samplequeue *q, const void *data, size_t size)
{
	int is_sample = size == sizeof(struct sp_sample) && sample_sane(data);
	size_t bytes = is_sample ? samplequeue__sample_bytes(data) : size;
	size_t need = sizeof(struct rec) + ((bytes + 7) & ~(size_t)7);
	struct rec r = {.bytes = (uint32_t)bytes, .size = (uint32_t)size, .compact = is_sample};
	struct block *b = q->tail;

	if (size > sizeof(struct sp_sample)) /* no ring record is larger: pop() relies on it */
		return -EINVAL;
	if (!b || BLOCK_BYTES - sizeof(struct block) - b->used < need) {
		if (q->bytes + BLOCK_BYTES > q->max)
			return -ENOSPC;
		b = malloc(BLOCK_BYTES);
		if (!b)
			return -ENOMEM;
		b->next = NULL;
		b->used = b->read = 0;
		if (q->tail)
			q->tail->next = b;
		else
			q->head = b;
		q->tail = b;
		q->bytes += BLOCK_BYTES;
		if (q->bytes > q->peak)
			q->peak = q->bytes;
	}
	memcpy(b->data + b->used, &r, sizeof(r));
	if (is_sample)
		compact(data, b->data + b->used + sizeof(r));
	else
		memcpy(b->data + b->used + sizeof(r), data, size);
	b->used += need;
	return 0;
}

void samplequeue__take(struct samplequeue *q, struct samplequeue *into)
{
	free_blocks(into->head);
	into->head = q->head;
	into->tail = q->tail;
	into->bytes = q->bytes;
	q->head = q->tail = NULL;
	q->bytes = 0;
}

void *samplequeue__pop(struct samplequeue *q, void *scratch, size_t *size)
{
	struct block *b = q->head;
	struct rec r;

	while (b && b->read == b->used) {
		q->head = b->next;
		if (!q->head)
			q->tail = NULL;
		q->bytes -= BLOCK_BYTES;
		free(b);
		b = q->head;
	}
	if (!b)
		return NULL;
	memcpy(&r, b->data + b->read, sizeof(r));
	if (r.compact)
		expand(b->data + b->read + sizeof(r), scratch);
	else
		memcpy(scratch, b->data + b->read + sizeof(r), r.size);
	*size = r.size;
	b->read += sizeof(r) + ((r.bytes + 7) & ~(size_t)7);
	return scratch;
}

size_t samplequeue__bytes(const struct samplequeue *q)
{
	return q->bytes;
}

size_t samplequeue__peak_bytes(const struct samplequeue *q)
{
	return q->peak;
}
