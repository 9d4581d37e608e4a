// SPDX-License-Identifier: Apache-2.0
/*
 * Resolve time per sample (bench/resolve/resolve.mk): the recorded sample stream of the golden
 * replay test (test/record/fixtures/replay/recording.txt, format in its header; how the test
 * drives it: test/record/test_replay.c) through resolve__sample(), many rounds.
 *
 * The recording is read and replayed once as the test does (each sample resolved when the next
 * directive comes, so the files it opens and the processes it execs are known from the same
 * sample on); then its samples are resolved again, --rounds times per batch, in two modes:
 *   warm:  into the same profile, every location interned already (a long export interval);
 *   fresh: into a profile reset before each round (the first samples of an interval: every
 *          location interned again, names from the symbol cache's answers).
 * Each mode prints the thread CPU time per sample of its fastest batch (CPU time: a loaded
 * machine's waits are not the resolver's), as one line a script reads:
 *   resolve_time warm_ns=X fresh_ns=Y samples=N rounds=R batches=B locations=L
 * Built against any revision whose resolve.h has resolve__new()/resolve__sample() (bench/resolve/
 * before_after.sh builds it against a base revision too). No root; never fails on the figures.
 *
 *   resolve_time [--dir DIR] [--rounds R] [--batches B]
 */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "process/proctab.h"
#include "profile/profile.h"
#include "resolve/resolve.h"
#include "sampler.h"
#include "symbols/symbolize.h"

#define MAX_MAPS 32
#define MAX_SAMPLES 4096
#define NAME_LEN 64

/* A "map" line: where a process maps a file. */
struct rec_map {
	uint32_t pid;
	char file[NAME_LEN];
	struct sp_vma vma;
};

struct bench {
	const char *path;
	unsigned line;
	struct symcache *syms;
	struct ksyms *ksyms;
	struct proctab *procs;
	struct resolve *resolve;
	struct profile *profile;
	struct rec_map maps[MAX_MAPS];
	unsigned nmaps;
	struct sp_sample *samples[MAX_SAMPLES];
	unsigned nsamples;
	struct sp_sample
	    *cur;	    /* the sample being read, resolved at the next directive or the end */
	uint32_t *locs;	    /* RESOLVE_MAX_LOCATIONS */
	uint64_t locations; /* locations resolve__sample() gave in the last round */
};

static void die(const struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void die(const struct bench *b, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "resolve_time: %s:%u: ", b->path, b->line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t num(const struct bench *b, const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		die(b, "'%s' is not a number", s);
	return v;
}

/* The identity of a fixture file as BPF reads it (test_replay.c file_id()); "!NAME": unknown. */
static void file_id(const struct bench *b, const char *file, struct sp_file_id *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (file[0] == '!') {
		id->dev = 4095u << 20 | 0xfffff;
		id->ino = 1;
		id->size = 4096;
		id->mtime_sec = 1;
		return;
	}
	if (stat(file, &st))
		die(b, "%s: %s", file, strerror(errno));
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime_sec = st.st_mtim.tv_sec;
	id->mtime_nsec = st.st_mtim.tv_nsec;
	id->dev = major(st.st_dev) << 20 | minor(st.st_dev);
}

static const struct rec_map *find_map(const struct bench *b, uint32_t pid, const char *file)
{
	for (unsigned i = 0; i < b->nmaps; i++)
		if (b->maps[i].pid == pid && !strcmp(b->maps[i].file, file))
			return &b->maps[i];
	die(b, "no map line of PID %u for %s", pid, file);
	return NULL;
}

/* The sample read last, resolved once (as the replay test does) and kept for the rounds. */
static void flush_sample(struct bench *b)
{
	if (!b->cur)
		return;
	resolve__sample(b->resolve, b->profile, b->cur, b->locs);
	b->samples[b->nsamples++] = b->cur;
	b->cur = NULL;
}

static void set_comm(const struct bench *b, char *dst, const char *v)
{
	if (strlen(v) >= SP_COMM_LEN)
		die(b, "'%s': task names have at most %d bytes", v, SP_COMM_LEN - 1);
	strcpy(dst, v);
}

static void sample_line(struct bench *b, char **f, int nf)
{
	static const char *const types[] = {"cpu", "alloc", "lock", "offcpu"};
	struct sp_sample *s;
	int t;

	flush_sample(b);
	if (b->nsamples == MAX_SAMPLES)
		die(b, "more than %d samples", MAX_SAMPLES);
	for (t = 0; nf >= 2 && t < SP_PROF_NTYPES; t++)
		if (!strcmp(f[1], types[t]))
			break;
	if (nf < 2 || t == SP_PROF_NTYPES)
		die(b, "sample without a known type");
	s = b->cur = calloc(1, sizeof(*s));
	if (!s)
		die(b, "out of memory");
	s->type = t;
	for (int i = 2; i < nf; i++) {
		char *v = strchr(f[i], '=');

		if (!v)
			die(b, "'%s' is not key=value", f[i]);
		*v++ = '\0';
		if (!strcmp(f[i], "pid"))
			s->pid = num(b, v);
		else if (!strcmp(f[i], "tid"))
			s->tid = num(b, v);
		else if (!strcmp(f[i], "cpu"))
			s->cpu = num(b, v);
		else if (!strcmp(f[i], "time"))
			s->time_boot_ns = num(b, v);
		else if (!strcmp(f[i], "start"))
			s->pstart_boot_ns = num(b, v);
		else if (!strcmp(f[i], "addr"))
			s->addr = num(b, v);
		else if (!strcmp(f[i], "value"))
			s->value = num(b, v);
		else if (!strcmp(f[i], "comm"))
			set_comm(b, s->comm, v);
		else if (!strcmp(f[i], "pcomm"))
			set_comm(b, s->pcomm, v);
		else if (!strcmp(f[i], "flags") && !strcmp(v, "kthread"))
			s->flags |= SP_SAMPLE_KERNEL_THREAD;
		else if (strcmp(f[i], "count")) /* the event weight: not the resolver's */
			die(b, "unknown sample key '%s'", f[i]);
	}
}

/* "u FILE+0xOFF": the PC at that file offset, through the sample's vma of FILE or its map. */
static uint64_t user_pc(const struct bench *b, char *spec)
{
	const struct sp_vmas *v = &b->cur->vmas;
	char *plus = strrchr(spec, '+');
	const struct rec_map *rm;
	const struct sp_vma *m;
	uint64_t off;

	if (!plus)
		return num(b, spec);
	*plus = '\0';
	off = num(b, plus + 1);
	rm = find_map(b, b->cur->pid, spec);
	m = &rm->vma;
	for (uint32_t i = 0; i < v->n; i++)
		if (v->vma[i].start == rm->vma.start)
			m = &v->vma[i];
	if (off < m->offset || off - m->offset >= m->end - m->start)
		die(b, "offset 0x%llx is outside the mapping of %s", (unsigned long long)off, spec);
	return m->start + off - m->offset;
}

static void in_sample_line(struct bench *b, char **f, int nf)
{
	struct sp_sample *s = b->cur;

	if (!s)
		die(b, "'%s' before the first sample", f[0]);
	if (!strcmp(f[0], "span")) {
		s->ctx_len = 0; /* span links are not the resolver's */
	} else if (nf != 2) {
		die(b, "'%s' takes one argument", f[0]);
	} else if (!strcmp(f[0], "exe")) {
		file_id(b, f[1], &s->vmas.exe);
	} else if (!strcmp(f[0], "vma")) {
		if (s->vmas.n == SP_MAX_VMAS)
			die(b, "more than %d vma lines", SP_MAX_VMAS);
		s->vmas.vma[s->vmas.n++] = find_map(b, s->pid, f[1])->vma;
	} else if (!strcmp(f[0], "k")) {
		if (s->kstack_len == SP_MAX_KSTACK)
			die(b, "more than %d kernel PCs", SP_MAX_KSTACK);
		s->kstack[s->kstack_len++] = num(b, f[1]);
	} else if (!strcmp(f[0], "u")) {
		if (s->ustack_len == SP_MAX_USTACK)
			die(b, "more than %d user PCs", SP_MAX_USTACK);
		s->ustack[s->ustack_len++] = user_pc(b, f[1]);
	} else {
		die(b, "unknown line '%s'", f[0]);
	}
}

static void directive(struct bench *b, char **f, int nf)
{
	if (!strcmp(f[0], "sample")) {
		sample_line(b, f, nf);
	} else if (!strcmp(f[0], "exec") && nf == 3) {
		struct sp_exec_path e = {0};

		flush_sample(b);
		e.pid = num(b, f[1]);
		file_id(b, f[2], &e.file);
		snprintf(e.path, sizeof(e.path), "/proc/self/cwd/%s", f[2]);
		snprintf(e.name, sizeof(e.name), "%s", f[2]);
		if (proctab__exec_path(b->procs, &e) < 0)
			die(b, "proctab__exec_path(%s) failed", e.path);
	} else if (!strcmp(f[0], "open") && nf == 2) {
		char path[PATH_MAX];

		flush_sample(b);
		snprintf(path, sizeof(path), "/proc/self/cwd/%s", f[1]);
		if (!symcache__open(b->syms, path, path))
			die(b, "symcache__open(%s): %s", path, strerror(errno));
	} else if (!strcmp(f[0], "map") && nf == 6) {
		struct rec_map *m;

		flush_sample(b);
		if (b->nmaps == MAX_MAPS)
			die(b, "more than %d map lines", MAX_MAPS);
		m = &b->maps[b->nmaps++];
		memset(m, 0, sizeof(*m));
		m->pid = num(b, f[1]);
		snprintf(m->file, sizeof(m->file), "%s", f[2]);
		file_id(b, f[2], &m->vma.file);
		m->vma.start = num(b, f[3]);
		m->vma.end = num(b, f[4]);
		m->vma.offset = num(b, f[5]);
	} else if (!strcmp(f[0], "ksyms") && nf == 2) {
		b->ksyms = ksyms__load(f[1]);
		b->procs = b->ksyms ? proctab__new(b->syms) : NULL;
		b->resolve = b->procs ? resolve__new(b->procs, b->syms, b->ksyms) : NULL;
		if (!b->resolve)
			die(b, "ksyms %s: %s", f[1], strerror(errno));
	} else if (!strcmp(f[0], "boot_to_unix_ns") || !strcmp(f[0], "interval_start_unix_ns") ||
		   !strcmp(f[0], "duration_ns") || !strcmp(f[0], "frequency_hz")) {
		/* the profile's meta: not the resolver's */
	} else {
		in_sample_line(b, f, nf);
	}
}

/* Reads recording.txt of the current directory, resolving each sample once. */
static void read_recording(struct bench *b)
{
	char buf[1024], *f[32];
	FILE *in;

	b->path = "recording.txt";
	in = fopen(b->path, "r");
	if (!in)
		die(b, "%s", strerror(errno));
	while (fgets(buf, sizeof(buf), in)) {
		char *hash = strchr(buf, '#'), *save = NULL, *tok;
		int nf = 0;

		b->line++;
		if (hash)
			*hash = '\0';
		for (tok = strtok_r(buf, " \t\n", &save); tok && nf < 32;
		     tok = strtok_r(NULL, " \t\n", &save))
			f[nf++] = tok;
		if (!nf)
			continue;
		if (!b->resolve && strcmp(f[0], "ksyms"))
			die(b, "the first directive is ksyms");
		directive(b, f, nf);
	}
	fclose(in);
	flush_sample(b);
	if (!b->nsamples)
		die(b, "no sample");
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * The fastest of @batches batches of @rounds rounds of every sample, in thread CPU ns per
 * sample; @fresh: the profile reset before each round.
 */
static double measure(struct bench *b, unsigned rounds, unsigned batches, int fresh)
{
	double best = 0;

	for (unsigned k = 0; k < batches; k++) {
		uint64_t t0 = cpu_ns(), t;
		double per;

		for (unsigned i = 0; i < rounds; i++) {
			if (fresh) {
				profile__reset(b->profile);
				resolve__profile_reset(b->resolve);
			}
			b->locations = 0;
			for (unsigned j = 0; j < b->nsamples; j++)
				b->locations +=
				    resolve__sample(b->resolve, b->profile, b->samples[j], b->locs);
		}
		t = cpu_ns() - t0;
		per = (double)t / ((double)rounds * b->nsamples);
		if (!k || per < best)
			best = per;
	}
	return best;
}

static void usage(void)
{
	fprintf(stderr, "usage: resolve_time [--dir DIR] [--rounds R] [--batches B]\n"
			"  DIR: the replay fixtures (test/record/fixtures/replay)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = "test/record/fixtures/replay";
	unsigned rounds = 5000, batches = 5;
	struct bench b = {0};
	double warm, fresh;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(a, "--dir"))
			dir = v;
		else if (!strcmp(a, "--rounds"))
			rounds = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--batches"))
			batches = strtoul(v, NULL, 0);
		else
			usage();
		i++;
	}
	if (!rounds || !batches)
		usage();
	/* The fixture files are opened as /proc/self/cwd/FILE, as the replay test opens them. */
	if (chdir(dir)) {
		fprintf(stderr, "resolve_time: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	b.syms = symcache__new(NULL);
	b.profile = profile__new();
	b.locs = calloc(RESOLVE_MAX_LOCATIONS, sizeof(*b.locs));
	if (!b.syms || !b.profile || !b.locs) {
		fprintf(stderr, "resolve_time: out of memory\n");
		return 1;
	}
	read_recording(&b);
	warm = measure(&b, rounds, batches, 0);
	fresh = measure(&b, rounds, batches, 1);
	printf("resolve_time warm_ns=%.1f fresh_ns=%.1f samples=%u rounds=%u batches=%u "
	       "locations=%llu\n",
	       warm, fresh, b.nsamples, rounds, batches, (unsigned long long)b.locations);
	for (unsigned i = 0; i < b.nsamples; i++)
		free(b.samples[i]);
	free(b.locs);
	resolve__free(b.resolve);
	proctab__free(b.procs);
	profile__free(b.profile);
	ksyms__free(b.ksyms);
	symcache__free(b.syms);
	return 0;
}
