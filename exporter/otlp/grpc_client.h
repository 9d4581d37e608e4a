/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpc_client: one unary gRPC call at a time over gRPC C core (libgrpc),
 * for the OTLP exporter (OTLP/gRPC, opentelemetry-proto specification
 * "otlp.md": unary Export calls, gzip compression optional).
 *
 * The client owns one channel; gRPC reconnects it by itself when the server
 * restarts. Not thread-safe: one call at a time.
 */
#ifndef SPANPROF_GRPC_CLIENT_H
#define SPANPROF_GRPC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct grpc_client;

struct grpc_header {
	const char *key; /* lower-case ASCII, as gRPC metadata requires */
	const char *value;
};

struct grpc_client_opts {
	/* "host:port"; a leading http:// selects plaintext, https:// selects TLS. */
	const char *endpoint;
	int insecure;	       /* 1: plaintext; 0: TLS (also implied by https://) */
	const char *ca_file;   /* PEM roots; NULL: the system's (gRPC's default roots) */
	const char *cert_file; /* PEM client certificate for mTLS, with key_file */
	const char *key_file;
	const struct grpc_header *headers;
	size_t nheaders;
	int gzip; /* compress requests with gzip */
};

/* The status of one call: a gRPC status code (grpc/status.h) and its message. */
struct grpc_result {
	int status; /* GRPC_STATUS_OK (0) or a gRPC status code */
	char message[256];
};

/*
 * Checks that the TLS files of @o can be read and parse as PEM (certificates
 * in ca_file and cert_file, a private key in key_file). 0, or -errno with a
 * sentence naming the file in @why.
 */
int grpc_client__check_tls_files(const struct grpc_client_opts *o, char *why, size_t len);

/* NULL + errno (EINVAL bad endpoint or options, ENOENT/EACCES unreadable PEM file). */
struct grpc_client *grpc_client__new(const struct grpc_client_opts *opts);
void grpc_client__free(struct grpc_client *c);

/*
 * Calls @method (e.g. "/pkg.Service/Method") with the serialized request
 * @req/@len, waiting at most @timeout_ms. On GRPC_STATUS_OK, *@resp receives
 * a malloc'd copy of the serialized response (caller frees) and *@resp_len
 * its size. Returns 0 when the call completed (see @res for its status) or
 * -errno when it could not be made (ENOMEM).
 */
int grpc_client__call(struct grpc_client *c, const char *method, const void *req, size_t len,
		      uint32_t timeout_ms, struct grpc_result *res, void **resp, size_t *resp_len);

#endif
