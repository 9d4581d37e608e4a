/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source of the CFI test programs (test/unwind/cfi.mk builds it in several variants). Each function
 * gives the compiler a different reason to emit particular CFA rules: big frames, alloca (RBP
 * based CFA), stack realignment (DW_CFA_def_cfa_expression), varargs, recursion, calls through
 * the PLT, setjmp.
 */
#include <alloca.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf env;
volatile int sink;

__attribute__((noinline)) int leaf(int x)
{
	return x * 3 + sink;
}

__attribute__((noinline)) int big_frame(int n)
{
	char buf[70000]; /* CFA offset beyond 16 bits */

	memset(buf, n, sizeof(buf));
	return buf[n % sizeof(buf)] + leaf(n);
}

__attribute__((noinline)) int medium_frame(int n)
{
	volatile char buf[5000];

	buf[n % 5000] = (char)n;
	return buf[(n * 7) % 5000] + leaf(n);
}

__attribute__((noinline)) int uses_alloca(int n)
{
	char *p = alloca((size_t)n + 16);

	memset(p, 1, (size_t)n + 16);
	return p[n] + leaf(n);
}

__attribute__((noinline)) int realigned(int n)
{
	/* a 64-byte aligned local makes GCC realign the stack */
	volatile int v[16] __attribute__((aligned(64)));

	v[n & 15] = n;
	return v[(n + 1) & 15] + leaf(n);
}

__attribute__((noinline)) int sum(int n, ...)
{
	va_list ap;
	int s = 0, i;

	va_start(ap, n);
	for (i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

__attribute__((noinline)) int recurse(int n)
{
	if (n <= 0)
		return leaf(n);
	return recurse(n - 1) + recurse(n - 2) + 1;
}

static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) int jumps(int n)
{
	if (setjmp(env))
		return 1;
	if (n > 3)
		longjmp(env, 1);
	return 0;
}

int main(int argc, char **argv)
{
	int a[8] = {5, 3, 7, 1, 0, 9, 2, 4};

	qsort(a, 8, sizeof(a[0]), cmp);
	printf("%s %d %d %d %d %d %d %d\n", VARIANT, big_frame(argc), medium_frame(argc),
	       uses_alloca(argc), realigned(argc), sum(3, 1, 2, argc), recurse(argc + 5),
	       jumps(argc));
	return argv[0][0] == 0;
}
