/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fileid: the file identities a sample carries (struct sp_vmas, bpf/sampler.h, filled by
 * bpf/fileid.bpf.h for processes the agent had not loaded yet), matched to the symbol cache.
 *
 * A sample's table lists the distinct mappings its user PCs fall in: [start, end), the file
 * offset of start, and the mapped file's identity as the kernel has it (device in the
 * kernel's encoding, inode, size, modification time). With it, a PC of a process that exited
 * before its /proc/PID/maps could be read is named like one read from /proc: file offset
 * pc - start + offset, in the object the symbol cache holds for that identity (opened for
 * another process that mapped the same file: the same binary run many times, libc).
 */
#ifndef SPANPROF_FILEID_H
#define SPANPROF_FILEID_H

#include <stdint.h>

#include "sampler.h"
#include "symbols/symbolize.h"

/*
 * The user-space device number (as stat(2) gives st_dev, makedev(major, minor)) of a kernel
 * dev_t (major << 20 | minor, 12 + 20 bits).
 */
uint64_t fileid__dev(uint32_t kdev);

/*
 * The entry of @v holding @pc (start <= pc < end), or NULL. Only the first min(v->n,
 * SP_MAX_VMAS) entries are read; @v NULL or v->n 0: NULL.
 */
const struct sp_vma *fileid__find(const struct sp_vmas *v, uint64_t pc);

/*
 * The object of @c whose file has identity @id (symcache__find_identity()), or NULL: no file
 * (ino 0), or no file of that identity was ever opened. Opens nothing. Owned by @c.
 */
struct elf_object *fileid__object(struct symcache *c, const struct sp_file_id *id);

/*
 * Opens @path in @c when the file there has identity @id (stat(2) first: nothing is opened for
 * another file). 1 opened, 0 @c knew it already, -EINVAL @path not absolute, -ESTALE @path
 * holds another file, or the -errno of stat/open.
 */
int fileid__open_path(struct symcache *c, const struct sp_file_id *id, const char *path);

#endif
