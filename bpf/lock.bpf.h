/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lock profile (--profile lock, docs/profile-types.md): its programs, included by sampler.bpf.c
 * after sp_sample_begin()/sp_sample_finish(). Loaded only when the profile type is selected.
 *
 * A contended lock sleeps in futex(2); the two syscall tracepoints time each sleep that
 * bpf/lock.h classifies as a lock wait: entry stores the time and the futex address in the
 * thread's task storage, exit measures the wait and, at or above lock_min_wait_ns only, takes
 * the waiter's user stack (it is still inside the lock function: same thread, same stack) and
 * hands one sample to the agent, value = wait in nanoseconds, addr = futex address (for a
 * pthread mutex, its own address: the futex word is its first member). Uncontended
 * acquisitions never enter the kernel and cost nothing; other futex calls cost the two
 * classifications. Every wait ends in exactly one SP_STAT_LOCK_* outcome.
 */
#ifndef SPANPROF_LOCK_BPF_H
#define SPANPROF_LOCK_BPF_H

#include "lock.h"

/* Set before load (--lock-min-wait): shorter waits are counted, never sampled. */
const volatile __u64 lock_min_wait_ns = 10000;

/* A thread's futex wait in progress (between the two tracepoints). */
struct lock_wait {
	__u64 enter_ns; /* CLOCK_BOOTTIME at sys_enter_futex; 0: no wait in progress */
	__u64 uaddr;	/* the futex word */
};

/* Per thread, freed with the thread: a thread killed inside futex(2) leaves nothing behind. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lock_wait);
} lock_waits SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_futex")
int on_lock_futex_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task;
	struct lock_wait *w;
	__u64 id;

	if (!sampling || !sp_lock_classify((__u32)ctx->args[1], (__u32)ctx->args[2]))
		return 0;
	id = bpf_get_current_pid_tgid();
	if (!sp_process_wanted(id >> 32))
		return 0;
	task = bpf_get_current_task_btf();
	w = bpf_task_storage_get(&lock_waits, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!w) {
		stat_inc(SP_STAT_LOCK_NO_STORAGE);
		return 0;
	}
	/* A wait whose exit was never seen (restarted after a signal as restart_syscall). */
	if (w->enter_ns)
		stat_inc(SP_STAT_LOCK_LOST);
	stat_inc(SP_STAT_LOCK_WAITS);
	w->uaddr = ctx->args[0];
	w->enter_ns = bpf_ktime_get_boot_ns();
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_futex")
int on_lock_futex_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lock_wait *w;
	struct sp_sample *s;
	__u64 wait, addr;

	w = bpf_task_storage_get(&lock_waits, task, 0, 0);
	if (!w || !w->enter_ns)
		return 0;
	wait = bpf_ktime_get_boot_ns() - w->enter_ns;
	addr = w->uaddr;
	w->enter_ns = 0;
	if (wait < lock_min_wait_ns) {
		stat_inc(SP_STAT_LOCK_SHORT);
		return 0;
	}
	/* The user stack is the waiter's: the tracepoint runs on its way back to user mode. */
	s = sp_sample_begin(task, bpf_get_current_pid_tgid(), SP_PROF_LOCK, wait, addr);
	if (!s)
		return 0;
	sp_sample_finish(ctx, task, s);
	return 0;
}

#endif
