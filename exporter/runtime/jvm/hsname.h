/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hsname: names the Java frames the HotSpot walk records (bpf/hotspot.h, two slots per frame)
 * from the JVM's own metadata, read out of the process's memory with the field layouts of its
 * libjvm.so (runtime/jvm/hsvm.h): class, method, source file and line, and the methods C1/C2
 * inlined at a compiled frame's PC.
 *
 * Objects read (names as vmStructs.cpp spells them):
 *  - Method::_constMethod -> ConstMethod: _constants (ConstantPool*), _name_index, _code_size,
 *    _constMethod_size (words), the flags (JDK < 21 "_flags" u2 with
 *    ConstMethod::_has_linenumber_table; JDK 21+ "_flags._flags" u4 with
 *    ConstMethodFlags::_misc_has_linenumber_table). The bytecodes start at ConstMethod +
 *    sizeof(ConstMethod); the compressed line-number table follows them (oops/constMethod.hpp);
 *  - ConstantPool: _pool_holder (InstanceKlass*), _source_file_name_index, _length, _tags
 *    (Array<u1>: JVM_CONSTANT_Utf8 = 1 is checked); entry i is the word at ConstantPool +
 *    sizeof(ConstantPool) + 8 * i, a Symbol* for a Utf8 entry (oops/constantPool.hpp base());
 *  - Klass::_name of the pool holder (not InstanceKlass::_constants: a redefined class's
 *    running old methods keep their old pool);
 *  - Symbol: _length (u2), _body (modified UTF-8 bytes, kept as they are; a class name's '/'
 *    printed as '.', a hidden class's "+0x..." suffix as "/0x..." the way Class.getName() does);
 *  - a compiled frame's nmethod (CodeBlob): its code begin, _method, _compile_id, its PcDescs
 *    (code/pcDesc.hpp: pc_offset from the code begin, scope decode offset), scopes data and
 *    metadata section, located by the fields this JVM exports:
 *      JDK 8-22: CodeBlob::_code_begin (address; JDK 8 _code_offset), CompiledMethod::_method,
 *        _scopes_data_begin (JDK 8 nmethod::_scopes_data_offset), nmethod::_scopes_pcs_offset,
 *        _dependencies_offset (PcDescs end), _metadata_offset (to the scopes data), offsets
 *        from the nmethod's start;
 *      JDK 25: CodeBlob::_code_offset, nmethod::_method, nmethod::_immutable_data with
 *        _scopes_pcs_offset, _scopes_data_offset, _immutable_data_size; metadata at
 *        CodeBlob::_mutable_data + _relocation_size, to _mutable_data + _mutable_data_size.
 *    Tested here: JDK 17 and 25. JDK 8, 11 and 21 read by the first scheme, untested; a JVM
 *    missing a field of its scheme (JDK 23-24 may) is refused by hsname__new(), not guessed.
 *    The stream encoding is chosen by ConstMethod's flags field (JDK 21+): JDK 20, whose
 *    streams may already be UNSIGNED5, is not told apart and may misread line numbers.
 *
 * Line numbers: CompressedLineNumberReadStream (oops/method.hpp, method.cpp): a byte b != 0xFF
 * is one pair (bci += b >> 3, line += b & 7); 0xFF is followed by two signed ints (bci delta,
 * line delta); 0 ends. Signed ints are zigzag ((v >> 1) ^ -(v & 1)) over the stream's unsigned
 * encoding (code/compressedStream.hpp): JDK < 21 bytes of 6-bit digits, < 192 ending;
 * JDK 21+ UNSIGNED5 (utilities/unsigned5.hpp), the same with byte 0 excluded (every byte - 1,
 * < 191 ending). The line of a bci is Method::line_number_from_bci()'s: an exact entry, else
 * the entry with the largest start bci below it; bci -1 (a method's entry) is bci 0.
 *
 * Inlining: a compiled frame's scopes (code/scopeDesc.cpp decode_body(), debugInfo.hpp): at a
 * scope decode offset in the scopes data, unsigned ints sender decode offset (0: outermost),
 * method (index into the nmethod's metadata, 1-based), bci + 1. The PcDesc is found only at
 * the PC exactly (a call's PcDesc sits at its return address); a leaf PC between PcDescs, or a
 * PcDesc without scopes, gives the nmethod's own method alone with line 0: an inlined method
 * is never guessed (unless hsname__set_leaf_near() asks for HotSpot's own approximation).
 *
 * Proof: an interpreted frame is named only when Method::_constMethod still has the low 32
 * bits the walk saw and the bytecode pointer lies in the bytecodes (a native method, without
 * bytecodes, is named with line 0 whatever its frame holds); a compiled frame only when
 * the nmethod still has the _compile_id and the low 32 bits of _method the walk saw. Anything
 * else is refused (STALE): code is freed, classes unload, methods are redefined. Cached: the
 * answers per (Method*, fingerprint, bytecode offset) and (nmethod, compile id, method, PC),
 * a method's names and line table per (Method*, fingerprint), an nmethod's copied PcDescs,
 * scopes, metadata and the methods they name per (nmethod, compile id, method): a key seen
 * again was proven when read, and a sample carrying it was taken while it held.
 *
 * Bounds: names HSNAME_MAX_NAME bytes, HSNAME_MAX_DEPTH scopes, tables and sections sized
 * below (hsname.c): garbage is refused (BAD), never followed. Not thread safe.
 */
#ifndef SPANPROF_RUNTIME_JVM_HSNAME_H
#define SPANPROF_RUNTIME_JVM_HSNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/jvm/hsvm.h"

/* Longest class, method or file name read (bytes of modified UTF-8). */
#define HSNAME_MAX_NAME 1024
/* Scopes of one compiled PC at most (the outermost method included). */
#define HSNAME_MAX_DEPTH 32

/* Why a frame could not be named: X(name, description). */
#define HSNAME_ERRORS(X)                                                                           \
	X(READ, "memory not readable (unmapped, or the process exited)")                           \
	X(STALE, "the Method or nmethod changed since the sample (freed, unloaded, redefined)")    \
	X(BAD, "an object did not read as the layout says (garbage, or a bound exceeded)")

enum hsname_error {
#define HSNAME_ENUM(n, d) HSNAME_ERR_##n,
	HSNAME_ERRORS(HSNAME_ENUM)
#undef HSNAME_ENUM
	    HSNAME_ERR_COUNT
};

const char *hsname__error_name(enum hsname_error e);

struct hsname_stats {
	uint64_t errors[HSNAME_ERR_COUNT];
	uint64_t hits, misses; /* frames named from the cache / read */
	uint64_t no_pc_desc;   /* leaf PCs (exact) with no PcDesc: the nmethod's method alone */
	uint64_t near;	       /* leaf PCs named from the next PcDesc (hsname__set_leaf_near()) */
	uint64_t bad_return;   /* return addresses with no PcDesc (a call site has one): the
				* nmethod's method alone, and the walk's frame is suspect */
	uint64_t scope_failed; /* scopes that did not decode: the nmethod's method alone */
};

/* One source line of a frame: strings owned by the hsname (see below). */
struct hs_line {
	const char *klass;  /* "java.util.HashMap", a hidden class "Foo$$Lambda/0x..." */
	const char *method; /* "get", "<init>" */
	const char *file;   /* the class's source file, "HashMap.java"; "" unknown */
	int line;	    /* 1-based; 0 unknown */
};

/* A named frame: @n lines, lines[0] the innermost (an inlined callee, or the method itself),
 * lines[n - 1] the method the frame belongs to. */
struct hs_frame_name {
	int n;
	const struct hs_line *lines;
};

/* Reads @len bytes at @addr of process @pid: 0 or -errno (procmaps__read_mem()'s contract). */
typedef int (*hsname_read_fn)(int pid, uint64_t addr, void *buf, size_t len);

struct hsname;

/*
 * A namer of process @pid's Java frames, with every offset it needs resolved once from @vm
 * (not kept). NULL + *@err (-ENOENT: a field or type this JVM does not export, named in
 * *@missing as "Type::field" or "Type", a string literal; -ENOMEM). @missing may be NULL.
 */
struct hsname *hsname__new(pid_t pid, const struct hsvm *vm, const char **missing, int *err);
/* NULL is a no-op. */
void hsname__free(struct hsname *n);

/* Memory is read with @read instead of procmaps__read_mem() (tests). */
void hsname__set_reader(struct hsname *n, hsname_read_fn read);

/*
 * Off by default. On: a leaf PC with no PcDesc of its own takes the scopes of the next PcDesc
 * after it, nmethod::pc_desc_near(pc + 1), which AsyncGetCallTrace and JFR use for a leaf
 * (prims/forte.cpp, is_decipherable_compiled_frame()). Exact under -XX:+DebugNonSafepoints;
 * without it the next PcDesc is the next call or safepoint poll, usually in the same inlined
 * method (a hot loop's back-edge poll) but not always: an approximation, counted in "near".
 * Without it, a hot loop C2 inlined is named as the outer method alone (no inlined chain).
 */
void hsname__set_leaf_near(struct hsname *n, bool on);

/*
 * An interpreted frame: Method* @method, the low 32 bits of its _constMethod at the sample
 * @const_method_lo32, the bytecode pointer's offset from that ConstMethod @bcp_offset (word0 and
 * word1 of bpf/hotspot.h's record). 0 and *@out (one line), or -(1 + enum hsname_error).
 * *@out and its strings are valid until the next naming call on @n, hsname__set_leaf_near()
 * or hsname__free() (a full cache starts over): copy what is kept.
 */
int hsname__interpreted(struct hsname *n, uint64_t method, uint32_t const_method_lo32,
			uint32_t bcp_offset, struct hs_frame_name *out);

/*
 * A compiled frame: the nmethod's CodeBlob address @nmethod, its _compile_id and the low 32
 * bits of its _method at the sample, @pc the frame's PC as the walk saw it, @exact: @pc is the
 * sampled instruction (the leaf) rather than a return address. Both use the PcDesc at @pc
 * exactly; without one (most leaf PCs: C1/C2 record PcDescs at calls and safepoint polls
 * only) the frame is the nmethod's method alone, line 0. 0 and *@out (the inlined methods at
 * @pc innermost first, then the nmethod's method), or -(1 + enum hsname_error). Lifetime of
 * *@out as above.
 */
int hsname__compiled(struct hsname *n, uint64_t nmethod, uint32_t compile_id, uint32_t method_lo32,
		     uint64_t pc, bool exact, struct hs_frame_name *out);

void hsname__stats(const struct hsname *n, struct hsname_stats *out);

#endif /* SPANPROF_RUNTIME_JVM_HSNAME_H */
