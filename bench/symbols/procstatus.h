/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the symbolizer benchmarks (bench/symbols/): this process's memory figures, a PRNG. */
#ifndef SPANPROF_BENCH_SYMBOLS_PROCSTATUS_H
#define SPANPROF_BENCH_SYMBOLS_PROCSTATUS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* kB of "@key:" in /proc/self/status (VmHWM, RssAnon, ...); -1 when absent. */
static inline long status_kb(const char *key)
{
	char line[256];
	size_t len = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':') {
			v = atol(line + len + 1);
			break;
		}
	fclose(f);
	return v;
}

/* xorshift64: the next pseudo-random number of state *@s (never 0). */
static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
