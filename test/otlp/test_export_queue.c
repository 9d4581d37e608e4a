/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for exporter/otlp/export_queue.c: ordering, the byte bound, close and accounting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "otlp/export_queue.h"

static uint8_t *blob(size_t n, uint8_t fill)
{
	uint8_t *b = malloc(n);

	memset(b, fill, n);
	return b;
}

static void test_fifo_order_and_accounting(void **state)
{
	struct export_queue *q = export_queue__new(1000);
	struct export_queue_stats st;
	struct export_request *r;

	assert_non_null(q);
	assert_int_equal(export_queue__push(q, blob(10, 1), 10, 3, PROFILE_CPU), 0);
	assert_int_equal(export_queue__push(q, blob(20, 2), 20, 4, PROFILE_CPU), 0);
	export_queue__stats(q, &st);
	assert_int_equal(st.queued, 2);
	assert_int_equal(st.queued_bytes, 30);
	r = export_queue__take(q, 0);
	assert_non_null(r);
	assert_int_equal(r->len, 10);
	assert_int_equal(r->samples, 3);
	assert_int_equal(r->seq, 1);
	/* A held request still counts toward the bound. */
	export_queue__stats(q, &st);
	assert_int_equal(st.queued_bytes, 30);
	export_queue__done(q, r, 0);
	r = export_queue__take(q, 0);
	assert_int_equal(r->data[0], 2);
	export_queue__done(q, r, 0);
	assert_null(export_queue__take(q, 0));
	export_queue__stats(q, &st);
	assert_int_equal(st.pushed, 2);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.queued_bytes, 0);
	export_queue__free(q);
}

static void test_full_queue_drops_oldest(void **state)
{
	struct export_queue *q = export_queue__new(100);
	struct export_queue_stats st;
	struct export_request *r;

	for (int i = 0; i < 5; i++)
		assert_int_equal(export_queue__push(q, blob(40, i), 40, 10, PROFILE_CPU), 0);
	export_queue__stats(q, &st);
	assert_true(st.queued_bytes <= 100);
	assert_int_equal(st.queued, 2);
	assert_int_equal(st.dropped, 3);
	assert_int_equal(st.dropped_samples, 30);
	r = export_queue__take(q, 0);
	assert_int_equal(r->data[0], 3); /* the two newest survive */
	assert_int_equal(r->seq, 4);
	export_queue__done(q, r, 0);
	export_queue__free(q);
}

/* Every way a request is dropped counts its samples under its profile type (none: in none). */
static void test_drops_counted_per_type(void **state)
{
	struct export_queue *q = export_queue__new(100);
	struct export_queue_stats st;
	struct export_request *r;

	/* Too big: dropped at once. */
	assert_int_equal(export_queue__push(q, blob(101, 0), 101, 7, PROFILE_ALLOC), 0);
	/* Pushed out by newer ones: the offcpu, then the lock request. */
	assert_int_equal(export_queue__push(q, blob(40, 1), 40, 11, PROFILE_OFFCPU), 0);
	assert_int_equal(export_queue__push(q, blob(40, 2), 40, 13, PROFILE_LOCK), 0);
	assert_int_equal(export_queue__push(q, blob(40, 3), 40, 17, PROFILE_CPU), 0);
	assert_int_equal(export_queue__push(q, blob(40, 4), 40, 19, EXPORT_NO_TYPE), 0);
	assert_int_equal(export_queue__push(q, blob(10, 5), 10, 23, PROFILE_CPU), 0);
	/* Given up by the sender. */
	r = export_queue__take(q, 0);
	assert_int_equal(r->type, PROFILE_CPU);
	assert_int_equal(r->samples, 17);
	export_queue__done(q, r, 1);
	export_queue__close(q);
	/* Pushed after the close. */
	assert_int_equal(export_queue__push(q, blob(10, 6), 10, 29, PROFILE_OFFCPU), -EPIPE);
	export_queue__stats(q, &st);
	assert_int_equal(st.dropped, 5);
	assert_int_equal(st.dropped_samples, 7 + 11 + 13 + 17 + 29);
	assert_int_equal(st.dropped_samples_by_type[PROFILE_ALLOC], 7);
	assert_int_equal(st.dropped_samples_by_type[PROFILE_OFFCPU], 11 + 29);
	assert_int_equal(st.dropped_samples_by_type[PROFILE_LOCK], 13);
	assert_int_equal(st.dropped_samples_by_type[PROFILE_CPU], 17);
	export_queue__free(q);
}

static void test_oversized_request_dropped(void **state)
{
	struct export_queue *q = export_queue__new(100);
	struct export_queue_stats st;

	assert_int_equal(export_queue__push(q, blob(101, 0), 101, 7, PROFILE_CPU), 0);
	export_queue__stats(q, &st);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.dropped_samples, 7);
	export_queue__free(q);
}

static void test_held_request_gives_way(void **state)
{
	struct export_queue *q = export_queue__new(100);
	struct export_request *held;

	export_queue__push(q, blob(60, 0), 60, 1, PROFILE_CPU);
	held = export_queue__take(q, 0);
	assert_false(export_queue__should_drop(q, held));
	/* Newer data arrives while the held one is being retried: it must give way. */
	export_queue__push(q, blob(60, 1), 60, 1, PROFILE_CPU);
	assert_true(export_queue__should_drop(q, held));
	export_queue__done(q, held, 1);
	assert_false(export_queue__should_drop(q, NULL));
	export_queue__free(q);
}

static void test_close_drains_then_ends(void **state)
{
	struct export_queue *q = export_queue__new(100);
	struct export_queue_stats st;
	struct export_request *r;

	export_queue__push(q, blob(10, 0), 10, 1, PROFILE_CPU);
	export_queue__close(q);
	assert_true(export_queue__closed(q));
	assert_int_equal(export_queue__push(q, blob(10, 0), 10, 2, PROFILE_CPU), -EPIPE);
	r = export_queue__take(q, -1);
	assert_non_null(r);
	export_queue__done(q, r, 0);
	assert_null(export_queue__take(q, -1)); /* closed and empty: no wait */
	export_queue__stats(q, &st);
	assert_int_equal(st.dropped_samples, 2);
	export_queue__free(q);
}

static void test_take_times_out(void **state)
{
	struct export_queue *q = export_queue__new(100);

	assert_null(export_queue__take(q, 20));
	export_queue__free(NULL);
	export_queue__free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fifo_order_and_accounting),
	    cmocka_unit_test(test_full_queue_drops_oldest),
	    cmocka_unit_test(test_drops_counted_per_type),
	    cmocka_unit_test(test_oversized_request_dropped),
	    cmocka_unit_test(test_held_request_gives_way),
	    cmocka_unit_test(test_close_drains_then_ends),
	    cmocka_unit_test(test_take_times_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
