/*
 * Soak workload: threads coming and going. Rounds of NTHREADS threads, each burning about
 * BURN_US microseconds of CPU in soak_thread_work, then joined; a short sleep between rounds.
 * Runs until SIGTERM or SIGINT.
 *
 *   threads [NTHREADS] [BURN_US]
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stop;
static volatile uint64_t sink;
static uint64_t burn_us = 1000;

static void on_signal(int sig)
{
	stop = sig;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) void soak_thread_work(uint64_t us)
{
	uint64_t end = thread_cpu_ns() + us * 1000, x = sink;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 500; i++)
			x = x * 6364136223846793005ull + 1;
	sink = x;
}

static void *thread_main(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "soakt-%lu", (unsigned long)(uintptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	soak_thread_work(burn_us);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct timespec pause = {0, 5 * 1000 * 1000};
	int n = argc > 1 ? atoi(argv[1]) : 8;
	unsigned long round = 0;
	pthread_t t[64];

	if (argc > 2)
		burn_us = strtoull(argv[2], NULL, 10);
	if (n < 1 || n > 64)
		n = 8;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!stop) {
		int started = 0;

		for (int i = 0; i < n; i++)
			if (!pthread_create(&t[started], NULL, thread_main,
					    (void *)(uintptr_t)(round * n + i)))
				started++;
		for (int i = 0; i < started; i++)
			pthread_join(t[i], NULL);
		round++;
		nanosleep(&pause, NULL);
	}
	printf("%lu rounds\n", round);
	return 0;
}
