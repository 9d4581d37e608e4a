/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spanprof_ctx: publishes which span each thread is serving, for out-of-process profilers.
 *
 * Thread context (OTEP 4947): the TLS pointer otel_thread_ctx_v1 points to the calling thread's
 * active record, or is NULL when no span is active. Readers (an eBPF program, a debugger) read it
 * only while the thread is interrupted, so writers order their stores with compiler fences.
 *
 * Process context (OTEP 4719): a mapping named OTEL_CTX holding a 32-byte header and a protobuf
 * opentelemetry.proto.processcontext.v1development.ProcessContext payload: the resource
 * attributes, threadlocal.schema_version and threadlocal.attribute_key_map (the names of the
 * key_index values used in thread records).
 *
 * C11, libc only. Build with -mtls-dialect=gnu2 for shared libraries (TLSDESC); the legacy
 * dialect and static linking into the executable work too (see writer/README.md).
 */
#ifndef SPANPROF_CTX_H
#define SPANPROF_CTX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPCTX_API __attribute__((visibility("default")))

#ifdef __cplusplus
#define SPCTX_STATIC_ASSERT static_assert
#else
#define SPCTX_STATIC_ASSERT _Static_assert
#endif

/* Thread record limits: record <= 640 bytes = 28-byte header + attrs. */
#define SPCTX_RECORD_HEADER_SIZE 28
#define SPCTX_MAX_ATTRS_DATA 612
#define SPCTX_MAX_VALUE_LEN 255
/* Nesting depth kept per thread; deeper attaches reuse the top record (see spctx_attach). */
#define SPCTX_STACK_DEPTH 16

/* Process context limits and layout constants. */
#define SPCTX_MAX_KEYS 256
#define SPCTX_MAX_PAYLOAD 65536 /* readers cap the payload at 64 KiB */
#define SPCTX_PROCESS_VERSION 2
#define SPCTX_PROCESS_SIGNATURE "OTEL_CTX"
#define SPCTX_SCHEMA_VERSION "tlsdesc_v1_dev"

/*
 * Thread-local context record (OTEP 4947), byte-packed, host endian. attrs_data holds
 * attrs_data_size bytes of entries {key_index u8, length u8, value u8[length]}.
 * A reader ignores the record unless valid == 1.
 */
struct spctx_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_data_size;
	uint8_t attrs_data[SPCTX_MAX_ATTRS_DATA];
} __attribute__((packed, aligned(8)));

SPCTX_STATIC_ASSERT(sizeof(struct spctx_record) == 640, "thread record is 640 bytes");
SPCTX_STATIC_ASSERT(offsetof(struct spctx_record, attrs_data) == SPCTX_RECORD_HEADER_SIZE,
		    "thread record header is 28 bytes");

/* Header at the start of the OTEL_CTX mapping (OTEP 4719). payload is an address in this
 * process (the bytes right after the header). published_at_ns is CLOCK_REALTIME in ns, 0 while
 * an update is in progress; signature is written last on first publication. */
struct spctx_process_header {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_at_ns;
	uint64_t payload;
};

SPCTX_STATIC_ASSERT(sizeof(struct spctx_process_header) == 32,
		    "process context header is 32 bytes");

/* The calling thread's active record, NULL when no span is active. Written only by this
 * library; exported (default visibility) so that readers find it in .dynsym. An executable that
 * links the library statically must export it too: -Wl,--export-dynamic-symbol=otel_thread_ctx_v1
 */
SPCTX_API extern __thread struct spctx_record *otel_thread_ctx_v1;

/* One attribute of a thread record: key_index is an index into the attr_keys given to
 * spctx_process_publish; value need not be NUL-terminated (len bytes are copied). */
struct spctx_attr {
	uint8_t key_index;
	const char *value;
	size_t len;
};

/*
 * Publishes the process context (OTEP 4719) in a new mapping named OTEL_CTX.
 * resource_kv: NULL-terminated array "key", "value", "key", "value", ..., NULL (may be NULL);
 * attr_keys: the thread attribute key map, attr_keys[key_index] is the key's name, nkeys <= 256
 * (append-only between calls: readers may cache it).
 * Calling it again updates the published context in place (published_at_ns is set to 0 while
 * the payload is rewritten, then to a new, larger timestamp), or moves it to a larger mapping.
 * Thread-safe, not async-signal-safe. The mapping is not inherited by fork() children: a child
 * that wants a context publishes its own.
 * Returns 0, -EINVAL (odd resource_kv, NULL key, nkeys > 256), -E2BIG (payload > 64 KiB) or the
 * -errno of the failing mmap.
 */
SPCTX_API int spctx_process_publish(const char *const *resource_kv, const char *const *attr_keys,
				    size_t nkeys);

/* Removes the process context mapping. Returns 0 (also when nothing was published) or -errno. */
SPCTX_API int spctx_process_unpublish(void);

/*
 * Makes (trace_id, span_id) the calling thread's active span and returns a token for
 * spctx_detach, which restores the span that was active before (or none). Nesting is LIFO;
 * detaching a token also pops anything attached after it and not yet detached.
 * trace_id or span_id NULL or all zero: the thread serves no span until the matching detach
 * (otel_thread_ctx_v1 is NULL).
 * attrs: entries that do not fit in SPCTX_MAX_ATTRS_DATA bytes are skipped whole; values longer
 * than 255 bytes are cut to 255 bytes (at a UTF-8 character boundary).
 * From level SPCTX_STACK_DEPTH on, all levels share the top record (valid is cleared while it
 * is rewritten); coming back to a level whose record was reused publishes no span (never a
 * wrong one).
 * Async-signal-safe and reentrant: a signal handler may attach and detach (balanced) while the
 * thread is inside spctx_attach or spctx_detach. Allocation-free (in a dlopen'ed library, glibc
 * allocates the thread's TLS block on its first call), never fails; the token is never NULL.
 */
SPCTX_API void *spctx_attach(const uint8_t trace_id[16], const uint8_t span_id[8],
			     uint8_t trace_flags, const struct spctx_attr *attrs, size_t nattrs);

/* Restores the span active before the spctx_attach that returned token. NULL, tokens of
 * another thread and tokens already detached are ignored (a token is a level: once the level is
 * attached again, an old token of it is taken as the new one, so detach each token once).
 * Async-signal-safe. */
SPCTX_API void spctx_detach(void *token);

#ifdef __cplusplus
}
#endif

#endif /* SPANPROF_CTX_H */
