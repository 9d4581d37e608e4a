/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exporter/sampling/features.c: the BTF-based probes against the build host's kernel BTF, and the
 * feature table. The helper and map probes load programs: they need root and are exercised by
 * every integration run (SPANPROF_DEBUG=1 lists them).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampling/features.h"

static int have_btf(void)
{
	return access("/sys/kernel/btf/vmlinux", R_OK) == 0;
}

static void tracepoint_arguments(void **state)
{
	if (!have_btf())
		skip(); /* a kernel without BTF: nothing to read */
	/* sched_switch(preempt, prev, next, prev_state) since 5.18. */
	assert_int_equal(kfeatures__tp_btf_nargs("sched_switch"), 4);
	/* sched_process_exec(p, old_pid, bprm) on every supported kernel. */
	assert_int_equal(kfeatures__tp_btf_nargs("sched_process_exec"), 3);
	assert_int_equal(kfeatures__tp_btf_nargs("no_such_tracepoint"), -ENOENT);
}

static void struct_members(void **state)
{
	if (!have_btf())
		skip();
	/* mm_mt sits in an anonymous struct of mm_struct: found through it. */
	assert_int_equal(kfeatures__btf_has_member("mm_struct", "mm_mt"), 1);
	assert_int_equal(kfeatures__btf_has_member("task_struct", "tgid"), 1);
	assert_int_equal(kfeatures__btf_has_member("task_struct", "no_such_member"), 0);
	assert_int_equal(kfeatures__btf_has_member("no_such_struct", "x"), -ENOENT);
}

static void table_and_first_missing(void **state)
{
	struct kfeatures f;

	for (int i = 0; i < KFEAT_COUNT; i++) {
		assert_true(strlen(kfeature__name(i)) > 0);
		assert_true(kfeature__since(i)[0] >= '4' && kfeature__since(i)[0] <= '6');
		f.have[i] = 1;
	}
	assert_int_equal(kfeatures__first_missing(&f, ~0u), KFEAT_COUNT);
	f.have[KFEAT_LOOP] = 0;
	f.have[KFEAT_FIND_VMA] = 0;
	f.have[KFEAT_RINGBUF] = -1; /* unknown counts as present: the load decides */
	assert_int_equal(kfeatures__first_missing(&f, ~0u), KFEAT_LOOP);
	assert_int_equal(kfeatures__first_missing(&f, 1u << KFEAT_FIND_VMA), KFEAT_FIND_VMA);
	assert_int_equal(kfeatures__first_missing(&f, 1u << KFEAT_RINGBUF), KFEAT_COUNT);
	assert_string_equal(kfeature__since(KFEAT_LOOP), "5.17");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tracepoint_arguments),
	    cmocka_unit_test(struct_members),
	    cmocka_unit_test(table_and_first_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
