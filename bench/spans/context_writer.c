// SPDX-License-Identifier: Apache-2.0
/*
 * Cost of publishing the active span (writer/spanprof_ctx.c): nanoseconds per spctx_attach +
 * spctx_detach pair, without attributes and with 3 small ones, against a baseline measured in
 * the same run: a non-inlined function storing a pointer into a __thread variable, called twice
 * per pair (the least a TLS-pointer writer can do). Several rounds, interleaved; medians.
 * Built twice by bench/spans/context.mk: linked against libspanprof_ctx.so (TLSDESC) and with the
 * source compiled into the executable (static TLS). Never fails on the figures.
 *   context_writer [-r ROUNDS] [-n PAIRS_PER_ROUND]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "spanprof_ctx.h"

#ifndef VARIANT
#define VARIANT "unknown"
#endif

static __thread void *baseline_tls;

__attribute__((noinline)) static void baseline_store(void *p)
{
	baseline_tls = p;
	__asm__ volatile("" ::: "memory");
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static const uint8_t trace_id[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
static const uint8_t span_id[8] = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
static const struct spctx_attr attrs[3] = {
    {.key_index = 0, .value = "GET", .len = 3},
    {.key_index = 1, .value = "/api/cart", .len = 9},
    {.key_index = 2, .value = "gold", .len = 4},
};

static double run_baseline(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		baseline_store((void *)trace_id);
		baseline_store(NULL);
	}
	return (now_ns() - t0) / (double)n;
}

static double run_writer(long n, size_t nattrs)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		spctx_detach(spctx_attach(trace_id, span_id, 1, attrs, nattrs));
	return (now_ns() - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int rounds = 11, opt;
	long pairs = 2000000;
	double *base, *bare, *with;
	double mb, m0, m3;

	while ((opt = getopt(argc, argv, "r:n:")) != -1) {
		switch (opt) {
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'n':
			pairs = atol(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-r ROUNDS] [-n PAIRS_PER_ROUND]\n", argv[0]);
			return 2;
		}
	}
	if (rounds < 1 || pairs < 1) {
		fprintf(stderr, "rounds and pairs must be positive\n");
		return 2;
	}
	base = calloc((size_t)rounds, sizeof(double));
	bare = calloc((size_t)rounds, sizeof(double));
	with = calloc((size_t)rounds, sizeof(double));
	if (!base || !bare || !with) {
		perror("calloc");
		return 1;
	}

	/* Warm up: the thread's records, the TLS descriptors, the CPU frequency. */
	run_writer(pairs / 10 + 1, 3);
	run_baseline(pairs / 10 + 1);
	for (int r = 0; r < rounds; r++) {
		base[r] = run_baseline(pairs);
		bare[r] = run_writer(pairs, 0);
		with[r] = run_writer(pairs, 3);
	}
	mb = median(base, rounds);
	m0 = median(bare, rounds);
	m3 = median(with, rounds);

	printf("context writer (%s), %d rounds x %ld pairs, median ns per pair:\n", VARIANT, rounds,
	       pairs);
	printf("  %-38s %7.2f ns\n", "baseline (2 __thread pointer stores)", mb);
	printf("  %-38s %7.2f ns  %5.1fx baseline\n", "attach+detach, no attrs", m0, m0 / mb);
	printf("  %-38s %7.2f ns  %5.1fx baseline\n", "attach+detach, 3 attrs (20 bytes)", m3,
	       m3 / mb);
	printf("context-writer %s: attach+detach %.1f ns (%.1fx baseline), with 3 attrs %.1f ns "
	       "(%.1fx); baseline %.1f ns\n",
	       VARIANT, m0, m0 / mb, m3, m3 / mb, mb);
	free(base);
	free(bare);
	free(with);
	return 0;
}
