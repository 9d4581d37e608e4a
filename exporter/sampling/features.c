/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "sampling/features.h"

/* The prctl system call's entry: the architecture's wrapper (bpf/threadctx.bpf.h hooks it). */
#if defined(__aarch64__)
#define SP_SYS_PRCTL "__arm64_sys_prctl"
#else
#define SP_SYS_PRCTL "__x64_sys_prctl"
#endif

/* How each feature is probed, and the upstream version that brought it (kernel git history). */
enum probe_kind {
	PROBE_BTF,
	PROBE_PROG,
	PROBE_MAP,
	PROBE_HELPER,
	PROBE_TP_NARGS,
	PROBE_MEMBER,
	PROBE_FENTRY, /* an fentry program on kernel function tp loads */
};

static const struct kfeature_def {
	const char *name, *since;
	enum probe_kind kind;
	int prog_type;		 /* PROBE_PROG, PROBE_HELPER: the program type */
	int id;			 /* map type, helper id, or the argument count (PROBE_TP_NARGS) */
	const char *tp, *member; /* PROBE_TP_NARGS: tracepoint; PROBE_MEMBER: struct, member;
				    PROBE_FENTRY: function */
} defs[KFEAT_COUNT] = {
    [KFEAT_BTF] = {"kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)", "5.4", PROBE_BTF},
    [KFEAT_PERF_EVENT_PROG] = {"perf_event BPF programs", "4.9", PROBE_PROG,
			       BPF_PROG_TYPE_PERF_EVENT},
    [KFEAT_RINGBUF] = {"BPF ring buffers", "5.8", PROBE_MAP, 0, BPF_MAP_TYPE_RINGBUF},
    [KFEAT_BOOT_NS] = {"the bpf_ktime_get_boot_ns() helper", "5.8", PROBE_HELPER,
		       BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_ktime_get_boot_ns},
    [KFEAT_TASK_BTF] = {"the bpf_get_current_task_btf() helper", "5.11", PROBE_HELPER,
			BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_current_task_btf},
    [KFEAT_TASK_PT_REGS] = {"the bpf_task_pt_regs() helper", "5.15", PROBE_HELPER,
			    BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_task_pt_regs},
    [KFEAT_ATTACH_COOKIE] = {"the bpf_get_attach_cookie() helper (uprobes)", "5.15", PROBE_HELPER,
			     BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie},
    [KFEAT_LOOP] = {"the bpf_loop() helper", "5.17", PROBE_HELPER, BPF_PROG_TYPE_PERF_EVENT,
		    BPF_FUNC_loop},
    [KFEAT_FIND_VMA] = {"the bpf_find_vma() helper", "5.17", PROBE_HELPER, BPF_PROG_TYPE_PERF_EVENT,
			BPF_FUNC_find_vma},
    [KFEAT_TASK_STORAGE] = {"BPF task storage", "5.11", PROBE_MAP, 0, BPF_MAP_TYPE_TASK_STORAGE},
    [KFEAT_GET_TASK_STACK] = {"the bpf_get_task_stack() helper", "5.9", PROBE_HELPER,
			      BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_task_stack},
    [KFEAT_SWITCH_PREV_STATE] = {"sched_switch's prev_state tracepoint argument", "5.18",
				 PROBE_TP_NARGS, 0, 4, "sched_switch"},
    [KFEAT_MAPLE_TREE] = {"VMAs in a maple tree (mm_struct.mm_mt)", "6.1", PROBE_MEMBER, 0, 0,
			  "mm_struct", "mm_mt"},
    [KFEAT_MMAP_FENTRY] = {"fentry programs on ksys_mmap_pgoff() (the mmap hook)", "5.5",
			   PROBE_FENTRY, 0, 0, "ksys_mmap_pgoff"},
    [KFEAT_PRCTL_FENTRY] = {"fentry programs on " SP_SYS_PRCTL "() (the prctl hook)", "5.5",
			    PROBE_FENTRY, 0, 0, SP_SYS_PRCTL},
};

const char *kfeature__name(enum kfeature feat)
{
	return feat < KFEAT_COUNT ? defs[feat].name : "?";
}

const char *kfeature__since(enum kfeature feat)
{
	return feat < KFEAT_COUNT ? defs[feat].since : "?";
}

/* btf_trace_NAME's argument count in @btf, or -ENOENT. */
static int tp_btf_nargs(const struct btf *btf, const char *name)
{
	const struct btf_type *t;
	char tname[128];
	int id;

	snprintf(tname, sizeof(tname), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, tname, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -ENOENT;
	/* typedef void (*btf_trace_NAME)(void *, args...): typedef -> pointer -> proto. */
	t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_func_proto(t) && btf_vlen(t) >= 1)
		return btf_vlen(t) - 1;
	return -ENOENT;
}

int kfeatures__tp_btf_nargs(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int n;

	if (!btf)
		return -errno;
	n = tp_btf_nargs(btf, name);
	btf__free(btf);
	return n;
}

/* 1 when struct/union @t, or an anonymous struct/union in it, has a member @name (bounded
 * depth: anonymous nesting in kernel structs is shallow). */
static int has_member(const struct btf *btf, const struct btf_type *t, const char *name, int depth)
{
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++) {
		const struct btf_type *mt;

		if (m[i].name_off) {
			if (!strcmp(btf__name_by_offset(btf, m[i].name_off), name))
				return 1;
			continue;
		}
		mt = btf__type_by_id(btf, m[i].type);
		if (depth < 8 && mt && (btf_is_struct(mt) || btf_is_union(mt)) &&
		    has_member(btf, mt, name, depth + 1))
			return 1;
	}
	return 0;
}

/* 1 when struct @type of @btf has @member, 0 when not, -ENOENT without the struct. */
static int btf_has_member(const struct btf *btf, const char *type, const char *member)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);

	return id > 0 ? has_member(btf, btf__type_by_id(btf, id), member, 0) : -ENOENT;
}

int kfeatures__btf_has_member(const char *type, const char *member)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int r;

	if (!btf)
		return -errno;
	r = btf_has_member(btf, type, member);
	btf__free(btf);
	return r;
}

/*
 * 1 when an fentry program on kernel function @func loads: the function is in @btf, and the
 * kernel takes such programs (a kernel whose security policy refuses them says EPERM only at
 * the load, which would fail the whole object). The program (return 0) is closed at once,
 * never attached. 0 otherwise.
 */
static int fentry_loads(const struct btf *btf, const char *func)
{
	const struct bpf_insn ret0[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	int id = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC), fd;
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_TRACE_FENTRY);

	if (id <= 0)
		return 0;
	o.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", ret0, 2, &o);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * @btf: the kernel's BTF, parsed once for every probe that reads it (a few MiB to parse: a tenth
 * of a second, more on a loaded machine, before sampling can start); NULL when unreadable.
 */
static int8_t probe(const struct kfeature_def *d, const struct btf *btf)
{
	int r;

	switch (d->kind) {
	case PROBE_BTF:
		return access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	case PROBE_PROG:
		r = libbpf_probe_bpf_prog_type(d->prog_type, NULL);
		break;
	case PROBE_MAP:
		r = libbpf_probe_bpf_map_type(d->id, NULL);
		break;
	case PROBE_HELPER:
		r = libbpf_probe_bpf_helper(d->prog_type, d->id, NULL);
		break;
	case PROBE_TP_NARGS:
		if (!btf)
			return -1;
		r = tp_btf_nargs(btf, d->tp);
		if (r == -ENOENT)
			return 0;
		return r < 0 ? -1 : r >= d->id;
	case PROBE_MEMBER:
		if (!btf)
			return -1;
		r = btf_has_member(btf, d->tp, d->member);
		return r < 0 ? -1 : r;
	case PROBE_FENTRY:
		if (!btf)
			return -1;
		return fentry_loads(btf, d->tp);
	default:
		return -1;
	}
	return r < 0 ? -1 : r > 0;
}

int kfeatures__probe(struct kfeatures *f)
{
	struct btf *btf = btf__load_vmlinux_btf();

	for (int i = 0; i < KFEAT_COUNT; i++)
		f->have[i] = probe(&defs[i], btf);
	btf__free(btf);
	return 0;
}

enum kfeature kfeatures__first_missing(const struct kfeatures *f, uint32_t need)
{
	for (int i = 0; i < KFEAT_COUNT; i++)
		if ((need & (1u << i)) && f->have[i] == 0)
			return i;
	return KFEAT_COUNT;
}

void kfeatures__print(const struct kfeatures *f, FILE *out)
{
	static const char *const said[] = {"probe failed", "no", "yes"};

	for (int i = 0; i < KFEAT_COUNT; i++)
		fprintf(out, "spanprof: kernel feature: %s (Linux %s): %s\n", defs[i].name,
			defs[i].since, said[f->have[i] + 1]);
}
