/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_export: ships serialized ExportProfilesServiceRequest messages to an
 * OTLP/gRPC endpoint from a sender thread, through a bounded queue, with
 * retries (exponential backoff with jitter) on the retryable statuses
 * (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED, OUT_OF_RANGE,
 * DATA_LOSS, RESOURCE_EXHAUSTED), as the OTLP specification (in the
 * opentelemetry-proto repository: "OTLP/gRPC Throttling" and "Failures")
 * describes. Method:
 * /opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export.
 */
#ifndef SPANPROF_OTLP_EXPORT_H
#define SPANPROF_OTLP_EXPORT_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>

#include "otlp/export_queue.h"
#include "otlp/grpc_client.h"

#define OTLP_PROFILES_METHOD                                                                       \
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
/* spanprof's own telemetry (--self-metrics, docs/self-telemetry.md). */
#define OTLP_METRICS_METHOD "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"

/* gRPC status codes 0..16 (grpc/status.h), for the per-status counters. */
#define OTLP_GRPC_STATUS_COUNT 17
/*
 * Upper bounds, in seconds, of the Export call duration histogram buckets; one more bucket
 * counts the calls above the last bound.
 */
#define OTLP_EXPORT_DURATION_BOUNDS 12
extern const double otlp_export_duration_bounds_s[OTLP_EXPORT_DURATION_BOUNDS];

struct otlp_exporter;

struct otlp_exporter_opts {
	struct grpc_client_opts grpc;
	uint32_t timeout_ms;   /* deadline of one Export call */
	size_t queue_bytes;    /* bound of the queue */
	const char *binpb_dir; /* also write each request as DIR/profiles-NNNNNN.binpb; NULL: no */
	int quiet;	       /* no error lines on stderr */
	/*
	 * gRPC method to call; NULL: OTLP_PROFILES_METHOD. The response must have the layout of
	 * every OTLP Export*ServiceResponse (partial_success = 1 {rejected = 1, error_message =
	 * 2}).
	 */
	const char *method;
	const char *what; /* what partial_success rejects, for messages; NULL: "profiles" */
};

/*
 * What became of the requests of one profile type (each request carries one type:
 * otlp_encode.h). Every sample submitted is counted once: sent, failed or dropped (or still
 * queued).
 */
struct otlp_type_stats {
	uint64_t requests_sent, samples_sent;
	uint64_t failed, failed_samples; /* refused: non-retryable status, not retried */
	uint64_t dropped_samples;	 /* queue full, or not sent before shutdown */
	int failed_status;		 /* gRPC status of the first refusal; 0: none */
	char failed_message[160];	 /* its message (truncated), "" when none */
};

struct otlp_exporter_stats {
	uint64_t requests_sent; /* completed with OK */
	uint64_t bytes_sent;	/* serialized bytes of those (before gRPC compression) */
	uint64_t samples_sent;
	uint64_t retries;
	uint64_t failed; /* given up: non-retryable status (not counted in dropped) */
	uint64_t failed_samples;
	uint64_t dropped; /* queue full, or not sent before shutdown */
	uint64_t dropped_samples;
	uint64_t rejected_profiles; /* partial_success.rejected_<what>, summed */
	size_t queued;		    /* waiting or in flight */
	size_t queued_bytes;
	uint64_t last_latency_us; /* of the last successful call */
	/* Every Export call made (retries included), by the gRPC status it ended with. */
	uint64_t calls_by_status[OTLP_GRPC_STATUS_COUNT];
	/* Requests given up on (non-retryable status), by that status. Sum = failed. */
	uint64_t failed_by_status[OTLP_GRPC_STATUS_COUNT];
	/* Duration of every Export call, seconds: histogram (buckets: see the bounds above). */
	uint64_t calls;
	double call_seconds_sum, call_seconds_max;
	uint64_t call_buckets[OTLP_EXPORT_DURATION_BOUNDS + 1];
	/* By the profile type of the requests (requests without one: in none). */
	struct otlp_type_stats by_type[PROFILE_NTYPES];
};

/* "OK", "UNAVAILABLE", ... for a gRPC status code; "?" for an unknown one. */
const char *otlp_exporter__status_name(int status);

/* Starts the sender thread. NULL + errno (EINVAL: bad endpoint or TLS files). */
struct otlp_exporter *otlp_exporter__new(const struct otlp_exporter_opts *opts);

/*
 * Queues one request (takes ownership of malloc'd @data) carrying @samples
 * samples of profile type @type (enum profile_type; EXPORT_NO_TYPE for requests that are not
 * profiles); with binpb_dir set, first writes it to the next numbered file.
 * Never blocks on the network. 0 or -errno (the data is still consumed).
 */
int otlp_exporter__submit(struct otlp_exporter *e, uint8_t *data, size_t len, uint64_t samples,
			  int type);

/*
 * Stops accepting requests and waits up to @flush_ms for the queue to drain
 * (retrying as usual until then); what is left is dropped and counted. When
 * *@abort (may be NULL) becomes non-zero meanwhile, stops waiting at once.
 * Joins the sender thread. Safe to call more than once; free() calls it with 0.
 */
void otlp_exporter__shutdown(struct otlp_exporter *e, uint32_t flush_ms,
			     const volatile sig_atomic_t *abort);
void otlp_exporter__free(struct otlp_exporter *e);
void otlp_exporter__stats(struct otlp_exporter *e, struct otlp_exporter_stats *out);

#endif
