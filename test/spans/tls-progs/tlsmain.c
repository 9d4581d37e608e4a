// SPDX-License-Identifier: Apache-2.0
/*
 * Test program of test_tlsctx: places otel_thread_ctx_v1 (OTEP 4947) in the TLS model the build
 * selects, has the main thread and THREADS others set it to a value of their own, prints one line
 * per thread, then waits for its standard input to close. Lines:
 *   T <index> <thread pointer> <&otel_thread_ctx_v1> <value set>   (hex)
 *   U <index> <thread pointer>          a thread that never touched the variable
 *   READY
 * Build variants (test/spans/tlsctx.mk):
 *   -DDEF_IN_EXE    the executable defines the variable (local-exec), -DBIG_ALIGN adds an
 *                   over-aligned TLS array before it (PT_TLS alignment 64)
 *   -DEXTERN_IN_EXE the executable accesses a library's variable (initial-exec)
 *   -DDLOPEN        argv[1] is a library dlopen()ed after the threads start; its tls_touch() sets
 *                   the variable
 *   (none)          tls_touch() of a library linked at build time sets the variable
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 3

#if defined(DEF_IN_EXE)
#ifdef BIG_ALIGN
__thread long tls_small = 1; /* .tdata, 8-aligned: PT_TLS may start off the 64-byte alignment */
__thread char tls_big[100] __attribute__((aligned(64)));
#endif
__thread void *otel_thread_ctx_v1;
static void *local_touch(void *val)
{
#ifdef BIG_ALIGN
	tls_big[0] = (char)tls_small;
#endif
	otel_thread_ctx_v1 = val;
	return &otel_thread_ctx_v1;
}
#elif defined(EXTERN_IN_EXE)
extern __thread void *otel_thread_ctx_v1;
static void *local_touch(void *val)
{
	otel_thread_ctx_v1 = val;
	return &otel_thread_ctx_v1;
}
#elif !defined(DLOPEN)
void *tls_touch(void *val);
#endif

static void *(*touch)(void *val);
static pthread_barrier_t ready, done;

struct slot {
	uintptr_t tp, addr, val;
	int touched;
};
static struct slot slots[THREADS + 2];

static uintptr_t thread_pointer(void)
{
	uintptr_t tp;

	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

static void run(int i)
{
	slots[i].tp = thread_pointer();
	if (i <= THREADS) {
		slots[i].val = 0x5eed0000u + (uintptr_t)i * 0x101u;
		slots[i].addr = (uintptr_t)touch((void *)slots[i].val);
		slots[i].touched = 1;
	}
}

static void *thread_main(void *arg)
{
	int i = (int)(intptr_t)arg;

	pthread_barrier_wait(&ready);
	run(i);
	pthread_barrier_wait(&done);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	char buf[64];
	int i;

	/* Threads 1..THREADS touch the variable; thread THREADS + 1 never does. */
	pthread_barrier_init(&ready, NULL, THREADS + 2);
	pthread_barrier_init(&done, NULL, THREADS + 2);
	for (i = 1; i <= THREADS + 1; i++)
		if (pthread_create(&th, NULL, thread_main, (void *)(intptr_t)i)) {
			perror("pthread_create");
			return 1;
		}
#if defined(DEF_IN_EXE) || defined(EXTERN_IN_EXE)
	touch = local_touch;
#elif defined(DLOPEN)
	{
		void *h = dlopen(argc > 1 ? argv[1] : "", RTLD_NOW);

		if (!h || !(touch = (void *(*)(void *))dlsym(h, "tls_touch"))) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
	}
#else
	touch = tls_touch;
#endif
	(void)argc;
	(void)argv;
	pthread_barrier_wait(&ready);
	run(0);
	pthread_barrier_wait(&done);
	for (i = 0; i <= THREADS + 1; i++) {
		if (slots[i].touched)
			printf("T %d %lx %lx %lx\n", i, (unsigned long)slots[i].tp,
			       (unsigned long)slots[i].addr, (unsigned long)slots[i].val);
		else
			printf("U %d %lx\n", i, (unsigned long)slots[i].tp);
	}
	printf("READY\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
