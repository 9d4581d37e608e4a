// SPDX-License-Identifier: Apache-2.0
/* Unit tests of record_describe: the start line's and the summary's words per profile type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "record/record_describe.h"

static struct record_opts *defaults(void)
{
	static struct record_opts o;

	memset(&o, 0, sizeof(o));
	o.frequency_hz = RECORD_DEFAULT_HZ;
	o.profile_types = 1u << PROFILE_CPU;
	o.alloc_sample_bytes = RECORD_DEFAULT_ALLOC_SAMPLE_BYTES;
	o.lock_min_wait_ns = RECORD_DEFAULT_LOCK_MIN_WAIT_NS;
	o.offcpu_min_ns = RECORD_DEFAULT_OFFCPU_MIN_NS;
	return &o;
}

static void test_each_type_alone(void **unused)
{
	struct record_opts *o = defaults();
	char buf[256];

	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 2, NULL),
			    "cpu at 19 Hz on 2 CPUs");
	assert_int_equal(record__ntypes(o), 1);
	o->profile_types = 0; /* none given: cpu */
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 1, NULL),
			    "cpu at 19 Hz on 1 CPU");
	/* No CPU count where no CPU is sampled. */
	o->profile_types = 1u << PROFILE_ALLOC;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "alloc every 512 KiB allocated");
	o->alloc_sample_bytes = 0;
	o->alloc_min_bytes = 3u << 20;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "alloc of every allocation from 3 MiB");
	o->alloc_sample_bytes = 1000;
	o->alloc_min_bytes = 0;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "alloc every 1000 bytes allocated");
	o->profile_types = 1u << PROFILE_LOCK;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "lock waits from 10us");
	o->lock_min_wait_ns = 0;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "lock waits from 0");
	o->profile_types = 1u << PROFILE_OFFCPU;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "offcpu periods from 1ms");
	o->offcpu_min_ns = 1500000;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "offcpu periods from 1500us");
	o->offcpu_min_ns = 2000000000ull;
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 0, NULL),
			    "offcpu periods from 2s");
}

static void test_several_types_with_counts(void **unused)
{
	struct record_opts *o = defaults();
	uint64_t counts[PROFILE_NTYPES] = {120, 7, 0, 40};
	char buf[256], small[20];

	o->profile_types = (1u << PROFILE_CPU) | (1u << PROFILE_ALLOC) | (1u << PROFILE_OFFCPU);
	assert_int_equal(record__ntypes(o), 3);
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 4, NULL),
			    "cpu at 19 Hz on 4 CPUs, alloc every 512 KiB allocated, offcpu periods "
			    "from 1ms");
	assert_string_equal(record__describe_types(buf, sizeof(buf), o, 4, counts),
			    "cpu 120 at 19 Hz on 4 CPUs, alloc 7 every 512 KiB allocated, offcpu "
			    "40 periods from 1ms");
	/* Too small a buffer: cut, terminated. */
	record__describe_types(small, sizeof(small), o, 4, counts);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "cpu 120 at 19 Hz on", sizeof(small) - 1);
}

/* Asserts that the "no samples" line for @types and @targeted is @want, with no double negative. */
static void no_samples(uint32_t types, int targeted, const char *want)
{
	struct record_opts *o = defaults();
	char buf[256];

	o->profile_types = types;
	assert_string_equal(record__describe_no_samples(buf, sizeof(buf), o, targeted), want);
	assert_null(strstr(buf, "no process never"));
	assert_null(strstr(buf, "no process had no"));
}

static void test_no_samples_every_combination(void **unused)
{
	const uint32_t cpu = 1u << PROFILE_CPU, alloc = 1u << PROFILE_ALLOC,
		       lock = 1u << PROFILE_LOCK, offcpu = 1u << PROFILE_OFFCPU;

	no_samples(cpu, 0,
		   "no samples: no process ran on a CPU while sampling (every CPU idle the whole "
		   "time)");
	no_samples(0, 0,
		   "no samples: no process ran on a CPU while sampling (every CPU idle the whole "
		   "time)");
	no_samples(cpu, 1,
		   "no samples: the selected processes never ran on a CPU while sampling (idle or "
		   "sleeping the whole time)");
	no_samples(alloc, 0,
		   "no samples: no process had an event of the selected profile types (alloc)");
	no_samples(alloc | lock | offcpu, 1,
		   "no samples: the selected processes had no event of the selected profile types "
		   "(alloc, lock, offcpu)");
	no_samples(cpu | lock, 0,
		   "no samples: no process ran on a CPU or had an event of the other selected "
		   "profile types (lock)");
	no_samples(cpu | alloc | offcpu, 1,
		   "no samples: the selected processes neither ran on a CPU nor had an event of "
		   "the other selected profile types (alloc, offcpu)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_type_alone),
	    cmocka_unit_test(test_several_types_with_counts),
	    cmocka_unit_test(test_no_samples_every_combination),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
