/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loadbias: the load bias of an ELF file mapped into a process (runtime address - link-time
 * p_vaddr), from one line of /proc/PID/maps and the PT_LOAD program header that mapping came
 * from. Written once here for its readers (runtime/python/pyelf.c, spans/tlsctx.c,
 * unwind/procs.c), each of which picks the PT_LOAD its own way.
 */
#ifndef SPANPROF_LOADBIAS_H
#define SPANPROF_LOADBIAS_H

#include <stdint.h>

/*
 * The load bias of a file whose bytes from @map_offset are mapped at @map_start (the start and
 * offset columns of /proc/PID/maps), those bytes being part of the PT_LOAD segment with
 * @p_vaddr and @p_offset (ELF gABI, "Program Header": p_vaddr, p_offset):
 *
 *   bias = map_start - (p_vaddr + (map_offset - p_offset))
 *
 * i.e. the mapping's byte at file offset X lies at X - p_offset + p_vaddr + bias. With @page
 * (a power of two), p_vaddr and p_offset are first rounded down to a multiple of it, as the
 * loader maps a segment from the page holding its first byte; @page 1 rounds nothing. The two
 * give the same bias whenever p_vaddr and p_offset are congruent modulo @page, which the gABI
 * requires of every loadable segment ("loadable process segments must have congruent values
 * for p_vaddr and p_offset, modulo the page size"; the kernel's and ld.so's mmap of a segment
 * fails otherwise), so @page only matters for a file no loader would map. Arithmetic is modulo
 * 2^64 (a bias may be "negative").
 */
uint64_t loadbias__of(uint64_t map_start, uint64_t map_offset, uint64_t p_vaddr, uint64_t p_offset,
		      uint64_t page);

#endif /* SPANPROF_LOADBIAS_H */
