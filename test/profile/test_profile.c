// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the in-memory profile model (exporter/profile/profile.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"

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
	static const struct profile_link zlink;
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
	assert_int_equal(profile__nlinks(p), 1);
	assert_memory_equal(profile__link(p, 0), &zlink, sizeof(zlink));
	assert_null(profile__link(p, 1));
	assert_int_equal(profile__nattrsets(p), 1);
	assert_int_equal(profile__attrset(p, 0)->nattrs, 0);
	assert_null(profile__attrset(p, 1));
	assert_null(profile__attrset_attrs(p, 1));
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

/* A location unnamed first and named later (a debug file that arrived): same index, new lines. */
static void test_set_location_lines(void **state)
{
	struct profile *p = *state;
	uint32_t f = add_functions(p, 2);
	struct profile_line named[2] = {{.function = f + 1, .line = 3}, {.function = f, .line = 9}};
	struct profile_line bad = {.function = 999};
	uint32_t a, b, st;
	const struct profile_line *lines;

	a = profile__intern_location(p, 0, 0x1000, FRAME_NATIVE, NULL, 0);
	b = profile__intern_location(p, 0, 0x2000, FRAME_NATIVE, NULL, 0);
	st = profile__intern_stack(p, (uint32_t[]){a, b}, 2);
	assert_int_equal(profile__set_location_lines(p, a, named, 2), 0);
	assert_int_equal(profile__location(p, a)->nlines, 2);
	lines = profile__location_lines(p, a);
	assert_int_equal(lines[0].function, f + 1);
	assert_int_equal(lines[0].line, 3);
	assert_int_equal(lines[1].line, 9);
	/* Found under the same key, held by the same stack; the other location untouched. */
	assert_int_equal(profile__find_location(p, 0, 0x1000, FRAME_NATIVE), a);
	assert_int_equal(profile__stack_locations(p, st)[0], a);
	assert_int_equal(profile__location(p, b)->nlines, 0);
	/* Errors leave the location as it was. */
	assert_int_equal(profile__set_location_lines(p, 0, named, 1), -EINVAL);
	assert_int_equal(profile__set_location_lines(p, 999, named, 1), -EINVAL);
	assert_int_equal(profile__set_location_lines(p, b, &bad, 1), -EINVAL);
	assert_int_equal(profile__set_location_lines(p, b, lines, 1), -EINVAL); /* own pool */
	assert_int_equal(profile__location(p, b)->nlines, 0);
	assert_int_equal(profile__location(p, a)->nlines, 2);
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

/* A link whose ids are derived from @i (never all zero). */
static struct profile_link make_link(uint32_t i)
{
	struct profile_link l;

	for (int j = 0; j < 16; j++)
		l.trace_id[j] = (uint8_t)(i >> (8 * (j % 4))) ^ (uint8_t)(0x11 * j);
	for (int j = 0; j < 8; j++)
		l.span_id[j] = (uint8_t)(i >> (8 * (j % 4))) ^ (uint8_t)(0x5a + j);
	l.span_id[7] |= 1;
	return l;
}

static void test_links(void **state)
{
	struct profile *p = *state;
	struct profile_link zero = {0}, a = make_link(1), b = a, c = a, only_trace = {0},
			    only_span = {0};

	assert_int_equal(profile__intern_link(p, &zero), 0);
	assert_int_equal(profile__nlinks(p), 1);
	assert_int_equal(profile__intern_link(p, &a), 1);
	assert_int_equal(profile__intern_link(p, &a), 1);
	b.span_id[0] ^= 0xff; /* same trace, other span */
	assert_int_equal(profile__intern_link(p, &b), 2);
	c.trace_id[15] ^= 0xff; /* same span, other trace */
	assert_int_equal(profile__intern_link(p, &c), 3);
	/* Half-zero links are links, not "no span". */
	only_trace.trace_id[0] = 1;
	only_span.span_id[7] = 1;
	assert_int_equal(profile__intern_link(p, &only_trace), 4);
	assert_int_equal(profile__intern_link(p, &only_span), 5);
	assert_int_equal(profile__intern_link(p, &b), 2);
	assert_int_equal(profile__nlinks(p), 6);
	assert_memory_equal(profile__link(p, 1), &a, sizeof(a));
	assert_memory_equal(profile__link(p, 2), &b, sizeof(b));
	assert_memory_equal(profile__link(p, 3), &c, sizeof(c));
	assert_memory_equal(profile__link(p, 0), &zero, sizeof(zero));
	assert_null(profile__link(p, 6));

	/* Many links: the table and its index move; a link read from the table is found. */
	for (uint32_t i = 0; i < 20000; i++) {
		struct profile_link l = make_link(1000 + i);

		assert_int_equal(profile__intern_link(p, &l), 6 + i);
	}
	assert_int_equal(profile__nlinks(p), 20006);
	for (uint32_t i = 0; i < 20000; i += 7) {
		struct profile_link l = make_link(1000 + i);

		assert_int_equal(profile__intern_link(p, &l), 6 + i);
		assert_memory_equal(profile__link(p, 6 + i), &l, sizeof(l));
		assert_int_equal(profile__intern_link(p, profile__link(p, 6 + i)), 6 + i);
	}
	assert_int_equal(profile__intern_link(p, &a), 1);
	assert_memory_equal(profile__link(p, 1), &a, sizeof(a));
	assert_int_equal(profile__intern_link(p, &zero), 0);
	assert_int_equal(profile__nlinks(p), 20006);
}

static void assert_attrset(const struct profile *p, uint32_t set, const struct profile_attr *want,
			   uint32_t n)
{
	assert_non_null(profile__attrset(p, set));
	assert_int_equal(profile__attrset(p, set)->nattrs, n);
	assert_memory_equal(profile__attrset_attrs(p, set), want, n * sizeof(*want));
}

static void test_attrsets(void **state)
{
	struct profile *p = *state;
	uint32_t route = profile__intern_string(p, "http.route");
	uint32_t user = profile__intern_string(p, "user");
	uint32_t api = profile__intern_string(p, "/api");
	uint32_t alice = profile__intern_string(p, "alice");
	struct profile_attr one[1] = {{route, api}};
	struct profile_attr two[2] = {{route, api}, {user, alice}};
	struct profile_attr rev[2] = {{user, alice}, {route, api}};
	struct profile_attr swapped[2] = {{route, alice}, {user, api}};
	struct profile_attr empty_value[1] = {{user, 0}};
	struct profile_attr copy[2];
	uint32_t nstrings = profile__nstrings(p);

	assert_int_equal(profile__intern_attrset(p, NULL, 0), 0);
	assert_int_equal(profile__intern_attrset(p, two, 0), 0);
	assert_int_equal(profile__nattrsets(p), 1);
	assert_int_equal(profile__intern_attrset(p, one, 1), 1);
	assert_int_equal(profile__intern_attrset(p, two, 2), 2);
	/* Equal content from another array is the same set. */
	memcpy(copy, two, sizeof(copy));
	assert_int_equal(profile__intern_attrset(p, copy, 2), 2);
	assert_int_equal(profile__intern_attrset(p, copy, 1), 1); /* a prefix: the 1-set */
	/* Order and pairing matter. */
	assert_int_equal(profile__intern_attrset(p, rev, 2), 3);
	assert_int_equal(profile__intern_attrset(p, swapped, 2), 4);
	/* An empty value is a value. */
	assert_int_equal(profile__intern_attrset(p, empty_value, 1), 5);
	assert_int_equal(profile__nattrsets(p), 6);
	assert_attrset(p, 1, one, 1);
	assert_attrset(p, 2, two, 2);
	assert_attrset(p, 3, rev, 2);
	assert_attrset(p, 4, swapped, 2);
	assert_attrset(p, 5, empty_value, 1);
	assert_int_equal(profile__attrset(p, 0)->nattrs, 0);
	assert_null(profile__attrset(p, 6));
	assert_null(profile__attrset_attrs(p, 6));

	/* Key 0, out-of-range key or value: EINVAL, nothing added. */
	{
		struct profile_attr bad[3][2] = {
		    {{route, api}, {0, alice}},
		    {{route, api}, {nstrings, alice}},
		    {{route, api}, {user, nstrings + 100}},
		};

		for (int i = 0; i < 3; i++) {
			errno = 0;
			assert_int_equal(profile__intern_attrset(p, bad[i], 2), 0);
			assert_int_equal(errno, EINVAL);
		}
		assert_int_equal(profile__nattrsets(p), 6);
	}
	/* Strings interned after the set's strings are valid too. */
	one[0].value = profile__intern_string(p, "/later");
	assert_int_equal(profile__intern_attrset(p, one, 1), 6);
	assert_int_equal(profile__nattrsets(p), 7);
}

static void test_attrsets_grow(void **state)
{
	struct profile *p = *state;
	struct profile_attr attrs[8];
	uint32_t keys[8], first = profile__nattrsets(p);
	char buf[32];

	for (int k = 0; k < 8; k++) {
		snprintf(buf, sizeof(buf), "key%d", k);
		keys[k] = profile__intern_string(p, buf);
	}
	/* Sets of 1..8 attributes with distinct values: the pool and the index move often. */
	for (uint32_t i = 0; i < 6000; i++) {
		uint32_t n = 1 + i % 8;

		for (uint32_t k = 0; k < n; k++) {
			snprintf(buf, sizeof(buf), "v%u_%u", i, k);
			attrs[k] = (struct profile_attr){keys[k], profile__intern_string(p, buf)};
		}
		assert_int_equal(profile__intern_attrset(p, attrs, n), first + i);
	}
	assert_int_equal(profile__nattrsets(p), first + 6000);
	/* Every set still found by content and still holding it. */
	for (uint32_t i = 0; i < 6000; i += 5) {
		uint32_t n = 1 + i % 8;

		for (uint32_t k = 0; k < n; k++) {
			snprintf(buf, sizeof(buf), "v%u_%u", i, k);
			attrs[k] = (struct profile_attr){keys[k], profile__find_string(p, buf)};
		}
		assert_int_equal(profile__intern_attrset(p, attrs, n), first + i);
		assert_attrset(p, first + i, attrs, n);
	}
	assert_int_equal(profile__nattrsets(p), first + 6000);
}

static void test_samples_split_by_link_and_attrs(void **state)
{
	struct profile *p = *state;
	struct profile_link la = make_link(1), lb = make_link(2);
	struct profile_attr a1[1] = {
	    {profile__intern_string(p, "k"), profile__intern_string(p, "x")}};
	struct profile_attr a2[1] = {{a1[0].key, profile__intern_string(p, "y")}};
	struct profile_sample_key base = {
	    .stack = one_stack(p, 0x10),
	    .pid = 10,
	    .tid = 11,
	    .cpu = 2,
	    .comm = profile__intern_string(p, "worker"),
	    .process_name = profile__intern_string(p, "app"),
	};
	uint32_t links[2] = {profile__intern_link(p, &la), profile__intern_link(p, &lb)};
	uint32_t sets[2] = {profile__intern_attrset(p, a1, 1), profile__intern_attrset(p, a2, 1)};
	struct profile_sample_key keys[9];
	uint32_t n = 0;

	assert_true(links[0] && links[1] && sets[0] && sets[1]);
	/* Every {link, attrs} combination of one stack/thread/cpu: 9 samples. */
	for (uint32_t l = 0; l < 3; l++) {
		for (uint32_t a = 0; a < 3; a++) {
			keys[n] = base;
			keys[n].link = l ? links[l - 1] : 0;
			keys[n].attrs = a ? sets[a - 1] : 0;
			assert_int_equal(profile__add_sample(p, &keys[n], 1000 + n, 1 + n), 0);
			n++;
		}
	}
	/* Again: each merges into its own sample. */
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(profile__add_sample(p, &keys[i], 2000 + i, 1), 0);
	assert_int_equal(profile__nsamples(p), 9);
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_sample *s = profile__sample(p, i);

		assert_memory_equal(&s->key, &keys[i], sizeof(keys[i]));
		assert_int_equal(s->count, 2 + i);
		assert_int_equal(s->ntimestamps, 2);
		assert_int_equal(s->timestamps_unix_nano[0], 1000 + i);
		assert_int_equal(s->timestamps_unix_nano[1], 2000 + i);
	}
	assert_int_equal(profile__total_count(p), 9 * 2 + 36);

	/* Out-of-range link or attribute set: -EINVAL, nothing counted. */
	keys[0].link = profile__nlinks(p);
	assert_int_equal(profile__add_sample(p, &keys[0], 1, 1), -EINVAL);
	keys[0].link = 0;
	keys[0].attrs = profile__nattrsets(p);
	assert_int_equal(profile__add_sample(p, &keys[0], 1, 1), -EINVAL);
	keys[0].attrs = UINT32_MAX;
	assert_int_equal(profile__add_sample(p, &keys[0], 1, 1), -EINVAL);
	assert_int_equal(profile__nsamples(p), 9);
	assert_int_equal(profile__total_count(p), 9 * 2 + 36);
}

/* A window with span links and context attributes: @n samples, each its own link. */
static void fill_linked(struct profile *p, uint32_t n)
{
	uint32_t key = profile__intern_string(p, "http.route");
	uint32_t stack = one_stack(p, 0x10);
	char buf[32];

	for (uint32_t i = 0; i < n; i++) {
		struct profile_link l = make_link(i);
		struct profile_attr a[4];
		struct profile_sample_key k = {.stack = stack, .tid = i % 7};

		for (uint32_t j = 0; j < 4; j++) {
			snprintf(buf, sizeof(buf), "/r/%u/%u", i, j);
			a[j] = (struct profile_attr){key, profile__intern_string(p, buf)};
		}
		k.link = profile__intern_link(p, &l);
		k.attrs = profile__intern_attrset(p, a, 4);
		assert_true(k.link && k.attrs);
		assert_int_equal(profile__add_sample(p, &k, 100 + i, 1), 0);
	}
}

static void test_links_reset_and_memory(void **state)
{
	struct profile *p = *state;
	struct profile *twin = profile__new();
	struct profile_link l = make_link(7);
	struct profile_attr a[1];
	size_t before, with_links, with_sets, after_first;
	const uint32_t n = 10240;

	assert_non_null(twin);
	/* Links: at least the ids and an index entry each. */
	before = profile__memory_usage(p);
	for (uint32_t i = 0; i < n; i++) {
		struct profile_link x = make_link(i);

		assert_true(profile__intern_link(p, &x) != 0);
	}
	with_links = profile__memory_usage(p);
	assert_true(with_links - before >= n * (sizeof(struct profile_link) + 6 * sizeof(void *)));

	/* Sets of 64 attributes: at least the attributes themselves. */
	{
		struct profile_attr big[64];
		uint32_t vals[1000];
		char buf[32];

		for (uint32_t j = 0; j < 1000; j++) {
			snprintf(buf, sizeof(buf), "v%u", j);
			vals[j] = profile__intern_string(twin, buf);
		}
		for (uint32_t j = 0; j < 64; j++)
			big[j] = (struct profile_attr){vals[0], vals[j]};
		before = profile__memory_usage(twin);
		for (uint32_t i = 0; i < 1000; i++) {
			big[0].value = vals[i];
			assert_int_equal(profile__intern_attrset(twin, big, 64), 1 + i);
		}
		with_sets = profile__memory_usage(twin);
		assert_true(with_sets - before >= 1000 * 64 * sizeof(struct profile_attr));
	}
	profile__free(twin);

	/* Reset drops links and attribute sets: indices restart at 1. */
	profile__reset(p);
	assert_fresh(p);
	assert_int_equal(profile__intern_link(p, &l), 1);
	a[0] =
	    (struct profile_attr){profile__intern_string(p, "k"), profile__intern_string(p, "v")};
	assert_int_equal(profile__intern_attrset(p, a, 1), 1);
	profile__reset(p);
	assert_fresh(p);
	/* A pre-reset set is not found: its strings are gone too. */
	errno = 0;
	assert_int_equal(profile__intern_attrset(p, a, 1), 0);
	assert_int_equal(errno, EINVAL);

	/* Windows of equal size reuse the memory of the first, links and sets included. */
	fill_linked(p, 3000);
	assert_int_equal(profile__nlinks(p), 3001);
	assert_int_equal(profile__nattrsets(p), 3001);
	assert_int_equal(profile__nsamples(p), 3000);
	after_first = profile__memory_usage(p);
	for (int i = 0; i < 3; i++) {
		profile__reset(p);
		assert_true(profile__memory_usage(p) <= after_first);
		fill_linked(p, 3000);
		assert_true(profile__memory_usage(p) <= after_first);
	}
	assert_int_equal(profile__nlinks(p), 3001);
}

/* Event profile types: count and value per event, kept apart from CPU samples of the same stack. */
static void test_events(void **state)
{
	struct profile *p = *state;
	struct profile_meta meta = {.period_nano = 1000};
	struct profile_sample_key k = {
	    .type = PROFILE_ALLOC,
	    .stack = one_stack(p, 0x10),
	    .pid = 10,
	    .tid = 11,
	    .comm = profile__intern_string(p, "worker"),
	};
	struct profile_sample_key cpu = k, lock = k;
	const struct profile_sample *s;
	size_t before;

	profile__set_meta(p, &meta);
	cpu.type = PROFILE_CPU;
	lock.type = PROFILE_LOCK;
	lock.addr = 0x7f0000001000;
	assert_int_equal(profile__add_event(p, &k, 100, 3, 300), 0);
	assert_int_equal(profile__add_event(p, &k, 200, 1, 4096), 0);
	assert_int_equal(profile__add_sample(p, &cpu, 150, 1), 0);
	assert_int_equal(profile__add_event(p, &lock, 170, 1, 25000), 0);
	lock.addr++; /* another lock: another sample */
	assert_int_equal(profile__add_event(p, &lock, 180, 1, 5000), 0);
	assert_int_equal(profile__nsamples(p), 4);

	s = profile__sample(p, 0);
	assert_int_equal(s->key.type, PROFILE_ALLOC);
	assert_int_equal(s->count, 4);
	assert_int_equal(s->value, 4396);
	assert_int_equal(s->ntimestamps, 2);
	assert_non_null(s->event_values);
	assert_int_equal(profile__event_value(p, s, 0, 0), 3);
	assert_int_equal(profile__event_value(p, s, 0, 1), 300);
	assert_int_equal(profile__event_value(p, s, 1, 0), 1);
	assert_int_equal(profile__event_value(p, s, 1, 1), 4096);
	assert_int_equal(profile__sample_value(p, s, 0), 4);
	assert_int_equal(profile__sample_value(p, s, 1), 4396);
	s = profile__sample(p, 1);
	assert_int_equal(s->key.type, PROFILE_CPU);
	assert_null(s->event_values);
	assert_int_equal(profile__sample_value(p, s, 1), 1000); /* count x period */
	assert_int_equal(profile__event_value(p, s, 0, 0), 1);
	s = profile__sample(p, 2);
	assert_int_equal(s->key.addr, 0x7f0000001000);
	assert_int_equal(s->value, 25000);

	/* Events need a type other than CPU and a time; CPU samples need no values. */
	assert_int_equal(profile__add_event(p, &cpu, 100, 1, 1), -EINVAL);
	assert_int_equal(profile__add_event(p, &k, 0, 1, 1), -EINVAL);
	k.type = PROFILE_NTYPES;
	assert_int_equal(profile__add_event(p, &k, 100, 1, 1), -EINVAL);
	assert_int_equal(profile__add_sample(p, &lock, 100, 1), -EINVAL);
	k.type = PROFILE_ALLOC;
	k.pad = 1;
	assert_int_equal(profile__add_event(p, &k, 100, 1, 1), -EINVAL);
	assert_int_equal(profile__nsamples(p), 4);

	/* Many events: the per-event values grow with the timestamps. */
	k.pad = 0;
	before = profile__memory_usage(p);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(profile__add_event(p, &k, 1000 + i, 1, i), 0);
	s = profile__sample(p, 0);
	assert_int_equal(s->ntimestamps, 1002);
	assert_int_equal(profile__event_value(p, s, 1001, 1), 999);
	assert_int_equal(s->value, 4396 + 999 * 1000 / 2);
	assert_true(profile__memory_usage(p) >= before + 1000 * 3 * sizeof(uint64_t));

	/* The type table. */
	assert_int_equal(profile__type_by_name("offcpu"), PROFILE_OFFCPU);
	assert_int_equal(profile__type_by_name("heap"), -1);
	assert_string_equal(profile__type_info(PROFILE_ALLOC)->values[1].type, "alloc_space");
	assert_null(profile__type_info(PROFILE_NTYPES));
	profile__reset(p);
	assert_int_equal(profile__nsamples(p), 0);
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
	    cmocka_unit_test_setup_teardown(test_set_location_lines, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stacks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_samples_merge_and_timestamps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_samples, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_meta_and_reset, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_links, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attrsets, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attrsets_grow, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_samples_split_by_link_and_attrs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_links_reset_and_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_events, setup, teardown),
	};

	return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
