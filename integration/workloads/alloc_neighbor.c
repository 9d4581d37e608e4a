/*
 * alloc_neighbor: allocates through a library with a malloc of its own (alloc_plugin.c),
 * dlopen()ed at start, for integration/test_neighbors.py. Prints "ready PID SEMAPHORE" (the
 * library's plugin_semaphore: above 0 while a uprobe with it as reference counter is in place),
 * waits for a line on stdin, runs plugin_site(N), prints "done SEMAPHORE" and waits for the end
 * of stdin.
 *
 * Usage: alloc_neighbor LIBRARY N
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	volatile unsigned short *sema;
	void (*site)(unsigned);
	void *h;

	if (argc < 3)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "alloc_neighbor: %s\n", dlerror());
		return 1;
	}
	site = (void (*)(unsigned))dlsym(h, "plugin_site");
	sema = dlsym(h, "plugin_semaphore");
	if (!site || !sema)
		return 1;
	printf("ready %d %u\n", getpid(), *sema);
	if (getchar() == EOF)
		return 1;
	site((unsigned)atoi(argv[2]));
	printf("done %u\n", *sema);
	while (getchar() != EOF)
		;
	return 0;
}
