/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jittab: the code ranges a JIT announced (perf map lines, jitdump code loads), each with its
 * name and optionally its line table, looked up by address.
 *
 * A JIT reuses memory: a range announced later replaces every earlier range it overlaps, in
 * whole (the older code object is gone; its remaining bytes are not its code any more), so an
 * address is never given the name of code that was there before. Nor of code that came after:
 * a range that replaced another at its commit is proven only for samples taken from that
 * commit on (jittab_sym.since_boot_ns; the same range and name announced again keeps its
 * time), and so is every range added after jittab__clear(). Additions are staged and
 * take effect at jittab__commit(). Memory is bounded: past the entry or byte cap the table
 * stops accepting (jittab__full()), and since the ranges it could not take may replace ones it
 * holds, a full table answers no lookup at all rather than possibly stale names.
 */
#ifndef SPANPROF_RUNTIME_JIT_JITTAB_H
#define SPANPROF_RUNTIME_JIT_JITTAB_H

#include <stddef.h>
#include <stdint.h>

struct jittab;

/* One row of a range's line table: code from @addr on comes from @file:@line. */
struct jittab_line {
	uint64_t addr;
	uint32_t line;
	const char *file; /* NUL-terminated; NULL: unknown */
};

/* What jittab__lookup() answers. Pointers are valid until the next commit or free. */
struct jittab_sym {
	uint64_t start, end; /* [start, end) of the code range */
	uint32_t id;	     /* unique among every range of every table of the agent */
	const char *name;
	const char *file; /* from the line table, NULL if none */
	uint32_t line;	  /* 0 if none */
	/*
	 * CLOCK_BOOTTIME ns from which the name is proven: 0 for code announced where none was
	 * held, else the commit (or clear) after which the announcement was read. A sample taken
	 * before may have run the code that was there before: not named by this range.
	 */
	uint64_t since_boot_ns;
};

/* Caps: at most @max_entries ranges and @max_bytes of names, line rows and file names. */
struct jittab *jittab__new(uint32_t max_entries, uint64_t max_bytes);
/* NULL is a no-op. */
void jittab__free(struct jittab *t);

/*
 * Stages the range [@start, @start + @size) named @name (@name_len bytes, need not be
 * NUL-terminated) with @nlines rows of line table (NULL/0: none; rows outside the range are
 * ignored). 0; -EINVAL (size 0, range wrapping past 2^64, empty name); -E2BIG when the table is
 * full (the table is then full: see above); -ENOMEM.
 */
int jittab__add(struct jittab *t, uint64_t start, uint64_t size, const char *name, size_t name_len,
		const struct jittab_line *lines, uint32_t nlines);
/* Stages the removal of every range overlapping [@start, @start + @size) (code moved away or
 * freed). 0, -EINVAL, -ENOMEM. */
int jittab__remove(struct jittab *t, uint64_t start, uint64_t size);
/*
 * Says that what is staged was all written by @boot_ns (CLOCK_BOOTTIME; from the file's change
 * time): a range the next commit finds replacing another is then proven from @boot_ns on
 * rather than from the commit's own time (the default), if earlier. Cleared by the commit.
 */
void jittab__written_by(struct jittab *t, uint64_t boot_ns);

/* Applies what was staged, in the order staged. 0, -E2BIG (full), -ENOMEM (nothing applied). */
int jittab__commit(struct jittab *t);
/* Forgets every range (the file was replaced or truncated); the caps stay, full is cleared;
 * ranges added from now on are proven only from now on (jittab_sym.since_boot_ns). */
void jittab__clear(struct jittab *t);

/* The range holding @addr: 0 and *@out, -ENOENT (none), -E2BIG (the table is full). */
int jittab__lookup(const struct jittab *t, uint64_t addr, struct jittab_sym *out);

/* Ranges held after the last commit. */
size_t jittab__count(const struct jittab *t);
/* 1 once a cap was reached (cleared by jittab__clear()). */
int jittab__full(const struct jittab *t);
/* Ranges replaced by a later overlapping one or removed, since creation (not jittab__clear()). */
uint64_t jittab__replaced(const struct jittab *t);
/* Heap bytes held. */
size_t jittab__bytes(const struct jittab *t);

#endif /* SPANPROF_RUNTIME_JIT_JITTAB_H */
