// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of proclife (is the process behind a PID still the one sampled?) and of the
 * process table's use of it: a reused PID never lends its mappings to the earlier process, and
 * entries of exited processes are swept away; a process read before sampling names its samples
 * after it exited.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/proclife.h"
#include "process/proctab.h"
#include "resolve/resolve.h"
#include "symbols/symbolize.h"

#include "../testproc.h"

static void parse_ok(const char *line, char want_state, uint64_t want_ticks)
{
	uint64_t ticks = 0;
	char state = 0;

	assert_int_equal(proclife__parse_stat(line, strlen(line), &state, &ticks), 0);
	assert_int_equal(state, want_state);
	assert_int_equal(ticks, want_ticks);
}

static void test_parse_stat(void **unused)
{
	static const char *const bad[] = {
	    "1 (x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12x",
	    "1 (x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999",
	    "1 (x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 ",
	    "1 (x)R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
	};
	uint64_t ticks;
	char state;

	parse_ok("1234 (cat) R 1 1234 1234 0 -1 4194304 95 0 0 0 0 0 0 0 20 0 1 0 987654 5545984 "
		 "250 18446744073709551615\n",
		 'R', 987654);
	/* A command name with spaces and parentheses: fields count from the last ')'. */
	parse_ok("77 (a) b) (c ) S 1 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 42 0 0 0", 'S',
		 42);
	/* Field 22 last, without a newline, and not NUL-terminated within len. */
	parse_ok("9 (z) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 31337", 'Z', 31337);
	assert_int_equal(proclife__parse_stat("", 0, &state, &ticks), -EINVAL);
	assert_int_equal(proclife__parse_stat("12 (x", 5, &state, &ticks), -EINVAL);
	assert_int_equal(proclife__parse_stat("12 (x) R 1 2 3", 14, &state, &ticks), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(proclife__parse_stat(bad[i], strlen(bad[i]), &state, &ticks),
				 -EINVAL);
}

static void test_check(void **unused)
{
	uint64_t me = start_ns(getpid());
	int status;
	pid_t child;

	assert_int_equal(proclife__ticks(me), proclife__ticks(me - 1234));
	assert_int_equal(proclife__check(getpid(), me), 0);
	assert_int_equal(proclife__check(getpid(), 0), 0);
	/* Same PID, another start time: the PID belongs to someone else now. */
	assert_int_equal(proclife__check(getpid(), me + 3600ull * 1000000000ull), -ESTALE);
	/* Beyond the largest possible PID. */
	assert_int_equal(proclife__check(4194304 + 17, 0), -ESRCH);

	child = fork();
	assert_true(child >= 0);
	if (!child)
		_exit(0);
	/* A zombie has exited: its mappings are gone. */
	for (int i = 0; i < 500 && proclife__check(child, 0) == 0; i++)
		usleep(2000);
	assert_int_equal(proclife__check(child, 0), -ESRCH);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(proclife__check(child, 0), -ESRCH);
}

/*
 * A sample of an earlier process whose PID is now this test's: the table must not read this
 * process's mappings (or executable, or resource facts) for it.
 */
static void test_reused_pid_lends_nothing(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = t ? resolve__new(t, syms, NULL) : NULL;
	uint64_t earlier = start_ns(getpid()) - 3600ull * 1000000000ull;
	const struct procmeta *meta;
	struct profile *p = profile__new();
	uint64_t pc = (uint64_t)(uintptr_t)test_reused_pid_lends_nothing;
	uint32_t locs[1];
	struct proc *proc;

	assert_non_null(t);
	assert_non_null(rv);
	assert_non_null(p);
	proc = proctab__get(t, getpid(), earlier);
	assert_non_null(proc);
	assert_string_equal(proc__exe(proc), "");
	assert_int_equal(proctab__stats(t)->pid_reused, 1);
	assert_int_equal(proctab__meta(t, getpid(), &meta), -ESTALE);
	/* Its PCs stay unnamed addresses. */
	assert_int_equal(resolve__user(rv, proc, p, &pc, 1, NULL, 0, locs), 1);
	assert_int_equal(profile__location(p, locs[0])->nlines, 0);
	assert_true(resolve__stats(rv)->frames_unmapped >= 1);

	/* The process that really has the PID gets its own mappings, named. */
	proc = proctab__get(t, getpid(), start_ns(getpid()));
	assert_true(strlen(proc__exe(proc)) > 0);
	assert_int_equal(proctab__meta(t, getpid(), &meta), 0);
	assert_int_equal(resolve__user(rv, proc, p, &pc, 1, NULL, 0, locs), 1);
	assert_true(profile__location(p, locs[0])->nlines >= 1);
	assert_int_equal(proctab__stats(t)->pid_reused, 1);
	profile__free(p);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

static void test_sweep_frees_exited(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = t ? resolve__new(t, syms, NULL) : NULL;
	int status, pipefd[2];
	pid_t child;
	char c;

	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1); /* until the parent closes its end */
		_exit(0);
	}
	close(pipefd[0]);
	assert_non_null(proctab__get(t, child, start_ns(child)));
	assert_non_null(proctab__get(t, getpid(), start_ns(getpid())));
	assert_int_equal(proctab__count(t), 2);
	/* Both alive: nothing to sweep. */
	assert_int_equal(proctab__sweep(t, 0), 0);
	close(pipefd[1]);
	assert_int_equal(waitpid(child, &status, 0), child);
	/* Sampled in the current interval: kept for the encoder while asked to. */
	assert_int_equal(proctab__sweep(t, 1), 0);
	proctab__next_interval(t);
	assert_int_equal(proctab__sweep(t, 1), 1);
	assert_int_equal(proctab__count(t), 1);
	assert_int_equal(proctab__stats(t)->processes_freed, 1);
	assert_int_equal(proctab__meta(t, child, &(const struct procmeta *){NULL}), -ESRCH);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

/*
 * A --pid process read before sampling (proctab__preload()) and gone before its first sample is
 * named: the sample, of the same start tick, takes the entry read while it ran; one of another
 * start time does not.
 */
static void test_preload_names_after_exit(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = t ? resolve__new(t, syms, NULL) : NULL;
	struct profile *p = profile__new();
	uint64_t pc = (uint64_t)(uintptr_t)test_preload_names_after_exit, started;
	int status, pipefd[2];
	uint32_t locs[1];
	struct proc *proc;
	pid_t child;
	char c;

	assert_non_null(rv);
	assert_non_null(p);
	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1); /* until the parent closes its end */
		_exit(0);
	}
	close(pipefd[0]);
	started = start_ns(child);
	assert_int_equal(proctab__preload(t, child), 0);
	assert_int_equal(proctab__preload(t, child), 0); /* already read: nothing more */
	assert_int_equal(proctab__stats(t)->preloads, 1);
	close(pipefd[1]);
	assert_int_equal(waitpid(child, &status, 0), child);
	/* Gone: nothing to read. */
	assert_int_equal(proctab__preload(t, 4194304 + 17), -ESRCH);

	/* Its first sample, after it exited: the maps read while it ran name its PCs. */
	proc = proctab__get(t, child, started);
	assert_non_null(proc);
	assert_int_equal(proctab__stats(t)->preloads_used, 1);
	assert_int_equal(resolve__user(rv, proc, p, &pc, 1, NULL, 0, locs), 1);
	assert_true(profile__location(p, locs[0])->nlines >= 1);

	/* A sample of another start time under a preloaded PID: not the process read. */
	assert_int_equal(proctab__preload(t, getpid()), 0);
	proc = proctab__get(t, getpid(), start_ns(getpid()) - 3600ull * 1000000000ull);
	assert_non_null(proc);
	assert_int_equal(proctab__stats(t)->preloads_used, 1);
	assert_int_equal(proctab__stats(t)->pid_reused, 1);
	assert_int_equal(resolve__user(rv, proc, p, &pc, 1, NULL, 0, locs), 1);
	assert_int_equal(profile__location(p, locs[0])->nlines, 0);
	profile__free(p);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_stat),
	    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_reused_pid_lends_nothing),
	    cmocka_unit_test(test_sweep_frees_exited),
	    cmocka_unit_test(test_preload_names_after_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
