// SPDX-License-Identifier: Apache-2.0
/*
 * The runtime interface's lifecycle (exporter/runtime/runtime.c) with a runtime of the test's
 * own ("fakert": a file whose path holds "fakert" is the runtime's, "fakert-old" one it cannot
 * use, "gone" one it cannot read), on maps the test writes: creation on first sight, file
 * verdicts read once per identity, the start time learned later, PID reuse, exec, unmapping,
 * a failed creation, the counters. No BPF map (procs_fd -1): the descriptor is only filled.
 * A naming-only runtime (no descriptor) that follows each maps read itself (ops.proc_maps, as
 * the JIT's does) too.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/procmaps.h"
#include "runtime/runtime.h"
#include "../testproc.h"

struct fakefile {
	uint64_t ino; /* the file's, written by file_read */
};

struct fakeinst {
	uint32_t pid;
	uint64_t file_ino;
};

struct fakedesc {
	uint64_t start_boot_ns;
	uint32_t pid;
};

/* What the table called, for the assertions. */
struct fake {
	int reads, news, frees, frees_kept, descs, described, undescribed, no_files;
	int failed, last_err;
	int fail_next; /* proc_new's next answer: -errno, 0: an instance */
	struct fakedesc last_desc;
};

static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];

	return m->inode && m->path[0] == '/' && (i == 0 || strstr(m->path, "fakert"));
}

static enum runtime_verdict file_read(void *rt, uint32_t pid, const struct procmap *m, void *data)
{
	struct fake *c = rt;
	struct fakefile *f = data;

	(void)pid;
	c->reads++;
	f->ino = m->inode;
	if (strstr(m->path, "gone"))
		return RUNTIME_FILE_UNKNOWN;
	if (strstr(m->path, "fakert-old"))
		return RUNTIME_FILE_UNUSABLE;
	return strstr(m->path, "fakert") ? RUNTIME_FILE_RUNTIME : RUNTIME_FILE_OTHER;
}

static void *proc_new(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
		      const struct procmap *m, void *data, int *err)
{
	struct fake *c = rt;
	const struct fakefile *f = data;
	struct fakeinst *i;

	(void)maps;
	c->news++;
	assert_non_null(f);
	assert_int_equal(f->ino, m->inode);
	assert_int_equal(e->file.ino, m->inode);
	if (c->fail_next) {
		*err = c->fail_next;
		c->fail_next = 0;
		return NULL;
	}
	i = calloc(1, sizeof(*i));
	assert_non_null(i);
	i->pid = e->pid;
	i->file_ino = f->ino;
	return i;
}

static void proc_free(void *rt, void *inst, bool keep_counters)
{
	struct fake *c = rt;

	c->frees++;
	c->frees_kept += keep_counters;
	free(inst);
}

static int desc(void *rt, const struct runtime_proc *e, void *out)
{
	struct fake *c = rt;
	struct fakedesc *d = out;

	c->descs++;
	d->start_boot_ns = e->start_boot_ns;
	d->pid = e->pid;
	c->last_desc = *d;
	return 0;
}

static void proc_described(void *rt, struct runtime_proc *e)
{
	struct fake *c = rt;

	assert_true(e->described);
	c->described++;
}

static void proc_failed(void *rt, struct runtime_proc *e, int err)
{
	struct fake *c = rt;

	assert_null(e->inst);
	c->failed++;
	c->last_err = err;
}

static void undescribe(void *rt, struct runtime_proc *e)
{
	struct fake *c = rt;

	assert_non_null(e->inst);
	c->undescribed++;
}

static void no_file(void *rt, const struct procmaps *maps)
{
	struct fake *c = rt;

	(void)maps;
	c->no_files++;
}

static const struct runtime_ops fake_ops = {
    .name = "fakert",
    .file_size = sizeof(struct fakefile),
    .desc_size = sizeof(struct fakedesc),
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .desc = desc,
    .proc_described = proc_described,
    .proc_failed = proc_failed,
    .undescribe = undescribe,
    .no_file = no_file,
};

/* Executable mappings: the executable (inode 1), libc (2), and @lib (inode @ino; NULL: none). */
static void maps_of(struct procmaps *out, const char *lib, uint64_t ino)
{
	static const char *const paths[] = {"/usr/bin/app", "/lib/libc.so.6"};
	size_t n = lib ? 3 : 2;

	out->maps = calloc(n, sizeof(*out->maps));
	assert_non_null(out->maps);
	out->n = n;
	for (size_t i = 0; i < n; i++) {
		struct procmap *m = &out->maps[i];

		m->start = 0x400000 + i * 0x100000;
		m->end = m->start + 0x1000;
		m->inode = i < 2 ? i + 1 : ino;
		m->dev_major = 8;
		m->prot = 4; /* PROT_EXEC */
		m->path = strdup(i < 2 ? paths[i] : lib);
		assert_non_null(m->path);
	}
}

static struct runtime_table *table(struct fake *c)
{
	struct runtime_bpf bpf = {.procs_fd = -1};
	struct runtime_table *t = runtime_table__new(&fake_ops, c, &bpf);

	assert_non_null(t);
	return t;
}

static void created_on_first_sight_and_files_read_once(void **state)
{
	struct fake c = {0};
	struct runtime_table *t = table(&c);
	struct procmaps maps = {0};
	struct runtime_stats st;
	struct fakeinst *i;

	(void)state;
	maps_of(&maps, "/opt/lib/libfakert.so", 10);
	runtime_table__maps_hook(t, 1000, 0, &maps);
	i = runtime_table__find(t, 1000, 0);
	assert_non_null(i);
	assert_int_equal(i->pid, 1000);
	assert_int_equal(i->file_ino, 10);
	/* The executable (not the runtime) and the library were read; libc is no candidate. */
	assert_int_equal(c.reads, 2);
	assert_int_equal(c.described, 1);
	assert_int_equal(c.last_desc.pid, 1000);
	assert_non_null(
	    runtime_table__file(t, &(struct runtime_file_key){.ino = 10, .dev_major = 8}));

	/* The same maps again: nothing read, nothing written. */
	runtime_table__maps_hook(t, 1000, 0, &maps);
	assert_int_equal(c.reads, 2);
	assert_int_equal(c.descs, 1);
	/* Another process of the same files: its instance from the verdicts kept. */
	runtime_table__maps_hook(t, 1001, 0, &maps);
	assert_int_equal(c.reads, 2);
	assert_non_null(runtime_table__find(t, 1001, 0));
	runtime_table__stats(t, &st);
	assert_int_equal(st.processes, 2);
	assert_int_equal(st.live, 2);
	assert_int_equal(st.files_other, 1);

	/* A read that failed changes nothing. */
	runtime_table__maps_hook(t, 1000, 0, &(struct procmaps){0});
	assert_non_null(runtime_table__find(t, 1000, 0));

	runtime_table__free(t);
	assert_int_equal(c.frees, 2);
	assert_int_equal(c.frees_kept, 2);
	assert_int_equal(c.undescribed, 2);
	procmaps__clear(&maps);
}

static void start_time_learned_then_pid_reused(void **state)
{
	struct fake c = {0};
	struct runtime_table *t = table(&c);
	struct procmaps maps = {0};
	uint32_t self = (uint32_t)getpid();
	uint64_t start = start_ns(getpid());
	struct runtime_proc *e;
	void *first;

	(void)state;
	maps_of(&maps, "/opt/lib/libfakert.so", 10);
	runtime_table__maps_hook(t, self, 0, &maps); /* before sampling: any start time */
	first = runtime_table__find(t, self, 0);
	assert_non_null(first);
	assert_ptr_equal(runtime_table__find(t, self, start + 1), first);

	/* The first sample's maps read gives the start time: written into the descriptor. */
	runtime_table__maps_hook(t, self, start + 1, &maps);
	e = runtime_table__get(t, self);
	assert_non_null(e);
	assert_int_equal(e->start_boot_ns, start + 1);
	assert_int_equal(c.descs, 2);
	assert_int_equal(c.last_desc.start_boot_ns, start + 1);
	assert_null(runtime_table__find(t, self, start)); /* another process under that PID */

	/* The PID under another start time (this process's real one): the old entry goes, a new
	 * one is made and checked against /proc (it holds). */
	runtime_table__maps_hook(t, self, start, &maps);
	assert_int_equal(c.frees_kept, 1);
	assert_non_null(runtime_table__find(t, self, start));
	assert_int_equal(c.described, 2);
	assert_int_equal(c.last_desc.start_boot_ns, start);

	runtime_table__free(t);
	procmaps__clear(&maps);
}

static void dropped_at_exec_and_unmapping(void **state)
{
	struct fake c = {0};
	struct runtime_table *t = table(&c);
	struct procmaps with = {0}, without = {0};
	struct runtime_stats st;

	(void)state;
	maps_of(&with, "/opt/lib/libfakert.so", 10);
	maps_of(&without, NULL, 0);
	runtime_table__maps_hook(t, 2000, 0, &with);
	runtime_table__maps_hook(t, 2001, 0, &with);
	runtime_table__exec(t, 2000);
	assert_null(runtime_table__find(t, 2000, 0));
	assert_null(runtime_table__get(t, 2000));
	/* The runtime's file no longer mapped (exec'd into something else): dropped. */
	runtime_table__maps_hook(t, 2001, 0, &without);
	assert_null(runtime_table__get(t, 2001));
	assert_int_equal(c.no_files, 1);
	assert_int_equal(c.frees_kept, 2);
	assert_int_equal(c.undescribed, 2);
	runtime_table__stats(t, &st);
	assert_int_equal(st.processes, 2);
	assert_int_equal(st.live, 0);
	runtime_table__free(t);
	procmaps__clear(&with);
	procmaps__clear(&without);
}

static void failures_counted_and_verdicts_kept(void **state)
{
	struct fake c = {0};
	struct runtime_table *t = table(&c);
	struct procmaps maps = {0}, old = {0}, gone = {0};
	struct runtime_proc *e;
	struct runtime_stats st;

	(void)state;
	maps_of(&maps, "/opt/lib/libfakert.so", 10);
	c.fail_next = -ENOTSUP;
	runtime_table__maps_hook(t, 3000, 0, &maps);
	assert_null(runtime_table__find(t, 3000, 0));
	e = runtime_table__get(t, 3000);
	assert_non_null(e); /* kept: the same maps are not tried again */
	assert_false(e->described);
	assert_int_equal(c.failed, 1);
	assert_int_equal(c.last_err, -ENOTSUP);
	runtime_table__maps_hook(t, 3000, 0, &maps);
	assert_int_equal(c.news, 1);
	assert_int_equal(c.frees, 0);

	/* A file the runtime cannot use: remembered, not the runtime's, not counted as other. */
	maps_of(&old, "/opt/lib/libfakert-old.so", 11);
	runtime_table__maps_hook(t, 3001, 0, &old);
	runtime_table__maps_hook(t, 3002, 0, &old);
	assert_null(runtime_table__get(t, 3001));
	assert_int_equal(c.reads, 3); /* the executable and libfakert before, this one once */
	assert_int_equal(c.no_files, 2);

	/* A file that could not be read: asked again at the next maps read. */
	maps_of(&gone, "/opt/lib/libfakert-gone.so", 12);
	runtime_table__maps_hook(t, 3003, 0, &gone);
	runtime_table__maps_hook(t, 3003, 0, &gone);
	assert_int_equal(c.reads, 5);
	assert_null(runtime_table__file(t, &(struct runtime_file_key){.ino = 12, .dev_major = 8}));

	runtime_table__stats(t, &st);
	assert_int_equal(st.processes, 0);
	assert_int_equal(st.live, 0);
	assert_int_equal(st.files_other, 1); /* the executable */
	runtime_table__free(t);
	assert_int_equal(c.frees, 0);
	assert_int_equal(c.undescribed, 0);
	procmaps__clear(&maps);
	procmaps__clear(&old);
	procmaps__clear(&gone);
}

/* ops.proc_maps of the naming-only runtime: the runtime's while a "fakert" mapping is left. */
static int proc_maps_calls;

static bool proc_maps(void *rt, struct runtime_proc *e, const struct procmaps *maps)
{
	(void)rt;
	assert_non_null(e->inst);
	proc_maps_calls++;
	for (size_t i = 0; i < maps->n; i++)
		if (strstr(maps->maps[i].path, "fakert"))
			return true;
	return false;
}

static const struct runtime_ops naming_ops = {
    .name = "naming",
    .file_size = sizeof(struct fakefile),
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .proc_maps = proc_maps,
};

static void naming_only_follows_maps(void **state)
{
	struct fake c = {0};
	struct runtime_bpf bpf = {.procs_fd = -1};
	struct runtime_table *t = runtime_table__new(&naming_ops, &c, &bpf);
	struct procmaps first = {0}, other = {0}, none = {0};
	struct runtime_stats st;
	void *inst;

	(void)state;
	assert_non_null(t);
	proc_maps_calls = 0;
	maps_of(&first, "/opt/lib/libfakert.so", 10);
	maps_of(&other, "/opt/lib/libfakert2.so", 13);
	maps_of(&none, NULL, 0);
	/* No descriptor to fill: the instance is made and counted all the same. */
	runtime_table__maps_hook(t, 4000, 0, &first);
	inst = runtime_table__find(t, 4000, 0);
	assert_non_null(inst);
	assert_int_equal(proc_maps_calls, 0); /* proc_new saw the first read */
	runtime_table__stats(t, &st);
	assert_int_equal(st.processes, 1);
	/* Its file gone but the runtime says the process is still its: the same instance. */
	runtime_table__maps_hook(t, 4000, 0, &other);
	assert_int_equal(proc_maps_calls, 1);
	assert_ptr_equal(runtime_table__find(t, 4000, 0), inst);
	assert_int_equal(c.frees, 0);
	/* Nothing of the runtime left: dropped. */
	runtime_table__maps_hook(t, 4000, 0, &none);
	assert_int_equal(proc_maps_calls, 2);
	assert_null(runtime_table__get(t, 4000));
	assert_int_equal(c.frees_kept, 1);
	runtime_table__free(t);
	procmaps__clear(&first);
	procmaps__clear(&other);
	procmaps__clear(&none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(created_on_first_sight_and_files_read_once),
	    cmocka_unit_test(start_time_learned_then_pid_reused),
	    cmocka_unit_test(dropped_at_exec_and_unmapping),
	    cmocka_unit_test(failures_counted_and_verdicts_kept),
	    cmocka_unit_test(naming_only_follows_maps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
