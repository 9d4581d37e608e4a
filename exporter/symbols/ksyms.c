// SPDX-License-Identifier: Apache-2.0
/*
 * ksyms: kernel text symbols from /proc/kallsyms. Line format (see the
 * kernel's kernel/kallsyms.c, s_show()): "<hex addr> <type> <name>[\t[<module>]]".
 * Symbols have no sizes: a symbol covers the addresses up to the next one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbolize.h"

/* kallsyms gives no size; the last symbol is trusted this far past its start. */
#define LAST_SYMBOL_SPAN 4096

/* 16 bytes: a kernel has 100k+ text symbols, kept for the whole run. */
struct ksym {
	uint64_t addr;
	uint32_t name;	/* offset in ksyms.names; grows with the line number (sort order) */
	int16_t module; /* index in ksyms.modules, -1 for the core kernel */
	uint8_t global;
};

struct ksyms {
	struct ksym *syms;
	size_t n, cap;
	char *names; /* NUL-separated names */
	size_t names_len, names_cap;
	char **modules;
	size_t nmodules;
};

void ksyms__free(struct ksyms *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->nmodules; i++)
		free(k->modules[i]);
	free(k->modules);
	free(k->names);
	free(k->syms);
	free(k);
}

static long add_name(struct ksyms *k, const char *s, size_t len)
{
	size_t off = k->names_len;
	char *p;

	if (k->names_len + len + 1 > UINT32_MAX)
		return -ENOMEM;
	if (k->names_len + len + 1 > k->names_cap) {
		size_t cap = k->names_cap ? k->names_cap : 1 << 16;

		while (cap < k->names_len + len + 1)
			cap *= 2;
		p = realloc(k->names, cap);
		if (!p)
			return -ENOMEM;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + off, s, len);
	k->names[off + len] = 0;
	k->names_len += len + 1;
	return (long)off;
}

/* Modules are few and their symbols contiguous: compare with the last one first. */
static int module_index(struct ksyms *k, const char *s, size_t len)
{
	size_t i;
	char **p;

	for (i = k->nmodules; i > 0; i--)
		if (!strncmp(k->modules[i - 1], s, len) && !k->modules[i - 1][len])
			return (int)(i - 1);
	if (k->nmodules == INT16_MAX)
		return -ENOMEM;
	p = realloc(k->modules, (k->nmodules + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	k->modules = p;
	p[k->nmodules] = strndup(s, len);
	if (!p[k->nmodules])
		return -ENOMEM;
	return (int)k->nmodules++;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name; /* line order */
}

/* Parses one line; 1 if kept, 0 if skipped (not text), -EINVAL or -ENOMEM. */
static int parse_line(struct ksyms *k, char *line, bool *nonzero)
{
	unsigned long long addr;
	char type, *name, *end, *mod;
	int consumed = 0, module = -1;
	long off;
	size_t len;

	if (sscanf(line, "%llx %c %n", &addr, &type, &consumed) != 2 || !consumed)
		return -EINVAL;
	name = line + consumed;
	len = strcspn(name, " \t\n");
	if (!len)
		return -EINVAL;
	if (addr)
		*nonzero = true;
	/* Text only: t/T, and weak w/W (kallsyms reports weak functions so). */
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	mod = strchr(name + len, '[');
	if (mod) {
		end = strchr(++mod, ']');
		if (!end)
			return -EINVAL;
		module = module_index(k, mod, (size_t)(end - mod));
		if (module < 0)
			return module;
	}
	off = add_name(k, name, len);
	if (off < 0)
		return (int)off;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 4096;
		struct ksym *p = realloc(k->syms, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		k->syms = p;
		k->cap = cap;
	}
	k->syms[k->n++] =
	    (struct ksym){addr, (uint32_t)off, (int16_t)module, type == 'T' || type == 'W'};
	return 1;
}

struct ksyms *ksyms__load(const char *path)
{
	struct ksyms *k = NULL;
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0, order = 0, i, n;
	struct ksym *p;
	char *names;
	bool nonzero = false;
	int err;

	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f) {
		err = -errno;
		goto cleanup;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (getline(&line, &cap, f) > 0) {
		order++;
		err = parse_line(k, line, &nonzero);
		if (err < 0)
			goto cleanup;
	}
	if (ferror(f)) {
		err = -EIO;
		goto cleanup;
	}
	if (!nonzero) {
		/* kptr_restrict hides addresses from readers without CAP_SYSLOG. */
		err = order ? -EPERM : -ENODATA;
		goto cleanup;
	}
	/* Only non-text symbols: no array (qsort must not get NULL, even for 0 elements). */
	if (k->n)
		qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
	/* One symbol per address: the global one, else the first listed. */
	for (i = 0, n = 0; i < k->n; i++)
		if (!n || k->syms[n - 1].addr != k->syms[i].addr)
			k->syms[n++] = k->syms[i];
	k->n = n;
	/* Give back the growth slack of both arrays. */
	if (n && (p = realloc(k->syms, n * sizeof(*k->syms))))
		k->syms = p;
	if (k->names_len && (names = realloc(k->names, k->names_len)))
		k->names = names;
	err = 0;
cleanup:
	free(line);
	if (f)
		fclose(f);
	if (err) {
		ksyms__free(k);
		errno = -err;
		return NULL;
	}
	return k;
}

size_t ksyms__count(const struct ksyms *k)
{
	return k->n;
}

const char *ksyms__lookup_module(const struct ksyms *k, uint64_t addr, uint64_t *offset,
				 const char **module)
{
	size_t lo = 0, hi = k->n, mid;
	const struct ksym *s;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &k->syms[lo - 1];
	if (lo == k->n && addr - s->addr >= LAST_SYMBOL_SPAN)
		return NULL;
	if (offset)
		*offset = addr - s->addr;
	if (module)
		*module = s->module >= 0 ? k->modules[s->module] : NULL;
	return k->names + s->name;
}

const char *ksyms__lookup(const struct ksyms *k, uint64_t addr, uint64_t *offset)
{
	return ksyms__lookup_module(k, addr, offset, NULL);
}
