/*
 * Integration workload for the CFI unwinder: main -> spin_start -> rec(DEPTH) -> ... -> rec(1) ->
 * leaf, where leaf spins. Built -O2 -fomit-frame-pointer by the test, so only CFI can walk it.
 * Usage: unw_recurse SECONDS DEPTH (exits by itself).
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static double until;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long leaf(void)
{
	unsigned long x = 0;

	/* The clock is checked rarely: time in the vDSO would hide leaf. */
	while (now() < until)
		for (int i = 0; i < 20000000; i++)
			x += i * 7 + (x >> 3);
	return x;
}

__attribute__((noinline)) unsigned long rec(int depth)
{
	unsigned long r;

	if (depth <= 1)
		return leaf();
	r = rec(depth - 1);
	sink += r; /* work after the call: no tail call */
	return r + depth;
}

__attribute__((noinline)) unsigned long spin_start(int depth)
{
	unsigned long r = rec(depth);

	sink += r;
	return r;
}

int main(int argc, char **argv)
{
	int depth = argc > 2 ? atoi(argv[2]) : 300;

	until = now() + (argc > 1 ? atof(argv[1]) : 5);
	sink += spin_start(depth);
	return 0;
}
