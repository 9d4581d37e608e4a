// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the jitdump reader (exporter/runtime/jit): files written here record by
 * record as tools/perf/Documentation/jitdump-specification.txt lays them out; truncated,
 * growing, garbage, code moved, code replaced, debug info (file:line), unwinding records (their
 * .eh_frame attached to the next code load, moved and dropped with it), a file in the other byte
 * order, and the caps. Runs without root.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/procmaps.h"
#include "runtime/jit/jitfile.h"
#include "runtime/jit/jitdump.h"

#include "jitdump_writer.h"

#define BIG (1ull << 40)

/* The unwinding entry of the code at @addr, or NULL. */
static const struct jitdump_unwind *unwind_at(const struct jitdump *d, uint64_t addr)
{
	const struct jitdump_unwind *v;
	size_t n = jitdump__unwind(d, &v);

	for (size_t i = 0; i < n; i++)
		if (v[i].code_addr == addr)
			return &v[i];
	return NULL;
}

struct row {
	uint64_t addr;
	uint32_t line;
	const char *file; /* NULL: "\xff", the previous row's */
};

static void debug(struct w *w, uint64_t addr, const struct row *rows, int n)
{
	uint32_t total = 16 + 16;

	for (int i = 0; i < n; i++)
		total += 16 + (rows[i].file ? strlen(rows[i].file) + 1 : 2);
	rec_header(w, JIT_CODE_DEBUG_INFO, total);
	put64(w, addr);
	put64(w, (uint64_t)n);
	for (int i = 0; i < n; i++) {
		put64(w, rows[i].addr);
		put32(w, rows[i].line);
		put32(w, 0);
		if (rows[i].file)
			put(w, rows[i].file, strlen(rows[i].file) + 1);
		else
			put(w, "\xff", 2);
	}
}

static char path[64];

static int setup(void **unused)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/spanprof-jitdump-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **unused)
{
	return unlink(path);
}

/* Writes the first @len bytes of @w as the whole file (truncating or growing it in place). */
static void write_prefix(const struct w *w, size_t len)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, w->buf, len, 0), (ssize_t)len);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	close(fd);
}

static int update(struct jitdump *d)
{
	struct stat st;
	int fd = open(path, O_RDONLY), err;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	err = jitdump__update(d, fd, &st);
	close(fd);
	return err;
}

static const char *name_at(const struct jitdump *d, uint64_t addr)
{
	static struct jittab_sym s;

	return jitdump__lookup(d, addr, &s) ? NULL : s.name;
}

static void test_loads_and_debug(void **unused)
{
	static const struct row rows[] = {
	    {0x1000, 10, "/app/x.js"},
	    {0x1008, 11, NULL},
	    {0x1010, 20, "/app/y.js"},
	};
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	struct jittab_sym s;
	struct w w = {0};

	header(&w, JITDUMP_MAGIC);
	debug(&w, 0x1000, rows, 3);
	load(&w, 0x1000, 0x20, "JS:*fib");
	load(&w, 0x2000, 0x10, "Builtin:Add");
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__stats(d)->loads, 2);
	assert_int_equal(jitdump__stats(d)->debug_infos, 1);
	assert_int_equal(jitdump__offset(d), w.n);

	assert_int_equal(jitdump__lookup(d, 0x1004, &s), 0);
	assert_string_equal(s.name, "JS:*fib");
	assert_string_equal(s.file, "/app/x.js");
	assert_int_equal(s.line, 10);
	assert_int_equal(jitdump__lookup(d, 0x100c, &s), 0);
	assert_string_equal(s.file, "/app/x.js"); /* "\xff": the previous row's file */
	assert_int_equal(s.line, 11);
	assert_int_equal(jitdump__lookup(d, 0x101f, &s), 0);
	assert_string_equal(s.file, "/app/y.js");
	assert_int_equal(s.line, 20);
	assert_int_equal(jitdump__lookup(d, 0x2000, &s), 0);
	assert_string_equal(s.name, "Builtin:Add");
	assert_null(s.file); /* its debug info was the other load's */
	assert_null(name_at(d, 0x1020));
	jitdump__free(d);
}

static void test_growing_truncated(void **unused)
{
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	struct w w = {0};
	size_t first;

	header(&w, JITDUMP_MAGIC);
	/* Only part of the header: nothing yet, no error. */
	write_prefix(&w, 20);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__offset(d), 0);

	load(&w, 0x1000, 0x20, "one");
	first = w.n;
	load(&w, 0x2000, 0x20, "two");
	/* Every length cut inside the second record: the first taken, the second waits. */
	for (size_t cut = first; cut < w.n; cut += 7) {
		write_prefix(&w, cut);
		assert_int_equal(update(d), 0);
		assert_string_equal(name_at(d, 0x1000), "one");
		assert_null(name_at(d, 0x2000));
		assert_int_equal(jitdump__offset(d), first);
	}
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_string_equal(name_at(d, 0x2000), "two");
	assert_int_equal(jitdump__stats(d)->loads, 2);

	/* Rewritten shorter (a new run): everything read before is forgotten. */
	write_prefix(&w, first);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__stats(d)->resets, 1);
	assert_string_equal(name_at(d, 0x1000), "one");
	assert_null(name_at(d, 0x2000));
	jitdump__free(d);
}

/*
 * Started again in place by a new writer (the same inode truncated, its own header: another
 * timestamp), as long as what was read or longer: read anew, never the old names.
 */
static void test_restarted_in_place(void **unused)
{
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	struct w w = {0}, w2 = {0};
	uint64_t ts = 7;

	header(&w, JITDUMP_MAGIC);
	load(&w, 0x1000, 0x20, "alpha");
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_string_equal(name_at(d, 0x1000), "alpha");

	header(&w2, JITDUMP_MAGIC);
	memcpy(w2.buf + 24, &ts, sizeof(ts)); /* the header's timestamp */
	load(&w2, 0x1000, 0x20, "gamma");
	load(&w2, 0x2000, 0x20, "other");
	write_prefix(&w2, w2.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__stats(d)->resets, 1);
	assert_string_equal(name_at(d, 0x1000), "gamma");
	assert_string_equal(name_at(d, 0x2000), "other");
	/* Appended to: nothing read again. */
	load(&w2, 0x3000, 0x20, "three");
	write_prefix(&w2, w2.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__stats(d)->resets, 1);
	assert_int_equal(jitdump__stats(d)->loads, 4);
	jitdump__free(d);
}

static void test_move_and_replace(void **unused)
{
	static const struct row rows[] = {{0x1000, 5, "/app/m.js"}};
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	struct jittab_sym s;
	struct w w = {0};

	header(&w, JITDUMP_MAGIC);
	debug(&w, 0x1000, rows, 1);
	load(&w, 0x1000, 0x20, "moved");
	load(&w, 0x3000, 0x20, "stays");
	move(&w, 0x1000, 0x5000, 0x20);
	/* New code over part of "stays": "stays" must not name any of its old range. */
	load(&w, 0x3010, 0x8, "newer");
	/* A move of code never loaded: counted; the target range is cleared all the same. */
	load(&w, 0x7000, 0x10, "target");
	move(&w, 0x9000, 0x7000, 0x10);
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);

	assert_null(name_at(d, 0x1000));
	assert_int_equal(jitdump__lookup(d, 0x5004, &s), 0);
	assert_string_equal(s.name, "moved");
	assert_string_equal(s.file, "/app/m.js");
	assert_int_equal(s.line, 5);
	assert_null(name_at(d, 0x3000));
	assert_string_equal(name_at(d, 0x3010), "newer");
	assert_null(name_at(d, 0x7000));
	assert_int_equal(jitdump__stats(d)->moves, 1);
	assert_int_equal(jitdump__stats(d)->moves_unknown, 1);
	jitdump__free(d);
}

static void test_close_unknown_bad(void **unused)
{
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	struct w w = {0};

	header(&w, JITDUMP_MAGIC);
	rec_header(&w, 99, 16 + 8); /* a record of a later version: skipped */
	put64(&w, 0);
	rec_header(&w, JIT_CODE_UNWINDING_INFO, 16 + 24);
	put64(&w, 0);
	put64(&w, 0);
	put64(&w, 0);
	rec_header(&w, JIT_CODE_LOAD, 16 + 8); /* too short for its fields */
	put64(&w, 0);
	load(&w, 0x1000, 0x10, "before close");
	rec_header(&w, JIT_CODE_CLOSE, 16);
	load(&w, 0x2000, 0x10, "after close");
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__stats(d)->unknown_records, 1);
	assert_int_equal(jitdump__stats(d)->unwinding_infos, 1);
	assert_int_equal(jitdump__stats(d)->bad_records, 1);
	assert_int_equal(jitdump__stats(d)->closes, 1);
	assert_string_equal(name_at(d, 0x1000), "before close");
	assert_null(name_at(d, 0x2000));
	jitdump__free(d);
}

static void test_corrupt(void **unused)
{
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	unsigned seed = 7;
	struct w w = {0};

	/* The other byte order: refused, counted. */
	header(&w, JITDUMP_MAGIC_SWAPPED);
	write_prefix(&w, w.n);
	assert_int_equal(update(d), -EBADMSG);
	assert_int_equal(jitdump__stats(d)->corrupt, 1);
	assert_int_equal(jitdump__stats(d)->corrupt_header, 1);
	jitdump__free(d);

	/* A record size smaller than a record header: the reading stops, what came before stays. */
	d = jitdump__new(1000, 1 << 20, BIG);
	w.n = 0;
	header(&w, JITDUMP_MAGIC);
	load(&w, 0x1000, 0x10, "good");
	rec_header(&w, JIT_CODE_LOAD, 3);
	write_prefix(&w, w.n);
	assert_int_equal(update(d), -EBADMSG);
	assert_string_equal(name_at(d, 0x1000), "good");
	assert_int_equal(jitdump__stats(d)->corrupt, 1);
	assert_int_equal(jitdump__stats(d)->corrupt_header, 0);
	jitdump__free(d);

	/* Random bytes after a valid header: never a crash, whatever is taken. */
	for (int round = 0; round < 200; round++) {
		d = jitdump__new(1000, 1 << 20, BIG);
		w.n = 0;
		header(&w, JITDUMP_MAGIC);
		for (int i = 0; i < 4096; i++) {
			unsigned char c = (unsigned char)rand_r(&seed);

			/* Small ids and sizes now and then, so that records do parse. */
			if (i % 16 == 4 && round % 2)
				c = (unsigned char)(16 + rand_r(&seed) % 200);
			put(&w, &c, 1);
		}
		write_prefix(&w, w.n);
		update(d);
		jitdump__free(d);
	}
}

static void test_caps(void **unused)
{
	struct jitdump *d = jitdump__new(4, 1 << 20, BIG);
	struct jittab_sym s;
	struct w w = {0};
	char name[16];

	header(&w, JITDUMP_MAGIC);
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		load(&w, 0x1000 + 0x100 * (uint64_t)i, 0x10, name);
	}
	write_prefix(&w, w.n);
	assert_int_equal(update(d), -E2BIG);
	assert_int_equal(jitdump__lookup(d, 0x1000, &s), -E2BIG);
	jitdump__free(d);

	/* The file bound: records beyond it are not read. */
	d = jitdump__new(1000, 1 << 20, 200);
	write_prefix(&w, w.n);
	assert_int_equal(update(d), -E2BIG);
	assert_int_equal(jitdump__lookup(d, 0x1000, &s), -E2BIG);
	jitdump__free(d);
}

static void test_unwind_attached(void **unused)
{
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	const struct jitdump_unwind *e, *v;
	struct w w = {0};
	uint64_t gen;

	header(&w, JITDUMP_MAGIC);
	unwinding(&w, "EHFRAME-A", 9, 12, 0);
	load(&w, 0x7f0000001000, 0x13, "stub");
	load(&w, 0x7f0000002000, 0x10, "no cfi"); /* no record before it: none of its own */
	write_prefix(&w, w.n);
	gen = jitdump__unwind_gen(d);
	assert_int_equal(update(d), 0);
	assert_true(jitdump__unwind_gen(d) != gen);
	assert_int_equal(jitdump__unwind(d, &v), 1);
	e = unwind_at(d, 0x7f0000001000);
	assert_non_null(e);
	assert_int_equal(e->code_size, 0x13);
	/* perf's layout: the .eh_frame right after the code, 8-aligned. */
	assert_int_equal(e->eh_frame_addr, 0x7f0000001018);
	assert_int_equal(e->eh_frame_size, 9); /* the .eh_frame_hdr is not kept */
	assert_memory_equal(e->eh_frame, "EHFRAME-A", 9);
	assert_int_equal(jitdump__stats(d)->unwinding_infos, 1);
	assert_int_equal(jitdump__stats(d)->unwind_used, 1);
	assert_string_equal(name_at(d, 0x7f0000001004), "stub");
	/* Nothing new: the same generation. */
	gen = jitdump__unwind_gen(d);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__unwind_gen(d), gen);
	jitdump__free(d);
}

static void test_unwind_truncated_garbage(void **unused)
{
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	const struct jitdump_unwind *v;
	struct w w = {0};
	size_t first;

	header(&w, JITDUMP_MAGIC);
	/* unwinding_size larger than the record: its sizes are not followed. */
	unwinding(&w, "12345678", 8, 8, 4096);
	load(&w, 0x1000, 0x10, "a");
	/* eh_frame_hdr_size above unwinding_size. */
	unwinding(&w, "12345678", 8, 8, 4);
	load(&w, 0x2000, 0x10, "b");
	/* unwinding_size near 2^64: no wrap-around. */
	unwinding(&w, "12345678", 8, 8, UINT64_MAX - 4);
	load(&w, 0x3000, 0x10, "c");
	/* An .eh_frame_hdr only (V8's record for code without CFI): nothing to attach. */
	unwinding(&w, "", 0, 20, 0);
	load(&w, 0x3800, 0x10, "c2");
	/* Shorter than its three sizes. */
	rec_header(&w, JIT_CODE_UNWINDING_INFO, 16 + 8);
	put64(&w, 8);
	load(&w, 0x4000, 0x10, "d");
	/* Two in a row: the first has no code load of its own. */
	unwinding(&w, "first...", 8, 0, 0);
	unwinding(&w, "second..", 8, 0, 0);
	load(&w, 0x5000, 0x10, "e");
	first = w.n;
	/* One more, cut anywhere: taken only once whole, with its code load. */
	unwinding(&w, "late....", 8, 4, 0);
	load(&w, 0x6000, 0x10, "f");
	for (size_t cut = first; cut < w.n; cut += 5) {
		write_prefix(&w, cut);
		assert_int_equal(update(d), 0);
		assert_int_equal(jitdump__unwind(d, &v), 1);
	}
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__unwind(d, &v), 2);
	assert_memory_equal(unwind_at(d, 0x5000)->eh_frame, "second..", 8);
	assert_memory_equal(unwind_at(d, 0x6000)->eh_frame, "late....", 8);
	assert_null(unwind_at(d, 0x1000));
	assert_int_equal(jitdump__stats(d)->unwinding_infos, 8);
	assert_int_equal(jitdump__stats(d)->unwind_bad, 4);
	assert_int_equal(jitdump__stats(d)->unwind_empty, 1);
	assert_null(unwind_at(d, 0x3800));
	assert_int_equal(jitdump__stats(d)->unwind_unused, 1);
	assert_int_equal(jitdump__stats(d)->unwind_used, 2);
	/* A record before a close has no code load either; names are unaffected. */
	unwinding(&w, "orphan..", 8, 0, 0);
	rec_header(&w, JIT_CODE_CLOSE, 16);
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__stats(d)->unwind_unused, 2);
	assert_string_equal(name_at(d, 0x1000), "a");
	/* Rewritten shorter: the CFI read before is forgotten with the rest. */
	write_prefix(&w, first);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__unwind(d, &v), 1);
	assert_non_null(unwind_at(d, 0x5000));
	jitdump__free(d);
}

static void test_unwind_move_unload(void **unused)
{
	struct jitdump *d = jitdump__new(1000, 1 << 20, BIG);
	const struct jitdump_unwind *e, *v;
	struct w w = {0};

	header(&w, JITDUMP_MAGIC);
	unwinding(&w, "cfi of A", 8, 4, 0);
	load(&w, 0x10000, 0x20, "A");
	unwinding(&w, "cfi of B", 8, 4, 0);
	load(&w, 0x20000, 0x20, "B");
	unwinding(&w, "cfi of C", 8, 4, 0);
	load(&w, 0x30000, 0x20, "C");
	/* A moves: its CFI moves with it (the .eh_frame keeps its place after the code). */
	move(&w, 0x10000, 0x50000, 0x20);
	/* New code over part of B, without CFI: B's CFI is gone, not applied to the new code. */
	load(&w, 0x20010, 0x8, "over B");
	/* New code at C's place with CFI of its own: only the new CFI. */
	unwinding(&w, "cfi of D", 8, 4, 0);
	load(&w, 0x30000, 0x40, "D");
	/* A move of code never loaded onto the moved A: A's CFI goes with its name. */
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__unwind(d, &v), 2);
	assert_null(unwind_at(d, 0x10000));
	e = unwind_at(d, 0x50000);
	assert_non_null(e);
	assert_int_equal(e->eh_frame_addr, 0x50020);
	assert_memory_equal(e->eh_frame, "cfi of A", 8);
	assert_null(unwind_at(d, 0x20000));
	assert_null(unwind_at(d, 0x20010));
	e = unwind_at(d, 0x30000);
	assert_non_null(e);
	assert_int_equal(e->code_size, 0x40);
	assert_memory_equal(e->eh_frame, "cfi of D", 8);
	assert_int_equal(jitdump__stats(d)->unwind_dropped, 2);

	move(&w, 0x90000, 0x50000, 0x20);
	write_prefix(&w, w.n);
	assert_int_equal(update(d), 0);
	assert_int_equal(jitdump__unwind(d, &v), 1);
	assert_null(unwind_at(d, 0x50000));
	assert_null(name_at(d, 0x50000));
	assert_int_equal(jitdump__stats(d)->unwind_dropped, 3);
	jitdump__free(d);
}

static void test_is_path(void **unused)
{
	uint32_t pid = 0;

	assert_true(procmaps__jitdump_path("/home/u/jit-4242.dump", &pid));
	assert_int_equal(pid, 4242);
	assert_true(procmaps__jitdump_path("jit-1.dump", &pid));
	assert_false(procmaps__jitdump_path("/tmp/jit-.dump", &pid));
	assert_false(procmaps__jitdump_path("/tmp/jit-12.dump.old", &pid));
	assert_false(procmaps__jitdump_path("/tmp/xjit-12.dump", &pid));
	assert_false(procmaps__jitdump_path("/tmp/jit-99999999999.dump", &pid));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loads_and_debug),
	    cmocka_unit_test(test_growing_truncated),
	    cmocka_unit_test(test_restarted_in_place),
	    cmocka_unit_test(test_move_and_replace),
	    cmocka_unit_test(test_close_unknown_bad),
	    cmocka_unit_test(test_corrupt),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_is_path),
	    cmocka_unit_test(test_unwind_attached),
	    cmocka_unit_test(test_unwind_truncated_garbage),
	    cmocka_unit_test(test_unwind_move_unload),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
