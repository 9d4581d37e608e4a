// SPDX-License-Identifier: Apache-2.0
/*
 * Library of test_tlsctx's programs: tls_touch() sets otel_thread_ctx_v1 and returns its address.
 * -DVIS=protected/hidden sets the variable's visibility (module-level relocations);
 * -DEXTERN_VAR only declares it (another library defines it: tlsdef.c).
 * The TLS dialect and model come from the build's -mtls-dialect / -ftls-model.
 */
#ifdef EXTERN_VAR
extern __thread void *otel_thread_ctx_v1;
#else
#ifdef VIS
#define ATTR __attribute__((visibility(VIS)))
#else
#define ATTR
#endif
#ifdef BIG_ALIGN
/* .tdata comes first in the block: the variable lands at a non-zero offset. */
__thread long tls_small = 1;
__thread char tls_big[100] __attribute__((aligned(64)));
#endif
ATTR __thread void *otel_thread_ctx_v1;
#endif

void *tls_touch(void *val)
{
#ifdef BIG_ALIGN
	tls_big[1] = (char)tls_small;
#endif
	otel_thread_ctx_v1 = val;
	return &otel_thread_ctx_v1;
}
