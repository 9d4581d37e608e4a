/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The alloc profile type (--profile alloc; docs/profile-types.md): see
 * exporter/sampling/sampler_events.h, bpf/alloc.bpf.h.
 *
 * Uprobes on the allocator entry points (exporter/events/allocsyms.h) of every executable file
 * mapped by a profiled process, attached once per file (device + inode): for the whole file (every
 * process that maps it) when the whole host is profiled, for each process with --pid. At start
 * the maps of the profiled processes (every process: /proc) are read, so the common libc is
 * probed before any workload starts; later, each (re)read of a process's maps by the agent (its
 * first sample, an mmap of code, a dlopen) reaches alloc_maps_hook().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <uthash.h>

#include "events/allocsample.h"
#include "events/allocsyms.h"
#include "process/procmaps.h"
#include "sampler.skel.h"
#include "sampling/sampler_events.h"
#include "sampling/sampler_user.h"
#include "sampling/uprobe.h"

/* Files with allocator entry points that can be probed (map alloc_files, < ALLOC_MAX_FILES). */
#define ALLOC_FILES 1024

struct file_key {
	uint64_t ino;
	uint32_t dev_major, dev_minor;
	uint32_t pid; /* --pid: the process the probes are for; 0 for the whole host */
};

struct file_ent {
	struct file_key key;
	int idx; /* index in alloc_files; -1: no entry point (or could not be probed) */
	UT_hash_handle hh;
};

struct alloc_state {
	struct sampler_bpf *skel;
	uint64_t mean; /* alloc_sample_bytes as loaded; 0: every allocation */
	int per_pid;   /* --pid: uprobes per process */
	uint32_t *pids;
	size_t npids;
	struct file_ent *files;
	uint32_t nfiles; /* file indices used */
	struct bpf_link **links;
	size_t nlinks, cap;
	uint64_t rng; /* alloc__round() */
	/* For the summary. */
	uint64_t files_checked, files_unreadable, files_full, attach_failed;
};

static int alloc_configure(struct sampler_bpf *skel, const struct sampler_opts *o, int selected)
{
	uint32_t table[ALLOC_EXP_STEPS + 1];

	if (!selected) {
		bpf_program__set_autoload(skel->progs.on_alloc, false);
		bpf_map__set_autocreate(skel->maps.alloc_threads, false);
		bpf_map__set_autocreate(skel->maps.alloc_files, false);
		return 0;
	}
	/* alloc__next_interval() wants a mean below 2^40 (main.c caps the flag at 2^40). */
	skel->rodata->alloc_sample_bytes =
	    o->alloc_sample_bytes < (1ull << 40) ? o->alloc_sample_bytes : (1ull << 40) - 1;
	skel->rodata->alloc_min_bytes = o->alloc_min_bytes;
	skel->rodata->alloc_self_pid = (uint32_t)getpid();
	alloc__exp_table(table);
	for (uint32_t i = 0; i <= ALLOC_EXP_STEPS; i++)
		skel->rodata->alloc_exp_table[i] = table[i];
	return bpf_map__set_max_entries(skel->maps.alloc_files, ALLOC_FILES);
}

static int add_link(struct alloc_state *st, struct bpf_link *l)
{
	if (st->nlinks == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 64;
		struct bpf_link **n = realloc(st->links, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		st->links = n;
		st->cap = cap;
	}
	st->links[st->nlinks++] = l;
	return 0;
}

/*
 * Probes the entry points @syms of the file open as @path (a /proc path that stays valid for
 * the call) under file index @idx. Returns the number of probes attached.
 */
static int attach_file(struct alloc_state *st, const char *path, const char *shown, uint32_t pid,
		       uint32_t idx, const struct allocsyms *syms)
{
	struct alloc_file f = {0};
	int attached = 0;

	for (uint32_t i = 0; i < syms->n; i++) {
		f.r[f.n].lo = syms->e[i].vaddr;
		f.r[f.n].hi = syms->e[i].vaddr + syms->e[i].size;
		f.n++;
	}
	if (bpf_map_update_elem(bpf_map__fd(st->skel->maps.alloc_files), &idx, &f, BPF_ANY)) {
		fprintf(stderr, "spanprof: warning: alloc: %s: map update failed: %s\n", shown,
			strerror(errno));
		return 0;
	}
	for (uint32_t i = 0; i < syms->n; i++) {
		const struct allocsym *e = &syms->e[i];
		LIBBPF_OPTS(bpf_uprobe_opts, uo,
			    .bpf_cookie = ALLOC_COOKIE(e->kind, idx, e->vaddr));
		struct bpf_link *l;
		char what[PATH_MAX + 64];

		snprintf(what, sizeof(what), "alloc: %s in %s", e->name, shown);
		l = uprobe__attach(st->skel->progs.on_alloc, st->per_pid ? (int)pid : -1, path,
				   e->offset, &uo, what);
		if (!l || add_link(st, l)) {
			int err = l ? -ENOMEM : -errno;

			bpf_link__destroy(l);
			if (!st->attach_failed++)
				fprintf(stderr,
					"spanprof: warning: alloc: attaching a uprobe to %s in %s "
					"failed: %s (allocations there are not seen)\n",
					e->name, shown, strerror(-err));
			continue;
		}
		attached++;
	}
	if (getenv("SPANPROF_DEBUG"))
		fprintf(stderr, "spanprof: alloc: %d probes in %s (pid %d)\n", attached, shown,
			st->per_pid ? (int)pid : -1);
	return attached;
}

/* One executable mapping of process @pid: probe its file if it is new and defines an allocator. */
static void check_mapping(struct alloc_state *st, uint32_t pid, const struct procmap *m)
{
	char path[PATH_MAX + 64];
	struct allocsyms syms;
	struct file_ent *fe;
	struct file_key key;
	int fd, err;

	if (!(m->prot & PROT_EXEC) || !m->inode || m->path[0] != '/')
		return;
	memset(&key, 0, sizeof(key));
	key.ino = m->inode;
	key.dev_major = m->dev_major;
	key.dev_minor = m->dev_minor;
	key.pid = st->per_pid ? pid : 0;
	HASH_FIND(hh, st->files, &key, sizeof(key), fe);
	if (fe)
		return;

	/* map_files reaches deleted files and other mount namespaces; root + path otherwise. */
	fd = procmaps__open_file((int)pid, m, path, sizeof(path));
	if (fd < 0) {
		/* The process is gone: another one mapping the file will tell again. */
		if (errno != ENOENT && errno != ESRCH)
			st->files_unreadable++;
		return;
	}
	fe = calloc(1, sizeof(*fe));
	if (!fe) {
		close(fd);
		return;
	}
	fe->key = key;
	fe->idx = -1;
	HASH_ADD(hh, st->files, key, sizeof(fe->key), fe);
	st->files_checked++;
	err = allocsyms__find_fd(fd, &syms);
	if (err || !syms.n)
		goto out;
	if (st->nfiles >= ALLOC_FILES) {
		if (!st->files_full++)
			fprintf(stderr,
				"spanprof: warning: alloc: more than %d allocator files: %s and "
				"later ones are not probed\n",
				ALLOC_FILES, m->path);
		goto out;
	}
	for (uint32_t i = 0; i < syms.n; i++)
		if (syms.e[i].vaddr > ALLOC_MAX_VADDR)
			goto out; /* beyond the cookie's 48 bits: never seen in practice */
	if (attach_file(st, path, m->path, pid, st->nfiles, &syms) > 0)
		fe->idx = (int)st->nfiles++;
out:
	close(fd);
}

static void check_maps(struct alloc_state *st, uint32_t pid, const struct procmaps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		check_mapping(st, pid, &maps->maps[i]);
}

static void check_pid(struct alloc_state *st, uint32_t pid)
{
	struct procmaps maps = {0};

	if (procmaps__read_filtered((int)pid, PROCMAPS_EXEC_ONLY, &maps))
		return;
	check_maps(st, pid, &maps);
	procmaps__clear(&maps);
}

static int alloc_attach(struct sampler_bpf *skel, const struct sampler_opts *o, void **state)
{
	struct alloc_state *st = calloc(1, sizeof(*st));
	uint32_t self = (uint32_t)getpid();
	struct dirent *d;
	DIR *dir;

	*state = st;
	if (!st)
		return -ENOMEM;
	st->skel = skel;
	st->mean = skel->rodata->alloc_sample_bytes;
	st->rng = ((uint64_t)time(NULL) << 20) ^ self ^ 0x9e3779b97f4a7c15ull;
	if (o->npids) {
		st->per_pid = 1;
		st->pids = malloc(o->npids * sizeof(*st->pids));
		if (!st->pids)
			return -ENOMEM;
		memcpy(st->pids, o->pids, o->npids * sizeof(*st->pids));
		st->npids = o->npids;
		for (size_t i = 0; i < o->npids; i++)
			check_pid(st, o->pids[i]);
		return 0;
	}
	/* The whole host: every process's files now, so that libc is probed before anything runs.
	 */
	dir = opendir("/proc");
	if (!dir) {
		fprintf(stderr, "spanprof: --profile alloc: cannot list /proc: %s\n",
			strerror(errno));
		return -errno;
	}
	while ((d = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(d->d_name, &end, 10);

		if (*end || !pid || pid == self)
			continue;
		check_pid(st, (uint32_t)pid);
	}
	closedir(dir);
	return 0;
}

static void alloc_maps_hook(void *state, uint32_t pid, const struct procmaps *maps)
{
	struct alloc_state *st = state;
	size_t i;

	if (!maps || pid == (uint32_t)getpid())
		return;
	if (st->per_pid) {
		for (i = 0; i < st->npids && st->pids[i] != pid; i++)
			;
		if (i == st->npids)
			return;
	}
	check_maps(st, pid, maps);
}

static void alloc_values(void *state, const struct sp_sample *s, uint64_t *count, uint64_t *value)
{
	struct alloc_state *st = state;
	double c, b;

	alloc__weights(s->value, st->mean, &c, &b);
	*count = alloc__round(c, &st->rng);
	*value = alloc__round(b, &st->rng);
}

static void alloc_summary(void *state, const uint64_t *stats, FILE *f)
{
	struct alloc_state *st = state;

	fprintf(f,
		"spanprof: alloc: %llu calls seen, %llu below --alloc-min-bytes, %llu counted "
		"by an outer entry point, %llu without a countdown (task storage); %u files "
		"probed with %zu uprobes (%llu files checked, %llu unreadable, %llu over the "
		"limit, %llu attach failures)\n",
		(unsigned long long)stats[SP_STAT_ALLOC_CALLS],
		(unsigned long long)stats[SP_STAT_ALLOC_SMALL],
		(unsigned long long)stats[SP_STAT_ALLOC_NESTED],
		(unsigned long long)stats[SP_STAT_ALLOC_NO_STORAGE], st->nfiles, st->nlinks,
		(unsigned long long)st->files_checked, (unsigned long long)st->files_unreadable,
		(unsigned long long)st->files_full, (unsigned long long)st->attach_failed);
}

static size_t alloc_counters(void *state, struct sampler_counter *out)
{
	struct alloc_state *st = state;
	const struct sampler_counter c[] = {
	    {"files_probed", st->nfiles},	  {"uprobes", st->nlinks},
	    {"files_checked", st->files_checked}, {"files_unreadable", st->files_unreadable},
	    {"files_over_limit", st->files_full}, {"attach_failures", st->attach_failed},
	};

	_Static_assert(sizeof(c) / sizeof(c[0]) <= SAMPLER_MAX_COUNTERS, "room for the counters");
	memcpy(out, c, sizeof(c));
	return sizeof(c) / sizeof(c[0]);
}

static void alloc_free(void *state)
{
	struct alloc_state *st = state;
	struct file_ent *fe, *tmp;

	if (!st)
		return;
	for (size_t i = 0; i < st->nlinks; i++)
		bpf_link__destroy(st->links[i]);
	free(st->links);
	HASH_ITER (hh, st->files, fe, tmp) {
		HASH_DEL(st->files, fe);
		free(fe);
	}
	free(st->pids);
	free(st);
}

const struct sampler_event_type sampler_ev_alloc = {
    .type = SP_PROF_ALLOC,
    .configure = alloc_configure,
    .attach = alloc_attach,
    .maps_hook = alloc_maps_hook,
    .values = alloc_values,
    .summary = alloc_summary,
    .counters = alloc_counters,
    .free = alloc_free,
};
