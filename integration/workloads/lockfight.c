/*
 * lockfight: threads that wait on locks in known functions, for the lock profile tests
 * (integration/test_lock.py). Each thread measures, with CLOCK_MONOTONIC before and after the
 * lock call, every wait itself and prints it:
 *
 *   addr hot 0x.. cool 0x.. rw 0x.. cv 0x..     the objects' addresses
 *   ready <pid>                                  then waits for TRIGGER to exist
 *   wait <lock> <tid> <ns> <run delay ns>        one line per acquisition: the lock call's
 *                                                time, and how long of it the thread waited
 *                                                for a CPU (schedstat), 0 if not known
 *   span <tid> <trace_id hex> <span_id hex>      (spans mode) one line per span
 *
 * Usage: lockfight MODE TRIGGER ROUNDS HOLD_MS
 *   mutex:  two threads (fighter) take turns on mutex "hot" in hot_lock_site(), holding it
 *           HOLD_MS; then both take mutex "cool" in cool_lock_site() ROUNDS * 20 times, holding
 *           it 50 us (short waits).
 *   rwlock: a writer (rw_writer, rw_write_site) and a reader (rw_reader, rw_read_site) take turns
 *           on rwlock "rw", holding it HOLD_MS.
 *   cond:   cond_waiter waits on condition variable "cv" in cond_wait_site() for a signal that
 *           comes HOLD_MS later; the mutex is held only for an instant. At the end, the two
 *           threads contend once on "hot" (3 * HOLD_MS): a lock wait the profile must show.
 *   spans:  like mutex "hot" (span_lock_site), each acquisition inside a span published with
 *           the writer library (writer/spanprof_ctx.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "spanprof_ctx.h"

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cool = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t phase, begin;
static void *(*start[2])(void *);
static int cv_flag, rounds;
static long hold_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000, ns % 1000000000};

	while (nanosleep(&ts, &ts))
		;
}

/*
 * This thread's time spent runnable but waiting for a CPU, in ns: the second field of
 * /proc/thread-self/schedstat (CONFIG_SCHED_INFO), or 0 when the kernel does not keep it.
 */
static uint64_t run_delay_ns(void)
{
	unsigned long long run = 0, delay = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &delay) != 2)
		delay = 0;
	fclose(f);
	return delay;
}

/* A lock call's span: from before the call to after it (the schedstat reads outside). */
struct call {
	uint64_t t0, r0;
};

static struct call call_start(void)
{
	struct call c;

	c.r0 = run_delay_ns();
	c.t0 = now_ns();
	return c;
}

static void report(const char *what, struct call c)
{
	uint64_t ns = now_ns() - c.t0, delay = run_delay_ns() - c.r0;

	pthread_mutex_lock(&out_lock);
	printf("wait %s %ld %llu %llu\n", what, (long)syscall(SYS_gettid), (unsigned long long)ns,
	       (unsigned long long)delay);
	pthread_mutex_unlock(&out_lock);
}

/* The known functions: each measures its own lock call. */
__attribute__((noinline)) void hot_lock_site(void)
{
	struct call c = call_start();

	pthread_mutex_lock(&hot);
	report("hot", c);
	sleep_ns(hold_ns);
	pthread_mutex_unlock(&hot);
}

__attribute__((noinline)) void cool_lock_site(void)
{
	struct call c = call_start();

	pthread_mutex_lock(&cool);
	report("cool", c);
	sleep_ns(50000);
	pthread_mutex_unlock(&cool);
}

__attribute__((noinline)) void rw_write_site(void)
{
	struct call c = call_start();

	pthread_rwlock_wrlock(&rw);
	report("rw", c);
	sleep_ns(hold_ns);
	pthread_rwlock_unlock(&rw);
}

__attribute__((noinline)) void rw_read_site(void)
{
	struct call c = call_start();

	pthread_rwlock_rdlock(&rw);
	report("rw", c);
	sleep_ns(hold_ns);
	pthread_rwlock_unlock(&rw);
}

__attribute__((noinline)) void cond_wait_site(void)
{
	struct call c = call_start();

	pthread_mutex_lock(&cv_mutex);
	while (!cv_flag)
		pthread_cond_wait(&cv, &cv_mutex);
	cv_flag = 0;
	pthread_mutex_unlock(&cv_mutex);
	report("cond", c);
}

__attribute__((noinline)) void span_lock_site(void)
{
	struct call c = call_start();

	pthread_mutex_lock(&hot);
	report("span", c);
	sleep_ns(hold_ns);
	pthread_mutex_unlock(&hot);
}

static void hex(const uint8_t *b, int n, char *out)
{
	for (int i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* Thread start routines. */
static void *fighter(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		hot_lock_site();
		sleep_ns(1000000); /* lets the other thread in */
	}
	pthread_barrier_wait(&phase);
	for (int i = 0; i < rounds * 20; i++) {
		cool_lock_site();
		sleep_ns(20000);
	}
	return NULL;
}

static void *rw_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		rw_write_site();
		sleep_ns(1000000);
	}
	return NULL;
}

static void *rw_reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		rw_read_site();
		sleep_ns(1000000);
	}
	return NULL;
}

static void *cond_waiter(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++)
		cond_wait_site();
	hot_lock_site(); /* the control: one contended mutex (cond_signaler holds it) */
	return NULL;
}

static void *cond_signaler(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		sleep_ns(hold_ns);
		pthread_mutex_lock(&cv_mutex);
		cv_flag = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&cv_mutex);
		/* Until the waiter has taken this signal. */
		for (;;) {
			pthread_mutex_lock(&cv_mutex);
			int taken = !cv_flag;
			pthread_mutex_unlock(&cv_mutex);
			if (taken)
				break;
			sleep_ns(100000);
		}
	}
	pthread_mutex_lock(&hot);
	sleep_ns(3 * hold_ns);
	pthread_mutex_unlock(&hot);
	return NULL;
}

static void *span_worker(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	(void)arg;
	for (int i = 0; i < rounds; i++) {
		uint8_t trace[16], span[8];
		char th[33], sh[17];
		void *token;

		if (getrandom(trace, sizeof(trace), 0) != sizeof(trace) ||
		    getrandom(span, sizeof(span), 0) != sizeof(span))
			abort();
		trace[0] |= 1;
		span[0] |= 1;
		token = spctx_attach(trace, span, 1, NULL, 0);
		span_lock_site();
		spctx_detach(token);
		hex(trace, 16, th);
		hex(span, 8, sh);
		pthread_mutex_lock(&out_lock);
		printf("span %d %s %s\n", tid, th, sh);
		pthread_mutex_unlock(&out_lock);
		sleep_ns(1000000);
	}
	return NULL;
}

/* Both threads are running before either takes a lock: on a loaded machine the second one
 * could start only after the first had made all its rounds, uncontended. */
static void *started(void *arg)
{
	pthread_barrier_wait(&begin);
	return start[(intptr_t)arg](NULL);
}

int main(int argc, char **argv)
{
	static const char *const resource[] = {"service.name", "lockfight-test", NULL};
	pthread_t th[2];

	if (argc != 5) {
		fprintf(stderr,
			"usage: lockfight mutex|rwlock|cond|spans TRIGGER ROUNDS HOLD_MS\n");
		return 2;
	}
	rounds = atoi(argv[3]);
	hold_ns = atol(argv[4]) * 1000000;
	if (!strcmp(argv[1], "mutex"))
		start[0] = start[1] = fighter;
	else if (!strcmp(argv[1], "rwlock"))
		start[0] = rw_writer, start[1] = rw_reader;
	else if (!strcmp(argv[1], "cond"))
		start[0] = cond_waiter, start[1] = cond_signaler;
	else if (!strcmp(argv[1], "spans"))
		start[0] = start[1] = span_worker;
	else
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_barrier_init(&phase, NULL, 2);
	pthread_barrier_init(&begin, NULL, 2);
	if (!strcmp(argv[1], "spans") && spctx_process_publish(resource, NULL, 0))
		fprintf(stderr, "lockfight: process context not published\n");
	printf("addr hot %p cool %p rw %p cv %p\n", (void *)&hot, (void *)&cool, (void *)&rw,
	       (void *)&cv);
	printf("ready %d\n", getpid());
	for (int i = 0; i < 6000 && access(argv[2], F_OK); i++)
		sleep_ns(10000000);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, started, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("done\n");
	return 0;
}
