/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "proclife.h"
#include "procmaps.h"
#include "procmeta.h"
#include "proctab.h"

/* A PC outside every mapping triggers a re-read of maps at most this often. */
#define MAPS_REFRESH_NS (200 * 1000 * 1000ull)
/* Inline chains deeper than this are cut (outermost frames kept last). */
#define MAX_INLINE 16

struct map_ext {
	struct elf_object *obj; /* NULL: not a file, or it could not be opened */
	uint32_t prof_mapping;	/* index in the profile, valid when gen matches */
	uint32_t gen;
};

struct proc {
	uint32_t pid; /* hash key */
	uint64_t start_boot_ns;
	uint64_t maps_read_ns; /* CLOCK_MONOTONIC of the last maps read */
	struct procmaps maps;
	struct map_ext *ext;  /* one per maps.maps[] */
	char *exe;	      /* NULL: unknown */
	uint32_t last_gen;    /* proctab gen of its latest sample */
	struct procmeta meta; /* resource facts, read with the first maps */
	int meta_err;	      /* 0, or why meta could not be read */
	UT_hash_handle hh;
};

struct proctab {
	struct proc *procs;
	struct symcache *syms;
	struct ksyms *ksyms;
	uint32_t gen;		 /* bumped by proctab__profile_reset() */
	struct elf_object *vdso; /* the kernel's vDSO image, shared by every process */
	int vdso_tried;
	struct proctab_stats stats;
	proctab_maps_hook maps_hook; /* CFI unwinder hook (unwinder.h) */
	void *maps_hook_ctx;
	proctab_meta_hook meta_hook; /* Kubernetes names (k8smeta.h) */
	void *meta_hook_ctx;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct proctab *proctab__new(struct symcache *syms, struct ksyms *ksyms)
{
	struct proctab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->syms = syms;
	t->ksyms = ksyms;
	t->gen = 1;
	return t;
}

static void proc_clear(struct proc *proc)
{
	procmaps__clear(&proc->maps);
	free(proc->ext);
	proc->ext = NULL;
}

static void proc_free(struct proctab *t, struct proc *proc)
{
	HASH_DEL(t->procs, proc);
	proc_clear(proc);
	procmeta__clear(&proc->meta);
	free(proc->exe);
	free(proc);
}

void proctab__free(struct proctab *t)
{
	struct proc *proc, *tmp;

	if (!t)
		return;
	HASH_ITER (hh, t->procs, proc, tmp)
		proc_free(t, proc);
	free(t);
}

/*
 * Every process maps the same vDSO image, which exists only in memory: copy
 * ours into a memfd once and symbolize all [vdso] frames against it.
 */
static struct elf_object *vdso_object(struct proctab *t)
{
	struct procmaps self = {0};
	const struct procmap *m = NULL;
	char path[64];
	int fd = -1;

	if (t->vdso_tried)
		return t->vdso;
	t->vdso_tried = 1;
	if (procmaps__read_filtered(getpid(), PROCMAPS_EXEC_ONLY, &self))
		return NULL;
	for (size_t i = 0; i < self.n; i++)
		if (!strcmp(self.maps[i].path, "[vdso]"))
			m = &self.maps[i];
	if (!m)
		goto cleanup;
	fd = memfd_create("spanprof-vdso", MFD_CLOEXEC);
	if (fd < 0)
		goto cleanup;
	if (write(fd, (void *)(uintptr_t)m->start, m->end - m->start) !=
	    (ssize_t)(m->end - m->start))
		goto cleanup;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	t->vdso = symcache__open(t->syms, path, "[vdso]");
cleanup:
	if (fd >= 0)
		close(fd);
	procmaps__clear(&self);
	return t->vdso;
}

static int is_file_mapping(const struct procmap *m)
{
	return m->path[0] == '/' && (m->prot & PROT_EXEC);
}

/*
 * Reads the maps of @proc and opens their files. Returns 0, or -ESTALE when the PID turned out
 * to belong to another process by then (proclife.h): everything read is dropped, so the earlier
 * process's samples are never named with the newer one's mappings. The maps hook sees the
 * outcome (no mapping when the read failed or was dropped).
 */
static int proc_read_maps(struct proctab *t, struct proc *proc)
{
	char path[PATH_MAX];
	int err, ret = 0;

	proc_clear(proc);
	proc->maps_read_ns = now_ns();
	err = procmaps__read_filtered(proc->pid, PROCMAPS_EXEC_ONLY, &proc->maps);
	if (err && !proc->maps.n) {
		t->stats.maps_read_failed++;
		goto hook;
	}
	proc->ext = calloc(proc->maps.n ? proc->maps.n : 1, sizeof(*proc->ext));
	if (!proc->ext) {
		procmaps__clear(&proc->maps);
		goto hook;
	}
	for (size_t i = 0; i < proc->maps.n; i++) {
		const struct procmap *m = &proc->maps.maps[i];

		if (!strcmp(m->path, "[vdso]")) {
			proc->ext[i].obj = vdso_object(t);
			continue;
		}
		if (!is_file_mapping(m))
			continue;
		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", proc->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		proc->ext[i].obj = symcache__open(t->syms, path, m->path);
		if (!proc->ext[i].obj) {
			snprintf(path, sizeof(path), "/proc/%u/root%s", proc->pid, m->path);
			proc->ext[i].obj = symcache__open(t->syms, path, m->path);
		}
		if (!proc->ext[i].obj) {
			t->stats.objects_failed++;
			if (getenv("SPANPROF_DEBUG"))
				fprintf(stderr, "spanprof: debug: cannot open %s of PID %u: %s\n",
					m->path, proc->pid, strerror(errno));
		}
	}
	/* The process was there when sampled: still there now means every read above was its. */
	if (proclife__check(proc->pid, proc->start_boot_ns) == -ESTALE) {
		t->stats.pid_reused++;
		proc_clear(proc);
		ret = -ESTALE;
	}
hook:
	/* CFI unwinder hook: the walker's mapping list follows every read. */
	if (t->maps_hook)
		t->maps_hook(t->maps_hook_ctx, proc->pid, proc->start_boot_ns, &proc->maps);
	return ret;
}

struct proc *proctab__get(struct proctab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct proc *proc;
	char link[64], exe[PATH_MAX];
	ssize_t n;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), proc);
	if (proc && proc->start_boot_ns == start_boot_ns) {
		proc->last_gen = t->gen;
		return proc;
	}
	if (!proc) {
		proc = calloc(1, sizeof(*proc));
		if (!proc)
			return NULL;
		proc->pid = pid;
		HASH_ADD(hh, t->procs, pid, sizeof(pid), proc);
	}
	/* New process, or the PID now belongs to another one. */
	proc->start_boot_ns = start_boot_ns;
	proc->last_gen = t->gen;
	t->stats.processes++;
	free(proc->exe);
	proc->exe = NULL;
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		proc->exe = strdup(exe);
	}
	procmeta__clear(&proc->meta);
	proc->meta_err = procmeta__read(pid, &proc->meta);
	/* The maps read checks the PID last: the exe and resource facts are dropped with them. */
	if (proc_read_maps(t, proc) == -ESTALE) {
		free(proc->exe);
		proc->exe = NULL;
		procmeta__clear(&proc->meta);
		proc->meta_err = -ESTALE;
	}
	if (!proc->meta_err && t->meta_hook)
		t->meta_hook(t->meta_hook_ctx, pid, &proc->meta);
	return proc;
}

int proctab__meta(struct proctab *t, uint32_t pid, const struct procmeta **out)
{
	struct proc *proc;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), proc);
	if (!proc)
		return -ESRCH;
	if (proc->meta_err)
		return proc->meta_err;
	*out = &proc->meta;
	return 0;
}

const char *proc__exe(const struct proc *proc)
{
	return proc->exe ? proc->exe : "";
}

static uint32_t intern_frames(struct profile *p, uint32_t mapping, uint64_t address,
			      enum frame_kind kind, const struct sym_frame *frames, int n)
{
	struct profile_line lines[MAX_INLINE];
	struct profile_function f;
	int out = 0;

	for (int i = 0; i < n; i++) {
		const char *name = frames[i].function ? frames[i].function : frames[i].system_name;

		/*
		 * A function "inlined into itself" (glibc's debug info says so of aliases such
		 * as __libc_write) is one frame: keep the innermost line, drop its repeat.
		 */
		if (out && name && lines[out - 1].function &&
		    !strcmp(name, profile__string(
				      p, profile__function(p, lines[out - 1].function)->name)))
			continue;

		f.name = profile__intern_string(p, name);
		f.system_name =
		    profile__intern_string(p, frames[i].system_name ? frames[i].system_name : name);
		f.filename = profile__intern_string(p, frames[i].file);
		lines[out].function = profile__intern_function(p, &f);
		lines[out].line = frames[i].line;
		out++;
	}
	return profile__intern_location(p, mapping, address, kind, lines, out);
}

static uint32_t prof_mapping(struct proctab *t, struct proc *proc, size_t i, struct profile *p)
{
	const struct procmap *m = &proc->maps.maps[i];
	struct map_ext *x = &proc->ext[i];
	struct profile_mapping pm;

	if (x->gen == t->gen)
		return x->prof_mapping;
	pm.memory_start = m->start;
	pm.memory_limit = m->end;
	pm.file_offset = m->offset;
	pm.filename = profile__intern_string(p, m->path);
	pm.build_id = profile__intern_string(p, x->obj ? elf_object__build_id(x->obj) : NULL);
	x->prof_mapping = profile__intern_mapping(p, &pm);
	x->gen = t->gen;
	return x->prof_mapping;
}

static uint32_t user_location(struct proctab *t, struct proc *proc, struct profile *p, uint64_t pc,
			      int is_return)
{
	struct sym_frame frames[MAX_INLINE];
	const struct procmap *m = procmaps__find(&proc->maps, pc);
	uint32_t mapping, loc;
	uint64_t vaddr;
	size_t i;
	int n = 0;

	if (!m && now_ns() - proc->maps_read_ns > MAPS_REFRESH_NS) {
		proc_read_maps(t, proc);
		m = procmaps__find(&proc->maps, pc);
	}
	if (!m) {
		t->stats.frames_unmapped++;
		return profile__intern_location(p, 0, pc, FRAME_NATIVE, NULL, 0);
	}
	i = m - proc->maps.maps;
	mapping = prof_mapping(t, proc, i, p);
	loc = profile__find_location(p, mapping, pc, FRAME_NATIVE);
	if (loc)
		return loc;
	if (proc->ext[i].obj &&
	    !elf_object__file_offset_to_vaddr(
		proc->ext[i].obj, pc - m->start + m->offset - (is_return ? 1 : 0), &vaddr)) {
		n = symcache__lookup(t->syms, proc->ext[i].obj, vaddr, frames, MAX_INLINE);
		if (n < 0)
			n = 0;
	}
	if (!n)
		t->stats.frames_unsymbolized++;
	return intern_frames(p, mapping, pc, FRAME_NATIVE, frames, n);
}

uint32_t proctab__user_locations(struct proctab *t, struct proc *proc, struct profile *p,
				 const uint64_t *pcs, uint32_t n, uint32_t *locs)
{
	uint32_t out = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t loc;

		/* A zero return address is where the frame-pointer chain ends. */
		if (!pcs[i])
			break;
		loc = user_location(t, proc, p, pcs[i], i > 0);

		if (loc)
			locs[out++] = loc;
	}
	return out;
}

uint32_t proctab__kernel_locations(struct proctab *t, struct profile *p, const uint64_t *pcs,
				   uint32_t n, uint32_t *locs)
{
	struct sym_frame frame = {0};
	uint32_t out = 0, loc;
	uint64_t off;

	for (uint32_t i = 0; i < n; i++) {
		loc = profile__find_location(p, 0, pcs[i], FRAME_KERNEL);
		if (!loc) {
			frame.function =
			    t->ksyms ? ksyms__lookup(t->ksyms, pcs[i] - (i > 0), &off) : NULL;
			frame.system_name = frame.function;
			if (!frame.function)
				t->stats.kernel_unsymbolized++;
			loc = intern_frames(p, 0, pcs[i], FRAME_KERNEL, &frame,
					    frame.function ? 1 : 0);
		}
		if (loc)
			locs[out++] = loc;
	}
	return out;
}

void proctab__profile_reset(struct proctab *t)
{
	t->gen++;
}

size_t proctab__sweep(struct proctab *t, int keep_current)
{
	struct proc *proc, *tmp;
	size_t n = 0;

	HASH_ITER (hh, t->procs, proc, tmp) {
		/* Its samples of this interval are not encoded yet: the encoder wants its meta. */
		if (keep_current && proc->last_gen == t->gen)
			continue;
		if (!proclife__check(proc->pid, proc->start_boot_ns))
			continue;
		proc_free(t, proc);
		n++;
	}
	t->stats.processes_freed += n;
	return n;
}

size_t proctab__count(const struct proctab *t)
{
	return HASH_COUNT(t->procs);
}

const struct proctab_stats *proctab__stats(const struct proctab *t)
{
	return &t->stats;
}

void proctab__set_meta_hook(struct proctab *t, proctab_meta_hook fn, void *ctx)
{
	t->meta_hook = fn;
	t->meta_hook_ctx = ctx;
}

/* --- CFI unwinder hooks --- */
void proctab__set_maps_hook(struct proctab *t, proctab_maps_hook fn, void *ctx)
{
	t->maps_hook = fn;
	t->maps_hook_ctx = ctx;
}

int proctab__refresh(struct proctab *t, uint32_t pid)
{
	struct proc *proc;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), proc);
	if (!proc)
		return -ESRCH;
	proc_read_maps(t, proc);
	return 0;
}
/* --- end of CFI unwinder hooks --- */
