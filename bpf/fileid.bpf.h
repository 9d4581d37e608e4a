/* SPDX-License-Identifier: GPL-2.0 */
/*
 * File identities of user PCs (struct sp_vmas, bpf/sampler.h), included by sampler.bpf.c.
 *
 * The agent names user frames from /proc/PID/maps, read when a process's first sample reaches
 * it. A process that lives a few milliseconds has exited by then. For the samples of processes
 * the agent has not loaded yet (no unwind_procs entry), fileid_sample() records the distinct
 * mappings the user PCs fall in: bounds, file offset and the mapped file's identity (device,
 * inode, size, mtime), looked up under one mmap lock (bpf_find_vma()). The agent finds the
 * file in its symbol cache by that identity, whether or not the process still exists.
 */
#ifndef SPANPROF_FILEID_BPF_H
#define SPANPROF_FILEID_BPF_H

/* Set before load: 0 turns the tables off (SPANPROF_FILEIDS=0, for measurements). */
const volatile __u32 fileid_enabled = 1;

/* struct inode's mtime before Linux 6.7 (a timespec64); 6.7+ has i_mtime_sec/i_mtime_nsec. */
struct inode___old {
	struct timespec64 i_mtime;
} __attribute__((preserve_access_index));

/*
 * The body of fileid_read() and fileid_read_btf(): *id from file @f, each field read with
 * LD(pointer, field) (LD2: through a second pointer).
 */
#define SP_FILEID_READ(f, id, LD, LD2)                                                             \
	do {                                                                                       \
		struct inode *inode = LD(f, f_inode);                                              \
                                                                                                   \
		(id)->ino = 0;                                                                     \
		(id)->size = (id)->mtime_sec = 0;                                                  \
		(id)->mtime_nsec = (id)->dev = 0;                                                  \
		if (!inode)                                                                        \
			break;                                                                     \
		(id)->ino = LD(inode, i_ino);                                                      \
		(id)->size = LD(inode, i_size);                                                    \
		(id)->dev = LD2(inode, i_sb, s_dev);                                               \
		if (bpf_core_field_exists(inode->i_mtime_sec)) {                                   \
			(id)->mtime_sec = LD(inode, i_mtime_sec);                                  \
			(id)->mtime_nsec = LD(inode, i_mtime_nsec);                                \
		} else {                                                                           \
			struct inode___old *old = (void *)inode;                                   \
                                                                                                   \
			(id)->mtime_sec = LD(old, i_mtime.tv_sec);                                 \
			(id)->mtime_nsec = LD(old, i_mtime.tv_nsec);                               \
		}                                                                                  \
	} while (0)
#define SP_LD_CORE(p, a) BPF_CORE_READ(p, a)
#define SP_LD2_CORE(p, a, b) BPF_CORE_READ(p, a, b)
#define SP_LD_BTF(p, a) ((p)->a)
#define SP_LD2_BTF(p, a, b) ((p)->a->b)

/* The identity of file @f, a kernel address the verifier knows as a number (helper reads). */
static __always_inline void fileid_read(struct file *f, struct sp_file_id *id)
{
	SP_FILEID_READ(f, id, SP_LD_CORE, SP_LD2_CORE);
}

/*
 * fileid_read() of @f, a BTF pointer (of a tp_btf argument or bpf_get_current_task_btf()):
 * direct loads, which the verifier makes fault-safe, instead of a helper call per field.
 */
static __always_inline void fileid_read_btf(struct file *f, struct sp_file_id *id)
{
	SP_FILEID_READ(f, id, SP_LD_BTF, SP_LD2_BTF);
}

/* VM_EXEC of include/linux/mm.h (a macro: not in BTF). */
#define SP_FILEID_VM_EXEC 0x4ull
/*
 * The mm's maple tree (lib/maple_tree.c; stable since Linux 6.1): the root, when it is a node,
 * is a pointer with bit 1 set and bit 0 clear (MAPLE_ROOT_NODE); every node pointer has the
 * node's type in bits 3-6 (MAPLE_NODE_TYPE_SHIFT), the node being 256-byte aligned.
 * Leaves (maple_leaf_64) and internal nodes (maple_range_64) have 15 pivots, the internal
 * nodes of an allocation tree such as mm_mt (maple_arange_64) 9. A tree of 2^32 VMAs has at
 * most 8 levels of arange nodes.
 */
#define SP_MT_TYPE(e) (((e) >> 3) & 0xf)
#define SP_MT_IS_ROOT_NODE(e) (((e)&3) == 2 && (e) > 4096)
#define SP_MT_NODE(e) ((e) & ~0xffull)
#define SP_MT_LEAF_64 1
#define SP_MT_RANGE_64 2
#define SP_MT_ARANGE_64 3
#define SP_MT_MAX_DEPTH 8
#define SP_MT_PIVOTS 15
/* fileid_mt_lookup() could not tell: the tree is not as this code expects, or a read failed. */
#define SP_MT_FAILED 1ull

/* What the callbacks get. */
struct fileid_loop {
	struct sp_sample *s;
	__u64 root; /* mm->mm_mt.ma_root */
	__u64 vdso; /* mm->context.vdso: where the vDSO's code starts (x86) */
	__u32 n;    /* user frames in s->ustack */
	__u32 used; /* entries filled */
	__u32 full; /* mappings holding a PC left out: table full */
	__u32 bad;  /* maple tree walks that failed */
	/* the outermost PC (a return address) lies in no executable VMA: proven under the lock */
	__u32 last_not_code;
};

/*
 * The VMA holding @index, walking the maple tree as mtree_lookup_walk() does: in each node,
 * the first slot whose pivot is >= index, else the last one. Only under the mmap lock
 * (inside the bpf_find_vma() callback). Returns the vm_area_struct address, 0 when the leaf's
 * slot is empty (no VMA holds @index), SP_MT_FAILED when the walk could not tell.
 * A global function: the verifier checks its nested loops once, not once per state of the
 * bpf_loop callback that calls it (a quarter of on_cpu_sample's verification otherwise).
 */
/*
 * The pivots of the node being searched: not on the stack, where the 6.1 verifier would add
 * their 120 bytes to the 512-byte budget of its deepest call chain (on_cpu_sample, the
 * bpf_find_vma() callback, the bpf_loop() callback, this function).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[SP_MT_PIVOTS]);
} fileid_pivots SEC(".maps");

__noinline __u64 fileid_mt_lookup(__u64 entry, __u64 index)
{
	__u32 zero = 0;
	__u64 *pivots = bpf_map_lookup_elem(&fileid_pivots, &zero);

	if (!pivots)
		return SP_MT_FAILED;
	for (int depth = 0; depth < SP_MT_MAX_DEPTH; depth++) {
		__u32 type = SP_MT_TYPE(entry), npiv, off;
		__u64 node = SP_MT_NODE(entry), piv_at, slot_at, next = 0;

		if (depth == 0 ? !SP_MT_IS_ROOT_NODE(entry) : node < 4096)
			return SP_MT_FAILED;
		if (type == SP_MT_ARANGE_64) {
			npiv = 9;
			piv_at = node + bpf_core_field_offset(struct maple_arange_64, pivot);
			slot_at = node + bpf_core_field_offset(struct maple_arange_64, slot);
		} else if (type == SP_MT_LEAF_64 || type == SP_MT_RANGE_64) {
			npiv = SP_MT_PIVOTS;
			piv_at = node + bpf_core_field_offset(struct maple_range_64, pivot);
			slot_at = node + bpf_core_field_offset(struct maple_range_64, slot);
		} else {
			return SP_MT_FAILED; /* dense nodes: not in an mm */
		}
		if (bpf_probe_read_kernel(pivots, SP_MT_PIVOTS * sizeof(*pivots), (void *)piv_at))
			return SP_MT_FAILED;
		off = npiv;
		for (__u32 i = 0; i < SP_MT_PIVOTS; i++) {
			if (i < npiv && pivots[i] >= index) {
				off = i;
				break;
			}
		}
		if (bpf_probe_read_kernel(&next, sizeof(next), (void *)(slot_at + off * 8)))
			return SP_MT_FAILED;
		if (type == SP_MT_LEAF_64)
			return next;
		entry = next;
	}
	return SP_MT_FAILED;
}

static long fileid_frame(__u32 i, void *ctx)
{
	struct fileid_loop *l = ctx;
	struct sp_sample *s = l->s;
	struct vm_area_struct *vma;
	__u64 pc, start, end;
	struct file *f;
	struct sp_vma *v;

	if (i >= l->n)
		return 1;
	pc = s->ustack[i & (SP_MAX_USTACK - 1)];
	if (!pc)
		return 1; /* the frame-pointer chain ends */
	for (__u32 j = 0; j < SP_MAX_VMAS; j++) {
		struct sp_vma *e = &s->vmas.vma[j];

		if (j >= l->used)
			break;
		if (pc >= e->start && pc < e->end)
			return 0;
	}
	vma = (struct vm_area_struct *)fileid_mt_lookup(l->root, pc);
	/* In no VMA (a frame-pointer walk that read a non-pointer), or the tree walk failed. */
	if (!vma || (__u64)vma == SP_MT_FAILED)
		return 0;
	start = BPF_CORE_READ(vma, vm_start);
	end = BPF_CORE_READ(vma, vm_end);
	/* Not the VMA of the PC: the tree is not laid out as this code expects. Give up. */
	if (pc < start || pc >= end) {
		l->bad++;
		return 1;
	}
	if (!(BPF_CORE_READ(vma, vm_flags) & SP_FILEID_VM_EXEC))
		return 0;
	if (l->used >= SP_MAX_VMAS) {
		l->full++;
		return 0;
	}
	v = &s->vmas.vma[l->used & (SP_MAX_VMAS - 1)];
	v->start = start;
	v->end = end;
	v->offset = BPF_CORE_READ(vma, vm_pgoff) << 12; /* PAGE_SHIFT on x86-64 */
	f = BPF_CORE_READ(vma, vm_file);
	if (f)
		fileid_read(f, &v->file);
	else
		v->file.ino = v->file.dev = 0;
	v->flags = start == l->vdso ? SP_VMA_VDSO : 0;
	v->pad = 0;
	l->used++;
	return 0;
}

/*
 * Sets l->last_not_code when the outermost PC, the return address at which a CFI walk stopped
 * because no mapping the agent knows holds it, lies in no executable VMA of the mm either: no
 * call returns there, so it is no frame (a walk led astray, as when libgcc has rewritten a
 * frame's return address while installing an exception handler). Under the mmap lock. The
 * instruction looked up is the one before the return address, as the walk's own lookup does.
 */
static __always_inline void fileid_check_last(struct fileid_loop *l)
{
	__u64 pc = l->s->ustack[(l->n - 1) & (SP_MAX_USTACK - 1)] - 1;
	struct vm_area_struct *vma = (struct vm_area_struct *)fileid_mt_lookup(l->root, pc);

	if ((__u64)vma == SP_MT_FAILED)
		return;
	if (vma) {
		if (pc < BPF_CORE_READ(vma, vm_start) || pc >= BPF_CORE_READ(vma, vm_end)) {
			l->bad++;
			return;
		}
		if (BPF_CORE_READ(vma, vm_flags) & SP_FILEID_VM_EXEC)
			return;
	}
	l->last_not_code = 1;
}

/* bpf_find_vma() callback, the mmap lock held: one lookup per distinct mapping of the PCs. */
static long fileid_locked(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct fileid_loop *l = ctx;

	l->root = (__u64)BPF_CORE_READ(vma, vm_mm, mm_mt.ma_root);
	l->vdso = (__u64)BPF_CORE_READ(vma, vm_mm, context.vdso);
	bpf_loop(l->n, fileid_frame, l, 0);
	if (l->n > 1 && l->s->ustack_end == SP_USTACK_NO_MAPPING)
		fileid_check_last(l);
	return 0;
}

/*
 * Fills s->vmas for the @n user PCs in s->ustack of the current task (which has an mm).
 * bpf_find_vma() takes the mmap lock once (it can only once per program run in interrupt
 * context: the unlock is deferred to an irq_work); under it, each PC outside the entries
 * found so far is looked up in the mm's maple tree, and executable VMAs are recorded.
 * s->vmas.n is 0 on return when nothing was found. Counts in stats.
 */
static __always_inline void fileid_sample(struct sp_sample *s, __u32 n)
{
	struct fileid_loop l = {.s = s, .n = n < SP_MAX_USTACK ? n : SP_MAX_USTACK};
	struct task_struct *task = bpf_get_current_task_btf();
	struct file *exe;

	s->vmas.n = 0;
	s->vmas.exe.ino = s->vmas.exe.dev = 0;
	if (!fileid_enabled || !n)
		return;
	/* Lockless (RCU): the agent also names PCs from the entries of earlier samples. */
	exe = task->mm->exe_file;
	if (exe)
		fileid_read_btf(exe, &s->vmas.exe);
	/* Busy: the task was sampled inside mmap(2), munmap(2)... holding the lock for writing. */
	if (bpf_find_vma(task, s->ustack[0], fileid_locked, &l, 0)) {
		stat_inc(SP_STAT_FILEID_FAILED);
		return;
	}
	if (l.bad)
		stat_add(SP_STAT_FILEID_FAILED, l.bad);
	if (l.full)
		stat_add(SP_STAT_FILEID_FULL, l.full);
	if (l.last_not_code) {
		s->ustack_len = l.n - 1;
		s->ustack_end = SP_USTACK_NOT_CODE;
		stat_inc(SP_STAT_FILEID_NOT_CODE);
	}
	if (!l.used)
		return;
	s->vmas.n = l.used;
	stat_inc(SP_STAT_FILEID_SAMPLES);
	stat_add(SP_STAT_FILEID_VMAS, l.used);
}

/* Identities whose path was sent lately: each binary's path once, however often it runs. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct sp_file_id);
	__type(value, __u8);
} fileid_paths_sent SEC(".maps");

/* Set by the agent when it wants the paths of executables (and file identities are on). */
const volatile __u32 exec_paths_enabled = 0;

/*
 * A process execs a file: send its absolute path with its identity, so that the agent can open
 * it even if every process running it is gone before one of their samples reaches the agent.
 * Process context: the new executable is mm->exe_file already. Part of the exec hook
 * (bpf/prochooks.bpf.h), for targeted tasks only (the filters of bpf/filter.bpf.h, not
 * counted as samples) while sampling.
 */
static __always_inline void fileid_on_exec(struct task_struct *p, __u32 pid,
					   struct linux_binprm *bprm)
{
	struct sp_exec_path *e;
	struct sp_file_id id;
	struct file *exe;
	const char *path;
	__u8 one = 1;
	char first;

	/* Direct loads: p and bprm are the tracepoint's BTF pointers. */
	exe = p->mm->exe_file;
	if (!exe)
		return;
	fileid_read_btf(exe, &id);
	if (!id.ino || bpf_map_lookup_elem(&fileid_paths_sent, &id))
		return;
	/* The file exec ran (the interpreter of a script), as exec resolved its name. */
	path = bprm->interp;
	if (bpf_probe_read_kernel(&first, 1, path) || first != '/')
		return; /* relative to a directory the agent cannot know later */
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(SP_STAT_FILEID_EXEC_DROP);
		return;
	}
	e->pid = pid;
	e->pad = 0;
	e->file = id;
	if (bpf_probe_read_kernel_str(e->path, sizeof(e->path), path) < 0)
		e->path[0] = '\0';
	if (bpf_probe_read_kernel_str(e->name, sizeof(e->name), exe->f_path.dentry->d_name.name) <
	    0)
		e->name[0] = '\0';
	/* As a sample: the drain thread reads the ring every 10 ms; a wakeup only when filling. */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= ringbuf_wakeup_bytes
				  ? BPF_RB_FORCE_WAKEUP
				  : BPF_RB_NO_WAKEUP);
	bpf_map_update_elem(&fileid_paths_sent, &id, &one, BPF_ANY);
	stat_inc(SP_STAT_FILEID_EXECS);
}

#endif /* SPANPROF_FILEID_BPF_H */
