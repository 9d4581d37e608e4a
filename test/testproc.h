/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process helpers shared by the unit tests (header only: a test links only the objects it
 * tests). Each fails the running cmocka test when the system call it makes fails.
 */
#ifndef SPANPROF_TEST_TESTPROC_H
#define SPANPROF_TEST_TESTPROC_H

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/proclife.h"

/*
 * Start time of the live process @pid in CLOCK_BOOTTIME ns, rounded to its tick (what BPF would
 * report): /proc/PID/stat (proc(5), field 22 starttime, clock ticks since boot) read with
 * exporter/process/proclife.c's parser (the test links proclife.o when it calls this).
 */
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

/*
 * fork() whose child dies with the test (PR_SET_PDEATHSIG), even when a failed assertion skips
 * the test's own cleanup. Returns as fork() does, in both processes.
 */
static inline pid_t fork_tied(void)
{
	pid_t parent = getpid(), pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* the test died before prctl() */
			_exit(1);
	}
	return pid;
}

/* A PID that was this test's child and is gone: the child exited and was reaped. */
static inline pid_t gone_pid(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

#endif
