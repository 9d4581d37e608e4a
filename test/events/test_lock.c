// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the lock profile's futex classification (bpf/lock.h), compiled as ordinary C. */
#include <linux/futex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lock.h"

/* The constants of bpf/lock.h are those of the kernel's uapi header. */
static void test_constants_match_uapi(void **state)
{
	(void)state;
	assert_int_equal(SP_FUTEX_WAIT, FUTEX_WAIT);
	assert_int_equal(SP_FUTEX_LOCK_PI, FUTEX_LOCK_PI);
	assert_int_equal(SP_FUTEX_WAIT_BITSET, FUTEX_WAIT_BITSET);
	assert_int_equal(SP_FUTEX_LOCK_PI2, FUTEX_LOCK_PI2);
	assert_int_equal(SP_FUTEX_PRIVATE_FLAG, FUTEX_PRIVATE_FLAG);
	assert_int_equal(SP_FUTEX_CLOCK_REALTIME, FUTEX_CLOCK_REALTIME);
	assert_int_equal(SP_FUTEX_WAITERS, FUTEX_WAITERS);
}

/* glibc's mutexes: __lll_lock_wait sleeps with 2, private or shared; robust ones with WAITERS. */
static void test_mutex_waits(void **state)
{
	(void)state;
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_PRIVATE, 2), SP_LOCK_MUTEX);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT, 2), SP_LOCK_MUTEX);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 2), SP_LOCK_MUTEX);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT, FUTEX_WAITERS | 1234), SP_LOCK_MUTEX);
	/* Not a lock's "contended" value: pthread_once, atomic waits. */
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_PRIVATE, 0), SP_LOCK_NONE);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_PRIVATE, 1), SP_LOCK_NONE);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_PRIVATE, 5), SP_LOCK_NONE);
}

static void test_pi_waits(void **state)
{
	(void)state;
	assert_int_equal(sp_lock_classify(FUTEX_LOCK_PI, 0), SP_LOCK_PI);
	assert_int_equal(sp_lock_classify(FUTEX_LOCK_PI_PRIVATE, 0), SP_LOCK_PI);
	assert_int_equal(sp_lock_classify(FUTEX_LOCK_PI2 | FUTEX_PRIVATE_FLAG, 0), SP_LOCK_PI);
	/* The PI condition variable's wait is not a lock wait; neither is a trylock. */
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_REQUEUE_PI_PRIVATE, 2), SP_LOCK_NONE);
	assert_int_equal(sp_lock_classify(FUTEX_TRYLOCK_PI, 0), SP_LOCK_NONE);
}

/* rwlocks (2, 3) and condition variables, semaphores, pthread_join (0, tids) share BITSET. */
static void test_bitset_waits(void **state)
{
	(void)state;
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 3),
			 SP_LOCK_BITSET);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 2),
			 SP_LOCK_BITSET);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 0),
			 SP_LOCK_NONE);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 30677),
			 SP_LOCK_NONE);
	assert_int_equal(sp_lock_classify(FUTEX_WAIT_BITSET_PRIVATE, 1), SP_LOCK_NONE);
}

/* Wakes, requeues and unknown operations are never waits. */
static void test_other_ops(void **state)
{
	(void)state;
	for (uint32_t op = 0; op < 16; op++) {
		if (op == FUTEX_WAIT || op == FUTEX_LOCK_PI || op == FUTEX_WAIT_BITSET ||
		    op == FUTEX_LOCK_PI2)
			continue;
		assert_int_equal(sp_lock_classify(op, 2), SP_LOCK_NONE);
		assert_int_equal(sp_lock_classify(op | FUTEX_PRIVATE_FLAG, 2), SP_LOCK_NONE);
	}
	assert_int_equal(sp_lock_classify(0xffffffffu, 2), SP_LOCK_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_constants_match_uapi),
	    cmocka_unit_test(test_mutex_waits),
	    cmocka_unit_test(test_pi_waits),
	    cmocka_unit_test(test_bitset_waits),
	    cmocka_unit_test(test_other_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
