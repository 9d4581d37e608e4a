/*
 * nodeburn: native CPU burners for the Node.js span-link test (nodeshop.js calls them through
 * Node-API). One function per endpoint and phase (before, between and after the awaits of the
 * request's span, and "unspanned" after the span ended), plus outside_span for a flow that never
 * has a span: a sample's stack tells which endpoint and phase it was taken in. Each takes the
 * thread CPU time to burn in microseconds. Built -O2 -fomit-frame-pointer -shared against the
 * headers of the npm registry's node-api-headers.
 */
#include <stdint.h>

#include <node_api.h>

#include "cpuspin.h"

#define BURNER(name)                                                                               \
	static __attribute__((noinline)) napi_value name(napi_env env, napi_callback_info info)    \
	{                                                                                          \
		size_t argc = 1;                                                                   \
		napi_value argv[1];                                                                \
		uint32_t us = 0;                                                                   \
                                                                                                   \
		napi_get_cb_info(env, info, &argc, argv, NULL, NULL);                              \
		if (argc == 1)                                                                     \
			napi_get_value_uint32(env, argv[0], &us);                                  \
		spin(us);                                                                          \
		cpuspin_sink ^=                                                                    \
		    __COUNTER__; /* distinct bodies: identical code folding keeps each name */     \
		__asm__ volatile("" ::: "memory");                                                 \
		return NULL;                                                                       \
	}

#define ENDPOINT(ep)                                                                               \
	BURNER(ep##_before)                                                                        \
	BURNER(ep##_between)                                                                       \
	BURNER(ep##_after)                                                                         \
	BURNER(ep##_unspanned)

ENDPOINT(checkout)
ENDPOINT(search)
ENDPOINT(render)
BURNER(outside_span)

#define EXPORT(fn)                                                                                 \
	{                                                                                          \
#fn, fn                                                                            \
	}
#define EXPORT_ENDPOINT(ep)                                                                        \
	EXPORT(ep##_before), EXPORT(ep##_between), EXPORT(ep##_after), EXPORT(ep##_unspanned)

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */)
{
	static const struct {
		const char *name;
		napi_callback fn;
	} fns[] = {EXPORT_ENDPOINT(checkout), EXPORT_ENDPOINT(search), EXPORT_ENDPOINT(render),
		   EXPORT(outside_span)};

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		napi_value f;

		if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f) !=
			napi_ok ||
		    napi_set_named_property(env, exports, fns[i].name, f) != napi_ok)
			return NULL;
	}
	return exports;
}
