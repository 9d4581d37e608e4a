// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/process/fileid.c and of resolve__user(): a sample of a
 * process that is gone (its maps never read) is named from the file identities it carries, when
 * another process showed the agent that file; anything else stays an address, counted.
 *
 * The "other process" is this test: its own maps are read into the table, which opens its
 * executable in the symbol cache. The gone process is a PID above PID_MAX_LIMIT (2^22), which
 * no process can have.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/fileid.h"
#include "process/proclife.h"
#include "process/procmaps.h"
#include "process/procmeta.h"
#include "process/proctab.h"
#include "resolve/resolve.h"
#include "symbols/symbolize.h"
#include "util/util.h"

#include "../testproc.h"

#define GONE_PID (4194304u + 77u)

/* The function whose PC the samples carry. */
__attribute__((noinline)) int fileid_test_target(int x)
{
	return x * 3 + 1;
}

static void test_dev(void **unused)
{
	assert_int_equal(fileid__dev(254u << 20), makedev(254, 0));
	assert_int_equal(fileid__dev(8u << 20 | 3), makedev(8, 3));
	/* Minor numbers above 255 go to the high bits of the user-space encoding. */
	assert_int_equal(fileid__dev(0u << 20 | 0x12345), makedev(0, 0x12345));
	assert_int_equal(fileid__dev(4095u << 20 | 0xfffff), makedev(4095, 0xfffff));
}

static void test_find(void **unused)
{
	struct sp_vmas v = {0};

	assert_null(fileid__find(NULL, 0x1000));
	assert_null(fileid__find(&v, 0x1000)); /* n == 0 */
	v.n = 2;
	v.vma[0].start = 0x1000, v.vma[0].end = 0x2000;
	v.vma[1].start = 0x5000, v.vma[1].end = 0x6000;
	assert_ptr_equal(fileid__find(&v, 0x1000), &v.vma[0]);
	assert_ptr_equal(fileid__find(&v, 0x1fff), &v.vma[0]);
	assert_null(fileid__find(&v, 0x2000)); /* end is exclusive */
	assert_ptr_equal(fileid__find(&v, 0x5abc), &v.vma[1]);
	assert_null(fileid__find(&v, 0x4fff));
	/* A corrupt count reads SP_MAX_VMAS entries at most. */
	v.n = 1000;
	v.vma[SP_MAX_VMAS - 1].start = 0x9000, v.vma[SP_MAX_VMAS - 1].end = 0xa000;
	assert_ptr_equal(fileid__find(&v, 0x9000), &v.vma[SP_MAX_VMAS - 1]);
}

/* This process's executable mapping holding fn, as BPF would record it, into e and exe. */
static void own_vma(uint64_t pc, struct sp_vma *e, struct sp_file_id *exe, char *path, size_t len)
{
	struct procmaps maps = {0};
	const struct procmap *m;
	struct stat st;

	assert_int_equal(procmaps__read_filtered(getpid(), PROCMAPS_EXEC_ONLY, &maps), 0);
	m = procmaps__find(&maps, pc);
	assert_non_null(m);
	assert_int_equal(stat("/proc/self/exe", &st), 0);
	assert_int_equal(m->inode, st.st_ino);
	memset(e, 0, sizeof(*e));
	e->start = m->start;
	e->end = m->end;
	e->offset = m->offset;
	e->file.ino = st.st_ino;
	e->file.size = st.st_size;
	e->file.mtime_sec = st.st_mtim.tv_sec;
	e->file.mtime_nsec = st.st_mtim.tv_nsec;
	e->file.dev = major(st.st_dev) << 20 | minor(st.st_dev); /* the kernel's encoding */
	*exe = e->file;
	snprintf(path, len, "%s", m->path);
	procmaps__clear(&maps);
}

static const char *loc_function(const struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile__location(p, loc);

	if (!l->nlines)
		return NULL;
	return profile__string(
	    p, profile__function(p, profile__location_lines(p, loc)[l->nlines - 1].function)->name);
}

static void test_names_gone_process(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = t ? resolve__new(t, syms, NULL) : NULL;
	struct profile *p = profile__new();
	uint64_t pc = (uint64_t)(uintptr_t)fileid_test_target + 1;
	const struct profile_mapping *pm;
	const struct procmeta *meta;
	struct sp_vmas v = {0};
	char path[4096];
	struct proc *gone;
	uint32_t loc;

	assert_non_null(syms);
	assert_non_null(t);
	assert_non_null(rv);
	assert_non_null(p);
	own_vma(pc, &v.vma[0], &v.exe, path, sizeof(path));
	v.n = 1;

	gone = proctab__get(t, GONE_PID, 1);
	assert_non_null(gone);
	assert_int_equal(proctab__meta(t, GONE_PID, &meta), -ESRCH);

	/* No process has shown the agent that file yet: an address, counted as file unknown. */
	assert_int_equal(resolve__user(rv, gone, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));
	assert_int_equal(resolve__stats(rv)->frames_fileid_unknown, 1);
	assert_int_equal(resolve__stats(rv)->frames_fileid, 0);

	/* This process maps it: reading its maps opens the file in the cache. */
	assert_non_null(proctab__get(t, getpid(), start_ns(getpid())));
	assert_int_equal(resolve__user(rv, gone, p, &pc, 1, &v, 0, &loc), 1);
	assert_non_null(loc_function(p, loc));
	assert_string_equal(loc_function(p, loc), "fileid_test_target");
	assert_int_equal(resolve__stats(rv)->frames_fileid, 1);
	/* The mapping reads as one from /proc/PID/maps. */
	pm = profile__mapping(p, profile__location(p, loc)->mapping);
	assert_int_equal(pm->memory_start, v.vma[0].start);
	assert_int_equal(pm->memory_limit, v.vma[0].end);
	assert_int_equal(pm->file_offset, v.vma[0].offset);
	assert_string_equal(profile__string(p, pm->filename), path);
	/* And the process gets its executable for the resource. */
	assert_int_equal(proctab__meta(t, GONE_PID, &meta), 0);
	assert_string_equal(meta->exe_path, path);
	assert_string_equal(meta->exe_name, strrchr(path, '/') + 1);
	assert_int_equal(proctab__stats(t)->exe_fileid, 1);

	/* A later sample without a table (lookup not possible): named from what earlier showed. */
	v.n = 0;
	pc += 1;
	assert_int_equal(resolve__user(rv, gone, p, &pc, 1, &v, 0, &loc), 1);
	assert_string_equal(loc_function(p, loc), "fileid_test_target");
	assert_int_equal(resolve__stats(rv)->frames_fileid, 2);

	/* After an exec (another executable) the earlier mappings are forgotten. */
	v.exe.ino++;
	pc += 1;
	assert_int_equal(resolve__user(rv, gone, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));
	assert_int_equal(resolve__stats(rv)->frames_fileid, 2);

	/* Another file with the same inode (size or mtime differ) is not this one. */
	v.n = 1;
	v.vma[0].file.mtime_nsec = (v.vma[0].file.mtime_nsec + 1) % 1000000000u;
	assert_int_equal(resolve__user(rv, gone, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));
	assert_int_equal(resolve__stats(rv)->frames_fileid_unknown, 2);
	/* A corrupt mtime is no identity. */
	v.vma[0].file.mtime_nsec = 2000000000u;
	assert_int_equal(resolve__user(rv, gone, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));

	/* A PC in no recorded mapping stays an address, counted as unmapped. */
	{
		uint64_t stray = 0x10;
		uint64_t before = resolve__stats(rv)->frames_unmapped;

		assert_int_equal(resolve__user(rv, gone, p, &stray, 1, &v, 0, &loc), 1);
		assert_null(loc_function(p, loc));
		assert_int_equal(resolve__stats(rv)->frames_unmapped, before + 1);
	}
	profile__free(p);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

/*
 * A sample's own table is the truth of its moment; the maps read since may describe another
 * image (an exec, a vfork child's samples taken in its parent's image): where they disagree
 * with the table at a PC, they do not name it.
 */
static void test_sample_table_wins(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = t ? resolve__new(t, syms, NULL) : NULL;
	struct profile *p = profile__new();
	uint64_t pc = (uint64_t)(uintptr_t)fileid_test_target + 1;
	struct sp_vmas v = {0};
	struct proc *me;
	char path[4096];
	uint32_t loc;

	own_vma(pc, &v.vma[0], &v.exe, path, sizeof(path));
	v.n = 1;
	me = proctab__get(t, getpid(), start_ns(getpid()));
	assert_non_null(me);
	/* The table and the maps agree: named. */
	assert_int_equal(resolve__user(rv, me, p, &pc, 1, &v, 0, &loc), 1);
	assert_string_equal(loc_function(p, loc), "fileid_test_target");
	/* No table entry at the PC: the maps name it. */
	v.n = 0;
	pc += 1;
	assert_int_equal(resolve__user(rv, me, p, &pc, 1, &v, 0, &loc), 1);
	assert_string_equal(loc_function(p, loc), "fileid_test_target");
	/* The sample saw another file there (the image before an exec): not named after this one.
	 */
	v.n = 1;
	v.vma[0].file.ino += 1;
	pc += 1;
	assert_int_equal(resolve__user(rv, me, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));
	/* ... nor this file loaded elsewhere (another load address). */
	v.vma[0].file.ino -= 1;
	v.vma[0].start += 0x1000;
	v.vma[0].end += 0x1000;
	v.vma[0].offset += 0x2000;
	pc = v.vma[0].start + 0x10;
	assert_int_equal(resolve__user(rv, me, p, &pc, 1, &v, 0, &loc), 1);
	assert_true(!loc_function(p, loc) || strcmp(loc_function(p, loc), "fileid_test_target"));
	profile__free(p);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

/*
 * vfork children are new processes in their parent's memory: what one child's sample recorded
 * names the next child's leaf when its lookup could not run (a sample with the executable's
 * identity only), through the parent's entry, under the same executable only.
 */
static void test_vfork_child_named_from_parent(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = t ? resolve__new(t, syms, NULL) : NULL;
	struct profile *p = profile__new();
	uint64_t pc = (uint64_t)(uintptr_t)fileid_test_target + 1;
	struct sp_vmas v = {0};
	struct proc *parent, *first, *next, *orphan;
	char path[4096];
	uint32_t loc;

	assert_non_null(rv);
	assert_non_null(p);
	own_vma(pc, &v.vma[0], &v.exe, path, sizeof(path));
	/* This process shows the agent the file; the parent is gone (no maps to read). */
	assert_non_null(proctab__get(t, getpid(), start_ns(getpid())));
	parent = proctab__get(t, GONE_PID, 1);
	first = proctab__get(t, GONE_PID + 1, 2);
	next = proctab__get(t, GONE_PID + 2, 3);
	orphan = proctab__get(t, GONE_PID + 3, 4);
	assert_true(parent && first && next && orphan);

	/* A child with no table and nothing learnt yet: an address. */
	v.n = 0;
	v.parent = GONE_PID;
	assert_int_equal(resolve__user(rv, next, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));
	/* The first child's sample carries its table: named, and the parent's entry learns it. */
	v.n = 1;
	assert_int_equal(resolve__user(rv, first, p, &pc, 1, &v, 0, &loc), 1);
	assert_string_equal(loc_function(p, loc), "fileid_test_target");
	/* The next child's sample without a table: named from the parent's. */
	v.n = 0;
	pc += 1;
	assert_int_equal(resolve__user(rv, next, p, &pc, 1, &v, 0, &loc), 1);
	assert_string_equal(loc_function(p, loc), "fileid_test_target");
	/* Not for a process that names no parent... */
	v.parent = 0;
	assert_int_equal(resolve__user(rv, orphan, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));
	/* ... nor under another executable (the parent exec'd since). */
	v.parent = GONE_PID;
	v.exe.ino++;
	assert_int_equal(resolve__user(rv, orphan, p, &pc, 1, &v, 0, &loc), 1);
	assert_null(loc_function(p, loc));
	(void)parent;
	profile__free(p);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, n), n);
	close(in);
	close(out);
}

static void file_id_of(const char *path, struct sp_file_id *id)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	memset(id, 0, sizeof(*id));
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime_sec = st.st_mtim.tv_sec;
	id->mtime_nsec = st.st_mtim.tv_nsec;
	id->dev = major(st.st_dev) << 20 | minor(st.st_dev);
}

/* Executable paths from the exec hook: opened only where the file still has the identity. */
static void test_exec_path(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	struct resolve *rv = t ? resolve__new(t, syms, NULL) : NULL;
	char dir[] = "/tmp/spanprof-fileid-XXXXXX", real[128], other[128], link[128];
	struct sp_exec_path e = {0};

	assert_non_null(mkdtemp(dir));
	snprintf(real, sizeof(real), "%s/prog-1", dir);
	snprintf(other, sizeof(other), "%s/prog-2", dir);
	snprintf(link, sizeof(link), "%s/prog", dir);
	copy_file("/proc/self/exe", real);
	copy_file("/proc/self/exe", other);
	assert_int_equal(symlink("prog-2", link), 0);
	file_id_of(real, &e.file);
	assert_null(fileid__object(syms, &e.file));

	/* Not absolute: never guessed. */
	snprintf(e.path, sizeof(e.path), "prog-1");
	assert_int_equal(proctab__exec_path(t, &e), -EINVAL);
	/* The link now points to another build, and the file's own name is not known: refused. */
	snprintf(e.path, sizeof(e.path), "%s", link);
	assert_int_equal(proctab__exec_path(t, &e), -ESTALE);
	assert_null(fileid__object(syms, &e.file));
	assert_int_equal(proctab__stats(t)->exec_paths_failed, 2);
	/* With its own name: found next to the link. */
	snprintf(e.name, sizeof(e.name), "prog-1");
	assert_int_equal(proctab__exec_path(t, &e), 1);
	assert_non_null(fileid__object(syms, &e.file));
	assert_string_equal(elf_object__orig_path(fileid__object(syms, &e.file)), real);
	/* Known now: nothing opened again. */
	assert_int_equal(proctab__exec_path(t, &e), 0);
	assert_int_equal(proctab__stats(t)->exec_paths_opened, 1);

	unlink(link);
	unlink(other);
	unlink(real);
	rmdir(dir);
	resolve__free(rv);
	proctab__free(t);
	symcache__free(syms);
}

/*
 * A library mapped after the maps were read, after a re-read that found nothing (a PC of the
 * image before an exec): a sample taken after that read re-reads at once and names it, where a
 * sample older than the read waits (it cannot be in a mapping made since); a PC from garbage in
 * such newer samples re-reads at most once per MAPS_NEWER_FUTILE_NS of sample time (200 ms).
 */
static void test_mapped_after_a_futile_reread(void **unused)
{
	struct symcache *syms = symcache__new(NULL);
	struct proctab *t = proctab__new(syms);
	long page = sysconf(_SC_PAGESIZE);
	struct proc_mapping m;
	uint64_t now;
	struct proc *me;
	void *lib, *late;
	int fd;

	assert_non_null(t);
	me = proctab__get(t, getpid(), start_ns(getpid()));
	assert_non_null(me);
	/* An old sample's PC outside every mapping: re-read, futile. */
	proctab__sample_time(t, 1);
	assert_int_equal(proctab__mapping(t, me, 0x10, NULL, &m), -ENOENT);
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	lib = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(lib != MAP_FAILED);
	/* Sampled before the last read: waits out the futile re-read. */
	assert_int_equal(proctab__mapping(t, me, (uint64_t)(uintptr_t)lib + 0x10, NULL, &m),
			 -ENOENT);
	/* Sampled after it: read again at once, found. */
	proctab__sample_time(t, util__boot_ns());
	assert_int_equal(proctab__mapping(t, me, (uint64_t)(uintptr_t)lib + 0x10, NULL, &m), 0);
	assert_int_equal(m.start, (uint64_t)(uintptr_t)lib);
	/* Garbage in a newer sample: one re-read, futile; the next newer sample within 200 ms of
	 * sample time waits, one 210 ms later re-reads. */
	now = util__boot_ns();
	proctab__sample_time(t, now);
	assert_int_equal(proctab__mapping(t, me, 0x20, NULL, &m), -ENOENT);
	late = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(late != MAP_FAILED);
	proctab__sample_time(t, util__boot_ns() + 10 * 1000 * 1000);
	assert_int_equal(proctab__mapping(t, me, (uint64_t)(uintptr_t)late + 0x10, NULL, &m),
			 -ENOENT);
	proctab__sample_time(t, util__boot_ns() + 210 * 1000 * 1000);
	assert_int_equal(proctab__mapping(t, me, (uint64_t)(uintptr_t)late + 0x10, NULL, &m), 0);
	assert_int_equal(m.start, (uint64_t)(uintptr_t)late);
	munmap(lib, (size_t)page);
	munmap(late, (size_t)page);
	proctab__free(t);
	symcache__free(syms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dev),
	    cmocka_unit_test(test_find),
	    cmocka_unit_test(test_names_gone_process),
	    cmocka_unit_test(test_sample_table_wins),
	    cmocka_unit_test(test_vfork_child_named_from_parent),
	    cmocka_unit_test(test_exec_path),
	    cmocka_unit_test(test_mapped_after_a_futile_reread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
