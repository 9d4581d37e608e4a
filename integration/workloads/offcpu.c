/*
 * offcpu: threads that block in known functions for known times, for the offcpu profile tests
 * (integration/test_offcpu.py). Each thread measures the time it spent in its blocking calls
 * itself (CLOCK_MONOTONIC around each call) and prints it at the end.
 *
 * Usage: offcpu MODE SECONDS. Prints "ready PID", waits for a line on stdin (so that a profiler
 * attaches first), runs SECONDS, prints its results and exits.
 *
 * MODE sleep: thread "sleeper" calls offcpu_sleep_target() (20 ms nanosleep) and
 *   offcpu_pipe_target() (read on a pipe the main thread writes every 30 ms) in turn; thread
 *   "napper" does 100 us nanosleeps in offcpu_short_naps(). Output lines:
 *     slept <ns in offcpu_sleep_target> <calls> <calls that took 25 ms or more>
 *     piped <ns in offcpu_pipe_target> <calls> <calls that took 1 ms or more> <... 25 ms or more>
 *     napped <ns in offcpu_short_naps> <calls> <calls that took 1 ms or more>
 * MODE spans: 3 worker threads serve requests, each in a span with fresh random ids published
 *   through the writer library (writer/spanprof_ctx.h); a request sleeps 5 ms in
 *   offcpu_request_sleep(); between requests a thread sleeps 3 ms in offcpu_between_requests(),
 *   outside any span. Each span is logged when it ends:
 *     span <tid> <trace_id hex> <span_id hex> <ns slept in the span>
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef WITH_SPANS
#include "spanprof_ctx.h"
#endif

static uint64_t deadline;
static int pipefd[2];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Sleeps @ms in nanosleep; returns the time it took. */
__attribute__((noinline)) uint64_t offcpu_sleep_target(unsigned ms)
{
	uint64_t t0 = now_ns();

	sleep_ns(ms * 1000000ull);
	__asm__ volatile("" ::: "memory");
	return now_ns() - t0;
}

/* Waits for one byte on the pipe; returns the time it took. */
__attribute__((noinline)) uint64_t offcpu_pipe_target(void)
{
	uint64_t t0 = now_ns();
	char c;

	if (read(pipefd[0], &c, 1) != 1)
		abort();
	__asm__ volatile("" ::: "memory");
	return now_ns() - t0;
}

/*
 * 100 us naps, below the default --offcpu-min: only those that took 1 ms or more in all (a loaded
 * machine can keep a woken thread waiting for a CPU) may be reported; counted in *nlong.
 */
__attribute__((noinline)) uint64_t offcpu_short_naps(unsigned n, unsigned *nlong)
{
	uint64_t t0 = now_ns(), t = t0, t1;

	for (unsigned i = 0; i < n; i++, t = t1) {
		sleep_ns(100000);
		t1 = now_ns();
		*nlong += t1 - t >= 1000000;
	}
	__asm__ volatile("" ::: "memory");
	return t - t0;
}

static void *sleeper(void *arg)
{
	uint64_t slept = 0, piped = 0, t;
	unsigned nslept = 0, npiped = 0, nblocked = 0, slept25 = 0, piped25 = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	while (now_ns() < deadline) {
		t = offcpu_sleep_target(20);
		slept += t;
		nslept++;
		slept25 += t >= 25000000; /* late: a loaded machine or a slow guest */
		t = offcpu_pipe_target();
		piped += t;
		npiped++;
		/* A slow machine finds the byte already there: the read does not block. */
		nblocked += t >= 1000000;
		piped25 += t >= 25000000;
	}
	pthread_mutex_lock(&log_lock);
	printf("slept %llu %u %u\npiped %llu %u %u %u\n", (unsigned long long)slept, nslept,
	       slept25, (unsigned long long)piped, npiped, nblocked, piped25);
	pthread_mutex_unlock(&log_lock);
	return NULL;
}

static void *napper(void *arg)
{
	uint64_t napped = 0;
	unsigned n = 0, nlong = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "napper");
	while (now_ns() < deadline) {
		napped += offcpu_short_naps(50, &nlong);
		n += 50;
	}
	pthread_mutex_lock(&log_lock);
	printf("napped %llu %u %u\n", (unsigned long long)napped, n, nlong);
	pthread_mutex_unlock(&log_lock);
	return NULL;
}

static int run_sleep(void)
{
	pthread_t a, b;
	int done = 0;

	if (pipe(pipefd))
		return 1;
	pthread_create(&a, NULL, sleeper, NULL);
	pthread_create(&b, NULL, napper, NULL);
	/* Feed the pipe every 30 ms; keep feeding until the sleeper is done with it. */
	while (!done) {
		sleep_ns(30000000);
		if (write(pipefd[1], "x", 1) != 1)
			abort();
		done = now_ns() >= deadline + 100000000ull;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}

#ifdef WITH_SPANS
/* The request's work: a 5 ms sleep, inside the span. */
__attribute__((noinline)) uint64_t offcpu_request_sleep(void)
{
	uint64_t t0 = now_ns();

	sleep_ns(5000000);
	__asm__ volatile("" ::: "memory");
	return now_ns() - t0;
}

/* Outside any span: its samples must carry no link. */
__attribute__((noinline)) void offcpu_between_requests(void)
{
	sleep_ns(3000000);
	__asm__ volatile("" ::: "memory");
}

static void hex(const uint8_t *b, int n, char *out)
{
	for (int i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void *worker(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	(void)arg;
	while (now_ns() < deadline) {
		uint8_t trace[16], span[8];
		char th[33], sh[17];
		uint64_t slept;
		void *token;

		if (getrandom(trace, sizeof(trace), 0) != sizeof(trace) ||
		    getrandom(span, sizeof(span), 0) != sizeof(span))
			abort();
		trace[0] |= 1; /* never all zero */
		token = spctx_attach(trace, span, 1, NULL, 0);
		slept = offcpu_request_sleep();
		spctx_detach(token);
		hex(trace, 16, th);
		hex(span, 8, sh);
		pthread_mutex_lock(&log_lock);
		printf("span %d %s %s %llu\n", tid, th, sh, (unsigned long long)slept);
		pthread_mutex_unlock(&log_lock);
		offcpu_between_requests();
	}
	return NULL;
}

static int run_spans(void)
{
	static const char *const resource[] = {"service.name", "offcpu-test", NULL};
	pthread_t th[3];

	if (spctx_process_publish(resource, NULL, 0))
		fprintf(stderr, "offcpu: process context not published\n");
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	char line[16];

	if (argc != 3) {
		fprintf(stderr, "usage: offcpu sleep|spans SECONDS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	deadline = now_ns() + (uint64_t)(atof(argv[2]) * 1e9);
	if (!strcmp(argv[1], "sleep"))
		return run_sleep();
#ifdef WITH_SPANS
	if (!strcmp(argv[1], "spans"))
		return run_spans();
#endif
	fprintf(stderr, "offcpu: unknown mode %s\n", argv[1]);
	return 2;
}
