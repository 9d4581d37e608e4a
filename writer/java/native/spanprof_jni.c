// SPDX-License-Identifier: Apache-2.0
/*
 * libspanprof_java.so: the JNI part of the spanprof Java agent extension (writer/java), the
 * writer library (writer/spanprof_ctx.c) compiled in with it, so this library itself exports
 * the TLS variable otel_thread_ctx_v1. The JVM loads it with dlopen (System.load): the
 * variable lives in dynamic TLS (TLSDESC), which spanprof reads through the DTV.
 *
 * The natives of spanprof.context.Native. The Java side holds the writer's tokens as longs and
 * detaches each once, on the thread that attached it (the writer ignores another thread's).
 * Ids come as the lower-case hex strings of io.opentelemetry.api.trace.SpanContext (32 and 16
 * digits); anything else (null, wrong length, not hex, all zero) publishes no span.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jni.h>

#include "spanprof_ctx.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes s, exactly 2n hex digits, into out[n]; 0 for anything else. GetStringRegion copies
 * the UTF-16 units into a buffer on the stack: no allocation, no pinning. */
static int hex_arg(JNIEnv *env, jstring s, uint8_t *out, jsize n)
{
	jchar buf[32];

	if (!s || (*env)->GetStringLength(env, s) != 2 * n)
		return 0;
	(*env)->GetStringRegion(env, s, 0, 2 * n, buf);
	for (jsize i = 0; i < n; i++) {
		int hi = hexval(buf[2 * i]), lo = hexval(buf[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 1;
}

/* long attach(String traceIdHex, String spanIdHex, int traceFlags): spctx_attach's token. */
JNIEXPORT jlong JNICALL Java_spanprof_context_Native_attach(JNIEnv *env, jclass cls,
							    jstring trace_id, jstring span_id,
							    jint flags)
{
	uint8_t tid[16], sid[8];

	(void)cls;
	if (!hex_arg(env, trace_id, tid, 16) || !hex_arg(env, span_id, sid, 8))
		return (jlong)(uintptr_t)spctx_attach(NULL, NULL, 0, NULL, 0);
	return (jlong)(uintptr_t)spctx_attach(tid, sid, (uint8_t)flags, NULL, 0);
}

/* long attachNone(): a level that publishes no span. */
JNIEXPORT jlong JNICALL Java_spanprof_context_Native_attachNone(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jlong)(uintptr_t)spctx_attach(NULL, NULL, 0, NULL, 0);
}

/* void detach(long token) */
JNIEXPORT void JNICALL Java_spanprof_context_Native_detach(JNIEnv *env, jclass cls, jlong token)
{
	(void)env;
	(void)cls;
	spctx_detach((void *)(uintptr_t)token);
}

/* String current(): the calling thread's published record as a reader sees it, "TRACE-SPAN"
 * (hex) or null when none is published or it is not valid (tests, debugging). */
JNIEXPORT jstring JNICALL Java_spanprof_context_Native_current(JNIEnv *env, jclass cls)
{
	static const char digits[] = "0123456789abcdef";
	struct spctx_record *r = otel_thread_ctx_v1;
	char buf[16 * 2 + 1 + 8 * 2 + 1];
	size_t n = 0;

	(void)cls;
	if (!r || r->valid != 1)
		return NULL;
	for (int i = 0; i < 16; i++) {
		buf[n++] = digits[r->trace_id[i] >> 4];
		buf[n++] = digits[r->trace_id[i] & 15];
	}
	buf[n++] = '-';
	for (int i = 0; i < 8; i++) {
		buf[n++] = digits[r->span_id[i] >> 4];
		buf[n++] = digits[r->span_id[i] & 15];
	}
	buf[n] = 0;
	return (*env)->NewStringUTF(env, buf);
}

/* Copies arr's strings (modified UTF-8, NUL-terminated) into strs[] and pool; -E2BIG when they
 * do not fit, -EINVAL for a null element. */
static int strings_arg(JNIEnv *env, jobjectArray arr, const char **strs, jsize max, jsize *n,
		       char *pool, size_t pool_size, size_t *used)
{
	jsize len = arr ? (*env)->GetArrayLength(env, arr) : 0;

	if (len > max)
		return -E2BIG;
	for (jsize i = 0; i < len; i++) {
		jstring s = (*env)->GetObjectArrayElement(env, arr, i);
		jsize sl;

		if (!s)
			return -EINVAL;
		sl = (*env)->GetStringUTFLength(env, s);
		if (*used + (size_t)sl + 1 > pool_size) {
			(*env)->DeleteLocalRef(env, s);
			return -E2BIG;
		}
		(*env)->GetStringUTFRegion(env, s, 0, (*env)->GetStringLength(env, s),
					   pool + *used);
		pool[*used + sl] = 0;
		strs[i] = pool + *used;
		*used += (size_t)sl + 1;
		(*env)->DeleteLocalRef(env, s);
	}
	*n = len;
	return 0;
}

/* int publishProcess(String[] keyValues, String[] attrKeys): spctx_process_publish's result
 * (0 or -errno); keyValues is key, value, key, value, ... */
JNIEXPORT jint JNICALL Java_spanprof_context_Native_publishProcess(JNIEnv *env, jclass cls,
								   jobjectArray kv,
								   jobjectArray keys)
{
	struct {
		char pool[SPCTX_MAX_PAYLOAD];
		const char *kv[1025], *keys[SPCTX_MAX_KEYS];
	} *a = malloc(sizeof(*a));
	jsize nkv = 0, nkeys = 0;
	size_t used = 0;
	int rc;

	(void)cls;
	if (!a)
		return -ENOMEM;
	rc = strings_arg(env, kv, a->kv, 1024, &nkv, a->pool, sizeof(a->pool), &used);
	if (!rc)
		rc = strings_arg(env, keys, a->keys, SPCTX_MAX_KEYS, &nkeys, a->pool,
				 sizeof(a->pool), &used);
	if (!rc) {
		a->kv[nkv] = NULL;
		rc = spctx_process_publish(a->kv, a->keys, (size_t)nkeys);
	}
	free(a);
	return rc;
}

/* int unpublishProcess() */
JNIEXPORT jint JNICALL Java_spanprof_context_Native_unpublishProcess(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return spctx_process_unpublish();
}
