// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/php/phpproc.h"

#include <uthash.h>

/* Functions named per process at most; past it the cache starts over. */
#define MAX_CACHED 65536
/* Longest name or file kept (bytes, NUL excluded). */
#define MAX_STR 1024

/*
 * The layouts. zend_execute_data {opline 0, call 8, return_value 16, func 24, This 32 (its
 * u1.type_info at 40), prev_execute_data 48} is the same in 7.4-8.x, as are zend_op's lineno
 * (24; 32 bytes each), zend_string {gc 0, h 8, len 16, val 24}, zend_class_entry.name (8) and
 * EG.current_execute_data (488: 2 zvals, 32 symbol table cache slots and their 2 pointers, 2
 * HashTables, the bailout, 2 ints, 3 tables, the VM stack's 4 words). What moves is the
 * zend_op_array after the common part of zend_function:
 *  - 7.4: common ends at 48; cache_size, last_var, T, last (60), opcodes (64), ...,
 *    filename (136);
 *  - 8.0, 8.1: common gains attributes (ends at 56): last 68, opcodes 72, filename 144;
 *  - 8.2: common gains T and run_time_cache (ends at 72): last 80, opcodes 88, filename 152
 *    (checked live: Debian 12's 8.2.36);
 *  - 8.3: common's run_time_cache before T (ends at 68): last 76, opcodes 80, filename 144;
 *  - 8.4: common gains doc_comment (ends at 76): last 84, opcodes 88, filename 152.
 */
int phplayout__of(int major, int minor, struct php_layout *out)
{
	struct php_layout l = {
	    .eg_current_execute_data = 488,
	    .ed_opline = 0,
	    .ed_func = 24,
	    .ed_this_type_info = 40,
	    .ed_prev = 48,
	    .fn_name = 8,
	    .fn_scope = 16,
	    .zop_lineno = 24,
	    .zop_size = 32,
	    .str_len = 16,
	    .str_val = 24,
	    .ce_name = 8,
	};

	if (major == 7 && minor == 4) {
		l.op_last = 60, l.op_opcodes = 64, l.op_filename = 136;
	} else if (major == 8 && (minor == 0 || minor == 1)) {
		l.op_last = 68, l.op_opcodes = 72, l.op_filename = 144;
	} else if (major == 8 && minor == 2) {
		l.op_last = 80, l.op_opcodes = 88, l.op_filename = 152;
	} else if (major == 8 && minor == 3) {
		l.op_last = 76, l.op_opcodes = 80, l.op_filename = 144;
	} else if (major == 8 && minor == 4) {
		l.op_last = 84, l.op_opcodes = 88, l.op_filename = 152;
	} else {
		return -ENOTSUP;
	}
	*out = l;
	return 0;
}

void phplayout__desc(const struct php_layout *l, struct php_desc *d)
{
	d->eg_current_execute_data = l->eg_current_execute_data;
	d->ed_opline = l->ed_opline;
	d->ed_func = l->ed_func;
	d->ed_this_type_info = l->ed_this_type_info;
	d->ed_prev = l->ed_prev;
	d->fn_name = l->fn_name;
	d->op_opcodes = l->op_opcodes;
	d->op_last = l->op_last;
	d->zop_lineno = l->zop_lineno;
	d->zop_size = l->zop_size;
}

/*
 * One zend_function named (struct phpproc.cache), keyed by its address and fingerprint: one
 * address may hold several functions in turn (closures are copies of their op_array in the
 * closure object, which a later closure's object takes over when freed), each named once while
 * it was there.
 */
struct phpfn_key {
	uint64_t addr;
	uint32_t fp;
	uint32_t pad;
};

struct phpfn {
	struct phpfn_key key;
	int type;
	char *klass, *function, *file; /* klass, file: NULL when none */
	UT_hash_handle hh;
};

struct phpproc {
	struct php_layout l;
	phpproc_read_fn read;
	void *ctx;
	struct phpfn *cache;
	uint32_t ncached;
	struct phpproc_stats st;
};

struct phpproc *phpproc__new(const struct php_layout *l, phpproc_read_fn read, void *ctx)
{
	struct phpproc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->l = *l;
	p->read = read;
	p->ctx = ctx;
	return p;
}

static void fn_free(struct phpfn *f)
{
	free(f->klass);
	free(f->function);
	free(f->file);
	free(f);
}

static void cache_clear(struct phpproc *p)
{
	struct phpfn *f, *tmp;

	HASH_ITER (hh, p->cache, f, tmp) {
		HASH_DEL(p->cache, f);
		fn_free(f);
	}
	p->ncached = 0;
}

void phpproc__free(struct phpproc *p)
{
	if (!p)
		return;
	cache_clear(p);
	free(p);
}

static int rd64(struct phpproc *p, uint64_t addr, uint64_t *v)
{
	return p->read(p->ctx, addr, v, sizeof(*v));
}

/*
 * The zend_string at @addr as a C string (malloc'd): NULL when unreadable, empty, longer than
 * MAX_STR or holding a NUL or a control character (not a name or a path).
 */
static char *read_str(struct phpproc *p, uint64_t addr)
{
	uint64_t len;
	char *s;

	if (!addr || rd64(p, addr + p->l.str_len, &len) || !len || len > MAX_STR)
		return NULL;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	if (p->read(p->ctx, addr + p->l.str_val, s, len)) {
		free(s);
		return NULL;
	}
	for (uint64_t i = 0; i < len; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			free(s);
			return NULL;
		}
	}
	s[len] = '\0';
	return s;
}

/* Reads the zend_function at @addr, proven against @fp: 0, or -enum phpproc_unnamed - 1. */
static int read_fn(struct phpproc *p, uint64_t addr, uint32_t fp, struct phpfn **out)
{
	uint64_t name = 0, scope = 0, opcodes = 0, cname = 0, file = 0;
	uint8_t type;
	struct phpfn *f;

	if (p->read(p->ctx, addr, &type, 1) || rd64(p, addr + p->l.fn_name, &name) ||
	    rd64(p, addr + p->l.fn_scope, &scope))
		return -PHPPROC_UNNAMED_UNREADABLE - 1;
	if (type != PHP_INTERNAL_FUNCTION && type != PHP_USER_FUNCTION && type != PHP_EVAL_CODE)
		return -PHPPROC_UNNAMED_STALE - 1;
	if (type != PHP_INTERNAL_FUNCTION &&
	    (rd64(p, addr + p->l.op_opcodes, &opcodes) || rd64(p, addr + p->l.op_filename, &file)))
		return -PHPPROC_UNNAMED_UNREADABLE - 1;
	if (php_fingerprint(type, opcodes, name) != fp)
		return -PHPPROC_UNNAMED_STALE - 1;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -PHPPROC_UNNAMED_UNREADABLE - 1;
	f->key.addr = addr;
	f->key.fp = fp;
	f->type = type;
	if (name) {
		f->function = read_str(p, name);
		if (!f->function)
			goto bad;
	} else if (type == PHP_INTERNAL_FUNCTION) {
		goto bad;
	} else {
		/* A file's own code (include, the script) or eval'd code: no name of its own. */
		f->function = strdup(type == PHP_EVAL_CODE ? "{eval}" : "{main}");
		if (!f->function)
			goto bad;
	}
	if (scope) {
		if (rd64(p, scope + p->l.ce_name, &cname) || !(f->klass = read_str(p, cname)))
			goto bad;
	}
	if (type != PHP_INTERNAL_FUNCTION && !(f->file = read_str(p, file)))
		goto bad;
	*out = f;
	return 0;
bad:
	fn_free(f);
	return -PHPPROC_UNNAMED_BAD_NAME - 1;
}

int phpproc__name(struct phpproc *p, uint64_t w0, uint64_t w1, struct php_frame_name *out)
{
	struct phpfn_key key = {.addr = w0 & PHP_ADDR_MASK, .fp = (uint32_t)(w1 >> 32)};
	struct phpfn *f;
	int err;

	HASH_FIND(hh, p->cache, &key, sizeof(key), f);
	if (f) {
		p->st.cached++;
	} else {
		/* Not seen: read, and proven by the fingerprint. */
		err = read_fn(p, key.addr, key.fp, &f);
		if (err) {
			p->st.unnamed[-err - 1]++;
			return err;
		}
		if (p->ncached >= MAX_CACHED)
			cache_clear(p);
		HASH_ADD(hh, p->cache, key, sizeof(f->key), f);
		p->ncached++;
	}
	p->st.named++;
	out->klass = f->klass;
	out->function = f->function;
	out->file = f->file;
	out->internal = f->type == PHP_INTERNAL_FUNCTION;
	out->line = out->internal ? 0 : (uint32_t)w1;
	return 0;
}

void phpproc__stats(const struct phpproc *p, struct phpproc_stats *out)
{
	*out = p->st;
}
