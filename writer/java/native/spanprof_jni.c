// SPDX-License-Identifier: Apache-2.0
/*
 * libspanprof_java.so: the JNI part of the spanprof Java agent extension (writer/java), the
 * writer library (writer/spanprof_ctx.c) compiled in with it, so this library itself exports
 * the TLS variable otel_thread_ctx_v1. The JVM loads it with dlopen (System.load): the
 * variable lives in dynamic TLS (TLSDESC), which spanprof reads through the DTV.
 *
 * The natives of spanprof.context.Native. The Java side holds the writer's tokens as longs and
 * detaches each once, on the thread that attached it (the writer ignores another thread's).
 * Ids come as longs (Native.hexLong decodes SpanContext's hex strings: the trace id's high and
 * low 8 bytes and the span id, each read big-endian, W3C byte order): strings through JNI cost
 * ~100 ns per attach, primitives nothing. An all-zero trace or span id publishes no span.
 *
 * Virtual threads (JDK 21+, after vtInit() succeeded). The record is per OS thread, and a
 * virtual thread runs on a carrier it may leave at any blocking call, so a virtual thread never
 * holds writer tokens. Its current span is kept in a struct vt_span in its JVMTI thread-local
 * storage (vtSet(), called on the virtual thread: a thread in native code does not unmount), and
 * JVMTI's VirtualThreadMount / VirtualThreadUnmount extension events (posted on the carrier)
 * publish it on the carrier as one level (carrier_level) while the virtual thread is mounted and
 * pop it when it unmounts. A mounted virtual thread without a span gets a level that publishes
 * none, so it never shows what the carrier published. VirtualThreadEnd frees the struct.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jni.h>
#include <jvmti.h>

#include "spanprof_ctx.h"

/* Writes v big-endian into out[8]. */
static void put_be64(uint8_t *out, jlong v)
{
	uint64_t u = (uint64_t)v;

	for (int i = 7; i >= 0; i--, u >>= 8)
		out[i] = (uint8_t)u;
}

/* long attach(long traceHi, long traceLo, long spanId, int traceFlags): spctx_attach's token
 * (the writer publishes no span for an all-zero id). */
JNIEXPORT jlong JNICALL Java_spanprof_context_Native_attach(JNIEnv *env, jclass cls, jlong trace_hi,
							    jlong trace_lo, jlong span_id,
							    jint flags)
{
	uint8_t tid[16], sid[8];

	(void)env;
	(void)cls;
	put_be64(tid, trace_hi);
	put_be64(tid + 8, trace_lo);
	put_be64(sid, span_id);
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

#ifdef JNI_VERSION_21 /* the headers of a JDK 21+ (JVMTI 21): virtual threads */
/* A virtual thread's current span (in its JVMTI thread-local storage). */
struct vt_span {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t flags;
	uint8_t has_span;
};

static jvmtiEnv *jvmti;

/* On a carrier: the level of the virtual thread mounted on it, if one was attached. */
static __thread void *carrier_level;
static __thread int carrier_has_level;

static void carrier_publish(const struct vt_span *s)
{
	if (carrier_has_level)
		spctx_detach(carrier_level);
	carrier_level = s && s->has_span ? spctx_attach(s->trace_id, s->span_id, s->flags, NULL, 0)
					 : spctx_attach(NULL, NULL, 0, NULL, 0);
	carrier_has_level = 1;
}

static void JNICALL on_mount(jvmtiEnv *env, JNIEnv *jni, jthread vthread)
{
	struct vt_span *s = NULL;

	(void)jni;
	if ((*env)->GetThreadLocalStorage(env, vthread, (void **)&s) != JVMTI_ERROR_NONE)
		s = NULL;
	carrier_publish(s);
}

static void JNICALL on_unmount(jvmtiEnv *env, JNIEnv *jni, jthread vthread)
{
	(void)env;
	(void)jni;
	(void)vthread;
	if (carrier_has_level)
		spctx_detach(carrier_level);
	carrier_has_level = 0;
}

static void JNICALL on_vthread_end(jvmtiEnv *env, JNIEnv *jni, jthread vthread)
{
	struct vt_span *s = NULL;

	(void)jni;
	if ((*env)->GetThreadLocalStorage(env, vthread, (void **)&s) == JVMTI_ERROR_NONE && s) {
		(*env)->SetThreadLocalStorage(env, vthread, NULL);
		free(s);
	}
}

/* int vtInit(): 0 when virtual threads can publish (JVMTI 21: the can_support_virtual_threads
 * capability, the mount/unmount extension events and VirtualThreadEnd enabled), else a
 * negative step number (the JVM has no virtual threads, or refused a step). Once. */
JNIEXPORT jint JNICALL Java_spanprof_context_Native_vtInit(JNIEnv *env, jclass cls)
{
	jvmtiCapabilities caps = {0};
	jvmtiEventCallbacks cb = {0};
	jvmtiExtensionEventInfo *ev = NULL;
	jint nev = 0, found = 0;
	JavaVM *vm;
	jvmtiEnv *j;

	(void)cls;
	if ((*env)->GetJavaVM(env, &vm) != 0 ||
	    (*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_21) != JNI_OK)
		return -1;
	caps.can_support_virtual_threads = 1;
	if ((*j)->AddCapabilities(j, &caps) != JVMTI_ERROR_NONE)
		return -2;
	if ((*j)->GetExtensionEvents(j, &nev, &ev) != JVMTI_ERROR_NONE)
		return -3;
	for (jint i = 0; i < nev; i++) {
		jvmtiExtensionEvent fn = NULL;

		if (strcmp(ev[i].id, "com.sun.hotspot.events.VirtualThreadMount") == 0)
			fn = (jvmtiExtensionEvent)on_mount;
		else if (strcmp(ev[i].id, "com.sun.hotspot.events.VirtualThreadUnmount") == 0)
			fn = (jvmtiExtensionEvent)on_unmount;
		if (fn &&
		    (*j)->SetExtensionEventCallback(j, ev[i].extension_event_index, fn) ==
			JVMTI_ERROR_NONE &&
		    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE,
						   (jvmtiEvent)ev[i].extension_event_index,
						   NULL) == JVMTI_ERROR_NONE)
			found++;
	}
	/* The event table and its strings are JVMTI allocations; kept (one small table, once). */
	if (found != 2)
		return -4;
	cb.VirtualThreadEnd = on_vthread_end;
	if ((*j)->SetEventCallbacks(j, &cb, sizeof(cb)) != JVMTI_ERROR_NONE ||
	    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VIRTUAL_THREAD_END, NULL) !=
		JVMTI_ERROR_NONE)
		return -5;
	jvmti = j;
	return 0;
}

#else /* the headers of an older JDK: no virtual threads */
JNIEXPORT jint JNICALL Java_spanprof_context_Native_vtInit(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return -1;
}

JNIEXPORT void JNICALL Java_spanprof_context_Native_vtSet(JNIEnv *env, jclass cls, jlong trace_hi,
							  jlong trace_lo, jlong span_id, jint flags)
{
	(void)env;
	(void)cls;
	(void)trace_hi;
	(void)trace_lo;
	(void)span_id;
	(void)flags;
}
#endif

#ifdef JNI_VERSION_21
/* void vtSet(long traceHi, long traceLo, long spanId, int traceFlags): the calling virtual
 * thread's current span (an all-zero trace or span id: none), kept for its next mounts and
 * published on its carrier now. */
JNIEXPORT void JNICALL Java_spanprof_context_Native_vtSet(JNIEnv *env, jclass cls, jlong trace_hi,
							  jlong trace_lo, jlong span_id, jint flags)
{
	struct vt_span *s = NULL;

	(void)cls;
	if (!jvmti)
		return;
	if ((*jvmti)->GetThreadLocalStorage(jvmti, NULL, (void **)&s) != JVMTI_ERROR_NONE)
		return;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return;
		if ((*jvmti)->SetThreadLocalStorage(jvmti, NULL, s) != JVMTI_ERROR_NONE) {
			free(s);
			return;
		}
	}
	(void)env;
	put_be64(s->trace_id, trace_hi);
	put_be64(s->trace_id + 8, trace_lo);
	put_be64(s->span_id, span_id);
	s->flags = (uint8_t)flags;
	s->has_span = (trace_hi || trace_lo) && span_id;
	carrier_publish(s);
}
#endif
