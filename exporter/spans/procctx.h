/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procctx: the process context an OpenTelemetry SDK publishes for external readers (OTEP 4719).
 * A mapping named OTEL_CTX (/proc/PID/maps: "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]" or
 * "/memfd:OTEL_CTX") starts with a 32-byte header, host endian:
 *   signature char[8] "OTEL_CTX" | version u32 (2; 1 during development) | payload_size u32 |
 *   published_at_ns u64 (0 while an update is in progress) | payload u64 (a pointer anywhere in
 *   the process).
 * The payload is a protobuf opentelemetry.proto.processcontext.v1development.ProcessContext
 * {Resource resource = 1; repeated KeyValue attributes = 2} (otlp-proto/); a payload that is a
 * bare opentelemetry.proto.resource.v1.Resource (an earlier revision of the OTEP) is accepted
 * too. The attributes carry OTEP 4947's threadlocal.schema_version and
 * threadlocal.attribute_key_map, the names of the thread-context record's key indexes
 * (threadctx.h).
 */
#ifndef SPANPROF_PROCCTX_H
#define SPANPROF_PROCCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCCTX_HEADER_SIZE 32
#define PROCCTX_MAX_PAYLOAD (64 * 1024)
#define PROCCTX_MAX_KEYS 256
#define PROCCTX_MAX_TRIES 3

/* One resource attribute; the value rendered as a string (string, int, bool, double). */
struct procctx_attr {
	char *key;
	char *value;
};

/* A decoded process context. Every string and array is owned by the struct (procctx__free()). */
struct procctx {
	char *service_name;	       /* resource service.name, NULL if absent */
	struct procctx_attr *resource; /* all resource attributes with a scalar value, in order */
	size_t nresource;
	/* threadlocal.schema_version, NULL if absent. Any value is kept and gates nothing: OTEP
	 * 4947 as merged says "tlsdesc_v1_dev", to become "tls_v1"; both are read alike (the
	 * record is found by its variable's versioned name, otel_thread_ctx_v1). */
	char *schema_version;
	/* threadlocal.attribute_key_map: key_map[key_index] is the attribute's name ("" for an
	 * entry that is not a string); at most PROCCTX_MAX_KEYS entries. From
	 * ProcessContext.attributes, else from the resource attributes. */
	char **key_map;
	size_t nkeys;
	uint64_t published_at_ns; /* from the header (0 from procctx__decode()) */
};

/*
 * Reads the process context of @pid into @out (zeroed first; procctx__free() it on success),
 * following OTEP 4719's reading protocol: header checks, payload read, header re-read; an
 * update in progress (published_at_ns 0, or changed under the read) is retried, at most
 * PROCCTX_MAX_TRIES reads in all. A mapping with a bad signature or version is skipped.
 * Returns 0, -ENOENT (no OTEL_CTX mapping), -EBADMSG (no mapping with a good header, payload over
 * PROCCTX_MAX_PAYLOAD or unreadable, or not decodable), -EAGAIN (kept changing), -ESRCH (process
 * gone), -ENOMEM, or another -errno of reading the process (-EPERM).
 */
int procctx__read(pid_t pid, struct procctx *out);

/*
 * Decodes the @len payload bytes at @payload into @out (zeroed first; procctx__free() it on
 * success). Pure: for tests and fuzzing. 0, -EBADMSG (not a ProcessContext nor a Resource),
 * -ENOMEM.
 */
int procctx__decode(const uint8_t *payload, size_t len, struct procctx *out);

/*
 * Whether a /proc/PID/maps path names a process context mapping: it starts with
 * "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]" or "/memfd:OTEL_CTX" (procmaps strips " (deleted)").
 */
bool procctx__is_mapping_name(const char *path);

/* Frees what @c holds and zeroes it; NULL and an already freed struct are fine. */
void procctx__free(struct procctx *c);

#endif /* SPANPROF_PROCCTX_H */
