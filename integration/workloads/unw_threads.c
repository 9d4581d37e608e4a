/*
 * Integration workload for the CFI unwinder: 8 threads, each thread_main -> t_outer -> t_spin.
 * main joins them (and sleeps: no samples). -O2 -fomit-frame-pointer. Usage: unw_threads SECONDS.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define NTHREADS 8

static volatile unsigned long sink;
static double until;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long t_spin(unsigned long seed)
{
	unsigned long x = seed;

	while (now() < until)
		for (int i = 0; i < 20000000; i++)
			x += i * 7 + (x >> 3);
	return x;
}

__attribute__((noinline)) unsigned long t_outer(unsigned long seed)
{
	unsigned long r = t_spin(seed);

	sink += r;
	return r;
}

__attribute__((noinline)) void *thread_main(void *arg)
{
	sink += t_outer((unsigned long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];

	until = now() + (argc > 1 ? atof(argv[1]) : 5);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
