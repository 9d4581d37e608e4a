// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the symbolizer against the programs of test/symbols/progs, built by
 * test/symbols/symbolize.mk into PROGS_DIR. Expected values come from elsewhere:
 * symbol addresses from nm(1), file:line and inline chains from binutils'
 * addr2line(1), lines from markers in the sources, and addresses the
 * programs print about themselves. No root needed.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>

#include "process/procmaps.h"
#include "symbols/symbolize.h"

#define P(name) PROGS_DIR "/" name
#define MAX_ADDRS 4096

/* --- helpers: run tools, parse their output ------------------------------------------------ */

static char *run(const char *fmt, ...)
{
	char cmd[8192], *out = NULL;
	size_t len = 0, cap = 0, n;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	assert_non_null(f);
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 65536;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		n = fread(out + len, 1, 4096, f);
		len += n;
	} while (n > 0);
	out[len] = 0;
	assert_int_equal(pclose(f), 0);
	return out;
}

/* Address and size of @name from `nm -S` (@dynamic: `nm -D`). */
static void nm_symbol(const char *file, const char *name, bool dynamic, uint64_t *addr,
		      uint64_t *size)
{
	char *out = run("nm -S --defined-only %s '%s'", dynamic ? "-D" : "", file), *line, *save;
	unsigned long long a, s;
	char type, sym[1024];
	bool found = false;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%llx %llx %c %1023s", &a, &s, &type, sym) == 4 &&
		    !strcmp(sym, name)) {
			*addr = a;
			*size = s;
			found = true;
			break;
		}
	}
	free(out);
	if (!found)
		fail_msg("nm: no symbol %s in %s", name, file);
}

/* Line number of the source line holding @marker. */
static int marker_line(const char *src, const char *marker)
{
	char *out = run("grep -n '%s' '%s' | cut -d: -f1", marker, src);
	int line = atoi(out);

	free(out);
	assert_true(line > 0);
	return line;
}

struct exp_frame {
	char function[512];
	char file[512];
	int line;
};

struct exp_addr {
	uint64_t addr;
	int n;
	struct exp_frame frames[8];
};

/*
 * Runs `addr2line -a -f -i -C` on [lo, hi) of @file. Its output per address:
 * "0x<addr>", then pairs "function" / "file:line[ (discriminator N)]",
 * innermost first.
 */
static int addr2line_range(const char *file, uint64_t lo, uint64_t hi, struct exp_addr *out)
{
	char *cmd = malloc(64 * MAX_ADDRS + 1024), *res, *line, *save, *colon;
	struct exp_addr *cur = NULL;
	size_t len;
	int n = 0, pending = 0;
	uint64_t a;

	assert_true(hi - lo <= MAX_ADDRS);
	len = (size_t)sprintf(cmd, "addr2line -a -f -i -C -e '%s'", file);
	for (a = lo; a < hi; a++)
		len += (size_t)sprintf(cmd + len, " 0x%llx", (unsigned long long)a);
	res = run("%s", cmd);
	free(cmd);
	for (line = strtok_r(res, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "0x", 2) && !pending) {
			cur = &out[n++];
			memset(cur, 0, sizeof(*cur));
			cur->addr = strtoull(line, NULL, 16);
			continue;
		}
		assert_non_null(cur);
		if (!pending) {
			if (cur->n < 8)
				snprintf(cur->frames[cur->n].function, 512, "%s", line);
			pending = 1;
			continue;
		}
		pending = 0;
		if (cur->n >= 8)
			continue;
		strtok(line, " "); /* drop " (discriminator N)" */
		colon = strrchr(line, ':');
		assert_non_null(colon);
		*colon = 0;
		snprintf(cur->frames[cur->n].file, 512, "%s", line);
		cur->frames[cur->n].line = atoi(colon + 1);
		cur->n++;
	}
	free(res);
	return n;
}

/*
 * Every address of @func must give the frames addr2line gives for @dbgfile
 * (the same program with its DWARF). Returns how many addresses had a chain
 * of two frames or more, to prove inline chains were exercised.
 */
static int compare_with_addr2line(struct symcache *c, struct elf_object *o, const char *dbgfile,
				  const char *func)
{
	static struct exp_addr exp[MAX_ADDRS];
	struct sym_frame frames[16];
	uint64_t addr, size;
	int n, i, k, inlined = 0, bad = 0;

	nm_symbol(dbgfile, func, false, &addr, &size);
	assert_true(size > 0);
	n = addr2line_range(dbgfile, addr, addr + size, exp);
	assert_int_equal(n, (int)size);
	for (i = 0; i < n; i++) {
		k = symcache__lookup(c, o, exp[i].addr, frames, 16);
		if (k != exp[i].n) {
			print_error("%s+%#llx: %d frames, addr2line has %d\n", func,
				    (unsigned long long)(exp[i].addr - addr), k, exp[i].n);
			bad++;
			continue;
		}
		if (k > 1)
			inlined++;
		while (k-- > 0) {
			const struct exp_frame *e = &exp[i].frames[k];
			const struct sym_frame *f = &frames[k];

			if (!f->function || strcmp(f->function, e->function) || !f->file ||
			    strcmp(f->file, e->file) || f->line != e->line) {
				print_error("%s+%#llx frame %d: %s %s:%d, addr2line: %s %s:%d\n",
					    func, (unsigned long long)(exp[i].addr - addr), k,
					    f->function, f->file, f->line, e->function, e->file,
					    e->line);
				bad++;
			}
		}
	}
	assert_int_equal(bad, 0);
	return inlined;
}

static struct symcache *new_cache(const char *debug_dir)
{
	struct symcache_opts opts = {.debug_dir = debug_dir};
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

/* --- tests ---------------------------------------------------------------------------------- */

static void test_open_errors(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct symcache_stats st;

	errno = 0;
	assert_null(symcache__open(c, P("does-not-exist"), NULL));
	assert_int_equal(errno, ENOENT);
	assert_null(symcache__open(c, P("not-elf"), NULL));
	assert_int_equal(errno, ENOEXEC);
	assert_null(symcache__open(c, P("cprog-trunc"), NULL));
	assert_int_equal(errno, ENOEXEC);
	assert_null(symcache__open(c, P("cprog-short"), NULL));
	assert_int_equal(errno, ENOEXEC);
	assert_null(symcache__open(c, PROGS_DIR, NULL));
	assert_int_equal(errno, ENOEXEC);
	symcache__stats(c, &st);
	assert_int_equal(st.open_errors, 5);
	assert_int_equal(st.objects, 0);
	symcache__free(c);
	symcache__free(NULL);
}

/* A file overwritten in its middle may open or not, but must never crash a lookup. */
static void test_garbled_never_crashes(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = symcache__open(c, P("cprog-garbled"), NULL);
	struct sym_frame f[8];
	uint64_t addr, size, a;

	if (!o) {
		assert_int_equal(errno, ENOEXEC);
	} else {
		nm_symbol(P("cprog-pie"), "middle", false, &addr, &size);
		for (a = 0; a < 0x4000; a += 3)
			assert_true(symcache__lookup(c, o, a, f, 8) >= 0);
		for (a = addr; a < addr + size; a++)
			assert_true(symcache__lookup(c, o, a, f, 8) >= 0);
		/* Call targets and tail-call scans read code and relocations: any answer, no crash.
		 */
		for (a = 0x1000; a < 0x1400; a++) {
			char name[64];
			uint64_t target;

			assert_true(symcache__call_target(c, o, a, name, sizeof(name), &target) <=
				    1);
			assert_true(symcache__jumps_out(c, o, a) <= 1);
		}
	}
	symcache__free(c);
}

static void test_cache_identity(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *a, *b, *copy, *nb, *nb_copy;
	char tmp[] = "/tmp/spanprof-sym-XXXXXX", path[512], *out;
	struct symcache_stats st;

	assert_non_null(mkdtemp(tmp));
	a = must_open(c, P("cprog-pie"));
	b = must_open(c, P("cprog-pie"));
	assert_ptr_equal(a, b);

	/* Build ID as readelf shows it. */
	out = run("readelf -n '%s' | sed -n 's/.*Build ID: *//p'", P("cprog-pie"));
	out[strcspn(out, "\n")] = 0;
	assert_non_null(elf_object__build_id(a));
	assert_string_equal(elf_object__build_id(a), out);
	free(out);

	/* Another inode with the same build ID is the same object. */
	snprintf(path, sizeof(path), "%s/copy", tmp);
	free(run("cp '%s' '%s'", P("cprog-pie"), path));
	copy = must_open(c, path);
	assert_ptr_equal(copy, a);

	/* Without a build ID, identity is the inode: a copy is another object. */
	nb = must_open(c, P("cprog-nobuildid"));
	assert_null(elf_object__build_id(nb));
	assert_ptr_equal(must_open(c, P("cprog-nobuildid")), nb);
	snprintf(path, sizeof(path), "%s/nb", tmp);
	free(run("cp '%s' '%s'", P("cprog-nobuildid"), path));
	nb_copy = must_open(c, path);
	assert_ptr_not_equal(nb_copy, nb);

	symcache__stats(c, &st);
	assert_int_equal(st.objects, 3);
	free(run("rm -rf '%s'", tmp));
	symcache__free(c);
}

static void test_dwarf_pie(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-pie"));

	assert_true(compare_with_addr2line(c, o, P("cprog-pie"), "middle") > 0);
	compare_with_addr2line(c, o, P("cprog-pie"), "outer");
	compare_with_addr2line(c, o, P("cprog-pie"), "main");
	assert_null(elf_object__debug_file(o));
	symcache__free(c);
}

/* Compressed DWARF is inflated to a file and mapped: the same answers as addr2line. */
static void test_dwarf_compressed(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-zdebug"));

	assert_true(compare_with_addr2line(c, o, P("cprog-zdebug.full"), "middle") > 0);
	compare_with_addr2line(c, o, P("cprog-zdebug.full"), "outer");
	compare_with_addr2line(c, o, P("cprog-zdebug.full"), "main");
	symcache__trim(c); /* mapped pages dropped: read back unchanged */
	assert_true(compare_with_addr2line(c, o, P("cprog-zdebug.full"), "middle") > 0);
	symcache__free(c);
}

static void test_dwarf_nopie(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-nopie"));

	assert_true(compare_with_addr2line(c, o, P("cprog-nopie"), "middle") > 0);
	compare_with_addr2line(c, o, P("cprog-nopie"), "main");
	symcache__free(c);
}

/* The chain at one address, checked against the markers in cprog.c. */
static void test_inline_chain(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-pie"));
	int leaf = marker_line(SRC_DIR "/cprog.c", "MARK_LEAF");
	int mid_call = marker_line(SRC_DIR "/cprog.c", "MARK_MID_CALL");
	int middle_call = marker_line(SRC_DIR "/cprog.c", "MARK_MIDDLE_CALL");
	struct sym_frame f[8];
	uint64_t addr, size, a;
	int n, found = 0;

	nm_symbol(P("cprog-pie"), "middle", false, &addr, &size);
	for (a = addr; a < addr + size; a++) {
		n = symcache__lookup(c, o, a, f, 8);
		assert_true(n >= 1);
		assert_string_equal(f[n - 1].function, "middle");
		if (n != 3 || f[0].line != leaf)
			continue;
		found++;
		assert_string_equal(f[0].function, "leaf_inline");
		assert_string_equal(f[1].function, "mid_inline");
		assert_int_equal(f[1].line, mid_call);
		assert_int_equal(f[2].line, middle_call);
		assert_string_equal(f[2].system_name, "middle");
		assert_non_null(strstr(f[0].file, "/cprog.c"));
		assert_non_null(strstr(f[1].file, "/cprog.c"));
		assert_non_null(strstr(f[2].file, "/cprog.c"));
		/* max = 1 keeps the innermost frame only. */
		assert_int_equal(symcache__lookup(c, o, a, f, 1), 1);
		assert_string_equal(f[0].function, "leaf_inline");
	}
	assert_true(found > 0);
	symcache__free(c);
}

static void test_cxx(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cxxprog"));
	int inl = marker_line(SRC_DIR "/cxxprog.cpp", "MARK_CXX_INLINE");
	int call = marker_line(SRC_DIR "/cxxprog.cpp", "MARK_CXX_CALL");
	struct sym_frame f[8];
	uint64_t addr, size, a;
	char *mangled;
	int n, found = 0;

	compare_with_addr2line(c, o, P("cxxprog"), "_ZN8outer_ns5inner5scaleIiEET_S2_i");
	compare_with_addr2line(c, o, P("cxxprog"), "_ZN8outer_ns5inner5scaleIdEET_S2_i");
	assert_true(compare_with_addr2line(c, o, P("cxxprog"), "_ZN8outer_ns5inner6Worker3runEl") >
		    0);

	/* Names as c++filt writes them, and the mangled name as system name. */
	mangled = "_ZN8outer_ns5inner5scaleIiEET_S2_i";
	nm_symbol(P("cxxprog"), mangled, false, &addr, &size);
	n = symcache__lookup(c, o, addr, f, 8);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].function, "int outer_ns::inner::scale<int>(int, int)");
	assert_string_equal(f[0].system_name, mangled);

	nm_symbol(P("cxxprog"), "_ZN8outer_ns5inner6Worker3runEl", false, &addr, &size);
	for (a = addr; a < addr + size; a++) {
		n = symcache__lookup(c, o, a, f, 8);
		if (n != 2)
			continue;
		found++;
		assert_string_equal(f[0].function, "long outer_ns::inner::add_sink<long>(long)");
		assert_int_equal(f[0].line, inl);
		assert_string_equal(f[1].function, "outer_ns::inner::Worker::run(long)");
		assert_int_equal(f[1].line, call);
	}
	assert_true(found > 0);
	symcache__free(c);
}

/*
 * C++ names keep their scope where DWARF has no linkage name (gcc omits it for lambdas'
 * operator() and for some template instances): inlined frames are qualified from their DWARF
 * scopes, a lambda inside app::sort_words is app::sort_words(long*, int)::{lambda}::operator(),
 * and a physical function takes the demangled symbol name, which is what c++filt prints.
 */
static void test_cxx_scopes(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cxxprog"));
	char *out = run("nm --defined-only '%s' | grep ' [tTW] '", P("cxxprog")), *line, *save;
	char *want, mangled[1024], type;
	struct sym_frame f[16];
	unsigned long long a;
	int n, i, lambdas = 0, physical = 0;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t addr, size, pc;

		if (sscanf(line, "%llx %c %1023s", &a, &type, mangled) != 3 ||
		    strncmp(mangled, "_Z", 2))
			continue;
		nm_symbol(P("cxxprog"), mangled, false, &addr, &size);
		for (pc = addr; pc < addr + size; pc++) {
			n = symcache__lookup(c, o, pc, f, 16);
			for (i = 0; i < n; i++) {
				const char *fn = f[i].function;
				size_t len = fn ? strlen(fn) : 0;

				assert_non_null(fn);
				/* Never a bare member name: it has its class, or more. */
				if (len >= 10 && !strcmp(fn + len - 10, "operator()"))
					assert_non_null(strstr(fn, "::"));
				if (!strcmp(fn,
					    "app::sort_words(long*, int)::{lambda}::operator()"))
					lambdas++;
			}
			if (pc == addr && n > 0) {
				/* The physical function at its entry: as c++filt prints the symbol.
				 */
				want = run("c++filt '%s' | tr -d '\\n'", mangled);
				assert_string_equal(f[n - 1].function, want);
				free(want);
				physical++;
			}
		}
	}
	free(out);
	assert_true(lambdas > 0);
	assert_true(physical >= 5);
	symcache__free(c);
}

static void test_shared_library(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("libsym.so"));

	assert_true(compare_with_addr2line(c, o, P("libsym.so"), "lib_work") > 0);
	symcache__free(c);
}

/* No DWARF: names from .symtab, C++/Rust demangled, no file:line. */
static void test_symtab_only(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-nodebug"));
	struct sym_frame f[8];
	uint64_t addr, size;

	nm_symbol(P("cprog-nodebug"), "middle", false, &addr, &size);
	assert_int_equal(symcache__lookup(c, o, addr + size / 2, f, 8), 1);
	assert_string_equal(f[0].function, "middle");
	assert_string_equal(f[0].system_name, "middle");
	assert_null(f[0].file);
	assert_int_equal(f[0].line, 0);
	/* One past the end belongs to whatever follows, never to middle. */
	if (symcache__lookup(c, o, addr + size, f, 8) == 1)
		assert_string_not_equal(f[0].function, "middle");

	nm_symbol(P("cprog-nodebug"), "_ZN7mycrate6legacy17h0123456789abcdefE", false, &addr,
		  &size);
	assert_int_equal(symcache__lookup(c, o, addr, f, 8), 1);
	assert_string_equal(f[0].function, "mycrate::legacy");
	assert_string_equal(f[0].system_name, "_ZN7mycrate6legacy17h0123456789abcdefE");

	nm_symbol(P("cprog-nodebug"), "_RNvCs1234_7mycrate2v0", false, &addr, &size);
	assert_int_equal(symcache__lookup(c, o, addr, f, 8), 1);
	assert_string_equal(f[0].function, "mycrate::v0");

	/* Below the first symbol: nothing known. */
	assert_int_equal(symcache__lookup(c, o, 0x10, f, 8), 0);
	symcache__free(c);
}

/* The address of the instruction after the first one of @file that objdump shows matching @re. */
static uint64_t after_insn(const char *file, const char *re)
{
	char *out = run("objdump -d --no-show-raw-insn '%s' | grep -A1 -m1 -E '%s' | tail -1 | "
			"cut -d: -f1",
			file, re);
	uint64_t a = strtoull(out, NULL, 16);

	free(out);
	assert_true(a != 0);
	return a;
}

/* Call targets: through .plt (JUMP_SLOT), .plt.got (GLOB_DAT), directly, and indirect calls. */
static void test_call_target(void **state)
{
	struct symcache *c = new_cache(NULL);
	const char *file = P("cprog-nodebug");
	struct elf_object *o = must_open(c, file);
	uint64_t target, addr, size;
	char name[64];

	assert_int_equal(symcache__call_target(c, o, after_insn(file, "call .*<strcmp@plt>"), name,
					       sizeof(name), &target),
			 1);
	assert_string_equal(name, "strcmp");
	assert_int_equal(target, 0); /* a PLT entry: the function is elsewhere */
	assert_int_equal(symcache__call_target(c, o, after_insn(file, "call .*<outer>"), name,
					       sizeof(name), &target),
			 1);
	assert_string_equal(name, "outer");
	nm_symbol(file, "outer", false, &addr, &size);
	assert_int_equal(target, addr);
	assert_int_equal(symcache__call_target(c, o,
					       after_insn(file, "call .*<__cxa_finalize@plt>"),
					       name, sizeof(name), &target),
			 1);
	assert_string_equal(name, "__cxa_finalize");
	/* Through a GOT slot (call *disp32(%rip)): the slot's symbol. */
	assert_int_equal(symcache__call_target(c, o, after_insn(file, "call +\\*0x.*%rip"), name,
					       sizeof(name), &target),
			 1);
	assert_string_equal(name, "__libc_start_main");
	/* Through a register: nothing named. */
	assert_int_equal(symcache__call_target(c, o, after_insn(file, "call +\\*%"), name,
					       sizeof(name), &target),
			 0);
	/* Outside the file's segments: unreadable. */
	assert_true(symcache__call_target(c, o, 1ull << 40, name, sizeof(name), &target) < 0);

	/* outer calls middle and returns: no jump out of it. */
	nm_symbol(file, "outer", false, &addr, &size);
	assert_int_equal(symcache__jumps_out(c, o, addr), 0);
	assert_int_equal(symcache__function_start(c, o, addr + size - 1, &target), 0);
	assert_int_equal(target, addr);
	/* crtstuff's frame_dummy (sizeless) is a tail call: JMP rel32 to register_tm_clones. */
	{
		char *out = run("nm --defined-only '%s' | sed -n 's/ t frame_dummy$//p'", file);

		addr = strtoull(out, NULL, 16);
		free(out);
		assert_true(addr != 0);
		assert_int_equal(symcache__jumps_out(c, o, addr), 1);
	}
	symcache__free(c);
}

/*
 * A symbol without a size (crti's _init, hand-written code) names the addresses up to the next
 * symbol, but never those of the next section: the PLT after .init is not _init's.
 */
static void test_sizeless_symbol_ends_with_its_section(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-nodebug"));
	char *out =
	    run("readelf -SW '%s' | sed -n 's/.*\\] \\.init  *PROGBITS  *\\([0-9a-f]*\\) [0-9a-f]* "
		"\\([0-9a-f]*\\) .*/\\1 \\2/p'",
		P("cprog-nodebug"));
	unsigned long long init_addr = 0, init_size = 0;
	struct sym_frame f[8];

	assert_int_equal(sscanf(out, "%llx %llx", &init_addr, &init_size), 2);
	free(out);
	out = run("nm --defined-only '%s' | grep -c ' _init$'", P("cprog-nodebug"));
	assert_int_equal(atoi(out), 1);
	free(out);
	/* _init is sizeless (nm -S prints no size for it): otherwise this tests nothing. */
	out = run("nm -S --defined-only '%s' | grep ' _init$' | wc -w", P("cprog-nodebug"));
	assert_int_equal(atoi(out), 3);
	free(out);
	assert_int_equal(symcache__lookup(c, o, init_addr, f, 8), 1);
	assert_string_equal(f[0].function, "_init");
	assert_int_equal(symcache__lookup(c, o, init_addr + init_size - 1, f, 8), 1);
	assert_string_equal(f[0].function, "_init");
	/* The first byte after .init (padding, then the PLT): not _init's. */
	if (symcache__lookup(c, o, init_addr + init_size, f, 8) == 1)
		assert_string_not_equal(f[0].function, "_init");
	if (symcache__lookup(c, o, (init_addr + init_size + 15) / 16 * 16 + 16, f, 8) == 1)
		assert_string_not_equal(f[0].function, "_init");
	symcache__free(c);
}

static void test_dynsym_only(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-dynsym"));
	struct sym_frame f[8];
	uint64_t addr, size;

	nm_symbol(P("cprog-dynsym"), "outer", true, &addr, &size);
	assert_int_equal(symcache__lookup(c, o, addr + 1, f, 8), 1);
	assert_string_equal(f[0].function, "outer");
	assert_null(f[0].file);
	assert_null(elf_object__debug_file(o));
	symcache__free(c);
}

static void test_debuglink(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-split"));
	const char *dbg = elf_object__debug_file(o);

	assert_non_null(dbg);
	assert_string_equal(dbg, P("cprog-split.debug"));
	assert_true(compare_with_addr2line(c, o, P("cprog-split.full"), "middle") > 0);

	o = must_open(c, P("cprog-subdir"));
	dbg = elf_object__debug_file(o);
	assert_non_null(dbg);
	assert_string_equal(dbg, P(".debug/cprog-subdir.debug"));
	assert_true(compare_with_addr2line(c, o, P("cprog-subdir.full"), "middle") > 0);
	symcache__free(c);
}

/* The same debuglink, reached through the process's view of the path (@orig_path). */
static void test_debuglink_orig_path(void **state)
{
	struct symcache *c = new_cache(NULL);
	char tmp[] = "/tmp/spanprof-sym-XXXXXX", path[512];
	struct elf_object *o;

	assert_non_null(mkdtemp(tmp));
	snprintf(path, sizeof(path), "%s/elsewhere", tmp);
	free(run("cp '%s' '%s'", P("cprog-split"), path));
	o = symcache__open(c, path, P("cprog-split"));
	assert_non_null(o);
	assert_non_null(elf_object__debug_file(o));
	assert_string_equal(elf_object__debug_file(o), P("cprog-split.debug"));
	free(run("rm -rf '%s'", tmp));
	symcache__free(c);
}

/* No build ID: the CRC in .gnu_debuglink accepts the right file and rejects a stale one. */
static void test_debuglink_crc(void **state)
{
	struct symcache *c = new_cache(NULL);
	char tmp[] = "/tmp/spanprof-sym-XXXXXX", path[512];
	struct elf_object *o = must_open(c, P("cprog-splitnb"));

	assert_null(elf_object__build_id(o));
	assert_non_null(elf_object__debug_file(o));
	assert_string_equal(elf_object__debug_file(o), P("cprog-splitnb.debug"));
	assert_true(compare_with_addr2line(c, o, P("cprog-splitnb.full"), "middle") > 0);

	assert_non_null(mkdtemp(tmp));
	snprintf(path, sizeof(path), "%s/cprog-splitnb", tmp);
	free(run("cp '%s' '%s' && cp '%s' '%s/cprog-splitnb.debug'", P("cprog-splitnb"), path,
		 P("cprog-nobuildid"), tmp));
	o = must_open(c, path);
	assert_null(elf_object__debug_file(o));
	free(run("rm -rf '%s'", tmp));
	symcache__free(c);
}

static void test_build_id_tree(void **state)
{
	struct symcache *c = new_cache(P("debugroot"));
	struct elf_object *o = must_open(c, P("cprog-bid"));
	const char *dbg = elf_object__debug_file(o), *id = elf_object__build_id(o);
	struct sym_frame f[8];
	uint64_t addr, size;
	char want[1024];

	assert_non_null(id);
	assert_non_null(dbg);
	snprintf(want, sizeof(want), "%s/.build-id/%.2s/%s.debug", P("debugroot"), id, id + 2);
	assert_string_equal(dbg, want);
	assert_true(compare_with_addr2line(c, o, P("cprog-bid.full"), "middle") > 0);
	symcache__free(c);

	/* Without the debug root, the stripped file knows nothing about middle. */
	c = new_cache(NULL);
	o = must_open(c, P("cprog-bid"));
	assert_null(elf_object__debug_file(o));
	nm_symbol(P("cprog-bid.full"), "middle", false, &addr, &size);
	assert_int_equal(symcache__lookup(c, o, addr, f, 8), 0);
	symcache__free(c);
}

static void test_lookup_cache(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct elf_object *o = must_open(c, P("cprog-pie"));
	struct sym_frame f1[8], f2[8];
	struct symcache_stats st;
	uint64_t addr, size;
	int n1, n2;

	nm_symbol(P("cprog-pie"), "outer", false, &addr, &size);
	n1 = symcache__lookup(c, o, addr, f1, 8);
	n2 = symcache__lookup(c, o, addr, f2, 8);
	assert_int_equal(n1, n2);
	assert_true(n1 >= 1);
	assert_ptr_equal(f1[n1 - 1].function, f2[n2 - 1].function);
	assert_int_equal(symcache__lookup(c, o, addr, f1, 0), -EINVAL);
	symcache__stats(c, &st);
	assert_int_equal(st.lookups, 2);
	assert_int_equal(st.cache_hits, 1);
	assert_int_equal(st.dwarf_hits, 1);
	symcache__free(c);
}

/* Process address -> mapping -> file offset -> ELF vaddr -> name, for @prog. */
static void check_live(const char *prog)
{
	int in[2], out[2], status, i, n;
	struct symcache *c = new_cache(NULL);
	struct procmaps maps = {0};
	struct sym_frame f[8];
	char name[64];
	void *ptr;
	FILE *fout;
	pid_t pid;

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(prog, prog, "addrs", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	fout = fdopen(out[0], "r");
	assert_non_null(fout);
	for (i = 0; i < 2; i++) {
		const struct procmap *m;
		struct elf_object *o;
		uint64_t vaddr;

		assert_int_equal(fscanf(fout, "%63s %p", name, &ptr), 2);
		if (i == 0)
			assert_int_equal(procmaps__read(pid, &maps), 0);
		m = procmaps__find(&maps, (uint64_t)(uintptr_t)ptr);
		assert_non_null(m);
		assert_true(m->prot & 4 /* PROT_EXEC */);
		o = must_open(c, m->path);
		assert_int_equal(elf_object__file_offset_to_vaddr(
				     o, (uint64_t)(uintptr_t)ptr - m->start + m->offset, &vaddr),
				 0);
		n = symcache__lookup(c, o, vaddr, f, 8);
		assert_true(n >= 1);
		assert_string_equal(f[n - 1].function, name);
		assert_int_equal(elf_object__file_offset_to_vaddr(o, 1ULL << 40, &vaddr), -ENOENT);
	}
	assert_int_equal(write(in[1], "\n", 1), 1);
	close(in[1]);
	fclose(fout);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	procmaps__clear(&maps);
	symcache__free(c);
}

static void test_live_pie(void **state)
{
	check_live(P("cprog-pie"));
}

static void test_live_nopie(void **state)
{
	check_live(P("cprog-nopie"));
}

/* The library mapped into this very process, found through /proc/self/maps. */
static void test_live_shared_library(void **state)
{
	struct symcache *c = new_cache(NULL);
	struct procmaps maps = {0};
	const struct procmap *m;
	struct elf_object *o;
	struct sym_frame f[8];
	uint64_t vaddr, pc;
	void *h, *fn;
	int n;

	h = dlopen(P("libsym.so"), RTLD_NOW);
	assert_non_null(h);
	fn = dlsym(h, "lib_work");
	assert_non_null(fn);
	pc = (uint64_t)(uintptr_t)fn;
	assert_int_equal(procmaps__read(getpid(), &maps), 0);
	m = procmaps__find(&maps, pc);
	assert_non_null(m);
	assert_non_null(strstr(m->path, "libsym.so"));
	o = must_open(c, m->path);
	assert_int_equal(elf_object__file_offset_to_vaddr(o, pc - m->start + m->offset, &vaddr), 0);
	n = symcache__lookup(c, o, vaddr, f, 8);
	assert_true(n >= 1);
	assert_string_equal(f[n - 1].function, "lib_work");
	assert_non_null(strstr(f[n - 1].file, "libsym.c"));
	procmaps__clear(&maps);
	dlclose(h);
	symcache__free(c);
}

/* Frames as strings: results of a cache that unloads must be copied before the next call. */
static void frames_str(char *buf, size_t len, const struct sym_frame *f, int n)
{
	size_t off = (size_t)snprintf(buf, len, "%d", n);
	int i;

	for (i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "|%s/%s/%s:%d:%d", f[i].function,
					f[i].system_name, f[i].file, f[i].line, f[i].column);
}

/*
 * A budget a little over the largest DWARF of the three files unloads objects
 * as lookups alternate between them: re-loaded objects must answer as an
 * unbounded cache does.
 */
static void test_budget_reload(void **state)
{
	struct symcache_opts big = {.max_bytes = SIZE_MAX}, tiny = {.max_bytes = 12 << 10};
	struct symcache *ref = symcache__new(&big), *c = symcache__new(&tiny);
	const char *files[3] = {P("cprog-pie"), P("cxxprog"), P("cprog-split")};
	const char *funcs[3] = {"middle", "_ZN8outer_ns5inner6Worker3runEl", "middle"};
	struct elf_object *ro[3], *co[3];
	uint64_t addr[3], size[3], a;
	struct sym_frame f[16];
	char want[4096], got[4096];
	struct symcache_stats st;
	int i, n;

	assert_non_null(ref);
	assert_non_null(c);
	for (i = 0; i < 3; i++) {
		ro[i] = must_open(ref, files[i]);
		co[i] = must_open(c, files[i]);
		nm_symbol(i == 2 ? P("cprog-split.full") : files[i], funcs[i], false, &addr[i],
			  &size[i]);
	}
	for (a = 0; a < 64; a++) {
		for (i = 0; i < 3; i++) {
			n = symcache__lookup(ref, ro[i], addr[i] + a % size[i], f, 16);
			frames_str(want, sizeof(want), f, n);
			n = symcache__lookup(c, co[i], addr[i] + a % size[i], f, 16);
			frames_str(got, sizeof(got), f, n);
			assert_string_equal(got, want);
		}
	}
	symcache__stats(c, &st);
	print_message("budget 12 KiB: loads %llu evictions %llu bytes_peak %llu\n",
		      (unsigned long long)st.loads, (unsigned long long)st.evictions,
		      (unsigned long long)st.bytes_peak);
	assert_true(st.evictions >= 64);
	assert_int_equal(st.loads, st.objects_loaded + st.evictions);
	assert_true(st.answers_dropped > 0); /* 12 KiB does not hold them all */
	assert_true(st.objects_loaded >= 1 && st.objects_loaded < 3);
	assert_true(st.bytes > 0 && st.bytes <= st.bytes_peak);
	assert_int_equal(st.load_errors, 0);
	assert_int_equal(st.dwarf_skipped, 0);
	assert_string_equal(elf_object__debug_file(co[2]), P("cprog-split.debug"));
	symcache__stats(ref, &st);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.objects_loaded, 3);
	symcache__free(ref);
	symcache__free(c);
}

/* The innermost frame's file:line:column of @a as libdw's own table gives it (@want: "-" none). */
static void libdw_line(Dwarf *dw, uint64_t a, char *want, size_t len)
{
	Dwarf_Die cudie;
	Dwarf_Attribute attr;
	Dwarf_Line *line;
	const char *file, *dir;
	int ln = 0, col = 0;

	snprintf(want, len, "-");
	if (!dwarf_addrdie(dw, a, &cudie) || !(line = dwarf_getsrc_die(&cudie, a)))
		return;
	file = dwarf_linesrc(line, NULL, NULL);
	dir = dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &attr));
	if (dwarf_lineno(line, &ln) || ln < 0)
		ln = 0;
	if (dwarf_linecol(line, &col) || col < 0)
		col = 0;
	snprintf(want, len, "%s%s%s:%d:%d", file && file[0] != '/' && dir ? dir : "",
		 file && file[0] != '/' && dir ? "/" : "", file ? file : "(null)", ln, col);
}

/*
 * Lines come from a copy of each unit's line table (16 bytes a row, kept over unloads), not
 * from libdw's: at every row's address, one before and one after, in every unit of each file,
 * the innermost frame's file:line:column must be what libdw's dwarf_getsrc_die() answers, from
 * an unbounded cache and from one that unloads the objects as lookups alternate (12 KiB).
 */
static void test_lines_as_libdw(void **state)
{
	const char *files[][2] = {{P("cprog-pie"), P("cprog-pie")},
				  {P("cxxprog"), P("cxxprog")},
				  {P("libsym.so"), P("libsym.so")},
				  {P("cprog-zdebug"), P("cprog-zdebug")},
				  {P("cprog-split"), P("cprog-split.debug")}};
	struct symcache_opts big = {.max_bytes = SIZE_MAX}, tiny = {.max_bytes = 12 << 10};
	struct symcache *c[2] = {symcache__new(&big), symcache__new(&tiny)};
	struct symcache_stats st;
	struct sym_frame f[16];
	uint64_t hsize0;
	char want[PATH_MAX + 64], got[PATH_MAX + 64];
	size_t checked = 0, nfiles = sizeof(files) / sizeof(files[0]);
	struct elf_object *other;
	uint64_t other_addr;

	/* Between two lookups of a file, the bounded cache loads another (so unloads this one). */
	other = must_open(c[1], P("cxxprog"));
	nm_symbol(P("cxxprog"), "_ZN8outer_ns5inner6Worker3runEl", false, &other_addr, &hsize0);
	for (size_t k = 0; k < nfiles; k++) {
		int fd = open(files[k][1], O_RDONLY);
		Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
		struct elf_object *o[2] = {must_open(c[0], files[k][0]),
					   must_open(c[1], files[k][0])};
		Dwarf_Off off = 0, next;
		size_t hsize;

		assert_non_null(dw);
		while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cudie;
			Dwarf_Lines *lines;
			size_t nlines;

			if (dwarf_offdie(dw, off + hsize, &cudie) &&
			    dwarf_getsrclines(&cudie, &lines, &nlines) == 0) {
				for (size_t i = 0; i < nlines; i++) {
					Dwarf_Addr base;

					dwarf_lineaddr(dwarf_onesrcline(lines, i), &base);
					for (uint64_t a = base ? base - 1 : 0; a <= base + 1; a++) {
						libdw_line(dw, a, want, sizeof(want));
						for (int j = 0; j < 2; j++) {
							int n =
							    symcache__lookup(c[j], o[j], a, f, 16);

							snprintf(got, sizeof(got), "-");
							if (n > 0 && f[0].line)
								snprintf(got, sizeof(got),
									 "%s:%d:%d", f[0].file,
									 f[0].line, f[0].column);
							if (strcmp(got, want))
								fail_msg(
								    "%s %#llx (%s): %s, libdw %s",
								    files[k][0],
								    (unsigned long long)a,
								    j ? "12 KiB" : "unbounded", got,
								    want);
						}
						if (o[1] != other)
							symcache__lookup(c[1], other, other_addr, f,
									 16);
						checked++;
					}
				}
			}
			off = next;
		}
		dwarf_end(dw);
		close(fd);
	}
	symcache__stats(c[1], &st);
	print_message("%zu addresses; 12 KiB budget: loads %llu evictions %llu\n", checked,
		      (unsigned long long)st.loads, (unsigned long long)st.evictions);
	assert_true(checked > 100);
	assert_true(st.evictions > checked / 2);
	assert_int_equal(st.dwarf_skipped, 0);
	symcache__free(c[0]);
	symcache__free(c[1]);
}

/*
 * The budget holds after every lookup: the bytes charged stay under it unless the object
 * being looked up is the only one left loaded (it is never unloaded under its own caller),
 * while lookups alternate between files whose DWARF does not fit together.
 */
static void test_budget_respected(void **state)
{
	const char *files[] = {P("cprog-pie"), P("cxxprog"), P("libsym.so"), P("cprog-zdebug"),
			       P("cprog-split")};
	struct symcache_opts opts = {.max_bytes = 40 << 10};
	struct symcache *c = symcache__new(&opts);
	struct elf_object *o[5];
	struct sym_frame f[16];
	struct symcache_stats st;
	uint64_t lo[5], size[5];

	assert_non_null(c);
	for (int i = 0; i < 5; i++) {
		o[i] = must_open(c, files[i]);
		nm_symbol(i == 4 ? P("cprog-split.full") : files[i],
			  i == 1   ? "_ZN8outer_ns5inner6Worker3runEl"
			  : i == 2 ? "lib_work"
				   : "middle",
			  false, &lo[i], &size[i]);
	}
	for (int a = 0; a < 200; a++) {
		int i = a % 5;

		assert_true(symcache__lookup(c, o[i], lo[i] + (uint64_t)a % size[i], f, 16) > 0);
		symcache__stats(c, &st);
		if (st.bytes > opts.max_bytes && st.objects_loaded != 1)
			fail_msg("lookup %d: %llu bytes charged, budget %zu, %llu objects loaded",
				 a, (unsigned long long)st.bytes, opts.max_bytes,
				 (unsigned long long)st.objects_loaded);
	}
	print_message("budget 40 KiB: loads %llu evictions %llu bytes_peak %llu\n",
		      (unsigned long long)st.loads, (unsigned long long)st.evictions,
		      (unsigned long long)st.bytes_peak);
	assert_true(st.evictions > 0);
	symcache__free(c);
}

/*
 * A budget too small for the objects looked up in turn thrashes (each lookup re-loads an object
 * unloaded for room): at the next trim it grows, by half or 1 MiB, up to its bound and no
 * further, and the re-loads stop once all fit. With no bound it stays as set, re-loading.
 */
static void test_budget_grows_when_thrashing(void **state)
{
	const char *files[] = {P("cprog-pie"), P("cxxprog"), P("libsym.so"), P("cprog-zdebug"),
			       P("cprog-split")};
	const size_t bounds[] = {0, 40 << 10, 8 << 20};
	uint64_t lo[5], size[5];

	for (int i = 0; i < 5; i++)
		nm_symbol(i == 4 ? P("cprog-split.full") : files[i],
			  i == 1   ? "_ZN8outer_ns5inner6Worker3runEl"
			  : i == 2 ? "lib_work"
				   : "middle",
			  false, &lo[i], &size[i]);
	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		struct symcache_opts opts = {.max_bytes = 40 << 10, .max_bytes_bound = bounds[b]};
		struct symcache *c = symcache__new(&opts);
		struct elf_object *o[5];
		struct sym_frame f[16];
		struct symcache_stats st;
		uint64_t reloads_late = 0, at;

		assert_non_null(c);
		for (int i = 0; i < 5; i++)
			o[i] = must_open(c, files[i]);
		for (int a = 0; a < 400; a++) {
			int i = a % 5;

			/* A new address each time: the kept answers do not spare the load. */
			assert_true(
			    symcache__lookup(c, o[i], lo[i] + (uint64_t)a % size[i], f, 16) > 0);
			if (a % 50 == 49)
				symcache__trim(c);
			if (a == 199) {
				symcache__stats(c, &st);
				at = st.reloads;
			}
		}
		symcache__stats(c, &st);
		reloads_late = st.reloads - at;
		print_message("bound %zu: budget %llu, grown %llu, reloads %llu (%llu in the last "
			      "200 lookups), evictions %llu\n",
			      bounds[b], (unsigned long long)st.budget,
			      (unsigned long long)st.budget_grown, (unsigned long long)st.reloads,
			      (unsigned long long)reloads_late, (unsigned long long)st.evictions);
		if (bounds[b] <= opts.max_bytes) {
			assert_int_equal(st.budget, opts.max_bytes);
			assert_int_equal(st.budget_grown, 0);
			assert_true(reloads_late >= SYMCACHE_THRASH_RELOADS);
		} else {
			assert_true(st.budget_grown >= 1);
			assert_true(st.budget > opts.max_bytes && st.budget <= bounds[b]);
			assert_true(st.bytes_peak <= st.budget);
			assert_int_equal(reloads_late, 0);
		}
		symcache__free(c);
	}
}

/*
 * An object unloaded for room keeps the frames it answered: the same address is answered
 * again, the same frames, without loading the object again (a hot loop seen by many
 * processes, or again after a profile reset); a new address loads it. Under a budget too
 * small for even the answers (test_budget_reload), they are freed (answers_dropped).
 */
static void test_budget_keeps_answers(void **state)
{
	const char *files[2] = {P("cprog-pie"), P("cxxprog")};
	const char *funcs[2] = {"middle", "_ZN8outer_ns5inner6Worker3runEl"};
	struct symcache *c, *one;
	struct symcache_opts opts = {0};
	struct elf_object *o[2];
	uint64_t addr[2], size[2], most = 0, least = UINT64_MAX;
	char want[2][4096], got[4096];
	struct sym_frame f[16];
	struct symcache_stats st;
	int i, n;

	for (i = 0; i < 2; i++) {
		nm_symbol(files[i], funcs[i], false, &addr[i], &size[i]);
		one = new_cache(NULL);
		n = symcache__lookup(one, must_open(one, files[i]), addr[i] + 1, f, 16);
		assert_true(n >= 1);
		frames_str(want[i], sizeof(want[i]), f, n);
		symcache__stats(one, &st);
		most = st.bytes > most ? st.bytes : most;
		least = st.bytes < least ? st.bytes : least;
		symcache__free(one);
	}
	/*
	 * Both loaded do not fit (one byte short); one loaded and what the other keeps over its
	 * unload (answers, sorted symbols, CU ranges: a small part of a load) do.
	 */
	opts.max_bytes = most + least - 1;
	c = symcache__new(&opts);
	assert_non_null(c);
	for (i = 0; i < 2; i++)
		o[i] = must_open(c, files[i]);
	for (int round = 0; round < 3; round++) {
		for (i = 0; i < 2; i++) {
			n = symcache__lookup(c, o[i], addr[i] + 1, f, 16);
			frames_str(got, sizeof(got), f, n);
			assert_string_equal(got, want[i]);
		}
	}
	symcache__stats(c, &st);
	print_message("budget %llu (loads %llu evictions %llu hits %llu dropped %llu bytes %llu)\n",
		      (unsigned long long)opts.max_bytes, (unsigned long long)st.loads,
		      (unsigned long long)st.evictions, (unsigned long long)st.cache_hits,
		      (unsigned long long)st.answers_dropped, (unsigned long long)st.bytes);
	assert_int_equal(st.loads, 2);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(st.cache_hits, 4);
	assert_int_equal(st.answers_dropped, 0);
	assert_int_equal(st.objects_loaded, 1);
	assert_true(st.bytes <= opts.max_bytes);
	/* A new address of the unloaded object loads it again (and unloads the other). */
	n = symcache__lookup(c, o[0], addr[0] + 2, f, 16);
	assert_true(n >= 1);
	assert_string_equal(f[n - 1].function, "middle");
	symcache__stats(c, &st);
	assert_int_equal(st.loads, 3);
	assert_int_equal(st.evictions, 2);
	/* The other's answer was kept over its unload too. */
	n = symcache__lookup(c, o[1], addr[1] + 1, f, 16);
	frames_str(got, sizeof(got), f, n);
	assert_string_equal(got, want[1]);
	symcache__stats(c, &st);
	assert_int_equal(st.loads, 3);
	symcache__free(c);
}

/*
 * The descriptor kept by symcache__open() symbolizes a file deleted since (a
 * process that exited); over max_fds, an unloaded object re-opens by path and
 * fails cleanly once the file is gone.
 */
static void test_fds(void **state)
{
	struct symcache_opts one = {.max_fds = 1, .max_bytes = 1};
	struct symcache *c = new_cache(NULL), *c1 = symcache__new(&one);
	char tmp[] = "/tmp/spanprof-sym-XXXXXX", path[512], path2[512];
	struct elf_object *o, *o2, *other;
	struct symcache_stats st;
	struct sym_frame f[8];
	uint64_t addr, size;

	assert_non_null(c1);
	assert_non_null(mkdtemp(tmp));
	snprintf(path, sizeof(path), "%s/a", tmp);
	snprintf(path2, sizeof(path2), "%s/b", tmp);
	free(run("cp '%s' '%s' && cp '%s' '%s'", P("cprog-nodebug"), path, P("cprog-nodebug"),
		 path2));
	nm_symbol(P("cprog-nodebug"), "middle", false, &addr, &size);

	o = must_open(c, path);
	free(run("rm -f '%s'", path));
	assert_int_equal(symcache__lookup(c, o, addr, f, 8), 1);
	assert_string_equal(f[0].function, "middle");
	symcache__stats(c, &st);
	assert_int_equal(st.fds, 1);

	o = must_open(c1, path2);
	other = must_open(c1, P("cprog-nopie"));
	symcache__stats(c1, &st);
	assert_true(st.fds <= 1);
	assert_int_equal(symcache__lookup(c1, o, addr, f, 8), 1); /* re-opened by path */
	assert_string_equal(f[0].function, "middle");
	assert_true(symcache__lookup(c1, other, 0x401000, f, 8) >= 0);
	o2 = must_open(c1, P("cprog-nobuildid"));
	assert_ptr_not_equal(o2, o);
	symcache__stats(c1, &st);
	assert_true(st.fds <= 2);
	assert_int_equal(st.load_errors, 0);
	/* o was unloaded for other and lost its descriptor: gone from disk, nothing to say. */
	free(run("rm -rf '%s'", tmp));
	assert_int_equal(symcache__lookup(c1, o, addr, f, 8), 0);
	symcache__stats(c1, &st);
	assert_int_equal(st.load_errors, 1);
	symcache__free(c1);
	symcache__free(c);
}

/* --- descriptors follow the working set (symcache__close_idle) ----------------------------- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Descriptors of this process open on @path (deleted or not), and all of them (@all). */
static int fds_on(const char *path, int *all)
{
	char link[PATH_MAX + 32], fdpath[300];
	size_t len = strlen(path);
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0, total = 0;
	ssize_t got;

	assert_non_null(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.' || atoi(d->d_name) == dirfd(dir))
			continue;
		total++;
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%s", d->d_name);
		got = readlink(fdpath, link, sizeof(link) - 1);
		if (got <= 0)
			continue;
		link[got] = 0;
		if (!strncmp(link, path, len) && (!link[len] || !strcmp(link + len, " (deleted)")))
			n++;
	}
	closedir(dir);
	if (all)
		*all = total;
	return n;
}

/* Mappings of @path in this process (a mapping pins a deleted file as a descriptor does). */
static int maps_of(const char *path)
{
	char line[PATH_MAX + 256];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, path))
			n++;
	fclose(f);
	return n;
}

/* stats.fds is exact: every descriptor this process opened since @base is the cache's. */
static void assert_fds_exact(struct symcache *c, int base)
{
	struct symcache_stats st;
	int all;

	fds_on("/", &all);
	symcache__stats(c, &st);
	assert_int_equal((int)st.fds, all - base);
}

/*
 * An object unused for idle_s closes its descriptor and drops its mapped DWARF, keeping what
 * is loaded: addresses answered before keep their frames, a new address re-opens the same
 * file and answers as a fresh cache does; once the file is deleted, the names read before
 * still answer and nothing crashes. Time is passed in, never slept.
 */
static void test_idle_fds(void **state)
{
	struct symcache_opts opts = {.idle_s = 5};
	const uint64_t idle = 5 * 1000000000ull;
	struct symcache *ref = new_cache(NULL), *c;
	char tmp[] = "/tmp/spanprof-idle-XXXXXX", path[512], path2[512], want[4096], got[4096];
	char want2[4096];
	uint64_t mid, mid_size, out, out_size, t0;
	struct symcache_stats st;
	struct elf_object *o, *ro, *o2;
	struct sym_frame f[16];
	int base, n;

	assert_non_null(mkdtemp(tmp));
	snprintf(path, sizeof(path), "%s/a", tmp);
	snprintf(path2, sizeof(path2), "%s/b", tmp);
	free(run("cp '%s' '%s' && cp '%s' '%s'", P("cprog-pie"), path, P("cprog-nopie"), path2));
	nm_symbol(P("cprog-pie"), "middle", false, &mid, &mid_size);
	nm_symbol(P("cprog-pie"), "outer", false, &out, &out_size);
	assert_true(mid_size > 4 && out_size > 1);
	ro = must_open(ref, P("cprog-pie"));
	fds_on("/", &base);
	c = symcache__new(&opts);
	assert_non_null(c);

	/* Loaded, DWARF mapped, one descriptor. */
	o = must_open(c, path);
	t0 = mono_ns();
	n = symcache__lookup(c, o, mid + 4, f, 16);
	assert_true(n >= 2); /* the inline chain of middle (DWARF) */
	frames_str(got, sizeof(got), f, n);
	frames_str(want, sizeof(want), f, symcache__lookup(ref, ro, mid + 4, f, 16));
	assert_string_equal(got, want);
	assert_int_equal(fds_on(path, NULL), 1);
	assert_true(maps_of(path) >= 1);
	assert_fds_exact(c, base);

	/* Not idle long enough: nothing closes. */
	symcache__close_idle(c, t0 + idle - 1);
	symcache__stats(c, &st);
	assert_int_equal(st.idle_closes, 0);
	assert_int_equal(fds_on(path, NULL), 1);

	/* Idle: descriptor and mapping gone, memory kept. */
	symcache__close_idle(c, mono_ns() + idle);
	symcache__stats(c, &st);
	assert_int_equal(st.idle_closes, 1);
	assert_int_equal(st.objects_loaded, 1);
	assert_int_equal(fds_on(path, NULL), 0);
	assert_int_equal(maps_of(path), 0);
	assert_fds_exact(c, base);
	/* Answered before: the same frames (file:line and inline chain), file untouched. */
	n = symcache__lookup(c, o, mid + 4, f, 16);
	frames_str(got, sizeof(got), f, n);
	assert_string_equal(got, want);
	assert_int_equal(fds_on(path, NULL), 0);
	/* A new address: the very same file is re-opened, answers as a fresh cache. */
	n = symcache__lookup(c, o, out, f, 16);
	frames_str(got, sizeof(got), f, n);
	frames_str(want2, sizeof(want2), f, symcache__lookup(ref, ro, out, f, 16));
	assert_string_equal(got, want2);
	assert_non_null(strstr(got, "cprog.c"));
	symcache__stats(c, &st);
	assert_int_equal(st.idle_reloads, 1);
	assert_int_equal(st.idle_reopen_errors, 0);
	assert_int_equal(fds_on(path, NULL), 1);
	assert_fds_exact(c, base);

	/* Idle again, then deleted: what was read still answers, the rest is unknown. */
	symcache__close_idle(c, mono_ns() + idle);
	free(run("rm -f '%s'", path));
	n = symcache__lookup(c, o, out, f, 16); /* answered before */
	frames_str(got, sizeof(got), f, n);
	assert_string_equal(got, want2);
	n = symcache__lookup(c, o, out + 1, f, 16); /* symbol name read before: symtab only */
	assert_int_equal(n, 1);
	assert_string_equal(f[0].function, "outer");
	assert_null(f[0].file);
	/* Answered before the idle re-load: kept over that unload, the same frames. */
	n = symcache__lookup(c, o, mid + 4, f, 16);
	frames_str(got, sizeof(got), f, n);
	assert_string_equal(got, want);
	assert_int_equal(symcache__lookup(c, o, mid + 2, f, 16), 0); /* never answered */
	symcache__stats(c, &st);
	assert_int_equal(st.idle_reopen_errors, 1); /* counted once, not retried */
	assert_int_equal(st.load_errors, 0);
	assert_int_equal(fds_on(path, NULL), 0);
	assert_fds_exact(c, base);

	/* Opened but never looked up: closes too; opening the same file again hands it back. */
	o2 = must_open(c, path2);
	assert_int_equal(fds_on(path2, NULL), 1);
	symcache__close_idle(c, mono_ns() + idle);
	assert_int_equal(fds_on(path2, NULL), 0);
	assert_fds_exact(c, base);
	assert_ptr_equal(must_open(c, path2), o2);
	assert_int_equal(fds_on(path2, NULL), 1);
	symcache__close_idle(c, mono_ns() + idle);
	assert_int_equal(fds_on(path2, NULL), 0);
	nm_symbol(P("cprog-nopie"), "middle", false, &mid, &mid_size);
	n = symcache__lookup(c, o2, mid, f, 16); /* re-opened by path */
	assert_true(n >= 1);
	assert_string_equal(f[n - 1].function, "middle");
	assert_int_equal(fds_on(path2, NULL), 1);
	assert_fds_exact(c, base);

	symcache__free(c);
	assert_int_equal(fds_on(tmp, NULL), 0);
	symcache__free(ref);
	free(run("rm -rf '%s'", tmp));
}

/* Compressed DWARF is inflated into an unlinked file: it is released and rebuilt too. */
static void test_idle_fds_inflated(void **state)
{
	struct symcache *ref = new_cache(NULL), *c = new_cache(NULL);
	const uint64_t idle = SYMCACHE_DEFAULT_IDLE_S * 1000000000ull;
	struct elf_object *o = must_open(c, P("cprog-zdebug")), *ro;
	char want[4096], got[4096];
	struct symcache_stats st;
	uint64_t mid, mid_size, out, out_size;
	struct sym_frame f[16];
	int n;

	ro = must_open(ref, P("cprog-zdebug"));
	nm_symbol(P("cprog-zdebug"), "middle", false, &mid, &mid_size);
	nm_symbol(P("cprog-zdebug"), "outer", false, &out, &out_size);
	assert_true(symcache__lookup(c, o, mid, f, 16) >= 1);
	symcache__stats(c, &st);
	assert_int_equal(st.fds, 2); /* the file and its inflated DWARF */
	symcache__close_idle(c, mono_ns() + idle);
	symcache__stats(c, &st);
	assert_int_equal(st.fds, 0);
	n = symcache__lookup(c, o, out, f, 16);
	frames_str(got, sizeof(got), f, n);
	frames_str(want, sizeof(want), f, symcache__lookup(ref, ro, out, f, 16));
	assert_string_equal(got, want);
	assert_non_null(strstr(got, "cprog.c"));
	symcache__stats(c, &st);
	assert_int_equal(st.fds, 2);
	assert_int_equal(st.idle_reloads, 1);
	symcache__free(c);
	symcache__free(ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_errors),
	    cmocka_unit_test(test_garbled_never_crashes),
	    cmocka_unit_test(test_cache_identity),
	    cmocka_unit_test(test_dwarf_pie),
	    cmocka_unit_test(test_dwarf_compressed),
	    cmocka_unit_test(test_dwarf_nopie),
	    cmocka_unit_test(test_inline_chain),
	    cmocka_unit_test(test_cxx),
	    cmocka_unit_test(test_cxx_scopes),
	    cmocka_unit_test(test_shared_library),
	    cmocka_unit_test(test_symtab_only),
	    cmocka_unit_test(test_sizeless_symbol_ends_with_its_section),
	    cmocka_unit_test(test_call_target),
	    cmocka_unit_test(test_dynsym_only),
	    cmocka_unit_test(test_debuglink),
	    cmocka_unit_test(test_debuglink_orig_path),
	    cmocka_unit_test(test_debuglink_crc),
	    cmocka_unit_test(test_build_id_tree),
	    cmocka_unit_test(test_lookup_cache),
	    cmocka_unit_test(test_live_pie),
	    cmocka_unit_test(test_live_nopie),
	    cmocka_unit_test(test_live_shared_library),
	    cmocka_unit_test(test_budget_reload),
	    cmocka_unit_test(test_budget_keeps_answers),
	    cmocka_unit_test(test_lines_as_libdw),
	    cmocka_unit_test(test_budget_respected),
	    cmocka_unit_test(test_budget_grows_when_thrashing),
	    cmocka_unit_test(test_fds),
	    cmocka_unit_test(test_idle_fds),
	    cmocka_unit_test(test_idle_fds_inflated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
