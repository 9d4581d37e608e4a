/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by the V8 frame reader (bpf/v8.bpf.h) and the agent (exporter/runtime/v8/): the
 * per-process descriptor the agent fills from the node executable's postmortem metadata (the
 * v8dbg_* symbols of V8's tools/gen-postmortem-metadata.py), the frame record, and why a frame
 * got none. Fixed-width types only, no pointers, no bool; sizes pinned with _Static_assert.
 *
 * V8 keeps a frame pointer in every frame of its generated code (src/execution/frame-constants.h):
 * [fp] caller's fp, [fp + 8] return address, [fp + off_context] the context (a tagged heap object)
 * or, in a typed frame (stub, entry, exit...), a frame-type marker (a Smi); in a JavaScript frame
 * [fp + off_function] the JSFunction and, in an interpreted frame, [fp + off_bytecode_array] the
 * BytecodeArray and [fp + off_bytecode_offset] the offset (a Smi).
 */
#ifndef SPANPROF_V8_H
#define SPANPROF_V8_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* V8 frames recorded per sample at most (three ustack slots each). */
#define V8_MAX_FRAMES 96

/* Tagged values (include/v8-internal.h, 64-bit without pointer compression: the only layout the
 * agent describes): a heap object pointer has low bits 01, a Smi low bit 0 and its value in the
 * upper 32 bits. */
#define V8_HEAP_OBJECT_TAG 1ull
#define V8_HEAP_OBJECT_TAG_MASK 3ull
#define V8_SMI_TAG_MASK 1ull

/*
 * One node process (image), keyed by thread group id. Offsets in bytes: frame slots relative to
 * the frame pointer, fields relative to the untagged object address.
 */
struct v8_desc {
	__u64 start_boot_ns; /* group leader's start time: a reused PID never matches */
	__s16 fp_context, fp_function, fp_bytecode_array, fp_bytecode_offset;
	__u16 heap_object_map, map_instance_type, jsfunction_shared, sfi_name_or_scope_info;
	/* Instance types: JSFunction and its subclasses [first, last]; BytecodeArray;
	 * SharedFunctionInfo. */
	__u16 type_jsfunction_first, type_jsfunction_last, type_bytecode_array, type_sfi;
};

_Static_assert(sizeof(struct v8_desc) == 32, "v8_desc is shared with BPF");

/*
 * One JavaScript frame of a sample, in sp_sample.ustack after the native frames (and the Python
 * frames): three slots, this structure's bytes.
 *  - sfi: the SharedFunctionInfo (tagged pointer) of the frame's JSFunction, as read at the sample;
 *  - fingerprint: the SharedFunctionInfo's name_or_scope_info field as read at the sample; the
 *    agent names the frame only when the object it then reads at sfi still holds this value (a
 *    moving or freeing GC between the sample and the read is refused, not misnamed);
 *  - index: the native frame (0: leaf) whose frame pointer this frame is; flags V8_FRAME_*;
 *    bytecode_offset: interpreted frames (V8_FRAME_INTERPRETED), else -1.
 */
struct v8_frame {
	__u64 sfi;
	__u64 fingerprint;
	__u16 index;
	__u16 flags;
	__s32 bytecode_offset;
};

_Static_assert(sizeof(struct v8_frame) == 24, "v8_frame is shared with BPF");

/* The frame is interpreted: bytecode_offset is the offset (in the BytecodeArray) executing. */
#define V8_FRAME_INTERPRETED 0x1
/*
 * The native frame @index is the leaf and had not set up (or had already left) a frame of its own
 * when sampled (the word at the stack pointer is the return address, or the saved frame pointer):
 * the frame pointer is its caller's, so this JavaScript frame is the caller, which the native
 * walk skipped. The agent puts it after the native frame, never in its place.
 */
#define V8_FRAME_CALLER 0x2

/* Why the V8 pass recorded no frame for a native frame: counted per CPU in v8_stats. */
#define V8_STATS(X)                                                                                \
	X(SAMPLES, "samples of described node processes")                                          \
	X(FRAMES, "JavaScript frames recorded")                                                    \
	X(TYPED, "frames with a frame-type marker (stubs, entry and exit frames): no function")    \
	X(NOT_FUNCTION, "function slot not a JSFunction (native frame, or garbage)")               \
	X(READ_FAILED, "frame or object unreadable")                                               \
	X(DEPTH, "more frames than a sample holds: the outer ones left out")

enum v8_stat {
#define V8_STAT_ENUM(n, d) V8_STAT_##n,
	V8_STATS(V8_STAT_ENUM)
#undef V8_STAT_ENUM
	    V8_STAT_COUNT
};

#endif /* SPANPROF_V8_H */
