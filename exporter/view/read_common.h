/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view/read_common: what the readers of `spanprof view` share, inside exporter/view/ only (the
 * face is view/read.h). The readers are read.c (detection, decompression, files and
 * directories), read_otlp.c (OTLP protobuf), read_json.c (OTLP/JSON) and read_pprof.c (pprof);
 * each reads one input into a struct rd and merges it into the view_doc.
 *
 * Ownership: a struct rd lives for one input (view_read__buffer()); the decoded messages are
 * allocated in its arena and freed at once (rd__arena_free()) after each message is merged. The
 * document (rd.d) is borrowed. Errors: int functions return 0 or a negative errno; the input's
 * message goes to rd.err through rd__fail() (-EINVAL), running out of memory to rd.oom through
 * rd__oom() (-ENOMEM). The functions the readers share are named rd__* (of the reader).
 */
#ifndef SPANPROF_VIEW_READ_COMMON_H
#define SPANPROF_VIEW_READ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "view/doc.h"

/* The formats an input is named with (view_doc__input_end()). */
#define FMT_PROTO "otlp-proto"
#define FMT_STREAM "otlp-proto-stream"
#define FMT_JSON "otlp-json"
#define FMT_PPROF "pprof"

/* Kernel addresses on x86-64 and arm64 (canonical upper half): frames of no mapping there
 * are kernel frames when the input does not say. */
#define KERNEL_ADDR_MIN 0xffff800000000000ull

/* The thread-context attributes (OTLP) or labels (pprof) of one sample kept for its span. */
#define MAX_CTX_ATTRS 64

/* --- arena: every decoded message, freed at once ------------------------------------------ */

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *head;
};

/* @size bytes (max_align_t aligned) that live until rd__arena_free(); NULL when out of memory. */
void *rd__arena_alloc(struct arena *a, size_t size);
/* The same, zeroed. */
void *rd__arena_zalloc(struct arena *a, size_t size);
/* Frees every allocation of @a at once; @a stays usable. */
void rd__arena_free(struct arena *a);
/* protobuf-c's allocator on an arena (ProtobufCAllocator, allocator_data: the struct arena). */
void *rd__pb_alloc(void *ad, size_t size);
void rd__pb_free(void *ad, void *p);

/* --- reader state ------------------------------------------------------------------------- */

struct rd {
	struct view_doc *d;
	struct arena arena;
	const char *format;
	char where[64]; /* "line 3: ", "message 2 (byte 123): " */
	char err[512];
	bool oom;
};

/* Records the input's error (the first one wins). Returns -EINVAL. */
__attribute__((format(printf, 2, 3))) int rd__fail(struct rd *r, const char *fmt, ...);
/* Notes that memory ran out. Returns -ENOMEM. */
int rd__oom(struct rd *r);

/* Fails on a negative (errno) result of a view_doc call. */
#define TRY(r, x)                                                                                  \
	({                                                                                         \
		__auto_type _v = (x);                                                              \
		if (_v < 0)                                                                        \
			return rd__oom(r);                                                         \
		_v;                                                                                \
	})

/* --- protobuf wire scan ------------------------------------------------------------------- */

/*
 * Walks the top-level fields of a protobuf message (wire format only). Returns 0 and the
 * highest field number seen, or -EINVAL with the reason in @why: what a cut-off file or a
 * file that is not protobuf looks like. -E2BIG instead when the fields so far looked like a
 * profile's (numbers up to 15) and the data stops in the middle of one: a truncated file.
 */
int rd__scan_fields(const uint8_t *p, size_t n, uint32_t *maxfield, char *why, size_t wl);

/* --- frames ------------------------------------------------------------------------------- */

/* The last component of @path (a pointer into it). */
const char *rd__base_name(const char *path);

/* Frame indices of the locations, root first, back to back (a per-message pool). */
struct fpool {
	int32_t *f;
	size_t n, cap;
};

/* Appends @v to @p. Returns 0 or -ENOMEM. */
int rd__fpool_push(struct fpool *p, int32_t v);

/* Where a location lies: what its frames are named after when they have no function name. */
struct loc_site {
	const char *mapfile; /* NULL: no mapping */
	uint64_t start, offset, address;
	int32_t module; /* doc string; 0: none */
	enum view_frame_kind kind;
	int32_t type;	       /* doc string of its profile.frame.type */
	const char *type_text; /* the same, as text */
};

/*
 * Appends one frame of the location at @s to @frames: function @name, @file and @line as doc
 * strings and a line number (0: none); @name 0 names it "[file+0xoffset]" or "[unknown]"
 * (unknown_name). Returns 0 or -ENOMEM (noted in @r).
 */
int rd__push_frame(struct rd *r, struct fpool *frames, const struct loc_site *s, int32_t name,
		   int32_t file, int64_t line);

/* Makes the scratch array *@tmp (*@cap entries) hold at least @n. Returns 0 or -ENOMEM. */
int rd__grow_tmp(int32_t **tmp, size_t *cap, size_t n);

/* Whether the @n bytes at @p are all zero (an id that is no id). */
bool rd__all_zero(const uint8_t *p, size_t n);

/*
 * A length-prefixed stream (the Collector file exporter's `format: proto`: each message a
 * 4-byte big-endian length, then that many bytes): @each reads every message. *@nmsg: the
 * messages read, *@nonempty: those of length > 0. 0, or @each's error or a truncation message
 * (rd__fail(), r->where naming the message).
 */
int rd__frames(struct rd *r, const uint8_t *p, size_t n,
	       int (*each)(struct rd *r, const uint8_t *p, size_t n), unsigned *nmsg,
	       size_t *nonempty);

#endif /* SPANPROF_VIEW_READ_COMMON_H */
