/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procmaps: parses /proc/PID/maps (proc(5)) into a sorted array of mappings.
 */
#ifndef SPANPROF_PROCMAPS_H
#define SPANPROF_PROCMAPS_H

#include <stdint.h>
#include <stdio.h>

struct procmap {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t prot; /* PROT_READ | PROT_WRITE | PROT_EXEC */
	int deleted;   /* path ended in " (deleted)" (suffix removed from path) */
	char *path;    /* "" for anonymous; "[vdso]", "[stack]", ... kept as is */
};

struct procmaps {
	struct procmap *maps; /* sorted by start, non-overlapping */
	size_t n;
};

/* Parses a maps file from @f. 0 or -errno (-EINVAL on a malformed line: all lines before it kept).
 */
int procmaps__parse(FILE *f, struct procmaps *out);
/* Reads /proc/@pid/maps. -ENOENT/-ESRCH when the process is gone. */
int procmaps__read(int pid, struct procmaps *out);

/* procmaps__read_filtered() flags. */
#define PROCMAPS_EXEC_ONLY 1u /* keep executable mappings only (the ones PCs fall in) */
/*
 * procmaps__read() keeping only the mappings @flags select: fewer paths copied
 * and searched. 0 or -errno as procmaps__read(); with a filter,
 * procmaps__find() answers NULL for addresses of the mappings left out.
 */
int procmaps__read_filtered(int pid, unsigned int flags, struct procmaps *out);
/* Mapping containing @addr, or NULL (binary search). */
const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr);

/* The first mapping of @m of the file (@dev_major:@dev_minor, inode @ino), or NULL. */
const struct procmap *procmaps__find_file(const struct procmaps *m, uint64_t ino,
					  uint32_t dev_major, uint32_t dev_minor);

/*
 * Reads @len bytes at @addr of process @pid: process_vm_readv, else pread on /proc/PID/mem
 * (seccomp, no CONFIG_CROSS_MEMORY_ATTACH). 0, -EFAULT (not all mapped), -ESRCH (gone),
 * -EPERM/-EACCES (not allowed).
 */
int procmaps__read_mem(int pid, uint64_t addr, void *buf, size_t len);
/*
 * Opens the file mapping @m of process @pid maps (O_RDONLY | O_CLOEXEC), only if it is a
 * regular file (regfile__open(): a mapped device or a path swapped for a FIFO is never
 * opened for reading): /proc/PID/map_files/START-END, which reaches deleted files and other
 * mount namespaces, else /proc/PID/root + @m->path. A file descriptor the caller closes, or -1
 * with errno set: UTIL_ENOTREG (ENOEXEC) for anything but a regular file (counted,
 * procmaps__not_regular()), else by the second open (ENOENT/ESRCH when the process is gone).
 * @path (@size bytes, NULL: not wanted) receives the path opened, or the last one tried.
 */
int procmaps__open_file(int pid, const struct procmap *m, char *path, size_t size);
/*
 * 1 when @path (as /proc/PID/maps shows it, " (deleted)" removed) is memory no ELF file's code
 * was loaded from, where a JIT may run code: anonymous (empty path or "[anon:NAME]", prctl
 * PR_SET_VMA_ANON_NAME), shared anonymous memory ("/dev/zero": the kernel's name of a
 * MAP_SHARED | MAP_ANONYMOUS mapping, where PHP's opcache keeps its JIT buffer) or a memfd
 * ("/memfd:NAME", memfd_create(2)).
 */
int procmaps__anon_code(const char *path);
/*
 * 1 when the last component of @path is "jit-N.dump" (N decimal, at most UINT32_MAX), with
 * *@pid = N: the name perf's jitdump format gives its file (tools/perf/Documentation/
 * jitdump-specification.txt), which the runtime maps executable so that perf sees it. Data,
 * not code: no ELF file to open.
 */
int procmaps__jitdump_path(const char *path, uint32_t *pid);
/* Paths procmaps__open_file() refused as not regular files, since the agent started. */
uint64_t procmaps__not_regular(void);
/* Frees the array and paths; leaves @m empty. */
void procmaps__clear(struct procmaps *m);

#endif /* SPANPROF_PROCMAPS_H */
