/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Targeting filter shared by every event program of an object (CPU samples today; allocation,
 * lock and off-CPU events can call it the same way). Include it once per object, after the
 * "stats" map and stat_inc(): it defines the filter maps and filter_mask.
 *
 * A process passes when it matches ANY loaded filter (a union): its tgid is in pid_filter
 * (--pid), its executable file is in exe_filter (--exe), or its cgroup v2 or one of its
 * ancestors is in cgroup_filter (--cgroup, --container-id, --k8s-pod, which user space
 * resolves to cgroup ids). With no filter loaded (filter_mask 0, set before load) the verifier
 * drops the whole check: the whole host costs nothing extra. A filtered-out event costs one
 * lookup per loaded filter, plus one per cgroup level for the cgroup filter, and is counted
 * in SP_STAT_FILTERED.
 */
#ifndef SPANPROF_FILTER_BPF_H
#define SPANPROF_FILTER_BPF_H

#include "filter.h"

/* SP_FILTER_* bits, set before load. */
const volatile __u32 filter_mask = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space to the --pid count */
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, struct sp_exe_key);
	__type(value, __u8);
} exe_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u64);
	__type(value, __u8);
} cgroup_filter SEC(".maps");

static __always_inline bool sp_filter_exe(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct sp_exe_key key;

	/* A kernel thread has no mm: the chain reads 0 and matches nothing. */
	key.ino = BPF_CORE_READ(task, mm, exe_file, f_inode, i_ino);
	if (!key.ino)
		return false;
	key.dev = BPF_CORE_READ(task, mm, exe_file, f_inode, i_sb, s_dev);
	return bpf_map_lookup_elem(&exe_filter, &key) != NULL;
}

static __always_inline bool sp_filter_cgroup(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	int level = BPF_CORE_READ(task, cgroups, dfl_cgrp, level);
	__u64 id;

	if (level > SP_FILTER_MAX_LEVEL)
		level = SP_FILTER_MAX_LEVEL;
	/* The task's own cgroup, then its ancestors up to the root (level 0). */
	for (int i = 0; i <= SP_FILTER_MAX_LEVEL; i++) {
		if (level - i < 0)
			break;
		id = bpf_get_current_ancestor_cgroup_id(level - i);
		if (id && bpf_map_lookup_elem(&cgroup_filter, &id))
			return true;
	}
	return false;
}

/*
 * Whether the current task (of thread group @tgid) is targeted. Only for programs running in
 * the task's context (perf events, tracepoints and uprobes of the task): it reads the current
 * task's executable and cgroup.
 */
static __always_inline bool sp_filter_targeted(__u32 tgid)
{
	if (!filter_mask)
		return true;
	if ((filter_mask & SP_FILTER_PID) && bpf_map_lookup_elem(&pid_filter, &tgid))
		return true;
	if ((filter_mask & SP_FILTER_EXE) && sp_filter_exe())
		return true;
	if ((filter_mask & SP_FILTER_CGROUP) && sp_filter_cgroup())
		return true;
	return false;
}

/* sp_filter_targeted(), counting the events it refuses in SP_STAT_FILTERED. */
static __always_inline bool sp_filter_pass(__u32 tgid)
{
	if (sp_filter_targeted(tgid))
		return true;
	stat_inc(SP_STAT_FILTERED);
	return false;
}

#endif /* SPANPROF_FILTER_BPF_H */
