/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CFI stack walker's shared half: the layout of the BPF maps the host fills (table chunks,
 * table descriptors, per-process mapping lists, notification events) and the per-frame logic
 * (mapping search, one unwind step). Compiled by bpf/sampler.bpf.c and, as ordinary C, by the
 * unit test (test/unwind/test_unwind.c), which runs the same step against a captured stack.
 * Fixed-width types only, no pointers, no bool; sizes pinned with _Static_assert.
 *
 * The unwind rules are those of bpf/unwind.h (x86-64 psABI section 3.6): RA at CFA - 8, the
 * caller's RSP is the CFA, the caller's RBP unchanged or saved at CFA + 8n. Signal frames follow
 * the kernel's x86-64 struct rt_sigframe (arch/x86/include/asm/sigframe.h): when the handler
 * returns into the trampoline, RSP points at the struct ucontext, whose uc_mcontext is the
 * struct sigcontext_64 holding the interrupted RBP, RSP and RIP.
 *
 * unwind__step() exists only where the includer defined UNWIND_READ_USER(rctx, dst, size,
 * addr) first: it reads size (8 or 16) bytes of the sampled process's memory at addr into dst, 0 on
 * success; rctx is the includer's, passed through unwind__step() (BPF: a window of stack read with
 * bpf_probe_read_user; the unit test: a copy of a captured stack). UNWIND_READ_CODE(rctx, dst,
 * addr) reads the 8 bytes of code at addr into the __u64 at dst (0 on success); the frame-pointer
 * step needs it to check a return address. UNWIND_FIX_RA(rctx, ra, slot), optional, gives the
 * return address to use for ra read at slot: ra itself, or for a uretprobe trampoline the original
 * the kernel keeps (0: not found, the step stops). The agent includes this header for the map
 * layouts only.
 */
#ifndef SPANPROF_UNWIND_WALK_H
#define SPANPROF_UNWIND_WALK_H

#include "unwind.h"

/* --- table storage --------------------------------------------------------------------------- */

/*
 * Rows of every loaded table live in one global row space cut into chunks of 2^16 rows (512 KiB,
 * one value of an inner BPF array, under the kernel's 4 MiB value limit): row r is in chunk
 * r >> 16 at slot r & 0xffff. A table of at most 2^16 rows lies inside one chunk; a larger one
 * starts at slot 0 of a chunk and fills consecutive chunks.
 */
#define UNWIND_CHUNK_ROWS_LOG2 16
#define UNWIND_CHUNK_ROWS (1u << UNWIND_CHUNK_ROWS_LOG2)
#define UNWIND_CHUNK_BYTES (UNWIND_CHUNK_ROWS * 8u)
/* Chunks of the largest table (UNWIND_MAX_ROWS rows). */
#define UNWIND_MAX_TABLE_CHUNKS (UNWIND_MAX_ROWS / UNWIND_CHUNK_ROWS)
/* Binary search over a table's chunks: log2(256) + 1 steps. */
#define UNWIND_CHUNK_FIND_MAX_STEPS (UNWIND_MAX_ROWS_LOG2 - UNWIND_CHUNK_ROWS_LOG2 + 1)

struct unwind_chunk {
	struct unwind_row rows[UNWIND_CHUNK_ROWS];
};

_Static_assert(sizeof(struct unwind_chunk) == UNWIND_CHUNK_BYTES, "one chunk is 512 KiB of rows");

/* Value of the table descriptor array, indexed by table id. count 0: no table (freed). */
struct unwind_table_desc {
	__u32 first; /* global row index of the table's first row */
	__u32 count; /* rows */
};

_Static_assert(sizeof(struct unwind_table_desc) == 8, "unwind_table_desc is shared with BPF");

/* --- per-process mappings -------------------------------------------------------------------- */

/* Executable mappings per process: more are dropped (counted by the host). */
#define UNWIND_MAX_MAPPINGS 256
/* Binary search over the mappings: log2(256) + 1 steps. */
#define UNWIND_MAPPING_FIND_MAX_STEPS 9
/* Mapping without a table (no CFI, unreadable file, JIT code, tables full): frame pointers. */
#define UNWIND_TABLE_NONE 0xffffffffu

struct unwind_mapping {
	__u64 start, end; /* [start, end) in the process */
	__u64 bias;	  /* table pc = pc - bias (file offset, PT_LOAD and table base folded in) */
	__u32 table;	  /* table id, or UNWIND_TABLE_NONE */
	__u32 pad;
};

_Static_assert(sizeof(struct unwind_mapping) == 32, "unwind_mapping is shared with BPF");

/* Value of the per-process map, keyed by thread group id. */
struct unwind_proc {
	__u64 start_boot_ns; /* group leader's start time: a reused PID never matches */
	__u32 n;	     /* mappings used, sorted by start, non-overlapping */
	__u32 flags;	     /* UNWIND_PROC_*: set by BPF, 0 in every entry the agent writes */
	struct unwind_mapping maps[UNWIND_MAX_MAPPINGS];
};

/*
 * A frame-pointer step found a return address outside every mapping of the entry, and the agent
 * was asked to read the maps again (once per entry: its next write clears the flag).
 */
#define UNWIND_PROC_UNMAPPED_RA_NOTED 1u

_Static_assert(sizeof(struct unwind_proc) == 16 + 32 * UNWIND_MAX_MAPPINGS,
	       "unwind_proc is shared with BPF");

/* --- notifications (second ring buffer) ----------------------------------------------------- */

enum unwind_event_kind {
	UNWIND_EVENT_EXEC = 1, /* a known process called exec: its entry was deleted */
	UNWIND_EVENT_MMAP = 2, /* a known process mapped executable memory at addr */
	UNWIND_EVENT_EXIT = 3, /* a known process exited: its entry was deleted */
	UNWIND_EVENT_NAME = 4, /* a process named a mapping (prctl PR_SET_VMA): process context */
	UNWIND_EVENT_NEW = 5,  /* a targeted process the agent does not know exec'd: addr is its
				* group leader's start time (CLOCK_BOOTTIME ns), build its tables */
};

struct unwind_event {
	__u32 pid;  /* thread group id */
	__u32 kind; /* enum unwind_event_kind */
	__u64 addr; /* MMAP: the new mapping's address; NEW: the start time; else 0 */
};

_Static_assert(sizeof(struct unwind_event) == 16, "unwind_event is shared with BPF");

/*
 * Index of the mapping containing pc among maps[0..n), or -1. Bounded binary search whose
 * indices are masked with UNWIND_MAX_MAPPINGS - 1 (a power of two) and whose update is
 * branch-free (as in unwind__find_row_range), so the verifier walks one path per step. The
 * comparison is the borrow of pc - start, exact over all 64 bits (not its sign: [vsyscall] sits
 * at 0xffffffffff600000).
 */
static __always_inline int unwind__find_mapping(const struct unwind_mapping *maps, __u32 n,
						__u64 pc)
{
	__u32 lo = 0, hi = n, mid, i;
	__u64 lt;

	if (hi > UNWIND_MAX_MAPPINGS)
		hi = UNWIND_MAX_MAPPINGS;
	/* Invariant: maps[0..lo) start <= pc, maps[hi..n) start > pc. */
	for (i = 0; i < UNWIND_MAPPING_FIND_MAX_STEPS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + (hi - lo) / 2) & (UNWIND_MAX_MAPPINGS - 1);
		/* 1 when pc < start: the borrow out of bit 63 of pc - start. */
		lt = ((~pc & maps[mid].start) |
		      (~(pc ^ maps[mid].start) & (pc - maps[mid].start))) >>
		     63;
		lo += (mid + 1 - lo) & (__u32)(lt - 1);
		hi -= (hi - mid) & (__u32)(0 - lt);
	}
	if (lo == 0)
		return -1;
	lo = (lo - 1) & (UNWIND_MAX_MAPPINGS - 1);
	return pc < maps[lo].end ? (int)lo : -1;
}

/* --- one unwind step ------------------------------------------------------------------------- */

/* The registers the walker tracks, for the frame being unwound. */
struct unwind_regs {
	__u64 pc; /* the frame's pc */
	__u64 sp; /* its RSP */
	__u64 bp; /* its RBP (meaningless when bp_unknown) */
	/*
	 * 1 when pc is the exact next instruction (the sampled leaf, or a frame interrupted by a
	 * signal): rows are looked up at pc. 0 for return addresses: rows are looked up at pc - 1,
	 * inside the call instruction, since a call may be the last instruction of its function.
	 */
	__u32 exact;
	__u32 bp_unknown; /* 1 when RBP could not be recovered (CFI said undefined) */
	/*
	 * Exclusive upper bound of every frame of the thread's stack, 0 unknown. BPF: the mm's
	 * start_stack (the initial stack pointer at exec): the main stack is the highest one and
	 * thread stacks are mapped below it, so no frame of any thread lies at or above it.
	 */
	__u64 stack_hi;
	__u64 di; /* RDI: known in the sampled frame only (di_known), for UNWIND_KIND_RA_RDI */
	__u64 ax; /* RAX, likewise: a syscall's result (0 in a new child) */
	__u32 di_known;	 /* 1 while regs describe the sampled frame, with its RDI and RAX */
	__u32 outermost; /* 1: the frame is a proven outermost one (Go's goexit): the walk ends */
};

/* Where the interrupted registers are in the struct ucontext a signal trampoline's RSP points at.
 */
struct unwind_sigregs {
	__u32 bp, sp, ip; /* byte offsets from the ucontext */
};

/*
 * x86-64 psABI / kernel ABI values: uc_mcontext at 40 in struct ucontext (uc_flags, uc_link,
 * 24-byte stack_t), then struct sigcontext_64 with rbp, rsp, rip at 80, 120, 128. glibc's
 * ucontext_i.sym has the same numbers (oRBP 120, oRSP 160, oRIP 168). BPF takes them from the
 * kernel's BTF (CO-RE); these are the unit test's, checked against <sys/ucontext.h>.
 */
#define UNWIND_UC_RBP 120
#define UNWIND_UC_RSP 160
#define UNWIND_UC_RIP 168

enum unwind_step_result {
	UNWIND_STEP_OK = 0,	 /* regs now describe the caller */
	UNWIND_STEP_END,	 /* outermost frame: END row, or a zero return address */
	UNWIND_STEP_FP_END,	 /* frame-pointer step with RBP 0: the chain ends (or was lost) */
	UNWIND_STEP_UNSUPPORTED, /* UNWIND_KIND_UNSUPPORTED row, or an unknown kind */
	UNWIND_STEP_BAD_CFA,	 /* CFA not above RSP, or RBP-based with RBP unknown */
	UNWIND_STEP_READ_FAILED, /* the return address, RBP or ucontext could not be read */
	/*
	 * Return address refused: a frame-pointer step's does not follow a call instruction (data,
	 * not a return address) or its code could not be read; or a uretprobe trampoline's original
	 * return address was not found.
	 */
	UNWIND_STEP_BAD_RA,
};

/* Length of an FF /2 (indirect call) instruction from its ModRM and SIB bytes; 0: not /2. */
static __always_inline __u32 unwind__ff2_len(__u8 modrm, __u8 sib)
{
	__u32 mod = modrm >> 6, rm = modrm & 7;

	if (((modrm >> 3) & 7) != 2)
		return 0; /* FF with another reg field: not a call */
	if (mod == 3)
		return 2; /* call *%reg */
	if (mod == 0)
		return rm == 4 ? ((sib & 7) == 5 ? 7 : 3) : rm == 5 ? 6 : 2; /* SIB, RIP+disp32 */
	if (mod == 1)
		return rm == 4 ? 4 : 3; /* disp8 */
	return rm == 4 ? 7 : 6;		/* disp32 */
}

/*
 * 1 when the 8 bytes before a return address end with a call instruction; @code is those bytes
 * read as one little-endian word (byte k, at ra - 8 + k, is bits 8k..8k+7), so that the check is
 * arithmetic on a scalar (BPF: no pointer into the record or the stack to track). The call: E8
 * rel32 (5 bytes), or FF /2 (an indirect call through a register or memory: ModRM reg field 2)
 * whose ModRM, SIB and displacement make it end exactly at ra (Intel SDM vol. 2, CALL, and table
 * 2-2 of the 32/64-bit ModRM forms). A REX prefix before FF needs no check: the instruction still
 * ends at ra. A frame-pointer walk that read data instead of a return address fails this for most
 * values (ASCII text, stack and heap addresses).
 */
#define UNWIND_CODE_BYTE(code, k) ((__u8)((code) >> (8 * (k))))

static __always_inline int unwind__after_call(__u64 code)
{
	__u8 b1 = UNWIND_CODE_BYTE(code, 1), b2 = UNWIND_CODE_BYTE(code, 2);
	__u8 b3 = UNWIND_CODE_BYTE(code, 3), b4 = UNWIND_CODE_BYTE(code, 4);
	__u8 b5 = UNWIND_CODE_BYTE(code, 5), b6 = UNWIND_CODE_BYTE(code, 6);
	__u8 b7 = UNWIND_CODE_BYTE(code, 7);

	return b3 == 0xe8 || (b6 == 0xff && unwind__ff2_len(b7, 0) == 2) ||
	       (b5 == 0xff && unwind__ff2_len(b6, b7) == 3) ||
	       (b4 == 0xff && unwind__ff2_len(b5, b6) == 4) ||
	       (b2 == 0xff && unwind__ff2_len(b3, b4) == 6) ||
	       (b1 == 0xff && unwind__ff2_len(b2, b3) == 7);
}

/*
 * CPython's perf trampoline (python -X perf, 3.12+; Python/asm_trampoline.S), copied once per
 * code object into anonymous memory without CFI or a frame pointer: sub $8,%rsp; call *%rcx;
 * add $8,%rsp; ret. The 8 code bytes from 6 before a return address into one, little endian:
 * 48 83 ec 08 ff d1 48 83. Its frame: the return address at RSP + 8, the caller's RSP at
 * RSP + 16, RBP untouched (docs/python.md).
 */
#define UNWIND_PY_TRAMPOLINE_CODE 0x8348d1ff08ec8348ull
#define UNWIND_PY_TRAMPOLINE_RA_OFF 6

/*
 * 1 when the 8 bytes at a return address (@code, byte k at ra + k) begin one of HotSpot's
 * template-interpreter return entries. An interpreted method calls compiled code by pushing
 * the return entry of its invoke bytecode itself and jumping (through the i2c adapter), so the
 * byte before that return address is the end of the previous template's dispatch jump, never a
 * call: the return entry is what proves it. Every return entry starts by restoring the
 * interpreter's expression stack from the frame's last_sp slot (frame::
 * interpreter_frame_last_sp_offset = -2: RBP - 16), as generate_return_entry_for() in
 * src/hotspot/cpu/x86/templateInterpreterGenerator_x86.cpp emits it:
 *   JDK 17:  48 8b 65 f0 / 48 c7 45 f0   mov -0x10(%rbp),%rsp; movq $0,-0x10(%rbp)
 *   JDK 21+: 48 8b 4d f0 / 48 8d 64 cd   mov -0x10(%rbp),%rcx; lea 0(%rbp,%rcx,8),%rsp
 *            (last_sp kept relative to RBP, in words)
 * Seen at the return addresses of compiled methods called from interpreted ones in OpenJDK 17
 * and Temurin 25 (test_jit.py's Java chain); both sequences move RSP from an RBP-relative slot,
 * which nothing but an interpreter frame's epilogue of a call does.
 */
#define UNWIND_HOTSPOT_RET_JDK17 0xf045c748f0658b48ull
#define UNWIND_HOTSPOT_RET_JDK21 0xcd648d48f04d8b48ull

static __always_inline int unwind__hotspot_return_entry(__u64 code)
{
	return code == UNWIND_HOTSPOT_RET_JDK17 || code == UNWIND_HOTSPOT_RET_JDK21;
}

/*
 * 1 when a frame-pointer step's return address is the one the Go runtime plants at the top of
 * every goroutine's stack: runtime.goexit + 1 (src/runtime/proc.go, newproc1: sched.pc =
 * FuncPCABI0(goexit) + PCQuantum, pushed as the goroutine function's return address), in
 * runtime·goexit of src/runtime/asm_amd64.s: `BYTE $0x90; CALL runtime·goexit1; BYTE $0x90`.
 * @before: the 8 bytes before it (the NOP last), @at: the 8 at it (E8 rel32, then the NOP);
 * @saved_bp: the RBP the goroutine's function saved, 0 (newproc1 clears sched, gogo loads
 * RBP from it). The frame is the goroutine's outermost one (goexit is a TOPFRAME function):
 * nothing lies above it.
 */
static __always_inline int unwind__go_goexit(__u64 before, __u64 at, __u64 saved_bp)
{
	return !saved_bp && UNWIND_CODE_BYTE(before, 7) == 0x90 &&
	       UNWIND_CODE_BYTE(at, 0) == 0xe8 && UNWIND_CODE_BYTE(at, 5) == 0x90;
}

#ifdef UNWIND_READ_USER
#ifndef UNWIND_FIX_RA
#define UNWIND_FIX_RA(rctx, ra, slot) (ra)
#endif
/*
 * Unwinds one frame: regs describe a frame whose row (the one covering pc, or pc - 1 for a return
 * address) is row; row NULL means "no CFI" (UNWIND_KIND_FP). On UNWIND_STEP_OK regs describe the
 * caller. Every address read comes from the registers and the stack through UNWIND_READ_USER.
 */
static __always_inline int unwind__step(struct unwind_regs *r, const struct unwind_row *row,
					const struct unwind_sigregs *sig, void *rctx)
{
	__u64 cfa, ra = 0, pair[2], sbp, code, at;
	__u32 kind = row ? row->kind : UNWIND_KIND_FP;
	__u32 off = row ? row->cfa_off : 0;
	__s32 rbp = row ? row->rbp : 0;

	if (r->outermost)
		return UNWIND_STEP_END;
	switch (kind) {
	case UNWIND_KIND_END:
		return UNWIND_STEP_END;
	case UNWIND_KIND_SIGNAL:
		/* RSP is the ucontext: the handler's return popped pretcode off the rt_sigframe. */
		if (UNWIND_READ_USER(rctx, &pair[0], 8, r->sp + sig->ip) ||
		    UNWIND_READ_USER(rctx, &pair[1], 8, r->sp + sig->sp) ||
		    UNWIND_READ_USER(rctx, &sbp, 8, r->sp + sig->bp))
			return UNWIND_STEP_READ_FAILED;
		if (!pair[0])
			return UNWIND_STEP_END;
		/* No ordering check: the handler may run on an alternate signal stack. */
		r->pc = pair[0];
		r->sp = pair[1];
		r->bp = sbp;
		r->bp_unknown = 0;
		r->di_known = 0; /* (the ucontext has it; no rule needs it there) */
		r->exact = 1;	 /* the interrupted instruction, not a return address */
		return UNWIND_STEP_OK;
	case UNWIND_KIND_FP:
		/* A return address into a CPython perf trampoline: its frame is known exactly. */
		if (!r->exact &&
		    !UNWIND_READ_CODE(rctx, &code, r->pc - UNWIND_PY_TRAMPOLINE_RA_OFF) &&
		    code == UNWIND_PY_TRAMPOLINE_CODE) {
			if (UNWIND_READ_USER(rctx, &ra, 8, r->sp + 8))
				return UNWIND_STEP_READ_FAILED;
			ra = UNWIND_FIX_RA(rctx, ra, r->sp + 8);
			if (!ra || UNWIND_READ_CODE(rctx, &code, ra - 8) ||
			    !unwind__after_call(code))
				return UNWIND_STEP_BAD_RA;
			r->sp += 16;
			r->pc = ra;
			r->di_known = 0;
			return UNWIND_STEP_OK;
		}
		/*
		 * The sampled instruction of a function without CFI may be one where its frame does
		 * not exist (RBP still its caller's: a frame-pointer step would skip the caller).
		 * Its code says where the return address is: at a push %rbp (55) or a ret (c3) at
		 * RSP; at the mov %rsp,%rbp (48 89 e5) that follows the push, at RSP + 8, with the
		 * caller's RBP at RSP. The address must follow a call, as below.
		 */
		if (r->exact && !UNWIND_READ_CODE(rctx, &code, r->pc)) {
			at = 0;
			if (UNWIND_CODE_BYTE(code, 0) == 0x55 || UNWIND_CODE_BYTE(code, 0) == 0xc3)
				at = r->sp;
			else if ((code & 0xffffff) == 0xe58948) {
				if (UNWIND_READ_USER(rctx, &sbp, 8, r->sp))
					return UNWIND_STEP_READ_FAILED;
				if (sbp != r->bp || r->bp_unknown)
					return UNWIND_STEP_BAD_CFA;
				at = r->sp + 8;
			}
			if (at) {
				if (UNWIND_READ_USER(rctx, &ra, 8, at))
					return UNWIND_STEP_READ_FAILED;
				ra = UNWIND_FIX_RA(rctx, ra, at);
				if (!ra || UNWIND_READ_CODE(rctx, &code, ra - 8) ||
				    !unwind__after_call(code))
					return UNWIND_STEP_BAD_RA;
				r->sp = at + 8;
				r->pc = ra;
				r->exact = 0;
				r->di_known = 0;
				return UNWIND_STEP_OK;
			}
		}
		/*
		 * Frame pointers: [RBP] is the caller's RBP, [RBP + 8] the return address. Nothing
		 * says RBP is a frame pointer in code without CFI, so the step is taken only when
		 * it looks like one: an aligned frame above RSP, inside the stack, holding an
		 * address that follows a call. A zero there ends nothing that was proven.
		 */
		if (r->bp_unknown || !r->bp)
			return UNWIND_STEP_FP_END;
		if (r->bp < r->sp || (r->bp & 7) || r->bp + 16 < r->bp ||
		    (r->stack_hi && r->bp + 16 > r->stack_hi))
			return UNWIND_STEP_BAD_CFA;
		if (UNWIND_READ_USER(rctx, pair, 16, r->bp))
			return UNWIND_STEP_READ_FAILED;
		if (!pair[1])
			return UNWIND_STEP_FP_END;
		pair[1] = UNWIND_FIX_RA(rctx, pair[1], r->bp + 8);
		if (!pair[1] || UNWIND_READ_CODE(rctx, &code, pair[1] - 8))
			return UNWIND_STEP_BAD_RA;
		/*
		 * After a call; or a return address a runtime pushed itself: a HotSpot interpreter
		 * return entry, Go's goexit + 1 (the goroutine's outermost frame).
		 */
		if (!unwind__after_call(code)) {
			if (UNWIND_READ_CODE(rctx, &at, pair[1]))
				return UNWIND_STEP_BAD_RA;
			if (unwind__go_goexit(code, at, pair[0]))
				r->outermost = 1;
			else if (!unwind__hotspot_return_entry(at))
				return UNWIND_STEP_BAD_RA;
		}
		r->sp = r->bp + 16;
		r->bp = pair[0];
		r->pc = pair[1];
		r->exact = 0;
		r->di_known = 0;
		return UNWIND_STEP_OK;
	case UNWIND_KIND_CFA_RSP:
		cfa = r->sp + off;
		break;
	case UNWIND_KIND_RA_RDI:
		/* The return address is in RDI: only the sampled frame's is known. */
		if (!r->di_known)
			return UNWIND_STEP_UNSUPPORTED;
		cfa = r->sp + off;
		if (cfa < r->sp)
			return UNWIND_STEP_BAD_CFA;
		if (rbp && rbp != UNWIND_RBP_UNKNOWN &&
		    UNWIND_READ_USER(rctx, &r->bp, 8, cfa + (__s64)rbp * 8))
			return UNWIND_STEP_READ_FAILED;
		r->bp_unknown = rbp == UNWIND_RBP_UNKNOWN;
		if (!r->di)
			return UNWIND_STEP_BAD_RA; /* not an outermost frame's rule */
		r->pc = r->di;
		r->sp = cfa;
		r->exact = 0;
		r->di_known = 0;
		return UNWIND_STEP_OK;
	case UNWIND_KIND_CFA_RBP:
		if (r->bp_unknown)
			return UNWIND_STEP_BAD_CFA;
		cfa = r->bp + off;
		break;
	case UNWIND_KIND_PLT:
		/* The PLT expression: RSP + base, plus 8 once RIP is past the push in its entry. */
		cfa = r->sp + (off & 0xff) + ((r->pc & 15) >= (off >> 8) ? 8 : 0);
		break;
	default:
		return UNWIND_STEP_UNSUPPORTED;
	}
	/* The return address at CFA - 8 lies on the stack at or above RSP. */
	if (cfa < r->sp + 8 || cfa < r->sp)
		return UNWIND_STEP_BAD_CFA;
	if (rbp == -2) {
		/* The usual push %rbp right after the call: one read for both. */
		if (UNWIND_READ_USER(rctx, pair, 16, cfa - 16))
			return UNWIND_STEP_READ_FAILED;
		r->bp = pair[0];
		r->bp_unknown = 0;
		ra = pair[1];
	} else {
		if (UNWIND_READ_USER(rctx, &ra, 8, cfa - 8))
			return UNWIND_STEP_READ_FAILED;
		if (rbp == UNWIND_RBP_UNKNOWN) {
			r->bp_unknown = 1;
		} else if (rbp) {
			if (UNWIND_READ_USER(rctx, &r->bp, 8, cfa + (__s64)rbp * 8))
				return UNWIND_STEP_READ_FAILED;
			r->bp_unknown = 0;
		}
	}
	if (!ra)
		return UNWIND_STEP_END;
	ra = UNWIND_FIX_RA(rctx, ra, cfa - 8);
	if (!ra)
		return UNWIND_STEP_BAD_RA;
	r->pc = ra;
	r->sp = cfa;
	r->exact = 0;
	r->di_known = 0;
	return UNWIND_STEP_OK;
}

#endif /* UNWIND_READ_USER */

#endif /* SPANPROF_UNWIND_WALK_H */
