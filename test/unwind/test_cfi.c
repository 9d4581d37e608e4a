// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/unwind/cfi.c and the row lookup of bpf/unwind.h (compiled here as ordinary
 * C). The reference is `readelf --debug-dump=frames-interp` on the same file: for every address of
 * every FDE range, unwind__find_row() must give the CFA rule, return address location and RBP
 * location readelf shows. The programs come from test/unwind/cfi-progs/ (built by
 * test/unwind/cfi.mk).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/cfi.h"
#include "unwind.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

/* --- readelf reference ---------------------------------------------------------------------- */

struct ref_row {
	uint64_t loc;
	char cfa[24], rbp[24], rsp[24], ra[24];
};

struct ref_cie {
	uint64_t off;
	char aug[16];
	bool has_row;
	struct ref_row init;
};

struct ref_fde {
	uint64_t start, end, cie;
	size_t first, count;
	bool unparsed;
};

struct ref {
	struct ref_row *rows;
	size_t nrows, caprows;
	struct ref_fde *fdes;
	size_t nfdes, capfdes;
	struct ref_cie *cies;
	size_t ncies, capcies;
	size_t unparsed;
};

#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			(cap) = (cap) ? (cap)*2 : 256;                                             \
			(arr) = realloc((arr), (cap) * sizeof(*(arr)));                            \
			assert_non_null(arr);                                                      \
		}                                                                                  \
	} while (0)

static void ref_free(struct ref *r)
{
	free(r->rows);
	free(r->fdes);
	free(r->cies);
}

static const struct ref_cie *ref_cie(const struct ref *r, uint64_t off)
{
	size_t i;

	for (i = 0; i < r->ncies; i++)
		if (r->cies[i].off == off)
			return &r->cies[i];
	return NULL;
}

/* Splits a readelf table line into columns; "r9 (r9)" style register names stay one column. */
static int split_cols(char *line, char cols[][24], int max)
{
	char *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (tok[0] == '(' && n > 0) {
			size_t l = strlen(cols[n - 1]);

			snprintf(cols[n - 1] + l, 24 - l, " %s", tok);
			continue;
		}
		if (n == max)
			return -1;
		snprintf(cols[n++], 24, "%s", tok);
	}
	return n;
}

/* Parses readelf's interpreted frames of one section (".eh_frame" or ".debug_frame"). */
static void ref_load(const char *file, const char *section, struct ref *r)
{
	char cmd[1024], line[4096], hdr[32][24], cols[32][24], aug[16];
	int ncols = 0, rsp_col = -1, rbp_col = -1, ra_col = -1, n, i;
	bool in_section = false, in_cie = false, in_fde = false;
	unsigned long long off, len, id, cie, lo, hi;
	FILE *p;

	memset(r, 0, sizeof(*r));
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (!strncmp(line, "Contents of the ", 16)) {
			in_section = !strncmp(line + 16, section, strlen(section)) &&
				     line[16 + strlen(section)] == ' ';
			in_cie = in_fde = false;
			continue;
		}
		if (!in_section)
			continue;
		if (sscanf(line, "%llx %llx %llx CIE \"%15[^\"]\"", &off, &len, &id, aug) == 4 ||
		    (sscanf(line, "%llx %llx %llx CIE \"\"", &off, &len, &id) == 3 &&
		     strstr(line, "CIE \"\"") && (aug[0] = 0) == 0)) {
			GROW(r->cies, r->ncies, r->capcies);
			memset(&r->cies[r->ncies], 0, sizeof(r->cies[0]));
			r->cies[r->ncies].off = off;
			snprintf(r->cies[r->ncies].aug, sizeof(aug), "%s", aug);
			r->ncies++;
			in_cie = true;
			in_fde = false;
			ncols = 0;
			continue;
		}
		if (sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &off, &len, &id, &cie,
			   &lo, &hi) == 6) {
			GROW(r->fdes, r->nfdes, r->capfdes);
			r->fdes[r->nfdes] =
			    (struct ref_fde){.start = lo, .end = hi, .cie = cie, .first = r->nrows};
			r->nfdes++;
			in_fde = true;
			in_cie = false;
			ncols = 0;
			continue;
		}
		if (strstr(line, "ZERO terminator")) {
			in_cie = in_fde = false;
			continue;
		}
		if (!in_cie && !in_fde)
			continue;
		n = split_cols(line, cols, 32);
		if (n <= 0)
			continue;
		if (!strcmp(cols[0], "LOC")) {
			memcpy(hdr, cols, sizeof(hdr));
			ncols = n;
			rsp_col = rbp_col = ra_col = -1;
			for (i = 2; i < n; i++) {
				if (!strcmp(hdr[i], "rsp"))
					rsp_col = i;
				else if (!strcmp(hdr[i], "rbp"))
					rbp_col = i;
				else if (!strcmp(hdr[i], "ra"))
					ra_col = i;
			}
			continue;
		}
		if (strlen(cols[0]) != 16 || ncols == 0)
			continue;
		if (n != ncols || ra_col < 0) {
			if (in_fde && !r->fdes[r->nfdes - 1].unparsed) {
				r->fdes[r->nfdes - 1].unparsed = true;
				r->unparsed++;
			}
			continue;
		}
		struct ref_row row = {.loc = strtoull(cols[0], NULL, 16)};

		snprintf(row.cfa, sizeof(row.cfa), "%s", cols[1]);
		snprintf(row.rbp, sizeof(row.rbp), "%s", rbp_col > 0 ? cols[rbp_col] : "");
		snprintf(row.rsp, sizeof(row.rsp), "%s", rsp_col > 0 ? cols[rsp_col] : "");
		snprintf(row.ra, sizeof(row.ra), "%s", cols[ra_col]);
		if (in_cie) {
			r->cies[r->ncies - 1].init = row;
			r->cies[r->ncies - 1].has_row = true;
		} else {
			GROW(r->rows, r->nrows, r->caprows);
			r->rows[r->nrows++] = row;
			r->fdes[r->nfdes - 1].count++;
		}
	}
	/* readelf exits 1 on warnings about other sections (libc's gnu_debuglink): ignore */
	pclose(p);
}

/* --- expected rows ----------------------------------------------------------------------- */

struct range {
	uint64_t start, end;
};

/* Address ranges of the .plt* sections, where the PLT expression form is expected. */
static size_t plt_ranges(const char *file, struct range *out, size_t max)
{
	Elf_Scn *scn = NULL;
	size_t n = 0, shstrndx;
	GElf_Shdr sh;
	Elf *elf;
	int fd;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(file, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn)) && n < max) {
		const char *name;

		gelf_getshdr(scn, &sh);
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strncmp(name, ".plt", 4))
			out[n++] = (struct range){sh.sh_addr, sh.sh_addr + sh.sh_size};
	}
	elf_end(elf);
	close(fd);
	return n;
}

static bool in_ranges(const struct range *r, size_t n, uint64_t a)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a >= r[i].start && a < r[i].end)
			return true;
	return false;
}

/* Parses readelf's "c-16" / "rsp+8" forms; returns false when the text is something else. */
static bool parse_off(const char *s, const char *prefix, long *off)
{
	size_t l = strlen(prefix);
	char *end;

	if (strncmp(s, prefix, l) || (s[l] != '+' && s[l] != '-'))
		return false;
	*off = strtol(s + l, &end, 10);
	return *end == 0;
}

/*
 * The row readelf's state means (the same mapping as cfi.c, from readelf's text). rbp_alt is a
 * second acceptable rbp value: readelf prints "u" both for DW_CFA_undefined and for a register
 * that is only saved later in the FDE (still unchanged here).
 */
static struct unwind_row expect_row(const struct ref_row *rr, bool signal, bool in_plt,
				    int *rbp_alt)
{
	struct unwind_row e = {.kind = UNWIND_KIND_UNSUPPORTED};
	bool ra_rdi = !strcmp(rr->ra, "r5 (rdi)"); /* DW_CFA_register: glibc's __vfork */
	long off;

	*rbp_alt = 1000;
	if (signal) {
		e.kind = UNWIND_KIND_SIGNAL;
		return e;
	}
	if (!strcmp(rr->ra, "u")) {
		e.kind = UNWIND_KIND_END;
		return e;
	}
	if ((strcmp(rr->ra, "c-8") && !ra_rdi) || (rr->rsp[0] && strcmp(rr->rsp, "u")))
		return e;
	if (ra_rdi) {
		if (!parse_off(rr->cfa, "rsp", &off) || off < 0 || off > 0xffff)
			return e;
		e.kind = UNWIND_KIND_RA_RDI;
		e.cfa_off = (uint16_t)off;
	} else if (!strcmp(rr->cfa, "exp")) {
		if (!in_plt)
			return e;
		e.kind = UNWIND_KIND_PLT;
	} else if (parse_off(rr->cfa, "rsp", &off) && off >= 0 && off <= 0xffff) {
		e.kind = UNWIND_KIND_CFA_RSP;
		e.cfa_off = (uint16_t)off;
	} else if (parse_off(rr->cfa, "rbp", &off) && off >= 0 && off <= 0xffff) {
		e.kind = UNWIND_KIND_CFA_RBP;
		e.cfa_off = (uint16_t)off;
	} else {
		return e;
	}
	if (!rr->rbp[0] || !strcmp(rr->rbp, "s")) {
		e.rbp = 0;
	} else if (!strcmp(rr->rbp, "u")) {
		e.rbp = 0;
		*rbp_alt = UNWIND_RBP_UNKNOWN;
	} else if (parse_off(rr->rbp, "c", &off) && off != 0 && off % 8 == 0 && off >= -1016 &&
		   off <= 1016) {
		e.rbp = (int8_t)(off / 8);
	} else {
		e.rbp = UNWIND_RBP_UNKNOWN;
	}
	return e;
}

struct cmp_result {
	uint64_t addrs, fdes, mismatches, plt, signal, end, unsupported;
};

static void report(const struct ref_fde *f, uint64_t a, const struct ref_row *rr,
		   const struct unwind_row *got, const struct unwind_row *want)
{
	fprintf(stderr,
		"  mismatch fde %#llx..%#llx at %#llx (readelf cfa=%s rbp=%s rsp=%s ra=%s): got "
		"kind %u cfa_off %u rbp %d, want kind %u cfa_off %u rbp %d\n",
		(unsigned long long)f->start, (unsigned long long)f->end, (unsigned long long)a,
		rr->cfa, rr->rbp, rr->rsp, rr->ra, got ? got->kind : 99, got ? got->cfa_off : 0,
		got ? got->rbp : 0, want->kind, want->cfa_off, want->rbp);
}

/*
 * Compares every address of every FDE readelf shows in ref_file against the table built from
 * file (and debug_path).
 */
static void compare(const char *file, const char *debug_path, const char *ref_file,
		    const char *section, uint32_t want_source, struct cmp_result *res)
{
	struct range plt[16];
	size_t nplt, i, j;
	struct cfi_table *t = NULL;
	const struct unwind_row *rows;
	const struct cfi_stats *st;
	uint64_t base, a;
	uint32_t n;
	struct ref r;

	memset(res, 0, sizeof(*res));
	ref_load(ref_file, section, &r);
	assert_true(r.nfdes > 0);
	assert_int_equal(r.unparsed, 0);
	nplt = plt_ranges(file, plt, 16);
	assert_int_equal(cfi__build(file, debug_path, &t), 0);
	rows = cfi_table__rows(t);
	n = cfi_table__count(t);
	base = cfi_table__base(t);
	st = cfi_table__stats(t);
	assert_int_equal(st->source, want_source);
	assert_int_equal(cfi_table__bytes(t), (size_t)n * 8);
	for (i = 1; i < n; i++)
		assert_true(rows[i - 1].pc < rows[i].pc);

	for (i = 0; i < r.nfdes; i++) {
		const struct ref_fde *f = &r.fdes[i];
		const struct ref_cie *c = ref_cie(&r, f->cie);
		bool signal;

		if (f->end <= f->start)
			continue;
		assert_non_null(c);
		signal = strchr(c->aug, 'S') != NULL;
		res->fdes++;
		for (a = f->start; a < f->end; a++) {
			const struct ref_row *rr = NULL;
			struct unwind_row want;
			const struct unwind_row *got;
			int idx, alt;

			/* readelf's row in effect at a: the last with loc <= a, else the CIE's */
			for (j = f->first; j < f->first + f->count && r.rows[j].loc <= a; j++)
				rr = &r.rows[j];
			if (!rr) {
				assert_true(c->has_row);
				rr = &c->init;
			}
			want = expect_row(rr, signal, in_ranges(plt, nplt, a), &alt);
			idx = unwind__find_row(rows, n, a - base, UNWIND_MAX_ROWS);
			got = idx >= 0 ? &rows[idx] : NULL;
			res->addrs++;
			/* PLT: readelf cannot show the expression, its layout is checked below */
			if (got && want.kind == UNWIND_KIND_PLT)
				want.cfa_off = got->cfa_off;
			if (!got || got->kind != want.kind || got->cfa_off != want.cfa_off ||
			    (got->rbp != want.rbp && got->rbp != alt)) {
				if (res->mismatches++ < 10)
					report(f, a, rr, got, &want);
				continue;
			}
			if (want.kind == UNWIND_KIND_PLT) {
				assert_int_equal(got->cfa_off & 0xff, 8);
				assert_true((got->cfa_off >> 8) == 11 || (got->cfa_off >> 8) == 10);
				res->plt++;
			}
			res->signal += want.kind == UNWIND_KIND_SIGNAL;
			res->end += want.kind == UNWIND_KIND_END;
			res->unsupported += want.kind == UNWIND_KIND_UNSUPPORTED;
		}
	}
	/* Past each FDE that no other FDE continues: the frame pointer fallback, or no row. */
	for (i = 0; i < r.nfdes; i++) {
		const struct unwind_row *got;
		bool covered = false;
		int idx;

		for (j = 0; j < r.nfdes && !covered; j++)
			covered = r.fdes[j].start <= r.fdes[i].end && r.fdes[i].end < r.fdes[j].end;
		if (covered || r.fdes[i].end <= r.fdes[i].start)
			continue;
		idx = unwind__find_row(rows, n, r.fdes[i].end - base, UNWIND_MAX_ROWS);
		got = idx >= 0 ? &rows[idx] : NULL;
		if (got && got->kind != UNWIND_KIND_FP && res->mismatches++ < 10)
			fprintf(stderr, "  no gap marker at %#llx\n",
				(unsigned long long)r.fdes[i].end);
	}
	printf("  %s: %zu FDEs (readelf), %llu addresses, %u rows, %zu bytes, %llu plt, %llu "
	       "signal, %llu end, %llu unsupported addresses; stats fdes %llu bad_cie %llu bad_fde "
	       "%llu overlap %llu outside %llu unsupported_expr %llu\n",
	       file, r.nfdes, (unsigned long long)res->addrs, n, cfi_table__bytes(t),
	       (unsigned long long)res->plt, (unsigned long long)res->signal,
	       (unsigned long long)res->end, (unsigned long long)res->unsupported,
	       (unsigned long long)st->fdes, (unsigned long long)st->skipped_bad_cie,
	       (unsigned long long)st->skipped_bad_fde, (unsigned long long)st->skipped_overlap,
	       (unsigned long long)st->skipped_outside_text,
	       (unsigned long long)st->unsupported_expr);
	assert_int_equal(res->mismatches, 0);
	assert_int_equal(st->skipped_bad_cie + st->skipped_bad_fde + st->skipped_overlap, 0);
	assert_int_equal(st->truncated, 0);
	cfi_table__free(t);
	ref_free(&r);
}

static void compare_prog(const char *name, const char *section, uint32_t source,
			 struct cmp_result *res)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", CFI_PROGS_DIR, name);
	compare(path, NULL, path, section, source, res);
}

/* --- tests against readelf ------------------------------------------------------------- */

static void test_prog_O0(void **state)
{
	struct cmp_result res;

	compare_prog("cprog-O0", ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.end > 0); /* _start: DW_CFA_undefined rip */
}

static void test_prog_O2_nofp(void **state)
{
	struct cmp_result res;

	compare_prog("cprog-O2-nofp", ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.plt > 0);
}

static void test_prog_nopie(void **state)
{
	struct cmp_result res;

	compare_prog("cprog-nopie", ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.plt > 0);
}

static void test_prog_static_pie(void **state)
{
	struct cmp_result res;

	compare_prog("cprog-static-pie", ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.end > 0);
	/* the static libc: __restore_rt, and setcontext's CFA based on RDI */
	assert_true(res.signal > 0);
	assert_true(res.unsupported > 0);
}

static void test_cxxprog(void **state)
{
	struct cmp_result res;

	compare_prog("cxxprog", ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
}

static void test_shared_lib(void **state)
{
	struct cmp_result res;

	compare_prog("libcfi.so", ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.plt > 0);
}

static void test_debug_frame_only(void **state)
{
	struct cmp_result res;

	compare_prog("cprog-debugframe", ".debug_frame", CFI_SOURCE_DEBUG_FRAME, &res);
}

/*
 * .eh_frame and .debug_frame in one file, for different code: both read (before, .eh_frame
 * alone: every function of the program had no CFI, as the Go functions of a cgo program).
 */
static void test_eh_frame_and_debug_frame(void **state)
{
	struct cfi_table *t = NULL;
	struct cmp_result res;

	compare_prog("cprog-mixed", ".debug_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.fdes > 0);
	compare_prog("cprog-mixed", ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.fdes > 0);
	assert_int_equal(cfi__build(CFI_PROGS_DIR "/cprog-mixed", NULL, &t), 0);
	assert_true(cfi_table__stats(t)->debug_frame_too);
	cfi_table__free(t);
	/* One section alone: nothing else is said to be read. */
	assert_int_equal(cfi__build(CFI_PROGS_DIR "/cprog-O0", NULL, &t), 0);
	assert_false(cfi_table__stats(t)->debug_frame_too);
	cfi_table__free(t);
}

static void test_separate_debug_file(void **state)
{
	struct cfi_table *t = NULL;
	struct cmp_result res;

	/* without the debug file there is no CFI at all */
	assert_int_equal(cfi__build(CFI_PROGS_DIR "/cprog-split", NULL, &t), -ENODATA);
	assert_null(t);
	compare(CFI_PROGS_DIR "/cprog-split", CFI_PROGS_DIR "/cprog-split.debug",
		CFI_PROGS_DIR "/cprog-split.debug", ".debug_frame", CFI_SOURCE_DEBUG_FILE, &res);
}

static void test_libc(void **state)
{
	struct cmp_result res;

	compare(LIBC, NULL, LIBC, ".eh_frame", CFI_SOURCE_EH_FRAME, &res);
	assert_true(res.fdes > 1000);
	assert_true(res.signal > 0); /* __restore_rt */
	assert_true(res.plt > 0);
}

/* --- API, lookup, broken input -------------------------------------------------------- */

static void test_build_fd(void **state)
{
	struct cfi_table *a = NULL, *b = NULL;
	const char *path = CFI_PROGS_DIR "/cxxprog";
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(cfi__build_fd(fd, NULL, &a), 0);
	assert_int_equal(cfi__build(path, NULL, &b), 0);
	assert_int_equal(cfi_table__count(a), cfi_table__count(b));
	assert_memory_equal(cfi_table__rows(a), cfi_table__rows(b), cfi_table__bytes(a));
	/* the fd is still the caller's */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	close(fd);
	assert_null(cfi_table__lookup(a, 0));
	cfi_table__free(a);
	cfi_table__free(b);
	cfi_table__free(NULL);
}

static int linear_find(const struct unwind_row *rows, uint32_t n, uint64_t pc)
{
	int i, r = -1;

	for (i = 0; i < (int)n; i++)
		if (rows[i].pc <= pc)
			r = i;
	return r;
}

static void test_find_row(void **state)
{
	struct unwind_row rows[300];
	uint32_t n, i;
	uint64_t pc;

	assert_int_equal(unwind__find_row(rows, 0, 5, UNWIND_MAX_ROWS), -1);
	rows[0] = (struct unwind_row){.pc = 10, .kind = UNWIND_KIND_CFA_RSP};
	assert_int_equal(unwind__find_row(rows, 1, 9, UNWIND_MAX_ROWS), -1);
	assert_int_equal(unwind__find_row(rows, 1, 10, UNWIND_MAX_ROWS), 0);
	assert_int_equal(unwind__find_row(rows, 1, 1ULL << 40, UNWIND_MAX_ROWS), 0);
	/* n is clamped to the capacity; a capacity that is not a power of two is refused */
	rows[1] = (struct unwind_row){.pc = 20, .kind = UNWIND_KIND_FP};
	assert_int_equal(unwind__find_row(rows, UNWIND_MAX_ROWS + 1000, 5, 2), -1);
	assert_int_equal(unwind__find_row(rows, 5, 25, 2), 1);
	assert_int_equal(unwind__find_row(rows, 5, 25, 1), 0);
	assert_int_equal(unwind__find_row(rows, 2, 25, 3), -1);
	assert_int_equal(unwind__find_row(rows, 2, 25, 0), -1);
	assert_int_equal(unwind__find_row(rows, 2, 25, UNWIND_MAX_ROWS * 2), -1);
	srand(42);
	for (n = 1; n <= 300; n++) {
		uint32_t at = 0;

		for (i = 0; i < n; i++) {
			at += 1 + (uint32_t)(rand() % 20);
			rows[i].pc = at;
		}
		for (pc = 0; pc <= at + 2; pc++)
			assert_int_equal(unwind__find_row(rows, n, pc, UNWIND_MAX_ROWS),
					 linear_find(rows, n, pc));
	}
	/* the largest pc values */
	rows[0].pc = 0;
	rows[1].pc = UINT32_MAX;
	assert_int_equal(unwind__find_row(rows, 2, UINT32_MAX - 1, UNWIND_MAX_ROWS), 0);
	assert_int_equal(unwind__find_row(rows, 2, UINT32_MAX, UNWIND_MAX_ROWS), 1);
	assert_int_equal(unwind__find_row(rows, 2, 1ULL << 40, UNWIND_MAX_ROWS), 1);
}

static void test_bad_paths(void **state)
{
	struct cfi_table *t = (struct cfi_table *)1;

	assert_int_equal(cfi__build("/nonexistent/file", NULL, &t), -ENOENT);
	assert_null(t);
	assert_int_equal(
	    cfi__build(CFI_PROGS_DIR "/../../../test/unwind/cfi-progs/cprog.c", NULL, &t),
	    -ENOEXEC);
	assert_int_equal(cfi__build("/dev/null", NULL, &t), -ENOEXEC);
	assert_int_equal(cfi__build(CFI_PROGS_DIR "/cprog-split", "/nonexistent.debug", &t),
			 -ENOENT);
}

static void read_file(const char *path, uint8_t **buf, size_t *size)
{
	struct stat sb;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	*size = (size_t)sb.st_size;
	*buf = malloc(*size);
	assert_non_null(*buf);
	assert_int_equal(pread(fd, *buf, *size, 0), (ssize_t)*size);
	close(fd);
}

static void write_file(const char *path, const uint8_t *buf, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
}

/* File offset and size of a section. */
static void section_of(const char *path, const char *name, size_t *off, size_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	Elf *elf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	*size = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		gelf_getshdr(scn, &sh);
		if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
			*off = sh.sh_offset;
			*size = sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(*size > 0);
}

static void check_sane(const struct cfi_table *t)
{
	const struct unwind_row *rows = cfi_table__rows(t);
	uint32_t i, n = cfi_table__count(t);

	for (i = 0; i < n; i++) {
		assert_true(rows[i].kind < UNWIND_KIND_MAX);
		if (i)
			assert_true(rows[i - 1].pc < rows[i].pc);
	}
}

/* Truncated copies: cut anywhere, the build fails cleanly or yields a sane table. */
static void test_truncated_files(void **state)
{
	const char *src = CFI_PROGS_DIR "/cprog-O2-nofp", *tmp = CFI_PROGS_DIR "/tmp-trunc";
	size_t size, ehoff, ehsize, cuts[12], i;
	uint8_t *buf;

	read_file(src, &buf, &size);
	section_of(src, ".eh_frame", &ehoff, &ehsize);
	cuts[0] = 0;
	cuts[1] = 10;
	cuts[2] = 64;
	cuts[3] = size / 4;
	cuts[4] = size / 2;
	cuts[5] = ehoff;
	cuts[6] = ehoff + ehsize / 3;
	cuts[7] = ehoff + ehsize / 2;
	cuts[8] = ehoff + ehsize - 1;
	cuts[9] = size - 1;
	cuts[10] = size - 100;
	cuts[11] = size * 3 / 4;
	for (i = 0; i < 12; i++) {
		struct cfi_table *t = NULL;
		int err;

		write_file(tmp, buf, cuts[i]);
		err = cfi__build(tmp, NULL, &t);
		assert_true(err == 0 || err == -ENOEXEC || err == -EBADMSG || err == -ENODATA);
		if (t)
			check_sane(t);
		cfi_table__free(t);
	}
	unlink(tmp);
	free(buf);
}

/*
 * An entry whose length runs past the section: the entries before it are kept, the rest is
 * counted as truncated.
 */
static void test_truncated_entry(void **state)
{
	const char *src = CFI_PROGS_DIR "/cprog-O2-nofp", *tmp = CFI_PROGS_DIR "/tmp-entry";
	struct cfi_table *orig = NULL, *t = NULL;
	size_t size, ehoff, ehsize, off = 0, k;
	uint8_t *buf;
	uint32_t len;

	read_file(src, &buf, &size);
	section_of(src, ".eh_frame", &ehoff, &ehsize);
	/* walk to the 5th entry */
	for (k = 0; k < 5; k++) {
		memcpy(&len, buf + ehoff + off, 4);
		off += 4 + len;
	}
	len = 0x7ffffff0;
	memcpy(buf + ehoff + off, &len, 4);
	write_file(tmp, buf, size);
	assert_int_equal(cfi__build(src, NULL, &orig), 0);
	assert_int_equal(cfi__build(tmp, NULL, &t), 0);
	assert_int_equal(cfi_table__stats(t)->truncated, 1);
	assert_true(cfi_table__stats(t)->fdes > 0);
	assert_true(cfi_table__stats(t)->fdes < cfi_table__stats(orig)->fdes);
	check_sane(t);
	cfi_table__free(t);
	cfi_table__free(orig);
	unlink(tmp);
	free(buf);
}

/* Random byte flips in .eh_frame (fixed seed): never a crash, always a sane table, and counts. */
static void test_flipped_bytes(void **state)
{
	const char *srcs[] = {CFI_PROGS_DIR "/cprog-O2-nofp", CFI_PROGS_DIR "/cxxprog"};
	const char *tmp = CFI_PROGS_DIR "/tmp-flip";
	uint64_t skipped = 0, runs = 0;
	size_t s;

	srand(1234);
	for (s = 0; s < 2; s++) {
		size_t size, ehoff, ehsize;
		uint8_t *buf, *copy;
		int iter;

		read_file(srcs[s], &buf, &size);
		section_of(srcs[s], ".eh_frame", &ehoff, &ehsize);
		copy = malloc(size);
		assert_non_null(copy);
		for (iter = 0; iter < 150; iter++) {
			struct cfi_table *t = NULL;
			const struct cfi_stats *st;
			int flips = 1 + rand() % 8, f;

			memcpy(copy, buf, size);
			for (f = 0; f < flips; f++)
				copy[ehoff + (size_t)rand() % ehsize] ^=
				    (uint8_t)(1 + rand() % 255);
			write_file(tmp, copy, size);
			assert_int_equal(cfi__build(tmp, NULL, &t), 0);
			check_sane(t);
			st = cfi_table__stats(t);
			skipped += st->skipped_bad_cie + st->skipped_bad_fde + st->truncated +
				   st->skipped_outside_text + st->skipped_overlap +
				   st->skipped_empty;
			runs++;
			cfi_table__free(t);
		}
		free(copy);
		free(buf);
	}
	unlink(tmp);
	printf("  %llu corrupt copies, %llu entries skipped in total\n", (unsigned long long)runs,
	       (unsigned long long)skipped);
	assert_true(skipped > runs / 4);
}

/* --- .eh_frame sections in memory (JIT code: jitdump unwinding records) --------------------- */

/* A sink keeping the rows and the base. */
struct mem_sink {
	struct unwind_row rows[64];
	uint32_t n;
	uint64_t base;
	struct cfi_stats st;
};

static int mem_begin(void *ctx, uint32_t count, uint64_t base, const struct cfi_stats *st)
{
	struct mem_sink *m = ctx;

	if (count > 64)
		return -E2BIG;
	m->base = base;
	m->st = *st;
	return 0;
}

static int mem_write(void *ctx, const struct unwind_row *rows, uint32_t n)
{
	struct mem_sink *m = ctx;

	memcpy(m->rows + m->n, rows, n * sizeof(*rows));
	m->n += n;
	return 0;
}

/*
 * One CIE (zR, FDE pointers pcrel sdata4, CFA rsp+8, RA at cfa-8) and one FDE for 7 bytes of
 * code: push %rbp (CFA rsp+16, RBP at cfa-16) at +1, pop %rbp at +6; pc_begin at byte 32 is
 * filled in by jit_eh_frame().
 */
static const uint8_t jit_eh_template[56] = {
    20, 0,    0, 0,    0,    0,	 0,    0, 1,	'z',  'R', 0,	 1, 0x78, 16, 1, 0x1b, 0x0c, 7,
    8,	0x90, 1, 0,    0,    24, 0,    0, 0,	28,   0,   0,	 0, 0,	  0,  0, 0,    7,    0,
    0,	0,    0, 0x41, 0x0e, 16, 0x86, 2, 0x45, 0x0e, 8,   0xc6, 0, 0,	  0,  0, 0,    0,
};

/* The template for code at @code, the section taken to lie at @eh. */
static void jit_eh_frame(uint8_t *out, uint64_t code, uint64_t eh)
{
	int32_t rel = (int32_t)(code - (eh + 32));

	memcpy(out, jit_eh_template, sizeof(jit_eh_template));
	memcpy(out + 32, &rel, 4);
}

static void test_eh_frames_in_memory(void **state)
{
	const uint64_t code = 0x7f1234560040, other = 0x7f1234570000;
	uint8_t a[56], b[56], c[56];
	struct cfi_eh_frame v[3] = {
	    {a, sizeof(a), code + 8, code, code + 7},
	    {b, sizeof(b), other + 8, other, other + 7},
	    /* Its FDE describes code outside its own: dropped. */
	    {c, sizeof(c), other + 0x1008, other + 0x1000, other + 0x1007},
	};
	struct mem_sink m = {0};
	struct cfi_sink sink = {mem_begin, mem_write, &m};

	(void)state;
	jit_eh_frame(a, code, code + 8);
	jit_eh_frame(b, other, other + 8);
	jit_eh_frame(c, other + 0x2000, other + 0x1008);
	assert_int_equal(cfi__build_eh_frames(v, 3, &sink), 0);
	assert_int_equal(m.st.fdes, 2);
	assert_int_equal(m.st.skipped_outside_text, 1);
	/* Above 4 GiB: rows are relative to the first code's page. */
	assert_int_equal(m.base, 0x7f1234560000);
	assert_int_equal(m.n, 8);
	for (int k = 0; k < 2; k++) {
		const struct unwind_row *r = &m.rows[4 * k];
		uint32_t at = (uint32_t)((k ? other : code) - m.base);

		assert_int_equal(r[0].pc, at);
		assert_int_equal(r[0].kind, UNWIND_KIND_CFA_RSP);
		assert_int_equal(r[0].cfa_off, 8);
		assert_int_equal(r[1].pc, at + 1);
		assert_int_equal(r[1].cfa_off, 16);
		assert_int_equal(r[1].rbp, -2);
		assert_int_equal(r[2].pc, at + 6);
		assert_int_equal(r[2].cfa_off, 8);
		assert_int_equal(r[2].rbp, 0);
		assert_int_equal(r[3].pc, at + 7);
		assert_int_equal(r[3].kind, UNWIND_KIND_FP); /* no CFI after the code */
	}
}

static void test_eh_frames_garbage(void **state)
{
	unsigned seed = 11;
	uint8_t buf[56];
	struct cfi_eh_frame v = {buf, sizeof(buf), 0x7f0000000008, 0x7f0000000000, 0x7f0000000007};

	(void)state;
	/* Truncated anywhere, then bytes flipped: rows or skips, never a crash. */
	for (size_t len = 0; len < sizeof(buf); len++) {
		struct mem_sink m = {0};
		struct cfi_sink sink = {mem_begin, mem_write, &m};

		jit_eh_frame(buf, 0x7f0000000000, 0x7f0000000008);
		v.size = len;
		cfi__build_eh_frames(&v, 1, &sink);
		assert_true(m.st.fdes == 0 || len >= 52);
	}
	v.size = sizeof(buf);
	for (int round = 0; round < 2000; round++) {
		struct mem_sink m = {0};
		struct cfi_sink sink = {mem_begin, mem_write, &m};

		jit_eh_frame(buf, 0x7f0000000000, 0x7f0000000008);
		for (int k = 0; k < 3; k++)
			buf[rand_r(&seed) % sizeof(buf)] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		cfi__build_eh_frames(&v, 1, &sink);
		assert_true(m.n <= 64);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_find_row),
	    cmocka_unit_test(test_prog_O0),
	    cmocka_unit_test(test_prog_O2_nofp),
	    cmocka_unit_test(test_prog_nopie),
	    cmocka_unit_test(test_prog_static_pie),
	    cmocka_unit_test(test_cxxprog),
	    cmocka_unit_test(test_shared_lib),
	    cmocka_unit_test(test_debug_frame_only),
	    cmocka_unit_test(test_eh_frame_and_debug_frame),
	    cmocka_unit_test(test_separate_debug_file),
	    cmocka_unit_test(test_libc),
	    cmocka_unit_test(test_build_fd),
	    cmocka_unit_test(test_bad_paths),
	    cmocka_unit_test(test_truncated_files),
	    cmocka_unit_test(test_truncated_entry),
	    cmocka_unit_test(test_flipped_bytes),
	    cmocka_unit_test(test_eh_frames_in_memory),
	    cmocka_unit_test(test_eh_frames_garbage),
	};

	return cmocka_run_group_tests_name("cfi", tests, NULL, NULL);
}
