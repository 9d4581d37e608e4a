/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel differences in one place (docs/kernels.md). vmlinux.h comes from the build host's
 * kernel; the programs run on every kernel from the documented minimum on. Each difference is a
 * CO-RE flavour (a struct named TYPE___suffix, matched by libbpf against the running kernel's
 * BTF by the part before "___") or a bpf_core_*_exists() test, and names the kernel version
 * that made it necessary. The branch a test rules out is dead code to the verifier: its
 * relocations may fail (libbpf poisons them) and its accesses are never checked.
 */
#ifndef SPANPROF_CORE_FIXES_BPF_H
#define SPANPROF_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/*
 * pt_regs.cs: an unsigned long in 6.1; since the x86 FRED work (6.9; 6.12 has it) a u16 in a
 * union with the u64 csx. A 2-byte read of it
 * (vmlinux.h from a newer kernel) is widened by libbpf to 8 bytes on an older kernel, which is
 * fine through a BTF pointer (bpf_task_pt_regs()); the perf_event context takes only whole
 * 8-byte loads of its registers at a constant offset, so on_cpu_sample does not read cs at all
 * (it tests the ip, an 8-byte field everywhere: sampler.bpf.c).
 */

/*
 * tp_btf/sched_process_exit: (struct task_struct *p) in 6.1 and 6.12; a later kernel (6.18 has
 * it) added (bool group_dead), with the event record struct trace_event_raw_sched_process_exit
 * that holds it. Before, the tracepoint fires after do_exit() counted the thread out of
 * signal->live, so the group is dead when that count is 0.
 * @ctx: the tp_btf argument array. Returns 1 when @p was the last thread of its process.
 */
struct trace_event_raw_sched_process_exit___sp_new {
	bool group_dead;
} __attribute__((preserve_access_index));

static __always_inline int sp_exit_group_dead(__u64 *ctx, struct task_struct *p)
{
	if (bpf_core_field_exists(struct trace_event_raw_sched_process_exit___sp_new, group_dead))
		return (__u8)ctx[1] != 0;
	return BPF_CORE_READ(p, signal, live.counter) == 0;
}

#endif /* SPANPROF_CORE_FIXES_BPF_H */
