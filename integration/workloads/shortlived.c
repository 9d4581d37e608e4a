/*
 * Integration workload: lives for a short time (default 0.2 s) spinning in a
 * function with a recognisable name, then exits. Usage: shortlived [SECONDS]
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void shortlived_spin(double secs)
{
	double until = now() + secs;

	while (now() < until)
		for (int i = 0; i < 1000000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	shortlived_spin(argc > 1 ? atof(argv[1]) : 0.2);
	return 0;
}
