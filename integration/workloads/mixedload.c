// SPDX-License-Identifier: Apache-2.0
/*
 * One process that does a bit of everything the profile types measure, each in a function
 * of its own: burn_cpu (on CPU), alloc_site (1 MiB allocations: always sampled by bytes),
 * lock_site (two threads holding one mutex ~2 ms in turn: contended), sleep_site (5 ms
 * sleeps: off CPU). Runs until killed. Usage: mixedload
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

static void spin_ns(long ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000; i++)
			sink += i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000l + (b.tv_nsec - a.tv_nsec) < ns);
}

__attribute__((noinline)) static void burn_cpu(void)
{
	spin_ns(20000000);
}

__attribute__((noinline)) static void alloc_site(void)
{
	char *p = malloc(1 << 20);

	if (p) {
		memset(p, 1, 4096);
		sink += p[100];
	}
	free(p);
}

__attribute__((noinline)) static void lock_site(void)
{
	pthread_mutex_lock(&mu);
	spin_ns(2000000);
	pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void sleep_site(void)
{
	struct timespec ts = {0, 5000000};

	nanosleep(&ts, NULL);
}

static void *locker(void *arg)
{
	(void)arg;
	for (;;)
		lock_site();
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;) {
		sleep_site();
		alloc_site();
	}
	return NULL;
}

int main(void)
{
	pthread_t t[3];

	pthread_create(&t[0], NULL, locker, NULL);
	pthread_create(&t[1], NULL, locker, NULL);
	pthread_create(&t[2], NULL, sleeper, NULL);
	for (;;)
		burn_cpu();
	return 0;
}
