/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by the PHP frame walk (bpf/php.bpf.h) and the agent (exporter/runtime/php/):
 * the per-process descriptor the agent fills from the PHP binary (its executor_globals symbol
 * and the struct offsets of its version, runtime/php/phptab.c), the frame record, and why a
 * walk stopped. Fixed-width types only, no pointers, no bool; sizes pinned with
 * _Static_assert.
 *
 * The Zend engine's call stack (PHP 7.4-8.x, non-ZTS; Zend/zend_globals.h, zend_compile.h):
 * executor_globals (EG) holds current_execute_data, the innermost zend_execute_data of the
 * running thread; each one has {opline: the zend_op executing (saved at calls; the running
 * one's lives in a register of the VM, R15 on x86-64), func: its zend_function, This: whose
 * u1.type_info holds the call info (ZEND_CALL_TOP: entered from C, by its own execute_ex
 * call), prev_execute_data: the caller}. A zend_function starts with its type (1 internal, 2
 * user, 4 eval code) and its common part {function_name, scope (the class)}; a user one (a
 * zend_op_array) has its opcodes, their count and its file name; a zend_op its line number.
 */
#ifndef SPANPROF_PHP_H
#define SPANPROF_PHP_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* PHP frames recorded per sample; a deeper stack ends in PHP_STOP_DEPTH (marked as cut). */
#define PHP_MAX_FRAMES 128

/* zend_function.type (Zend/zend_compile.h). */
#define PHP_INTERNAL_FUNCTION 1
#define PHP_USER_FUNCTION 2
#define PHP_EVAL_CODE 4
/* ZEND_CALL_TOP in zend_execute_data.This.u1.type_info (7.4: bit 1 of the call info shifted
 * by ZEND_CALL_INFO_SHIFT 16; 8.x: the flag itself): the same bit. */
#define PHP_CALL_TOP (1u << 17)

/*
 * One PHP process, keyed by thread group id. Offsets in bytes from the structure their name
 * starts with (eg: zend_executor_globals, ed: zend_execute_data, fn: zend_function's common
 * part, op: zend_op_array, zop: zend_op).
 */
struct php_desc {
	__u64 start_boot_ns; /* group leader's start time: a reused PID never matches */
	__u64 eg;	     /* the address of executor_globals in the process */
	__u16 eg_current_execute_data;
	__u16 ed_opline, ed_func, ed_this_type_info, ed_prev;
	__u16 fn_name;		    /* common.function_name */
	__u16 op_opcodes, op_last;  /* op_array.opcodes, .last (u32) */
	__u16 zop_lineno, zop_size; /* zend_op.lineno (u32), sizeof(zend_op) */
	__u32 pad;
};

_Static_assert(sizeof(struct php_desc) == 40, "php_desc is shared with BPF");

/*
 * One PHP frame of a sample, in sp_sample.ustack after the native, Python, V8 and Java frames:
 * two slots, innermost first.
 *  - word0: bits 0-47 the zend_function address; bits 56-58 its type (PHP_*_FUNCTION,
 *    PHP_EVAL_CODE); bit 48 PHP_FRAME_ENTRY: a user frame entered from C (ZEND_CALL_TOP),
 *    the outermost PHP frame of one execute_ex call of the native stack; bit 49
 *    PHP_FRAME_LINE_REG: the line is the running opline's, read from the VM's register;
 *  - word1: low 32 bits the line (user code; 0: unknown), high 32 bits the fingerprint: the
 *    low 32 bits of op_array.opcodes (user code) or of common.function_name (internal), XORed
 *    with the function_name pointer's bits 32-63 (user code). The agent names a frame only
 *    when the zend_function it reads still gives the same fingerprint.
 */
#define PHP_ADDR_MASK 0xffffffffffffull
#define PHP_FRAME_ENTRY (1ull << 48)
#define PHP_FRAME_LINE_REG (1ull << 49)
#define PHP_TYPE_SHIFT 56
#define PHP_TYPE_MASK 7ull

/* The fingerprint of a zend_function of @type with @opcodes and @name pointers. */
static inline __u32 php_fingerprint(__u32 type, __u64 opcodes, __u64 name)
{
	if (type == PHP_INTERNAL_FUNCTION)
		return (__u32)name;
	return (__u32)opcodes ^ (__u32)(name >> 32);
}

/*
 * Why a walk stopped: exactly one per walked sample. X(name, description). Values start at 1
 * (0: not walked); php_stats counts walks at index 0 and each reason at its value.
 */
#define PHP_STOPS(X)                                                                               \
	X(END, "outermost PHP frame reached")                                                      \
	X(IDLE, "no PHP code running (EG.current_execute_data NULL)")                              \
	X(READ_FAILED, "engine memory unreadable (changing, or freed)")                            \
	X(BAD_FRAME, "a frame's function is not one (its type unknown)")                           \
	X(DEPTH, "frame limit reached: stack cut")

enum php_stop {
	PHP_STOP_NONE = 0,
#define PHP_STOP_ENUM(n, d) PHP_STOP_##n,
	PHP_STOPS(PHP_STOP_ENUM)
#undef PHP_STOP_ENUM
	    PHP_STOP_COUNT
};

/* php_stats after the stop reasons: frames recorded, and leaf lines read from the register. */
#define PHP_STAT_FRAMES PHP_STOP_COUNT
#define PHP_STAT_LINE_REG (PHP_STOP_COUNT + 1)
#define PHP_STAT_COUNT (PHP_STOP_COUNT + 2)

#endif /* SPANPROF_PHP_H */
