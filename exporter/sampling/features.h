/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel features spanprof's BPF programs need (docs/kernels.md), probed on the running kernel at
 * start, never assumed from the build host's headers: helpers, program and map types through
 * libbpf's probing API (libbpf_probe_bpf_helper(), libbpf_probe_bpf_prog_type(),
 * libbpf_probe_bpf_map_type()), tracepoint argument lists through the kernel's BTF
 * (/sys/kernel/btf/vmlinux). Each feature names the upstream kernel version that brought it
 * (distributions may backport). Not thread-safe; no global state.
 */
#ifndef SPANPROF_SAMPLING_FEATURES_H
#define SPANPROF_SAMPLING_FEATURES_H

#include <stdint.h>
#include <stdio.h>

/* Features, in the order they are reported; kfeature__name() and __since() describe each. */
enum kfeature {
	KFEAT_BTF,		 /* kernel BTF at /sys/kernel/btf/vmlinux */
	KFEAT_PERF_EVENT_PROG,	 /* BPF_PROG_TYPE_PERF_EVENT */
	KFEAT_RINGBUF,		 /* BPF_MAP_TYPE_RINGBUF */
	KFEAT_BOOT_NS,		 /* bpf_ktime_get_boot_ns() */
	KFEAT_TASK_BTF,		 /* bpf_get_current_task_btf() */
	KFEAT_TASK_PT_REGS,	 /* bpf_task_pt_regs() */
	KFEAT_ATTACH_COOKIE,	 /* bpf_get_attach_cookie() */
	KFEAT_LOOP,		 /* bpf_loop() */
	KFEAT_FIND_VMA,		 /* bpf_find_vma() */
	KFEAT_TASK_STORAGE,	 /* BPF_MAP_TYPE_TASK_STORAGE */
	KFEAT_GET_TASK_STACK,	 /* bpf_get_task_stack() */
	KFEAT_SWITCH_PREV_STATE, /* tp_btf/sched_switch's 4th argument, prev_state */
	KFEAT_MAPLE_TREE,	 /* VMAs in a maple tree (mm_struct.mm_mt) */
	KFEAT_MMAP_FENTRY,	 /* an fentry program on ksys_mmap_pgoff() loads: the mmap hook */
	KFEAT_PRCTL_FENTRY,	 /* an fentry program on prctl(2)'s entry loads: the prctl hook */
	KFEAT_COUNT
};

/* Probe results: have[f] is 1 (present), 0 (absent) or -1 (the probe itself failed). */
struct kfeatures {
	int8_t have[KFEAT_COUNT];
};

/*
 * Probes every feature on the running kernel into @f. Needs the privileges of loading BPF
 * (CAP_BPF, CAP_PERFMON or root). Returns 0; a probe that fails for another reason than the
 * feature's absence leaves -1 (the load then reports what the kernel said).
 */
int kfeatures__probe(struct kfeatures *f);

/* What @feat is ("the bpf_loop() helper"), and the kernel version that brought it ("5.17"). */
const char *kfeature__name(enum kfeature feat);
const char *kfeature__since(enum kfeature feat);

/*
 * The first feature of the bitmask @need (1 << KFEAT_*) that @f lacks (have 0),
 * or KFEAT_COUNT when none is missing. Unknown (-1) counts as present: the load decides.
 */
enum kfeature kfeatures__first_missing(const struct kfeatures *f, uint32_t need);

/*
 * Number of arguments of the raw BTF tracepoint @name (e.g. "sched_switch": the parameters of
 * its btf_trace_<name> typedef, less the leading void *), from the kernel's BTF; -errno when the
 * BTF or the tracepoint is not there.
 */
int kfeatures__tp_btf_nargs(const char *name);

/*
 * 1 when the kernel's struct @type has a member @member (BTF), 0 when not, -errno when the BTF
 * or the struct is not there.
 */
int kfeatures__btf_has_member(const char *type, const char *member);

/* One line per feature on @f ("  bpf_loop() helper (5.17): yes"), for SPANPROF_DEBUG. */
void kfeatures__print(const struct kfeatures *f, FILE *out);

#endif /* SPANPROF_SAMPLING_FEATURES_H */
