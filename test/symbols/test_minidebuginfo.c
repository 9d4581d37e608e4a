// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of MiniDebugInfo (.gnu_debugdata) as a symbol source, through the symbolizer, on
 * the binaries test/symbols/minidebuginfo.mk builds the way Fedora packages them. Expected
 * addresses come from nm(1) on the unstripped file. No root needed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbols/symbolize.h"

#define P(name) MDI_DIR "/" name

/* Address of function @name in the unstripped copy of @prog (@prog.full), from nm. */
static uint64_t nm_addr(const char *prog, const char *name)
{
	char cmd[1024], line[1024], sym[512], type;
	unsigned long long a;
	uint64_t found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm --defined-only '%s.full'", prog);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %511s", &a, &type, sym) == 3 && !strcmp(sym, name))
			found = a;
	assert_int_equal(pclose(f), 0);
	if (!found)
		fail_msg("nm: no %s in %s.full", name, prog);
	return found;
}

/* The file has no .symtab of its own: what the test is about. */
static void assert_stripped(const char *prog)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "readelf -S '%s' | grep -q '\\.symtab'", prog);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "readelf -S '%s' | grep -q '\\.gnu_debugdata'", prog);
	assert_int_equal(system(cmd), 0);
}

static struct symcache *new_cache(size_t max_bytes)
{
	struct symcache_opts opts = {.debug_dir = MDI_DIR "/no-debug-here", .max_bytes = max_bytes};
	struct symcache *c = symcache__new(&opts);

	assert_non_null(c);
	return c;
}

static struct elf_object *must_open(struct symcache *c, const char *path)
{
	struct elf_object *o = symcache__open(c, path, path);

	if (!o)
		fail_msg("symcache__open(%s): %s", path, strerror(errno));
	return o;
}

/* The single frame of @addr + 1 in @o is @name (symbol table only: no file:line). */
static void assert_named(struct symcache *c, struct elf_object *o, uint64_t addr, const char *name)
{
	struct sym_frame f[4];

	assert_int_equal(symcache__lookup(c, o, addr + 1, f, 4), 1);
	assert_non_null(f[0].function);
	assert_string_equal(f[0].function, name);
	assert_null(f[0].file);
}

/* Local functions from .gnu_debugdata, exported ones from .dynsym, in one table. */
static void test_shared_library(void **state)
{
	const char *lib = P("libmini.so");
	struct symcache *c = new_cache(0);
	struct elf_object *o;
	struct symcache_stats st;

	assert_stripped(lib);
	o = must_open(c, lib);
	assert_named(c, o, nm_addr(lib, "mini_hidden"), "mini_hidden");
	assert_named(c, o, nm_addr(lib, "mini_visible"), "mini_visible");
	assert_null(elf_object__debug_file(o));
	symcache__stats(c, &st);
	assert_int_equal(st.minidebuginfo, 1);
	assert_int_equal(st.minidebuginfo_errors, 0);
	assert_int_equal(st.misses, 0);
	symcache__free(c);
}

/* A PIE executable: every function but the imports is in .gnu_debugdata; mangled names too. */
static void test_executable(void **state)
{
	const char *prog = P("cprog-mdi");
	struct symcache *c = new_cache(0);
	struct elf_object *o;

	assert_stripped(prog);
	o = must_open(c, prog);
	assert_named(c, o, nm_addr(prog, "middle"), "middle");
	assert_named(c, o, nm_addr(prog, "outer"), "outer");
	assert_named(c, o, nm_addr(prog, "main"), "main");
	assert_named(c, o, nm_addr(prog, "_ZN7mycrate6legacy17h0123456789abcdefE"),
		     "mycrate::legacy");
	symcache__free(c);
}

/* Corrupt .gnu_debugdata: counted once; .dynsym still names, the rest is an honest miss. */
static void check_corrupt(const char *lib)
{
	const char *full = P("libmini.so"); /* the same build, with its .gnu_debugdata intact */
	struct symcache *c = new_cache(0);
	struct elf_object *o;
	struct symcache_stats st;
	struct sym_frame f[4];
	int n, i;

	o = must_open(c, lib);
	assert_named(c, o, nm_addr(full, "mini_visible"), "mini_visible");
	for (i = 0; i < 3; i++) {
		n = symcache__lookup(c, o, nm_addr(full, "mini_hidden") + 1 + i, f, 4);
		/* Never another function's name for it. */
		assert_true(n == 0 || (f[0].function && !strcmp(f[0].function, "mini_hidden")));
		assert_int_equal(n, 0);
	}
	symcache__stats(c, &st);
	assert_int_equal(st.minidebuginfo, 0);
	assert_int_equal(st.minidebuginfo_errors, 1);
	assert_int_equal(st.misses, 3);
	symcache__free(c);
}

static void test_truncated_xz(void **state)
{
	check_corrupt(P("libmini-truncxz.so"));
}

static void test_xz_not_elf(void **state)
{
	check_corrupt(P("libmini-notelf.so"));
}

/*
 * Re-loads give the same names: after eviction (the decoded file is kept: decoded once) and
 * after the descriptors closed for idleness (decoded again from the re-opened file).
 */
static void test_reload(void **state)
{
	const char *lib = P("libmini.so"), *prog = P("cprog-mdi");
	struct symcache *c = new_cache(1); /* one byte: every load evicts the other object */
	struct elf_object *lo, *po;
	struct symcache_stats st;

	lo = must_open(c, lib);
	po = must_open(c, prog);
	assert_named(c, lo, nm_addr(lib, "mini_hidden"), "mini_hidden");
	assert_named(c, po, nm_addr(prog, "middle"), "middle");
	assert_named(c, lo, nm_addr(lib, "mini_visible"), "mini_visible");
	assert_named(c, po, nm_addr(prog, "outer"), "outer");
	symcache__stats(c, &st);
	assert_true(st.evictions >= 2);
	assert_int_equal(st.minidebuginfo, 2);

	symcache__close_idle(c, UINT64_MAX);
	symcache__stats(c, &st);
	assert_int_equal(st.fds, 0);
	assert_named(c, lo, nm_addr(lib, "mini_hidden") + 2, "mini_hidden");
	symcache__stats(c, &st);
	assert_int_equal(st.minidebuginfo, 3);
	assert_int_equal(st.minidebuginfo_errors, 0);
	symcache__free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shared_library), cmocka_unit_test(test_executable),
	    cmocka_unit_test(test_truncated_xz),   cmocka_unit_test(test_xz_not_elf),
	    cmocka_unit_test(test_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
