// SPDX-License-Identifier: Apache-2.0
/* Shared library for test_symbolize: one exported function with an inlined helper. */
volatile int lib_sink;

static inline __attribute__((always_inline)) int lib_helper(int x)
{
	return x * lib_sink + 5; /* MARK_LIB_INLINE */
}

__attribute__((noinline)) int lib_work(int x)
{
	return lib_helper(x) - 1; /* MARK_LIB_CALL */
}
