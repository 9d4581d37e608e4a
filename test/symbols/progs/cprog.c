// SPDX-License-Identifier: Apache-2.0
/*
 * Test program for test_symbolize: a two-level inline chain inside a
 * noinline function, plus symbols named like Rust's (legacy and v0).
 * With "addrs" it prints its own function addresses and waits for a line on
 * stdin, so the test can read its /proc/PID/maps meanwhile.
 * The markers in comments are found by the test to learn expected lines.
 */
#include <stdio.h>
#include <string.h>

#ifndef VARIANT
#define VARIANT "default"
#endif

#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

volatile int sink;
const char *variant = VARIANT;

ALWAYS_INLINE int leaf_inline(int x)
{
	int i, s = 0;

	for (i = 0; i < x; i++)
		s += i * sink; /* MARK_LEAF */
	return s;
}

ALWAYS_INLINE int mid_inline(int x)
{
	return leaf_inline(x) * 3; /* MARK_MID_CALL */
}

NOINLINE int middle(int x)
{
	return mid_inline(x) + 1; /* MARK_MIDDLE_CALL */
}

NOINLINE int outer(int x)
{
	return middle(x) * 2;
}

/* Symbol names as rustc emits them (legacy, then v0). */
NOINLINE int rust_legacy(int x) __asm__("_ZN7mycrate6legacy17h0123456789abcdefE");
NOINLINE int rust_legacy(int x)
{
	return x + sink;
}

NOINLINE int rust_v0(int x) __asm__("_RNvCs1234_7mycrate2v0");
NOINLINE int rust_v0(int x)
{
	return x - sink;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "addrs")) {
		printf("middle %p\nouter %p\n", (void *)middle, (void *)outer);
		fflush(stdout);
		getchar();
		return 0;
	}
	return (outer(argc) + rust_legacy(argc) + rust_v0(argc)) & 1;
}
