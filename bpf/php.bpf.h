/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PHP frame walk (PHP 7.4-8.x, non-ZTS): at each sample of a process the agent described in
 * php_procs (struct php_desc, from exporter/runtime/php/), follow executor_globals'
 * current_execute_data chain (bpf/php.h) and record each frame, {zend_function, line,
 * fingerprint}, innermost first, in the room of sp_sample.ustack the other runtimes' frames left
 * (php_len, php_stop). Reads only: the agent proves and names each record
 * (runtime/php/phpproc.c). One frame per bpf_loop iteration, through a global function the
 * verifier checks once.
 *
 * The running frame's opline is in the VM's register (R15, the hybrid VM's and the JIT's IP on
 * x86-64), its saved copy stale: the leaf user frame's line comes from R15 when R15 points into
 * that frame's own opcodes, else from the saved opline (PHP_FRAME_LINE_REG tells which).
 *
 * Loaded with the CFI walk (unwind_enabled); included by sampler.bpf.c.
 */
#ifndef SPANPROF_PHP_BPF_H
#define SPANPROF_PHP_BPF_H

#include "php.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct php_desc);
} php_procs SEC(".maps");

/* Per-CPU counters: [0] samples walked, [reason] walks that ended there (enum php_stop), then
 * PHP_STAT_FRAMES and PHP_STAT_LINE_REG. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PHP_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} php_stats SEC(".maps");

static __always_inline void php_stat(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&php_stats, &which);

	if (v)
		*v += n;
}

/* State of one walk (no pointers: the global function writes it). */
struct php_walk {
	struct php_desc d;
	__u64 ed;     /* the frame to read next (zend_execute_data), 0: none */
	__u64 r15;    /* the VM's opline register at the sample, 0: unknown */
	__u64 w0, w1; /* the frame read (bpf/php.h) */
	__s32 res;    /* 1 a frame read, -reason to stop */
	__u32 n;      /* frames read so far */
};

struct php_loop {
	struct sp_sample *s;
	__u32 base; /* first ustack slot for PHP frames */
	__u32 max;  /* frames that fit */
	__u32 n;
	__u32 pad;
	struct php_walk w;
};

static __always_inline int php_rd(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* Reads frame w->ed into w->w0, w->w1 and steps to its caller. */
__noinline int php_frame_global(struct php_walk *w)
{
	__u64 func = 0, opline = 0, name = 0, opcodes = 0, prev = 0;
	__u32 info = 0, line = 0, last = 0, fp;
	__u8 type = 0;

	if (!w)
		return 0;
	if (php_rd(&func, 8, w->ed + w->d.ed_func) || php_rd(&prev, 8, w->ed + w->d.ed_prev) ||
	    php_rd(&info, 4, w->ed + w->d.ed_this_type_info) || !func || php_rd(&type, 1, func) ||
	    php_rd(&name, 8, func + w->d.fn_name)) {
		w->res = -PHP_STOP_READ_FAILED;
		return 0;
	}
	w->w0 = (func & PHP_ADDR_MASK) | ((__u64)(type & PHP_TYPE_MASK) << PHP_TYPE_SHIFT);
	if (type == PHP_USER_FUNCTION || type == PHP_EVAL_CODE) {
		if (php_rd(&opcodes, 8, func + w->d.op_opcodes) ||
		    php_rd(&last, 4, func + w->d.op_last) ||
		    php_rd(&opline, 8, w->ed + w->d.ed_opline)) {
			w->res = -PHP_STOP_READ_FAILED;
			return 0;
		}
		/* The running frame: its opline in the register if it is one of its own. */
		if (!w->n && w->r15 >= opcodes && w->r15 < opcodes + (__u64)last * w->d.zop_size) {
			opline = w->r15;
			w->w0 |= PHP_FRAME_LINE_REG;
		}
		if (opline < opcodes || opline >= opcodes + (__u64)last * w->d.zop_size ||
		    php_rd(&line, 4, opline + w->d.zop_lineno))
			line = 0;
		if (info & PHP_CALL_TOP)
			w->w0 |= PHP_FRAME_ENTRY;
	} else if (type != PHP_INTERNAL_FUNCTION) {
		w->res = -PHP_STOP_BAD_FRAME;
		return 0;
	}
	fp = php_fingerprint(type, opcodes, name);
	w->w1 = (__u64)line | (__u64)fp << 32;
	w->ed = prev;
	w->res = 1;
	return 0;
}

/* The ustack slot of PHP frame @n (two slots per frame), masked for the verifier. */
static __always_inline __u32 php_slot(const struct php_loop *l, __u32 n)
{
	return (l->base + 2 * n) & (SP_MAX_USTACK - 1);
}

static long php_frame_cb(__u64 i, void *ctx)
{
	struct php_loop *l = ctx;
	__u32 n = l->n, slot;

	if (!l->w.ed) {
		l->w.res = -PHP_STOP_END;
		return 1;
	}
	if (n >= l->max || n >= PHP_MAX_FRAMES) {
		l->w.res = -PHP_STOP_DEPTH;
		return 1;
	}
	php_frame_global(&l->w);
	if (l->w.res < 0)
		return 1;
	slot = php_slot(l, n);
	if (slot + 1 >= SP_MAX_USTACK) {
		l->w.res = -PHP_STOP_DEPTH;
		return 1;
	}
	l->s->ustack[slot] = l->w.w0;
	l->s->ustack[slot + 1] = l->w.w1;
	l->n = n + 1;
	l->w.n = n + 1;
	if (l->w.w0 & PHP_FRAME_LINE_REG)
		php_stat(PHP_STAT_LINE_REG, 1);
	return 0;
}

static __always_inline void php_sample(struct sp_sample *s)
{
	struct php_loop l = {};
	const struct php_desc *d;
	struct pt_regs *regs;
	__u32 pid = s->pid;
	int res;

	d = bpf_map_lookup_elem(&php_procs, &pid);
	/* A descriptor written before sampling (--pid) has no start time until pinned (0). */
	if (!d || (d->start_boot_ns && d->start_boot_ns != s->pstart_boot_ns))
		return;
	l.s = s;
	l.base = sp_ustack_slots(s);
	l.max = l.base < SP_MAX_USTACK ? (SP_MAX_USTACK - l.base) / 2 : 0;
	l.w.d = *d;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (regs)
		l.w.r15 = regs->r15;
	if (php_rd(&l.w.ed, 8, d->eg + d->eg_current_execute_data)) {
		res = -PHP_STOP_READ_FAILED;
	} else if (!l.w.ed) {
		res = -PHP_STOP_IDLE;
	} else {
		bpf_loop(PHP_MAX_FRAMES + 1, php_frame_cb, &l, 0);
		res = l.w.res < 0 ? l.w.res : -PHP_STOP_DEPTH;
	}
	s->php_len = l.n;
	s->php_stop = -res;
	php_stat(0, 1);
	php_stat(-res, 1);
	php_stat(PHP_STAT_FRAMES, l.n);
}

/* exec replaced the image, or the process ended: its descriptor describes nothing now. */
static __always_inline void php_forget(__u32 pid)
{
	sp_map_forget(&php_procs, &pid);
}

#endif /* SPANPROF_PHP_BPF_H */
