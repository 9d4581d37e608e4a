// SPDX-License-Identifier: Apache-2.0
/*
 * spanprof_ctx: thread context (OTEP 4947) and process context (OTEP 4719) writer.
 * See spanprof_ctx.h for the API and docs/span-links-sdk.md for SDK integration.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "spanprof_ctx.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U /* Linux 6.3: required when vm.memfd_noexec=2 */
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#if defined(__has_attribute)
#if __has_attribute(retain)
#define SPCTX_RETAIN __attribute__((retain))
#endif
#endif
#ifndef SPCTX_RETAIN
#define SPCTX_RETAIN
#endif

/* --- thread context ------------------------------------------------------------------------ */

/* No tls_model attribute: the compiler picks the model from -fPIC/-fPIE and -mtls-dialect, so
 * the same source gives static TLS in an executable and TLSDESC or general dynamic in a DSO. */
SPCTX_API __attribute__((used)) SPCTX_RETAIN __thread struct spctx_record *otel_thread_ctx_v1;

/* Per-thread record stack: level L (1-based) uses stack[min(L, SPCTX_STACK_DEPTH) - 1]. */
struct spctx_thread {
	struct spctx_record stack[SPCTX_STACK_DEPTH];
	uintptr_t depth;  /* levels attached; may exceed SPCTX_STACK_DEPTH */
	uint32_t top_gen; /* attaches at level >= SPCTX_STACK_DEPTH (they share the top record) */
};

static __thread struct spctx_thread spctx_tls;

/* Readers only look while this thread is interrupted: ordering against this thread suffices. */
static inline void compiler_fence(void)
{
	atomic_signal_fence(memory_order_seq_cst);
}

/* A single (untorn) store of the TLS pointer. */
static inline void set_current(struct spctx_record **cur, struct spctx_record *rec)
{
	compiler_fence();
	__atomic_store_n(cur, rec, __ATOMIC_RELAXED);
	compiler_fence();
}

/* OpenTelemetry's invalid span: all-zero trace or span id. */
static bool is_span(const uint8_t *trace_id, const uint8_t *span_id)
{
	uint64_t t0, t1, s;

	if (!trace_id || !span_id)
		return false;
	memcpy(&t0, trace_id, 8);
	memcpy(&t1, trace_id + 8, 8);
	memcpy(&s, span_id, 8);
	return (t0 | t1) != 0 && s != 0;
}

/* The TLS addresses are computed once per call: the fences must not make the compiler
 * compute them again (each is a TLSDESC or __tls_get_addr call in a shared library). */
#define pin(ptr) __asm__("" : "+r"(ptr))

/* Cuts a value to at most SPCTX_MAX_VALUE_LEN bytes without splitting a UTF-8 sequence. */
static size_t value_len(const char *value, size_t len)
{
	if (len <= SPCTX_MAX_VALUE_LEN)
		return len;
	len = SPCTX_MAX_VALUE_LEN;
	while (len > 0 && ((uint8_t)value[len] & 0xc0) == 0x80)
		len--;
	return len;
}

static uint16_t encode_attrs(uint8_t *out, const struct spctx_attr *attrs, size_t nattrs)
{
	size_t used = 0;

	for (size_t i = 0; attrs && i < nattrs; i++) {
		size_t len = attrs[i].value ? value_len(attrs[i].value, attrs[i].len) : 0;

		/* Entries that do not fit are skipped whole; a later, smaller one may still fit. */
		if (used + 2 + len > SPCTX_MAX_ATTRS_DATA)
			continue;
		out[used] = attrs[i].key_index;
		out[used + 1] = (uint8_t)len;
		if (len)
			memcpy(out + used + 2, attrs[i].value, len);
		used += 2 + len;
	}
	return (uint16_t)used;
}

static void fill_record(struct spctx_record *rec, const uint8_t *trace_id, const uint8_t *span_id,
			uint8_t trace_flags, const struct spctx_attr *attrs, size_t nattrs)
{
	memcpy(rec->trace_id, trace_id, sizeof(rec->trace_id));
	memcpy(rec->span_id, span_id, sizeof(rec->span_id));
	rec->trace_flags = trace_flags;
	rec->attrs_data_size = encode_attrs(rec->attrs_data, attrs, nattrs);
}

SPCTX_API void *spctx_attach(const uint8_t trace_id[16], const uint8_t span_id[8],
			     uint8_t trace_flags, const struct spctx_attr *attrs, size_t nattrs)
{
	struct spctx_thread *t = &spctx_tls;
	struct spctx_record **cur = &otel_thread_ctx_v1;
	uintptr_t level;
	struct spctx_record *rec;
	bool span = is_span(trace_id, span_id);
	uint32_t gen;

	pin(t);
	pin(cur);
	level = __atomic_load_n(&t->depth, __ATOMIC_RELAXED) + 1;
	rec = &t->stack[(level < SPCTX_STACK_DEPTH ? level : SPCTX_STACK_DEPTH) - 1];

	/* Beyond the stack the record may be the one otel_thread_ctx_v1 points to: it is never
	 * valid while half written. Below, it is not reachable yet; the same order is kept. */
	rec->valid = 0;
	compiler_fence();
	/* Claim the level before filling it: a signal handler that attaches now takes the next
	 * one, and its detach sees this record invalid and publishes no span until we are done. */
	__atomic_store_n(&t->depth, level, __ATOMIC_RELAXED);
	compiler_fence();
	if (!span) {
		set_current(cur, NULL);
	} else if (level < SPCTX_STACK_DEPTH) {
		fill_record(rec, trace_id, span_id, trace_flags, attrs, nattrs);
		compiler_fence();
		rec->valid = 1;
		set_current(cur, rec);
	} else {
		/* The top record is shared by this level and all deeper ones, so a signal handler
		 * that attaches meanwhile rewrites it: start again until none did (it never leaves
		 * it valid, see spctx_detach). */
		do {
			rec->valid = 0;
			gen = __atomic_add_fetch(&t->top_gen, 1, __ATOMIC_RELAXED);
			compiler_fence();
			fill_record(rec, trace_id, span_id, trace_flags, attrs, nattrs);
			compiler_fence();
			if (__atomic_load_n(&t->top_gen, __ATOMIC_RELAXED) != gen)
				continue;
			rec->valid = 1;
			set_current(cur, rec);
		} while (__atomic_load_n(&t->top_gen, __ATOMIC_RELAXED) != gen);
	}
	/* The token is the level, offset by this thread's stack address so that another thread's
	 * token falls out of range in spctx_detach. */
	return (void *)((uintptr_t)t->stack + level);
}

SPCTX_API void spctx_detach(void *token)
{
	struct spctx_thread *t = &spctx_tls;
	struct spctx_record **cur = &otel_thread_ctx_v1;
	struct spctx_record *prev = NULL;
	uintptr_t level;

	pin(t);
	pin(cur);
	level = (uintptr_t)token - (uintptr_t)t->stack;
	if (!token || level == 0 || level > __atomic_load_n(&t->depth, __ATOMIC_RELAXED))
		return;
	level--; /* the level to restore */
	/* Pop first: a signal handler that attaches and detaches from here on works above the
	 * restored level and restores the same pointer as we do. */
	__atomic_store_n(&t->depth, level, __ATOMIC_RELAXED);
	compiler_fence();
	if (level >= SPCTX_STACK_DEPTH) {
		/* The top record was reused by a deeper level: publish no span rather than a
		 * wrong one until the thread detaches below the top of the stack. */
		set_current(cur, NULL);
		t->stack[SPCTX_STACK_DEPTH - 1].valid = 0;
	} else {
		if (level > 0 && t->stack[level - 1].valid == 1)
			prev = &t->stack[level - 1];
		set_current(cur, prev);
	}
}

/* --- process context: protobuf payload (hand-encoded) -------------------------------------- */

/*
 * opentelemetry.proto.processcontext.v1development.ProcessContext:
 *   1 resource: Resource { 1 attributes: repeated KeyValue }
 *   2 attributes: repeated KeyValue
 * KeyValue { 1 key: string, 2 value: AnyValue }
 * AnyValue { 1 string_value: string | 5 array_value: ArrayValue { 1 values: repeated AnyValue } }
 * Every field used here is length-delimited (wire type 2) with a field number below 16, so its
 * tag is one byte.
 */
#define KEY_SCHEMA "threadlocal.schema_version"
#define KEY_KEYMAP "threadlocal.attribute_key_map"

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Size of a length-delimited field whose content is len bytes. */
static size_t field_size(size_t len)
{
	return 1 + varint_size(len) + len;
}

static size_t kv_string_size(const char *key, const char *value)
{
	return field_size(strlen(key)) + field_size(field_size(strlen(value)));
}

static size_t keymap_array_size(const char *const *keys, size_t nkeys)
{
	size_t n = 0;

	for (size_t i = 0; i < nkeys; i++)
		n += field_size(field_size(strlen(keys[i])));
	return n;
}

static size_t keymap_kv_size(const char *const *keys, size_t nkeys)
{
	return field_size(strlen(KEY_KEYMAP)) +
	       field_size(field_size(keymap_array_size(keys, nkeys)));
}

static size_t resource_size(const char *const *kv)
{
	size_t n = 0;

	for (size_t i = 0; kv && kv[i]; i += 2)
		n += field_size(kv_string_size(kv[i], kv[i + 1]));
	return n;
}

static size_t payload_size(const char *const *kv, const char *const *keys, size_t nkeys)
{
	return field_size(resource_size(kv)) +
	       field_size(kv_string_size(KEY_SCHEMA, SPCTX_SCHEMA_VERSION)) +
	       field_size(keymap_kv_size(keys, nkeys));
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Tag and length of a length-delimited field; the caller writes the len bytes that follow. */
static uint8_t *put_len(uint8_t *p, unsigned int field, size_t len)
{
	*p++ = (uint8_t)(field << 3 | 2);
	return put_varint(p, len);
}

static uint8_t *put_string(uint8_t *p, unsigned int field, const char *s)
{
	size_t len = strlen(s);

	p = put_len(p, field, len);
	memcpy(p, s, len);
	return p + len;
}

static uint8_t *put_kv_string(uint8_t *p, unsigned int field, const char *key, const char *value)
{
	p = put_len(p, field, kv_string_size(key, value));
	p = put_string(p, 1, key);
	p = put_len(p, 2, field_size(strlen(value)));
	return put_string(p, 1, value);
}

static uint8_t *encode_payload(uint8_t *p, const char *const *kv, const char *const *keys,
			       size_t nkeys)
{
	size_t array = keymap_array_size(keys, nkeys);

	p = put_len(p, 1, resource_size(kv));
	for (size_t i = 0; kv && kv[i]; i += 2)
		p = put_kv_string(p, 1, kv[i], kv[i + 1]);

	p = put_kv_string(p, 2, KEY_SCHEMA, SPCTX_SCHEMA_VERSION);

	p = put_len(p, 2, keymap_kv_size(keys, nkeys));
	p = put_string(p, 1, KEY_KEYMAP);
	p = put_len(p, 2, field_size(array));
	p = put_len(p, 5, array);
	for (size_t i = 0; i < nkeys; i++) {
		p = put_len(p, 1, field_size(strlen(keys[i])));
		p = put_string(p, 1, keys[i]);
	}
	return p;
}

/* --- process context: the mapping --------------------------------------------------------- */

static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;
static struct {
	struct spctx_process_header *hdr; /* NULL: nothing published */
	size_t size;			  /* mapping length */
	bool dontfork;			  /* MADV_DONTFORK applied */
	uint64_t last_ns;		  /* last published_at_ns, timestamps only grow */
} proc;

static void proc_prepare(void)
{
	pthread_mutex_lock(&proc_lock);
}

static void proc_parent(void)
{
	pthread_mutex_unlock(&proc_lock);
}

/* The child does not inherit the mapping (MADV_DONTFORK): forget it. If the advice failed,
 * the child holds a shared view of the parent's mapping: unmap it so that a later publish in
 * the child cannot write into the parent's context. */
static void proc_child(void)
{
	if (proc.hdr && !proc.dontfork)
		munmap(proc.hdr, proc.size);
	proc.hdr = NULL;
	proc.size = 0;
	pthread_mutex_init(&proc_lock, NULL);
}

static void proc_init(void)
{
	pthread_atfork(proc_prepare, proc_parent, proc_child);
}

static uint64_t next_timestamp(void)
{
	struct timespec ts;
	uint64_t ns = 0;

	if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
		ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (ns <= proc.last_ns)
		ns = proc.last_ns + 1; /* nonzero, and a reader always sees a change */
	proc.last_ns = ns;
	return ns;
}

/* Release ordering: process context readers run concurrently on other CPUs. */
static void store_timestamp(struct spctx_process_header *hdr, uint64_t ns)
{
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&hdr->published_at_ns, ns, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
}

/* A memfd (shows as /memfd:OTEL_CTX (deleted)) or, where memfd_create is refused, anonymous
 * memory named with PR_SET_VMA_ANON_NAME ([anon:OTEL_CTX]). Returns MAP_FAILED with errno. */
static void *map_context(size_t size)
{
	void *addr = MAP_FAILED;
	int fd;

	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL) /* kernel before 6.3 */
		fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0) {
		if (ftruncate(fd, (off_t)size) == 0) {
			/* Nobody may resize it under the readers (e.g. via /proc/PID/map_files). */
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
			addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		}
		close(fd);
	}
	if (addr == MAP_FAILED)
		addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED)
		return MAP_FAILED;
	proc.dontfork = madvise(addr, size, MADV_DONTFORK) == 0;
	/* Fails on memfd mappings and without CONFIG_ANON_VMA_NAME: the name is a convenience. */
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)addr, size,
	      (unsigned long)"OTEL_CTX");
	return addr;
}

static void retire(struct spctx_process_header *hdr, size_t size)
{
	store_timestamp(hdr, 0);
	munmap(hdr, size);
}

static int check_args(const char *const *kv, const char *const *keys, size_t nkeys)
{
	if (nkeys > SPCTX_MAX_KEYS || (nkeys && !keys))
		return -EINVAL;
	for (size_t i = 0; kv && kv[i]; i += 2) {
		if (!kv[i + 1])
			return -EINVAL;
	}
	for (size_t i = 0; i < nkeys; i++) {
		if (!keys[i])
			return -EINVAL;
	}
	return 0;
}

SPCTX_API int spctx_process_publish(const char *const *resource_kv, const char *const *attr_keys,
				    size_t nkeys)
{
	struct spctx_process_header *hdr;
	size_t psize, size;
	long page;
	int err;

	err = check_args(resource_kv, attr_keys, nkeys);
	if (err)
		return err;
	psize = payload_size(resource_kv, attr_keys, nkeys);
	if (psize > SPCTX_MAX_PAYLOAD)
		return -E2BIG;
	page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	size = (sizeof(*hdr) + psize + (size_t)page - 1) / (size_t)page * (size_t)page;

	pthread_once(&proc_once, proc_init);
	pthread_mutex_lock(&proc_lock);

	hdr = proc.hdr;
	if (hdr && sizeof(*hdr) + psize <= proc.size) {
		/* Update protocol: timestamp 0, rewrite, new timestamp. */
		store_timestamp(hdr, 0);
		encode_payload((uint8_t *)(hdr + 1), resource_kv, attr_keys, nkeys);
		hdr->payload_size = (uint32_t)psize;
		hdr->payload = (uint64_t)(uintptr_t)(hdr + 1);
		store_timestamp(hdr, next_timestamp());
		goto cleanup;
	}

	hdr = map_context(size);
	if (hdr == MAP_FAILED) {
		err = -errno;
		goto cleanup;
	}
	hdr->version = SPCTX_PROCESS_VERSION;
	hdr->payload_size = (uint32_t)psize;
	hdr->payload = (uint64_t)(uintptr_t)(hdr + 1);
	encode_payload((uint8_t *)(hdr + 1), resource_kv, attr_keys, nkeys);
	hdr->published_at_ns = next_timestamp();
	/* The signature goes last: a reader that sees it sees a complete header and payload. */
	atomic_thread_fence(memory_order_release);
	memcpy(hdr->signature, SPCTX_PROCESS_SIGNATURE, sizeof(hdr->signature));
	atomic_thread_fence(memory_order_release);

	/* The payload outgrew the old mapping: the new one is complete, retire the old one. */
	if (proc.hdr)
		retire(proc.hdr, proc.size);
	proc.hdr = hdr;
	proc.size = size;

cleanup:
	pthread_mutex_unlock(&proc_lock);
	return err;
}

SPCTX_API int spctx_process_unpublish(void)
{
	int err = 0;

	pthread_mutex_lock(&proc_lock);
	if (proc.hdr) {
		store_timestamp(proc.hdr, 0);
		if (munmap(proc.hdr, proc.size))
			err = -errno;
		proc.hdr = NULL;
		proc.size = 0;
	}
	pthread_mutex_unlock(&proc_lock);
	return err;
}
