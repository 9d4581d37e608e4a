/*
 * burnlib: native CPU burners for the SDK end-to-end test (sdkapp.py calls them through
 * ctypes). One function per endpoint, so that a span's samples show its own function.
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

static __attribute__((noinline)) void spin(unsigned ms)
{
	uint64_t end = thread_cpu_ns() + ms * 1000000ull, x = sink;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

__attribute__((noinline)) void burn_checkout(unsigned ms)
{
	spin(ms);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void burn_search(unsigned ms)
{
	spin(ms);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void burn_render(unsigned ms)
{
	spin(ms);
	__asm__ volatile("" ::: "memory");
}
