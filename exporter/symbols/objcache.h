/* SPDX-License-Identifier: Apache-2.0 */
/*
 * objcache: INTERNAL to exporter/symbols/. Open and cache: one elf_object per file, found again
 * by its identity (device, inode, size, mtime) or its GNU build ID, so every process that maps
 * a file shares it; the descriptors objects hold (symcache_opts.max_fds); re-opening a file
 * whose descriptor was closed, only when it is the very same file. Defines symcache__open(),
 * symcache__find_identity(), symcache__find_build_id() and elf_object__orig_path() of
 * symbolize.h. Format: ELF gABI (read through libelf, checked by symc_elf_validate()).
 */
#ifndef SPANPROF_SYMBOLS_OBJCACHE_H
#define SPANPROF_SYMBOLS_OBJCACHE_H

#include <stdint.h>

#include <gelf.h>

struct elf_object;
struct stat;
struct symcache;

/*
 * @fd (a regular file of @size bytes) read as ELF and symc_elf_validate()d: @cmd ELF_C_READ reads
 * with pread on demand, ELF_C_READ_MMAP maps the file. The caller ends the Elf; @fd stays the
 * caller's. NULL + *@errp (-ENOEXEC) on failure.
 */
Elf *symc_elf_from_fd(int fd, Elf_Cmd cmd, uint64_t size, int *errp);
/*
 * @path opened read-only and fstat()ed into *@st, only if it is a regular file
 * (regfile__open(): a FIFO or a device is never opened): the descriptor (the caller's),
 * -errno, or -ENOEXEC for what is not a regular file, counted in @c's stats.not_regular.
 */
int symc_open_regular(struct symcache *c, const char *path, struct stat *st);
/* Closes unloaded objects' descriptors while more than max_fds are held. */
void symc_limit_fds(struct symcache *c);
/*
 * Re-opens @o's file into o->fd (counted in stats.fds) by o->path, then o->orig_path, only when
 * it is the very same file (device, inode, size, mtime). 0, or -ENOENT.
 */
int symc_reopen(struct elf_object *o);
/*
 * @o was closed while idle: re-loads it from the very same file if it can be opened again, else
 * goes on with what stayed in memory (counted once in stats.idle_reopen_errors).
 */
void symc_refresh_idle(struct elf_object *o);

#endif /* SPANPROF_SYMBOLS_OBJCACHE_H */
