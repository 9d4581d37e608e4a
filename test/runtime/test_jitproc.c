// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the naming of JIT code (exporter/runtime/jit/jitproc.c, through the JIT runtime's
 * table jitprocs.c, which the process table's maps reads feed as the agent's do, and the resolve
 * step): a child maps anonymous executable memory and a perf map names it; the
 * map is then rewritten and the same address must never keep the old name, in the table or
 * in the profile's locations. A process without a map gets the hint once. The CFI of a
 * jitdump's code loads is handed on (to the unwinder) when it changes. Runs without root.
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
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "process/proctab.h"
#include "runtime/jit/jitdump.h"
#include "runtime/jit/jitproc.h"
#include "runtime/jit/jitprocs.h"
#include "util/util.h"
#include "resolve/resolve.h"
#include "symbols/symbolize.h"

#include "../testproc.h"
#include "jitdump_writer.h"

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

/* The process table's maps hook, as record/callbacks.c passes it to the runtimes. */
static void maps_hook(void *ctx, uint32_t pid, uint64_t start_boot_ns, const struct procmaps *maps)
{
	jitprocs__maps_hook(ctx, pid, start_boot_ns, maps);
}

/* The sample path with JIT naming, wired as record/record.c does. */
struct jitsetup {
	struct symcache *syms;
	struct proctab *t;
	struct jitprocs *jit;
	struct resolve *rv;
};

static void setup_jit(struct jitsetup *s)
{
	s->syms = symcache__new(NULL);
	s->t = proctab__new(s->syms);
	s->jit = jitprocs__new(NULL);
	s->rv = resolve__new(s->t, s->syms, NULL);
	assert_non_null(s->rv);
	assert_non_null(s->jit);
	resolve__set_jit(s->rv, s->jit);
	proctab__set_maps_hook(s->t, maps_hook, s->jit);
}

static void teardown_jit(struct jitsetup *s)
{
	resolve__free(s->rv);
	proctab__free(s->t);
	jitprocs__free(s->jit);
	symcache__free(s->syms);
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
	struct jitsetup s;
	struct resolve *rv;
	struct profile *p = profile__new();
	const struct jitproc_stats *js;
	struct child c;
	struct proc *proc;
	uint32_t first, later;

	setup_jit(&s);
	rv = s.rv;
	js = jitprocs__stats(s.jit);
	child_start(&c);
	map_append(&c, c.code, 0x100, "JS:*first /app/a.js:1");
	proc = proctab__get(s.t, (uint32_t)c.pid, start_ns(c.pid));
	assert_non_null(proc);
	/* Its maps read made its instance; a process without JIT memory (this one) has none. */
	assert_non_null(jitprocs__find(s.jit, (uint32_t)c.pid, start_ns(c.pid)));
	assert_non_null(proctab__get(s.t, (uint32_t)getpid(), start_ns(getpid())));
	assert_null(jitprocs__find(s.jit, (uint32_t)getpid(), start_ns(getpid())));
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
	teardown_jit(&s);
}

static void test_no_map_hint_once(void **unused)
{
	struct jitsetup s;
	struct resolve *rv;
	struct profile *p = profile__new();
	const struct jitproc_stats *js;
	struct child c;
	struct proc *proc;

	setup_jit(&s);
	rv = s.rv;
	js = jitprocs__stats(s.jit);
	child_start(&c);
	unlink(c.map);
	proc = proctab__get(s.t, (uint32_t)c.pid, start_ns(c.pid));
	assert_string_equal(name_of(rv, proc, p, c.code, NULL), "");
	assert_string_equal(name_of(rv, proc, p, c.code + 8, NULL), "");
	assert_int_equal(js->frames_unnamed, 2);
	assert_int_equal(js->hints, 1);
	assert_int_equal(js->open.by_reason[JITFILE_MISSING], 1); /* counted once, not per try */
	child_stop(&c);
	profile__free(p);
	teardown_jit(&s);
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

/* What the CFI hook was given. */
struct cfi_seen {
	int calls;
	uint32_t pid;
	struct jitproc_cfi *last;
};

static void cfi_hook(void *ctx, uint32_t pid, struct jitproc_cfi *cfi)
{
	struct cfi_seen *c = ctx;

	c->calls++;
	c->pid = pid;
	jitproc_cfi__free(c->last);
	c->last = cfi;
}

static void write_file(const char *path, const struct w *w)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(w->buf, 1, w->n, f), w->n);
	fclose(f);
}

/*
 * This process's own jitdump (read through /proc/PID/root like any other): the CFI of its code
 * loads is handed to the hook when a re-read changed it, once, and again when code replaced it.
 */
static void test_cfi_handed_on_change(void **unused)
{
	struct jitproc_stats st = {0};
	struct cfi_seen seen = {0};
	char dir[] = "/tmp/spanprof-jitproc-XXXXXX", path[96];
	struct jittab_sym s;
	struct jitproc *j;
	struct w w = {0};
	uint64_t before;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, getpid());
	header(&w, JITDUMP_MAGIC);
	unwinding(&w, "EH-STUB1", 8, 4, 0);
	load(&w, 0x7000, 0x10, "stub");
	write_file(path, &w);
	j = jitproc__new((uint32_t)getpid(), "/usr/bin/somejit", 0, &st);
	assert_non_null(j);
	jitproc__set_cfi_hook(j, cfi_hook, &seen);
	assert_int_equal(jitproc__saw_mapping(j, path), 1);
	assert_int_equal(jitproc__lookup(j, 0x7004, UINT64_MAX, &s, NULL), 0);
	assert_string_equal(s.name, "stub");
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.pid, (uint32_t)getpid());
	assert_int_equal(seen.last->n, 1);
	assert_int_equal(seen.last->v[0].code_addr, 0x7000);
	assert_int_equal(seen.last->v[0].eh_frame_addr, 0x7010);
	assert_memory_equal(seen.last->v[0].eh_frame, "EH-STUB1", 8);
	assert_int_equal(st.unwind_records, 1);
	assert_int_equal(st.unwind_used, 1);
	assert_int_equal(st.cfi_updates, 1);

	/* New code over the stub, without CFI: the next re-read hands on an empty set. */
	load(&w, 0x7000, 0x10, "newer");
	write_file(path, &w);
	before = util__boot_ns();
	usleep((JITPROC_REFRESH_NS + 10000000) / 1000);
	assert_int_equal(jitproc__lookup(j, 0x7004, UINT64_MAX, &s, NULL), 0);
	assert_string_equal(s.name, "newer");
	/* A sample taken before that read may have run the stub: not named "newer". */
	assert_int_equal(jitproc__lookup(j, 0x7004, before, &s, NULL), -ESTALE);
	assert_int_equal(st.frames_stale, 1);
	assert_int_equal(seen.calls, 2);
	assert_int_equal(seen.last->n, 0);
	assert_int_equal(st.unwind_dropped, 1);
	/* Nothing changed since: no call. */
	usleep((JITPROC_REFRESH_NS + 10000000) / 1000);
	jitproc__lookup(j, 0x7004, UINT64_MAX, &s, NULL);
	assert_int_equal(seen.calls, 2);

	jitproc__free(j);
	jitproc_cfi__free(seen.last);
	unlink(path);
	rmdir(dir);
}

/*
 * A jitdump whose header is not one (another byte order here): counted once as corrupt with a
 * bad header, never as a jitdump read, said once in the log however often it is tried again.
 * A later one corrupt at a record is counted without the header's counter.
 */
static void test_corrupt_header_counted_said(void **unused)
{
	struct jitproc_stats st = {0};
	char dir[] = "/tmp/spanprof-jitproc-XXXXXX", path[96], *text = NULL;
	struct jittab_sym s;
	struct jitproc *j;
	struct w w = {0};
	size_t len = 0;
	FILE *log = open_memstream(&text, &len);

	assert_non_null(log);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, getpid());
	header(&w, JITDUMP_MAGIC_SWAPPED);
	load(&w, 0x7000, 0x10, "stub");
	write_file(path, &w);
	j = jitproc__new((uint32_t)getpid(), "/usr/bin/somejit", 0, &st);
	assert_non_null(j);
	assert_int_equal(jitproc__saw_mapping(j, path), 1);
	assert_int_equal(jitproc__lookup(j, 0x7004, UINT64_MAX, &s, log), -ENOENT);
	usleep((JITPROC_REFRESH_NS + 10000000) / 1000);
	jitproc__lookup(j, 0x7004, UINT64_MAX, &s, log);
	assert_int_equal(st.dumps_corrupt, 1);
	assert_int_equal(st.dumps_bad_header, 1);
	assert_int_equal(st.jitdumps, 0);
	fflush(log);
	assert_non_null(strstr(text, "its header is not a jitdump's"));
	assert_non_null(strstr(text, path));
	assert_null(strstr(strstr(text, "its header") + 1, "its header"));
	jitproc__free(j);

	/* A good header, a good load, then a record smaller than its header. */
	w.n = 0;
	header(&w, JITDUMP_MAGIC);
	load(&w, 0x7000, 0x10, "stub");
	rec_header(&w, JIT_CODE_LOAD, 3);
	write_file(path, &w);
	j = jitproc__new((uint32_t)getpid(), "/usr/bin/somejit", 0, &st);
	assert_non_null(j);
	assert_int_equal(jitproc__saw_mapping(j, path), 1);
	assert_int_equal(jitproc__lookup(j, 0x7004, UINT64_MAX, &s, log), 0);
	assert_string_equal(s.name, "stub");
	assert_int_equal(st.dumps_corrupt, 2);
	assert_int_equal(st.dumps_bad_header, 1);
	assert_int_equal(st.jitdumps, 1);
	fflush(log);
	assert_non_null(strstr(text, "corrupt at byte"));
	jitproc__free(j);
	fclose(log);
	free(text);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_named_then_rewritten),
	    cmocka_unit_test(test_no_map_hint_once),
	    cmocka_unit_test(test_frame_types),
	    cmocka_unit_test(test_cfi_handed_on_change),
	    cmocka_unit_test(test_corrupt_header_counted_said),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
