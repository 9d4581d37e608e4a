/* SPDX-License-Identifier: Apache-2.0 */
/*
 * v8proc: names the JavaScript functions of one node process from V8's own heap objects, read
 * out of the process's memory with the layout of its executable's postmortem metadata
 * (runtime/v8/v8meta.h): SharedFunctionInfo -> its name (a String, or the function name kept in
 * its ScopeInfo) and its Script -> the script's name (file) and, from the function's start
 * position and the script's line ends, its first line.
 *
 * Every object is checked to be of the type expected (its map's instance type) before it is
 * trusted, and a frame is named only when the SharedFunctionInfo read still holds the
 * fingerprint the BPF reader saw (struct v8_frame, bpf/v8.h): V8's garbage collector moves and
 * frees objects, and an address that holds another function by the time of the read is refused,
 * never misnamed. Answers are cached per (SharedFunctionInfo, fingerprint).
 *
 * Sources: V8's src/objects/shared-function-info.tq, scope-info.tq (ScopeInfo's slots: flags,
 * parameter count, context local count, the context locals' names and infos, then the function
 * variable's name), script.tq, string.tq (sequential, cons, thin and sliced strings), and
 * include/v8-internal.h (tagging). Not thread safe.
 */
#ifndef SPANPROF_RUNTIME_V8_V8PROC_H
#define SPANPROF_RUNTIME_V8_V8PROC_H

#include <stdint.h>
#include <sys/types.h>

#include "runtime/v8/v8meta.h"

/* Why a frame could not be named: X(name, description). */
#define V8PROC_ERRORS(X)                                                                           \
	X(READ, "memory not readable (unmapped, or the process exited)")                           \
	X(TYPE, "not an object of the expected type (garbage, or moved by the GC)")                \
	X(STALE, "the SharedFunctionInfo changed since the sample (moved or freed by the GC)")     \
	X(STRING, "name not a string the agent reads (external, too long, or nested too deep)")

enum v8proc_error {
#define V8PROC_ENUM(n, d) V8PROC_ERR_##n,
	V8PROC_ERRORS(V8PROC_ENUM)
#undef V8PROC_ENUM
	    V8PROC_ERR_COUNT
};

const char *v8proc__error_name(enum v8proc_error e);

struct v8proc_stats {
	uint64_t errors[V8PROC_ERR_COUNT];
	uint64_t hits, misses; /* functions named from the cache / read */
};

/* A named function: strings owned by the v8proc, valid until v8proc__free(). */
struct v8fn_info {
	const char *name; /* the function's name; "(anonymous)" when it has none */
	const char *file; /* the script's name (path or URL, "node:internal/..."); "" unknown */
	int line;	  /* first line of the function (1-based); 0 unknown */
};

struct v8proc;

/* A reader of process @pid's V8 heap with layout @meta (copied). NULL + errno (ENOMEM). */
struct v8proc *v8proc__new(pid_t pid, const struct v8meta *meta);
/* NULL is a no-op. */
void v8proc__free(struct v8proc *p);

/*
 * The function of a frame whose SharedFunctionInfo was @sfi (tagged pointer) with
 * name_or_scope_info
 * @fingerprint at the sample. 0 and *@out, or -(1 + enum v8proc_error) (counted in the stats).
 */
int v8proc__function(struct v8proc *p, uint64_t sfi, uint64_t fingerprint,
		     const struct v8fn_info **out);

void v8proc__stats(const struct v8proc *p, struct v8proc_stats *out);

#endif /* SPANPROF_RUNTIME_V8_V8PROC_H */
