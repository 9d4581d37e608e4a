/*
 * spanserver: a multi-threaded stand-in for an instrumented service, for the span-link
 * tests. Each worker thread handles "requests" back to back: each request runs in a span
 * with a fresh random trace id and span id (published through the writer library,
 * writer/spanprof_ctx.h) and burns CPU in its endpoint's own function; between requests
 * the thread burns CPU outside any span. Every span is logged when it ends:
 *
 *   span <tid> <trace_id hex> <span_id hex> <endpoint> <start_ns> <end_ns>
 *
 * (CLOCK_REALTIME ns) on stdout, so the test can check each linked sample against the span
 * that really ran on that thread.
 *
 * Usage: spanserver SECONDS [THREADS [DELAY]]: after "ready PID", waits DELAY seconds
 * (default 0) before the first request, so that a profiler can attach first; DELAY "-" waits
 * for a line on stdin instead (the test sends it once the profiler samples).
 * Built -O2 -fomit-frame-pointer. -DUPROBE_MODE: the program also calls
 * spanserver_context_switched(record) (a noinline function, argument 1 = the record
 * pointer, NULL when the span ends) for --context-uprobe; built that way without
 * exporting otel_thread_ctx_v1, the uprobe is the only way in.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "spanprof_ctx.h"

static double seconds;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Burns @ms of this thread's CPU time. */
static __attribute__((noinline)) void burn(unsigned ms)
{
	uint64_t end = thread_cpu_ns() + ms * 1000000ull, x = sink;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

/* One function per endpoint: the span's frames. */
__attribute__((noinline)) void endpoint_checkout(void)
{
	burn(40);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void endpoint_search(void)
{
	burn(25);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void endpoint_login(void)
{
	burn(15);
	__asm__ volatile("" ::: "memory");
}

/* Work outside any span: its samples must carry no link. */
__attribute__((noinline)) void between_requests(void)
{
	burn(10);
	__asm__ volatile("" ::: "memory");
}

#ifdef UPROBE_MODE
/* The context-switch function of this program: --context-uprobe BINARY:this_function. */
__attribute__((noinline, used)) void spanserver_context_switched(const void *record)
{
	__asm__ volatile("" ::"r"(record) : "memory");
}
#define SWITCHED() spanserver_context_switched(otel_thread_ctx_v1)
#else
#define SWITCHED() ((void)0)
#endif

static const struct {
	const char *name;
	void (*fn)(void);
} endpoints[] = {
    {"checkout", endpoint_checkout},
    {"search", endpoint_search},
    {"login", endpoint_login},
};

static void hex(const uint8_t *b, int n, char *out)
{
	for (int i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void *worker(void *arg)
{
	uint64_t stop = now_ns() + (uint64_t)(seconds * 1e9);
	unsigned seq = (unsigned)(uintptr_t)arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	char user[32];

	while (now_ns() < stop) {
		uint8_t trace[16], span[8];
		char th[33], sh[17];
		unsigned e = seq++ % 3;
		struct spctx_attr attrs[2];
		uint64_t t0, t1;
		void *token;

		if (getrandom(trace, sizeof(trace), 0) != sizeof(trace) ||
		    getrandom(span, sizeof(span), 0) != sizeof(span))
			abort();
		trace[0] |= 1; /* never all zero */
		snprintf(user, sizeof(user), "user-%u", seq % 7);
		attrs[0] = (struct spctx_attr){0, endpoints[e].name, strlen(endpoints[e].name)};
		attrs[1] = (struct spctx_attr){1, user, strlen(user)};
		t0 = now_ns();
		token = spctx_attach(trace, span, 1, attrs, 2);
		SWITCHED();
		endpoints[e].fn();
		spctx_detach(token);
		SWITCHED();
		t1 = now_ns();
		hex(trace, 16, th);
		hex(span, 8, sh);
		pthread_mutex_lock(&log_lock);
		printf("span %d %s %s %s %llu %llu\n", tid, th, sh, endpoints[e].name,
		       (unsigned long long)t0, (unsigned long long)t1);
		pthread_mutex_unlock(&log_lock);
		between_requests();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const resource[] = {"service.name", "spanserver-test",
					       "deployment.environment.name", "test", NULL};
	static const char *const keys[] = {"http.route", "enduser.id"};
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	double delay = argc > 3 ? atof(argv[3]) : 0;
	/* PUBLISH_AFTER: the process context is published that many seconds into the work. */
	double publish_after = argc > 4 ? atof(argv[4]) : -1;
	pthread_t th[64];

	if (argc < 2 || nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "usage: spanserver SECONDS [THREADS [DELAY [PUBLISH_AFTER]]]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (publish_after < 0 && spctx_process_publish(resource, keys, 2))
		fprintf(stderr, "spanserver: process context not published\n");
	printf("ready %d\n", getpid());
	if (argc > 3 && !strcmp(argv[3], "-")) {
		char go[16];

		if (!fgets(go, sizeof(go), stdin))
			return 1;
	} else if (delay > 0)
		nanosleep(&(struct timespec){(time_t)delay, (long)((delay - (time_t)delay) * 1e9)},
			  NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i * 5));
	if (publish_after >= 0) {
		nanosleep(&(struct timespec){(time_t)publish_after,
					     (long)((publish_after - (time_t)publish_after) * 1e9)},
			  NULL);
		if (spctx_process_publish(resource, keys, 2))
			fprintf(stderr, "spanserver: process context not published\n");
		else
			printf("published\n");
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	return 0;
}
