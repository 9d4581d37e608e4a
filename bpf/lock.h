/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lock profile (--profile lock, docs/profile-types.md): which futex(2) waits are lock waits.
 * Shared by bpf/lock.bpf.h (the futex syscall tracepoints) and the unit tests, which compile it
 * as ordinary C. Fixed-width types only.
 *
 * A contended lock acquisition sleeps in futex(2); an uncontended one never enters the kernel,
 * so the futex syscall is where contention can be seen at no cost to uncontended locks. Which
 * waits are locks (futex(2) man page; glibc 2.36 nptl, the lock protocol of U. Drepper,
 * "Futexes Are Tricky", where 2 means "locked, with waiters"):
 *   - FUTEX_LOCK_PI, FUTEX_LOCK_PI2: priority-inheritance mutexes, always a lock.
 *   - FUTEX_WAIT with the expected value 2: glibc's lll_lock slow path (__lll_lock_wait, used by
 *     every non-PI pthread_mutex_lock and glibc's internal locks); with the FUTEX_WAITERS bit
 *     (0x80000000) in the value: glibc robust mutexes. Other FUTEX_WAIT users (pthread_once,
 *     C++ atomic waits) wait with other values and are not locks, unless their word happens
 *     to hold 2 (a known false positive, docs/profile-types.md).
 *   - FUTEX_WAIT_BITSET with the expected value 2 or 3: glibc rwlocks (writers on
 *     __writers_futex with 3 and on __wrphase_futex with 2, readers on __wrphase_futex with 3),
 *     Rust's std Mutex (2). Condition variables (glibc waits on __g_signals with 0), semaphores
 *     (0) and pthread_join (the thread id) wait with other values and are not locks.
 * Everything else (wakes, requeues, FUTEX_WAIT_REQUEUE_PI of PI condition variables, futex_waitv)
 * is not a lock wait.
 */
#ifndef SPANPROF_LOCK_H
#define SPANPROF_LOCK_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* include/uapi/linux/futex.h */
#define SP_FUTEX_WAIT 0
#define SP_FUTEX_LOCK_PI 6
#define SP_FUTEX_WAIT_BITSET 9
#define SP_FUTEX_LOCK_PI2 13
#define SP_FUTEX_PRIVATE_FLAG 128
#define SP_FUTEX_CLOCK_REALTIME 256
#define SP_FUTEX_WAITERS 0x80000000u

/* What a futex wait is (sp_lock_classify()). */
enum sp_lock_kind {
	SP_LOCK_NONE = 0,   /* not a lock wait */
	SP_LOCK_MUTEX = 1,  /* FUTEX_WAIT of a mutex (value 2, or FUTEX_WAITERS set) */
	SP_LOCK_PI = 2,	    /* FUTEX_LOCK_PI / FUTEX_LOCK_PI2 */
	SP_LOCK_BITSET = 3, /* FUTEX_WAIT_BITSET with value 2 or 3 (rwlocks, Rust mutexes) */
};

/* The kind of the futex(2) call (@op, @val: its second and third arguments). */
static inline __u32 sp_lock_classify(__u32 op, __u32 val)
{
	switch (op & ~(__u32)(SP_FUTEX_PRIVATE_FLAG | SP_FUTEX_CLOCK_REALTIME)) {
	case SP_FUTEX_LOCK_PI:
	case SP_FUTEX_LOCK_PI2:
		return SP_LOCK_PI;
	case SP_FUTEX_WAIT:
		return val == 2 || (val & SP_FUTEX_WAITERS) ? SP_LOCK_MUTEX : SP_LOCK_NONE;
	case SP_FUTEX_WAIT_BITSET:
		return val == 2 || val == 3 ? SP_LOCK_BITSET : SP_LOCK_NONE;
	default:
		return SP_LOCK_NONE;
	}
}

#endif /* SPANPROF_LOCK_H */
