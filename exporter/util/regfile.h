/* SPDX-License-Identifier: Apache-2.0 */
/*
 * regfile: opening a file a profiled program controls (a mapped object, a debug link, a perf
 * map, a jitdump) so that no such file can block the agent.
 *
 * - Only a regular file is opened: the path is first opened with O_PATH (which opens nothing),
 *   its type checked on that descriptor, and only a regular file opened for reading, through
 *   /proc/self/fd/N (the very inode checked). A FIFO (whose open(2) blocks until a writer comes)
 *   or a device (whose open has effects) is refused unopened.
 * - A file on a file system whose server can stop answering (FUSE, network file systems: the
 *   list below) is never read, mapped or even opened for reading by an agent thread: a helper
 *   process (_Fork(2), so it shares nothing the agent could wait on) copies it, up to
 *   REGFILE_SLOW_MAX_BYTES, into an anonymous memory file (memfd_create(2)), and the caller gets
 *   that copy. The deadline runs from the copy's last progress (a slow server that answers is
 *   waited for, up to 16 deadlines in all). A helper whose copy made no progress within the
 *   deadline is given up (killed; one stuck
 *   in the file system's uninterruptible wait is left behind, holding none of the agent's
 *   descriptors, so it can't keep the agent's run, pipes or BPF programs alive) and the file
 *   system's device is not tried again for REGFILE_RETRY_NS. The last few copies (up to 32 MiB,
 *   for 60 s) answer the next opener of the same file (device, inode, size, mtime). Files on
 *   local file systems take the plain path (one fstatfs(2) more).
 *
 * Thread safe. Counters since the agent started: regfile__stats().
 */
#ifndef SPANPROF_REGFILE_H
#define SPANPROF_REGFILE_H

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

/* What is not a regular file (nothing was opened for reading). */
#define UTIL_ENOTREG ENOEXEC

/* Default deadline of one copy from a file system that can stall, in milliseconds. */
#define REGFILE_DEADLINE_MS 2000u
/* Largest file copied from a file system that can stall (bytes); larger ones are refused. */
#define REGFILE_SLOW_MAX_BYTES (256ull << 20)
/* How long a device whose file missed its deadline is left alone (nanoseconds). */
#define REGFILE_RETRY_NS (60ull * 1000000000ull)

/*
 * Opens @path read-only (O_CLOEXEC) only if it is a regular file, and fills @st with the
 * fstat(2) of the file @path names (its identity: device, inode, size, mtime, also when the
 * descriptor returned is a copy). On a file system that can stall, the descriptor is that of a
 * sealed-size memfd holding the file's bytes, read within the deadline (see above).
 * Returns the descriptor (the caller closes it), -UTIL_ENOTREG for anything but a regular file,
 * -ETIMEDOUT when the file's file system did not answer within the deadline or failed to within
 * REGFILE_RETRY_NS, -EFBIG for a file past REGFILE_SLOW_MAX_BYTES on such a file system, or
 * another negative errno.
 */
int regfile__open(const char *path, struct stat *st);

/*
 * The same for a descriptor @pfd the caller opened with O_PATH and checked itself (regular
 * file, owner...), @st its fstat(2). Returns a new descriptor open for reading (the caller
 * closes both), or a negative errno as regfile__open(). Says nothing: a file given up is the
 * caller's to report (regfile__open() says it on stderr, with the path).
 */
int regfile__open_checked(int pfd, const struct stat *st);

/* Sets the deadline of a copy from a file system that can stall, in milliseconds (0: default). */
void regfile__set_deadline_ms(unsigned int ms);

/* Counters since the agent started (all callers). */
struct regfile_stats {
	uint64_t slow_read; /* files on a file system that can stall, copied within the deadline */
	uint64_t reused;    /* ... opens answered from a copy made for an earlier opener */
	uint64_t stalled;   /* ... given up: the deadline passed (helper killed) */
	uint64_t skipped;   /* ... refused unread: their device stalled within REGFILE_RETRY_NS */
	uint64_t too_big;   /* ... refused: larger than REGFILE_SLOW_MAX_BYTES */
	uint64_t helpers_left; /* helpers given up and not yet gone (stuck in the file system) */
};

void regfile__stats(struct regfile_stats *out);

/*
 * 1 when statfs(2) magic @f_type is that of a file system whose server can stop answering, so
 * that a read(2) or a page fault on its file may never return: FUSE (virtiofs too), NFS, SMB
 * and CIFS (the three magics), Ceph, AFS (kAFS and OpenAFS), Coda and OCFS2. Not 9p: its
 * transport is in practice virtio to the hypervisor (QEMU and virtme guests' root, Kata), where a
 * copy of every file the agent reads would be the whole cost and a stall the host's. The numbers
 * are the kernel's, from its include/uapi/linux/magic.h (the *_MAGIC names used in regfile.c).
 */
int regfile__slow_fs(int64_t f_type);

#endif
