// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <uthash.h>

#include "process/proclife.h"
#include "process/procmaps.h"
#include "runtime/python/pyelf.h"
#include "runtime/python/pytab.h"
#include "runtime/runtime.h"
#include "sampler.h"
#include "util/util.h"

/* File verdicts kept (identity -> CPython or not); past this the memory starts over. */
#define MAX_FILES 65536

/* What the table keeps per file (runtime_ops.file_size). */
struct pyfile {
	int cpython; /* CPython (its version may still be one not handled); 0: not CPython */
	int logged;  /* the unsupported (or not-CPython) message was written for this file */
	/* CPython: what pyproc__inspect_file() found (0 or -ENOTSUP), for every process of it. */
	int inspected;
	struct pyelf_info info;
	int dealloc_logged; /* a code-deallocation uprobe message was written for this file */
};

/* A CPython process's instance (runtime_proc.inst). */
struct pyinst {
	struct pyproc *p;
	/* The code-object cache: the process's code epoch is in py_code_epochs; the epoch's
	 * value, and when, at the last sweep (or when it began); its code-deallocation uprobe
	 * (-1: none); when it was described (the cache starts o.cache_after_ns later); no cache
	 * for it, ever. */
	int epoch;
	uint64_t epoch_seen, epoch_seen_ns;
	int dealloc_handle;
	uint64_t described_ns;
	int no_cache;
};

struct pytab {
	struct pytab_opts o;
	struct runtime_table *procs;
	struct pytab_stats st; /* processes, live and files_inspected: the table's */
	/* Naming counters of the entries already freed. */
	uint64_t freed_errors[PYPROC_ERR_COUNT];
	uint64_t freed_hits, freed_misses;
	uint64_t epochs; /* code epochs handed out (each starts at its number << 32) */
	size_t cached;	 /* processes with a code-deallocation uprobe now */
};

static const char *const failure_names[] = {
#define PYTAB_NAME(n, d) #n,
    PYTAB_FAILURES(PYTAB_NAME)
#undef PYTAB_NAME
};
static const char *const failure_descs[] = {
#define PYTAB_DESC(n, d) d,
    PYTAB_FAILURES(PYTAB_DESC)
#undef PYTAB_DESC
};

const char *pytab__failure_name(enum pytab_failure f)
{
	static char lower[PYTAB_FAIL_COUNT][16];

	if ((unsigned int)f >= PYTAB_FAIL_COUNT)
		return "?";
	return pyproc__lower_name(failure_names[f], lower[f], sizeof(lower[f]));
}

static const char *const stop_names[PY_STOP_COUNT] = {
#define PY_STOP_NAME(n, d) [PY_STOP_##n] = #n,
    PY_STOPS(PY_STOP_NAME)
#undef PY_STOP_NAME
};

const char *pytab__stop_name(unsigned int stop)
{
	static char lower[PY_STOP_COUNT][24];

	if (stop == PY_STOP_NONE || stop >= PY_STOP_COUNT)
		return "?";
	return pyproc__lower_name(stop_names[stop], lower[stop], sizeof(lower[stop]));
}

const char *pytab__failure_desc(enum pytab_failure f)
{
	return (unsigned int)f < PYTAB_FAIL_COUNT ? failure_descs[f] : "?";
}

/* "python" in the base name, but not an extension module's ("_json.cpython-313-x86_64-...so"). */
static bool python_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strstr(base, "python") && !strstr(base, ".cpython-");
}

/* A name users give a Python interpreter: "python" (as above) or "pypy". */
static bool interpreter_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return python_name(path) || strstr(base ? base + 1 : path, "pypy");
}

/* runtime_ops.candidate: "python" in its name, or the executable. */
static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];

	return m->inode && m->path[0] == '/' && (i == 0 || python_name(m->path));
}

/* runtime_ops.file_read: whether the file of mapping @m is CPython (pyproc__inspect_file()). */
static enum runtime_verdict file_read(void *rt, uint32_t pid, const struct procmap *m, void *data)
{
	struct pyfile *f = data;
	int err;

	(void)rt;
	err = pyproc__inspect_file((pid_t)pid, m, &f->info);
	if (err == -ENOENT || err == -EINVAL)
		return RUNTIME_FILE_OTHER;
	if (err && err != -ENOTSUP)
		return RUNTIME_FILE_UNKNOWN; /* unopenable, gone: looked at again next time */
	/* CPython, maybe of an unknown version: what was read serves every process of the file. */
	f->cpython = 1;
	f->inspected = err;
	return RUNTIME_FILE_RUNTIME;
}

/* The dynamic loader's file (glibc's ld-linux*, musl's ld-musl*, ld.so). */
static bool loader_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-musl", 7) ||
	       !strncmp(base, "ld.so", 5);
}

/*
 * Whether @maps were read while the dynamic loader had not mapped the libraries yet (right
 * after exec): it is mapped, and no file but it and the executable is.
 */
static bool libraries_not_mapped_yet(const struct procmaps *maps)
{
	bool loader = false;

	for (size_t i = 1; i < maps->n; i++) {
		const struct procmap *m = &maps->maps[i];

		if (!m->inode || m->path[0] != '/' || m->inode == maps->maps[0].inode)
			continue;
		if (!loader_name(m->path))
			return false;
		loader = true;
	}
	return loader;
}

/*
 * runtime_ops.no_file: a process in which no file is CPython, whose executable @maps[0] is
 * named as an interpreter (PyPy, a Python-like binary): said once per file, so that a user does
 * not wait for Python frames. (pyenv's python3.X executable is not CPython either, but its
 * libpython is: not said from maps read before the loader mapped the libraries, where libpython
 * is not yet.) Marks the file logged, as the unsupported message does.
 */
static void not_cpython(void *rt, const struct procmaps *maps)
{
	struct pytab *t = rt;
	const struct procmap *exe = &maps->maps[0];
	struct runtime_file_key k = {
	    .ino = exe->inode, .dev_major = exe->dev_major, .dev_minor = exe->dev_minor};
	struct pyfile *f;

	if (!candidate(maps, 0))
		return;
	f = runtime_table__file(t->procs, &k);
	if (!f || f->cpython || f->logged || !interpreter_name(exe->path) ||
	    libraries_not_mapped_yet(maps))
		return;
	f->logged = 1;
	fprintf(t->o.log,
		"spanprof: python: %s is not CPython (no _PyRuntime, PyCode_Type and "
		"_PyEval_EvalFrameDefault); its "
		"processes keep their native frames only\n",
		exe->path);
}

/* The process's code-object cache off: its epoch first (its walks stop using the cache), then
 * its uprobe. */
static void cache_off(struct pytab *t, const struct runtime_proc *e)
{
	struct pyinst *pi = e->inst;

	if (pi->epoch)
		bpf_map_delete_elem(t->o.epochs_fd, &e->pid);
	pi->epoch = 0;
	if (pi->dealloc_handle >= 0 && t->o.detach_dealloc) {
		t->o.detach_dealloc(t->o.attach_ctx, pi->dealloc_handle, e->pid);
		t->cached--;
	}
	pi->dealloc_handle = -1;
}

/* runtime_ops.undescribe: the cache goes before the descriptor. */
static void undescribe(void *rt, struct runtime_proc *e)
{
	cache_off(rt, e);
}

/*
 * Gives @e's process a new code epoch (bpf/python.h, the code-object cache): a number no
 * process of the run had, so that no slot filled before matches. Deleted and created, never
 * updated in place (bpf/python.bpf.h, py_code_epochs). Its uprobe must be attached. 0, or
 * -errno (the map full).
 */
static int epoch_renew(struct pytab *t, const struct runtime_proc *e)
{
	struct pyinst *pi = e->inst;
	struct py_code_epoch v = {.epoch = ++t->epochs << 32};
	int err;

	bpf_map_delete_elem(t->o.epochs_fd, &e->pid);
	err = bpf_map_update_elem(t->o.epochs_fd, &e->pid, &v, BPF_NOEXIST) ? -errno : 0;
	pi->epoch = !err;
	pi->epoch_seen = v.epoch;
	pi->epoch_seen_ns = util__mono_ns();
	return err;
}

/*
 * Attaches the code-deallocation uprobe for @e's process alone: PyCode_Type.tp_dealloc's
 * address, in an executable mapping of the interpreter's own file, as a file offset of that
 * mapping's file, named by /proc/PID/map_files/START-END (the very file mapped, even if a
 * path now names another; not checked by stat(): on overlayfs, as in containers, its st_dev
 * is the overlay's where the maps give the real file's). The process is checked to be the
 * one described, before and after, so a PID reused in between never keeps the uprobe. The
 * handle, or -errno: -EINVAL when the function is not where it must be, -ESRCH when the
 * process is gone.
 */
static int dealloc_attach(struct pytab *t, const struct runtime_proc *e)
{
	const struct pyinst *pi = e->inst;
	struct procmaps maps = {0};
	const struct procmap *m = NULL;
	char path[96];
	uint64_t addr = 0, offset = 0;
	int err, h;

	err = pyproc__code_dealloc(pi->p, &addr);
	if (!err)
		err = procmaps__read_filtered((int)e->pid, PROCMAPS_EXEC_ONLY, &maps);
	for (size_t i = 0; !err && i < maps.n && !m; i++)
		if (addr >= maps.maps[i].start && addr < maps.maps[i].end)
			m = &maps.maps[i];
	if (!err && (!m || !(m->prot & PROT_EXEC) || m->inode != e->file.ino ||
		     m->dev_major != e->file.dev_major || m->dev_minor != e->file.dev_minor))
		err = -EINVAL;
	if (!err) {
		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", e->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		offset = addr - m->start + m->offset;
	}
	procmaps__clear(&maps);
	if (!err && e->start_boot_ns)
		err = proclife__check(e->pid, e->start_boot_ns);
	if (err)
		return err;
	h = t->o.attach_dealloc(t->o.attach_ctx, e->pid, path, offset);
	if (h >= 0 && e->start_boot_ns && proclife__check(e->pid, e->start_boot_ns)) {
		if (t->o.detach_dealloc)
			t->o.detach_dealloc(t->o.attach_ctx, h, e->pid);
		return -ESRCH;
	}
	return h;
}

/* One message per interpreter file about its uprobe. */
static void dealloc_log(struct pytab *t, const struct runtime_proc *e, const char *what)
{
	struct pyfile *f = runtime_table__file(t->procs, &e->file);
	const struct pyinst *pi = e->inst;

	if (f && f->dealloc_logged)
		return;
	if (f)
		f->dealloc_logged = 1;
	fprintf(t->o.log, "spanprof: python: %s (PID %u, %s)\n", what, e->pid,
		pi && pi->p ? pyproc__path(pi->p) : "?");
}

/*
 * @e's code-object cache on: its uprobe, then its epoch. A process gone meanwhile is left for
 * the sweep; any other failure leaves it without the cache for good (counted, logged once per
 * file).
 */
static void cache_on(struct pytab *t, const struct runtime_proc *e)
{
	struct pyinst *pi = e->inst;
	char what[160];
	int h = dealloc_attach(t, e);

	if (h == -ESRCH || h == -ESTALE || h == -ENOENT) {
		pi->no_cache = 1; /* exited, or its mapping went: nothing to do for it */
		return;
	}
	if (h >= 0) {
		struct py_desc d;

		pi->dealloc_handle = h;
		t->cached++;
		h = epoch_renew(t, e);
		/* Its descriptor gone meanwhile: BPF's exec hook ran (and deleted the epoch before
		 * this one was made): no epoch may outlive it. */
		if (!h && t->o.procs_fd >= 0 && bpf_map_lookup_elem(t->o.procs_fd, &e->pid, &d)) {
			cache_off(t, e);
			pi->no_cache = 1;
			return;
		}
		if (!h) {
			t->st.dealloc_hooks++;
			return;
		}
		cache_off(t, e);
	}
	pi->no_cache = 1;
	t->st.dealloc_failed++;
	snprintf(what, sizeof(what),
		 "no uprobe on the code-object deallocation (%s): the walks of this file's "
		 "processes read every code object",
		 h == -EINVAL ? "PyCode_Type.tp_dealloc not in the interpreter's code"
			      : strerror(-h));
	dealloc_log(t, e, what);
}

/* runtime_ops.desc: struct py_desc (bpf/python.h). */
static int desc(void *rt, const struct runtime_proc *e, void *out)
{
	const struct pyinst *pi = e->inst;
	struct py_desc *d = out;

	(void)rt;
	if (!pi->p || pyproc__desc(pi->p, d))
		return -EINVAL;
	d->start_boot_ns = e->start_boot_ns;
	return 0;
}

static enum pytab_failure failure_of(int err)
{
	switch (err) {
	case -ENOTSUP:
		return PYTAB_FAIL_UNSUPPORTED;
	case -ESRCH:
	case -ESTALE:
		return PYTAB_FAIL_GONE;
	case -EINVAL:
		return PYTAB_FAIL_CORRUPT;
	default:
		return PYTAB_FAIL_UNREADABLE;
	}
}

/*
 * runtime_ops.proc_new: attaches to the interpreter of @e's process, found in the file of its
 * mapping @m of @maps (@data: that file's struct pyfile, NULL: read again). A version not
 * handled is said once per file.
 */
static void *proc_new(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
		      const struct procmap *m, void *data, int *err)
{
	struct pytab *t = rt;
	struct pyfile *f = data;
	struct pyinst *pi = calloc(1, sizeof(*pi));
	char why[512];

	why[0] = '\0';
	if (!pi) {
		*err = -ENOMEM;
		return NULL;
	}
	pi->dealloc_handle = -1;
	/* The file as inspected once for every process of it; else read again (memory cleared). */
	if (f)
		pi->p = pyproc__new_in_file((pid_t)e->pid, maps, m, &f->info, f->inspected, why,
					    sizeof(why));
	else
		pi->p = pyproc__new((pid_t)e->pid, why, sizeof(why));
	if (pi->p)
		return pi;
	*err = -errno;
	free(pi);
	if (*err == -ENOTSUP && why[0] && !(f && f->logged)) {
		if (f)
			f->logged = 1;
		fprintf(t->o.log, "spanprof: python: %s\n", why);
	}
	return NULL;
}

/* runtime_ops.proc_free: its naming counters kept with the freed ones. */
static void proc_free(void *rt, void *inst, bool keep_counters)
{
	struct pytab *t = rt;
	struct pyinst *pi = inst;
	const struct pyproc_stats *ps;

	if (keep_counters) {
		ps = pyproc__stats(pi->p);
		for (int i = 0; i < PYPROC_ERR_COUNT; i++)
			t->freed_errors[i] += ps->errors[i];
		t->freed_hits += ps->code_hits;
		t->freed_misses += ps->code_misses;
	}
	pyproc__free(pi->p);
	free(pi);
}

static void proc_described(void *rt, struct runtime_proc *e)
{
	struct pyinst *pi = e->inst;

	(void)rt;
	pi->described_ns = util__mono_ns();
}

/* runtime_ops.proc_failed: counted by reason. */
static void proc_failed(void *rt, struct runtime_proc *e, int err)
{
	struct pytab *t = rt;

	(void)e;
	if (err == -ENOENT) /* inspected as CPython, yet no interpreter found: nothing to count */
		return;
	if (err == -ENOMEM)
		return;
	if (err == -E2BIG || err == -ENOSPC) {
		t->st.failed[PYTAB_FAIL_MAP_FULL]++;
		return;
	}
	t->st.failed[failure_of(err)]++;
}

/* runtime_ops.new_batch: cached code objects are checked again; a descriptor that changed is
 * written again. */
static void new_epoch_one(void *ctx, struct runtime_proc *e)
{
	struct pytab *t = ctx;
	struct pyinst *pi = e->inst;

	if (!pi)
		return;
	pyproc__new_epoch(pi->p);
	/* 3.13-3.14: a second interpreter seen: the walk keys frames by contents from now on. */
	if (pyproc__desc_changed(pi->p) && e->described) {
		/* Fingerprints are keyed otherwise now: the cache is done with (rare: 3.13
		 * with a second interpreter). */
		cache_off(t, e);
		pi->no_cache = 1;
		runtime_table__describe(t->procs, e);
	}
}

static void new_batch(void *rt)
{
	struct pytab *t = rt;

	runtime_table__each(t->procs, new_epoch_one, t);
}

struct sweep {
	struct pytab *t;
	uint64_t now;
	bool sweep;
	int started;
};

/*
 * The code-object cache of each described process: on once it has been described for
 * o.cache_after_ns and its start time is known (short-lived processes never pay for the
 * uprobe: it is hit by every code object freed, and an interpreter frees thousands as it
 * exits), at most PYTAB_CACHE_ON_PER_TICK a call and PYTAB_MAX_CACHED at once; at a sweep,
 * off when it freed more than PYTAB_MAX_FREES_PER_S code objects a second since the last, or
 * when BPF dropped its epoch (exec, exit, its leader's exit).
 */
static void cache_sweep_one(void *ctx, struct runtime_proc *e)
{
	struct sweep *c = ctx;
	struct pytab *t = c->t;
	struct pyinst *pi = e->inst;
	struct py_code_epoch v;
	char what[160];
	uint64_t frees, ns;

	if (!e->described || e->gone_ns || pi->no_cache)
		return;
	if (!pi->epoch) {
		/* Known to be this process (its first sample gave its start time). */
		if (e->start_boot_ns && c->now - pi->described_ns >= t->o.cache_after_ns &&
		    t->cached < PYTAB_MAX_CACHED && c->started < PYTAB_CACHE_ON_PER_TICK) {
			cache_on(t, e);
			c->started++;
		}
		return;
	}
	if (!c->sweep)
		return;
	if (bpf_map_lookup_elem(t->o.epochs_fd, &e->pid, &v)) {
		/* BPF dropped it (exec, exit, the leader's exit): the uprobe goes too. */
		cache_off(t, e);
		pi->no_cache = 1;
		return;
	}
	frees = v.epoch - pi->epoch_seen;
	ns = c->now - pi->epoch_seen_ns;
	pi->epoch_seen = v.epoch;
	pi->epoch_seen_ns = c->now;
	if (frees * 1000000000.0 <= (double)PYTAB_MAX_FREES_PER_S * ns)
		return;
	snprintf(what, sizeof(what),
		 "%llu code objects freed in %.1f s: the code-deallocation uprobe is off "
		 "for this process (it cost it about 1 us a free); its walks read every "
		 "code object",
		 (unsigned long long)frees, ns / 1e9);
	cache_off(t, e);
	pi->no_cache = 1;
	t->st.dealloc_dropped++;
	dealloc_log(t, e, what);
}

/* runtime_ops.tick: before the table's sweep of gone processes. */
static void tick(void *rt, uint64_t now, bool sweep)
{
	struct pytab *t = rt;
	struct sweep c = {.t = t, .now = now, .sweep = sweep};

	if (t->o.attach_dealloc)
		runtime_table__each(t->procs, cache_sweep_one, &c);
}

static const struct runtime_ops python_ops = {
    .name = "python",
    .max_files = MAX_FILES,
    .file_size = sizeof(struct pyfile),
    .desc_size = sizeof(struct py_desc),
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .desc = desc,
    .proc_described = proc_described,
    .proc_failed = proc_failed,
    .undescribe = undescribe,
    .no_file = not_cpython,
    .tick = tick,
    .new_batch = new_batch,
};

struct pytab *pytab__new(const struct pytab_opts *o)
{
	struct pytab *t = calloc(1, sizeof(*t));
	struct runtime_bpf bpf = {
	    .procs_fd = o->procs_fd, .proc_known = o->proc_known, .map_bit = SP_PROC_KNOWN_PYTHON};

	if (!t)
		return NULL;
	t->o = *o;
	if (!t->o.log)
		t->o.log = stderr;
	t->procs = runtime_table__new(&python_ops, t, &bpf);
	if (!t->procs) {
		free(t);
		return NULL;
	}
	return t;
}

void pytab__free(struct pytab *t)
{
	if (!t)
		return;
	runtime_table__free(t->procs);
	free(t);
}

void pytab__maps_hook(struct pytab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps)
{
	runtime_table__maps_hook(t->procs, pid, start_boot_ns, maps);
}

struct scan {
	struct pytab *t;
	void (*found)(void *ctx, uint32_t pid);
	void *ctx;
	uint32_t self;
	size_t described;
};

static int scan_process(void *arg, uint32_t pid)
{
	struct scan *c = arg;
	struct procmaps maps = {0};
	struct runtime_proc *e = NULL;
	bool named = false;

	if (pid == c->self || procmaps__read_filtered((int)pid, PROCMAPS_EXEC_ONLY, &maps))
		return 0;
	for (size_t i = 0; i < maps.n && !named; i++)
		named = maps.maps[i].inode && python_name(maps.maps[i].path);
	if (named) {
		pytab__maps_hook(c->t, pid, 0, &maps);
		e = runtime_table__get(c->t->procs, pid);
	}
	procmaps__clear(&maps);
	if (!e || !e->described)
		return 0;
	c->described++;
	if (c->found)
		c->found(c->ctx, pid);
	return 0;
}

size_t pytab__scan(struct pytab *t, void (*found)(void *ctx, uint32_t pid), void *ctx)
{
	struct scan c = {.t = t, .found = found, .ctx = ctx, .self = (uint32_t)getpid()};

	proclife__each(scan_process, &c);
	return c.described;
}

void pytab__exec(struct pytab *t, uint32_t pid)
{
	runtime_table__exec(t->procs, pid);
}

struct pyproc *pytab__find(struct pytab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct pyinst *pi = runtime_table__find(t->procs, pid, start_boot_ns);

	return pi ? pi->p : NULL;
}

struct runtime_table *pytab__table(struct pytab *t)
{
	return t->procs;
}

static void add_naming(void *ctx, void *inst)
{
	struct pytab_stats *out = ctx;
	const struct pyinst *pi = inst;
	const struct pyproc_stats *ps = pyproc__stats(pi->p);

	for (int i = 0; i < PYPROC_ERR_COUNT; i++)
		out->name_errors[i] += ps->errors[i];
	out->code_hits += ps->code_hits;
	out->code_misses += ps->code_misses;
}

void pytab__stats(const struct pytab *t, struct pytab_stats *out)
{
	struct runtime_stats rs;

	*out = t->st;
	runtime_table__stats(t->procs, &rs);
	out->processes = rs.processes;
	out->live = rs.live;
	out->files_inspected = rs.files_other;
	for (int i = 0; i < PYPROC_ERR_COUNT; i++)
		out->name_errors[i] = t->freed_errors[i];
	out->code_hits = t->freed_hits;
	out->code_misses = t->freed_misses;
	runtime_table__each_inst(t->procs, add_naming, out);
}
