/*
 * alloc_sites: known allocation sites with known sizes and counts, for the alloc profile tests
 * (integration/test_alloc.py). Each site is a noinline function that allocates and frees at
 * once, so the truth is the table printed on stdout:
 *
 *   site <function> <count> <bytes each>
 *
 * Usage: alloc_sites MODE [PLUGIN]
 *   stats  the counts sized for the statistics at the default sampling rate
 *   exact  a twenty-fifth of them: about 800 allocations of 4 KiB and more, fewer than the
 *          agent's ring buffer holds for event profiles (about 1300 samples, exporter/record.c
 *          ringbuf_size()), so a profile of every allocation loses none however slowly the agent
 *          drains it (a TCG guest); paced too (a pause every 100 of them)
 *   huge   site_huge only: 50 x 16 MiB, then waits for the end of stdin before exiting
 *   check  prints "first-byte XX" of malloc's code (cc: a uprobe is still there) and exits
 * With PLUGIN (a library built with its own malloc, see alloc_plugin.c), it is dlopen()ed after
 * the other sites and plugin_site() allocates through the plugin's own malloc.
 *
 * Before the sites it reads a line from stdin (the test sends it once the agent samples), and
 * checks (up to 60 s) that malloc's first instruction is a breakpoint: the agent's uprobe is in
 * place (a uprobe replaces the byte with int3, 0xcc, in this process). After dlopen(), it waits
 * the same way for the plugin's malloc: the agent probes the new file when it sees the mmap;
 * then for a copy's (wait_armed()), so that the first one's probes have their programs.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int exact;
static unsigned pace_n;

/* Keeps the compiler from removing an allocation. */
static void use(void *p)
{
	__asm__ volatile("" ::"r"(p) : "memory");
}

static void pace(void)
{
	if (exact && ++pace_n % 100 == 0)
		usleep(40000);
}

static int wait_probe(const void *fn, const char *what)
{
	for (int i = 0; i < 6000; i++) {
		if (*(const volatile unsigned char *)fn == 0xcc)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "alloc_sites: no uprobe on %s after 60 s\n", what);
	return -1;
}

/*
 * A breakpoint is written when a uprobe is made, before its program is attached (the next
 * calls of the agent): a malloc right after the 0xcc can still go uncounted (seen on a 6.1 guest,
 * 11 to 41 of the plugin's 80). The agent probes new files one after the other, so a copy of the
 * plugin loaded now is probed once the first one's probes are all attached: its breakpoint says
 * so. The copy (a new file) is unlinked once probed, and stays mapped.
 */
static int wait_armed(const char *plugin)
{
	char copy[] = "/tmp/alloc_plugin_copy_XXXXXX", buf[65536];
	FILE *in = fopen(plugin, "rb");
	int fd = mkstemp(copy), ok = in && fd >= 0;
	size_t n;
	void *h = NULL, *own_malloc;

	while (ok && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		ok = write(fd, buf, n) == (ssize_t)n;
	if (in)
		fclose(in);
	if (fd >= 0)
		close(fd);
	h = ok ? dlopen(copy, RTLD_NOW | RTLD_LOCAL) : NULL;
	own_malloc = h ? dlsym(h, "malloc") : NULL;
	ok = own_malloc && !wait_probe(own_malloc, "the plugin copy's malloc");
	unlink(copy);
	if (!ok)
		fprintf(stderr, "alloc_sites: the plugin's copy %s: %s\n", copy,
			h ? "not probed" : ok ? dlerror() : "not copied");
	return ok ? 0 : -1;
}

static unsigned scaled(unsigned n)
{
	return exact ? n / 25 : n;
}

static void report(const char *fn, unsigned n, unsigned long size)
{
	printf("site %s %u %lu\n", fn, n, size);
}

/* Site A: many small blocks. */
extern "C" __attribute__((noinline)) void site_small(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(1024);

		use(p);
		free(p);
	}
	report(__func__, n, 1024);
}

/* Site B: 1 MiB blocks. */
extern "C" __attribute__((noinline)) void site_big(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(1 << 20);

		use(p);
		free(p);
		pace();
	}
	report(__func__, n, 1 << 20);
}

/* Site C: the other C entry points, each in its own function. */
extern "C" __attribute__((noinline)) void site_calloc(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = calloc(256, 4096);

		use(p);
		free(p);
		pace();
	}
	report(__func__, n, 256 * 4096);
}

/* realloc of a small block: the 16-byte malloc is below every threshold used by the tests. */
extern "C" __attribute__((noinline)) void site_realloc(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(16), *q;

		use(p);
		q = realloc(p, 256 << 10);
		use(q);
		free(q);
		pace();
	}
	report(__func__, n, 256 << 10);
}

/* realloc(NULL, n): glibc jumps to malloc, which must not count it a second time. */
extern "C" __attribute__((noinline)) void site_realloc_null(unsigned n)
{
	void *volatile none = NULL; /* the compiler would turn realloc(NULL, n) into malloc(n) */

	for (unsigned i = 0; i < n; i++) {
		void *p = realloc(none, 256 << 10);

		use(p);
		free(p);
		pace();
	}
	report(__func__, n, 256 << 10);
}

extern "C" __attribute__((noinline)) void site_aligned(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = aligned_alloc(4096, 256 << 10);

		use(p);
		free(p);
		pace();
	}
	report(__func__, n, 256 << 10);
}

extern "C" __attribute__((noinline)) void site_memalign(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = NULL;

		if (posix_memalign(&p, 64, 256 << 10))
			abort();
		use(p);
		free(p);
		pace();
	}
	report(__func__, n, 256 << 10);
}

/* Site D: C++ new[] (libstdc++: operator new[] -> operator new -> malloc). */
extern "C" __attribute__((noinline)) void site_new(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char *p = new char[256 << 10];

		use(p);
		delete[] p;
		pace();
	}
	report(__func__, n, 256 << 10);
}

extern "C" __attribute__((noinline)) void site_huge(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(16 << 20);

		use(p);
		free(p);
	}
	report(__func__, n, 16 << 20);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "stats";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "check")) {
		printf("first-byte %02x\n", *(const volatile unsigned char *)(void *)malloc);
		return 0;
	}
	exact = !strcmp(mode, "exact");
	printf("ready %d\n", getpid());
	if (getchar() == EOF || wait_probe((void *)malloc, "malloc"))
		return 1;
	if (!strcmp(mode, "huge")) {
		site_huge(50);
		printf("done\n");
		/* A live process: its maps stay readable until the test has stopped the agent. */
		while (getchar() != EOF)
			;
		return 0;
	}
	site_small(scaled(1000000));
	site_big(scaled(2000));
	site_calloc(scaled(1000));
	site_realloc(scaled(3000));
	site_realloc_null(scaled(3000));
	site_aligned(scaled(3000));
	site_memalign(scaled(3000));
	site_new(scaled(3000));
	if (argc > 2) {
		void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
		void (*site)(unsigned);
		void *own_malloc;

		if (!h) {
			fprintf(stderr, "alloc_sites: %s\n", dlerror());
			return 1;
		}
		own_malloc = dlsym(h, "malloc");
		site = (void (*)(unsigned))dlsym(h, "plugin_site");
		if (!own_malloc || !site || own_malloc == (void *)malloc)
			return 1;
		if (wait_probe(own_malloc, "the plugin's malloc") || wait_armed(argv[2]))
			return 1;
		site(scaled(2000));
	}
	printf("done\n");
	return 0;
}
