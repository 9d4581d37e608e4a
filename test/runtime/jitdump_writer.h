// SPDX-License-Identifier: Apache-2.0
/*
 * A jitdump file written record by record, as a JIT writes it
 * (tools/perf/Documentation/jitdump-specification.txt), for the unit tests of
 * exporter/runtime/jit (test_jitdump.c, test_jitproc.c). Include after <cmocka.h> and
 * runtime/jit/jitdump.h.
 */
#ifndef SPANPROF_TEST_RUNTIME_JITDUMP_WRITER_H
#define SPANPROF_TEST_RUNTIME_JITDUMP_WRITER_H

/* A file being written, as a JIT writes it. */
struct w {
	unsigned char buf[1 << 16];
	size_t n;
};

static inline void put(struct w *w, const void *p, size_t len)
{
	assert_true(w->n + len <= sizeof(w->buf));
	memcpy(w->buf + w->n, p, len);
	w->n += len;
}

static inline void put32(struct w *w, uint32_t v)
{
	put(w, &v, 4);
}

static inline void put64(struct w *w, uint64_t v)
{
	put(w, &v, 8);
}

static inline void header(struct w *w, uint32_t magic)
{
	put32(w, magic);
	put32(w, JITDUMP_VERSION);
	put32(w, 40); /* header size */
	put32(w, 62); /* EM_X86_64 */
	put32(w, 0);
	put32(w, 4242);
	put64(w, 1);
	put64(w, 0);
}

static inline void rec_header(struct w *w, uint32_t id, uint32_t total)
{
	put32(w, id);
	put32(w, total);
	put64(w, 2); /* timestamp */
}

static inline void load(struct w *w, uint64_t addr, uint64_t size, const char *name)
{
	size_t nl = strlen(name) + 1;

	rec_header(w, JIT_CODE_LOAD, (uint32_t)(16 + 40 + nl + size));
	put32(w, 4242);
	put32(w, 4243);
	put64(w, addr); /* vma */
	put64(w, addr); /* code_addr */
	put64(w, size);
	put64(w, 7); /* code_index */
	put(w, name, nl);
	for (uint64_t i = 0; i < size; i++)
		put(w, "\xc3", 1); /* the code */
}

static inline void move(struct w *w, uint64_t from, uint64_t to, uint64_t size)
{
	rec_header(w, JIT_CODE_MOVE, 16 + 48);
	put32(w, 4242);
	put32(w, 4243);
	put64(w, to); /* vma */
	put64(w, from);
	put64(w, to);
	put64(w, size);
	put64(w, 7);
}

/*
 * JIT_CODE_UNWINDING_INFO: @eh (@ehsize bytes of .eh_frame) then @hdrsize bytes of .eh_frame_hdr
 * (0xee); @usize the unwinding_size field (0: the true one, ehsize + hdrsize).
 */
static inline void unwinding(struct w *w, const char *eh, uint64_t ehsize, uint64_t hdrsize,
			     uint64_t usize)
{
	uint64_t data = ehsize + hdrsize, pad = (8 - data % 8) % 8;

	rec_header(w, JIT_CODE_UNWINDING_INFO, (uint32_t)(16 + 24 + data + pad));
	put64(w, usize ? usize : data);
	put64(w, hdrsize);
	put64(w, data); /* mapped_size */
	put(w, eh, ehsize);
	for (uint64_t i = 0; i < hdrsize + pad; i++)
		put(w, "\xee", 1);
}

#endif /* SPANPROF_TEST_RUNTIME_JITDUMP_WRITER_H */
