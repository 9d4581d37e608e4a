// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the in-memory profile model (exporter/profile.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "profile.h"

static int setup(void **state)
{
	*state = profile__new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	profile__free(*state);
	return 0;
}

static void assert_fresh(const struct profile *p)
{
	static const struct profile_mapping zm;
	static const struct profile_function zf;
	const struct profile_location *zl;

	assert_int_equal(profile__nstrings(p), 1);
	assert_string_equal(profile__string(p, 0), "");
	assert_null(profile__string(p, 1));
	assert_int_equal(profile__nmappings(p), 1);
	assert_memory_equal(profile__mapping(p, 0), &zm, sizeof(zm));
	assert_int_equal(profile__nfunctions(p), 1);
	assert_memory_equal(profile__function(p, 0), &zf, sizeof(zf));
	assert_int_equal(profile__nlocations(p), 1);
	zl = profile__location(p, 0);
	assert_int_equal(zl->mapping, 0);
	assert_int_equal(zl->address, 0);
	assert_int_equal(zl->kind, FRAME_UNSET);
	assert_int_equal(zl->nlines, 0);
	assert_null(profile__location_lines(p, 0));
	assert_int_equal(profile__nstacks(p), 1);
	assert_int_equal(profile__stack(p, 0)->nlocations, 0);
	assert_null(profile__stack_locations(p, 0));
	assert_int_equal(profile__nsamples(p), 0);
	assert_null(profile__sample(p, 0));
	assert_int_equal(profile__total_count(p), 0);
}

static void test_new_has_zero_elements(void **state)
{
	assert_fresh(*state);
	profile__free(NULL); /* no-op */
}

static void test_strings(void **state)
{
	struct profile *p = *state;
	char buf[32];

	assert_int_equal(profile__intern_string(p, NULL), 0);
	assert_int_equal(profile__intern_string(p, ""), 0);
	assert_int_equal(profile__intern_string(p, "a"), 1);
	assert_int_equal(profile__intern_string(p, "bb"), 2);
	assert_int_equal(profile__intern_string(p, "a"), 1);
	assert_int_equal(profile__nstrings(p), 3);
	assert_string_equal(profile__string(p, 2), "bb");
	assert_int_equal(profile__find_string(p, "bb"), 2);
	assert_int_equal(profile__find_string(p, "zz"), 0);
	assert_int_equal(profile__find_string(p, ""), 0);
	assert_int_equal(profile__nstrings(p), 3);

	/* Enough to grow (and move) the pool and index many times. */
	for (int i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "sym_%d", i);
		assert_int_equal(profile__intern_string(p, buf), 3 + i);
	}
	for (int i = 0; i < 20000; i += 7) {
		snprintf(buf, sizeof(buf), "sym_%d", i);
		assert_int_equal(profile__intern_string(p, buf), 3 + i);
		assert_string_equal(profile__string(p, 3 + i), buf);
	}
	assert_int_equal(profile__nstrings(p), 20003);
}

static void test_string_from_own_pool(void **state)
{
	struct profile *p = *state;
	uint32_t a = profile__intern_string(p, "prefix_suffix"), b;

	/* A suffix of a held string, while the pool grows under it. */
	for (int i = 0; i < 5000; i++) {
		const char *s = profile__string(p, a);

		b = profile__intern_string(p, s + 7 + (i % 3));
		assert_string_equal(profile__string(p, b), &"suffix"[i % 3]);
		if (i % 3 == 0) {
			char buf[16];

			snprintf(buf, sizeof(buf), "x%d", i);
			profile__intern_string(p, buf);
		}
	}
	assert_int_equal(profile__intern_string(p, profile__string(p, a)), a);
	assert_int_not_equal(profile__find_string(p, "suffix"), 0);
	assert_int_not_equal(profile__find_string(p, "uffix"), 0);
	assert_int_equal(profile__find_string(p, "uffix"), b); /* last round: i % 3 == 1 */
	assert_string_equal(profile__string(p, a), "prefix_suffix");
}

static void test_mappings(void **state)
{
	struct profile *p = *state;
	struct profile_mapping zero = {0}, m = {
					       .memory_start = 0x400000,
					       .memory_limit = 0x500000,
					       .file_offset = 0x1000,
					       .filename = profile__intern_string(p, "/bin/app"),
					       .build_id = profile__intern_string(p, "abcd"),
					   };
	struct profile_mapping m2 = m;

	assert_int_equal(profile__intern_mapping(p, &zero), 0);
	assert_int_equal(profile__intern_mapping(p, &m), 1);
	assert_int_equal(profile__intern_mapping(p, &m), 1);
	m2.build_id = 0;
	assert_int_equal(profile__intern_mapping(p, &m2), 2);
	assert_int_equal(profile__nmappings(p), 3);
	assert_memory_equal(profile__mapping(p, 1), &m, sizeof(m));
	assert_null(profile__mapping(p, 3));

	for (uint32_t i = 0; i < 3000; i++) {
		m2.memory_start = 0x10000000 + i * 0x1000;
		assert_int_equal(profile__intern_mapping(p, &m2), 3 + i);
	}
	m2.memory_start = 0x10000000 + 1234 * 0x1000;
	assert_int_equal(profile__intern_mapping(p, &m2), 3 + 1234);
	assert_int_equal(profile__intern_mapping(p, &m), 1);

	m2.filename = 99999; /* no such string */
	errno = 0;
	assert_int_equal(profile__intern_mapping(p, &m2), 0);
	assert_int_equal(errno, EINVAL);
}

static void test_functions(void **state)
{
	struct profile *p = *state;
	struct profile_function zero = {0}, f = {
						.name = profile__intern_string(p, "foo()"),
						.system_name = profile__intern_string(p, "_Z3foov"),
						.filename = profile__intern_string(p, "foo.cc"),
					    };
	struct profile_function g = f;

	assert_int_equal(profile__intern_function(p, &zero), 0);
	assert_int_equal(profile__intern_function(p, &f), 1);
	g.filename = 0;
	assert_int_equal(profile__intern_function(p, &g), 2);
	assert_int_equal(profile__intern_function(p, &f), 1);
	assert_int_equal(profile__nfunctions(p), 3);
	assert_int_equal(profile__function(p, 2)->filename, 0);
	assert_int_equal(profile__function(p, 1)->system_name, f.system_name);
	g.name = 12345;
	errno = 0;
	assert_int_equal(profile__intern_function(p, &g), 0);
	assert_int_equal(errno, EINVAL);
}

/* Interns functions f1..fn named "f<i>" and returns the index of f1. */
static uint32_t add_functions(struct profile *p, int n)
{
	uint32_t first = 0;
	char name[16];

	for (int i = 1; i <= n; i++) {
		struct profile_function f = {0};
		uint32_t idx;

		snprintf(name, sizeof(name), "f%d", i);
		f.name = profile__intern_string(p, name);
		idx = profile__intern_function(p, &f);
		if (i == 1)
			first = idx;
	}
	return first;
}

static void test_locations_and_inline_lines(void **state)
{
	struct profile *p = *state;
	uint32_t f = add_functions(p, 3);
	struct profile_line chain[2] = {
	    {.function = f + 2, .line = 7}, /* inlined callee */
	    {.function = f, .line = 42},    /* physical function */
	};
	struct profile_line other = {.function = f + 1, .line = 1};
	const struct profile_line *lines;
	uint32_t a, b, k;

	assert_int_equal(profile__find_location(p, 0, 0x1000, FRAME_NATIVE), 0);
	a = profile__intern_location(p, 0, 0x1000, FRAME_NATIVE, chain, 2);
	assert_int_equal(a, 1);
	assert_int_equal(profile__find_location(p, 0, 0x1000, FRAME_NATIVE), a);
	/* Same key, other lines: the first lines stay. */
	assert_int_equal(profile__intern_location(p, 0, 0x1000, FRAME_NATIVE, &other, 1), a);
	assert_int_equal(profile__location(p, a)->nlines, 2);
	lines = profile__location_lines(p, a);
	assert_int_equal(lines[0].function, f + 2);
	assert_int_equal(lines[0].line, 7);
	assert_int_equal(lines[1].function, f);
	assert_int_equal(lines[1].line, 42);

	/* kind is part of the key. */
	k = profile__intern_location(p, 0, 0x1000, FRAME_KERNEL, NULL, 0);
	assert_int_equal(k, 2);
	assert_int_equal(profile__location(p, k)->kind, FRAME_KERNEL);
	assert_null(profile__location_lines(p, k));
	/* The zero location. */
	assert_int_equal(profile__intern_location(p, 0, 0, FRAME_UNSET, &other, 1), 0);

	/* Lines copied from the profile's own pool while it grows. */
	for (uint32_t i = 0; i < 2000; i++) {
		b = profile__intern_location(p, 0, 0x2000 + i, FRAME_NATIVE,
					     profile__location_lines(p, a), 2);
		assert_int_equal(b, 3 + i);
	}
	lines = profile__location_lines(p, b);
	assert_int_equal(lines[0].function, f + 2);
	assert_int_equal(lines[1].line, 42);

	errno = 0;
	other.function = 999;
	assert_int_equal(profile__intern_location(p, 0, 0x9999, FRAME_NATIVE, &other, 1), 0);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(profile__intern_location(p, 77, 0x9999, FRAME_NATIVE, NULL, 0), 0);
	assert_int_equal(errno, EINVAL);
}

static void test_stacks(void **state)
{
	struct profile *p = *state;
	uint32_t locs[300], s1, s2, s3, sub;

	for (uint32_t i = 0; i < 300; i++)
		locs[i] = profile__intern_location(p, 0, 0x1000 + i, FRAME_NATIVE, NULL, 0);
	assert_int_equal(profile__intern_stack(p, locs, 0), 0);
	s1 = profile__intern_stack(p, locs, 3);
	assert_int_equal(s1, 1);
	assert_int_equal(profile__intern_stack(p, locs, 3), s1);
	s2 = profile__intern_stack(p, locs, 2); /* a prefix is another stack */
	assert_int_equal(s2, 2);
	{
		uint32_t rev[3] = {locs[2], locs[1], locs[0]};

		s3 = profile__intern_stack(p, rev, 3); /* order matters */
		assert_int_equal(s3, 3);
	}
	assert_int_equal(profile__stack(p, s1)->nlocations, 3);
	assert_memory_equal(profile__stack_locations(p, s1), locs, 3 * sizeof(*locs));
	assert_int_equal(profile__stack_locations(p, s3)[0], locs[2]);

	/* Many deep stacks: the pool moves; sub-ranges of it are interned too. */
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t n = 1 + i % 300;
		uint32_t s = profile__intern_stack(p, locs + (300 - n), n);

		if (i >= 300)
			assert_int_equal(s, profile__intern_stack(p, locs + (300 - n), n));
		sub = profile__intern_stack(p, profile__stack_locations(p, s) + n / 2, n - n / 2);
		assert_int_equal(profile__stack(p, sub)->nlocations, n - n / 2);
		assert_memory_equal(profile__stack_locations(p, sub), locs + (300 - n) + n / 2,
				    (n - n / 2) * sizeof(*locs));
	}
	assert_int_equal(profile__intern_stack(p, locs, 3), s1);

	{
		uint32_t bad[2] = {locs[0], 0};

		errno = 0;
		assert_int_equal(profile__intern_stack(p, bad, 2), 0);
		assert_int_equal(errno, EINVAL);
		bad[1] = 100000;
		assert_int_equal(profile__intern_stack(p, bad, 2), 0);
	}
}

static uint32_t one_stack(struct profile *p, uint64_t addr)
{
	uint32_t loc = profile__intern_location(p, 0, addr, FRAME_NATIVE, NULL, 0);

	return profile__intern_stack(p, &loc, 1);
}

static void test_samples_merge_and_timestamps(void **state)
{
	struct profile *p = *state;
	struct profile_sample_key k = {
	    .stack = one_stack(p, 0x10),
	    .pid = 10,
	    .tid = 11,
	    .cpu = 0,
	    .comm = profile__intern_string(p, "worker"),
	    .process_name = profile__intern_string(p, "app"),
	};
	struct profile_sample_key k2 = k;
	const struct profile_sample *s;

	assert_int_equal(profile__add_sample(p, &k, 1000, 1), 0);
	assert_int_equal(profile__add_sample(p, &k, 3000, 1), 0);
	assert_int_equal(profile__add_sample(p, &k, 0, 5), 0); /* no timestamp */
	k2.cpu = 1;					       /* another CPU: another sample */
	assert_int_equal(profile__add_sample(p, &k2, 2000, 1), 0);
	assert_int_equal(profile__add_sample(p, &k, 4000, 1), 0);

	assert_int_equal(profile__nsamples(p), 2);
	assert_int_equal(profile__total_count(p), 9);
	s = profile__sample(p, 0); /* first seen first */
	assert_memory_equal(&s->key, &k, sizeof(k));
	assert_int_equal(s->count, 8);
	assert_int_equal(s->ntimestamps, 3);
	assert_int_equal(s->timestamps_unix_nano[0], 1000);
	assert_int_equal(s->timestamps_unix_nano[1], 3000);
	assert_int_equal(s->timestamps_unix_nano[2], 4000);
	s = profile__sample(p, 1);
	assert_int_equal(s->key.cpu, 1);
	assert_int_equal(s->count, 1);
	assert_int_equal(s->ntimestamps, 1);
	assert_int_equal(s->timestamps_unix_nano[0], 2000);
	assert_null(profile__sample(p, 2));

	k2.stack = 999;
	assert_int_equal(profile__add_sample(p, &k2, 1, 1), -EINVAL);
	k2.stack = k.stack;
	k2.comm = 999;
	assert_int_equal(profile__add_sample(p, &k2, 1, 1), -EINVAL);
	assert_int_equal(profile__total_count(p), 9);
}

static void test_many_samples(void **state)
{
	struct profile *p = *state;
	uint32_t stacks[64];
	uint64_t want = 0;

	for (int i = 0; i < 64; i++)
		stacks[i] = one_stack(p, 0x1000 + i);
	/* 64 stacks x 50 threads, interleaved: the sample array moves often. */
	for (uint32_t round = 0; round < 20; round++) {
		for (uint32_t i = 0; i < 64 * 50; i++) {
			struct profile_sample_key k = {.stack = stacks[i % 64], .tid = i / 64};

			assert_int_equal(profile__add_sample(p, &k, 1 + round, 1), 0);
			want++;
		}
	}
	assert_int_equal(profile__nsamples(p), 64 * 50);
	assert_int_equal(profile__total_count(p), want);
	for (uint32_t i = 0; i < 64 * 50; i++) {
		const struct profile_sample *s = profile__sample(p, i);

		assert_int_equal(s->key.stack, stacks[i % 64]);
		assert_int_equal(s->key.tid, i / 64);
		assert_int_equal(s->count, 20);
		assert_int_equal(s->ntimestamps, 20);
		for (uint32_t r = 0; r < 20; r++)
			assert_int_equal(s->timestamps_unix_nano[r], 1 + r);
	}
}

static void fill(struct profile *p, int n)
{
	char buf[32];

	for (int i = 0; i < n; i++) {
		struct profile_function f = {0};
		struct profile_line line;
		struct profile_sample_key k = {0};
		uint32_t loc;

		snprintf(buf, sizeof(buf), "fn_%d", i);
		f.name = profile__intern_string(p, buf);
		line.function = profile__intern_function(p, &f);
		line.line = i;
		loc = profile__intern_location(p, 0, 0x1000 + i, FRAME_NATIVE, &line, 1);
		k.stack = profile__intern_stack(p, &loc, 1);
		k.tid = i;
		assert_int_equal(profile__add_sample(p, &k, 100 + i, 1), 0);
	}
}

static void test_meta_and_reset(void **state)
{
	struct profile *p = *state;
	struct profile_meta m = {
	    .start_unix_nano = 1700000000000000000ull,
	    .duration_nano = 5000000000ull,
	    .period_nano = 10101010,
	    .frequency_hz = 99,
	};
	size_t after_first;

	profile__set_meta(p, &m);
	assert_int_equal(profile__meta(p)->start_unix_nano, m.start_unix_nano);
	assert_int_equal(profile__meta(p)->duration_nano, m.duration_nano);
	assert_int_equal(profile__meta(p)->period_nano, m.period_nano);
	assert_int_equal(profile__meta(p)->frequency_hz, 99);
	fill(p, 5000);
	assert_int_equal(profile__nsamples(p), 5000);
	profile__reset(p);
	assert_fresh(p);
	assert_int_equal(profile__meta(p)->period_nano, 0);
	/* Usable again, indices restart at 1. */
	assert_int_equal(profile__intern_string(p, "fn_4999"), 1);
	assert_int_equal(profile__find_string(p, "fn_0"), 0);
	profile__reset(p);

	/* Windows of equal size reuse the memory of the first. */
	fill(p, 5000);
	after_first = profile__memory_usage(p);
	for (int i = 0; i < 5; i++) {
		profile__reset(p);
		fill(p, 5000);
		assert_true(profile__memory_usage(p) <= after_first);
	}
	/* Per-sample cost stays small: well under 1 KiB per distinct sample. */
	assert_true(after_first < 5000 * 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_new_has_zero_elements, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_strings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_string_from_own_pool, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mappings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_functions, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_locations_and_inline_lines, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stacks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_samples_merge_and_timestamps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_samples, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_meta_and_reset, setup, teardown),
	};

	return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
