/* SPDX-License-Identifier: Apache-2.0 */
/* Shared library for the CFI tests: exported and local functions, calls through the PLT. */
#include <stdio.h>
#include <stdlib.h>

static int helper(int x)
{
	return x * x + rand();
}

__attribute__((noinline)) int cfi_lib_entry(int n)
{
	char buf[256];
	int i, s = 0;

	for (i = 0; i < n; i++)
		s += helper(i);
	snprintf(buf, sizeof(buf), "%d", s);
	return (int)buf[0] + puts(buf);
}
