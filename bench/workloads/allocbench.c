/*
 * allocbench: an allocation-heavy loop for bench/events/alloc_overhead.py. Each iteration mallocs a
 * small block (16..512 bytes), writes its first bytes, does WORK steps of integer arithmetic
 * (the "bit of work" a program does per allocation) and frees the block.
 *
 * Usage: allocbench ITERATIONS WORK: prints "ready PID", reads a line from stdin (the bench
 * sends it once the profiler, if any, samples), runs the loop and prints "elapsed_ns N" (the
 * loop alone, CLOCK_MONOTONIC) and "calls N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) static unsigned long work(unsigned long x, unsigned steps)
{
	for (unsigned i = 0; i < steps; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

int main(int argc, char **argv)
{
	unsigned long n, steps, x = 1;
	unsigned long long t0, t1;

	if (argc != 3) {
		fprintf(stderr, "usage: allocbench ITERATIONS WORK\n");
		return 2;
	}
	n = strtoul(argv[1], NULL, 10);
	steps = strtoul(argv[2], NULL, 10);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", getpid());
	if (getchar() == EOF)
		return 1;
	t0 = now_ns();
	for (unsigned long i = 0; i < n; i++) {
		size_t size = 16 + (i * 37) % 497;
		unsigned char *p = malloc(size);

		memset(p, (int)i, size < 64 ? size : 64);
		x = work(x ^ p[size / 2], (unsigned)steps);
		free(p);
	}
	t1 = now_ns();
	sink = x;
	printf("elapsed_ns %llu\ncalls %lu\n", t1 - t0, n);
	return 0;
}
