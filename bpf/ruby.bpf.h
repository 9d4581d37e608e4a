/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ruby frame walk (CRuby 3.x, YARV): at each sample of a process the agent described in
 * ruby_procs (struct ruby_desc, from exporter/runtime/ruby/), find the execution context of the
 * thread holding the GVL (ruby_current_vm_ptr -> main ractor -> threads.running_ec), walk it only
 * when that is the sampled thread (its rb_thread_t's pthread_t is the task's fs base), and
 * record each control frame, innermost first: {iseq, pc slot, fingerprint} for Ruby code,
 * {method entry, definition} for C functions (bpf/ruby.h), in the room of sp_sample.ustack the
 * other runtimes' frames left (ruby_len, ruby_stop). Reads only: the agent proves and names each
 * record (runtime/ruby/rubyproc.c). One control frame per bpf_loop iteration, through a global
 * function the verifier checks once.
 *
 * Loaded with the CFI walk (unwind_enabled); included by sampler.bpf.c.
 */
#ifndef SPANPROF_RUBY_BPF_H
#define SPANPROF_RUBY_BPF_H

#include "ruby.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct ruby_desc);
} ruby_procs SEC(".maps");

/* Per-CPU counters: [0] samples walked, [reason] walks that ended there (enum ruby_stop), then
 * RUBY_STAT_FRAMES and RUBY_STAT_CFUNCS. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RUBY_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} ruby_stats SEC(".maps");

static __always_inline void ruby_stat(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&ruby_stats, &which);

	if (v)
		*v += n;
}

/* State of one walk (no pointers: the global function writes it). */
struct ruby_walk {
	struct ruby_desc d;
	__u64 cfp;    /* the control frame to read next */
	__u64 end;    /* the VM stack's end: no control frame at or past it */
	__u64 w0, w1; /* the frame read (bpf/ruby.h); w0 0: a frame skipped */
	__s32 res;    /* 1 a frame read (or skipped), -reason to stop */
	__u32 pad;
};

/* The walk's state, per CPU: on 6.1 the sampler's stack (512 bytes for the whole call chain)
 * has no room for it (the descriptor copy) beside the other walkers' state. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ruby_walk);
} ruby_scratch SEC(".maps");

struct ruby_loop {
	struct sp_sample *s;
	__u32 base; /* first ustack slot for Ruby frames */
	__u32 max;  /* frames that fit */
	__u32 n;
	__u32 pad;
	struct ruby_walk *w; /* ruby_scratch's */
};

static __always_inline int ruby_rd(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* Reads control frame w->cfp into w->w0, w->w1 (w0 0: not a frame to record) and steps out. */
__noinline int ruby_frame_global(struct ruby_walk *w)
{
	__u64 pc = 0, iseq = 0, ep = 0, flags = 0, iflags = 0, body = 0, enc = 0, me = 0, def = 0;
	__u32 size = 0, magic, slot = RUBY_PC_UNKNOWN;

	if (!w)
		return 0;
	w->w0 = 0;
	w->w1 = 0;
	if (ruby_rd(&pc, 8, w->cfp + w->d.cfp_pc) || ruby_rd(&iseq, 8, w->cfp + w->d.cfp_iseq) ||
	    ruby_rd(&ep, 8, w->cfp + w->d.cfp_ep) || !ep || ruby_rd(&flags, 8, ep)) {
		w->res = -RUBY_STOP_READ_FAILED;
		return 0;
	}
	magic = (__u32)flags & RUBY_FRAME_MAGIC_MASK;
	if (magic == RUBY_FRAME_MAGIC_CFUNC) {
		if (ruby_rd(&me, 8, ep - 16) || !me || ruby_rd(&iflags, 8, me) ||
		    ruby_rd(&def, 8, me + RUBY_ME_DEF)) {
			w->res = -RUBY_STOP_READ_FAILED;
			return 0;
		}
		if (!ruby_is_imemo(iflags, RUBY_IMEMO_MENT)) {
			w->res = -RUBY_STOP_BAD_FRAME;
			return 0;
		}
		w->w0 = (me & RUBY_ADDR_MASK) | ((__u64)RUBY_KIND_CFUNC << RUBY_KIND_SHIFT);
		w->w1 = (__u64)(__u32)def << 32;
	} else if (iseq && !(flags & RUBY_FRAME_FLAG_CFRAME) && magic != RUBY_FRAME_MAGIC_DUMMY) {
		if (ruby_rd(&iflags, 8, iseq) || ruby_rd(&body, 8, iseq + w->d.iseq_body) ||
		    !body || ruby_rd(&enc, 8, body + w->d.body_iseq_encoded) ||
		    ruby_rd(&size, 4, body + w->d.body_iseq_size)) {
			w->res = -RUBY_STOP_READ_FAILED;
			return 0;
		}
		if (!ruby_is_imemo(iflags, RUBY_IMEMO_ISEQ) || !enc) {
			w->res = -RUBY_STOP_BAD_FRAME;
			return 0;
		}
		if (pc >= enc && pc <= enc + 8ull * size)
			slot = (__u32)((pc - enc) / 8);
		w->w0 = (iseq & RUBY_ADDR_MASK) | ((__u64)RUBY_KIND_ISEQ << RUBY_KIND_SHIFT);
		w->w1 = (__u64)slot | (__u64)(__u32)enc << 32;
	}
	/* else: a dummy frame, or a C block (IFUNC): nothing of its own to name. */
	if (w->w0 && (flags & RUBY_FRAME_FLAG_FINISH))
		w->w0 |= RUBY_FRAME_ENTRY;
	w->cfp += w->d.cfp_size;
	w->res = 1;
	return 0;
}

/* The ustack slot of Ruby frame @n (two slots per frame), masked for the verifier. */
static __always_inline __u32 ruby_slot(const struct ruby_loop *l, __u32 n)
{
	return (l->base + 2 * n) & (SP_MAX_USTACK - 1);
}

static long ruby_frame_cb(__u64 i, void *ctx)
{
	struct ruby_loop *l = ctx;
	__u32 n = l->n, slot;

	if (l->w->cfp + l->w->d.cfp_size > l->w->end) {
		l->w->res = -RUBY_STOP_END;
		return 1;
	}
	if (n >= l->max || n >= RUBY_MAX_FRAMES) {
		l->w->res = -RUBY_STOP_DEPTH;
		return 1;
	}
	ruby_frame_global(l->w);
	if (l->w->res < 0)
		return 1;
	if (!l->w->w0)
		return 0;
	slot = ruby_slot(l, n);
	if (slot + 1 >= SP_MAX_USTACK) {
		l->w->res = -RUBY_STOP_DEPTH;
		return 1;
	}
	l->s->ustack[slot] = l->w->w0;
	l->s->ustack[slot + 1] = l->w->w1;
	l->n = n + 1;
	if (((l->w->w0 >> RUBY_KIND_SHIFT) & RUBY_KIND_MASK) == RUBY_KIND_CFUNC)
		ruby_stat(RUBY_STAT_CFUNCS, 1);
	return 0;
}

/* The execution context to walk, in l->w->cfp/end: 0, or -reason. */
static __always_inline int ruby_find_ec(struct ruby_loop *l, struct task_struct *task)
{
	const struct ruby_desc *d = &l->w->d;
	__u64 vm = 0, ractor = 0, ec = 0, th = 0, tid = 0, stack = 0, size = 0, cfp = 0;

	if (ruby_rd(&vm, 8, d->vm_ptr))
		return -RUBY_STOP_READ_FAILED;
	if (!vm)
		return -RUBY_STOP_IDLE;
	if (ruby_rd(&ractor, 8, vm + d->vm_main_ractor) || !ractor ||
	    ruby_rd(&ec, 8, ractor + d->ractor_running_ec))
		return -RUBY_STOP_READ_FAILED;
	if (!ec)
		return -RUBY_STOP_IDLE;
	if (ruby_rd(&th, 8, ec + d->ec_thread_ptr) || !th || ruby_rd(&tid, 8, th + d->th_thread_id))
		return -RUBY_STOP_READ_FAILED;
	/* pthread_t is the thread's TCB, its fs base (x86-64 glibc): the sampled thread's own? */
	if (tid != BPF_CORE_READ(task, thread.fsbase))
		return -RUBY_STOP_OTHER_THREAD;
	if (ruby_rd(&stack, 8, ec + d->ec_vm_stack) ||
	    ruby_rd(&size, 8, ec + d->ec_vm_stack_size) || ruby_rd(&cfp, 8, ec + d->ec_cfp))
		return -RUBY_STOP_READ_FAILED;
	/* Control frames lie inside the VM stack (its top part). */
	if (!stack || size > (1ull << 28) || cfp < stack || cfp >= stack + 8 * size)
		return -RUBY_STOP_BAD_FRAME;
	l->w->cfp = cfp;
	l->w->end = stack + 8 * size;
	return 0;
}

/*
 * Out of line (a subprogram of its own frame): inlined, its state and the registers it spills
 * took the sampler's frame past what 6.1's 512 bytes for the whole call chain leave (the
 * verifier: "combined stack size of 4 calls is 544"). Returns 0.
 */
static __noinline int ruby_sample(struct task_struct *task, struct sp_sample *s)
{
	struct ruby_loop l = {};
	const struct ruby_desc *d;
	__u32 pid = s->pid, zero = 0;
	int res;

	d = bpf_map_lookup_elem(&ruby_procs, &pid);
	/* A descriptor written before sampling (--pid) has no start time until pinned (0). */
	if (!d || (d->start_boot_ns && d->start_boot_ns != s->pstart_boot_ns))
		return 0;
	l.w = bpf_map_lookup_elem(&ruby_scratch, &zero);
	if (!l.w)
		return 0;
	__builtin_memset(l.w, 0, sizeof(*l.w));
	l.s = s;
	l.base = sp_ustack_slots(s);
	l.max = l.base < SP_MAX_USTACK ? (SP_MAX_USTACK - l.base) / 2 : 0;
	l.w->d = *d;
	res = ruby_find_ec(&l, task);
	if (!res) {
		bpf_loop(RUBY_MAX_CFPS, ruby_frame_cb, &l, 0);
		res = l.w->res < 0 ? l.w->res : -RUBY_STOP_DEPTH;
	}
	s->ruby_len = l.n;
	s->ruby_stop = -res;
	ruby_stat(0, 1);
	ruby_stat(-res, 1);
	ruby_stat(RUBY_STAT_FRAMES, l.n);
	return 0;
}

/* exec replaced the image, or the process ended: its descriptor describes nothing now. */
static __always_inline void ruby_forget(__u32 pid)
{
	sp_map_forget(&ruby_procs, &pid);
}

#endif /* SPANPROF_RUBY_BPF_H */
