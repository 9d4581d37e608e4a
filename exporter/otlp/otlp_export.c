/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <grpc/status.h>

#include "otlp/export_queue.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "otlp/otlp_export.h"
#include "util/util.h"

#define BACKOFF_INITIAL_MS 500
#define BACKOFF_MAX_MS 30000
/* While the queue drains at shutdown: a retry at least this often until the flush deadline (a
 * backoff of up to 30 s, begun before the stop, would otherwise outlast the deadline and drop the
 * request without another try, though the Collector came back meanwhile). */
#define BACKOFF_FLUSH_MS 1000
/* Repeated failures are reported at most this often. */
#define ERROR_REPORT_NS (30 * 1000000000ull)

struct otlp_exporter {
	struct otlp_exporter_opts opts;
	char *endpoint;
	char *binpb_dir;
	struct grpc_client *client;
	struct export_queue *queue;
	pthread_t thread;
	int thread_started;
	pthread_mutex_t lock; /* guards the fields below */
	pthread_cond_t wake;
	int shutting_down;
	uint64_t flush_deadline_ns; /* CLOCK_MONOTONIC; valid when shutting_down */
	uint64_t file_seq;
	struct otlp_exporter_stats st;
	uint64_t last_error_report_ns;
	int failing;
};

const double otlp_export_duration_bounds_s[OTLP_EXPORT_DURATION_BOUNDS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

/*
 * The retryable gRPC statuses of the OTLP specification ("OTLP/gRPC Response", "Failures", table
 * of retryable codes): CANCELLED (a server that cancels a call past its grpc-timeout answers so),
 * DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS; and RESOURCE_EXHAUSTED, which
 * the specification retries when the server sends RetryInfo and which is also the agent's own
 * "out of memory" outcome: always retried here.
 */
static int retryable(int status)
{
	switch (status) {
	case GRPC_STATUS_CANCELLED:
	case GRPC_STATUS_DEADLINE_EXCEEDED:
	case GRPC_STATUS_RESOURCE_EXHAUSTED:
	case GRPC_STATUS_ABORTED:
	case GRPC_STATUS_OUT_OF_RANGE:
	case GRPC_STATUS_UNAVAILABLE:
	case GRPC_STATUS_DATA_LOSS:
		return 1;
	default:
		return 0;
	}
}

const char *otlp_exporter__status_name(int status)
{
	static const char *const names[] = {
	    "OK",
	    "CANCELLED",
	    "UNKNOWN",
	    "INVALID_ARGUMENT",
	    "DEADLINE_EXCEEDED",
	    "NOT_FOUND",
	    "ALREADY_EXISTS",
	    "PERMISSION_DENIED",
	    "RESOURCE_EXHAUSTED",
	    "FAILED_PRECONDITION",
	    "ABORTED",
	    "OUT_OF_RANGE",
	    "UNIMPLEMENTED",
	    "INTERNAL",
	    "UNAVAILABLE",
	    "DATA_LOSS",
	    "UNAUTHENTICATED",
	};

	return status >= 0 && status < (int)(sizeof(names) / sizeof(names[0])) ? names[status]
									       : "?";
}

/* Logs a failure, at most once per ERROR_REPORT_NS while failures go on. */
static void report_failure(struct otlp_exporter *e, const struct grpc_result *res, int retry)
{
	uint64_t now = util__mono_ns();

	if (e->opts.quiet)
		return;
	pthread_mutex_lock(&e->lock);
	if (!e->failing || now - e->last_error_report_ns >= ERROR_REPORT_NS) {
		fprintf(stderr, "\nspanprof: export to %s failed: %s%s%s%s\n", e->endpoint,
			otlp_exporter__status_name(res->status), res->message[0] ? ": " : "",
			res->message,
			retry ? " (retrying with backoff)" : " (not retryable: request dropped)");
		e->last_error_report_ns = now;
	}
	e->failing = 1;
	pthread_mutex_unlock(&e->lock);
}

/*
 * Every OTLP Export*ServiceResponse has the same wire layout (partial_success = 1 {rejected = 1
 * int64, error_message = 2}): the profiles decoder reads the metrics response as well.
 */
static void check_partial_success(struct otlp_exporter *e, const void *resp, size_t len)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse *r;

	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
	    NULL, len, resp);
	if (!r)
		return;
	if (r->partial_success &&
	    (r->partial_success->rejected_profiles ||
	     (r->partial_success->error_message && r->partial_success->error_message[0]))) {
		pthread_mutex_lock(&e->lock);
		e->st.rejected_profiles += r->partial_success->rejected_profiles;
		pthread_mutex_unlock(&e->lock);
		if (!e->opts.quiet)
			fprintf(stderr, "\nspanprof: the Collector rejected %lld %s: %s\n",
				(long long)r->partial_success->rejected_profiles,
				e->opts.what ? e->opts.what : "profiles",
				r->partial_success->error_message
				    ? r->partial_success->error_message
				    : "");
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(
	    r, NULL);
}

static struct timespec mono_timespec(uint64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull};

	return ts;
}

/*
 * Sleeps @ms, or less when a shutdown's flush deadline comes first (the wake
 * condvar runs on CLOCK_MONOTONIC, like the deadline); from the shutdown on, at
 * most BACKOFF_FLUSH_MS more. Returns 1 once the flush deadline has passed.
 */
static int backoff_wait(struct otlp_exporter *e, uint32_t ms)
{
	uint64_t end = util__mono_ns() + ms * 1000000ull, until, now;
	struct timespec ts;
	int over, flushing = 0;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		now = util__mono_ns();
		if (e->shutting_down && !flushing) {
			flushing = 1;
			if (end > now + BACKOFF_FLUSH_MS * 1000000ull)
				end = now + BACKOFF_FLUSH_MS * 1000000ull;
		}
		until = end;
		if (e->shutting_down && e->flush_deadline_ns < until)
			until = e->flush_deadline_ns;
		if (now >= until)
			break;
		ts = mono_timespec(until);
		pthread_cond_timedwait(&e->wake, &e->lock, &ts);
	}
	over = e->shutting_down && util__mono_ns() >= e->flush_deadline_ns;
	pthread_mutex_unlock(&e->lock);
	return over;
}

/* Deadline of the next call: the configured one, cut short by a shutdown's flush deadline. */
static uint32_t call_timeout(struct otlp_exporter *e, int *expired)
{
	uint32_t t = e->opts.timeout_ms;
	uint64_t now = util__mono_ns();

	*expired = 0;
	pthread_mutex_lock(&e->lock);
	if (e->shutting_down) {
		if (now >= e->flush_deadline_ns)
			*expired = 1;
		else if ((e->flush_deadline_ns - now) / 1000000 < t)
			t = (e->flush_deadline_ns - now) / 1000000 + 1;
	}
	pthread_mutex_unlock(&e->lock);
	return t;
}

/* Counts one finished call: its status and its duration. Under e->lock. */
static void count_call(struct otlp_exporter *e, int status, uint64_t ns)
{
	double secs = ns / 1e9;
	int b = 0;

	if (status >= 0 && status < OTLP_GRPC_STATUS_COUNT)
		e->st.calls_by_status[status]++;
	while (b < OTLP_EXPORT_DURATION_BOUNDS && secs > otlp_export_duration_bounds_s[b])
		b++;
	e->st.call_buckets[b]++;
	e->st.calls++;
	e->st.call_seconds_sum += secs;
	if (secs > e->st.call_seconds_max)
		e->st.call_seconds_max = secs;
}

/* Counts request @r of its type as refused with @res (first refusal: its status kept). */
static void count_type_failure(struct otlp_type_stats *t, const struct export_request *r,
			       const struct grpc_result *res)
{
	t->failed++;
	t->failed_samples += r->samples;
	if (!t->failed_status) {
		size_t n = strnlen(res->message, sizeof(t->failed_message) - 1);

		t->failed_status = res->status;
		memcpy(t->failed_message, res->message, n);
		t->failed_message[n] = '\0';
	}
}

static void send_one(struct otlp_exporter *e, struct export_request *r)
{
	uint32_t backoff = BACKOFF_INITIAL_MS, jitter, timeout;
	struct grpc_result res;
	void *resp;
	size_t resp_len;
	uint64_t t0;
	int expired;

	for (;;) {
		timeout = call_timeout(e, &expired);
		if (expired || export_queue__should_drop(e->queue, r))
			break;
		t0 = util__mono_ns();
		if (grpc_client__call(e->client, e->opts.method, r->data, r->len, timeout, &res,
				      &resp, &resp_len)) {
			res.status = GRPC_STATUS_RESOURCE_EXHAUSTED;
			snprintf(res.message, sizeof(res.message), "agent out of memory");
		}
		pthread_mutex_lock(&e->lock);
		count_call(e, res.status, util__mono_ns() - t0);
		pthread_mutex_unlock(&e->lock);
		if (res.status == GRPC_STATUS_OK) {
			check_partial_success(e, resp, resp_len);
			free(resp);
			pthread_mutex_lock(&e->lock);
			e->st.requests_sent++;
			e->st.bytes_sent += r->len;
			e->st.samples_sent += r->samples;
			if (r->type >= 0 && r->type < PROFILE_NTYPES) {
				e->st.by_type[r->type].requests_sent++;
				e->st.by_type[r->type].samples_sent += r->samples;
			}
			e->st.last_latency_us = (util__mono_ns() - t0) / 1000;
			if (e->failing && !e->opts.quiet)
				fprintf(stderr, "\nspanprof: export to %s works again\n",
					e->endpoint);
			e->failing = 0;
			pthread_mutex_unlock(&e->lock);
			export_queue__done(e->queue, r, 0);
			return;
		}
		free(resp);
		if (!retryable(res.status)) {
			report_failure(e, &res, 0);
			pthread_mutex_lock(&e->lock);
			e->st.failed++;
			e->st.failed_samples += r->samples;
			if (res.status >= 0 && res.status < OTLP_GRPC_STATUS_COUNT)
				e->st.failed_by_status[res.status]++;
			if (r->type >= 0 && r->type < PROFILE_NTYPES)
				count_type_failure(&e->st.by_type[r->type], r, &res);
			pthread_mutex_unlock(&e->lock);
			/* Failed, not dropped: each request is counted under one outcome. */
			export_queue__done(e->queue, r, 0);
			return;
		}
		report_failure(e, &res, 1);
		pthread_mutex_lock(&e->lock);
		e->st.retries++;
		pthread_mutex_unlock(&e->lock);
		/* Full jitter over the upper half: spreads agents restarting together. */
		if (getrandom(&jitter, sizeof(jitter), GRND_NONBLOCK) != sizeof(jitter))
			jitter = (uint32_t)t0;
		if (backoff_wait(e, backoff / 2 + jitter % (backoff / 2 + 1)))
			break;
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	export_queue__done(e->queue, r, 1);
}

static void *sender_main(void *arg)
{
	struct otlp_exporter *e = arg;
	struct export_request *r;

	while ((r = export_queue__take(e->queue, -1)))
		send_one(e, r);
	return NULL;
}

struct otlp_exporter *otlp_exporter__new(const struct otlp_exporter_opts *opts)
{
	struct otlp_exporter *e = calloc(1, sizeof(*e));
	int err;

	if (!e)
		return NULL;
	e->opts = *opts;
	pthread_condattr_t ca;

	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_condattr_destroy(&ca);
	e->endpoint = strdup(opts->grpc.endpoint ? opts->grpc.endpoint : "");
	e->binpb_dir = opts->binpb_dir ? strdup(opts->binpb_dir) : NULL;
	e->opts.grpc.endpoint = e->endpoint;
	e->opts.binpb_dir = e->binpb_dir;
	if (!e->opts.method)
		e->opts.method = OTLP_PROFILES_METHOD;
	if (!e->endpoint || (opts->binpb_dir && !e->binpb_dir)) {
		err = -ENOMEM;
		goto cleanup;
	}
	e->client = grpc_client__new(&e->opts.grpc);
	if (!e->client) {
		err = -errno;
		goto cleanup;
	}
	e->queue = export_queue__new(opts->queue_bytes);
	if (!e->queue) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = -pthread_create(&e->thread, NULL, sender_main, e);
	if (err)
		goto cleanup;
	e->thread_started = 1;
	return e;
cleanup:
	otlp_exporter__free(e);
	errno = -err;
	return NULL;
}

static int write_binpb(struct otlp_exporter *e, const uint8_t *data, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 24];
	uint64_t seq;
	FILE *f;
	int err = 0;

	pthread_mutex_lock(&e->lock);
	seq = ++e->file_seq;
	pthread_mutex_unlock(&e->lock);
	snprintf(path, sizeof(path), "%s/profiles-%06llu.binpb", e->binpb_dir,
		 (unsigned long long)seq);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int otlp_exporter__submit(struct otlp_exporter *e, uint8_t *data, size_t len, uint64_t samples,
			  int type)
{
	int err;

	if (e->binpb_dir) {
		err = write_binpb(e, data, len);
		if (err && !e->opts.quiet)
			fprintf(stderr, "\nspanprof: writing a request file into %s failed: %s\n",
				e->binpb_dir, strerror(-err));
	}
	return export_queue__push(e->queue, data, len, samples, type);
}

void otlp_exporter__shutdown(struct otlp_exporter *e, uint32_t flush_ms,
			     const volatile sig_atomic_t *abort)
{
	struct timespec ts;

	if (!e || !e->thread_started)
		return;
	pthread_mutex_lock(&e->lock);
	e->shutting_down = 1;
	e->flush_deadline_ns = util__mono_ns() + flush_ms * 1000000ull;
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	export_queue__close(e->queue);
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(e->thread, NULL, &ts) == 0)
			break;
		if (abort && *abort) {
			/* Asked again: give up on what is left (counted as dropped). */
			pthread_mutex_lock(&e->lock);
			e->flush_deadline_ns = util__mono_ns();
			pthread_cond_broadcast(&e->wake);
			pthread_mutex_unlock(&e->lock);
			abort = NULL;
		}
	}
	e->thread_started = 0;
}

void otlp_exporter__free(struct otlp_exporter *e)
{
	if (!e)
		return;
	otlp_exporter__shutdown(e, 0, NULL);
	export_queue__free(e->queue);
	grpc_client__free(e->client);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	free(e->endpoint);
	free(e->binpb_dir);
	free(e);
}

void otlp_exporter__stats(struct otlp_exporter *e, struct otlp_exporter_stats *out)
{
	struct export_queue_stats qs;

	pthread_mutex_lock(&e->lock);
	*out = e->st;
	pthread_mutex_unlock(&e->lock);
	export_queue__stats(e->queue, &qs);
	out->dropped += qs.dropped;
	out->dropped_samples += qs.dropped_samples;
	for (int t = 0; t < PROFILE_NTYPES; t++)
		out->by_type[t].dropped_samples += qs.dropped_samples_by_type[t];
	out->queued = qs.queued;
	out->queued_bytes = qs.queued_bytes;
}
