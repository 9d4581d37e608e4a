/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfmap: a JIT's perf map, /tmp/perf-PID.map, read incrementally while the runtime appends to
 * it, and looked up by address.
 *
 * Format (tools/perf/Documentation/jit-interface.txt in the Linux tree): one line per code
 * range, "START SIZE symbolname\n", START and SIZE in hexadecimal (an optional 0x accepted),
 * the name the rest of the line. Written by V8 (node --perf-basic-prof), HotSpot
 * (jcmd PID Compiler.perfmap), .NET (DOTNET_PerfMapEnabled), CPython (-X perf). A later line
 * overlapping an earlier one replaces it (the runtime reused the memory; jittab.h).
 */
#ifndef SPANPROF_RUNTIME_PERFMAP_PERFMAP_H
#define SPANPROF_RUNTIME_PERFMAP_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "runtime/jit/jittab.h"

struct perfmap;

struct perfmap_stats {
	uint64_t lines;	    /* lines taken */
	uint64_t bad_lines; /* malformed, size 0, wrapping, or longer than PERFMAP_MAX_LINE */
	uint64_t resets;    /* the file was replaced, truncated or rewritten: all read forgotten */
	uint64_t bytes;	    /* bytes read */
};

/* A line longer than this is skipped (counted bad). */
#define PERFMAP_MAX_LINE 4096

/*
 * An empty map holding at most @max_entries ranges and @max_bytes of names (jittab.h) and
 * reading at most @max_file_bytes of the file. NULL + errno.
 */
struct perfmap *perfmap__new(uint32_t max_entries, uint64_t max_bytes, uint64_t max_file_bytes);
/* NULL is a no-op. */
void perfmap__free(struct perfmap *m);

/*
 * Reads what the file open on @fd (whose fstat(2) is @st) holds beyond what earlier calls read:
 * complete lines only (a partial last line is read again next time). Another file than last
 * time (device, inode), a shorter one, or one whose bytes already read changed (compared where
 * copies are kept: its first and last 4 KiB before the offset, and 64 bytes at 8 KiB, 16 KiB,
 * ... 128 MiB; a writer that rewrote it in place from the start) starts over. 0; -E2BIG once a cap
 * is reached (the map then answers no lookup: a line it could not take may have replaced a range it
 * holds); -EIO (read error; what was read is kept); -ENOMEM.
 */
int perfmap__update(struct perfmap *m, int fd, const struct stat *st);
/*
 * Takes the complete lines of @buf (@len bytes) as if appended to the file, and commits them.
 * *@consumed: bytes up to and including the last newline. For tests and fuzzing; 0 or as
 * perfmap__update().
 */
int perfmap__feed(struct perfmap *m, const char *buf, size_t len, size_t *consumed);

/*
 * The next update reads the file from its start, and what it says then replaces all that was
 * held (the lines it repeats keep their time, jittab.h). For a map its writer rewrote in place
 * (HotSpot's Compiler.perfmap truncates the same file), asked for by the agent.
 */
void perfmap__forget(struct perfmap *m);

/* The range holding @addr: 0 and *@out (valid until the next update), -ENOENT, -E2BIG (full). */
int perfmap__lookup(const struct perfmap *m, uint64_t addr, struct jittab_sym *out);
/* Bytes of the file read so far (the offset the next update starts at). */
uint64_t perfmap__offset(const struct perfmap *m);
const struct perfmap_stats *perfmap__stats(const struct perfmap *m);
/* The table (counts, bytes). */
const struct jittab *perfmap__table(const struct perfmap *m);

#endif /* SPANPROF_RUNTIME_PERFMAP_PERFMAP_H */
