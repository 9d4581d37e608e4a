// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the naming of JIT code in the process table (exporter/runtime/jit/jitproc.c
 * through proctab.c): a child maps anonymous executable memory and a perf map names it; the
 * map is then rewritten and the same address must never keep the old name, in the table or
 * in the profile's locations. A process without a map gets the hint once. Runs without root.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "process/proctab.h"
#include "resolve/resolve.h"
#include "symbols/symbolize.h"

#include "../testproc.h"

struct child {
	pid_t pid;
	uint64_t code; /* its anonymous executable page */
	int hold;      /* closing it lets the child exit */
	char map[64];
};

static void child_start(struct child *c)
{
	int up[2], down[2];

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	c->pid = fork_tied();
	if (!c->pid) {
		void *code =
		    mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t a = (uint64_t)(uintptr_t)code;
		char b;

		close(down[1]);
		close(up[0]);
		if (code == MAP_FAILED || write(up[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		while (read(down[0], &b, 1) > 0)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &c->code, sizeof(c->code)), sizeof(c->code));
	close(up[0]);
	c->hold = down[1];
	snprintf(c->map, sizeof(c->map), "/tmp/perf-%d.map", (int)c->pid);
}

static void child_stop(struct child *c)
{
	close(c->hold);
	waitpid(c->pid, NULL, 0);
	unlink(c->map);
}

static void map_append(const struct child *c, uint64_t start, uint64_t size, const char *name)
{
	FILE *f = fopen(c->map, "a");

	assert_non_null(f);
	fprintf(f, "%llx %llx %s\n", (unsigned long long)start, (unsigned long long)size, name);
	assert_int_equal(fclose(f), 0);
}

/* The name of the single location of user PC @pc (a leaf), "" when it has none. */
static const char *name_of(struct resolve *t, struct proc *proc, struct profile *p, uint64_t pc,
			   uint32_t *loc_out)
{
	uint32_t loc = 0;
	const struct profile_location *l;
	const struct profile_line *lines;

	assert_int_equal(resolve__user(t, proc, p, &pc, 1, NULL, 0, &loc), 1);
	l = profile__location(p, loc);
	assert_int_equal(l->kind, FRAME_JIT); /* the test binary is no runtime it knows */
	if (loc_out)
		*loc_out = loc;
	if (!l->nlines)
		return "";
	lines = profile__location_lines(p, loc);
	return profile__string(p, profile__function(p, lines[0].function)->name);
}

static void test_named_then_rewritten(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = resolve__new(t, syms, NULL);
	struct profile *p = profile__new();
	const struct jitproc_stats *js = &proctab__stats(t)->jit;
	struct child c;
	struct proc *proc;
	uint32_t first, later;

	child_start(&c);
	map_append(&c, c.code, 0x100, "JS:*first /app/a.js:1");
	proc = proctab__get(t, (uint32_t)c.pid, start_ns(c.pid));
	assert_non_null(proc);
	assert_string_equal(name_of(rv, proc, p, c.code + 0x10, &first), "JS:*first /app/a.js:1");
	assert_int_equal(js->perfmaps, 1);
	assert_int_equal(js->frames_named, 1);

	/* New code over part of "first": once the map is read again, no part of it is "first". */
	map_append(&c, c.code + 0x80, 0x40, "JS:*second /app/a.js:9");
	usleep(JITPROC_REFRESH_NS / 1000 + 20000);
	assert_string_equal(name_of(rv, proc, p, c.code + 0x90, NULL), "JS:*second /app/a.js:9");
	assert_string_equal(name_of(rv, proc, p, c.code + 0x10, &later), "");
	assert_true(later != first); /* the profile's location of that address is another one */
	assert_int_equal(js->replaced, 1);
	assert_int_equal(js->frames_unnamed, 1);
	assert_int_equal(js->hints, 0); /* it has a map: no hint */

	child_stop(&c);
	profile__free(p);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

static void test_no_map_hint_once(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = resolve__new(t, syms, NULL);
	struct profile *p = profile__new();
	const struct jitproc_stats *js = &proctab__stats(t)->jit;
	struct child c;
	struct proc *proc;

	child_start(&c);
	unlink(c.map);
	proc = proctab__get(t, (uint32_t)c.pid, start_ns(c.pid));
	assert_string_equal(name_of(rv, proc, p, c.code, NULL), "");
	assert_string_equal(name_of(rv, proc, p, c.code + 8, NULL), "");
	assert_int_equal(js->frames_unnamed, 2);
	assert_int_equal(js->hints, 1);
	assert_int_equal(js->open.by_reason[JITFILE_MISSING], 1); /* counted once, not per try */
	child_stop(&c);
	profile__free(p);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

static void test_frame_types(void **unused)
{
	assert_string_equal(profile__frame_type(FRAME_NATIVE), "native");
	assert_string_equal(profile__frame_type(FRAME_KERNEL), "kernel");
	assert_string_equal(profile__frame_type(FRAME_V8JS), "v8js");
	assert_string_equal(profile__frame_type(FRAME_JVM), "jvm");
	assert_string_equal(profile__frame_type(FRAME_DOTNET), "dotnet");
	assert_string_equal(profile__frame_type(FRAME_JIT), "jit");
	assert_null(profile__frame_type(FRAME_UNSET));
	assert_true(frame_kind__is_jit(FRAME_V8JS));
	assert_false(frame_kind__is_jit(FRAME_KERNEL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_named_then_rewritten),
	    cmocka_unit_test(test_no_map_hint_once),
	    cmocka_unit_test(test_frame_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
