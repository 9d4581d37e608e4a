/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jitdump: a JIT's jitdump file (jit-PID.dump), read incrementally while the runtime appends
 * to it, and looked up by address.
 *
 * Format: tools/perf/Documentation/jitdump-specification.txt in the Linux tree (version 1).
 * A file header (magic 0x4A695444 "JiTD" in the writer's byte order, version, header size,
 * ELF machine, pid, timestamp, flags), then records, each a header (id, total size, timestamp)
 * and a body: JIT_CODE_LOAD (0: code address and size, a unique index, the NUL-terminated name,
 * then the code bytes), JIT_CODE_MOVE (1: code moved from one address to another),
 * JIT_CODE_DEBUG_INFO (2: address -> file:line rows of the next code load at that address;
 * a file name "\xff" means the previous row's), JIT_CODE_CLOSE (3: nothing follows),
 * JIT_CODE_UNWINDING_INFO (4: the .eh_frame of the next code load, kept with it: see
 * struct jitdump_unwind).
 * Written by node --perf-prof, Java agents, .NET (DOTNET_PerfMapEnabled=1), CPython
 * -X perf_jit. A file in the other byte order, of another version, or a record whose size
 * cannot be (smaller than its header) stops the reading of that file, counted.
 */
#ifndef SPANPROF_RUNTIME_JITDUMP_JITDUMP_H
#define SPANPROF_RUNTIME_JITDUMP_JITDUMP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "runtime/jit/jittab.h"

#define JITDUMP_MAGIC 0x4A695444u
#define JITDUMP_MAGIC_SWAPPED 0x4454694Au
#define JITDUMP_VERSION 1

enum jitdump_record_id {
	JIT_CODE_LOAD = 0,
	JIT_CODE_MOVE = 1,
	JIT_CODE_DEBUG_INFO = 2,
	JIT_CODE_CLOSE = 3,
	JIT_CODE_UNWINDING_INFO = 4,
};

struct jitdump;

/*
 * The call frame information of one code load, from the JIT_CODE_UNWINDING_INFO record before
 * it: unwinding_size, eh_frame_hdr_size, mapped_size (u64 each), then unwinding_size bytes, the
 * .eh_frame first and the .eh_frame_hdr (eh_frame_hdr_size bytes) last, as perf's
 * jit_add_eh_frame_info() (tools/perf/util/genelf.c) splits them. Its addresses
 * (DW_EH_PE_pcrel) are relative to where perf's jitted ELF file places the .eh_frame: right
 * after the code, 8-aligned (jit_write_elf(): ALIGN_8(text + code size)); that is, at
 * code_addr + ALIGN_8(code_size) in the process (V8 lays its unwinding info out that way after
 * the instructions). A code move moves the code and its .eh_frame alike.
 */
struct jitdump_unwind {
	uint64_t code_addr, code_size; /* the code load it describes (after moves) */
	uint64_t eh_frame_addr;	       /* where its pcrel addresses take the .eh_frame to be */
	uint32_t eh_frame_size;
	uint8_t *eh_frame; /* owned by the reader */
};

struct jitdump_stats {
	uint64_t loads, moves, debug_infos, unwinding_infos, closes;
	uint64_t unknown_records; /* ids this reader does not know: skipped */
	uint64_t bad_records;	  /* a known record too short for its fields, or a bad name */
	uint64_t moves_unknown;	  /* a move of code not held */
	uint64_t corrupt;	  /* the file stopped being read: bad header or record size */
	uint64_t corrupt_header;  /* ... of them, a bad header (magic, version, header size) */
	uint64_t resets; /* the file was replaced or truncated: everything read forgotten */
	uint64_t bytes;	 /* bytes of records consumed */
	/* JIT_CODE_UNWINDING_INFO records (unwinding_infos counts them all) by outcome: */
	uint64_t unwind_used;	/* attached to the code load that followed */
	uint64_t unwind_bad;	/* sizes that do not fit the record */
	uint64_t unwind_empty;	/* an .eh_frame_hdr only (V8's for code without CFI) */
	uint64_t unwind_unused; /* no code load followed (another record, close, reset) */
	uint64_t unwind_full;	/* over the reader's cap of unwinding bytes */
	uint64_t
	    unwind_dropped; /* attached ones dropped since: their code replaced or moved over */
};

/* Bytes of .eh_frame data kept per file (more records are skipped, unwind_full). */
#define JITDUMP_MAX_UNWIND_BYTES (16u << 20)

/*
 * An empty reader holding at most @max_entries ranges and @max_bytes of names and line rows
 * (jittab.h), and at most JITDUMP_MAX_UNWIND_BYTES of .eh_frame data, reading at most
 * @max_file_bytes of the file. NULL + errno.
 */
struct jitdump *jitdump__new(uint32_t max_entries, uint64_t max_bytes, uint64_t max_file_bytes);
/* NULL is a no-op. */
void jitdump__free(struct jitdump *d);

/*
 * Reads the records the file open on @fd (whose fstat(2) is @st) holds beyond what earlier
 * calls read: complete records only (one still being written is read next time). Another file
 * than last time (device, inode), a shorter one, or one whose header changed (a writer that
 * truncated it and started again: its own timestamp) starts over. 0; -EBADMSG (the file is not a
 * jitdump this reader can follow, or became corrupt: what was read before stays); -E2BIG once
 * a cap is reached (no lookup is answered then, as jittab.h says); -EIO; -ENOMEM.
 */
int jitdump__update(struct jitdump *d, int fd, const struct stat *st);

/* The code holding @addr: 0 and *@out (file:line from debug info when given), -ENOENT, -E2BIG. */
int jitdump__lookup(const struct jitdump *d, uint64_t addr, struct jittab_sym *out);

/*
 * The call frame information held (one per code load that had an unwinding record and is still
 * in place), sorted by code_addr, non-overlapping: *@out, valid until the next update or free.
 * Returns the count.
 */
size_t jitdump__unwind(const struct jitdump *d, const struct jitdump_unwind **out);
/* Changes whenever the set jitdump__unwind() returns changed. */
uint64_t jitdump__unwind_gen(const struct jitdump *d);

uint64_t jitdump__offset(const struct jitdump *d);
const struct jitdump_stats *jitdump__stats(const struct jitdump *d);
const struct jittab *jitdump__table(const struct jitdump *d);

#endif /* SPANPROF_RUNTIME_JITDUMP_JITDUMP_H */
