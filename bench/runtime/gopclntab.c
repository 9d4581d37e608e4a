// SPDX-License-Identifier: Apache-2.0
/*
 * bench/gopclntab: cost of naming Go code from .gopclntab (exporter/runtime/go/gopclntab.c).
 * For each Go binary given (default: the machine's `go` command and its compiler), prints:
 * the table's size and function count, the time to open it (section, moduledata scan), the
 * time of one uncached lookup (functab search, pc-value tables, inline tree) over random PCs
 * of its functions, and through the agent's symbol cache the first lookup of an address
 * (load included, amortized) and the steady state (the same addresses again: what a
 * long-running agent pays per sample frame). Never fails on the figures.
 *   gopclntab [-k lookups] [-r rounds] [FILE...]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/go/gopclntab.h"
#include "symbols/symbolize.h"

#define MAX_FRAMES 32

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bench_file(const char *path, int k, int rounds)
{
	struct gopclntab_frame fr[MAX_FRAMES];
	struct sym_frame sf[MAX_FRAMES];
	struct gopclntab *t = NULL;
	struct symcache *c = NULL;
	struct elf_object *o;
	uint64_t *pcs = NULL, entry, end;
	size_t off, len, nf;
	const char *name;
	double t0, t_open, t_look, t_first, t_steady;
	unsigned seed = 42;
	long named = 0;
	struct stat st;
	void *map = MAP_FAILED;
	Elf *elf = NULL;
	int fd = -1, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		fprintf(stderr, "gopclntab: %s: %s\n", path, strerror(errno));
		goto cleanup;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (map == MAP_FAILED || !elf) {
		err = -EINVAL;
		fprintf(stderr, "gopclntab: %s: cannot map or read as ELF\n", path);
		goto cleanup;
	}
	t0 = now_s();
	t = gopclntab__open(elf, map, (size_t)st.st_size);
	t_open = now_s() - t0;
	if (!t) {
		err = -errno;
		fprintf(stderr, "gopclntab: %s: no Go table: %s\n", path, strerror(errno));
		goto cleanup;
	}
	nf = gopclntab__nfuncs(t);
	gopclntab__extent(t, &off, &len);
	pcs = malloc(k * sizeof(*pcs));
	if (!pcs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int i = 0; i < k; i++) {
		if (gopclntab__func(t, (size_t)rand_r(&seed) % nf, &entry, &end, &name)) {
			err = -EINVAL;
			goto cleanup;
		}
		pcs[i] = entry + (uint64_t)rand_r(&seed) % (end - entry);
	}
	t0 = now_s();
	for (int i = 0; i < k; i++)
		named += gopclntab__lookup(t, pcs[i], fr, MAX_FRAMES) > 0;
	t_look = now_s() - t0;

	c = symcache__new(NULL);
	o = c ? symcache__open(c, path, NULL) : NULL;
	if (!o) {
		err = -errno;
		goto cleanup;
	}
	t0 = now_s();
	for (int i = 0; i < k; i++)
		symcache__lookup(c, o, pcs[i], sf, MAX_FRAMES);
	t_first = now_s() - t0;
	t0 = now_s();
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < k; i++)
			symcache__lookup(c, o, pcs[i], sf, MAX_FRAMES);
	t_steady = now_s() - t0;
	printf("%s: table %.1f MiB, %zu functions, layout %d, inline trees %s; open %.2f ms; "
	       "lookup %.0f ns (%ld/%d named); symcache first %.0f ns, steady %.0f ns\n",
	       path, len / 1048576.0, nf, gopclntab__layout(t),
	       gopclntab__has_inline(t) ? "yes" : "no", t_open * 1e3, t_look * 1e9 / k, named, k,
	       t_first * 1e9 / k, t_steady * 1e9 / ((double)k * rounds));
cleanup:
	symcache__free(c);
	free(pcs);
	gopclntab__free(t);
	if (elf)
		elf_end(elf);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	return err;
}

int main(int argc, char **argv)
{
	int k = 2000, rounds = 20, opt;

	while ((opt = getopt(argc, argv, "k:r:")) != -1) {
		if (opt == 'k')
			k = atoi(optarg);
		else if (opt == 'r')
			rounds = atoi(optarg);
		else {
			fprintf(stderr, "usage: gopclntab [-k lookups] [-r rounds] [FILE...]\n");
			return 2;
		}
	}
	if (k <= 0 || rounds <= 0) {
		fprintf(stderr, "gopclntab: -k and -r want positive numbers\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	for (int i = optind; i < argc; i++)
		bench_file(argv[i], k, rounds);
	return 0;
}
