/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The process hooks: one program on the exec tracepoint and one on the exit tracepoint, each
 * running the parts the agent switched on (read-only data set before load: the verifier drops
 * the others). One program per tracepoint rather than one per part: every program attached to
 * a tracepoint costs its own call, and these run for every process of the host. Included last
 * by sampler.bpf.c. Costs: docs/performance.md ("Process hooks").
 */
#ifndef SPANPROF_PROCHOOKS_BPF_H
#define SPANPROF_PROCHOOKS_BPF_H

/*
 * exec: the unwinder's entry of the process is stale (or, for a targeted process it has none
 * of, its tables are to be built now), the executable's path is wanted, the CPython descriptor
 * is stale. Each per-process map is looked up only where the agent set the process's bit of
 * it in proc_known (bpf/sampler.h): most execs are of new programs, with no entry.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = p->tgid;
	/* The targeting filters of the exec'ing task (not counted as samples), while sampling. */
	bool targeted = sampling && sp_filter_targeted(pid);

	/* A new program (its parent's fork had no entries) has no bit set: nothing to forget. */
	if (unwind_enabled) {
		if (sp_proc_known_take(pid, SP_PROC_KNOWN_V8))
			v8_forget(pid); /* its descriptor described the old image */
		if (sp_proc_known_take(pid, SP_PROC_KNOWN_HOTSPOT))
			hs_forget(pid);
		if (sp_proc_known_take(pid, SP_PROC_KNOWN_PHP))
			php_forget(pid);
		unwind_on_exec(p, pid, targeted, sp_proc_known_take(pid, SP_PROC_KNOWN_UNWIND));
	}
	if (exec_paths_enabled && targeted)
		fileid_on_exec(p, pid, bprm);
	if (python_enabled && sp_proc_known_take(pid, SP_PROC_KNOWN_PYTHON))
		python_on_exec_or_exit(pid);
	return 0;
}

/* exit of a thread (a process when its last thread exits: group_dead). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_proc_exit, struct task_struct *p) /* 1 or 2 arguments: core_fixes.bpf.h */
{
	__u32 pid = p->tgid;

	if (ctx_threads_enabled)
		threadctx_on_thread_exit(p->pid);
	/* The code-deallocation uprobe is the leader's (perf_event_open with its PID): once the
	 * leader is gone the kernel filters its hits out, so the code epoch goes with it. */
	if (python_enabled && p->pid == p->tgid)
		python_on_leader_exit(pid);
	if (!(unwind_enabled || python_enabled) || !sp_exit_group_dead(ctx, p))
		return 0;
	/* The maps of the process's set bits only (new processes often exit before any). */
	if (unwind_enabled && sp_proc_known_take(pid, SP_PROC_KNOWN_V8))
		v8_forget(pid);
	if (unwind_enabled && sp_proc_known_take(pid, SP_PROC_KNOWN_HOTSPOT))
		hs_forget(pid);
	if (unwind_enabled && sp_proc_known_take(pid, SP_PROC_KNOWN_PHP))
		php_forget(pid);
	if (unwind_enabled && sp_proc_known_take(pid, SP_PROC_KNOWN_UNWIND))
		unwind_on_exit(pid);
	if (python_enabled && sp_proc_known_take(pid, SP_PROC_KNOWN_PYTHON))
		python_on_exec_or_exit(pid);
	return 0;
}

#endif /* SPANPROF_PROCHOOKS_BPF_H */
