// SPDX-License-Identifier: Apache-2.0
/* Library of test_tlsctx's programs that only defines otel_thread_ctx_v1: others access it. */
__thread void *otel_thread_ctx_v1;
