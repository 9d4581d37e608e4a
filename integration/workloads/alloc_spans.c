/*
 * alloc_spans: a request server for the alloc profile's span links (integration/test_alloc.py).
 * Each worker thread handles requests back to back; each request runs in a span with fresh
 * random ids (writer/spanprof_ctx.h) and allocates in endpoint_alloc(); between requests the
 * thread allocates in between_requests(), outside any span. Every span is logged when it ends:
 *
 *   span <tid> <trace_id hex> <span_id hex> alloc <allocations in the span>
 *
 * Usage: alloc_spans REQUESTS [THREADS]: after "ready PID", reads a line from stdin (the test
 * sends it once the agent samples), checks (up to 60 s) that malloc's first byte is a breakpoint
 * (the agent's uprobe), then serves REQUESTS per thread, pausing every 10 requests.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spanprof_ctx.h"

#define IN_SPAN 8
#define OUTSIDE 4

static unsigned requests;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void use(void *p)
{
	__asm__ volatile("" ::"r"(p) : "memory");
}

__attribute__((noinline)) void endpoint_alloc(void)
{
	for (int i = 0; i < IN_SPAN; i++) {
		void *p = malloc(64 << 10);

		use(p);
		free(p);
	}
}

__attribute__((noinline)) void between_requests(void)
{
	for (int i = 0; i < OUTSIDE; i++) {
		void *p = malloc(64 << 10);

		use(p);
		free(p);
	}
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
	for (unsigned r = 0; r < requests; r++) {
		uint8_t trace[16], span[8];
		char th[33], sh[17];
		struct spctx_attr attr = {0, "alloc", 5};
		void *token;

		if (getrandom(trace, sizeof(trace), 0) != sizeof(trace) ||
		    getrandom(span, sizeof(span), 0) != sizeof(span))
			abort();
		trace[0] |= 1; /* never all zero */
		token = spctx_attach(trace, span, 1, &attr, 1);
		endpoint_alloc();
		spctx_detach(token);
		hex(trace, 16, th);
		hex(span, 8, sh);
		pthread_mutex_lock(&log_lock);
		printf("span %d %s %s alloc %d\n", tid, th, sh, IN_SPAN);
		pthread_mutex_unlock(&log_lock);
		between_requests();
		if (r % 10 == 9)
			usleep(50000); /* paced: every allocation is sampled in the test */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const resource[] = {"service.name", "alloc-spans-test", NULL};
	static const char *const keys[] = {"http.route"};
	int nthreads = argc > 2 ? atoi(argv[2]) : 2, i;
	pthread_t th[16];

	if (argc < 2 || nthreads < 1 || nthreads > 16) {
		fprintf(stderr, "usage: alloc_spans REQUESTS [THREADS]\n");
		return 2;
	}
	requests = (unsigned)atoi(argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (spctx_process_publish(resource, keys, 1))
		fprintf(stderr, "alloc_spans: process context not published\n");
	printf("ready %d\n", getpid());
	if (getchar() == EOF)
		return 1;
	for (i = 0; i < 6000 && *(const volatile unsigned char *)(void *)malloc != 0xcc; i++)
		usleep(10000);
	if (i == 6000) {
		fprintf(stderr, "alloc_spans: no uprobe on malloc after 60 s\n");
		return 1;
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("done\n");
	return 0;
}
