/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CFI unwind tables: reads the call frame information of one x86-64 ELF file (.eh_frame, else
 * .debug_frame, else .debug_frame of a separate debug file) and turns it into the sorted,
 * deduplicated struct unwind_row array of bpf/unwind.h that the BPF walker searches.
 *
 * Formats: DWARF 5 section 6.4 (call frame information), the LSB 5.0 .eh_frame description
 * (augmentations z, R, P, L, S; DW_EH_PE_* pointer encodings) and the x86-64 psABI section 3.6.
 * Corrupt, truncated or unsupported entries are skipped and counted in struct cfi_stats; an FDE
 * that cannot be interpreted exactly is dropped whole rather than turned into a guessed row.
 *
 * Ownership: cfi__build*() return a table the caller owns and releases with cfi_table__free().
 * A table is immutable once built, so it may be shared (read-only) between threads.
 */
#ifndef SPANPROF_CFI_H
#define SPANPROF_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

/* Where the rows came from. */
enum cfi_source {
	CFI_SOURCE_EH_FRAME = 1,
	CFI_SOURCE_DEBUG_FRAME = 2, /* .debug_frame of the file itself */
	CFI_SOURCE_DEBUG_FILE = 3,  /* .debug_frame of the separate debug file */
};

struct cfi_stats {
	uint32_t source;	  /* enum cfi_source */
	uint64_t cies;		  /* CIEs parsed successfully (counted once per use) */
	uint64_t fdes;		  /* FDEs turned into rows */
	uint64_t rows;		  /* rows in the final table */
	uint64_t terminators;	  /* zero-length terminators seen */
	uint64_t skipped_bad_cie; /* FDEs dropped because their CIE was corrupt or unsupported */
	uint64_t skipped_bad_fde; /* FDEs dropped: corrupt, truncated, unknown opcode, bad state */
	uint64_t skipped_empty;	  /* FDEs with an empty address range */
	uint64_t skipped_outside_text; /* FDEs not inside one executable section */
	uint64_t skipped_overlap;      /* FDEs overlapping an earlier one */
	uint64_t truncated;	       /* section ended inside an entry, or reserved length: stop */
	uint64_t
	    unsupported_expr; /* DWARF expressions for the CFA, RBP, RSP or RA not recognized */
	uint64_t unsupported_rows; /* rows emitted as UNWIND_KIND_UNSUPPORTED */
	uint64_t plt_rows;	   /* rows using the PLT CFA expression */
	uint64_t signal_fdes;	   /* FDEs of signal trampolines (CIE augmentation 'S') */
	bool debug_frame_too;	   /* source .eh_frame, and the file's .debug_frame read as well */
};

struct cfi_table;

/*
 * Builds the table of the ELF file at path: from its .eh_frame and its .debug_frame (both when
 * it has both: a cgo program's Go functions are only in .debug_frame; an .eh_frame FDE wins
 * over a .debug_frame one for the same code). debug_path (may be NULL) names a separate debug
 * file whose .debug_frame is used when the file has neither .eh_frame nor .debug_frame.
 * On success *out owns a new table (possibly with zero rows when every FDE was skipped).
 * Only regular files are opened (a FIFO or a device named by @path or @debug_path is refused
 * unopened, regfile__open()).
 * Returns 0, or -ENOENT/-EACCES (open), -ENOEXEC (not a regular file, not a 64-bit x86-64 ELF
 * file, or unreadable section headers), -ENODATA (no CFI section), -EBADMSG (CFI section
 * unreadable), -E2BIG (more than UNWIND_MAX_ROWS rows), -ENOMEM.
 */
int cfi__build(const char *path, const char *debug_path, struct cfi_table **out);

/* Same, for a file already open (fd stays the caller's; it is read with pread only). */
int cfi__build_fd(int fd, const char *debug_path, struct cfi_table **out);

/*
 * Where cfi__build_fd_stream() puts a table. begin() is called once, with the final row count
 * (0 to UNWIND_MAX_ROWS), the base (cfi_table__base()) and the final stats; then, if count > 0,
 * write() receives the rows sorted by pc, in pieces (at most 4096 rows each), count in total.
 * A non-zero (negative errno) return from either stops the build and is returned.
 */
struct cfi_sink {
	int (*begin)(void *ctx, uint32_t count, uint64_t base, const struct cfi_stats *st);
	int (*write)(void *ctx, const struct unwind_row *rows, uint32_t n);
	void *ctx;
};

/*
 * Same as cfi__build_fd(), without a table in memory: the rows go to @sink as they are
 * assembled. Memory: the section being parsed, then the raw rows (8 bytes each) and FDEs
 * (24 bytes each) until it returns. Same errors as cfi__build(), plus the sink's.
 */
int cfi__build_fd_stream(int fd, const char *debug_path, const struct cfi_sink *sink);

/*
 * One .eh_frame held in memory, as a JIT hands it over (jitdump unwinding records,
 * runtime/jit/jitdump.h): @buf, @size bytes, taken to lie at address @addr (the base of
 * DW_EH_PE_pcrel), describing the code at [@code_start, @code_end) only.
 */
struct cfi_eh_frame {
	const void *buf;
	size_t size;
	uint64_t addr;
	uint64_t code_start, code_end;
};

/*
 * The table of @n such sections as one (a JIT's code objects, each with its own .eh_frame): the
 * rows go to @sink as for cfi__build_fd_stream(), relative to the base begin() gives (the first
 * FDE's page when the code lies above 4 GiB). FDEs outside their own section's code range are
 * dropped (skipped_outside_text), as are FDEs more than 4 GiB above the first one. Errors: -E2BIG
 * (more than UNWIND_MAX_ROWS rows), -ENOMEM, the sink's; corrupt sections count as in cfi_stats.
 */
int cfi__build_eh_frames(const struct cfi_eh_frame *v, size_t n, const struct cfi_sink *sink);

/* Rows sorted by pc, cfi_table__count() of them; valid until cfi_table__free(). */
const struct unwind_row *cfi_table__rows(const struct cfi_table *t);
uint32_t cfi_table__count(const struct cfi_table *t);
/* Bytes of rows (what a BPF map holding them needs). */
size_t cfi_table__bytes(const struct cfi_table *t);
/* ELF virtual address that row pcs are relative to (0 unless the file's code lies above 4 GiB). */
uint64_t cfi_table__base(const struct cfi_table *t);
const struct cfi_stats *cfi_table__stats(const struct cfi_table *t);

/* Row covering the ELF virtual address vaddr, or NULL when no row does (same as the BPF walker). */
const struct unwind_row *cfi_table__lookup(const struct cfi_table *t, uint64_t vaddr);

/* Frees the table; NULL is a no-op. */
void cfi_table__free(struct cfi_table *t);

#endif /* SPANPROF_CFI_H */
