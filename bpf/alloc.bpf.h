/* SPDX-License-Identifier: GPL-2.0 */
/*
 * alloc profile (--profile alloc, docs/profile-types.md): its programs, included by sampler.bpf.c
 * after sp_sample_begin()/sp_sample_finish(). Loaded only when the profile type is selected.
 *
 * One uprobe program, attached by the agent (exporter/events/ev_alloc.c) to the entry of every
 * allocator function (malloc, calloc, realloc, aligned_alloc, ...) of every file that defines one.
 * It reads the size from the arguments (cookie: bpf/alloc.h), drops what is below --alloc-min-bytes
 * and calls made by one entry point to another, and counts the bytes down on a per-thread
 * countdown: when an allocation reaches it, the allocation is sampled (value: its size) with the
 * user stack of the thread, and a new exponential interval is drawn (Poisson sampling by bytes, the
 * agent scales each sample by 1 / P(sampled)). No uretprobe: the size is an argument.
 */
#ifndef SPANPROF_ALLOC_BPF_H
#define SPANPROF_ALLOC_BPF_H

#include "alloc.h"

/* Set before load (exporter/events/ev_alloc.c). 0: every allocation is sampled. */
const volatile __u64 alloc_sample_bytes = 0;
/* Allocations below this many bytes are ignored (before the countdown). */
const volatile __u64 alloc_min_bytes = 0;
/* The agent itself: its own allocations are not profiled (whole-file probes reach it too). */
const volatile __u32 alloc_self_pid = 0;
/* -ln(v) on [1/2, 1] in Q24 for the exponential draws (bpf/alloc.h). */
const volatile __u32 alloc_exp_table[ALLOC_EXP_STEPS + 1] = {};

/* Per thread: the countdown, and the last probe hit (to tell a tail call from a new call). */
struct alloc_thread {
	__u64 left;    /* bytes until the next sample; 0: not drawn yet (new thread) */
	__u64 last_sp; /* stack pointer, return address and entry point of the last hit counted */
	__u64 last_ret;
	__u64 last_ip;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct alloc_thread);
} alloc_threads SEC(".maps");

/* File index (cookie) -> its probed functions. Sized by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct alloc_file);
} alloc_files SEC(".maps");

static __always_inline __u64 alloc_draw(void)
{
	__u64 r = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();

	return alloc__next_interval(alloc_sample_bytes, r, alloc_exp_table);
}

/*
 * Whether return address @ret lies in one of the probed functions of the file of the probe at
 * @ip (cookie @cookie): the file's vaddr of the call is ret - 1 - ip + the function's vaddr.
 */
static __always_inline bool alloc_called_by_entry(__u64 cookie, __u64 ip, __u64 ret)
{
	__u32 idx = ALLOC_COOKIE_FILE(cookie);
	struct alloc_file *f;
	__u64 v;

	if (!ret)
		return false;
	f = bpf_map_lookup_elem(&alloc_files, &idx);
	if (!f)
		return false;
	v = ret - 1 - ip + ALLOC_COOKIE_VADDR(cookie);
	/* ALLOC_MAX_FUNCS: the entry points of one file (bpf/alloc.h). */
	for (__u32 i = 0; i < ALLOC_MAX_FUNCS; i++) {
		if (i >= f->n)
			break;
		if (v >= f->r[i].lo && v < f->r[i].hi)
			return true;
	}
	return false;
}

/* a * b, or 0 when it overflows (calloc fails then), in 32-bit halves: BPF has no 128-bit mul. */
static __always_inline __u64 alloc_mul(__u64 a, __u64 b)
{
	__u64 big = a > b ? a : b, small = a > b ? b : a, lo, hi;

	if (small >> 32)
		return 0;
	lo = (big & 0xffffffffull) * small;
	hi = (big >> 32) * small + (lo >> 32);
	if (hi >> 32)
		return 0;
	return (hi << 32) | (lo & 0xffffffffull);
}

SEC("uprobe")
int BPF_KPROBE(on_alloc)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie, size, a, b, sp, ip, ret = 0;
	struct task_struct *task;
	struct alloc_thread *t;
	struct sp_sample *s;

	if (!sampling || (id >> 32) == alloc_self_pid || !sp_process_wanted(id >> 32))
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
	switch (ALLOC_COOKIE_KIND(cookie)) {
	case ALLOC_KIND_ARG2:
		size = PT_REGS_PARM2(ctx);
		break;
	case ALLOC_KIND_ARG3:
		size = PT_REGS_PARM3(ctx);
		break;
	case ALLOC_KIND_CALLOC:
		a = PT_REGS_PARM1(ctx);
		b = PT_REGS_PARM2(ctx);
		size = alloc_mul(a, b);
		break;
	default:
		size = PT_REGS_PARM1(ctx);
		break;
	}
	stat_inc(SP_STAT_ALLOC_CALLS);
	if (size < alloc_min_bytes) {
		stat_inc(SP_STAT_ALLOC_SMALL);
		return 0;
	}

	task = bpf_get_current_task_btf();
	t = bpf_task_storage_get(&alloc_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		stat_inc(SP_STAT_ALLOC_NO_STORAGE);
		return 0;
	}
	/*
	 * One allocation, one count: an entry point reached from another one is skipped. A call
	 * (glibc realloc of an mmapped block -> malloc) returns into the outer function; a tail
	 * jump (glibc realloc(NULL, n) -> malloc) arrives with the outer hit's stack pointer and
	 * return address at another entry point (a new call from the same place would be at the
	 * same entry point).
	 */
	sp = PT_REGS_SP(ctx);
	ip = PT_REGS_IP(ctx);
	if (bpf_probe_read_user(&ret, sizeof(ret), (const void *)sp))
		ret = 0;
	if ((sp == t->last_sp && ret == t->last_ret && ip != t->last_ip) ||
	    alloc_called_by_entry(cookie, ip, ret)) {
		stat_inc(SP_STAT_ALLOC_NESTED);
		return 0;
	}
	t->last_sp = sp;
	t->last_ret = ret;
	t->last_ip = ip;

	if (alloc_sample_bytes) {
		if (!t->left)
			t->left = alloc_draw();
		if (size < t->left) {
			t->left -= size;
			return 0;
		}
		t->left = alloc_draw();
	}

	s = sp_sample_begin(task, id, SP_PROF_ALLOC, size, 0);
	if (!s)
		return 0;
	s->flags |= SP_SAMPLE_FUNC_ENTRY;
	sp_sample_finish(ctx, task, s); /* user stack only: the kernel's is the trap's */
	return 0;
}

#endif /* SPANPROF_ALLOC_BPF_H */
