// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/telemetry/selfstats.c: the OTLP metrics request (decoded with the
 * protobuf-c unpacker of opentelemetry-proto metrics/v1 and checked metric by metric), the agent's
 * resource (OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES), the stats log lines and the small
 * parsers. No root, no network.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "telemetry/selfstats.h"

typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest Request;
typedef Opentelemetry__Proto__Metrics__V1__Metric Metric;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint Point;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

#define START 1700000000000000000ull
#define NOW (START + 60000000000ull)

/* A snapshot where every counter has a distinct value, so that a swapped field shows. */
static void fill(struct selfstats *st, uint64_t base)
{
	memset(st, 0, sizeof(*st));
	st->start_unix_ns = START;
	st->time_unix_ns = NOW + base;
	st->samples = 1000 + base;
	st->samples_oom = 3 + base;
	st->link_drops = 4 + base;
	st->encode_failures = 5 + base;
	for (int i = 0; i < SP_STAT_MAX; i++)
		st->bpf[i] = 100 + i + base;
	/* CPU and alloc profiles recorded (--profile cpu,alloc). */
	st->profile_types = 1u << SP_PROF_CPU | 1u << SP_PROF_ALLOC;
	st->type_names[SP_PROF_CPU] = "cpu";
	st->type_names[SP_PROF_ALLOC] = "alloc";
	st->type_names[SP_PROF_LOCK] = "lock";
	st->type_names[SP_PROF_OFFCPU] = "offcpu";
	st->type_recorded[SP_PROF_CPU] = 990 + base;
	st->type_recorded[SP_PROF_ALLOC] = 10;
	st->cfi = 1;
	st->span_links = 1;
	st->frames_unmapped = 11 + base;
	st->frames_unsymbolized = 12 + base;
	st->kernel_unsymbolized = 13 + base;
	st->maps_read_failed = 14 + base;
	st->objects_failed = 15 + base;
	st->symcache_bytes = 5 << 20;
	st->frames_fileid = 16 + base;
	st->jit_unnamed = 17 + base;
	st->processes_seen = 40 + base;
	st->processes_tracked = 30;
	st->processes_unwind = 7;
	st->processes_span_links = 2;
	st->maps[0] = (struct selfstats_map){"unwind_procs", 7, 8192, 185000};
	st->maps[1] = (struct selfstats_map){"tls_procs", 2, 8192, 833000};
	st->nmaps = 2;
	st->exports[0].signal = "profiles";
	st->exports[0].st.requests_sent = 12 + base;
	st->exports[0].st.failed = 1;
	st->exports[0].st.failed_by_status[3] = 1; /* INVALID_ARGUMENT */
	st->exports[0].st.dropped = 2;
	st->exports[0].st.samples_sent = 900 + base;
	st->exports[0].st.dropped_samples = 50;
	st->exports[0].st.bytes_sent = 123456 + base;
	st->exports[0].st.queued = 1;
	st->exports[0].st.queued_bytes = 4096;
	st->exports[0].st.calls_by_status[0] = 12 + base;
	st->exports[0].st.calls_by_status[3] = 1;
	st->exports[0].st.calls_by_status[14] = 4; /* UNAVAILABLE */
	st->exports[0].st.calls = 17 + base;
	st->exports[0].st.call_buckets[2] = 10;
	st->exports[0].st.call_buckets[5] = 7 + base;
	st->exports[0].st.call_seconds_sum = 1.5;
	st->exports[0].st.call_seconds_max = 0.2;
	st->exports[1].signal = "metrics";
	st->exports[1].st.requests_sent = 1;
	st->nexports = 2;
	st->cpu_user_s = 1.25;
	st->cpu_system_s = 0.5;
	st->rss_bytes = 40 << 20;
	st->python = 1;
	for (int i = 0; i < PY_STOP_COUNT; i++)
		st->py_walks[i] = 200 + i + base;
	st->py_table.processes = 21 + base;
	st->py_table.live = 20;
	st->py_table.failed[PYTAB_FAIL_COUNT - 1] = 22 + base;
	st->py_table.files_inspected = 23 + base;
	st->py_table.name_errors[PYPROC_ERR_COUNT - 1] = 24 + base;
	st->py_table.code_hits = 300 + base;
	st->py_table.code_misses = 25 + base;
	st->py_samples_placed = 190 + base;
	st->py_samples_cut = 26;
	st->py_samples_unplaced = 27 + base;
	st->py_samples_dropped = 28 + base;
	st->py_samples_no_process = 29 + base;
	st->py_frames_named = 400 + base;
	st->py_frames_unnamed = 31 + base;
	st->py_frames_stale = 30;
}

static Request *encode(const struct selfstats *st, const struct selfstats_resource *res)
{
	uint8_t *buf;
	size_t len;
	Request *r;

	assert_int_equal(selfstats__encode(st, res, "9.9.9", &buf, &len), 0);
	assert_true(len > 0);
	r = opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__unpack(
	    NULL, len, buf);
	free(buf);
	assert_non_null(r);
	assert_int_equal(r->n_resource_metrics, 1);
	assert_int_equal(r->resource_metrics[0]->n_scope_metrics, 1);
	return r;
}

static void unpacked_free(Request *r)
{
	opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__free_unpacked(
	    r, NULL);
}

static const Metric *find_metric(const Request *r, const char *name)
{
	const Opentelemetry__Proto__Metrics__V1__ScopeMetrics *sm =
	    r->resource_metrics[0]->scope_metrics[0];

	for (size_t i = 0; i < sm->n_metrics; i++)
		if (!strcmp(sm->metrics[i]->name, name))
			return sm->metrics[i];
	return NULL;
}

static const char *attr(KeyValue *const *kv, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i]->key, key) &&
		    kv[i]->value->value_case ==
			OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
			return kv[i]->value->string_value;
	return NULL;
}

static void points_of(const Metric *m, Point ***pts, size_t *n)
{
	if (m->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM) {
		*pts = m->sum->data_points;
		*n = m->sum->n_data_points;
	} else {
		assert_int_equal(m->data_case,
				 OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE);
		*pts = m->gauge->data_points;
		*n = m->gauge->n_data_points;
	}
}

/*
 * The integer value of the point of @name whose attributes include @k1=@v1 (and @k2=@v2 when
 * @k2 is set); fails when there is none or more than one.
 */
static int64_t value(const Request *r, const char *name, const char *k1, const char *v1,
		     const char *k2, const char *v2)
{
	const Metric *m = find_metric(r, name);
	Point **pts;
	size_t n, found = 0;
	int64_t v = -1;

	if (!m)
		fail_msg("metric %s missing", name);
	points_of(m, &pts, &n);
	for (size_t i = 0; i < n; i++) {
		const char *a1 = k1 ? attr(pts[i]->attributes, pts[i]->n_attributes, k1) : NULL;
		const char *a2 = k2 ? attr(pts[i]->attributes, pts[i]->n_attributes, k2) : NULL;

		if ((k1 && (!a1 || strcmp(a1, v1))) || (k2 && (!a2 || strcmp(a2, v2))))
			continue;
		assert_int_equal(
		    pts[i]->value_case,
		    OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT);
		v = pts[i]->as_int;
		found++;
	}
	if (found != 1)
		fail_msg("%s{%s=%s,%s=%s}: %zu points", name, k1 ? k1 : "", v1 ? v1 : "",
			 k2 ? k2 : "", v2 ? v2 : "", found);
	return v;
}

/* Some point of metric @name with attribute @k = @v, or NULL. */
static const Point *find_point(const Request *r, const char *name, const char *k, const char *v)
{
	const Metric *m = find_metric(r, name);
	Point **pts;
	size_t n;

	if (!m)
		return NULL;
	points_of(m, &pts, &n);
	for (size_t i = 0; i < n; i++) {
		const char *a = attr(pts[i]->attributes, pts[i]->n_attributes, k);

		if (a && !strcmp(a, v))
			return pts[i];
	}
	return NULL;
}

static void test_every_metric_is_well_formed(void **state)
{
	struct selfstats st;
	Request *r;
	const Opentelemetry__Proto__Metrics__V1__ScopeMetrics *sm;

	fill(&st, 0);
	r = encode(&st, NULL);
	sm = r->resource_metrics[0]->scope_metrics[0];
	assert_string_equal(sm->scope->name, "spanprof");
	assert_string_equal(sm->scope->version, "9.9.9");
	assert_true(sm->n_metrics >= 25);
	for (size_t i = 0; i < sm->n_metrics; i++) {
		const Metric *m = sm->metrics[i];
		Point **pts;
		size_t n;

		assert_memory_equal(m->name, "spanprof.", 9);
		assert_true(m->unit && m->unit[0]);
		assert_true(m->description && m->description[0]);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(sm->metrics[j]->name, m->name);
		if (m->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM)
			continue;
		points_of(m, &pts, &n);
		assert_true(n > 0);
		for (size_t j = 0; j < n; j++) {
			assert_int_equal(pts[j]->time_unix_nano, NOW);
			/* Cumulative sums start at the agent's start; gauges have no start. */
			if (m->data_case == OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM) {
				assert_int_equal(pts[j]->start_time_unix_nano, START);
				assert_int_equal(
				    m->sum->aggregation_temporality,
				    OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE);
				assert_true(m->sum->is_monotonic);
			} else {
				assert_int_equal(pts[j]->start_time_unix_nano, 0);
			}
		}
	}
	unpacked_free(r);
}

static void test_values_land_in_the_right_series(void **state)
{
	struct selfstats st;
	Request *r;
	const Metric *m;

	fill(&st, 0);
	r = encode(&st, NULL);
	assert_int_equal(value(r, "spanprof.samples", "outcome", "recorded", "profile.type", "cpu"),
			 990);
	assert_int_equal(
	    value(r, "spanprof.samples", "outcome", "recorded", "profile.type", "alloc"), 10);
	assert_int_equal(
	    value(r, "spanprof.samples", "reason", "ringbuf_full", "profile.type", "cpu"),
	    st.bpf[SP_STAT_DROP_RINGBUF]);
	assert_int_equal(
	    value(r, "spanprof.samples", "reason", "ringbuf_full", "profile.type", "alloc"),
	    st.bpf[SP_STAT_ALLOC_DROP]);
	/* Types not recorded have no point. */
	assert_null(find_point(r, "spanprof.samples", "profile.type", "lock"));
	assert_int_equal(
	    value(r, "spanprof.samples", "outcome", "dropped", "reason", "out_of_memory"), 3);
	assert_int_equal(value(r, "spanprof.samples", "outcome", "idle", NULL, NULL),
			 st.bpf[SP_STAT_IDLE]);
	assert_int_equal(value(r, "spanprof.unwind.stops", "reason", "depth_limit", NULL, NULL),
			 st.bpf[SP_STAT_UNW_DEPTH]);
	assert_int_equal(
	    value(r, "spanprof.unwind.stops", "reason", "bad_return_address", NULL, NULL),
	    st.bpf[SP_STAT_UNW_BAD_RA]);
	assert_int_equal(value(r, "spanprof.unwind.samples", "method", "frame_pointer", "reason",
			       "no_registers"),
			 st.bpf[SP_STAT_UNW_NO_REGS]);
	assert_int_equal(value(r, "spanprof.span_links.samples", "outcome", "linked", NULL, NULL),
			 st.bpf[SP_STAT_CTX_LINKED]);
	assert_int_equal(
	    value(r, "spanprof.symbolization.misses", "reason", "kernel_no_symbol", NULL, NULL),
	    13);
	assert_int_equal(value(r, "spanprof.processes.tracked", "table", "symbolizer", NULL, NULL),
			 30);
	assert_int_equal(value(r, "spanprof.symbolization.frames", "source", "file_identity",
			       "outcome", "named"),
			 16);
	assert_int_equal(
	    value(r, "spanprof.symbolization.frames", "source", "jit", "outcome", "unnamed"), 17);
	assert_int_equal(
	    value(r, "spanprof.bpf.map.entries", "bpf.map.name", "tls_procs", NULL, NULL), 2);
	assert_int_equal(
	    value(r, "spanprof.bpf.map.capacity", "bpf.map.name", "unwind_procs", NULL, NULL),
	    8192);
	assert_int_equal(
	    value(r, "spanprof.export.requests", "signal", "profiles", "outcome", "failed"), 1);
	assert_int_equal(
	    value(r, "spanprof.export.requests", "signal", "metrics", "outcome", "sent"), 1);
	assert_int_equal(value(r, "spanprof.export.queue.size", "signal", "profiles", NULL, NULL),
			 4096);
	assert_int_equal(value(r, "spanprof.export.samples", "outcome", "dropped", NULL, NULL), 50);
	assert_int_equal(value(r, "spanprof.process.memory.rss", NULL, NULL, NULL, NULL), 40 << 20);

	/* Export calls by gRPC status: an integer attribute, OK always present. */
	m = find_metric(r, "spanprof.export.calls");
	assert_non_null(m);
	{
		int seen_unavailable = 0, seen_ok = 0;

		for (size_t i = 0; i < m->sum->n_data_points; i++) {
			Point *p = m->sum->data_points[i];
			const char *sig = attr(p->attributes, p->n_attributes, "signal");

			for (size_t k = 0; k < p->n_attributes; k++) {
				KeyValue *kv = p->attributes[k];

				if (strcmp(kv->key, "rpc.grpc.status_code"))
					continue;
				assert_int_equal(
				    kv->value->value_case,
				    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE);
				if (!strcmp(sig, "profiles") && kv->value->int_value == 14) {
					assert_int_equal(p->as_int, 4);
					seen_unavailable++;
				}
				if (!strcmp(sig, "profiles") && kv->value->int_value == 0) {
					assert_int_equal(p->as_int, 12);
					seen_ok++;
				}
			}
		}
		assert_int_equal(seen_unavailable, 1);
		assert_int_equal(seen_ok, 1);
	}

	/* CPU time is a double per cpu.mode. */
	m = find_metric(r, "spanprof.process.cpu.time");
	assert_non_null(m);
	assert_string_equal(m->unit, "s");
	assert_int_equal(m->sum->n_data_points, 2);
	for (size_t i = 0; i < 2; i++) {
		Point *p = m->sum->data_points[i];
		const char *mode = attr(p->attributes, p->n_attributes, "cpu.mode");

		assert_int_equal(
		    p->value_case,
		    OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE);
		assert_true(p->as_double == (!strcmp(mode, "user") ? 1.25 : 0.5));
	}

	/* The export duration histogram: bounds, buckets, count, sum, max. */
	m = find_metric(r, "spanprof.export.duration");
	assert_non_null(m);
	assert_int_equal(m->data_case, OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_HISTOGRAM);
	assert_string_equal(m->unit, "s");
	assert_int_equal(m->histogram->n_data_points, 2);
	{
		Opentelemetry__Proto__Metrics__V1__HistogramDataPoint *h =
		    m->histogram->data_points[0];
		uint64_t total = 0;

		assert_string_equal(attr(h->attributes, h->n_attributes, "signal"), "profiles");
		assert_int_equal(h->n_explicit_bounds, OTLP_EXPORT_DURATION_BOUNDS);
		assert_int_equal(h->n_bucket_counts, OTLP_EXPORT_DURATION_BOUNDS + 1);
		for (size_t i = 1; i < h->n_explicit_bounds; i++)
			assert_true(h->explicit_bounds[i] > h->explicit_bounds[i - 1]);
		for (size_t i = 0; i < h->n_bucket_counts; i++)
			total += h->bucket_counts[i];
		assert_int_equal(total, h->count);
		assert_int_equal(h->count, 17);
		assert_int_equal(h->_sum_case,
				 OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___SUM_SUM);
		assert_true(h->sum == 1.5);
		assert_int_equal(h->_max_case,
				 OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___MAX_MAX);
		assert_true(h->max == 0.2);
		assert_int_equal(h->start_time_unix_nano, START);
		/* No call yet (metrics exporter): no max, count 0. */
		h = m->histogram->data_points[1];
		assert_int_equal(h->count, 0);
		assert_int_equal(
		    h->_max_case,
		    OPENTELEMETRY__PROTO__METRICS__V1__HISTOGRAM_DATA_POINT___MAX__NOT_SET);
	}
	unpacked_free(r);
}

/* Later snapshot, larger counters: every monotonic sum point must not go down. */
static void test_cumulative_sums_are_monotonic(void **state)
{
	struct selfstats a, b;
	Request *ra, *rb;
	const Opentelemetry__Proto__Metrics__V1__ScopeMetrics *sa, *sb;
	size_t grew = 0;

	fill(&a, 0);
	fill(&b, 5);
	ra = encode(&a, NULL);
	rb = encode(&b, NULL);
	sa = ra->resource_metrics[0]->scope_metrics[0];
	sb = rb->resource_metrics[0]->scope_metrics[0];
	assert_int_equal(sa->n_metrics, sb->n_metrics);
	for (size_t i = 0; i < sa->n_metrics; i++) {
		const Metric *ma = sa->metrics[i], *mb = sb->metrics[i];

		assert_string_equal(ma->name, mb->name);
		if (ma->data_case != OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM)
			continue;
		assert_int_equal(ma->sum->n_data_points, mb->sum->n_data_points);
		for (size_t j = 0; j < ma->sum->n_data_points; j++) {
			Point *pa = ma->sum->data_points[j], *pb = mb->sum->data_points[j];

			assert_int_equal(pa->start_time_unix_nano, pb->start_time_unix_nano);
			assert_true(pb->time_unix_nano > pa->time_unix_nano);
			if (pa->value_case ==
			    OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT) {
				assert_true(pb->as_int >= pa->as_int);
				grew += pb->as_int > pa->as_int;
			}
		}
	}
	assert_true(grew >= 20);
	unpacked_free(ra);
	unpacked_free(rb);
}

/* The python section of --stats-json, as metrics: every counter in its own series. */
static void test_python_counters(void **state)
{
	struct selfstats st;
	Request *r;
	const Metric *m;

	fill(&st, 0);
	r = encode(&st, NULL);
	assert_int_equal(value(r, "spanprof.python.walks", "reason", "end", NULL, NULL),
			 st.py_walks[PY_STOP_END]);
	assert_int_equal(value(r, "spanprof.python.walks", "reason", "read_failed", NULL, NULL),
			 st.py_walks[PY_STOP_READ_FAILED]);
	assert_int_equal(value(r, "spanprof.python.walks", "reason", "depth", NULL, NULL),
			 st.py_walks[PY_STOP_DEPTH]);
	m = find_metric(r, "spanprof.python.walks");
	assert_non_null(m);
	assert_int_equal(m->sum->n_data_points, PY_STOP_COUNT - 1); /* every reason, no "none" */
	assert_int_equal(value(r, "spanprof.python.processes", "outcome", "described", NULL, NULL),
			 21);
	assert_int_equal(value(r, "spanprof.python.processes", "outcome", "not_described", "reason",
			       pytab__failure_name((enum pytab_failure)(PYTAB_FAIL_COUNT - 1))),
			 22);
	assert_int_equal(value(r, "spanprof.python.processes.tracked", NULL, NULL, NULL, NULL), 20);
	assert_int_equal(value(r, "spanprof.python.files_not_cpython", NULL, NULL, NULL, NULL), 23);
	/* Each sample in one series: placed ones cut are placed_cut only. */
	assert_int_equal(value(r, "spanprof.python.samples", "outcome", "placed", NULL, NULL),
			 190 - 26);
	assert_int_equal(value(r, "spanprof.python.samples", "outcome", "placed_cut", NULL, NULL),
			 26);
	assert_int_equal(value(r, "spanprof.python.samples", "outcome", "not_placed", NULL, NULL),
			 27);
	assert_int_equal(value(r, "spanprof.python.samples", "outcome", "dropped", NULL, NULL), 28);
	assert_int_equal(
	    value(r, "spanprof.python.samples", "outcome", "process_not_described", NULL, NULL),
	    29);
	assert_int_equal(value(r, "spanprof.python.frames", "outcome", "named", NULL, NULL), 400);
	assert_int_equal(value(r, "spanprof.python.frames", "outcome", "unnamed", NULL, NULL),
			 31 - 30);
	assert_int_equal(value(r, "spanprof.python.frames", "outcome", "stale", NULL, NULL), 30);
	assert_int_equal(value(r, "spanprof.python.read_errors", "reason",
			       pyproc__error_name((enum pyproc_error)(PYPROC_ERR_COUNT - 1)), NULL,
			       NULL),
			 24);
	assert_int_equal(value(r, "spanprof.python.code_objects", "source", "cache", NULL, NULL),
			 300);
	assert_int_equal(value(r, "spanprof.python.code_objects", "source", "read", NULL, NULL),
			 25);
	unpacked_free(r);
}

static void test_features_off_leave_their_metrics_out(void **state)
{
	struct selfstats st;
	Request *r;
	const Metric *m;

	fill(&st, 0);
	st.cfi = 0;
	st.span_links = 0;
	st.python = 0;
	st.nmaps = 0;
	st.nexports = 0;
	r = encode(&st, NULL);
	assert_null(find_metric(r, "spanprof.unwind.stops"));
	assert_null(find_metric(r, "spanprof.span_links.samples"));
	assert_null(find_metric(r, "spanprof.python.walks"));
	assert_null(find_metric(r, "spanprof.python.processes"));
	assert_null(find_metric(r, "spanprof.bpf.map.entries"));
	assert_null(find_metric(r, "spanprof.export.requests"));
	assert_non_null(find_metric(r, "spanprof.samples"));
	m = find_metric(r, "spanprof.processes.tracked");
	assert_non_null(m);
	assert_int_equal(m->gauge->n_data_points, 1);
	unpacked_free(r);
}

static void test_resource_in_request(void **state)
{
	struct selfstats st;
	struct selfstats_resource res;
	const Opentelemetry__Proto__Resource__V1__Resource *rr;
	Request *r;
	int pid_seen = 0;

	assert_int_equal(
	    selfstats__resource_build("agent", "team=infra", "1.2.3", "node-1", "id-1", 4242, &res),
	    0);
	fill(&st, 0);
	r = encode(&st, &res);
	rr = r->resource_metrics[0]->resource;
	assert_non_null(rr);
	assert_string_equal(attr(rr->attributes, rr->n_attributes, "service.name"), "agent");
	assert_string_equal(attr(rr->attributes, rr->n_attributes, "team"), "infra");
	assert_string_equal(attr(rr->attributes, rr->n_attributes, "service.version"), "1.2.3");
	assert_string_equal(attr(rr->attributes, rr->n_attributes, "host.name"), "node-1");
	assert_string_equal(attr(rr->attributes, rr->n_attributes, "service.instance.id"), "id-1");
	for (size_t i = 0; i < rr->n_attributes; i++)
		if (!strcmp(rr->attributes[i]->key, "process.pid")) {
			assert_int_equal(
			    rr->attributes[i]->value->value_case,
			    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE);
			assert_int_equal(rr->attributes[i]->value->int_value, 4242);
			pid_seen++;
		}
	assert_int_equal(pid_seen, 1);
	unpacked_free(r);
	selfstats__resource_clear(&res);
}

static void test_resource_service_name_precedence(void **state)
{
	struct selfstats_resource res;

	/* OTEL_SERVICE_NAME wins over service.name in the attributes. */
	assert_int_equal(selfstats__resource_build("env-name", "service.name=attr-name", NULL, NULL,
						   NULL, 1, &res),
			 0);
	assert_string_equal(res.attrs[0].key, "service.name");
	assert_string_equal(res.attrs[0].str, "env-name");
	for (size_t i = 1; i < res.nattrs; i++)
		assert_string_not_equal(res.attrs[i].key, "service.name");
	selfstats__resource_clear(&res);
	assert_int_equal(res.nattrs, 0);

	/* Empty OTEL_SERVICE_NAME counts as unset. */
	assert_int_equal(
	    selfstats__resource_build("", "service.name=attr-name", NULL, NULL, NULL, 1, &res), 0);
	assert_string_equal(selfstats__resource_get(&res, "service.name"), "attr-name");
	selfstats__resource_clear(&res);

	/* Neither: "spanprof". */
	assert_int_equal(selfstats__resource_build(NULL, NULL, NULL, NULL, NULL, 1, &res), 0);
	assert_string_equal(selfstats__resource_get(&res, "service.name"), "spanprof");
	selfstats__resource_clear(&res);
}

static void test_resource_attributes_decoded_and_operator_wins(void **state)
{
	struct selfstats_resource res;

	assert_int_equal(selfstats__resource_build(NULL,
						   " deployment.environment = prod%2Ceu , "
						   "note=a%20b%3Dc,service.instance.id=fixed,"
						   "note=later",
						   "1.0", "h", "random-id", 7, &res),
			 0);
	assert_string_equal(selfstats__resource_get(&res, "deployment.environment"), "prod,eu");
	assert_string_equal(selfstats__resource_get(&res, "note"), "later");
	assert_string_equal(selfstats__resource_get(&res, "service.instance.id"), "fixed");
	assert_string_equal(selfstats__resource_get(&res, "service.name"), "spanprof");
	selfstats__resource_clear(&res);
}

static void test_malformed_resource_attributes_are_discarded(void **state)
{
	static const char *const bad[] = {"a=1,novalue,b=2", "=x", "a=%zz", "a=%00"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct selfstats_resource res;

		assert_int_equal(
		    selfstats__resource_build("svc", bad[i], "1.0", "h", "id", 9, &res), -EINVAL);
		/* The whole variable is dropped; the agent's own attributes stay. */
		assert_null(selfstats__resource_get(&res, "a"));
		assert_null(selfstats__resource_get(&res, "b"));
		assert_string_equal(selfstats__resource_get(&res, "service.name"), "svc");
		assert_string_equal(selfstats__resource_get(&res, "service.version"), "1.0");
		assert_int_equal(res.nattrs, 5);
		selfstats__resource_clear(&res);
	}
}

static void test_resource_from_env(void **state)
{
	struct selfstats_resource a, b;
	const char *id;

	setenv("OTEL_SERVICE_NAME", "from-env", 1);
	setenv("OTEL_RESOURCE_ATTRIBUTES", "k=v%21", 1);
	assert_int_equal(selfstats__resource_from_env(&a), 0);
	assert_int_equal(selfstats__resource_from_env(&b), 0);
	assert_string_equal(selfstats__resource_get(&a, "service.name"), "from-env");
	assert_string_equal(selfstats__resource_get(&a, "k"), "v!");
	id = selfstats__resource_get(&a, "service.instance.id");
	assert_non_null(id);
	/* A version-4 UUID, different for every run. */
	assert_int_equal(strlen(id), 36);
	assert_int_equal(id[14], '4');
	assert_true(strchr("89ab", id[19]) != NULL);
	assert_string_not_equal(id, selfstats__resource_get(&b, "service.instance.id"));
	selfstats__resource_clear(&a);
	selfstats__resource_clear(&b);
	unsetenv("OTEL_SERVICE_NAME");
	unsetenv("OTEL_RESOURCE_ATTRIBUTES");
}

static void test_log_lines(void **state)
{
	struct selfstats st;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int lines = 0;

	fill(&st, 0);
	selfstats__log(f, &st);
	fclose(f);
	for (char *l = text, *nl; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		assert_non_null(nl);
		assert_memory_equal(l, "spanprof: info: stats ", 22);
		lines++;
	}
	assert_int_equal(lines, 10);
	{
		char want[160];

		snprintf(want, sizeof(want),
			 "stats python processes=21 processes_now=20 walks=200 stop.end=%llu ",
			 (unsigned long long)st.py_walks[PY_STOP_END]);
		assert_non_null(strstr(text, want));
		assert_non_null(strstr(text, " samples.placed=190 samples.cut=26 "));
		assert_non_null(strstr(text, " frames.named=400 frames.unnamed=31\n"));
	}
	assert_non_null(strstr(text, " uptime_s=60.0 recorded=1000 "));
	assert_non_null(strstr(text, " dropped.out_of_memory=3 "));
	/* Ring buffer drops of every type recorded; the event types have their own keys. */
	{
		char want[96];

		snprintf(want, sizeof(want), " dropped.ringbuf_full=%llu ",
			 (unsigned long long)(st.bpf[SP_STAT_DROP_RINGBUF] +
					      st.bpf[SP_STAT_ALLOC_DROP]));
		assert_non_null(strstr(text, want));
		snprintf(want, sizeof(want), " recorded.alloc=10 dropped.alloc=%llu\n",
			 (unsigned long long)st.bpf[SP_STAT_ALLOC_DROP]);
		assert_non_null(strstr(text, want));
		assert_null(strstr(text, "recorded.lock"));
	}
	assert_non_null(strstr(text, " unwind_procs=7/8192 "));
	assert_non_null(
	    strstr(text, " fileid.named=16 fileid.unknown=0 jit.named=0 jit.unnamed=17 "));
	assert_non_null(strstr(text, "stats export.profiles sent=12 failed=1 dropped=2 "));
	assert_non_null(strstr(text, " calls.UNAVAILABLE=4"));
	assert_non_null(strstr(text, " duration_ms.max=200.0"));
	assert_non_null(strstr(text, " rss_mb=40.0\n"));
	assert_non_null(strstr(text, " cpu_s=1.75 "));
	free(text);
}

static void test_small_parsers(void **state)
{
	uint64_t rss = 0;

	assert_int_equal(selfstats__parse_log_level("error"), SELFSTATS_LOG_ERROR);
	assert_int_equal(selfstats__parse_log_level("WARN"), SELFSTATS_LOG_WARN);
	assert_int_equal(selfstats__parse_log_level("info"), SELFSTATS_LOG_INFO);
	assert_int_equal(selfstats__parse_log_level("debug"), SELFSTATS_LOG_DEBUG);
	assert_int_equal(selfstats__parse_log_level("verbose"), -EINVAL);
	assert_int_equal(selfstats__parse_log_level(""), -EINVAL);
	assert_int_equal(selfstats__parse_statm("2000 300 50 1 0 100 0\n", 4096, &rss), 0);
	assert_int_equal(rss, 300 * 4096);
	assert_int_equal(selfstats__parse_statm("garbage", 4096, &rss), -EINVAL);
	assert_int_equal(selfstats__parse_statm("1", 4096, &rss), -EINVAL);
	assert_string_equal(otlp_exporter__status_name(14), "UNAVAILABLE");
	assert_string_equal(otlp_exporter__status_name(99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_metric_is_well_formed),
	    cmocka_unit_test(test_values_land_in_the_right_series),
	    cmocka_unit_test(test_cumulative_sums_are_monotonic),
	    cmocka_unit_test(test_python_counters),
	    cmocka_unit_test(test_features_off_leave_their_metrics_out),
	    cmocka_unit_test(test_resource_in_request),
	    cmocka_unit_test(test_resource_service_name_precedence),
	    cmocka_unit_test(test_resource_attributes_decoded_and_operator_wins),
	    cmocka_unit_test(test_malformed_resource_attributes_are_discarded),
	    cmocka_unit_test(test_resource_from_env),
	    cmocka_unit_test(test_log_lines),
	    cmocka_unit_test(test_small_parsers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
