// SPDX-License-Identifier: GPL-2.0
/*
 * CPU sampler: runs on a software cpu-clock perf event on every CPU and hands
 * one struct sp_sample per sample to user space through a ring buffer. Every
 * sample that is not delivered is counted in "stats" by reason. User stacks are
 * walked with the agent's CFI tables (unwind.bpf.h) for processes it has loaded,
 * with frame pointers (bpf_get_stack) for the others.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "sampler.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* x86-64: the kernel runs in the upper canonical half (top bit set, 4- and 5-level paging). */
#define SP_USER_ADDR_END (1ull << 63)

/*
 * Wake the agent only once this many bytes wait in the ring buffer (set before load to a
 * quarter of its size), or for a process it has not loaded yet (it must read the maps of a
 * short-lived process before it exits): a wakeup per sample (an irq_work) costs more than
 * the rest of the program. The agent also drains the ring on its 100 ms poll timeout.
 */
const volatile __u64 ringbuf_wakeup_bytes = 0;
/* Set by the agent when sampling starts (the perf events run from attach on). */
volatile __u32 sampling = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += n;
}

static __always_inline void stat_inc(__u32 which)
{
	stat_add(which, 1);
}

/*
 * Deletes @key from hash map @map if it is there; 1 when it was. The process hooks forget
 * entries that a new process or thread almost never has: a hash lookup is lock-free (RCU),
 * where a delete takes the bucket's lock with interrupts off even when the key is absent. An
 * entry added between the two is one the agent added after the event, as it could have been
 * after a delete alone.
 */
static __always_inline int sp_map_forget(void *map, const void *key)
{
	return bpf_map_lookup_elem(map, key) && !bpf_map_delete_elem(map, key);
}

/* One bit per thread group id and map: the agent may hold its entry (bpf/sampler.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_PROC_KNOWN_WORDS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} proc_known SEC(".maps");

/*
 * 1 when the agent may hold @pid's entry of @map (its bit is set; a PID beyond the bitmap:
 * always), leaving the bit alone. An array lookup: inlined by the verifier.
 */
static __always_inline bool sp_proc_known(__u32 pid, enum sp_proc_known_map map)
{
	__u32 w = SP_PROC_KNOWN_WORD(pid, map);
	__u64 *v = bpf_map_lookup_elem(&proc_known, &w);

	return !v || (*v & (1ull << (pid % 64)));
}

/*
 * sp_proc_known(), clearing the bit (atomically: the agent sets other bits of the word): for
 * the exec and exit hooks, which then forget the entry. The agent sets the bit again when it
 * writes the new image's entries. A fetching atomic: ordered before the lookups that follow.
 */
static __always_inline bool sp_proc_known_take(__u32 pid, enum sp_proc_known_map map)
{
	__u32 w = SP_PROC_KNOWN_WORD(pid, map);
	__u64 bit = 1ull << (pid % 64), *v = bpf_map_lookup_elem(&proc_known, &w);

	if (!v)
		return true;
	if (!(*v & bit))
		return false;
	return (__sync_fetch_and_and(v, ~bit) & bit) != 0;
}

/*
 * Bench builds only (make BPF_EXTRA=-DSP_WALK_TIMING; bench/runtime/walk_time.py): the time of
 * each walk of a user stack, whole (its map lookups, reads and steps), from bpf_ktime_get_ns()
 * around it, per kind (enum sp_walk_kind) and per CPU: walks, their ns and frames summed, and
 * a histogram of SP_WALK_BUCKET_NS-wide buckets (the last one: everything longer). Walks that
 * produced no frame are not counted. Without the flag none of it is compiled.
 */
enum sp_walk_kind { SP_WALK_NATIVE, SP_WALK_PYTHON, SP_WALK_KINDS };
#ifdef SP_WALK_TIMING
#define SP_WALK_BUCKETS 256
#define SP_WALK_BUCKET_NS 50
struct sp_walk_time {
	__u64 walks, ns, frames;
	__u64 hist[SP_WALK_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_WALK_KINDS);
	__type(key, __u32);
	__type(value, struct sp_walk_time);
} walk_time SEC(".maps");

static __always_inline __u64 sp_walk_clock(void)
{
	return bpf_ktime_get_ns();
}

static __always_inline void sp_walk_done(__u32 kind, __u64 t0, __u64 frames)
{
	__u64 dt = bpf_ktime_get_ns() - t0, b = dt / SP_WALK_BUCKET_NS;
	struct sp_walk_time *v = bpf_map_lookup_elem(&walk_time, &kind);

	if (!v || !frames)
		return;
	v->walks++;
	v->ns += dt;
	v->frames += frames;
	if (b >= SP_WALK_BUCKETS)
		b = SP_WALK_BUCKETS - 1;
	v->hist[b & (SP_WALK_BUCKETS - 1)]++; /* a power of two: the mask bounds it */
}
#else
#define sp_walk_clock() 0ull
#define sp_walk_done(kind, t0, frames) ((void)(t0))
#endif

#include "filter.bpf.h"
#include "unwind.bpf.h"
#include "threadctx.bpf.h"
#include "golabels.bpf.h"
#include "fileid.bpf.h"
#include "python.bpf.h"
#include "v8.bpf.h"
#include "php.bpf.h"
#include "prochooks.bpf.h"

/*
 * Event samples (CPU ticks and the event profiles of bpf/TYPE.bpf.h): sp_sample_begin() checks the
 * process filter, reserves the record and fills its header; the caller fills the kernel stack
 * (kstack_len) as fits its hook; sp_sample_finish() walks the user stack of the current task
 * (CFI tables, else frame pointers), reads its thread context and submits the record.
 * Both count per profile type (sp_stat_type_samples()/sp_stat_type_drop()).
 */
/* Targeting (filter.bpf.h): --pid, --exe, --cgroup, --container-id, --k8s-pod. */
static __always_inline bool sp_process_wanted(__u32 pid)
{
	return sp_filter_pass(pid);
}

static __always_inline struct sp_sample *sp_sample_begin(struct task_struct *task, __u64 id,
							 __u32 type, __u64 value, __u64 addr)
{
	struct sp_sample *s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);

	if (!s) {
		stat_inc(sp_stat_type_drop(type));
		return NULL;
	}
	s->time_boot_ns = bpf_ktime_get_boot_ns();
	s->pid = id >> 32;
	s->tid = (__u32)id;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = 0;
	s->type = type;
	s->ustack_end = SP_USTACK_COMPLETE;
	s->py_stop = 0;
	s->fp_steps = 0;
	s->py_len = 0;
	s->v8_len = 0;
	s->hs_len = 0;
	s->php_len = 0;
	s->php_stop = 0;
	s->value = value;
	s->addr = addr;
	s->kstack_len = 0;
	s->pstart_boot_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	BPF_CORE_READ_STR_INTO(&s->pcomm, task, group_leader, comm);
	return s;
}

/* include/linux/sched.h task flags */
#define SP_PF_EXITING 0x00000004 /* getting shut down */
#define SP_PF_KTHREAD 0x00200000 /* a kernel thread */

static __always_inline void sp_sample_finish(void *ctx, struct task_struct *task,
					     struct sp_sample *s)
{
	struct unwind_proc *uproc;
	__u32 pid = s->pid; /* map keys on the stack: 6.1's verifier refuses ring buffer memory */
	__u32 stop = 0, borrowed = 0, walked = 0, released = 0;
	__u64 wakeup = 0;
	long n;

	if (!BPF_CORE_READ(task, mm)) {
		s->flags |= SP_SAMPLE_KERNEL_THREAD;
		n = 0;
		/*
		 * An exiting user thread whose exit already released its memory (exit_signals()
		 * sets PF_EXITING before exit_mm()): marked. Not a kernel thread, nor a user-mode
		 * helper still in the kernel before its exec (no mm, no PF_KTHREAD, not exiting):
		 * their kernel-only stacks are whole.
		 */
		if ((BPF_CORE_READ(task, flags) & (SP_PF_KTHREAD | SP_PF_EXITING)) == SP_PF_EXITING)
			s->ustack_end = SP_USTACK_EXITING;
	} else {
		__u64 t0 = sp_walk_clock();

		n = -1;
		uproc = unwind_enabled
			    ? unwind_proc_of(task, pid, s->pstart_boot_ns, &borrowed, &released)
			    : NULL;
		if (uproc)
			n = unwind_user_stack(ctx, s, uproc, pid, borrowed, &stop);
		else
			wakeup = BPF_RB_FORCE_WAKEUP;
		if (n >= 0) {
			sp_walk_done(SP_WALK_NATIVE, t0, n);
			walked = 1;
			n *= sizeof(__u64);
			s->ustack_end = sp_ustack_end_of_stat(stop);
		} else if (unwind_enabled) {
			/* No tables for the process (yet): the leaf only, marked. */
			stat_inc(SP_STAT_UNW_FP);
			n = unwind_leaf_only(s) * sizeof(__u64);
			if (!n)
				s->ustack_end = SP_USTACK_UNREADABLE;
			else
				s->ustack_end = uproc	   ? SP_USTACK_NO_REGS
						: released ? SP_USTACK_VFORK_RELEASED
							   : SP_USTACK_NOT_LOADED;
		} else {
			/* --unwind-max-mb 0: frame pointers, as asked, marked as unverified. */
			__u64 ret = 0;

			stat_inc(SP_STAT_UNW_FP);
			/*
			 * At a function's entry the walk from RBP skips the caller: put its return
			 * address, at [sp], after the leaf (the uprobe's user registers).
			 */
			if (s->flags & SP_SAMPLE_FUNC_ENTRY) {
				/* The task's user registers: ctx is not pt_regs for every caller.
				 */
				struct pt_regs *ur =
				    (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

				if (ur)
					bpf_probe_read_user(&ret, sizeof(ret),
							    (const void *)ur->sp);
			}
			if (ret) {
				n = bpf_get_stack(ctx, &s->ustack[1],
						  sizeof(s->ustack) - sizeof(__u64),
						  BPF_F_USER_STACK);
				if (n >= (long)sizeof(__u64)) {
					s->ustack[0] = s->ustack[1];
					s->ustack[1] = ret;
					n += sizeof(__u64);
				}
			} else {
				n = bpf_get_stack(ctx, s->ustack, sizeof(s->ustack),
						  BPF_F_USER_STACK);
			}
			if (n < 0) {
				stat_inc(SP_STAT_USTACK_ERR);
				n = 0;
			}
			if (!n)
				s->ustack_end = SP_USTACK_UNREADABLE;
			else if (n >= (long)sizeof(s->ustack) ||
				 n >= fp_max_depth * (long)sizeof(__u64))
				s->ustack_end = SP_USTACK_DEPTH;
			else
				s->ustack_end = SP_USTACK_FP_ONLY;
		}
	}
	s->ustack_len = n / sizeof(__u64);
	/*
	 * File identities (bpf/fileid.bpf.h): for a process the agent has not loaded yet (it may
	 * never see it alive), or whose walk reached a PC the agent had not seen mapped (it read
	 * the maps right after exec, before the libraries were mapped, and the process is gone).
	 */
	s->vmas.n = 0;
	s->vmas.exe.ino = 0;
	s->vmas.parent = borrowed;
	if ((wakeup || borrowed || stop == SP_STAT_UNW_NO_MAPPING) && s->ustack_len)
		fileid_sample(s, s->ustack_len);

	s->ctx_len = 0;
	if (!(s->flags & SP_SAMPLE_KERNEL_THREAD)) {
		threadctx_sample(task, s);
		if (!s->ctx_len)
			golabels_sample(task, s);
		{
			__u64 t0 = sp_walk_clock();

			python_sample(task, s);
			sp_walk_done(SP_WALK_PYTHON, t0, s->py_len);
		}
		if (walked) {
			__u32 zero = 0;
			struct unwind_window *win = bpf_map_lookup_elem(&unwind_scratch, &zero);

			if (win)
				v8_sample(s, win->fp_of, win->leaf_sp,
					  s->ustack_len + 2 * (__u32)s->py_len);
			if (win && win->hs_n)
				hs_sample(s, win);
		}
		/* Last: its frames go after every other runtime's. */
		if (unwind_enabled)
			php_sample(s);
	}

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= ringbuf_wakeup_bytes)
		wakeup = BPF_RB_FORCE_WAKEUP;
	stat_inc(sp_stat_type_samples(s->type));
	bpf_ringbuf_submit(s, wakeup ? wakeup : BPF_RB_NO_WAKEUP);
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct sp_sample *s;
	long n;

	if (!sampling)
		return 0;
	if ((__u32)id == 0) {
		stat_inc(SP_STAT_IDLE);
		return 0;
	}
	if (!sp_process_wanted(id >> 32))
		return 0;

	task = (struct task_struct *)bpf_get_current_task();
	s = sp_sample_begin(task, id, SP_PROF_CPU, 0, 0);
	if (!s)
		return 0;

	/*
	 * Interrupted in user code: the kernel stack is empty, skip the helper's setup. The kernel
	 * never runs code in the lower half of the address space; a user ip elsewhere (a native
	 * vsyscall page) costs only the helper call, which finds no kernel frames. Not pt_regs.cs:
	 * its layout differs between kernels (core_fixes.bpf.h).
	 */
	if (ctx->regs.ip < SP_USER_ADDR_END)
		n = 0;
	else
		n = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
	if (n < 0) {
		stat_inc(SP_STAT_KSTACK_ERR);
		n = 0;
	}
	s->kstack_len = n / sizeof(__u64);

	sp_sample_finish(ctx, task, s);
	return 0;
}

/* Event profiles: each header defines its programs with the functions above. */
#include "alloc.bpf.h"
#include "lock.bpf.h"
#include "offcpu.bpf.h"
