/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proclife: is the process that a sample came from still the one behind its PID?
 *
 * A process is identified by (pid, start time). BPF reports the group leader's start time as
 * task->start_boottime, in CLOCK_BOOTTIME nanoseconds; /proc/PID/stat (proc(5), field 22
 * "starttime") reports the same value in clock ticks (sysconf(_SC_CLK_TCK)). A PID is reused
 * only after its previous process is gone, so a process found under its PID with its start
 * time after some reads of /proc/PID/... proves that every one of those reads, made after one
 * of its samples, was of that process (the check that keeps a reused PID from lending the new
 * process's mappings to the old one's samples).
 */
#ifndef SPANPROF_PROCLIFE_H
#define SPANPROF_PROCLIFE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parses the contents of /proc/PID/stat (@len bytes, need not be NUL-terminated): the state
 * letter (field 3) into *@state and the start time in clock ticks (field 22) into *@ticks. The
 * command name (field 2) may hold spaces and parentheses: fields are counted from the last ')'.
 * 0, or -EINVAL for anything malformed.
 */
int proclife__parse_stat(const char *buf, size_t len, char *state, uint64_t *ticks);

/* Start time in clock ticks, as /proc/PID/stat shows it, of a CLOCK_BOOTTIME start in ns. */
uint64_t proclife__ticks(uint64_t start_boot_ns);

/*
 * The start time of the process running under @pid now, in clock ticks (/proc/PID/stat field
 * 22), into *@ticks: 0; -ESRCH no process has the PID, or it has exited (zombie); another -errno
 * when /proc/PID/stat is unreadable or malformed.
 */
int proclife__start_ticks(uint32_t pid, uint64_t *ticks);

/*
 * Whether process (@pid, @start_boot_ns) still runs under @pid: 0 yes (@start_boot_ns 0 means
 * "any start time"); -ESRCH no process has the PID, or it has exited (zombie); -ESTALE the PID
 * now belongs to another process; another -errno when /proc/PID/stat is unreadable.
 */
int proclife__check(uint32_t pid, uint64_t start_boot_ns);

/*
 * Calls @fn(@ctx, pid) for every process running now: each thread group's PID as /proc lists
 * it (proc(5): one numeric directory per process; threads are not listed), this process's own
 * included, in /proc's order. Stops early when @fn returns non-zero and returns that value;
 * else 0, or -errno when /proc cannot be read. A process that exits meanwhile is still passed
 * when /proc listed it: @fn's own reads fail then.
 */
int proclife__each(int (*fn)(void *ctx, uint32_t pid), void *ctx);

#endif
