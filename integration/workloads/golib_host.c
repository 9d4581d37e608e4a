/*
 * golib_host: a C program that loads a Go shared library (test/runtime/go-progs/golib, built
 * -buildmode=c-shared) with dlopen and calls into it, for spanprof's tests of Go code in a
 * shared object of a program that is not Go itself.
 *
 * Usage: golib_host LIBRARY CPU_SECONDS [labelled]. Prints "ready" once the library is loaded,
 * waits for a line on stdin (the tests' gate), then calls GoSpin(CPU_SECONDS, labelled) from
 * host_call and prints its result.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long (*go_spin_fn)(double cpu_seconds, int labelled);

__attribute__((noinline)) static unsigned long long host_call(go_spin_fn fn, double s, int lab)
{
	unsigned long long h = fn(s, lab);

	__asm__ volatile("" ::: "memory");
	return h;
}

int main(int argc, char **argv)
{
	char line[16];
	void *lib;
	go_spin_fn fn;

	if (argc < 3) {
		fprintf(stderr, "usage: golib_host LIBRARY CPU_SECONDS [labelled]\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "golib_host: %s\n", dlerror());
		return 1;
	}
	fn = (go_spin_fn)dlsym(lib, "GoSpin");
	if (!fn) {
		fprintf(stderr, "golib_host: %s\n", dlerror());
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("%llu\n",
	       host_call(fn, strtod(argv[2], NULL), argc > 3 && !strcmp(argv[3], "labelled")));
	return 0;
}
