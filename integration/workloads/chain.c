/*
 * Integration workload: a known call chain main -> a -> b -> c, where c spins.
 * Built with frame pointers and without sibling calls so every frame stays on
 * the stack. Usage: chain SECONDS (exits by itself).
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

__attribute__((noinline)) unsigned long c(void)
{
	unsigned long x = 0;

	/* Check the clock rarely: the vDSO has no frame pointer, and time spent there hides c. */
	while (now() < until)
		for (int i = 0; i < 50000000; i++)
			x += i * 7 + (x >> 3);
	return x;
}

__attribute__((noinline)) unsigned long b(void)
{
	unsigned long r = c();

	sink += r;
	return r + 1;
}

__attribute__((noinline)) unsigned long a(void)
{
	unsigned long r = b();

	sink += r;
	return r + 2;
}

int main(int argc, char **argv)
{
	until = now() + (argc > 1 ? atof(argv[1]) : 5);
	sink += a();
	return 0;
}
