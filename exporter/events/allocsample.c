// SPDX-License-Identifier: Apache-2.0
/* Sampling arithmetic of the alloc profile: see allocsample.h. */
#include <math.h>

#include "events/allocsample.h"

void alloc__exp_table(uint32_t *table)
{
	for (uint32_t i = 0; i <= ALLOC_EXP_STEPS; i++)
		table[i] = (uint32_t)llround(-log(0.5 + i / (2.0 * ALLOC_EXP_STEPS)) *
					     (double)(1u << ALLOC_EXP_SHIFT));
}

void alloc__weights(uint64_t size, uint64_t mean, double *count, double *bytes)
{
	double p;

	if (!mean || !size) {
		*count = 1;
		*bytes = (double)size;
		return;
	}
	p = -expm1(-(double)size / (double)mean); /* 1 - exp(-s/M), exact for small s/M */
	*count = 1 / p;
	*bytes = (double)size / p;
}

uint64_t alloc__round(double x, uint64_t *rng)
{
	double f = floor(x);
	uint64_t r;

	if (!(x > 0))
		return 0;
	/* xorshift64* (Vigna): plenty for rounding decisions. */
	r = *rng ? *rng : 0x9e3779b97f4a7c15ull;
	r ^= r >> 12;
	r ^= r << 25;
	r ^= r >> 27;
	*rng = r;
	r *= 0x2545f4914f6cdd1dull;
	return (uint64_t)f + ((double)(r >> 11) * 0x1p-53 < x - f);
}
