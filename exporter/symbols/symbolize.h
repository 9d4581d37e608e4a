/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize: names the PCs of native code on the host, with libelf and libdw.
 *
 * A symcache holds one elf_object per distinct file, keyed by GNU build ID
 * (NT_GNU_BUILD_ID note), or by (device, inode, size, mtime) for files without
 * one, so every process that maps a library shares its symbols. Names come from
 * DWARF (inline chain, file:line) when the file or its separate debug file
 * (.gnu_debuglink, /usr/lib/debug/.build-id/xx/rest.debug) has it, else, for Go code, from
 * the binary's own PC/line table (.gopclntab: names, file:line and inlined calls of a binary
 * built with -ldflags='-s -w'; exporter/runtime/go/gopclntab.h), else from .symtab (the file's,
 * else the debug file's), else .dynsym together with the MiniDebugInfo .symtab of .gnu_debugdata
 * when there is one. C++ and Rust names are demangled.
 *
 * Addresses given to symcache__lookup() are ELF virtual addresses (the
 * addresses in the file's program headers and symbol tables), not process
 * addresses: elf_object__file_offset_to_vaddr() converts a file offset,
 * which the caller computes from /proc/PID/maps as pc - start + offset.
 */
#ifndef SPANPROF_SYMBOLIZE_H
#define SPANPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symcache;
struct elf_object;
struct dbgfetch; /* exporter/symbols/debuginfod.h */

/*
 * One frame of a lookup result. Strings are owned by the symcache and stay valid
 * until the next symcache__open(), symcache__lookup(), symcache__trim() or
 * symcache__close_idle() call on the same cache (the first two may unload a
 * least-recently-used object to stay under symcache_opts.max_bytes, the last two
 * release idle objects' DWARF) or symcache__free(): copy what must outlive that.
 */
struct sym_frame {
	const char *function;	 /* demangled name, NULL if unknown */
	const char *system_name; /* name as in the symbol table / DWARF linkage name */
	const char *file;	 /* source file, NULL if unknown */
	int line;		 /* 0 if unknown */
	int column;		 /* 0 if unknown */
	int go;			 /* 1: Go code (the file's .gopclntab covers the address) */
};

struct symcache_opts {
	/* Extra root for debug files (tests); NULL: the host's /usr/lib/debug. */
	const char *debug_dir;
	/*
	 * Memory budget of loaded objects, in bytes: symbol arrays, names, CU and
	 * function ranges, the units' line tables (copied out of libdw, 16 bytes a
	 * row), libdw's records of the units lookups found, address caches, and the
	 * pages of mapped DWARF lookups may have touched since symcache__trim()
	 * last dropped them (a quarter of the sections every unit shares, the DIEs
	 * of each unit used in full; inflated DWARF that cannot be mapped counts
	 * whole). Over it, the least recently used objects are unloaded back to
	 * their light part (path, build ID, segments, open descriptor) and
	 * re-loaded, with identical results, on their next lookup. An object whose
	 * DWARF alone (three times its compressed sections, or a quarter of its
	 * plain ones) exceeds the budget is symbolized from its symbol table only
	 * (stats.dwarf_skipped). 0: SYMCACHE_DEFAULT_MAX_BYTES; SIZE_MAX: no limit.
	 */
	size_t max_bytes;
	/*
	 * Bound of the budget's growth, in bytes. The working set may not fit max_bytes (seven
	 * CPython interpreters' DWARF on one host: about 14 MB): objects unloaded for room are then
	 * needed again at once, and each re-load costs more than its memory saves. So at each
	 * symcache__trim(), when SYMCACHE_THRASH_RELOADS or more objects unloaded for room were
	 * loaded again since the previous one (stats.reloads), the budget grows by half (at least
	 * 1 MiB) up to this bound (stats.budget, stats.budget_grown); it never shrinks. 0 or at
	 * most max_bytes: the budget stays max_bytes.
	 */
	size_t max_bytes_bound;
	/*
	 * Descriptors kept open for re-loading (an object whose process exited can
	 * be re-opened only through it). Over it, unloaded objects close theirs
	 * and re-open by path, checking device, inode, size and mtime.
	 * 0: a quarter of RLIMIT_NOFILE, at least 64.
	 */
	unsigned int max_fds;
	/*
	 * Seconds an object may go without an open or a lookup before
	 * symcache__close_idle() (called by symcache__trim()) closes its
	 * descriptors and drops its DWARF: held descriptors, and mappings, of
	 * deleted files pin their disk space. 0: SYMCACHE_DEFAULT_IDLE_S.
	 */
	unsigned int idle_s;
};

#define SYMCACHE_DEFAULT_MAX_BYTES (12u << 20)
/* Re-loads of objects unloaded for room, between two trims, that grow the budget (see above). */
#define SYMCACHE_THRASH_RELOADS 8
/* Idle time before an object's descriptors close: a few export intervals (5 s in the soak). */
#define SYMCACHE_DEFAULT_IDLE_S 30

/* NULL + errno on failure. @opts may be NULL. A symcache is not thread-safe. */
struct symcache *symcache__new(const struct symcache_opts *opts);
/* Frees every object and string; NULL is a no-op. */
void symcache__free(struct symcache *c);

/*
 * Opens @path (any path the agent can open: /proc/PID/map_files/..., or
 * /proc/PID/root/<path> for a container) or returns the cached object with the
 * same identity. @orig_path is the path as the process sees it (for
 * .gnu_debuglink lookups next to it), may be NULL. Returns a pointer owned by
 * the cache, or NULL + errno (ENOENT, EACCES, ENOEXEC for a non-ELF or corrupt
 * file). A failed open is not cached.
 */
struct elf_object *symcache__open(struct symcache *c, const char *path, const char *orig_path);

/* Lower-case hex GNU build ID, or NULL. Owned by the object. */
const char *elf_object__build_id(const struct elf_object *o);
/* Converts a file offset into the ELF vaddr through the PT_LOAD segment holding it. 0 or -ENOENT.
 */
int elf_object__file_offset_to_vaddr(const struct elf_object *o, uint64_t offset, uint64_t *vaddr);

/*
 * Symbolizes @vaddr of @o. Writes at most @max frames to @out, innermost
 * (inlined) first, the physical function last. Returns the number of frames
 * written (0: nothing known about the address) or a negative errno.
 */
int symcache__lookup(struct symcache *c, struct elf_object *o, uint64_t vaddr,
		     struct sym_frame *out, int max);

/*
 * The function that the call instruction ending right before @vaddr of @o calls (@vaddr: a
 * return address, as a file virtual address; x86-64). A direct call, "E8 rel32", names its
 * target: through a PLT entry ([ENDBR64] [BND] "FF 25" JMP *disp32(%rip), as .plt, .plt.sec and
 * .plt.got hold them), the dynamic symbol its GOT slot is relocated against (.rela.plt,
 * .rela.dyn); else the symbol holding the target (its system name). A call through a GOT slot,
 * "FF 15" CALL *disp32(%rip) (-fno-plt, Rust), names the slot's symbol, or, for a slot relocated
 * R_X86_64_RELATIVE, the function of @o it holds. The name is copied into
 * @name (@len bytes), and *@target is the target's address when it is code of @o itself
 * (a direct call, not through a PLT entry; else 0). Returns 1; 0 when no such call ends there (a
 * call through a register or other memory, no call) or nothing names its target; -ENOENT or -EIO
 * when the bytes cannot be read from the file.
 */
int symcache__call_target(struct symcache *c, struct elf_object *o, uint64_t vaddr, char *name,
			  size_t len, uint64_t *target);

/*
 * The start of the function symbol of @o holding @vaddr (a file virtual address) into *@start.
 * 0, or -ENOENT (no symbol holds it). Loads the object if no lookup did yet.
 */
int symcache__function_start(struct symcache *c, struct elf_object *o, uint64_t vaddr,
			     uint64_t *start);

/*
 * Whether the function starting at @func of @o (a symbol's address) may leave itself by a jump,
 * as a tail call does: a JMP or Jcc (rel32, rel8) to the start of another function (not its own
 * ".cold" part) or of a PLT entry, or a JMP through a GOT slot a relocation fills. Byte patterns,
 * not a disassembly: 1 also when a pattern matched by chance, and when the code cannot be read or
 * the function is over 4 KiB; 0 when none of those jumps is there. A jump through a register (a
 * tail call through a function pointer) is not seen.
 */
int symcache__jumps_out(struct symcache *c, struct elf_object *o, uint64_t func);

/* What symcache__frame_pointer() says of an address. */
enum sym_fp {
	SYM_FP_UNPROVEN = 0, /* nothing proves RBP is this function's frame pointer there */
	SYM_FP_KEPT,	     /* the function has set up its frame pointer and not yet left it */
	SYM_FP_ROOT,	     /* _start after XOR %ebp,%ebp: the outermost frame, RBP 0 */
};

/*
 * Whether @o has CFI an unwinder may use (.eh_frame or .debug_frame with bytes); true also when
 * the file cannot be read. Read once per object.
 */
bool symcache__has_cfi(struct elf_object *o);

/*
 * Whether a frame-pointer step at @vaddr of @o (a file virtual address: the sampled PC when
 * @exact, else a return address minus 1) reads this function's own frame. SYM_FP_KEPT when the
 * function symbol holding it begins with [ENDBR64] PUSH %rbp; MOV %rsp,%rbp and @vaddr lies
 * past that MOV; for @exact, also when the instruction at @vaddr is that PUSH or MOV or a RET
 * (the walker reads the return address at RSP there, bpf/unwind_walk.h), but not after a POP
 * %rbp or LEAVE (the epilogue began). SYM_FP_ROOT for "_start" beginning with [ENDBR64] XOR
 * %ebp,%ebp (the x86-64 psABI marks the outermost frame with RBP 0). Else (no symbol,
 * another prologue, bytes unreadable) SYM_FP_UNPROVEN. The code is read from the file.
 */
enum sym_fp symcache__frame_pointer(struct symcache *c, struct elf_object *o, uint64_t vaddr,
				    bool exact);

/*
 * Whether @vaddr of @o is Go code whose function has not set up its frame pointer there
 * (gopclntab__frame_pending(): frameless, or in its prologue/epilogue), so a frame-pointer walk
 * starting at it skipped the function's caller. 1 or 0; 0 too for anything that is not Go
 * code or cannot be read. Loads the object if no lookup did yet.
 */
int symcache__go_frame_pending(struct symcache *c, struct elf_object *o, uint64_t vaddr);

/*
 * The separate debug file in use (found through the build-id tree or
 * .gnu_debuglink, CRC or build ID checked), or NULL when the object carries
 * its own symbols or none was found. Loads the object's symbols and debug
 * info if no lookup did yet. Owned by the object.
 */
const char *elf_object__debug_file(struct elf_object *o);

/*
 * Loads @o's symbols and debug info now (its debug file's compressed DWARF inflated), as its
 * first lookup would: for objects whose first lookups must not wait (a --pid process's,
 * proctab__preload()). Within the cache's byte budget like any load (it may unload others).
 * 0, or -ENOENT when the file cannot be read again.
 */
int elf_object__preload(struct elf_object *o);

/*
 * --- Lookup by file identity (short-lived processes, exporter/process/fileid.h) ---
 * The object already opened (by any process's mapping) whose file has this identity, as
 * stat(2) gives it: @dev in the user-space encoding (makedev()), @ino, @size in bytes, the
 * modification time. Opens nothing, so it works after every process mapping the file is gone.
 * NULL when no open file had that identity (or @mtime_nsec is out of range). The object is
 * owned by the cache.
 */
struct elf_object *symcache__find_identity(struct symcache *c, uint64_t dev, uint64_t ino,
					   uint64_t size, int64_t mtime_sec, uint32_t mtime_nsec);
/*
 * The object already opened whose GNU build ID is @build_id (lower-case hex), or NULL. Opens
 * nothing. Owned by the cache.
 */
struct elf_object *symcache__find_build_id(struct symcache *c, const char *build_id);
/* The path the first process that mapped @o saw (else the path opened). Owned by @o. */
const char *elf_object__orig_path(const struct elf_object *o);
/* --- end of lookup by file identity --- */

/* Counters since symcache__new(), for the agent's self-metrics. */
struct symcache_stats {
	uint64_t objects;     /* distinct objects opened */
	uint64_t open_errors; /* symcache__open() failures */
	uint64_t not_regular; /* paths refused unopened: FIFO, device, socket, dir */
	uint64_t lookups;     /* symcache__lookup() calls */
	uint64_t cache_hits;  /* lookups answered from the per-address cache */
	uint64_t dwarf_hits;  /* resolved through DWARF (file:line known) */
	uint64_t symtab_hits; /* resolved through .symtab/.dynsym only */
	uint64_t plt_hits;    /* PLT stubs named from their GOT slot's relocation (x@plt) */
	uint64_t go_hits;     /* resolved through a Go binary's .gopclntab (no DWARF for it) */
	uint64_t misses;      /* nothing known about the address */
	/* Memory, for self-telemetry: gauges (now) and counters. */
	uint64_t objects_loaded;  /* gauge: objects with symbols/DWARF in memory */
	uint64_t bytes;		  /* gauge: bytes accounted to loaded objects */
	uint64_t bytes_peak;	  /* highest value of bytes */
	uint64_t fds;		  /* gauge: descriptors held */
	uint64_t loads;		  /* object loads, re-loads after eviction included */
	uint64_t evictions;	  /* objects unloaded to stay under the budget */
	uint64_t reloads;	  /* of loads: objects unloaded for room, loaded again */
	uint64_t budget;	  /* gauge: the budget now (max_bytes, grown) */
	uint64_t budget_grown;	  /* times it grew (opts.max_bytes_bound) */
	uint64_t answers_dropped; /* unloaded objects' kept frames freed to stay under it */
	uint64_t load_errors;	  /* loads that failed (file gone or changed) */
	uint64_t dwarf_skipped;	  /* loads that left out DWARF larger than max_bytes */
	/* MiniDebugInfo (.gnu_debugdata, exporter/symbols/minidebuginfo.h). */
	uint64_t minidebuginfo;	       /* objects whose .gnu_debugdata was decoded (per decode) */
	uint64_t minidebuginfo_errors; /* objects whose .gnu_debugdata is corrupt: .dynsym only */
	/* debuginfod (symcache_opts.debuginfod). */
	uint64_t debuginfod_requests; /* objects that asked for their debug file */
	uint64_t debuginfod_files;    /* loads that used a fetched debug file */
	uint64_t debuginfod_rejected; /* fetched files that are not the object's: not used */
	/* Descriptors following the working set (symcache__close_idle()). */
	uint64_t idle_closes;	     /* objects that released descriptors/DWARF after idle_s */
	uint64_t idle_reloads;	     /* of those, loaded ones re-read from the very same file */
	uint64_t idle_reopen_errors; /* loaded ones whose file was gone: answered from memory */
};
void symcache__stats(const struct symcache *c, struct symcache_stats *out);
/*
 * Drops from this process's memory the pages of mapped (uncompressed) DWARF that lookups have
 * touched; later lookups read them again from the page cache, with identical results. The
 * mappings are read-only, so no data is lost. Then closes idle objects' descriptors
 * (symcache__close_idle() at the current time), and grows the budget if the cache thrashed
 * since the last call (symcache_opts.max_bytes_bound). Call now and then (the agent: every
 * 2 s) to keep the resident size to what recent lookups used. NULL is a no-op.
 */
void symcache__trim(struct symcache *c);
/*
 * Closes the descriptors (file, debug file, inflated DWARF) of every object not opened nor
 * looked up during the last symcache_opts.idle_s seconds before @now (CLOCK_MONOTONIC, in
 * ns), and drops loaded ones' DWARF (its mapping keeps the file too). Their symbols, the
 * names already read and the frames already answered stay in memory (frames keep file:line
 * and inline chains). The next lookup of an address not answered yet re-opens the very same
 * file (device, inode, size, mtime; by the opened path, then the original one) and re-loads
 * the object, with the results of a fresh load; if the file is gone or changed, it answers
 * from what stayed in memory, the symbol table only (stats.idle_reopen_errors). A
 * symcache__open() of the same file hands it its descriptor back. symcache__trim() calls it
 * with the current time; tests pass their own @now. Cost: one pass over the objects. NULL is a
 * no-op.
 */
void symcache__close_idle(struct symcache *c, uint64_t now);

/*
 * Fetches debug files by build ID through @f (exporter/symbols/debuginfod.h; borrowed, must
 * outlive the cache or be detached with NULL) from now on: an object with no DWARF of its own
 * nor a local debug file asks for its build ID when it loads (no waiting: the request is
 * queued), and the answer is picked up by symcache__pick_up_debug_files(). Objects loaded
 * before ask at their next load.
 */
void symcache__set_debuginfod(struct symcache *c, struct dbgfetch *f);

/*
 * Takes in the debug files debuginfod delivered since the last call: each object that was
 * waiting for one is unloaded, so that its next lookup loads it with the debug file (DWARF
 * names, file:line). Frames answered before keep what they said: a caller that cached them
 * (a profile's locations) names them anew only where it looks them up again. Returns the
 * number of objects that received a debug file. symcache__trim() calls it. Invalidates the
 * strings of earlier lookups like symcache__trim(). NULL, or no debuginfod: 0.
 */
int symcache__pick_up_debug_files(struct symcache *c);

/* Kernel symbols from /proc/kallsyms (or a file in that format for tests). */
struct ksyms;
/*
 * NULL + errno. All addresses zero (kptr_restrict) gives errno EPERM; an empty
 * file ENODATA; a malformed line EINVAL. Keeps text symbols (t/T/w/W) only.
 */
struct ksyms *ksyms__load(const char *path);
void ksyms__free(struct ksyms *k);
/* Name of the symbol containing @addr (with its module in the name as "sym [mod]" not added), or
 * NULL. */
const char *ksyms__lookup(const struct ksyms *k, uint64_t addr, uint64_t *offset);
/* Same as ksyms__lookup(); also sets *@module to the module name, or NULL for the core kernel. */
const char *ksyms__lookup_module(const struct ksyms *k, uint64_t addr, uint64_t *offset,
				 const char **module);
/* Number of symbols kept (text symbols, one per address). */
size_t ksyms__count(const struct ksyms *k);

#endif /* SPANPROF_SYMBOLIZE_H */
