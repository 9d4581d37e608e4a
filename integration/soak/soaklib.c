/*
 * Soak workload template: a shared library the soak driver compiles with -DGEN=N; dlloop calls
 * soak_lib_entry, which burns BURN_US microseconds of CPU in soak_lib_g<N>_work.
 */
#include <stdint.h>
#include <time.h>

#ifndef GEN
#define GEN 0
#endif
#define CAT3(a, b, c) a##b##c
#define NAME(a, g, c) CAT3(a, g, c)
#define WORK NAME(soak_lib_g, GEN, _work)

static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) void WORK(uint64_t us)
{
	uint64_t end = thread_cpu_ns() + us * 1000, x = sink;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 500; i++)
			x = x * 6364136223846793005ull + GEN;
	sink = x;
}

void soak_lib_entry(uint64_t us)
{
	WORK(us);
}
