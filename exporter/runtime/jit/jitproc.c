/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "runtime/jit/jitproc.h"
#include "runtime/jit/jitdump.h"
#include "runtime/jit/jvmattach.h"
#include "runtime/jit/perfmap.h"
#include "util/util.h"

/* One file the runtime writes, and what its last open gave (refusals are counted on change). */
struct jitsrc {
	char *path; /* as the process sees it */
	enum jitfile_reason last;
	bool logged;
	/* What the last read saw of the file (files_unchanged()): identity, size, change time. */
	bool statted;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
	uint64_t bad_seen, replaced_seen; /* counters already added to the stats */
	uint64_t corrupt_seen, bad_header_seen;
	bool corrupt_logged;
	struct jitdump_stats unwind_seen; /* jitdump unwind_* counters already added */
};

struct jitproc {
	uint32_t pid, nspid;
	uid_t euid, fsuid;
	bool ids_read, ids_failed, hinted, java_logged;
	bool runtime_names; /* jitproc__runtime_names() */
	unsigned int flags;
	uint64_t java_asked_ns; /* CLOCK_MONOTONIC of the last perf-map request, 0: none */
	bool missed;		/* a lookup found no name since the last request */
	enum frame_kind kind;
	char comm[32];
	uint64_t read_ns; /* CLOCK_MONOTONIC of the last refresh */
	/* CLOCK_BOOTTIME up to which the tables hold what the files said: the start of the last
	 * read, or of a later check that found them unchanged (files_unchanged()). */
	uint64_t read_boot_ns;
	struct jitproc_stats *stats;
	struct jitsrc map_src;
	struct perfmap *map;
	struct jitsrc dump_src[JITPROC_MAX_DUMPS];
	struct jitdump *dump[JITPROC_MAX_DUMPS];
	uint32_t ndumps;
	jitproc_cfi_hook cfi_hook;
	void *cfi_ctx;
	uint64_t cfi_gen; /* sum of the dumps' jitdump__unwind_gen() last handed on */
};

static enum frame_kind kind_of(const char *name)
{
	if (!strcmp(name, "node") || !strcmp(name, "nodejs"))
		return FRAME_V8JS;
	if (!strcmp(name, "java"))
		return FRAME_JVM;
	if (!strcmp(name, "dotnet"))
		return FRAME_DOTNET;
	return FRAME_JIT;
}

struct jitproc *jitproc__new(uint32_t pid, const char *exe, unsigned int flags,
			     struct jitproc_stats *stats)
{
	struct jitproc *j = calloc(1, sizeof(*j));
	const char *base = exe ? strrchr(exe, '/') : NULL;

	if (!j)
		return NULL;
	j->pid = pid;
	j->flags = flags;
	j->stats = stats;
	snprintf(j->comm, sizeof(j->comm), "%s", base ? base + 1 : exe ? exe : "?");
	j->kind = kind_of(j->comm);
	return j;
}

void jitproc__free(struct jitproc *j)
{
	if (!j)
		return;
	perfmap__free(j->map);
	free(j->map_src.path);
	for (uint32_t i = 0; i < j->ndumps; i++) {
		jitdump__free(j->dump[i]);
		free(j->dump_src[i].path);
	}
	free(j);
}

enum frame_kind jitproc__kind(const struct jitproc *j)
{
	return j->kind;
}

int jitproc__saw_mapping(struct jitproc *j, const char *path)
{
	uint32_t pid;

	if (!procmaps__jitdump_path(path, &pid) || path[0] != '/')
		return 0;
	for (uint32_t i = 0; i < j->ndumps; i++)
		if (!strcmp(j->dump_src[i].path, path))
			return 0;
	if (j->ndumps == JITPROC_MAX_DUMPS)
		return -ENOSPC;
	j->dump_src[j->ndumps].path = strdup(path);
	if (!j->dump_src[j->ndumps].path)
		return -ENOMEM;
	j->dump[j->ndumps] =
	    jitdump__new(JITPROC_MAX_ENTRIES, JITPROC_MAX_BYTES, JITPROC_MAX_FILE_BYTES);
	if (!j->dump[j->ndumps]) {
		free(j->dump_src[j->ndumps].path);
		return -ENOMEM;
	}
	j->ndumps++;
	j->read_ns = 0; /* read it at the next lookup */
	return 1;
}

/*
 * Opens @src's file in the process's root. A refusal is counted when it differs from the last
 * attempt's outcome (the file is tried again at every refresh) and said once per file.
 */
static int open_src(struct jitproc *j, struct jitsrc *src, struct stat *st, FILE *log)
{
	enum jitfile_reason why;
	char root[64];
	int fd;

	snprintf(root, sizeof(root), "/proc/%u/root", j->pid);
	fd = jitfile__open(root, src->path, j->euid, j->fsuid, JITPROC_MAX_FILE_BYTES, st, &why,
			   NULL);
	if (why != src->last) {
		j->stats->open.by_reason[why]++;
		src->last = why;
	}
	if (fd < 0 && why != JITFILE_MISSING && why != JITFILE_ERROR && !src->logged && log) {
		fprintf(log, "spanprof: PID %u (%s): %s not read: %s\n", j->pid, j->comm, src->path,
			jitfile__reason_name(why));
		src->logged = true;
	}
	return fd;
}

static void add_delta(uint64_t *total, uint64_t *seen, uint64_t now)
{
	if (now > *seen)
		*total += now - *seen;
	*seen = now;
}

/* 1 when @pid's command line or environment (JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS) holds @s. */
static int proc_mentions(uint32_t pid, const char *s)
{
	static const char *const files[] = {"cmdline", "environ"};
	size_t len = strlen(s);

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char path[64], buf[65536];
		ssize_t n;
		int fd, found;

		snprintf(path, sizeof(path), "/proc/%u/%s", pid, files[f]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		close(fd);
		found = n >= (ssize_t)len && memmem(buf, (size_t)n, s, len) != NULL;
		if (found)
			return 1;
	}
	return 0;
}

/*
 * --java-perfmap: asks the JVM for a fresh perf map (a snapshot: what was read of the last one
 * is forgotten, since the JVM rewrites the same file in place). Says once per JVM what fails,
 * and what to add when the walk cannot go through its compiled frames.
 */
static void ask_jvm(struct jitproc *j, FILE *log)
{
	uint64_t now = util__mono_ns();
	char msg[128];
	int err;

	/* Sooner when code compiled since the last snapshot was met. */
	if (j->java_asked_ns && now - j->java_asked_ns < JITPROC_JAVA_INTERVAL_NS &&
	    !(j->missed && now - j->java_asked_ns >= JITPROC_JAVA_MISS_INTERVAL_NS))
		return;
	j->missed = false;
	/* (A JVM whose structures the HotSpot walk reads needs no frame pointer: no advice.) */
	if (!j->java_asked_ns && log && !j->runtime_names &&
	    !proc_mentions(j->pid, "-XX:+PreserveFramePointer"))
		fprintf(
		    log,
		    "spanprof: PID %u (java): started without -XX:+PreserveFramePointer: its "
		    "stacks end in the first compiled Java frame; add it to name whole stacks\n",
		    j->pid);
	j->java_asked_ns = now;
	err = jvmattach__perfmap(j->pid, j->nspid, j->euid, JITPROC_JAVA_TIMEOUT_MS, msg,
				 sizeof(msg));
	if (err) {
		j->stats->java_failed++;
		if (log && !j->java_logged)
			fprintf(log, "spanprof: PID %u (java): perf map not written: %s%s%s\n",
				j->pid, strerror(-err), msg[0] ? ": " : "", msg);
		j->java_logged = true;
		return;
	}
	j->stats->java_requests++;
	if (j->map)
		perfmap__forget(j->map);
}

void jitproc_cfi__free(struct jitproc_cfi *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].eh_frame);
	free(c->v);
	free(c);
}

void jitproc__set_cfi_hook(struct jitproc *j, jitproc_cfi_hook fn, void *ctx)
{
	j->cfi_hook = fn;
	j->cfi_ctx = ctx;
	j->cfi_gen = 0; /* what is held goes to the new hook at the next refresh */
}

static int cmp_unwind(const void *a, const void *b)
{
	const struct jitdump_unwind *x = a, *y = b;

	return x->code_addr < y->code_addr ? -1 : x->code_addr > y->code_addr;
}

/* A copy of the CFI of every dump, sorted by code address. NULL on ENOMEM. */
static struct jitproc_cfi *copy_cfi(const struct jitproc *j)
{
	struct jitproc_cfi *c = calloc(1, sizeof(*c));
	size_t total = 0;

	if (!c)
		return NULL;
	for (uint32_t i = 0; i < j->ndumps; i++) {
		const struct jitdump_unwind *v;

		total += jitdump__unwind(j->dump[i], &v);
	}
	c->v = calloc(total ? total : 1, sizeof(*c->v));
	if (!c->v)
		goto fail;
	for (uint32_t i = 0; i < j->ndumps; i++) {
		const struct jitdump_unwind *v;
		size_t n = jitdump__unwind(j->dump[i], &v);

		for (size_t k = 0; k < n; k++) {
			struct jitdump_unwind *e = &c->v[c->n];

			*e = v[k];
			e->eh_frame = malloc(v[k].eh_frame_size);
			if (!e->eh_frame)
				goto fail;
			memcpy(e->eh_frame, v[k].eh_frame, v[k].eh_frame_size);
			c->bytes += v[k].eh_frame_size;
			c->n++;
		}
	}
	qsort(c->v, c->n, sizeof(*c->v), cmp_unwind);
	return c;
fail:
	jitproc_cfi__free(c);
	return NULL;
}

/* The unwind_* counters of dump @i, added to the stats once each. */
static void add_unwind_stats(struct jitproc *j, uint32_t i)
{
	const struct jitdump_stats *ds = jitdump__stats(j->dump[i]);
	struct jitdump_stats *seen = &j->dump_src[i].unwind_seen;
	struct jitproc_stats *st = j->stats;

	add_delta(&st->unwind_records, &seen->unwinding_infos, ds->unwinding_infos);
	add_delta(&st->unwind_used, &seen->unwind_used, ds->unwind_used);
	add_delta(&st->unwind_bad, &seen->unwind_bad, ds->unwind_bad);
	add_delta(&st->unwind_empty, &seen->unwind_empty, ds->unwind_empty);
	add_delta(&st->unwind_unused, &seen->unwind_unused, ds->unwind_unused);
	add_delta(&st->unwind_full, &seen->unwind_full, ds->unwind_full);
	add_delta(&st->unwind_dropped, &seen->unwind_dropped, ds->unwind_dropped);
}

/* Hands the CFI on when a re-read changed it. */
static void check_cfi(struct jitproc *j)
{
	struct jitproc_cfi *c;
	uint64_t gen = 0;

	for (uint32_t i = 0; i < j->ndumps; i++)
		gen += jitdump__unwind_gen(j->dump[i]);
	if (!j->cfi_hook || gen == j->cfi_gen)
		return;
	c = copy_cfi(j);
	if (!c)
		return; /* tried again at the next refresh */
	j->cfi_gen = gen;
	j->stats->cfi_updates++;
	j->cfi_hook(j->cfi_ctx, j->pid, c);
}

/* Remembers what the read of @src saw (@st), for files_unchanged(). */
static void note_stat(struct jitsrc *src, const struct stat *st)
{
	src->statted = true;
	src->dev = st->st_dev;
	src->ino = st->st_ino;
	src->size = st->st_size;
	src->mtim = st->st_mtim;
}

/* Whether @src's file is as its last read saw it (a stat through the process's root). */
static bool src_unchanged(const struct jitproc *j, const struct jitsrc *src)
{
	char path[PATH_MAX];
	struct stat st;

	if (!src->statted)
		return true; /* never read: it names nothing */
	if ((size_t)snprintf(path, sizeof(path), "/proc/%u/root%s", j->pid, src->path) >=
		sizeof(path) ||
	    fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW))
		return false;
	return st.st_dev == src->dev && st.st_ino == src->ino && st.st_size == src->size &&
	       st.st_mtim.tv_sec == src->mtim.tv_sec && st.st_mtim.tv_nsec == src->mtim.tv_nsec;
}

/* Whether every file read so far is as its last read saw it: nothing written since. */
static bool files_unchanged(const struct jitproc *j)
{
	if (j->map && !src_unchanged(j, &j->map_src))
		return false;
	for (uint32_t i = 0; i < j->ndumps; i++)
		if (!src_unchanged(j, &j->dump_src[i]))
			return false;
	return true;
}

/* Says once per file why a jitdump is no longer read (jitdump__update() gave -EBADMSG). */
static void say_corrupt(struct jitproc *j, struct jitsrc *src, const struct jitdump *d, FILE *log)
{
	if (src->corrupt_logged || !log)
		return;
	src->corrupt_logged = true;
	if (!jitdump__offset(d))
		fprintf(
		    log,
		    "spanprof: PID %u (%s): %s not read: its header is not a jitdump's this "
		    "agent reads (magic, version 1, header size): its JIT frames stay unnamed\n",
		    j->pid, j->comm, src->path);
	else
		fprintf(log,
			"spanprof: PID %u (%s): %s corrupt at byte %llu (a record smaller than its "
			"header): what came before is kept, the rest is not read\n",
			j->pid, j->comm, src->path, (unsigned long long)jitdump__offset(d));
}

/* Reads what the files gained (or, rewritten, hold now) into the tables. */
static void read_files(struct jitproc *j, FILE *log)
{
	struct stat st;
	int fd;

	j->read_ns = util__mono_ns();
	j->read_boot_ns = util__boot_ns();
	fd = open_src(j, &j->map_src, &st, log);
	if (fd >= 0) {
		if (!j->map) {
			j->map = perfmap__new(JITPROC_MAX_ENTRIES, JITPROC_MAX_BYTES,
					      JITPROC_MAX_FILE_BYTES);
			if (j->map)
				j->stats->perfmaps++;
		}
		if (j->map) {
			perfmap__update(j->map, fd, &st);
			note_stat(&j->map_src, &st);
			add_delta(&j->stats->lines_bad, &j->map_src.bad_seen,
				  perfmap__stats(j->map)->bad_lines);
			add_delta(&j->stats->replaced, &j->map_src.replaced_seen,
				  jittab__replaced(perfmap__table(j->map)));
		}
		close(fd);
	}
	for (uint32_t i = 0; i < j->ndumps; i++) {
		const struct jitdump_stats *ds = jitdump__stats(j->dump[i]);
		uint64_t was_read;
		int err;

		fd = open_src(j, &j->dump_src[i], &st, log);
		if (fd < 0)
			continue;
		was_read = jitdump__offset(j->dump[i]);
		err = jitdump__update(j->dump[i], fd, &st);
		/* Counted once its header is read (a file refused for its header never is). */
		if (!was_read && jitdump__offset(j->dump[i]))
			j->stats->jitdumps++;
		note_stat(&j->dump_src[i], &st);
		close(fd);
		if (err == -EBADMSG)
			say_corrupt(j, &j->dump_src[i], j->dump[i], log);
		add_delta(&j->stats->records_bad, &j->dump_src[i].bad_seen,
			  ds->bad_records + ds->corrupt);
		add_delta(&j->stats->dumps_corrupt, &j->dump_src[i].corrupt_seen, ds->corrupt);
		add_delta(&j->stats->dumps_bad_header, &j->dump_src[i].bad_header_seen,
			  ds->corrupt_header);
		add_delta(&j->stats->replaced, &j->dump_src[i].replaced_seen,
			  jittab__replaced(jitdump__table(j->dump[i])));
		add_unwind_stats(j, i);
	}
	check_cfi(j);
}

static void refresh(struct jitproc *j, FILE *log)
{
	j->read_ns = util__mono_ns();
	if (!j->ids_read) {
		j->ids_read = true;
		j->ids_failed = jitfile__proc_ids((int)j->pid, &j->nspid, &j->euid, &j->fsuid) != 0;
		if (!j->ids_failed) {
			char path[64];

			snprintf(path, sizeof(path), "/tmp/perf-%u.map", j->nspid);
			j->map_src.path = strdup(path);
			j->ids_failed = !j->map_src.path;
		}
	}
	if (j->ids_failed)
		return;
	if (j->kind == FRAME_JVM && (j->flags & JITPROC_JAVA_PERFMAP))
		ask_jvm(j, log);
	read_files(j, log);
}

/* Once per process: what would name its JIT frames. */
static void hint(struct jitproc *j, FILE *log)
{
	const char *what;

	if (j->hinted || !log || j->map || j->ndumps)
		return;
	j->hinted = true;
	j->stats->hints++;
	switch (j->kind) {
	case FRAME_V8JS:
		what = "start node with --perf-basic-prof (or NODE_OPTIONS=--perf-basic-prof)";
		break;
	case FRAME_JVM:
		what = j->flags & JITPROC_JAVA_PERFMAP
			   ? "the JVM did not write its perf map (see above)"
			   : "run spanprof with --java-perfmap (and java with "
			     "-XX:+PreserveFramePointer), or run jcmd PID Compiler.perfmap";
		break;
	case FRAME_DOTNET:
		what = "set DOTNET_PerfMapEnabled=1";
		break;
	default:
		/* PHP's opcache JIT (its code in "/dev/zero"): ZEND_JIT_DEBUG_PERF writes the map.
		 */
		what = !strncmp(j->comm, "php", 3)
			   ? "start PHP with -d opcache.jit_debug=0x10 (its JIT then writes "
			     "/tmp/perf-PID.map)"
			   : "have the runtime write /tmp/perf-PID.map or a jitdump file";
		break;
	}
	if (j->map_src.last != JITFILE_OK && j->map_src.last != JITFILE_MISSING &&
	    j->map_src.last != JITFILE_ERROR)
		what = "its perf map was refused (said when it was met)";
	if (!j->stats->first_hint.pid) {
		j->stats->first_hint.pid = j->pid;
		snprintf(j->stats->first_hint.comm, sizeof(j->stats->first_hint.comm), "%s",
			 j->comm);
		j->stats->first_hint.what = what;
	}
	if (j->map_src.last != JITFILE_OK && j->map_src.last != JITFILE_MISSING &&
	    j->map_src.last != JITFILE_ERROR)
		/* There is a map, refused (said above): not "no map". */
		fprintf(log,
			"spanprof: PID %u (%s): JIT code without names (/tmp/perf-%u.map refused: "
			"%s; no jitdump)\n",
			j->pid, j->comm, j->nspid ? j->nspid : j->pid,
			jitfile__reason_name(j->map_src.last));
	else
		fprintf(log,
			"spanprof: PID %u (%s): JIT code without names (no /tmp/perf-%u.map, no "
			"jitdump): %s\n",
			j->pid, j->comm, j->nspid ? j->nspid : j->pid, what);
}

/* The files' answer for @pc: 0, -ENOENT, -E2BIG (a file over its cap). */
static int find(const struct jitproc *j, uint64_t pc, struct jittab_sym *out)
{
	int err = -ENOENT, e;

	/* A jitdump gives file:line besides the name: asked first. */
	for (uint32_t i = 0; i < j->ndumps; i++) {
		e = jitdump__lookup(j->dump[i], pc, out);
		if (!e)
			return 0;
		if (e == -E2BIG)
			err = e;
	}
	if (j->map) {
		e = perfmap__lookup(j->map, pc, out);
		if (!e)
			return 0;
		if (e == -E2BIG)
			err = e;
	}
	return err;
}

void jitproc__runtime_names(struct jitproc *j)
{
	j->runtime_names = true;
}

int jitproc__lookup(struct jitproc *j, uint64_t pc, uint64_t at_boot_ns, struct jittab_sym *out,
		    FILE *log)
{
	int err;

	if (util__mono_ns() - j->read_ns > JITPROC_REFRESH_NS) {
		refresh(j, log);
	} else if (at_boot_ns != UINT64_MAX && at_boot_ns > j->read_boot_ns) {
		/*
		 * A sample newer than the last read: the files may have been rewritten since, with
		 * other code at this address. Unchanged up to a moment after the sample, the
		 * tables hold for it; else read them again (what changed then is proven only for
		 * later samples: jittab.h).
		 */
		uint64_t now = util__boot_ns();

		if (files_unchanged(j))
			j->read_boot_ns = now;
		else
			read_files(j, log);
	}
	err = find(j, pc, out);
	/*
	 * A JVM's map is a snapshot: code compiled since is in none. Ask for a new one now (at most
	 * every JITPROC_JAVA_MISS_INTERVAL_NS) rather than leave this frame unnamed.
	 */
	if (err == -ENOENT && j->kind == FRAME_JVM && (j->flags & JITPROC_JAVA_PERFMAP) &&
	    util__mono_ns() - j->java_asked_ns >= JITPROC_JAVA_MISS_INTERVAL_NS) {
		j->missed = true;
		refresh(j, log);
		err = find(j, pc, out);
	}
	if (!err && out->since_boot_ns > at_boot_ns) {
		j->stats->frames_unnamed++;
		j->stats->frames_stale++;
		return -ESTALE;
	}
	if (!err) {
		j->stats->frames_named++;
		return 0;
	}
	if (j->runtime_names) {
		j->stats->frames_runtime++;
		return err;
	}
	j->stats->frames_unnamed++;
	j->missed = true;
	if (err == -E2BIG)
		j->stats->frames_full++;
	hint(j, log);
	return err;
}
