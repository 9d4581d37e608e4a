/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tlsctx: where a TLS variable (OTEP 4947's otel_thread_ctx_v1) lives in each thread of a process,
 * x86-64 and glibc only. Two steps:
 *  1. tlsctx__classify(): from one ELF file, how its code reaches the variable (the relocation
 *     the loader fills, or the local-exec offset the linker wrote into the code);
 *  2. tlsctx__resolve(): from the live process, the loader's answer in that relocation's GOT
 *     slot, turned into a struct tlsctx_loc that a BPF program can follow from a thread's
 *     thread pointer (fsbase) alone.
 *
 * Sources: System V ABI x86-64 psABI and Drepper's "ELF Handling For Thread-Local Storage"
 * (variant II: the static TLS blocks sit below the thread pointer; R_X86_64_TPOFF64,
 * R_X86_64_DTPMOD64/DTPOFF64, R_X86_64_TLSDESC); glibc's data structures (tcbhead_t.dtv at
 * fsbase + 8; dtv_t entries of 16 bytes; the TLSDESC dynamic argument {module id, offset, ...}).
 *
 * Not thread safe: the classification cache is shared (tlsctx__resolve_pid() takes a lock around
 * it, the other functions use no global state).
 */
#ifndef SPANPROF_TLSCTX_H
#define SPANPROF_TLSCTX_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TLSCTX_SYMBOL "otel_thread_ctx_v1"

/* How a module's code reaches the variable (psABI TLS access models). */
enum tlsctx_access {
	TLSCTX_ACCESS_NONE = 0,
	TLSCTX_LOCAL_EXEC,   /* executable's own variable: fixed offset from the thread pointer */
	TLSCTX_INITIAL_EXEC, /* GOT slot (R_X86_64_TPOFF64) holds the thread-pointer offset */
	TLSCTX_TLSDESC,	     /* GOT pair (R_X86_64_TLSDESC) holds a descriptor {entry, arg} */
	TLSCTX_GENERAL_DYNAMIC, /* GOT pair (R_X86_64_DTPMOD64 + DTPOFF64) holds {module id, offset}
				 */
	TLSCTX_LOCAL_DYNAMIC,	/* a module-level relocation (symbol index 0): the module's block */
};

/*
 * What tlsctx__classify() learns from the file. Addresses are link-time virtual addresses.
 * Fields past static_tpoff extend the interface the BPF side needs (reloc_type, adjust, defined,
 * the module's extent).
 */
struct tlsctx_elf_info {
	enum tlsctx_access access;
	/* Loader-filled GOT slot: IE the TP offset (8 bytes); GD/LD-via-DTPMOD64 a tls_index
	 * {module id, offset} (16 bytes); TLSDESC and LD-via-TLSDESC the descriptor {entry, arg}.
	 */
	uint64_t got_vaddr;
	uint64_t sym_value;   /* st_value: the variable's offset inside the module's PT_TLS block */
	int64_t static_tpoff; /* LOCAL_EXEC only: address = thread pointer + static_tpoff */
	uint32_t reloc_type;  /* R_X86_64_TPOFF64, _TLSDESC or _DTPMOD64 (0 for LOCAL_EXEC) */
	/* Added to the location the relocation resolves to, to land on the variable: a relocation
	 * naming the symbol resolves to symbol + addend (adjust = -addend); a module-level one
	 * resolves to the module's block + addend (adjust = sym_value - addend). */
	int64_t adjust;
	bool defined; /* this module defines the variable (false: only refers to another's) */
	/* [vaddr_lo, vaddr_hi): what the PT_LOAD segments cover (an unresolved lazy TLSDESC
	 * argument points in there). */
	uint64_t vaddr_lo, vaddr_hi;
};

/*
 * Classifies how the module @elf (x86-64 ELF, ET_EXEC or ET_DYN) reaches @symbol, in this order:
 *  - a dynamic relocation naming the symbol (.rela.dyn / .rela.plt): R_X86_64_TPOFF64 (IE), then
 *    R_X86_64_TLSDESC, then R_X86_64_DTPMOD64 (GD); this also covers a module that only refers to
 *    a variable another module defines (@out->defined false);
 *  - when the module defines the symbol: a module-level relocation (symbol index 0) of the same
 *    types (local-dynamic, hidden variables);
 *  - when the module is an executable (ET_EXEC, or ET_DYN with DF_1_PIE or PT_INTERP) that
 *    defines it: local-exec, static_tpoff = st_value - off, with glibc's placement of the
 *    executable's block (first module, variant II):
 *    off = roundup(memsz - firstbyte, align) + firstbyte, firstbyte = -p_vaddr & (align - 1).
 * The symbol is looked up in .dynsym, then (if @allow_symtab) in .symtab; a defined symbol must
 * be STT_TLS. @out is zeroed first and filled on success. Reads nothing but @elf.
 * Returns 0, -ENOENT (no such symbol, or an undefined one that no relocation reaches), -ENOTSUP
 * (not x86-64 ELF64, not a TLS symbol, or defined with no way in: a library whose code never
 * accesses it), -EINVAL (corrupt or truncated ELF: never crashes).
 */
int tlsctx__classify(Elf *elf, const char *symbol, bool allow_symtab, struct tlsctx_elf_info *out);

/*
 * glibc's offset of the executable's TLS block below the thread pointer (TLS_TCB_AT_TP,
 * _dl_determine_tlsoffset for the first module): the @memsz bytes of PT_TLS at @p_vaddr with
 * alignment @align (0 or a power of two) start at thread pointer - returned value.
 */
uint64_t tlsctx__exe_block_offset(uint64_t p_vaddr, uint64_t memsz, uint64_t align);

enum tlsctx_kind { TLSCTX_KIND_NONE = 0, TLSCTX_KIND_STATIC = 1, TLSCTX_KIND_DTV = 2 };

/*
 * Per-process result handed to BPF (fixed 24 bytes, no pointers).
 * STATIC: address = fsbase + tpoff.
 * DTV (glibc): dtv = *(u64 *)(fsbase + 8) (tcbhead_t.dtv); entries are 16 bytes
 * {void *val; void *to_free}; the u64 at dtv - 16 (dtv[-1].counter) is the number of slots;
 * slot module_id (1-based, <= that number) holds in val the module's TLS block for this thread, or
 * (void *)-1 / 0 when the thread has not allocated it yet (then: no address);
 * address = val + offset.
 */
struct tlsctx_loc {
	uint32_t kind; /* enum tlsctx_kind */
	uint32_t module_id;
	int64_t tpoff;
	uint64_t offset;
};
_Static_assert(sizeof(struct tlsctx_loc) == 24, "tlsctx_loc is shared with BPF");

/*
 * Computes the loc for one module mapped in @pid at @load_bias (runtime address = link-time
 * vaddr + @load_bias, glibc's l_addr), reading the loader-filled GOT slot of @info from the live
 * process (process_vm_readv, else /proc/PID/mem):
 *  LOCAL_EXEC: tpoff = static_tpoff. IE: tpoff = slot + adjust.
 *  GD: module_id = slot[0], offset = slot[1] + adjust. LD via DTPMOD64: module_id = slot[0],
 *  offset = sym_value.
 *  TLSDESC: arg = slot[1]; arg >= 0xffff800000000000 is a static TP offset (STATIC,
 *  tpoff = (int64)arg + adjust); a user pointer is glibc's dynamic argument {u64 module_id;
 *  u64 offset; u64 generation} (read it: DTV, offset + adjust); an arg inside the module's own
 *  mapping is a lazy descriptor not resolved yet.
 * Returns 0, -EAGAIN (lazy TLSDESC not resolved yet, or a GOT the loader has not filled),
 * -ENOENT (resolved to an undefined weak symbol), -ESRCH (process gone), -EFAULT (unreadable),
 * -EINVAL (bad @info).
 */
int tlsctx__resolve(pid_t pid, uint64_t load_bias, const struct tlsctx_elf_info *info,
		    struct tlsctx_loc *out);

/*
 * Whole-process convenience: reads /proc/@pid/maps, classifies the executable first, then every
 * other mapped ELF file in address order (opened through /proc/PID/map_files/START-END, else
 * /proc/PID/root + path: containers and deleted files), takes the load bias from the mapping
 * and its PT_LOAD segment, and resolves the first module that defines @symbol. When the defining
 * module's own code never reaches the variable, a module that refers to it through a relocation
 * (e.g. an initial-exec user) answers instead. Classifications are cached by file identity
 * (st_dev, st_ino, size, mtime; at most 512 files, oldest dropped first).
 * @path_out (may be NULL) receives the path, as /proc/PID/maps names it, of the module whose
 * relocation or code answered (truncated to @path_len).
 * Returns 0, -ENOENT (no module defines it), -ENOTSUP (a module defines it but nothing reaches
 * it through a relocation, see tlsctx__classify()), -EACCES/-EPERM (not found, and some mapped
 * file could not be opened), -ESRCH, or the errors of tlsctx__resolve().
 */
int tlsctx__resolve_pid(pid_t pid, const char *symbol, bool allow_symtab, struct tlsctx_loc *out,
			char *path_out, size_t path_len);

/*
 * User-space twin of the BPF walk, for tests and diagnostics: the address of the variable for
 * the thread of @pid whose thread pointer is @fsbase, reading the DTV from @pid's memory.
 * Returns 0, -ENOENT (this thread's slot is not allocated yet, or beyond its DTV), -EINVAL
 * (kind NONE or unknown), -EFAULT, -ESRCH.
 */
int tlsctx__address(pid_t pid, const struct tlsctx_loc *loc, uint64_t fsbase, uint64_t *addr);

/* Empties the classification cache (tests, shutdown). */
void tlsctx__cache_clear(void);

#endif /* SPANPROF_TLSCTX_H */
