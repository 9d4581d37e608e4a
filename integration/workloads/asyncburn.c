/*
 * asyncburn: native CPU burners for the asyncio span-link test (asyncapp.py calls them through
 * ctypes). One function per endpoint and phase (before, between and after the two awaits of
 * the request's span, and "unspanned" after the span ended), plus outside_span for a task
 * that never has a span: a sample's stack tells which endpoint and phase it was taken in.
 * Built -O2 -fomit-frame-pointer -shared.
 */
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static __attribute__((noinline)) void spin(unsigned us)
{
	uint64_t end = thread_cpu_ns() + us * 1000ull, x = sink;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 500; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

#define BURNER(name)                                                                               \
	__attribute__((noinline)) void name(unsigned us)                                           \
	{                                                                                          \
		spin(us);                                                                          \
		__asm__ volatile("" ::: "memory");                                                 \
	}

#define ENDPOINT(ep)                                                                               \
	BURNER(ep##_before)                                                                        \
	BURNER(ep##_between)                                                                       \
	BURNER(ep##_after)                                                                         \
	BURNER(ep##_unspanned)

ENDPOINT(checkout)
ENDPOINT(search)
ENDPOINT(render)
ENDPOINT(login)
ENDPOINT(cart)
ENDPOINT(pay)
BURNER(outside_span)
