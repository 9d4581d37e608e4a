/* SPDX-License-Identifier: Apache-2.0 */
/*
 * objtally: per file (ELF object), how many user frames of the samples fell in it and how many of
 * those had no name. The end-of-run report (record/report.h) names the files whose frames are
 * mostly unnamed (no symbols: a debug package or debuginfod would name them).
 *
 * Keyed by the symbol cache's object (its pointer lives as long as the cache); a fixed table of
 * OBJTALLY_MAX files: files met once it is full are counted in the totals only. Not thread-safe.
 */
#ifndef SPANPROF_RESOLVE_OBJTALLY_H
#define SPANPROF_RESOLVE_OBJTALLY_H

#include <stddef.h>
#include <stdint.h>

struct elf_object;
struct objtally;

#define OBJTALLY_MAX 1024

/* One file's counts. @obj is borrowed from the symbol cache. */
struct objtally_entry {
	const struct elf_object *obj;
	uint64_t frames;  /* user frames in samples that fell in this file */
	uint64_t unnamed; /* ... that had no name when they were recorded */
	int named_later;  /* its debug file came later and named its frames (resolve__name_again) */
};

/* NULL + errno (ENOMEM). */
struct objtally *objtally__new(void);
/* NULL is a no-op. */
void objtally__free(struct objtally *t);

/* One user frame of a sample in @obj (NULL: counted in the total only), @named or not. */
void objtally__note(struct objtally *t, const struct elf_object *obj, int named);

/* The frames of @obj were named at the end (a debug file arrived): it is no longer reported. */
void objtally__mark_named(struct objtally *t, const struct elf_object *obj);

/* User frames noted, every file (and none) included. */
uint64_t objtally__frames(const struct objtally *t);

/*
 * Copies into @out (room for @max) the files with unnamed frames, most unnamed first, those
 * named later left out. Returns the number copied.
 */
size_t objtally__top_unnamed(const struct objtally *t, struct objtally_entry *out, size_t max);

#endif /* SPANPROF_RESOLVE_OBJTALLY_H */
