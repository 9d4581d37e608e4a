/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Java frames (runtime/jvm/): the frames bpf/hotspot.bpf.h walked in a JVM's code cache, proven
 * and named by runtime/jvm/hsname.c, put in the place of their native (JIT) frames.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "runtime/jvm/hsname.h"
#include "runtime/jvm/hstab.h"

/* Inlined methods shown per compiled frame at most (the innermost ones kept). */
#define JVM_MAX_LINES 32

/*
 * The location of Java frame record @w0, @w1 (bpf/hotspot.h) at native PC @pc (@exact: the
 * sampled instruction) of sample @s: one line per method, the innermost (inlined) first, as native
 * inlined frames are. 0 when it cannot be named (counted): the native frame stays.
 */
static uint32_t jvm_location(struct resolve *r, struct hsname *hn, struct profile *p,
			     const struct sp_sample *s, uint64_t w0, uint64_t w1, uint64_t pc,
			     bool exact)
{
	uint64_t kind = (w0 >> HS_KIND_SHIFT) & 3, addr = w0 & HS_ADDR_MASK;
	struct profile_line lines[JVM_MAX_LINES];
	struct hs_frame_name fn;
	struct hs_line stub_line;
	uint32_t n = 0;
	int err;

	if (kind == HS_KIND_STUB) {
		const char *stub =
		    hstab__stub_name(r->jvm, s->pid, s->pstart_boot_ns, addr, (uint32_t)w1);
		static const struct hs_line none;

		if (!stub) {
			r->stats.jvm.frames_unnamed++;
			return 0;
		}
		stub_line = none;
		stub_line.method = stub;
		fn.n = 1;
		fn.lines = &stub_line;
		err = 0;
	} else if (kind == HS_KIND_INTERPRETED)
		err = hsname__interpreted(hn, addr, (uint32_t)(w1 >> 32), (uint32_t)w1, &fn);
	else if (kind == HS_KIND_COMPILED)
		err =
		    hsname__compiled(hn, addr, (uint32_t)(w1 >> 32), (uint32_t)w1, pc, exact, &fn);
	else
		err = -1;
	if (err || fn.n <= 0) {
		r->stats.jvm.frames_unnamed++;
		return 0;
	}
	for (int i = 0; i < fn.n && n < JVM_MAX_LINES; i++) {
		const struct hs_line *l = &fn.lines[i];
		struct profile_function f = {0};
		char name[1024];

		if (l->klass)
			snprintf(name, sizeof(name), "%s.%s", l->klass, l->method);
		else
			snprintf(name, sizeof(name), "%s", l->method);
		f.name = f.system_name = profile__intern_string(p, name);
		f.filename = profile__intern_string(p, l->file ? l->file : "");
		lines[n].function = profile__intern_function(p, &f);
		lines[n].line = l->line > 0 ? l->line : 0;
		if (!lines[n].function)
			return 0;
		n++;
	}
	r->stats.jvm.frames_named++;
	/*
	 * Keyed by its lines alone (functions and line numbers, FNV-1a over them; the version the
	 * innermost function, as CPython frames are): the same code at another address, or
	 * another process's, is one location; two chains share a key only if a 64-bit hash of
	 * different lines collides.
	 */
	uint64_t key = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t v[2] = {lines[i].function, (uint64_t)lines[i].line};

		for (int k = 0; k < 2; k++) {
			key ^= v[k];
			key *= 0x100000001b3ull;
		}
	}
	return profile__intern_location_version(p, 0, key, FRAME_JVM, lines[0].function, lines, n);
}

uint32_t resolve_jvm__merge(struct resolve *r, struct profile *p, const struct sp_sample *s,
			    uint32_t first, uint32_t *locs, uint32_t n, uint32_t uu)
{
	uint32_t nj = s->hs_len, j;
	struct hsname *hn;

	if (first + 2 * nj > SP_MAX_USTACK)
		return n;
	hn = hstab__namer(r->jvm, s->pid, s->pstart_boot_ns);
	if (!hn) {
		r->stats.jvm.no_process++;
		return n;
	}
	for (j = 0; j < nj; j++) {
		uint64_t w0 = s->ustack[first + 2 * j], w1 = s->ustack[first + 2 * j + 1];
		uint32_t i = (uint32_t)((w0 >> HS_INDEX_SHIFT) & HS_INDEX_MASK), loc;

		/* One location per PC (n == uu): frame i is locs[i]. */
		if (i >= n || i >= uu)
			continue;
		loc = jvm_location(r, hn, p, s, w0, w1, s->ustack[i], i == 0);
		if (loc)
			locs[i] = loc;
	}
	r->stats.jvm.merged++;
	return n;
}
