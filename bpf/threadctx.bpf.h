/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Thread context reader (OTEP 4947): at each sample, find the sampled thread's
 * otel_thread_ctx_v1 (a TLS pointer to its context record), read and check the
 * record, and copy it into the sample. The agent computes, per process, where
 * the variable lives (struct sp_tls_loc, from exporter/spans/tlsctx.c); here only the
 * thread pointer (the task's fsbase, x86-64) and the DTV are read. Every sample
 * of a process with a descriptor ends in exactly one SP_STAT_CTX_* reason.
 *
 * --context-uprobe: uprobes on a program's context-switch function store the
 * record pointer per thread (ctx_threads); the sampler prefers it.
 *
 * Included by sampler.bpf.c after stat_inc() and the sample record.
 */
#ifndef SPANPROF_THREADCTX_BPF_H
#define SPANPROF_THREADCTX_BPF_H

/* Set before load: non-zero when some process may carry a thread context. */
const volatile __u32 threadctx_enabled = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct sp_tls_loc);
} tls_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* resized by user space */
	__type(key, __u32);	    /* tid */
	__type(value, struct sp_ctx_thread);
} ctx_threads SEC(".maps");

/* glibc's x86-64 TCB: tcbhead_t { void *tcb; dtv_t *dtv; ... } at the thread pointer. */
#define SP_TCB_DTV_OFFSET 8
/* dtv_t entries are 16 bytes ({ void *val; void *to_free; }); dtv[-1].counter = slots. */
#define SP_DTV_ENTRY 16
#define SP_DTV_UNALLOCATED ((__u64)-1)

/* Address of otel_thread_ctx_v1 for the current thread, or 0 (reason counted). */
static __always_inline __u64 threadctx_var_addr(struct task_struct *task,
						const struct sp_tls_loc *loc)
{
	__u64 fs = BPF_CORE_READ(task, thread.fsbase), dtv = 0, slots = 0, val = 0;

	if (!fs) {
		stat_inc(SP_STAT_CTX_READ_FAILED);
		return 0;
	}
	if (loc->kind == SP_TLS_STATIC)
		return fs + loc->tpoff;
	if (loc->kind != SP_TLS_DTV)
		return 0;
	if (bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(fs + SP_TCB_DTV_OFFSET)) || !dtv ||
	    bpf_probe_read_user(&slots, sizeof(slots), (void *)(dtv - SP_DTV_ENTRY))) {
		stat_inc(SP_STAT_CTX_READ_FAILED);
		return 0;
	}
	/* A thread's DTV grows lazily: a module loaded after its last resize is not in it yet. */
	if (loc->module_id == 0 || loc->module_id > slots) {
		stat_inc(SP_STAT_CTX_UNALLOCATED);
		return 0;
	}
	if (bpf_probe_read_user(&val, sizeof(val),
				(void *)(dtv + (__u64)loc->module_id * SP_DTV_ENTRY))) {
		stat_inc(SP_STAT_CTX_READ_FAILED);
		return 0;
	}
	if (val == 0 || val == SP_DTV_UNALLOCATED) {
		stat_inc(SP_STAT_CTX_UNALLOCATED);
		return 0;
	}
	return val + loc->offset;
}

/* Reads the record at @rec into the sample if it is valid (counts the reason either way). */
static __always_inline void threadctx_read_record(struct sp_sample *s, __u64 rec)
{
	__u64 *ids = (__u64 *)s->ctx;
	__u32 size;

	if (!rec) {
		stat_inc(SP_STAT_CTX_NO_SPAN);
		return;
	}
	if (bpf_probe_read_user(s->ctx, SP_CTX_HEADER, (void *)rec)) {
		stat_inc(SP_STAT_CTX_READ_FAILED);
		return;
	}
	if (s->ctx[24] != 1) {
		stat_inc(SP_STAT_CTX_NOT_VALID);
		return;
	}
	/* OTLP links need both ids: an all-zero trace id or span id is no span. */
	if ((!ids[0] && !ids[1]) || !ids[2]) {
		stat_inc(SP_STAT_CTX_ZERO_TRACE);
		return;
	}
	size = s->ctx[26] | (__u32)s->ctx[27] << 8; /* attrs_data_size, little endian */
	if (size > SP_CTX_MAX_ATTRS) {
		stat_inc(SP_STAT_CTX_ATTRS_TOO_BIG);
		return;
	}
	if (size &&
	    bpf_probe_read_user(s->ctx + SP_CTX_HEADER, size, (void *)(rec + SP_CTX_HEADER))) {
		stat_inc(SP_STAT_CTX_READ_FAILED);
		return;
	}
	s->ctx_len = SP_CTX_HEADER + size;
	stat_inc(SP_STAT_CTX_LINKED);
}

/* Fills s->ctx / s->ctx_len for the current thread (s->ctx_len is 0 on entry). */
static __always_inline void threadctx_sample(struct task_struct *task, struct sp_sample *s)
{
	struct sp_ctx_thread *ct;
	struct sp_tls_loc *loc;
	__u32 pid = s->pid, tid = s->tid; /* map keys on the stack, not in the ring buffer */
	__u64 var, rec = 0;

	if (!threadctx_enabled)
		return;
	ct = bpf_map_lookup_elem(&ctx_threads, &tid);
	if (ct && ct->start_boot_ns == s->pstart_boot_ns) {
		stat_inc(SP_STAT_CTX_UPROBE);
		threadctx_read_record(s, ct->record);
		return;
	}
	loc = bpf_map_lookup_elem(&tls_procs, &pid);
	if (!loc)
		return;
	if (loc->start_boot_ns && loc->start_boot_ns != s->pstart_boot_ns) {
		stat_inc(SP_STAT_CTX_STALE);
		return;
	}
	var = threadctx_var_addr(task, loc);
	if (!var)
		return;
	if (bpf_probe_read_user(&rec, sizeof(rec), (void *)var)) {
		stat_inc(SP_STAT_CTX_READ_FAILED);
		return;
	}
	threadctx_read_record(s, rec);
}

/* --- --context-uprobe ------------------------------------------------------------------------ */

/* Argument @n (1-6, SysV x86-64) of a copy of the registers (the verifier forbids
 * variable offsets into the context itself). */
static __always_inline __u64 threadctx_arg(struct pt_regs *ctx, __u32 n)
{
	struct pt_regs copy, *regs = &copy;

	if (bpf_probe_read_kernel(&copy, sizeof(copy), ctx))
		return 0;
	switch (n) {
	case 1:
		return regs->di;
	case 2:
		return regs->si;
	case 3:
		return regs->dx;
	case 4:
		return regs->cx;
	case 5:
		return regs->r8;
	default:
		return regs->r9;
	}
}

/* Stores (or with 0 removes) the current thread's record pointer. */
static __always_inline void threadctx_set(__u64 rec)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sp_ctx_thread ct = {.record = rec};

	if (!rec) {
		bpf_map_delete_elem(&ctx_threads, &tid);
		return;
	}
	ct.start_boot_ns = task->group_leader->start_boottime;
	bpf_map_update_elem(&ctx_threads, &tid, &ct, BPF_ANY);
}

/* The record pointer the thread's otel_thread_ctx_v1 holds now, or 0. */
static __always_inline __u64 threadctx_tls_record(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sp_tls_loc *loc = bpf_map_lookup_elem(&tls_procs, &pid);
	__u64 var, rec = 0;

	if (!loc)
		return 0;
	var = threadctx_var_addr(task, loc);
	if (!var || bpf_probe_read_user(&rec, sizeof(rec), (void *)var))
		return 0;
	return rec;
}

/* Entry of the context function: the record is an argument (cookie: SP_CTXP_*). */
SEC("uprobe")
int BPF_KPROBE(on_ctx_enter)
{
	__u64 mode = bpf_get_attach_cookie(ctx);
	__u32 arg = mode & SP_CTXP_ARG_MASK;

	if (arg)
		threadctx_set(threadctx_arg(ctx, arg));
	return 0;
}

/* Return of the context function: read the TLS variable it set, or end a scoped context. */
SEC("uretprobe")
int BPF_KRETPROBE(on_ctx_return)
{
	__u64 mode = bpf_get_attach_cookie(ctx);

	if (mode & SP_CTXP_CLEAR)
		threadctx_set(0);
	else if (mode & SP_CTXP_TLS)
		threadctx_set(threadctx_tls_record());
	return 0;
}

/* Set by the agent when context uprobes are attached (ctx_threads is in use). */
const volatile __u32 ctx_threads_enabled = 0;

/* A thread exits: forget its record pointer. Part of the exit hook (bpf/prochooks.bpf.h). */
static __always_inline void threadctx_on_thread_exit(__u32 tid)
{
	sp_map_forget(&ctx_threads, &tid);
}

/* PR_SET_VMA of include/uapi/linux/prctl.h: names a mapping ("OTEL_CTX", OTEP 4719). */
#define SP_PR_SET_VMA 0x53564d41

/* A process names a mapping (@option: prctl(2)'s first): have the agent read its process
 * context again. */
static __always_inline int threadctx_on_prctl(__u64 option)
{
	if (option != SP_PR_SET_VMA)
		return 0;
	unwind_notify(bpf_get_current_pid_tgid() >> 32, UNWIND_EVENT_NAME, 0);
	return 0;
}

/*
 * The prctl hook, an fentry on the prctl system call's entry (the architecture's wrapper,
 * whose one argument is the registers of the call): it costs the processes that call prctl(2),
 * and only them. The agent's choice where the kernel takes it (KFEAT_PRCTL_FENTRY).
 */
#if defined(__TARGET_ARCH_arm64)
SEC("fentry/__arm64_sys_prctl")
#else
SEC("fentry/__x64_sys_prctl")
#endif
int BPF_PROG(on_ctx_prctl_fentry, struct pt_regs *regs)
{
	return threadctx_on_prctl(PT_REGS_PARM1_CORE_SYSCALL(regs));
}

/*
 * The prctl hook's fallback: the syscall's entry tracepoint, which puts every task of the host
 * on the slow system-call path.
 */
SEC("tracepoint/syscalls/sys_enter_prctl")
int on_ctx_prctl(struct trace_event_raw_sys_enter *ctx)
{
	return threadctx_on_prctl(ctx->args[0]);
}

#endif /* SPANPROF_THREADCTX_BPF_H */
