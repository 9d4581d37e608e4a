/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jitproc: the names of one process's JIT code, from what the runtime writes about it: its
 * perf map (/tmp/perf-NSPID.map, NSPID the PID as the process sees it, reached through
 * /proc/PID/root: runtime/jit) and its jitdump files (jit-N.dump, found where the runtime
 * maps them: runtime/jit). Both are opened as runtime/jit/jitfile.h says (the process's
 * root, no symlink, regular file, its owner or root, bounded) and re-read as they grow.
 *
 * The resolve step calls jitproc__lookup() for PCs in anonymous executable memory. A name is
 * given only from a file read at most JITPROC_REFRESH_NS before the lookup; the files are
 * re-read (what was appended) when older.
 */
#ifndef SPANPROF_RUNTIME_JIT_JITPROC_H
#define SPANPROF_RUNTIME_JIT_JITPROC_H

#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "runtime/jit/jitdump.h"
#include "runtime/jit/jitfile.h"
#include "runtime/jit/jittab.h"

/* The files are re-read when a lookup finds them read longer ago than this. */
#define JITPROC_REFRESH_NS (100 * 1000 * 1000ull)
/* Caps per file: ranges, bytes of names and line rows, bytes of file read. */
#define JITPROC_MAX_ENTRIES (1u << 20)
#define JITPROC_MAX_BYTES (64ull << 20)
#define JITPROC_MAX_FILE_BYTES (256ull << 20)
/* jitdump files followed per process. */
#define JITPROC_MAX_DUMPS 4
/* With JITPROC_JAVA_PERFMAP, a JVM is asked for a fresh perf map this often. */
#define JITPROC_JAVA_INTERVAL_NS (10 * 1000 * 1000 * 1000ull)
/* ... or after this long when a JIT PC was not named since (code compiled after the map). */
#define JITPROC_JAVA_MISS_INTERVAL_NS (500 * 1000 * 1000ull)
/* ... and each request waits at most this long (attach listener start, map written). */
#define JITPROC_JAVA_TIMEOUT_MS 3000

/* jitproc__new() flag: ask HotSpot JVMs for their perf map (runtime/jit/jvmattach.h). */
#define JITPROC_JAVA_PERFMAP 1u

/* Counters of every process's JIT naming; the caller owns one and passes it to each jitproc. */
struct jitproc_stats {
	uint64_t frames_named;	 /* JIT PCs named */
	uint64_t frames_unnamed; /* JIT PCs no perf map or jitdump names */
	uint64_t frames_runtime; /* ... of processes whose runtime's own reader names them instead
				  * (jitproc__runtime_names()): not in frames_unnamed, no hint */
	uint64_t frames_full;	 /* ... because a map reached its cap */
	uint64_t frames_stale;	 /* ... because code announced since the sample replaced the
				  * code that was at its address (the name is not proven) */
	uint64_t perfmaps;	 /* processes whose perf map was read */
	uint64_t jitdumps;	 /* jitdump files read */
	uint64_t lines_bad;	 /* perf-map lines skipped */
	uint64_t records_bad;	 /* jitdump records skipped, files corrupt */
	uint64_t
	    dumps_corrupt; /* jitdump files no longer read: corrupt (each time one became so) */
	uint64_t dumps_bad_header; /* ... of them, a header this reader cannot follow (magic,
				    * version, header size): nothing of the file read */
	uint64_t replaced;	   /* ranges replaced by newer code at their address */
	uint64_t hints;		   /* processes told which flag would name their JIT frames */
	uint64_t java_requests;	   /* perf maps a JVM wrote on request (--java-perfmap) */
	uint64_t java_failed; /* ... requests that failed (no attach socket, timeout, refused) */
	struct jitfile_stats open; /* perf map and jitdump opens by outcome */
	/* jitdump JIT_CODE_UNWINDING_INFO records (struct jitdump_stats unwind_*): */
	uint64_t unwind_records; /* read */
	uint64_t unwind_used;	 /* attached to their code load */
	uint64_t unwind_bad;	 /* skipped: sizes that do not fit the record */
	uint64_t unwind_empty;	 /* skipped: no .eh_frame in it (the code has no CFI) */
	uint64_t unwind_unused;	 /* skipped: no code load followed */
	uint64_t unwind_full;	 /* skipped: over the cap of unwinding bytes per file */
	uint64_t unwind_dropped; /* dropped since: their code was replaced */
	uint64_t cfi_updates;	 /* copies of a process's JIT CFI handed on (jitproc_cfi_hook) */
	/* The first process told (the end-of-run report repeats it): 0 pid when none. */
	struct {
		uint32_t pid;
		char comm[32];
		const char *what; /* static: what would name its JIT frames */
	} first_hint;
};

struct jitproc;

/*
 * A copy of one process's JIT call frame information (the code loads of its jitdump files that
 * had an unwinding record, runtime/jit/jitdump.h), for the CFI unwinder. Owned by whoever the
 * hook gave it to; jitproc_cfi__free() releases it.
 */
struct jitproc_cfi {
	size_t n;
	struct jitdump_unwind *v; /* sorted by code_addr; each eh_frame owned by the copy */
	uint64_t bytes;		  /* of .eh_frame in all */
};

/* NULL is a no-op. */
void jitproc_cfi__free(struct jitproc_cfi *c);

/*
 * Called (on the thread doing lookups) when a re-read changed process @pid's JIT CFI, with a
 * copy the callee owns (n == 0: none any more).
 */
typedef void (*jitproc_cfi_hook)(void *ctx, uint32_t pid, struct jitproc_cfi *cfi);
/* Sets (NULL clears) the hook of @j. */
void jitproc__set_cfi_hook(struct jitproc *j, jitproc_cfi_hook fn, void *ctx);

/*
 * State for process @pid (host PID) whose executable is @exe (NULL: unknown; used to say which
 * runtime the frames are: frame kind, and the hint printed when nothing names them). @flags:
 * JITPROC_JAVA_PERFMAP or 0. @stats is borrowed and must outlive the jitproc. NULL + errno.
 *
 * With JITPROC_JAVA_PERFMAP, a HotSpot JVM (executable "java") is asked to write its perf map
 * at its first JIT lookup and every JITPROC_JAVA_INTERVAL_NS after, or
 * JITPROC_JAVA_MISS_INTERVAL_NS after when a JIT PC went unnamed meanwhile (the map is a snapshot
 * of its code cache: code compiled since is named from the next one). The request blocks the caller
 * for at most JITPROC_JAVA_TIMEOUT_MS.
 */
struct jitproc *jitproc__new(uint32_t pid, const char *exe, unsigned int flags,
			     struct jitproc_stats *stats);
/* NULL is a no-op. */
void jitproc__free(struct jitproc *j);

/*
 * A mapping of the process was read with path @path (as /proc/PID/maps shows it): when it is a
 * jitdump file (jit-N.dump), follow it. 1 followed (new), 0 not one or known, -ENOSPC (too many).
 */
int jitproc__saw_mapping(struct jitproc *j, const char *path);

/*
 * The JIT code holding @pc in a sample taken at @at_boot_ns (CLOCK_BOOTTIME; UINT64_MAX: now):
 * 0 and *@out (valid until the next call), or -ENOENT (nothing names it; counted, and once per
 * process a hint goes to @log, NULL: none), -E2BIG (a file reached its cap), -ESTALE (the code
 * named there was announced, replacing other code, after the sample: which of the two ran is
 * not known; counted as frames_stale). out->id differs between any two ranges ever named
 * (jittab.h): a caller caching names by address keys them with it too, since the same address
 * may later hold other code.
 */
int jitproc__lookup(struct jitproc *j, uint64_t pc, uint64_t at_boot_ns, struct jittab_sym *out,
		    FILE *log);

/*
 * The runtime's own structures name this process's JIT frames (V8: runtime/v8/): a lookup that
 * finds nothing is counted in frames_runtime, and no hint says which flag would help.
 */
void jitproc__runtime_names(struct jitproc *j);

/* The frame kind of this process's JIT code: FRAME_V8JS (node), FRAME_JVM (java), FRAME_DOTNET,
 * else FRAME_JIT. */
enum frame_kind jitproc__kind(const struct jitproc *j);

#endif /* SPANPROF_RUNTIME_JIT_JITPROC_H */
