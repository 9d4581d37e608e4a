/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jitfile: opens a file a profiled process wrote about its own JIT code (perf map, jitdump)
 * without letting that process steer the agent, which runs as root, to any other file.
 *
 * The rules are perf's (tools/perf/util/symbol.c, dso__load_perf_map's owner check) made
 * stricter: the path is resolved inside the process's own root (/proc/PID/root) with no
 * symbolic link anywhere in it (openat2(2) RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS; without openat2, one O_NOFOLLOW openat per component, ".." refused);
 * the file is first opened O_PATH (opening a FIFO or a device has effects), must be a regular
 * file owned by the process's user or by root and no larger than a bound; only then is it
 * re-opened for reading. Every refusal has a reason the caller counts.
 */
#ifndef SPANPROF_RUNTIME_JIT_JITFILE_H
#define SPANPROF_RUNTIME_JIT_JITFILE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Why a file was not opened (JITFILE_OK: it was). One counter per reason in struct jitfile_stats.
 */
enum jitfile_reason {
	JITFILE_OK = 0,
	JITFILE_MISSING,     /* no such file (the runtime writes none): not a refusal */
	JITFILE_SYMLINK,     /* a symbolic link in the path, or ".." */
	JITFILE_NOT_REGULAR, /* directory, FIFO, socket, device */
	JITFILE_OWNER,	     /* owned by neither the process's user nor root */
	JITFILE_TOO_BIG,     /* larger than the bound */
	JITFILE_STALLED,     /* its file system did not answer in time (util/regfile.h) */
	JITFILE_ERROR,	     /* any other error (process gone, EACCES, EMFILE) */
	JITFILE__NREASONS,
};

/* Counters by reason, indexed by enum jitfile_reason. */
struct jitfile_stats {
	uint64_t by_reason[JITFILE__NREASONS];
};

/* "symlink", "not a regular file", ... for messages and the summary. */
const char *jitfile__reason_name(enum jitfile_reason r);

/*
 * Opens @path (absolute, as the process sees it, e.g. "/tmp/perf-42.map") for reading inside
 * the directory @root (the process's root: "/proc/PID/root"; tests pass a directory of their
 * own). The file must be a regular file owned by @uid or @uid2 (the process's effective and
 * file-system uid; pass the same twice if only one is known) or by root, of at most @max_bytes.
 * Returns a file descriptor (O_RDONLY | O_CLOEXEC) the caller closes, with *@st its fstat(2);
 * or -1 with *@why the reason (never JITFILE_OK) and errno set. @stats (may be NULL) counts
 * the outcome.
 */
int jitfile__open(const char *root, const char *path, uid_t uid, uid_t uid2, uint64_t max_bytes,
		  struct stat *st, enum jitfile_reason *why, struct jitfile_stats *stats);

/*
 * Identity of process @pid read from /proc/PID/status (proc(5)): *@nspid the PID as the
 * process sees it in its own (innermost) PID namespace (last field of "NSpid:"; the PID itself
 * on kernels without that line), *@euid and *@fsuid from "Uid:". 0 or -errno (-ENOENT: gone,
 * -EINVAL: a line missing or malformed).
 */
int jitfile__proc_ids(int pid, uint32_t *nspid, uid_t *euid, uid_t *fsuid);
/* The same, parsing the text of a status file (@len bytes); for tests and fuzzing. */
int jitfile__parse_status(const char *text, size_t len, uint32_t *nspid, uid_t *euid, uid_t *fsuid);

#endif /* SPANPROF_RUNTIME_JIT_JITFILE_H */
