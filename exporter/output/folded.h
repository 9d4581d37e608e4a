/* SPDX-License-Identifier: Apache-2.0 */
/*
 * folded: the "folded stacks" text format (one line per distinct stack,
 * frames root to leaf joined by ';', a space, the sample count), as produced
 * by Brendan Gregg's stackcollapse scripts and read by flamegraph.pl,
 * speedscope and inferno.
 *
 * Also home of the two pieces the text writers share:
 *  - stack_tree: the profile's samples merged into a call tree of frame names
 *    (one tree per process at the top), children sorted by name;
 *  - out_file: a file written at PATH.tmp and renamed onto PATH on success.
 */
#ifndef SPANPROF_FOLDED_H
#define SPANPROF_FOLDED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/*
 * Writes @p as folded stacks to @path (via @path.tmp, renamed on success).
 * Line: "PROCESS;ROOT;...;LEAF COUNT\n", COUNT in samples; lines sorted by
 * frame names; samples differing only by thread or CPU are merged.
 * Frame names:
 *  - a symbolized location gives one frame per line, the physical function
 *    first and then the functions inlined into it, outer to inner;
 *  - an unsymbolized one gives "[BASENAME+0xFILEOFFSET]" from its mapping,
 *    or "[unknown]" without a mapping;
 *  - kernel frames end in "_[k]";
 *  - ';' becomes ':' and control characters (newlines) become ' '.
 * The process frame is the process name, else the thread name, else
 * "[unknown]". Returns 0 or -errno (the profile is not modified).
 */
int folded__write(const struct profile *p, const char *path);
/*
 * The same for the samples of profile type @type (enum profile_type) only; CPU stacks are
 * weighted by their sample count, the other types by their value (bytes, nanoseconds).
 */
int folded__write_type(const struct profile *p, const char *path, uint32_t type);

struct stack_tree;

/* One frame of the tree, as the walker reports it. */
struct stack_tree_frame {
	const char *name;     /* sanitized as in folded__write */
	enum frame_kind kind; /* FRAME_UNSET for the process frame */
	bool unknown;	      /* no symbol: a mapping+offset or [unknown] */
	uint32_t depth;	      /* 0 for the process frame */
	uint64_t offset;      /* samples left of this frame among all frames at its depth */
	uint64_t self;	      /* samples whose leaf is this frame */
	uint64_t total;	      /* samples through this frame (self + children) */
};

/* Return values of a stack_tree__walk callback, besides a negative errno. */
enum {
	STACK_TREE_DESCEND = 0,
	STACK_TREE_SKIP = 1, /* skip this frame's children */
};
typedef int (*stack_tree_fn)(const struct stack_tree_frame *f, void *ctx);

/* Builds the tree of @p (which may be freed afterwards). NULL + errno (ENOMEM). */
struct stack_tree *stack_tree__new(const struct profile *p);
/* The tree of the samples of one profile type (weights as in folded__write_type()). */
struct stack_tree *stack_tree__new_type(const struct profile *p, uint32_t type);
void stack_tree__free(struct stack_tree *t);
/* Sum of all samples; equals profile__total_count(). */
uint64_t stack_tree__total(const struct stack_tree *t);
/* Deepest frame depth + 1 (0 for an empty tree). */
uint32_t stack_tree__depth(const struct stack_tree *t);
/*
 * Depth-first, parents before children, siblings in name order. Stops at
 * the first negative return of @fn and returns it; otherwise 0.
 */
int stack_tree__walk(const struct stack_tree *t, stack_tree_fn fn, void *ctx);

/* A file written at PATH.tmp, so that PATH is never seen half-written. */
struct out_file {
	FILE *f;
	char *tmp;
	char *path;
};
/* Creates PATH.tmp (0644). 0 or -errno; on error @of needs no cleanup. */
int out_file__open(struct out_file *of, const char *path);
/* Flushes, closes and renames onto PATH. 0 or -errno; on error PATH.tmp is removed. */
int out_file__commit(struct out_file *of);
/* Closes and removes PATH.tmp; a no-op when nothing is open. */
void out_file__abort(struct out_file *of);

#endif /* SPANPROF_FOLDED_H */
