/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "unwind/rows.h"

static int chunk_create(struct unwinder *u, uint32_t slot)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct chunk *c = &u->chunks[slot];
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "sp_unw_chunk", sizeof(uint32_t),
			    UNWIND_CHUNK_BYTES, 1, &mo);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(u->o.maps.chunks_fd, &slot, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	c->fd = fd;
	c->next = 0;
	c->big = 0;
	u->st.chunks++;
	u->st.chunk_bytes += UNWIND_CHUNK_BYTES;
	return 0;
}

void chunk_release(struct unwinder *u, uint32_t slot)
{
	struct chunk *c = &u->chunks[slot];

	if (c->fd < 0)
		return;
	bpf_map_delete_elem(u->o.maps.chunks_fd, &slot);
	close(c->fd);
	free(c->ext);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	u->st.chunks--;
	u->st.chunk_bytes -= UNWIND_CHUNK_BYTES;
}

/*
 * Copies n rows to row off of chunk slot. The chunk is mapped only for the copy: a mapping of a
 * BPF array holds all its pages resident in this process (RSS) for as long as it exists.
 */
int chunk_write(struct unwinder *u, uint32_t slot, uint32_t off, const struct unwind_row *src,
		uint32_t n)
{
	size_t lo = (size_t)off * sizeof(*src) & ~(size_t)4095;
	size_t hi = (size_t)(off + n) * sizeof(*src);
	char *mem;

	/* Only the pages written: the kernel maps a BPF array from a page-aligned offset. */
	hi = (hi + 4095) & ~(size_t)4095;
	mem = mmap(NULL, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED, u->chunks[slot].fd, lo);
	if (mem == MAP_FAILED)
		return -errno;
	memcpy(mem + (size_t)off * sizeof(*src) - lo, src, (size_t)n * sizeof(*src));
	munmap(mem, hi - lo);
	return 0;
}

static int chunk_add_extent(struct chunk *c, size_t at, uint32_t off, uint32_t len)
{
	if (c->next == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct extent *e = realloc(c->ext, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		c->ext = e;
		c->cap = cap;
	}
	memmove(&c->ext[at + 1], &c->ext[at], (c->next - at) * sizeof(*c->ext));
	c->ext[at].off = off;
	c->ext[at].len = len;
	c->next++;
	return 0;
}

/* First fit in a chunk shared by small tables: the row offset, or -1. */
static int64_t chunk_fit(const struct chunk *c, uint32_t count, size_t *at)
{
	uint32_t prev_end = 0;

	for (size_t i = 0; i <= c->next; i++) {
		uint32_t next_off = i < c->next ? c->ext[i].off : UNWIND_CHUNK_ROWS;

		if (next_off - prev_end >= count) {
			*at = i;
			return prev_end;
		}
		if (i < c->next)
			prev_end = c->ext[i].off + c->ext[i].len;
	}
	return -1;
}

/* Reserves count rows: *first is their global index. 0, -ENOSPC (limit) or -errno. */
int rows_alloc(struct unwinder *u, uint32_t count, uint32_t *first)
{
	uint32_t max = u->o.maps.max_chunks, need, run = 0, slot;
	int64_t off;
	size_t at;
	int err;

	if (count <= UNWIND_CHUNK_ROWS) {
		for (slot = 0; slot < max; slot++) {
			struct chunk *c = &u->chunks[slot];

			if (c->fd < 0 || c->big || (off = chunk_fit(c, count, &at)) < 0)
				continue;
			err = chunk_add_extent(c, at, off, count);
			if (err)
				return err;
			*first = slot * UNWIND_CHUNK_ROWS + off;
			return 0;
		}
		for (slot = 0; slot < max && u->chunks[slot].fd >= 0; slot++)
			;
		if (slot == max)
			return -ENOSPC;
		err = chunk_create(u, slot);
		if (err)
			return err;
		err = chunk_add_extent(&u->chunks[slot], 0, 0, count);
		if (err) {
			chunk_release(u, slot);
			return err;
		}
		*first = slot * UNWIND_CHUNK_ROWS;
		return 0;
	}
	/* A large table takes consecutive whole chunks. */
	need = (count + UNWIND_CHUNK_ROWS - 1) / UNWIND_CHUNK_ROWS;
	for (slot = 0; slot < max && run < need; slot++)
		run = u->chunks[slot].fd < 0 ? run + 1 : 0;
	if (run < need)
		return -ENOSPC;
	slot -= need;
	for (uint32_t i = 0; i < need; i++) {
		uint32_t len = count - i * UNWIND_CHUNK_ROWS;

		err = chunk_create(u, slot + i);
		if (!err)
			err = chunk_add_extent(&u->chunks[slot + i], 0, 0,
					       len > UNWIND_CHUNK_ROWS ? UNWIND_CHUNK_ROWS : len);
		if (err) {
			for (uint32_t j = 0; j <= i; j++)
				chunk_release(u, slot + j);
			return err;
		}
		u->chunks[slot + i].big = 1;
	}
	*first = slot * UNWIND_CHUNK_ROWS;
	return 0;
}

void rows_free(struct unwinder *u, uint32_t first, uint32_t count)
{
	uint32_t slot = first / UNWIND_CHUNK_ROWS, off = first % UNWIND_CHUNK_ROWS;
	uint32_t nchunks =
	    count <= UNWIND_CHUNK_ROWS ? 1 : (count + UNWIND_CHUNK_ROWS - 1) / UNWIND_CHUNK_ROWS;

	for (uint32_t i = 0; i < nchunks; i++, off = 0) {
		struct chunk *c = &u->chunks[slot + i];

		for (size_t j = 0; j < c->next; j++) {
			if (c->ext[j].off != off)
				continue;
			memmove(&c->ext[j], &c->ext[j + 1], (c->next - j - 1) * sizeof(*c->ext));
			c->next--;
			break;
		}
		if (!c->next)
			chunk_release(u, slot + i);
	}
	u->free_gen++;
}
