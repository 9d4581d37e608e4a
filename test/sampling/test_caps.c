// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of caps' start-up warnings: kernel frames unnamed exactly when /proc/kallsyms hides
 * its addresses from the agent (kernel/kallsyms.c, kallsyms_show_value(): kptr_restrict 0 shows
 * them to perf-capable readers (perf_event_paranoid <= 1), 1 only to CAP_SYSLOG, 2 to no one),
 * the ptrace warning naming root's own processes and Yama's restriction, and the refusal to run
 * in a PID namespace other than the host's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sampling/caps.h"

static void test_kallsyms_hidden_without_syslog(void **state)
{
	char m[512];

	(void)state;
	/* Debian's defaults (kptr_restrict 0, paranoid 2 or 3): CAP_SYSLOG is what shows them. */
	assert_int_equal(caps__kallsyms_msg(0, 2, 0, m, sizeof(m)), 1);
	assert_non_null(strstr(m, "no CAP_SYSLOG: kernel frames are not named"));
	assert_non_null(strstr(m, "kptr_restrict=0, perf_event_paranoid=2"));
	assert_int_equal(caps__kallsyms_msg(1, 1, 0, m, sizeof(m)), 1);
	assert_non_null(strstr(m, "no CAP_SYSLOG"));
	assert_int_equal(caps__kallsyms_msg(-1, -1, 0, m, sizeof(m)), 1);
	assert_non_null(strstr(m, "no CAP_SYSLOG"));
}

static void test_kallsyms_shown(void **state)
{
	char m[512];

	(void)state;
	assert_int_equal(caps__kallsyms_msg(0, 2, 1, m, sizeof(m)), 0);
	assert_string_equal(m, "");
	assert_int_equal(caps__kallsyms_msg(1, 3, 1, m, sizeof(m)), 0);
	assert_int_equal(caps__kallsyms_msg(0, 1, 0, m, sizeof(m)), 0);
	assert_int_equal(caps__kallsyms_msg(0, -1, 0, m, sizeof(m)), 1); /* unknown: said */
}

static void test_kallsyms_restrict_2(void **state)
{
	char m[512];

	(void)state;
	assert_int_equal(caps__kallsyms_msg(2, 1, 1, m, sizeof(m)), 1);
	assert_non_null(strstr(m, "kernel.kptr_restrict=2 hides"));
	assert_null(strstr(m, "grant"));
	assert_int_equal(caps__kallsyms_msg(2, 1, 0, m, sizeof(m)), 1);
	assert_non_null(strstr(m, "grant spanprof CAP_SYSLOG"));
}

static void test_ptrace_names_root_and_yama(void **state)
{
	char m[512];

	(void)state;
	caps__ptrace_msg(-1, m, sizeof(m));
	assert_non_null(strstr(m, "root's own processes"));
	assert_null(strstr(m, "ptrace_scope"));
	caps__ptrace_msg(1, m, sizeof(m));
	assert_non_null(strstr(m, "only its own descendants (kernel.yama.ptrace_scope >= 1)"));
	caps__ptrace_msg(0, m, sizeof(m));
	assert_null(strstr(m, "descendants"));
}

static void test_pidns(void **state)
{
	char m[512];

	(void)state;
	assert_int_equal(caps__pidns_msg("pid:[4026531836]", m, sizeof(m)), 0);
	assert_string_equal(m, "");
	assert_int_equal(caps__pidns_msg("pid:[4026532301]", m, sizeof(m)), -EPERM);
	assert_non_null(strstr(m, "PID namespace of its own (pid:[4026532301])"));
	assert_non_null(strstr(m, "hostPID: true"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kallsyms_hidden_without_syslog),
	    cmocka_unit_test(test_kallsyms_shown),
	    cmocka_unit_test(test_kallsyms_restrict_2),
	    cmocka_unit_test(test_ptrace_names_root_and_yama),
	    cmocka_unit_test(test_pidns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
