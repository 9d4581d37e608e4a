// SPDX-License-Identifier: Apache-2.0
/*
 * view: the document of `spanprof view` (docs/view-format.md): the merged tables, the time
 * buckets and the aggregated rows, its JSON writer, and the command that writes the page or
 * serves it on loopback.
 *
 * Every table is an array plus an open-addressing index of (hash, element index + 1), so the
 * arrays can grow by realloc. Samples with a timestamp are kept as events (series, time,
 * value) until the last input is read: only then is the time range, hence the bucket width,
 * known. view_doc__finish() then groups the events by series (a counting sort) and sums each
 * series' buckets into rows.
 */
#include <argp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "view/doc.h"
#include "view/jsonbuf.h"

/* --- growable arrays and the index -------------------------------------------------------- */

/* Makes room for @need elements of @el bytes in *@pp. 0 or -ENOMEM (-EOVERFLOW past int32). */
static int grow(void *pp, size_t *cap, size_t need, size_t el)
{
	void **p = pp, *n;
	size_t c;

	if (need <= *cap)
		return 0;
	if (need > INT32_MAX)
		return -EOVERFLOW; /* indices are int32 in the document */
	c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	n = realloc(*p, c * el);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

struct slot {
	uint32_t hash;
	uint32_t idx1; /* element index + 1; 0: free */
};

struct itab {
	struct slot *s;
	uint32_t mask, n;
};

typedef bool (*eq_fn)(const struct view_doc *d, uint32_t idx, const void *key);

/* Room for one more entry at load <= 1/2. 0 or -ENOMEM. */
static int itab_reserve(struct itab *t)
{
	uint32_t cap = t->s ? t->mask + 1 : 0, ncap;
	struct slot *ns;

	if (t->s && (t->n + 1) * 2 <= cap)
		return 0;
	ncap = cap ? cap * 2 : 64;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (uint32_t i = 0; i < cap; i++) {
		uint32_t j;

		if (!t->s[i].idx1)
			continue;
		for (j = t->s[i].hash & (ncap - 1); ns[j].idx1; j = (j + 1) & (ncap - 1))
			;
		ns[j] = t->s[i];
	}
	free(t->s);
	t->s = ns;
	t->mask = ncap - 1;
	return 0;
}

/* The slot of @key: taken (idx1 != 0) if present, else the free slot to insert it at. */
static struct slot *itab_probe(const struct itab *t, uint32_t h, eq_fn eq, const struct view_doc *d,
			       const void *key)
{
	for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
		struct slot *s = &t->s[i];

		if (!s->idx1 || (s->hash == h && eq(d, s->idx1 - 1, key)))
			return s;
	}
}

static void itab_set(struct itab *t, struct slot *s, uint32_t h, uint32_t idx)
{
	s->hash = h;
	s->idx1 = idx + 1;
	t->n++;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint32_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	w = 0;
	if (n)
		memcpy(&w, b, n);
	return (uint32_t)mix64(h ^ w);
}

/* --- the document ------------------------------------------------------------------------- */

/* Keys are padding-free so that they hash and compare as bytes. */
struct frame {
	int32_t name, file, module, kind;
	int32_t type, zero; /* zero: no padding */
	int64_t line;
};

struct ptype {
	int32_t sample_type, unit, period_type, period_unit; /* the key */
	int32_t name;
	int64_t period;
};

struct proc {
	int32_t service, name; /* service: index in services */
	int64_t pid;
};

struct thread {
	int32_t process, name;
	int64_t tid;
};

struct span_attr {
	int32_t key, value;
};

struct span {
	uint8_t ids[24]; /* trace id, span id: the key */
	int32_t process;
	int32_t tspan; /* its entry in the traces files, -1 none (view_doc__finish) */
	uint32_t nattrs;
	size_t cap_attrs;
	struct span_attr *attrs;
};

/* A span of a traces file (view_doc__trace_span). */
struct tspan {
	uint8_t ids[24]; /* trace id, span id: the key */
	uint8_t parent[8];
	bool has_parent;
	uint32_t input; /* the input that first named it */
	int32_t name, service;
	uint64_t start_ns, end_ns;
};

struct series {
	int32_t type, stack, thread, span; /* the key */
	uint32_t nevents;
	bool has_untimed;
	int64_t untimed; /* sum of the values without a timestamp */
};

struct view_doc {
	/* strings: NUL-terminated in one pool */
	char *pool;
	size_t pool_n, pool_cap;
	struct strent {
		size_t off;
		size_t len;
	} * strs;
	size_t nstr, cap_str;
	struct itab str_ix;

	struct frame *frames;
	size_t nframes, cap_frames;
	struct itab frame_ix;

	int32_t *stack_pool; /* frames of every stack, back to back */
	size_t stack_pool_n, stack_pool_cap;
	struct stackent {
		size_t first;
		size_t len;
	} * stacks;
	size_t nstacks, cap_stacks;
	struct itab stack_ix;

	struct ptype *types;
	size_t ntypes, cap_types;
	struct itab type_ix;

	int32_t *services; /* string indices */
	size_t nservices, cap_services;
	struct itab service_ix;

	struct proc *procs;
	size_t nprocs, cap_procs;
	struct itab proc_ix;

	struct thread *threads;
	size_t nthreads, cap_threads;
	struct itab thread_ix;

	struct span *spans;
	size_t nspans, cap_spans;
	struct itab span_ix;

	struct tspan *tspans;
	size_t ntspans, cap_tspans;
	struct itab tspan_ix;

	struct series *series;
	size_t nseries, cap_series;
	struct itab series_ix;

	/* timestamped samples, until view_doc__finish */
	uint32_t *ev_series;
	uint64_t *ev_ts;
	int64_t *ev_value;
	size_t nev, cap_ev;
	uint64_t tmin, tmax;

	struct view_input *inputs;
	size_t ninputs, cap_inputs;
	bool in_input;

	/* view_doc__finish */
	bool finished;
	uint64_t generated_ns, start_ns, bucket_ns;
	uint32_t nbuckets;
	int32_t *r_type, *r_stack, *r_thread, *r_span, *r_bucket;
	int64_t *r_value;
	size_t nrows;

	char *initial_span, *initial_trace;
};

struct strkey {
	const char *s;
	size_t len;
};

static bool str_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	const struct strkey *k = key;

	return d->strs[i].len == k->len && !memcmp(d->pool + d->strs[i].off, k->s, k->len);
}

int32_t view_doc__string(struct view_doc *d, const char *s, size_t len)
{
	struct strkey k = {.s = s ? s : "", .len = s ? len : 0};
	uint32_t h = hash_bytes(k.s, k.len);
	struct slot *sl;
	int err;

	err = itab_reserve(&d->str_ix);
	if (err)
		return err;
	sl = itab_probe(&d->str_ix, h, str_eq, d, &k);
	if (sl->idx1)
		return (int32_t)(sl->idx1 - 1);
	err = grow(&d->strs, &d->cap_str, d->nstr + 1, sizeof(*d->strs));
	if (err)
		return err;
	if (d->pool_n + k.len + 1 > d->pool_cap) {
		size_t c = d->pool_cap ? d->pool_cap : 4096;
		char *np;

		while (c < d->pool_n + k.len + 1)
			c *= 2;
		np = realloc(d->pool, c);
		if (!np)
			return -ENOMEM;
		d->pool = np;
		d->pool_cap = c;
	}
	memcpy(d->pool + d->pool_n, k.s, k.len);
	d->pool[d->pool_n + k.len] = '\0';
	d->strs[d->nstr].off = d->pool_n;
	d->strs[d->nstr].len = k.len;
	d->pool_n += k.len + 1;
	itab_set(&d->str_ix, sl, h, (uint32_t)d->nstr);
	return (int32_t)d->nstr++;
}

const char *view_doc__string_text(const struct view_doc *d, int32_t i)
{
	return i >= 0 && (size_t)i < d->nstr ? d->pool + d->strs[i].off : "";
}

static int32_t string_z(struct view_doc *d, const char *s)
{
	return view_doc__string(d, s, s ? strlen(s) : 0);
}

static bool frame_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return !memcmp(&d->frames[i], key, sizeof(struct frame));
}

int32_t view_doc__frame(struct view_doc *d, int32_t name, int32_t file, int64_t line,
			int32_t module, enum view_frame_kind kind, int32_t type)
{
	struct frame f = {
	    .name = name, .file = file, .module = module, .kind = kind, .type = type, .line = line};
	uint32_t h = hash_bytes(&f, sizeof(f));
	struct slot *sl;
	int err = itab_reserve(&d->frame_ix);

	if (err)
		return err;
	sl = itab_probe(&d->frame_ix, h, frame_eq, d, &f);
	if (sl->idx1)
		return (int32_t)(sl->idx1 - 1);
	err = grow(&d->frames, &d->cap_frames, d->nframes + 1, sizeof(*d->frames));
	if (err)
		return err;
	d->frames[d->nframes] = f;
	itab_set(&d->frame_ix, sl, h, (uint32_t)d->nframes);
	return (int32_t)d->nframes++;
}

struct stackkey {
	const int32_t *frames;
	uint32_t n;
};

static bool stack_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	const struct stackkey *k = key;

	return d->stacks[i].len == k->n && (!k->n || !memcmp(d->stack_pool + d->stacks[i].first,
							     k->frames, k->n * sizeof(int32_t)));
}

int32_t view_doc__stack(struct view_doc *d, const int32_t *frames, uint32_t n)
{
	struct stackkey k = {.frames = frames, .n = n};
	uint32_t h = hash_bytes(frames, n * sizeof(int32_t));
	struct slot *sl;
	int err = itab_reserve(&d->stack_ix);

	if (err)
		return err;
	sl = itab_probe(&d->stack_ix, h, stack_eq, d, &k);
	if (sl->idx1)
		return (int32_t)(sl->idx1 - 1);
	if (d->stack_pool_n + n > d->stack_pool_cap) {
		size_t c = d->stack_pool_cap ? d->stack_pool_cap : 4096;
		int32_t *np;

		while (c < d->stack_pool_n + n)
			c *= 2;
		np = realloc(d->stack_pool, c * sizeof(*np));
		if (!np)
			return -ENOMEM;
		d->stack_pool = np;
		d->stack_pool_cap = c;
	}
	err = grow(&d->stacks, &d->cap_stacks, d->nstacks + 1, sizeof(*d->stacks));
	if (err)
		return err;
	if (n)
		memcpy(d->stack_pool + d->stack_pool_n, frames, n * sizeof(int32_t));
	d->stacks[d->nstacks].first = d->stack_pool_n;
	d->stacks[d->nstacks].len = n;
	d->stack_pool_n += n;
	itab_set(&d->stack_ix, sl, h, (uint32_t)d->nstacks);
	return (int32_t)d->nstacks++;
}

static bool type_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return !memcmp(&d->types[i], key, 4 * sizeof(int32_t));
}

int32_t view_doc__profile_type(struct view_doc *d, const char *sample_type, const char *unit,
			       const char *period_type, const char *period_unit, int64_t period)
{
	struct ptype t = {
	    .sample_type = string_z(d, sample_type),
	    .unit = string_z(d, unit),
	    .period_type = string_z(d, period_type),
	    .period_unit = string_z(d, period_unit),
	};
	uint32_t h;
	struct slot *sl;
	bool cpu;
	int err;

	if (t.sample_type < 0 || t.unit < 0 || t.period_type < 0 || t.period_unit < 0)
		return -ENOMEM;
	h = hash_bytes(&t, 4 * sizeof(int32_t));
	err = itab_reserve(&d->type_ix);
	if (err)
		return err;
	sl = itab_probe(&d->type_ix, h, type_eq, d, &t);
	if (sl->idx1) {
		struct ptype *old = &d->types[sl->idx1 - 1];

		if (!old->period)
			old->period = period;
		return (int32_t)(sl->idx1 - 1);
	}
	/* docs/view-format.md: CPU samples are "cpu", anything else is named by its type. */
	cpu = sample_type && !strcmp(sample_type, "samples") && unit && !strcmp(unit, "count") &&
	      period_type && !strcmp(period_type, "cpu") && period_unit &&
	      !strcmp(period_unit, "nanoseconds");
	t.name = cpu ? string_z(d, "cpu")
		     : (sample_type && *sample_type ? t.sample_type : string_z(d, "samples"));
	if (t.name < 0)
		return -ENOMEM;
	t.period = period;
	err = grow(&d->types, &d->cap_types, d->ntypes + 1, sizeof(*d->types));
	if (err)
		return err;
	d->types[d->ntypes] = t;
	itab_set(&d->type_ix, sl, h, (uint32_t)d->ntypes);
	return (int32_t)d->ntypes++;
}

static bool service_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return d->services[i] == *(const int32_t *)key;
}

static int32_t service_index(struct view_doc *d, int32_t name)
{
	uint32_t h = hash_bytes(&name, sizeof(name));
	struct slot *sl;
	int err = itab_reserve(&d->service_ix);

	if (err)
		return err;
	sl = itab_probe(&d->service_ix, h, service_eq, d, &name);
	if (sl->idx1)
		return (int32_t)(sl->idx1 - 1);
	err = grow(&d->services, &d->cap_services, d->nservices + 1, sizeof(*d->services));
	if (err)
		return err;
	d->services[d->nservices] = name;
	itab_set(&d->service_ix, sl, h, (uint32_t)d->nservices);
	return (int32_t)d->nservices++;
}

static bool proc_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return !memcmp(&d->procs[i], key, sizeof(struct proc));
}

int32_t view_doc__process(struct view_doc *d, int32_t service, int64_t pid, int32_t name)
{
	struct proc p = {.name = name, .pid = pid};
	uint32_t h;
	struct slot *sl;
	int err;

	p.service = service_index(d, service);
	if (p.service < 0)
		return p.service;
	h = hash_bytes(&p, sizeof(p));
	err = itab_reserve(&d->proc_ix);
	if (err)
		return err;
	sl = itab_probe(&d->proc_ix, h, proc_eq, d, &p);
	if (sl->idx1)
		return (int32_t)(sl->idx1 - 1);
	err = grow(&d->procs, &d->cap_procs, d->nprocs + 1, sizeof(*d->procs));
	if (err)
		return err;
	d->procs[d->nprocs] = p;
	itab_set(&d->proc_ix, sl, h, (uint32_t)d->nprocs);
	return (int32_t)d->nprocs++;
}

static bool thread_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return !memcmp(&d->threads[i], key, sizeof(struct thread));
}

int32_t view_doc__thread(struct view_doc *d, int32_t process, int64_t tid, int32_t name)
{
	struct thread t = {.process = process, .name = name, .tid = tid};
	uint32_t h = hash_bytes(&t, sizeof(t));
	struct slot *sl;
	int err = itab_reserve(&d->thread_ix);

	if (err)
		return err;
	sl = itab_probe(&d->thread_ix, h, thread_eq, d, &t);
	if (sl->idx1)
		return (int32_t)(sl->idx1 - 1);
	err = grow(&d->threads, &d->cap_threads, d->nthreads + 1, sizeof(*d->threads));
	if (err)
		return err;
	d->threads[d->nthreads] = t;
	itab_set(&d->thread_ix, sl, h, (uint32_t)d->nthreads);
	return (int32_t)d->nthreads++;
}

static bool span_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return !memcmp(d->spans[i].ids, key, sizeof(d->spans[i].ids));
}

int32_t view_doc__span(struct view_doc *d, const uint8_t trace_id[16], const uint8_t span_id[8],
		       int32_t process)
{
	uint8_t ids[24];
	uint32_t h;
	struct slot *sl;
	int err;

	memcpy(ids, trace_id, 16);
	memcpy(ids + 16, span_id, 8);
	h = hash_bytes(ids, sizeof(ids));
	err = itab_reserve(&d->span_ix);
	if (err)
		return err;
	sl = itab_probe(&d->span_ix, h, span_eq, d, ids);
	if (sl->idx1) {
		struct span *s = &d->spans[sl->idx1 - 1];

		if (s->process != process)
			s->process = -1; /* one span id in two processes: say unknown */
		return (int32_t)(sl->idx1 - 1);
	}
	err = grow(&d->spans, &d->cap_spans, d->nspans + 1, sizeof(*d->spans));
	if (err)
		return err;
	memset(&d->spans[d->nspans], 0, sizeof(d->spans[0]));
	memcpy(d->spans[d->nspans].ids, ids, sizeof(ids));
	d->spans[d->nspans].process = process;
	itab_set(&d->span_ix, sl, h, (uint32_t)d->nspans);
	return (int32_t)d->nspans++;
}

int view_doc__span_attr(struct view_doc *d, int32_t span, int32_t key, int32_t value)
{
	struct span *s;
	int err;

	if (span < 0 || (size_t)span >= d->nspans)
		return -EINVAL;
	s = &d->spans[span];
	for (uint32_t i = 0; i < s->nattrs; i++)
		if (s->attrs[i].key == key)
			return 0;
	err = grow(&s->attrs, &s->cap_attrs, s->nattrs + 1, sizeof(*s->attrs));
	if (err)
		return err;
	s->attrs[s->nattrs++] = (struct span_attr){.key = key, .value = value};
	return 0;
}

static bool zero8(const uint8_t *p)
{
	static const uint8_t zero[8];

	return !memcmp(p, zero, 8);
}

static bool tspan_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return !memcmp(d->tspans[i].ids, key, sizeof(d->tspans[i].ids));
}

int view_doc__trace_span(struct view_doc *d, const uint8_t trace_id[16], const uint8_t span_id[8],
			 const struct view_trace_span *t)
{
	uint8_t ids[24];
	struct tspan *ts;
	struct slot *sl;
	uint32_t h;
	int err;

	memcpy(ids, trace_id, 16);
	memcpy(ids + 16, span_id, 8);
	h = hash_bytes(ids, sizeof(ids));
	err = itab_reserve(&d->tspan_ix);
	if (err)
		return err;
	sl = itab_probe(&d->tspan_ix, h, tspan_eq, d, ids);
	if (sl->idx1) {
		ts = &d->tspans[sl->idx1 - 1];
	} else {
		err = grow(&d->tspans, &d->cap_tspans, d->ntspans + 1, sizeof(*d->tspans));
		if (err)
			return err;
		ts = &d->tspans[d->ntspans];
		memset(ts, 0, sizeof(*ts));
		memcpy(ts->ids, ids, sizeof(ids));
		ts->input = d->in_input ? (uint32_t)d->ninputs - 1 : UINT32_MAX;
		itab_set(&d->tspan_ix, sl, h, (uint32_t)d->ntspans++);
	}
	if (d->in_input)
		d->inputs[d->ninputs - 1].spans++;
	/* A span written twice (a retried export): the first value of each field wins. */
	if (!ts->name)
		ts->name = t->name;
	if (!ts->service)
		ts->service = t->service;
	if (!ts->start_ns && !ts->end_ns && t->start_unix_ns &&
	    t->end_unix_ns >= t->start_unix_ns) {
		ts->start_ns = t->start_unix_ns;
		ts->end_ns = t->end_unix_ns;
	}
	if (!ts->has_parent && t->parent_span_id && !zero8(t->parent_span_id)) {
		memcpy(ts->parent, t->parent_span_id, 8);
		ts->has_parent = true;
	}
	return 0;
}

/* Finds the entry of each span of the samples in the traces files; counts the matches. */
static void match_spans(struct view_doc *d)
{
	for (size_t i = 0; i < d->nspans; i++) {
		struct span *s = &d->spans[i];
		const struct slot *sl;

		s->tspan = -1;
		if (!d->ntspans)
			continue;
		sl = itab_probe(&d->tspan_ix, hash_bytes(s->ids, sizeof(s->ids)), tspan_eq, d,
				s->ids);
		if (!sl->idx1)
			continue;
		s->tspan = (int32_t)(sl->idx1 - 1);
		if (d->tspans[s->tspan].input < d->ninputs)
			d->inputs[d->tspans[s->tspan].input].spans_matched++;
	}
}

static bool series_eq(const struct view_doc *d, uint32_t i, const void *key)
{
	return !memcmp(&d->series[i], key, 4 * sizeof(int32_t));
}

int32_t view_doc__series(struct view_doc *d, int32_t type, int32_t stack, int32_t thread,
			 int32_t span)
{
	struct series s = {.type = type, .stack = stack, .thread = thread, .span = span};
	uint32_t h = hash_bytes(&s, 4 * sizeof(int32_t));
	struct slot *sl;
	int err;

	if (d->finished)
		return -EINVAL;
	err = itab_reserve(&d->series_ix);
	if (err)
		return err;
	sl = itab_probe(&d->series_ix, h, series_eq, d, &s);
	if (sl->idx1)
		return (int32_t)(sl->idx1 - 1);
	err = grow(&d->series, &d->cap_series, d->nseries + 1, sizeof(*d->series));
	if (err)
		return err;
	d->series[d->nseries] = s;
	itab_set(&d->series_ix, sl, h, (uint32_t)d->nseries);
	return (int32_t)d->nseries++;
}

int view_doc__add(struct view_doc *d, int32_t series, int64_t value, uint64_t ts_unix_nano,
		  uint64_t samples)
{
	struct series *s;

	if (series < 0 || (size_t)series >= d->nseries || d->finished)
		return -EINVAL;
	s = &d->series[series];
	if (!ts_unix_nano) {
		s->has_untimed = true;
		s->untimed += value;
	} else {
		if (d->nev == d->cap_ev) {
			size_t c = d->cap_ev ? 2 * d->cap_ev : 65536;
			uint32_t *es = realloc(d->ev_series, c * sizeof(*es));
			uint64_t *et;
			int64_t *evv;

			if (!es)
				return -ENOMEM;
			d->ev_series = es;
			et = realloc(d->ev_ts, c * sizeof(*et));
			if (!et)
				return -ENOMEM;
			d->ev_ts = et;
			evv = realloc(d->ev_value, c * sizeof(*evv));
			if (!evv)
				return -ENOMEM;
			d->ev_value = evv;
			d->cap_ev = c;
		}
		d->ev_series[d->nev] = (uint32_t)series;
		d->ev_ts[d->nev] = ts_unix_nano;
		d->ev_value[d->nev++] = value;
		s->nevents++;
		if (d->nev == 1 || ts_unix_nano < d->tmin)
			d->tmin = ts_unix_nano;
		if (ts_unix_nano > d->tmax)
			d->tmax = ts_unix_nano;
	}
	if (d->in_input)
		d->inputs[d->ninputs - 1].samples += samples;
	return 0;
}

/* --- inputs ------------------------------------------------------------------------------- */

int view_doc__input_begin(struct view_doc *d, const char *path)
{
	struct view_input *in;
	int err;

	if (d->in_input)
		view_doc__input_end(d, NULL, NULL);
	err = grow(&d->inputs, &d->cap_inputs, d->ninputs + 1, sizeof(*d->inputs));
	if (err)
		return err;
	in = &d->inputs[d->ninputs];
	memset(in, 0, sizeof(*in));
	in->path = strdup(path);
	if (!in->path)
		return -ENOMEM;
	d->ninputs++;
	d->in_input = true;
	return 0;
}

int view_doc__input_end(struct view_doc *d, const char *format, const char *error)
{
	struct view_input *in;

	if (!d->in_input)
		return -EINVAL;
	in = &d->inputs[d->ninputs - 1];
	d->in_input = false;
	in->format = format;
	if (error) {
		in->error = strdup(error);
		if (!in->error)
			return -ENOMEM;
	}
	return 0;
}

uint32_t view_doc__ninputs(const struct view_doc *d)
{
	return (uint32_t)d->ninputs;
}

const struct view_input *view_doc__input(const struct view_doc *d, uint32_t i)
{
	return i < d->ninputs ? &d->inputs[i] : NULL;
}

uint64_t view_doc__nsamples(const struct view_doc *d)
{
	uint64_t n = 0;

	for (size_t i = 0; i < d->ninputs; i++)
		n += d->inputs[i].samples;
	return n;
}

uint32_t view_doc__nrows(const struct view_doc *d)
{
	return (uint32_t)d->nrows;
}

uint32_t view_doc__nservices(const struct view_doc *d)
{
	return (uint32_t)d->nservices;
}

/* --- lifecycle ---------------------------------------------------------------------------- */

struct view_doc *view_doc__new(void)
{
	struct view_doc *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (view_doc__string(d, "", 0) != 0) {
		view_doc__free(d);
		errno = ENOMEM;
		return NULL;
	}
	return d;
}

void view_doc__free(struct view_doc *d)
{
	if (!d)
		return;
	free(d->pool);
	free(d->strs);
	free(d->str_ix.s);
	free(d->frames);
	free(d->frame_ix.s);
	free(d->stack_pool);
	free(d->stacks);
	free(d->stack_ix.s);
	free(d->types);
	free(d->type_ix.s);
	free(d->services);
	free(d->service_ix.s);
	free(d->procs);
	free(d->proc_ix.s);
	free(d->threads);
	free(d->thread_ix.s);
	for (size_t i = 0; i < d->nspans; i++)
		free(d->spans[i].attrs);
	free(d->spans);
	free(d->span_ix.s);
	free(d->tspans);
	free(d->tspan_ix.s);
	free(d->series);
	free(d->series_ix.s);
	free(d->ev_series);
	free(d->ev_ts);
	free(d->ev_value);
	for (size_t i = 0; i < d->ninputs; i++) {
		free(d->inputs[i].path);
		free(d->inputs[i].error);
	}
	free(d->inputs);
	free(d->r_type);
	free(d->r_stack);
	free(d->r_thread);
	free(d->r_span);
	free(d->r_bucket);
	free(d->r_value);
	free(d->initial_span);
	free(d->initial_trace);
	free(d);
}

int view_doc__set_initial(struct view_doc *d, const char *span_id, const char *trace_id)
{
	free(d->initial_span);
	free(d->initial_trace);
	d->initial_span = span_id ? strdup(span_id) : NULL;
	d->initial_trace = trace_id ? strdup(trace_id) : NULL;
	if ((span_id && !d->initial_span) || (trace_id && !d->initial_trace))
		return -ENOMEM;
	return 0;
}

/* --- time buckets and rows ---------------------------------------------------------------- */

static int cmp_u8(const void *a, const void *b)
{
	return (int)*(const uint8_t *)a - (int)*(const uint8_t *)b;
}

static void row_put(struct view_doc *d, const struct series *s, int32_t bucket, int64_t value)
{
	size_t r = d->nrows++;

	d->r_type[r] = s->type;
	d->r_stack[r] = s->stack;
	d->r_thread[r] = s->thread;
	d->r_span[r] = s->span;
	d->r_bucket[r] = bucket;
	d->r_value[r] = value;
}

int view_doc__finish(struct view_doc *d)
{
	size_t maxrows = d->nseries + d->nev, *first = NULL;
	uint8_t *bucket = NULL, *order_b = NULL, touched[VIEW_MAX_BUCKETS];
	int64_t *order_v = NULL, acc[VIEW_MAX_BUCKETS];
	bool seen[VIEW_MAX_BUCKETS];
	int err = -ENOMEM;

	struct timespec now;

	if (d->finished)
		return -EINVAL;
	if (d->in_input)
		view_doc__input_end(d, NULL, NULL);
	match_spans(d);
	clock_gettime(CLOCK_REALTIME, &now);
	d->generated_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	d->bucket_ns = VIEW_MIN_BUCKET_NS;
	if (d->nev) {
		uint64_t range, bw;

		/* Whole milliseconds from a whole millisecond, so that bucket edges read well. */
		d->start_ns = d->tmin - d->tmin % VIEW_MIN_BUCKET_NS;
		range = d->tmax - d->start_ns + 1;
		bw = (range + VIEW_MAX_BUCKETS - 1) / VIEW_MAX_BUCKETS;
		bw = (bw + VIEW_MIN_BUCKET_NS - 1) / VIEW_MIN_BUCKET_NS * VIEW_MIN_BUCKET_NS;
		d->bucket_ns = bw;
		d->nbuckets = (uint32_t)((range + bw - 1) / bw);
	}
	d->r_type = malloc((maxrows + 1) * sizeof(int32_t));
	d->r_stack = malloc((maxrows + 1) * sizeof(int32_t));
	d->r_thread = malloc((maxrows + 1) * sizeof(int32_t));
	d->r_span = malloc((maxrows + 1) * sizeof(int32_t));
	d->r_bucket = malloc((maxrows + 1) * sizeof(int32_t));
	d->r_value = malloc((maxrows + 1) * sizeof(int64_t));
	first = malloc((d->nseries + 1) * sizeof(*first));
	bucket = malloc(d->nev + 1);
	order_b = malloc(d->nev + 1);
	order_v = malloc((d->nev + 1) * sizeof(*order_v));
	if (!d->r_type || !d->r_stack || !d->r_thread || !d->r_span || !d->r_bucket ||
	    !d->r_value || !first || !bucket || !order_b || !order_v)
		goto cleanup;

	for (size_t i = 0; i < d->nev; i++)
		bucket[i] = (uint8_t)((d->ev_ts[i] - d->start_ns) / d->bucket_ns);
	/* Events grouped by series (counting sort), then each series' buckets summed. */
	first[0] = 0;
	for (size_t s = 0; s < d->nseries; s++)
		first[s + 1] = first[s] + d->series[s].nevents;
	for (size_t i = 0; i < d->nev; i++) {
		size_t at = first[d->ev_series[i]]++;

		order_b[at] = bucket[i];
		order_v[at] = d->ev_value[i];
	}
	memset(seen, 0, sizeof(seen));
	for (size_t s = 0, at = 0; s < d->nseries; s++) {
		const struct series *se = &d->series[s];
		uint32_t nt = 0;

		if (se->has_untimed)
			row_put(d, se, -1, se->untimed);
		for (uint32_t k = 0; k < se->nevents; k++, at++) {
			uint8_t b = order_b[at];

			if (!seen[b]) {
				seen[b] = true;
				acc[b] = 0;
				touched[nt++] = b;
			}
			acc[b] += order_v[at];
		}
		qsort(touched, nt, 1, cmp_u8);
		for (uint32_t k = 0; k < nt; k++) {
			row_put(d, se, touched[k], acc[touched[k]]);
			seen[touched[k]] = false;
		}
	}
	free(d->ev_series);
	free(d->ev_ts);
	free(d->ev_value);
	d->ev_series = NULL;
	d->ev_ts = NULL;
	d->ev_value = NULL;
	free(d->series_ix.s); /* no series after this */
	memset(&d->series_ix, 0, sizeof(d->series_ix));
	d->finished = true;
	err = 0;
cleanup:
	free(first);
	free(bucket);
	free(order_b);
	free(order_v);
	return err;
}

/* --- JSON (the text buffer: view/jsonbuf.h) -------------------------------------------------- */

/* The address of field @f of the first element of @arr (NULL for an empty table). */
#define COL(arr, f) ((arr) ? (const void *)&(arr)->f : NULL)

static void vb_sidx(struct jsonbuf *b, const struct view_doc *d, int32_t i)
{
	jsonbuf__jstr(b, d->pool + d->strs[i].off, d->strs[i].len);
}

/* "1234", "12.3k", "1.2M": the title's sample count. */
static void count_text(char *out, size_t n, uint64_t v)
{
	if (v < 10000)
		snprintf(out, n, "%llu", (unsigned long long)v);
	else if (v < 1000000)
		snprintf(out, n, "%.1fk", v / 1e3);
	else if (v < 1000000000)
		snprintf(out, n, "%.1fM", v / 1e6);
	else
		snprintf(out, n, "%.1fG", v / 1e9);
}

static void write_title(struct jsonbuf *b, const struct view_doc *d)
{
	char title[160], num[32];
	uint64_t n = view_doc__nsamples(d);

	count_text(num, sizeof(num), n);
	snprintf(title, sizeof(title), "spanprof: %zu input%s, %zu service%s, %s sample%s",
		 d->ninputs, d->ninputs == 1 ? "" : "s", d->nservices, d->nservices == 1 ? "" : "s",
		 num, n == 1 ? "" : "s");
	jsonbuf__key(b, "title");
	jsonbuf__jstr(b, title, strlen(title));
}

static void write_inputs(struct jsonbuf *b, const struct view_doc *d)
{
	jsonbuf__key(b, "inputs");
	jsonbuf__ch(b, '[');
	for (size_t i = 0; i < d->ninputs; i++) {
		const struct view_input *in = &d->inputs[i];

		jsonbuf__lit(b, i ? ",\n{" : "\n{");
		jsonbuf__key(b, "path");
		jsonbuf__jstr(b, in->path, strlen(in->path));
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "format");
		if (in->format)
			jsonbuf__jstr(b, in->format, strlen(in->format));
		else
			jsonbuf__lit(b, "null");
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "samples");
		jsonbuf__u64(b, in->samples);
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "error");
		if (in->error)
			jsonbuf__jstr(b, in->error, strlen(in->error));
		else
			jsonbuf__lit(b, "null");
		if (in->spans) {
			jsonbuf__ch(b, ',');
			jsonbuf__key(b, "spans");
			jsonbuf__u64(b, in->spans);
			jsonbuf__ch(b, ',');
			jsonbuf__key(b, "spans_matched");
			jsonbuf__u64(b, in->spans_matched);
		}
		jsonbuf__ch(b, '}');
	}
	jsonbuf__ch(b, ']');
}

static void write_tables(struct jsonbuf *b, const struct view_doc *d)
{
	jsonbuf__key(b, "strings");
	jsonbuf__ch(b, '[');
	for (size_t i = 0; i < d->nstr; i++) {
		if (i)
			jsonbuf__lit(b, i % 64 ? "," : ",\n");
		vb_sidx(b, d, (int32_t)i);
	}
	jsonbuf__lit(b, "],\n");

	jsonbuf__lit(b, "\"frames\":{");
	jsonbuf__col32(b, "name", COL(d->frames, name), d->nframes, sizeof(struct frame));
	jsonbuf__ch(b, ',');
	jsonbuf__col32(b, "file", COL(d->frames, file), d->nframes, sizeof(struct frame));
	jsonbuf__ch(b, ',');
	jsonbuf__col64(b, "line", COL(d->frames, line), d->nframes, sizeof(struct frame));
	jsonbuf__ch(b, ',');
	jsonbuf__col32(b, "module", COL(d->frames, module), d->nframes, sizeof(struct frame));
	jsonbuf__ch(b, ',');
	jsonbuf__col32(b, "kind", COL(d->frames, kind), d->nframes, sizeof(struct frame));
	jsonbuf__ch(b, ',');
	jsonbuf__col32(b, "type", COL(d->frames, type), d->nframes, sizeof(struct frame));
	jsonbuf__lit(b, "},\n");

	jsonbuf__key(b, "stacks");
	jsonbuf__ch(b, '[');
	for (size_t i = 0; i < d->nstacks; i++) {
		const int32_t *f = d->stack_pool + d->stacks[i].first;

		jsonbuf__lit(b, i ? ",[" : "[");
		for (size_t j = 0; j < d->stacks[i].len; j++) {
			if (j)
				jsonbuf__ch(b, ',');
			jsonbuf__i64(b, f[j]);
		}
		jsonbuf__ch(b, ']');
		if (i % 64 == 63)
			jsonbuf__ch(b, '\n');
	}
	jsonbuf__lit(b, "],\n");

	jsonbuf__key(b, "profile_types");
	jsonbuf__ch(b, '[');
	for (size_t i = 0; i < d->ntypes; i++) {
		const struct ptype *t = &d->types[i];

		jsonbuf__lit(b, i ? ",{" : "{");
		jsonbuf__key(b, "name");
		vb_sidx(b, d, t->name);
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "sample_type");
		vb_sidx(b, d, t->sample_type);
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "unit");
		vb_sidx(b, d, t->unit);
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "period_type");
		vb_sidx(b, d, t->period_type);
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "period_unit");
		vb_sidx(b, d, t->period_unit);
		jsonbuf__ch(b, ',');
		jsonbuf__key(b, "period");
		jsonbuf__i64(b, t->period);
		jsonbuf__ch(b, '}');
	}
	jsonbuf__lit(b, "],\n");

	jsonbuf__col32(b, "services", d->services, d->nservices, sizeof(int32_t));
	jsonbuf__lit(b, ",\n\"processes\":{");
	jsonbuf__col64(b, "pid", COL(d->procs, pid), d->nprocs, sizeof(struct proc));
	jsonbuf__ch(b, ',');
	jsonbuf__col32(b, "name", COL(d->procs, name), d->nprocs, sizeof(struct proc));
	jsonbuf__ch(b, ',');
	jsonbuf__col32(b, "service", COL(d->procs, service), d->nprocs, sizeof(struct proc));
	jsonbuf__lit(b, "},\n\"threads\":{");
	jsonbuf__col32(b, "process", COL(d->threads, process), d->nthreads, sizeof(struct thread));
	jsonbuf__ch(b, ',');
	jsonbuf__col64(b, "tid", COL(d->threads, tid), d->nthreads, sizeof(struct thread));
	jsonbuf__ch(b, ',');
	jsonbuf__col32(b, "name", COL(d->threads, name), d->nthreads, sizeof(struct thread));
	jsonbuf__lit(b, "},\n");
}

/* The optional span columns from the traces files (docs/view-format.md); 0 / null: unknown. */
static void write_span_traces(struct jsonbuf *b, const struct view_doc *d)
{
	static const char *const keys[] = {"name",	  "service",	 "start_unix_ns",
					   "end_unix_ns", "duration_ns", "parent_span_id"};

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		jsonbuf__lit(b, ",\n");
		jsonbuf__key(b, keys[k]);
		jsonbuf__ch(b, '[');
		for (size_t i = 0; i < d->nspans; i++) {
			const struct tspan *t =
			    d->spans[i].tspan >= 0 ? &d->tspans[d->spans[i].tspan] : NULL;

			if (i)
				jsonbuf__ch(b, ',');
			switch (k) {
			case 0:
				jsonbuf__i64(b, t ? t->name : 0);
				break;
			case 1:
				jsonbuf__i64(b, t ? t->service : 0);
				break;
			case 2:
				jsonbuf__u64(b, t ? t->start_ns : 0);
				break;
			case 3:
				jsonbuf__u64(b, t ? t->end_ns : 0);
				break;
			case 4:
				jsonbuf__u64(b, t ? t->end_ns - t->start_ns : 0);
				break;
			default:
				if (t && t->has_parent)
					jsonbuf__hex(b, t->parent, 8);
				else
					jsonbuf__lit(b, "null");
			}
		}
		jsonbuf__ch(b, ']');
	}
}

static void write_spans(struct jsonbuf *b, const struct view_doc *d)
{
	jsonbuf__lit(b, "\"spans\":{\"trace_id\":[");
	for (size_t i = 0; i < d->nspans; i++) {
		if (i)
			jsonbuf__ch(b, ',');
		jsonbuf__hex(b, d->spans[i].ids, 16);
	}
	jsonbuf__lit(b, "],\n\"span_id\":[");
	for (size_t i = 0; i < d->nspans; i++) {
		if (i)
			jsonbuf__ch(b, ',');
		jsonbuf__hex(b, d->spans[i].ids + 16, 8);
	}
	jsonbuf__lit(b, "],\n\"attrs\":[");
	for (size_t i = 0; i < d->nspans; i++) {
		const struct span *s = &d->spans[i];

		jsonbuf__lit(b, i ? ",{" : "{");
		for (uint32_t j = 0; j < s->nattrs; j++) {
			if (j)
				jsonbuf__ch(b, ',');
			vb_sidx(b, d, s->attrs[j].key);
			jsonbuf__ch(b, ':');
			vb_sidx(b, d, s->attrs[j].value);
		}
		jsonbuf__ch(b, '}');
	}
	jsonbuf__lit(b, "],\n");
	jsonbuf__col32(b, "process", COL(d->spans, process), d->nspans, sizeof(struct span));
	if (d->ntspans)
		write_span_traces(b, d);
	jsonbuf__lit(b, "},\n");
}

/* Appends the document to @b. */
static void doc_json(const struct view_doc *d, struct jsonbuf *bp)
{
	struct jsonbuf b = *bp;

	jsonbuf__lit(&b, "{\"format\":\"spanprof-view/1\",\n");
	write_title(&b, d);
	jsonbuf__lit(&b, ",\n\"generated_unix_ns\":");
	jsonbuf__u64(&b, d->generated_ns);
	jsonbuf__lit(&b, ",\n");
	write_inputs(&b, d);
	jsonbuf__lit(&b, ",\n");
	write_tables(&b, d);
	write_spans(&b, d);
	jsonbuf__lit(&b, "\"time\":{\"start_unix_ns\":");
	jsonbuf__u64(&b, d->start_ns);
	jsonbuf__lit(&b, ",\"bucket_ns\":");
	jsonbuf__u64(&b, d->bucket_ns);
	jsonbuf__lit(&b, ",\"buckets\":");
	jsonbuf__u64(&b, d->nbuckets);
	jsonbuf__lit(&b, "},\n\"rows\":{");
	jsonbuf__col32(&b, "type", d->r_type, d->nrows, sizeof(int32_t));
	jsonbuf__lit(&b, ",\n");
	jsonbuf__col32(&b, "stack", d->r_stack, d->nrows, sizeof(int32_t));
	jsonbuf__lit(&b, ",\n");
	jsonbuf__col32(&b, "thread", d->r_thread, d->nrows, sizeof(int32_t));
	jsonbuf__lit(&b, ",\n");
	jsonbuf__col32(&b, "span", d->r_span, d->nrows, sizeof(int32_t));
	jsonbuf__lit(&b, ",\n");
	jsonbuf__col32(&b, "bucket", d->r_bucket, d->nrows, sizeof(int32_t));
	jsonbuf__lit(&b, ",\n");
	jsonbuf__col64(&b, "value", d->r_value, d->nrows, sizeof(int64_t));
	jsonbuf__lit(&b, "},\n\"initial\":{\"span_id\":");
	if (d->initial_span)
		jsonbuf__jstr(&b, d->initial_span, strlen(d->initial_span));
	else
		jsonbuf__lit(&b, "null");
	jsonbuf__lit(&b, ",\"trace_id\":");
	if (d->initial_trace)
		jsonbuf__jstr(&b, d->initial_trace, strlen(d->initial_trace));
	else
		jsonbuf__lit(&b, "null");
	jsonbuf__lit(&b, "}}\n");
	*bp = b;
}

int view_doc__json(const struct view_doc *d, char **out, size_t *len)
{
	struct jsonbuf b = {0};

	if (!d->finished)
		return -EINVAL;
	doc_json(d, &b);
	return jsonbuf__finish(&b, out, len);
}

int view__page(const struct view_doc *d, const char *tmpl, size_t tlen, char **out, size_t *len)
{
	static const char token[] = VIEW_PAGE_TOKEN;
	const char *at = memmem(tmpl, tlen, token, sizeof(token) - 1);
	struct jsonbuf b = {0};
	size_t head;

	if (!at || !d->finished)
		return -EINVAL;
	head = (size_t)(at - tmpl);
	jsonbuf__put(&b, tmpl, head);
	doc_json(d, &b);
	jsonbuf__put(&b, at + sizeof(token) - 1, tlen - head - (sizeof(token) - 1));
	return jsonbuf__finish(&b, out, len);
}
