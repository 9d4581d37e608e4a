/*
 * Integration workload for the CFI unwinder: main -> cxx_loop -> cxx_outer -> cxx_mid ->
 * cxx_throw throws, cxx_outer catches, over and over: most samples land in the C++ runtime
 * (__cxa_throw, libgcc's _Unwind_RaiseException and its helpers). -O2 -fomit-frame-pointer.
 * Usage: unw_cxx SECONDS (exits by itself).
 */
#include <cstdlib>
#include <stdexcept>
#include <time.h>

static volatile unsigned long sink;

static double now()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void cxx_throw(int i)
{
	if (i >= 0)
		throw std::runtime_error("unwind me");
	sink++;
}

__attribute__((noinline)) void cxx_mid(int i)
{
	cxx_throw(i);
	sink++;
}

__attribute__((noinline)) void cxx_outer(int i)
{
	try {
		cxx_mid(i);
	} catch (const std::exception &e) {
		sink += e.what()[0];
	}
}

__attribute__((noinline)) void cxx_loop(double until)
{
	while (now() < until)
		for (int i = 0; i < 1000; i++)
			cxx_outer(i);
}

int main(int argc, char **argv)
{
	cxx_loop(now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
