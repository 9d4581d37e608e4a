/*
 * Benchmark workload for bench/events: N threads contending on a few pthread mutexes, with a
 * bit of work inside and outside the lock, so that lock waits, futex sleeps and context switches
 * are frequent (what the lock and offcpu profile types hook).
 *
 * Usage: lockcontend UNITS [THREADS [LOCKS]]   (defaults: 4 threads, 2 locks)
 *
 * Prints "ready PID" and waits for a line on stdin before working (a profiler can attach to the
 * PID first). Each thread does UNITS x 1000 iterations: lock one of the mutexes (a fixed sequence
 * per thread), ~0.5 us of work on the data it guards, unlock, ~1.5 us of work of its own. On exit
 * one line on stdout:
 *   lockcontend units=N threads=T locks=L work_ns=NANOSECONDS cpu_ns=NANOSECONDS checksum=HEX
 *             voluntary_switches=N
 * work_ns: CLOCK_MONOTONIC time from the start of the threads to the end of the last one;
 * cpu_ns: CLOCK_PROCESS_CPUTIME_ID over the same time; checksum: the threads' own results, the
 * same on every run (the guarded values depend on the order the threads get the locks in);
 * voluntary_switches: the process's voluntary context switches (getrusage: mostly futex waits),
 * which say how contended the run was on this machine.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_LOCKS 16

struct guarded {
	pthread_mutex_t lock;
	uint64_t value;
	char pad[64];
};

static struct guarded locks[MAX_LOCKS];
static unsigned long iters;
static unsigned nlocks;
static uint64_t results[MAX_THREADS];

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* About n x 2.5 ns of dependent integer work. */
__attribute__((noinline)) static uint64_t work(uint64_t h, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull + i;
	return h;
}

__attribute__((noinline)) static void critical_section(struct guarded *g, uint64_t h)
{
	pthread_mutex_lock(&g->lock);
	g->value = work(g->value + (h & 0xff), 400);
	pthread_mutex_unlock(&g->lock);
}

static void *thread_main(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t h = 0x9e3779b97f4a7c15ull * (t + 1);

	for (unsigned long i = 0; i < iters; i++) {
		critical_section(&locks[(i * 7 + t) % nlocks], h);
		h = work(h, 400);
	}
	results[t] = h;
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long units;
	unsigned nthreads = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
	uint64_t t0, t1, c0, c1, sum = 0;
	pthread_t th[MAX_THREADS];
	char line[16], *end;
	struct rusage ru;

	nlocks = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
	if (argc < 2 || argc > 4 || (units = strtoul(argv[1], &end, 10)) == 0 || *end ||
	    nthreads < 1 || nthreads > MAX_THREADS || nlocks < 1 || nlocks > MAX_LOCKS) {
		fprintf(stderr, "usage: %s UNITS [THREADS (1..64) [LOCKS (1..16)]]\n", argv[0]);
		return 2;
	}
	iters = units * 1000;
	for (unsigned i = 0; i < nlocks; i++)
		pthread_mutex_init(&locks[i].lock, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now_ns(CLOCK_MONOTONIC);
	for (unsigned t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, thread_main, (void *)(uintptr_t)t))
			return 1;
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	t1 = now_ns(CLOCK_MONOTONIC);
	c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	getrusage(RUSAGE_SELF, &ru);
	for (unsigned t = 0; t < nthreads; t++)
		sum ^= results[t];
	printf("lockcontend units=%lu threads=%u locks=%u work_ns=%" PRIu64 " cpu_ns=%" PRIu64
	       " checksum=%016" PRIx64 " voluntary_switches=%ld\n",
	       units, nthreads, nlocks, t1 - t0, c1 - c0, sum, ru.ru_nvcsw);
	return 0;
}
