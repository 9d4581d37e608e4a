// SPDX-License-Identifier: Apache-2.0
/*
 * The golden replay test (issue 13): a recorded sample stream is replayed through the agent's
 * sample path (the one exporter/record/callbacks.c record__on_sample() runs: proctab kernel and
 * user locations -> profile__intern_stack -> profile__add_sample/add_event) and every writer
 * (pprof, folded, flame graph per profile type, the OTLP ExportProfilesServiceRequest encoder);
 * each output must equal, byte for byte, its golden file in test/record/fixtures/replay/golden/,
 * made by the code before the exporter/ move. A refactoring that changes any output fails here.
 *
 * Input (test/record/fixtures/replay/, format in recording.txt's header): recording.txt, the
 * kallsyms file it names, and the ELF files its user PCs are in (built from replay.c by `make
 * replay-fixtures`, checked in). User PCs are named through the file identities the samples carry
 * (struct sp_vmas, proctab__exec_path() + proctab__mapping()): the recorded PIDs are above
 * PID_MAX_LIMIT, so nothing is read from /proc. The identities (device, inode, size, mtime) are
 * taken with stat() at replay, so any checkout will do; the files are opened as /proc/self/cwd/FILE
 * (the test runs in the fixture directory) so that the paths in the outputs do not depend on where
 * the checkout is.
 *
 * What is compared: the folded and SVG files as written; pprof uncompressed (gzip headers are
 * not stable); each OTLP request with its Profile.profile_id zeroed (random by design), after
 * checking that unpacking and re-packing it gives its bytes back. On a mismatch the actual
 * outputs are kept in a temporary directory, and the test prints `diff -u` of the text files
 * or the differing strings of the binary ones.
 *
 * SPANPROF_UPDATE_GOLDEN=1 build/test/test_replay rewrites the golden files from the current
 * code instead (then review `git diff test/record/fixtures/replay/golden`).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "output/flamegraph.h"
#include "output/folded.h"
#include "otlp/otlp_encode.h"
#include "output/pprof.h"
#include "process/proctab.h"
#include "record/ingest.h"
#include "resolve/resolve.h"
#include "profile/profile.h"
#include "sampler.h"
#include "spans/spanlinks.h"
#include "symbols/symbolize.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "pprof/profile.pb-c.h"

#ifndef REPLAY_DIR
#error                                                                                             \
    "REPLAY_DIR: the absolute path of test/record/fixtures/replay (test/record/replay.mk sets it)"
#endif

#define MAX_OTLP_REQUESTS 16

/*
 * What the agent's sample path is made of, set up as exporter/record/record.c does: one symbol
 * cache, the kernel symbols, the process table, the resolve step, and the ingest state (the
 * profile of the export interval, the span links without BPF: no descriptors, so links and no
 * attributes).
 */
struct replay {
	struct symcache *syms;
	struct ksyms *ksyms;
	struct proctab *procs;
	struct ingest in;
	uint64_t samples, user_drops;
};

/*
 * One sample through the agent's sample path, ingest__sample() as record__on_sample()
 * (record/callbacks.c) calls it, with the event values from the recording (@count, @value: what
 * sampler__event_values() gave; ALLOC's are randomly rounded there).
 */
static void replay_sample(struct replay *r, const struct sp_sample *s, uint64_t count,
			  uint64_t value)
{
	if (ingest__sample(&r->in, s, count, value) < 0)
		r->user_drops++;
	else
		r->samples++;
}

/* record/export.c process_meta(): the process table's facts, the process context's on top. */
static int process_meta(void *ctx, uint32_t pid, const struct procmeta **out)
{
	struct replay *r = ctx;
	int err = proctab__meta(r->procs, pid, out);

	if (!err && r->in.links)
		*out = spanlinks__meta(r->in.links, pid, *out);
	return err;
}

/* --- the recording (format: recording.txt's header) ------------------------------------- */

#define MAX_MAPS 32
#define NAME_LEN 64

/* A "map" line: where a process maps a file. */
struct rec_map {
	uint32_t pid;
	char file[NAME_LEN];
	struct sp_vma vma;
};

struct reader {
	struct replay *r;
	const char *path;
	unsigned line;
	struct rec_map maps[MAX_MAPS];
	unsigned nmaps;
	struct sp_sample *cur; /* the sample being read, replayed at the next sample or the end */
	uint64_t count, value;
	struct profile_meta meta;
	unsigned nsamples;
};

static void bad(const struct reader *rd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fail_msg("%s:%u: %s", rd->path, rd->line, msg);
}

static uint64_t num(const struct reader *rd, const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		bad(rd, "'%s' is not a number", s);
	return v;
}

/*
 * The identity of a fixture file, as BPF reads it from the inode (struct sp_file_id; device in
 * the kernel's encoding, major << 20 | minor). "!NAME": a file no process showed the agent.
 */
static void file_id(const struct reader *rd, const char *file, struct sp_file_id *id)
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
		bad(rd, "%s/%s: %s", REPLAY_DIR, file, strerror(errno));
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime_sec = st.st_mtim.tv_sec;
	id->mtime_nsec = st.st_mtim.tv_nsec;
	id->dev = major(st.st_dev) << 20 | minor(st.st_dev);
}

static const struct rec_map *find_map(const struct reader *rd, uint32_t pid, const char *file)
{
	for (unsigned i = 0; i < rd->nmaps; i++)
		if (rd->maps[i].pid == pid && !strcmp(rd->maps[i].file, file))
			return &rd->maps[i];
	bad(rd, "no map line of PID %u for %s", pid, file);
	return NULL;
}

static void flush_sample(struct reader *rd)
{
	if (!rd->cur)
		return;
	replay_sample(rd->r, rd->cur, rd->count, rd->value);
	rd->nsamples++;
	free(rd->cur);
	rd->cur = NULL;
}

static uint8_t hexval(const struct reader *rd, char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	bad(rd, "'%c' is not a lower-case hex digit", c);
	return 0;
}

static void hex_bytes(const struct reader *rd, const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		bad(rd, "'%s': %zu hex digits wanted", s, 2 * n);
	for (size_t i = 0; i < n; i++)
		out[i] = hexval(rd, s[2 * i]) << 4 | hexval(rd, s[2 * i + 1]);
}

/* A task name as bpf_get_current_comm() gives it: at most 15 bytes and a NUL. */
static void set_comm(const struct reader *rd, char *dst, const char *v)
{
	size_t n = strlen(v);

	if (n >= SP_COMM_LEN)
		bad(rd, "'%s': task names have at most %d bytes", v, SP_COMM_LEN - 1);
	memcpy(dst, v, n + 1);
}

static void sample_line(struct reader *rd, char **f, int nf)
{
	static const char *const types[] = {"cpu", "alloc", "lock", "offcpu"};
	struct sp_sample *s;
	int t;

	flush_sample(rd);
	if (nf < 2)
		bad(rd, "sample without a type");
	for (t = 0; t < SP_PROF_NTYPES; t++)
		if (!strcmp(f[1], types[t]))
			break;
	if (t == SP_PROF_NTYPES)
		bad(rd, "unknown sample type '%s'", f[1]);
	s = rd->cur = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->type = t;
	rd->count = 1;
	rd->value = 0;
	for (int i = 2; i < nf; i++) {
		char *v = strchr(f[i], '=');

		if (!v)
			bad(rd, "'%s' is not key=value", f[i]);
		*v++ = '\0';
		if (!strcmp(f[i], "pid"))
			s->pid = num(rd, v);
		else if (!strcmp(f[i], "tid"))
			s->tid = num(rd, v);
		else if (!strcmp(f[i], "cpu"))
			s->cpu = num(rd, v);
		else if (!strcmp(f[i], "time"))
			s->time_boot_ns = num(rd, v);
		else if (!strcmp(f[i], "start"))
			s->pstart_boot_ns = num(rd, v);
		else if (!strcmp(f[i], "addr"))
			s->addr = num(rd, v);
		else if (!strcmp(f[i], "count"))
			rd->count = num(rd, v);
		else if (!strcmp(f[i], "value"))
			rd->value = s->value = num(rd, v);
		else if (!strcmp(f[i], "comm"))
			set_comm(rd, s->comm, v);
		else if (!strcmp(f[i], "pcomm"))
			set_comm(rd, s->pcomm, v);
		else if (!strcmp(f[i], "flags") && !strcmp(v, "kthread"))
			s->flags |= SP_SAMPLE_KERNEL_THREAD;
		else
			bad(rd, "unknown sample key '%s'", f[i]);
	}
}

/* "u FILE+0xOFF": the PC at that file offset, through the sample's vma of FILE or its map. */
static uint64_t user_pc(const struct reader *rd, char *spec)
{
	const struct sp_vmas *v = &rd->cur->vmas;
	char *plus = strrchr(spec, '+');
	const struct rec_map *rm;
	const struct sp_vma *m;
	uint64_t off;

	if (!plus)
		return num(rd, spec);
	*plus = '\0';
	off = num(rd, plus + 1);
	rm = find_map(rd, rd->cur->pid, spec);
	m = &rm->vma;
	for (uint32_t i = 0; i < v->n; i++)
		if (v->vma[i].start == rm->vma.start)
			m = &v->vma[i];
	if (off < m->offset || off - m->offset >= m->end - m->start)
		bad(rd, "offset 0x%llx is outside the mapping of %s", (unsigned long long)off,
		    spec);
	return m->start + off - m->offset;
}

static void in_sample_line(struct reader *rd, char **f, int nf)
{
	struct sp_sample *s = rd->cur;

	if (!s)
		bad(rd, "'%s' before the first sample", f[0]);
	if (nf != 2 && strcmp(f[0], "span"))
		bad(rd, "'%s' takes one argument", f[0]);
	if (!strcmp(f[0], "exe")) {
		file_id(rd, f[1], &s->vmas.exe);
	} else if (!strcmp(f[0], "vma")) {
		const struct rec_map *m = find_map(rd, s->pid, f[1]);

		if (s->vmas.n == SP_MAX_VMAS)
			bad(rd, "more than %d vma lines", SP_MAX_VMAS);
		s->vmas.vma[s->vmas.n++] = m->vma;
	} else if (!strcmp(f[0], "k")) {
		if (s->kstack_len == SP_MAX_KSTACK)
			bad(rd, "more than %d kernel PCs", SP_MAX_KSTACK);
		s->kstack[s->kstack_len++] = num(rd, f[1]);
	} else if (!strcmp(f[0], "u")) {
		if (s->ustack_len == SP_MAX_USTACK)
			bad(rd, "more than %d user PCs", SP_MAX_USTACK);
		s->ustack[s->ustack_len++] = user_pc(rd, f[1]);
	} else if (!strcmp(f[0], "span")) {
		/* OTEP 4947 record: trace_id[16] span_id[8] valid trace_flags attrs_data_size. */
		if (nf != 3)
			bad(rd, "span TRACE_ID SPAN_ID");
		hex_bytes(rd, f[1], s->ctx, 16);
		hex_bytes(rd, f[2], s->ctx + 16, 8);
		s->ctx[24] = 1; /* valid */
		s->ctx[25] = 1; /* sampled */
		s->ctx_len = SP_CTX_HEADER;
	} else {
		bad(rd, "unknown line '%s'", f[0]);
	}
}

static void directive(struct reader *rd, char **f, int nf)
{
	if (!strcmp(f[0], "sample")) {
		sample_line(rd, f, nf);
		return;
	}
	if (!strcmp(f[0], "exec")) {
		struct sp_exec_path e = {0};

		flush_sample(rd);
		if (nf != 3)
			bad(rd, "exec PID FILE");
		e.pid = num(rd, f[1]);
		file_id(rd, f[2], &e.file);
		snprintf(e.path, sizeof(e.path), "/proc/self/cwd/%s", f[2]);
		snprintf(e.name, sizeof(e.name), "%s", f[2]);
		if (proctab__exec_path(rd->r->procs, &e) < 0)
			bad(rd, "proctab__exec_path(%s) failed", e.path);
		return;
	}
	if (!strcmp(f[0], "open")) {
		/* What a live process's maps read does for each of its files (proctab.c). */
		char path[PATH_MAX];

		flush_sample(rd);
		if (nf != 2)
			bad(rd, "open FILE");
		snprintf(path, sizeof(path), "/proc/self/cwd/%s", f[1]);
		if (!symcache__open(rd->r->syms, path, path))
			bad(rd, "symcache__open(%s): %s", path, strerror(errno));
		return;
	}
	if (!strcmp(f[0], "map")) {
		struct rec_map *m;

		flush_sample(rd);
		if (nf != 6)
			bad(rd, "map PID FILE START END OFFSET");
		if (rd->nmaps == MAX_MAPS)
			bad(rd, "more than %d map lines", MAX_MAPS);
		m = &rd->maps[rd->nmaps++];
		memset(m, 0, sizeof(*m));
		m->pid = num(rd, f[1]);
		snprintf(m->file, sizeof(m->file), "%s", f[2]);
		file_id(rd, f[2], &m->vma.file);
		m->vma.start = num(rd, f[3]);
		m->vma.end = num(rd, f[4]);
		m->vma.offset = num(rd, f[5]);
		if (m->vma.end <= m->vma.start)
			bad(rd, "empty mapping");
		return;
	}
	if (nf == 2 && !strcmp(f[0], "ksyms")) {
		rd->r->ksyms = ksyms__load(f[1]);
		if (!rd->r->ksyms)
			bad(rd, "ksyms__load(%s): %s", f[1], strerror(errno));
		rd->r->procs = proctab__new(rd->r->syms);
		assert_non_null(rd->r->procs);
		rd->r->in.resolve = resolve__new(rd->r->procs, rd->r->syms, rd->r->ksyms);
		assert_non_null(rd->r->in.resolve);
		return;
	}
	if (nf == 2 && !strcmp(f[0], "boot_to_unix_ns")) {
		rd->r->in.boot_to_unix_ns = num(rd, f[1]);
		return;
	}
	if (nf == 2 && !strcmp(f[0], "interval_start_unix_ns")) {
		rd->r->in.interval_start_unix = rd->meta.start_unix_nano = num(rd, f[1]);
		return;
	}
	if (nf == 2 && !strcmp(f[0], "duration_ns")) {
		rd->meta.duration_nano = num(rd, f[1]);
		return;
	}
	if (nf == 2 && !strcmp(f[0], "frequency_hz")) {
		rd->meta.frequency_hz = num(rd, f[1]);
		if (!rd->meta.frequency_hz)
			bad(rd, "frequency 0");
		rd->meta.period_nano = 1000000000ull / rd->meta.frequency_hz;
		return;
	}
	in_sample_line(rd, f, nf);
}

/* Replays recording.txt (the current directory is REPLAY_DIR) into @r. */
static void replay_recording(struct replay *r, struct reader *rd)
{
	char buf[1024], *f[32];
	FILE *in;

	memset(rd, 0, sizeof(*rd));
	rd->r = r;
	rd->path = REPLAY_DIR "/recording.txt";
	in = fopen("recording.txt", "r");
	if (!in)
		fail_msg("%s: %s", rd->path, strerror(errno));
	while (fgets(buf, sizeof(buf), in)) {
		char *hash = strchr(buf, '#'), *save = NULL, *tok;
		int nf = 0;

		rd->line++;
		if (hash)
			*hash = '\0';
		for (tok = strtok_r(buf, " \t\n", &save); tok && nf < 32;
		     tok = strtok_r(NULL, " \t\n", &save))
			f[nf++] = tok;
		if (!nf)
			continue;
		if (!r->procs && strcmp(f[0], "ksyms"))
			bad(rd, "the first directive is ksyms");
		directive(rd, f, nf);
	}
	fclose(in);
	flush_sample(rd);
	profile__set_meta(r->in.profile, &rd->meta);
}

/* --- outputs and goldens ----------------------------------------------------------------- */

struct blob {
	uint8_t *data;
	size_t len;
};

static int read_file(const char *path, struct blob *b)
{
	FILE *f = fopen(path, "rb");
	uint8_t buf[65536];
	size_t n;

	b->data = NULL;
	b->len = 0;
	if (!f)
		return -errno;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		b->data = realloc(b->data, b->len + n);
		assert_non_null(b->data);
		memcpy(b->data + b->len, buf, n);
		b->len += n;
	}
	fclose(f);
	return 0;
}

static void write_file(const char *path, const struct blob *b)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f))
		fail_msg("cannot write %s: %s", path, strerror(errno));
}

/* The uncompressed bytes of the gzip file @path. */
static void read_gunzip(const char *path, struct blob *b)
{
	gzFile g = gzopen(path, "rb");
	uint8_t buf[65536];
	int n;

	b->data = NULL;
	b->len = 0;
	if (!g)
		fail_msg("cannot open %s", path);
	while ((n = gzread(g, buf, sizeof(buf))) > 0) {
		b->data = realloc(b->data, b->len + n);
		assert_non_null(b->data);
		memcpy(b->data + b->len, buf, n);
		b->len += n;
	}
	if (n < 0)
		fail_msg("%s: not gzip data", path);
	gzclose(g);
}

static int has_string(char **t, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i], s))
			return 1;
	return 0;
}

/* The strings only one of two string tables holds, for the binary formats' hint. */
static void diff_strings(char **a, size_t na, char **b, size_t nb)
{
	size_t shown = 0;

	fprintf(stderr, "  string tables: golden %zu strings, actual %zu\n", na, nb);
	for (size_t i = 0; i < na && shown < 20; i++)
		if (!has_string(b, nb, a[i]) && ++shown)
			fprintf(stderr, "  -%s\n", a[i]);
	for (size_t i = 0; i < nb && shown < 40; i++)
		if (!has_string(a, na, b[i]) && ++shown)
			fprintf(stderr, "  +%s\n", b[i]);
}

static void hint_pprof(const struct blob *g, const struct blob *a)
{
	Perftools__Profiles__Profile *pg =
	    perftools__profiles__profile__unpack(NULL, g->len, g->data);
	Perftools__Profiles__Profile *pa =
	    perftools__profiles__profile__unpack(NULL, a->len, a->data);

	if (pg && pa) {
		fprintf(
		    stderr,
		    "  golden: %zu samples %zu locations %zu functions %zu mappings; actual: %zu "
		    "%zu %zu %zu\n",
		    pg->n_sample, pg->n_location, pg->n_function, pg->n_mapping, pa->n_sample,
		    pa->n_location, pa->n_function, pa->n_mapping);
		diff_strings(pg->string_table, pg->n_string_table, pa->string_table,
			     pa->n_string_table);
	}
	fprintf(stderr, "  decode: protoc --decode=perftools.profiles.Profile -I otlp-proto "
			"otlp-proto/pprof/profile.proto < FILE\n");
	if (pg)
		perftools__profiles__profile__free_unpacked(pg, NULL);
	if (pa)
		perftools__profiles__profile__free_unpacked(pa, NULL);
}

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    otlp_req;
#define REQ(verb)                                                                                  \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__##verb

static void hint_otlp(const struct blob *g, const struct blob *a)
{
	otlp_req *rg = REQ(unpack)(NULL, g->len, g->data);
	otlp_req *ra = REQ(unpack)(NULL, a->len, a->data);

	if (rg && ra && rg->dictionary && ra->dictionary) {
		fprintf(stderr, "  golden: %zu resources, actual %zu\n", rg->n_resource_profiles,
			ra->n_resource_profiles);
		diff_strings(rg->dictionary->string_table, rg->dictionary->n_string_table,
			     ra->dictionary->string_table, ra->dictionary->n_string_table);
	}
	fprintf(stderr, "  decode: protoc --decode=opentelemetry.proto.collector.profiles."
			"v1development.ExportProfilesServiceRequest -I otlp-proto "
			"otlp-proto/opentelemetry/proto/collector/profiles/v1development/"
			"profiles_service.proto < FILE\n");
	if (rg)
		REQ(free_unpacked)(rg, NULL);
	if (ra)
		REQ(free_unpacked)(ra, NULL);
}

enum kind { TEXT, PPROF, OTLP };

struct check {
	const char *outdir;
	int update;
	int mismatches;
	int compared;
};

/*
 * Compares output @name (bytes @a; also written to outdir/name) with golden/@name, or with
 * SPANPROF_UPDATE_GOLDEN rewrites the golden file.
 */
static void compare(struct check *c, const char *name, const struct blob *a, enum kind kind)
{
	char gpath[PATH_MAX], apath[PATH_MAX], cmd[3 * PATH_MAX];
	struct blob g;

	snprintf(gpath, sizeof(gpath), "%s/golden/%s", REPLAY_DIR, name);
	snprintf(apath, sizeof(apath), "%s/%s.actual", c->outdir, name);
	write_file(apath, a);
	c->compared++;
	if (c->update) {
		write_file(gpath, a);
		fprintf(stderr, "test_replay: rewrote %s (%zu bytes)\n", gpath, a->len);
		return;
	}
	if (read_file(gpath, &g)) {
		fprintf(stderr, "test_replay: %s: %s (SPANPROF_UPDATE_GOLDEN=1 writes it)\n", gpath,
			strerror(errno));
		c->mismatches++;
		return;
	}
	if (g.len == a->len && !memcmp(g.data, a->data, a->len)) {
		free(g.data);
		return;
	}
	c->mismatches++;
	fprintf(stderr, "test_replay: %s differs from its golden file (%zu bytes, actual %zu)\n",
		name, g.len, a->len);
	if (kind == TEXT) {
		snprintf(cmd, sizeof(cmd), "diff -u '%s' '%s' | head -n 60 >&2", gpath, apath);
		if (system(cmd) == -1)
			fprintf(stderr, "  diff -u %s %s\n", gpath, apath);
	} else if (kind == PPROF) {
		hint_pprof(&g, a);
	} else {
		hint_otlp(&g, a);
	}
	free(g.data);
}

static void compare_file(struct check *c, const char *name, enum kind kind)
{
	char path[PATH_MAX];
	struct blob a;

	snprintf(path, sizeof(path), "%s/%s", c->outdir, name);
	if (kind == PPROF) {
		read_gunzip(path, &a);
		/* The golden holds the protobuf: name.pb.gz -> name.pb */
		snprintf(path, sizeof(path), "%.*s", (int)(strlen(name) - 3), name);
		compare(c, path, &a, kind);
	} else {
		if (read_file(path, &a))
			fail_msg("%s was not written: %s", path, strerror(errno));
		compare(c, name, &a, kind);
	}
	free(a.data);
}

struct otlp_out {
	struct blob req[MAX_OTLP_REQUESTS];
	size_t n;
};

/* An emitted request with its random profile ids zeroed: the stable bytes. */
static int collect_request(void *ctx, const uint8_t *buf, size_t len, uint64_t samples,
			   uint32_t type)
{
	struct otlp_out *o = ctx;
	otlp_req *req;
	struct blob *b;
	size_t ids = 0;

	assert_true(o->n < MAX_OTLP_REQUESTS);
	req = REQ(unpack)(NULL, len, buf);
	assert_non_null(req);
	b = &o->req[o->n++];
	b->len = REQ(get_packed_size)(req);
	b->data = malloc(b->len);
	assert_non_null(b->data);
	/* Re-packing what was unpacked gives the same bytes: zeroing the ids below hides nothing.
	 */
	REQ(pack)(req, b->data);
	assert_int_equal(b->len, len);
	assert_memory_equal(b->data, buf, len);
	for (size_t i = 0; i < req->n_resource_profiles; i++)
		for (size_t j = 0; j < req->resource_profiles[i]->n_scope_profiles; j++) {
			const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
			    req->resource_profiles[i]->scope_profiles[j];

			for (size_t k = 0; k < sp->n_profiles; k++) {
				assert_int_equal(sp->profiles[k]->profile_id.len, 16);
				memset(sp->profiles[k]->profile_id.data, 0, 16);
				ids++;
			}
		}
	assert_true(ids > 0);
	REQ(pack)(req, b->data);
	REQ(free_unpacked)(req, NULL);
	return 0;
}

/* --- the test ---------------------------------------------------------------------------- */

static void test_replay_golden(void **unused)
{
	const char *upd = getenv("SPANPROF_UPDATE_GOLDEN");
	struct spanlinks_opts lo = {.procs_fd = -1};
	struct otlp_encode_opts eo = {
	    .host_name = "replay-host",
	    .scope_name = "spanprof",
	    .scope_version = "replay",
	    .process_meta = process_meta,
	};
	char outdir[] = "/tmp/spanprof-replay.XXXXXX", path[PATH_MAX], name[64];
	struct check c = {.outdir = outdir, .update = upd && !strcmp(upd, "1")};
	struct otlp_out otlp = {0};
	struct replay r = {0};
	struct reader rd;
	char cwd[PATH_MAX];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_non_null(mkdtemp(outdir));
	if (chdir(REPLAY_DIR))
		fail_msg("%s: %s", REPLAY_DIR, strerror(errno));
	r.syms = symcache__new(NULL);
	r.in.profile = profile__new();
	r.in.links = spanlinks__new(&lo);
	assert_non_null(r.syms);
	assert_non_null(r.in.profile);
	assert_non_null(r.in.links);

	replay_recording(&r, &rd);
	assert_int_equal(r.samples, rd.nsamples);
	assert_int_equal(r.user_drops + r.in.link_drops, 0);
	/* The recording exercises what it means to: names through identities, unknown files. */
	assert_true(resolve__stats(r.in.resolve)->frames_fileid > 0);
	assert_true(resolve__stats(r.in.resolve)->frames_fileid_unknown > 0);
	assert_true(resolve__stats(r.in.resolve)->frames_unsymbolized > 0);
	assert_true(resolve__stats(r.in.resolve)->kernel_unsymbolized > 0);

	/* What output/outputs.c outputs__write_dir() writes, every profile type. */
	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const struct profile_type_info *ti = profile__type_info(t);

		snprintf(name, sizeof(name), "%s.pb.gz", ti->file_stem);
		snprintf(path, sizeof(path), "%s/%s", outdir, name);
		assert_int_equal(pprof__write_type(r.in.profile, path, t), 0);
		compare_file(&c, name, PPROF);
		snprintf(name, sizeof(name), "%s.folded", ti->file_stem);
		snprintf(path, sizeof(path), "%s/%s", outdir, name);
		assert_int_equal(folded__write_type(r.in.profile, path, t), 0);
		compare_file(&c, name, TEXT);
		if (t == PROFILE_CPU)
			snprintf(name, sizeof(name), "flamegraph.svg");
		else
			snprintf(name, sizeof(name), "flamegraph-%s.svg", ti->name);
		snprintf(path, sizeof(path), "%s/%s", outdir, name);
		assert_int_equal(flamegraph__write_svg_type(r.in.profile, path, ti->title, t), 0);
		compare_file(&c, name, TEXT);
	}

	/*
	 * record__export_interval() (record/export.c): the OTLP requests, machine-dependent inputs
	 * fixed.
	 */
	eo.ctx = &r;
	assert_int_equal(otlp__encode(r.in.profile, &eo, collect_request, &otlp), 0);
	assert_true(otlp.n > 0);
	for (size_t i = 0; i < otlp.n; i++) {
		snprintf(name, sizeof(name), "otlp-request-%zu.binpb", i + 1);
		compare(&c, name, &otlp.req[i], OTLP);
		free(otlp.req[i].data);
	}
	/* No golden request beyond those emitted. */
	snprintf(path, sizeof(path), "%s/golden/otlp-request-%zu.binpb", REPLAY_DIR, otlp.n + 1);
	if (!c.update && !access(path, F_OK)) {
		fprintf(stderr, "test_replay: %s exists, but only %zu requests were emitted\n",
			path, otlp.n);
		c.mismatches++;
	}

	spanlinks__free(r.in.links);
	resolve__free(r.in.resolve);
	proctab__free(r.procs);
	profile__free(r.in.profile);
	ksyms__free(r.ksyms);
	symcache__free(r.syms);
	assert_int_equal(chdir(cwd), 0);
	if (c.mismatches) {
		fail_msg("%d of %d outputs differ from test/record/fixtures/replay/golden (actual "
			 "outputs "
			 "kept in %s)",
			 c.mismatches, c.compared, outdir);
	}
	snprintf(path, sizeof(path), "rm -rf '%s'", outdir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
