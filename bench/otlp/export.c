// SPDX-License-Identifier: Apache-2.0
/*
 * bench/export: what one export interval costs on the wire and in CPU.
 *
 * For a few synthetic steady-state profiles of one 5 s export interval (fixed seed, so every
 * run encodes the same samples), measures
 *   - OTLP: bytes of the ExportProfilesServiceRequest messages otlp__encode() emits, raw and
 *     gzipped as gRPC does it (each message on its own, zlib default level, gzip wrapper),
 *     and the encode time per interval (median of repeated runs, CLOCK_MONOTONIC);
 *   - pprof: the same profile through pprof__write() (which gzips), its file size and its
 *     raw size (the file gunzipped), and the time of the whole write;
 * and prints OTLP / pprof ratios. Nothing passes or fails on the figures.
 *
 * --real also runs the agent (root, BPF) against integration/testcollector with
 * --compression gzip and none, and reports the agent's summary line and the bytes the
 * receiver read from its socket (/proc/PID/io rchar: HTTP/2 framing included).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "otlp/otlp_encode.h"
#include "output/pprof.h"
#include "profile/profile.h"

extern char **environ;

#define INTERVAL_S 5
#define MAX_DEPTH 40

/* --- deterministic randomness ------------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t hash2(uint64_t a, uint64_t b)
{
	uint64_t s = a * 0x100000001b3ull ^ b;

	return splitmix(&s);
}

static double unit(uint64_t *s)
{
	return (splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Zipf(s) over n ranks: a cumulative table, sampled by binary search. */
struct zipf {
	double *cdf;
	uint32_t n;
};

static int zipf__init(struct zipf *z, uint32_t n, double s)
{
	double sum = 0;

	z->cdf = malloc(n * sizeof(*z->cdf));
	if (!z->cdf)
		return -ENOMEM;
	z->n = n;
	for (uint32_t i = 0; i < n; i++) {
		sum += 1.0 / pow(i + 1, s);
		z->cdf[i] = sum;
	}
	for (uint32_t i = 0; i < n; i++)
		z->cdf[i] /= sum;
	return 0;
}

static uint32_t zipf__draw(const struct zipf *z, uint64_t *rng)
{
	double u = unit(rng);
	uint32_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* --- the synthetic machine ----------------------------------------------------------------- */

/*
 * Objects a frame can live in. Every process maps the shared libraries (at its own,
 * randomized addresses) and one executable of a program pool.
 */
enum obj {
	OBJ_KERNEL,
	OBJ_EXE,
	OBJ_LIBC,
	OBJ_LIBSTDCXX,
	OBJ_LIBM,
	OBJ_LD,
	OBJ_COUNT,
};

static const char *const lib_paths[OBJ_COUNT] = {
    [OBJ_LIBC] = "/lib/x86_64-linux-gnu/libc.so.6",
    [OBJ_LIBSTDCXX] = "/lib/x86_64-linux-gnu/libstdc++.so.6",
    [OBJ_LIBM] = "/lib/x86_64-linux-gnu/libm.so.6",
    [OBJ_LD] = "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
};

/* Functions per object: the call tree walks over these. */
static const uint32_t obj_functions[OBJ_COUNT] = {
    [OBJ_KERNEL] = 400,	   [OBJ_EXE] = 1500, [OBJ_LIBC] = 300,
    [OBJ_LIBSTDCXX] = 250, [OBJ_LIBM] = 40,  [OBJ_LD] = 30,
};

struct scenario {
	const char *name;
	uint32_t ncpus, hz;
	uint32_t nprograms; /* distinct executables */
	uint32_t nprocs;    /* processes, each running one program */
	uint32_t nstacks;   /* distinct stack shapes, over all programs */
	uint32_t reps;	    /* timed repetitions */
};

static const struct scenario scenarios[] = {
    {"2 CPUs x 19 Hz", 2, 19, 8, 30, 3000, 41},
    {"2 CPUs x 99 Hz", 2, 99, 8, 30, 3000, 41},
    {"64 CPUs x 99 Hz (busy)", 64, 99, 40, 300, 6000, 11},
};

struct synth {
	struct profile *p;
	uint64_t seed;
	/* Per process: its program, thread count, and its mapping index per object. */
	uint32_t *prog, *nthreads, (*map)[OBJ_COUNT];
	uint64_t (*base)[OBJ_COUNT];
	uint32_t *pid;
	/* Interned names: functions per (object, program) are built on first use. */
	char name[512], sys[512], file[256];
};

/* The function index of function @f of object @o (program @prog for OBJ_EXE). */
static uint32_t synth__function(struct synth *s, enum obj o, uint32_t prog, uint32_t f)
{
	struct profile_function fn = {0};
	uint64_t h = hash2(o * 1000003ull + prog, f);
	static const char *const libc_names[] = {
	    "__memmove_avx_unaligned_erms",
	    "malloc",
	    "_int_malloc",
	    "free",
	    "_int_free",
	    "__libc_read",
	    "__libc_write",
	    "epoll_wait",
	    "pthread_mutex_lock",
	    "__GI___clock_gettime",
	    "__strlen_avx2",
	    "__memset_avx2_unaligned_erms",
	    "__futex_abstimed_wait_common",
	    "start_thread",
	    "__libc_start_call_main",
	    "__libc_start_main_impl",
	    "clone3",
	};

	switch (o) {
	case OBJ_KERNEL:
		snprintf(s->name, sizeof(s->name), "%s_%s_%u",
			 (const char *[]){"do", "__x64_sys", "tcp", "ext4", "vfs", "schedule",
					  "handle_mm", "copy"}[h % 8],
			 (const char *[]){"read", "write", "poll", "fault", "sendmsg", "recvmsg",
					  "page", "irq", "timer"}[(h >> 8) % 9],
			 f);
		fn.name = profile__intern_string(s->p, s->name);
		fn.system_name = fn.name;
		break;
	case OBJ_LIBC:
	case OBJ_LD:
	case OBJ_LIBM:
		if (o == OBJ_LIBC && f < sizeof(libc_names) / sizeof(libc_names[0]))
			snprintf(s->name, sizeof(s->name), "%s", libc_names[f]);
		else
			snprintf(s->name, sizeof(s->name), "__%s_internal_%u",
				 o == OBJ_LD	 ? "dl"
				 : o == OBJ_LIBM ? "ieee754"
						 : "libc",
				 f);
		fn.name = profile__intern_string(s->p, s->name);
		fn.system_name = fn.name;
		break;
	case OBJ_LIBSTDCXX:
		snprintf(s->name, sizeof(s->name),
			 "std::__detail::_Hashtable_%u<std::string, std::pair<std::string const, "
			 "long>>::_M_insert(std::string const&)",
			 f);
		snprintf(s->sys, sizeof(s->sys),
			 "_ZNSt8__detail13_Hashtable_%uINSsSt4pairIKSslEE9_M_"
			 "insertERKSs",
			 f);
		fn.name = profile__intern_string(s->p, s->name);
		fn.system_name = profile__intern_string(s->p, s->sys);
		break;
	default:
		/* Application code, built with debug info: demangled names, files and lines. */
		snprintf(s->name, sizeof(s->name), "app%u::module%u::Handler%u::process_%u(%s)",
			 prog, (unsigned)(h % 23), (unsigned)((h >> 8) % 97), f,
			 (h >> 16) % 3 ? "Request const&, Context*" : "std::vector<Item>&");
		snprintf(s->sys, sizeof(s->sys),
			 "_ZN3app%u7module%u8Handler%u9process_%uERK7Request", prog,
			 (unsigned)(h % 23), (unsigned)((h >> 8) % 97), f);
		snprintf(s->file, sizeof(s->file), "/build/app%u/src/module%u/handler%u.cc", prog,
			 (unsigned)(h % 23), (unsigned)((h >> 8) % 97));
		fn.name = profile__intern_string(s->p, s->name);
		fn.system_name = profile__intern_string(s->p, s->sys);
		fn.filename = profile__intern_string(s->p, s->file);
		break;
	}
	if (!fn.name)
		return 0;
	return profile__intern_function(s->p, &fn);
}

/*
 * The location of a PC in function @f of process @proc: the call site of @site (its callee,
 * or for a leaf one of a few hot instructions), so that every stack passing through the same
 * call shares the location, as with real return addresses.
 */
static uint32_t synth__location(struct synth *s, uint32_t proc, enum obj o, uint32_t f,
				uint64_t site)
{
	uint32_t prog = s->prog[proc], mapping = o == OBJ_KERNEL ? 0 : s->map[proc][o];
	uint64_t h = hash2(hash2(o, f), site), addr, fstart;
	struct profile_line lines[3];
	uint32_t nlines = 1, loc;

	fstart =
	    (o == OBJ_KERNEL ? 0xffffffff81000000ull : s->base[proc][o] + 0x1000) + f * 0x400ull;
	addr = fstart + 4 + h % 0x3f0;
	loc = profile__find_location(s->p, mapping, addr,
				     o == OBJ_KERNEL ? FRAME_KERNEL : FRAME_NATIVE);
	if (loc)
		return loc;
	/* Application code: about a third of the call sites sit in inlined calls. */
	if (o == OBJ_EXE && (h >> 20) % 3 == 0)
		nlines = 2 + (h >> 24) % 2;
	for (uint32_t i = 0; i < nlines; i++) {
		uint32_t fi = i + 1 == nlines ? f : (uint32_t)(hash2(h, i) % obj_functions[o]);

		lines[i].function = synth__function(s, o, prog, fi);
		lines[i].line = o == OBJ_EXE ? 10 + (hash2(h, i + 7) % 900) : 0;
		if (!lines[i].function)
			return 0;
	}
	return profile__intern_location(
	    s->p, mapping, addr, o == OBJ_KERNEL ? FRAME_KERNEL : FRAME_NATIVE, lines, nlines);
}

/*
 * Stack shape @k of program @prog, as (object, function) pairs root first: a walk down a
 * per-program call tree (few choices near the root, so stacks share prefixes as real ones
 * do), ending in a library leaf half the time and in the kernel a third of the time.
 */
static uint32_t stack_shape(uint32_t prog, uint32_t k, uint8_t *objs, uint32_t *fns)
{
	uint64_t rng = hash2(0x57ac4ull + prog, k);
	uint32_t depth = 10 + splitmix(&rng) % (MAX_DEPTH - 10 + 1), n = 0, f = 0, nk = 0, nl = 0;

	if (splitmix(&rng) % 3 == 0)
		nk = 3 + splitmix(&rng) % 10;
	if (splitmix(&rng) % 2 == 0)
		nl = 1 + splitmix(&rng) % 3;
	if (nk + nl + 4 > depth)
		depth = nk + nl + 4;
	/* _start -> __libc_start_main -> main */
	objs[n] = OBJ_EXE, fns[n++] = 0;
	objs[n] = OBJ_LIBC, fns[n++] = 15;
	objs[n] = OBJ_EXE, fns[n++] = 1;
	while (n < depth - nk - nl) {
		/* Fan-out grows with depth: 2 choices at the top, up to 8 further down. */
		uint32_t fan = 2 + (n < 12 ? n / 2 : 6);

		f = hash2(f * 131 + prog, splitmix(&rng) % fan) % obj_functions[OBJ_EXE];
		objs[n] = OBJ_EXE, fns[n++] = f;
	}
	for (uint32_t i = 0; i < nl; i++) {
		enum obj o = i == 0 && nl > 1 ? OBJ_LIBSTDCXX
					      : (enum obj[]){OBJ_LIBC, OBJ_LIBC, OBJ_LIBM,
							     OBJ_LD}[splitmix(&rng) % 4];

		objs[n] = o, fns[n++] = splitmix(&rng) % (o == OBJ_LIBC ? 17 : obj_functions[o]);
	}
	for (uint32_t i = 0; i < nk; i++)
		objs[n] = OBJ_KERNEL, fns[n++] = hash2(i, splitmix(&rng) % 3) % obj_functions[0];
	return n;
}

static struct profile *synthesize(const struct scenario *sc, uint64_t seed, uint64_t start_unix)
{
	struct synth s = {.seed = seed};
	struct zipf zproc = {0}, zstack = {0}, zthread = {0};
	uint32_t per_prog = sc->nstacks / sc->nprograms, locs[MAX_DEPTH], fns[MAX_DEPTH];
	uint64_t rng = seed, period = 1000000000ull / sc->hz;
	struct profile_meta meta = {0};
	uint8_t objs[MAX_DEPTH];
	char buf[PATH_MAX];
	int ok = 0;

	s.p = profile__new();
	s.prog = calloc(sc->nprocs, sizeof(*s.prog));
	s.nthreads = calloc(sc->nprocs, sizeof(*s.nthreads));
	s.pid = calloc(sc->nprocs, sizeof(*s.pid));
	s.map = calloc(sc->nprocs, sizeof(*s.map));
	s.base = calloc(sc->nprocs, sizeof(*s.base));
	if (!s.p || !s.prog || !s.nthreads || !s.pid || !s.map || !s.base ||
	    zipf__init(&zproc, sc->nprocs, 1.0) || zipf__init(&zstack, per_prog, 1.0) ||
	    zipf__init(&zthread, 64, 1.2))
		goto cleanup;

	for (uint32_t i = 0; i < sc->nprocs; i++) {
		s.prog[i] = splitmix(&rng) % sc->nprograms;
		s.pid[i] = 1000 + i * 37 + splitmix(&rng) % 30;
		/* Busy processes are the big, multi-threaded ones. */
		s.nthreads[i] =
		    i < sc->nprocs / 10 ? 16 + splitmix(&rng) % 48 : 1 + splitmix(&rng) % 8;
		for (int o = OBJ_EXE; o < OBJ_COUNT; o++) {
			struct profile_mapping m = {0};

			s.base[i][o] = (o == OBJ_EXE ? 0x550000000000ull : 0x7f0000000000ull) +
				       ((splitmix(&rng) % 0xffffff) << 12);
			m.memory_start = s.base[i][o] + 0x1000;
			m.memory_limit = m.memory_start + 0x400000;
			m.file_offset = 0x1000;
			if (o == OBJ_EXE)
				snprintf(buf, sizeof(buf), "/srv/app%u/bin/app%u", s.prog[i],
					 s.prog[i]);
			else
				snprintf(buf, sizeof(buf), "%s", lib_paths[o]);
			m.filename = profile__intern_string(s.p, buf);
			snprintf(buf, sizeof(buf), "%016llx%016llx%08x",
				 (unsigned long long)hash2(o, o == OBJ_EXE ? s.prog[i] : 0),
				 (unsigned long long)hash2(o + 99, s.prog[i]), o);
			m.build_id = profile__intern_string(s.p, buf);
			s.map[i][o] = profile__intern_mapping(s.p, &m);
			if (!s.map[i][o])
				goto cleanup;
		}
	}

	/* One sample per CPU per tick, every CPU busy, timestamps in arrival order. */
	for (uint32_t t = 0; t < sc->hz * INTERVAL_S; t++) {
		for (uint32_t cpu = 0; cpu < sc->ncpus; cpu++) {
			struct profile_sample_key key = {0};
			uint32_t proc = zipf__draw(&zproc, &rng), k = zipf__draw(&zstack, &rng);
			uint32_t th = zipf__draw(&zthread, &rng) % s.nthreads[proc], n;

			n = stack_shape(s.prog[proc], k, objs, fns);
			/* Leaf first, as the profile wants. */
			for (uint32_t i = 0; i < n; i++) {
				uint64_t site = i + 1 < n
						    ? ((uint64_t)objs[i + 1] << 32 | fns[i + 1])
						    : 1000 + hash2(k, t) % 8;

				locs[n - 1 - i] = synth__location(&s, proc, objs[i], fns[i], site);
				if (!locs[n - 1 - i])
					goto cleanup;
			}
			key.stack = profile__intern_stack(s.p, locs, n);
			key.pid = s.pid[proc];
			key.tid = th ? s.pid[proc] + 1 + th : s.pid[proc];
			key.cpu = cpu;
			snprintf(buf, sizeof(buf), "app%u", s.prog[proc]);
			key.process_name = profile__intern_string(s.p, buf);
			if (th)
				snprintf(buf, sizeof(buf), "worker-%u", th);
			key.comm = profile__intern_string(s.p, buf);
			if (!key.stack || profile__add_sample(s.p, &key,
							      start_unix + t * period +
								  splitmix(&rng) % (period / 4),
							      1))
				goto cleanup;
		}
	}
	meta.start_unix_nano = start_unix;
	meta.duration_nano = INTERVAL_S * 1000000000ull;
	meta.frequency_hz = sc->hz;
	meta.period_nano = period;
	profile__set_meta(s.p, &meta);
	ok = 1;
cleanup:
	free(zproc.cdf);
	free(zstack.cdf);
	free(zthread.cdf);
	free(s.prog);
	free(s.nthreads);
	free(s.pid);
	free(s.map);
	free(s.base);
	if (!ok) {
		profile__free(s.p);
		errno = ENOMEM;
		return NULL;
	}
	return s.p;
}

/* The same profile without timestamps (values only), to show what the timestamps weigh. */
static struct profile *strip_timestamps(const struct profile *src)
{
	struct profile *p = profile__new();
	int ok = 0;

	if (!p)
		return NULL;
	/*
	 * Indices are dense and interning keeps first-seen order, so re-interning in index
	 * order reproduces every index: only the samples change.
	 */
	for (uint32_t i = 1; i < profile__nstrings(src); i++)
		if (profile__intern_string(p, profile__string(src, i)) != i)
			goto cleanup;
	for (uint32_t i = 1; i < profile__nmappings(src); i++)
		if (profile__intern_mapping(p, profile__mapping(src, i)) != i)
			goto cleanup;
	for (uint32_t i = 1; i < profile__nfunctions(src); i++)
		if (profile__intern_function(p, profile__function(src, i)) != i)
			goto cleanup;
	for (uint32_t i = 1; i < profile__nlocations(src); i++) {
		const struct profile_location *l = profile__location(src, i);

		if (profile__intern_location(p, l->mapping, l->address, l->kind,
					     profile__location_lines(src, i), l->nlines) != i)
			goto cleanup;
	}
	for (uint32_t i = 1; i < profile__nstacks(src); i++)
		if (profile__intern_stack(p, profile__stack_locations(src, i),
					  profile__stack(src, i)->nlocations) != i)
			goto cleanup;
	for (uint32_t i = 0; i < profile__nsamples(src); i++) {
		const struct profile_sample *s = profile__sample(src, i);

		if (profile__add_sample(p, &s->key, 0, s->count))
			goto cleanup;
	}
	profile__set_meta(p, profile__meta(src));
	ok = 1;
cleanup:
	if (!ok) {
		profile__free(p);
		return NULL;
	}
	return p;
}

/* --- measuring ------------------------------------------------------------------------------ */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* gzip as gRPC core compresses a message: zlib default level, gzip wrapper (windowBits 15+16). */
static long gzip_size(const uint8_t *buf, size_t len, uint8_t **out, size_t *out_cap)
{
	z_stream zs = {0};
	size_t bound;
	long n;

	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -EIO;
	bound = deflateBound(&zs, len);
	if (bound > *out_cap) {
		uint8_t *b = realloc(*out, bound);

		if (!b) {
			deflateEnd(&zs);
			return -ENOMEM;
		}
		*out = b;
		*out_cap = bound;
	}
	zs.next_in = (uint8_t *)buf;
	zs.avail_in = len;
	zs.next_out = *out;
	zs.avail_out = bound;
	n = deflate(&zs, Z_FINISH) == Z_STREAM_END ? (long)zs.total_out : -EIO;
	deflateEnd(&zs);
	return n;
}

struct otlp_tally {
	int compress; /* gzip each request (and time it) */
	uint64_t requests, raw, gz, samples, gzip_ns, gzip_cpu_ns;
	uint8_t *zbuf;
	size_t zcap;
};

static int tally_emit(void *ctx, const uint8_t *buf, size_t len, uint64_t samples, uint32_t type)
{
	struct otlp_tally *t = ctx;

	t->requests++;
	t->raw += len;
	t->samples += samples;
	if (t->compress) {
		uint64_t t0 = mono_ns(), c0 = cpu_ns();
		long n = gzip_size(buf, len, &t->zbuf, &t->zcap);

		t->gzip_ns += mono_ns() - t0;
		t->gzip_cpu_ns += cpu_ns() - c0;
		if (n < 0)
			return (int)n;
		t->gz += n;
	}
	return 0;
}

/* Size of the gunzipped file at @path, or -errno. */
static long long gunzip_size(const char *path)
{
	gzFile gz = gzopen(path, "rb");
	long long total = 0;
	char buf[65536];
	int n;

	if (!gz)
		return -errno ? -errno : -ENOMEM;
	while ((n = gzread(gz, buf, sizeof(buf))) > 0)
		total += n;
	gzclose(gz);
	return n < 0 ? -EIO : total;
}

struct result {
	uint64_t events, distinct, stacks, locations, requests;
	uint64_t otlp_raw, otlp_gz, otlp_ns, otlp_gzip_ns, otlp_nohash_ns;
	uint64_t otlp_nots_raw, otlp_nots_gz;
	uint64_t pprof_raw, pprof_gz, pprof_ns;
	uint64_t otlp_cpu_ns, gzip_cpu_ns, pprof_cpu_ns;
	uint64_t ratio_x1000, ratio_cpu_x1000; /* medians of per-round ratios */
};

/* Timing series, one value per round. */
enum {
	T_OTLP,
	T_GZIP,
	T_NOHASH,
	T_PPROF,
	T_OTLP_CPU,
	T_GZIP_CPU,
	T_PPROF_CPU,
	T_RATIO,
	T_RATIO_CPU,
	T_COUNT
};

static int measure(const struct scenario *sc, const char *tmpdir, struct result *r)
{
	struct otlp_encode_opts eo = {.host_name = "bench-host"};
	struct profile *p = NULL, *nots = NULL;
	struct otlp_tally t = {0};
	uint64_t *tm[T_COUNT] = {0};
	char path[PATH_MAX];
	struct stat st;
	long long raw;
	int err;

	memset(r, 0, sizeof(*r));
	/* A fixed start time: the same bytes in every run (profile ids aside). */
	p = synthesize(sc, 0x5ca1ab1e, 1767225600000000000ull);
	nots = p ? strip_timestamps(p) : NULL;
	for (int k = 0; k < T_COUNT; k++)
		tm[k] = calloc(sc->reps, sizeof(*tm[k]));
	if (!tm[T_COUNT - 1] || !tm[0] || !tm[1] || !tm[2] || !tm[3] || !tm[4] || !tm[5] ||
	    !tm[6] || !tm[7] || !p || !nots) {
		err = -ENOMEM;
		goto cleanup;
	}
	r->events = profile__total_count(p);
	r->distinct = profile__nsamples(p);
	r->stacks = profile__nstacks(p) - 1;
	r->locations = profile__nlocations(p) - 1;

	/* OTLP sizes (and a check that every sample made it into a request). */
	t.compress = 1;
	err = otlp__encode(p, &eo, tally_emit, &t);
	if (err)
		goto cleanup;
	if (t.samples != r->events) {
		fprintf(stderr, "bench/export: the requests carry %llu samples, the profile %llu\n",
			(unsigned long long)t.samples, (unsigned long long)r->events);
		err = -EPROTO;
		goto cleanup;
	}
	r->requests = t.requests;
	r->otlp_raw = t.raw;
	r->otlp_gz = t.gz;
	/*
	 * Timings, interleaved so that OTLP and pprof see the same load on a shared machine;
	 * the order rotates every round. Wall (CLOCK_MONOTONIC) and thread CPU time.
	 */
	snprintf(path, sizeof(path), "%s/profile.pb.gz", tmpdir);
	for (uint32_t i = 0; i < sc->reps; i++) {
		for (uint32_t j = 0; j < 3; j++) {
			struct otlp_tally u = {.zbuf = t.zbuf, .zcap = t.zcap};
			uint64_t t0 = mono_ns(), c0 = cpu_ns();

			switch ((i + j) % 3) {
			case 0: /* encode, then gzip every request (timed inside the callback) */
				u.compress = 1;
				err = otlp__encode(p, &eo, tally_emit, &u);
				tm[T_OTLP][i] = mono_ns() - t0 - u.gzip_ns;
				tm[T_GZIP][i] = u.gzip_ns;
				tm[T_OTLP_CPU][i] = cpu_ns() - c0 - u.gzip_cpu_ns;
				tm[T_GZIP_CPU][i] = u.gzip_cpu_ns;
				break;
			case 1: /* encode without the htlhash file reads */
				eo.no_file_hash = 1;
				err = otlp__encode(p, &eo, tally_emit, &u);
				eo.no_file_hash = 0;
				tm[T_NOHASH][i] = mono_ns() - t0;
				break;
			default: /* pprof: the whole write (build, gzip, file), as the agent does it
				  */
				err = pprof__write(p, path);
				tm[T_PPROF][i] = mono_ns() - t0;
				tm[T_PPROF_CPU][i] = cpu_ns() - c0;
				break;
			}
			t.zbuf = u.zbuf;
			t.zcap = u.zcap;
			if (err)
				goto cleanup;
		}
		/* Per-round ratios (OTLP encode + gzip) / pprof write, x1000. */
		tm[T_RATIO][i] = (tm[T_OTLP][i] + tm[T_GZIP][i]) * 1000 / tm[T_PPROF][i];
		tm[T_RATIO_CPU][i] = (tm[T_OTLP_CPU][i] + tm[T_GZIP_CPU][i]) * 1000 /
				     (tm[T_PPROF_CPU][i] ? tm[T_PPROF_CPU][i] : 1);
	}
	r->otlp_ns = median(tm[T_OTLP], sc->reps);
	r->otlp_gzip_ns = median(tm[T_GZIP], sc->reps);
	r->otlp_nohash_ns = median(tm[T_NOHASH], sc->reps);
	r->pprof_ns = median(tm[T_PPROF], sc->reps);
	r->ratio_x1000 = median(tm[T_RATIO], sc->reps);
	r->ratio_cpu_x1000 = median(tm[T_RATIO_CPU], sc->reps);
	r->otlp_cpu_ns = median(tm[T_OTLP_CPU], sc->reps);
	r->gzip_cpu_ns = median(tm[T_GZIP_CPU], sc->reps);
	r->pprof_cpu_ns = median(tm[T_PPROF_CPU], sc->reps);
	{
		struct otlp_tally u = {.compress = 1, .zbuf = t.zbuf, .zcap = t.zcap};

		err = otlp__encode(nots, &eo, tally_emit, &u);
		t.zbuf = u.zbuf;
		t.zcap = u.zcap;
		if (err)
			goto cleanup;
		r->otlp_nots_raw = u.raw;
		r->otlp_nots_gz = u.gz;
	}
	if (stat(path, &st)) {
		err = -errno;
		goto cleanup;
	}
	r->pprof_gz = st.st_size;
	raw = gunzip_size(path);
	if (raw < 0) {
		err = (int)raw;
		goto cleanup;
	}
	r->pprof_raw = raw;
	unlink(path);
	err = 0;
cleanup:
	if (err)
		fprintf(stderr, "bench/export: %s: %s\n", sc->name, strerror(-err));
	free(t.zbuf);
	for (int k = 0; k < T_COUNT; k++)
		free(tm[k]);
	profile__free(p);
	profile__free(nots);
	return err;
}

static void print_results(const struct scenario *sc, const struct result *r, size_t n)
{
	printf("\nInput: one %d s export interval per case, every CPU busy, fixed seed\n",
	       INTERVAL_S);
	printf("| case | samples | distinct samples | stacks | locations | OTLP requests |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < n; i++)
		printf("| %s | %llu | %llu | %llu | %llu | %llu |\n", sc[i].name,
		       (unsigned long long)r[i].events, (unsigned long long)r[i].distinct,
		       (unsigned long long)r[i].stacks, (unsigned long long)r[i].locations,
		       (unsigned long long)r[i].requests);

	printf("\nBytes per interval (bytes per sample)\n");
	printf("| case | OTLP raw | OTLP gzip | pprof raw | pprof gzip | OTLP/pprof raw | "
	       "OTLP/pprof gzip | OTLP w/o timestamps raw | gzip |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < n; i++) {
		double e = r[i].events;

		printf(
		    "| %s | %llu (%.1f) | %llu (%.1f) | %llu (%.1f) | %llu (%.1f) | %.2f | %.2f | "
		    "%llu (%.1f) | %llu (%.1f) |\n",
		    sc[i].name, (unsigned long long)r[i].otlp_raw, r[i].otlp_raw / e,
		    (unsigned long long)r[i].otlp_gz, r[i].otlp_gz / e,
		    (unsigned long long)r[i].pprof_raw, r[i].pprof_raw / e,
		    (unsigned long long)r[i].pprof_gz, r[i].pprof_gz / e,
		    (double)r[i].otlp_raw / r[i].pprof_raw, (double)r[i].otlp_gz / r[i].pprof_gz,
		    (unsigned long long)r[i].otlp_nots_raw, r[i].otlp_nots_raw / e,
		    (unsigned long long)r[i].otlp_nots_gz, r[i].otlp_nots_gz / e);
	}

	printf(
	    "\nTime per interval: median over the runs, ms wall (CLOCK_MONOTONIC), µs per sample "
	    "in brackets; OTLP and pprof runs interleaved\n");
	printf("| case | runs | OTLP encode | of which htlhash reads | gzip (gRPC level) | "
	       "OTLP encode + gzip | pprof write (incl. gzip) | OTLP+gzip / pprof, wall | same, "
	       "CPU time |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < n; i++) {
		double e = r[i].events, enc = r[i].otlp_ns, gz = r[i].otlp_gzip_ns;
		double hash =
		    r[i].otlp_ns > r[i].otlp_nohash_ns ? r[i].otlp_ns - r[i].otlp_nohash_ns : 0;

		printf("| %s | %u | %.2f (%.2f) | %.2f | %.2f (%.2f) | %.2f (%.2f) | %.2f (%.2f) | "
		       "%.2f | %.2f |\n",
		       sc[i].name, sc[i].reps, enc / 1e6, enc / 1e3 / e, hash / 1e6, gz / 1e6,
		       gz / 1e3 / e, (enc + gz) / 1e6, (enc + gz) / 1e3 / e, r[i].pprof_ns / 1e6,
		       r[i].pprof_ns / 1e3 / e, r[i].ratio_x1000 / 1e3, r[i].ratio_cpu_x1000 / 1e3);
	}
	printf("\nThread CPU time, median, ms: OTLP encode / gzip / pprof write\n");
	for (size_t i = 0; i < n; i++)
		printf("  %-24s %8.2f / %8.2f / %8.2f\n", sc[i].name, r[i].otlp_cpu_ns / 1e6,
		       r[i].gzip_cpu_ns / 1e6, r[i].pprof_cpu_ns / 1e6);
}

/* --- --real: the agent against integration/testcollector ----------------------------------- */

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int wait_listening(int port, pid_t child, double timeout_s)
{
	uint64_t deadline = mono_ns() + (uint64_t)(timeout_s * 1e9);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	while (mono_ns() < deadline) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

		if (fd < 0)
			return -errno;
		ok = !connect(fd, (struct sockaddr *)&a, sizeof(a));
		close(fd);
		if (ok)
			return 0;
		if (waitpid(child, NULL, WNOHANG) == child)
			return -ECHILD;
		usleep(100000);
	}
	return -ETIMEDOUT;
}

static long long proc_rchar(pid_t pid)
{
	char path[64], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static pid_t spawn(char *const argv[], const char *err_path)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		errno = rc;
		return -1;
	}
	return pid;
}

static void stop_child(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* One agent run; prints its export summary line and the receiver's socket bytes. */
static int real_run(const char *spanprof, const char *collector, const char *tmpdir,
		    const char *compression, uint32_t hz, const char *seconds)
{
	char port_s[32], listen[64], out[PATH_MAX], col_err[PATH_MAX], agent_err[PATH_MAX];
	char hz_s[16], line[1024];
	pid_t col = -1, agent = -1;
	long long r0, r1;
	int port = free_port(), status, err = 0, found = 0;
	FILE *f;

	if (port < 0)
		return -EADDRNOTAVAIL;
	snprintf(port_s, sizeof(port_s), "127.0.0.1:%d", port);
	snprintf(listen, sizeof(listen), "%s", port_s);
	snprintf(out, sizeof(out), "%s/received-%s.jsonl", tmpdir, compression);
	snprintf(col_err, sizeof(col_err), "%s/collector-%s.log", tmpdir, compression);
	snprintf(agent_err, sizeof(agent_err), "%s/agent-%s.log", tmpdir, compression);
	snprintf(hz_s, sizeof(hz_s), "%u", hz);

	col = spawn((char *[]){(char *)collector, "-listen", listen, "-out", out, NULL}, col_err);
	if (col < 0)
		return -errno;
	err = wait_listening(port, col, 30);
	if (err) {
		fprintf(stderr, "bench/export: testcollector did not listen (see %s)\n", col_err);
		goto cleanup;
	}
	r0 = proc_rchar(col);
	agent = spawn((char *[]){(char *)spanprof, "record", "--endpoint", port_s, "--compression",
				 (char *)compression, "--frequency", hz_s, "--duration",
				 (char *)seconds, "--quiet", NULL},
		      agent_err);
	if (agent < 0) {
		err = -errno;
		goto cleanup;
	}
	if (waitpid(agent, &status, 0) != agent) {
		err = -errno;
		goto cleanup;
	}
	agent = -1;
	r1 = proc_rchar(col);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench/export: spanprof failed (see %s)\n", agent_err);
		err = -EIO;
		goto cleanup;
	}
	f = fopen(agent_err, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "export to ")) {
			unsigned long long req = 0, bytes = 0, samples = 0;
			const char *p = strstr(strstr(line, "export to "), ": ");

			if (p && sscanf(p + 2, "%llu requests sent (%llu bytes, %llu", &req, &bytes,
					&samples) == 3) {
				printf("| %s | %s | %llu | %llu | %llu | %.1f | %lld | %.1f |\n",
				       compression, seconds, req, samples, bytes,
				       samples ? (double)bytes / samples : 0, r1 - r0,
				       samples ? (double)(r1 - r0) / samples : 0);
				found = 1;
			}
		}
	}
	if (f)
		fclose(f);
	if (!found) {
		fprintf(stderr, "bench/export: no export summary in %s\n", agent_err);
		err = -EIO;
	}
cleanup:
	stop_child(agent);
	stop_child(col);
	if (!err) {
		unlink(out);
		unlink(col_err);
		unlink(agent_err);
	}
	return err;
}

static int real(const char *spanprof, const char *collector, const char *tmpdir, uint32_t hz,
		const char *seconds)
{
	int err;

	printf(
	    "\nReal agent: spanprof record --endpoint (testcollector on loopback), whole machine "
	    "at %u Hz\n",
	    hz);
	printf("| compression | seconds | requests | samples | agent \"bytes\" (serialized, before "
	       "gRPC compression) | per sample | receiver socket bytes (rchar) | per sample |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	fflush(stdout);
	err = real_run(spanprof, collector, tmpdir, "gzip", hz, seconds);
	fflush(stdout);
	if (!err)
		err = real_run(spanprof, collector, tmpdir, "none", hz, seconds);
	fflush(stdout);
	return err;
}

/* --- main ----------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "Usage: export [--only N] [--real] [--spanprof PATH] [--testcollector PATH]\n"
		   "              [--real-seconds S] [--real-hz HZ]\n"
		   "Bytes per sample and encode time of OTLP export against pprof, on synthetic\n"
		   "5 s intervals. --real also runs the agent (root) against testcollector.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"only", required_argument, NULL, 'n'},
	    {"real", no_argument, NULL, 'r'},
	    {"spanprof", required_argument, NULL, 's'},
	    {"testcollector", required_argument, NULL, 't'},
	    {"real-seconds", required_argument, NULL, 'S'},
	    {"real-hz", required_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	size_t n = sizeof(scenarios) / sizeof(scenarios[0]);
	struct result res[sizeof(scenarios) / sizeof(scenarios[0])];
	char tmpdir[] = "/tmp/spanprof-bench-export-XXXXXX", dir[PATH_MAX - 32], spanprof[PATH_MAX],
	     collector[PATH_MAX];
	const char *real_seconds = "15";
	int c, only = -1, do_real = 0, rc = 0;
	uint32_t real_hz = 19;
	char *slash;

	/* Defaults: beside this binary's build directory ($(BUILD)/bench/export). */
	snprintf(dir, sizeof(dir), "%s", argv[0]);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	snprintf(spanprof, sizeof(spanprof), "%s/../spanprof", dir);
	snprintf(collector, sizeof(collector), "%s/../testcollector", dir);

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			only = atoi(optarg);
			if (only < 0 || (size_t)only >= n) {
				fprintf(stderr, "bench/export: --only wants 0..%zu\n", n - 1);
				return 2;
			}
			break;
		case 'r':
			do_real = 1;
			break;
		case 's':
			snprintf(spanprof, sizeof(spanprof), "%s", optarg);
			break;
		case 't':
			snprintf(collector, sizeof(collector), "%s", optarg);
			break;
		case 'S':
			real_seconds = optarg;
			break;
		case 'H':
			real_hz = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!mkdtemp(tmpdir)) {
		perror("bench/export: mkdtemp");
		return 1;
	}

	printf("bench/export: OTLP (otlp__encode, max request %u bytes) vs pprof (pprof__write) on "
	       "the same samples\n",
	       OTLP_DEFAULT_MAX_REQUEST);
	for (size_t i = 0; i < n; i++) {
		if (only >= 0 && (size_t)only != i)
			continue;
		fprintf(stderr, "bench/export: %s...\n", scenarios[i].name);
		if (measure(&scenarios[i], tmpdir, &res[i]))
			rc = 1;
	}
	if (!rc) {
		if (only >= 0)
			print_results(&scenarios[only], &res[only], 1);
		else
			print_results(scenarios, res, n);
	}
	fflush(stdout);
	if (do_real) {
		if (access(spanprof, X_OK) || access(collector, X_OK)) {
			fprintf(stderr,
				"bench/export: --real needs %s and %s (make all, and go build "
				"-o %s ./integration/testcollector)\n",
				spanprof, collector, collector);
			rc = 1;
		} else if (real(spanprof, collector, tmpdir, real_hz, real_seconds)) {
			rc = 1;
		}
	}
	if (rmdir(tmpdir))
		fprintf(stderr, "bench/export: left %s behind: %s\n", tmpdir, strerror(errno));
	return rc;
}
