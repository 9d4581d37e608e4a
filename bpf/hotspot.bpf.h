/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HotSpot frame walk (java, no flag): inside the CFI walk (unwind.bpf.h), a frame whose PC lies
 * in the code cache of a JVM the agent described in hs_procs (struct hs_desc, from
 * exporter/runtime/jvm/) is stepped here, from the JVM's own structures (bpf/hotspot.h): an
 * interpreter frame by its frame pointer, a compiled or stub frame by its CodeBlob's frame
 * size, the call stub by frame pointer. Interpreted and compiled Java frames are recorded
 * (two slots each, after the native, Python and V8 frames: hs_len) for the agent, which
 * proves and names them. What cannot be proven stops the walk, which the stack's end marks.
 *
 * Included by unwind.bpf.h's includer (sampler.bpf.c) before unwind.bpf.h's walk uses it.
 */
#ifndef SPANPROF_HOTSPOT_BPF_H
#define SPANPROF_HOTSPOT_BPF_H

#include "hotspot.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct hs_desc);
} hs_procs SEC(".maps");

/* Per-CPU counters, enum hs_stat. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HS_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} hs_stats SEC(".maps");

static __always_inline void hs_stat(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&hs_stats, &which);

	if (v)
		*v += 1;
}

/* exec replaced the image, or the process ended: its descriptor describes nothing now. */
static __always_inline void hs_forget(__u32 pid)
{
	sp_map_forget(&hs_procs, &pid);
}

/*
 * The descriptor of the sampled process (@pid, group leader started at @start), or NULL. A
 * descriptor written before sampling (--pid) has no start time yet (0): it is the process's
 * until the agent's first maps read of it pins it (runtime.h).
 */
static __always_inline struct hs_desc *hs_desc_of(__u32 pid, __u64 start)
{
	struct hs_desc *d = bpf_map_lookup_elem(&hs_procs, &pid);

	if (!d || (d->start_boot_ns && d->start_boot_ns != start))
		return NULL;
	hs_stat(HS_STAT_SAMPLES);
	return d;
}

static __always_inline int hs_read(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* 1 when @pc lies in the code cache of @d. */
static __always_inline int hs_in_code_cache(const struct hs_desc *d, __u64 pc)
{
	return pc - d->cc_low < d->cc_high - d->cc_low;
}

/*
 * The CodeBlob holding @pc (CodeHeap::find_block_for()): 0 when none (free segment, hops past
 * HS_MAX_HOPS, unreadable). @hop: a scratch word (BPF stack is scarce on 6.1).
 */
static __always_inline __u64 hs_find_blob(const struct hs_desc *d, __u64 pc, __u64 *hop)
{
	const struct hs_heap *h = NULL;
	__u64 seg, low = 0;
	__u32 shift = 0, i;

	for (i = 0; i < HS_MAX_HEAPS; i++) {
		if (i < d->n_heaps && pc - d->heaps[i].low < d->heaps[i].high - d->heaps[i].low) {
			h = &d->heaps[i];
			break;
		}
	}
	if (!h)
		return 0;
	low = h->low;
	shift = h->log2_segment & 31;
	seg = (pc - low) >> shift;
	for (i = 0; i < HS_MAX_HOPS; i++) {
		*hop = 0;
		if (hs_read(hop, 1, h->segmap + seg))
			return 0;
		if (*hop == 0xff)
			return 0;
		if (!*hop)
			return low + (seg << shift) + d->heap_block_size;
		if (*hop > seg)
			return 0;
		seg -= *hop;
	}
	return 0;
}

/* The Java frame record of native frame @i (bpf/hotspot.h). */
static __always_inline void hs_record(struct unwind_window *win, __u64 kind, __u64 addr,
				      __u64 word1, __u32 i)
{
	__u32 k = win->hs_n;

	if (k >= HS_MAX_FRAMES) {
		hs_stat(HS_STAT_DEPTH);
		return;
	}
	win->hs_rec[(2 * k) & (2 * HS_MAX_FRAMES - 1)] =
	    (addr & HS_ADDR_MASK) | ((__u64)(i & HS_INDEX_MASK) << HS_INDEX_SHIFT) |
	    (kind << HS_KIND_SHIFT);
	win->hs_rec[(2 * k + 1) & (2 * HS_MAX_FRAMES - 1)] = word1;
	win->hs_n = k + 1;
}

/* A field of type @type at byte offset @off of the CodeBlob header read into win->hs_blob. */
#define HS_FIELD(type, off) (*(type *)&win->hs_blob[(off) & (HS_BLOB_HEADER - 1)])

/* hs_step(): the frame is to be left by a frame-pointer step (unwind__step() without a row). */
#define HS_STEP_FP 100

/* The x86-64 return-poll and epilogue instructions C1 and C2 end a method with. */
#define HS_POP_RBP 0x5d
#define HS_RET 0xc3

/*
 * One frame whose PC is in @d's code cache: records it (a Java frame) and steps to its caller.
 * UNWIND_STEP_OK, or why the walk stops (an enum unwind_step_result).
 */
static __always_inline int hs_step(struct unwind_walk *w, const struct hs_desc *d,
				   struct unwind_window *win, __u32 i)
{
	struct unwind_regs *r = &w->r;
	/* Every read lands in the window's scratch words (6.1 caps the BPF stack of the whole
	 * call chain at 512 bytes): t[0..] named below, slots[] an interpreter frame's words, pair
	 * a return address and the RBP saved under it. */
	__u64 *slots = win->hs_slots, *pair = win->hs_slots, *t = win->hs_tmp;
	__u64 pc = r->pc - !r->exact, blob, code_begin, cfa = 0, cm;
	__s32 frame_size, complete;
	int in_place, is_nmethod;
	__u32 len;

	if (pc - d->interp_low < d->interp_high - d->interp_low) {
		/* An interpreter frame: RBP is its frame pointer. */
		if (r->bp_unknown || r->bp < r->sp || (r->bp & 7) ||
		    (r->stack_hi && r->bp + 16 > r->stack_hi))
			goto bad_frame;
		/* slots[k] = [RBP - 64 + 8k]: bcp at k 0, Method* at 5, sender sp at 7, RBP, RA */
		if (hs_read(slots, 80, r->bp - 64))
			goto read_failed;
		if (hs_read(&t[0], 8, slots[5] + d->method_const_method))
			goto read_failed;
		cm = t[0];
		t[1] = slots[0]; /* the bytecode pointer */
		if (r->exact && w->r13_known) {
			/*
			 * The running frame keeps its bytecode pointer in R13: it must lie in the
			 * method's bytecodes, or RBP is still the caller's (an entry being built).
			 */
			t[2] = 0;
			if (hs_read(&t[2], 2, cm + d->const_method_code_size))
				goto read_failed;
			if (w->r13 - (cm + d->const_method_size) >= t[2]) {
				hs_stat(HS_STAT_NOT_COMPLETE);
				return UNWIND_STEP_BAD_CFA;
			}
			t[1] = w->r13;
		}
		hs_record(win, HS_KIND_INTERPRETED, slots[5], (cm << 32) | (__u32)(t[1] - cm), i);
		hs_stat(HS_STAT_INTERPRETED);
		if (!slots[9] || slots[7] < r->bp + 16 || (r->stack_hi && slots[7] > r->stack_hi))
			goto bad_frame;
		r->pc = slots[9];
		r->sp = slots[7];
		r->bp = slots[8];
		r->exact = 0;
		r->di_known = 0;
		return UNWIND_STEP_OK;
	}
	blob = hs_find_blob(d, pc, &t[0]);
	if (!blob) {
		hs_stat(HS_STAT_NO_BLOB);
		return UNWIND_STEP_UNSUPPORTED;
	}
	/* The blob's header in one read: the fields at their offsets (masked: inside hs_blob). */
	len = d->blob_header_len;
	if (len > HS_BLOB_HEADER)
		len = HS_BLOB_HEADER;
	if (hs_read(win->hs_blob, len, blob))
		goto read_failed;
	frame_size = HS_FIELD(__s32, d->blob_frame_size);
	complete = d->frame_complete_16 ? HS_FIELD(__s16, d->blob_frame_complete)
					: HS_FIELD(__s32, d->blob_frame_complete);
	code_begin = d->code_begin_ptr ? HS_FIELD(__u64, d->blob_code_begin)
				       : blob + HS_FIELD(__s32, d->blob_code_offset);
	t[3] = HS_FIELD(__u64, d->blob_name);
	if (d->blob_kind != 0xffff) {
		is_nmethod = HS_FIELD(__u8, d->blob_kind) == d->kind_nmethod;
	} else {
		if (hs_read(&t[4], 8, t[3]))
			goto read_failed;
		/* "nmethod\0", or "native nmethod" (a native method's wrapper) */
		is_nmethod = t[4] == 0x646f6874656d6eull || t[4] == 0x6e2065766974616eull;
	}
	if (frame_size <= 0) {
		/* No frame of its own size (the call stub, buffers, adapters): frame pointers. */
		if (r->exact) {
			hs_stat(HS_STAT_NOT_COMPLETE);
			return UNWIND_STEP_BAD_CFA;
		}
		hs_record(win, HS_KIND_STUB, blob, (__u32)t[3], i);
		hs_stat(HS_STAT_STUBS);
		return HS_STEP_FP;
	}
	/* Where the return address is: in the frame, or, at the edges of an exact PC, at RSP. */
	in_place = 1;
	if (is_nmethod) {
		t[6] = HS_FIELD(__u64, d->nmethod_method);
		t[7] = 0;
		if (hs_read(&t[7], 4, blob + d->nmethod_compile_id))
			goto read_failed;
	}
	if (r->exact) {
		if (pc < code_begin + complete) {
			/* Its frame is being built: the method runs (named), its caller is not
			 * known. */
			if (is_nmethod)
				hs_record(win, HS_KIND_COMPILED, blob, (t[7] << 32) | (__u32)t[6],
					  i);
			hs_stat(HS_STAT_NOT_COMPLETE);
			return UNWIND_STEP_BAD_CFA;
		}
		if (hs_read(&t[5], 8, pc))
			goto read_failed;
		if ((__u8)t[5] == HS_POP_RBP) {
			cfa = r->sp + 16; /* after add rsp: [RSP] the saved RBP, then the RA */
			in_place = 0;
		} else if ((__u8)t[5] == HS_RET || (t[5] & 0xffffff) == 0xa73b49) {
			cfa = r->sp + 8; /* the return poll (cmp 0x..(%r15),%rsp) and ret */
			in_place = 0;
		} else if ((t[5] & 0xffff) == 0x870f) {
			/* ja after the return poll's cmp: bytes pc-7..pc-5 are 49 3b a7 */
			if (hs_read(&t[5], 8, pc - 8))
				goto read_failed;
			if (((t[5] >> 8) & 0xffffff) == 0xa73b49) {
				cfa = r->sp + 8;
				in_place = 0;
			}
		}
	}
	if (in_place)
		cfa = r->sp + (__u64)frame_size * 8;
	if (cfa < r->sp + 8 || (r->stack_hi && cfa > r->stack_hi))
		goto bad_frame;
	if (hs_read(pair, 16, cfa - 16))
		goto read_failed;
	if (!pair[1] || hs_read(&t[5], 8, pair[1] - 8))
		goto bad_frame;
	if (!unwind__after_call(t[5])) {
		if (hs_read(&t[5], 8, pair[1]) || !unwind__hotspot_return_entry(t[5]))
			goto bad_frame;
	}
	if (is_nmethod) {
		hs_record(win, HS_KIND_COMPILED, blob, (t[7] << 32) | (__u32)t[6], i);
		hs_stat(HS_STAT_COMPILED);
	} else {
		hs_record(win, HS_KIND_STUB, blob, (__u32)t[3], i);
		hs_stat(HS_STAT_STUBS);
	}
	if (in_place || cfa == r->sp + 16)
		r->bp = pair[0];
	r->bp_unknown = 0;
	r->pc = pair[1];
	r->sp = cfa;
	r->exact = 0;
	r->di_known = 0;
	return UNWIND_STEP_OK;
bad_frame:
	hs_stat(HS_STAT_BAD_FRAME);
	return UNWIND_STEP_BAD_RA;
read_failed:
	hs_stat(HS_STAT_READ_FAILED);
	return UNWIND_STEP_READ_FAILED;
}

/* What each bpf_loop iteration of hs_sample() gets. */
struct hs_copy {
	struct sp_sample *s;
	struct unwind_window *win;
	__u32 first; /* the sample's first free ustack slot */
};

static long hs_copy_one(__u32 k, void *ctx)
{
	struct hs_copy *c = ctx;
	__u32 at = c->first + 2 * k;

	if (at + 1 >= SP_MAX_USTACK)
		return 1;
	c->s->ustack[at & (SP_MAX_USTACK - 1)] = c->win->hs_rec[(2 * k) & (2 * HS_MAX_FRAMES - 1)];
	c->s->ustack[(at + 1) & (SP_MAX_USTACK - 1)] =
	    c->win->hs_rec[(2 * k + 1) & (2 * HS_MAX_FRAMES - 1)];
	c->s->hs_len = k + 1;
	return 0;
}

/* Copies the Java frames the walk recorded into @s after its other frames (hs_len). */
static __always_inline void hs_sample(struct sp_sample *s, struct unwind_window *win)
{
	struct hs_copy c = {.s = s, .win = win, .first = sp_ustack_slots(s)};
	__u32 n = win->hs_n;

	if (n > HS_MAX_FRAMES)
		n = HS_MAX_FRAMES;
	bpf_loop(n, hs_copy_one, &c, 0);
	if (s->hs_len < win->hs_n)
		hs_stat(HS_STAT_DEPTH);
}

#endif /* SPANPROF_HOTSPOT_BPF_H */
