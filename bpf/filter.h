/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Targeting (bpf/filter.bpf.h, exporter/sampling/targets.h): which processes the BPF programs
 * record. Shared by both sides: fixed-width types only, sizes pinned with _Static_assert.
 */
#ifndef SPANPROF_FILTER_H
#define SPANPROF_FILTER_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* Bits of the filter_mask rodata: which filters are loaded (0: the whole host, no cost). */
#define SP_FILTER_PID 0x1    /* map pid_filter: tgid -> 1 */
#define SP_FILTER_EXE 0x2    /* map exe_filter: struct sp_exe_key -> 1 */
#define SP_FILTER_CGROUP 0x4 /* map cgroup_filter: cgroup v2 id -> 1 */

/*
 * Deepest cgroup v2 level whose ancestors are checked (the kernel's own cgroup.max.depth is
 * unlimited, but systemd and Kubernetes hierarchies stay under 10 levels). A task deeper than
 * this is matched on its first SP_FILTER_MAX_LEVEL + 1 ancestors, root first.
 */
#define SP_FILTER_MAX_LEVEL 31

/*
 * Identity of an executable file: the superblock's device in the kernel's encoding
 * (MAJOR << 20 | MINOR, as in inode->i_sb->s_dev) and the inode number.
 */
struct sp_exe_key {
	__u64 dev;
	__u64 ino;
};

_Static_assert(sizeof(struct sp_exe_key) == 16, "sp_exe_key is shared with BPF");

#endif /* SPANPROF_FILTER_H */
