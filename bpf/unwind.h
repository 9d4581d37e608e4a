/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CFI unwind rows shared by the host (exporter/unwind/cfi.c builds them from .eh_frame or
 * .debug_frame) and the BPF stack walker (which looks them up per frame). Fixed-width types only,
 * no pointers, no bool; the row size is pinned with _Static_assert on both sides.
 *
 * One table per ELF file: rows sorted by pc (relative to the table base, an ELF virtual address,
 * 0 for every ordinary executable and library), each row valid from its pc up to the next row's
 * pc. Rows with identical rules are merged, and the end of every FDE range that is not followed
 * directly by another FDE carries a UNWIND_KIND_FP row: "no CFI here, fall back to frame
 * pointers". A pc below the first row has no CFI either.
 *
 * The rules follow the x86-64 psABI (section 3.6, DWARF register numbers 6 = RBP, 7 = RSP,
 * 16 = return address) and DWARF 5 section 6.4: the return address is always at CFA - 8 in a
 * normal frame (a row whose CFI says otherwise is UNWIND_KIND_UNSUPPORTED) and the caller's RSP
 * is the CFA.
 */
#ifndef SPANPROF_UNWIND_H
#define SPANPROF_UNWIND_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* What a row says about the CFA (and so about the caller's RSP and return address). */
enum unwind_kind {
	UNWIND_KIND_FP = 0,	 /* no CFI covers this pc: walk with frame pointers */
	UNWIND_KIND_CFA_RSP = 1, /* CFA = RSP + cfa_off */
	UNWIND_KIND_CFA_RBP = 2, /* CFA = RBP + cfa_off */
	UNWIND_KIND_PLT = 3, /* CFA = RSP + (cfa_off & 0xff) + 8 * ((RIP & 15) >= cfa_off >> 8) */
	UNWIND_KIND_END = 4, /* return address undefined: outermost frame, stop here */
	UNWIND_KIND_SIGNAL = 5, /* signal trampoline (CIE 'S'): registers are in the ucontext */
	UNWIND_KIND_UNSUPPORTED = 6, /* CFI exists but its rule is not representable: stop */
	/*
	 * CFA = RSP + cfa_off, the return address in RDI (glibc's __vfork pops it there across the
	 * syscall, so that the child cannot clobber it on the shared stack): followed only in the
	 * sampled frame, whose RDI the registers give.
	 */
	UNWIND_KIND_RA_RDI = 7,
	UNWIND_KIND_MAX,
};

/* rbp value meaning "the caller's RBP cannot be recovered" (undefined or unsupported rule). */
#define UNWIND_RBP_UNKNOWN (-128)

struct unwind_row {
	__u32 pc;      /* first address of the range, minus the table base */
	__u16 cfa_off; /* CFA_RSP / CFA_RBP: byte offset; PLT: base | threshold << 8; else 0 */
	__u8 kind;     /* enum unwind_kind */
	/*
	 * Caller's RBP: 0 = unchanged (same value, or never saved), UNWIND_RBP_UNKNOWN, otherwise
	 * saved at CFA + 8 * rbp. Only meaningful for CFA_RSP, CFA_RBP and PLT (0 otherwise).
	 */
	__s8 rbp;
};

_Static_assert(sizeof(struct unwind_row) == 8, "unwind_row is shared with BPF: 8 bytes, packed");

/*
 * Largest table, in rows: 2^24 rows = 128 MiB, the largest stack-delta set reported for any binary
 * by the OTel profiler (design notes section 6). The host refuses larger tables.
 */
#define UNWIND_MAX_ROWS_LOG2 24
#define UNWIND_MAX_ROWS (1u << UNWIND_MAX_ROWS_LOG2)

/*
 * Binary search steps: each step halves the candidate range [lo, hi), so n rows need
 * floor(log2(n)) + 1 steps, i.e. 25 for the largest table of 2^24 rows.
 */
#define UNWIND_FIND_MAX_STEPS (UNWIND_MAX_ROWS_LOG2 + 1)

/*
 * Index of the row covering pc (relative to the table base) among rows[lo..hi): the last row with
 * row.pc <= pc, or lo - 1 when pc lies below rows[lo], the range is empty, or cap is not a power
 * of two <= UNWIND_MAX_ROWS. The caller still checks the row's kind (UNWIND_KIND_FP past the last
 * FDE). (Added for the BPF walker, whose tables share 2^16-row chunks: one table is a sub-range.)
 *
 * cap is the capacity in rows of the array rows points into, a power of two: hi is clamped to it
 * and every index is masked with cap - 1. In BPF, cap is a constant (the rows of one map value),
 * so after inlining the mask is what lets the verifier bound the access; the host passes
 * UNWIND_MAX_ROWS. Compiles as BPF (bounded loop) and as ordinary C; unit-tested as the latter.
 */
static __always_inline int unwind__find_row_range(const struct unwind_row *rows, __u32 lo, __u32 hi,
						  __u64 pc, __u32 cap)
{
	__u32 first = lo, mid, i;
	__u64 gt;

	if (cap == 0 || cap > UNWIND_MAX_ROWS || (cap & (cap - 1)))
		return (int)first - 1;
	if (hi > cap)
		hi = cap;
	/* Row pcs are 32-bit: a larger pc compares like the largest one. */
	if (pc > 0xffffffffULL)
		pc = 0xffffffffULL;
	/*
	 * Invariant: rows[first..lo) have pc <= target, rows[hi..) have pc > target. The update is
	 * branch-free so the verifier walks one path per step instead of 2^steps.
	 */
	for (i = 0; i < UNWIND_FIND_MAX_STEPS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + (hi - lo) / 2) & (cap - 1);
		gt = (pc - (__u64)rows[mid].pc) >> 63; /* 1 when pc < rows[mid].pc */
		lo += (mid + 1 - lo) & (__u32)(gt - 1);
		hi -= (hi - mid) & (__u32)(0 - gt);
	}
	return (int)lo - 1;
}

/*
 * Index of the row covering pc among rows[0..n): unwind__find_row_range(rows, 0, n, pc, cap), so
 * -1 when pc lies below the first row, n is 0, or cap is not a power of two <= UNWIND_MAX_ROWS.
 */
static __always_inline int unwind__find_row(const struct unwind_row *rows, __u32 n, __u64 pc,
					    __u32 cap)
{
	return unwind__find_row_range(rows, 0, n, pc, cap);
}

#endif /* SPANPROF_UNWIND_H */
