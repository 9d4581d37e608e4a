// SPDX-License-Identifier: Apache-2.0
/*
 * The Python walk in BPF (bpf/python.bpf.h) on the real kernel: each installed CPython runs
 * test/runtime/python-progs/spin.py, the sampler is loaded (cpu and offcpu) with the walk and a
 * descriptor for that process only (pyproc__desc()). At least 95% of the CPU samples of the
 * spinning thread must carry its exact Python chain (spin_inner, spin_outer, run, then
 * threading's bootstrap) with the leaf's line inside spin_inner's loop, and at least 95% of the
 * off-CPU samples of the sleeping main thread its own (main_wait, <module>); no sample of one
 * thread may show the other's chain. Needs CAP_BPF and CAP_PERFMON (root): skipped, saying so,
 * without them.
 */
#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "../testproc.h"

#include "python.h"
#include "runtime/python/pyproc.h"
#include "sampler.h"
#include "sampling/sampler_user.h"

#ifndef PY_PROGS_DIR
#error "PY_PROGS_DIR must name test/runtime/python-progs"
#endif

#define MAX_KEPT 4096

struct kept {
	uint32_t tid;
	uint8_t type;
	uint8_t stop;
	uint16_t n;
	struct py_frame frames[PY_MAX_FRAMES];
};

struct run {
	pid_t pid;
	struct kept *k;
	size_t n;
};

static int on_sample(void *ctx, const struct sp_sample *s)
{
	struct run *r = ctx;
	struct kept *k;
	size_t n = s->py_len;

	if (s->pid != (uint32_t)r->pid || r->n >= MAX_KEPT)
		return 0;
	k = &r->k[r->n++];
	k->tid = s->tid;
	k->type = s->type;
	k->stop = s->py_stop;
	if (n > PY_MAX_FRAMES || s->ustack_len + 2 * n > SP_MAX_USTACK)
		n = 0; /* checked below: py_len never overflows */
	k->n = s->py_len;
	memcpy(k->frames, &s->ustack[s->ustack_len], n * sizeof(struct py_frame));
	return 0;
}

static const char *find_python(unsigned int minor, char *buf, size_t len)
{
	const char *home = getenv("HOME");
	char pattern[512];
	glob_t g;

	if (!minor)
		return "/usr/bin/python3.11";
	if (minor == 14) {
		/* Debian sid's, unpacked by make cpython-3.14 (scripts/cpython-3.14.py). */
		snprintf(buf, len, "%s", PY_CPYTHON314);
		return access(buf, X_OK) ? NULL : buf;
	}
	snprintf(pattern, sizeof(pattern), "%s/versions/3.%u.*/bin/python3.%u",
		 getenv("PYENV_ROOT") ? getenv("PYENV_ROOT") : "", minor, minor);
	if (!getenv("PYENV_ROOT"))
		snprintf(pattern, sizeof(pattern), "%s/.pyenv/versions/3.%u.*/bin/python3.%u",
			 home ? home : "/root", minor, minor);
	snprintf(buf, len, "%s", pattern);
	if (glob(pattern, 0, NULL, &g) || !g.gl_pathc) {
		globfree(&g);
		return NULL;
	}
	snprintf(buf, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return buf;
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

static double cpu_seconds(pid_t pid, uint32_t tid)
{
	unsigned long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

static void walk_version(void **state)
{
	unsigned int minor = (unsigned int)(uintptr_t)*state;
	const char *expect[] = {"spin_inner", "spin_outer", "run"};
	struct sampler_python_maps pm;
	const struct pycode_info *ci;
	struct run r = {0};
	struct sampler *smp;
	struct py_desc d;
	struct pyproc *p;
	char path[512], line[128], why[256];
	const char *python = find_python(minor, path, sizeof(path));
	size_t i, j, spin = 0, spin_ok = 0, main_n = 0, main_ok = 0;
	uint32_t spin_tid = 0, pid32;
	int in[2], out[2], ln;
	double cpu0;
	FILE *fo;

	if (!python || access(python, X_OK)) {
		print_message("[  SKIPPED ] CPython 3.%u: %s (looked for %s)\n", minor ? minor : 11,
			      absent_why(python ? python : path), python ? python : path);
		skip();
	}
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	r.pid = fork_tied();
	if (!r.pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(python, python, "-I", PY_PROGS_DIR "/spin.py", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	fo = fdopen(out[0], "r");
	assert_non_null(fo);
	assert_non_null(fgets(line, sizeof(line), fo));
	assert_int_equal(sscanf(line, "ready %u", &spin_tid), 1);

	p = pyproc__new(r.pid, why, sizeof(why));
	if (!p)
		fail_msg("%s: pyproc__new: %s (%s)", python, strerror(errno), why);
	assert_int_equal(pyproc__desc(p, &d), 0);

	pid32 = (uint32_t)r.pid;
	r.k = calloc(MAX_KEPT, sizeof(*r.k));
	assert_non_null(r.k);
	{
		struct sampler_opts o = {
		    .frequency_hz = 199,
		    .pids = &pid32,
		    .npids = 1,
		    .cb = on_sample,
		    .ctx = &r,
		    .python_max_procs = 16,
		    .profile_types = 1u << SP_PROF_CPU | 1u << SP_PROF_OFFCPU,
		    .offcpu_min_ns = 1000000,
		    .start_disabled = 1,
		};

		smp = sampler__new(&o);
	}
	if (!smp && (errno == EPERM || errno == EACCES)) {
		print_message("[  SKIPPED ] the BPF walk needs CAP_BPF and CAP_PERFMON (root)\n");
		kill(r.pid, SIGKILL);
		waitpid(r.pid, NULL, 0);
		skip();
	}
	assert_non_null(smp);
	assert_int_equal(sampler__python_maps(smp, &pm), 0);
	assert_int_equal(bpf_map_update_elem(pm.procs_fd, &pid32, &d, BPF_ANY), 0);
	sampler__start(smp);
	/* Until the spinning thread has run 1 s of CPU (at 199 Hz: ~200 samples), at most 60 s. */
	cpu0 = cpu_seconds(r.pid, spin_tid);
	for (i = 0; i < 600 && cpu_seconds(r.pid, spin_tid) - cpu0 < 1.0; i++)
		sampler__poll(smp, 100);
	sampler__drain(smp);
	sampler__free(smp);

	for (i = 0; i < r.n; i++) {
		const struct kept *k = &r.k[i];
		const char *leaf = "";

		assert_true(k->n <= PY_MAX_FRAMES);
		if (k->n && !pyproc__code(p, k->frames[0].code, &ci))
			leaf = ci->qualname;
		if (k->tid != spin_tid) {
			/* Never the spinning thread's chain. */
			assert_string_not_equal(leaf, "spin_inner");
			if (k->tid != (uint32_t)r.pid || k->type != SP_PROF_OFFCPU)
				continue;
			main_n++;
			if (k->stop == PY_STOP_END && k->n == 2 && !strcmp(leaf, "main_wait") &&
			    !pyproc__code(p, k->frames[1].code, &ci) &&
			    !strcmp(ci->qualname, "<module>"))
				main_ok++;
			continue;
		}
		assert_string_not_equal(leaf, "main_wait");
		if (k->type != SP_PROF_CPU)
			continue;
		spin++;
		if (k->stop != PY_STOP_END || k->n < 4)
			continue;
		for (j = 0; j < 3; j++) {
			if (pyproc__code(p, k->frames[j].code, &ci) ||
			    strcmp(ci->qualname, expect[j]))
				break;
		}
		if (j < 3)
			continue;
		assert_int_equal(pyproc__code(p, k->frames[k->n - 1].code, &ci), 0);
		if (!strstr(ci->qualname, "_bootstrap"))
			continue;
		assert_int_equal(pyproc__code(p, k->frames[0].code, &ci), 0);
		ln = pyproc__line(p, k->frames[0].code, k->frames[0].offset);
		/* spin_inner's body: the lines of its loop (def + 1 .. def + 3). */
		if (ln < ci->firstlineno + 1 || ln > ci->firstlineno + 3)
			continue;
		spin_ok++;
	}
	print_message("%s: cpu: %zu samples of the spinning thread, %zu with its exact Python "
		      "chain; offcpu: %zu of the sleeping thread, %zu with its own\n",
		      python, spin, spin_ok, main_n, main_ok);
	assert_true(spin >= 20);
	assert_true(spin_ok * 100 >= spin * 95);
	assert_true(main_n >= 20);
	assert_true(main_ok * 100 >= main_n * 95);

	pyproc__free(p);
	close(in[1]);
	fclose(fo);
	kill(r.pid, SIGKILL);
	waitpid(r.pid, NULL, 0);
	free(r.k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    {"CPython 3.8", walk_version, NULL, NULL, (void *)8},
	    {"CPython 3.9", walk_version, NULL, NULL, (void *)9},
	    {"CPython 3.10", walk_version, NULL, NULL, (void *)10},
	    {"CPython 3.11", walk_version, NULL, NULL, (void *)11},
	    {"CPython 3.12", walk_version, NULL, NULL, (void *)12},
	    {"CPython 3.13", walk_version, NULL, NULL, (void *)13},
	    {"CPython 3.11 Debian", walk_version, NULL, NULL, (void *)0},
	    {"CPython 3.14 Debian sid", walk_version, NULL, NULL, (void *)14},
	};

	return cmocka_run_group_tests_name("python_bpf", tests, NULL, NULL);
}
