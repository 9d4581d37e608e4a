/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frame walk (CPython 3.8+): at each sample of a process the agent described in py_procs
 * (struct py_desc, from exporter/runtime/python/), find the sampled thread's own thread state and
 * record its Python frames, {code object, instruction offset, flags} each, innermost first, in
 * the room of sp_sample.ustack the native frames left (py_len, py_stop). The steps themselves
 * are bpf/python_walk.h, shared with the unit tests; here they run from bpf_loop, through
 * global functions that the verifier checks once each.
 *
 * Loaded unless the agent leaves python_enabled 0 (--no-python): then the verifier drops all of it
 * and the exec and exit hooks below are not loaded.
 * Included by sampler.bpf.c after the sample record and the native walk.
 */
#ifndef SPANPROF_PYTHON_BPF_H
#define SPANPROF_PYTHON_BPF_H

#define PYWALK_READ_USER(rctx, dst, addr) bpf_probe_read_user((dst), 8, (const void *)(addr))
#define PYWALK_READ_SPAN(rctx, dst, addr, len)                                                     \
	bpf_probe_read_user((dst), (len), (const void *)(addr))
#include "python_walk.h"

const volatile __u32 python_enabled = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct py_desc);
} py_procs SEC(".maps");

/*
 * Each described process's code epoch (bpf/python.h, the code-object cache): written by the
 * agent (only created and deleted, never updated: an update would put a new element in place
 * while the uprobe below increments the old one), incremented by on_py_code_dealloc, dropped
 * with the descriptor at exec and exit.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct py_code_epoch);
} py_code_epochs SEC(".maps");

/*
 * Per-CPU counters: [0] samples walked, [reason] walks that ended there (enum py_stop), then
 * the code-object counters (PY_STAT_CODE_*).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PY_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

/*
 * Each thread's thread state found by the last search (kernel TID -> PyThreadState address):
 * checked at the next sample (pywalk__tstate_check(), two reads) instead of searched again (two
 * reads to start, two per thread state passed). A stale entry (the state freed, the TID reused,
 * another process) fails the check and is searched again; LRU: no clean-up needed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} py_threads SEC(".maps");

/* Where a frame step copies a frame's and a code object's bytes (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pywalk_buf);
} py_scratch SEC(".maps");

/* State of one walk (no pointers: global functions write it). */
struct py_walk {
	struct py_desc d;
	struct pywalk_cursor c;
	__u64 fsbase, frame;
	__u32 tid;
	__s32 res; /* last step's answer */
	struct py_frame out;
	__u64 gen; /* pywalk__walk_begin()'s, 0 before the first frame */
	struct pywalk_cache_key ck;
};

struct py_loop {
	struct sp_sample *s;
	__u32 base; /* first ustack slot for Python frames */
	__u32 max;  /* frames that fit */
	__u32 n;
	__u32 pad;
	struct py_walk w;
};

__noinline int python_tstate_global(struct py_walk *w)
{
	if (!w)
		return 0;
	w->res = pywalk__tstate_step(NULL, &w->d, &w->c, w->fsbase, w->tid);
	return 0;
}

/* This CPU's buffer for the spans a step reads, or NULL. */
static __always_inline struct pywalk_buf *python_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&py_scratch, &zero);
}

/*
 * w->res = 1 when the thread state cached for w->tid (w->c.tstate) is still its own, its
 * innermost frame in w->frame.
 */
__noinline int python_tstate_cached_global(struct py_walk *w)
{
	struct pywalk_buf *b;

	if (!w)
		return 0;
	b = python_scratch();
	w->res =
	    b ? pywalk__tstate_check(NULL, &w->d, w->c.tstate, w->fsbase, w->tid, b, &w->frame) : 0;
	return 0;
}

__noinline int python_frame_global(struct py_walk *w)
{
	struct pywalk_buf *b;

	if (!w)
		return 0;
	b = python_scratch();
	if (!b) {
		w->res = -PY_STOP_READ_FAILED;
		return 0;
	}
	if (!w->gen)
		w->gen = pywalk__walk_begin(b); /* this walk's first frame */
	w->res = pywalk__frame_step(NULL, &w->d, &w->frame, &w->out, b, w->gen, &w->ck);
	return 0;
}

static long python_tstate_cb(__u64 i, void *ctx)
{
	struct py_loop *l = ctx;

	python_tstate_global(&l->w);
	return l->w.res ? 1 : 0;
}

/* The ustack slot of Python frame @n (two slots per frame), masked for the verifier. */
static __always_inline __u32 python_slot(const struct py_loop *l, __u32 n)
{
	return (l->base + 2 * n) & (SP_MAX_USTACK - 1);
}

static long python_frame_cb(__u64 i, void *ctx)
{
	struct py_loop *l = ctx;
	struct sp_sample *s = l->s;
	__u32 n = l->n, slot;

	if (n >= l->max || n >= PY_MAX_FRAMES) {
		l->w.res = l->w.frame ? -PY_STOP_DEPTH : -PY_STOP_END;
		return 1;
	}
	python_frame_global(&l->w);
	if (l->w.res < 0)
		return 1;
	if (l->w.res == 2 && n > 0) {
		/* A C-stack entry frame: the frame before it started a loop call. */
		slot = python_slot(l, n - 1);
		if (slot + 1 < SP_MAX_USTACK)
			s->ustack[slot + 1] |= (__u64)PY_FRAME_ENTRY << 32;
	} else if (l->w.res == 1) {
		slot = python_slot(l, n);
		if (slot + 1 >= SP_MAX_USTACK) {
			l->w.res = -PY_STOP_DEPTH;
			return 1;
		}
		s->ustack[slot] = l->w.out.code;
		s->ustack[slot + 1] = (__u32)l->w.out.offset | (__u64)l->w.out.flags << 32;
		l->n = n + 1;
	}
	return 0;
}

/*
 * @task's TID in the PID namespace it lives in (the innermost: task_pid_vnr() as the task itself
 * sees it, what gettid() returns to it and what CPython 3.11+ stores as a thread state's
 * native_thread_id), or 0 when unreadable (a task whose exit released its struct pid). Not
 * inlined: its reads' stack slots stay off the deepest chain of calls, the frame step's, which
 * sits at 6.1's 512-byte bound (docs/kernels.md). The level is bounded by the kernel
 * (MAX_PID_NS_LEVEL, 32): numbers[] holds level + 1 entries.
 */
static __noinline __u32 python_ns_tid(struct task_struct *task)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	unsigned int level;

	if (!p)
		return 0;
	level = BPF_CORE_READ(p, level);
	return (__u32)BPF_CORE_READ(p, numbers[level].nr);
}

static __always_inline void python_stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &which);

	if (v)
		*v += n;
}

static __always_inline void python_stat(__u32 which)
{
	python_stat_add(which, 1);
}

static __always_inline void python_sample(struct task_struct *task, struct sp_sample *s)
{
	struct py_loop l = {};
	struct py_walk *w = &l.w;
	const struct py_desc *d;
	const struct py_code_epoch *ep;
	struct pywalk_buf *b;
	__u32 pid = s->pid, tid = s->tid;
	__u64 *cached;
	int res = 1, have_frame = 0;

	if (!python_enabled)
		return;
	d = bpf_map_lookup_elem(&py_procs, &pid);
	if (!d || (d->start_boot_ns && d->start_boot_ns != s->pstart_boot_ns))
		return;
	l.s = s;
	/* A native walk cut at the depth limit: its root-most frames make room (python.h). */
	if (s->ustack_end == SP_USTACK_DEPTH && s->ustack_len > SP_MAX_USTACK - 2 * PY_ROOM_FRAMES)
		s->ustack_len = SP_MAX_USTACK - 2 * PY_ROOM_FRAMES;
	l.base = s->ustack_len;
	l.max = l.base < SP_MAX_USTACK ? (SP_MAX_USTACK - l.base) / 2 : 0;
	w->d = *d;
	/*
	 * The thread pointer identifies a thread state only before 3.11 (its native TID after:
	 * the TID in the process's own PID namespace, not the host's, in a container).
	 */
	if (!w->d.has_native_thread_id) {
		w->fsbase = BPF_CORE_READ(task, thread.fsbase);
	} else {
		w->tid = python_ns_tid(task);
		if (!w->tid) {
			/* No TID to match: no thread state proven this thread's. */
			s->py_stop = PY_STOP_NO_TSTATE;
			python_stat(0);
			python_stat(PY_STOP_NO_TSTATE);
			return;
		}
	}
	/* The code epoch before any frame is read (bpf/python.h: the code-object cache). */
	ep = bpf_map_lookup_elem(&py_code_epochs, &pid);
	if (ep) {
		w->ck.epoch = *(const volatile __u64 *)&ep->epoch;
		w->ck.tgid = pid;
	}
	/* The thread state of this thread's last sample, if still its own: no search. */
	cached = bpf_map_lookup_elem(&py_threads, &tid);
	if (cached && *cached) {
		w->c.tstate = *cached;
		python_tstate_cached_global(w);
		if (w->res == 1)
			res = 0, have_frame = 1;
	}
	if (res)
		res = pywalk__tstate_begin(NULL, &w->d, &w->c);
	if (res == 0 && w->res != 1) {
		w->res = 0;
		/* One thread state per iteration, over every interpreter's list. */
		bpf_loop(PY_MAX_THREAD_STEPS, python_tstate_cb, &l, 0);
		res = w->res < 0 ? w->res : w->res == 0 ? -PY_STOP_TOO_MANY_THREADS : 0;
		if (!res)
			bpf_map_update_elem(&py_threads, &tid, &w->c.tstate, BPF_ANY);
	}
	if (!res && !have_frame)
		res = pywalk__first_frame(NULL, &w->d, w->c.tstate, &w->frame);
	if (!res) {
		/* One frame per iteration; skipped frames count too. */
		w->res = 0;
		bpf_loop(PY_MAX_FRAME_STEPS, python_frame_cb, &l, 0);
		res = w->res < 0 ? w->res : -PY_STOP_DEPTH;
	}
	s->py_len = l.n;
	s->py_stop = -res;
	python_stat(0);
	python_stat(-res);
	b = w->gen ? python_scratch() : NULL;
	if (b && b->gen == w->gen) {
		python_stat_add(PY_STAT_CODE_CACHED, b->memo.cached);
		python_stat_add(PY_STAT_CODE_READ, b->memo.read);
	}
}

/*
 * A code object is about to be freed (uprobe at the entry of PyCode_Type.tp_dealloc, attached
 * by the agent in each CPython file it describes): the process's cached code objects are void
 * (bpf/python.h). Before the object's memory goes back to the allocator, so before any other
 * code object can take its address.
 */
SEC("uprobe")
int on_py_code_dealloc(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct py_code_epoch *ep = bpf_map_lookup_elem(&py_code_epochs, &pid);

	if (ep) {
		__sync_fetch_and_add(&ep->epoch, 1);
		python_stat(PY_STAT_CODE_FREED);
	}
	return 0;
}

/*
 * A descriptor describes one image of one process: exec replaces it, and the last thread's exit
 * ends it. Dropped here at once, so that no sample walks another image with it before the agent
 * hears of the change. Parts of the exec and exit hooks (bpf/prochooks.bpf.h).
 */
static __always_inline void python_on_leader_exit(__u32 pid)
{
	bpf_map_delete_elem(&py_code_epochs, &pid);
}

static __always_inline void python_on_exec_or_exit(__u32 pid)
{
	sp_map_forget(&py_procs, &pid);
	bpf_map_delete_elem(&py_code_epochs, &pid);
}

#endif /* SPANPROF_PYTHON_BPF_H */
