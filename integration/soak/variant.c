/*
 * Soak workload template: the soak driver compiles it with -DGEN=N every few seconds, so each
 * build has its own function names and GNU build ID. Burns BURN_US microseconds of CPU (default
 * 3000) in soak_churn_g<N>_burn, called from main, then exits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#ifndef GEN
#define GEN 0
#endif
#define CAT3(a, b, c) a##b##c
#define NAME(a, g, c) CAT3(a, g, c)
#define BURN NAME(soak_churn_g, GEN, _burn)

static volatile uint64_t sink;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) void BURN(uint64_t us)
{
	uint64_t end = cpu_ns() + us * 1000, x = sink;

	while (cpu_ns() < end)
		for (int i = 0; i < 500; i++)
			x = x * 6364136223846793005ull + GEN;
	sink = x;
}

int main(void)
{
	const char *us = getenv("SOAK_BURN_US");

	BURN(us ? strtoull(us, NULL, 10) : 3000);
	return 0;
}
