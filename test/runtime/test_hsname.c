// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/runtime/jvm/hsname.c over a synthetic process image: HotSpot objects
 * (Method, ConstMethod with bytecodes and a compressed line-number table, ConstantPool with tags
 * and Symbols, InstanceKlass, nmethods with PcDescs, scopes data and metadata) written by hand
 * into one buffer the namer reads through an injected reader, with the field layouts of JDK 17
 * and JDK 25 as their VMStructs tables give them (/tmp-dumped values: ConstMethod 48 / 56
 * bytes, nmethod 352 / 224 bytes, ...). The streams are encoded here from HotSpot's writers
 * (CompressedLineNumberWriteStream::write_pair(), UNSIGNED5::write_uint() with byte 0 excluded
 * from JDK 21, without before). Checked: names and lines of interpreted frames, a changed
 * fingerprint and a bytecode pointer outside the bytecodes refused, inlined scopes innermost
 * first at a PcDesc, nothing guessed between PcDescs, proofs of compiled frames, garbage (random
 * images, broken chains, bad symbols) never named wrongly and never crashing. No root.
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

#include "runtime/jvm/hsname.h"
#include "runtime/jvm/hsvm.h"

/* --- the image ------------------------------------------------------------------------- */

#define BASE 0x7f0000000000ull
#define IMAGE (1u << 20)

static uint8_t image[IMAGE];
static uint64_t brk_; /* next free byte of the image (offset) */
static int reads;

static int read_image(int pid, uint64_t addr, void *buf, size_t len)
{
	(void)pid;
	reads++;
	if (addr < BASE || addr - BASE > IMAGE || IMAGE - (addr - BASE) < len)
		return -EFAULT;
	memcpy(buf, image + (addr - BASE), len);
	return 0;
}

static uint64_t alloc(size_t len)
{
	uint64_t a = BASE + brk_;

	brk_ = (brk_ + len + 15) & ~15ull;
	assert_true(brk_ <= IMAGE);
	return a;
}

static __attribute__((noinline)) void put(uint64_t addr, const void *v, size_t len)
{
	assert_true(addr >= BASE && addr - BASE + len <= IMAGE);
	memcpy(image + (addr - BASE), v, len);
}

static void put64(uint64_t a, uint64_t v)
{
	put(a, &v, 8);
}
static void put32(uint64_t a, uint32_t v)
{
	put(a, &v, 4);
}
static void put16(uint64_t a, uint16_t v)
{
	put(a, &v, 2);
}

/* --- layouts (the values JDK 17 and JDK 25 export, see /tmp/hs dumps in the header) ------ */

struct lay {
	bool jdk25;
	uint64_t method_cm, cm_size, cm_constants, cm_total, cm_flags, cm_code_size, cm_name;
	uint64_t cp_size, cp_tags, cp_holder, cp_length, cp_source;
	uint64_t klass_name, nm_size, nm_method, nm_compile_id;
	/* JDK 17 */
	uint64_t blob_code_begin, scopes_data_begin, pcs_off, deps_off, meta_off;
	/* JDK 25 */
	uint64_t blob_code_offset, mutable_data, reloc_size, mutable_size, immutable,
	    immutable_size, scopes_data_off;
};

static const struct lay jdk17 = {.method_cm = 8,
				 .cm_size = 48,
				 .cm_constants = 8,
				 .cm_total = 24,
				 .cm_flags = 28,
				 .cm_code_size = 32,
				 .cm_name = 34,
				 .cp_size = 72,
				 .cp_tags = 8,
				 .cp_holder = 24,
				 .cp_length = 60,
				 .cp_source = 54,
				 .klass_name = 24,
				 .nm_size = 352,
				 .nm_method = 112,
				 .nm_compile_id = 304,
				 .blob_code_begin = 32,
				 .scopes_data_begin = 120,
				 .pcs_off = 268,
				 .deps_off = 272,
				 .meta_off = 260};

static const struct lay jdk25 = {.jdk25 = true,
				 .method_cm = 8,
				 .cm_size = 56,
				 .cm_constants = 8,
				 .cm_total = 24,
				 .cm_flags = 28,
				 .cm_code_size = 34,
				 .cm_name = 36,
				 .cp_size = 72,
				 .cp_tags = 8,
				 .cp_holder = 24,
				 .cp_length = 60,
				 .cp_source = 54,
				 .klass_name = 24,
				 .nm_size = 224,
				 .nm_method = 80,
				 .nm_compile_id = 212,
				 .pcs_off = 196,
				 .blob_code_offset = 36,
				 .mutable_data = 16,
				 .reloc_size = 28,
				 .mutable_size = 48,
				 .immutable = 96,
				 .immutable_size = 160,
				 .scopes_data_off = 200};

/* A field table_of() leaves out (tests of a JVM without it); NULL: none. */
static const char *skip;

static void addf(struct hsvm *vm, const char *type, const char *field, uint64_t off)
{
	if (!skip || strcmp(skip, field))
		assert_int_equal(hsvm__add_field(vm, type, field, false, off), 0);
}

static struct hsvm *table_of(const struct lay *l)
{
	struct hsvm *vm = hsvm__new();

	assert_non_null(vm);
	addf(vm, "Method", "_constMethod", l->method_cm);
	hsvm__add_type(vm, "ConstMethod", l->cm_size);
	addf(vm, "ConstMethod", "_constants", l->cm_constants);
	addf(vm, "ConstMethod", "_constMethod_size", l->cm_total);
	addf(vm, "ConstMethod", l->jdk25 ? "_flags._flags" : "_flags", l->cm_flags);
	addf(vm, "ConstMethod", "_code_size", l->cm_code_size);
	addf(vm, "ConstMethod", "_name_index", l->cm_name);
	hsvm__add_const(vm,
			l->jdk25 ? "ConstMethodFlags::_misc_has_linenumber_table"
				 : "ConstMethod::_has_linenumber_table",
			1);
	hsvm__add_type(vm, "ConstantPool", l->cp_size);
	addf(vm, "ConstantPool", "_tags", l->cp_tags);
	addf(vm, "ConstantPool", "_pool_holder", l->cp_holder);
	addf(vm, "ConstantPool", "_length", l->cp_length);
	addf(vm, "ConstantPool", "_source_file_name_index", l->cp_source);
	addf(vm, "Array<u1>", "_data", 4);
	addf(vm, "Klass", "_name", l->klass_name);
	addf(vm, "Symbol", "_length", 4);
	addf(vm, "Symbol", "_body", 6);
	hsvm__add_type(vm, "nmethod", l->nm_size);
	addf(vm, "nmethod", "_compile_id", l->nm_compile_id);
	addf(vm, "nmethod", "_scopes_pcs_offset", l->pcs_off);
	hsvm__add_type(vm, "PcDesc", 16);
	addf(vm, "PcDesc", "_pc_offset", 0);
	addf(vm, "PcDesc", "_scope_decode_offset", 4);
	if (l->jdk25) {
		addf(vm, "nmethod", "_method", l->nm_method);
		addf(vm, "CodeBlob", "_code_offset", l->blob_code_offset);
		addf(vm, "CodeBlob", "_mutable_data", l->mutable_data);
		addf(vm, "CodeBlob", "_relocation_size", l->reloc_size);
		addf(vm, "CodeBlob", "_mutable_data_size", l->mutable_size);
		addf(vm, "nmethod", "_immutable_data", l->immutable);
		addf(vm, "nmethod", "_immutable_data_size", l->immutable_size);
		addf(vm, "nmethod", "_scopes_data_offset", l->scopes_data_off);
	} else {
		addf(vm, "CompiledMethod", "_method", l->nm_method);
		addf(vm, "CodeBlob", "_code_begin", l->blob_code_begin);
		addf(vm, "CompiledMethod", "_scopes_data_begin", l->scopes_data_begin);
		addf(vm, "nmethod", "_dependencies_offset", l->deps_off);
		addf(vm, "nmethod", "_metadata_offset", l->meta_off);
	}
	return vm;
}

/* --- encoders (HotSpot's writers) --------------------------------------------------------- */

struct buf {
	uint8_t b[4096];
	size_t len;
};

/* UNSIGNED5::write_uint() with X excluded low bytes (1 from JDK 21, 0 before). */
static void w_uint(struct buf *b, uint32_t v, unsigned x)
{
	const uint32_t low = 256 - 64 - x;

	for (int i = 0;; i++) {
		if (v < low || i == 4) {
			b->b[b->len++] = (uint8_t)(x + v);
			return;
		}
		v -= low;
		b->b[b->len++] = (uint8_t)(x + low + (v % 64));
		v >>= 6;
	}
}

static void w_sint(struct buf *b, int32_t v, unsigned x)
{
	w_uint(b, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31), x);
}

/* CompressedLineNumberWriteStream::write_pair() for absolute (bci, line) pairs, then the 0. */
static void w_lines(struct buf *b, const int (*pairs)[2], int n, unsigned x)
{
	int bci = 0, line = 0;

	for (int i = 0; i < n; i++) {
		int db = pairs[i][0] - bci, dl = pairs[i][1] - line;

		bci = pairs[i][0];
		line = pairs[i][1];
		if (!db && !dl)
			continue;
		if (!(db & ~0x1f) && !(dl & ~7) && ((db << 3) | dl) != 0xff) {
			b->b[b->len++] = (uint8_t)(db << 3 | dl);
			continue;
		}
		b->b[b->len++] = 0xff;
		w_sint(b, db, x);
		w_sint(b, dl, x);
	}
	b->b[b->len++] = 0;
}

/* --- objects ------------------------------------------------------------------------------ */

static uint64_t symbol(const char *s)
{
	size_t len = strlen(s);
	uint64_t a = alloc(6 + len);

	put16(a + 4, (uint16_t)len);
	put(a + 6, s, len);
	return a;
}

/* A class @name (internal form) with source file @file: its pool's address. Pool entries:
 * 1 the class name, 2 the file, 3.. method names set by method(). */
struct klass {
	uint64_t ik, cp, tags;
	int next;
};

#define POOL 16

static struct klass klass(const struct lay *l, const char *name, const char *file)
{
	struct klass k = {
	    .ik = alloc(512), .cp = alloc(l->cp_size + POOL * 8), .tags = alloc(4 + POOL)};
	uint8_t tags[POOL];

	memset(tags, 7 /* JVM_CONSTANT_Class */, sizeof(tags));
	tags[1] = tags[2] = 1;
	put64(k.ik + l->klass_name, symbol(name));
	put64(k.cp + l->cp_tags, k.tags);
	put64(k.cp + l->cp_holder, k.ik);
	put32(k.cp + l->cp_length, POOL);
	put16(k.cp + l->cp_source, file ? 2 : 0);
	put32(k.tags, POOL);
	put(k.tags + 4, tags, sizeof(tags));
	put64(k.cp + l->cp_size + 8, symbol(name));
	if (file)
		put64(k.cp + l->cp_size + 16, symbol(file));
	k.next = 3;
	return k;
}

/* A method @name of @k with @code_size bytecodes and line pairs @pairs: the Method*. */
static uint64_t method(const struct lay *l, struct klass *k, const char *name, int code_size,
		       const int (*pairs)[2], int n_pairs)
{
	struct buf lines = {.len = 0};
	uint64_t m = alloc(88), cm, total;
	uint8_t utf8 = 1;
	int idx = k->next++;

	assert_true(idx < POOL);
	if (pairs)
		w_lines(&lines, pairs, n_pairs, l->jdk25);
	total = (l->cm_size + code_size + lines.len + 7) / 8;
	cm = alloc(total * 8);
	put64(m + l->method_cm, cm);
	put64(cm + l->cm_constants, k->cp);
	put32(cm + l->cm_total, (uint32_t)total);
	if (l->jdk25)
		put32(cm + l->cm_flags, pairs ? 1 : 0);
	else
		put16(cm + l->cm_flags, pairs ? 1 : 0);
	put16(cm + l->cm_code_size, (uint16_t)code_size);
	put16(cm + l->cm_name, (uint16_t)idx);
	put(cm + l->cm_size + code_size, lines.b, lines.len);
	put(k->tags + 4 + idx, &utf8, 1);
	put64(k->cp + l->cp_size + idx * 8ull, symbol(name));
	return m;
}

static uint64_t cm_of(const struct lay *l, uint64_t m)
{
	uint64_t cm = 0;

	assert_int_equal(read_image(0, m + l->method_cm, &cm, 8), 0);
	return cm;
}

/* One scope: (sender decode offset, metadata index, bci) as DebugInfoWriteStream writes. */
static int scope(struct buf *b, int sender, int index, int bci, unsigned x)
{
	int at = (int)b->len;

	w_uint(b, (uint32_t)sender, x);
	w_uint(b, (uint32_t)index, x);
	w_uint(b, (uint32_t)(bci + 1), x); /* write_bci(): bci - InvocationEntryBci */
	w_uint(b, 0, x);		   /* locals, expressions, monitors: none */
	w_uint(b, 0, x);
	w_uint(b, 0, x);
	return at;
}

struct nm {
	uint64_t addr, code_begin;
};

/* An nmethod of @own, compile id @id, with @n_pcs PcDescs @pcs ({pc_offset, scope}), scopes
 * data @scopes and metadata @meta. */
static struct nm nmethod(const struct lay *l, uint64_t own, int id, const int (*pcs)[2], int n_pcs,
			 const struct buf *scopes, const uint64_t *meta, int n_meta)
{
	const uint64_t code = 0x200;
	struct nm r;

	if (!l->jdk25) {
		/* header, code, then metadata, scopes data, PcDescs, dependencies */
		uint64_t meta_off = code + 0x400, data_off = meta_off + n_meta * 8ull;
		uint64_t pcs_off = (data_off + scopes->len + 15) & ~15ull;
		uint64_t deps_off = pcs_off + n_pcs * 16ull;

		r.addr = alloc(deps_off + 16);
		r.code_begin = r.addr + code;
		put64(r.addr + l->blob_code_begin, r.code_begin);
		put32(r.addr + l->meta_off, (uint32_t)meta_off);
		put64(r.addr + l->scopes_data_begin, r.addr + data_off);
		put32(r.addr + l->pcs_off, (uint32_t)pcs_off);
		put32(r.addr + l->deps_off, (uint32_t)deps_off);
		put(r.addr + meta_off, meta, n_meta * 8ull);
		put(r.addr + data_off, scopes->b, scopes->len);
		for (int i = 0; i < n_pcs; i++) {
			put32(r.addr + pcs_off + i * 16ull, (uint32_t)pcs[i][0]);
			put32(r.addr + pcs_off + i * 16ull + 4, (uint32_t)pcs[i][1]);
		}
	} else {
		/* immutable: dependencies (none), PcDescs, scopes, the reference counter;
		 * mutable: relocations (24 bytes), metadata */
		uint64_t pcs_off = 16, data_off = pcs_off + n_pcs * 16ull;
		uint64_t isize = data_off + scopes->len + 4, imm = alloc(isize), mut;

		mut = alloc(24 + n_meta * 8ull);
		r.addr = alloc(code + 0x400);
		r.code_begin = r.addr + code;
		put32(r.addr + l->blob_code_offset, (uint32_t)code);
		put64(r.addr + l->immutable, imm);
		put32(r.addr + l->immutable_size, (uint32_t)isize);
		put32(r.addr + l->pcs_off, (uint32_t)pcs_off);
		put32(r.addr + l->scopes_data_off, (uint32_t)data_off);
		put64(r.addr + l->mutable_data, mut);
		put32(r.addr + l->reloc_size, 24);
		put32(r.addr + l->mutable_size, (uint32_t)(24 + n_meta * 8));
		put(mut + 24, meta, n_meta * 8ull);
		put(imm + data_off, scopes->b, scopes->len);
		for (int i = 0; i < n_pcs; i++) {
			put32(imm + pcs_off + i * 16ull, (uint32_t)pcs[i][0]);
			put32(imm + pcs_off + i * 16ull + 4, (uint32_t)pcs[i][1]);
		}
	}
	put64(r.addr + l->nm_method, own);
	put32(r.addr + l->nm_compile_id, (uint32_t)id);
	return r;
}

static struct hsname *namer(const struct lay *l, struct hsvm **vm)
{
	const char *missing = "x";
	struct hsname *n;
	int err = 0;

	*vm = table_of(l);
	n = hsname__new(42, *vm, &missing, &err);
	assert_non_null(n);
	assert_int_equal(err, 0);
	assert_null(missing);
	hsname__set_reader(n, read_image);
	return n;
}

static int setup(void **state)
{
	(void)state;
	memset(image, 0, sizeof(image));
	brk_ = 0;
	reads = 0;
	return 0;
}

#define ERRNO(e) (-(1 + HSNAME_ERR_##e))

static void assert_line(const struct hs_line *l, const char *klass, const char *method,
			const char *file, int line)
{
	assert_string_equal(l->klass, klass);
	assert_string_equal(l->method, method);
	assert_string_equal(l->file, file);
	assert_int_equal(l->line, line);
}

/* --- tests -------------------------------------------------------------------------------- */

/* bci -> line pairs of "leaf": out of bci order (a loop's condition after its body), a jump
 * beyond 31 bytecodes and a line going back (both escaped with 0xFF), a large line number. */
static const int leaf_lines[][2] = {{0, 9},   {2, 10},	 {12, 11},   {24, 10},
				    {33, 12}, {90, 300}, {95, 70000}};

static void interpreted(const struct lay *l)
{
	struct hsvm *vm;
	struct hsname *n = namer(l, &vm);
	struct klass k = klass(l, "com/example/Hot", "Hot.java");
	uint64_t m = method(l, &k, "leaf", 100, leaf_lines, 7), cm = cm_of(l, m);
	static const int want[][2] = {{0, 9},	 {1, 9},    {2, 10},	 {11, 10},   {12, 11},
				      {23, 11},	 {24, 10},  {32, 10},	 {33, 12},   {89, 12},
				      {90, 300}, {94, 300}, {95, 70000}, {99, 70000}};
	struct hs_frame_name f;
	struct hsname_stats st;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm,
						     (uint32_t)(l->cm_size + want[i][0]), &f),
				 0);
		assert_int_equal(f.n, 1);
		assert_line(&f.lines[0], "com.example.Hot", "leaf", "Hot.java", want[i][1]);
	}
	/* again: from the cache, no read */
	reads = 0;
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, (uint32_t)l->cm_size + 12, &f), 0);
	assert_int_equal(f.lines[0].line, 11);
	assert_int_equal(reads, 0);
	hsname__stats(n, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, sizeof(want) / sizeof(want[0]));
	hsname__free(n);
	hsvm__free(vm);
}

static void test_interpreted_jdk17(void **state)
{
	(void)state;
	interpreted(&jdk17);
}

static void test_interpreted_jdk25(void **state)
{
	(void)state;
	interpreted(&jdk25);
}

/* A method without a line table, a class without a source file: line 0, file "". */
static void test_interpreted_no_lines(void **state)
{
	struct hsvm *vm;
	struct hsname *n = namer(&jdk17, &vm);
	struct klass k = klass(&jdk17, "Foo$$Lambda+0x0000000800c03000", NULL);
	uint64_t m = method(&jdk17, &k, "applyAsLong", 5, NULL, 0);
	struct hs_frame_name f;

	(void)state;
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm_of(&jdk17, m), 48 + 4, &f), 0);
	/* a hidden class printed as Class.getName() does */
	assert_line(&f.lines[0], "Foo$$Lambda/0x0000000800c03000", "applyAsLong", "", 0);
	/* a native method: no bytecodes, whatever its frame's bytecode pointer */
	m = method(&jdk17, &k, "read0", 0, NULL, 0);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm_of(&jdk17, m), 0xdead0000u, &f), 0);
	assert_line(&f.lines[0], "Foo$$Lambda/0x0000000800c03000", "read0", "", 0);
	hsname__free(n);
	hsvm__free(vm);
}

/* A changed ConstMethod, or a bytecode pointer outside the bytecodes: refused, counted. */
static void test_interpreted_refused(void **state)
{
	struct hsvm *vm;
	struct hsname *n = namer(&jdk17, &vm);
	struct klass k = klass(&jdk17, "Hot", "Hot.java");
	uint64_t m = method(&jdk17, &k, "leaf", 100, leaf_lines, 7);
	uint32_t fp = (uint32_t)cm_of(&jdk17, m);
	struct hs_frame_name f = {0};
	struct hsname_stats st;

	(void)state;
	assert_int_equal(hsname__interpreted(n, m, fp ^ 0x1000, 48, &f), ERRNO(STALE));
	assert_int_equal(hsname__interpreted(n, m, fp, 47, &f), ERRNO(STALE));
	assert_int_equal(hsname__interpreted(n, m, fp, 48 + 100, &f), ERRNO(STALE));
	assert_int_equal(hsname__interpreted(n, m, fp, 0xffffffff, &f), ERRNO(STALE));
	/* the method redefined: its _constMethod replaced, the old fingerprint refused when read;
	 * once read with it, a sample that saw it (taken before) is named from the cache */
	assert_int_equal(hsname__interpreted(n, m, fp, 48, &f), 0);
	put64(m + 8, cm_of(&jdk17, method(&jdk17, &k, "leaf", 100, leaf_lines, 7)));
	assert_int_equal(hsname__interpreted(n, m, fp, 49, &f), 0);
	hsname__free(n);
	hsvm__free(vm);
	n = namer(&jdk17, &vm);
	assert_int_equal(hsname__interpreted(n, m, fp, 48, &f), ERRNO(STALE));
	assert_int_equal(hsname__interpreted(n, m, fp ^ 0x1000, 48, &f), ERRNO(STALE));
	assert_int_equal(hsname__interpreted(n, m, fp, 47, &f), ERRNO(STALE));
	assert_int_equal(hsname__interpreted(n, m, fp, 0xffffffff, &f), ERRNO(STALE));
	/* unmapped and null */
	assert_int_equal(hsname__interpreted(n, BASE + IMAGE + 4096, 0, 48, &f), ERRNO(READ));
	assert_int_equal(hsname__interpreted(n, 0, 0, 48, &f), ERRNO(BAD));
	hsname__stats(n, &st);
	assert_int_equal(st.errors[HSNAME_ERR_STALE], 4);
	assert_int_equal(st.errors[HSNAME_ERR_READ], 1);
	assert_int_equal(st.errors[HSNAME_ERR_BAD], 1);
	assert_string_equal(hsname__error_name(HSNAME_ERR_STALE), "STALE");
	hsname__free(n);
	hsvm__free(vm);
}

/*
 * outer() inlines middle() which inlines leaf(): at a call in leaf's loop (pc 0x40) the chain
 * is leaf:11 <- middle:16 <- outer:20; at 0x60 a PcDesc of outer itself; at 0x80 one without
 * scopes; between them nothing is guessed.
 */
static void compiled(const struct lay *l)
{
	static const int mid_lines[][2] = {{0, 16}}, out_lines[][2] = {{0, 20}, {7, 21}};
	struct hsvm *vm;
	struct hsname *n = namer(l, &vm);
	struct klass k = klass(l, "com/example/Hot", "Hot.java");
	struct klass k2 = klass(l, "java/lang/String", "String.java");
	uint64_t leaf = method(l, &k, "leaf", 100, leaf_lines, 7);
	uint64_t mid = method(l, &k2, "middle", 10, mid_lines, 1);
	uint64_t out = method(l, &k, "outer", 10, out_lines, 2);
	uint64_t meta[] = {0x1234, out, mid, leaf};
	struct buf s = {.b = {0xee}, .len = 1}; /* offset 0 is serialized_null */
	int so, sm, sl, so2, sme;
	struct hs_frame_name f;
	struct hsname_stats st;
	struct nm nm;

	so = scope(&s, 0, 2, 3, l->jdk25);
	sm = scope(&s, so, 3, 1, l->jdk25);
	sl = scope(&s, sm, 4, 14, l->jdk25);
	so2 = scope(&s, 0, 2, 8, l->jdk25);
	sme = scope(&s, so, 3, -1, l->jdk25); /* at middle's entry */
	{
		const int pcs[][2] = {{-1, 0}, {0x40, sl}, {0x60, so2}, {0x70, sme}, {0x80, 0}};

		nm = nmethod(l, out, 77, pcs, 5, &s, meta, 4);
	}
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x40, false, &f), 0);
	assert_int_equal(f.n, 3);
	assert_line(&f.lines[0], "com.example.Hot", "leaf", "Hot.java", 11);
	assert_line(&f.lines[1], "java.lang.String", "middle", "String.java", 16);
	assert_line(&f.lines[2], "com.example.Hot", "outer", "Hot.java", 20);
	/* the leaf exactly at a PcDesc: its scopes */
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x60, true, &f), 0);
	assert_int_equal(f.n, 1);
	assert_line(&f.lines[0], "com.example.Hot", "outer", "Hot.java", 21);
	/* a method's entry (bci -1): its first line, as HotSpot prints it */
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x70, false, &f), 0);
	assert_int_equal(f.n, 2);
	assert_line(&f.lines[0], "java.lang.String", "middle", "String.java", 16);
	assert_line(&f.lines[1], "com.example.Hot", "outer", "Hot.java", 20);
	/* between PcDescs, before the code, a PcDesc without scopes: the method alone */
	for (int i = 0; i < 3; i++) {
		static const int64_t at[] = {0x41, -0x10, 0x80};

		assert_int_equal(hsname__compiled(n, nm.addr, 77, (uint32_t)out,
						  nm.code_begin + at[i], i != 1, &f),
				 0);
		assert_int_equal(f.n, 1);
		assert_line(&f.lines[0], "com.example.Hot", "outer", "Hot.java", 0);
	}
	hsname__stats(n, &st);
	assert_int_equal(st.no_pc_desc, 1);
	assert_int_equal(st.bad_return, 1);
	/* asked for: a leaf between PcDescs takes the next one's scopes, as AsyncGetCallTrace;
	 * a return address still needs its own */
	hsname__set_leaf_near(n, true);
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x3f, true, &f), 0);
	assert_int_equal(f.n, 3);
	assert_line(&f.lines[0], "com.example.Hot", "leaf", "Hot.java", 11);
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x40, true, &f), 0);
	assert_int_equal(f.n, 3);
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x41, true, &f), 0);
	assert_int_equal(f.n, 1);
	assert_line(&f.lines[0], "com.example.Hot", "outer", "Hot.java", 21);
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x3f, false, &f), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.lines[0].line, 0);
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x81, true, &f), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.lines[0].line, 0);
	hsname__stats(n, &st);
	assert_int_equal(st.near, 2);
	assert_int_equal(st.no_pc_desc, 2);
	assert_int_equal(st.bad_return, 2);
	hsname__set_leaf_near(n, false);
	assert_int_equal(st.scope_failed, 0);
	/* proofs: another compile id, another method: refused */
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 78, (uint32_t)out, nm.code_begin + 0x40, false, &f),
	    ERRNO(STALE));
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)leaf, nm.code_begin + 0x40, false, &f),
	    ERRNO(STALE));
	hsname__free(n);
	hsvm__free(vm);
	/* the blob freed and reused by another compilation after the sample: refused when read
	 * (the cache holds what was read while the sample's compile id was live) */
	put32(nm.addr + l->nm_compile_id, 90);
	n = namer(l, &vm);
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 77, (uint32_t)out, nm.code_begin + 0x40, false, &f),
	    ERRNO(STALE));
	assert_int_equal(
	    hsname__compiled(n, nm.addr, 90, (uint32_t)out, nm.code_begin + 0x40, false, &f), 0);
	assert_int_equal(f.n, 3);
	hsname__free(n);
	hsvm__free(vm);
}

static void test_compiled_jdk17(void **state)
{
	(void)state;
	compiled(&jdk17);
}

static void test_compiled_jdk25(void **state)
{
	(void)state;
	compiled(&jdk25);
}

/* Scopes that do not check out give the nmethod's method alone, counted. */
static void test_compiled_bad_scopes(void **state)
{
	struct hsvm *vm;
	struct hsname *n = namer(&jdk17, &vm);
	struct klass k = klass(&jdk17, "Hot", "Hot.java");
	uint64_t leaf = method(&jdk17, &k, "leaf", 100, leaf_lines, 7);
	uint64_t out = method(&jdk17, &k, "outer", 10, NULL, 0);
	uint64_t meta[] = {out, leaf};
	struct buf s = {.b = {0xee}, .len = 1};
	int wrong_outer, bad_index, loop, past_end;
	struct hs_frame_name f;
	struct hsname_stats st;
	struct nm nm;

	(void)state;
	/* the outermost scope is not the nmethod's method */
	wrong_outer = scope(&s, 0, 2, 3, 0);
	bad_index = scope(&s, 0, 9, 3, 0);
	/* a sender pointing at itself: bounded by the depth */
	loop = (int)s.len;
	scope(&s, loop, 1, 0, 0);
	past_end = scope(&s, 4000, 1, 0, 0);
	{
		const int pcs[][2] = {{-1, 0},	  {8, wrong_outer}, {16, bad_index},
				      {24, loop}, {32, past_end},   {40, 100000}};

		nm = nmethod(&jdk17, out, 5, pcs, 6, &s, meta, 2);
	}
	for (int pc = 8; pc <= 40; pc += 8) {
		assert_int_equal(
		    hsname__compiled(n, nm.addr, 5, (uint32_t)out, nm.code_begin + pc, false, &f),
		    0);
		assert_int_equal(f.n, 1);
		assert_line(&f.lines[0], "Hot", "outer", "Hot.java", 0);
	}
	hsname__stats(n, &st);
	assert_int_equal(st.scope_failed, 5);
	hsname__free(n);
	hsvm__free(vm);
}

/* Symbols and pools that do not read as they should: refused (BAD). */
static void test_bad_objects(void **state)
{
	struct hsvm *vm;
	struct hsname *n = namer(&jdk17, &vm);
	struct klass k = klass(&jdk17, "Hot", "Hot.java");
	uint64_t m = method(&jdk17, &k, "leaf", 10, NULL, 0), cm = cm_of(&jdk17, m), sym;
	struct hs_frame_name f;
	uint8_t tag = 7;

	(void)state;
	/* name index past the pool */
	put16(cm + jdk17.cm_name, POOL + 1);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, 48, &f), ERRNO(BAD));
	/* name index of an entry that is not Utf8 */
	put16(cm + jdk17.cm_name, 3);
	put(k.tags + 4 + 3, &tag, 1);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, 49, &f), ERRNO(BAD));
	tag = 1;
	put(k.tags + 4 + 3, &tag, 1);
	/* a symbol too long, empty, or holding a control byte */
	sym = k.cp + jdk17.cp_size + 3 * 8;
	put64(sym, symbol("ok"));
	put16(cm_of(&jdk17, m) + jdk17.cm_code_size, 10);
	read_image(0, sym, &sym, 8);
	put16(sym + 4, HSNAME_MAX_NAME + 1);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, 50, &f), ERRNO(BAD));
	put16(sym + 4, 0);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, 51, &f), ERRNO(BAD));
	put16(sym + 4, 2);
	put(sym + 6, "o\n", 2);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, 52, &f), ERRNO(BAD));
	put(sym + 6, "ok", 2);
	/* a ConstMethod size smaller than its bytecodes */
	put32(cm + jdk17.cm_total, 2);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, 53, &f), ERRNO(BAD));
	put32(cm + jdk17.cm_total, 8);
	assert_int_equal(hsname__interpreted(n, m, (uint32_t)cm, 53, &f), 0);
	assert_line(&f.lines[0], "Hot", "ok", "Hot.java", 0);
	hsname__free(n);
	hsvm__free(vm);
}

/* Random images with pointers into themselves: never a crash; any answer has its strings. */
static void test_garbage(void **state)
{
	const struct lay *lays[] = {&jdk17, &jdk25};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int named = 0;

	(void)state;
	for (int round = 0; round < 400; round++) {
		const struct lay *l = lays[round & 1];
		struct hsvm *vm;
		struct hsname *n = namer(l, &vm);
		struct hs_frame_name f;

		for (size_t i = 0; i < 64 * 1024; i += 8) {
			uint64_t v;

			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			/* a third pointers into the image, a third small numbers, the rest noise */
			v = seed % 3 == 0   ? BASE + (seed >> 8) % (64 * 1024)
			    : seed % 3 == 1 ? (seed >> 16) % 64
					    : seed;
			memcpy(image + i, &v, 8);
		}
		for (int j = 0; j < 64; j++) {
			uint64_t a = BASE + (seed >> 20) % (64 * 1024), w1 = 0, w2 = 0;
			int err;

			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			read_image(0, a + (j & 1 ? l->method_cm : l->nm_method), &w1, 8);
			read_image(0, a + l->nm_compile_id, &w2, 8);
			err = j & 1 ? hsname__interpreted(n, a, (uint32_t)w1,
							  (uint32_t)(seed % 200), &f)
				    : hsname__compiled(n, a, (uint32_t)w2, (uint32_t)w1,
						       a + seed % 4096, j & 2, &f);
			assert_true(err <= 0 && err >= -HSNAME_ERR_COUNT);
			if (!err) {
				named++;
				assert_true(f.n >= 1 && f.n <= HSNAME_MAX_DEPTH);
				for (int i = 0; i < f.n; i++)
					assert_true(f.lines[i].klass && f.lines[i].method &&
						    f.lines[i].file && f.lines[i].line >= 0);
			}
		}
		hsname__free(n);
		hsvm__free(vm);
	}
	print_message("garbage: %d of %d frames named\n", named, 400 * 64);
}

/* Valid objects with random bytes overwritten: never a crash, any answer well formed. */
static void test_corrupted(void **state)
{
	uint64_t seed = 0x2545f4914f6cdd1dull;
	int named = 0, refused = 0;

	(void)state;
	for (int round = 0; round < 300; round++) {
		const struct lay *l = round & 1 ? &jdk25 : &jdk17;
		struct hsvm *vm;
		struct hsname *n;
		struct klass k;
		uint64_t leaf, out, meta[2];
		struct buf s = {.b = {0xee}, .len = 1};
		struct hs_frame_name f;
		struct nm nm;
		int so, sl;

		setup(NULL);
		n = namer(l, &vm);
		k = klass(l, "com/example/Hot", "Hot.java");
		leaf = method(l, &k, "leaf", 100, leaf_lines, 7);
		out = method(l, &k, "outer", 10, leaf_lines, 2);
		meta[0] = out;
		meta[1] = leaf;
		so = scope(&s, 0, 1, 3, l->jdk25);
		sl = scope(&s, so, 2, 14, l->jdk25);
		{
			const int pcs[][2] = {{-1, 0}, {0x40, sl}, {0x60, so}};

			nm = nmethod(l, out, 7, pcs, 3, &s, meta, 2);
		}
		for (int i = 0; i < 1 + round % 16; i++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			image[(seed >> 8) % brk_] = (uint8_t)seed;
		}
		for (int j = 0; j < 4; j++) {
			int err = j < 3
				      ? hsname__compiled(n, nm.addr, 7, (uint32_t)out,
							 nm.code_begin + 0x20 * (j + 2), j == 2, &f)
				      : hsname__interpreted(n, leaf, (uint32_t)cm_of(l, leaf),
							    (uint32_t)l->cm_size + 30, &f);

			assert_true(err <= 0 && err >= -HSNAME_ERR_COUNT);
			if (err) {
				refused++;
				continue;
			}
			named++;
			assert_true(f.n >= 1 && f.n <= HSNAME_MAX_DEPTH);
			for (int i = 0; i < f.n; i++)
				assert_true(f.lines[i].klass && f.lines[i].method &&
					    f.lines[i].file && f.lines[i].line >= 0);
		}
		hsname__free(n);
		hsvm__free(vm);
	}
	print_message("corrupted: %d frames named, %d refused\n", named, refused);
	assert_true(named > 0 && refused > 0);
}

/* A JVM without a field the namer needs: refused, naming the field. */
static void test_missing_field(void **state)
{
	struct hsvm *vm = hsvm__new();
	const char *missing = NULL;
	int err = 0;

	(void)state;
	assert_null(hsname__new(1, vm, &missing, &err));
	assert_int_equal(err, -ENOENT);
	assert_string_equal(missing, "Method::_constMethod");
	hsvm__free(vm);
	/* JDK 25 without its immutable data's size */
	skip = "_immutable_data_size";
	vm = table_of(&jdk25);
	skip = NULL;
	assert_null(hsname__new(1, vm, &missing, &err));
	assert_string_equal(missing, "nmethod::_immutable_data_size");
	hsvm__free(vm);
	vm = hsvm__new();
	hsvm__add_field(vm, "Method", "_constMethod", false, 8);
	assert_null(hsname__new(1, vm, &missing, &err));
	assert_string_equal(missing, "ConstMethod");
	hsvm__free(vm);
	hsname__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_interpreted_jdk17, setup),
	    cmocka_unit_test_setup(test_interpreted_jdk25, setup),
	    cmocka_unit_test_setup(test_interpreted_no_lines, setup),
	    cmocka_unit_test_setup(test_interpreted_refused, setup),
	    cmocka_unit_test_setup(test_compiled_jdk17, setup),
	    cmocka_unit_test_setup(test_compiled_jdk25, setup),
	    cmocka_unit_test_setup(test_compiled_bad_scopes, setup),
	    cmocka_unit_test_setup(test_bad_objects, setup),
	    cmocka_unit_test_setup(test_garbage, setup),
	    cmocka_unit_test_setup(test_corrupted, setup),
	    cmocka_unit_test_setup(test_missing_field, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
