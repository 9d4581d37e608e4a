// SPDX-License-Identifier: Apache-2.0
/*
 * Seed program of the ELF fuzz targets (test/fuzz/make_seeds.sh builds it in several variants):
 * a few functions, one inlined, one recursive, a loop with early returns (remember/restore state
 * in the CFI), and OTEP 4947's TLS variable defined in the executable (local-exec). With
 * -DNOSTDLIB it brings its own _start, so the file is a few KiB.
 */
#include <stddef.h>

__thread void *otel_thread_ctx_v1 __attribute__((used));

static inline __attribute__((always_inline)) long scale(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) long walk(const long *v, size_t n)
{
	long acc = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i] < 0)
			return -1;
		acc += scale(v[i]);
	}
	return acc;
}

__attribute__((noinline)) long depth(long n)
{
	volatile char pad[64];

	pad[n & 63] = (char)n;
	return n <= 0 ? pad[0] : depth(n - 1) + 1;
}

int main(void)
{
	long v[4] = {1, 2, 3, 4};

	otel_thread_ctx_v1 = v;
	return (int)(walk(v, 4) + depth(3)) & 0x7f;
}

#ifdef NOSTDLIB
void _start(void)
{
	long rc = main();

	__asm__ volatile("syscall" : : "a"(60), "D"(rc) : "rcx", "r11", "memory");
	__builtin_unreachable();
}
#endif
