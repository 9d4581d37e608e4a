/*
 * fp_chain: main -> fp_a -> fp_b -> fp_c (burns CPU) for argv[1] seconds, built with frame
 * pointers and without unwind tables (.eh_frame removed after the link, test_stack_truth.py):
 * a frame-pointer walk only, from the leaf to _start.
 */
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

static volatile unsigned long sink;

/* Its volatile local keeps it a frame: GCC sets up no frame pointer in a leaf without one. */
NOINLINE void fp_c(unsigned long n)
{
	volatile unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++)
		acc += i * i;
	sink = acc;
}

NOINLINE void fp_b(unsigned long n)
{
	fp_c(n);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

NOINLINE void fp_a(unsigned long n)
{
	fp_b(n);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		fp_a(2000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
