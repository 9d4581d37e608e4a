/*
 * Integration workload: lives for a short time (default 0.2 s) spinning in a
 * function with a recognisable name, then exits. Usage: shortlived [SECONDS [cpu]]
 * With "cpu", SECONDS is CPU time of the process (its samples are the spin however
 * loaded the machine is), else wall-clock time.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void shortlived_spin(double secs)
{
	double until = now() + secs;

	while (now() < until)
		for (int i = 0; i < 20000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "cpu"))
		clock_id = CLOCK_PROCESS_CPUTIME_ID;
	shortlived_spin(argc > 1 ? atof(argv[1]) : 0.2);
	return 0;
}
