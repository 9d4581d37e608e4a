/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8 frames (runtime/v8/): the JavaScript frames bpf/v8.bpf.h read for a node sample, named and
 * placed among its native frames.
 */
#include <stdlib.h>
#include <string.h>

#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "runtime/v8/v8tab.h"

#define V8_UNNAMED_NAME "[javascript frame not named]"

/*
 * The location of a V8 frame: function (its name, file and first line), keyed by (line,
 * function) as CPython frames are. 0 when it cannot be named (counted): the caller keeps the
 * native frame.
 */
static uint32_t v8_location(struct resolve *r, struct v8proc *v8, struct profile *p,
			    const struct v8_frame *f)
{
	const struct v8fn_info *fi;
	struct profile_function fn = {0};
	struct profile_line line = {0};

	if (v8proc__function(v8, f->sfi, f->fingerprint, &fi)) {
		r->stats.v8.frames_unnamed++;
		return 0;
	}
	fn.name = fn.system_name = profile__intern_string(p, fi->name);
	fn.filename = profile__intern_string(p, fi->file);
	line.function = profile__intern_function(p, &fn);
	line.line = fi->line > 0 ? fi->line : 0;
	if (!line.function)
		return 0;
	r->stats.v8.frames_named++;
	return profile__intern_location_version(p, 0, (uint64_t)line.line, FRAME_V8JS,
						line.function, &line, 1);
}

/*
 * Whether native location @loc is a frame whose place a JavaScript function takes: JIT code (V8's
 * compiled code, named from a perf map or not), or V8's interpreter in the node executable (the
 * entry trampoline and the bytecode handlers, "Builtins_*Handler", which run inside the
 * interpreted function's frame).
 */
static bool v8_replaceable(struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_function *fn;
	const char *name;
	size_t n;

	if (!l)
		return false;
	if (frame_kind__is_jit(l->kind))
		return true;
	if (l->kind != FRAME_NATIVE || !l->nlines)
		return false;
	fn = profile__function(p, profile__location_lines(p, loc)[l->nlines - 1].function);
	name = fn ? profile__string(p, fn->system_name) : NULL;
	if (!name || strncmp(name, "Builtins_", 9))
		return false;
	n = strlen(name);
	return !strncmp(name, "Builtins_Interpreter", 20) ||
	       (n > 16 && !strcmp(name + n - 7, "Handler"));
}

/*
 * Cross-check with V8's own perf map (node --perf-basic-prof): when the JIT location @loc that a
 * JavaScript frame replaces was named from it ("JS:*name file:line:col", the tier marks ~ ^ * + '
 * before the name; "LazyCompile:" and "Function:" in older nodes), counts whether its function
 * name is @name.
 */
static void v8_cross_check(struct resolve *r, struct profile *p, uint32_t loc, uint32_t js)
{
	const struct profile_location *l = profile__location(p, loc),
				      *lj = profile__location(p, js);
	const struct profile_function *fn, *fj;
	const char *perf, *name, *colon;
	size_t n;

	if (!l || !lj || !frame_kind__is_jit(l->kind) || l->nlines != 1 || lj->nlines != 1)
		return;
	fn = profile__function(p, profile__location_lines(p, loc)[0].function);
	fj = profile__function(p, profile__location_lines(p, js)[0].function);
	perf = fn ? profile__string(p, fn->name) : NULL;
	name = fj ? profile__string(p, fj->name) : NULL;
	if (!perf || !name || strncmp(perf, "JS:", 3) || !(colon = strchr(perf, ':')))
		return;
	perf = colon + 1;
	perf += strspn(perf, "~^*+'");
	n = strcspn(perf, " ");
	if (!n) /* an anonymous function: the map says nothing to compare */
		return;
	if (strlen(name) == n && !strncmp(perf, name, n))
		r->stats.v8.perfmap_agree++;
	else
		r->stats.v8.perfmap_disagree++;
}

/*
 * Puts the V8 frames of sample @s (bpf/v8.h, after slot @first of ustack) in the @n native user
 * locations @locs (leaf first, one per ustack PC; room for @cap): a JavaScript frame takes the
 * place of its JIT or interpreter frame, and follows any other native frame it was found at (a
 * builtin, or a leaf that had not set up its frame: V8_FRAME_CALLER). A frame that cannot be
 * named leaves the native one as it is. Returns the new number of locations.
 */
uint32_t resolve_v8__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			   uint32_t first, uint32_t *locs, uint32_t n, uint32_t cap)
{
	uint32_t nv = s->v8_len, i, j = 0, out = 0;
	struct v8_frame f[V8_MAX_FRAMES];
	struct v8proc *v8;

	if (nv > V8_MAX_FRAMES)
		nv = V8_MAX_FRAMES;
	if (first + 3 * nv > SP_MAX_USTACK)
		return n;
	v8 = v8tab__find(r->v8, s->pid, s->pstart_boot_ns);
	if (!v8) {
		r->stats.v8.no_process++;
		return n;
	}
	if (!r->v8locs) {
		r->v8locs = calloc(RESOLVE_MAX_LOCATIONS, sizeof(*r->v8locs));
		if (!r->v8locs)
			return n;
	}
	memcpy(f, &s->ustack[first], nv * sizeof(f[0]));
	for (i = 0; i < n; i++) {
		uint32_t js = 0;
		bool after = false;

		/* Records come leaf first, at most one per native frame. */
		while (j < nv && f[j].index < i)
			j++;
		if (j < nv && f[j].index == i) {
			js = v8_location(r, v8, p, &f[j]);
			after = (f[j].flags & V8_FRAME_CALLER) || !v8_replaceable(p, locs[i]);
			j++;
		}
		if (js && !after)
			v8_cross_check(r, p, locs[i], js);
		if (!js || after) {
			if (out < RESOLVE_MAX_LOCATIONS)
				r->v8locs[out++] = locs[i];
		}
		if (js && out < RESOLVE_MAX_LOCATIONS)
			r->v8locs[out++] = js;
	}
	if (out > cap)
		out = cap;
	memcpy(locs, r->v8locs, out * sizeof(*locs));
	r->stats.v8.merged++;
	return out;
}
