// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the Go PC/line table reader (exporter/runtime/go/gopclntab.c) against the
 * programs of test/runtime/go-progs, built by test/runtime/gopclntab.mk with the machine's Go into
 * GOPROGS_DIR in several variants (with symbols and DWARF, -ldflags='-s -w', -trimpath, PIE, no
 * inlining). Expected values come from elsewhere: function names and file:line from `go tool
 * addr2line` (Go's own debug/gosym), inline chains from the DWARF of the unstripped build read by
 * the agent's symbolizer (libdw), lines from markers in the sources. No root needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/go/gopclntab.h"
#include "symbols/symbolize.h"

#define P(name) GOPROGS_DIR "/" name
#define MAX_FRAMES 32
/* At most this many PCs per binary are compared with addr2line (one process per binary). */
#define MAX_PCS 6000

struct image {
	int fd;
	Elf *elf;
	void *map;
	size_t size;
};

static void image_open(struct image *im, const char *path)
{
	struct stat st;

	assert_int_equal(elf_version(EV_CURRENT) == EV_NONE, 0);
	im->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (im->fd < 0)
		fail_msg("%s: %s (built by test/runtime/gopclntab.mk)", path, strerror(errno));
	assert_int_equal(fstat(im->fd, &st), 0);
	im->size = (size_t)st.st_size;
	im->map = mmap(NULL, im->size, PROT_READ, MAP_PRIVATE, im->fd, 0);
	assert_true(im->map != MAP_FAILED);
	im->elf = elf_begin(im->fd, ELF_C_READ, NULL);
	assert_non_null(im->elf);
}

static void image_close(struct image *im)
{
	elf_end(im->elf);
	munmap(im->map, im->size);
	close(im->fd);
}

static struct gopclntab *open_table(struct image *im, const char *path)
{
	struct gopclntab *t;

	image_open(im, path);
	t = gopclntab__open(im->elf, im->map, im->size);
	if (!t)
		fail_msg("%s: gopclntab__open: %s", path, strerror(errno));
	return t;
}

/* The 1-based line of the first line of @file holding @marker. */
static int marker_line(const char *file, const char *marker)
{
	char buf[512];
	int line = 0;
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f)) {
		line++;
		if (strstr(buf, marker)) {
			fclose(f);
			return line;
		}
	}
	fclose(f);
	fail_msg("%s: no line with '%s'", file, marker);
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

/* PCs to compare: entry, middle and last byte of functions spread over the whole table. */
static size_t pick_pcs(const struct gopclntab *t, uint64_t *pcs, size_t max)
{
	size_t nf = gopclntab__nfuncs(t), step = nf * 3 / max + 1, n = 0;

	for (size_t i = 0; i < nf && n + 3 <= max; i += step) {
		uint64_t entry, end;
		const char *name;

		assert_int_equal(gopclntab__func(t, i, &entry, &end, &name), 0);
		assert_true(end > entry);
		pcs[n++] = entry;
		pcs[n++] = entry + (end - entry) / 2;
		pcs[n++] = end - 1;
	}
	return n;
}

/*
 * How far the runtime's text base (moduledata.text: the first function's entry) lies past the
 * .text section. addr2line (debug/gosym) counts function offsets from the section, so with
 * external linking (C start-up code first in .text) its answer for the runtime's PC X is the
 * one it gives for X - skew.
 */
static uint64_t text_skew(struct image *im, const struct gopclntab *t, const char *path)
{
	uint64_t entry, end;
	const char *name;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	assert_int_equal(gopclntab__func(t, 0, &entry, &end, &name), 0);
	if (elf_getshdrstrndx(im->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(im->elf, scn))) {
		const char *n =
		    gelf_getshdr(scn, &sh) ? elf_strptr(im->elf, shstrndx, sh.sh_name) : NULL;

		if (n && !strcmp(n, ".text") && entry >= sh.sh_addr) {
			if (entry != sh.sh_addr)
				printf("  %s: runtime text 0x%llx, .text 0x%llx\n", path,
				       (unsigned long long)entry, (unsigned long long)sh.sh_addr);
			return entry - sh.sh_addr;
		}
	}
	return 0;
}

/*
 * Every picked PC of @variant named as `go tool addr2line` names it: the function containing
 * the PC (the physical function, our last frame) and the source position of the instruction
 * (the innermost inlined frame, our first). Returns how many PCs had inlined frames.
 */
static size_t compare_addr2line(const char *variant)
{
	static uint64_t pcs[MAX_PCS];
	char in_path[] = "/tmp/gopclntab-pcs-XXXXXX", cmd[1024], fn[4096], pos[4096];
	struct gopclntab_frame fr[MAX_FRAMES];
	struct image im;
	struct gopclntab *t = open_table(&im, variant);
	size_t n = pick_pcs(t, pcs, MAX_PCS), inlined = 0, with_file = 0, padding = 0;
	int fd = mkstemp(in_path);
	uint64_t delta;
	FILE *in, *out;

	assert_true(fd >= 0);
	in = fdopen(fd, "w");
	assert_non_null(in);
	delta = text_skew(&im, t, variant);
	for (size_t i = 0; i < n; i++)
		fprintf(in, "0x%llx\n", (unsigned long long)(pcs[i] - delta));
	fclose(in);
	snprintf(cmd, sizeof(cmd), "GOTOOLCHAIN=local %s tool addr2line %s < %s", GO_BIN, variant,
		 in_path);
	out = popen(cmd, "r");
	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		int k = gopclntab__lookup(t, pcs[i], fr, MAX_FRAMES);
		char want[4096 + 16];

		if (!fgets(fn, sizeof(fn), out) || !fgets(pos, sizeof(pos), out))
			fail_msg("%s: addr2line gave %zu answers for %zu PCs", variant, i, n);
		fn[strcspn(fn, "\n")] = 0;
		pos[strcspn(pos, "\n")] = 0;
		if (k <= 0)
			fail_msg("%s: 0x%llx: lookup %d, addr2line says %s", variant,
				 (unsigned long long)pcs[i], k, fn);
		if (strcmp(fr[k - 1].function, fn))
			fail_msg("%s: 0x%llx: function %s, addr2line says %s", variant,
				 (unsigned long long)pcs[i], fr[k - 1].function, fn);
		if (k > 1)
			inlined++;
		if (!fr[0].file) {
			/* Padding after the code or a marker without a line table (addr2line:
			 * no file, ":-1"), or inlined code of a file whose inline trees can't be
			 * found (PIE): the function name only. */
			padding += pos[0] == ':' || !strncmp(fn, "go:", 3);
			/* Linker markers (go:textfipsstart) have no tables: the runtime says so,
			 * addr2line decodes from the start of pctab and may print any line. */
			if (pos[0] != ':' && strncmp(fn, "go:", 3) && gopclntab__has_inline(t))
				fail_msg("%s: 0x%llx (%s): no file:line, addr2line says %s",
					 variant, (unsigned long long)pcs[i], fn, pos);
			continue;
		}
		with_file++;
		snprintf(want, sizeof(want), "%s:%d", fr[0].file, fr[0].line);
		if (strcmp(want, pos))
			fail_msg("%s: 0x%llx (%s): %s, addr2line says %s", variant,
				 (unsigned long long)pcs[i], fn, want, pos);
	}
	assert_int_equal(pclose(out), 0);
	unlink(in_path);
	/* Every PC in code has a file:line where inline trees are known. */
	if (gopclntab__has_inline(t))
		assert_int_equal(with_file + padding, n);
	assert_true(with_file * 2 >= n);
	gopclntab__free(t);
	image_close(&im);
	return inlined;
}

static void test_addr2line_normal(void **state)
{
	assert_true(compare_addr2line(P("goprog-normal")) > 0);
}

static void test_addr2line_stripped(void **state)
{
	assert_true(compare_addr2line(P("goprog-stripped")) > 0);
}

static void test_addr2line_trimpath(void **state)
{
	assert_true(compare_addr2line(P("goprog-trimpath")) > 0);
}

static void test_addr2line_pie(void **state)
{
	compare_addr2line(P("goprog-pie"));
}

/* Built with -gcflags=all=-l: no inlining anywhere, so no PC has a second frame. */
static void test_addr2line_noinline(void **state)
{
	assert_int_equal(compare_addr2line(P("goprog-noinline")), 0);
}

/*
 * Go binaries of other Go releases installed on this machine (`go version FILE` names their
 * version), one per release, up to 6: each compared with addr2line like the programs built
 * here. The machine's own Go builds only 1.26: these cover the layouts of older releases.
 */
static void test_addr2line_other_versions(void **state)
{
	char line[4096], seen[6][64];
	int nseen = 0;
	FILE *f = popen("for f in /usr/bin/* /usr/local/bin/* /usr/sbin/*; do "
			"[ -f \"$f\" ] && [ -x \"$f\" ] && GOTOOLCHAIN=local " GO_BIN
			" version \"$f\"; done 2>/dev/null",
			"r");

	assert_non_null(f);
	while (nseen < 6 && fgets(line, sizeof(line), f)) {
		char *colon = strstr(line, ": go"), ver[64];
		struct image im;
		struct gopclntab *t;
		bool dup = false;

		if (!colon)
			continue;
		*colon = 0;
		/* One per release (go1.24.2 and go1.24.4 share a layout): "go1.24". */
		snprintf(ver, sizeof(ver), "%.*s", (int)strcspn(colon + 2, " \n"), colon + 2);
		if (strchr(ver + 4, '.'))
			*strchr(ver + 4, '.') = 0;
		if (strchr(ver + 4, '-'))
			*strchr(ver + 4, '-') = 0;
		for (int i = 0; i < nseen; i++)
			dup = dup || !strcmp(seen[i], ver);
		if (dup)
			continue;
		image_open(&im, line);
		t = gopclntab__open(im.elf, im.map, im.size);
		if (!t)
			fail_msg("%s (%s): gopclntab__open: %s", line, ver, strerror(errno));
		printf("  %s: %s, layout %d, %zu functions, inline trees %s\n", line, ver,
		       gopclntab__layout(t), gopclntab__nfuncs(t),
		       gopclntab__has_inline(t) ? "yes" : "no");
		gopclntab__free(t);
		image_close(&im);
		compare_addr2line(line);
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", ver);
	}
	pclose(f);
	if (!nseen)
		skip(); /* no Go binary in /usr/bin, /usr/local/bin or /usr/sbin of this machine */
}

/*
 * The chain in main.leaf of the stripped build, checked against the source: fnv.rotate at
 * its body, fnv.Mix at its call of rotate, main.leaf at its call of Mix.
 */
static void check_chain(const char *variant, bool trimmed, const char *leaf, const char *pkg)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	char main_go[256], src[512];
	int rot = marker_line(SRC_DIR "/fnv/fnv.go", "return h<<7 | h>>57");
	int mix = marker_line(SRC_DIR "/fnv/fnv.go", "return rotate(h)");
	int call;
	struct image im;
	struct gopclntab *t = open_table(&im, variant);
	size_t nf = gopclntab__nfuncs(t);
	bool seen = false;

	snprintf(main_go, sizeof(main_go), "%s/main.go", pkg);
	snprintf(src, sizeof(src), "%s/%s", SRC_DIR, main_go);
	call = marker_line(src, "h = fnv.Mix(h, uint64(i))");
	for (size_t i = 0; i < nf; i++) {
		uint64_t entry, end;
		const char *name;

		assert_int_equal(gopclntab__func(t, i, &entry, &end, &name), 0);
		if (strcmp(name, leaf))
			continue;
		for (uint64_t pc = entry; pc < end; pc++) {
			int k = gopclntab__lookup(t, pc, fr, MAX_FRAMES);

			assert_true(k >= 1);
			assert_string_equal(fr[k - 1].function, leaf);
			if (!fr[0].file) {
				assert_int_equal(k, 1); /* padding after the code */
				continue;
			}
			assert_true(ends_with(fr[k - 1].file, main_go));
			assert_int_equal(fr[k - 1].file[0] == '/', !trimmed);
			if (k != 3 || strcmp(fr[0].function, "spanprof.test/goprogs/fnv.rotate"))
				continue;
			assert_string_equal(fr[1].function, "spanprof.test/goprogs/fnv.Mix");
			assert_true(ends_with(fr[0].file, "fnv/fnv.go"));
			assert_true(ends_with(fr[1].file, "fnv/fnv.go"));
			assert_int_equal(fr[0].line, rot);
			assert_int_equal(fr[1].line, mix);
			assert_int_equal(fr[2].line, call);
			seen = true;
		}
	}
	assert_true(seen);
	gopclntab__free(t);
	image_close(&im);
}

static void check_leaf_chain(const char *variant, bool trimmed)
{
	check_chain(variant, trimmed, "main.leaf", "goprog");
}

static void test_inline_chain_stripped(void **state)
{
	check_leaf_chain(P("goprog-stripped"), false);
}

static void test_inline_chain_trimpath(void **state)
{
	check_leaf_chain(P("goprog-trimpath"), true);
}

/*
 * Whether .symtab of @im has a FUNC symbol at @addr named @name, or @name with the ".abi0"
 * suffix the linker gives assembly functions (the table names them without it). 1 yes,
 * 0 a symbol of that name elsewhere and none here, -1 no symbol of that name.
 */
static int symtab_func(struct image *im, const char *name, uint64_t addr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t len = strlen(name);
	int found = -1;

	while ((scn = elf_nextscn(im->elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < d->d_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			n = elf_strptr(im->elf, sh.sh_link, s.st_name);
			if (!n || strncmp(n, name, len) || (n[len] && strcmp(n + len, ".abi0")))
				continue;
			if (s.st_value == addr)
				return 1;
			found = 0;
		}
	}
	return found;
}

/*
 * Go in a shared library (-buildmode=c-shared): the linker puts C code before runtime.text and
 * leaves moduledata's pointers to RELATIVE relocations (0 in the file). The stripped library's
 * table, read alone, must give every Go function the address the same build's .symtab gives it
 * (an independent source: the linker's symbols), and the inline chain of main.libLeaf.
 */
static void test_c_shared(void **state)
{
	struct image sym, im;
	struct gopclntab *t = open_table(&im, P("libgolib-stripped.so"));
	size_t nf = gopclntab__nfuncs(t), checked = 0;

	image_open(&sym, P("libgolib.so"));
	assert_int_equal(gopclntab__has_inline(t), 1);
	for (size_t i = 0; i < nf; i++) {
		uint64_t entry, end;
		const char *name;
		int found;

		assert_int_equal(gopclntab__func(t, i, &entry, &end, &name), 0);
		found = symtab_func(&sym, name, entry);
		if (found < 0) /* no symbol of that name */
			continue;
		if (!found)
			fail_msg("%s: at 0x%llx in the table, elsewhere in .symtab", name,
				 (unsigned long long)entry);
		checked++;
	}
	printf("  libgolib-stripped.so: %zu of %zu functions at their .symtab address\n", checked,
	       nf);
	assert_true(checked > nf / 2);
	gopclntab__free(t);
	image_close(&im);
	image_close(&sym);
	check_chain(P("libgolib-stripped.so"), false, "main.libLeaf", "golib");
	check_chain(P("libgolib.so"), false, "main.libLeaf", "golib");
}

/* The table layout of Go release @v ("go1.17.13"): 116, 118 or 120. */
static int release_layout(const char *v)
{
	if (!strncmp(v, "go1.16", 6) || !strncmp(v, "go1.17", 6))
		return 116;
	if (!strncmp(v, "go1.18", 6) || !strncmp(v, "go1.19", 6))
		return 118;
	return 120;
}

/*
 * The stripped program built by releases of the Go 1.16-1.17 and 1.18-1.19 layouts and by a
 * release newer than the machine's Go (test/runtime/gopclntab.mk, when their toolchains are
 * in the module cache): same checks as for the machine's Go.
 */
static void test_other_releases(void **state)
{
	char releases[] = GO_RELEASES, path[4096], missing[256] = "";
	int tested = 0;

	for (char *v = strtok(releases, " "); v; v = strtok(NULL, " ")) {
		struct image im;
		struct gopclntab *t;

		snprintf(path, sizeof(path), "%s/goprog-%s", GOPROGS_DIR, v);
		if (access(path, R_OK)) {
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 " %s", v);
			continue;
		}
		t = open_table(&im, path);
		assert_int_equal(gopclntab__layout(t), release_layout(v));
		assert_int_equal(gopclntab__has_inline(t), 1);
		gopclntab__free(t);
		image_close(&im);
		assert_true(compare_addr2line(path) > 0);
		check_leaf_chain(path, false);
		tested++;
	}
	if (missing[0])
		printf("  not built (toolchain not in the module cache, make go-toolchains):%s\n",
		       missing);
	if (!tested)
		skip();
}

/*
 * The whole inline chain at every PC of the program's own functions agrees with the DWARF of
 * the unstripped build (libdw through the symbolizer): same functions, same lines.
 */
static void test_chain_matches_dwarf(void **state)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	struct sym_frame sf[MAX_FRAMES];
	struct symcache *c = symcache__new(NULL);
	struct elf_object *o;
	struct image im;
	struct gopclntab *t = open_table(&im, P("goprog-normal"));
	size_t nf = gopclntab__nfuncs(t), checked = 0, inlined = 0;

	assert_non_null(c);
	o = symcache__open(c, P("goprog-normal"), NULL);
	assert_non_null(o);
	for (size_t i = 0; i < nf; i++) {
		uint64_t entry, end;
		const char *name;

		assert_int_equal(gopclntab__func(t, i, &entry, &end, &name), 0);
		if (strncmp(name, "main.", 5))
			continue;
		for (uint64_t pc = entry; pc < end; pc++) {
			int k = gopclntab__lookup(t, pc, fr, MAX_FRAMES);
			int d = symcache__lookup(c, o, pc, sf, MAX_FRAMES);

			assert_true(k >= 1);
			if (!fr[0].file)
				continue; /* padding after the code: no source position to compare
					   */
			if (d != k)
				fail_msg("0x%llx: %d frames, DWARF %d (%s)", (unsigned long long)pc,
					 k, d, fr[0].function);
			for (int j = 0; j < k; j++) {
				const char *dn =
				    sf[j].system_name ? sf[j].system_name : sf[j].function;

				if (!dn || strcmp(fr[j].function, dn) || fr[j].line != sf[j].line)
					fail_msg("0x%llx frame %d: %s:%d, DWARF %s:%d",
						 (unsigned long long)pc, j, fr[j].function,
						 fr[j].line, dn ? dn : "(none)", sf[j].line);
			}
			checked++;
			inlined += k > 1;
		}
	}
	assert_true(checked > 100);
	assert_true(inlined > 0);
	gopclntab__free(t);
	image_close(&im);
	symcache__free(c);
}

/*
 * A copy of the stripped build without section headers (e_shoff, e_shnum, e_shstrndx zeroed,
 * as sstrip leaves a file): the table is found by scanning and answers every PC as before.
 */
static void test_no_sections(void **state)
{
	char path[] = "/tmp/gopclntab-nosec-XXXXXX";
	struct gopclntab_frame a[MAX_FRAMES], b[MAX_FRAMES];
	struct image im, ns;
	struct gopclntab *t = open_table(&im, P("goprog-stripped")), *u;
	int fd = mkstemp(path);
	uint64_t lo, hi, e;
	const char *name;
	Elf64_Ehdr eh;

	assert_true(fd >= 0);
	memcpy(&eh, im.map, sizeof(eh));
	eh.e_shoff = 0;
	eh.e_shnum = 0;
	eh.e_shstrndx = 0;
	assert_int_equal(write(fd, &eh, sizeof(eh)), (ssize_t)sizeof(eh));
	assert_int_equal(write(fd, (const char *)im.map + sizeof(eh), im.size - sizeof(eh)),
			 (ssize_t)(im.size - sizeof(eh)));
	close(fd);
	image_open(&ns, path);
	assert_true(gopclntab__maybe(ns.elf));
	u = gopclntab__open(ns.elf, ns.map, ns.size);
	if (!u)
		fail_msg("no sections: %s", strerror(errno));
	assert_int_equal(gopclntab__nfuncs(u), gopclntab__nfuncs(t));
	assert_int_equal(gopclntab__has_inline(u), 1);
	assert_int_equal(gopclntab__func(t, 0, &lo, &e, &name), 0);
	assert_int_equal(gopclntab__func(t, gopclntab__nfuncs(t) - 1, &e, &hi, &name), 0);
	for (uint64_t pc = lo; pc < hi; pc += 7) {
		int n = gopclntab__lookup(t, pc, a, MAX_FRAMES);

		assert_int_equal(gopclntab__lookup(u, pc, b, MAX_FRAMES), n);
		for (int j = 0; j < n; j++) {
			assert_string_equal(a[j].function, b[j].function);
			assert_int_equal(a[j].line, b[j].line);
		}
	}
	gopclntab__free(u);
	gopclntab__free(t);
	image_close(&ns);
	image_close(&im);
	unlink(path);
}

/*
 * A copy of the stripped build whose moduledata.gofunc is zeroed: no inline trees. PCs in
 * inlined code get their physical function alone, with no file:line (the callee's would be
 * wrong for it); other PCs are named as before.
 */
static void test_no_inline_trees(void **state)
{
	char path[] = "/tmp/gopclntab-nogofunc-XXXXXX";
	struct gopclntab_frame a[MAX_FRAMES], b[MAX_FRAMES];
	struct image im, ng;
	struct gopclntab *t = open_table(&im, P("goprog-stripped")), *u;
	uint8_t *copy = malloc(im.size);
	uint64_t tab = 0, lo, hi, e;
	size_t hits = 0, inl = 0, plain = 0;
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstrndx;
	GElf_Shdr sh;
	int fd;

	assert_non_null(copy);
	memcpy(copy, im.map, im.size);
	assert_int_equal(elf_getshdrstrndx(im.elf, &shstrndx), 0);
	while ((scn = elf_nextscn(im.elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    !strcmp(elf_strptr(im.elf, shstrndx, sh.sh_name), ".gopclntab"))
			tab = sh.sh_addr;
	assert_true(tab);
	/* moduledata: its first word is the table's address; gofunc is word 40 (Go 1.20+). */
	for (size_t o = 0; o + 41 * 8 <= im.size; o += 8) {
		uint64_t w;

		memcpy(&w, copy + o, 8);
		if (w != tab)
			continue;
		memcpy(&w, copy + o + 8, 8);
		if (w <= tab || w > tab + 4096)
			continue; /* not followed by funcnametab's address */
		memset(copy + o + 40 * 8, 0, 8);
		hits++;
	}
	assert_int_equal(hits, 1);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, copy, im.size), (ssize_t)im.size);
	close(fd);
	free(copy);
	image_open(&ng, path);
	u = gopclntab__open(ng.elf, ng.map, ng.size);
	assert_non_null(u);
	assert_int_equal(gopclntab__has_inline(u), 0);
	assert_int_equal(gopclntab__func(t, 0, &lo, &e, &name), 0);
	assert_int_equal(gopclntab__func(t, gopclntab__nfuncs(t) - 1, &e, &hi, &name), 0);
	for (uint64_t pc = lo; pc < hi; pc += 3) {
		int n = gopclntab__lookup(t, pc, a, MAX_FRAMES);
		int m = gopclntab__lookup(u, pc, b, MAX_FRAMES);

		assert_true(n >= 1);
		if (n > 1) {
			assert_int_equal(m, 1);
			assert_string_equal(b[0].function, a[n - 1].function);
			assert_null(b[0].file);
			assert_int_equal(b[0].line, 0);
			inl++;
			continue;
		}
		assert_int_equal(m, 1);
		assert_string_equal(b[0].function, a[0].function);
		assert_int_equal(b[0].line, a[0].line);
		plain++;
	}
	assert_true(inl > 0 && plain > 0);
	gopclntab__free(u);
	gopclntab__free(t);
	image_close(&ng);
	image_close(&im);
	unlink(path);
}

/* The address range of function @want in @t. */
static void func_range(const struct gopclntab *t, const char *want, uint64_t *entry, uint64_t *end)
{
	for (size_t i = 0; i < gopclntab__nfuncs(t); i++) {
		const char *name;

		assert_int_equal(gopclntab__func(t, i, entry, end, &name), 0);
		if (!strcmp(name, want))
			return;
	}
	fail_msg("no function %s", want);
}

/*
 * Frame set-up per PC: main.flatLeaf (no call, no frame) is pending everywhere in its code;
 * main.middle is pending at its entry (before PUSHQ BP) and not after its prologue, at the
 * call of main.leaf.
 */
static void test_frame_pending(void **state)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	struct image im;
	struct gopclntab *t = open_table(&im, P("goprog-stripped"));
	int call = marker_line(SRC_DIR "/goprog/main.go", "return leaf(n) + 1");
	uint64_t entry, end;
	size_t code = 0, set_up = 0;

	func_range(t, "main.flatLeaf", &entry, &end);
	for (uint64_t pc = entry; pc < end; pc++) {
		int n = gopclntab__lookup(t, pc, fr, MAX_FRAMES);

		if (n < 1 || !fr[0].file)
			continue; /* padding */
		assert_int_equal(gopclntab__frame_pending(t, pc), 1);
		code++;
	}
	assert_true(code > 5);
	func_range(t, "main.middle", &entry, &end);
	assert_int_equal(gopclntab__frame_pending(t, entry), 1);
	for (uint64_t pc = entry; pc < end; pc++) {
		int n = gopclntab__lookup(t, pc, fr, MAX_FRAMES);

		if (n == 1 && fr[0].line == call && gopclntab__frame_pending(t, pc) == 0)
			set_up++;
	}
	assert_true(set_up > 0);
	assert_int_equal(gopclntab__frame_pending(t, entry - 1 - 0x100000), -ENOENT);
	gopclntab__free(t);
	image_close(&im);
}

/*
 * The symbolizer names a stripped Go binary from its table (frames marked Go), keeps answering
 * the frames it gave after its idle descriptors and mapping are released, and re-loads for new
 * addresses.
 */
static void test_symcache_stripped(void **state)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	struct sym_frame sf[MAX_FRAMES];
	struct symcache *c = symcache__new(NULL);
	struct symcache_stats st;
	struct elf_object *o;
	struct image im;
	struct gopclntab *t = open_table(&im, P("goprog-stripped"));
	uint64_t entry, end, first_pc = 0;
	char first_name[256] = "";
	size_t chains = 0;

	assert_non_null(c);
	o = symcache__open(c, P("goprog-stripped"), NULL);
	assert_non_null(o);
	func_range(t, "main.leaf", &entry, &end);
	for (uint64_t pc = entry; pc < end; pc++) {
		int k = gopclntab__lookup(t, pc, fr, MAX_FRAMES);
		int n = symcache__lookup(c, o, pc, sf, MAX_FRAMES);

		assert_int_equal(n, k);
		for (int j = 0; j < n; j++) {
			assert_string_equal(sf[j].function, fr[j].function);
			assert_string_equal(sf[j].system_name, fr[j].function);
			assert_int_equal(sf[j].line, fr[j].line);
			assert_int_equal(sf[j].go, 1);
			if (fr[j].file)
				assert_string_equal(sf[j].file, fr[j].file);
		}
		if (n == 3 && !first_pc) {
			first_pc = pc;
			snprintf(first_name, sizeof(first_name), "%s", sf[0].function);
		}
		chains += n == 3;
	}
	assert_true(chains > 0);
	symcache__stats(c, &st);
	assert_true(st.go_hits > 0);
	assert_int_equal(st.dwarf_hits + st.symtab_hits, 0);

	/* Idle: descriptors and the mapping go; the frames already given stay. */
	symcache__close_idle(c, UINT64_MAX);
	symcache__stats(c, &st);
	assert_int_equal(st.idle_closes, 1);
	assert_int_equal(symcache__lookup(c, o, first_pc, sf, MAX_FRAMES), 3);
	assert_string_equal(sf[0].function, first_name);
	/* A new address re-opens the file and reads the table again. */
	func_range(t, "main.middle", &entry, &end);
	assert_true(symcache__lookup(c, o, entry, sf, MAX_FRAMES) >= 1);
	assert_string_equal(sf[0].function, "main.middle");
	assert_int_equal(sf[0].go, 1);
	symcache__stats(c, &st);
	assert_int_equal(st.idle_reloads, 1);
	symcache__free(c);
	gopclntab__free(t);
	image_close(&im);
}

/*
 * With DWARF, Go code is still named from DWARF (as before) and marked Go; C code is not.
 */
static void test_symcache_kinds(void **state)
{
	struct sym_frame sf[MAX_FRAMES];
	struct symcache *c = symcache__new(NULL);
	struct symcache_stats st;
	struct elf_object *o;
	struct image im;
	struct gopclntab *t = open_table(&im, P("goprog-normal"));
	uint64_t entry, end;
	int named = 0;

	assert_non_null(c);
	o = symcache__open(c, P("goprog-normal"), NULL);
	assert_non_null(o);
	func_range(t, "main.outer", &entry, &end);
	assert_int_equal(symcache__lookup(c, o, entry, sf, MAX_FRAMES), 1);
	assert_string_equal(sf[0].function, "main.outer");
	assert_int_equal(sf[0].go, 1);
	symcache__stats(c, &st);
	assert_int_equal(st.dwarf_hits, 1);
	assert_int_equal(st.go_hits, 0);

	o = symcache__open(c, C_PROG, NULL);
	assert_non_null(o);
	for (uint64_t v = 0x1000; v < 0x1400; v += 16) {
		int n = symcache__lookup(c, o, v, sf, MAX_FRAMES);

		named += n > 0;
		for (int j = 0; j < n; j++)
			assert_int_equal(sf[j].go, 0);
	}
	assert_true(named > 0);
	symcache__free(c);
	gopclntab__free(t);
	image_close(&im);
}

/* Not a Go binary: ENOENT ("not mine"), not an error. */
static void test_not_go(void **state)
{
	struct image im;

	image_open(&im, C_PROG);
	assert_false(gopclntab__maybe(im.elf));
	assert_null(gopclntab__open(im.elf, im.map, im.size));
	assert_int_equal(errno, ENOENT);
	image_close(&im);
}

/* Lookups outside any function answer nothing. */
static void test_outside(void **state)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	struct image im;
	struct gopclntab *t = open_table(&im, P("goprog-stripped"));
	uint64_t entry, end;
	const char *name;

	assert_int_equal(gopclntab__layout(t), 120);
	assert_int_equal(gopclntab__has_inline(t), 1);
	assert_int_equal(gopclntab__func(t, 0, &entry, &end, &name), 0);
	assert_int_equal(gopclntab__lookup(t, entry - 1, fr, MAX_FRAMES), 0);
	assert_int_equal(gopclntab__lookup(t, 0, fr, MAX_FRAMES), 0);
	assert_int_equal(gopclntab__lookup(t, UINT64_MAX, fr, MAX_FRAMES), 0);
	assert_int_equal(gopclntab__func(t, gopclntab__nfuncs(t) - 1, &entry, &end, &name), 0);
	assert_int_equal(gopclntab__lookup(t, end, fr, MAX_FRAMES), 0);
	assert_int_equal(gopclntab__lookup(t, entry, fr, 0), -EINVAL);
	gopclntab__free(t);
	image_close(&im);
}

/* A chain longer than the room given is refused whole, never cut. */
static void test_chain_too_long(void **state)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	struct image im;
	struct gopclntab *t = open_table(&im, P("goprog-stripped"));
	size_t nf = gopclntab__nfuncs(t), seen = 0;

	for (size_t i = 0; i < nf && !seen; i++) {
		uint64_t entry, end;
		const char *name;

		assert_int_equal(gopclntab__func(t, i, &entry, &end, &name), 0);
		for (uint64_t pc = entry; pc < end && !seen; pc++) {
			if (gopclntab__lookup(t, pc, fr, MAX_FRAMES) < 3)
				continue;
			assert_int_equal(gopclntab__lookup(t, pc, fr, 2), -E2BIG);
			seen++;
		}
	}
	assert_true(seen);
	gopclntab__free(t);
	image_close(&im);
}

/*
 * Garbage: the table's bytes overwritten at random places, the file cut short. Opening fails
 * or lookups answer within the image; nothing crashes (the fuzz target covers more).
 */
static void test_corrupt(void **state)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	struct image im;
	struct gopclntab *t = open_table(&im, P("goprog-stripped"));
	size_t off, len, nf = gopclntab__nfuncs(t);
	uint64_t lo, hi, e2;
	const char *name;
	uint8_t *copy = malloc(im.size);
	unsigned seed = 1;

	assert_non_null(copy);
	gopclntab__extent(t, &off, &len);
	assert_int_equal(gopclntab__func(t, 0, &lo, &e2, &name), 0);
	assert_int_equal(gopclntab__func(t, nf - 1, &e2, &hi, &name), 0);
	gopclntab__free(t);
	for (int round = 0; round < 300; round++) {
		struct gopclntab *c;
		size_t size = im.size;

		memcpy(copy, im.map, im.size);
		for (int k = 0; k < 1 + round % 16; k++)
			copy[off + (size_t)rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
		if (round % 5 == 0)
			copy[off + (size_t)rand_r(&seed) % 72] ^= 0xff; /* the header */
		if (round % 7 == 0)
			size = off + (size_t)rand_r(&seed) % len; /* cut inside the table */
		c = gopclntab__open(im.elf, copy, size);
		if (!c) {
			assert_true(errno == EINVAL || errno == ENOTSUP || errno == ENOENT);
			continue;
		}
		for (int k = 0; k < 2000; k++) {
			uint64_t pc = lo + (uint64_t)rand_r(&seed) % (hi - lo);
			int n = gopclntab__lookup(c, pc, fr, MAX_FRAMES);

			for (int j = 0; j < n; j++) {
				assert_true((const uint8_t *)fr[j].function >= copy &&
					    (const uint8_t *)fr[j].function < copy + size);
				assert_true(strlen(fr[j].function) < 4096);
			}
		}
		gopclntab__free(c);
	}
	free(copy);
	image_close(&im);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_addr2line_normal),
	    cmocka_unit_test(test_addr2line_stripped),
	    cmocka_unit_test(test_addr2line_trimpath),
	    cmocka_unit_test(test_addr2line_pie),
	    cmocka_unit_test(test_addr2line_noinline),
	    cmocka_unit_test(test_addr2line_other_versions),
	    cmocka_unit_test(test_inline_chain_stripped),
	    cmocka_unit_test(test_inline_chain_trimpath),
	    cmocka_unit_test(test_c_shared),
	    cmocka_unit_test(test_chain_matches_dwarf),
	    cmocka_unit_test(test_other_releases),
	    cmocka_unit_test(test_no_sections),
	    cmocka_unit_test(test_no_inline_trees),
	    cmocka_unit_test(test_frame_pending),
	    cmocka_unit_test(test_symcache_stripped),
	    cmocka_unit_test(test_symcache_kinds),
	    cmocka_unit_test(test_not_go),
	    cmocka_unit_test(test_outside),
	    cmocka_unit_test(test_chain_too_long),
	    cmocka_unit_test(test_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
