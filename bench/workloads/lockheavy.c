/*
 * lockheavy: a lock-heavy benchmark for the lock profile's overhead
 * (bench/events/lock_overhead.py). THREADS threads each take one shared pthread mutex ITERS times,
 * with INNER spin iterations inside and OUTER outside the critical section, so that a large share
 * of acquisitions are contended and sleep in futex(2). Prints "wall SECONDS cpu SECONDS waits N", N
 * being the acquisitions that did not succeed at once (pthread_mutex_trylock failed first).
 *
 * Usage: lockheavy [THREADS [ITERS [INNER [OUTER]]]] (defaults 4 200000 200 50)
 *        lockheavy futex [CALLS]: the cost of one futex(2) call that the lock profile takes for
 *        a lock wait (FUTEX_WAIT_PRIVATE, value 2) but that returns at once (EAGAIN: the word
 *        is 0): prints "futex NS ns/call" (this thread's CPU time, kernel time included).
 */
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared;
static long iters;
static int inner, outer;
static unsigned long contended[64];

static void spin(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

static void *run(void *arg)
{
	unsigned long *waits = arg;

	for (long i = 0; i < iters; i++) {
		if (pthread_mutex_trylock(&m)) {
			(*waits)++;
			pthread_mutex_lock(&m);
		}
		shared++;
		spin(inner);
		pthread_mutex_unlock(&m);
		spin(outer);
	}
	return NULL;
}

static double secs(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int futex_cost(long calls)
{
	static int word;
	double c0 = secs(CLOCK_THREAD_CPUTIME_ID);

	for (long i = 0; i < calls; i++)
		syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
	printf("futex %.1f ns/call\n", (secs(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e9 / calls);
	return 0;
}

int main(int argc, char **argv)
{
	int t;

	if (argc > 1 && !strcmp(argv[1], "futex"))
		return futex_cost(argc > 2 ? atol(argv[2]) : 200000);
	t = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[64];
	unsigned long waits = 0;
	double w0, c0;

	iters = argc > 2 ? atol(argv[2]) : 200000;
	inner = argc > 3 ? atoi(argv[3]) : 200;
	outer = argc > 4 ? atoi(argv[4]) : 50;
	if (t < 1 || t > 64)
		return 2;
	w0 = secs(CLOCK_MONOTONIC);
	c0 = secs(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, run, &contended[i]);
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		waits += contended[i];
	}
	printf("wall %.4f cpu %.4f waits %lu\n", secs(CLOCK_MONOTONIC) - w0,
	       secs(CLOCK_PROCESS_CPUTIME_ID) - c0, waits);
	return 0;
}
