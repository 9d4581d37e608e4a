// SPDX-License-Identifier: Apache-2.0
/*
 * bench/pyleaves: the symcache under the load of a machine running many CPython versions. A
 * sampled CPython thread is almost always inside its interpreter loop (_PyEval_EvalFrameDefault),
 * at a PC no earlier sample had: each sample's leaf is a new address of one of the libpythons.
 * This program asks a symcache for -k such addresses (each a pseudo-random address in the
 * interpreter loop of a pseudo-random file of the list, the same sequence for every run),
 * calling symcache__trim() every -t lookups as the agent does every 2 s, once per budget given
 * with -b (MiB; 0: no limit), each run in its own child process. Per run it prints the CPU time
 * per 1000 lookups (getrusage of the child), the cache's counters, its peak accounted bytes,
 * the child's peak RSS (VmHWM) and a checksum of every answer (function, system name, file,
 * line, column of every frame): runs that answer the same give the same checksum, whatever the
 * budget. Never fails on a figure.
 *   pyleaves [-k lookups] [-t trim_every] [-b MiB[,MiB...]] [-s seed] [FILE...]
 * Without FILE: pyenv's libpython3.8-3.13 (~/.pyenv/versions/3.*) and /usr/bin/python3.11.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procstatus.h"
#include "symbols/symbolize.h"

#define MAX_FILES 32
#define LOOP_SYMBOL "_PyEval_EvalFrameDefault"

struct target {
	const char *path;
	uint64_t lo, hi; /* the interpreter loop's vaddr range */
};

/* The range of LOOP_SYMBOL in @path's .symtab, else .dynsym. 0 or -1. */
static int loop_range(const char *path, uint64_t *lo, uint64_t *hi)
{
	GElf_Word types[2] = {SHT_SYMTAB, SHT_DYNSYM};
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = -1;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	for (int t = 0; elf && t < 2 && found; t++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;

		while (found && (scn = elf_nextscn(elf, scn))) {
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t] || !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;
				const char *name;

				if (!gelf_getsym(d, (int)i, &s) || !s.st_size)
					continue;
				name = elf_strptr(elf, sh.sh_link, s.st_name);
				if (name && !strcmp(name, LOOP_SYMBOL)) {
					*lo = s.st_value;
					*hi = s.st_value + s.st_size;
					found = 0;
					break;
				}
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* FNV-1a over @s (NULL hashes as empty) into *@h. */
static void mix(uint64_t *h, const char *s)
{
	for (; s && *s; s++)
		*h = (*h ^ (unsigned char)*s) * 0x100000001b3ull;
	*h = (*h ^ 0xff) * 0x100000001b3ull;
}

static void run(long mib, const struct target *tg, int n, int k, int trim_every, uint64_t seed)
{
	struct symcache_opts opts = {.max_bytes = mib ? (size_t)mib << 20 : SIZE_MAX};
	struct elf_object *objs[MAX_FILES];
	struct sym_frame f[32];
	struct symcache_stats st;
	struct rusage ru;
	struct symcache *c = symcache__new(&opts);
	uint64_t sum = 0xcbf29ce484222325ull, frames = 0;
	double cpu;
	char num[32];

	if (!c) {
		perror("symcache__new");
		exit(1);
	}
	for (int i = 0; i < n; i++)
		if (!(objs[i] = symcache__open(c, tg[i].path, tg[i].path))) {
			fprintf(stderr, "pyleaves: %s: %s\n", tg[i].path, strerror(errno));
			exit(1);
		}
	for (int j = 0; j < k; j++) {
		int i = (int)(rnd(&seed) % (uint64_t)n);
		uint64_t a = tg[i].lo + rnd(&seed) % (tg[i].hi - tg[i].lo);
		int m = symcache__lookup(c, objs[i], a, f, 32);

		for (int x = 0; x < m; x++) {
			mix(&sum, f[x].function);
			mix(&sum, f[x].system_name);
			mix(&sum, f[x].file);
			snprintf(num, sizeof(num), "%d:%d", f[x].line, f[x].column);
			mix(&sum, num);
		}
		frames += m > 0 ? (uint64_t)m : 0;
		if (trim_every > 0 && (j + 1) % trim_every == 0)
			symcache__trim(c);
	}
	getrusage(RUSAGE_SELF, &ru);
	cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	      ru.ru_stime.tv_usec / 1e6;
	symcache__stats(c, &st);
	printf("| %ld | %d | %.0f | %llu | %llu | %llu | %llu | %.1f | %.1f | %.1f | %.1f | %.2f | "
	       "%016llx |\n",
	       mib, k, 1e3 * cpu / k * 1000.0, (unsigned long long)st.loads,
	       (unsigned long long)st.evictions, (unsigned long long)st.cache_hits,
	       (unsigned long long)st.dwarf_hits, st.bytes_peak / 1048576.0,
	       status_kb("VmHWM") / 1024.0, status_kb("RssAnon") / 1024.0,
	       status_kb("RssFile") / 1024.0, (double)frames / k, (unsigned long long)sum);
	fflush(stdout);
	symcache__free(c);
}

int main(int argc, char **argv)
{
	struct target tg[MAX_FILES];
	const char *budgets = "12,32,0";
	int n = 0, k = 3000, trim_every = 100, opt;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	glob_t g = {0};
	char pat[4096], *list, *save = NULL, *tok;

	while ((opt = getopt(argc, argv, "k:t:b:s:")) != -1) {
		switch (opt) {
		case 'k':
			k = atoi(optarg);
			break;
		case 't':
			trim_every = atoi(optarg);
			break;
		case 'b':
			budgets = optarg;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0) | 1;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-k lookups] [-t trim_every] [-b MiB,...] "
				"[-s seed] [FILE...]\n",
				argv[0]);
			return 2;
		}
	}
	elf_version(EV_CURRENT);
	if (optind == argc) {
		snprintf(pat, sizeof(pat), "%s/.pyenv/versions/3.*/lib/libpython3.*.so.1.0",
			 getenv("HOME") ? getenv("HOME") : "/root");
		if (glob(pat, 0, NULL, &g) == 0)
			for (size_t i = 0; i < g.gl_pathc && n < MAX_FILES - 1; i++) {
				const char *v = strstr(g.gl_pathv[i], "libpython3.");
				int minor = v ? atoi(v + strlen("libpython3.")) : 0;

				if (minor >= 8)
					tg[n++].path = g.gl_pathv[i];
			}
		if (access("/usr/bin/python3.11", R_OK) == 0)
			tg[n++].path = "/usr/bin/python3.11";
	} else {
		for (int i = optind; i < argc && n < MAX_FILES; i++)
			tg[n++].path = argv[i];
	}
	for (int i = 0; i < n; i++)
		if (loop_range(tg[i].path, &tg[i].lo, &tg[i].hi)) {
			fprintf(stderr, "pyleaves: %s: no %s symbol\n", tg[i].path, LOOP_SYMBOL);
			return 1;
		}
	if (!n || k <= 0) {
		fprintf(stderr, "pyleaves: no files\n");
		return 1;
	}
	printf("%d files:", n);
	for (int i = 0; i < n; i++)
		printf(" %s", tg[i].path);
	printf("\n%d lookups (a new address of %s in a random file each), trim every %d\n\n", k,
	       LOOP_SYMBOL, trim_every);
	printf("| budget MiB (0: none) | lookups | CPU ms / 1000 lookups | loads | evictions | "
	       "cache hits | DWARF answers | peak accounted MiB | VmHWM MiB | RssAnon MiB at end | "
	       "RssFile MiB at end | frames / lookup | "
	       "answers checksum |\n");
	printf(
	    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
	    "--- |\n");
	fflush(stdout);
	list = strdup(budgets);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			run(atol(tok), tg, n, k, trim_every, seed);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			fprintf(stderr, "pyleaves: run with %s MiB failed\n", tok);
	}
	free(list);
	globfree(&g);
	return 0;
}
