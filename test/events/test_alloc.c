// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the alloc profile's host side: which allocator entry points allocsyms finds in
 * real files (this process's libc, checked byte for byte against the code it runs; libstdc++;
 * a stand-in allocator library; a static executable; broken files), and the sampling arithmetic
 * shared with BPF: the exponential intervals of bpf/alloc.h, and the countdown of
 * bpf/alloc.bpf.h replayed in C with the agent's weights, whose totals must be unbiased.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "events/allocsample.h"
#include "events/allocsyms.h"

static const struct allocsym *find(const struct allocsyms *s, const char *name)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].name, name))
			return &s->e[i];
	return NULL;
}

static int find_path(const char *path, struct allocsyms *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	assert_true(fd >= 0);
	err = allocsyms__find_fd(fd, out);
	close(fd);
	return err;
}

/* The libc this test runs on: its entry points, at the offsets of the code that runs. */
static void test_libc(void **state)
{
	static const char *const want[] = {"malloc",	     "calloc", "realloc",
					   "posix_memalign", "valloc", "pvalloc"};
	Dl_info info;
	struct allocsyms s;
	const struct allocsym *e;
	unsigned char file[16];
	int fd;

	(void)state;
	assert_true(dladdr((void *)malloc, &info));
	assert_int_equal(find_path(info.dli_fname, &s), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_non_null(find(&s, want[i]));
	/* glibc's memalign and aligned_alloc are one function: one probe. */
	assert_true(!!find(&s, "aligned_alloc") + !!find(&s, "memalign") == 1);
	/* libc has no operator new. */
	assert_null(find(&s, "_Znwm"));
	assert_int_equal(s.n, 7);

	/* The file offset holds the bytes malloc runs (no uprobe in this process). */
	e = find(&s, "malloc");
	assert_true(e->size > 1);
	fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, file, sizeof(file), (off_t)e->offset), sizeof(file));
	close(fd);
	assert_memory_equal(file, (const void *)malloc, sizeof(file));
	assert_int_equal(e->kind, ALLOC_KIND_ARG1);
	assert_int_equal(find(&s, "calloc")->kind, ALLOC_KIND_CALLOC);
	assert_int_equal(find(&s, "realloc")->kind, ALLOC_KIND_ARG2);
	assert_int_equal(find(&s, "posix_memalign")->kind, ALLOC_KIND_ARG3);
}

/* libstdc++'s operator new calls libc's malloc: nothing to probe there. */
static void test_libstdcxx(void **state)
{
	static const char *const paths[] = {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
					    "/lib/x86_64-linux-gnu/libstdc++.so.6"};
	struct allocsyms s;
	size_t i;

	(void)state;
	for (i = 0; i < 2 && access(paths[i], R_OK); i++)
		;
	assert_true(i < 2); /* g++ is a build dependency (scripts/install-deps.sh) */
	assert_int_equal(find_path(paths[i], &s), 0);
	assert_int_equal(s.n, 0);
}

/* An allocator library with its own operator new: both families. */
static void test_allocator_library(void **state)
{
	struct allocsyms s;

	(void)state;
	assert_int_equal(find_path(ALLOC_PROGS_DIR "/libfakealloc.so", &s), 0);
	assert_non_null(find(&s, "malloc"));
	assert_non_null(find(&s, "calloc"));
	assert_non_null(find(&s, "_Znwm"));
	assert_null(find(&s, "realloc"));
	assert_int_equal(s.n, 3);
}

/* A static executable: malloc from .symtab. */
static void test_static_executable(void **state)
{
	struct allocsyms s;

	(void)state;
	assert_int_equal(find_path(ALLOC_PROGS_DIR "/staticprog", &s), 0);
	assert_non_null(find(&s, "malloc"));
	assert_non_null(find(&s, "realloc"));
}

static void write_file(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
}

/* Truncated, garbled and non-ELF files fail cleanly. */
static void test_broken_files(void **state)
{
	char tmp[] = "/tmp/test_alloc.XXXXXX";
	struct allocsyms s;
	unsigned char *buf;
	Dl_info info;
	struct stat st;
	int fd, err;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	assert_true(dladdr((void *)malloc, &info));
	fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && !fstat(fd, &st));
	buf = malloc(st.st_size);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, st.st_size, 0), st.st_size);
	close(fd);

	char path[64];
	snprintf(path, sizeof(path), "%s/f", tmp);
	/* Truncated at every power of two up to the whole file but one page. */
	for (off_t n = 16; n < st.st_size - 4096; n *= 2) {
		write_file(path, buf, (size_t)n);
		err = find_path(path, &s);
		assert_true(err < 0);
		assert_int_equal(s.n, 0);
	}
	/* The symbol table's entries garbled: names out of range, any result but a crash. */
	srand(7);
	for (int round = 0; round < 20; round++) {
		unsigned char *copy = malloc(st.st_size);

		assert_non_null(copy);
		memcpy(copy, buf, st.st_size);
		for (int i = 0; i < 4096; i++)
			copy[rand() % st.st_size] = (unsigned char)rand();
		write_file(path, copy, st.st_size);
		err = find_path(path, &s);
		assert_true(err <= 0 && s.n <= ALLOC_MAX_FUNCS);
		free(copy);
	}
	write_file(path, "#!/bin/sh\necho not elf\n", 23);
	assert_int_equal(find_path(path, &s), -ENOEXEC);
	unlink(path);
	rmdir(tmp);
	free(buf);
}

/* splitmix64: the test's own random bits. */
static uint64_t rnd(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The table: -ln(v) at both ends, decreasing. */
static void test_exp_table(void **state)
{
	uint32_t t[ALLOC_EXP_STEPS + 1];

	(void)state;
	alloc__exp_table(t);
	assert_int_equal(t[0], ALLOC_LN2_Q24);
	assert_int_equal(t[ALLOC_EXP_STEPS], 0);
	for (uint32_t i = 0; i < ALLOC_EXP_STEPS; i++)
		assert_true(t[i] > t[i + 1]);
}

/* Intervals are exponential with the mean asked for: mean, median, tails. */
static void test_intervals(void **state)
{
	const uint64_t mean = 512 << 10, n = 2000000;
	uint32_t t[ALLOC_EXP_STEPS + 1];
	uint64_t x = 42, over_median = 0, over_3 = 0, under_tenth = 0;
	double sum = 0;

	(void)state;
	alloc__exp_table(t);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = alloc__next_interval(mean, rnd(&x), t);

		assert_true(v >= 1);
		sum += (double)v;
		over_median += v > mean * M_LN2;
		over_3 += v > 3 * mean;
		under_tenth += v < mean / 10;
	}
	/* Standard errors: mean 0.07 %, P(> median) 0.035 %, the others below 0.02 %. */
	assert_true(fabs(sum / n / mean - 1) < 0.005);
	assert_true(fabs((double)over_median / n - 0.5) < 0.002);
	assert_true(fabs((double)over_3 / n - exp(-3)) < 0.001);
	assert_true(fabs((double)under_tenth / n - (1 - exp(-0.1))) < 0.001);

	/* Extremes of the random bits. */
	assert_int_equal(alloc__next_interval(mean, ~0ull, t), 1); /* V near 1: -ln V near 0 */
	assert_true(alloc__next_interval(mean, 1ull << 63, t) == (uint64_t)(mean * M_LN2) ||
		    alloc__next_interval(mean, 1ull << 63, t) == (uint64_t)(mean * M_LN2) + 1);
	/* r == 0: 64 ln 2 mean, no overflow at the largest mean. */
	assert_true(fabs((double)alloc__next_interval(mean, 0, t) / (64 * M_LN2 * mean) - 1) <
		    1e-4);
	assert_true(alloc__next_interval((1ull << 40) - 1, 0, t) > (1ull << 40) * 44);
}

static void test_weights(void **state)
{
	double c, b;

	(void)state;
	alloc__weights(512 << 10, 512 << 10, &c, &b);
	assert_true(fabs(c - 1 / (1 - exp(-1))) < 1e-12);
	assert_true(fabs(b - (512 << 10) / (1 - exp(-1))) < 1e-6);
	alloc__weights(64, 512 << 10, &c, &b); /* small: about mean / size allocations */
	assert_true(fabs(c - 8192.5) < 0.01);
	alloc__weights(1 << 30, 512 << 10, &c, &b); /* huge: always sampled, counts once */
	assert_true(c == 1 && b == (double)(1 << 30));
	alloc__weights(100, 0, &c, &b); /* no sampling */
	assert_true(c == 1 && b == 100);
}

static void test_round(void **state)
{
	uint64_t rng = 1, sum = 0;

	(void)state;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = alloc__round(1.25, &rng);

		assert_true(v == 1 || v == 2);
		sum += v;
	}
	assert_true(fabs(sum / 100000.0 - 1.25) < 0.01);
	assert_int_equal(alloc__round(7.0, &rng), 7);
	assert_int_equal(alloc__round(0, &rng), 0);
	assert_int_equal(alloc__round(-3, &rng), 0);
}

/*
 * The countdown of bpf/alloc.bpf.h replayed in C over a mix of sizes, with the agent's rounded
 * weights: the estimated count and bytes of each size match the truth (the default mean).
 */
static void test_estimates_unbiased(void **state)
{
	/* 512 MiB of each size: about 1024 samples each. */
	static const uint64_t sizes[] = {16, 1024, 65536, 524288, 4 << 20};
	static const uint64_t counts[] = {1 << 25, 1 << 19, 1 << 13, 1 << 10, 1 << 7};
	const uint64_t mean = 512 << 10;
	uint32_t t[ALLOC_EXP_STEPS + 1];
	double est_n[5] = {0}, est_b[5] = {0};
	uint64_t x = 99, rng = 5, left = 0, done[5] = {0};
	size_t k;

	(void)state;
	alloc__exp_table(t);
	/* Interleaved, as a program would. */
	for (uint64_t step = 0;; step++) {
		int any = 0;

		for (k = 0; k < 5; k++) {
			uint64_t size = sizes[k];
			double c, b;

			if (done[k] == counts[k] || (step % (counts[0] / counts[k]) != 0))
				continue;
			any = 1;
			done[k]++;
			if (!left)
				left = alloc__next_interval(mean, rnd(&x), t);
			if (size < left) {
				left -= size;
				continue;
			}
			left = alloc__next_interval(mean, rnd(&x), t);
			alloc__weights(size, mean, &c, &b);
			est_n[k] += (double)alloc__round(c, &rng);
			est_b[k] += (double)alloc__round(b, &rng);
		}
		if (!any)
			break;
	}
	for (k = 0; k < 5; k++) {
		double truth = (double)sizes[k] * counts[k];

		assert_int_equal(done[k], counts[k]);
		/* ~1024 samples: a standard error of 3 % at most; 12 % is 4 of them. */
		assert_true(fabs(est_b[k] / truth - 1) < 0.12);
		assert_true(fabs(est_n[k] / counts[k] - 1) < 0.12);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_libc),
	    cmocka_unit_test(test_libstdcxx),
	    cmocka_unit_test(test_allocator_library),
	    cmocka_unit_test(test_static_executable),
	    cmocka_unit_test(test_broken_files),
	    cmocka_unit_test(test_exp_table),
	    cmocka_unit_test(test_intervals),
	    cmocka_unit_test(test_weights),
	    cmocka_unit_test(test_round),
	    cmocka_unit_test(test_estimates_unbiased),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
