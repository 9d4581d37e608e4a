/*
 * asyncburn: native CPU burners for the asyncio span-link test (asyncapp.py calls them through
 * ctypes). One function per endpoint and phase (before, between and after the two awaits of
 * the request's span, and "unspanned" after the span ended), plus outside_span for a task
 * that never has a span: a sample's stack tells which endpoint and phase it was taken in.
 * Built -O2 -fomit-frame-pointer -shared.
 */
#include "cpuspin.h"

#define BURNER(name)                                                                               \
	__attribute__((noinline)) void name(unsigned us)                                           \
	{                                                                                          \
		spin(us);                                                                          \
		__asm__ volatile("" ::: "memory");                                                 \
	}

#define ENDPOINT(ep)                                                                               \
	BURNER(ep##_before)                                                                        \
	BURNER(ep##_between)                                                                       \
	BURNER(ep##_after)                                                                         \
	BURNER(ep##_unspanned)

ENDPOINT(checkout)
ENDPOINT(search)
ENDPOINT(render)
ENDPOINT(login)
ENDPOINT(cart)
ENDPOINT(pay)
BURNER(outside_span)
