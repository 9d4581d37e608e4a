/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util: one-line helpers several exporter modules had each written for themselves. Header only
 * (static inline), so a unit test that links a module's object alone needs nothing more.
 */
#ifndef SPANPROF_UTIL_H
#define SPANPROF_UTIL_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in nanoseconds (clock_gettime(2); it can't fail for this clock). */
static inline uint64_t util__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CLOCK_BOOTTIME now, in nanoseconds: the clock of BPF's bpf_ktime_get_boot_ns() (sample times). */
static inline uint64_t util__boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Value of the hex digit @c (0-9, a-f, A-F), or -1 when @c is not one. */
static inline int util__hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
