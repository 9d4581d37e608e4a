// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/runtime/python/: CPython detection (pyelf), layouts (pylayout, the
 * 3.8-3.12 table and 3.13's _Py_DebugOffsets), line tables (pylines) and the out-of-process
 * reader (pyproc). Each installed CPython runs test/runtime/python-progs/known.py, which prints
 * what the interpreter itself says about its threads, frames and code objects; the test reads the
 * same process from outside (process_vm_readv: same user, no root) and must find exactly that.
 * An interpreter absent from this machine is skipped, naming the path looked for.
 */
#include <asm/prctl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <glob.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../testproc.h"

#include "runtime/python/pyelf.h"
#include "runtime/python/pylayout.h"
#include "runtime/python/pylines.h"
#include "runtime/python/pymerge.h"
#include "runtime/python/pyproc.h"
#include "runtime/python/pytab.h"

#include "process/procmaps.h"
#include "profile/profile.h"
#include "symbols/symbolize.h"
#include "python.h"
/* The BPF walk's steps, run here against the child's memory. */
#define PYWALK_READ_USER(rctx, dst, addr) procmaps__read_mem(*(pid_t *)(rctx), (addr), (dst), 8)
#define PYWALK_READ_SPAN(rctx, dst, addr, len)                                                     \
	procmaps__read_mem(*(pid_t *)(rctx), (addr), (dst), (len))
#include "python_walk.h"

#ifndef PY_PROGS_DIR
#error "PY_PROGS_DIR must name test/runtime/python-progs"
#endif

/* --- what the child reports -------------------------------------------------------------- */

struct exp_frame {
	uint64_t code;
	int64_t lasti;
	int lineno;
};

struct exp_thread {
	uint64_t ident, native;
	struct exp_frame frames[64];
	size_t n;
};

struct exp_code {
	uint64_t id;
	int firstlineno;
	char qualname[128], filename[256];
};

struct exp_line {
	uint64_t code;
	int64_t offset;
	int line;
};

struct child {
	pid_t pid;
	FILE *out; /* child's stdout */
	int in;	   /* child's stdin */
	uint64_t version, self;
	unsigned int minor;
	struct exp_thread threads[8];
	size_t n_threads;
	struct exp_code codes[64];
	size_t n_codes;
	struct exp_line *lines;
	size_t n_lines;
};

static char *field(char **s)
{
	char *f = strsep(s, "\t\n");

	assert_non_null(f);
	return f;
}

static void start_child(struct child *c, const char *python)
{
	int out[2], in[2];
	char line[1024], *s, *kind;
	struct exp_thread *t = NULL;

	memset(c, 0, sizeof(*c));
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(in), 0);
	c->pid = fork_tied();
	if (!c->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(python, python, "-I", PY_PROGS_DIR "/known.py", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = fdopen(out[0], "r");
	assert_non_null(c->out);
	c->lines = calloc(20000, sizeof(*c->lines));
	assert_non_null(c->lines);
	while (fgets(line, sizeof(line), c->out)) {
		s = line;
		kind = field(&s);
		if (!strcmp(kind, "end"))
			return;
		if (!strcmp(kind, "version")) {
			c->version = strtoull(field(&s), NULL, 16);
			c->minor = (c->version >> 16) & 0xff;
		} else if (!strcmp(kind, "self")) {
			c->self = strtoull(field(&s), NULL, 10);
		} else if (!strcmp(kind, "thread")) {
			assert_true(c->n_threads < 8);
			t = &c->threads[c->n_threads++];
			t->ident = strtoull(field(&s), NULL, 10);
			t->native = strtoull(field(&s), NULL, 10);
		} else if (!strcmp(kind, "frame")) {
			assert_non_null(t);
			assert_true(t->n < 64);
			t->frames[t->n].code = strtoull(field(&s), NULL, 10);
			t->frames[t->n].lasti = strtoll(field(&s), NULL, 10);
			t->frames[t->n].lineno = atoi(field(&s));
			t->n++;
		} else if (!strcmp(kind, "code")) {
			struct exp_code *e = &c->codes[c->n_codes++];

			assert_true(c->n_codes <= 64);
			e->id = strtoull(field(&s), NULL, 10);
			e->firstlineno = atoi(field(&s));
			snprintf(e->qualname, sizeof(e->qualname), "%s", field(&s));
			snprintf(e->filename, sizeof(e->filename), "%s", field(&s));
		} else if (!strcmp(kind, "line")) {
			struct exp_line *l = &c->lines[c->n_lines++];

			assert_true(c->n_lines < 20000);
			l->code = strtoull(field(&s), NULL, 10);
			l->offset = strtoll(field(&s), NULL, 10);
			l->line = atoi(field(&s));
		}
	}
	fail_msg("%s: the child ended its output without 'end'", python);
}

static const struct exp_code *exp_code(const struct child *c, uint64_t id)
{
	size_t i;

	for (i = 0; i < c->n_codes; i++)
		if (c->codes[i].id == id)
			return &c->codes[i];
	return NULL;
}

/* --- the interpreters of this machine ------------------------------------------------------ */

struct interp {
	const char *label;
	unsigned int minor;
	int pyenv;	  /* 1: under $PYENV_ROOT/versions, else @path as is */
	const char *path; /* non-pyenv path */
	char found[512];
};

/* The interpreter's path, or NULL (the test is skipped, saying what was looked for). */
static const char *find_python(struct interp *in)
{
	const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");
	char pattern[512];
	glob_t g;

	if (!in->pyenv)
		return access(in->path, X_OK) ? NULL : in->path;
	if (root)
		snprintf(pattern, sizeof(pattern), "%s/versions/3.%u.*/bin/python3.%u", root,
			 in->minor, in->minor);
	else
		snprintf(pattern, sizeof(pattern), "%s/.pyenv/versions/3.%u.*/bin/python3.%u",
			 home ? home : "/root", in->minor, in->minor);
	snprintf(in->found, sizeof(in->found), "%s", pattern);
	if (glob(pattern, 0, NULL, &g) || !g.gl_pathc) {
		globfree(&g);
		return NULL;
	}
	snprintf(in->found, sizeof(in->found), "%s", g.gl_pathv[0]);
	globfree(&g);
	return in->found;
}

static size_t count_frames(const struct child *c)
{
	size_t i, n = 0;

	for (i = 0; i < c->n_threads; i++)
		n += c->threads[i].n;
	return n;
}

/*
 * Why the interpreter at glob @pattern is not there: "not installed here", or, when a directory
 * on the way cannot be searched by this user, that (a skip must say what is really absent).
 */
static const char *absent_why(const char *pattern)
{
	char dir[512], *cut;

	snprintf(dir, sizeof(dir), "%s", pattern);
	while ((cut = strrchr(dir, '/')) && cut != dir) {
		*cut = '\0';
		if (!strchr(dir, '*') && access(dir, X_OK) && errno == EACCES)
			return "not readable by this user";
	}
	return "not installed here";
}

static struct pythread *find_thread(struct pythread *t, size_t n, uint64_t ident)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].thread_id == ident)
			return &t[i];
	return NULL;
}

/*
 * Whether frame @j of thread @e is the outermost frame of a call of the interpreter loop from C
 * (PY_FRAME_ENTRY). Up to 3.10 every Python call is one. From 3.11 Python-to-Python calls run
 * inside the caller's loop, except where C sits between: a thread's first frame, map() calling
 * callback, a bound method called with *args (Worker.run), and in 3.11 any function called
 * with *args (Thread.run's self._target(*args), start's fn(*args)). Checked against the native
 * stacks of these programs (gdb: one _PyEval_EvalFrameDefault per entry frame, each thread,
 * 3.11.7, 3.12.1, 3.13.0; 3.14.10 adds Thread.run, which Lib/threading.py now calls through
 * contextvars' Context.run).
 */
static int expect_entry(const struct child *c, const struct exp_thread *e, size_t j)
{
	const char *name = exp_code(c, e->frames[j].code)->qualname;
	const char *caller = j + 1 < e->n ? exp_code(c, e->frames[j + 1].code)->qualname : NULL;

	if (c->minor <= 10 || !caller)
		return 1;
	if (!strcmp(name, "callback") || !strcmp(name, "Worker.run"))
		return 1;
	/* 3.14's Thread._bootstrap_inner runs self.run through self._context.run (C). */
	if (c->minor >= 14 && !strcmp(name, "Thread.run"))
		return 1;
	return c->minor == 11 &&
	       (!strcmp(name, "start.<locals>.run") || !strcmp(caller, "start.<locals>.run"));
}

/* The thread state the search finds for thread @e (as the BPF walk does), or 0. */
static __u64 search_tstate(struct child *c, const struct py_desc *d, const struct exp_thread *e)
{
	struct pywalk_cursor cur;
	int i, r;

	if (pywalk__tstate_begin(&c->pid, d, &cur))
		return 0;
	for (i = 0; i < PY_MAX_THREAD_STEPS; i++) {
		r = pywalk__tstate_step(&c->pid, d, &cur, e->ident, (__u32)e->native);
		if (r)
			return r == 1 ? cur.tstate : 0;
	}
	return 0;
}

/*
 * The check of a cached thread state (pywalk__tstate_check()): each thread's own state passes,
 * for it alone, with the innermost frame pywalk__first_frame() finds; another thread's
 * identity, an address inside the state, and none fail.
 */
static void check_tstate_cache(struct child *c, const struct py_desc *d)
{
	static struct pywalk_buf b; /* over 4 KiB */
	__u64 frame, first;
	size_t i, k;

	for (i = 0; i < c->n_threads; i++) {
		const struct exp_thread *e = &c->threads[i];
		__u64 t = search_tstate(c, d, e);

		assert_true(t != 0);
		frame = 1;
		assert_int_equal(
		    pywalk__tstate_check(&c->pid, d, t, e->ident, (__u32)e->native, &b, &frame), 1);
		assert_int_equal(pywalk__first_frame(&c->pid, d, t, &first), 0);
		assert_int_equal(frame, first);
		for (k = 0; k < c->n_threads; k++) {
			const struct exp_thread *o = &c->threads[k];

			if (k != i)
				assert_int_equal(pywalk__tstate_check(&c->pid, d, t, o->ident,
								      (__u32)o->native, &b, &frame),
						 0);
		}
		assert_int_equal(
		    pywalk__tstate_check(&c->pid, d, t + 8, e->ident, (__u32)e->native, &b, &frame),
		    0);
	}
	assert_int_equal(pywalk__tstate_check(&c->pid, d, 0, 0, 0, &b, &frame), 0);
}

/* Whether walks @a and @b (@n frames each) recorded the same frames. */
static bool same_frames(const struct py_frame *a, const struct py_frame *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i].code != b[i].code || a[i].offset != b[i].offset ||
		    a[i].flags != b[i].flags)
			return false;
	return true;
}

/*
 * The code-object cache (bpf/python.h): a second walk of a thread with the process's epoch
 * takes the code objects of the frames below the innermost from it (fewer reads) and records
 * the very same frames; a walk with another epoch, another process, no epoch, or over a slot
 * whose value was changed (a slot half written) reads them again, with the same frames.
 */
static void check_code_cache(struct child *c, const struct py_desc *d)
{
	static struct pywalk_buf b; /* over 20 KiB */
	static struct py_frame first[PY_MAX_FRAMES], again[PY_MAX_FRAMES];
	struct pywalk_cache_key ck = {.epoch = 7ull << 32, .tgid = (__u32)c->pid};
	struct pywalk_cache_key other = ck;
	size_t i, tried = 0;
	int n1, n2;
	__u32 read1;

	for (i = 0; i < c->n_threads; i++) {
		const struct exp_thread *e = &c->threads[i];
		__u32 k;
		int j;

		memset(b.cache, 0, sizeof(b.cache));
		assert_int_equal(pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &ck, &b,
						    first, PY_MAX_FRAMES, &n1),
				 PY_STOP_END);
		read1 = b.memo.read;
		assert_int_equal(b.memo.cached, 0);
		/* Below the innermost frame, some code object other than its own. */
		for (k = 1; k < (__u32)n1 && first[k].code == first[0].code; k++)
			;
		if (k >= (__u32)n1)
			continue;
		tried++;
		assert_int_equal(pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &ck, &b,
						    again, PY_MAX_FRAMES, &n2),
				 PY_STOP_END);
		assert_int_equal(n2, n1);
		assert_true(same_frames(first, again, n1));
		assert_true(b.memo.cached > 0);
		assert_true(b.memo.read < read1);
		/* Another epoch (a code object freed since), another process, no cache. */
		other.epoch = ck.epoch + 1;
		other.tgid = ck.tgid;
		assert_int_equal(pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &other,
						    &b, again, PY_MAX_FRAMES, &n2),
				 PY_STOP_END);
		assert_int_equal(b.memo.cached, 0);
		assert_true(n2 == n1 && same_frames(first, again, n1));
		/* The slots refilled with this process's epoch: another process with that epoch
		 * matches none of them (the check word holds the process). */
		pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &ck, &b, again,
				   PY_MAX_FRAMES, &n2);
		other.epoch = ck.epoch;
		other.tgid = ck.tgid + 1;
		assert_int_equal(pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &other,
						    &b, again, PY_MAX_FRAMES, &n2),
				 PY_STOP_END);
		assert_int_equal(b.memo.cached, 0);
		other.epoch = 0;
		pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &other, &b, again,
				   PY_MAX_FRAMES, &n2);
		assert_int_equal(b.memo.cached, 0);
		/* The slots filled last (the other process's) gone, this process's refilled: a
		 * walk then reads what the second walk read. */
		pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &ck, &b, again,
				   PY_MAX_FRAMES, &n2);
		pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &ck, &b, again,
				   PY_MAX_FRAMES, &n2);
		read1 = b.memo.read;
		/* A slot whose fingerprint no longer matches its check is a miss: that code object
		 * is read again (one read more), with the same frames. */
		b.cache[pywalk__slot_index(first[k].code)].val ^= 1;
		assert_int_equal(pywalk__run_cached(&c->pid, d, e->ident, (__u32)e->native, &ck, &b,
						    again, PY_MAX_FRAMES, &n2),
				 PY_STOP_END);
		assert_true(n2 == n1 && same_frames(first, again, n1));
		/* Exactly one more, unless another code object of the stack shares the slot (then
		 * the two evict each other at every walk anyway). */
		for (j = 0; j < n1 && (first[j].code == first[k].code ||
				       pywalk__slot_index(first[j].code) !=
					   pywalk__slot_index(first[k].code));
		     j++)
			;
		if (j == n1)
			assert_int_equal(b.memo.read, read1 + 1);
	}
	assert_true(tried > 0);
}

/*
 * The BPF walk (bpf/python_walk.h) as ordinary C: each thread found by its own identity
 * (thread pointer = pthread_t, or TID from 3.11), never another's, with the interpreter's
 * frames; an unknown thread has none; a cut stack says so.
 */
static void check_bpf_walk(struct pyproc *p, struct child *c)
{
	struct py_frame frames[PY_MAX_FRAMES];
	struct py_desc d;
	size_t i, j;
	uint32_t fp;
	int n, stop;

	assert_int_equal(pyproc__desc(p, &d), 0);
	for (i = 0; i < c->n_threads; i++) {
		const struct exp_thread *e = &c->threads[i];

		stop =
		    pywalk__run(&c->pid, &d, e->ident, (__u32)e->native, frames, PY_MAX_FRAMES, &n);
		assert_int_equal(stop, PY_STOP_END);
		assert_int_equal(n, e->n);
		for (j = 0; j < e->n; j++) {
			const struct exp_code *ec = exp_code(c, e->frames[j].code);
			const struct pycode_info *ci;
			int entry = expect_entry(c, e, j);

			assert_int_equal(frames[j].code, e->frames[j].code);
			assert_int_equal(frames[j].offset, e->frames[j].lasti);
			/* The fingerprint the agent checks names against: the same code object,
			 * keyed by its version where the descriptor has versions, else by its
			 * contents, and accepted. */
			assert_int_equal(pyproc__code(p, frames[j].code, &ci), 0);
			fp = frames[j].flags >> PY_FRAME_FP_SHIFT & PY_FRAME_FP_MASK;
			assert_int_equal(fp, d.code_version && ci->version
						 ? ci->fingerprint
						 : ci->content_fingerprint);
			assert_true(pycode__fingerprint_matches(ci, fp));
			if (!!(frames[j].flags & PY_FRAME_ENTRY) != entry)
				fail_msg("thread %zu frame %zu (%s): entry flag %u, expected %d", i,
					 j, ec->qualname, frames[j].flags, entry);
		}
		if (e->n > 2) {
			stop = pywalk__run(&c->pid, &d, e->ident, (__u32)e->native, frames, 2, &n);
			assert_int_equal(stop, PY_STOP_DEPTH);
			assert_int_equal(n, 2);
			assert_int_equal(frames[1].code, e->frames[1].code);
		}
	}
	stop = pywalk__run(&c->pid, &d, 0x1234, 1, frames, PY_MAX_FRAMES, &n);
	assert_int_equal(stop, PY_STOP_NO_TSTATE);
	assert_int_equal(n, 0);
	check_tstate_cache(c, &d);
	check_code_cache(c, &d);
}

/* Everything the child said, read back from outside. */
/*
 * The interpreter loop's bounds from the file's symbol tables (pyelf_info.loop), by which the
 * resolver leaves a PC unnamed until the merge says its frame stays (resolve/resolve.c): every
 * address inside them is one the symbolizer names _PyEval_EvalFrameDefault (or its .cold part),
 * the name the merge otherwise goes by, and the main part is always found. A .cold part the
 * stripped file names nowhere, found from its CFI (Debian's python3.11 and sid's python3.14),
 * is named nothing by the symbolizer: never another function.
 */
static void check_loop_bounds(const struct pyproc *p, const char *python)
{
	const struct pyelf_info *info = pyproc__elf(p);
	struct symcache_opts o = {.max_bytes = SIZE_MAX};
	struct symcache *c = symcache__new(&o);
	struct elf_object *obj;
	struct sym_frame f[16];
	unsigned int part, k, checked = 0;
	int n;

	assert_non_null(c);
	obj = symcache__open(c, pyproc__path(p), NULL);
	assert_non_null(obj);
	if (!info->loop[0].size)
		fail_msg("%s: no _PyEval_EvalFrameDefault bounds in %s", python, pyproc__path(p));
	for (part = 0; part < PYELF_LOOP_PARTS; part++) {
		uint64_t lo = info->loop[part].vaddr, size = info->loop[part].size;

		for (k = 0; size && k <= 256; k++) {
			uint64_t a = lo + (size - 1) * k / 256;

			assert_true(pyelf__in_loop(info, a));
			n = symcache__lookup(c, obj, a, f, 16);
			/* A split-off part found from the CFI (no symbol names it in a stripped
			 * file): nothing, never another function. */
			if (part == 1 && info->loop_cold_from_cfi && n <= 0)
				n = 0;
			else if (n <= 0 || !pymerge__is_loop_symbol(f[n - 1].system_name))
				fail_msg("%s: %#" PRIx64 " is in the loop's bounds, the symbolizer "
					 "names it %s",
					 pyproc__path(p), a,
					 n > 0 ? f[n - 1].system_name : "nothing");
			checked++;
		}
		if (size)
			assert_false(pyelf__in_loop(info, lo + size) &&
				     !(part == 0 && info->loop[1].size));
	}
	assert_true(checked >= 257);
	symcache__free(c);
}

static void check_interpreter(void **state)
{
	struct interp *in = *state;
	const char *python = find_python(in);
	const struct pycode_info *ci;
	const struct pylayout *l;
	const struct pyproc_stats *st;
	struct pythread *threads;
	struct pyproc *p;
	struct child c;
	char why[256];
	size_t n, i, j;
	uint64_t misses;
	uint32_t versions[64];
	int line;

	if (!python) {
		print_message("[  SKIPPED ] CPython %s: %s (looked for %s)\n", in->label,
			      absent_why(in->pyenv ? in->found : in->path),
			      in->pyenv ? in->found : in->path);
		skip();
	}
	start_child(&c, python);
	p = pyproc__new(c.pid, why, sizeof(why));
	if (!p)
		fail_msg("%s: pyproc__new: %s (%s)", python, strerror(errno), why);
	l = pyproc__layout(p);
	/* Version: exact where the interpreter says it (Py_Version 3.11+, debug offsets 3.13+). */
	assert_int_equal(l->major, 3);
	assert_int_equal(l->minor, (c.version >> 16) & 0xff);
	if (in->minor >= 11)
		assert_int_equal(l->version_hex, c.version);
	check_loop_bounds(p, python);

	assert_int_equal(pyproc__threads(p, &threads, &n), 0);
	assert_int_equal(n, c.n_threads + 1); /* + the reporting thread */
	assert_non_null(find_thread(threads, n, c.self));
	for (i = 0; i < c.n_threads; i++) {
		const struct exp_thread *e = &c.threads[i];
		struct pythread *t = find_thread(threads, n, e->ident);

		assert_non_null(t);
		assert_false(t->truncated);
		if (l->tstate_native_thread_id)
			assert_int_equal(t->native_thread_id, e->native);
		if (t->n_frames != e->n)
			fail_msg("thread %" PRIu64 ": %zu frames read, the interpreter lists %zu",
				 e->ident, t->n_frames, e->n);
		for (j = 0; j < e->n; j++) {
			const struct exp_code *ec = exp_code(&c, e->frames[j].code);

			assert_int_equal(t->frames[j].code, e->frames[j].code);
			assert_int_equal(t->frames[j].offset, e->frames[j].lasti);
			line = pyproc__line(p, t->frames[j].code, t->frames[j].offset);
			assert_int_equal(line, e->frames[j].lineno);
			assert_int_equal(pyproc__code(p, t->frames[j].code, &ci), 0);
			assert_non_null(ec);
			assert_string_equal(ci->qualname, ec->qualname);
			assert_string_equal(ci->filename, ec->filename);
			assert_int_equal(ci->firstlineno, ec->firstlineno);
		}
	}
	/* Every instruction of the listed code objects: the line co_lines()/dis give. */
	for (i = 0; i < c.n_codes; i++) {
		assert_int_equal(pyproc__code(p, c.codes[i].id, &ci), 0);
		assert_string_equal(ci->qualname, c.codes[i].qualname);
		assert_string_equal(ci->filename, c.codes[i].filename);
		versions[i] = ci->version;
	}
	/* co_version, where the fingerprint uses it (3.12): one number per code object, never 0
	 * for these (the counter runs out after 2^32 code objects); none elsewhere. */
	for (i = 0; i < c.n_codes; i++) {
		if (!l->code_version) {
			assert_int_equal(versions[i], 0);
			continue;
		}
		if (!versions[i])
			fail_msg("%s: code %s: co_version 0", python, c.codes[i].qualname);
		for (j = 0; j < i; j++)
			if (versions[j] == versions[i])
				fail_msg("%s: %s and %s: both co_version %u", python,
					 c.codes[j].qualname, c.codes[i].qualname, versions[i]);
	}
	for (i = 0; i < c.n_lines; i++) {
		line = pyproc__line(p, c.lines[i].code, c.lines[i].offset);
		if (line != (c.lines[i].line < 0 ? -ENOENT : c.lines[i].line))
			fail_msg("code %" PRIu64 " offset %" PRId64 ": line %d, co_lines says %d",
				 c.lines[i].code, c.lines[i].offset, line, c.lines[i].line);
	}
	/* Cached: the same epoch reads nothing again; a new epoch re-checks once, same names. */
	st = pyproc__stats(p);
	misses = st->code_misses;
	assert_int_equal(misses, c.n_codes);
	pyproc__new_epoch(p);
	for (i = 0; i < c.n_codes; i++)
		assert_int_equal(pyproc__code(p, c.codes[i].id, &ci), 0);
	assert_int_equal(st->code_misses, misses);
	assert_int_equal(st->errors[PYPROC_ERR_STALE], 0);
	for (i = 0; i < PYPROC_ERR_COUNT; i++)
		if (st->errors[i])
			fail_msg("%s: %" PRIu64 " errors '%s'", python, st->errors[i],
				 pyproc__error_name(i));

	/* A freed code object whose address another one takes: renamed, counted stale. */
	assert_int_equal(write(c.in, "reuse\n", 6), 6);
	{
		char buf[512], *s = buf, *kind;
		uint64_t id;

		assert_non_null(fgets(buf, sizeof(buf), c.out));
		kind = field(&s);
		assert_string_equal(kind, "reused");
		id = strtoull(field(&s), NULL, 10);
		if (id) {
			char *qual = field(&s);

			pyproc__new_epoch(p);
			assert_int_equal(pyproc__code(p, id, &ci), 0);
			assert_string_equal(ci->qualname, qual);
			assert_string_equal(ci->filename, "/reused/r.py");
		} else {
			print_message("%s: no code object took the freed address; stale check "
				      "not exercised\n",
				      python);
		}
	}

	/*
	 * A freed code object: its fields are still in place, but the memory of its line table may
	 * hold another function's table by now. Never named (it was, with that table's lines),
	 * while the live object it was copied from is.
	 */
	assert_int_equal(write(c.in, "freed\n", 6), 6);
	{
		char buf[512], *s = buf;
		uint64_t id, live;

		assert_non_null(fgets(buf, sizeof(buf), c.out));
		assert_string_equal(field(&s), "freed");
		id = strtoull(field(&s), NULL, 10);
		live = strtoull(field(&s), NULL, 10);
		pyproc__new_epoch(p);
		assert_int_equal(pyproc__code(p, live, &ci), 0);
		assert_int_equal(pyproc__code(p, id, &ci), -EINVAL);
	}

	/* Garbage: not a code object (a thread state), unmapped memory. */
	assert_int_equal(pyproc__code(p, threads[0].tstate, &ci), -EINVAL);
	assert_true(st->errors[PYPROC_ERR_TYPE] > 0);
	assert_int_equal(pyproc__code(p, 0x1000, &ci), -EFAULT);
	assert_true(st->errors[PYPROC_ERR_READ] > 0);
	check_bpf_walk(p, &c);

	/*
	 * The cache growing: a name asked for, then its line, as the resolver does, keeps its
	 * pycode_info where it was (a hit never moves the entries; growing did once, under the
	 * pointer the resolver held).
	 */
	assert_int_equal(write(c.in, "many\n", 5), 5);
	{
		static char buf[65536];
		char *s = buf, *id;
		const struct pycode_info *again;
		size_t grown = 0;

		assert_non_null(fgets(buf, sizeof(buf), c.out));
		assert_string_equal(field(&s), "many");
		pyproc__new_epoch(p);
		while (*(id = field(&s))) {
			uint64_t code = strtoull(id, NULL, 10);

			assert_int_equal(pyproc__code(p, code, &ci), 0);
			assert_true(pyproc__line(p, code, 0) > 0);
			assert_int_equal(pyproc__code(p, code, &again), 0);
			assert_ptr_equal(ci, again);
			assert_memory_equal(ci->qualname, "many_", 5);
			grown++;
		}
		assert_int_equal(grown, 600);
	}

	/*
	 * A second interpreter. 3.13 numbers code objects per interpreter: from then on a version
	 * no longer tells one from another, the descriptor drops it and the walk keys contents
	 * (which still name every frame). 3.12's one counter per process: versions still hold.
	 */
	assert_int_equal(write(c.in, "subinterp\n", 10), 10);
	{
		char buf[512], *s = buf;
		int made;
		struct py_desc d;

		assert_non_null(fgets(buf, sizeof(buf), c.out));
		assert_string_equal(field(&s), "subinterp");
		made = atoi(field(&s));
		pyproc__new_epoch(p);
		for (i = 0; i < c.n_codes; i++) {
			assert_int_equal(pyproc__code(p, c.codes[i].id, &ci), 0);
			assert_int_equal(ci->version_unique,
					 ci->version && !(made && l->runtime_interpreters_next_id));
		}
		assert_int_equal(pyproc__desc_changed(p), made && l->runtime_interpreters_next_id);
		assert_int_equal(pyproc__desc(p, &d), 0);
		assert_int_equal(d.code_version,
				 made && l->runtime_interpreters_next_id ? 0 : l->code_version);
		if (!made && l->minor >= 12)
			fail_msg("%s: no subinterpreter module", python);
		check_bpf_walk(p, &c);
	}
	print_message("%s: CPython %x, %zu threads, %zu frames, %zu code objects and %zu "
		      "instruction lines as the interpreter reports them\n",
		      python, l->version_hex, n, count_frames(&c), c.n_codes, c.n_lines);
	pyproc__threads_free(threads, n);

	/* The process gone mid-way: an error, counted, no crash. */
	kill(c.pid, SIGKILL);
	waitpid(c.pid, NULL, 0);
	assert_int_equal(pyproc__threads(p, &threads, &n), -ESRCH);
	assert_true(st->errors[PYPROC_ERR_GONE] > 0);
	pyproc__new_epoch(p);
	/* Its last samples are still named from the cache; anything not cached: -ESRCH. */
	assert_int_equal(pyproc__code(p, c.codes[0].id, &ci), 0);
	assert_int_equal(pyproc__code(p, c.codes[0].id + 8, &ci), -ESRCH);
	pyproc__free(p);
	c.pid = 0;
	fclose(c.out);
	close(c.in);
	free(c.lines);
}

/* --- no interpreter, or none we know --------------------------------------------------------- */

/* Runs @path with @argv (waiting, not exiting) and checks it gets no reader: not CPython. */
static void assert_no_reader(const char *path, char *const argv[])
{
	pid_t pid = fork_tied();
	char why[128];

	if (!pid) {
		execv(path, argv);
		_exit(127);
	}
	usleep(100 * 1000);
	assert_null(pyproc__new(pid, why, sizeof(why)));
	assert_int_equal(errno, ENOENT);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void not_python(void **state)
{
	char *const sh[] = {"sh", "-c", "read x", NULL};
	char why[128];

	assert_no_reader("/bin/sh", sh);
	assert_null(pyproc__new(gone_pid(), why, sizeof(why)));
	assert_int_equal(errno, ESRCH);
}

/*
 * A binary named python3.12 that defines _PyRuntime and PyCode_Type but has no interpreter
 * loop (python-progs/not_cpython.c) is not CPython: its file is refused by the inspection, and
 * a process of it gets no reader. (Taken for 3.12 before, its every sample was marked
 * "interpreter memory unreadable".)
 */
static void cpython_names_without_the_loop_are_not_cpython(void **state)
{
	char *const argv[] = {"python3.12", NULL};
	struct pyelf_info info;
	Elf *elf;
	int fd;

	(void)state;
	elf_version(EV_CURRENT);
	fd = open(PY_NOT_CPYTHON, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(pyelf__inspect(elf, PY_NOT_CPYTHON, &info), -ENOENT);
	elf_end(elf);
	close(fd);
	assert_no_reader(PY_NOT_CPYTHON, argv);
}

/*
 * The BPF walk finds a thread's state by thread_id == the task's fsbase: on x86-64 glibc,
 * pthread_self() (what CPython stores as thread_id) is the thread pointer itself.
 */
static void thread_pointer_is_pthread_self(void **state)
{
	unsigned long fs = 0;

	assert_int_equal(syscall(SYS_arch_prctl, ARCH_GET_FS, &fs), 0);
	assert_int_equal(fs, (unsigned long)pthread_self());
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Code objects made one after the other have versions (3.12-3.13) and first lines a few apart:
 * their fingerprints must differ as random 24-bit numbers do. 256 consecutive versions at 64
 * lines each (16384 code objects): about 8 equal pairs are expected by chance. A weak
 * combination (version ^ line, as before 2026-12-03) makes thousands: version v at line l
 * and version v ^ l ^ l' at line l' were one fingerprint, and a code object made a few turns
 * later at a freed one's address passed for it (a `f_N` in a `<lambda>`'s place on 3.12).
 */
static void fingerprint_tells_nearby_code_objects_apart(void **state)
{
	enum { VERSIONS = 256, LINES = 64, N = VERSIONS * LINES };
	static uint32_t fps[N];
	uint32_t v, line, equal = 0;
	size_t i;

	(void)state;
	for (v = 0; v < VERSIONS; v++)
		for (line = 1; line <= LINES; line++)
			fps[v * LINES + line - 1] =
			    pywalk__fingerprint(pywalk__code_key(4000 + v, 0, 0), line);
	qsort(fps, N, sizeof(fps[0]), cmp_u32);
	for (i = 1; i < N; i++)
		equal += fps[i] == fps[i - 1];
	if (equal > 40)
		fail_msg("%u equal fingerprints among %d code objects (about 8 expected)", equal,
			 N);
	/* The pair the weak combination confused, at every version and line of the range. */
	for (v = 4000; v < 4000 + VERSIONS; v++)
		for (line = 1; line <= LINES; line++)
			if (pywalk__fingerprint(pywalk__code_key(v, 0, 0), line) ==
				pywalk__fingerprint(pywalk__code_key(v ^ line ^ 1, 0, 0), 1) &&
			    line != 1)
				fail_msg(
				    "version %u line %u and version %u line 1: one fingerprint", v,
				    line, v ^ line ^ 1);
}

static void version_from_name(void **state)
{
	unsigned int ma = 0, mi = 0;

	assert_int_equal(pyelf__version_from_name("/usr/bin/python3.11", &ma, &mi), 0);
	assert_int_equal(ma * 100 + mi, 311);
	assert_int_equal(pyelf__version_from_name("/x/lib/libpython3.9.so.1.0", &ma, &mi), 0);
	assert_int_equal(ma * 100 + mi, 309);
	assert_int_equal(pyelf__version_from_name("libpython3.8m.so", &ma, &mi), 0);
	assert_int_equal(mi, 8);
	assert_int_equal(pyelf__version_from_name("/usr/bin/python3.13t", &ma, &mi), 0);
	assert_int_equal(mi, 13);
	assert_int_equal(pyelf__version_from_name("/usr/bin/python3", &ma, &mi), -ENOENT);
	assert_int_equal(pyelf__version_from_name("/usr/bin/python3.11-config", &ma, &mi), -ENOENT);
	assert_int_equal(pyelf__version_from_name("/usr/bin/python2.7", &ma, &mi), -ENOENT);
	assert_int_equal(pyelf__version_from_name(NULL, &ma, &mi), -ENOENT);
}

static void layouts(void **state)
{
	struct pylayout l;
	unsigned int mi;

	for (mi = 8; mi <= 12; mi++) {
		assert_int_equal(pylayout__for_version(3, mi, &l), 0);
		assert_int_equal(l.minor, mi);
		assert_true(l.code_read <= 512 && l.frame_read <= 256 && l.tstate_read <= 512);
	}
	assert_int_equal(pylayout__for_version(3, 7, &l), -ENOTSUP);
	assert_int_equal(pylayout__for_version(3, 13, &l), -ENOTSUP);
	assert_int_equal(pylayout__for_version(2, 7, &l), -ENOTSUP);
}

/* _Py_DebugOffsets from garbage: refused, never trusted. */
static void debug_offsets_garbage(void **state)
{
	uint8_t b[PYLAYOUT_DEBUG_OFFSETS_SIZE] = {0};
	struct pylayout l;
	uint64_t v;

	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	memcpy(b, "xdebugpy", 8);
	v = 0x030d00f0;
	memcpy(b + 8, &v, 8);
	/* Every size 0: each offset is outside its structure. */
	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	assert_int_equal(pylayout__from_debug_offsets(b, 100, &l), -EINVAL);
	v = 0x030e00f0; /* 3.14: its own layout of the structure, every size 0 as well */
	memcpy(b + 8, &v, 8);
	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	assert_int_equal(pylayout__from_debug_offsets(b, 600, &l), -EINVAL); /* 3.14's: 760 */
	v = 0x030f00f0; /* 3.15: a layout of the structure not known yet */
	memcpy(b + 8, &v, 8);
	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), -ENOTSUP);
	v = 0x030c00f0; /* no cookie before 3.13: garbage */
	memcpy(b + 8, &v, 8);
	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), -EINVAL);
}

/*
 * A process's own _Py_DebugOffsets (3.13) with every field inside its declared structure, but
 * a str's state beyond the header the agent reads strings with: refused (a process named
 * python could make the agent read 2000 bytes into 64), as is an offset that wraps around.
 */
static void debug_offsets_beyond_the_headers(void **state)
{
	static const size_t sizes[] = {24, 48, 152, 224, 272, 352, 512, 536};
	uint8_t b[PYLAYOUT_DEBUG_OFFSETS_SIZE] = {0};
	struct pylayout l;
	uint64_t v;

	(void)state;
	memcpy(b, "xdebugpy", 8);
	v = 0x030d00f0;
	memcpy(b + 8, &v, 8);
	/* Every field at offset 16 of a structure of 4096 bytes; str: 40 bytes of ASCII header. */
	for (size_t at = 24; at + 8 <= sizeof(b); at += 8) {
		v = 16;
		memcpy(b + at, &v, 8);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		v = 4096;
		memcpy(b + sizes[i], &v, 8);
	}
	v = 40;
	memcpy(b + 560, &v, 8); /* unicode asciiobject_size */
	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), 0);
	v = 2000; /* unicode state: inside its 4096 bytes, beyond the 64 read */
	memcpy(b + 544, &v, 8);
	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), -EINVAL);
	v = 16;
	memcpy(b + 544, &v, 8);
	v = UINT64_MAX - 3; /* bytes ob_size: wraps around with its width */
	memcpy(b + 520, &v, 8);
	assert_int_equal(pylayout__from_debug_offsets(b, sizeof(b), &l), -EINVAL);
}

/* Line tables cut short or malformed: an error, never a read past the end. */
static void linetable_garbage(void **state)
{
	/* PEP 657: long form (code 14) whose varint never ends; then no start bit. */
	const uint8_t cut[] = {0x80 | 14 << 3, 0x42, 0x41};
	const uint8_t nostart[] = {0x01, 0x02};
	/* One short-form entry of 2 units on the first line, then "no location". */
	const uint8_t ok[] = {0x80 | 1, 0x00, 0x80 | 15 << 3};
	const uint8_t odd[] = {2, 1, 4};

	assert_int_equal(pylines__addr2line(PYLINES_PEP657, cut, sizeof(cut), 10, 0), -EINVAL);
	assert_int_equal(pylines__addr2line(PYLINES_PEP657, nostart, 2, 10, 0), -EINVAL);
	assert_int_equal(pylines__addr2line(PYLINES_PEP657, ok, sizeof(ok), 10, 2), 10);
	assert_int_equal(pylines__addr2line(PYLINES_PEP657, ok, sizeof(ok), 10, 4), -ENOENT);
	assert_int_equal(pylines__addr2line(PYLINES_PEP657, ok, sizeof(ok), 10, 400), -ENOENT);
	assert_int_equal(pylines__addr2line(PYLINES_PEP657, ok, sizeof(ok), 10, -1), 10);
	assert_int_equal(pylines__addr2line(PYLINES_LNOTAB, odd, sizeof(odd), 1, 0), -EINVAL);
	assert_int_equal(pylines__addr2line(PYLINES_PEP626, odd, sizeof(odd), 1, 0), -EINVAL);
	assert_int_equal(pylines__addr2line(PYLINES_NONE, ok, sizeof(ok), 1, 0), -EINVAL);
	assert_int_equal(pylines__addr2line(PYLINES_PEP626, NULL, 0, 1, 0), -ENOENT);
}

/*
 * pymerge__stack() on a stack written leaf first: native "n" (other) and "L" (interpreter
 * loop); Python "p" and "P" (PY_FRAME_ENTRY). The answer, leaf first: the letters of the frames
 * placed, "|N" for a marker with py_stop N, "|u" for PYMERGE_MARK_UNPLACED.
 */
static void merge_case(const char *native, const char *python, unsigned int stop, bool cut,
		       const char *want)
{
	bool is_loop[32];
	struct py_frame py[32] = {0};
	struct pymerge_item out[80];
	char got[160] = "";
	size_t nn = strlen(native), np = strlen(python), i;
	int n;

	for (i = 0; i < nn; i++)
		is_loop[i] = native[i] == 'L';
	for (i = 0; i < np; i++)
		py[i].flags = python[i] == 'P' ? PY_FRAME_ENTRY : 0;
	n = pymerge__stack(is_loop, nn, py, np, stop, cut, out, nn + np + 1);
	assert_true(n >= 0);
	for (i = 0; i < (size_t)n; i++) {
		char item[8];

		if (out[i].kind == PYMERGE_NATIVE)
			snprintf(item, sizeof(item), "%c", native[out[i].index]);
		else if (out[i].kind == PYMERGE_PYTHON)
			snprintf(item, sizeof(item), "%c", python[out[i].index]);
		else if (out[i].index == PYMERGE_MARK_UNPLACED)
			snprintf(item, sizeof(item), "|u");
		else
			snprintf(item, sizeof(item), "|%u", out[i].index);
		strcat(got, item);
	}
	if (strcmp(got, want))
		fail_msg("merge %s + %s (stop %u%s): %s, expected %s", native, python, stop,
			 cut ? ", native cut" : "", got, want);
	if (nn + np > 0)
		assert_int_equal(pymerge__stack(is_loop, nn, py, np, stop, cut, out, 0), -ENOSPC);
}

static void merge(void **state)
{
	assert_true(pymerge__is_loop_symbol("_PyEval_EvalFrameDefault"));
	assert_true(pymerge__is_loop_symbol("_PyEval_EvalFrameDefault.cold"));
	assert_false(pymerge__is_loop_symbol("_PyEval_EvalFrameDefaultX"));
	assert_false(pymerge__is_loop_symbol("PyEval_EvalCode"));
	assert_false(pymerge__is_loop_symbol(NULL));
	/* 3.11+: one loop call runs several frames; a C call (n) between two loop calls. */
	merge_case("nnLnLnn", "ppPpP", PY_STOP_END, false, "nnppPnpPnn");
	/* 3.8-3.10: one loop frame per Python frame. */
	merge_case("nLnLnLn", "PPP", PY_STOP_END, false, "nPnPnPn");
	/* Not Python, or not walked: unchanged. */
	merge_case("nnn", "", PY_STOP_END, false, "nnn");
	merge_case("nLn", "", PY_STOP_NONE, false, "nLn");
	merge_case("nnn", "", PY_STOP_NO_TSTATE, false, "nnn");
	/* Counts disagree: nothing placed, marked. */
	merge_case("nLnLn", "pP", PY_STOP_END, false, "nLnLn|u");
	merge_case("nLn", "pPP", PY_STOP_END, false, "nLn|u");
	merge_case("nLn", "pp", PY_STOP_END, false, "nLn|u");
	merge_case("nLn", "", PY_STOP_NO_TSTATE, false, "nLn|u");
	/* Native stack cut: the outer groups go with their missing loop frames. */
	merge_case("nLnL", "PpPP", PY_STOP_END, true, "nPnpP");
	/* Both cut, the native stack first (-X perf's deep recursion): the same. */
	merge_case("nLnL", "PpPPp", PY_STOP_DEPTH, true, "nPnpP");
	merge_case("nLnL", "PpPP", PY_STOP_DEPTH, true, "nPnpP");
	/* The Python walk cut alone, more groups than loop calls: not placed. */
	merge_case("nLnL", "PpPPp", PY_STOP_DEPTH, false, "nLnL|u");
	/* Python frames cut inside a group: that group's inner frames, the marker, then native. */
	merge_case("nLnLnLn", "pPpp", PY_STOP_DEPTH, false, "npPnpp|6nLn");
	/* Cut exactly at a group's end: the marker before the next loop frame. */
	merge_case("nLnLn", "pP", PY_STOP_DEPTH, false, "npP|6nLn");
	/* A walk that failed before any frame. */
	merge_case("nLn", "", PY_STOP_READ_FAILED, false, "nLn|4");
	/* Ended early with more frames than loop frames: refused. */
	merge_case("nLn", "PPp", PY_STOP_BAD_CODE, false, "nLn|u");
	/* The frames placed are of their own kind: OTLP profile.frame.type "cpython", not JIT. */
	assert_string_equal(profile__frame_type(FRAME_CPYTHON), "cpython");
	assert_false(frame_kind__is_jit(FRAME_CPYTHON));
	assert_true(frame_kind__is_jit(FRAME_DOTNET));
}

/* A process running @argv (NULL-terminated) until killed, tied to the test. */
/*
 * Waits (up to 20 s) until @pid has executed @exe and sleeps: its maps are then those of the
 * program waiting in its sleep or read (a fixed delay was too short on a loaded machine).
 */
static void wait_settled(pid_t pid, const char *exe)
{
	char want[PATH_MAX], link[64], got[PATH_MAX], statpath[64], buf[512];
	int asleep = 0;

	if (!realpath(exe, want))
		snprintf(want, sizeof(want), "%s", exe);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	snprintf(statpath, sizeof(statpath), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 2000 && asleep < 3; i++) {
		ssize_t n = readlink(link, got, sizeof(got) - 1);
		FILE *f;
		char *paren;

		usleep(10 * 1000);
		if (n <= 0)
			continue;
		got[n] = 0;
		if (strcmp(got, want)) {
			asleep = 0;
			continue;
		}
		f = fopen(statpath, "r");
		if (!f)
			continue;
		paren = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		/* Asleep at three polls in a row: past start-up, in its sleep or read. */
		asleep = paren && paren[1] == ' ' && paren[2] == 'S' ? asleep + 1 : 0;
	}
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork_tied();

	if (!pid) {
		execv(argv[0], argv);
		_exit(127);
	}
	wait_settled(pid, argv[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * The agent's table of CPython processes (pytab, no BPF map here): a CPython process is
 * described and named, a shell is not and its file is remembered as not CPython, a version
 * not handled is named once in the log however many processes run it, and counted per process.
 */
static void pytab_finds_interpreters(void **state)
{
	struct interp py = {"3.12", 12, 1, NULL, ""}, old = {"3.7", 7, 1, NULL, ""};
	const char *exe = find_python(&py), *old_exe;
	char *log_buf = NULL;
	size_t log_len = 0;
	FILE *log = open_memstream(&log_buf, &log_len);
	struct pytab_opts o = {.procs_fd = -1, .log = log};
	struct pytab *t = pytab__new(&o);
	struct pytab_stats st;
	pid_t pid, sh, a, b;

	assert_non_null(t);
	if (!exe)
		exe = "/usr/bin/python3.11";
	if (access(exe, X_OK))
		skip();
	pid = spawn((char *const[]){(char *)exe, "-c", "import time; time.sleep(30)", NULL});
	pytab__maps_hook(t, (uint32_t)pid, 0, NULL);
	assert_non_null(pytab__find(t, (uint32_t)pid, 0));
	/* Nothing changed: the same entry, no new description. */
	pytab__maps_hook(t, (uint32_t)pid, 0, NULL);
	pytab__stats(t, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.live, 1);
	sh = spawn((char *const[]){"/bin/sh", "-c", "read x", NULL});
	pytab__maps_hook(t, (uint32_t)sh, 0, NULL);
	assert_null(pytab__find(t, (uint32_t)sh, 0));
	pytab__stats(t, &st);
	assert_int_equal(st.files_inspected, 1);
	pytab__maps_hook(t, (uint32_t)sh, 0, NULL); /* remembered: not inspected again */
	pytab__stats(t, &st);
	assert_int_equal(st.files_inspected, 1);
	reap(sh);
	fflush(log);
	assert_null(strstr(log_buf, "not CPython")); /* a shell is no interpreter: not named */
	/* A file named as an interpreter that is not CPython (PyPy's name): named once. */
	{
		char dir[] = "/tmp/spanprof-pypyXXXXXX", fake[64], cmd[160];

		assert_non_null(mkdtemp(dir));
		snprintf(fake, sizeof(fake), "%s/pypy3-notcpython", dir);
		snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s", fake);
		assert_int_equal(system(cmd), 0);
		a = spawn((char *const[]){fake, "30", NULL});
		b = spawn((char *const[]){fake, "30", NULL});
		/* Maps as read right after exec (the executable and the loader only): libpython
		 * may come next, nothing is said yet. */
		{
			struct procmaps all = {0}, early = {0};

			assert_int_equal(procmaps__read_filtered(a, PROCMAPS_EXEC_ONLY, &all), 0);
			early.maps = calloc(all.n, sizeof(*early.maps));
			assert_non_null(early.maps);
			for (size_t i = 0; i < all.n; i++)
				if (i == 0 || strstr(all.maps[i].path, "/ld-linux"))
					early.maps[early.n++] = all.maps[i];
			assert_int_equal(early.n, 2);
			pytab__maps_hook(t, (uint32_t)a, 0, &early);
			fflush(log);
			assert_null(log_buf ? strstr(log_buf, "pypy3-notcpython is not") : NULL);
			free(early.maps); /* its paths are all's */
			procmaps__clear(&all);
		}
		pytab__maps_hook(t, (uint32_t)a, 0, NULL);
		pytab__maps_hook(t, (uint32_t)b, 0, NULL);
		assert_null(pytab__find(t, (uint32_t)a, 0));
		assert_null(pytab__find(t, (uint32_t)b, 0));
		fflush(log);
		assert_non_null(strstr(log_buf, "pypy3-notcpython is not CPython"));
		assert_null(strstr(strstr(log_buf, "pypy3-notcpython is not") + 1,
				   "pypy3-notcpython is not")); /* once */
		reap(a);
		reap(b);
		unlink(fake);
		rmdir(dir);
	}
	/* Exec: the entry goes, the next maps read looks again. */
	pytab__exec(t, (uint32_t)pid);
	assert_null(pytab__find(t, (uint32_t)pid, 0));
	pytab__maps_hook(t, (uint32_t)pid, 0, NULL);
	assert_non_null(pytab__find(t, (uint32_t)pid, 0));
	/*
	 * A second process of the same interpreter: described from the file as inspected for the
	 * first (its own maps for the load bias, its own layout), as a fresh look at it finds it.
	 */
	sh = spawn((char *const[]){(char *)exe, "-c", "import time; time.sleep(30)", NULL});
	pytab__maps_hook(t, (uint32_t)sh, 0, NULL);
	{
		struct pyproc *cached = pytab__find(t, (uint32_t)sh, 0), *fresh;
		struct py_desc d1, d2;

		assert_non_null(cached);
		fresh = pyproc__new(sh, NULL, 0);
		assert_non_null(fresh);
		assert_string_equal(pyproc__path(cached), pyproc__path(fresh));
		assert_int_equal(pyproc__bias(cached), pyproc__bias(fresh));
		assert_int_equal(pyproc__desc(cached, &d1), 0);
		assert_int_equal(pyproc__desc(fresh, &d2), 0);
		assert_memory_equal(&d1, &d2, sizeof(d1));
		pyproc__free(fresh);
	}
	pytab__stats(t, &st);
	assert_int_equal(st.processes, 3);
	reap(sh);
	reap(pid);
	old_exe = find_python(&old);
	if (old_exe) {
		a = spawn(
		    (char *const[]){(char *)old_exe, "-c", "import time; time.sleep(30)", NULL});
		b = spawn(
		    (char *const[]){(char *)old_exe, "-c", "import time; time.sleep(30)", NULL});
		pytab__maps_hook(t, (uint32_t)a, 0, NULL);
		pytab__maps_hook(t, (uint32_t)b, 0, NULL);
		assert_null(pytab__find(t, (uint32_t)a, 0));
		pytab__stats(t, &st);
		assert_int_equal(st.failed[PYTAB_FAIL_UNSUPPORTED], 2);
		fflush(log);
		assert_non_null(strstr(log_buf, "CPython 3.7"));
		assert_null(strstr(strstr(log_buf, "CPython 3.7") + 1, "CPython 3.7")); /* once */
		reap(a);
		reap(b);
	} else {
		print_message("no CPython 3.7 here: the once-per-file message is not exercised\n");
	}
	pytab__free(t);
	fclose(log);
	free(log_buf);
}

static struct interp interps[] = {
    {"3.8", 8, 1, NULL, ""},
    {"3.9", 9, 1, NULL, ""},
    {"3.10", 10, 1, NULL, ""},
    {"3.11", 11, 1, NULL, ""},
    {"3.12", 12, 1, NULL, ""},
    {"3.13", 13, 1, NULL, ""},
    {"3.11 (Debian, interpreter in the executable)", 11, 0, "/usr/bin/python3.11", ""},
    /* Debian sid's, unpacked by make cpython-3.14 (scripts/cpython-3.14.py). */
    {"3.14 (Debian sid, interpreter in the executable)", 14, 0, PY_CPYTHON314, ""},
};

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(thread_pointer_is_pthread_self),
	    cmocka_unit_test(version_from_name),
	    cmocka_unit_test(fingerprint_tells_nearby_code_objects_apart),
	    cmocka_unit_test(layouts),
	    cmocka_unit_test(merge),
	    cmocka_unit_test(debug_offsets_garbage),
	    cmocka_unit_test(debug_offsets_beyond_the_headers),
	    cmocka_unit_test(linetable_garbage),
	    cmocka_unit_test(not_python),
	    cmocka_unit_test(cpython_names_without_the_loop_are_not_cpython),
	    cmocka_unit_test(pytab_finds_interpreters),
	    {"CPython 3.8", check_interpreter, NULL, NULL, &interps[0]},
	    {"CPython 3.9", check_interpreter, NULL, NULL, &interps[1]},
	    {"CPython 3.10", check_interpreter, NULL, NULL, &interps[2]},
	    {"CPython 3.11", check_interpreter, NULL, NULL, &interps[3]},
	    {"CPython 3.12", check_interpreter, NULL, NULL, &interps[4]},
	    {"CPython 3.13", check_interpreter, NULL, NULL, &interps[5]},
	    {"CPython 3.11 Debian", check_interpreter, NULL, NULL, &interps[6]},
	    {"CPython 3.14 Debian sid", check_interpreter, NULL, NULL, &interps[7]},
	};

	return cmocka_run_group_tests_name("python", tests, NULL, NULL);
}
