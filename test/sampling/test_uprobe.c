// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of uprobe__parse_mismatch(): the kernel's "ref_ctr_offset mismatch" line (as
 * Linux 6.18 logs it, copied from this machine's /dev/kmsg) names the counter of the uprobe
 * already in place, for that inode and offset only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sampling/uprobe.h"

#define LINE                                                                                       \
	"ref_ctr_offset mismatch. inode: 0x9c2751 offset: 0x1140 ref_ctr_offset(old): 0x3028 "     \
	"ref_ctr_offset(new): 0x0"

static void test_kmsg_record(void **unused)
{
	uint64_t old = 0;

	(void)unused;
	assert_int_equal(
	    uprobe__parse_mismatch("4,2231,12689119938,-;" LINE "\n", 0x9c2751, 0x1140, &old), 1);
	assert_int_equal(old, 0x3028);
}

static void test_bare_text_any_offset(void **unused)
{
	uint64_t old = 0;

	(void)unused;
	assert_int_equal(uprobe__parse_mismatch(LINE, 0x9c2751, UINT64_MAX, &old), 1);
	assert_int_equal(old, 0x3028);
}

static void test_other_probe_or_line(void **unused)
{
	uint64_t old = 7;

	(void)unused;
	assert_int_equal(uprobe__parse_mismatch(LINE, 0x9c2752, 0x1140, &old), 0);
	assert_int_equal(uprobe__parse_mismatch(LINE, 0x9c2751, 0x1141, &old), 0);
	assert_int_equal(uprobe__parse_mismatch("6,1,2,-;EXT4-fs (vda): mounted", 1, 2, &old), 0);
	assert_int_equal(uprobe__parse_mismatch("ref_ctr_offset mismatch. inode: 0x9c2751 offset:",
						0x9c2751, UINT64_MAX, &old),
			 0);
	assert_int_equal(uprobe__parse_mismatch("", 0, 0, &old), 0);
	assert_int_equal(old, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kmsg_record),
	    cmocka_unit_test(test_bare_text_any_offset),
	    cmocka_unit_test(test_other_probe_or_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
