/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rubyproc: the layout of a CRuby version's VM structures, and the naming of the Ruby frames
 * BPF recorded (bpf/ruby.h) in one process: each frame's iseq is read again, proven (an imemo
 * of type iseq whose iseq_encoded gives the record's fingerprint) and named {label, path} from
 * its body's location, with the line of the record's pc from its body's line table
 * (insns_info: its entries, found through the positions array or, once Ruby freed that, the
 * succinct index table; iseq.c, get_insn_info()).
 *
 * Layouts (x86-64) come from CRuby's headers of each version (vm_core.h: rb_vm_t,
 * rb_ractor_t (ractor_core.h), rb_execution_context_t, rb_thread_t, rb_control_frame_t,
 * rb_iseq_t, rb_iseq_constant_body; include/ruby/internal/core/rstring.h, rarray.h); 3.1 was
 * checked against a live process (Debian 12's 3.1.2, docs/ruby.md).
 *
 * Memory is read through a callback (procmaps__read_mem() in the agent; a synthetic image in
 * the unit test). Not thread safe.
 */
#ifndef SPANPROF_RUNTIME_RUBY_RUBYPROC_H
#define SPANPROF_RUNTIME_RUBY_RUBYPROC_H

#include <stddef.h>
#include <stdint.h>

#include "ruby.h"

/* Byte offsets of one Ruby version's structures. */
struct ruby_layout {
	uint16_t vm_main_ractor, ractor_running_ec;
	uint16_t ec_vm_stack, ec_vm_stack_size, ec_cfp, ec_thread_ptr;
	uint16_t th_thread_id;
	uint16_t cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	uint16_t iseq_body;
	uint16_t body_type, body_iseq_size, body_iseq_encoded;
	uint16_t body_pathobj, body_label, body_first_lineno;
	uint16_t body_insns_body, body_insns_positions, body_insns_size, body_insns_succ;
	uint16_t insn_entry_size; /* iseq_insn_info_entry {line_no, ...} */
	/* RString: embedded when !(flags & str_noembed), length (flags >> str_embed_len_shift) &
	 * str_embed_len_mask at str_embed_ary; else len at str_len, ptr at str_ptr. */
	uint32_t str_noembed;
	uint16_t str_embed_len_shift, str_embed_len_mask, str_embed_ary, str_len, str_ptr;
	/* RArray: embedded when flags & ary_embed (elements at ary_embed_elems), else ptr at
	 * ary_ptr. */
	uint32_t ary_embed;
	uint16_t ary_embed_elems, ary_len, ary_ptr;
	/* IDs above it are not operators: their serial is id >> 4 (symbol.h, rb_id_to_serial()). */
	uint32_t last_op_id;
};

/* The layout of Ruby @major.@minor: 0, or -ENOTSUP for a version without one (only 3.1 now). */
int rubylayout__of(int major, int minor, struct ruby_layout *out);
/* Fills the BPF descriptor's offsets from @l (vm_ptr and start_boot_ns left as they are). */
void rubylayout__desc(const struct ruby_layout *l, struct ruby_desc *d);

/* Reads @n bytes at @addr of the process into @buf: 0, or -errno. */
typedef int (*rubyproc_read_fn)(void *ctx, uint64_t addr, void *buf, size_t n);

/* Why a frame was not named: X(name, description). */
#define RUBYPROC_UNNAMED(X)                                                                        \
	X(UNREADABLE, "its iseq unreadable (freed, unmapped)")                                     \
	X(STALE, "its iseq changed since the sample (not an iseq, or fingerprint differs)")        \
	X(BAD_NAME, "a label or path string unreadable or implausible")                            \
	X(CFUNC, "a C method's frame: its method entry changed, or its name not found")

enum rubyproc_unnamed {
#define RUBYPROC_UNNAMED_ENUM(n, d) RUBYPROC_UNNAMED_##n,
	RUBYPROC_UNNAMED(RUBYPROC_UNNAMED_ENUM)
#undef RUBYPROC_UNNAMED_ENUM
	    RUBYPROC_UNNAMED_COUNT
};

struct rubyproc_stats {
	uint64_t named, cached;			  /* frames named, of which from the cache */
	uint64_t unnamed[RUBYPROC_UNNAMED_COUNT]; /* frames not named, by reason */
	uint64_t lines_unknown;			  /* named frames whose line was not found */
};

/* A named frame: strings owned by the rubyproc, valid until its next call. */
struct ruby_frame_name {
	const char *label; /* "method", "block in method", "<main>", "<class:Name>"; a C method's
			      name ("map") */
	const char *path;  /* the file, as Ruby keeps it; NULL for a C method */
	uint32_t line;	   /* 0: unknown */
};

struct rubyproc;

/* The naming state of one process reading with @read(@ctx), @l its layout; NULL on ENOMEM. */
struct rubyproc *rubyproc__new(const struct ruby_layout *l, rubyproc_read_fn read, void *ctx);
void rubyproc__free(struct rubyproc *p);
/*
 * Where Ruby's symbol table (global_symbols.ids, symbol.c: an Array of 512-ID chunks, each an
 * Array of {name String, static Symbol} pairs by ID serial) may be: libruby's writable segment
 * [@start, @end) in the process. Looked for at the first C method's frame, once: a slot of the
 * area holding an Array whose first chunk's Symbols say their own serials (16 at least, none
 * other) is taken; each name read from it is proven again by its Symbol giving the frame's ID.
 */
void rubyproc__set_symbols_area(struct rubyproc *p, uint64_t start, uint64_t end);
/* Names frame record @w0, @w1 (bpf/ruby.h): 0, or -enum rubyproc_unnamed - 1 (counted). */
int rubyproc__name(struct rubyproc *p, uint64_t w0, uint64_t w1, struct ruby_frame_name *out);
void rubyproc__stats(const struct rubyproc *p, struct rubyproc_stats *out);

/*
 * The index (1-based) of the line table entry of instruction position @pos in CRuby's succinct
 * index table @t (@n bytes; iseq.c, succ_index_lookup(): IMMEDIATE_TABLE_SIZE 54 positions in
 * six 64-bit words of 7-bit counts, then 512-position blocks {u32 rank, u64 small_block_ranks,
 * u64 bits[8]}): the number of entries starting at or before @pos. 0 when @t is too short.
 */
uint32_t rubyproc__succ_lookup(const uint8_t *t, size_t n, uint32_t pos);

#endif /* SPANPROF_RUNTIME_RUBY_RUBYPROC_H */
