// SPDX-License-Identifier: Apache-2.0
/*
 * spanprof_ctx.node: a Node-API binding of the writer library (writer/spanprof_ctx.c is compiled
 * into this module, so the module itself exports the TLS variable otel_thread_ctx_v1: Node loads
 * it with dlopen, so the variable lives in dynamic TLS, which spanprof reads through the DTV).
 *
 * The JavaScript side (index.js) never holds writer tokens: this module keeps, per thread (the
 * main thread and each worker thread have their own), a stack of levels. push() attaches a span
 * (or none) as a new level and returns the depth before it; popTo(depth) detaches that level's
 * token, which also pops every level above it (the writer's LIFO rule), so a caller that pops
 * to the depth it was given restores exactly what was published before its push, whatever was
 * pushed and not popped in between.
 *
 * push() takes the ids as bytes (index.js decodes a span's hex ids once and keeps them);
 * spanEnded() takes the span id as @opentelemetry/api's lower-case hex string (16 digits).
 * Anything else (wrong length, not hex, all zero) publishes no span.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <node_api.h>

#include "spanprof_ctx.h"

/* Levels kept per thread. Deeper pushes are counted, not attached: the writer already publishes
 * no span from its own SPCTX_STACK_DEPTH levels on, so one "none" level covers them all. */
#define LEVELS 256

struct level {
	void *token;
	uint8_t span_id[8];
	bool has_span;
	bool ended; /* the span ended while this level was on the stack */
};

struct thread_levels {
	struct level levels[LEVELS];
	uint32_t depth;	      /* levels pushed, may exceed LEVELS */
	void *overflow_token; /* the "none" attached at level LEVELS */
};

static __thread struct thread_levels tl;

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes exactly n bytes of hex from v (a JS string of 2n digits); false for anything else. */
static bool hex_arg(napi_env env, napi_value v, uint8_t *out, size_t n)
{
	char buf[40];
	size_t len = 0;
	napi_valuetype t;

	if (napi_typeof(env, v, &t) != napi_ok || t != napi_string)
		return false;
	if (napi_get_value_string_latin1(env, v, buf, sizeof(buf), &len) != napi_ok || len != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(buf[2 * i]), lo = hexval(buf[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static napi_value num(napi_env env, double d)
{
	napi_value v;

	napi_create_double(env, d, &v);
	return v;
}

/* Pushes a level publishing (trace_id, span_id) or, when either is NULL, no span. */
static uint32_t push_level(const uint8_t *trace_id, const uint8_t *span_id, uint8_t flags)
{
	uint32_t d = tl.depth;

	if (d < LEVELS) {
		struct level *l = &tl.levels[d];

		l->token = spctx_attach(trace_id, span_id, flags, NULL, 0);
		l->has_span = trace_id && span_id;
		l->ended = false;
		if (l->has_span)
			memcpy(l->span_id, span_id, 8);
	} else if (d == LEVELS) {
		tl.overflow_token = spctx_attach(NULL, NULL, 0, NULL, 0);
	}
	tl.depth = d + 1;
	return d;
}

/* Pops levels depth.. (nothing when depth >= the current depth). If the level left on top
 * publishes a span that ended meanwhile, a "none" level goes on top of it. */
static void pop_to(uint32_t depth)
{
	if (depth >= tl.depth)
		return;
	if (depth < LEVELS)
		spctx_detach(tl.levels[depth].token);
	else if (depth == LEVELS)
		spctx_detach(tl.overflow_token);
	tl.depth = depth;
	if (depth > 0 && depth <= LEVELS && tl.levels[depth - 1].has_span &&
	    tl.levels[depth - 1].ended)
		push_level(NULL, NULL, 0);
}

/* push(ids) -> depth before the push. ids: a Uint8Array of 25 bytes, trace_id[16] span_id[8]
 * trace_flags (W3C byte order); anything else (null, another length) publishes no span. */
static napi_value js_push(napi_env env, napi_callback_info info)
{
	size_t argc = 1, len = 0;
	napi_value argv[1];
	napi_typedarray_type type;
	void *data = NULL;
	bool is_ta = false;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok)
		return NULL;
	if (argc < 1 || napi_is_typedarray(env, argv[0], &is_ta) != napi_ok || !is_ta ||
	    napi_get_typedarray_info(env, argv[0], &type, &len, &data, NULL, NULL) != napi_ok ||
	    type != napi_uint8_array || len != 25 || !data)
		return num(env, push_level(NULL, NULL, 0));
	const uint8_t *ids = data;
	return num(env, push_level(ids, ids + 16, ids[24]));
}

/* popTo(depth): restores what was published before the push that returned depth. */
static napi_value js_pop_to(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value argv[1];
	uint32_t depth;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
	    napi_get_value_uint32(env, argv[0], &depth) != napi_ok)
		return NULL;
	pop_to(depth);
	return NULL;
}

static napi_value js_depth(napi_env env, napi_callback_info info)
{
	(void)info;
	return num(env, tl.depth);
}

/* spanEnded(spanIdHex): the span ended. Levels of this thread that publish it are marked; if
 * the top one does, a "none" level is pushed on top of it (popped with it). */
static napi_value js_span_ended(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value argv[1];
	uint8_t span_id[8];
	uint32_t n = tl.depth < LEVELS ? tl.depth : LEVELS;
	bool top = false;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
	    !hex_arg(env, argv[0], span_id, 8))
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		struct level *l = &tl.levels[i];

		if (l->has_span && memcmp(l->span_id, span_id, 8) == 0) {
			l->ended = true;
			top = i + 1 == tl.depth;
		}
	}
	if (top)
		push_level(NULL, NULL, 0);
	return NULL;
}

static napi_value hex_string(napi_env env, const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char buf[40];
	napi_value v;

	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = digits[b[i] >> 4];
		buf[2 * i + 1] = digits[b[i] & 15];
	}
	napi_create_string_latin1(env, buf, 2 * n, &v);
	return v;
}

/* current() -> null, or {traceId, spanId, flags, valid} of the calling thread's published record
 * (read back from otel_thread_ctx_v1, as a reader would). */
static napi_value js_current(napi_env env, napi_callback_info info)
{
	struct spctx_record *r = otel_thread_ctx_v1;
	napi_value obj, v;

	(void)info;
	if (!r) {
		napi_get_null(env, &v);
		return v;
	}
	napi_create_object(env, &obj);
	napi_set_named_property(env, obj, "traceId", hex_string(env, r->trace_id, 16));
	napi_set_named_property(env, obj, "spanId", hex_string(env, r->span_id, 8));
	napi_set_named_property(env, obj, "flags", num(env, r->trace_flags));
	napi_set_named_property(env, obj, "valid", num(env, r->valid));
	return obj;
}

/* Copies a JS array of strings into strs[] (NUL-terminated copies in pool); false on overflow
 * or a non-string. */
static bool strings_arg(napi_env env, napi_value arr, const char **strs, size_t max, size_t *n,
			char *pool, size_t pool_size, size_t *used)
{
	uint32_t len;

	if (napi_get_array_length(env, arr, &len) != napi_ok || len > max)
		return false;
	for (uint32_t i = 0; i < len; i++) {
		napi_value e;
		size_t sl = 0;

		if (napi_get_element(env, arr, i, &e) != napi_ok ||
		    napi_get_value_string_utf8(env, e, NULL, 0, &sl) != napi_ok ||
		    *used + sl + 1 > pool_size)
			return false;
		napi_get_value_string_utf8(env, e, pool + *used, sl + 1, &sl);
		strs[i] = pool + *used;
		*used += sl + 1;
	}
	*n = len;
	return true;
}

/* publishProcess([k, v, k, v, ...], [attrKey0, ...]) -> 0 or -errno (spctx_process_publish). */
static napi_value js_publish_process(napi_env env, napi_callback_info info)
{
	/* Heap, not static: the main thread and worker threads may publish at the same time. */
	struct {
		char pool[SPCTX_MAX_PAYLOAD];
		const char *kv[1025], *keys[SPCTX_MAX_KEYS];
	} *a = malloc(sizeof(*a));
	size_t argc = 2, nkv = 0, nkeys = 0, used = 0;
	napi_value argv[2];
	int rc;

	if (!a)
		return num(env, -ENOMEM);
	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2)
		rc = -EINVAL;
	else if (!strings_arg(env, argv[0], a->kv, 1024, &nkv, a->pool, sizeof(a->pool), &used) ||
		 !strings_arg(env, argv[1], a->keys, SPCTX_MAX_KEYS, &nkeys, a->pool,
			      sizeof(a->pool), &used))
		rc = -E2BIG;
	else {
		a->kv[nkv] = NULL;
		rc = spctx_process_publish(a->kv, a->keys, nkeys);
	}
	free(a);
	return num(env, rc);
}

static napi_value js_unpublish_process(napi_env env, napi_callback_info info)
{
	(void)info;
	return num(env, spctx_process_unpublish());
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */)
{
	static const struct {
		const char *name;
		napi_callback fn;
	} fns[] = {
	    {"push", js_push},
	    {"popTo", js_pop_to},
	    {"depth", js_depth},
	    {"spanEnded", js_span_ended},
	    {"current", js_current},
	    {"publishProcess", js_publish_process},
	    {"unpublishProcess", js_unpublish_process},
	};

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		napi_value f;

		if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f) !=
			napi_ok ||
		    napi_set_named_property(env, exports, fns[i].name, f) != napi_ok)
			return NULL;
	}
	return exports;
}
