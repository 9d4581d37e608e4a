// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the goroutine-label layout reader (exporter/runtime/go/golabels.c): the
 * programs of test/runtime/go-progs built with the machine's Go (test/runtime/gopclntab.mk)
 * with DWARF, without (-s -w) and position-independent; the version table's row for the
 * machine's Go checked against that Go's own DWARF; the TLS decoder, the label copy parser and
 * the hex ids on crafted bytes. No root needed.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/go/golabels.h"
#include "runtime/go/gopclntab.h"

#define P(name) GOPROGS_DIR "/" name

static int inspect(const char *path, struct golabels_layout *out)
{
	struct stat st;
	Elf *elf;
	void *map;
	int fd, err;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("%s: %s (built by test/runtime/gopclntab.mk)", path, strerror(errno));
	assert_int_equal(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	err = golabels__inspect(elf, map, (size_t)st.st_size, out);
	elf_end(elf);
	munmap(map, (size_t)st.st_size);
	close(fd);
	return err;
}

/* `go env GOVERSION` of the Go that built the programs. */
static void go_version(char *out, size_t len)
{
	FILE *f = popen(GO_BIN " env GOVERSION", "r");

	assert_non_null(f);
	assert_non_null(fgets(out, (int)len, f));
	out[strcspn(out, "\n")] = '\0';
	pclose(f);
}

static void test_version_from_buildinfo(void **state)
{
	struct golabels_layout l;
	char want[64];

	go_version(want, sizeof(want));
	assert_int_equal(inspect(P("goprog-stripped"), &l), 0);
	assert_string_equal(l.version, want);
	assert_int_equal(l.go_minor, atoi(want + 4));
}

/*
 * The build @dwarf of a program has its offsets from its DWARF, the build @stripped (-s -w)
 * from the table's row for its version: they must agree, g at TLS offset -8. Both layouts
 * into @d and @t.
 */
static void dwarf_and_table_agree(const char *dwarf, const char *stripped,
				  struct golabels_layout *d, struct golabels_layout *t)
{
	assert_int_equal(inspect(dwarf, d), 0);
	assert_int_equal(d->from_dwarf, 1);
	assert_int_equal(inspect(stripped, t), 0);
	assert_int_equal(t->from_dwarf, 0);
	printf("  %s: dwarf g.m %u, m.curg %u, g.labels %u; table %u, %u, %u\n", d->version, d->g_m,
	       d->m_curg, d->g_labels, t->g_m, t->m_curg, t->g_labels);
	assert_string_equal(d->version, t->version);
	assert_int_equal(d->g_m, t->g_m);
	assert_int_equal(d->m_curg, t->m_curg);
	assert_int_equal(d->g_labels, t->g_labels);
	/* amd64: g is the last word of the static TLS block (runtime.tlsg, -8). */
	assert_int_equal(d->tls_g, -8);
	assert_int_equal(t->tls_g, -8);
}

/* The figures with DWARF are the binary's own; without it, the table's row for this version
 * must give the same (the row's source is this check). */
static void test_dwarf_and_table_agree(void **state)
{
	struct golabels_layout d, t, pie;

	dwarf_and_table_agree(P("goprog-normal"), P("goprog-stripped"), &d, &t);
	/* -buildmode=pie loads the offset into a register first: decoded the same. */
	assert_int_equal(inspect(P("goprog-pie"), &pie), 0);
	assert_int_equal(pie.tls_g, -8);
	assert_int_equal(pie.g_labels, d.g_labels);
}

/*
 * Whether runtime.newproc1 of the Go program @path does `newg.labels = mp.curg.labels` (a
 * user goroutine inheriting its creator's labels) with @l's offsets: a load from
 * m_curg(reg), then a store into g_labels(reg), in objdump's text. The code the release
 * compiled is the layout's witness where the binary has no DWARF.
 */
static int newproc1_uses(const char *path, const struct golabels_layout *l)
{
	char cmd[4608], line[512], load[32], store[32];
	uint64_t entry = 0, end = 0;
	const char *name;
	struct gopclntab *t;
	struct stat st;
	int fd, loaded = 0, stored = 0;
	Elf *elf;
	void *map;
	FILE *f;
	size_t i, n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	t = gopclntab__open(elf, map, (size_t)st.st_size);
	assert_non_null(t);
	n = gopclntab__nfuncs(t);
	for (i = 0; i < n; i++)
		if (!gopclntab__func(t, i, &entry, &end, &name) &&
		    !strcmp(name, "runtime.newproc1"))
			break;
	gopclntab__free(t);
	elf_end(elf);
	munmap(map, (size_t)st.st_size);
	close(fd);
	assert_true(i < n);
	snprintf(cmd, sizeof(cmd),
		 "objdump -d --no-show-raw-insn --start-address=%#llx --stop-address=%#llx '%s'",
		 (unsigned long long)entry, (unsigned long long)end, path);
	snprintf(load, sizeof(load), " %#x(%%r", l->m_curg);
	snprintf(store, sizeof(store), ",%#x(%%r", l->g_labels);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "mov"))
			continue;
		if (strstr(line, load))
			loaded = 1;
		else if (loaded && strstr(line, store))
			stored = 1;
	}
	pclose(f);
	return stored;
}

/*
 * Go programs of other releases installed on the machine: the table's rows are checked against
 * the DWARF of those that have it, and against runtime.newproc1's code of every one read;
 * releases before 1.24 (1.23 here, stripped) keep labels in a map, read through the table.
 */
static void test_other_versions(void **state)
{
	char line[4096];
	int checked = 0;
	FILE *f = popen("for f in /usr/bin/* /usr/local/bin/* /usr/sbin/*; do "
			"[ -f \"$f\" ] && [ -x \"$f\" ] && GOTOOLCHAIN=local " GO_BIN
			" version \"$f\"; done 2>/dev/null",
			"r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *colon = strstr(line, ": go");
		struct golabels_layout l, row;
		int err;

		if (!colon)
			continue;
		*colon = 0;
		err = inspect(line, &l);
		printf("  %s: %s: %d, dwarf %d, tls %lld, g.m %u, m.curg %u, g.labels %u, %s%s%s\n",
		       line, l.version, err, l.from_dwarf, (long long)l.tls_g, l.g_m, l.m_curg,
		       l.g_labels, l.labels_map ? "map" : "slice", l.unsupported ? ": " : "",
		       l.unsupported ? l.unsupported : "");
		if (err == -ENOTSUP) { /* no DWARF, and no row or one its code refutes: said why */
			assert_false(l.from_dwarf);
			if (!golabels__table_row(l.go_minor, &row))
				/* objdump agrees: the row's offsets are not what newproc1 uses (a
				 * go1.25 pre-release with 1.24's layout is installed here) */
				assert_false(newproc1_uses(line, &row));
			checked++;
			continue;
		}
		assert_int_equal(err, 0);
		assert_true(l.tls_g < 0);
		assert_int_equal(l.labels_map, l.go_minor < 24);
		if (!golabels__table_row(l.go_minor, &row)) {
			assert_int_equal(row.g_m, l.g_m);
			assert_int_equal(row.m_curg, l.m_curg);
			assert_int_equal(row.g_labels, l.g_labels);
		}
		assert_true(newproc1_uses(line, &l));
		checked++;
	}
	pclose(f);
	if (!checked)
		skip(); /* no Go binary in /usr/bin, /usr/local/bin or /usr/sbin of this machine */
}

/*
 * golabels__code_confirms() on hand-encoded MOVs: newproc1's three (load of m.curg, load and
 * store of g.labels) with disp32, disp8 and a SIB byte; any one missing, or at other offsets,
 * refutes.
 */
static void test_code_confirms(void **state)
{
	/* mov 0xc0(%rdx),%rdi; mov 0x160(%rdi),%rdi; mov %rdi,0x160(%rsi) */
	static const uint8_t go124[] = {0x48, 0x8b, 0xba, 0xc0, 0x00, 0x00, 0x00, 0x48,
					0x8b, 0xbf, 0x60, 0x01, 0x00, 0x00, 0x90, 0x48,
					0x89, 0xbe, 0x60, 0x01, 0x00, 0x00};
	/* mov 0x30(%rax),%rcx (disp8); mov 0x40(%rsp),%rdx (SIB, disp8); mov %rdx,0x40(%r8) */
	static const uint8_t small[] = {0x48, 0x8b, 0x48, 0x30, 0x48, 0x8b, 0x54,
					0x24, 0x40, 0x49, 0x89, 0x50, 0x40};

	(void)state;
	assert_true(golabels__code_confirms(go124, sizeof(go124), 0xc0, 0x160));
	assert_false(golabels__code_confirms(go124, sizeof(go124), 0xb8, 0x158));
	assert_false(golabels__code_confirms(go124, sizeof(go124), 0xc0, 0x158));
	/* without the store */
	assert_false(golabels__code_confirms(go124, 15, 0xc0, 0x160));
	assert_true(golabels__code_confirms(small, sizeof(small), 0x30, 0x40));
	assert_false(golabels__code_confirms(small, sizeof(small) - 1, 0x30, 0x40));
	assert_false(golabels__code_confirms(small, sizeof(small), 0x30, 0x48));
}

/* The rows: a map before 1.24, a slice since; releases not listed, none. */
static void test_table_rows(void **state)
{
	static const struct {
		int minor, err, map;
		uint32_t g_labels;
	} want[] = {{16, -ENOENT, 0, 0}, {17, -ENOENT, 0, 0}, {18, 0, 1, 360}, {20, 0, 1, 360},
		    {21, 0, 1, 344},	 {22, 0, 1, 344},     {23, 0, 1, 352}, {24, 0, 0, 352},
		    {25, 0, 0, 344},	 {26, 0, 0, 352},     {27, 0, 0, 352}, {28, -ENOENT, 0, 0}};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct golabels_layout row = {0};

		assert_int_equal(golabels__table_row(want[i].minor, &row), want[i].err);
		if (want[i].err)
			continue;
		assert_int_equal(row.labels_map, want[i].map);
		assert_int_equal(row.g_labels, want[i].g_labels);
		assert_int_equal(row.g_m, 48);
		assert_int_equal(row.m_curg, want[i].minor < 25 ? 192 : 184);
	}
}

/*
 * The form of the labels from the DWARF: runtime/pprof.labelMap of kind struct (25, the
 * machine's Go) is a slice; the same binary whose labelMap says map (21, as Go 1.18-1.23 write
 * it: test/runtime/go-progs/labelmap_kind.py) a map, with the same offsets; a kind no release
 * wrote is refused.
 */
static void test_dwarf_labelmap_kind(void **state)
{
	struct golabels_layout s, m, odd;

	assert_int_equal(inspect(P("golabelsmap-dwarf"), &s), 0);
	assert_int_equal(s.from_dwarf, 1);
	assert_int_equal(s.labels_map, 0);
	assert_int_equal(inspect(P("golabelsmap-kind21"), &m), 0);
	assert_int_equal(m.from_dwarf, 1);
	assert_int_equal(m.labels_map, 1);
	assert_int_equal(m.g_m, s.g_m);
	assert_int_equal(m.m_curg, s.m_curg);
	assert_int_equal(m.g_labels, s.g_labels);
	assert_int_equal(inspect(P("golabelsmap-kind22"), &odd), -ENOTSUP);
	assert_non_null(strstr(odd.unsupported, "neither a map nor a struct"));
}

/*
 * Releases newer than the machine's Go (test/runtime/gopclntab.mk builds the program with them
 * when their toolchains are in the module cache): the table's row for the release gives what
 * its own DWARF says, and the stripped build is read through that row.
 */
static void test_new_releases(void **state)
{
	char releases[] = GO_NEW_RELEASES, dwarf[4096], stripped[4096];
	int tested = 0;

	for (char *v = strtok(releases, " "); v; v = strtok(NULL, " ")) {
		struct golabels_layout d, t;

		snprintf(dwarf, sizeof(dwarf), "%s/goprog-dwarf-%s", GOPROGS_DIR, v);
		snprintf(stripped, sizeof(stripped), "%s/goprog-%s", GOPROGS_DIR, v);
		if (access(dwarf, R_OK) || access(stripped, R_OK)) {
			printf("  %s: not built (toolchain not in the module cache: make "
			       "go-toolchains)\n",
			       v);
			continue;
		}
		dwarf_and_table_agree(dwarf, stripped, &d, &t);
		assert_string_equal(d.version, v);
		tested++;
	}
	if (!tested)
		skip();
}

static void test_not_go(void **state)
{
	struct golabels_layout l;

	assert_int_equal(inspect("/bin/sh", &l), -ENOENT);
}

static void test_decode_tls(void **state)
{
	/* MOVQ %fs:-8, %rax */
	static const uint8_t abs_rax[] = {0x64, 0x48, 0x8b, 0x04, 0x25, 0xf8, 0xff, 0xff, 0xff};
	/* MOVQ %fs:-80, %rcx */
	static const uint8_t abs_rcx[] = {0x64, 0x48, 0x8b, 0x0c, 0x25, 0xb0, 0xff, 0xff, 0xff};
	/* MOVQ $-8, %rcx; MOVQ %fs:(%rcx), %rax */
	static const uint8_t reg[] = {0x48, 0xc7, 0xc1, 0xf8, 0xff, 0xff,
				      0xff, 0x64, 0x48, 0x8b, 0x01};
	/* ... but %fs:(%rdx) after loading %rcx: not the same register */
	static const uint8_t other_reg[] = {0x48, 0xc7, 0xc1, 0xf8, 0xff, 0xff,
					    0xff, 0x64, 0x48, 0x8b, 0x02};
	/* MOVQ disp(%rip), %rcx; MOVQ %fs:(%rcx), %rax: the offset is in memory */
	static const uint8_t got[] = {0x48, 0x8b, 0x0d, 0x10, 0x00, 0x00,
				      0x00, 0x64, 0x48, 0x8b, 0x01};
	int64_t off = 0;

	assert_int_equal(golabels__decode_tls(abs_rax, sizeof(abs_rax), &off), 0);
	assert_int_equal(off, -8);
	assert_int_equal(golabels__decode_tls(abs_rcx, sizeof(abs_rcx), &off), 0);
	assert_int_equal(off, -80);
	assert_int_equal(golabels__decode_tls(reg, sizeof(reg), &off), 0);
	assert_int_equal(off, -8);
	assert_int_equal(golabels__decode_tls(other_reg, sizeof(other_reg), &off), -ENOTSUP);
	assert_int_equal(golabels__decode_tls(got, sizeof(got), &off), -ENOTSUP);
	assert_int_equal(golabels__decode_tls(abs_rax, 8, &off), -ENOTSUP); /* cut short */
}

static void test_decode_tls_got(void **state)
{
	/* MOVQ 0x10(%rip), %rcx; MOVQ %fs:(%rcx), %rax */
	static const uint8_t got[] = {0x48, 0x8b, 0x0d, 0x10, 0x00, 0x00,
				      0x00, 0x64, 0x48, 0x8b, 0x01};
	/* MOVQ -0x20(%rip), %rdx; MOVQ %fs:(%rdx), %rax */
	static const uint8_t got_rdx[] = {0x48, 0x8b, 0x15, 0xe0, 0xff, 0xff,
					  0xff, 0x64, 0x48, 0x8b, 0x02};
	/* ... %fs:(%rdx) after loading %rcx: not the same register */
	static const uint8_t other_reg[] = {0x48, 0x8b, 0x0d, 0x10, 0x00, 0x00,
					    0x00, 0x64, 0x48, 0x8b, 0x02};
	/* MOVQ $-8, %rcx; ...: an immediate, not a slot */
	static const uint8_t imm[] = {0x48, 0xc7, 0xc1, 0xf8, 0xff, 0xff,
				      0xff, 0x64, 0x48, 0x8b, 0x01};
	uint64_t slot = 0;

	assert_int_equal(golabels__decode_tls_got(got, sizeof(got), 0x1000, &slot), 0);
	assert_int_equal(slot, 0x1000 + 7 + 0x10);
	assert_int_equal(golabels__decode_tls_got(got_rdx, sizeof(got_rdx), 0x1000, &slot), 0);
	assert_int_equal(slot, 0x1000 + 7 - 0x20);
	assert_int_equal(golabels__decode_tls_got(other_reg, sizeof(other_reg), 0, &slot),
			 -ENOTSUP);
	assert_int_equal(golabels__decode_tls_got(imm, sizeof(imm), 0, &slot), -ENOTSUP);
	assert_int_equal(golabels__decode_tls_got(got, 10, 0, &slot), -ENOTSUP); /* cut short */
}

static void test_tls_from_slot(void **state)
{
	struct golabels_layout l = {.tls_got_vaddr = 0x1d0fb8};

	assert_int_equal(golabels__tls_from_slot(&l, 0), -EAGAIN);  /* not relocated yet */
	assert_int_equal(golabels__tls_from_slot(&l, 8), -ENOTSUP); /* above the thread pointer */
	assert_int_equal(golabels__tls_from_slot(&l, (uint64_t)-12), -ENOTSUP); /* misaligned */
	assert_int_equal(golabels__tls_from_slot(&l, (uint64_t) - (1ll << 30)), -ENOTSUP);
	assert_int_equal(l.tls_g, 0);
	assert_int_equal(golabels__tls_from_slot(&l, (uint64_t)-0x1a0), 0);
	assert_int_equal(l.tls_g, -0x1a0);
}

/* The offset of the one R_X86_64_TPOFF64 relocation in @path's dynamic relocations, or 0. */
static uint64_t tpoff64_slot(const char *path)
{
	Elf_Scn *scn = NULL;
	uint64_t found = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	Elf *elf;

	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;

			if (gelf_getrela(d, (int)i, &r) &&
			    GELF_R_TYPE(r.r_info) == R_X86_64_TPOFF64) {
				found = r.r_offset;
				n++;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return n == 1 ? found : 0;
}

/*
 * A -buildmode=c-shared library loads g's TLS offset from a GOT slot that the loader fills:
 * found at the address of the library's one R_X86_64_TPOFF64 relocation, with DWARF and
 * stripped.
 */
static void test_c_shared_got_slot(void **state)
{
	const char *libs[] = {P("libgolib.so"), P("libgolib-stripped.so")};

	for (size_t i = 0; i < 2; i++) {
		struct golabels_layout l;
		uint64_t slot = tpoff64_slot(libs[i]);

		assert_int_equal(inspect(libs[i], &l), 0);
		printf("  %s: %s, GOT slot 0x%llx (relocation at 0x%llx), dwarf %d\n", libs[i],
		       l.version, (unsigned long long)l.tls_got_vaddr, (unsigned long long)slot,
		       l.from_dwarf);
		assert_int_not_equal(slot, 0);
		assert_int_equal(l.tls_got_vaddr, slot);
		assert_int_equal(l.tls_g, 0);
		assert_int_equal(l.from_dwarf, i == 0);
	}
}

struct seen {
	char text[256];
	int n;
};

static void note(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	struct seen *s = ctx;
	size_t at = strlen(s->text);

	snprintf(s->text + at, sizeof(s->text) - at, "%.*s=%.*s;", (int)kl, k, (int)vl, v);
	s->n++;
}

static void test_parse(void **state)
{
	static const uint8_t two[] = {7,   4,	's', 'p', 'a', 'n', '_', 'i',
				      'd', 'a', 'b', 'c', 'd', 1,   0,	 'k'};
	struct seen s = {0};

	assert_int_equal(golabels__parse(two, sizeof(two), note, &s), 2);
	assert_string_equal(s.text, "span_id=abcd;k=;");
	assert_int_equal(golabels__parse(two, 0, note, &s), 0);
	/* A copy that ends inside an entry, or an empty key: corrupt, dropped whole. */
	assert_int_equal(golabels__parse(two, sizeof(two) - 1, NULL, NULL), -EINVAL);
	assert_int_equal(golabels__parse(two, 1, NULL, NULL), -EINVAL);
	assert_int_equal(golabels__parse((const uint8_t[]){0, 0}, 2, NULL, NULL), -EINVAL);
}

static void test_hex_id(void **state)
{
	uint8_t id[16];

	assert_int_equal(golabels__hex_id("00f067aa0ba902b7", 16, id, 8), 0);
	assert_memory_equal(id, "\x00\xf0\x67\xaa\x0b\xa9\x02\xb7", 8);
	assert_int_equal(golabels__hex_id("4BF92F3577B34DA6A3CE929D0E0E4736", 32, id, 16), 0);
	assert_int_equal(id[0], 0x4b);
	assert_int_equal(id[15], 0x36);
	assert_int_equal(golabels__hex_id("00f067aa0ba902b", 15, id, 8), -EINVAL);
	assert_int_equal(golabels__hex_id("00f067aa0ba902bz", 16, id, 8), -EINVAL);
	assert_int_equal(golabels__hex_id("0000000000000000", 16, id, 8), -EINVAL);
	assert_int_equal(golabels__hex_id("00f067aa0ba902b7", 16, id, 16), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_version_from_buildinfo),
	    cmocka_unit_test(test_dwarf_and_table_agree),
	    cmocka_unit_test(test_other_versions),
	    cmocka_unit_test(test_table_rows),
	    cmocka_unit_test(test_code_confirms),
	    cmocka_unit_test(test_dwarf_labelmap_kind),
	    cmocka_unit_test(test_new_releases),
	    cmocka_unit_test(test_not_go),
	    cmocka_unit_test(test_decode_tls),
	    cmocka_unit_test(test_decode_tls_got),
	    cmocka_unit_test(test_tls_from_slot),
	    cmocka_unit_test(test_c_shared_got_slot),
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_hex_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
