/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/compression.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <grpc/support/log.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "otlp/endpoint.h"
#include "otlp/grpc_client.h"

struct grpc_client {
	grpc_channel *channel;
	grpc_completion_queue *cq;
	grpc_metadata *md;
	size_t nmd;
};

static int grpc_inited;

/*
 * gRPC core logs connection trouble on stderr by itself; the exporter reports
 * failures in its own words, so gRPC's lines only show with SPANPROF_DEBUG.
 */
static void grpc_log(gpr_log_func_args *args)
{
	if (getenv("SPANPROF_DEBUG"))
		fprintf(stderr, "spanprof: grpc: %s:%d: %s\n", args->file, args->line,
			args->message);
}

enum pem_kind { PEM_CERTS, PEM_KEY };

/* 0 when @path holds at least one PEM certificate (or a private key), else -errno + @why. */
static int check_pem(const char *path, enum pem_kind kind, char *why, size_t len)
{
	struct stat st;
	BIO *bio;
	void *obj;
	int err = 0;

	/* A FIFO would block the read: only regular files (stat() follows symlinks). */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s is not a regular file (want a PEM file)", path);
		return -EINVAL;
	}
	bio = BIO_new_file(path, "r");
	if (!bio) {
		err = -errno ? -errno : -EIO;
		snprintf(why, len, "cannot read %s: %s", path, strerror(-err));
		ERR_clear_error();
		return err;
	}
	obj = kind == PEM_CERTS ? (void *)PEM_read_bio_X509(bio, NULL, NULL, NULL)
				: (void *)PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	if (!obj) {
		err = -EINVAL;
		snprintf(why, len, "%s holds no PEM %s", path,
			 kind == PEM_CERTS ? "certificate" : "private key (or it is encrypted)");
	} else if (kind == PEM_CERTS) {
		X509_free(obj);
	} else {
		EVP_PKEY_free(obj);
	}
	ERR_clear_error();
	BIO_free(bio);
	return err;
}

int grpc_client__check_tls_files(const struct grpc_client_opts *o, char *why, size_t len)
{
	int err = 0;

	if (o->ca_file)
		err = check_pem(o->ca_file, PEM_CERTS, why, len);
	if (!err && o->cert_file)
		err = check_pem(o->cert_file, PEM_CERTS, why, len);
	if (!err && o->key_file)
		err = check_pem(o->key_file, PEM_KEY, why, len);
	return err;
}

static grpc_arg int_arg(const char *key, int value)
{
	grpc_arg a = {.type = GRPC_ARG_INTEGER, .key = (char *)key};

	a.value.integer = value;
	return a;
}

static char *read_pem(const char *path, int *err)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	long n;

	if (!f) {
		*err = -errno;
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		*err = -EIO;
		goto cleanup;
	}
	buf = malloc(n + 1);
	if (!buf) {
		*err = -ENOMEM;
		goto cleanup;
	}
	if (fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		*err = -EIO;
		goto cleanup;
	}
	buf[n] = '\0';
cleanup:
	fclose(f);
	return buf;
}

struct grpc_client *grpc_client__new(const struct grpc_client_opts *o)
{
	grpc_channel_credentials *creds = NULL;
	grpc_ssl_pem_key_cert_pair pair = {0};
	char *ca = NULL, *cert = NULL, *key = NULL;
	const char *target = o->endpoint;
	struct grpc_client *c = NULL;
	grpc_arg args[2];
	grpc_channel_args cargs = {.num_args = 0, .args = args};
	int insecure = o->insecure, err = 0;
	struct endpoint ep;

	if (!target || !*target) {
		errno = EINVAL;
		return NULL;
	}
	/* Checked at parse time already; the scheme's default port and no trailing "/". */
	if (endpoint__parse(target, &ep, NULL, 0) || !!o->cert_file != !!o->key_file) {
		errno = EINVAL;
		return NULL;
	}
	if (ep.scheme != ENDPOINT_NO_SCHEME)
		insecure = ep.scheme == ENDPOINT_HTTP;
	target = ep.target;
	if (!grpc_inited++) {
		gpr_set_log_function(grpc_log);
		grpc_init();
	}

	c = calloc(1, sizeof(*c));
	if (!c) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (insecure) {
		creds = grpc_insecure_credentials_create();
	} else {
		if (o->ca_file && !(ca = read_pem(o->ca_file, &err)))
			goto cleanup;
		if (o->cert_file && (!(cert = read_pem(o->cert_file, &err)) ||
				     !(key = read_pem(o->key_file, &err))))
			goto cleanup;
		pair.cert_chain = cert;
		pair.private_key = key;
		creds = grpc_ssl_credentials_create(ca, cert ? &pair : NULL, NULL, NULL);
	}
	if (!creds) {
		err = -EINVAL;
		goto cleanup;
	}
	if (o->gzip)
		args[cargs.num_args++] =
		    int_arg(GRPC_COMPRESSION_CHANNEL_DEFAULT_ALGORITHM, GRPC_COMPRESS_GZIP);
	/* Reconnect quickly after a Collector restart (the default backoff grows to 120 s). */
	args[cargs.num_args++] = int_arg(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
	c->channel = grpc_channel_create(target, creds, &cargs);
	c->cq = grpc_completion_queue_create_for_pluck(NULL);
	c->md = calloc(o->nheaders ? o->nheaders : 1, sizeof(*c->md));
	if (!c->channel || !c->cq || !c->md) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < o->nheaders; i++) {
		c->md[i].key = grpc_slice_from_copied_string(o->headers[i].key);
		c->md[i].value = grpc_slice_from_copied_string(o->headers[i].value);
	}
	c->nmd = o->nheaders;
	grpc_channel_credentials_release(creds);
	free(ca);
	free(cert);
	free(key);
	return c;

cleanup:
	if (creds)
		grpc_channel_credentials_release(creds);
	free(ca);
	free(cert);
	free(key);
	grpc_client__free(c);
	if (!c && !--grpc_inited)
		grpc_shutdown();
	errno = -err;
	return NULL;
}

void grpc_client__free(struct grpc_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nmd; i++) {
		grpc_slice_unref(c->md[i].key);
		grpc_slice_unref(c->md[i].value);
	}
	free(c->md);
	if (c->channel)
		grpc_channel_destroy(c->channel);
	if (c->cq) {
		grpc_completion_queue_shutdown(c->cq);
		grpc_completion_queue_destroy(c->cq);
	}
	free(c);
	if (grpc_inited && !--grpc_inited)
		grpc_shutdown();
}

int grpc_client__call(struct grpc_client *c, const char *method, const void *req, size_t len,
		      uint32_t timeout_ms, struct grpc_result *res, void **resp, size_t *resp_len)
{
	grpc_metadata_array md_initial, md_trailing;
	grpc_byte_buffer *send = NULL, *recv = NULL;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice(), body;
	gpr_timespec deadline;
	grpc_call *call = NULL;
	grpc_event ev;
	grpc_op ops[6];
	grpc_call_error cerr;
	int err = 0;

	*resp = NULL;
	*resp_len = 0;
	memset(res, 0, sizeof(*res));
	memset(ops, 0, sizeof(ops));
	grpc_metadata_array_init(&md_initial);
	grpc_metadata_array_init(&md_trailing);

	deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
				gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
	call =
	    grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq,
				     grpc_slice_from_static_string(method), NULL, deadline, NULL);
	body = grpc_slice_from_copied_buffer(req, len);
	send = grpc_raw_byte_buffer_create(&body, 1);
	grpc_slice_unref(body);
	if (!call || !send) {
		err = -ENOMEM;
		goto cleanup;
	}

	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].data.send_initial_metadata.count = c->nmd;
	ops[0].data.send_initial_metadata.metadata = c->md;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_initial;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &md_trailing;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;

	cerr = grpc_call_start_batch(call, ops, 6, (void *)call, NULL);
	if (cerr != GRPC_CALL_OK) {
		res->status = GRPC_STATUS_INTERNAL;
		snprintf(res->message, sizeof(res->message), "grpc_call_start_batch: error %d",
			 cerr);
		goto cleanup;
	}
	/* The deadline bounds the call; the extra second covers the cancellation itself. */
	ev = grpc_completion_queue_pluck(
	    c->cq, call, gpr_time_add(deadline, gpr_time_from_seconds(1, GPR_TIMESPAN)), NULL);
	if (ev.type != GRPC_OP_COMPLETE) {
		grpc_call_cancel(call, NULL);
		grpc_completion_queue_pluck(c->cq, call, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		status = GRPC_STATUS_DEADLINE_EXCEEDED;
	}
	res->status = status;
	if (GRPC_SLICE_LENGTH(details)) {
		size_t n = GRPC_SLICE_LENGTH(details);

		if (n >= sizeof(res->message))
			n = sizeof(res->message) - 1;
		memcpy(res->message, GRPC_SLICE_START_PTR(details), n);
		res->message[n] = '\0';
	}
	if (status == GRPC_STATUS_OK && recv) {
		grpc_byte_buffer_reader reader;
		grpc_slice all;

		if (!grpc_byte_buffer_reader_init(&reader, recv)) {
			err = -EIO;
			goto cleanup;
		}
		all = grpc_byte_buffer_reader_readall(&reader);
		grpc_byte_buffer_reader_destroy(&reader);
		*resp_len = GRPC_SLICE_LENGTH(all);
		*resp = malloc(*resp_len ? *resp_len : 1);
		if (*resp)
			memcpy(*resp, GRPC_SLICE_START_PTR(all), *resp_len);
		else
			err = -ENOMEM;
		grpc_slice_unref(all);
	}

cleanup:
	if (send)
		grpc_byte_buffer_destroy(send);
	if (recv)
		grpc_byte_buffer_destroy(recv);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&md_initial);
	grpc_metadata_array_destroy(&md_trailing);
	if (call)
		grpc_call_unref(call);
	return err;
}
