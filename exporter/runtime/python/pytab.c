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
#include "sampler.h"
#include "util/util.h"

/* File verdicts kept (identity -> CPython or not); past this the cache starts over. */
#define MAX_FILES 65536
/* A gone process's entry is freed at the first tick at least this long after it was found gone. */
#define GONE_KEEP_NS (2 * 1000000000ull)
/* Processes are checked for exit at most this often. */
#define SWEEP_NS (5 * 1000000000ull)

struct file_key {
	uint64_t ino;
	uint32_t dev_major, dev_minor;
};

enum file_verdict {
	FILE_NOT_PYTHON = 1, /* pyelf__inspect(): ENOENT */
	FILE_PYTHON,	     /* CPython (its version may still be one not handled) */
};

struct file_entry {
	struct file_key key;
	enum file_verdict verdict;
	int logged; /* the unsupported message was written for this file */
	/* FILE_PYTHON: what pyproc__inspect_file() found (0 or -ENOTSUP), for every process of it.
	 */
	int inspected;
	struct pyelf_info info;
	int dealloc_logged; /* a code-deallocation uprobe message was written for this file */
	UT_hash_handle hh;
};

struct pyentry {
	uint32_t pid;
	uint64_t start_boot_ns; /* 0: not known yet (--pid before sampling) */
	struct pyproc *p;	/* NULL: CPython mapped, but no descriptor (failed[] counted) */
	struct file_key file;	/* the interpreter's file */
	uint64_t gone_ns;	/* when the process was found gone; 0: alive */
	int described;		/* the descriptor is in py_procs */
	/* The code-object cache: the process's code epoch is in py_code_epochs; the epoch's
	 * value, and when, at the last sweep (or when it began); its code-deallocation uprobe
	 * (-1: none); when it was described (the cache starts o.cache_after_ns later); no cache
	 * for it, ever. */
	int epoch;
	uint64_t epoch_seen, epoch_seen_ns;
	int dealloc_handle;
	uint64_t described_ns;
	int no_cache;
	UT_hash_handle hh;
};

struct pytab {
	struct pytab_opts o;
	struct pyentry *procs;
	struct file_entry *files;
	size_t nfiles;
	uint64_t last_sweep_ns;
	struct pytab_stats st;
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

struct pytab *pytab__new(const struct pytab_opts *o)
{
	struct pytab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->o = *o;
	if (!t->o.log)
		t->o.log = stderr;
	t->last_sweep_ns = util__mono_ns();
	elf_version(EV_CURRENT);
	return t;
}

/* The process's code-object cache off: its epoch first (its walks stop using the cache), then
 * its uprobe. */
static void cache_off(struct pytab *t, struct pyentry *e)
{
	if (e->epoch)
		bpf_map_delete_elem(t->o.epochs_fd, &e->pid);
	e->epoch = 0;
	if (e->dealloc_handle >= 0 && t->o.detach_dealloc) {
		t->o.detach_dealloc(t->o.attach_ctx, e->dealloc_handle, e->pid);
		t->cached--;
	}
	e->dealloc_handle = -1;
}

static void entry_undescribe(struct pytab *t, struct pyentry *e)
{
	cache_off(t, e);
	if (e->described && t->o.procs_fd >= 0)
		bpf_map_delete_elem(t->o.procs_fd, &e->pid);
	e->described = 0;
}

static void entry_free(struct pytab *t, struct pyentry *e)
{
	const struct pyproc_stats *ps;

	entry_undescribe(t, e);
	if (e->p) {
		ps = pyproc__stats(e->p);
		for (int i = 0; i < PYPROC_ERR_COUNT; i++)
			t->freed_errors[i] += ps->errors[i];
		t->freed_hits += ps->code_hits;
		t->freed_misses += ps->code_misses;
		pyproc__free(e->p);
		t->st.live--;
	}
	HASH_DEL(t->procs, e);
	free(e);
}

static void files_clear(struct pytab *t)
{
	struct file_entry *f, *tmp;

	HASH_ITER (hh, t->files, f, tmp) {
		HASH_DEL(t->files, f);
		free(f);
	}
	t->nfiles = 0;
}

void pytab__free(struct pytab *t)
{
	struct pyentry *e, *tmp;

	if (!t)
		return;
	HASH_ITER (hh, t->procs, e, tmp)
		entry_free(t, e);
	files_clear(t);
	free(t);
}

static struct file_key key_of(const struct procmap *m)
{
	struct file_key k = {.ino = m->inode, .dev_major = m->dev_major, .dev_minor = m->dev_minor};

	return k;
}

static struct file_entry *file_find(struct pytab *t, const struct file_key *k)
{
	struct file_entry *f;

	HASH_FIND(hh, t->files, k, sizeof(*k), f);
	return f;
}

static struct file_entry *file_note(struct pytab *t, const struct file_key *k, enum file_verdict v)
{
	struct file_entry *f = file_find(t, k);

	if (f) {
		f->verdict = v;
		return f;
	}
	if (t->nfiles >= MAX_FILES)
		files_clear(t);
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->key = *k;
	f->verdict = v;
	HASH_ADD(hh, t->files, key, sizeof(f->key), f);
	t->nfiles++;
	return f;
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

/* A file mapped by @pid that may be the interpreter: "python" in its name, or the executable. */
static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];

	return m->inode && m->path[0] == '/' && (i == 0 || python_name(m->path));
}

/* Whether the file of mapping @m is CPython: from the cache, else inspected (and cached). */
static enum file_verdict verdict_of(struct pytab *t, uint32_t pid, const struct procmap *m)
{
	struct file_key k = key_of(m);
	struct file_entry *f = file_find(t, &k);
	struct pyelf_info info;
	int err;

	if (f)
		return f->verdict;
	err = pyproc__inspect_file((pid_t)pid, m, &info);
	if (err == -ENOENT || err == -EINVAL) {
		t->st.files_inspected++;
		file_note(t, &k, FILE_NOT_PYTHON);
		return FILE_NOT_PYTHON;
	}
	if (err && err != -ENOTSUP)
		return 0; /* unknown (unopenable, gone): not cached, looked at again next time */
	/* CPython, maybe of an unknown version: what was read serves every process of the file. */
	f = file_note(t, &k, FILE_PYTHON);
	if (f) {
		f->inspected = err;
		f->info = info;
	}
	return FILE_PYTHON;
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
 * A process in which no file is CPython, whose executable @maps[0] is named as an interpreter
 * (PyPy, a Python-like binary): said once per file, so that a user does not wait for Python
 * frames. (pyenv's python3.X executable is not CPython either, but its libpython is: not said
 * from maps read before the loader mapped the libraries, where libpython is not yet.)
 * Marks the file logged, as the unsupported message does.
 */
static void not_cpython(struct pytab *t, const struct procmaps *maps)
{
	const struct procmap *exe = &maps->maps[0];
	struct file_key k = key_of(exe);
	struct file_entry *f = file_find(t, &k);

	if (!f || f->verdict != FILE_NOT_PYTHON || f->logged || !interpreter_name(exe->path) ||
	    libraries_not_mapped_yet(maps))
		return;
	f->logged = 1;
	fprintf(t->o.log,
		"spanprof: python: %s is not CPython (no _PyRuntime, PyCode_Type and "
		"_PyEval_EvalFrameDefault); its "
		"processes keep their native frames only\n",
		exe->path);
}

/*
 * Gives @e's process a new code epoch (bpf/python.h, the code-object cache): a number no
 * process of the run had, so that no slot filled before matches. Deleted and created, never
 * updated in place (bpf/python.bpf.h, py_code_epochs). Its uprobe must be attached. 0, or
 * -errno (the map full).
 */
static int epoch_renew(struct pytab *t, struct pyentry *e)
{
	struct py_code_epoch v = {.epoch = ++t->epochs << 32};
	int err;

	bpf_map_delete_elem(t->o.epochs_fd, &e->pid);
	err = bpf_map_update_elem(t->o.epochs_fd, &e->pid, &v, BPF_NOEXIST) ? -errno : 0;
	e->epoch = !err;
	e->epoch_seen = v.epoch;
	e->epoch_seen_ns = util__mono_ns();
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
static int dealloc_attach(struct pytab *t, struct pyentry *e)
{
	struct procmaps maps = {0};
	const struct procmap *m = NULL;
	char path[96];
	uint64_t addr = 0, offset = 0;
	int err, h;

	err = pyproc__code_dealloc(e->p, &addr);
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
static void dealloc_log(struct pytab *t, const struct pyentry *e, const char *what)
{
	struct file_entry *f = file_find(t, &e->file);

	if (f && f->dealloc_logged)
		return;
	if (f)
		f->dealloc_logged = 1;
	fprintf(t->o.log, "spanprof: python: %s (PID %u, %s)\n", what, e->pid,
		e->p ? pyproc__path(e->p) : "?");
}

/*
 * @e's code-object cache on: its uprobe, then its epoch. A process gone meanwhile is left for
 * the sweep; any other failure leaves it without the cache for good (counted, logged once per
 * file).
 */
static void cache_on(struct pytab *t, struct pyentry *e)
{
	char what[160];
	int h = dealloc_attach(t, e);

	if (h == -ESRCH || h == -ESTALE || h == -ENOENT) {
		e->no_cache = 1; /* exited, or its mapping went: nothing to do for it */
		return;
	}
	if (h >= 0) {
		struct py_desc d;

		e->dealloc_handle = h;
		t->cached++;
		h = epoch_renew(t, e);
		/* Its descriptor gone meanwhile: BPF's exec hook ran (and deleted the epoch before
		 * this one was made): no epoch may outlive it. */
		if (!h && t->o.procs_fd >= 0 && bpf_map_lookup_elem(t->o.procs_fd, &e->pid, &d)) {
			cache_off(t, e);
			e->no_cache = 1;
			return;
		}
		if (!h) {
			t->st.dealloc_hooks++;
			return;
		}
		cache_off(t, e);
	}
	e->no_cache = 1;
	t->st.dealloc_failed++;
	snprintf(what, sizeof(what),
		 "no uprobe on the code-object deallocation (%s): the walks of this file's "
		 "processes read every code object",
		 h == -EINVAL ? "PyCode_Type.tp_dealloc not in the interpreter's code"
			      : strerror(-h));
	dealloc_log(t, e, what);
}

static int describe(struct pytab *t, struct pyentry *e)
{
	struct py_desc d;
	int err = 0;

	if (!e->p || pyproc__desc(e->p, &d))
		return -EINVAL;
	d.start_boot_ns = e->start_boot_ns;
	/* Marked: the exec and exit hooks forget only marked PIDs' entries. */
	if (t->o.procs_fd >= 0)
		err = sp_proc_entry_write(t->o.proc_known, SP_PROC_KNOWN_PYTHON, t->o.procs_fd,
					  e->pid, &d);
	if (err)
		return err;
	e->described = 1;
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
 * Attaches to the interpreter of @e's process, found in the file @k of its mapping @m (of
 * @maps); counts the outcome.
 */
static void attach(struct pytab *t, struct pyentry *e, const struct file_key *k,
		   const struct procmaps *maps, const struct procmap *m)
{
	struct file_entry *f = file_find(t, k);
	char why[512];
	int err = 0;

	e->file = *k;
	/* The file as inspected once for every process of it; else read again (cache cleared). */
	if (f && f->verdict == FILE_PYTHON)
		e->p = pyproc__new_in_file((pid_t)e->pid, maps, m, &f->info, f->inspected, why,
					   sizeof(why));
	else
		e->p = pyproc__new((pid_t)e->pid, why, sizeof(why));
	if (!e->p)
		err = -errno;
	/* Every read above was of this process only if it still runs under its PID now. */
	if (!err && e->start_boot_ns)
		err = proclife__check(e->pid, e->start_boot_ns);
	if (!err)
		err = describe(t, e);
	if (!err) {
		e->described_ns = util__mono_ns();
		t->st.processes++;
		t->st.live++;
		return;
	}
	if (e->p) {
		pyproc__free(e->p);
		e->p = NULL;
	}
	if (err == -ENOENT) /* inspected as CPython, yet no interpreter found: nothing to count */
		return;
	if (err == -ENOMEM)
		return;
	if (err == -E2BIG || err == -ENOSPC) {
		t->st.failed[PYTAB_FAIL_MAP_FULL]++;
		return;
	}
	t->st.failed[failure_of(err)]++;
	if (err != -ENOTSUP || !why[0])
		return;
	if (f && f->logged)
		return;
	if (f)
		f->logged = 1;
	fprintf(t->o.log, "spanprof: python: %s\n", why);
}

void pytab__maps_hook(struct pytab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps)
{
	struct procmaps own = {0};
	const struct procmap *found = NULL;
	struct pyentry *e;
	struct file_key k;

	if (!maps) {
		if (procmaps__read_filtered((int)pid, PROCMAPS_EXEC_ONLY, &own))
			return;
		maps = &own;
	}
	/* A read that failed (or was dropped: PID reused) says nothing about the interpreter. */
	if (!maps->n)
		goto cleanup;
	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (e && start_boot_ns && e->start_boot_ns && e->start_boot_ns != start_boot_ns) {
		entry_free(t, e); /* the PID was reused */
		e = NULL;
	}
	/* Nothing changed: the interpreter's file is still mapped. */
	if (e && procmaps__find_file(maps, e->file.ino, e->file.dev_major, e->file.dev_minor)) {
		if (!e->start_boot_ns && start_boot_ns) {
			e->start_boot_ns = start_boot_ns;
			if (e->described)
				describe(t, e);
		}
		goto cleanup;
	}
	if (e) {
		entry_free(t, e); /* exec'd, or unmapped: look again */
		e = NULL;
	}
	for (size_t i = 0; i < maps->n && !found; i++)
		if (candidate(maps, i) && verdict_of(t, pid, &maps->maps[i]) == FILE_PYTHON)
			found = &maps->maps[i];
	if (!found) {
		if (candidate(maps, 0))
			not_cpython(t, maps);
		goto cleanup;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto cleanup;
	e->pid = pid;
	e->start_boot_ns = start_boot_ns;
	e->dealloc_handle = -1;
	HASH_ADD(hh, t->procs, pid, sizeof(e->pid), e);
	k = key_of(found);
	attach(t, e, &k, maps, found);
cleanup:
	procmaps__clear(&own);
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
	struct pyentry *e = NULL;
	bool named = false;

	if (pid == c->self || procmaps__read_filtered((int)pid, PROCMAPS_EXEC_ONLY, &maps))
		return 0;
	for (size_t i = 0; i < maps.n && !named; i++)
		named = maps.maps[i].inode && python_name(maps.maps[i].path);
	if (named) {
		pytab__maps_hook(c->t, pid, 0, &maps);
		HASH_FIND(hh, c->t->procs, &pid, sizeof(pid), e);
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
	struct pyentry *e;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (e)
		entry_free(t, e);
}

struct pyproc *pytab__find(struct pytab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct pyentry *e;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (!e || (e->start_boot_ns && start_boot_ns && e->start_boot_ns != start_boot_ns))
		return NULL;
	return e->p;
}

void pytab__new_epoch(struct pytab *t)
{
	struct pyentry *e, *tmp;

	HASH_ITER (hh, t->procs, e, tmp) {
		if (!e->p)
			continue;
		pyproc__new_epoch(e->p);
		/* 3.13: a second interpreter seen: the walk keys frames by contents from now on. */
		if (pyproc__desc_changed(e->p) && e->described) {
			/* Fingerprints are keyed otherwise now: the cache is done with (rare: 3.13
			 * with a second interpreter). */
			cache_off(t, e);
			e->no_cache = 1;
			describe(t, e);
		}
	}
}

/*
 * The code-object cache of each described process: on once it has been described for
 * o.cache_after_ns and its start time is known (short-lived processes never pay for the
 * uprobe: it is hit by every code object freed, and an interpreter frees thousands as it
 * exits), at most PYTAB_CACHE_ON_PER_TICK a call and PYTAB_MAX_CACHED at once; at a @sweep,
 * off when it freed more than PYTAB_MAX_FREES_PER_S code objects a second since the last, or
 * when BPF dropped its epoch (exec, exit, its leader's exit).
 */
static void cache_sweep(struct pytab *t, uint64_t now, int sweep)
{
	struct pyentry *e, *tmp;
	struct py_code_epoch v;
	int started = 0;
	char what[160];

	HASH_ITER (hh, t->procs, e, tmp) {
		uint64_t frees, ns;

		if (!e->described || e->gone_ns || e->no_cache)
			continue;
		if (!e->epoch) {
			/* Known to be this process (its first sample gave its start time). */
			if (e->start_boot_ns && now - e->described_ns >= t->o.cache_after_ns &&
			    t->cached < PYTAB_MAX_CACHED && started < PYTAB_CACHE_ON_PER_TICK) {
				cache_on(t, e);
				started++;
			}
			continue;
		}
		if (!sweep)
			continue;
		if (bpf_map_lookup_elem(t->o.epochs_fd, &e->pid, &v)) {
			/* BPF dropped it (exec, exit, the leader's exit): the uprobe goes too. */
			cache_off(t, e);
			e->no_cache = 1;
			continue;
		}
		frees = v.epoch - e->epoch_seen;
		ns = now - e->epoch_seen_ns;
		e->epoch_seen = v.epoch;
		e->epoch_seen_ns = now;
		if (frees * 1000000000.0 <= (double)PYTAB_MAX_FREES_PER_S * ns)
			continue;
		snprintf(what, sizeof(what),
			 "%llu code objects freed in %.1f s: the code-deallocation uprobe is off "
			 "for this process (it cost it about 1 us a free); its walks read every "
			 "code object",
			 (unsigned long long)frees, ns / 1e9);
		cache_off(t, e);
		e->no_cache = 1;
		t->st.dealloc_dropped++;
		dealloc_log(t, e, what);
	}
}

void pytab__tick(struct pytab *t)
{
	uint64_t now = util__mono_ns();
	struct pyentry *e, *tmp;
	int err;

	if (t->o.attach_dealloc)
		cache_sweep(t, now, now - t->last_sweep_ns >= SWEEP_NS);
	if (now - t->last_sweep_ns < SWEEP_NS)
		return;
	t->last_sweep_ns = now;
	HASH_ITER (hh, t->procs, e, tmp) {
		if (e->gone_ns) {
			if (now - e->gone_ns >= GONE_KEEP_NS)
				entry_free(t, e);
			continue;
		}
		err = proclife__check(e->pid, e->start_boot_ns);
		if (err == -ESRCH || err == -ESTALE) {
			entry_undescribe(t, e);
			e->gone_ns = now;
		}
	}
}

void pytab__stats(const struct pytab *t, struct pytab_stats *out)
{
	const struct pyentry *e, *tmp;

	*out = t->st;
	for (int i = 0; i < PYPROC_ERR_COUNT; i++)
		out->name_errors[i] = t->freed_errors[i];
	out->code_hits = t->freed_hits;
	out->code_misses = t->freed_misses;
	HASH_ITER (hh, t->procs, e, tmp) {
		const struct pyproc_stats *ps;

		if (!e->p)
			continue;
		ps = pyproc__stats(e->p);
		for (int i = 0; i < PYPROC_ERR_COUNT; i++)
			out->name_errors[i] += ps->errors[i];
		out->code_hits += ps->code_hits;
		out->code_misses += ps->code_misses;
	}
}
