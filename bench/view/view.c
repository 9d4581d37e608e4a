// SPDX-License-Identifier: Apache-2.0
/*
 * bench/view: what `spanprof view` costs on a million samples.
 *
 * Writes a synthetic recording (fixed seed) as OTLP requests, the way `spanprof record
 * --endpoint ... --output-dir DIR` leaves them (DIR/profiles-NNNNNN.binpb, one per 5 s export
 * interval): 40 processes in 8 services, 1000 threads, 20000 stacks 8 to 60 frames deep over
 * 4000 functions (some inlined) plus kernel frames, 20000 spans (each on one thread for
 * 20 ms to 2 s, carrying an http.route, its samples drawn from its route's stacks), 40 % of
 * the samples in a span, 1 to 4 timestamps per Sample message, over 60 s.
 *
 * Then measures, each over --rounds runs (median):
 *   - the baseline: reading the same files and decoding them with protobuf-c (the default
 *     allocator), i.e. what any program pays before it can look at a single sample;
 *   - `spanprof view DIR --output DIR/profile.html` as a child process: wall time, CPU time
 *     and peak RSS (wait4), and the page's size;
 *   - when integration/view_browser.mjs, node and chromium are there: the page opened in
 *     headless Chromium, time from navigation to the page's first render
 *     (window.spanprofView.ready, read as performance.now()).
 * Prints the figures and the view / baseline ratio. Never fails on the figures.
 *
 *   bench/view --spanprof build/spanprof [--dir DIR] [--samples N] [--files N] [--rounds N]
 *              [--browser integration/view_browser.mjs|none]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <math.h>

#include "otlp/otlp_pb.h"

#define NPROC 40
#define NSERVICE 8
#define NTHREAD 25 /* per process */
#define NFUNC 4000
#define NKFUNC 200
#define NMAP 12
#define NSTACK 20000
#define NSPAN 20000
#define NROUTE 30
#define NROOT 50
#define SECONDS 60
#define T0 1764441600000000000ull

static void die(const char *what)
{
	fprintf(stderr, "bench/view: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("calloc");
	return p;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(splitmix(s) % n);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- the dictionary shared by every request ------------------------------------------------ */

struct gen {
	pb_dict dict;
	int32_t s_samples, s_count, s_cpu, s_ns;
	int32_t a_tid[NPROC * NTHREAD], a_tname[NTHREAD], a_route[NROUTE];
	int32_t s_service[NSERVICE], s_exe[NPROC];
	struct {
		uint32_t proc, thread;
		uint64_t start, dur;
	} span[NSPAN];
};

static char **strs;
static size_t nstrs;

static int32_t str(const char *s)
{
	strs[nstrs] = strdup(s);
	if (!strs[nstrs])
		die("strdup");
	return (int32_t)nstrs++;
}

static pb_any *any_str(const char *s)
{
	pb_any *a = xcalloc(1, sizeof(*a));

	opentelemetry__proto__common__v1__any_value__init(a);
	a->value_case = ANY(STRING_VALUE);
	a->string_value = strdup(s);
	return a;
}

static int32_t attr(pb_dict *d, const char *key, pb_any *v)
{
	pb_kvu *a = xcalloc(1, sizeof(*a));
	int32_t k = 0;

	for (size_t i = 1; i < nstrs && !k; i++)
		if (!strcmp(strs[i], key))
			k = (int32_t)i;
	PB(key_value_and_unit__init)(a);
	a->key_strindex = k ? k : str(key);
	a->value = v;
	d->attribute_table[d->n_attribute_table] = a;
	return (int32_t)d->n_attribute_table++;
}

/* Function @f's callees: a fixed few, so that stacks share their prefixes as real ones do. */
static uint32_t callee(uint32_t f, uint32_t k)
{
	uint64_t s = (uint64_t)f * 31 + k;

	return NROOT + (uint32_t)(splitmix(&s) % (NFUNC - NROOT));
}

static void build_dict(struct gen *g)
{
	pb_dict *d = &g->dict;
	uint64_t seed = 42;
	char buf[256];
	int32_t a_native, a_kernel;

	PB(profiles_dictionary__init)(d);
	strs = xcalloc(64 + 2 * (NFUNC + NKFUNC) + NMAP + NPROC * NTHREAD + NTHREAD + NROUTE * 2 +
			   NSERVICE + NPROC + 64,
		       sizeof(char *));
	str("");
	g->s_samples = str("samples");
	g->s_count = str("count");
	g->s_cpu = str("cpu");
	g->s_ns = str("nanoseconds");
	for (int i = 0; i < NSERVICE; i++) {
		snprintf(buf, sizeof(buf), "service-%d", i);
		g->s_service[i] = str(buf);
	}
	for (int i = 0; i < NPROC; i++) {
		snprintf(buf, sizeof(buf), "svc%d-worker", i % NSERVICE);
		g->s_exe[i] = str(buf);
	}

	d->attribute_table = xcalloc(3 + NPROC * NTHREAD + NTHREAD + NROUTE, sizeof(void *));
	d->attribute_table[d->n_attribute_table++] = xcalloc(1, sizeof(pb_kvu));
	PB(key_value_and_unit__init)(d->attribute_table[0]);
	a_native = attr(d, "profile.frame.type", any_str("native"));
	a_kernel = attr(d, "profile.frame.type", any_str("kernel"));
	for (int i = 0; i < NPROC * NTHREAD; i++) {
		pb_any *v = xcalloc(1, sizeof(*v));

		opentelemetry__proto__common__v1__any_value__init(v);
		v->value_case = ANY(INT_VALUE);
		v->int_value = 100000 + i;
		g->a_tid[i] = attr(d, "thread.id", v);
	}
	for (int i = 0; i < NTHREAD; i++) {
		snprintf(buf, sizeof(buf), "worker-%d", i);
		g->a_tname[i] = attr(d, "thread.name", any_str(buf));
	}
	for (int i = 0; i < NROUTE; i++) {
		snprintf(buf, sizeof(buf), "/api/v1/resource%d/{id}", i);
		g->a_route[i] = attr(d, "http.route", any_str(buf));
	}

	d->mapping_table = xcalloc(NMAP + 1, sizeof(void *));
	for (int i = 0; i <= NMAP; i++) {
		pb_mapping *m = xcalloc(1, sizeof(*m));

		PB(mapping__init)(m);
		if (i) {
			snprintf(buf, sizeof(buf), "/usr/lib/x86_64-linux-gnu/libmodule%d.so.1", i);
			m->filename_strindex = str(buf);
			m->memory_start = 0x7f0000000000ull + (uint64_t)i * 0x1000000;
			m->memory_limit = m->memory_start + 0x1000000;
		}
		d->mapping_table[d->n_mapping_table++] = m;
	}
	d->function_table = xcalloc(NFUNC + NKFUNC + 1, sizeof(void *));
	d->location_table = xcalloc(NFUNC + NKFUNC + 1, sizeof(void *));
	for (int i = 0; i <= NFUNC + NKFUNC; i++) {
		pb_function *f = xcalloc(1, sizeof(*f));
		pb_location *l = xcalloc(1, sizeof(*l));

		PB(function__init)(f);
		PB(location__init)(l);
		if (i && i <= NFUNC) {
			snprintf(buf, sizeof(buf),
				 "app::module%d::Handler%d::process_step_%d(Request const&, int)",
				 i % 17, i % 101, i);
			f->name_strindex = f->system_name_strindex = str(buf);
			snprintf(buf, sizeof(buf), "/build/app/src/module%d/handler%d.cc", i % 17,
				 i % 101);
			f->filename_strindex = str(buf);
		} else if (i) {
			snprintf(buf, sizeof(buf), "kernel_function_%d", i - NFUNC);
			f->name_strindex = f->system_name_strindex = str(buf);
		}
		d->function_table[d->n_function_table++] = f;
		if (!i) {
			d->location_table[d->n_location_table++] = l;
			continue;
		}
		l->attribute_indices = xcalloc(1, sizeof(int32_t));
		l->n_attribute_indices = 1;
		l->lines = xcalloc(2, sizeof(pb_line *));
		if (i <= NFUNC) {
			l->mapping_index = 1 + i % NMAP;
			l->address = 0x7f0000000000ull + (uint64_t)(1 + i % NMAP) * 0x1000000 +
				     (uint64_t)i * 64;
			l->attribute_indices[0] = a_native;
			if (below(&seed, 10) == 0) { /* inlined: the callee's line first */
				pb_line *in = xcalloc(1, sizeof(*in));

				PB(line__init)(in);
				in->function_index = 1 + (int32_t)below(&seed, NFUNC);
				in->line = 1 + below(&seed, 400);
				l->lines[l->n_lines++] = in;
			}
		} else {
			l->address = 0xffffffff81000000ull + (uint64_t)i * 64;
			l->attribute_indices[0] = a_kernel;
		}
		{
			pb_line *ln = xcalloc(1, sizeof(*ln));

			PB(line__init)(ln);
			ln->function_index = i;
			ln->line = i <= NFUNC ? 1 + i % 700 : 0;
			l->lines[l->n_lines++] = ln;
		}
		d->location_table[d->n_location_table++] = l;
	}

	/* Stacks, leaf first: a walk down the call tree from a root, kernel frames at the leaf. */
	d->stack_table = xcalloc(NSTACK + 1, sizeof(void *));
	for (int i = 0; i <= NSTACK; i++) {
		pb_stack *s = xcalloc(1, sizeof(*s));
		uint32_t depth = 8 + below(&seed, 53),
			 nk = below(&seed, 5) == 0 ? 2 + below(&seed, 7) : 0;
		uint32_t f = 1 + below(&seed, NROOT), n = 0;

		PB(stack__init)(s);
		d->stack_table[d->n_stack_table++] = s;
		if (!i)
			continue;
		s->location_indices = xcalloc(depth + nk, sizeof(int32_t));
		s->n_location_indices = depth + nk;
		for (uint32_t k = 0; k < depth; k++) {
			s->location_indices[depth + nk - 1 - n++] = (int32_t)f;
			f = 1 + callee(f, below(&seed, 3));
		}
		for (uint32_t k = 0; k < nk; k++)
			s->location_indices[nk - 1 - k] = NFUNC + 1 + (int32_t)below(&seed, NKFUNC);
	}
	d->link_table = xcalloc(NSPAN + 1, sizeof(void *));
	for (int i = 0; i <= NSPAN; i++) {
		pb_link *l = xcalloc(1, sizeof(*l));

		PB(link__init)(l);
		if (i) {
			l->trace_id.len = 16;
			l->trace_id.data = xcalloc(1, 16);
			l->span_id.len = 8;
			l->span_id.data = xcalloc(1, 8);
			for (int k = 0; k < 16; k += 8) {
				uint64_t v = splitmix(&seed);

				memcpy(l->trace_id.data + k, &v, 8);
			}
			{
				uint64_t v = splitmix(&seed) | 1;

				memcpy(l->span_id.data, &v, 8);
			}
			/* A request: one thread of one process, 20 ms to 2 s (log-uniform). */
			g->span[i - 1].proc = below(&seed, NPROC);
			g->span[i - 1].thread = below(&seed, NTHREAD);
			g->span[i - 1].dur =
			    (uint64_t)(20e6 * exp2((double)below(&seed, 1000) / 1000 * 6.64));
			g->span[i - 1].start =
			    T0 + splitmix(&seed) % (SECONDS * 1000000000ull - g->span[i - 1].dur);
		}
		d->link_table[d->n_link_table++] = l;
	}
	d->string_table = strs;
	d->n_string_table = nstrs;
}

/* --- the requests -------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A skewed pick in [0, n): a few stacks are hot, most are rare. */
static uint32_t skewed(uint64_t *s, uint32_t n)
{
	double u = (double)(splitmix(s) >> 11) / (double)(1ull << 53);

	return (uint32_t)(u * u * u * n);
}

/* Writes request @file (@events samples of its 60 s / files window). Returns its size. */
static size_t write_request(struct gen *g, const char *dir, unsigned file, unsigned files,
			    uint64_t events)
{
	uint64_t seed = 1000 + file, win = SECONDS * 1000000000ull / files, start = T0 + file * win;
	pb_data pd;
	pb_rp rps[NPROC], *rpp[NPROC];
	pb_sp sps[NPROC], *spp[NPROC];
	pb_profile profs[NPROC], *profp[NPROC];
	pb_resource res[NPROC];
	pb_kv kvs[NPROC][3], *kvp[NPROC][3];
	pb_any anys[NPROC][3];
	pb_vt st, pt;
	pb_sample *samples = xcalloc(events, sizeof(*samples));
	pb_sample **sptr = xcalloc(events, sizeof(*sptr));
	uint32_t *proc_of = xcalloc(events, sizeof(*proc_of)), nper[NPROC] = {0}, off[NPROC];
	int32_t *attrs = xcalloc(events * 3, sizeof(int32_t));
	uint64_t *ts = xcalloc(events, sizeof(uint64_t)), done = 0, nsamples = 0;
	uint32_t *active = xcalloc(NSPAN, sizeof(*active)), nactive = 0;
	char path[4096];
	uint8_t *buf;
	size_t len;
	FILE *f;

	PB(profiles_data__init)(&pd);
	PB(value_type__init)(&st);
	PB(value_type__init)(&pt);
	st.type_strindex = g->s_samples;
	st.unit_strindex = g->s_count;
	pt.type_strindex = g->s_cpu;
	pt.unit_strindex = g->s_ns;
	/* The spans running in this request's window. */
	for (uint32_t i = 0; i < NSPAN; i++)
		if (g->span[i].start < start + win && g->span[i].start + g->span[i].dur > start)
			active[nactive++] = i;
	while (done < events) {
		pb_sample *s = &samples[nsamples];
		uint32_t p, t, n = 1 + below(&seed, 4), stack;
		uint64_t t0, t1;

		if (n > events - done)
			n = (uint32_t)(events - done);
		PB(sample__init)(s);
		s->attribute_indices = &attrs[3 * nsamples];
		if (nactive && below(&seed, 10) < 4) {
			/* In a span: its thread, its time, the stacks of its route. */
			uint32_t sp = active[below(&seed, nactive)];

			p = g->span[sp].proc;
			t = g->span[sp].thread;
			t0 = g->span[sp].start > start ? g->span[sp].start : start;
			t1 = g->span[sp].start + g->span[sp].dur < start + win
				 ? g->span[sp].start + g->span[sp].dur
				 : start + win;
			stack = ((sp % NROUTE) * 613 + skewed(&seed, 300)) % NSTACK;
			s->link_index = 1 + (int32_t)sp;
		} else {
			p = below(&seed, NPROC);
			t = below(&seed, NTHREAD);
			t0 = start;
			t1 = start + win;
			stack = skewed(&seed, NSTACK);
		}
		s->stack_index = 1 + (int32_t)stack;
		s->attribute_indices[s->n_attribute_indices++] = g->a_tid[p * NTHREAD + t];
		s->attribute_indices[s->n_attribute_indices++] = g->a_tname[t];
		if (s->link_index)
			s->attribute_indices[s->n_attribute_indices++] =
			    g->a_route[(s->link_index - 1) % NROUTE];
		s->timestamps_unix_nano = &ts[done];
		s->n_timestamps_unix_nano = n;
		for (uint32_t k = 0; k < n; k++)
			ts[done + k] = t0 + splitmix(&seed) % (t1 - t0);
		qsort(&ts[done], n, sizeof(uint64_t), cmp_u64);
		proc_of[nsamples++] = p;
		nper[p]++;
		done += n;
	}
	for (int p = 0, o = 0; p < NPROC; p++) {
		off[p] = (uint32_t)o;
		o += (int)nper[p];
		nper[p] = 0;
	}
	for (uint64_t i = 0; i < nsamples; i++)
		sptr[off[proc_of[i]] + nper[proc_of[i]]++] = &samples[i];
	for (int p = 0; p < NPROC; p++) {
		PB(resource_profiles__init)(&rps[p]);
		PB(scope_profiles__init)(&sps[p]);
		PB(profile__init)(&profs[p]);
		opentelemetry__proto__resource__v1__resource__init(&res[p]);
		for (int k = 0; k < 3; k++) {
			opentelemetry__proto__common__v1__key_value__init(&kvs[p][k]);
			opentelemetry__proto__common__v1__any_value__init(&anys[p][k]);
			kvs[p][k].value = &anys[p][k];
			kvp[p][k] = &kvs[p][k];
		}
		kvs[p][0].key = "service.name";
		anys[p][0].value_case = ANY(STRING_VALUE);
		anys[p][0].string_value = strs[g->s_service[p % NSERVICE]];
		kvs[p][1].key = "process.pid";
		anys[p][1].value_case = ANY(INT_VALUE);
		anys[p][1].int_value = 1000 + p;
		kvs[p][2].key = "process.executable.name";
		anys[p][2].value_case = ANY(STRING_VALUE);
		anys[p][2].string_value = strs[g->s_exe[p]];
		res[p].attributes = kvp[p];
		res[p].n_attributes = 3;
		rps[p].resource = &res[p];
		spp[p] = &sps[p];
		rps[p].scope_profiles = &spp[p];
		rps[p].n_scope_profiles = 1;
		profp[p] = &profs[p];
		sps[p].profiles = &profp[p];
		sps[p].n_profiles = 1;
		profs[p].sample_type = &st;
		profs[p].period_type = &pt;
		profs[p].period = 52631578;
		profs[p].time_unix_nano = start;
		profs[p].duration_nano = win;
		profs[p].samples = &sptr[off[p]];
		profs[p].n_samples = nper[p];
		rpp[p] = &rps[p];
	}
	pd.resource_profiles = rpp;
	pd.n_resource_profiles = NPROC;
	pd.dictionary = &g->dict;
	len = PB(profiles_data__get_packed_size)(&pd);
	buf = malloc(len);
	if (!buf)
		die("malloc");
	PB(profiles_data__pack)(&pd, buf);
	snprintf(path, sizeof(path), "%s/profiles-%06u.binpb", dir, file + 1);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		die(path);
	free(buf);
	free(samples);
	free(sptr);
	free(proc_of);
	free(attrs);
	free(ts);
	free(active);
	return len;
}

/* --- measurements -------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The baseline: read every file and decode it with protobuf-c. Returns the events seen. */
static uint64_t decode_all(const char *dir, unsigned files)
{
	uint64_t events = 0;
	char path[4096];

	for (unsigned i = 0; i < files; i++) {
		struct stat sb;
		uint8_t *buf;
		pb_data *pd;
		int fd;

		snprintf(path, sizeof(path), "%s/profiles-%06u.binpb", dir, i + 1);
		fd = open(path, O_RDONLY);
		if (fd < 0 || fstat(fd, &sb))
			die(path);
		buf = malloc((size_t)sb.st_size);
		if (!buf || read(fd, buf, (size_t)sb.st_size) != sb.st_size)
			die(path);
		close(fd);
		pd = PB(profiles_data__unpack)(NULL, (size_t)sb.st_size, buf);
		if (!pd) {
			fprintf(stderr, "bench/view: %s does not decode\n", path);
			exit(1);
		}
		for (size_t r = 0; r < pd->n_resource_profiles; r++)
			for (size_t p = 0;
			     p < pd->resource_profiles[r]->scope_profiles[0]->n_profiles; p++) {
				pb_profile *pr =
				    pd->resource_profiles[r]->scope_profiles[0]->profiles[p];

				for (size_t s = 0; s < pr->n_samples; s++)
					events += pr->samples[s]->n_timestamps_unix_nano;
			}
		PB(profiles_data__free_unpacked)(pd, NULL);
		free(buf);
	}
	return events;
}

struct run {
	double wall, cpu, rss_mib;
	int status;
	char summary[512];
};

/* Runs `spanprof view DIR --output PAGE`; its stderr's last line is its summary. */
static void run_view(const char *spanprof, const char *dir, const char *page, struct run *r)
{
	char errpath[4200];
	struct rusage ru;
	double t0 = now_s();
	pid_t pid;
	int st;
	FILE *f;

	snprintf(errpath, sizeof(errpath), "%s.stderr", page);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int out = open("/dev/null", O_WRONLY),
		    err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(out, 1);
		dup2(err, 2);
		execl(spanprof, spanprof, "view", dir, "--output", page, (char *)NULL);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) != pid)
		die("wait4");
	r->wall = now_s() - t0;
	r->cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		 ru.ru_stime.tv_usec / 1e6;
	r->rss_mib = ru.ru_maxrss / 1024.0;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	r->summary[0] = '\0';
	f = fopen(errpath, "r");
	if (f) {
		char line[512];

		while (fgets(line, sizeof(line), f))
			snprintf(r->summary, sizeof(r->summary), "%s", line);
		fclose(f);
	}
	unlink(errpath);
}

/*
 * Time from navigation to the first render of @page in headless Chromium, through the page
 * tests' driver (integration/view_browser.mjs). Negative when it cannot run (@why says why).
 */
static double browser_ms(const char *driver, const char *page, char *why, size_t wl)
{
	char job[8192], outpath[4200], cmd[8600], abs[4096];
	json_object *out, *by, *v;
	double ms = -1;
	FILE *f;
	int rc;

	if (access(driver, R_OK)) {
		snprintf(why, wl, "%s is not there", driver);
		return -1;
	}
	if (!realpath(page, abs)) {
		snprintf(why, wl, "%.200s: %s", page, strerror(errno));
		return -1;
	}
	snprintf(job, sizeof(job),
		 "{\"url\": \"file://%s\", \"timeout_ms\": 300000, \"actions\": ["
		 "{\"op\": \"ready\", \"name\": \"error\"},"
		 "{\"op\": \"eval\", \"name\": \"t_ready\", \"expr\": \"performance.now()\"},"
		 "{\"op\": \"eval\", \"name\": \"root\", \"expr\": \"spanprofView.rootValue()\"}]}",
		 abs);
	snprintf(outpath, sizeof(outpath), "%s.browser.json", page);
	snprintf(cmd, sizeof(cmd), "node '%s' > '%s' 2>/dev/null", driver, outpath);
	f = popen(cmd, "w");
	if (!f) {
		snprintf(why, wl, "node: %s", strerror(errno));
		return -1;
	}
	fputs(job, f);
	rc = pclose(f);
	out = json_object_from_file(outpath);
	unlink(outpath);
	if (!out) {
		snprintf(why, wl,
			 "the driver printed no result (exit %d): node, chromium or "
			 "view/node_modules missing?",
			 WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
		return -1;
	}
	if (json_object_object_get_ex(out, "error", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		snprintf(why, wl, "driver: %s", json_object_get_string(v));
	} else if (json_object_object_get_ex(out, "results_by_name", &by) &&
		   json_object_object_get_ex(by, "t_ready", &v)) {
		ms = json_object_get_double(v);
		if (json_object_object_get_ex(by, "root", &v))
			snprintf(why, wl, "flame graph root: %lld samples",
				 (long long)json_object_get_int64(v));
	} else {
		snprintf(why, wl, "no t_ready in the driver's output");
	}
	json_object_put(out);
	return ms;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"spanprof", required_argument, NULL, 's'},
	    {"dir", required_argument, NULL, 'd'},
	    {"samples", required_argument, NULL, 'n'},
	    {"files", required_argument, NULL, 'f'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"browser", required_argument, NULL, 'b'},
	    {0},
	};
	const char *spanprof = "build/spanprof", *dir = "build/bench/view-data";
	const char *driver = "integration/view_browser.mjs";
	uint64_t events = 1000000, seen;
	unsigned files = 12, rounds = 3;
	double *base, *base_cpu, *wall, *cpu, *rss, t, c0, gen_s, b_ms;
	size_t in_bytes = 0;
	char page[4096], why[512] = "";
	struct gen *g = xcalloc(1, sizeof(*g));
	struct run r;
	struct stat sb;
	int c;

	while ((c = getopt_long(argc, argv, "s:d:n:f:r:b:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			spanprof = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'n':
			events = strtoull(optarg, NULL, 10);
			break;
		case 'f':
			files = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			driver = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: %s [--spanprof BIN] [--dir DIR] [--samples N] "
				"[--files N] [--rounds N] [--browser DRIVER|none]\n",
				argv[0]);
			return 2;
		}
	}
	if (!events || !files || !rounds)
		return 2;
	if (mkdir(dir, 0755) && errno != EEXIST)
		die(dir);

	t = now_s();
	build_dict(g);
	for (unsigned i = 0; i < files; i++)
		in_bytes +=
		    write_request(g, dir, i, files, events / files + (i < events % files ? 1 : 0));
	gen_s = now_s() - t;
	snprintf(page, sizeof(page), "%s/profile.html", dir);

	base = xcalloc(rounds, sizeof(double));
	base_cpu = xcalloc(rounds, sizeof(double));
	wall = xcalloc(rounds, sizeof(double));
	cpu = xcalloc(rounds, sizeof(double));
	rss = xcalloc(rounds, sizeof(double));
	seen = decode_all(dir, files); /* warms the page cache */
	for (unsigned i = 0; i < rounds; i++) {
		t = now_s();
		c0 = cpu_s();
		decode_all(dir, files);
		base[i] = now_s() - t;
		base_cpu[i] = cpu_s() - c0;
	}
	for (unsigned i = 0; i < rounds; i++) {
		run_view(spanprof, dir, page, &r);
		if (r.status) {
			fprintf(stderr, "bench/view: %s view exited with %d: %s", spanprof,
				r.status, r.summary);
			return 1;
		}
		wall[i] = r.wall;
		cpu[i] = r.cpu;
		rss[i] = r.rss_mib;
	}
	if (stat(page, &sb))
		die(page);

	printf("\nInput: %llu samples (timestamps) in %u OTLP requests, %.1f MiB, %d processes, "
	       "%d threads, %d stacks, %d spans; written in %.2f s\n",
	       (unsigned long long)seen, files, in_bytes / 1048576.0, NPROC, NPROC * NTHREAD,
	       NSTACK, NSPAN, gen_s);
	printf("%s", r.summary);
	printf("\n| what (median of %u) | wall s | CPU s | peak RSS MiB |\n", rounds);
	printf("| --- | ---: | ---: | ---: |\n");
	printf("| baseline: read + protobuf-c decode | %.3f | %.3f | - |\n",
	       median(base, (int)rounds), median(base_cpu, (int)rounds));
	printf("| spanprof view (page written) | %.3f | %.3f | %.1f |\n", median(wall, (int)rounds),
	       median(cpu, (int)rounds), median(rss, (int)rounds));
	printf("\nview / baseline: %.2fx wall, %.2fx CPU; page %.1f MiB (%.1f bytes per sample)\n",
	       median(wall, (int)rounds) / median(base, (int)rounds),
	       median(cpu, (int)rounds) / median(base_cpu, (int)rounds), sb.st_size / 1048576.0,
	       (double)sb.st_size / (double)seen);

	if (!strcmp(driver, "none")) {
		printf("browser first render: skipped (--browser none)\n");
		return 0;
	}
	b_ms = browser_ms(driver, page, why, sizeof(why));
	if (b_ms < 0)
		printf("browser first render: not measured: %s\n", why);
	else
		printf(
		    "browser first render (headless Chromium, navigation to first render): %.0f ms "
		    "(%s)\n",
		    b_ms, why);
	return 0;
}
