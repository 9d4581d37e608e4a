// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: ELF bytes through the CFI table builder (exporter/unwind/cfi.c) and the TLS access
 * classifier (exporter/spans/tlsctx.c). The input is one file, or a file and its separate debug
 * file (split at the second "\177ELF", see fuzz_elf_split()). The builder reads the first CFI
 * source it finds, so the file is read three ways:
 *  1. as it is (.eh_frame, else .debug_frame, else the debug file's), with cfi__build_fd();
 *  2. with every ".eh_frame" name renamed, so a file with both sections is read through its
 *     .debug_frame, with cfi__build_fd_stream() and a checking sink;
 *  3. with ".debug_frame" renamed as well, so only the debug file (without one: the original
 *     bytes) is left to read (CFI_SOURCE_DEBUG_FILE).
 * An input that does not start with "\177ELF" is a bare CFI section instead (wrap_section()): the
 * fuzzer then mutates CIEs and FDEs directly rather than the ELF around them.
 * Every table must keep what cfi.h and bpf/unwind.h promise: at most UNWIND_MAX_ROWS rows, pcs
 * strictly increasing, known kinds, and each row found by a lookup of its own pc.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>

#include "unwind/cfi.h"
#include "fuzz.h"
#include "spans/tlsctx.h"

/* Rows checked by lookup per table: enough to cover every seed, bounded for speed. */
#define LOOKUP_ROWS 4096

static int main_fd = -1, debug_fd = -1;
static char debug_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	main_fd = fuzz_memfd("fuzz-cfi");
	debug_fd = fuzz_memfd("fuzz-cfi-debug");
	snprintf(debug_path, sizeof(debug_path), "/proc/self/fd/%d", debug_fd);
	if (elf_version(EV_CURRENT) == EV_NONE)
		abort();
	return 0;
}

static void check_rows(const struct unwind_row *rows, uint32_t n)
{
	uint32_t i;

	FUZZ_CHECK(n <= UNWIND_MAX_ROWS);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(rows[i].kind < UNWIND_KIND_MAX);
		if (i)
			FUZZ_CHECK(rows[i].pc > rows[i - 1].pc);
	}
}

static void check_table(const struct cfi_table *t)
{
	const struct unwind_row *rows = cfi_table__rows(t);
	uint32_t n = cfi_table__count(t), i;
	uint64_t base = cfi_table__base(t);

	check_rows(rows, n);
	FUZZ_CHECK(cfi_table__bytes(t) == (size_t)n * sizeof(*rows));
	FUZZ_CHECK(cfi_table__stats(t)->rows == n);
	for (i = 0; i < n && i < LOOKUP_ROWS; i++) {
		FUZZ_CHECK(cfi_table__lookup(t, base + rows[i].pc) == &rows[i]);
		if (i && rows[i].pc - 1 > rows[i - 1].pc)
			FUZZ_CHECK(cfi_table__lookup(t, base + rows[i].pc - 1) == &rows[i - 1]);
	}
	if (n && rows[0].pc > 0)
		FUZZ_CHECK(cfi_table__lookup(t, base + rows[0].pc - 1) == NULL);
	if (base)
		FUZZ_CHECK(cfi_table__lookup(t, base - 1) == NULL);
}

/* The streaming sink: begin() once, then exactly the announced rows, in order. */
struct check_sink {
	bool begun;
	uint32_t count, seen;
	struct unwind_row last;
};

static int sink_begin(void *ctx, uint32_t count, uint64_t base, const struct cfi_stats *st)
{
	struct check_sink *s = ctx;

	FUZZ_CHECK(!s->begun);
	FUZZ_CHECK(count <= UNWIND_MAX_ROWS && st->rows == count);
	s->begun = true;
	s->count = count;
	return 0;
}

static int sink_write(void *ctx, const struct unwind_row *rows, uint32_t n)
{
	struct check_sink *s = ctx;

	FUZZ_CHECK(s->begun && n > 0 && n <= 4096 && n <= s->count - s->seen);
	if (s->seen)
		FUZZ_CHECK(rows[0].pc > s->last.pc);
	check_rows(rows, n);
	s->seen += n;
	s->last = rows[n - 1];
	return 0;
}

static void build_stream(int fd, const char *dbg)
{
	struct check_sink s = {0};
	struct cfi_sink sink = {.begin = sink_begin, .write = sink_write, .ctx = &s};
	int err = cfi__build_fd_stream(fd, dbg, &sink);

	if (!err)
		FUZZ_CHECK(s.begun && s.seen == s.count);
}

static void build_table(int fd, const char *dbg)
{
	struct cfi_table *t = NULL;
	int err = cfi__build_fd(fd, dbg, &t);

	FUZZ_CHECK(err <= 0);
	FUZZ_CHECK(!err == !!t);
	if (t)
		check_table(t);
	cfi_table__free(t);
}

/* Renames every @name in the bytes (its second byte becomes 'X'); false when there was none. */
static bool rename_section(uint8_t *buf, size_t size, const char *name)
{
	size_t len = strlen(name);
	uint8_t *p = buf, *hit;
	bool any = false;

	while ((hit = memmem(p, size - (size_t)(p - buf), name, len))) {
		hit[1] = 'X';
		p = hit + len;
		any = true;
	}
	return any;
}

static void classify(uint8_t *copy, size_t size)
{
	struct tlsctx_elf_info info;
	Elf *elf = elf_memory((char *)copy, size);
	int err, i;

	for (i = 0; i < 2; i++) {
		err = tlsctx__classify(elf, TLSCTX_SYMBOL, i, &info);
		FUZZ_CHECK(err <= 0);
		if (!err)
			FUZZ_CHECK(info.access != TLSCTX_ACCESS_NONE);
	}
	/* An empty name meets the unnamed symbols (index 0, sections): still no crash. */
	err = tlsctx__classify(elf, "", true, &info);
	FUZZ_CHECK(err <= 0);
	elf_end(elf);
}

/*
 * Wraps a bare CFI section into a minimal x86-64 ELF file. Input: 1 byte (bit 0 set:
 * .debug_frame, else .eh_frame), the section's address (8 bytes, little endian: pc-relative
 * pointers depend on it), then the section. The file has the section, an executable NOBITS
 * .text from 0x40 (code never starts inside the ELF header; not 0, which means "no base" to
 * DW_EH_PE_textrel) to 2^47, so every FDE lies inside text, a NOBITS .got (DW_EH_PE_datarel
 * base) and .shstrtab. Returns a malloc()ed file and its size in *@len, or NULL.
 */
static uint8_t *wrap_section(const uint8_t *data, size_t size, size_t *len)
{
	static const char names[] = "\0.text\0.got\0.eh_frame\0.debug_frame\0.shstrtab";
	enum { N_TEXT = 1, N_GOT = 7, N_EH = 12, N_DEBUG = 22, N_SHSTRTAB = 35 };
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	uint64_t addr = 0;
	size_t n, shoff, i;
	uint8_t *f;
	bool debug;

	if (size < 9)
		return NULL;
	debug = data[0] & 1;
	for (i = 0; i < 8; i++)
		addr |= (uint64_t)data[1 + i] << (8 * i);
	n = size - 9;
	shoff = (sizeof(*eh) + n + sizeof(names) + 7) & ~(size_t)7;
	*len = shoff + 5 * sizeof(*sh);
	f = calloc(1, *len);
	if (!f)
		return NULL;
	eh = (Elf64_Ehdr *)f;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_shoff = shoff;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 5;
	eh->e_shstrndx = 4;
	memcpy(f + sizeof(*eh), data + 9, n);
	memcpy(f + sizeof(*eh) + n, names, sizeof(names));
	sh = (Elf64_Shdr *)(f + shoff);
	sh[1] = (Elf64_Shdr){.sh_name = N_TEXT,
			     .sh_type = SHT_NOBITS,
			     .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			     .sh_addr = 0x40,
			     .sh_offset = sizeof(*eh),
			     .sh_size = (1ull << 47) - 0x40,
			     .sh_addralign = 16};
	sh[2] = (Elf64_Shdr){.sh_name = N_GOT,
			     .sh_type = SHT_NOBITS,
			     .sh_flags = SHF_ALLOC | SHF_WRITE,
			     .sh_addr = 1ull << 47,
			     .sh_offset = sizeof(*eh),
			     .sh_size = 0x1000,
			     .sh_addralign = 8};
	sh[3] = (Elf64_Shdr){.sh_name = debug ? N_DEBUG : N_EH,
			     .sh_type = SHT_PROGBITS,
			     .sh_flags = debug ? 0 : SHF_ALLOC,
			     .sh_addr = debug ? 0 : addr,
			     .sh_offset = sizeof(*eh),
			     .sh_size = n,
			     .sh_addralign = 1};
	sh[4] = (Elf64_Shdr){.sh_name = N_SHSTRTAB,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = sizeof(*eh) + n,
			     .sh_size = sizeof(names),
			     .sh_addralign = 1};
	return f;
}

/* A bare section: the wrapped file through both builders, no debug file. */
static void run_section(const uint8_t *data, size_t size)
{
	size_t len;
	uint8_t *f = wrap_section(data, size, &len);

	if (!f)
		return;
	fuzz_fd_set(main_fd, f, len);
	build_table(main_fd, NULL);
	build_stream(main_fd, NULL);
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = fuzz_elf_split(data, size);
	const char *dbg = n < size ? debug_path : NULL;
	uint8_t *copy;
	bool eh, df;

	if (main_fd < 0)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size < 4 || memcmp(data, ELFMAG, SELFMAG)) {
		run_section(data, size);
		return 0;
	}
	copy = malloc(n ? n : 1);
	if (!copy)
		return 0;

	fuzz_fd_set(main_fd, data, n);
	fuzz_fd_set(debug_fd, data + n, size - n);
	build_table(main_fd, dbg);

	memcpy(copy, data, n);
	eh = rename_section(copy, n, ".eh_frame");
	if (eh) {
		fuzz_fd_set(main_fd, copy, n);
		build_stream(main_fd, dbg);
	}
	df = rename_section(copy, n, ".debug_frame");
	if (eh || df) {
		fuzz_fd_set(main_fd, copy, n);
		if (!dbg)
			fuzz_fd_set(debug_fd, data, n);
		build_table(main_fd, debug_path);
	}

	/* elf_memory() may write to its image: a fresh copy, exactly the file's size. */
	memcpy(copy, data, n);
	classify(copy, n);
	free(copy);
	return 0;
}
