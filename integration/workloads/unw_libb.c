/* dlopen'd library of the unw_libs workload (built -O2 -fomit-frame-pointer -fPIC -shared). */
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long lb_spin(double until)
{
	unsigned long x = 0;

	while (now() < until)
		for (int i = 0; i < 20000000; i++)
			x += i * 7 + (x >> 3);
	return x;
}
