/*
 * Integration workload for the CFI unwinder: main -> via_exe -> la_call (libunwa.so, linked) ->
 * lb_spin (libunwb.so, dlopen'd once the file TRIGGER exists, "-": at once). All built -O2
 * -fomit-frame-pointer. Usage: unw_libs SECONDS TRIGGER PATH_TO_LIBUNWB (exits by itself).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long (*spin_fn)(double until);
unsigned long la_call(spin_fn fn, double until);

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long via_exe(spin_fn fn, double until)
{
	unsigned long r = la_call(fn, until);

	sink += r;
	return r;
}

int main(int argc, char **argv)
{
	double until = now() + (argc > 1 ? atof(argv[1]) : 5);
	void *h;
	spin_fn fn;

	if (argc < 4)
		return 2;
	/* Sleep (no samples) until the test says the agent runs. */
	while (strcmp(argv[2], "-") && access(argv[2], F_OK) && now() < until)
		usleep(10000);
	h = dlopen(argv[3], RTLD_NOW);
	fn = h ? (spin_fn)dlsym(h, "lb_spin") : NULL;
	if (!fn) {
		fprintf(stderr, "unw_libs: %s\n", dlerror());
		return 1;
	}
	sink += via_exe(fn, until);
	return 0;
}
