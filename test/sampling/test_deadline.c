// SPDX-License-Identifier: Apache-2.0
/* Unit tests of deadline: the call comes, not before its time, once; a cancel prevents it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sampling/deadline.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct probe {
	int calls;
	uint64_t at;
};

static void called(void *ctx)
{
	struct probe *p = ctx;

	p->calls++;
	p->at = mono_ns();
}

static void test_fires_once_not_early(void **unused)
{
	struct probe p = {0};
	uint64_t at = mono_ns() + 50000000; /* 50 ms */
	struct deadline *d = deadline__new(at, called, &p);

	assert_non_null(d);
	/* The caller's thread is busy (here: asleep) the whole time: the call comes anyway. */
	for (int i = 0; i < 6000 && !deadline__fired(d); i++)
		usleep(10000);
	assert_true(deadline__fired(d) >= at);
	deadline__cancel(d);
	assert_int_equal(p.calls, 1);
	assert_true(p.at >= at);
	assert_true(deadline__fired(d) >= p.at);
	deadline__free(d);
	assert_int_equal(p.calls, 1);
}

static void test_past_time_fires_at_once(void **unused)
{
	struct probe p = {0};
	struct deadline *d = deadline__new(1, called, &p);

	assert_non_null(d);
	for (int i = 0; i < 6000 && !deadline__fired(d); i++)
		usleep(1000);
	deadline__free(d);
	assert_int_equal(p.calls, 1);
}

static void test_cancel_before_time(void **unused)
{
	struct probe p = {0};
	struct deadline *d = deadline__new(mono_ns() + 3600 * 1000000000ull, called, &p);

	assert_non_null(d);
	deadline__cancel(d);
	deadline__cancel(d); /* idempotent */
	assert_int_equal(deadline__fired(d), 0);
	deadline__free(d);
	assert_int_equal(p.calls, 0);
	deadline__free(NULL);
	assert_int_equal(deadline__fired(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fires_once_not_early),
	    cmocka_unit_test(test_past_time_fires_at_once),
	    cmocka_unit_test(test_cancel_before_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
