/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "process/fileid.h"
#include "process/proclife.h"
#include "process/procmaps.h"
#include "process/procmeta.h"
#include "process/proctab.h"
#include "util/util.h"

/*
 * A PC outside every mapping triggers a re-read of the maps; after a re-read that did not find
 * one, the next waits this long (a PC read from garbage must not re-read the maps per sample,
 * while a library mapped since the last read is found at its first PC).
 */
#define MAPS_REFRESH_NS (200 * 1000 * 1000ull)
/*
 * A sample taken after the last read of the maps is not made to wait for a futile re-read an
 * older sample asked: a PC of it outside them was mapped since (a library the loader mapped
 * after a read at the exec), so the maps are read again at once. Only when such a re-read found
 * nothing either (a PC from garbage, sampled again and again; a process whose maps read empty)
 * do later samples wait this long, in sample time: as few re-reads as before at worst.
 */
#define MAPS_NEWER_FUTILE_NS MAPS_REFRESH_NS

struct map_ext {
	struct elf_object *obj; /* NULL: not a file, or it could not be opened */
	uint32_t slot[2];	/* the caller's cache slot (struct proc_mapping) */
};

struct proc {
	uint32_t pid; /* hash key */
	uint64_t start_boot_ns;
	uint64_t maps_read_ns;	       /* CLOCK_MONOTONIC of the last maps read */
	uint64_t futile_read_ns;       /* ... of the last re-read that did not find a PC; 0: none */
	uint64_t maps_read_boot_ns;    /* CLOCK_BOOTTIME of the last maps read (sample times') */
	uint64_t newer_futile_boot_ns; /* ... of the last futile re-read a newer sample asked */
	struct procmaps maps;
	struct map_ext *ext;  /* one per maps.maps[] */
	char *exe;	      /* NULL: unknown */
	uint32_t last_gen;    /* proctab gen of its latest sample */
	struct procmeta meta; /* resource facts, read with the first maps */
	int meta_err;	      /* 0, or why meta could not be read */
	/* Mappings its samples' file identities showed (fileid.h), for samples without them. */
	struct sp_vma *fvmas;
	uint32_t nfvmas;
	struct sp_file_id fexe; /* executable they were recorded under (an exec resets them) */
	/* proctab__preload(): start ticks (/proc/PID/stat) of an entry of start time 0; 0: none */
	uint64_t preload_ticks;
	UT_hash_handle hh;
};

struct proctab {
	struct proc *procs;
	struct symcache *syms;
	uint32_t gen;		 /* bumped by proctab__next_interval() */
	struct elf_object *vdso; /* the kernel's vDSO image, shared by every process */
	int vdso_tried;
	struct proctab_stats stats;
	proctab_maps_hook maps_hook; /* CFI unwinder hook (unwinder.h) */
	void *maps_hook_ctx;
	proctab_meta_hook meta_hook; /* Kubernetes names (k8smeta.h) */
	void *meta_hook_ctx;
	/* learn_from_parent(): the last parent whose maps held no file for a sample, and when */
	uint32_t parent_futile_pid;
	uint64_t parent_futile_ns;
	uint64_t sample_boot_ns; /* proctab__sample_time(): the sample being named, 0: unknown */
};

struct proctab *proctab__new(struct symcache *syms)
{
	struct proctab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->syms = syms;
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
	free(proc->fvmas);
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
 * 1 when mapping @m holds no ELF file to open: anonymous memory, shared anonymous memory
 * ("/dev/zero"), a jitdump file (procmaps.h); a JIT runtime names what runs there
 * (runtime/jit/). A memfd may hold an ELF file: 0, opened as one (and JIT code only if it is
 * not, proc_mapping.jit).
 */
static int no_object(const struct procmap *m)
{
	uint32_t pid;

	if (procmaps__jitdump_path(m->path, &pid))
		return 1;
	return procmaps__anon_code(m->path) && (m->path[0] != '/' || !strcmp(m->path, "/dev/zero"));
}

/*
 * Opens the file of process @pid's file mapping @m in the symbol cache: through
 * /proc/PID/map_files (the very file mapped, deleted or in another mount namespace), else by
 * its path under /proc/PID/root. The object, or NULL (errno set).
 */
static struct elf_object *open_mapping_file(struct proctab *t, uint32_t pid,
					    const struct procmap *m)
{
	char path[PATH_MAX];
	struct elf_object *obj;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	obj = symcache__open(t->syms, path, m->path);
	if (!obj) {
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
		obj = symcache__open(t->syms, path, m->path);
	}
	return obj;
}

/*
 * 1 when the file process @pid's mapping @m maps is a regular file: ENOEXEC from
 * symcache__open() then means it is no ELF file it can read, not a FIFO or a device refused
 * unopened. stat(2) of the map_files link opens nothing.
 */
static int mapped_regular(uint32_t pid, const struct procmap *m)
{
	char path[PATH_MAX];
	struct stat st;
	int saved = errno, ok;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	ok = !stat(path, &st);
	if (!ok) {
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
		ok = !stat(path, &st);
	}
	errno = saved;
	return ok && S_ISREG(st.st_mode);
}

/*
 * Reads the maps of @proc and opens their files. Returns 0, or -ESTALE when the PID turned out
 * to belong to another process by then (proclife.h): everything read is dropped, so the earlier
 * process's samples are never named with the newer one's mappings. The maps hook sees the
 * outcome (no mapping when the read failed or was dropped).
 */
static int proc_read_maps(struct proctab *t, struct proc *proc)
{
	struct procmaps fresh = {0};
	int ret = 0;

	proc->maps_read_ns = util__mono_ns();
	proc->maps_read_boot_ns = util__boot_ns();
	/* An error with some mappings read keeps those (procmaps.h): only none is a failure. */
	procmaps__read_filtered(proc->pid, PROCMAPS_EXEC_ONLY, &fresh);
	if (!fresh.n) {
		/*
		 * Gone (or unreadable; an exiting process's maps read empty, without an error): the
		 * maps read before still name the samples it left in the ring (a re-read asked by a
		 * PC in code mapped since, after the exit, wiped them). The hook hears of it.
		 */
		t->stats.maps_read_failed++;
		if (t->maps_hook)
			t->maps_hook(t->maps_hook_ctx, proc->pid, proc->start_boot_ns, &fresh);
		return 0;
	}
	proc_clear(proc);
	proc->maps = fresh;
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
		/* JIT code and the jitdump files naming it (runtime/jit/). */
		if (no_object(m))
			continue;
		if (!is_file_mapping(m))
			continue;
		proc->ext[i].obj = open_mapping_file(t, proc->pid, m);
		if (!proc->ext[i].obj) {
			t->stats.objects_failed++;
			if (errno == ENOEXEC && mapped_regular(proc->pid, m)) {
				t->stats.objects_not_elf++;
				if (!t->stats.first_not_elf[0])
					snprintf(t->stats.first_not_elf,
						 sizeof(t->stats.first_not_elf), "%s", m->path);
			}
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

/*
 * Whether @proc, read by proctab__preload() before its first sample, is process
 * (pid, @start_boot_ns): the same start tick. It takes that start time then, and the maps hook
 * hears it with the maps read then (as at a first sample's read: the runtimes learn the start
 * time, CPython's code-object cache its dealloc hook), while the process runs.
 */
static bool preloaded_as(struct proctab *t, struct proc *proc, uint64_t start_boot_ns)
{
	if (proc->start_boot_ns || !proc->preload_ticks || !start_boot_ns ||
	    proclife__ticks(start_boot_ns) != proc->preload_ticks)
		return false;
	proc->start_boot_ns = start_boot_ns;
	proc->preload_ticks = 0;
	proc->last_gen = t->gen;
	t->stats.preloads_used++;
	if (t->maps_hook && proc->maps.n && !proclife__check(proc->pid, start_boot_ns))
		t->maps_hook(t->maps_hook_ctx, proc->pid, start_boot_ns, &proc->maps);
	return true;
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
	if (proc && preloaded_as(t, proc, start_boot_ns))
		return proc;
	if (!proc) {
		proc = calloc(1, sizeof(*proc));
		if (!proc)
			return NULL;
		proc->pid = pid;
		HASH_ADD(hh, t->procs, pid, sizeof(pid), proc);
	}
	/* New process, or the PID now belongs to another one. */
	proc->start_boot_ns = start_boot_ns;
	proc->nfvmas = 0;
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

int proctab__preload(struct proctab *t, uint32_t pid)
{
	uint64_t before, after;
	struct proc *proc;
	int err;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), proc);
	if (proc)
		return 0;
	err = proclife__start_ticks(pid, &before);
	if (err)
		return err;
	proc = proctab__get(t, pid, 0);
	if (!proc)
		return -ENOMEM;
	/* The same process before and after: everything read was its. */
	err = proclife__start_ticks(pid, &after);
	if (!err && after != before)
		err = -ESTALE;
	if (err || !proc->maps.n) {
		proc_free(t, proc);
		return err ? err : -ESRCH;
	}
	proc->preload_ticks = before;
	t->stats.preloads++;
	/* Its files' symbols and DWARF too: a first lookup may take seconds (a debug file's
	 * compressed DWARF inflated) while the samples wait in the ring. */
	for (size_t i = 0; i < proc->maps.n; i++)
		if (proc->ext[i].obj)
			elf_object__preload(proc->ext[i].obj);
	return 0;
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

uint32_t proc__pid(const struct proc *proc)
{
	return proc->pid;
}

uint64_t proc__start_boot_ns(const struct proc *proc)
{
	return proc->start_boot_ns;
}

/* At most this many mappings learnt from a process's samples are kept in its entry. */
#define MAX_FVMAS 64

static int same_file_id(const struct sp_file_id *a, const struct sp_file_id *b)
{
	return a->ino == b->ino && a->dev == b->dev && a->size == b->size &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec;
}

/*
 * Keeps the mappings of a sample's table in its process's entry: a later sample whose lookup
 * could not run (taken inside mmap(2)) is named from them. An exec (another executable)
 * forgets them.
 */
static void fileid_learn_one(struct proc *proc, const struct sp_vmas *vmas)
{
	uint32_t n = vmas->n < SP_MAX_VMAS ? vmas->n : SP_MAX_VMAS;

	if (!vmas->exe.ino)
		return;
	if (!same_file_id(&proc->fexe, &vmas->exe)) {
		proc->nfvmas = 0;
		proc->fexe = vmas->exe;
	}
	if (!proc->fvmas && n) {
		proc->fvmas = calloc(MAX_FVMAS, sizeof(*proc->fvmas));
		if (!proc->fvmas)
			return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct sp_vma *v = &vmas->vma[i];
		uint32_t j;

		for (j = 0; j < proc->nfvmas; j++)
			if (proc->fvmas[j].start == v->start)
				break;
		if (j < proc->nfvmas)
			proc->fvmas[j] = *v; /* the newest sample knows best */
		else if (proc->nfvmas < MAX_FVMAS)
			proc->fvmas[proc->nfvmas++] = *v;
	}
}

/* The entry of PID @pid, if the table has one (none is made). */
static struct proc *proc_find(struct proctab *t, uint32_t pid)
{
	struct proc *proc;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), proc);
	return proc;
}

/*
 * fileid_learn_one() for @proc and, for a vfork child's sample (vmas->parent), for the parent
 * too: the child's mappings are its parent's, and the next child is another process, whose
 * sample may find no mapping of its own (its lookup could not run: the parent's entry names it).
 */
static void fileid_learn(struct proctab *t, struct proc *proc, const struct sp_vmas *vmas)
{
	struct proc *parent = vmas->parent ? proc_find(t, vmas->parent) : NULL;

	fileid_learn_one(proc, vmas);
	if (parent && parent != proc)
		fileid_learn_one(parent, vmas);
}

/* What earlier samples of @proc under the executable @exe showed at @pc, or NULL. */
static const struct sp_vma *learnt_vma(const struct proc *proc, const struct sp_file_id *exe,
				       uint64_t pc)
{
	if (!proc || !proc->nfvmas || !same_file_id(&proc->fexe, exe))
		return NULL;
	for (uint32_t i = 0; i < proc->nfvmas; i++)
		if (pc >= proc->fvmas[i].start && pc < proc->fvmas[i].end)
			return &proc->fvmas[i];
	return NULL;
}

/*
 * The recorded mapping holding @pc: the sample's own table, else what earlier samples of the
 * process under the same executable showed, else (a vfork child's sample) what samples taken
 * in its parent's memory under that executable showed. NULL if none.
 */
static const struct sp_vma *fileid_entry(struct proctab *t, const struct proc *proc,
					 const struct sp_vmas *vmas, uint64_t pc)
{
	const struct sp_vma *e = fileid__find(vmas, pc);

	if (e || !vmas)
		return e;
	e = learnt_vma(proc, &vmas->exe, pc);
	if (!e && vmas->parent)
		e = learnt_vma(proc_find(t, vmas->parent), &vmas->exe, pc);
	return e;
}

/* The object of a recorded mapping: the vDSO, or the cache's object of its file. */
static struct elf_object *fileid_obj(struct proctab *t, const struct sp_vma *e)
{
	if (!e)
		return NULL;
	if (e->flags & SP_VMA_VDSO)
		return vdso_object(t);
	return fileid__object(t->syms, &e->file);
}

/* @out as the recorded mapping @e shows it, with its object @obj. */
static void fileid_mapping(const struct sp_vma *e, struct elf_object *obj, struct proc_mapping *out)
{
	int vdso = !!(e->flags & SP_VMA_VDSO);

	out->start = e->start;
	out->end = e->end;
	out->file_offset = vdso ? 0 : e->offset;
	out->path = vdso ? "[vdso]" : elf_object__orig_path(obj);
	out->obj = obj;
	out->slot = NULL;
	out->from_fileid = 1;
	out->jit = 0;
}

/*
 * Whether maps entry @m (holding the PC that @own holds) is the mapping @own a sample recorded
 * (fileid.h), both at the same load address (start - file offset: a mapping split or merged
 * since keeps it): the same file, or both the vDSO, or both anonymous. The file is compared by
 * inode where /proc/PID/maps shows the device the sample recorded (the kernel's encoding,
 * major << 20 | minor); where it shows another (overlayfs shows its own inode for the file the
 * VMA maps from a lower or upper layer; btrfs subvolumes), the load address has to do.
 */
static int same_mapping(const struct procmap *m, const struct sp_vma *own)
{
	if (own->flags & SP_VMA_VDSO)
		return !strcmp(m->path, "[vdso]");
	if (!own->file.ino)
		return !m->inode;
	if (m->start - m->offset != own->start - own->offset)
		return 0;
	return ((uint64_t)m->dev_major << 20 | m->dev_minor) != own->file.dev ||
	       m->inode == own->file.ino;
}

/*
 * The maps entry holding @pc, unless the sample's own record @own (NULL: none) of the mapping
 * there says that it is not the one the sample saw: maps read after an exec (a vfork child's
 * whose samples were taken in its parent's image, any process's samples resolved after its
 * exec) describe another image, whose mapping at that address would name the frame wrongly.
 */
static const struct procmap *maps_find(const struct proc *proc, uint64_t pc,
				       const struct sp_vma *own)
{
	const struct procmap *m = procmaps__find(&proc->maps, pc);

	return m && own && !same_mapping(m, own) ? NULL : m;
}

/* Whether the sample being named (@t->sample_boot_ns) was taken after @proc's maps were last
 * read: then its PC outside them is in a mapping made since. */
static int sample_is_newer(const struct proctab *t, const struct proc *proc)
{
	return t->sample_boot_ns && t->sample_boot_ns > proc->maps_read_boot_ns;
}

/* Whether @proc's maps may be read again now: not read since a futile re-read, at most once
 * every MAPS_REFRESH_NS; or for a sample taken after the last read (MAPS_NEWER_FUTILE_NS). */
static int may_reread(const struct proctab *t, const struct proc *proc)
{
	if (sample_is_newer(t, proc) &&
	    t->sample_boot_ns > proc->newer_futile_boot_ns + MAPS_NEWER_FUTILE_NS)
		return 1;
	return (proc->maps.n && !proc->futile_read_ns) ||
	       util__mono_ns() - (proc->futile_read_ns > proc->maps_read_ns ? proc->futile_read_ns
									    : proc->maps_read_ns) >
		   MAPS_REFRESH_NS;
}

/*
 * A vfork child's sample (walked with its parent's tables) recorded a file at @pc that no
 * process has shown the agent yet: its parent, alive while the child borrows its memory, has it
 * mapped (the child is mostly gone by now, and the parent's own samples may come later). Reads
 * the parent's maps and opens the file mapped at @pc in the symbol cache, at most once per
 * MAPS_REFRESH_NS for a parent where that found nothing. The file is used only if it has the
 * identity the sample recorded (a PID reused meanwhile lends nothing). Its object, or NULL.
 */
static struct elf_object *learn_from_parent(struct proctab *t, const struct sp_vmas *vmas,
					    const struct sp_vma *own, uint64_t pc)
{
	struct procmaps maps = {0};
	const struct procmap *m;
	struct elf_object *obj;

	if (!vmas->parent || (t->parent_futile_pid == vmas->parent &&
			      util__mono_ns() - t->parent_futile_ns < MAPS_REFRESH_NS))
		return NULL;
	procmaps__read_filtered(vmas->parent, PROCMAPS_EXEC_ONLY, &maps);
	m = procmaps__find(&maps, pc);
	if (m && is_file_mapping(m))
		open_mapping_file(t, vmas->parent, m);
	procmaps__clear(&maps);
	obj = fileid_obj(t, own);
	if (!obj) {
		t->parent_futile_pid = vmas->parent;
		t->parent_futile_ns = util__mono_ns();
	}
	t->stats.parent_maps_read++;
	return obj;
}

void proctab__sample_time(struct proctab *t, uint64_t boot_ns)
{
	t->sample_boot_ns = boot_ns;
}

int proctab__mapping(struct proctab *t, struct proc *proc, uint64_t pc, const struct sp_vmas *vmas,
		     struct proc_mapping *out)
{
	/* What the sample recorded at its PC is the truth of its moment: tried first. */
	const struct sp_vma *own = fileid__find(vmas, pc);
	struct elf_object *obj = fileid_obj(t, own);
	const struct procmap *m;
	const struct sp_vma *e;
	size_t i;

	if (own && !obj)
		obj = learn_from_parent(t, vmas, own, pc);
	if (obj) {
		fileid_mapping(own, obj, out);
		return 0;
	}
	m = maps_find(proc, pc, own);
	e = m ? NULL : own ? own : fileid_entry(t, proc, vmas, pc);
	obj = own ? NULL : fileid_obj(t, e);
	/* The sample says which file: no maps read needed (the process may be long gone). */
	if (obj) {
		fileid_mapping(e, obj, out);
		return 0;
	}
	/* An entry without maps (its PID reused: -ESTALE) waits as after a futile re-read. */
	if (!m && may_reread(t, proc)) {
		int newer = sample_is_newer(t, proc);

		proc_read_maps(t, proc);
		m = maps_find(proc, pc, own);
		proc->futile_read_ns = m ? 0 : util__mono_ns();
		if (!m && newer)
			proc->newer_futile_boot_ns = proc->maps_read_boot_ns;
		/* Opening the maps' files may have taught the cache the recorded one. */
		obj = !m ? fileid_obj(t, e) : NULL;
		if (obj) {
			fileid_mapping(e, obj, out);
			return 0;
		}
	}
	if (!m) {
		if (!e || !e->file.ino)
			return -ENOENT;
		if (getenv("SPANPROF_DEBUG"))
			fprintf(stderr,
				"spanprof: debug: PID %u: no file known with device %x, "
				"inode %llu, size %llu, mtime %lld.%09u\n",
				proc->pid, e->file.dev, (unsigned long long)e->file.ino,
				(unsigned long long)e->file.size, (long long)e->file.mtime_sec,
				e->file.mtime_nsec);
		return -ENOKEY;
	}
	i = m - proc->maps.maps;
	out->start = m->start;
	out->end = m->end;
	out->file_offset = m->offset;
	out->path = m->path;
	out->obj = proc->ext[i].obj;
	out->slot = proc->ext[i].slot;
	out->from_fileid = 0;
	out->jit = !out->obj && procmaps__anon_code(m->path);
	return 0;
}

/* The executable of a process whose resource facts could not be read, from its file identity. */
static void fileid_exe(struct proctab *t, struct proc *proc, const struct sp_vmas *vmas)
{
	struct elf_object *obj = fileid__object(t->syms, &vmas->exe);
	const char *path = obj ? elf_object__orig_path(obj) : NULL, *slash;
	struct procmeta meta = {0};

	if (!path || path[0] != '/')
		return;
	slash = strrchr(path, '/');
	meta.exe_path = strdup(path);
	meta.exe_name = strdup(slash + 1);
	if (!meta.exe_path || !meta.exe_name || procmeta__finish(&meta)) {
		procmeta__clear(&meta);
		return;
	}
	procmeta__clear(&proc->meta);
	proc->meta = meta;
	proc->meta_err = 0;
	if (!proc->exe)
		proc->exe = strdup(path);
	t->stats.exe_fileid++;
}

int proctab__exec_path(struct proctab *t, const struct sp_exec_path *e)
{
	char path[SP_EXEC_PATH_LEN + SP_EXEC_NAME_LEN + 2], name[SP_EXEC_NAME_LEN + 1], *slash;
	int ret;

	memcpy(path, e->path, SP_EXEC_PATH_LEN);
	path[SP_EXEC_PATH_LEN] = '\0';
	memcpy(name, e->name, SP_EXEC_NAME_LEN);
	name[SP_EXEC_NAME_LEN] = '\0';
	ret = fileid__open_path(t->syms, &e->file, path);
	/*
	 * A symlink (cc -> gcc-12, a "current" link switched to a newer build meanwhile): the
	 * file's own name in the same directory.
	 */
	slash = strrchr(path, '/');
	if (ret == -ESTALE && slash && name[0] && strcmp(slash + 1, name) &&
	    strlen(name) < SP_EXEC_NAME_LEN) {
		strcpy(slash + 1, name);
		ret = fileid__open_path(t->syms, &e->file, path);
	}
	if (ret > 0)
		t->stats.exec_paths_opened++;
	else if (ret < 0)
		t->stats.exec_paths_failed++;
	return ret;
}

const struct sp_vmas *proctab__note_vmas(struct proctab *t, struct proc *proc,
					 const struct sp_vmas *vmas)
{
	/* Only samples of processes not loaded yet carry an identity (the executable's, at least).
	 */
	if (!vmas || (!vmas->exe.ino && !vmas->n))
		return NULL;
	fileid_learn(t, proc, vmas);
	if (proc->meta_err)
		fileid_exe(t, proc, vmas);
	return vmas;
}

void proctab__next_interval(struct proctab *t)
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

int proctab__maps(struct proctab *t, uint32_t pid, uint64_t *start_boot_ns,
		  const struct procmaps **maps)
{
	struct proc *proc;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), proc);
	if (!proc)
		return -ESRCH;
	*start_boot_ns = proc->start_boot_ns;
	*maps = &proc->maps;
	return 0;
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
