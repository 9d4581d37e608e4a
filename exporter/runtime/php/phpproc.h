/* SPDX-License-Identifier: Apache-2.0 */
/*
 * phpproc: the layout of a PHP version's engine structures, and the naming of the PHP frames
 * BPF recorded (bpf/php.h) in one process: each frame's zend_function is read again, proven by
 * its fingerprint, and named {class, function, file} (internal functions too: class and
 * function), with the line the record carries.
 *
 * Layouts (PHP 7.4-8.x, x86-64, non-ZTS) come from the headers of each version
 * (Zend/zend_globals.h: zend_executor_globals.current_execute_data; Zend/zend_compile.h:
 * zend_execute_data, zend_op_array, zend_op; Zend/zend_types.h: zend_string,
 * zend_class_entry.name); 8.2 was checked against a live process (docs/php.md).
 *
 * Memory is read through a callback (procmaps__read_mem() in the agent; a synthetic image in
 * test/runtime/test_phpname.c). Not thread safe.
 */
#ifndef SPANPROF_RUNTIME_PHP_PHPPROC_H
#define SPANPROF_RUNTIME_PHP_PHPPROC_H

#include <stddef.h>
#include <stdint.h>

#include "php.h"

/* Byte offsets of one PHP version's structures. */
struct php_layout {
	uint16_t eg_current_execute_data;
	uint16_t ed_opline, ed_func, ed_this_type_info, ed_prev;
	uint16_t fn_name, fn_scope;		   /* zend_function.common */
	uint16_t op_last, op_opcodes, op_filename; /* zend_op_array */
	uint16_t zop_lineno, zop_size;		   /* zend_op */
	uint16_t str_len, str_val;		   /* zend_string */
	uint16_t ce_name;			   /* zend_class_entry */
};

/* The layout of PHP @major.@minor: 0, or -ENOTSUP for a version without one (before 7.4,
 * after 8.4). */
int phplayout__of(int major, int minor, struct php_layout *out);
/* Fills the BPF descriptor's offsets from @l (eg and start_boot_ns left as they are). */
void phplayout__desc(const struct php_layout *l, struct php_desc *d);

/* Reads @n bytes at @addr of the process into @buf: 0, or -errno. */
typedef int (*phpproc_read_fn)(void *ctx, uint64_t addr, void *buf, size_t n);

/* Why a frame was not named: X(name, description). */
#define PHPPROC_UNNAMED(X)                                                                         \
	X(UNREADABLE, "its zend_function unreadable (freed, unmapped)")                            \
	X(STALE, "its zend_function changed since the sample (fingerprint differs)")               \
	X(BAD_NAME, "a name or file string unreadable or implausible")

enum phpproc_unnamed {
#define PHPPROC_UNNAMED_ENUM(n, d) PHPPROC_UNNAMED_##n,
	PHPPROC_UNNAMED(PHPPROC_UNNAMED_ENUM)
#undef PHPPROC_UNNAMED_ENUM
	    PHPPROC_UNNAMED_COUNT
};

struct phpproc_stats {
	uint64_t named, cached;			 /* frames named, of which from the cache */
	uint64_t unnamed[PHPPROC_UNNAMED_COUNT]; /* frames not named, by reason */
};

/* A named frame: strings owned by the phpproc, valid until its next call. */
struct php_frame_name {
	const char *klass;    /* the class (scope), NULL: none */
	const char *function; /* "name", "{closure}", "{main}" (a file's code), "{eval}" */
	const char *file;     /* user code's file; NULL for internal functions */
	uint32_t line;	      /* 0: unknown (internal functions) */
	int internal;	      /* an internal (C) function */
};

struct phpproc;

/* The naming state of one process reading with @read(@ctx), @l its layout; NULL on ENOMEM. */
struct phpproc *phpproc__new(const struct php_layout *l, phpproc_read_fn read, void *ctx);
void phpproc__free(struct phpproc *p);
/* Names frame record @w0, @w1 (bpf/php.h): 0, or -enum phpproc_unnamed - 1 (counted). */
int phpproc__name(struct phpproc *p, uint64_t w0, uint64_t w1, struct php_frame_name *out);
void phpproc__stats(const struct phpproc *p, struct phpproc_stats *out);

#endif /* SPANPROF_RUNTIME_PHP_PHPPROC_H */
