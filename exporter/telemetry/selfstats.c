/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfstats: the agent's own telemetry as log lines and as an OTLP metrics request
 * (selfstats.h, docs/self-telemetry.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "process/procmeta.h"
#include "telemetry/selfstats.h"

typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Metrics__V1__Metric Metric;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint NumberDataPoint;
typedef Opentelemetry__Proto__Metrics__V1__HistogramDataPoint HistogramDataPoint;

int selfstats__parse_log_level(const char *s)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};

	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcasecmp(s, names[i]))
			return i;
	if (!strcasecmp(s, "warning"))
		return SELFSTATS_LOG_WARN;
	return -EINVAL;
}

/* --- log lines --- */

static unsigned long long u(uint64_t v)
{
	return (unsigned long long)v;
}

void selfstats__log(FILE *f, const struct selfstats *st)
{
	const uint64_t *b = st->bpf;
	double up =
	    st->time_unix_ns > st->start_unix_ns ? (st->time_unix_ns - st->start_unix_ns) / 1e9 : 0;

	fprintf(f,
		"spanprof: info: stats samples uptime_s=%.1f recorded=%llu "
		"dropped.ringbuf_full=%llu dropped.out_of_memory=%llu idle=%llu filtered=%llu "
		"stack_error.kernel=%llu stack_error.user=%llu link_dropped=%llu",
		up, u(st->samples), u(selfstats_ringbuf_drops(st->bpf, st->profile_types)),
		u(st->samples_oom), u(b[SP_STAT_IDLE]), u(b[SP_STAT_FILTERED]),
		u(b[SP_STAT_KSTACK_ERR]), u(b[SP_STAT_USTACK_ERR]), u(st->link_drops));
	/* The event profile types (--profile alloc,lock,offcpu), when recorded. */
	for (uint32_t t = SP_PROF_CPU + 1; t < SP_PROF_NTYPES; t++)
		if (st->profile_types & (1u << t))
			fprintf(f, " recorded.%s=%llu dropped.%s=%llu", st->type_names[t],
				u(st->type_recorded[t]), st->type_names[t],
				u(b[sp_stat_type_drop(t)]));
	fputc('\n', f);
	if (st->cfi)
		fprintf(f,
			"spanprof: info: stats unwind cfi=%llu fp.no_table_yet=%llu fp.stale=%llu "
			"fp.no_registers=%llu stop.end=%llu stop.fp_end=%llu stop.no_mapping=%llu "
			"stop.no_table=%llu stop.unsupported=%llu stop.read_failed=%llu "
			"stop.bad_cfa=%llu stop.depth_limit=%llu stop.bad_return_address=%llu "
			"frames.cfi=%llu frames.fp=%llu "
			"events.dropped=%llu tables_refused=%llu procs_refused=%llu\n",
			u(b[SP_STAT_UNW_CFI]), u(b[SP_STAT_UNW_FP]), u(b[SP_STAT_UNW_STALE]),
			u(b[SP_STAT_UNW_NO_REGS]), u(b[SP_STAT_UNW_END]), u(b[SP_STAT_UNW_FP_END]),
			u(b[SP_STAT_UNW_NO_MAPPING]), u(b[SP_STAT_UNW_NO_TABLE]),
			u(b[SP_STAT_UNW_UNSUPPORTED]), u(b[SP_STAT_UNW_READ_FAILED]),
			u(b[SP_STAT_UNW_BAD_CFA]), u(b[SP_STAT_UNW_DEPTH]),
			u(b[SP_STAT_UNW_BAD_RA]), u(b[SP_STAT_UNW_FRAMES_CFI]),
			u(b[SP_STAT_UNW_FRAMES_FP]), u(b[SP_STAT_EVENT_DROP]),
			u(st->unwind_tables_refused), u(st->unwind_procs_refused));
	if (st->span_links)
		fprintf(f,
			"spanprof: info: stats span_links linked=%llu no_span=%llu not_valid=%llu "
			"zero_trace=%llu attrs_too_big=%llu read_failed=%llu unallocated=%llu "
			"stale=%llu\n",
			u(b[SP_STAT_CTX_LINKED]), u(b[SP_STAT_CTX_NO_SPAN]),
			u(b[SP_STAT_CTX_NOT_VALID]), u(b[SP_STAT_CTX_ZERO_TRACE]),
			u(b[SP_STAT_CTX_ATTRS_TOO_BIG]), u(b[SP_STAT_CTX_READ_FAILED]),
			u(b[SP_STAT_CTX_UNALLOCATED]), u(b[SP_STAT_CTX_STALE]));
	fprintf(f,
		"spanprof: info: stats symbols miss.unmapped=%llu miss.no_symbol=%llu "
		"miss.kernel=%llu maps_unreadable=%llu files_unopenable=%llu cache_mb=%.1f "
		"fileid.samples=%llu fileid.named=%llu fileid.unknown=%llu jit.named=%llu "
		"jit.unnamed=%llu debuginfod.requests=%llu debuginfod.files=%llu\n",
		u(st->frames_unmapped), u(st->frames_unsymbolized), u(st->kernel_unsymbolized),
		u(st->maps_read_failed), u(st->objects_failed), st->symcache_bytes / 1048576.0,
		u(b[SP_STAT_FILEID_SAMPLES]), u(st->frames_fileid), u(st->frames_fileid_unknown),
		u(st->jit_named), u(st->jit_unnamed), u(st->debuginfod_requests),
		u(st->debuginfod_files));
	if (st->python) {
		const struct pytab_stats *pt = &st->py_table;

		fprintf(f,
			"spanprof: info: stats python processes=%llu processes_now=%llu "
			"walks=%llu",
			u(pt->processes), u(pt->live), u(st->py_walks[0]));
		for (unsigned int i = PY_STOP_NONE + 1; i < PY_STOP_COUNT; i++)
			fprintf(f, " stop.%s=%llu", pytab__stop_name(i), u(st->py_walks[i]));
		fprintf(f,
			" samples.placed=%llu samples.cut=%llu samples.not_placed=%llu "
			"samples.dropped=%llu frames.named=%llu frames.unnamed=%llu\n",
			u(st->py_samples_placed), u(st->py_samples_cut), u(st->py_samples_unplaced),
			u(st->py_samples_dropped), u(st->py_frames_named),
			u(st->py_frames_unnamed));
	}
	fprintf(f,
		"spanprof: info: stats processes seen=%llu tracked=%llu unwind=%llu "
		"span_links=%llu\n",
		u(st->processes_seen), u(st->processes_tracked), u(st->processes_unwind),
		u(st->processes_span_links));
	if (st->nmaps) {
		fputs("spanprof: info: stats maps", f);
		for (size_t i = 0; i < st->nmaps; i++)
			fprintf(f, " %s=%llu/%llu %s.kb=%llu", st->maps[i].name,
				u(st->maps[i].entries), u(st->maps[i].capacity), st->maps[i].name,
				u(st->maps[i].bytes / 1024));
		fputc('\n', f);
	}
	for (size_t i = 0; i < st->nexports; i++) {
		const struct otlp_exporter_stats *e = &st->exports[i].st;

		fprintf(f,
			"spanprof: info: stats export.%s sent=%llu failed=%llu dropped=%llu "
			"retries=%llu rejected=%llu sent_kb=%llu queue=%zu queue_kb=%zu "
			"duration_ms.last=%.1f duration_ms.avg=%.1f duration_ms.max=%.1f",
			st->exports[i].signal, u(e->requests_sent), u(e->failed), u(e->dropped),
			u(e->retries), u(e->rejected_profiles), u(e->bytes_sent / 1024), e->queued,
			e->queued_bytes / 1024, e->last_latency_us / 1e3,
			e->calls ? e->call_seconds_sum * 1e3 / e->calls : 0,
			e->call_seconds_max * 1e3);
		if (i == 0 && st->encode_failures)
			fprintf(f, " encode_failures=%llu", u(st->encode_failures));
		for (int s = 1; s < OTLP_GRPC_STATUS_COUNT; s++)
			if (e->calls_by_status[s])
				fprintf(f, " calls.%s=%llu", otlp_exporter__status_name(s),
					u(e->calls_by_status[s]));
		fputc('\n', f);
	}
	fprintf(f,
		"spanprof: info: stats agent cpu_s=%.2f cpu_user_s=%.2f cpu_system_s=%.2f "
		"rss_mb=%.1f\n",
		st->cpu_user_s + st->cpu_system_s, st->cpu_user_s, st->cpu_system_s,
		st->rss_bytes / 1048576.0);
	fflush(f);
}

/* --- resource --- */

static int add_attr(struct selfstats_resource *r, const char *key, const char *str, int64_t i,
		    int is_int)
{
	struct selfstats_attr *a;

	if (r->nattrs >= SELFSTATS_MAX_RESOURCE_ATTRS)
		return 0; /* the operator's extras beyond the bound are dropped */
	a = &r->attrs[r->nattrs];
	a->key = strdup(key);
	a->str = is_int ? NULL : strdup(str);
	if (!a->key || (!is_int && !a->str)) {
		free(a->key);
		free(a->str);
		return -ENOMEM;
	}
	a->i = i;
	a->is_int = is_int;
	r->nattrs++;
	return 0;
}

static int has_attr(const struct selfstats_resource *r, const char *key)
{
	for (size_t i = 0; i < r->nattrs; i++)
		if (!strcmp(r->attrs[i].key, key))
			return 1;
	return 0;
}

const char *selfstats__resource_get(const struct selfstats_resource *r, const char *key)
{
	for (size_t i = 0; i < r->nattrs; i++)
		if (!strcmp(r->attrs[i].key, key))
			return r->attrs[i].str;
	return NULL;
}

void selfstats__resource_clear(struct selfstats_resource *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nattrs; i++) {
		free(r->attrs[i].key);
		free(r->attrs[i].str);
	}
	memset(r, 0, sizeof(*r));
}

int selfstats__resource_build(const char *service_name_env, const char *attrs_env,
			      const char *version, const char *host, const char *instance_id,
			      int64_t pid, struct selfstats_resource *out)
{
	struct procmeta pm = {0};
	const char *name, *attr_name;
	int bad = 0, err;

	memset(out, 0, sizeof(*out));
	if (attrs_env) {
		/* The one OTEL_RESOURCE_ATTRIBUTES parser of the project (procmeta.c). */
		err = procmeta__parse_resource_attributes(attrs_env, strlen(attrs_env), &pm);
		if (err == -ENOMEM)
			goto cleanup;
		bad = err == -EINVAL;
	}
	attr_name = procmeta__attr(&pm, "service.name");
	if (service_name_env && *service_name_env)
		name = service_name_env;
	else if (attr_name && *attr_name)
		name = attr_name;
	else
		name = "spanprof";
	err = add_attr(out, "service.name", name, 0, 0);
	for (uint32_t i = 0; !err && i < pm.nattrs; i++)
		if (strcmp(pm.attrs[i].key, "service.name"))
			err = add_attr(out, pm.attrs[i].key, pm.attrs[i].value, 0, 0);
	if (!err && version && !has_attr(out, "service.version"))
		err = add_attr(out, "service.version", version, 0, 0);
	if (!err && instance_id && !has_attr(out, "service.instance.id"))
		err = add_attr(out, "service.instance.id", instance_id, 0, 0);
	if (!err && host && *host && !has_attr(out, "host.name"))
		err = add_attr(out, "host.name", host, 0, 0);
	if (!err && !has_attr(out, "process.pid"))
		err = add_attr(out, "process.pid", NULL, pid, 1);
	if (!err && bad)
		err = -EINVAL;
cleanup:
	if (err == -ENOMEM)
		selfstats__resource_clear(out);
	procmeta__clear(&pm);
	return err;
}

int selfstats__resource_from_env(struct selfstats_resource *out)
{
	char host[256] = "", uuid[37];
	uint8_t r[16];
	int err;

	if (gethostname(host, sizeof(host) - 1))
		host[0] = '\0';
	/* Version-4 UUID (RFC 9562 section 5.4). Without entropy: the pid and the time. */
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		uint64_t a = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL),
			 b = ~a * 0x9e3779b97f4a7c15ull;

		memcpy(r, &a, 8);
		memcpy(r + 8, &b, 8);
	}
	r[6] = (r[6] & 0x0f) | 0x40;
	r[8] = (r[8] & 0x3f) | 0x80;
	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
		 r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
		 r[15]);
	err = selfstats__resource_build(getenv("OTEL_SERVICE_NAME"),
					getenv("OTEL_RESOURCE_ATTRIBUTES"), SPANPROF_VERSION, host,
					uuid, getpid(), out);
	if (err == -EINVAL) {
		fprintf(stderr,
			"spanprof: warning: OTEL_RESOURCE_ATTRIBUTES is malformed (want "
			"key=value,... with %%XX escapes): ignored for the agent's resource\n");
		err = 0;
	}
	return err;
}

/* --- OTLP metrics request --- */

/* Bounds of one request: every metric below, with room to spare. */
#define MAX_METRICS 48
#define MAX_POINTS 64
#define MAX_POINT_ATTRS 3

enum metric_kind { GAUGE, COUNTER, HISTOGRAM };

/* Everything a request is made of comes from one list of allocations, freed together. */
struct builder {
	uint64_t start_ns, now_ns;
	Metric *metrics[MAX_METRICS];
	size_t nmetrics;
	void **allocs;
	size_t nallocs, cap;
	int err;
};

struct kv {
	const char *key;
	const char *s; /* NULL: the integer i */
	int64_t i;
};

static void *b_new(struct builder *b, size_t size)
{
	void *p;

	if (b->err)
		return NULL;
	if (b->nallocs == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		void **a = realloc(b->allocs, cap * sizeof(*a));

		if (!a) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->allocs = a;
		b->cap = cap;
	}
	p = calloc(1, size);
	if (!p) {
		b->err = -ENOMEM;
		return NULL;
	}
	b->allocs[b->nallocs++] = p;
	return p;
}

static KeyValue *b_kv(struct builder *b, const struct kv *a)
{
	KeyValue *kv = b_new(b, sizeof(*kv));
	AnyValue *v = b_new(b, sizeof(*v));

	if (!kv || !v)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key = (char *)a->key;
	kv->value = v;
	if (a->s) {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = (char *)a->s;
	} else {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = a->i;
	}
	return kv;
}

/* A new metric with room for MAX_POINTS points; NULL when out of memory (b->err set). */
static Metric *b_metric(struct builder *b, const char *name, const char *unit, const char *desc,
			enum metric_kind kind)
{
	Metric *m;

	if (b->nmetrics >= MAX_METRICS) {
		b->err = -E2BIG; /* a programming error: raise MAX_METRICS */
		return NULL;
	}
	m = b_new(b, sizeof(*m));
	if (!m)
		return NULL;
	opentelemetry__proto__metrics__v1__metric__init(m);
	m->name = (char *)name;
	m->unit = (char *)unit;
	m->description = (char *)desc;
	if (kind == GAUGE) {
		Opentelemetry__Proto__Metrics__V1__Gauge *g = b_new(b, sizeof(*g));

		if (!g)
			return NULL;
		opentelemetry__proto__metrics__v1__gauge__init(g);
		g->data_points = b_new(b, MAX_POINTS * sizeof(*g->data_points));
		m->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
		m->gauge = g;
	} else if (kind == COUNTER) {
		Opentelemetry__Proto__Metrics__V1__Sum *s = b_new(b, sizeof(*s));

		if (!s)
			return NULL;
		opentelemetry__proto__metrics__v1__sum__init(s);
		s->data_points = b_new(b, MAX_POINTS * sizeof(*s->data_points));
		s->aggregation_temporality =
		    OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
		s->is_monotonic = 1;
		m->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM;
		m->sum = s;
	} else {
		Opentelemetry__Proto__Metrics__V1__Histogram *h = b_new(b, sizeof(*h));

		if (!h)
			return NULL;
		opentelemetry__proto__metrics__v1__histogram__init(h);
		h->data_points = b_new(b, MAX_POINTS * sizeof(*h->data_points));
		h->aggregation_temporality =
		    OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
		m->data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM;
		m->histogram = h;
	}
	if (b->err)
		return NULL;
	b->metrics[b->nmetrics++] = m;
	return m;
}

/* Attributes of a point: an array of @n KeyValue pointers. */
static KeyValue **b_attrs(struct builder *b, const struct kv *attrs, size_t n)
{
	KeyValue **out;

	if (!n)
		return NULL;
	out = b_new(b, n * sizeof(*out));
	for (size_t i = 0; out && i < n; i++)
		out[i] = b_kv(b, &attrs[i]);
	return b->err ? NULL : out;
}

/* Appends a number point (an integer, or a double when @is_double) to a gauge or a sum. */
static void b_point(struct builder *b, Metric *m, int is_double, int64_t i, double d,
		    const struct kv *attrs, size_t nattrs)
{
	NumberDataPoint *p;
	size_t *n;
	NumberDataPoint **pts;

	if (!m)
		return;
	if (m->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE) {
		n = &m->gauge->n_data_points;
		pts = m->gauge->data_points;
	} else {
		n = &m->sum->n_data_points;
		pts = m->sum->data_points;
	}
	if (*n >= MAX_POINTS) {
		b->err = -E2BIG;
		return;
	}
	p = b_new(b, sizeof(*p));
	if (!p)
		return;
	opentelemetry__proto__metrics__v1__number_data_point__init(p);
	p->attributes = b_attrs(b, attrs, nattrs);
	p->n_attributes = nattrs;
	/* Gauges carry no start time; cumulative sums count from the agent's start. */
	if (m->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM)
		p->start_time_unix_nano = b->start_ns;
	p->time_unix_nano = b->now_ns;
	if (is_double) {
		p->value_case =
		    OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
		p->as_double = d;
	} else {
		p->value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT;
		p->as_int = i;
	}
	pts[(*n)++] = p;
}

#define KS(k, v)                                                                                   \
	{                                                                                          \
		.key = (k), .s = (v)                                                               \
	}
#define KI(k, v)                                                                                   \
	{                                                                                          \
		.key = (k), .i = (v)                                                               \
	}
#define A(...)                                                                                     \
	(const struct kv[]){__VA_ARGS__},                                                          \
	    sizeof((const struct kv[]){__VA_ARGS__}) / sizeof(struct kv)
#define NOATTR NULL, 0

static void b_int(struct builder *b, Metric *m, uint64_t v, const struct kv *attrs, size_t n)
{
	b_point(b, m, 0, (int64_t)v, 0, attrs, n);
}

/* A metric of one point without attributes. */
static void b_single(struct builder *b, const char *name, const char *unit, const char *desc,
		     enum metric_kind kind, uint64_t v)
{
	b_int(b, b_metric(b, name, unit, desc, kind), v, NOATTR);
}

static void b_double(struct builder *b, Metric *m, double v, const struct kv *attrs, size_t n)
{
	b_point(b, m, 1, 0, v, attrs, n);
}

/* Export call durations: one cumulative histogram point per exporter. */
static void b_duration(struct builder *b, Metric *m, const struct otlp_exporter_stats *e,
		       const char *signal)
{
	Opentelemetry__Proto__Metrics__V1__Histogram *h;
	HistogramDataPoint *p;

	if (!m)
		return;
	h = m->histogram;
	p = b_new(b, sizeof(*p));
	if (!p)
		return;
	opentelemetry__proto__metrics__v1__histogram_data_point__init(p);
	p->attributes = b_attrs(b, A(KS("signal", signal)));
	p->n_attributes = 1;
	p->start_time_unix_nano = b->start_ns;
	p->time_unix_nano = b->now_ns;
	p->count = e->calls;
	p->_sum_case = OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___SUM_SUM;
	p->sum = e->call_seconds_sum;
	if (e->calls) {
		p->_max_case = OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___MAX_MAX;
		p->max = e->call_seconds_max;
	}
	p->n_explicit_bounds = OTLP_EXPORT_DURATION_BOUNDS;
	p->explicit_bounds = (double *)otlp_export_duration_bounds_s;
	p->n_bucket_counts = OTLP_EXPORT_DURATION_BOUNDS + 1;
	p->bucket_counts = (uint64_t *)e->call_buckets;
	h->data_points[h->n_data_points++] = p;
}

static void encode_samples(struct builder *b, const struct selfstats *st)
{
	const uint64_t *s = st->bpf;
	Metric *m;

	m = b_metric(b, "spanprof.samples", "{sample}",
		     "Samples taken by the BPF programs, by what became of them", COUNTER);
	for (uint32_t t = 0; t < SP_PROF_NTYPES; t++) {
		const char *type = st->type_names[t] ? st->type_names[t] : "unknown";

		if (!(st->profile_types & (1u << t)))
			continue;
		b_int(b, m, st->type_recorded[t],
		      A(KS("outcome", "recorded"), KS("profile.type", type)));
		b_int(b, m, s[sp_stat_type_drop(t)],
		      A(KS("outcome", "dropped"), KS("reason", "ringbuf_full"),
			KS("profile.type", type)));
	}
	b_int(b, m, st->samples_oom, A(KS("outcome", "dropped"), KS("reason", "out_of_memory")));
	b_int(b, m, s[SP_STAT_IDLE], A(KS("outcome", "idle")));
	b_int(b, m, s[SP_STAT_FILTERED], A(KS("outcome", "filtered")));

	m = b_metric(b, "spanprof.stack.read_errors", "{sample}",
		     "Samples kept without their kernel or user stack (bpf_get_stack failed)",
		     COUNTER);
	b_int(b, m, s[SP_STAT_KSTACK_ERR], A(KS("stack", "kernel")));
	b_int(b, m, s[SP_STAT_USTACK_ERR], A(KS("stack", "user")));

	m = b_metric(b, "spanprof.samples.link_dropped", "{sample}",
		     "Samples kept without their span link (agent out of memory)", COUNTER);
	b_int(b, m, st->link_drops, NOATTR);

	if (st->cfi) {
		m = b_metric(
		    b, "spanprof.unwind.samples", "{sample}",
		    "User stacks by unwinding method; frame_pointer points say why the CFI "
		    "tables were not used",
		    COUNTER);
		b_int(b, m, s[SP_STAT_UNW_CFI], A(KS("method", "cfi")));
		b_int(b, m, s[SP_STAT_UNW_FP],
		      A(KS("method", "frame_pointer"), KS("reason", "no_table_yet")));
		b_int(b, m, s[SP_STAT_UNW_STALE],
		      A(KS("method", "frame_pointer"), KS("reason", "stale_entry")));
		b_int(b, m, s[SP_STAT_UNW_NO_REGS],
		      A(KS("method", "frame_pointer"), KS("reason", "no_registers")));

		m = b_metric(b, "spanprof.unwind.stops", "{walk}",
			     "Why each CFI stack walk ended (end = the outermost frame)", COUNTER);
		b_int(b, m, s[SP_STAT_UNW_END], A(KS("reason", "end")));
		b_int(b, m, s[SP_STAT_UNW_FP_END], A(KS("reason", "fp_end")));
		b_int(b, m, s[SP_STAT_UNW_NO_MAPPING], A(KS("reason", "no_mapping")));
		b_int(b, m, s[SP_STAT_UNW_NO_TABLE], A(KS("reason", "no_table")));
		b_int(b, m, s[SP_STAT_UNW_UNSUPPORTED], A(KS("reason", "unsupported")));
		b_int(b, m, s[SP_STAT_UNW_READ_FAILED], A(KS("reason", "read_failed")));
		b_int(b, m, s[SP_STAT_UNW_BAD_CFA], A(KS("reason", "bad_cfa")));
		b_int(b, m, s[SP_STAT_UNW_DEPTH], A(KS("reason", "depth_limit")));
		b_int(b, m, s[SP_STAT_UNW_BAD_RA], A(KS("reason", "bad_return_address")));

		m = b_metric(b, "spanprof.unwind.frames", "{frame}",
			     "User frames unwound inside CFI walks, by method", COUNTER);
		b_int(b, m, s[SP_STAT_UNW_FRAMES_CFI], A(KS("method", "cfi")));
		b_int(b, m, s[SP_STAT_UNW_FRAMES_FP], A(KS("method", "frame_pointer")));

		m = b_metric(b, "spanprof.unwind.refused", "{item}",
			     "Unwind tables or processes refused because a limit was reached",
			     COUNTER);
		b_int(b, m, st->unwind_tables_refused, A(KS("item", "table")));
		b_int(b, m, st->unwind_procs_refused, A(KS("item", "process")));

		m = b_metric(b, "spanprof.bpf.events", "{event}",
			     "exec/mmap/exit notifications from BPF, by outcome", COUNTER);
		b_int(b, m, s[SP_STAT_EVENTS], A(KS("outcome", "sent")));
		b_int(b, m, s[SP_STAT_EVENT_DROP], A(KS("outcome", "dropped")));
	}
	if (st->span_links) {
		m = b_metric(b, "spanprof.span_links.samples", "{sample}",
			     "Samples by what the thread-context reader found (linked = the sample "
			     "carries its span)",
			     COUNTER);
		b_int(b, m, s[SP_STAT_CTX_LINKED], A(KS("outcome", "linked")));
		b_int(b, m, s[SP_STAT_CTX_NO_SPAN], A(KS("outcome", "no_span")));
		b_int(b, m, s[SP_STAT_CTX_NOT_VALID], A(KS("outcome", "not_valid")));
		b_int(b, m, s[SP_STAT_CTX_ZERO_TRACE], A(KS("outcome", "zero_trace")));
		b_int(b, m, s[SP_STAT_CTX_ATTRS_TOO_BIG], A(KS("outcome", "attrs_too_big")));
		b_int(b, m, s[SP_STAT_CTX_READ_FAILED], A(KS("outcome", "read_failed")));
		b_int(b, m, s[SP_STAT_CTX_UNALLOCATED], A(KS("outcome", "unallocated")));
		b_int(b, m, s[SP_STAT_CTX_STALE], A(KS("outcome", "stale")));
		m = b_metric(
		    b, "spanprof.go_labels.samples", "{sample}",
		    "Samples of Go processes by what the goroutine-label reader found (read "
		    "= the sample carries its goroutine's labels)",
		    COUNTER);
		b_int(b, m, s[SP_STAT_GOL_READ], A(KS("outcome", "read")));
		b_int(b, m, s[SP_STAT_GOL_NONE], A(KS("outcome", "none")));
		b_int(b, m, s[SP_STAT_GOL_SYSTEM_G], A(KS("outcome", "system_goroutine")));
		b_int(b, m, s[SP_STAT_GOL_OFF_STACK], A(KS("outcome", "off_stack")));
		b_int(b, m, s[SP_STAT_GOL_BAD], A(KS("outcome", "bad")));
		b_int(b, m, s[SP_STAT_GOL_MAP_SKIPPED], A(KS("outcome", "map_skipped")));
		b_int(b, m, s[SP_STAT_GOL_STALE], A(KS("outcome", "stale")));
	}
}

/* The CPython walk's counters (the python section of --stats-json, docs/stats-json.md). */
static void encode_python(struct builder *b, const struct selfstats *st)
{
	const struct pytab_stats *pt = &st->py_table;
	Metric *m;

	if (!st->python)
		return;
	m = b_metric(b, "spanprof.python.processes", "{process}",
		     "CPython processes: described to the BPF walk, or left without Python frames "
		     "(reason)",
		     COUNTER);
	b_int(b, m, pt->processes, A(KS("outcome", "described")));
	for (int i = 0; i < PYTAB_FAIL_COUNT; i++)
		b_int(b, m, pt->failed[i],
		      A(KS("outcome", "not_described"),
			KS("reason", pytab__failure_name((enum pytab_failure)i))));

	b_single(b, "spanprof.python.processes.tracked", "{process}",
		 "CPython processes described to the BPF walk now", GAUGE, pt->live);
	b_single(b, "spanprof.python.files_not_cpython", "{file}",
		 "Mapped files that looked like CPython and are not", COUNTER, pt->files_inspected);

	m = b_metric(b, "spanprof.python.walks", "{walk}",
		     "Python stack walks in BPF, by why each ended (end = the outermost frame)",
		     COUNTER);
	for (unsigned int i = PY_STOP_NONE + 1; i < PY_STOP_COUNT; i++)
		b_int(b, m, st->py_walks[i], A(KS("reason", pytab__stop_name(i))));

	m = b_metric(b, "spanprof.python.samples", "{sample}",
		     "Walked samples by what became of their Python frames (placed = in place of "
		     "the interpreter loop's native frames; placed_cut = placed, the Python "
		     "stack marked as cut)",
		     COUNTER);
	/* samples_placed counts the cut ones too: here each sample is in one series. */
	b_int(b, m, st->py_samples_placed - st->py_samples_cut, A(KS("outcome", "placed")));
	b_int(b, m, st->py_samples_cut, A(KS("outcome", "placed_cut")));
	b_int(b, m, st->py_samples_unplaced, A(KS("outcome", "not_placed")));
	b_int(b, m, st->py_samples_dropped, A(KS("outcome", "dropped")));
	b_int(b, m, st->py_samples_no_process, A(KS("outcome", "process_not_described")));

	m = b_metric(b, "spanprof.python.frames", "{frame}",
		     "Python frames named, or not (stale = the code object was another by then)",
		     COUNTER);
	b_int(b, m, st->py_frames_named, A(KS("outcome", "named")));
	b_int(b, m, st->py_frames_unnamed - st->py_frames_stale, A(KS("outcome", "unnamed")));
	b_int(b, m, st->py_frames_stale, A(KS("outcome", "stale")));

	m = b_metric(b, "spanprof.python.read_errors", "{read}",
		     "Reads of process memory naming Python frames that failed, by reason",
		     COUNTER);
	for (int i = 0; i < PYPROC_ERR_COUNT; i++)
		b_int(b, m, pt->name_errors[i],
		      A(KS("reason", pyproc__error_name((enum pyproc_error)i))));

	m = b_metric(b, "spanprof.python.code_objects", "{code_object}",
		     "Code objects of Python frames: named from the cache, or read from the "
		     "process",
		     COUNTER);
	b_int(b, m, pt->code_hits, A(KS("source", "cache")));
	b_int(b, m, pt->code_misses, A(KS("source", "read")));
}

static void encode_symbols_and_processes(struct builder *b, const struct selfstats *st)
{
	Metric *m;

	m = b_metric(b, "spanprof.symbolization.misses", "{frame}",
		     "Frames that could not be named, by reason", COUNTER);
	b_int(b, m, st->frames_unmapped, A(KS("reason", "unmapped")));
	b_int(b, m, st->frames_unsymbolized, A(KS("reason", "no_symbol")));
	b_int(b, m, st->kernel_unsymbolized, A(KS("reason", "kernel_no_symbol")));

	m = b_metric(b, "spanprof.symbolization.errors", "{item}",
		     "Process maps or mapped files that could not be read", COUNTER);
	b_int(b, m, st->maps_read_failed, A(KS("item", "maps")));
	b_int(b, m, st->objects_failed, A(KS("item", "file")));

	m = b_metric(b, "spanprof.symbolization.frames", "{frame}",
		     "Frames named (or not) by a source other than the process's own maps: the "
		     "file identities samples carry, JIT perf maps and jitdump files",
		     COUNTER);
	b_int(b, m, st->frames_fileid, A(KS("source", "file_identity"), KS("outcome", "named")));
	b_int(b, m, st->frames_fileid_unknown,
	      A(KS("source", "file_identity"), KS("outcome", "unnamed")));
	b_int(b, m, st->jit_named, A(KS("source", "jit"), KS("outcome", "named")));
	b_int(b, m, st->jit_unnamed, A(KS("source", "jit"), KS("outcome", "unnamed")));

	m = b_metric(b, "spanprof.debuginfod.files", "{file}",
		     "Debug files asked of debuginfod servers, and those used", COUNTER);
	b_int(b, m, st->debuginfod_requests, A(KS("outcome", "requested")));
	b_int(b, m, st->debuginfod_files, A(KS("outcome", "used")));

	b_single(b, "spanprof.symbol_cache.memory", "By",
		 "Symbol tables and DWARF of profiled binaries held in memory", GAUGE,
		 st->symcache_bytes);
	b_single(b, "spanprof.processes.seen", "{process}",
		 "Distinct processes sampled since the agent started", COUNTER, st->processes_seen);

	m = b_metric(b, "spanprof.processes.tracked", "{process}",
		     "Processes the agent holds state for, by table", GAUGE);
	b_int(b, m, st->processes_tracked, A(KS("table", "symbolizer")));
	if (st->cfi)
		b_int(b, m, st->processes_unwind, A(KS("table", "unwinder")));
	if (st->span_links)
		b_int(b, m, st->processes_span_links, A(KS("table", "span_links")));
}

static void encode_maps(struct builder *b, const struct selfstats *st)
{
	Metric *entries, *capacity, *memory, *util;

	if (!st->nmaps)
		return;
	entries = b_metric(b, "spanprof.bpf.map.entries", "{entry}", "Entries in use in a BPF map",
			   GAUGE);
	capacity = b_metric(b, "spanprof.bpf.map.capacity", "{entry}",
			    "Maximum entries of a BPF map", GAUGE);
	util = b_metric(b, "spanprof.bpf.map.utilization", "1",
			"Fill of a BPF map: entries / capacity, 0 to 1", GAUGE);
	memory = b_metric(
	    b, "spanprof.bpf.map.memory", "By",
	    "Kernel memory charged for a BPF map (unwind_chunks: the chunks allocated)", GAUGE);
	for (size_t i = 0; i < st->nmaps; i++) {
		const struct selfstats_map *mp = &st->maps[i];

		b_int(b, entries, mp->entries, A(KS("bpf.map.name", mp->name)));
		b_int(b, capacity, mp->capacity, A(KS("bpf.map.name", mp->name)));
		b_double(b, util, mp->capacity ? (double)mp->entries / mp->capacity : 0,
			 A(KS("bpf.map.name", mp->name)));
		b_int(b, memory, mp->bytes, A(KS("bpf.map.name", mp->name)));
	}
}

static void encode_export(struct builder *b, const struct selfstats *st)
{
	Metric *req, *calls, *dur, *qreq, *qsize, *bytes, *rej, *smp = NULL;

	if (!st->nexports)
		return;
	req = b_metric(b, "spanprof.export.requests", "{request}",
		       "Export requests by outcome: sent (OK), failed (non-retryable status), "
		       "dropped (queue full or not sent before shutdown)",
		       COUNTER);
	calls = b_metric(b, "spanprof.export.calls", "{call}",
			 "Export calls made (retries included) by gRPC status code", COUNTER);
	dur = b_metric(b, "spanprof.export.duration", "s", "Duration of Export calls", HISTOGRAM);
	bytes =
	    b_metric(b, "spanprof.export.size", "By",
		     "Serialized bytes of the requests sent (before gRPC compression)", COUNTER);
	rej = b_metric(b, "spanprof.export.rejected", "{item}",
		       "Profiles or data points the Collector rejected (OTLP partial success)",
		       COUNTER);
	qreq = b_metric(b, "spanprof.export.queue.requests", "{request}",
			"Requests waiting in the export queue or in flight", GAUGE);
	qsize = b_metric(b, "spanprof.export.queue.size", "By",
			 "Bytes of the requests waiting in the export queue or in flight", GAUGE);
	for (size_t i = 0; i < st->nexports; i++) {
		const struct otlp_exporter_stats *e = &st->exports[i].st;
		const char *sig = st->exports[i].signal;

		b_int(b, req, e->requests_sent, A(KS("signal", sig), KS("outcome", "sent")));
		b_int(b, req, e->failed, A(KS("signal", sig), KS("outcome", "failed")));
		b_int(b, req, e->dropped, A(KS("signal", sig), KS("outcome", "dropped")));
		for (int s = 0; s < OTLP_GRPC_STATUS_COUNT; s++)
			if (e->calls_by_status[s] || s == 0)
				b_int(b, calls, e->calls_by_status[s],
				      A(KS("signal", sig), KI("rpc.grpc.status_code", s)));
		b_duration(b, dur, e, sig);
		b_int(b, bytes, e->bytes_sent, A(KS("signal", sig)));
		b_int(b, rej, e->rejected_profiles, A(KS("signal", sig)));
		b_int(b, qreq, e->queued, A(KS("signal", sig)));
		b_int(b, qsize, e->queued_bytes, A(KS("signal", sig)));
		if (!strcmp(sig, "profiles")) {
			if (!smp)
				smp = b_metric(
				    b, "spanprof.export.samples", "{sample}",
				    "Samples in the profiles sent, or lost with their request "
				    "(dropped, or failed: non-retryable status)",
				    COUNTER);
			b_int(b, smp, e->samples_sent, A(KS("outcome", "sent")));
			b_int(b, smp, e->dropped_samples, A(KS("outcome", "dropped")));
			b_int(b, smp, e->failed_samples, A(KS("outcome", "failed")));
		}
	}
	smp = b_metric(b, "spanprof.export.encode_failures", "{interval}",
		       "Export intervals (or parts) that could not be encoded", COUNTER);
	b_int(b, smp, st->encode_failures, NOATTR);
}

static void encode_agent(struct builder *b, const struct selfstats *st)
{
	Metric *m;

	m = b_metric(b, "spanprof.process.cpu.time", "s", "CPU time used by the agent", COUNTER);
	b_double(b, m, st->cpu_user_s, A(KS("cpu.mode", "user")));
	b_double(b, m, st->cpu_system_s, A(KS("cpu.mode", "system")));
	m = b_metric(b, "spanprof.process.memory.rss", "By", "Resident memory of the agent", GAUGE);
	b_int(b, m, st->rss_bytes, NOATTR);
}

int selfstats__encode(const struct selfstats *st, const struct selfstats_resource *res,
		      const char *scope_version, uint8_t **out, size_t *len)
{
	Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest req =
	    OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_REQUEST__INIT;
	Opentelemetry__Proto__Metrics__V1__ResourceMetrics rm =
	    OPENTELEMETRY__PROTO__METRICS__V1__RESOURCE_METRICS__INIT;
	Opentelemetry__Proto__Metrics__V1__ResourceMetrics *rms[1] = {&rm};
	Opentelemetry__Proto__Metrics__V1__ScopeMetrics sm =
	    OPENTELEMETRY__PROTO__METRICS__V1__SCOPE_METRICS__INIT;
	Opentelemetry__Proto__Metrics__V1__ScopeMetrics *sms[1] = {&sm};
	Opentelemetry__Proto__Resource__V1__Resource resource =
	    OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	Opentelemetry__Proto__Common__V1__InstrumentationScope scope =
	    OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	struct builder b = {.start_ns = st->start_unix_ns, .now_ns = st->time_unix_ns};
	KeyValue **rattrs = NULL;
	int err;

	*out = NULL;
	*len = 0;
	if (res && res->nattrs) {
		rattrs = b_new(&b, res->nattrs * sizeof(*rattrs));
		for (size_t i = 0; rattrs && i < res->nattrs; i++) {
			struct kv a = {res->attrs[i].key, res->attrs[i].str, res->attrs[i].i};

			rattrs[i] = b_kv(&b, &a);
		}
		resource.attributes = rattrs;
		resource.n_attributes = res->nattrs;
	}
	scope.name = "spanprof";
	scope.version = (char *)(scope_version ? scope_version : "");
	encode_samples(&b, st);
	encode_symbols_and_processes(&b, st);
	encode_python(&b, st);
	encode_maps(&b, st);
	encode_export(&b, st);
	encode_agent(&b, st);
	err = b.err;
	if (err)
		goto cleanup;
	sm.scope = &scope;
	sm.metrics = b.metrics;
	sm.n_metrics = b.nmetrics;
	rm.resource = &resource;
	rm.scope_metrics = sms;
	rm.n_scope_metrics = 1;
	req.resource_metrics = rms;
	req.n_resource_metrics = 1;
	*len =
	    opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__get_packed_size(
		&req);
	*out = malloc(*len ? *len : 1);
	if (!*out) {
		err = -ENOMEM;
		*len = 0;
		goto cleanup;
	}
	opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__pack(&req,
											   *out);
cleanup:
	for (size_t i = 0; i < b.nallocs; i++)
		free(b.allocs[i]);
	free(b.allocs);
	return err;
}

int selfstats__parse_statm(const char *text, long page_size, uint64_t *rss_bytes)
{
	unsigned long long size, resident;

	if (page_size <= 0 || sscanf(text, "%llu %llu", &size, &resident) != 2)
		return -EINVAL;
	*rss_bytes = (uint64_t)resident * (uint64_t)page_size;
	return 0;
}
