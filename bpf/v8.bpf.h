/* SPDX-License-Identifier: GPL-2.0 */
/*
 * V8 frame reader (node): at each sample of a process the agent described in v8_procs
 * (struct v8_desc, from exporter/runtime/v8/), after the CFI walk, look at the frames the walk
 * left by a frame-pointer step (V8's generated code and builtins have no CFI and keep frame
 * pointers) and record, for each one that is a JavaScript frame, its function's
 * SharedFunctionInfo, a fingerprint of it and, when interpreted, the bytecode offset
 * (struct v8_frame, bpf/v8.h), in the room of sp_sample.ustack after the native and Python frames
 * (v8_len). Reads only: the agent validates and names each record.
 *
 * Included by sampler.bpf.c before prochooks.bpf.h, whose exec and exit hooks drop a process's
 * descriptor (v8_forget()) where the agent marked it in proc_known (bpf/sampler.h).
 */
#ifndef SPANPROF_V8_BPF_H
#define SPANPROF_V8_BPF_H

#include "v8.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct v8_desc);
} v8_procs SEC(".maps");

/* Per-CPU counters, enum v8_stat. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, V8_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} v8_stats SEC(".maps");

/* exec replaced the image, or the process ended: its descriptor describes nothing now. */
static __always_inline void v8_forget(__u32 pid)
{
	sp_map_forget(&v8_procs, &pid);
}

static __always_inline void v8_stat(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&v8_stats, &which);

	if (v)
		*v += n;
}

/* How v8_frame_global() found a frame (v8_walk.res). */
enum v8_read_res {
	V8_READ_RECORD,	     /* a JavaScript frame: sfi, fprint and word are set */
	V8_READ_SKIP,	     /* not one to look at (the leaf's frame not filled yet) */
	V8_READ_TYPED,	     /* a typed frame (a Smi marker where the context would be) */
	V8_READ_NO_FUNCTION, /* its function slot holds no JSFunction */
	V8_READ_FAILED,	     /* a read failed */
};

/* State of one frame's reading (no pointers: a global function writes it). */
struct v8_walk {
	struct v8_desc d;
	__u64 leaf_sp;
	__u64 fp;  /* in: the frame pointer of native frame i */
	__u64 i;   /* in: its index (0: the leaf) */
	__u64 sfi; /* out (V8_READ_RECORD): struct v8_frame's three words */
	__u64 fprint;
	__u64 word;
	__s32 res; /* out: enum v8_read_res */
	__u32 pad;
};

struct v8_loop {
	struct sp_sample *s;
	const __u64 *fp_of; /* the walk's frame pointers (struct unwind_window.fp_of) */
	__u32 n_native;
	__u32 base; /* first ustack slot for V8 frames */
	__u32 max;  /* frames that fit */
	__u32 n;    /* frames recorded */
	__u32 typed, not_function, read_failed, depth;
	struct v8_walk w;
};

static __always_inline int v8_read(void *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, 8, (const void *)addr);
}

/* The instance type of the heap object @tagged (tagged pointer), or -1. */
static __always_inline int v8_instance_type(const struct v8_desc *d, __u64 tagged)
{
	__u64 map = 0;
	__u16 type = 0;

	if ((tagged & V8_HEAP_OBJECT_TAG_MASK) != V8_HEAP_OBJECT_TAG ||
	    v8_read(&map, tagged - V8_HEAP_OBJECT_TAG + d->heap_object_map) ||
	    (map & V8_HEAP_OBJECT_TAG_MASK) != V8_HEAP_OBJECT_TAG ||
	    bpf_probe_read_user(&type, sizeof(type),
				(const void *)(map - V8_HEAP_OBJECT_TAG + d->map_instance_type)))
		return -1;
	return type;
}

/*
 * The leaf (@i 0) had no frame of its own when sampled: the word at the stack pointer is a return
 * address (before `push rbp`, or after `pop rbp`) or the frame pointer it saved (after `push
 * rbp`). Returns 1 then (the frame pointer is the caller's), -1 when the frame is its own but not
 * filled yet (the stack pointer within its fixed part: stale slots), 0 when set up.
 */
static __always_inline int v8_leaf_state(const struct v8_walk *w, __u64 fp)
{
	__u64 top = 0, code = 0;
	__s64 fixed = -(__s64)w->d.fp_function + 8;

	if (v8_read(&top, w->leaf_sp))
		return -1;
	if (top == fp)
		return 1;
	if (top && !bpf_probe_read_user(&code, sizeof(code), (const void *)(top - 8)) &&
	    unwind__after_call(code))
		return 1;
	if (w->leaf_sp + fixed > fp)
		return -1;
	return 0;
}

/*
 * Reads the frame at w->fp (native frame w->i) into w (enum v8_read_res in w->res). A global
 * function: the verifier checks it once, on its own, not once per state of the sample programs
 * that reach the loop (22,000 of on_cpu_sample's instructions when inlined in the callback).
 */
__noinline int v8_frame_global(struct v8_walk *w)
{
	__u64 fp, context = 0, fn = 0, sfi = 0, fprint = 0, bca = 0, off = 0;
	__u32 flags = 0;
	__s32 bc = -1;
	int type, leaf;

	if (!w)
		return 0;
	fp = w->fp;
	w->res = V8_READ_SKIP;
	if (w->i == 0) {
		leaf = v8_leaf_state(w, fp);
		if (leaf < 0)
			return 0;
		if (leaf)
			flags |= V8_FRAME_CALLER;
	}
	w->res = V8_READ_FAILED;
	if (v8_read(&context, fp + w->d.fp_context) || v8_read(&fn, fp + w->d.fp_function))
		return 0;
	/* A typed frame keeps a Smi marker where a JavaScript frame keeps its context. */
	if (!(context & V8_SMI_TAG_MASK)) {
		w->res = V8_READ_TYPED;
		return 0;
	}
	type = v8_instance_type(&w->d, fn);
	if (type < w->d.type_jsfunction_first || type > w->d.type_jsfunction_last) {
		w->res = V8_READ_NO_FUNCTION;
		return 0;
	}
	if (v8_read(&sfi, fn - V8_HEAP_OBJECT_TAG + w->d.jsfunction_shared) ||
	    v8_instance_type(&w->d, sfi) != w->d.type_sfi ||
	    v8_read(&fprint, sfi - V8_HEAP_OBJECT_TAG + w->d.sfi_name_or_scope_info))
		return 0;
	/* Interpreted: a BytecodeArray in its slot and a Smi offset. */
	if (!v8_read(&bca, fp + w->d.fp_bytecode_array) &&
	    v8_instance_type(&w->d, bca) == w->d.type_bytecode_array &&
	    !v8_read(&off, fp + w->d.fp_bytecode_offset) && !(off & V8_SMI_TAG_MASK)) {
		bc = (__s32)(off >> 32);
		flags |= V8_FRAME_INTERPRETED;
	}
	w->sfi = sfi;
	w->fprint = fprint;
	w->word = (w->i & 0xffff) | (__u64)flags << 16 | (__u64)(__u32)bc << 32;
	w->res = V8_READ_RECORD;
	return 0;
}

static long v8_frame_cb(__u64 i, void *ctx)
{
	struct v8_loop *l = ctx;
	struct sp_sample *s = l->s;
	__u32 slot;

	if (i >= l->n_native)
		return 1;
	l->w.fp = l->fp_of[i & (SP_MAX_USTACK - 1)];
	if (!l->w.fp)
		return 0;
	if (l->n >= l->max || l->n >= V8_MAX_FRAMES) {
		l->depth++;
		return 1;
	}
	l->w.i = i;
	v8_frame_global(&l->w);
	switch (l->w.res) {
	case V8_READ_RECORD:
		break;
	case V8_READ_TYPED:
		l->typed++;
		return 0;
	case V8_READ_NO_FUNCTION:
		l->not_function++;
		return 0;
	case V8_READ_FAILED:
		l->read_failed++;
		return 0;
	default:
		return 0;
	}
	slot = (l->base + 3 * l->n) & (SP_MAX_USTACK - 1);
	if (slot + 2 >= SP_MAX_USTACK) {
		l->depth++;
		return 1;
	}
	s->ustack[slot] = l->w.sfi;
	s->ustack[slot + 1] = l->w.fprint;
	s->ustack[slot + 2] = l->w.word;
	l->n++;
	return 0;
}

/*
 * The V8 frames of sample @s, whose CFI walk left @fp_of and @leaf_sp (struct unwind_window);
 * @base: the first free ustack slot.
 */
static __always_inline void v8_sample(struct sp_sample *s, const __u64 *fp_of, __u64 leaf_sp,
				      __u32 base)
{
	struct v8_loop l = {};
	const struct v8_desc *d;
	__u32 pid = s->pid;

	d = bpf_map_lookup_elem(&v8_procs, &pid);
	if (!d || (d->start_boot_ns && d->start_boot_ns != s->pstart_boot_ns))
		return;
	l.s = s;
	l.fp_of = fp_of;
	l.w.leaf_sp = leaf_sp;
	l.w.d = *d;
	l.n_native = s->ustack_len;
	l.base = base;
	l.max = base < SP_MAX_USTACK ? (SP_MAX_USTACK - base) / 3 : 0;
	bpf_loop(SP_MAX_USTACK, v8_frame_cb, &l, 0);
	s->v8_len = l.n;
	v8_stat(V8_STAT_SAMPLES, 1);
	v8_stat(V8_STAT_FRAMES, l.n);
	v8_stat(V8_STAT_TYPED, l.typed);
	v8_stat(V8_STAT_NOT_FUNCTION, l.not_function);
	v8_stat(V8_STAT_READ_FAILED, l.read_failed);
	v8_stat(V8_STAT_DEPTH, l.depth);
}

#endif /* SPANPROF_V8_BPF_H */
