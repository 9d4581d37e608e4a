/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper shared by test_fileid.c and test_proclife.c: a live process's start time as the
 * BPF side reports it, read from /proc/PID/stat (proc(5), field 22 starttime, in clock ticks
 * since boot) with exporter/proclife.c's parser. Fails the running cmocka test when the file
 * can't be read or parsed.
 */
#ifndef SPANPROF_TEST_PROC_START_H
#define SPANPROF_TEST_PROC_START_H

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "proclife.h"

/* Start time of @pid in CLOCK_BOOTTIME ns, rounded to its tick (what BPF would report). */
static inline uint64_t start_ns(pid_t pid)
{
	char path[64], buf[1024], state;
	uint64_t ticks;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_true(n > 0);
	assert_int_equal(proclife__parse_stat(buf, n, &state, &ticks), 0);
	return ticks * (1000000000ull / sysconf(_SC_CLK_TCK)) + 1234; /* inside the tick */
}

#endif
