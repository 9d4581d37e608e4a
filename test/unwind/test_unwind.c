// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the CFI walker's shared logic (bpf/unwind_walk.h, compiled here as ordinary C):
 * the mapping search, the row search on a sub-range of a chunk, every kind of unwind step on
 * hand-made stacks, and whole walks of this process's own stack (built -O2
 * -fomit-frame-pointer), captured with getcontext() and copied, checked frame by frame against
 * glibc's backtrace() (libgcc's DWARF unwinder): a 20-deep recursion and a signal handler.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/cfi.h"
#include "process/procmaps.h"

/* The walker reads memory through this: a copy of a stack, [base, base + len). */
struct fake_stack {
	uint64_t base;
	const uint8_t *data;
	size_t len;
	int reads;
	/* Code the frame-pointer step checks return addresses in; NULL: this process's own. */
	uint64_t code_base;
	const uint8_t *code;
	size_t code_len;
	/* Pending uretprobes: trampoline address (0 none), and {slot, original} innermost first. */
	uint64_t tramp;
	uint64_t ri[4][2];
	int nri, next_ri;
};

static int fake_read(struct fake_stack *st, void *dst, uint32_t size, uint64_t addr)
{
	st->reads++;
	if (addr < st->base || addr + size > st->base + st->len || addr + size < addr)
		return -EFAULT;
	memcpy(dst, st->data + (addr - st->base), size);
	return 0;
}

/* 8 bytes of code at addr: from st->code, else from this process (EFAULT where unmapped). */
static int fake_code(struct fake_stack *st, void *dst, uint64_t addr)
{
	struct iovec local = {dst, 8}, remote = {(void *)(uintptr_t)addr, 8};

	if (st->code) {
		if (addr < st->code_base || addr + 8 > st->code_base + st->code_len)
			return -EFAULT;
		memcpy(dst, st->code + (addr - st->code_base), 8);
		return 0;
	}
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 8 ? 0 : -EFAULT;
}

/* The BPF unwind_fix_ra() over st->ri: the original return address for a trampoline at slot. */
static uint64_t fake_fix_ra(struct fake_stack *st, uint64_t ra, uint64_t slot)
{
	uint64_t orig = 0;

	if (!st->tramp || ra != st->tramp)
		return ra;
	for (; st->next_ri < st->nri && st->ri[st->next_ri][0] <= slot; st->next_ri++)
		if (st->ri[st->next_ri][0] == slot && !orig)
			orig = st->ri[st->next_ri][1];
	return orig;
}

#define UNWIND_FIX_RA(rctx, ra, slot) fake_fix_ra((struct fake_stack *)(rctx), (ra), (slot))
#define UNWIND_READ_USER(rctx, dst, size, addr)                                                    \
	fake_read((struct fake_stack *)(rctx), (dst), (size), (addr))
#define UNWIND_READ_CODE(rctx, dst, addr) fake_code((struct fake_stack *)(rctx), (dst), (addr))
#include "unwind_walk.h"

static const struct unwind_sigregs psabi_sig = {UNWIND_UC_RBP, UNWIND_UC_RSP, UNWIND_UC_RIP};

/* --- pure lookups ----------------------------------------------------------------------------- */

static void test_find_mapping(void **state)
{
	struct unwind_mapping m[4] = {
	    {.start = 0x1000, .end = 0x2000},
	    {.start = 0x3000, .end = 0x5000},
	    {.start = 0x7f0000000000ull, .end = 0x7f0000010000ull},
	    {.start = 0xffffffffff600000ull, .end = 0xffffffffff601000ull}, /* [vsyscall] */
	};

	(void)state;
	assert_int_equal(unwind__find_mapping(m, 0, 0x1000), -1);
	assert_int_equal(unwind__find_mapping(m, 4, 0xfff), -1);
	assert_int_equal(unwind__find_mapping(m, 4, 0x1000), 0);
	assert_int_equal(unwind__find_mapping(m, 4, 0x1fff), 0);
	assert_int_equal(unwind__find_mapping(m, 4, 0x2000), -1); /* gap */
	assert_int_equal(unwind__find_mapping(m, 4, 0x4abc), 1);
	assert_int_equal(unwind__find_mapping(m, 4, 0x7f0000000010ull), 2);
	/* Above 2^63 apart: the comparison must not be a sign test. */
	assert_int_equal(unwind__find_mapping(m, 4, 0x7f0000010000ull), -1);
	assert_int_equal(unwind__find_mapping(m, 3, 0xffffffffff600010ull), -1);
	assert_int_equal(unwind__find_mapping(m, 4, 0xffffffffff600010ull), 3);
	assert_int_equal(unwind__find_mapping(m, 4, UINT64_MAX), -1);
	/* Only maps[0..n) are searched. */
	assert_int_equal(unwind__find_mapping(m, 2, 0x7f0000000010ull), -1);
}

static void test_find_mapping_many(void **state)
{
	static struct unwind_mapping m[UNWIND_MAX_MAPPINGS];

	(void)state;
	for (uint32_t i = 0; i < UNWIND_MAX_MAPPINGS; i++) {
		m[i].start = 0x10000 + i * 0x2000;
		m[i].end = m[i].start + 0x1000;
	}
	for (uint32_t i = 0; i < UNWIND_MAX_MAPPINGS; i++) {
		assert_int_equal(unwind__find_mapping(m, UNWIND_MAX_MAPPINGS, m[i].start), i);
		assert_int_equal(unwind__find_mapping(m, UNWIND_MAX_MAPPINGS, m[i].end - 1), i);
		assert_int_equal(unwind__find_mapping(m, UNWIND_MAX_MAPPINGS, m[i].end), -1);
	}
}

/* A table stored in the middle of a chunk, as the agent places small tables. */
static void test_find_row_range(void **state)
{
	static struct unwind_row chunk[UNWIND_CHUNK_ROWS];
	uint32_t lo = 40000, n = 100;

	(void)state;
	for (uint32_t i = 0; i < UNWIND_CHUNK_ROWS; i++)
		chunk[i].pc = 7; /* other tables' rows around it */
	for (uint32_t i = 0; i < n; i++)
		chunk[lo + i].pc = 0x1000 + 16 * i;
	assert_int_equal(unwind__find_row_range(chunk, lo, lo + n, 0xfff, UNWIND_CHUNK_ROWS),
			 lo - 1);
	assert_int_equal(unwind__find_row_range(chunk, lo, lo + n, 0x1000, UNWIND_CHUNK_ROWS), lo);
	assert_int_equal(
	    unwind__find_row_range(chunk, lo, lo + n, 0x1000 + 16 * 50 + 3, UNWIND_CHUNK_ROWS),
	    lo + 50);
	assert_int_equal(unwind__find_row_range(chunk, lo, lo + n, 1ull << 40, UNWIND_CHUNK_ROWS),
			 lo + n - 1);
	assert_int_equal(unwind__find_row_range(chunk, lo, lo, 0x1000, UNWIND_CHUNK_ROWS), lo - 1);
	/* The last slots of a chunk. */
	for (uint32_t i = 0; i < 10; i++)
		chunk[UNWIND_CHUNK_ROWS - 10 + i].pc = 0x500 + i;
	assert_int_equal(unwind__find_row_range(chunk, UNWIND_CHUNK_ROWS - 10, UNWIND_CHUNK_ROWS,
						0x509, UNWIND_CHUNK_ROWS),
			 UNWIND_CHUNK_ROWS - 1);
}

/* --- single steps on hand-made stacks ----------------------------------------------------------
 */

#define SB 0x7ffd0000ull /* where the fake stack lives */

static uint64_t stk[64];

/* Fake code at CB: a call rel32 ends at CB + 0x10, a call *%rax at CB + 0x20, data elsewhere. */
#define CB 0x406000ull
static uint8_t code[0x40];

static struct fake_stack fake(void)
{
	struct fake_stack st = {.base = SB, .data = (const uint8_t *)stk, .len = sizeof(stk)};

	memset(code, 0x90, sizeof(code));
	code[0x0b] = 0xe8; /* e8 rel32: 5 bytes before CB + 0x10 */
	code[0x1e] = 0xff; /* ff d0: call *%rax, 2 bytes before CB + 0x20 */
	code[0x1f] = 0xd0;
	st.code_base = CB;
	st.code = code;
	st.code_len = sizeof(code);
	return st;
}

static void test_step_cfa_rsp(void **state)
{
	struct unwind_row row = {.kind = UNWIND_KIND_CFA_RSP, .cfa_off = 24, .rbp = -2};
	struct unwind_regs r = {.pc = 0x401000, .sp = SB, .bp = 0x1234, .exact = 1};
	struct fake_stack st = fake();

	(void)state;
	memset(stk, 0, sizeof(stk));
	stk[1] = 0xbbbb;   /* saved rbp at CFA - 16 */
	stk[2] = 0x402000; /* return address at CFA - 8 */
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x402000);
	assert_int_equal(r.sp, SB + 24);
	assert_int_equal(r.bp, 0xbbbb);
	assert_int_equal(r.exact, 0);
	assert_int_equal(st.reads, 1); /* RA and RBP in one read */

	/* RBP unchanged (0), then RBP saved elsewhere (CFA - 24). */
	row.rbp = 0;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = 0x1234, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.bp, 0x1234);
	row.rbp = -3;
	stk[0] = 0xcccc;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = 0x1234, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.bp, 0xcccc);
	/* RBP undefined: a later RBP-based CFA cannot be computed. */
	row.rbp = UNWIND_RBP_UNKNOWN;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = 0x1234, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.bp_unknown, 1);
	row.kind = UNWIND_KIND_CFA_RBP;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_CFA);
}

static void test_step_cfa_rbp_and_plt(void **state)
{
	struct unwind_row row = {.kind = UNWIND_KIND_CFA_RBP, .cfa_off = 16, .rbp = -2};
	struct unwind_regs r = {.pc = 0x401000, .sp = SB, .bp = SB + 64, .exact = 0};
	struct fake_stack st = fake();

	(void)state;
	memset(stk, 0, sizeof(stk));
	stk[8] = SB + 128; /* [rbp] = caller's rbp */
	stk[9] = 0x403000; /* [rbp + 8] = RA */
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x403000);
	assert_int_equal(r.sp, SB + 80);
	assert_int_equal(r.bp, SB + 128);

	/* PLT: CFA = RSP + 8, + 8 once RIP & 15 >= 11 (after the push of the lazy entry). */
	row = (struct unwind_row){.kind = UNWIND_KIND_PLT, .cfa_off = 8 | 11 << 8};
	stk[0] = 0x404000;
	stk[1] = 0x405000;
	r = (struct unwind_regs){.pc = 0x401026, .sp = SB, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x404000);
	r = (struct unwind_regs){.pc = 0x40102b, .sp = SB, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x405000);
	assert_int_equal(r.sp, SB + 16);
}

static void test_step_fp_end_and_errors(void **state)
{
	struct unwind_regs r = {.pc = 0x401000, .sp = SB, .bp = SB + 32};
	struct unwind_row row = {.kind = UNWIND_KIND_FP};
	struct fake_stack st = fake();

	(void)state;
	memset(stk, 0, sizeof(stk));
	stk[4] = 0;	    /* caller's rbp: end of the chain */
	stk[5] = CB + 0x10; /* RA, after a call */
	/* No row and an FP row mean the same: frame pointers. */
	assert_int_equal(unwind__step(&r, NULL, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x10);
	assert_int_equal(r.sp, SB + 48);
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_FP_END);
	/* RBP below RSP is not a frame of this stack. */
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB + 64, .bp = SB + 32};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_CFA);

	row = (struct unwind_row){.kind = UNWIND_KIND_END};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_END);
	row.kind = UNWIND_KIND_UNSUPPORTED;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_UNSUPPORTED);
	row.kind = 77;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_UNSUPPORTED);
	/* CFA at or below RSP + 8 (RA would lie below the stack pointer). */
	row = (struct unwind_row){.kind = UNWIND_KIND_CFA_RSP, .cfa_off = 0};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_CFA);
	/* Off the end of the stack copy. */
	row.cfa_off = 8;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB + sizeof(stk), .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_READ_FAILED);
	/* A zero return address ends the walk cleanly. */
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB + 16, .exact = 1};
	stk[2] = 0;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_END);
}

/* A frame-pointer step is taken only when RBP looks like a frame and RA like a return address. */
static void test_step_fp_checks(void **state)
{
	struct unwind_row row = {.kind = UNWIND_KIND_FP};
	struct fake_stack st = fake();
	struct unwind_regs r;

	(void)state;
	memset(stk, 0, sizeof(stk));
	stk[4] = SB + 96;   /* caller's rbp */
	stk[5] = CB + 0x20; /* after call *%rax */
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32, .stack_hi = SB + 512};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x20);
	assert_int_equal(r.bp, SB + 96);
	/* An RA that follows no call: data (ASCII text, here), not a return address. */
	stk[5] = 0x6f6c6c6568202c21ull;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	assert_int_equal(r.pc, 0x401000); /* regs untouched */
	/* Readable code, but no call before the address. */
	stk[5] = CB + 0x30;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	/* A zero return address proves nothing in code without CFI: not "outermost". */
	stk[5] = 0;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_FP_END);
	/* RBP misaligned, or its frame at or above the top of the stack. */
	stk[5] = CB + 0x10;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 33};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_CFA);
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32, .stack_hi = SB + 40};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_CFA);
	r.stack_hi = SB + 48; /* the frame's 16 bytes end exactly at the top: fine */
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	/* An RBP that wraps around the address space. */
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = ~7ull};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_CFA);
}

/*
 * The sampled instruction of code without CFI at its push %rbp, its mov %rsp,%rbp or its ret:
 * RBP is still the caller's, so the return address is read where the code says (RSP, RSP + 8),
 * never through RBP (which would skip the caller). Elsewhere in the function, frame pointers.
 */
static void test_step_fp_leaf_outside_its_frame(void **state)
{
	struct unwind_row row = {.kind = UNWIND_KIND_FP};
	struct fake_stack st = fake();
	struct unwind_regs r;

	(void)state;
	memset(stk, 0, sizeof(stk));
	/* The leaf's code at CB + 0x30: push %rbp; mov %rsp,%rbp; nop; pop %rbp; ret. */
	memcpy(code + 0x30, "\x55\x48\x89\xe5\x90\x5d\xc3", 7);
	stk[0] = CB + 0x10; /* at the push (and the ret): the return address, into the caller */
	stk[4] = SB + 96;   /* the caller's frame: its caller's rbp, return address */
	stk[5] = CB + 0x20;
	r = (struct unwind_regs){.pc = CB + 0x30, .sp = SB, .bp = SB + 32, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x10); /* the caller, not its caller (CB + 0x20) */
	assert_int_equal(r.sp, SB + 8);
	assert_int_equal(r.bp, SB + 32); /* still the caller's frame */
	r = (struct unwind_regs){.pc = CB + 0x36, .sp = SB, .bp = SB + 32, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x10);
	/* At the mov, after the push: the caller's RBP at RSP, the return address above it. */
	stk[0] = SB + 32;
	stk[1] = CB + 0x10;
	r = (struct unwind_regs){.pc = CB + 0x31, .sp = SB, .bp = SB + 32, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x10);
	assert_int_equal(r.sp, SB + 16);
	/* A mov %rsp,%rbp without the push before it: nothing proves the slot. */
	stk[0] = 0x1234;
	r = (struct unwind_regs){.pc = CB + 0x31, .sp = SB, .bp = SB + 32, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_CFA);
	/* A "return address" at RSP that follows no call: refused, not taken. */
	stk[0] = CB + 0x30;
	r = (struct unwind_regs){.pc = CB + 0x30, .sp = SB, .bp = SB + 32, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	/* Inside the frame (the nop), and for a return address (not exact): frame pointers. */
	r = (struct unwind_regs){.pc = CB + 0x34, .sp = SB, .bp = SB + 32, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x20);
	r = (struct unwind_regs){.pc = CB + 0x30, .sp = SB, .bp = SB + 32};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x20);
}

/*
 * A return address into CPython's perf trampoline (python -X perf): no CFI, no frame pointer,
 * yet its frame is known: the caller's return address at RSP + 8, RBP kept as it was.
 */
static void test_step_py_trampoline(void **state)
{
	static const uint8_t tramp[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
					0x48, 0x83, 0xc4, 0x08, 0xc3};
	struct unwind_row row = {.kind = UNWIND_KIND_FP};
	struct fake_stack st = fake();
	struct unwind_regs r;

	(void)state;
	memcpy(code + 0x28, tramp, sizeof(tramp));
	memset(stk, 0, sizeof(stk));
	stk[1] = CB + 0x20; /* the trampoline's caller, after call *%rax */
	r = (struct unwind_regs){.pc = CB + 0x2e, .sp = SB, .bp = 0x1234, .stack_hi = SB + 512};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x20);
	assert_int_equal(r.sp, SB + 16);
	assert_int_equal(r.bp, 0x1234); /* untouched: RBP is not a frame pointer there */
	/* Its caller's address must follow a call like any other. */
	stk[1] = CB + 0x38;
	r = (struct unwind_regs){.pc = CB + 0x2e, .sp = SB, .bp = 0x1234};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	/* Sampled inside the trampoline (not a return address): the usual frame-pointer step. */
	r = (struct unwind_regs){.pc = CB + 0x2e, .sp = SB, .bp = 0, .exact = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_FP_END);
	/* Other code at the address: the usual frame-pointer step too. */
	r = (struct unwind_regs){.pc = CB + 0x30, .sp = SB, .bp = 0};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_FP_END);
}

/*
 * HotSpot: a compiled method called from an interpreted one returns to a template-interpreter
 * return entry that the interpreter pushed itself (the bytes before it end a dispatch jump).
 * The entry's own first instructions prove it (bytes as seen in OpenJDK 17 and Temurin 25).
 */
static void test_step_fp_hotspot_return_entry(void **state)
{
	static const uint8_t jmp_dispatch[] = {0x41, 0xff, 0x24, 0xda}; /* jmp *(%r10,%rbx,8) */
	static const uint8_t jdk17[] = {0x48, 0x8b, 0x65, 0xf0, 0x48, 0xc7, 0x45, 0xf0};
	static const uint8_t jdk21[] = {0x48, 0x8b, 0x4d, 0xf0, 0x48, 0x8d, 0x64, 0xcd};
	struct unwind_row row = {.kind = UNWIND_KIND_FP};
	struct fake_stack st = fake();
	struct unwind_regs r;

	(void)state;
	memcpy(code + 0x24, jmp_dispatch, sizeof(jmp_dispatch));
	memcpy(code + 0x28, jdk17, sizeof(jdk17));
	memcpy(code + 0x30, jdk21, sizeof(jdk21));
	memset(stk, 0, sizeof(stk));
	stk[4] = SB + 96;
	for (uint64_t ra = CB + 0x28; ra <= CB + 0x30; ra += 8) {
		stk[5] = ra;
		r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32};
		assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
		assert_int_equal(r.pc, ra);
		assert_int_equal(r.bp, SB + 96);
	}
	/* One byte off, or the sequence cut (the next bytes differ): refused. */
	stk[5] = CB + 0x29;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	code[0x2f] = 0x90;
	stk[5] = CB + 0x28;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	assert_int_equal(r.pc, 0x401000);
	assert_true(unwind__hotspot_return_entry(0xf045c748f0658b48ull));
	assert_false(unwind__hotspot_return_entry(0));
}

/*
 * Go: a goroutine's function returns to runtime.goexit + 1 (NOP; CALL goexit1; NOP), with the
 * RBP it saved 0. The step is taken, and the walk ends there (goexit is the outermost frame).
 */
static void test_step_fp_go_goexit(void **state)
{
	static const uint8_t goexit[] = {0x90, 0xe8, 0x3a, 0x23, 0x00, 0x00, 0x90, 0xcc};
	struct unwind_row row = {.kind = UNWIND_KIND_FP};
	struct fake_stack st = fake();
	struct unwind_regs r;

	(void)state;
	memcpy(code + 0x27, goexit, sizeof(goexit)); /* goexit at CB + 0x27: RA CB + 0x28 */
	memset(stk, 0, sizeof(stk));
	stk[4] = 0; /* the goroutine's first RBP */
	stk[5] = CB + 0x28;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x28);
	assert_int_equal(r.outermost, 1);
	/* Whatever the next row says: the walk ends, complete. */
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_END);
	/* A saved RBP that is not 0: not a goroutine's first frame. */
	stk[4] = SB + 96;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	/* No NOP after the call, or no call at the address: refused. */
	stk[4] = 0;
	code[0x2d] = 0xcc;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	code[0x2d] = 0x90;
	code[0x28] = 0x90;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	assert_int_equal(r.pc, 0x401000);
	assert_int_equal(r.outermost, 0);
}

/* Every length of call instruction ending at the return address, and near misses. */
static void test_after_call(void **state)
{
	static const struct {
		uint8_t b[8];
		int call;
	} cases[] = {
	    {{0x90, 0x90, 0x90, 0xe8, 1, 2, 3, 4}, 1},		   /* call rel32 */
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0x41, 0xff, 0xd3}, 1}, /* call *%r11 */
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x10}, 1}, /* call *(%rax) */
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x50, 0x08}, 1}, /* call *0x8(%rax) */
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x14, 0xc3}, 1}, /* call *(%rbx,%rax,8) */
	    {{0x90, 0x90, 0x90, 0x90, 0xff, 0x54, 0x24, 0x08}, 1}, /* call *0x8(%rsp) */
	    {{0x90, 0x90, 0xff, 0x15, 1, 2, 3, 4}, 1},		   /* call *disp32(%rip) */
	    {{0x90, 0x90, 0xff, 0x90, 1, 2, 3, 4}, 1},		   /* call *disp32(%rax) */
	    {{0x90, 0xff, 0x14, 0x25, 1, 2, 3, 4}, 1},		   /* call *abs32 (SIB, no base) */
	    {{0x90, 0xff, 0x94, 0xc3, 1, 2, 3, 4}, 1},		   /* call *disp32(%rbx,%rax,8) */
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xe0}, 0}, /* jmp *%rax: FF /4 */
	    {{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0x15}, 0}, /* RIP form cut short */
	    {{0x90, 0x90, 0x90, 0x90, 0xe8, 1, 2, 3}, 0},	   /* e8 one byte too late */
	    {{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o'}, 0},	   /* text */
	    {{0, 0, 0, 0, 0, 0, 0, 0}, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t word;

		memcpy(&word, cases[i].b, 8); /* little endian: byte k at ra - 8 + k */
		assert_int_equal(unwind__after_call(word), cases[i].call);
	}
}

/*
 * Return addresses replaced by a uretprobe's trampoline: the step asks for the original by the
 * slot it read the address from (CFA - 8, RBP + 8), takes it, and stops when there is none.
 */
static void test_step_uretprobe(void **state)
{
	struct unwind_row cfi = {.kind = UNWIND_KIND_CFA_RSP, .cfa_off = 16};
	struct unwind_row fp = {.kind = UNWIND_KIND_FP};
	struct fake_stack st = fake();
	struct unwind_regs r;

	(void)state;
	memset(stk, 0, sizeof(stk));
	st.tramp = 0x7fffff000ull;
	/* Frame 1 (CFI): RA slot at SB + 8; frame 2 (FP): RBP = SB + 32, RA slot at SB + 40. */
	stk[1] = st.tramp;
	stk[4] = 0;
	stk[5] = st.tramp;
	st.ri[0][0] = SB - 64; /* a frame already gone (longjmp): skipped */
	st.ri[0][1] = 0x1111;
	st.ri[1][0] = SB + 8;
	st.ri[1][1] = CB + 0x10;
	st.ri[2][0] = SB + 8; /* chained (a tail call): same slot, same original */
	st.ri[2][1] = CB + 0x10;
	st.ri[3][0] = SB + 40;
	st.ri[3][1] = CB + 0x20;
	st.nri = 4;
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32, .exact = 1};
	assert_int_equal(unwind__step(&r, &cfi, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x10);
	assert_int_equal(r.sp, SB + 16);
	assert_int_equal(unwind__step(&r, &fp, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x20); /* then checked as any return address: after a call */
	assert_int_equal(st.next_ri, 4);
	/* A trampoline with no pending instance for its slot: stop, never the trampoline. */
	r = (struct unwind_regs){.pc = 0x401000, .sp = SB, .bp = SB + 32, .exact = 1};
	st.next_ri = 0;
	st.nri = 1;
	assert_int_equal(unwind__step(&r, &cfi, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	assert_int_equal(unwind__step(&r, &fp, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
	assert_int_equal(r.pc, 0x401000);
}

/* glibc's __vfork: CFA on RSP, the return address in RDI, known for the sampled frame only. */
static void test_step_ra_in_rdi(void **state)
{
	struct unwind_row row = {.kind = UNWIND_KIND_RA_RDI, .cfa_off = 8};
	struct fake_stack st = fake();
	struct unwind_regs r = {
	    .pc = 0x401008, .sp = SB, .bp = 0x1234, .exact = 1, .di = CB + 0x10, .di_known = 1};

	(void)state;
	memset(stk, 0, sizeof(stk));
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, CB + 0x10);
	assert_int_equal(r.sp, SB + 8);
	assert_int_equal(r.bp, 0x1234); /* unchanged */
	assert_int_equal(r.exact, 0);
	assert_int_equal(r.di_known, 0);
	/* Above the sampled frame RDI is unknown: stop rather than guess. */
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_UNSUPPORTED);
	/* A zero RDI proves no outermost frame. */
	r = (struct unwind_regs){.pc = 0x401008, .sp = SB, .exact = 1, .di_known = 1};
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_BAD_RA);
}

static void test_step_signal(void **state)
{
	struct unwind_row row = {.kind = UNWIND_KIND_SIGNAL};
	struct unwind_regs r = {.pc = 0x407000, .sp = SB, .bp = 1, .exact = 0};
	struct fake_stack st = fake();

	(void)state;
	memset(stk, 0, sizeof(stk));
	stk[UNWIND_UC_RIP / 8] = 0x408123;
	stk[UNWIND_UC_RSP / 8] = SB + 4096;
	stk[UNWIND_UC_RBP / 8] = 0xabc;
	assert_int_equal(unwind__step(&r, &row, &psabi_sig, &st), UNWIND_STEP_OK);
	assert_int_equal(r.pc, 0x408123);
	assert_int_equal(r.sp, SB + 4096);
	assert_int_equal(r.bp, 0xabc);
	assert_int_equal(r.exact, 1); /* the interrupted instruction: looked up at pc itself */
}

/* The fixed offsets are the C library's ucontext_t layout (x86-64 psABI, kernel ABI). */
static void test_sigcontext_offsets(void **state)
{
	(void)state;
	assert_int_equal(offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]), UNWIND_UC_RBP);
	assert_int_equal(offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), UNWIND_UC_RSP);
	assert_int_equal(offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), UNWIND_UC_RIP);
}

/* --- whole walks of this process's stack --------------------------------------------------------
 */

struct file_table {
	struct unwind_mapping m;
	struct cfi_table *t;	   /* NULL: frame pointers */
	uint64_t offset, load_adj; /* mapping file offset; p_vaddr - p_offset of its PT_LOAD */
};

struct self_maps {
	struct file_table f[64];
	uint32_t n;
};

static void load_self(struct self_maps *sm)
{
	struct procmaps maps = {0};

	memset(sm, 0, sizeof(*sm));
	assert_int_equal(procmaps__read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.n && sm->n < 64; i++) {
		const struct procmap *pm = &maps.maps[i];
		struct file_table *ft;
		GElf_Phdr ph;
		size_t np = 0;
		Elf *elf;
		int fd;

		if (!(pm->prot & PROT_EXEC) || pm->path[0] != '/')
			continue;
		ft = &sm->f[sm->n++];
		ft->m.start = pm->start;
		ft->m.end = pm->end;
		ft->offset = pm->offset;
		if (cfi__build(pm->path, NULL, &ft->t))
			ft->t = NULL;
		fd = open(pm->path, O_RDONLY);
		assert_true(fd >= 0);
		elf = elf_begin(fd, ELF_C_READ, NULL);
		assert_non_null(elf);
		elf_getphdrnum(elf, &np);
		for (size_t j = 0; j < np; j++)
			if (gelf_getphdr(elf, j, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X))
				ft->load_adj = ph.p_vaddr - ph.p_offset;
		elf_end(elf);
		close(fd);
	}
	procmaps__clear(&maps);
}

static void free_self(struct self_maps *sm)
{
	for (uint32_t i = 0; i < sm->n; i++)
		cfi_table__free(sm->f[i].t);
}

/*
 * The host twin of the BPF walk (bpf/unwind.bpf.h): per frame, the mapping, the row at pc (or
 * pc - 1 for a return address), one unwind__step(). Returns the frames written.
 */
static int walk(struct self_maps *sm, struct unwind_regs r, struct fake_stack *st, uint64_t *pcs,
		int max, int *last)
{
	struct unwind_mapping maps[64];
	int n = 0;

	for (uint32_t i = 0; i < sm->n; i++)
		maps[i] = sm->f[i].m;
	*last = UNWIND_STEP_OK;
	while (n < max) {
		uint64_t lpc = r.pc - !r.exact;
		const struct unwind_row *row = NULL;
		struct file_table *ft;
		int mi;

		pcs[n++] = r.pc;
		mi = unwind__find_mapping(maps, sm->n, lpc);
		if (mi < 0) {
			*last = -1;
			break;
		}
		ft = &sm->f[mi];
		if (ft->t)
			row =
			    cfi_table__lookup(ft->t, lpc - ft->m.start + ft->offset + ft->load_adj);
		*last = unwind__step(&r, row, &psabi_sig, st);
		if (*last != UNWIND_STEP_OK)
			break;
	}
	return n;
}

/* Top of this thread's stack (end of the [stack] mapping). */
static uint64_t stack_top(void)
{
	struct procmaps maps = {0};
	uint64_t top = 0;

	assert_int_equal(procmaps__read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.n; i++)
		if (!strcmp(maps.maps[i].path, "[stack]"))
			top = maps.maps[i].end;
	procmaps__clear(&maps);
	return top;
}

struct capture {
	ucontext_t uc;
	uint8_t *copy;
	uint64_t base;
	size_t len;
	void *bt[128];
	int nbt;
};

static struct capture cap;

/* Captures the caller's registers, a copy of the stack above them, and backtrace()'s view. */
#define CAPTURE()                                                                                  \
	do {                                                                                       \
		getcontext(&cap.uc);                                                               \
		cap.base = cap.uc.uc_mcontext.gregs[REG_RSP];                                      \
		cap.len = stack_top() - cap.base;                                                  \
		cap.copy = malloc(cap.len);                                                        \
		memcpy(cap.copy, (void *)(uintptr_t)cap.base, cap.len);                            \
		cap.nbt = backtrace(cap.bt, 128);                                                  \
	} while (0)

static volatile int sink;

__attribute__((noinline)) static void deep(int n)
{
	if (n > 0) {
		deep(n - 1);
		sink++; /* no tail call */
		return;
	}
	CAPTURE();
}

/* Compares the walk with backtrace() from the caller of the capturing function on. */
static void check_walk(int want_min_frames)
{
	struct fake_stack st = {.base = cap.base, .data = cap.copy, .len = cap.len};
	struct unwind_regs r = {
	    .pc = cap.uc.uc_mcontext.gregs[REG_RIP],
	    .sp = cap.uc.uc_mcontext.gregs[REG_RSP],
	    .bp = cap.uc.uc_mcontext.gregs[REG_RBP],
	    .exact = 1,
	};
	struct self_maps *sm = calloc(1, sizeof(*sm));
	uint64_t pcs[128];
	int n, last;

	load_self(sm);
	n = walk(sm, r, &st, pcs, 128, &last);
	if (n != cap.nbt || last != UNWIND_STEP_END) {
		for (int i = 0; i < n || i < cap.nbt; i++)
			fprintf(stderr, "  %2d walk %#llx backtrace %p\n", i,
				i < n ? (unsigned long long)pcs[i] : 0ull,
				i < cap.nbt ? cap.bt[i] : 0);
		fprintf(stderr, "  last step %d\n", last);
	}
	/* Frame 0 differs (getcontext's and backtrace's return addresses in the same function). */
	assert_int_equal(last, UNWIND_STEP_END);
	assert_int_equal(n, cap.nbt);
	assert_true(n >= want_min_frames);
	for (int i = 1; i < n; i++)
		assert_int_equal(pcs[i], (uint64_t)(uintptr_t)cap.bt[i]);
	free_self(sm);
	free(sm);
	free(cap.copy);
}

static void test_walk_recursion(void **state)
{
	(void)state;
	deep(20);
	check_walk(23);
}

static void on_usr1(int sig)
{
	(void)sig;
	CAPTURE();
}

__attribute__((noinline)) static void raise_deep(int n)
{
	if (n > 0) {
		raise_deep(n - 1);
		sink++;
		return;
	}
	raise(SIGUSR1);
}

static void test_walk_signal_frame(void **state)
{
	struct sigaction sa = {.sa_handler = on_usr1};

	(void)state;
	sigaction(SIGUSR1, &sa, NULL);
	raise_deep(5);
	signal(SIGUSR1, SIG_DFL);
	check_walk(10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_find_mapping),
	    cmocka_unit_test(test_find_mapping_many),
	    cmocka_unit_test(test_find_row_range),
	    cmocka_unit_test(test_step_cfa_rsp),
	    cmocka_unit_test(test_step_cfa_rbp_and_plt),
	    cmocka_unit_test(test_step_fp_end_and_errors),
	    cmocka_unit_test(test_step_fp_checks),
	    cmocka_unit_test(test_step_fp_leaf_outside_its_frame),
	    cmocka_unit_test(test_step_py_trampoline),
	    cmocka_unit_test(test_after_call),
	    cmocka_unit_test(test_step_fp_hotspot_return_entry),
	    cmocka_unit_test(test_step_fp_go_goexit),
	    cmocka_unit_test(test_step_uretprobe),
	    cmocka_unit_test(test_step_ra_in_rdi),
	    cmocka_unit_test(test_step_signal),
	    cmocka_unit_test(test_sigcontext_offsets),
	    cmocka_unit_test(test_walk_recursion),
	    cmocka_unit_test(test_walk_signal_frame),
	};

	elf_version(EV_CURRENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
