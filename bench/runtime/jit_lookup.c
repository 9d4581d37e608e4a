// SPDX-License-Identifier: Apache-2.0
/*
 * JIT naming benchmark (exporter/runtime/jit, runtime/jit): the steady-state cost per JIT
 * frame of a perf-map lookup, against a plain binary search over the same starts measured in
 * the same run; the cost of reading a V8-sized map at first sight, of taking a batch of lines
 * appended to it (the table is rebuilt), and of the re-check a lookup pays at most every
 * JITPROC_REFRESH_NS per process when nothing was appended (open in the process's root, fstat).
 * No root. Prints figures, never fails on them. See docs/performance.md.
 *   build/bench/jit_lookup [-n ENTRIES] [-l LOOKUPS]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/jit/jitfile.h"
#include "runtime/jit/perfmap.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* @n V8-like lines: code objects of 64-4096 bytes, 16-byte aligned, from @base. */
static char *make_map(uint64_t base, uint32_t n, uint64_t *starts, size_t *len)
{
	size_t cap = (size_t)n * 96, off = 0;
	char *buf = malloc(cap);
	uint64_t a = base, seed = 42;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t size = 64 + (rnd(&seed) % 4032 & ~15ull);

		starts[i] = a;
		off += (size_t)snprintf(buf + off, cap - off,
					"%llx %llx JS:*handler%u /srv/app/routes/r%u.js:%u:%u\n",
					(unsigned long long)a, (unsigned long long)size, i, i % 97,
					i % 400 + 1, i % 60 + 1);
		a += size + 16;
	}
	*len = off;
	return buf;
}

int main(int argc, char **argv)
{
	uint32_t n = 100000, lookups = 2000000, batch = 1000;
	uint64_t *starts, seed = 7, sink = 0, t0, t_map, t_base, t_first, t_batch, t_check;
	struct perfmap *m = perfmap__new(1u << 20, 64ull << 20, 256ull << 20);
	char *text, *more, dir[] = "/tmp/spanprof-bench-jit-XXXXXX", path[128];
	struct jittab_sym s;
	size_t len, more_len, consumed;
	int opt, checks = 2000;

	while ((opt = getopt(argc, argv, "n:l:")) != -1) {
		if (opt == 'n')
			n = (uint32_t)strtoul(optarg, NULL, 10);
		else if (opt == 'l')
			lookups = (uint32_t)strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	starts = calloc(n + batch, sizeof(*starts));
	if (!m || !starts)
		return 1;
	text = make_map(0x3e0000000000ull, n, starts, &len);
	more = make_map(0x3f0000000000ull, batch, starts + n, &more_len);

	t0 = now_ns();
	if (perfmap__feed(m, text, len, &consumed))
		return 1;
	t_first = now_ns() - t0;
	t0 = now_ns();
	if (perfmap__feed(m, more, more_len, &consumed))
		return 1;
	t_batch = now_ns() - t0;

	/* Lookups at random PCs inside the ranges (the steady state: every frame names). */
	t0 = now_ns();
	for (uint32_t i = 0; i < lookups; i++) {
		uint64_t pc = starts[rnd(&seed) % n] + 8;

		if (!perfmap__lookup(m, pc, &s))
			sink += s.start;
	}
	t_map = now_ns() - t0;
	/* Baseline: a binary search over the same starts, nothing else. */
	seed = 7;
	t0 = now_ns();
	for (uint32_t i = 0; i < lookups; i++) {
		uint64_t pc = starts[rnd(&seed) % n] + 8;
		size_t lo = 0, hi = n;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (starts[mid] <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		sink += lo;
	}
	t_base = now_ns() - t0;

	printf("perf map of %u lines (%.1f MiB) + %u, %zu ranges held, %.1f MiB of table\n", n,
	       len / 1048576.0, batch, jittab__count(perfmap__table(m)),
	       jittab__bytes(perfmap__table(m)) / 1048576.0);
	/* The re-check when nothing was appended: open in the root, fstat, close, update. */
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/tmp", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/tmp/perf-1.map", dir);
	{
		FILE *f = fopen(path, "w");
		struct stat st;
		enum jitfile_reason why;

		fwrite(more, 1, more_len, f);
		fclose(f);
		t0 = now_ns();
		for (int i = 0; i < checks; i++) {
			int fd = jitfile__open(dir, "/tmp/perf-1.map", getuid(), getuid(),
					       256ull << 20, &st, &why, NULL);

			if (fd < 0)
				return 1;
			sink += (uint64_t)perfmap__update(m, fd, &st);
			close(fd);
		}
		t_check = now_ns() - t0;
		unlink(path);
		snprintf(path, sizeof(path), "%s/tmp", dir);
		rmdir(path);
		rmdir(dir);
	}

	printf("  first read:            %8.1f ms (%.0f ns per line)\n", t_first / 1e6,
	       (double)t_first / n);
	printf("  %u lines appended:   %8.1f ms (%.0f ns per range held: merged)\n", batch,
	       t_batch / 1e6, (double)t_batch / (n + batch));
	printf("  lookup per JIT frame:  %8.1f ns (binary search alone: %.1f ns, ratio %.2f)\n",
	       (double)t_map / lookups, (double)t_base / lookups, (double)t_map / t_base);
	printf("  re-check, nothing new: %8.1f us (at most once per %u ms per process; the "
	       "map above is replaced by a %u-line file first)\n",
	       t_check / 1e3 / checks, 100, batch);
	perfmap__free(m);
	free(text);
	free(more);
	free(starts);
	return sink == 1 ? 1 : 0;
}
