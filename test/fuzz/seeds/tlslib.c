// SPDX-License-Identifier: Apache-2.0
/*
 * Seed library of the ELF fuzz targets: OTEP 4947's TLS variable reached in the TLS models
 * exporter/spans/tlsctx.c classifies (make_seeds.sh picks the model with -mtls-dialect,
 * -ftls-model and VIS; -DEXTERN only refers to a variable another module defines).
 */
#ifndef VIS
#define VIS "default"
#endif

#ifdef EXTERN
extern __thread void *otel_thread_ctx_v1;
#else
__thread void *otel_thread_ctx_v1 __attribute__((visibility(VIS)));
#endif

void *ctx_get(void)
{
	return otel_thread_ctx_v1;
}

void ctx_set(void *p)
{
	otel_thread_ctx_v1 = p;
}
