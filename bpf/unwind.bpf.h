/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF half of the CFI stack walker (docs/unwinding.md): the maps the agent fills
 * (exporter/unwind/unwinder.c) and the per-sample walk, one bpf_loop iteration per frame. The step
 * logic itself is shared with the unit test in unwind_walk.h. Included by sampler.bpf.c after
 * its stats map and stat_inc().
 */
#ifndef SPANPROF_UNWIND_BPF_H
#define SPANPROF_UNWIND_BPF_H

#include "hotspot.h"

/*
 * Stack reads go through a window: the rest of the page holding the address is copied at once.
 * Touching a user page from the kernel costs far more than copying it (a TLB fill under page
 * table isolation: ~1 us per page against ~0.15 us per further read on the reference machine),
 * and frames are read in increasing address order, so one read serves many frames.
 */
#define UNWIND_PAGE 4096u

struct unwind_window {
	__u64 base; /* user address of data[0] */
	__u32 len;  /* valid bytes; 0: empty */
	__u32 pad;
	/*
	 * Pending uretprobes of the sampled task (unwind_fix_ra()): the [uprobes] trampoline's
	 * address (0: the mm has none) and the next return_instance to match (kernel pointer).
	 */
	__u64 tramp;
	__u64 ri;
	__u8 data[UNWIND_PAGE + 16]; /* + 16: an 8- or 16-byte copy at any offset stays inside */
	/*
	 * For the V8 frame reader (bpf/v8.bpf.h), which runs after the walk: the frame pointer
	 * (RBP) of each frame i the walk left by a frame-pointer step (0: by a CFI row, or RBP
	 * unknown), and the stack pointer at the leaf.
	 */
	__u64 fp_of[SP_MAX_USTACK];
	__u64 leaf_sp;
	/* Java frames the walk recorded (bpf/hotspot.h: two words each), hs_n of them. */
	__u64 hs_rec[2 * HS_MAX_FRAMES];
	__u32 hs_n;
	__u32 hs_pad;
	/* hs_step()'s reads (an interpreter frame's slots; a return address and saved RBP): here
	 * rather than on the BPF stack, which 6.1 caps at 512 bytes for the whole call chain. */
	__u64 hs_slots[10];
	__u64 hs_tmp[12];
	/* The CodeBlob header hs_step() reads at once (HS_BLOB_HEADER bytes, + 8: any field of
	 * up to 8 bytes at an offset below HS_BLOB_HEADER stays inside). */
	__u8 hs_blob[HS_BLOB_HEADER + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_window);
} unwind_scratch SEC(".maps");

/*
 * The 64-bit word at @p, one load. Through a parameter: clang gives a load through a cast of
 * &array[i] the array element's alignment (1, so 8 byte loads in BPF), a load through a pointer
 * parameter the type's.
 */
static __always_inline __u64 unwind_load8(const __u8 *p)
{
	return *(const __u64 *)p;
}

/*
 * Reads @size (8 or 16) bytes at user address @addr through the window @win into @dst, one or
 * two 64-bit words (so @dst is __u64-aligned). 0 or a negative error.
 */
static __always_inline int unwind_win_read(struct unwind_window *win, void *dst, __u32 size,
					   __u64 addr)
{
	__u64 off = addr - win->base;
	__u32 len;

	if (addr < win->base || off + size > win->len) {
		len = UNWIND_PAGE - (addr & (UNWIND_PAGE - 1));
		if (len < size) /* straddles a page: read it alone */
			return bpf_probe_read_user(dst, size, (const void *)addr);
		if (len > UNWIND_PAGE)
			len = UNWIND_PAGE;
		win->len = 0;
		if (bpf_probe_read_user(win->data, len, (const void *)addr))
			return -1;
		win->base = addr;
		win->len = len;
		off = 0;
	}
	off &= UNWIND_PAGE - 1;
	/*
	 * Whole-word loads: a memcpy from an offset of unknown alignment is 8 byte loads and their
	 * shifts per word in BPF. The verifier allows a misaligned load where the architecture has
	 * efficient ones (x86-64, arm64); stack slots are 8-aligned anyway.
	 */
	((__u64 *)dst)[0] = unwind_load8(&win->data[off]);
	if (size == 16)
		((__u64 *)dst)[1] = unwind_load8(&win->data[off + 8]);
	return 0;
}

/*
 * The kernel's MAX_URETPROBE_DEPTH: a task has at most this many pending uretprobes (more are
 * not installed), so the list walk is bounded by it.
 */
#define UNWIND_MAX_URETPROBES 64

/*
 * A return address that is the [uprobes] trampoline (a uretprobe of spanprof's or of any other
 * tool hijacked it on the function's entry) is replaced by the original the kernel keeps in the
 * task's pending return instances (kernel/events/uprobes.c, prepare_uretprobe(): ri->stack is
 * the user sp at the entry, i.e. the slot the address was read from; the list is innermost
 * first; chained instances of a tail call share a slot and the original). 0 when no instance
 * matches @slot: the walk stops rather than guess.
 */
static __always_inline __u64 unwind_fix_ra(struct unwind_window *win, __u64 ra, __u64 slot)
{
	struct return_instance *ri;
	__u64 stack, orig = 0;
	__u32 i;

	if (!win->tramp || ra != win->tramp)
		return ra;
	ri = (struct return_instance *)win->ri;
	for (i = 0; i < UNWIND_MAX_URETPROBES && ri; i++) {
		stack = BPF_CORE_READ(ri, stack);
		if (stack > slot)
			break;
		if (stack == slot && !orig)
			orig = BPF_CORE_READ(ri, orig_ret_vaddr);
		ri = BPF_CORE_READ(ri, next);
	}
	win->ri = (__u64)ri;
	return orig;
}

#define UNWIND_FIX_RA(rctx, ra, slot) unwind_fix_ra((struct unwind_window *)(rctx), (ra), (slot))
#define UNWIND_READ_USER(rctx, dst, size, addr)                                                    \
	unwind_win_read((struct unwind_window *)(rctx), (dst), (size), (addr))
/* Code, not stack: read directly, the window keeps the stack page. */
#define UNWIND_READ_CODE(rctx, dst, addr) bpf_probe_read_user((dst), 8, (const void *)(addr))
#include "unwind_walk.h"

/* Set before load: 0 turns the CFI walker off (every stack by frame pointers). */
const volatile __u32 unwind_enabled = 0;
/*
 * Set before load: kernel.perf_event_max_stack, where bpf_get_stack()'s frame-pointer walk stops
 * (a stack of that many frames was cut there).
 */
const volatile __u32 fp_max_depth = 127;

/* One chunk of rows: the inner map type of unwind_chunks (mmapped by the agent to fill it). */
struct unwind_chunk_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	/* A size, not a type: clang only emits a forward declaration for a type seen here. */
	__uint(value_size, sizeof(struct unwind_chunk));
};

/* Chunk slot -> rows. Sized by the agent from its byte limit (--unwind-max-mb). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 512);
	__type(key, __u32);
	__array(values, struct unwind_chunk_inner);
} unwind_chunks SEC(".maps");

/* Table id -> where its rows are. Sized by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct unwind_table_desc);
} unwind_tables SEC(".maps");

/* Thread group id -> its executable mappings. Entries are allocated on use (8 KiB each). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/* exec / mmap / exit of known processes, so the agent refreshes their mappings at once. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 10); /* UNWIND_EVENTS_WAKEUP_BYTES below: a quarter of it */
} unwind_events SEC(".maps");

/* State of one walk (no pointers: a global function writes it). */
struct unwind_walk {
	struct unwind_regs r;
	struct unwind_sigregs sig;
	struct unwind_table_desc desc; /* descriptor of table_id */
	__u32 table_id;		       /* UNWIND_TABLE_NONE: desc not loaded */
	__s32 map;		       /* last mapping found (most frames stay in it), -1 none */
	__u32 n;		       /* frames written to s->ustack */
	__u32 stop;		       /* enum sp_stat: why the walk stopped; 0 while it goes on */
	__u32 cfi_frames, fp_frames;
	__u64 out;	       /* the value to store for the frame just handled */
	struct unwind_row row; /* the row of the frame being unwound */
	/* Row cache: w->row is the row of table table_id at last_tpc (last_found >= 0). */
	__u64 last_tpc;
	__s32 last_found;
	__u32 leaf_cfi;	   /* the sampled PC was left by a CFI row (SP_SAMPLE_LEAF_CFI) */
	__u32 ra_unmapped; /* a frame-pointer step's return address lay in no known mapping */
	/* R13 at the sample: HotSpot's interpreter keeps the bytecode pointer in it. */
	__u64 r13;
	__u32 r13_known;
	__u32 pad;
};

#include "hotspot.bpf.h"

/*
 * Fill of unwind_events from which a notification wakes the agent: a quarter of the ring. Below
 * it none does: the agent's drain thread looks at the ring's fill every 10 ms and has the main
 * thread read it (exporter/sampling/sampler.c), so a notification waits at most that long. A
 * wakeup is an irq_work (a self-IPI, a VM exit in a guest) run inside the hook: it was most of
 * a new process's hook time (docs/performance.md, "Process hooks").
 */
#define UNWIND_EVENTS_WAKEUP_BYTES (16u << 10)

/* Sends a notification; wakes the agent only when the ring is filling (a burst). */
static __always_inline void unwind_notify(__u32 pid, __u32 kind, __u64 addr)
{
	struct unwind_event ev = {.pid = pid, .kind = kind, .addr = addr};
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&unwind_events, BPF_RB_AVAIL_DATA) >= UNWIND_EVENTS_WAKEUP_BYTES)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&unwind_events, &ev, sizeof(ev), flags))
		stat_inc(SP_STAT_EVENT_DROP);
	else
		stat_inc(SP_STAT_EVENTS);
}

/* What each bpf_loop iteration gets. */
struct unwind_loop {
	struct sp_sample *s;
	struct unwind_proc *proc;
	struct hs_desc *hs; /* the process's JVM descriptor, or NULL */
	struct unwind_window *win;
	struct unwind_walk w;
};

static __always_inline struct unwind_chunk *unwind_chunk(__u32 slot)
{
	void *inner = bpf_map_lookup_elem(&unwind_chunks, &slot);
	__u32 zero = 0;

	if (!inner)
		return NULL;
	return bpf_map_lookup_elem(inner, &zero);
}

/*
 * Index of the row covering tpc among ch->rows[lo..hi), or lo - 1 (unwind__find_row_range()). A
 * global function: the verifier checks its steps once, with lo and hi unknown, instead of once
 * per way the chunk search before it ended (each of those states walked the 25 steps again:
 * half of on_cpu_sample's verification, seconds of start-up on a loaded machine).
 */
__noinline int unwind_chunk_find_global(const struct unwind_chunk *ch, __u32 lo, __u32 hi,
					__u64 tpc)
{
	if (!ch)
		return (int)lo - 1;
	return unwind__find_row_range(ch->rows, lo, hi, tpc, UNWIND_CHUNK_ROWS);
}

/*
 * The row of table d covering tpc (a pc in the table's space). 1 and *out, 0 when no row covers
 * it (frame pointers), -1 when a chunk is missing.
 */
static __always_inline int unwind_lookup_row(const struct unwind_table_desc *d, __u64 tpc,
					     struct unwind_row *out)
{
	__u32 slot = d->first >> UNWIND_CHUNK_ROWS_LOG2, count = d->count;
	__u32 lo = d->first & (UNWIND_CHUNK_ROWS - 1), hi, klo = 0, khi, mid, i;
	struct unwind_chunk *ch;
	__u64 lt;
	int idx;

	/* Row pcs are 32-bit: a larger pc compares like the largest one. */
	if (tpc > 0xffffffffULL)
		tpc = 0xffffffffULL;
	if (count <= UNWIND_CHUNK_ROWS) {
		/* Small table: a sub-range of one chunk. */
		hi = lo + count;
		if (hi > UNWIND_CHUNK_ROWS)
			return -1;
		ch = unwind_chunk(slot);
		if (!ch)
			return -1;
	} else {
		/* Large table: whole chunks from slot; find the last whose first row is <= tpc. */
		khi = (count + UNWIND_CHUNK_ROWS - 1) >> UNWIND_CHUNK_ROWS_LOG2;
		if (lo || khi > UNWIND_MAX_TABLE_CHUNKS)
			return -1;
		/* Each step halves [klo, khi): 256 chunks at most need 9 steps. */
		for (i = 0; i < UNWIND_CHUNK_FIND_MAX_STEPS; i++) {
			if (klo >= khi)
				break;
			mid = klo + (khi - klo) / 2;
			ch = unwind_chunk(slot + mid);
			if (!ch)
				return -1;
			/* Branch-free, as in unwind__find_row_range: one verifier path per step. */
			lt = (tpc - ch->rows[0].pc) >> 63;
			klo += (mid + 1 - klo) & (__u32)(lt - 1);
			khi -= (khi - mid) & (__u32)(0 - lt);
		}
		if (!klo)
			return 0;
		klo--;
		ch = unwind_chunk(slot + klo);
		if (!ch)
			return -1;
		hi = count - klo * UNWIND_CHUNK_ROWS;
		if (hi > UNWIND_CHUNK_ROWS)
			hi = UNWIND_CHUNK_ROWS;
	}
	idx = unwind_chunk_find_global(ch, lo, hi, tpc);
	if (idx < (int)lo)
		return 0;
	*out = ch->rows[idx & (UNWIND_CHUNK_ROWS - 1)];
	return 1;
}

/* 1 when the instruction before pc is a syscall (0f 05) and rax (@ax) is not the child's 0. */
static __always_inline int unwind_after_syscall(__u64 pc, __u64 ax)
{
	__u16 insn = 0;

	return ax != 0 && !bpf_probe_read_user(&insn, sizeof(insn), (const void *)(pc - 2)) &&
	       insn == 0x050f;
}

/* The stats counter of a step's stop reason. */
static __always_inline __u32 unwind_step_stat(int res)
{
	switch (res) {
	case UNWIND_STEP_END:
		return SP_STAT_UNW_END;
	case UNWIND_STEP_FP_END:
		return SP_STAT_UNW_FP_END;
	case UNWIND_STEP_BAD_CFA:
		return SP_STAT_UNW_BAD_CFA;
	case UNWIND_STEP_READ_FAILED:
		return SP_STAT_UNW_READ_FAILED;
	case UNWIND_STEP_BAD_RA:
		return SP_STAT_UNW_BAD_RA;
	default:
		return SP_STAT_UNW_UNSUPPORTED;
	}
}

/*
 * The walk is split into global functions: the verifier checks each once on its own, with its
 * arguments unknown, instead of once per combination of the paths before it (the row search
 * alone ends on any of 25 steps) and once per state of the loop around it (which does not
 * converge). Their pointers are therefore arguments, and w carries the values between them.
 */

/* The row of w->desc covering tpc into w->row: 1, 0 (no row: frame pointers) or -1. */
__noinline int unwind_find_row_global(struct unwind_walk *w, __u64 tpc)
{
	struct unwind_row row = {};
	int found;

	if (!w)
		return -1;
	found = unwind_lookup_row(&w->desc, tpc, &row);
	w->row = row;
	return found;
}

/* One unwind__step() of w->r with w->row (found) or frame pointers (!found). */
__noinline int unwind_step_global(struct unwind_walk *w, struct unwind_window *win, int found)
{
	struct unwind_row row;

	if (!w || !win)
		return UNWIND_STEP_UNSUPPORTED;
	row = w->row;
	return unwind__step(&w->r, found ? &row : NULL, &w->sig, win);
}

/* One frame in a JVM's code cache (bpf/hotspot.bpf.h): hs_step(). */
__noinline int hs_step_global(struct unwind_walk *w, const struct hs_desc *d,
			      struct unwind_window *win, __u32 i)
{
	if (!w || !d || !win)
		return UNWIND_STEP_UNSUPPORTED;
	return hs_step(w, d, win, i);
}

/*
 * One frame: set w->out to the value to record for frame i, find its row, step to the caller
 * (in a JVM's code cache, @hs non-NULL: hs_step_global()). Returns 1 to stop.
 */
__noinline int unwind_frame_global(struct unwind_walk *w, struct unwind_proc *proc,
				   struct unwind_window *win, const struct hs_desc *hs, __u32 i)
{
	const struct unwind_table_desc *d;
	const struct unwind_mapping *m;
	int mi, found = 0, res;
	__u64 pc, lpc, tpc;

	if (!w || !proc || !win)
		return 1;
	pc = w->r.pc;
	mi = w->map;

	/*
	 * The host names non-leaf frames at pc - 1 (return addresses); an exact pc above the leaf
	 * (the instruction a signal interrupted) is stored + 1 so that it is named itself.
	 */
	w->out = pc + (i > 0 && w->r.exact);
	w->n = i + 1;
	lpc = pc - !w->r.exact;

	if (hs && hs_in_code_cache(hs, lpc)) {
		win->fp_of[i & (SP_MAX_USTACK - 1)] = 0;
		if (!i)
			win->leaf_sp = w->r.sp;
		w->fp_frames++;
		res = hs_step_global(w, hs, win, i);
		/* The call stub and other blobs without a frame size: a frame-pointer step. */
		if (res == HS_STEP_FP)
			res = unwind_step_global(w, win, 0);
		if (res == UNWIND_STEP_OK)
			return 0;
		w->stop = unwind_step_stat(res);
		return 1;
	}

	if (mi < 0 || lpc < proc->maps[mi & (UNWIND_MAX_MAPPINGS - 1)].start ||
	    lpc >= proc->maps[mi & (UNWIND_MAX_MAPPINGS - 1)].end)
		mi = unwind__find_mapping(proc->maps, proc->n, lpc);
	if (mi < 0) {
		w->stop = SP_STAT_UNW_NO_MAPPING;
		return 1;
	}
	w->map = mi;
	m = &proc->maps[mi & (UNWIND_MAX_MAPPINGS - 1)];
	if (m->table != UNWIND_TABLE_NONE) {
		if (m->table != w->table_id) {
			__u32 id = m->table;

			d = bpf_map_lookup_elem(&unwind_tables, &id);
			if (!d) {
				w->stop = SP_STAT_UNW_NO_TABLE;
				return 1;
			}
			w->desc = *d;
			w->table_id = id;
			w->last_found = -1; /* the row cache was another table's */
		}
		tpc = lpc - m->bias;
		/* Recursion returns to the same address frame after frame: reuse its row. */
		if (w->last_found >= 0 && w->last_tpc == tpc) {
			found = w->last_found;
		} else {
			found = unwind_find_row_global(w, tpc);
			if (found < 0) {
				w->stop = SP_STAT_UNW_NO_TABLE;
				return 1;
			}
			w->last_tpc = tpc;
			w->last_found = found;
		}
		if (w->r.di_known && (!found || w->row.kind == UNWIND_KIND_FP) &&
		    unwind_after_syscall(pc, w->r.ax)) {
			/*
			 * glibc's clone and clone3 end their FDE right before the syscall (in the
			 * child the rules would be wrong). The parent, sampled in the syscall or
			 * right after it (rax not 0: -ENOSYS inside, the child's pid after), is in
			 * the FDE's last state: the syscall instruction keeps RSP and RBP. Its row
			 * is the one covering the byte before the syscall, if CFI covers it.
			 */
			found = unwind_find_row_global(w, tpc - 3);
			if (found < 0) {
				w->stop = SP_STAT_UNW_NO_TABLE;
				return 1;
			}
			if (found && w->row.kind == UNWIND_KIND_FP)
				found = 0;
			w->last_found = -1; /* w->row is not the row of last_tpc */
		}
		if (i > 0 && !w->r.exact && found && w->row.kind == UNWIND_KIND_FP) {
			/*
			 * The byte before this "return address" lies in no FDE while the address
			 * begins one: no call of code with CFI returns here. It was pushed, as
			 * makecontext() pushes __start_context for the function a coroutine runs
			 * when it returns: the frame is the code at the address itself, walked with
			 * its own first row, named there. A frame-pointer step instead would take
			 * the RBP the context was made with, and another stack's callers.
			 */
			found = unwind_find_row_global(w, tpc + 1);
			if (found < 0) {
				w->stop = SP_STAT_UNW_NO_TABLE;
				return 1;
			}
			if (found && w->row.kind != UNWIND_KIND_FP && w->row.pc == tpc + 1)
				w->out = pc + 1;
			else
				found = 0;
			w->last_found = -1; /* w->row is not the row of last_tpc */
		}
	}
	win->fp_of[i & (SP_MAX_USTACK - 1)] =
	    (!found || w->row.kind == UNWIND_KIND_FP) && !w->r.bp_unknown ? w->r.bp : 0;
	if (!i)
		win->leaf_sp = w->r.sp;
	if (found && w->row.kind == UNWIND_KIND_SIGNAL)
		w->out = pc + (i > 0); /* name the trampoline itself */
	if (found && w->row.kind != UNWIND_KIND_FP && !i)
		w->leaf_cfi = 1;
	if (found && w->row.kind != UNWIND_KIND_FP)
		w->cfi_frames++;
	else
		w->fp_frames++;
	res = unwind_step_global(w, win, found);
	/*
	 * A frame-pointer step proves less than a CFI row: its return address must also lie in a
	 * mapping the agent knows, or it is not recorded (a new library is caught by the re-read
	 * that the next CFI walk's NO_MAPPING stop triggers).
	 */
	if (res == UNWIND_STEP_OK && (!found || w->row.kind == UNWIND_KIND_FP) &&
	    unwind__find_mapping(proc->maps, proc->n, w->r.pc - 1) < 0) {
		res = UNWIND_STEP_BAD_RA;
		w->ra_unmapped = 1;
	}
	if (res == UNWIND_STEP_OK)
		return 0;
	w->stop = unwind_step_stat(res);
	return 1;
}

static long unwind_frame(__u32 i, void *ctx)
{
	struct unwind_loop *l = ctx;
	long ret = unwind_frame_global(&l->w, l->proc, l->win, l->hs, i);

	l->s->ustack[i & (SP_MAX_USTACK - 1)] = l->w.out;
	return ret ? 1 : 0; /* bpf_loop wants exactly 0 or 1 */
}

/*
 * The user registers at the sample: those saved at the last entry into the kernel, which is the
 * sampling interrupt itself when it hit user mode (then they equal the perf context's). 0, or -1
 * for a 32-bit task or unusable registers.
 */
static __always_inline int unwind_user_regs(struct unwind_regs *r)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!regs)
		return -1;
	/* __USER_CS: 64-bit user code (32-bit tasks use __USER32_CS and another ABI). */
	if (regs->cs != 0x33)
		return -1;
	r->pc = regs->ip;
	r->sp = regs->sp;
	r->bp = regs->bp;
	r->exact = 1;
	r->bp_unknown = 0;
	r->stack_hi = BPF_CORE_READ(bpf_get_current_task_btf(), mm, start_stack);
	r->di = regs->di;
	r->ax = regs->ax;
	r->di_known = 1;
	r->outermost = 0;
	return r->pc ? 0 : -1;
}

/*
 * The user stack of a process the agent has no tables for (yet): only what is proven, the
 * sampled pc and, at a function's first instruction (SP_SAMPLE_FUNC_ENTRY: a uprobe on an entry
 * point), the return address the call just pushed at [sp] when it follows a call. A frame-pointer
 * walk here would read data as return addresses in code built without them. Returns the frames
 * written to s->ustack (0 when the registers are unreadable). Not inlined: merged into its
 * caller, clang shares loads across paths the verifier must keep apart (stack and record).
 */
static __noinline int unwind_leaf_only(struct sp_sample *s)
{
	struct unwind_regs r;
	struct pt_regs *regs;
	__u64 ra = 0, code = 0;

	if (unwind_user_regs(&r)) {
		/* A 32-bit task (its return addresses are 4 bytes): the pc alone. */
		regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		if (!regs || !regs->ip)
			return 0;
		s->ustack[0] = regs->ip;
		return 1;
	}
	s->ustack[0] = r.pc;
	if (!(s->flags & SP_SAMPLE_FUNC_ENTRY) ||
	    bpf_probe_read_user(&ra, sizeof(ra), (const void *)r.sp) || !ra ||
	    bpf_probe_read_user(&code, sizeof(code), (const void *)(ra - 8)) ||
	    !unwind__after_call(code))
		return 1;
	s->ustack[1] = ra;
	return 2;
}

/*
 * The mapping list for a sample of process @pid (group leader started at @start_boot_ns) of
 * @task, or NULL. A child sharing its parent's address space (vfork(), posix_spawn's
 * CLONE_VM | CLONE_VFORK child) has no entry of its own yet, but while its parent waits for it
 * its mappings are its parent's by definition: it uses the parent's entry (*borrowed = the
 * parent's PID, never 0: the agent has no maps of the child to name its frames with, so the
 * sample carries file identities, and the parent's PID to learn unknown files from);
 * once the parent was released, none (*released = 1; *borrowed still the parent's PID: the
 * sample's leaf is the child's, its file identities are looked up in the parent's memory, and
 * a leaf whose lookup could not run is named from what the parent's showed). An entry of an earlier
 * process with the same PID is never used (counted: stale).
 */
static __always_inline struct unwind_proc *unwind_proc_of(struct task_struct *task, __u32 pid,
							  __u64 start_boot_ns, __u32 *borrowed,
							  __u32 *released)
{
	struct unwind_proc *uproc = bpf_map_lookup_elem(&unwind_procs, &pid);
	struct task_struct *parent;
	__u32 ppid;

	if (!uproc) {
		parent = BPF_CORE_READ(task, real_parent);
		if (!parent || BPF_CORE_READ(parent, mm) != BPF_CORE_READ(task, mm))
			return NULL;
		/*
		 * Only while the parent waits: the child's exec or exit clears vfork_done as it
		 * wakes the parent (kernel/fork.c, complete_vfork_done()), and from then on the
		 * parent runs on the stack the child's saved registers still point into. A
		 * CLONE_VM child without CLONE_VFORK never has it: not walked either.
		 */
		ppid = BPF_CORE_READ(parent, tgid);
		if (!BPF_CORE_READ(task, vfork_done)) {
			*released = 1;
			*borrowed = ppid;
			return NULL;
		}
		start_boot_ns = BPF_CORE_READ(parent, group_leader, start_boottime);
		uproc = bpf_map_lookup_elem(&unwind_procs, &ppid);
		if (!uproc)
			return NULL;
		*borrowed = ppid;
	}
	/* start 0: loaded before the first sample told the agent the start time. */
	if (uproc->start_boot_ns && uproc->start_boot_ns != start_boot_ns) {
		stat_inc(SP_STAT_UNW_STALE);
		return NULL;
	}
	return uproc;
}

/* The current task's pending uretprobes into win (unwind_fix_ra()); none on kernels without. */
static __always_inline void unwind_uretprobes(struct unwind_window *win)
{
	struct task_struct *task = bpf_get_current_task_btf();

	win->tramp = win->ri = 0;
	if (!bpf_core_type_exists(struct return_instance) ||
	    !bpf_core_field_exists(struct return_instance, stack) ||
	    !bpf_core_field_exists(struct return_instance, orig_ret_vaddr))
		return;
	win->ri = (__u64)BPF_CORE_READ(task, utask, return_instances);
	if (win->ri)
		win->tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
}

/*
 * Walks the user stack of the sampled process proc into s->ustack with the CFI tables.
 * Returns the number of frames, or -1 when the registers are unusable (the caller falls back to
 * frame pointers). Counts the outcome in stats; *stop is why the walk ended (enum sp_stat).
 */
static __always_inline int unwind_user_stack(void *ctx, struct sp_sample *s,
					     struct unwind_proc *proc, __u32 pid, __u32 borrowed,
					     __u32 *stop)
{
	struct unwind_loop l = {
	    .s = s,
	    .proc = proc,
	    .w.table_id = UNWIND_TABLE_NONE,
	    .w.last_found = -1,
	    .w.map = -1,
	};
	struct unwind_walk *w = &l.w;
	__u32 zero = 0;

	l.win = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!l.win)
		return -1;
	l.win->len = 0;
	l.win->hs_n = 0;
	unwind_uretprobes(l.win);
	l.hs = hs_desc_of(pid, s->pstart_boot_ns);
	if (l.hs) {
		struct pt_regs *regs =
		    (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		if (regs) {
			w->r13 = regs->r13;
			w->r13_known = 1;
		}
	}

	if (unwind_user_regs(&w->r)) {
		stat_inc(SP_STAT_UNW_NO_REGS);
		return -1;
	}
	/* Where the kernel's rt_sigframe keeps the interrupted registers (BTF of this kernel). */
	w->sig.bp = bpf_core_field_offset(struct ucontext, uc_mcontext) +
		    bpf_core_field_offset(struct sigcontext_64, bp);
	w->sig.sp = bpf_core_field_offset(struct ucontext, uc_mcontext) +
		    bpf_core_field_offset(struct sigcontext_64, sp);
	w->sig.ip = bpf_core_field_offset(struct ucontext, uc_mcontext) +
		    bpf_core_field_offset(struct sigcontext_64, ip);
	/* One frame per iteration: SP_MAX_USTACK is the depth the sample record holds. */
	bpf_loop(SP_MAX_USTACK, unwind_frame, &l, 0);
	stat_inc(SP_STAT_UNW_CFI);
	*stop = w->stop ? w->stop : SP_STAT_UNW_DEPTH;
	stat_inc(*stop);
	stat_add(SP_STAT_UNW_FRAMES_CFI, w->cfi_frames);
	stat_add(SP_STAT_UNW_FRAMES_FP, w->fp_frames);
	s->fp_steps = w->fp_frames < 255 ? w->fp_frames : 255;
	if (w->leaf_cfi)
		s->flags |= SP_SAMPLE_LEAF_CFI;
	/*
	 * A library mapped between the agent's maps read and its write of this entry (ld.so in a
	 * new process, while the tables were being built) sends no mmap notification, and a walk
	 * that enters it only through frame pointers never stops at an unknown PC: ask for the
	 * maps once. (A vfork child's entry is its parent's: the parent's own samples ask.)
	 */
	if (w->ra_unmapped && !borrowed && !(proc->flags & UNWIND_PROC_UNMAPPED_RA_NOTED)) {
		proc->flags |= UNWIND_PROC_UNMAPPED_RA_NOTED;
		unwind_notify(pid, UNWIND_EVENT_MMAP, w->r.pc);
	}
	return w->n;
}

/*
 * exec replaces every mapping: forget the old ones now, and have the agent read the new ones.
 * A targeted process the agent has no entry for (a new program: its parent's fork had none)
 * is announced too, so that its tables are built from its exec on, not from its first sample.
 * Part of the exec hook (bpf/prochooks.bpf.h); @targeted: sampling, and the targeting filters
 * pass the exec'ing task; @known: its unwind_procs bit in proc_known was set (else it has no
 * entry).
 */
static __always_inline void unwind_on_exec(struct task_struct *p, __u32 pid, bool targeted,
					   bool known)
{
	if (known && sp_map_forget(&unwind_procs, &pid))
		unwind_notify(pid, UNWIND_EVENT_EXEC, 0);
	else if (targeted) /* direct loads: p is the tracepoint's BTF pointer */
		unwind_notify(pid, UNWIND_EVENT_NEW, p->group_leader->start_boottime);
}

/*
 * The last thread of a process exits: drop its entry; the agent releases its tables. Part of
 * the exit hook.
 */
static __always_inline void unwind_on_exit(__u32 pid)
{
	if (sp_map_forget(&unwind_procs, &pid))
		unwind_notify(pid, UNWIND_EVENT_EXIT, 0);
}

/* PROT_EXEC of include/uapi/asm-generic/mman-common.h, READ_IMPLIES_EXEC of
 * include/uapi/linux/personality.h. */
#define SP_PROT_READ 0x1ull
#define SP_PROT_EXEC 0x4ull
#define SP_READ_IMPLIES_EXEC 0x0400000u

/*
 * A known process maps code (dlopen, a new library): have the agent read its maps. At the
 * mmap's entry, so that the mapping's protection is an argument: mappings that are not
 * executable (most: data, heap, stacks, the read-only parts of libraries) cost one test, with
 * no map lookup. The agent re-reads the maps 20 ms after the notification, when the mapping is
 * long there (a failed mmap only costs a needless re-read). The protection a process under
 * READ_IMPLIES_EXEC maps readable memory with is executable too. @prot: mmap(2)'s.
 */
static __always_inline int unwind_on_mmap(__u64 prot)
{
	__u32 pid;

	if (!(prot & SP_PROT_EXEC) &&
	    (!(prot & SP_PROT_READ) ||
	     !(bpf_get_current_task_btf()->personality & SP_READ_IMPLIES_EXEC)))
		return 0;
	pid = bpf_get_current_pid_tgid() >> 32;
	if (!sp_proc_known(pid, SP_PROC_KNOWN_UNWIND) || !bpf_map_lookup_elem(&unwind_procs, &pid))
		return 0;
	unwind_notify(pid, UNWIND_EVENT_MMAP, 0);
	return 0;
}

/*
 * The mmap hook, an fentry on the function the mmap(2) and mmap_pgoff(2) system calls run
 * (mm/mmap.c; prot its third argument): it costs the processes that map something, and only
 * them. The agent's choice where the kernel's BTF has the function and fentry attaches.
 */
SEC("fentry/ksys_mmap_pgoff")
int BPF_PROG(on_mmap_fentry, unsigned long addr, unsigned long len, unsigned long prot)
{
	return unwind_on_mmap(prot);
}

/*
 * The mmap hook's fallback: the syscall's entry tracepoint. Any syscall tracepoint in use puts
 * every task of the host on the slow system-call path (each system call of each process pays
 * for it), hence fentry first.
 */
SEC("tracepoint/syscalls/sys_enter_mmap")
int on_unw_mmap(struct trace_event_raw_sys_enter *ctx)
{
	return unwind_on_mmap(ctx->args[2]);
}

#endif /* SPANPROF_UNWIND_BPF_H */
