// SPDX-License-Identifier: Apache-2.0
/* procctx: OTEP 4719 process context: find the OTEL_CTX mapping, read it safely, decode it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "opentelemetry/proto/processcontext/v1development/process_context.pb-c.h"
#include "spans/procctx.h"
#include "process/procmaps.h"

typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext pb_process_context;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;

#define KEY_SERVICE_NAME "service.name"
#define KEY_SCHEMA_VERSION "threadlocal.schema_version"
#define KEY_KEY_MAP "threadlocal.attribute_key_map"

static const char *const mapping_names[] = {"[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]",
					    "/memfd:OTEL_CTX"};

struct header {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_at_ns;
	uint64_t payload;
};
_Static_assert(sizeof(struct header) == PROCCTX_HEADER_SIZE, "OTEP 4719 header");

/* ---- decoding ---------------------------------------------------------------------------- */

void procctx__free(struct procctx *c)
{
	size_t i;

	if (!c)
		return;
	free(c->service_name);
	for (i = 0; i < c->nresource; i++) {
		free(c->resource[i].key);
		free(c->resource[i].value);
	}
	free(c->resource);
	free(c->schema_version);
	for (i = 0; i < c->nkeys; i++)
		free(c->key_map[i]);
	free(c->key_map);
	memset(c, 0, sizeof(*c));
}

/* A scalar value as a new string; NULL with *@err 0 for other kinds, -ENOMEM on failure. */
static char *render(const pb_any_value *v, int *err)
{
	char buf[64];
	char *s;
	int prec;

	*err = 0;
	if (!v)
		return NULL;
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		s = strdup(v->string_value ? v->string_value : "");
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		s = strdup(v->bool_value ? "true" : "false");
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		snprintf(buf, sizeof(buf), "%" PRId64, v->int_value);
		s = strdup(buf);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		/* The shortest form that reads back as the same double. */
		for (prec = 1; prec <= 17; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, v->double_value);
			if (strtod(buf, NULL) == v->double_value)
				break;
		}
		s = strdup(buf);
		break;
	default:
		return NULL;
	}
	if (!s)
		*err = -ENOMEM;
	return s;
}

static const pb_any_value *find_attr(pb_key_value *const *kv, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kv[i] && kv[i]->key && !strcmp(kv[i]->key, key))
			return kv[i]->value;
	return NULL;
}

static bool is_string(const pb_any_value *v)
{
	return v &&
	       v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
	       v->string_value;
}

static int copy_resource(pb_key_value *const *kv, size_t n, struct procctx *out)
{
	size_t i;
	char *value;
	int err;

	out->resource = calloc(n ? n : 1, sizeof(*out->resource));
	if (!out->resource)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!kv[i] || !kv[i]->key)
			continue;
		value = render(kv[i]->value, &err);
		if (err)
			return err;
		if (!value)
			continue; /* arrays, maps, bytes: not rendered */
		out->resource[out->nresource].value = value;
		out->resource[out->nresource].key = strdup(kv[i]->key);
		if (!out->resource[out->nresource++].key)
			return -ENOMEM;
	}
	return 0;
}

/* threadlocal.* from @kv (@n attributes), where not already set. */
static int copy_threadlocal(pb_key_value *const *kv, size_t n, struct procctx *out)
{
	const pb_any_value *v;
	const Opentelemetry__Proto__Common__V1__ArrayValue *arr;
	size_t i, nkeys;

	v = find_attr(kv, n, KEY_SCHEMA_VERSION);
	if (!out->schema_version && is_string(v)) {
		out->schema_version = strdup(v->string_value);
		if (!out->schema_version)
			return -ENOMEM;
	}
	v = find_attr(kv, n, KEY_KEY_MAP);
	if (out->key_map || !v ||
	    v->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE ||
	    !v->array_value)
		return 0;
	arr = v->array_value;
	nkeys = arr->n_values < PROCCTX_MAX_KEYS ? arr->n_values : PROCCTX_MAX_KEYS;
	out->key_map = calloc(nkeys ? nkeys : 1, sizeof(*out->key_map));
	if (!out->key_map)
		return -ENOMEM;
	for (i = 0; i < nkeys; i++) {
		/* Indexes are positions: a non-string entry keeps its place as "". */
		out->key_map[i] =
		    strdup(is_string(arr->values[i]) ? arr->values[i]->string_value : "");
		if (!out->key_map[i])
			return -ENOMEM;
		out->nkeys = i + 1;
	}
	return 0;
}

int procctx__decode(const uint8_t *payload, size_t len, struct procctx *out)
{
	pb_process_context *pc = NULL;
	pb_resource *res = NULL, *bare = NULL;
	const pb_any_value *v;
	int err;

	memset(out, 0, sizeof(*out));
	if (!payload && len)
		return -EBADMSG;
	pc = opentelemetry__proto__processcontext__v1development__process_context__unpack(NULL, len,
											  payload);
	if (pc) {
		res = pc->resource;
	} else {
		/* An earlier revision of OTEP 4719 published a bare Resource. */
		bare = opentelemetry__proto__resource__v1__resource__unpack(NULL, len, payload);
		if (!bare)
			return -EBADMSG;
		res = bare;
	}
	err = copy_resource(res ? res->attributes : NULL, res ? res->n_attributes : 0, out);
	if (!err && res) {
		v = find_attr(res->attributes, res->n_attributes, KEY_SERVICE_NAME);
		if (is_string(v) && !(out->service_name = strdup(v->string_value)))
			err = -ENOMEM;
	}
	if (!err && pc)
		err = copy_threadlocal(pc->attributes, pc->n_attributes, out);
	if (!err && res)
		err = copy_threadlocal(res->attributes, res->n_attributes, out);
	if (pc)
		opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(
		    pc, NULL);
	if (bare)
		opentelemetry__proto__resource__v1__resource__free_unpacked(bare, NULL);
	if (err)
		procctx__free(out);
	return err;
}

/* ---- reading the process ----------------------------------------------------------------- */

bool procctx__is_mapping_name(const char *path)
{
	size_t i;

	for (i = 0; path && i < sizeof(mapping_names) / sizeof(mapping_names[0]); i++)
		if (!strncmp(path, mapping_names[i], strlen(mapping_names[i])))
			return true;
	return false;
}

static bool header_ok(const struct header *h)
{
	return !memcmp(h->signature, "OTEL_CTX", 8) && (h->version == 2 || h->version == 1);
}

/*
 * One mapping at @addr: 0 with @out filled, -EBADMSG (skip it), -EAGAIN (kept changing), or a
 * read error.
 */
static int read_mapping(pid_t pid, uint64_t addr, struct procctx *out)
{
	struct header h, again;
	uint8_t *payload = NULL;
	int tries, err = -EAGAIN;

	for (tries = 0; tries < PROCCTX_MAX_TRIES; tries++) {
		err = procmaps__read_mem(pid, addr, &h, sizeof(h));
		if (err)
			goto cleanup;
		if (!header_ok(&h)) {
			err = -EBADMSG;
			goto cleanup;
		}
		err = -EAGAIN;
		if (!h.published_at_ns)
			continue; /* an update is in progress */
		if (h.payload_size > PROCCTX_MAX_PAYLOAD) {
			err = -EBADMSG;
			goto cleanup;
		}
		free(payload);
		payload = malloc(h.payload_size ? h.payload_size : 1);
		if (!payload) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = procmaps__read_mem(pid, h.payload, payload, h.payload_size);
		if (err && err != -EFAULT)
			goto cleanup;
		/* A stale pointer fails or reads the wrong bytes: the re-read tells. */
		if (procmaps__read_mem(pid, addr, &again, sizeof(again))) {
			err = -EBADMSG;
			goto cleanup;
		}
		if (memcmp(&h, &again, sizeof(h))) {
			err = -EAGAIN;
			continue;
		}
		if (err) {
			err = -EBADMSG; /* the header is stable and its payload unreadable */
			goto cleanup;
		}
		err = procctx__decode(payload, h.payload_size, out);
		if (!err)
			out->published_at_ns = h.published_at_ns;
		goto cleanup;
	}
cleanup:
	free(payload);
	return err;
}

int procctx__read(pid_t pid, struct procctx *out)
{
	struct procmaps maps = {0};
	size_t i;
	int err, r;

	memset(out, 0, sizeof(*out));
	err = procmaps__read(pid, &maps);
	if (err) {
		err = err == -ENOENT ? -ESRCH : err;
		goto cleanup;
	}
	/* A mapping with a bad header is skipped; the best error of the others is kept. */
	err = -ENOENT;
	for (i = 0; i < maps.n; i++) {
		const struct procmap *m = &maps.maps[i];

		if (!procctx__is_mapping_name(m->path) || m->end - m->start < PROCCTX_HEADER_SIZE)
			continue;
		r = read_mapping(pid, m->start, out);
		if (!r) {
			err = 0;
			break;
		}
		if (err == -ENOENT || err == -EBADMSG)
			err = r;
		if (r == -ESRCH || r == -ENOMEM) {
			err = r;
			break;
		}
	}
cleanup:
	procmaps__clear(&maps);
	return err;
}
