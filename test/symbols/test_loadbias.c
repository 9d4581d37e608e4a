// SPDX-License-Identifier: Apache-2.0
/*
 * loadbias__of(): the load bias of mapped ELF segments laid out as linkers and loaders lay them
 * out (a PIE's text and data, an executable at its link address, a segment split into several
 * mappings, a library mapped below its link address), and the one case where rounding to the
 * page matters: a segment whose p_vaddr and p_offset are not congruent (no loader maps it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "symbols/loadbias.h"

#define PAGE 0x1000ull

/* A PIE's text segment: p_offset = p_vaddr = 0x1000, mapped at a random base + 0x1000. */
static void test_pie_text(void **state)
{
	(void)state;
	assert_int_equal(loadbias__of(0x55d0c0001000, 0x1000, 0x1000, 0x1000, PAGE),
			 0x55d0c0000000);
	assert_int_equal(loadbias__of(0x55d0c0001000, 0x1000, 0x1000, 0x1000, 1), 0x55d0c0000000);
}

/*
 * A data segment that starts mid-page (p_offset 0x2df0, p_vaddr 0x3df0): the loader maps the
 * page holding its first byte, file offset 0x2000 at base + 0x3000.
 */
static void test_unaligned_segment(void **state)
{
	(void)state;
	assert_int_equal(loadbias__of(0x55d0c0003000, 0x2000, 0x3df0, 0x2df0, PAGE),
			 0x55d0c0000000);
	assert_int_equal(loadbias__of(0x55d0c0003000, 0x2000, 0x3df0, 0x2df0, 1), 0x55d0c0000000);
}

/* A non-PIE executable is mapped at its link address: no bias. */
static void test_fixed_address(void **state)
{
	(void)state;
	assert_int_equal(loadbias__of(0x401000, 0x1000, 0x401000, 0x1000, PAGE), 0);
	assert_int_equal(loadbias__of(0x401000, 0x1000, 0x401000, 0x1000, 1), 0);
}

/* mprotect() split a segment: a later piece of it names the same bias as its first page. */
static void test_mapping_inside_segment(void **state)
{
	(void)state;
	assert_int_equal(loadbias__of(0x7f0000005000, 0x5000, 0x1000, 0x1000, PAGE),
			 0x7f0000000000);
	assert_int_equal(loadbias__of(0x7f0000001000, 0x1000, 0x1000, 0x1000, PAGE),
			 0x7f0000000000);
}

/* Mapped below its link address: the bias wraps, and adding it back gives the address. */
static void test_negative_bias(void **state)
{
	uint64_t bias = loadbias__of(0x10000, 0, 0x400000, 0, PAGE);

	(void)state;
	assert_true(bias > UINT64_MAX / 2);
	assert_int_equal(0x400123 + bias, 0x10123);
}

/* p_vaddr and p_offset not congruent modulo the page: rounding changes the answer. */
static void test_incongruent_segment(void **state)
{
	(void)state;
	assert_int_equal(loadbias__of(0x20000, 0x1000, 0x1010, 0x1000, PAGE), 0x1f000);
	assert_int_equal(loadbias__of(0x20000, 0x1000, 0x1010, 0x1000, 1), 0x1eff0);
}

/*
 * Any congruent segment and any mapping of part of it: both roundings agree, and each byte X
 * of the mapping is at p_vaddr + (X - p_offset) + bias, its address in the process.
 */
static void test_congruent_segments_agree(void **state)
{
	uint64_t seed = 88172645463325252ull;

	(void)state;
	for (int i = 0; i < 10000; i++) {
		uint64_t in_page, p_offset, p_vaddr, map_offset, map_start, x, bias;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		in_page = seed & (PAGE - 1);
		p_offset = ((seed >> 12) & 0xffff) * PAGE + in_page;
		p_vaddr = ((seed >> 28) & 0xfffff) * PAGE + in_page;
		map_offset = (p_offset & ~(PAGE - 1)) + ((seed >> 48) & 0xf) * PAGE;
		map_start = ((seed >> 20) & 0xfffffff) * PAGE;
		x = map_offset + (seed >> 52); /* a byte of the mapping's first 4 KiB */
		bias = loadbias__of(map_start, map_offset, p_vaddr, p_offset, PAGE);
		assert_int_equal(bias, loadbias__of(map_start, map_offset, p_vaddr, p_offset, 1));
		assert_int_equal(p_vaddr + (x - p_offset) + bias, map_start + (x - map_offset));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pie_text),
	    cmocka_unit_test(test_unaligned_segment),
	    cmocka_unit_test(test_fixed_address),
	    cmocka_unit_test(test_mapping_inside_segment),
	    cmocka_unit_test(test_negative_bias),
	    cmocka_unit_test(test_incongruent_segment),
	    cmocka_unit_test(test_congruent_segments_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
