/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by the Python frame walk (bpf/python_walk.h) and the agent
 * (exporter/runtime/python/): the per-process descriptor the agent fills from what it learnt
 * of a CPython interpreter (pyproc__desc()), the frame record, and the walk's stop reasons.
 * Fixed-width types only, no pointers, no bool; sizes pinned with _Static_assert.
 */
#ifndef SPANPROF_PYTHON_H
#define SPANPROF_PYTHON_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* Python frames recorded per sample; a deeper stack ends in PY_STOP_DEPTH (marked as cut). */
#define PY_MAX_FRAMES 128
/*
 * Room kept for the Python frames (2 ustack slots each) when the native walk of a Python
 * process was cut at its depth limit: its leaf-most SP_MAX_USTACK - 2 * PY_ROOM_FRAMES
 * frames stay. Before 3.11 every Python call costs the native walk 3-4 interpreter frames, so
 * a native stack 512 deep would otherwise leave no Python frame to place in its loop frames;
 * 96 balances the two there (about 90 Python calls' worth of native frames and their 96 Python
 * frames).
 */
#define PY_ROOM_FRAMES 96
/*
 * Loop bounds of the walk: a frame list longer than this (entry and incomplete frames, which
 * are skipped, included) is cut as above; thread states searched for the sampled thread, over
 * all interpreters; interpreters of one process.
 */
#define PY_MAX_FRAME_STEPS 256
#define PY_MAX_THREAD_STEPS 256
#define PY_MAX_INTERPRETERS 8

/*
 * Why a walk stopped: exactly one per walked sample. X(name, description). Values start at 1
 * (0 is PY_STOP_NONE, "not walked"), so the steps can return -reason; the per-CPU py_stats
 * array counts walks at index 0 and each reason at its value.
 */
#define PY_STOPS(X)                                                                                \
	X(END, "outermost Python frame reached")                                                   \
	X(NO_TSTATE, "the thread has no Python thread state (it never ran Python)")                \
	X(TOO_MANY_THREADS, "thread state not among the first searched")                           \
	X(READ_FAILED, "interpreter memory unreadable (changing, or freed)")                       \
	X(BAD_CODE, "a frame's code object is not one (garbage, or freed meanwhile)")              \
	X(DEPTH, "frame limit reached: stack cut")

enum py_stop {
	PY_STOP_NONE = 0,
#define PY_STOP_ENUM(n, d) PY_STOP_##n,
	PY_STOPS(PY_STOP_ENUM)
#undef PY_STOP_ENUM
	    PY_STOP_COUNT
};

/*
 * Indices of the per-CPU py_stats array after the stop reasons: frames whose code object came
 * from the code-object cache (no read), frames whose code object was read from the process,
 * and code objects freed in described processes (the deallocation uprobe's hits).
 */
#define PY_STAT_CODE_CACHED PY_STOP_COUNT
#define PY_STAT_CODE_READ (PY_STOP_COUNT + 1)
#define PY_STAT_CODE_FREED (PY_STOP_COUNT + 2)
#define PY_STAT_COUNT (PY_STOP_COUNT + 3)

/* How a thread state leads to its innermost frame (values of struct py_desc.tstate_frame_kind). */
#define PY_TSTATE_FRAME 1  /* a frame pointer in the thread state (3.8-3.10, 3.13-3.14) */
#define PY_TSTATE_CFRAME 2 /* through _PyCFrame.current_frame (3.11-3.12) */
/* What a frame's instruction field is (struct py_desc.instr_kind). */
#define PY_INSTR_LASTI_BYTES 1 /* int f_lasti, bytes (3.8-3.9) */
#define PY_INSTR_LASTI_UNITS 2 /* int f_lasti, 2-byte code units (3.10) */
#define PY_INSTR_PTR 3	       /* pointer into co_code_adaptive (3.11+) */
#define PY_NO_OWNER 0xff       /* frame owner value absent in this version */

/*
 * One interpreter of one process, keyed by thread group id. Addresses are the process's; the
 * 16-bit fields are byte offsets inside the structure their name starts with (see
 * exporter/runtime/python/pylayout.h, where each one comes from).
 */
struct py_desc {
	__u64 start_boot_ns;	/* group leader's start time: a reused PID never matches */
	__u64 interp_head_addr; /* &_PyRuntime.interpreters.head */
	__u64 code_type;	/* &PyCode_Type: a frame's code object must have this type */
	__u16 interp_next, interp_threads_head;
	__u16 tstate_next, tstate_thread_id, tstate_native_thread_id, tstate_frame;
	__u16 cframe_current_frame;
	__u16 frame_previous, frame_code, frame_instr, frame_owner;
	__u16 frame_is_entry; /* 3.11 _PyInterpreterFrame.is_entry; 0: absent */
	__u16 object_type, code_firsttraceable, code_adaptive; /* 0: field absent */
	__u8 tstate_frame_kind, instr_kind, interpreter_frames, has_native_thread_id;
	__u8 owner_generator, owner_cstack;
	/* What a frame's fingerprint is made of (PY_FRAME_FP_SHIFT): co_firstlineno and either
	 * co_version (code_version, 0: not used for this version) when it is not 0, or else
	 * co_name's str's cached hash (PyASCIIObject.hash) and co_filename's contents (below).
	 * Contents, not addresses: a code object freed and reallocated at its address with its
	 * new name and file at the old ones' addresses (functions made and dropped at run time,
	 * modules imported one after the other) differs by its version, else by the name's hash
	 * or the file (pywalk__code_key()). */
	__u16 code_name, unicode_hash, code_firstlineno;
	/* PyThreadState .prev and .interp: a cached thread state is checked to be in its list. */
	__u16 tstate_prev, tstate_interp;
	__u16 code_version; /* PyCodeObject.co_version (3.12), 0: absent or not trusted */
	/* Without a version, the fingerprint also keys co_filename's contents (pywalk__str_key():
	 * a str's length and state, and PyASCIIObject's and PyCompactUnicodeObject's sizes). */
	__u16 code_filename, unicode_length, unicode_state;
	__u8 unicode_ascii_size, unicode_compact_size;
	/* Low bits of a frame's code field that are a tag (3.14's f_executable, a _PyStackRef:
	 * 3; both set, a tagged int, is no code object); 0: a plain pointer. */
	__u8 frame_code_tag;
	__u8 pad[7];
};

_Static_assert(sizeof(struct py_desc) == 88, "py_desc is shared with BPF");

/*
 * PY_FRAME_ENTRY: the outermost Python frame one call of the interpreter loop from C runs
 * (_PyEval_EvalFrameDefault): where the agent puts the Python frames of that native frame.
 * 3.8-3.10: every frame (each Python call is a call of the loop); 3.11: is_entry; 3.12+: the
 * frame just inside a C-stack entry frame.
 */
#define PY_FRAME_ENTRY 1u
/*
 * Bits PY_FRAME_FP_SHIFT.. of the flags: a fingerprint of the code object as the walk saw it,
 * from its contents, not its address (pywalk__fingerprint() of its co_version, else the hash of
 * its co_name and its co_filename's contents, and its co_firstlineno). The agent names a frame
 * only when the code object it reads
 * at that address has the same fingerprint: one freed and its address taken by another function
 * between the sample and the read is refused, not misnamed.
 */
#define PY_FRAME_FP_SHIFT 8
#define PY_FRAME_FP_MASK 0xffffffu

/*
 * What tells one code object from another made later at the same address, besides its
 * co_firstlineno: its co_version @version when that is known and not 0 (3.12: every code
 * object made takes the next number of one process-wide counter, which stops at 0 when it
 * runs out, Objects/codeobject.c init_code()), else its co_name's hash @name_hash and the key
 * of its co_filename's contents @file_key (pywalk__str_key(): two reads more, of other
 * objects; without the file, two modules' `<module>` at line 1, or two files' `handler` at the
 * same line, made one after the other at one address, would pass for each other). The
 * version's key has bit 63 set so that the two kinds differ.
 */
static inline __u64 pywalk__code_key(__u32 version, __u64 name_hash, __u64 file_key)
{
	return version ? (1ull << 63) | version
		       : (name_hash ^ (file_key * 0xff51afd7ed558ccdull)) & ~(1ull << 63);
}

/* Hides @x's known range from the compiler, so that a bound check or mask after it stays in
 * the code the verifier sees (BPF only). */
#ifdef __BPF__
#define PYWALK_OPAQUE(x) asm volatile("" : "+r"(x))
#else
#define PYWALK_OPAQUE(x) ((void)0)
#endif

/*
 * The 8 bytes at @p, a copy of the process's memory, as a little-endian word. In BPF one load:
 * a memcpy of unknown alignment is 8 byte loads and their shifts (most of a frame step's
 * instructions), and the verifier allows a misaligned load where the architecture has
 * efficient ones, as x86-64 and arm64 do (the offsets read here are 4- or 8-aligned anyway).
 */
static inline __u64 pywalk__load8(const __u8 *p)
{
#ifdef __BPF__
	return *(const __u64 *)p;
#else
	__u64 v;

	__builtin_memcpy(&v, p, 8);
	return v;
#endif
}

/* The 32-bit word at @p, as pywalk__load8(). */
static inline __u32 pywalk__load4(const __u8 *p)
{
#ifdef __BPF__
	return *(const __u32 *)p;
#else
	__u32 v;

	__builtin_memcpy(&v, p, 4);
	return v;
#endif
}

/*
 * A file name's str is keyed whole (pywalk__str_key()): its characters take at most
 * PYWALK_STR_MAX bytes (longer ones are not keyed: the agent refuses their frames), read into
 * a buffer of PYWALK_STR_BUF bytes (8 more of slack after it for the last word).
 */
#define PYWALK_STR_BUF 512
#define PYWALK_STR_MAX 448
/* The key of a str that cannot be keyed (not compact, too long): the agent refuses those. */
#define PYWALK_STR_UNKEYED 1ull

/*
 * How many bytes at @addr the walk reads first for the str there: to the end of its page, at
 * most PYWALK_STR_BUF, at least @min (a str is never smaller than its ASCII header and NUL).
 */
static inline __u32 pywalk__str_span(__u64 addr, __u32 min)
{
	__u32 room = 4096 - (__u32)(addr & 4095);

	room = room < PYWALK_STR_BUF ? room : PYWALK_STR_BUF;
	return room < min ? min : room;
}

/*
 * Where a str's characters are (PEP 393, Include/cpython/unicodeobject.h, 3.3 through 3.14 in GIL
 * builds: state bits interned:2, kind:3, compact:1, ascii:1): *@data_off bytes from its start
 * (@ascii_size, PyASCIIObject's size, for an ASCII str, else @compact_size,
 * PyCompactUnicodeObject's), *@nbytes of them (@length characters of kind 1, 2 or 4 bytes).
 * 0, or -1 for a str not keyed: not compact, a kind that is no kind, more than PYWALK_STR_MAX
 * bytes.
 */
static inline int pywalk__str_layout(__u64 length, __u32 state, __u32 ascii_size,
				     __u32 compact_size, __u32 *data_off, __u32 *nbytes)
{
	__u32 kind = (state >> 2) & 7;

	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -1;
	if ((state >> 6) & 1) {
		if (kind != 1)
			return -1;
		*data_off = ascii_size;
	} else {
		*data_off = compact_size;
	}
	if (length > PYWALK_STR_MAX || length * kind > PYWALK_STR_MAX)
		return -1;
	*nbytes = (__u32)length * kind;
	return 0;
}

/*
 * The key of a str's contents: its @length, its kind and ASCII bits (of @state), and its
 * @nbytes bytes of characters (pywalk__str_layout()), at @at in @buf (@at + @nbytes <=
 * PYWALK_STR_BUF; the buffer has 8 bytes of slack after it). Only what never changes in a live
 * str (not its count, cached hash, interned bits or caches). Shared by the BPF walk and the
 * agent, which must agree bit for bit.
 */
static inline __u64 pywalk__str_key(const __u8 *buf, __u32 at, __u32 nbytes, __u64 length,
				    __u32 state)
{
	__u64 h = 0xcbf29ce484222325ull, w, end = (__u64)at + nbytes, o;
	__u32 i;

	if (end > PYWALK_STR_BUF)
		return PYWALK_STR_UNKEYED;
	h = (h ^ length) * 0x100000001b3ull;
	h = (h ^ ((state >> 2) & 0x1f)) * 0x100000001b3ull;
	for (i = 0; i < PYWALK_STR_BUF / 8; i++) {
		__u64 pos = (__u64)at + 8 * i;

		if (pos >= end)
			break;
		o = pos;
		PYWALK_OPAQUE(o);
		w = pywalk__load8(buf + (o & (PYWALK_STR_BUF - 1)));
		/* The last word's characters only (little-endian: the low bytes). */
		if (end - pos < 8)
			w &= (1ull << (8 * (end - pos))) - 1;
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 32;
	}
	return h == PYWALK_STR_UNKEYED ? h + 1 : h;
}

/* splitmix64's finalizer: every bit of @h spread over the whole word. */
static inline __u64 pywalk__mix64(__u64 h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

/*
 * The fingerprint (PY_FRAME_FP_MASK bits) of a code object whose key (pywalk__code_key()) is
 * @key, co_firstlineno @line. The line goes in times an odd 64-bit constant, added, then the
 * whole word is mixed (splitmix64's finalizer): two code objects made one after the other
 * have versions a few apart and lines a few apart, and a combination as weak as key ^ line
 * made them equal (version v at line l and version v ^ l ^ l' at line l': the code object made
 * a turn later at a freed one's address passed for it; a try-out on 3.12 showed `f_N` in a
 * `<lambda>`'s place). Now such pairs differ in the whole word before the mix, and the 24 bits
 * kept are as good as random.
 */
static inline __u32 pywalk__fingerprint(__u64 key, __u32 line)
{
	__u64 h = pywalk__mix64(key + (__u64)line * 0x9e3779b97f4a7c15ull);

	return (__u32)(h >> 40) & PY_FRAME_FP_MASK;
}

/*
 * The code-object cache: what a walk learnt of a code object (its fingerprint and first
 * traceable instruction) kept for later walks of the same process, so that a frame whose code
 * object is in it costs no read of the code object.
 *
 * Sound only with the process's code epoch (map py_code_epochs, struct py_code_epoch): a
 * counter the agent starts at a number no other process of the run had, that a uprobe on the
 * interpreter's code-object deallocation function (PyCode_Type.tp_dealloc, code_dealloc() of
 * Objects/codeobject.c, 3.8-3.14) increments before any code object's memory goes back to the
 * allocator. A slot holds the epoch read at the start of the walk that filled it, and is used
 * only by a walk that read the same epoch at its start: no code object of the process was
 * freed in between, so the address still holds the object that was read. A walk fills only
 * from frames below the innermost one, whose code objects the (stopped) thread's frames hold
 * references to: never from a code object already on its way out. Without an epoch (no uprobe,
 * --no-python-code-cache) the walk reads every code object as before.
 *
 * Each CPU has its own direct-mapped table (in struct pywalk_buf). A slot is four words whose
 * last is a check of the other three and the process (pywalk__slot_check()): a slot half
 * written when a walk in NMI interrupted a walk filling it fails the check and is a miss.
 */
#define PY_CODE_CACHE_SLOTS 512

/* A process's code epoch (py_code_epochs value). 0: no cache for it. */
struct py_code_epoch {
	__u64 epoch;
};

/* One slot of the code-object cache: @val = fingerprint | first traceable instruction << 32. */
struct pywalk_code_slot {
	__u64 code, epoch, val, check;
};

/* The slot of code object @code (an index below PY_CODE_CACHE_SLOTS). */
static inline __u32 pywalk__slot_index(__u64 code)
{
	return (__u32)((code * 0x9e3779b97f4a7c15ull) >> 55) & (PY_CODE_CACHE_SLOTS - 1);
}

/* The check word of a slot of process @tgid (splitmix64's finalizer of the fields mixed). */
static inline __u64 pywalk__slot_check(__u64 code, __u64 epoch, __u64 val, __u32 tgid)
{
	return pywalk__mix64(code * 0x9e3779b97f4a7c15ull +
			     (epoch ^ (__u64)tgid << 40) * 0xd6e8feb86659fd93ull +
			     val * 0xff51afd7ed558ccdull + 1);
}

/*
 * One Python frame of a sample: what the agent needs to name and place it. In sp_sample.ustack
 * (bpf/sampler.h) a frame takes two slots, this structure's bytes: the code address, then
 * offset (low 32 bits) | flags << 32; the agent copies them out as struct py_frame.
 */
struct py_frame {
	__u64 code;   /* code object address */
	__s32 offset; /* byte offset of the instruction in the bytecode; -1: not started */
	__u32 flags;  /* PY_FRAME_* */
};

_Static_assert(sizeof(struct py_frame) == 16, "py_frame is shared with BPF");

#endif /* SPANPROF_PYTHON_H */
