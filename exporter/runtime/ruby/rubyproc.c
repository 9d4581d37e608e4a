// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ruby/rubyproc.h"

#include <uthash.h>

/* Iseqs named per process at most; past it the cache starts over. */
#define MAX_CACHED 65536
/* Longest label or path kept (bytes, NUL excluded). */
#define MAX_STR 1024
/* Line table entries read per iseq at most (an iseq of more is named without lines). */
#define MAX_INSNS 65536
/* RBasic type bits (include/ruby/internal/value_type.h). */
#define T_STRING 0x05u
#define T_ARRAY 0x07u
/* The succinct index table's immediate part (iseq.c): positions, bytes. */
#define SUCC_IMM_POSITIONS 54
#define SUCC_IMM_BYTES 48
#define SUCC_BLOCK_BYTES 80

/*
 * The layouts. 3.1 (vm_core.h of v3_1_2, checked live on Debian 12's 3.1.2 by reading a
 * running process's memory, docs/ruby.md): rb_vm_t.ractor.main_ractor 32;
 * rb_ractor_t.threads.running_ec 520; rb_execution_context_t {vm_stack 0, vm_stack_size 8,
 * cfp 16, ..., thread_ptr 48}; rb_thread_t.thread_id 80; rb_control_frame_t {pc 0, sp 8,
 * iseq 16, self 24, ep 32, block_code 40, __bp__ 48, jit_return 56} (64 bytes); rb_iseq_t.body
 * 16; rb_iseq_constant_body {type 0, iseq_size 4, iseq_encoded 8, param (48 bytes),
 * location {pathobj 64, base_label 72, label 80, first_lineno 88 (a Fixnum), node_id,
 * code_location}, insns_info {body 120, positions 128, size 136, succ_index_table 144}};
 * iseq_insn_info_entry {line_no, node_id, events} (12 bytes); RString embedded: length in flags
 * bits 14-18, bytes at 16, else {len 16, ptr 24}; RArray embedded (flag bit 13): elements at
 * 16, else {len 16, ptr 32}; tLAST_OP_ID 0xa9 (rb_intern("max") gives 0xaa1, "+" 0x2b).
 */
int rubylayout__of(int major, int minor, struct ruby_layout *out)
{
	struct ruby_layout l = {
	    .vm_main_ractor = 32,
	    .ractor_running_ec = 520,
	    .ec_vm_stack = 0,
	    .ec_vm_stack_size = 8,
	    .ec_cfp = 16,
	    .ec_thread_ptr = 48,
	    .th_thread_id = 80,
	    .cfp_size = 64,
	    .cfp_pc = 0,
	    .cfp_iseq = 16,
	    .cfp_ep = 32,
	    .iseq_body = 16,
	    .body_type = 0,
	    .body_iseq_size = 4,
	    .body_iseq_encoded = 8,
	    .body_pathobj = 64,
	    .body_label = 80,
	    .body_first_lineno = 88,
	    .body_insns_body = 120,
	    .body_insns_positions = 128,
	    .body_insns_size = 136,
	    .body_insns_succ = 144,
	    .insn_entry_size = 12,
	    .str_noembed = 1u << 13,
	    .str_embed_len_shift = 14,
	    .str_embed_len_mask = 0x1f,
	    .str_embed_ary = 16,
	    .str_len = 16,
	    .str_ptr = 24,
	    .ary_embed = 1u << 13,
	    .ary_embed_elems = 16,
	    .ary_len = 16,
	    .ary_ptr = 32,
	    .last_op_id = 0xa9,
	};

	if (major != 3 || minor != 1)
		return -ENOTSUP;
	*out = l;
	return 0;
}

void rubylayout__desc(const struct ruby_layout *l, struct ruby_desc *d)
{
	d->vm_main_ractor = l->vm_main_ractor;
	d->ractor_running_ec = l->ractor_running_ec;
	d->ec_vm_stack = l->ec_vm_stack;
	d->ec_vm_stack_size = l->ec_vm_stack_size;
	d->ec_cfp = l->ec_cfp;
	d->ec_thread_ptr = l->ec_thread_ptr;
	d->th_thread_id = l->th_thread_id;
	d->cfp_size = l->cfp_size;
	d->cfp_pc = l->cfp_pc;
	d->cfp_iseq = l->cfp_iseq;
	d->cfp_ep = l->cfp_ep;
	d->iseq_body = l->iseq_body;
	d->body_iseq_size = l->body_iseq_size;
	d->body_iseq_encoded = l->body_iseq_encoded;
}

uint32_t rubyproc__succ_lookup(const uint8_t *t, size_t n, uint32_t pos)
{
	uint64_t w, small, bits;
	uint32_t rank, bi, sbi, small_count;
	size_t b;

	if (pos < SUCC_IMM_POSITIONS) {
		if (n < SUCC_IMM_BYTES)
			return 0;
		memcpy(&w, t + 8 * (pos / 9), 8);
		return (uint32_t)(w >> (7 * (pos % 9))) & 0x7f;
	}
	b = SUCC_IMM_BYTES + (size_t)((pos - SUCC_IMM_POSITIONS) / 512) * SUCC_BLOCK_BYTES;
	if (b + SUCC_BLOCK_BYTES > n)
		return 0;
	bi = (pos - SUCC_IMM_POSITIONS) % 512;
	sbi = bi / 64;
	memcpy(&rank, t + b, 4);
	memcpy(&small, t + b + 8, 8);
	memcpy(&bits, t + b + 16 + 8 * sbi, 8);
	small_count = sbi ? (uint32_t)(small >> (9 * (sbi - 1))) & 0x1ff : 0;
	return rank + small_count + (uint32_t)__builtin_popcountll(bits << (63 - bi % 64));
}

/* One iseq named (struct rubyproc.cache), keyed by its address and fingerprint. */
struct rubyiseq_key {
	uint64_t addr;
	uint32_t fp;
	uint32_t pad;
};

struct rubyiseq {
	struct rubyiseq_key key;
	char *label, *path;
	uint32_t first_line;
	uint32_t iseq_size;
	uint32_t n_lines;    /* line table entries; 0: none read */
	uint32_t *lines;     /* their line numbers */
	uint32_t *positions; /* their start positions (NULL: the succinct table) */
	uint8_t *succ;	     /* the succinct index table */
	size_t succ_size;
	UT_hash_handle hh;
};

struct rubyproc {
	struct ruby_layout l;
	uint64_t sym_start, sym_end; /* where the symbol table's slot may be */
	uint64_t sym_slot;	     /* the slot holding global_symbols.ids; 0: not found */
	int sym_state;		     /* 0 not looked for, 1 found, -1 not found */
	rubyproc_read_fn read;
	void *ctx;
	struct rubyiseq *cache;
	uint32_t ncached;
	struct rubyproc_stats st;
};

struct rubyproc *rubyproc__new(const struct ruby_layout *l, rubyproc_read_fn read, void *ctx)
{
	struct rubyproc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->l = *l;
	p->read = read;
	p->ctx = ctx;
	return p;
}

static void iseq_free(struct rubyiseq *q)
{
	free(q->label);
	free(q->path);
	free(q->lines);
	free(q->positions);
	free(q->succ);
	free(q);
}

static void cache_clear(struct rubyproc *p)
{
	struct rubyiseq *q, *tmp;

	HASH_ITER (hh, p->cache, q, tmp) {
		HASH_DEL(p->cache, q);
		iseq_free(q);
	}
	p->ncached = 0;
}

void rubyproc__free(struct rubyproc *p)
{
	if (!p)
		return;
	cache_clear(p);
	free(p);
}

static int rd64(struct rubyproc *p, uint64_t addr, uint64_t *v)
{
	return p->read(p->ctx, addr, v, sizeof(*v));
}

/*
 * The RString at @addr as a C string (malloc'd): NULL when not a String, unreadable, empty,
 * longer than MAX_STR or holding a NUL or a control character (not a label or a path).
 */
static char *read_str(struct rubyproc *p, uint64_t addr)
{
	uint64_t flags, len, ptr;
	char *s;

	if (!addr || (addr & 7) || rd64(p, addr, &flags) || (flags & 0x1f) != T_STRING)
		return NULL;
	if (flags & p->l.str_noembed) {
		if (rd64(p, addr + p->l.str_len, &len) || rd64(p, addr + p->l.str_ptr, &ptr))
			return NULL;
	} else {
		len = (flags >> p->l.str_embed_len_shift) & p->l.str_embed_len_mask;
		ptr = addr + p->l.str_embed_ary;
	}
	if (!len || len > MAX_STR || !ptr)
		return NULL;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	if (p->read(p->ctx, ptr, s, len)) {
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

/* The path of pathobj @obj: a String, or an Array [path, realpath]. */
static char *read_path(struct rubyproc *p, uint64_t obj)
{
	uint64_t flags, ptr, first;

	if (!obj || (obj & 7) || rd64(p, obj, &flags))
		return NULL;
	if ((flags & 0x1f) == T_STRING)
		return read_str(p, obj);
	if ((flags & 0x1f) != T_ARRAY)
		return NULL;
	if (flags & p->l.ary_embed)
		ptr = obj + p->l.ary_embed_elems;
	else if (rd64(p, obj + p->l.ary_ptr, &ptr))
		return NULL;
	if (!ptr || rd64(p, ptr, &first))
		return NULL;
	return read_str(p, first);
}

/* Reads the line table of body @body of an iseq of @q->iseq_size positions into @q; a table
 * that cannot be read leaves n_lines 0 (lines unknown). */
static void read_lines(struct rubyproc *p, uint64_t body, struct rubyiseq *q)
{
	uint64_t entries = 0, positions = 0, succ = 0;
	uint32_t n = 0;
	uint8_t *buf;
	size_t esz = p->l.insn_entry_size;

	if (rd64(p, body + p->l.body_insns_body, &entries) ||
	    rd64(p, body + p->l.body_insns_positions, &positions) ||
	    rd64(p, body + p->l.body_insns_succ, &succ) ||
	    p->read(p->ctx, body + p->l.body_insns_size, &n, 4) || !n || n > MAX_INSNS ||
	    !entries || n > q->iseq_size)
		return;
	buf = malloc((size_t)n * esz);
	q->lines = malloc((size_t)n * sizeof(*q->lines));
	if (!buf || !q->lines || p->read(p->ctx, entries, buf, (size_t)n * esz))
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		int32_t line;

		memcpy(&line, buf + (size_t)i * esz, 4);
		q->lines[i] = line > 0 ? (uint32_t)line : 0;
	}
	free(buf);
	buf = NULL;
	if (n > 1 && positions) {
		q->positions = malloc((size_t)n * sizeof(*q->positions));
		if (!q->positions || p->read(p->ctx, positions, q->positions, (size_t)n * 4))
			goto fail;
	} else if (n > 1) {
		size_t blocks = q->iseq_size > SUCC_IMM_POSITIONS
				    ? (q->iseq_size - SUCC_IMM_POSITIONS + 511) / 512
				    : 0;

		q->succ_size = SUCC_IMM_BYTES + blocks * SUCC_BLOCK_BYTES;
		q->succ = succ ? malloc(q->succ_size) : NULL;
		if (!q->succ || p->read(p->ctx, succ, q->succ, q->succ_size))
			goto fail;
	}
	q->n_lines = n;
	return;
fail:
	free(buf);
	free(q->lines);
	free(q->positions);
	free(q->succ);
	q->lines = NULL;
	q->positions = NULL;
	q->succ = NULL;
}

/* The line of instruction slot @slot (bpf/ruby.h) of @q: 0 when unknown. */
static uint32_t line_of(const struct rubyproc *p, const struct rubyiseq *q, uint32_t slot)
{
	uint32_t pos, idx = 0;

	(void)p;
	if (slot == RUBY_PC_UNKNOWN || slot > q->iseq_size || !q->n_lines)
		return 0;
	/* pc is the next instruction's once the current one started (iseq.c, calc_pos()). */
	pos = slot ? slot - 1 : 0;
	if (q->n_lines == 1)
		return q->lines[0];
	if (q->positions) {
		for (uint32_t i = 0; i < q->n_lines && q->positions[i] <= pos; i++)
			idx = i + 1;
	} else {
		idx = rubyproc__succ_lookup(q->succ, q->succ_size, pos);
	}
	return idx >= 1 && idx <= q->n_lines ? q->lines[idx - 1] : 0;
}

/* Reads the iseq at @addr, proven against @fp: 0, or -enum rubyproc_unnamed - 1. */
static int read_iseq(struct rubyproc *p, uint64_t addr, uint32_t fp, struct rubyiseq **out)
{
	uint64_t flags = 0, body = 0, enc = 0, label = 0, pathobj = 0, first = 0;
	uint32_t size = 0;
	struct rubyiseq *q;

	if (rd64(p, addr, &flags) || rd64(p, addr + p->l.iseq_body, &body) || !body ||
	    rd64(p, body + p->l.body_iseq_encoded, &enc) ||
	    p->read(p->ctx, body + p->l.body_iseq_size, &size, 4) ||
	    rd64(p, body + p->l.body_label, &label) ||
	    rd64(p, body + p->l.body_pathobj, &pathobj) ||
	    rd64(p, body + p->l.body_first_lineno, &first))
		return -RUBYPROC_UNNAMED_UNREADABLE - 1;
	if (!ruby_is_imemo(flags, RUBY_IMEMO_ISEQ) || (uint32_t)enc != fp)
		return -RUBYPROC_UNNAMED_STALE - 1;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -RUBYPROC_UNNAMED_UNREADABLE - 1;
	q->key.addr = addr;
	q->key.fp = fp;
	q->iseq_size = size;
	/* first_lineno is a Fixnum (2n+1). */
	q->first_line = (first & 1) && (int64_t)first > 0 ? (uint32_t)(first >> 1) : 0;
	q->label = read_str(p, label);
	q->path = read_path(p, pathobj);
	if (!q->label || !q->path) {
		iseq_free(q);
		return -RUBYPROC_UNNAMED_BAD_NAME - 1;
	}
	read_lines(p, body, q);
	*out = q;
	return 0;
}

void rubyproc__set_symbols_area(struct rubyproc *p, uint64_t start, uint64_t end)
{
	p->sym_start = start;
	p->sym_end = end;
}

/* Qnil in Ruby 3.x; a static Symbol is (id << 8) | 0x0c. */
#define RUBY_QNIL 0x08u
#define RUBY_SYMBOL_FLAG 0x0cu
#define ID_ENTRY_UNIT 512
#define SCAN_MAX (1u << 20)

/* The elements pointer and length of the heap (not embedded) Array @ary: 0 or -1. */
static int heap_array(struct rubyproc *p, uint64_t ary, uint64_t *ptr, uint64_t *len)
{
	uint64_t flags;

	if (!ary || (ary & 7) || rd64(p, ary, &flags) || (flags & 0x1f) != T_ARRAY ||
	    (flags & p->l.ary_embed) || rd64(p, ary + p->l.ary_len, len) ||
	    rd64(p, ary + p->l.ary_ptr, ptr) || !*ptr || *len > (1u << 24))
		return -1;
	return 0;
}

static uint64_t serial_of(const struct rubyproc *p, uint64_t id)
{
	return id > p->l.last_op_id ? id >> 4 : id;
}

/*
 * Whether @ids is global_symbols.ids: its first chunk's Symbols of serials 1-255 (operators,
 * then the VM's predefined names) say their own serials.
 */
static bool is_symbol_table(struct rubyproc *p, uint64_t ids)
{
	static uint64_t e[512];
	uint64_t ptr, len, cptr, clen;
	uint32_t good = 0;

	if (heap_array(p, ids, &ptr, &len) || !len || rd64(p, ptr, &e[0]) ||
	    heap_array(p, e[0], &cptr, &clen) || clen < 512 || p->read(p->ctx, cptr, e, sizeof(e)))
		return false;
	for (uint32_t s = 1; s < 256; s++) {
		uint64_t sym = e[2 * s + 1];

		if (sym == RUBY_QNIL)
			continue;
		if ((sym & 0xff) != RUBY_SYMBOL_FLAG || serial_of(p, sym >> 8) != s)
			return false;
		good++;
	}
	return good >= 16;
}

static void find_symbols(struct rubyproc *p)
{
	uint64_t n = p->sym_end > p->sym_start ? p->sym_end - p->sym_start : 0, *buf;

	p->sym_state = -1;
	if (!n || n > SCAN_MAX || (p->sym_start & 7))
		return;
	buf = malloc(n);
	if (!buf || p->read(p->ctx, p->sym_start, buf, n)) {
		free(buf);
		return;
	}
	for (uint64_t i = 0; i < n / 8; i++) {
		if (buf[i] < 0x10000 || (buf[i] & 7) || !is_symbol_table(p, buf[i]))
			continue;
		p->sym_slot = p->sym_start + 8 * i;
		p->sym_state = 1;
		break;
	}
	free(buf);
}

/* The name of ID @id from the symbol table (malloc'd), proven by its Symbol; NULL if none. */
static char *id_name(struct rubyproc *p, uint64_t id)
{
	uint64_t ids, ptr, len, chunk, cptr, clen, pair[2], serial = serial_of(p, id);

	if (!p->sym_state)
		find_symbols(p);
	if (p->sym_state != 1 || !serial || rd64(p, p->sym_slot, &ids) ||
	    heap_array(p, ids, &ptr, &len) || serial / ID_ENTRY_UNIT >= len ||
	    rd64(p, ptr + 8 * (serial / ID_ENTRY_UNIT), &chunk) ||
	    heap_array(p, chunk, &cptr, &clen) || 2 * (serial % ID_ENTRY_UNIT) + 1 >= clen ||
	    p->read(p->ctx, cptr + 16 * (serial % ID_ENTRY_UNIT), pair, sizeof(pair)) ||
	    pair[1] != ((id << 8) | RUBY_SYMBOL_FLAG))
		return NULL;
	return read_str(p, pair[0]);
}

/* Reads the C method entry at @addr, proven against @fp (its definition's low 32 bits). */
static int read_cfunc(struct rubyproc *p, uint64_t addr, uint32_t fp, struct rubyiseq **out)
{
	uint64_t flags = 0, def = 0, id = 0;
	struct rubyiseq *q;

	if (rd64(p, addr, &flags) || rd64(p, addr + RUBY_ME_DEF, &def) ||
	    rd64(p, addr + RUBY_ME_CALLED_ID, &id))
		return -RUBYPROC_UNNAMED_UNREADABLE - 1;
	if (!ruby_is_imemo(flags, RUBY_IMEMO_MENT) || (uint32_t)def != fp)
		return -RUBYPROC_UNNAMED_STALE - 1;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -RUBYPROC_UNNAMED_UNREADABLE - 1;
	q->key.addr = addr;
	q->key.fp = fp;
	q->key.pad = 1; /* a method entry, apart from an iseq at the same address */
	q->label = id_name(p, id);
	if (!q->label) {
		iseq_free(q);
		return -RUBYPROC_UNNAMED_CFUNC - 1;
	}
	*out = q;
	return 0;
}

int rubyproc__name(struct rubyproc *p, uint64_t w0, uint64_t w1, struct ruby_frame_name *out)
{
	uint32_t kind = (uint32_t)((w0 >> RUBY_KIND_SHIFT) & RUBY_KIND_MASK);
	struct rubyiseq_key key = {.addr = w0 & RUBY_ADDR_MASK,
				   .fp = (uint32_t)(w1 >> 32),
				   .pad = kind == RUBY_KIND_CFUNC};
	struct rubyiseq *q;
	int err;

	if (kind != RUBY_KIND_ISEQ && kind != RUBY_KIND_CFUNC) {
		p->st.unnamed[RUBYPROC_UNNAMED_STALE]++;
		return -RUBYPROC_UNNAMED_STALE - 1;
	}
	HASH_FIND(hh, p->cache, &key, sizeof(key), q);
	if (q) {
		p->st.cached++;
	} else {
		/* Not seen: read, and proven by the fingerprint. */
		err = kind == RUBY_KIND_CFUNC ? read_cfunc(p, key.addr, key.fp, &q)
					      : read_iseq(p, key.addr, key.fp, &q);
		if (err) {
			p->st.unnamed[-err - 1]++;
			return err;
		}
		if (p->ncached >= MAX_CACHED)
			cache_clear(p);
		HASH_ADD(hh, p->cache, key, sizeof(q->key), q);
		p->ncached++;
	}
	p->st.named++;
	out->label = q->label;
	out->path = q->path;
	out->line = kind == RUBY_KIND_CFUNC ? 0 : line_of(p, q, (uint32_t)w1);
	if (!out->line && kind == RUBY_KIND_ISEQ)
		p->st.lines_unknown++;
	return 0;
}

void rubyproc__stats(const struct rubyproc *p, struct rubyproc_stats *out)
{
	*out = p->st;
}
