/*
 * Benchmark workload for bench/overhead: a deterministic, single-threaded, CPU-bound job that
 * does a fixed amount of work and exits by itself.
 *
 * Usage: cpuburn UNITS
 *
 * One unit is a fixed amount of integer work (about a million simple operations over a small,
 * cache-resident table), so the run time is proportional to UNITS and the same on every run.
 * The work goes through a few call levels (main -> run -> batch -> {mix_row, fold_row} -> step)
 * so profilers see non-trivial stacks; build it with -fno-omit-frame-pointer
 * -fno-optimize-sibling-calls to keep every frame. No syscalls happen while working.
 *
 * On exit it prints one line on stdout:
 *   cpuburn units=N work_ns=NANOSECONDS cpu_ns=NANOSECONDS checksum=HEX
 * where work_ns is the CLOCK_MONOTONIC (wall) time spent on the work alone (process start-up and
 * exit excluded), cpu_ns the CPU time the process was charged for it (CLOCK_PROCESS_CPUTIME_ID:
 * includes interrupts that hit it, excludes time spent waiting for a CPU), and checksum depends
 * on every operation, so the compiler cannot drop any of it.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TABLE_WORDS 4096 /* 32 KiB: stays in L1/L2 */
#define ROW_WORDS 256
#define ROWS_PER_UNIT 4096 /* 4096 rows x 256 words = ~1M steps per unit */

static uint64_t table[TABLE_WORDS];

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t step(uint64_t h, uint64_t w)
{
	h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* Two leaves with different shapes, so the profile has more than one hot stack. */
__attribute__((noinline)) static uint64_t mix_row(uint64_t h, const uint64_t *row)
{
	for (int i = 0; i < ROW_WORDS; i++)
		h = step(h, row[i]);
	return h;
}

__attribute__((noinline)) static uint64_t fold_row(uint64_t h, uint64_t *row)
{
	for (int i = 0; i < ROW_WORDS; i++) {
		row[i] += h >> 7;
		h = (h << 13 | h >> 51) ^ row[i];
		h *= 0xc4ceb9fe1a85ec53ull;
	}
	return h;
}

__attribute__((noinline)) static uint64_t batch(uint64_t h, unsigned unit)
{
	for (unsigned r = 0; r < ROWS_PER_UNIT; r++) {
		uint64_t *row = &table[((r + unit) * ROW_WORDS) % TABLE_WORDS];

		if (r & 1)
			h = fold_row(h, row);
		else
			h = mix_row(h, row);
	}
	return h;
}

__attribute__((noinline)) static uint64_t run(unsigned long units)
{
	uint64_t h = 0x243f6a8885a308d3ull;

	for (unsigned long u = 0; u < units; u++)
		h = batch(h, (unsigned)u);
	return h;
}

int main(int argc, char **argv)
{
	unsigned long units;
	uint64_t t0, t1, c0, c1, sum;
	char *end;

	if (argc != 2 || (units = strtoul(argv[1], &end, 10)) == 0 || *end) {
		fprintf(stderr,
			"usage: %s UNITS (a positive integer; one unit is ~1M operations)\n",
			argv[0]);
		return 2;
	}
	for (int i = 0; i < TABLE_WORDS; i++)
		table[i] = (uint64_t)i * 0x2545f4914f6cdd1dull;

	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now_ns(CLOCK_MONOTONIC);
	sum = run(units);
	t1 = now_ns(CLOCK_MONOTONIC);
	c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	printf("cpuburn units=%lu work_ns=%" PRIu64 " cpu_ns=%" PRIu64 " checksum=%016" PRIx64 "\n",
	       units, t1 - t0, c1 - c0, sum);
	return 0;
}
