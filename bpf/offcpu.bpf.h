/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offcpu profile (--profile offcpu, docs/profile-types.md): its programs, included by sampler.bpf.c
 * after sp_sample_begin()/sp_sample_finish(). Loaded only when the profile type is selected.
 *
 * A blocked period is measured in tp_btf/sched_switch: when a user thread of a profiled process
 * blocks (switched out in a sleeping state, not preempted), its switch-out time goes into its task
 * storage; when it is switched in again, the time off CPU is known. A period of at least
 * offcpu_min_ns becomes a pending event in the thread's task storage, with the kernel stack it
 * blocked with (taken then: the thread is not running yet) and its user pc and sp.
 *
 * The user stack can only be walked by the thread itself (the walker reads the current task's
 * registers and memory), so the sample is sent at the thread's next syscall exit
 * (tp_btf/sys_exit), the way out of the syscall it blocked in: its user registers are then still
 * those it blocked with. When they are not (it blocked outside a syscall, e.g. in a page fault,
 * and its next syscall is somewhere else) the event is dropped and counted as stale.
 */
#ifndef SPANPROF_OFFCPU_BPF_H
#define SPANPROF_OFFCPU_BPF_H

/* Set before load: blocked periods shorter than this are not reported (--offcpu-min). */
const volatile __u64 offcpu_min_ns = 1000000;

/* task_struct.flags (include/linux/sched.h; values stable since they were introduced). */
#define OFFCPU_PF_KTHREAD 0x00200000	 /* kernel thread: no user stack */
#define OFFCPU_PF_USER_WORKER 0x00004000 /* io_uring/vhost worker: never returns to user mode */

/* Switch-out time of a blocked thread (CLOCK_BOOTTIME ns); 0 while it runs. */
struct offcpu_out {
	__u64 out_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_out);
} offcpu_outs SEC(".maps");

/*
 * A blocked period waiting for the thread's next syscall exit. Created at switch-in, deleted when
 * sent (or found stale): only threads between a wakeup and their syscall exit hold one.
 */
struct offcpu_pending {
	__u64 start_ns; /* switch-out time of the first period */
	__u64 value_ns; /* time off CPU (periods of one syscall add up) */
	__u64 ip, sp;	/* user registers the thread blocked with */
	__u32 kstack_len;
	__u32 pad;
	__u64 kstack[SP_MAX_KSTACK]; /* kernel PCs at switch-out, leaf first */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_pending);
} offcpu_pend SEC(".maps");

/* A user thread of a profiled process: not a kernel thread nor a kernel-side user worker. */
static __always_inline bool offcpu_user_task(struct task_struct *t)
{
	return !(t->flags & (OFFCPU_PF_KTHREAD | OFFCPU_PF_USER_WORKER));
}

/* next was off CPU for delta ns since start: record or extend its pending event. */
static __always_inline void offcpu_pending_add(struct task_struct *next, __u64 start, __u64 delta)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(next);
	struct offcpu_pending *p;
	long n;

	if (!regs)
		return;
	p = bpf_task_storage_get(&offcpu_pend, next, NULL, 0);
	if (p) {
		if (p->ip == regs->ip && p->sp == regs->sp) {
			/* Blocked again in the same syscall before reaching its exit: one event. */
			p->value_ns += delta;
			stat_inc(SP_STAT_OFFCPU_MERGED);
			return;
		}
		/* The earlier event never reached a syscall exit with its registers. */
		stat_inc(SP_STAT_OFFCPU_STALE);
	} else {
		p = bpf_task_storage_get(&offcpu_pend, next, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!p) {
			stat_inc(SP_STAT_OFFCPU_NO_STORAGE);
			return;
		}
	}
	p->start_ns = start;
	p->value_ns = delta;
	p->ip = regs->ip;
	p->sp = regs->sp;
	/* next is not running: its saved kernel stack is the one it blocked with. */
	n = bpf_get_task_stack(next, p->kstack, sizeof(p->kstack), 0);
	if (n < 0) {
		stat_inc(SP_STAT_KSTACK_ERR);
		n = 0;
	}
	p->kstack_len = n / sizeof(__u64);
}

/*
 * Every context switch of the machine: keep it short. prev blocks (not preempted: a runnable
 * thread waits for a CPU, not for an event), next comes back.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct offcpu_out *o;
	__u64 now = 0, start;

	if (!sampling)
		return 0;
	/* The tracepoint runs in prev's context: the targeting filters read the current task. */
	if (!preempt && prev_state && offcpu_user_task(prev) && sp_process_wanted(prev->tgid)) {
		o = bpf_task_storage_get(&offcpu_outs, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (o) {
			now = bpf_ktime_get_boot_ns();
			o->out_ns = now;
		} else {
			stat_inc(SP_STAT_OFFCPU_NO_STORAGE);
		}
	}

	if (!offcpu_user_task(next))
		return 0;
	o = bpf_task_storage_get(&offcpu_outs, next, NULL, 0);
	if (!o || !o->out_ns)
		return 0;
	start = o->out_ns;
	o->out_ns = 0;
	if (!now)
		now = bpf_ktime_get_boot_ns();
	if (now - start >= offcpu_min_ns)
		offcpu_pending_add(next, start, now - start);
	return 0;
}

/* Every syscall exit of the machine: one task-storage lookup unless a pending event waits. */
SEC("tp_btf/sys_exit")
int BPF_PROG(on_offcpu_sys_exit, struct pt_regs *uregs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct offcpu_pending *p;
	struct pt_regs *regs;
	struct sp_sample *s;
	__u32 len;

	p = bpf_task_storage_get(&offcpu_pend, task, NULL, 0);
	if (!p)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || regs->ip != p->ip || regs->sp != p->sp) {
		/* Blocked outside this syscall (page fault, ...): its stack is gone. */
		stat_inc(SP_STAT_OFFCPU_STALE);
	} else if (sampling) {
		s = sp_sample_begin((struct task_struct *)task, bpf_get_current_pid_tgid(),
				    SP_PROF_OFFCPU, p->value_ns, 0);
		if (s) {
			/* The event began at switch-out. */
			s->time_boot_ns = p->start_ns;
			len = p->kstack_len;
			if (len > SP_MAX_KSTACK)
				len = SP_MAX_KSTACK;
			if (len)
				bpf_probe_read_kernel(s->kstack, len * sizeof(__u64), p->kstack);
			s->kstack_len = len;
			/*
			 * The task again, not the variable: fewer values live across the call keep
			 * this program's stack within the 6.1 verifier's 512-byte budget of its
			 * deepest call chain (docs/kernels.md).
			 */
			sp_sample_finish(ctx, bpf_get_current_task_btf(), s);
		}
	}
	bpf_task_storage_delete(&offcpu_pend, bpf_get_current_task_btf());
	return 0;
}

#endif
