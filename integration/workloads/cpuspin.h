/*
 * spin(): burns @us microseconds of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), for the
 * span-link tests' native burners (asyncburn.c, nodeburn.c). It stays a frame of its own
 * (noinline) under the burner that calls it, so a sample's stack shows the burner.
 */
#ifndef SPANPROF_WORKLOADS_CPUSPIN_H
#define SPANPROF_WORKLOADS_CPUSPIN_H

#include <stdint.h>
#include <time.h>

static volatile uint64_t cpuspin_sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static __attribute__((noinline)) void spin(uint32_t us)
{
	uint64_t end = thread_cpu_ns() + us * 1000ull, x = cpuspin_sink;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 500; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	cpuspin_sink = x;
}

#endif
