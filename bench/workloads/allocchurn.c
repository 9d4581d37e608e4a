/*
 * Benchmark workload for bench/events: many small heap allocations and frees of varied sizes with
 * a bit of work on each block (what the alloc profile type hooks), single-threaded and
 * deterministic.
 *
 * Usage: allocchurn UNITS
 *
 * Prints "ready PID" and waits for a line on stdin before working (a profiler can attach to the
 * PID first). One unit is 100000 iterations: free a block of a 4096-slot pool chosen by a
 * pseudo-random sequence, malloc a new one (16..1039 bytes; 1 in 64 of 4..64 KiB; 1 in 16 through
 * calloc, 1 in 16 through realloc of the old block), write and fold a few words of it. On exit one
 * line on stdout:
 *   allocchurn units=N work_ns=NANOSECONDS cpu_ns=NANOSECONDS checksum=HEX
 * (CLOCK_MONOTONIC and CLOCK_PROCESS_CPUTIME_ID over the work; the checksum is the same on every
 * run).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 4096
#define ITERS_PER_UNIT 100000

static void *pool[SLOTS];
static size_t sizes[SLOTS];

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Writes and folds a few words of the block: the bit of work per allocation. */
__attribute__((noinline)) static uint64_t touch(uint64_t h, unsigned char *p, size_t size)
{
	for (size_t off = 0; off + 8 <= size && off < 256; off += 32) {
		uint64_t w;

		memcpy(&w, p + off, 8);
		h = (h ^ w) * 0x100000001b3ull;
		memcpy(p + off, &h, 8);
	}
	return h;
}

__attribute__((noinline)) static uint64_t churn(uint64_t h, uint64_t *rng)
{
	unsigned slot, kind;
	size_t size;
	void *p;

	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	slot = (unsigned)(*rng >> 33) % SLOTS;
	kind = (unsigned)(*rng >> 20) & 63;
	size = 16 + ((*rng >> 40) & 1023);
	if (kind == 0)
		size = 4096 + ((*rng >> 44) & 0xffff) % 61440;
	if (kind % 16 == 1 && pool[slot]) {
		p = realloc(pool[slot], size);
	} else {
		free(pool[slot]);
		p = kind % 16 == 2 ? calloc(1, size) : malloc(size);
	}
	if (!p)
		abort();
	/* Only bytes written here are read: freed blocks hold address-dependent pointers. */
	memset(p, (int)(kind + 1), size < 264 ? size : 264);
	pool[slot] = p;
	sizes[slot] = size;
	return touch(h, p, size);
}

int main(int argc, char **argv)
{
	unsigned long units;
	uint64_t t0, t1, c0, c1, h = 0xcbf29ce484222325ull, rng = 42;
	char line[16], *end;

	if (argc != 2 || (units = strtoul(argv[1], &end, 10)) == 0 || *end) {
		fprintf(stderr,
			"usage: %s UNITS (a positive integer; one unit is 100000 "
			"allocations)\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now_ns(CLOCK_MONOTONIC);
	for (unsigned long i = 0; i < units * ITERS_PER_UNIT; i++)
		h = churn(h, &rng);
	t1 = now_ns(CLOCK_MONOTONIC);
	c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (unsigned i = 0; i < SLOTS; i++)
		free(pool[i]);
	printf("allocchurn units=%lu work_ns=%" PRIu64 " cpu_ns=%" PRIu64 " checksum=%016" PRIx64
	       "\n",
	       units, t1 - t0, c1 - c0, h);
	return 0;
}
