/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/sampler.bpf.c and the agent: one record per CPU sample,
 * handed to user space through a BPF ring buffer. Fixed-width types only, no
 * pointers, no bool; sizes are pinned on both sides with _Static_assert.
 */
#ifndef SPANPROF_SAMPLER_H
#define SPANPROF_SAMPLER_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <bpf/bpf.h> /* sp_proc_entry_write() */
#include <errno.h>
#include <linux/types.h>
#endif

/* Kernel stacks: the kernel's own limit (PERF_MAX_STACK_DEPTH). */
#define SP_MAX_KSTACK 127
/*
 * User stacks: the CFI walker (bpf/unwind.bpf.h) fills up to this many frames,
 * one bpf_loop iteration each (a power of two: indices are masked with it).
 * Frame-pointer walking through bpf_get_stack(), the fallback for processes
 * the agent has no tables for yet, stops at kernel.perf_event_max_stack
 * (127 by default).
 */
#define SP_MAX_USTACK 512
#define SP_COMM_LEN 16

/*
 * The processes the agent may hold per-process entries of, one bit per thread group id and
 * map (enum sp_proc_known_map) in the BPF array proc_known, which the agent maps: bit pid % 64
 * of word SP_PROC_KNOWN_WORD(pid, map) (the words of one PID's maps adjacent: one cache line).
 * The agent sets a bit before and after it writes an entry (sp_proc_known_set()); the exec and
 * exit hooks clear it and look the map up only when it was set: a new process, which has no
 * entry, costs them a load of words that its neighbours in PID order share instead of a hash
 * lookup (a cache miss) per map. SP_PID_MAX_LIMIT: the kernel's PID_MAX_LIMIT on 64-bit
 * (include/linux/threads.h), above any pid_max; a PID beyond it has no bit, and the hooks look
 * its entries up.
 */
enum sp_proc_known_map {
	SP_PROC_KNOWN_UNWIND = 0,  /* unwind_procs (exporter/unwind/unwinder.c) */
	SP_PROC_KNOWN_PYTHON = 1,  /* py_procs (exporter/runtime/python/pytab.c) */
	SP_PROC_KNOWN_V8 = 2,	   /* v8_procs (exporter/runtime/v8/v8tab.c) */
	SP_PROC_KNOWN_HOTSPOT = 3, /* hs_procs (exporter/runtime/jvm/hstab.c) */
	SP_PROC_KNOWN_PHP = 4,	   /* php_procs (exporter/runtime/php/phptab.c) */
	SP_PROC_KNOWN_MAPS = 5,
};
#define SP_PID_MAX_LIMIT (4u << 20)
#define SP_PROC_KNOWN_WORDS (SP_PID_MAX_LIMIT / 64 * SP_PROC_KNOWN_MAPS)
#define SP_PROC_KNOWN_WORD(pid, map) ((pid) / 64 * SP_PROC_KNOWN_MAPS + (map))

/* Per-CPU counters in the "stats" map, indexed by these values. */
enum sp_stat {
	SP_STAT_SAMPLES = 0,  /* samples handed to user space */
	SP_STAT_IDLE,	      /* samples of the idle task, not recorded */
	SP_STAT_FILTERED,     /* samples of processes no targeting filter selects */
	SP_STAT_DROP_RINGBUF, /* ring buffer full: sample lost */
	SP_STAT_KSTACK_ERR,   /* bpf_get_stack(kernel) failed: sample kept without it */
	SP_STAT_USTACK_ERR,   /* bpf_get_stack(user) failed: sample kept without it */
	/* User stack unwinding (docs/unwinding.md): how each sample's stack was walked. */
	SP_STAT_UNW_CFI, /* samples walked with the CFI tables */
	/* Not walked with CFI: the leaf only (frame pointers with --unwind-max-mb 0). */
	SP_STAT_UNW_FP,		/* samples of processes without an entry (not loaded yet) */
	SP_STAT_UNW_STALE,	/* entry of an earlier process with the same PID */
	SP_STAT_UNW_NO_REGS,	/* user registers unreadable, or a 32-bit task */
	SP_STAT_UNW_FRAMES_CFI, /* frames unwound by a CFI row */
	SP_STAT_UNW_FRAMES_FP,	/* frames unwound by frame pointers inside the CFI walker */
	/* Why each CFI walk stopped: exactly one per SP_STAT_UNW_CFI sample. */
	SP_STAT_UNW_END,	 /* clean: outermost frame (END row or return address 0) */
	SP_STAT_UNW_FP_END,	 /* frame-pointer step found RBP 0 (chain end, or RBP lost) */
	SP_STAT_UNW_NO_MAPPING,	 /* pc outside every known executable mapping */
	SP_STAT_UNW_NO_TABLE,	 /* table descriptor or chunk missing (being replaced) */
	SP_STAT_UNW_UNSUPPORTED, /* CFI row the walker cannot follow */
	SP_STAT_UNW_READ_FAILED, /* stack memory unreadable (paged out, bad CFA) */
	SP_STAT_UNW_BAD_CFA,	 /* CFA not above the stack pointer, or RBP-based with RBP lost */
	SP_STAT_UNW_DEPTH,	 /* SP_MAX_USTACK frames: stack truncated */
	SP_STAT_UNW_BAD_RA,	 /* frame-pointer step refused: return address not after a call */
	/* Thread context (OTEP 4947, docs/span-links.md): one per sample of a process that has it.
	 */
	SP_STAT_CTX_LINKED,	   /* record valid: the sample carries its span */
	SP_STAT_CTX_NO_SPAN,	   /* TLS pointer NULL: the thread serves no span */
	SP_STAT_CTX_NOT_VALID,	   /* record valid != 1 (being written, or ended) */
	SP_STAT_CTX_ZERO_TRACE,	   /* record trace id all zero */
	SP_STAT_CTX_ATTRS_TOO_BIG, /* attrs_data_size > SP_CTX_MAX_ATTRS */
	SP_STAT_CTX_READ_FAILED,   /* TLS slot, DTV or record unreadable */
	SP_STAT_CTX_UNALLOCATED,   /* the thread has no TLS block for the module yet */
	SP_STAT_CTX_STALE,	   /* descriptor of an earlier process with the same PID */
	SP_STAT_CTX_UPROBE,	   /* record pointer from --context-uprobe (counted in addition) */
	/* Goroutine labels (bpf/golabels.bpf.h, docs/go.md): one per sample of a Go process with a
	 * descriptor and no thread context. */
	SP_STAT_GOL_READ,	 /* labels copied into the sample */
	SP_STAT_GOL_NONE,	 /* no goroutine on the m (m.curg nil), a C thread, or no labels */
	SP_STAT_GOL_BAD,	 /* unreadable or inconsistent (len > cap, a bad map): dropped */
	SP_STAT_GOL_TRUNCATED,	 /* labels left out (too many, too long): counted in addition */
	SP_STAT_GOL_STALE,	 /* descriptor of an earlier process with the same PID */
	SP_STAT_GOL_MAP_SKIPPED, /* Go 1.18-1.23 labels map being grown or too big to walk */
	SP_STAT_GOL_SYSTEM_G,	 /* the thread runs g0 or gsignal (scheduler, systemstack, signal
				  * handler, cgo call's C code): m.curg's labels not the CPU's */
	SP_STAT_GOL_OFF_STACK,	 /* g is curg but SP outside its stack (a switch, the vDSO) */
	/* Notifications to the agent (exec, mmap, exit of known processes). */
	SP_STAT_EVENTS,	    /* events sent */
	SP_STAT_EVENT_DROP, /* event ring buffer full: the agent relies on its fallbacks */
	/*
	 * Event profiles (--profile alloc,lock,offcpu; docs/profile-types.md): samples handed to
	 * user space and samples lost because the ring buffer was full, per profile type, in the
	 * order of enum sp_profile_type (sp_stat_type_samples()/sp_stat_type_drop()).
	 */
	SP_STAT_ALLOC_SAMPLES,
	SP_STAT_ALLOC_DROP,
	SP_STAT_LOCK_SAMPLES,
	SP_STAT_LOCK_DROP,
	SP_STAT_OFFCPU_SAMPLES,
	SP_STAT_OFFCPU_DROP,
	/* Lock profile (bpf/lock.bpf.h): futex lock waits and why some were not sampled. */
	SP_STAT_LOCK_WAITS,	 /* futex lock waits entered by wanted processes */
	SP_STAT_LOCK_SHORT,	 /* waits under --lock-min-wait: counted, not sampled */
	SP_STAT_LOCK_NO_STORAGE, /* the thread's task storage could not be created: wait missed */
	SP_STAT_LOCK_LOST,	 /* exit never seen (restarted after a signal): wait missed */
	/* alloc profile (bpf/alloc.bpf.h): what happened to each allocator call probed. */
	SP_STAT_ALLOC_CALLS,	  /* calls seen (of the profiled processes, while sampling) */
	SP_STAT_ALLOC_SMALL,	  /* below --alloc-min-bytes: ignored */
	SP_STAT_ALLOC_NESTED,	  /* an entry point called by another one: counted by the outer */
	SP_STAT_ALLOC_NO_STORAGE, /* the thread's countdown could not be created: not counted */
	/* offcpu (bpf/offcpu.bpf.h): blocked periods not reported, and merged ones. */
	SP_STAT_OFFCPU_NO_STORAGE, /* task storage unavailable: a blocked period not measured */
	SP_STAT_OFFCPU_STALE,	   /* user registers changed before the next syscall exit */
	SP_STAT_OFFCPU_MERGED,	   /* a further period of the same syscall added to its event */
	/*
	 * File identities of user PCs (struct sp_vmas below, bpf/fileid.bpf.h): samples of
	 * processes the agent has not loaded yet carry the mappings their PCs fall in.
	 */
	SP_STAT_FILEID_SAMPLES,	  /* samples that carry a table (at least one lookup) */
	SP_STAT_FILEID_VMAS,	  /* table entries filled */
	SP_STAT_FILEID_FAILED,	  /* lookups not done: mmap lock busy, maple tree not as expected */
	SP_STAT_FILEID_FULL,	  /* mappings holding a PC left out: table full (SP_MAX_VMAS) */
	SP_STAT_FILEID_EXECS,	  /* executable paths sent (struct sp_exec_path) */
	SP_STAT_FILEID_EXEC_DROP, /* executable paths lost: ring buffer full */
	/* CFI walks stopped at an unknown mapping whose last return address lies in no executable
	 * VMA (looked up under the mmap lock): that PC dropped, the stack ends SP_USTACK_NOT_CODE
	 */
	SP_STAT_FILEID_NOT_CODE,
	SP_STAT_MAX,
};

/*
 * Thread context record (OTEP 4947): trace_id[16] span_id[8] valid u8 trace_flags u8
 * attrs_data_size u16, then attrs_data. The record is at most 640 bytes.
 */
#define SP_CTX_HEADER 28
#define SP_CTX_MAX_ATTRS 612
#define SP_CTX_MAX (SP_CTX_HEADER + SP_CTX_MAX_ATTRS)

/*
 * Where a process keeps otel_thread_ctx_v1 (map "tls_procs", key: tgid), computed by
 * the agent (exporter/spans/tlsctx.h) from the module's relocations and loader-filled GOT.
 * STATIC: variable at fsbase + tpoff. DTV: dtv = *(fsbase + 8); variable at
 * dtv[module_id].val + offset (16-byte DTV entries; dtv[-1] holds the slot count).
 */
#define SP_TLS_STATIC 1
#define SP_TLS_DTV 2
struct sp_tls_loc {
	__u32 kind;
	__u32 module_id;
	__s64 tpoff;
	__u64 offset;
	__u64 start_boot_ns; /* group leader's start time: 0 matches any */
};

/*
 * Where a Go program keeps its goroutine labels (map "go_procs", key: tgid), computed by the
 * agent from the executable (exporter/runtime/go/golabels.h): g = *(fsbase + tls_g),
 * m = *(g + g_m), curg = *(m + m_curg), labels = *(curg + g_labels) -> a labelMap. Its form
 * is @kind: SP_GO_LABELS_SLICE (Go 1.24 and later), a struct whose first field is the slice of
 * labels {ptr, len, cap} sorted by key, each label two Go strings {ptr, len};
 * SP_GO_LABELS_MAP (Go 1.18-1.23), a map[string]string: the labelMap is the map's pointer to
 * its header, laid out as SP_GO_HMAP_* and SP_GO_BMAP_* say.
 */
struct sp_go_loc {
	__s64 tls_g;
	__u32 g_m, m_curg, g_labels;
	__u32 kind;	     /* SP_GO_LABELS_* */
	__u64 start_boot_ns; /* group leader's start time: 0 matches any */
};
#define SP_GO_LABELS_SLICE 0
#define SP_GO_LABELS_MAP 1

/*
 * A Go 1.18-1.23 map[string]string on amd64 (src/runtime/map.go of those releases, unchanged
 * between them): the header (hmap) {count int; flags, B uint8; noverflow uint16; hash0 uint32;
 * buckets, oldbuckets unsafe.Pointer; nevacuate uintptr; extra *mapextra}, and 2^B buckets
 * (bmap) {tophash [8]uint8; keys [8]string; elems [8]string; overflow *bmap}, a string being
 * {ptr, len}. tophash: 0 empty and nothing after it in the bucket or its overflow buckets
 * (emptyRest), 1 empty (emptyOne), 2-4 evacuated (only in the old buckets of a map being
 * grown), 5 and up a full cell (minTopHash).
 */
#define SP_GO_HMAP_COUNT 0
#define SP_GO_HMAP_B 9
#define SP_GO_HMAP_BUCKETS 16
#define SP_GO_HMAP_OLDBUCKETS 24
#define SP_GO_BMAP_CELLS 8
#define SP_GO_BMAP_KEYS 8
#define SP_GO_BMAP_ELEMS (SP_GO_BMAP_KEYS + SP_GO_BMAP_CELLS * 16)
#define SP_GO_BMAP_OVERFLOW (SP_GO_BMAP_ELEMS + SP_GO_BMAP_CELLS * 16)
#define SP_GO_BMAP_SIZE (SP_GO_BMAP_OVERFLOW + 8)
#define SP_GO_TOPHASH_EMPTY_REST 0
#define SP_GO_TOPHASH_EMPTY_ONE 1
#define SP_GO_TOPHASH_MIN 5
/* The most buckets walked (2^B; 16 labels need at most 4) and bucket visits, overflow ones
 * included: a map past either is skipped, counted (SP_STAT_GOL_MAP_SKIPPED). */
#define SP_GO_MAP_MAX_B 3
#define SP_GO_MAP_MAX_VISITS 16
/* Labels copied per sample, and the longest key and value copied (longer: left out, counted). */
#define SP_GO_MAX_LABELS 16
#define SP_GO_MAX_KEY 63
#define SP_GO_MAX_VALUE 127
/* Bytes of the per-CPU buffer the labels are packed in before the record (a power of two). */
#define SP_GO_LABEL_BUF 1024

/*
 * Record pointer captured by a --context-uprobe (map "ctx_threads", key: tid); it
 * wins over the TLS variable. Removed when the thread exits.
 */
struct sp_ctx_thread {
	__u64 record;	     /* user address of the thread's record, never 0 */
	__u64 start_boot_ns; /* group leader's start time */
};

/* Mode of a --context-uprobe attachment, in its BPF cookie. */
#define SP_CTXP_ARG_MASK 0x7 /* 1..6: the record pointer is this argument */
#define SP_CTXP_TLS 0x8	     /* read the record pointer from otel_thread_ctx_v1 */
#define SP_CTXP_CLEAR 0x10   /* uretprobe: the context ends when the function returns */

/*
 * Profile type of a sample (sp_sample.type): what the sample measures and what its value is.
 * CPU: one sample per cpu-clock tick, value 0. ALLOC: one sampled allocation, value = its size in
 * bytes (addr: the allocator entry point's cookie). LOCK: one contended lock acquisition, value =
 * wait in nanoseconds, addr = the lock's address. OFFCPU: one blocked period, value = time off
 * CPU in nanoseconds.
 */
enum sp_profile_type {
	SP_PROF_CPU = 0,
	SP_PROF_ALLOC = 1,
	SP_PROF_LOCK = 2,
	SP_PROF_OFFCPU = 3,
	SP_PROF_NTYPES,
};

/* The per-type counters of enum sp_stat. */
static inline __u32 sp_stat_type_samples(__u32 type)
{
	return type == SP_PROF_CPU ? SP_STAT_SAMPLES : SP_STAT_ALLOC_SAMPLES + 2 * (type - 1);
}

static inline __u32 sp_stat_type_drop(__u32 type)
{
	return type == SP_PROF_CPU ? SP_STAT_DROP_RINGBUF : SP_STAT_ALLOC_DROP + 2 * (type - 1);
}

/*
 * Why a sample's user stack ends where it does (sp_sample.ustack_end). Only SP_USTACK_COMPLETE
 * ends at a known outermost frame (a CFI row saying the return address is undefined: _start, a
 * thread's start, clone3; or no user stack at all: a kernel thread); every other value is shown
 * as one synthetic frame at the root end of the stack (docs/unwinding.md, "Truncation markers"),
 * so a cut stack never looks whole. One list, X(enum name, marker frame name), gives the enum
 * here and the marker names in the agent (exporter/profile/stackend.c).
 */
#define SP_USTACK_END_LIST(X)                                                                      \
	X(SP_USTACK_COMPLETE, NULL)                                                                \
	/* SP_MAX_USTACK frames (CFI walk) or kernel.perf_event_max_stack (frame pointers) */      \
	X(SP_USTACK_DEPTH, "[truncated: depth limit]")                                             \
	/* code without CFI whose frame-pointer chain ended (RBP 0 or lost) */                     \
	X(SP_USTACK_NO_UNWIND_INFO, "[truncated: no unwind info]")                                 \
	/* a pc outside every executable mapping the agent knows for the process */                \
	X(SP_USTACK_NO_MAPPING, "[truncated: unknown mapping]")                                    \
	/* the table of the pc's file was being replaced */                                        \
	X(SP_USTACK_NO_TABLE, "[truncated: unwind table missing]")                                 \
	/* a CFI rule the walker cannot follow (DWARF expression, ...) */                          \
	X(SP_USTACK_UNSUPPORTED, "[truncated: unsupported unwind rule]")                           \
	/* stack memory could not be read (paged out, bad address), or no user frame at all */     \
	X(SP_USTACK_UNREADABLE, "[truncated: unreadable stack]")                                   \
	/* the caller's frame would not lie above the current one (CFA or RBP below RSP) */        \
	X(SP_USTACK_BAD_FRAME, "[truncated: bad frame address]")                                   \
	/* no tables for the process yet (new process, reused PID): the leaf only, nothing guessed \
	 */                                                                                        \
	X(SP_USTACK_NOT_LOADED, "[truncated: not loaded yet]")                                     \
	/* user registers unusable (32-bit task): the leaf only */                                 \
	X(SP_USTACK_NO_REGS, "[truncated: no user registers]")                                     \
	/* CFI unwinding off (--unwind-max-mb 0): a frame-pointer walk nothing checked */          \
	X(SP_USTACK_FP_ONLY, "[unverified: frame pointers]")                                       \
	/* a frame-pointer step found a "return address" that does not follow a call */            \
	X(SP_USTACK_BAD_RA, "[truncated: unproven return address]")                                \
	/* a vfork child whose exec or exit released its parent, which now runs on the stack the   \
	 * child's registers point into: the leaf only */                                          \
	X(SP_USTACK_VFORK_RELEASED, "[truncated: vfork parent resumed]")                           \
	/* the walk's last return address lies in no executable VMA of the process at the sample's \
	 * instant (a walk led astray): no call returns there, so that PC is dropped, not shown as \
	 * an "[unknown]" frame (bpf/fileid.bpf.h) */                                              \
	X(SP_USTACK_NOT_CODE, "[truncated: return address outside code]")                          \
	/* a user thread past exit_mm() (exiting: its address space already released), no user     \
	 * frame to read */                                                                        \
	X(SP_USTACK_EXITING, "[truncated: thread exiting, no user memory]")

#define SP_USTACK_END_ENUM(name, marker) name,
enum sp_ustack_end { SP_USTACK_END_LIST(SP_USTACK_END_ENUM) SP_USTACK_END_MAX };
#undef SP_USTACK_END_ENUM

/* The stack end of a CFI walk that stopped for @stat (SP_STAT_UNW_END..SP_STAT_UNW_BAD_RA). */
static inline __u32 sp_ustack_end_of_stat(__u32 stat)
{
	switch (stat) {
	case SP_STAT_UNW_END:
		return SP_USTACK_COMPLETE;
	case SP_STAT_UNW_FP_END:
		return SP_USTACK_NO_UNWIND_INFO;
	case SP_STAT_UNW_NO_MAPPING:
		return SP_USTACK_NO_MAPPING;
	case SP_STAT_UNW_NO_TABLE:
		return SP_USTACK_NO_TABLE;
	case SP_STAT_UNW_UNSUPPORTED:
		return SP_USTACK_UNSUPPORTED;
	case SP_STAT_UNW_READ_FAILED:
		return SP_USTACK_UNREADABLE;
	case SP_STAT_UNW_BAD_CFA:
		return SP_USTACK_BAD_FRAME;
	case SP_STAT_UNW_DEPTH:
		return SP_USTACK_DEPTH;
	case SP_STAT_UNW_BAD_RA:
		return SP_USTACK_BAD_RA;
	default:
		return SP_USTACK_UNSUPPORTED;
	}
}

/* Flags in sp_sample.flags. */
/* The task has no user address space: a kernel thread, or a thread exiting. */
#define SP_SAMPLE_KERNEL_THREAD 0x1
/*
 * Set by the caller of sp_sample_finish(): taken at a function's first instruction (a uprobe on
 * an entry point), where the return address is at [sp] and not yet in the frame-pointer chain.
 */
#define SP_SAMPLE_FUNC_ENTRY 0x2
/*
 * Set by the CFI walk (bpf/unwind.bpf.h) when it left the sampled PC by a CFI row: the caller
 * it found is exact even where the function had not set up its frame pointer yet (the agent
 * then adds no "caller unknown" marker after a Go leaf, docs/go.md).
 */
#define SP_SAMPLE_LEAF_CFI 0x4
/*
 * ctx holds goroutine labels (bpf/golabels.bpf.h), not a thread-context record: ctx_len bytes of
 * packed entries {key_len u8, value_len u8, key, value} (exporter/runtime/go/golabels.h).
 */
#define SP_SAMPLE_GO_LABELS 0x8

/*
 * --- File identities of user PCs (bpf/fileid.bpf.h, docs/unwinding.md) ---
 * A process that lives a few milliseconds is gone before the agent can read its
 * /proc/PID/maps, so its samples carry what naming their frames needs: the distinct
 * mappings (VMAs) their user PCs fall in, with the identity of the mapped file. The agent
 * matches each PC to an entry by address and finds the file in its symbol cache by
 * (device, inode, size, mtime), the key symcache__open() uses.
 */
#define SP_MAX_VMAS 8 /* a power of two: indices are masked with it */
struct sp_file_id {
	__u64 ino;	  /* 0: no file (anonymous memory, JIT) or unknown */
	__u64 size;	  /* i_size, bytes */
	__s64 mtime_sec;  /* i_mtime */
	__u32 mtime_nsec; /* < 1e9 */
	__u32 dev;	  /* i_sb->s_dev, kernel encoding: major << 20 | minor */
};
#define SP_VMA_VDSO 0x1 /* sp_vma.flags: the vDSO (no file) */
struct sp_vma {
	__u64 start, end; /* [start, end), process addresses */
	__u64 offset;	  /* file offset of start: vm_pgoff << PAGE_SHIFT */
	struct sp_file_id file;
	__u32 flags; /* SP_VMA_* */
	__u32 pad;
};
struct sp_vmas {
	struct sp_file_id exe; /* mm->exe_file (ino 0: none), also when n == 0 */
	__u32 n;	       /* entries used in vma[] (0: the sample carries none) */
	__u32 parent; /* a vfork child (walked with its parent's tables, or released): the parent's
			 PID; else 0 */
	struct sp_vma vma[SP_MAX_VMAS]; /* in order of first use, leaf first */
};
_Static_assert(sizeof(struct sp_vmas) == 40 + 64 * SP_MAX_VMAS, "sp_vmas is shared with BPF");
/*
 * Sent through the sample ring buffer (told apart from struct sp_sample by its size) when a
 * process execs a file whose identity was not sent lately, with its absolute path: the agent
 * opens it there if no process shows it the file alive. Precedes the process's samples.
 */
#define SP_EXEC_PATH_LEN 256
#define SP_EXEC_NAME_LEN 64
struct sp_exec_path {
	__u32 pid;
	__u32 pad;
	struct sp_file_id file;	     /* the new mm->exe_file */
	char path[SP_EXEC_PATH_LEN]; /* as exec was given it (bprm->interp), NUL-terminated */
	char name[SP_EXEC_NAME_LEN]; /* the file's own name (a symlink's target), may be cut */
};
_Static_assert(sizeof(struct sp_exec_path) == 8 + 32 + SP_EXEC_PATH_LEN + SP_EXEC_NAME_LEN,
	       "shared with BPF");
/* --- end of file identities --- */

struct sp_sample {
	__u64 time_boot_ns; /* bpf_ktime_get_boot_ns(): CLOCK_BOOTTIME */
	__u32 pid;	    /* thread group id */
	__u32 tid;	    /* thread id */
	__u32 cpu;
	__u32 flags;	  /* SP_SAMPLE_* */
	__u16 kstack_len; /* frames used in kstack */
	__u16 ustack_len; /* frames used in ustack */
	__u8 type;	  /* enum sp_profile_type */
	__u8 ustack_end;  /* enum sp_ustack_end: why ustack ends where it does */
	__u8 py_stop; /* enum py_stop (bpf/python.h): why the Python walk ended; 0: not walked */
	/*
	 * Frames the CFI walk left by a frame-pointer step (no CFI row at their PC), 255 at most;
	 * 0 for other walks. The agent checks those steps (exporter/resolve/fpproof.c).
	 */
	__u8 fp_steps;
	__u64 pstart_boot_ns;	     /* group leader's start time: tells a reused PID apart */
	__u64 value;		     /* per type: bytes, nanoseconds (0 for CPU) */
	__u64 addr;		     /* per type: lock address, 0 if none */
	char comm[SP_COMM_LEN];	     /* thread name */
	char pcomm[SP_COMM_LEN];     /* process (group leader) name */
	__u64 kstack[SP_MAX_KSTACK]; /* kernel PCs, leaf first */
	/*
	 * User PCs, leaf first (ustack_len), then, when the process runs CPython and the walk is
	 * loaded (bpf/python.bpf.h), py_len struct py_frame (2 slots each, innermost first) in
	 * the room the native frames left; then, in a node process the agent described
	 * (bpf/v8.bpf.h), v8_len struct v8_frame (3 slots each); then, in a JVM the agent
	 * described (bpf/hotspot.bpf.h), hs_len Java frame records (2 slots each); then, in a
	 * PHP process the agent described (bpf/php.bpf.h), php_len PHP frames (2 slots each).
	 */
	__u64 ustack[SP_MAX_USTACK];
	__u16 ctx_len; /* bytes of ctx used; 0: no span */
	__u16 py_len;  /* Python frames after the native ones in ustack (see there) */
	__u16 v8_len;  /* V8 frames (bpf/v8.h, 3 slots each) after the Python ones in ustack */
	__u16 hs_len;  /* Java frames (bpf/hotspot.h, 2 slots each) after the V8 ones in ustack */
	__u16 php_len; /* PHP frames (bpf/php.h, 2 slots each) after the Java ones in ustack */
	__u8 php_stop; /* enum php_stop (bpf/php.h): why the PHP walk ended; 0: not walked */
	__u8 pad[5];
	__u8 ctx[SP_CTX_MAX]; /* the thread's context record, validated */
	struct sp_vmas vmas;  /* file identities of the user PCs (vmas.n == 0: none) */
};

/* The ustack slots sample @s uses: native frames, then Python (2 each), V8 (3 each), Java
 * (2 each) and PHP (2 each) frames. */
static inline __u32 sp_ustack_slots(const struct sp_sample *s)
{
	return (__u32)s->ustack_len + 2u * s->py_len + 3u * s->v8_len + 2u * s->hs_len +
	       2u * s->php_len;
}

/* bpf/golabels.bpf.h packs an entry at offsets up to 448 (masked with 511 for the verifier):
 * the longest entry fits ctx from there, and the buffer past 511; the packed entries go into
 * ctx in one copy whose length is masked with SP_GO_LABEL_BUF - 1, which stays in the record. */
_Static_assert(448 + 2 + SP_GO_MAX_KEY + SP_GO_MAX_VALUE <= SP_CTX_MAX &&
		   511 + 2 + SP_GO_MAX_KEY + SP_GO_MAX_VALUE <= SP_GO_LABEL_BUF &&
		   SP_GO_LABEL_BUF <= SP_CTX_MAX + sizeof(struct sp_vmas),
	       "goroutine label copy bounds");

_Static_assert(sizeof(struct sp_sample) == 88 + 8 * (SP_MAX_KSTACK + SP_MAX_USTACK) + 16 +
					       SP_CTX_MAX + sizeof(struct sp_vmas),
	       "sp_sample layout is shared with BPF: keep it packed and stable");

#ifndef __BPF__
/*
 * Marks @pid's entry of @map in the agent's mapping of proc_known (@known: SP_PROC_KNOWN_WORDS
 * words, or NULL where no BPF maps exist: nothing to mark). Called before and after each write
 * of a per-process entry: a hook that cleared the bit between the two saw the old state, as it
 * would have looked the entry up before the write; the second call leaves the bit set for the
 * entry written. Atomic: the hooks clear other PIDs' bits of the same word meanwhile.
 */
static inline void sp_proc_known_set(__u64 *known, __u32 pid, enum sp_proc_known_map map)
{
	if (known && pid < SP_PID_MAX_LIMIT)
		__atomic_fetch_or(&known[SP_PROC_KNOWN_WORD(pid, map)], 1ull << (pid % 64),
				  __ATOMIC_SEQ_CST);
}

/*
 * Writes @pid's entry @value into per-process map @fd (one of enum sp_proc_known_map: @map),
 * marked in @known before and after (sp_proc_known_set()). 0 or -errno of the map update.
 */
static inline int sp_proc_entry_write(__u64 *known, enum sp_proc_known_map map, int fd, __u32 pid,
				      const void *value)
{
	int err;

	sp_proc_known_set(known, pid, map);
	err = bpf_map_update_elem(fd, &pid, value, BPF_ANY) ? -errno : 0;
	sp_proc_known_set(known, pid, map);
	return err;
}
#endif

#endif /* SPANPROF_SAMPLER_H */
