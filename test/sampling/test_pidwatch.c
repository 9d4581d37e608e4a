// SPDX-License-Identifier: Apache-2.0
/* Unit tests of pidwatch: the --pid processes' exits are seen, and only theirs. No root. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampling/pidwatch.h"

static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		pause();
		_exit(0);
	}
	return pid;
}

static void test_exits_are_seen(void **unused)
{
	pid_t a = sleeper(), b = sleeper();
	uint32_t pids[] = {a, b, a}; /* a duplicate is one more watch of the same process */
	struct pidwatch *w = pidwatch__new(pids, 3);

	assert_non_null(w);
	assert_int_equal(pidwatch__running(w), 3);
	kill(a, SIGKILL);
	/* Not reaped yet: a zombie has exited. */
	for (int i = 0; i < 1000 && pidwatch__running(w) != 1; i++)
		usleep(10000);
	assert_int_equal(pidwatch__running(w), 1);
	waitpid(a, NULL, 0);
	assert_int_equal(pidwatch__running(w), 1);
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	assert_int_equal(pidwatch__running(w), 0);
	assert_int_equal(pidwatch__running(w), 0);
	pidwatch__free(w);
}

static void test_gone_process_refused(void **unused)
{
	pid_t a = sleeper();
	uint32_t pid = a;

	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	errno = 0;
	assert_null(pidwatch__new(&pid, 1));
	assert_int_equal(errno, ESRCH);
	pidwatch__free(NULL);
}

static void test_self_runs(void **unused)
{
	uint32_t pid = getpid();
	struct pidwatch *w = pidwatch__new(&pid, 1);

	assert_non_null(w);
	assert_int_equal(pidwatch__running(w), 1);
	pidwatch__free(w);
	w = pidwatch__new(NULL, 0);
	assert_non_null(w);
	assert_int_equal(pidwatch__running(w), 0);
	pidwatch__free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exits_are_seen),
	    cmocka_unit_test(test_gone_process_refused),
	    cmocka_unit_test(test_self_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
