/*
 * alloc_plugin: a library with an allocator of its own (malloc, calloc, realloc, free over
 * mmap), dlopen()ed by alloc_sites after the agent started. Linked with -Bsymbolic, so its own
 * code calls its own malloc: the agent must find the new file (mmap hook, maps re-read) and
 * probe it. plugin_site(n) allocates n blocks of 64 KiB through it and reports the site.
 * plugin_semaphore is where a USDT semaphore would be (writable data of the file, section
 * .probes): test_neighbors.py gives it as the reference counter of another tool's uprobe.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

volatile unsigned short plugin_semaphore __attribute__((section(".probes")));

void *malloc(size_t n)
{
	size_t *p = mmap(NULL, n + 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	p[0] = n + 16;
	return p + 2;
}

void free(void *q)
{
	size_t *p = q;

	if (p)
		munmap(p - 2, p[-2]);
}

void *calloc(size_t n, size_t m)
{
	return malloc(n * m); /* fresh mmap pages are zero */
}

void *realloc(void *q, size_t n)
{
	size_t *p = q;
	void *r = malloc(n);

	if (r && p)
		memcpy(r, p, p[-2] - 16 < n ? p[-2] - 16 : n);
	free(q);
	return r;
}

__attribute__((noinline)) void plugin_site(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(64 << 10);

		__asm__ volatile("" ::"r"(p) : "memory");
		free(p);
	}
	printf("site plugin_site %u %u\n", n, 64 << 10);
}
