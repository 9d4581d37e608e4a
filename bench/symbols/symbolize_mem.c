// SPDX-License-Identifier: Apache-2.0
/*
 * bench/symbolize_mem: memory and speed of the symcache on the largest ELF
 * files of this machine. Each configuration runs in its own child process, so
 * peak RSS figures (VmHWM, and the highest RssAnon / RssFile seen after each
 * file) are its own. The workload: open the N files, then R rounds over all of
 * them, each doing K lookups of a fixed pseudo-random set of addresses in the
 * file's executable segments (rounds repeat addresses: caches and re-loads after
 * eviction are exercised). Prints one line per configuration.
 *   symbolize_mem [-n files] [-k lookups] [-r rounds] [-b max_bytes] [FILE...]
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procstatus.h"
#include "symbols/symbolize.h"

#define MAX_FILES 256

struct cand {
	char *path;
	off_t size;
};

static struct cand cands[1 << 16];
static size_t ncands;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	unsigned char magic[4];
	int fd;

	if (type != FTW_F || !S_ISREG(st->st_mode) || st->st_size < (1 << 20) ||
	    ncands == sizeof(cands) / sizeof(cands[0]))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (read(fd, magic, 4) == 4 && !memcmp(magic, ELFMAG, 4)) {
		cands[ncands].path = strdup(path);
		cands[ncands++].size = st->st_size;
	}
	close(fd);
	return 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->size < y->size ? 1 : x->size > y->size ? -1 : strcmp(x->path, y->path);
}

/* Executable segments of @path: vaddr ranges to draw addresses from. */
static size_t exec_ranges(const char *path, uint64_t *lo, uint64_t *hi, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	GElf_Phdr ph;
	size_t n = 0, i, np;

	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &np))
		for (i = 0; i < np && n < max; i++)
			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && ph.p_filesz) {
				lo[n] = ph.p_vaddr;
				hi[n++] = ph.p_vaddr + ph.p_filesz;
			}
	if (elf)
		elf_end(elf);
	close(fd);
	return n;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run(const char *label, size_t max_bytes, char **files, int nfiles, int k, int rounds)
{
	struct symcache_opts opts = {0};
	struct elf_object *objs[MAX_FILES];
	uint64_t lo[MAX_FILES][8], hi[MAX_FILES][8];
	size_t nr[MAX_FILES];
	struct sym_frame f[16];
	struct symcache_stats st;
	struct symcache *c;
	long anon = 0, file = 0, v;
	uint64_t lookups = 0, named = 0;
	double t0, t;
	int i, j, r;

#ifdef SYMCACHE_DEFAULT_MAX_BYTES
	opts.max_bytes = max_bytes;
#else
	(void)max_bytes;
#endif
	c = symcache__new(&opts);
	if (!c) {
		perror("symcache__new");
		exit(1);
	}
	for (i = 0; i < nfiles; i++)
		nr[i] = exec_ranges(files[i], lo[i], hi[i], 8);
	t0 = now();
	for (i = 0; i < nfiles; i++)
		objs[i] = symcache__open(c, files[i], files[i]);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < nfiles; i++) {
			uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);

			if (!objs[i] || !nr[i])
				continue;
			for (j = 0; j < k; j++) {
				uint64_t x = rnd(&seed), s = x % nr[i];
				uint64_t a = lo[i][s] + (x >> 8) % (hi[i][s] - lo[i][s]);

				named += symcache__lookup(c, objs[i], a, f, 16) > 0;
				lookups++;
			}
			if ((v = status_kb("RssAnon")) > anon)
				anon = v;
			if ((v = status_kb("RssFile")) > file)
				file = v;
		}
	}
	t = now() - t0;
	symcache__stats(c, &st);
	printf("%-10s files=%d lookups=%llu named=%llu  %.2fs  %.0f lookups/s  VmHWM=%ld kB  "
	       "peak RssAnon=%ld kB RssFile=%ld kB",
	       label, nfiles, (unsigned long long)lookups, (unsigned long long)named, t,
	       lookups / t, status_kb("VmHWM"), anon, file);
#ifdef SYMCACHE_DEFAULT_MAX_BYTES
	printf("  loads=%llu evictions=%llu dwarf_skipped=%llu bytes_peak=%llu kB",
	       (unsigned long long)st.loads, (unsigned long long)st.evictions,
	       (unsigned long long)st.dwarf_skipped, (unsigned long long)st.bytes_peak >> 10);
#endif
	printf("\n");
	fflush(stdout);
	symcache__free(c);
}

int main(int argc, char **argv)
{
	const char *roots[] = {"/usr/lib", "/usr/bin", "/usr/libexec", "/usr/local", "/opt"};
	char *files[MAX_FILES];
	int nfiles = 0, want = 20, k = 2000, rounds = 3, opt, i;
	long budget = -1;

	while ((opt = getopt(argc, argv, "n:k:r:b:")) != -1) {
		switch (opt) {
		case 'n':
			want = atoi(optarg);
			break;
		case 'k':
			k = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'b':
			budget = atol(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-n files] [-k lookups] [-r rounds] [-b max_bytes] "
				"[FILE...]\n",
				argv[0]);
			return 2;
		}
	}
	if (want > MAX_FILES)
		want = MAX_FILES;
	elf_version(EV_CURRENT);
	if (optind < argc) {
		for (i = optind; i < argc && nfiles < MAX_FILES; i++)
			files[nfiles++] = argv[i];
	} else {
		for (i = 0; i < (int)(sizeof(roots) / sizeof(roots[0])); i++)
			nftw(roots[i], visit, 32, FTW_PHYS);
		qsort(cands, ncands, sizeof(cands[0]), cand_cmp);
		for (i = 0; i < (int)ncands && nfiles < want; i++)
			files[nfiles++] = cands[i].path;
	}
	if (!nfiles) {
		fprintf(stderr, "symbolize_mem: no ELF file found\n");
		return 1;
	}
	struct {
		const char *label;
		size_t max_bytes;
	} cfgs[] = {
	    {"unbounded", SIZE_MAX},
	    {budget >= 0 ? "budget" : "default", budget > 0 ? (size_t)budget : 0},
	};
	for (i = 0; i < 2; i++) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 1;
		if (!pid) {
			run(cfgs[i].label, cfgs[i].max_bytes, files, nfiles, k, rounds);
			_exit(0);
		}
		waitpid(pid, &status, 0);
#ifndef SYMCACHE_DEFAULT_MAX_BYTES
		break; /* the old symcache has one configuration */
#endif
	}
	return 0;
}
