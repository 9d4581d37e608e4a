/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by the Ruby frame walk (bpf/ruby.bpf.h) and the agent (exporter/runtime/ruby/):
 * the per-process descriptor the agent fills from libruby (its ruby_current_vm_ptr symbol and
 * the struct offsets of its version, runtime/ruby/rubyproc.c), the frame record, and why a walk
 * stopped. Fixed-width types only, no pointers, no bool; sizes pinned with _Static_assert.
 *
 * CRuby's (YARV, 3.x) call stack (vm_core.h, method.h, iseq.h): ruby_current_vm_ptr points to
 * the VM (rb_vm_t), whose ractor.main_ractor's threads.running_ec is the execution context of
 * the thread holding the GVL (the one running Ruby code). An execution context
 * (rb_execution_context_t) has its VM stack {vm_stack, vm_stack_size (words)}, the innermost
 * control frame (cfp) and its thread (thread_ptr; rb_thread_t.thread_id: its pthread_t, on
 * x86-64 glibc the thread's fs base). Control frames (rb_control_frame_t {pc, sp, iseq, self,
 * ep, block_code, ...}) lie from cfp up to the VM stack's end, innermost first; a frame's
 * environment pointer ep holds its flags at ep[0] (frame magic, VM_FRAME_FLAG_FINISH: the
 * outermost frame of one vm_exec call, i.e. entered from C; VM_FRAME_FLAG_CFRAME: a C frame) and
 * its method entry at ep[-2]. A Ruby frame's iseq (rb_iseq_t, an imemo of type iseq) has a body
 * {type, iseq_size, iseq_encoded, location {pathobj, base_label, label, first_lineno},
 * insns_info}; pc points into iseq_encoded.
 */
#ifndef SPANPROF_RUBY_H
#define SPANPROF_RUBY_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* Ruby frames recorded per sample; a deeper stack ends in RUBY_STOP_DEPTH (marked as cut). */
#define RUBY_MAX_FRAMES 128
/* Control frames looked at per sample (recorded ones and skipped ones: dummy, C blocks). */
#define RUBY_MAX_CFPS 192

/* Frame flags in ep[0] (vm_core.h, 3.x). */
#define RUBY_FRAME_MAGIC_MASK 0x7fff0001u
#define RUBY_FRAME_MAGIC_CFUNC 0x55550001u
#define RUBY_FRAME_MAGIC_IFUNC 0x66660001u
#define RUBY_FRAME_MAGIC_DUMMY 0x79990001u
#define RUBY_FRAME_FLAG_FINISH 0x0020u
#define RUBY_FRAME_FLAG_CFRAME 0x0080u
/* An rb_iseq_t's flags (RBasic.flags): T_IMEMO in the type bits, imemo_iseq at FL_USHIFT. */
#define RUBY_T_MASK 0x1fu
#define RUBY_T_IMEMO 0x1au
#define RUBY_IMEMO_SHIFT 12
#define RUBY_IMEMO_MASK 0xfu
#define RUBY_IMEMO_MENT 6u
#define RUBY_IMEMO_ISEQ 7u
/* rb_callable_method_entry_t {flags, defined_class, def, called_id, owner} (method.h, 3.x). */
#define RUBY_ME_DEF 16
#define RUBY_ME_CALLED_ID 24
#define RUBY_ME_OWNER 32

/* Whether RBasic flags @flags are those of an imemo of type @imemo. */
static inline int ruby_is_imemo(__u64 flags, __u32 imemo)
{
	return (flags & RUBY_T_MASK) == RUBY_T_IMEMO &&
	       ((flags >> RUBY_IMEMO_SHIFT) & RUBY_IMEMO_MASK) == imemo;
}

/*
 * One Ruby process, keyed by thread group id. Offsets in bytes from the structure their name
 * starts with (vm: rb_vm_t, ractor: rb_ractor_t, ec: rb_execution_context_t, th: rb_thread_t,
 * cfp: rb_control_frame_t, iseq: rb_iseq_t, body: rb_iseq_constant_body).
 */
struct ruby_desc {
	__u64 start_boot_ns; /* group leader's start time: a reused PID never matches */
	__u64 vm_ptr;	     /* the address of ruby_current_vm_ptr in the process */
	__u16 vm_main_ractor, ractor_running_ec;
	__u16 ec_vm_stack, ec_vm_stack_size, ec_cfp, ec_thread_ptr;
	__u16 th_thread_id;
	__u16 cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	__u16 iseq_body;
	__u16 body_iseq_size, body_iseq_encoded; /* iseq_size (u32), iseq_encoded */
	__u16 pad[2];
};

_Static_assert(sizeof(struct ruby_desc) == 48, "ruby_desc is shared with BPF");

/*
 * One Ruby frame of a sample, in sp_sample.ustack after the native, Python, V8, Java and PHP
 * frames: two slots, innermost first.
 *  - word0: bits 0-47 the frame's iseq (RUBY_KIND_ISEQ) or method entry (RUBY_KIND_CFUNC)
 *    address; bits 56-58 the kind; bit 48 RUBY_FRAME_ENTRY: the frame has VM_FRAME_FLAG_FINISH,
 *    the outermost Ruby frame of one vm_exec call of the native stack;
 *  - word1: an iseq frame: low 32 bits the pc's instruction slot (pc - iseq_encoded, in words;
 *    0xffffffff: pc not inside the iseq), high 32 bits the fingerprint: the low 32 bits of
 *    iseq_encoded; a C function's frame: high 32 bits the low 32 bits of its method entry's
 *    definition pointer. The agent names a frame only when what it reads gives the same.
 */
#define RUBY_ADDR_MASK 0xffffffffffffull
#define RUBY_FRAME_ENTRY (1ull << 48)
#define RUBY_KIND_SHIFT 56
#define RUBY_KIND_MASK 7ull
#define RUBY_KIND_ISEQ 1
#define RUBY_KIND_CFUNC 2
#define RUBY_PC_UNKNOWN 0xffffffffu

/*
 * Why a walk stopped: exactly one per walked sample. X(name, description). Values start at 1
 * (0: not walked); ruby_stats counts walks at index 0 and each reason at its value.
 */
#define RUBY_STOPS(X)                                                                              \
	X(END, "outermost Ruby frame reached")                                                     \
	X(IDLE, "no Ruby code running (no VM or execution context yet)")                           \
	X(OTHER_THREAD, "the sampled thread is not the one holding the GVL")                       \
	X(READ_FAILED, "VM memory unreadable (changing, or freed)")                                \
	X(BAD_FRAME, "a control frame outside its VM stack, or its iseq not one")                  \
	X(DEPTH, "frame limit reached: stack cut")

enum ruby_stop {
	RUBY_STOP_NONE = 0,
#define RUBY_STOP_ENUM(n, d) RUBY_STOP_##n,
	RUBY_STOPS(RUBY_STOP_ENUM)
#undef RUBY_STOP_ENUM
	    RUBY_STOP_COUNT
};

/* ruby_stats after the stop reasons: frames recorded, and C function frames among them. */
#define RUBY_STAT_FRAMES RUBY_STOP_COUNT
#define RUBY_STAT_CFUNCS (RUBY_STOP_COUNT + 1)
#define RUBY_STAT_COUNT (RUBY_STOP_COUNT + 2)

#endif /* SPANPROF_RUBY_H */
