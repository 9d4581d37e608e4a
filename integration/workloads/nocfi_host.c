/*
 * nocfi_host MODE SECONDS: a program with frame pointers and CFI around a library without
 * either (nocfi_lib.c). MODE "leaf": main -> host_outer -> nocfi_leaf (the library burns CPU);
 * "mid": main -> host_outer -> nocfi_mid -> host_inner (the library in the middle of the chain).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

void nocfi_leaf(unsigned long n);
void nocfi_mid(void (*cb)(unsigned long), unsigned long n);

static volatile unsigned long sink;
static int mid;

NOINLINE void host_inner(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

NOINLINE void host_outer(unsigned long n)
{
	if (mid)
		nocfi_mid(host_inner, n);
	else
		nocfi_leaf(n);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 5;
	struct timespec t0, t;

	mid = argc > 1 && !strcmp(argv[1], "mid");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		host_outer(2000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
