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
 * Included by sampler.bpf.c before unwind.bpf.h, whose exec and exit hooks drop a process's
 * descriptor (v8_forget()).
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
	bpf_map_delete_elem(&v8_procs, &pid);
}

static __always_inline void v8_stat(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&v8_stats, &which);

	if (v)
		*v += n;
}

struct v8_loop {
	struct sp_sample *s;
	const __u64 *fp_of; /* the walk's frame pointers (struct unwind_window.fp_of) */
	__u64 leaf_sp;
	struct v8_desc d;
	__u32 n_native;
	__u32 base; /* first ustack slot for V8 frames */
	__u32 max;  /* frames that fit */
	__u32 n;    /* frames recorded */
	__u32 typed, not_function, read_failed, depth;
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
static __always_inline int v8_leaf_state(const struct v8_loop *l, __u64 fp)
{
	__u64 top = 0, code = 0;
	__s64 fixed = -(__s64)l->d.fp_function + 8;

	if (v8_read(&top, l->leaf_sp))
		return -1;
	if (top == fp)
		return 1;
	if (top && !bpf_probe_read_user(&code, sizeof(code), (const void *)(top - 8)) &&
	    unwind__after_call(code))
		return 1;
	if (l->leaf_sp + fixed > fp)
		return -1;
	return 0;
}

static long v8_frame_cb(__u64 i, void *ctx)
{
	struct v8_loop *l = ctx;
	struct sp_sample *s = l->s;
	__u64 fp, context = 0, fn = 0, sfi = 0, fprint = 0, bca = 0, off = 0;
	__u32 slot, flags = 0;
	__s32 bc = -1;
	int type, leaf;

	if (i >= l->n_native)
		return 1;
	fp = l->fp_of[i & (SP_MAX_USTACK - 1)];
	if (!fp)
		return 0;
	if (l->n >= l->max || l->n >= V8_MAX_FRAMES) {
		l->depth++;
		return 1;
	}
	if (i == 0) {
		leaf = v8_leaf_state(l, fp);
		if (leaf < 0)
			return 0;
		if (leaf)
			flags |= V8_FRAME_CALLER;
	}
	if (v8_read(&context, fp + l->d.fp_context) || v8_read(&fn, fp + l->d.fp_function)) {
		l->read_failed++;
		return 0;
	}
	/* A typed frame keeps a Smi marker where a JavaScript frame keeps its context. */
	if (!(context & V8_SMI_TAG_MASK)) {
		l->typed++;
		return 0;
	}
	type = v8_instance_type(&l->d, fn);
	if (type < l->d.type_jsfunction_first || type > l->d.type_jsfunction_last) {
		l->not_function++;
		return 0;
	}
	if (v8_read(&sfi, fn - V8_HEAP_OBJECT_TAG + l->d.jsfunction_shared) ||
	    v8_instance_type(&l->d, sfi) != l->d.type_sfi ||
	    v8_read(&fprint, sfi - V8_HEAP_OBJECT_TAG + l->d.sfi_name_or_scope_info)) {
		l->read_failed++;
		return 0;
	}
	/* Interpreted: a BytecodeArray in its slot and a Smi offset. */
	if (!v8_read(&bca, fp + l->d.fp_bytecode_array) &&
	    v8_instance_type(&l->d, bca) == l->d.type_bytecode_array &&
	    !v8_read(&off, fp + l->d.fp_bytecode_offset) && !(off & V8_SMI_TAG_MASK)) {
		bc = (__s32)(off >> 32);
		flags |= V8_FRAME_INTERPRETED;
	}
	slot = (l->base + 3 * l->n) & (SP_MAX_USTACK - 1);
	if (slot + 2 >= SP_MAX_USTACK) {
		l->depth++;
		return 1;
	}
	s->ustack[slot] = sfi;
	s->ustack[slot + 1] = fprint;
	s->ustack[slot + 2] = (__u64)(i & 0xffff) | (__u64)flags << 16 | (__u64)(__u32)bc << 32;
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
	l.leaf_sp = leaf_sp;
	l.d = *d;
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
