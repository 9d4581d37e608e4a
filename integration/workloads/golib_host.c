/*
 * golib_host: a C program that loads a Go shared library (test/runtime/go-progs/golib, built
 * -buildmode=c-shared) with dlopen and calls into it, for spanprof's tests of Go code in a
 * shared object of a program that is not Go itself.
 *
 * Usage: golib_host LIBRARY CPU_SECONDS [labelled] [late]. Prints "ready" once the library is
 * loaded (with "late": before loading it), waits for a line on stdin (the tests' gate), loads
 * the library now if "late", then calls GoSpin(CPU_SECONDS, labelled) from host_call and prints
 * its result.
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

/* The library's GoSpin, or NULL (said on stderr). */
static go_spin_fn load(const char *path)
{
	void *lib = dlopen(path, RTLD_NOW);
	go_spin_fn fn;

	if (!lib) {
		fprintf(stderr, "golib_host: %s\n", dlerror());
		return NULL;
	}
	fn = (go_spin_fn)dlsym(lib, "GoSpin");
	if (!fn)
		fprintf(stderr, "golib_host: %s\n", dlerror());
	return fn;
}

static int has_word(int argc, char **argv, const char *w)
{
	for (int i = 3; i < argc; i++)
		if (!strcmp(argv[i], w))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	char line[16];
	go_spin_fn fn = NULL;
	int late;

	if (argc < 3) {
		fprintf(stderr, "usage: golib_host LIBRARY CPU_SECONDS [labelled] [late]\n");
		return 2;
	}
	late = has_word(argc, argv, "late");
	if (!late && !(fn = load(argv[1])))
		return 1;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (late && !(fn = load(argv[1])))
		return 1;
	printf("%llu\n", host_call(fn, strtod(argv[2], NULL), has_word(argc, argv, "labelled")));
	return 0;
}
