// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/runtime/ruby/: the layout of Ruby's structures per version, the
 * succinct index table of an iseq's line table (rubyproc__succ_lookup(), checked against a
 * table built here the way CRuby's iseq.c lays it out), and the naming of Ruby frame records
 * (bpf/ruby.h) against a synthetic memory image laid out as Ruby 3.1 lays out its rb_iseq_t,
 * rb_iseq_constant_body, RString and RArray (runtime/ruby/rubyproc.h), and of C methods'
 * frames from a synthetic symbol table (symbol.c's global_symbols.ids). No process, no root.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/ruby/rubyproc.h"

/* The image: BASE.. BASE + sizeof(mem), zeroed per test. */
#define BASE 0x7f0000000000ull
static unsigned char mem[1 << 16];

static int img_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	(void)ctx;
	if (addr < BASE || addr + n > BASE + sizeof(mem) || addr + n < addr)
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), n);
	return 0;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - BASE), &v, 4);
}

/* An embedded RString (T_STRING, length in flags bits 14-18, bytes at 16) at @addr. */
static void put_embedded(uint64_t addr, const char *s)
{
	put64(addr, 0x05 | (uint64_t)strlen(s) << 14);
	memcpy(mem + (addr - BASE) + 16, s, strlen(s));
}

/* A heap RString (NOEMBED, len at 16, ptr at 24) at @addr, its bytes at @bytes. */
static void put_heap(uint64_t addr, uint64_t bytes, const char *s)
{
	put64(addr, 0x05 | 1u << 13);
	put64(addr + 16, strlen(s));
	put64(addr + 24, bytes);
	memcpy(mem + (bytes - BASE), s, strlen(s));
}

static struct ruby_layout l31;

#define ISEQ (BASE + 0x100)
#define BODY (BASE + 0x200)
#define ENC (BASE + 0x1000)
#define LABEL (BASE + 0x400)
#define PATH (BASE + 0x500)
#define PATH_BYTES (BASE + 0x600)
#define PATHARY (BASE + 0x700)
#define ENTRIES (BASE + 0x800)
#define POSITIONS (BASE + 0x900)
#define SUCC (BASE + 0x4000)

static int setup(void **state)
{
	(void)state;
	memset(mem, 0, sizeof(mem));
	assert_int_equal(rubylayout__of(3, 1, &l31), 0);
	return 0;
}

/* A method "area" of /srv/app/shape.rb (line table @lines at @pos, @n entries) of @size
 * instruction slots; its positions table when @positions, else a succinct table. */
static void put_iseq(uint32_t size, const uint32_t *pos, const int32_t *lines, uint32_t n,
		     int positions);

static void test_layouts(void **state)
{
	struct ruby_layout l;
	struct ruby_desc d;

	(void)state;
	assert_int_equal(rubylayout__of(3, 1, &l), 0);
	assert_int_equal(l.cfp_size, 64);
	assert_int_equal(l.ractor_running_ec, 520);
	assert_int_equal(rubylayout__of(3, 0, &l), -ENOTSUP);
	assert_int_equal(rubylayout__of(3, 2, &l), -ENOTSUP);
	assert_int_equal(rubylayout__of(2, 7, &l), -ENOTSUP);
	memset(&d, 0, sizeof(d));
	assert_int_equal(rubylayout__of(3, 1, &l), 0);
	rubylayout__desc(&l, &d);
	assert_int_equal(d.ec_cfp, 16);
	assert_int_equal(d.th_thread_id, 80);
	assert_int_equal(d.body_iseq_encoded, 8);
}

/* CRuby's succinct table of the sorted positions @pos (@n) for @size positions, into @t. */
static size_t build_succ(const uint32_t *pos, uint32_t n, uint32_t size, uint8_t *t)
{
	size_t blocks = size > 54 ? (size - 54 + 511) / 512 : 0, len = 48 + blocks * 80;
	uint32_t r = 0;

	memset(t, 0, len);
	for (uint32_t j = 0; j < 6; j++) {
		uint64_t w = 0;

		for (uint32_t i = 0; i < 9; i++) {
			while (r < n && pos[r] <= j * 9 + i)
				r++;
			w |= (uint64_t)r << (7 * i);
		}
		memcpy(t + 8 * j, &w, 8);
	}
	for (size_t b = 0; b < blocks; b++) {
		uint8_t *blk = t + 48 + b * 80;
		uint32_t start = 54 + 512 * (uint32_t)b, rank = 0, counts[8] = {0};
		uint64_t small = 0, bits[8] = {0};

		for (uint32_t k = 0; k < n; k++) {
			if (pos[k] < start)
				rank++;
			else if (pos[k] < start + 512) {
				bits[(pos[k] - start) / 64] |= 1ull << ((pos[k] - start) % 64);
				counts[(pos[k] - start) / 64]++;
			}
		}
		for (uint32_t k = 1, acc = 0; k < 8; k++) {
			acc += counts[k - 1];
			small |= (uint64_t)acc << (9 * (k - 1));
		}
		memcpy(blk, &rank, 4);
		memcpy(blk + 8, &small, 8);
		memcpy(blk + 16, bits, sizeof(bits));
	}
	return len;
}

static void test_succ_lookup(void **state)
{
	static uint8_t t[48 + 3 * 80];
	uint32_t pos[200], n = 0, size = 1100;
	size_t len;

	(void)state;
	srand(7);
	for (uint32_t p = 0; p < size && n < 200; p += 1 + (uint32_t)(rand() % 11))
		pos[n++] = p;
	len = build_succ(pos, n, size, t);
	for (uint32_t x = 0; x < size; x++) {
		uint32_t want = 0;

		while (want < n && pos[want] <= x)
			want++;
		assert_int_equal(rubyproc__succ_lookup(t, len, x), want);
	}
	/* A table too short for the position: 0, never a read past it. */
	assert_int_equal(rubyproc__succ_lookup(t, 48, 60), 0);
	assert_int_equal(rubyproc__succ_lookup(t, 40, 3), 0);
}

static void put_iseq(uint32_t size, const uint32_t *pos, const int32_t *lines, uint32_t n,
		     int positions)
{
	put64(ISEQ, 0x1a | 7u << 12 | 0x180000);
	put64(ISEQ + l31.iseq_body, BODY);
	put32(BODY + l31.body_type, 1);
	put32(BODY + l31.body_iseq_size, size);
	put64(BODY + l31.body_iseq_encoded, ENC);
	put_embedded(LABEL, "area");
	put_heap(PATH, PATH_BYTES, "/srv/app/shape.rb");
	put64(BODY + l31.body_label, LABEL);
	put64(BODY + l31.body_pathobj, PATH);
	put64(BODY + l31.body_first_lineno, 2 * 10 + 1);
	for (uint32_t i = 0; i < n; i++)
		put32(ENTRIES + 12 * i, (uint32_t)lines[i]);
	put64(BODY + l31.body_insns_body, ENTRIES);
	put32(BODY + l31.body_insns_size, n);
	if (positions) {
		for (uint32_t i = 0; i < n; i++)
			put32(POSITIONS + 4 * i, pos[i]);
		put64(BODY + l31.body_insns_positions, POSITIONS);
	} else {
		build_succ(pos, n, size, mem + (SUCC - BASE));
		put64(BODY + l31.body_insns_succ, SUCC);
	}
}

/* The record BPF writes for the iseq at @iseq with iseq_encoded @enc and pc slot @slot. */
static void record(uint64_t iseq, uint64_t enc, uint32_t slot, uint64_t *w0, uint64_t *w1)
{
	*w0 = iseq | (uint64_t)RUBY_KIND_ISEQ << RUBY_KIND_SHIFT;
	*w1 = slot | (uint64_t)(uint32_t)enc << 32;
}

static void test_method_lines(void **state)
{
	static const uint32_t pos[] = {0, 3, 9, 60, 700};
	static const int32_t lines[] = {11, 12, 13, 14, 15};
	struct rubyproc *p;
	struct ruby_frame_name nm;
	struct rubyproc_stats st;
	uint64_t w0, w1;

	(void)state;
	for (int positions = 0; positions < 2; positions++) {
		memset(mem, 0, sizeof(mem));
		put_iseq(800, pos, lines, 5, positions);
		p = rubyproc__new(&l31, img_read, NULL);
		assert_non_null(p);
		/* pc is the next instruction: slot 4 ran position 3 (line 12). */
		record(ISEQ, ENC, 4, &w0, &w1);
		assert_int_equal(rubyproc__name(p, w0, w1, &nm), 0);
		assert_string_equal(nm.label, "area");
		assert_string_equal(nm.path, "/srv/app/shape.rb");
		assert_int_equal(nm.line, 12);
		record(ISEQ, ENC, 0, &w0, &w1);
		assert_int_equal(rubyproc__name(p, w0, w1, &nm), 0);
		assert_int_equal(nm.line, 11);
		record(ISEQ, ENC, 61, &w0, &w1);
		assert_int_equal(rubyproc__name(p, w0, w1, &nm), 0);
		assert_int_equal(nm.line, 14);
		record(ISEQ, ENC, 750, &w0, &w1);
		assert_int_equal(rubyproc__name(p, w0, w1, &nm), 0);
		assert_int_equal(nm.line, 15);
		/* The pc was not inside the iseq: the line is unknown, the frame named. */
		record(ISEQ, ENC, RUBY_PC_UNKNOWN, &w0, &w1);
		assert_int_equal(rubyproc__name(p, w0, w1, &nm), 0);
		assert_int_equal(nm.line, 0);
		rubyproc__stats(p, &st);
		assert_int_equal(st.named, 5);
		assert_int_equal(st.cached, 4);
		assert_int_equal(st.lines_unknown, 1);
		rubyproc__free(p);
	}
}

static void test_stale_and_bad(void **state)
{
	static const uint32_t pos[] = {0};
	static const int32_t lines[] = {7};
	struct rubyproc *p = rubyproc__new(&l31, img_read, NULL);
	struct ruby_frame_name nm;
	struct rubyproc_stats st;
	uint64_t w0, w1;

	(void)state;
	put_iseq(10, pos, lines, 1, 1);
	/* The path as an Array [path, realpath] (embedded, flag bit 13). */
	put64(PATHARY, 0x07 | 1u << 13 | 2u << 15);
	put64(PATHARY + 16, PATH);
	put64(BODY + l31.body_pathobj, PATHARY);
	record(ISEQ, ENC, 1, &w0, &w1);
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), 0);
	assert_string_equal(nm.path, "/srv/app/shape.rb");
	assert_int_equal(nm.line, 7);
	/* Another iseq compiled there since the sample: other iseq_encoded. */
	record(ISEQ, ENC + 0x80, 1, &w0, &w1);
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), -RUBYPROC_UNNAMED_STALE - 1);
	/* Not an iseq any more (freed: T_NONE). */
	put64(ISEQ, 0);
	record(ISEQ + 0, ENC, 1, &w0, &w1);
	w1 ^= 1ull << 40; /* not the cached fingerprint: read again */
	put64(BODY + l31.body_iseq_encoded, ENC ^ (1ull << 8));
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), -RUBYPROC_UNNAMED_STALE - 1);
	/* A label that is no String, or holds a control character. */
	put64(ISEQ, 0x1a | 7u << 12);
	put64(BODY + l31.body_iseq_encoded, ENC + 0x100);
	put64(LABEL, 0x07);
	record(ISEQ, ENC + 0x100, 1, &w0, &w1);
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), -RUBYPROC_UNNAMED_BAD_NAME - 1);
	put_embedded(LABEL, "ar\001a");
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), -RUBYPROC_UNNAMED_BAD_NAME - 1);
	/* Outside the process's memory. */
	record(BASE + sizeof(mem) + 0x1000, ENC, 1, &w0, &w1);
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), -RUBYPROC_UNNAMED_UNREADABLE - 1);
	/* A C method's record whose entry is no method entry (an iseq there): not named. */
	w0 = ISEQ | (uint64_t)RUBY_KIND_CFUNC << RUBY_KIND_SHIFT;
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), -RUBYPROC_UNNAMED_STALE - 1);
	rubyproc__stats(p, &st);
	assert_int_equal(st.named, 1);
	assert_int_equal(st.unnamed[RUBYPROC_UNNAMED_STALE], 3);
	assert_int_equal(st.unnamed[RUBYPROC_UNNAMED_BAD_NAME], 2);
	assert_int_equal(st.unnamed[RUBYPROC_UNNAMED_UNREADABLE], 1);
	rubyproc__free(p);
}

#define IDS (BASE + 0x7000)
#define IDS_PTR (BASE + 0x7100)
#define CHUNK (BASE + 0x7200)
#define CHUNK_PTR (BASE + 0x8000)
#define STRS (BASE + 0xa000)
#define ME (BASE + 0xc000)
#define DEF (BASE + 0xc100)
#define AREA (BASE + 0xd000)

/* The first name's serial (above tLAST_OP_ID). */
#define S0 0xaa

/* The ID of serial @s (a local name: scope bits 1). */
static uint64_t id_of(uint32_t s)
{
	return (uint64_t)s << 4 | 1;
}

/* A symbol table whose slot is at AREA + 0x10: operators "+" (43) and "-" (45), then 40 names
 * "m170".."m209" (serials 0xaa on, as Ruby's predefined names). */
static void put_symbols(void)
{
	char name[8];

	put64(AREA + 0x10, IDS);
	put64(IDS, 0x07); /* T_ARRAY, on the heap */
	put64(IDS + 16, 1);
	put64(IDS + 32, IDS_PTR);
	put64(IDS_PTR, CHUNK);
	put64(CHUNK, 0x07);
	put64(CHUNK + 16, 1024);
	put64(CHUNK + 32, CHUNK_PTR);
	for (uint32_t s = 0; s < 512; s++) {
		put64(CHUNK_PTR + 16 * s, 0x08);
		put64(CHUNK_PTR + 16 * s + 8, 0x08);
	}
	put_embedded(STRS, "+");
	put64(CHUNK_PTR + 16 * 43, STRS);
	put64(CHUNK_PTR + 16 * 43 + 8, 43u << 8 | 0x0c);
	put_embedded(STRS + 0x20, "-");
	put64(CHUNK_PTR + 16 * 45, STRS + 0x20);
	put64(CHUNK_PTR + 16 * 45 + 8, 45u << 8 | 0x0c);
	for (uint32_t s = S0; s < S0 + 40; s++) {
		snprintf(name, sizeof(name), "m%u", s);
		put_embedded(STRS + 0x40 * (s - S0 + 1), name);
		put64(CHUNK_PTR + 16 * s, STRS + 0x40 * (s - S0 + 1));
		put64(CHUNK_PTR + 16 * s + 8, id_of(s) << 8 | 0x0c);
	}
	/* A C method entry (imemo ment) called as m175. */
	put64(ME, 0x1a | 6u << 12);
	put64(ME + RUBY_ME_DEF, DEF);
	put64(ME + RUBY_ME_CALLED_ID, id_of(S0 + 5));
}

static void test_cfunc_names(void **state)
{
	struct rubyproc *p = rubyproc__new(&l31, img_read, NULL), *none;
	struct ruby_frame_name nm;
	struct rubyproc_stats st;
	uint64_t w0 = ME | (uint64_t)RUBY_KIND_CFUNC << RUBY_KIND_SHIFT, w1 = (uint64_t)DEF << 32;

	(void)state;
	put_symbols();
	rubyproc__set_symbols_area(p, AREA, AREA + 0x100);
	assert_int_equal(rubyproc__name(p, w0, w1, &nm), 0);
	assert_string_equal(nm.label, "m175");
	assert_null(nm.path);
	assert_int_equal(nm.line, 0);
	/* Another method entry there since the sample: another definition. */
	assert_int_equal(rubyproc__name(p, w0, (uint64_t)(DEF + 0x40) << 32, &nm),
			 -RUBYPROC_UNNAMED_STALE - 1);
	/* A name whose Symbol says another ID: not taken. */
	put64(ME, 0x1a | 6u << 12);
	put64(ME + RUBY_ME_DEF, DEF + 0x80);
	put64(ME + RUBY_ME_CALLED_ID, id_of(S0 + 7));
	put64(CHUNK_PTR + 16 * (S0 + 7) + 8, id_of(S0 + 8) << 8 | 0x0c);
	assert_int_equal(rubyproc__name(p, w0, (uint64_t)(DEF + 0x80) << 32, &nm),
			 -RUBYPROC_UNNAMED_CFUNC - 1);
	rubyproc__stats(p, &st);
	assert_int_equal(st.named, 1);
	assert_int_equal(st.unnamed[RUBYPROC_UNNAMED_STALE], 1);
	assert_int_equal(st.unnamed[RUBYPROC_UNNAMED_CFUNC], 1);
	rubyproc__free(p);
	/* No symbol table in the area (its Symbols do not say their serials): no name. */
	put64(CHUNK_PTR + 16 * (S0 + 7) + 8, id_of(S0 + 7) << 8 | 0x0c);
	put64(CHUNK_PTR + 16 * (S0 + 3) + 8, id_of(S0 + 4) << 8 | 0x0c);
	put64(ME + RUBY_ME_CALLED_ID, id_of(S0 + 5));
	none = rubyproc__new(&l31, img_read, NULL);
	rubyproc__set_symbols_area(none, AREA, AREA + 0x100);
	assert_int_equal(rubyproc__name(none, w0, (uint64_t)(DEF + 0x80) << 32, &nm),
			 -RUBYPROC_UNNAMED_CFUNC - 1);
	rubyproc__free(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layouts),
	    cmocka_unit_test(test_succ_lookup),
	    cmocka_unit_test_setup(test_method_lines, setup),
	    cmocka_unit_test_setup(test_stale_and_bad, setup),
	    cmocka_unit_test_setup(test_cfunc_names, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
