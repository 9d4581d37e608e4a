/*
 * A stand-in for an allocator library (jemalloc, tcmalloc): it defines malloc, calloc, free and
 * the C++ operator new (by its mangled name) itself, so allocsyms must report both families.
 * Never run: only its symbol table matters.
 */
#include <stddef.h>

static char arena[1 << 16];
static size_t used;

void *malloc(size_t n)
{
	void *p = arena + used;

	used += (n + 15) & ~(size_t)15;
	return used <= sizeof(arena) ? p : NULL;
}

void *calloc(size_t n, size_t m)
{
	return malloc(n * m);
}

void free(void *p)
{
	(void)p;
}

/* operator new(unsigned long), with its own path (not through malloc). */
void *op_new(size_t n) __asm__("_Znwm");
void *op_new(size_t n)
{
	void *p = arena + used;

	used += n;
	return p;
}
