/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Seed of the CFI fuzz target: the call frame instructions exporter/unwind/cfi.c meets beyond what a
 * compiler emits for plain C, in both .eh_frame and .debug_frame (.cfi_sections): a signal
 * trampoline ('S'), remember/restore state, RBP-based CFA, the PLT CFA expression ld writes, an
 * unknown CFA expression, undefined RA (outermost frame), register/val_offset rules, same_value,
 * restore, GNU_args_size, and a personality with an LSDA ("zPLR").
 */
	.cfi_sections .eh_frame, .debug_frame
	.text

	.globl _start
	.type _start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	xorl %ebp, %ebp
	call frames
	call plt_like
	call sigtramp
	movl $60, %eax
	xorl %edi, %edi
	syscall
	.cfi_endproc
	.size _start, .-_start

	.globl frames
	.type frames, @function
frames:
	.cfi_startproc
	.cfi_personality 0x9b, DW.ref.personality
	.cfi_lsda 0x1b, .Llsda
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	pushq %rbx
	.cfi_offset rbx, -24
	testq %rdi, %rdi
	.cfi_remember_state
	je 1f
	popq %rbx
	.cfi_restore rbx
	popq %rbp
	.cfi_def_cfa rsp, 8
	.cfi_same_value rbp
	ret
1:
	.cfi_restore_state
	.cfi_escape 0x2e, 0x10		/* DW_CFA_GNU_args_size 16 */
	.cfi_register rbx, r12
	.cfi_val_offset r13, -32
	.cfi_rel_offset r14, 8
	.cfi_adjust_cfa_offset 0
	popq %rbx
	leave
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size frames, .-frames

	/* The PLT stub expression: CFA = RSP + 8 + 8 * ((RIP & 15) >= 11). */
	.globl plt_like
	.type plt_like, @function
plt_like:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	nop
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
	nop
	/* An expression the walker cannot use: CFA = *(RSP + 8). */
	.cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06
	nop
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size plt_like, .-plt_like

	.globl sigtramp
	.type sigtramp, @function
sigtramp:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_escape 0x10, 0x10, 0x02, 0x77, 0x08	/* DW_CFA_expression rip: RSP + 8 */
	nop
	ret
	.cfi_endproc
	.size sigtramp, .-sigtramp

	.globl personality
	.type personality, @function
personality:
	ret
	.size personality, .-personality

	.section .data.rel.local.DW.ref.personality, "awG", @progbits, DW.ref.personality, comdat
	.align 8
	.hidden DW.ref.personality
	.weak DW.ref.personality
DW.ref.personality:
	.quad personality

	.section .gcc_except_table, "a", @progbits
.Llsda:
	.byte 0xff, 0xff, 0x01, 0x00
