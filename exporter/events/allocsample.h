/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allocsample: the arithmetic of the alloc profile's sampling by bytes (docs/profile-types.md),
 * shared by the agent (exporter/events/ev_alloc.c) and the unit tests.
 *
 * Sampling is a Poisson process on the allocated bytes with a mean of M bytes between two
 * sampling points (as in pprof's heap profiler and tcmalloc): an allocation of s bytes is
 * sampled when a point falls in it, with probability p(s) = 1 - exp(-s / M), so each sample
 * stands for 1 / p(s) allocations and s / p(s) bytes (an unbiased estimate of both totals).
 */
#ifndef SPANPROF_ALLOCSAMPLE_H
#define SPANPROF_ALLOCSAMPLE_H

#include <stdint.h>

#include "alloc.h"

/*
 * Fills @table[ALLOC_EXP_STEPS + 1] for alloc__next_interval() (bpf/alloc.h):
 * table[i] = round(-ln(1/2 + i / (2 * ALLOC_EXP_STEPS)) * 2^ALLOC_EXP_SHIFT).
 */
void alloc__exp_table(uint32_t *table);

/*
 * The unbiased weights of one sample of @size bytes taken at a mean of @mean bytes:
 * *@count = 1 / p(size) allocations, *@bytes = size / p(size). @mean 0 (every allocation
 * sampled) or @size 0: 1 and @size.
 */
void alloc__weights(uint64_t size, uint64_t mean, double *count, double *bytes);

/*
 * @x rounded to an integer up or down at random with the probabilities that keep the expected
 * value x (x - floor(x) up), so that sums of rounded weights stay unbiased. @rng: the caller's
 * generator state (xorshift64*), any non-zero value to start.
 */
uint64_t alloc__round(double x, uint64_t *rng);

#endif /* SPANPROF_ALLOCSAMPLE_H */
