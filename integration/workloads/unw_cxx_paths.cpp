/*
 * Integration workload for exception paths: main -> paths_loop -> (p_direct | p_nested), over
 * and over. p_direct -> p_guarded -> p_guarded -> p_throw: a destructor runs in each p_guarded
 * on the way out (a cleanup landing pad: _Unwind_Resume); p_nested -> p_rethrow -> p_guarded
 * ...: p_rethrow catches and rethrows (__cxa_rethrow: _Unwind_Resume_or_Rethrow). Every catch is
 * in paths_loop. Built with frame pointers, where a walk taken while libgcc installs a handler
 * can look whole. Usage: unw_cxx_paths SECONDS (exits by itself).
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

struct Guard {
	~Guard();
};

__attribute__((noinline)) Guard::~Guard()
{
	for (int i = 0; i < 200; i++)
		sink += i;
}

__attribute__((noinline)) void p_throw(int i)
{
	if (i >= 0)
		throw std::runtime_error("unwind me");
	sink++;
}

__attribute__((noinline)) void p_guarded(int depth, int i)
{
	Guard g;

	if (depth)
		p_guarded(depth - 1, i);
	else
		p_throw(i);
	sink++;
}

__attribute__((noinline)) void p_rethrow(int i)
{
	try {
		p_guarded(1, i);
	} catch (...) {
		sink++;
		throw;
	}
}

__attribute__((noinline)) void p_direct(int i)
{
	p_guarded(1, i);
	sink++;
}

__attribute__((noinline)) void p_nested(int i)
{
	p_rethrow(i);
	sink++;
}

__attribute__((noinline)) void paths_loop(double until)
{
	while (now() < until)
		for (int i = 0; i < 1000; i++) {
			try {
				if (i & 1)
					p_direct(i);
				else
					p_nested(i);
			} catch (const std::exception &e) {
				sink += e.what()[0];
			}
		}
}

int main(int argc, char **argv)
{
	paths_loop(now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
