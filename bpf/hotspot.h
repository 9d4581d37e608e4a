/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by the HotSpot frame walk (bpf/hotspot.bpf.h) and the agent
 * (exporter/runtime/jvm/): the per-process descriptor the agent fills from the JVM's own
 * Serviceability Agent tables (runtime/jvm/hsvm.h), the frame record, and why a walk stopped.
 * Fixed-width types only, no pointers, no bool; sizes pinned with _Static_assert.
 *
 * x86-64 HotSpot frames (src/hotspot/cpu/x86/frame_x86.hpp, frame_x86.inline.hpp):
 *  - compiled (C1, C2 nmethods) and stub frames with a frame size: the CodeBlob's _frame_size
 *    (words) covers the frame down from the caller's stack pointer: sender_sp = sp +
 *    frame_size * 8, the return address at sender_sp - 8, the caller's RBP saved at
 *    sender_sp - 16; no frame pointer needed;
 *  - interpreter frames keep RBP: [RBP] the caller's RBP, [RBP + 8] the return address,
 *    [RBP - 8] the sender's (unextended) stack pointer, [RBP - 24] the Method*, [RBP - 64] the
 *    bytecode pointer saved at calls (JDK 9+: the mirror slot at RBP - 32); in the running
 *    (leaf) interpreter frame the bytecode pointer lives in R13;
 *  - the call stub (StubRoutines::call_stub, Java's entry from C++) keeps RBP.
 * The code cache (CodeCache::_heaps, each CodeHeap's _memory and _segmap) finds the CodeBlob
 * of a PC: the segment map holds, for each segment, how many segments back the block's start
 * is (0: its first segment; 0xff: free), as CodeHeap::find_block_for() walks it.
 */
#ifndef SPANPROF_HOTSPOT_H
#define SPANPROF_HOTSPOT_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* Code heaps of a code cache (JDK 9+ segmented: non-nmethods, profiled, non-profiled). */
#define HS_MAX_HEAPS 4
/* Java frames recorded per sample at most. */
#define HS_MAX_FRAMES 128
/* The most bytes of a CodeBlob's header the walk reads (one read per frame). */
#define HS_BLOB_HEADER 256
/* Segment map hops followed to a block's start at most. */
#define HS_MAX_HOPS 64

struct hs_heap {
	__u64 low, high;    /* the heap's committed code [low, high) */
	__u64 segmap;	    /* its segment map: one byte per segment */
	__u32 log2_segment; /* log2 of the segment size (bytes) */
	__u32 pad;
};

/*
 * One JVM process, keyed by thread group id. Offsets in bytes from the object's start; 0xffff:
 * the field is absent in this JVM.
 */
struct hs_desc {
	__u64 start_boot_ns;   /* group leader's start time: a reused PID never matches */
	__u64 cc_low, cc_high; /* CodeCache::_low_bound, _high_bound */
	__u64 interp_low,
	    interp_high; /* the template interpreter's code (AbstractInterpreter::_code) */
	/* Bytes of a CodeBlob read at once (<= HS_BLOB_HEADER): every blob_* field and
	 * nmethod_method lie inside them. */
	__u16 blob_header_len;
	__u16 pad16[3];
	struct hs_heap heaps[HS_MAX_HEAPS];
	__u32 n_heaps;
	__u16 heap_block_size; /* sizeof(HeapBlock): the CodeBlob follows it */
	__u16 blob_name, blob_frame_size, blob_frame_complete, blob_code_begin, blob_code_offset;
	__u16 blob_kind; /* CodeBlob::_kind (u8), 0xffff before JDK 23 */
	__u16 nmethod_method, nmethod_compile_id;
	__u16 method_const_method;
	__u16 const_method_size; /* sizeof(ConstMethod): the bytecodes follow it */
	__u16 const_method_code_size;
	__u8 kind_nmethod;	/* CodeBlobKind::Nmethod */
	__u8 frame_complete_16; /* _frame_complete_offset is 16 bits (JDK 23+), else 32 */
	__u8 code_begin_ptr;	/* blob_code_begin is an address field (JDK < 23), else
				 * blob_code_offset is an int relative to the blob */
	__u8 pad[3];
};

_Static_assert(sizeof(struct hs_desc) == 56 + 32 * HS_MAX_HEAPS + 32, "hs_desc is shared with BPF");

/*
 * One Java frame of a sample, in sp_sample.ustack after the native frames: two slots.
 *  - word0: bits 0-47 the Method* (interpreted) or the nmethod's CodeBlob address (compiled);
 *    bits 48-57 the native frame (0: leaf) this Java frame is; bits 58-59 HS_KIND_*;
 *  - word1: interpreted: high 32 bits the low 32 bits of Method::_constMethod at the sample
 *    (the fingerprint), low 32 bits the bytecode pointer's offset from that ConstMethod;
 *    compiled: high 32 bits nmethod::_compile_id at the sample, low 32 bits the low 32 bits
 *    of nmethod::_method at the sample.
 * The agent names a frame only when the objects it reads still hold these values.
 */
#define HS_ADDR_MASK 0xffffffffffffull
#define HS_INDEX_SHIFT 48
#define HS_INDEX_MASK 0x3ffull
#define HS_KIND_SHIFT 58
#define HS_KIND_INTERPRETED 1ull
#define HS_KIND_COMPILED 2ull
/* A stub, adapter or runtime blob (the call stub among them): word0 the CodeBlob's address,
 * word1 the low 32 bits of its _name pointer at the sample. */
#define HS_KIND_STUB 3ull

/* Why the HotSpot part of a walk recorded no Java frame or stopped: counted in hs_stats. */
#define HS_STATS(X)                                                                                \
	X(SAMPLES, "samples of described JVM processes")                                           \
	X(INTERPRETED, "interpreted frames recorded")                                              \
	X(COMPILED, "compiled frames recorded")                                                    \
	X(STUBS, "stub, adapter and runtime frames crossed by their frame size")                   \
	X(NO_BLOB, "PC in the code cache but in no code blob (free, or the map was changing)")     \
	X(NOT_COMPLETE, "leaf in a frame being built or torn down: the walk stops, marked")        \
	X(BAD_FRAME, "a frame's size, bytecode pointer or return address did not check out")       \
	X(READ_FAILED, "code cache or frame unreadable")                                           \
	X(DEPTH, "more Java frames than a sample holds: the outer ones left unnamed")

enum hs_stat {
#define HS_STAT_ENUM(n, d) HS_STAT_##n,
	HS_STATS(HS_STAT_ENUM)
#undef HS_STAT_ENUM
	    HS_STAT_COUNT
};

#endif /* SPANPROF_HOTSPOT_H */
