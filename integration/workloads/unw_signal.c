/*
 * Integration workload for the CFI unwinder: main -> spin_outer spins while a 250 Hz SIGPROF timer
 * (ITIMER_PROF) runs on_tick -> handler_work, which spins about 2 ms: samples in the handler must
 * unwind through the signal trampoline (__restore_rt) into spin_outer. -O2 -fomit-frame-pointer.
 * Usage: unw_signal SECONDS (exits by itself).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void handler_work(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 2000000; i++)
		x += i * 3 + (x >> 5);
	sink = x;
}

__attribute__((noinline)) void on_tick(int sig)
{
	handler_work();
	sink += sig;
}

__attribute__((noinline)) unsigned long spin_outer(double until)
{
	unsigned long x = 0;

	while (now() < until)
		for (int i = 0; i < 2000000; i++)
			x += i * 7 + (x >> 3);
	return x;
}

int main(int argc, char **argv)
{
	struct itimerval it = {{0, 4000}, {0, 4000}};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	sink += spin_outer(now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
