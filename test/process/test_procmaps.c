// SPDX-License-Identifier: Apache-2.0
/* Unit tests of procmaps: proc(5) maps lines, odd paths, lookups, and a live /proc/self/maps. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/procmaps.h"

static int parse_text(const char *text, struct procmaps *m)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int err;

	assert_non_null(f);
	err = procmaps__parse(f, m);
	fclose(f);
	return err;
}

static const char sample[] =
    "55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1311  /usr/bin/cat\n"
    "55d0c0a02000-55d0c0a07000 r-xp 00002000 08:01 1311  /usr/bin/cat\n"
    "55d0c1a00000-55d0c1a21000 rw-p 00000000 00:00 0     [heap]\n"
    "7f0000000000-7f0000001000 r-xp 00001000 fd:02 42    /opt/my app/lib with spaces.so\n"
    "7f0000001000-7f0000002000 r-xp 00000000 00:05 77    /memfd:jit (deleted)\n"
    "7f0000002000-7f0000003000 rw-s 00000000 00:01 9     /dev/shm/a\\012b\n"
    "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
    "7ffd1e5f0000-7ffd1e611000 rw-p 00000000 00:00 0     [stack]\n"
    "7ffd1e7f6000-7ffd1e7f8000 r-xp 00000000 00:00 0     [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n";

static void test_parse_fields(void **state)
{
	struct procmaps m = {0};
	const struct procmap *p;

	assert_int_equal(parse_text(sample, &m), 0);
	assert_int_equal(m.n, 10);
	p = &m.maps[1];
	assert_int_equal(p->start, 0x55d0c0a02000ULL);
	assert_int_equal(p->end, 0x55d0c0a07000ULL);
	assert_int_equal(p->offset, 0x2000);
	assert_int_equal(p->dev_major, 8);
	assert_int_equal(p->dev_minor, 1);
	assert_int_equal(p->inode, 1311);
	assert_int_equal(p->prot, PROT_READ | PROT_EXEC);
	assert_int_equal(p->deleted, 0);
	assert_string_equal(p->path, "/usr/bin/cat");

	assert_string_equal(m.maps[2].path, "[heap]");
	assert_int_equal(m.maps[2].prot, PROT_READ | PROT_WRITE);
	assert_string_equal(m.maps[3].path, "/opt/my app/lib with spaces.so");
	assert_int_equal(m.maps[3].dev_major, 0xfd);
	assert_string_equal(m.maps[4].path, "/memfd:jit");
	assert_int_equal(m.maps[4].deleted, 1);
	assert_string_equal(m.maps[5].path, "/dev/shm/a\nb");
	assert_string_equal(m.maps[6].path, "");
	assert_string_equal(m.maps[8].path, "[vdso]");
	assert_string_equal(m.maps[9].path, "[vsyscall]");
	assert_int_equal(m.maps[9].prot, PROT_EXEC);
	assert_int_equal(m.maps[9].start, 0xffffffffff600000ULL);
	procmaps__clear(&m);
	assert_null(m.maps);
	assert_int_equal(m.n, 0);
	procmaps__clear(&m);
}

static void test_find(void **state)
{
	struct procmaps m = {0};

	assert_int_equal(parse_text(sample, &m), 0);
	assert_null(procmaps__find(&m, 0));
	assert_null(procmaps__find(&m, 0x55d0c0a00000ULL - 1));
	assert_ptr_equal(procmaps__find(&m, 0x55d0c0a00000ULL), &m.maps[0]);
	assert_ptr_equal(procmaps__find(&m, 0x55d0c0a01fffULL), &m.maps[0]);
	assert_ptr_equal(procmaps__find(&m, 0x55d0c0a02000ULL), &m.maps[1]);
	assert_null(procmaps__find(&m, 0x55d0c0a07000ULL)); /* gap before [heap] */
	assert_ptr_equal(procmaps__find(&m, 0x7ffd1e7f7123ULL), &m.maps[8]);
	assert_ptr_equal(procmaps__find(&m, 0xffffffffff600fffULL), &m.maps[9]);
	assert_null(procmaps__find(&m, 0xffffffffff601000ULL));
	procmaps__clear(&m);
}

/* Lines out of order (a file, not the kernel) come back sorted. */
static void test_unsorted_input(void **state)
{
	struct procmaps m = {0};

	assert_int_equal(parse_text("3000-4000 r-xp 00000000 00:00 0 c\n"
				    "1000-2000 r-xp 00000000 00:00 0 a\n",
				    &m),
			 0);
	assert_int_equal(m.n, 2);
	assert_string_equal(m.maps[0].path, "a");
	assert_string_equal(procmaps__find(&m, 0x3fff)->path, "c");
	procmaps__clear(&m);
}

static void test_malformed(void **state)
{
	struct procmaps m = {0};

	assert_int_equal(parse_text("1000-2000 r-xp 00000000 00:00 0 a\n"
				    "this is not a maps line\n"
				    "3000-4000 r-xp 00000000 00:00 0 c\n",
				    &m),
			 -EINVAL);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.maps[0].path, "a");
	procmaps__clear(&m);
	assert_int_equal(parse_text("2000-1000 r-xp 00000000 00:00 0 a\n", &m), -EINVAL);
	procmaps__clear(&m);
	assert_int_equal(parse_text("", &m), 0);
	assert_int_equal(m.n, 0);
	procmaps__clear(&m);
}

/* A path longer than any fixed line buffer. */
static void test_long_path(void **state)
{
	char line[8192], path[6000];
	struct procmaps m = {0};

	memset(path, 'x', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = 0;
	snprintf(line, sizeof(line), "1000-2000 r-xp 00000000 00:00 5 %s (deleted)\n", path);
	assert_int_equal(parse_text(line, &m), 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.maps[0].path, path);
	assert_int_equal(m.maps[0].deleted, 1);
	procmaps__clear(&m);
}

static void test_self(void **state)
{
	struct procmaps m = {0};
	const struct procmap *p;
	static int data;
	size_t i;

	assert_int_equal(procmaps__read(getpid(), &m), 0);
	assert_true(m.n > 5);
	for (i = 1; i < m.n; i++)
		assert_true(m.maps[i - 1].end <= m.maps[i].start);
	p = procmaps__find(&m, (uint64_t)(uintptr_t)test_self);
	assert_non_null(p);
	assert_true(p->prot & PROT_EXEC);
	assert_non_null(strstr(p->path, "test_procmaps"));
	p = procmaps__find(&m, (uint64_t)(uintptr_t)&data);
	assert_non_null(p);
	assert_true(p->prot & PROT_WRITE);
	/* Our stack ([stack] normally; an anonymous mapping under valgrind). */
	p = procmaps__find(&m, (uint64_t)(uintptr_t)&p);
	assert_non_null(p);
	assert_true(p->prot & PROT_WRITE);
	procmaps__clear(&m);
}

static void test_gone(void **state)
{
	struct procmaps m = {0};
	int err = procmaps__read(0x7ffffff0, &m);

	assert_true(err == -ENOENT || err == -ESRCH);
	assert_int_equal(m.n, 0);
}

/* The filtered read keeps exactly the executable mappings of the full read. */
static void test_exec_only(void **state)
{
	struct procmaps all = {0}, ex = {0};
	size_t i, j = 0;

	assert_int_equal(procmaps__read(getpid(), &all), 0);
	assert_int_equal(procmaps__read_filtered(getpid(), PROCMAPS_EXEC_ONLY, &ex), 0);
	assert_true(ex.n > 0 && ex.n < all.n);
	for (i = 0; i < all.n; i++) {
		if (!(all.maps[i].prot & PROT_EXEC))
			continue;
		assert_true(j < ex.n);
		assert_int_equal(ex.maps[j].start, all.maps[i].start);
		assert_int_equal(ex.maps[j].offset, all.maps[i].offset);
		assert_string_equal(ex.maps[j].path, all.maps[i].path);
		j++;
	}
	assert_int_equal(j, ex.n);
	assert_non_null(procmaps__find(&ex, (uint64_t)(uintptr_t)test_exec_only));
	procmaps__clear(&all);
	procmaps__clear(&ex);
	assert_int_equal(procmaps__read_filtered(0x7ffffff0, PROCMAPS_EXEC_ONLY, &ex) < 0, 1);
}

/* Edges of the hand parser: no path and no newline, upper-case hex, overflow, cut lines. */
static void test_parse_edges(void **state)
{
	struct procmaps m = {0};

	assert_int_equal(parse_text("1000-2000 r-xp 0000ABCD FD:0a 12", &m), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.maps[0].offset, 0xabcd);
	assert_int_equal(m.maps[0].dev_major, 0xfd);
	assert_int_equal(m.maps[0].dev_minor, 0xa);
	assert_int_equal(m.maps[0].inode, 12);
	assert_string_equal(m.maps[0].path, "");
	procmaps__clear(&m);

	assert_int_equal(parse_text("1000-2000 r-xp 00000000 00:00 0 a\n\n\n", &m), 0);
	assert_int_equal(m.n, 1);
	procmaps__clear(&m);

	assert_int_equal(parse_text("11112222333344445-2000 r-xp 00000000 00:00 0 a\n", &m),
			 -EINVAL);
	procmaps__clear(&m);
	assert_int_equal(parse_text("1000-2000 r-x", &m), -EINVAL);
	procmaps__clear(&m);
	assert_int_equal(parse_text("1000-2000 r-xp 00000000 00:00 12x /a\n", &m), -EINVAL);
	procmaps__clear(&m);
	assert_int_equal(parse_text("1000-2000 r-xp 00000000 00-00 0 /a\n", &m), -EINVAL);
	procmaps__clear(&m);
}

/*
 * A mapped file is opened only when it is a regular file: a FIFO (whose open would block
 * until a writer comes) or a device under the mapping's path is refused and counted. An
 * address range nothing maps makes map_files fail, so the path (/proc/PID/root + path) is used.
 */
static void test_open_file_not_regular(void **state)
{
	char dir[] = "/tmp/procmaps-fifo-XXXXXX", fifo[64], reg[64];
	struct procmap m = {.start = 0x1000, .end = 0x2000};
	uint64_t before = procmaps__not_regular();
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(reg, sizeof(reg), "%s/reg", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	fd = open(reg, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	alarm(10); /* a blocking open would hang here: fail instead */

	m.path = fifo;
	errno = 0;
	assert_int_equal(procmaps__open_file(getpid(), &m, NULL, 0), -1);
	assert_int_equal(errno, ENOEXEC);
	m.path = "/dev/null";
	assert_int_equal(procmaps__open_file(getpid(), &m, NULL, 0), -1);
	assert_int_equal(errno, ENOEXEC);
	assert_int_equal(procmaps__not_regular(), before + 2);

	m.path = reg;
	fd = procmaps__open_file(getpid(), &m, NULL, 0);
	assert_true(fd >= 0);
	close(fd);
	m.path = "/no/such/file";
	assert_int_equal(procmaps__open_file(getpid(), &m, NULL, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(procmaps__not_regular(), before + 2);
	alarm(0);
	unlink(fifo);
	unlink(reg);
	rmdir(dir);
}

/* The file of one of our own mappings opens through map_files. */
static void test_open_file_self(void **state)
{
	struct procmaps m = {0};
	const struct procmap *p;
	struct stat a, b;
	char path[PATH_MAX + 64];
	int fd;

	assert_int_equal(procmaps__read(getpid(), &m), 0);
	p = procmaps__find(&m, (uint64_t)(uintptr_t)test_open_file_self);
	assert_non_null(p);
	fd = procmaps__open_file(getpid(), p, path, sizeof(path));
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat("/proc/self/exe", &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	close(fd);
	procmaps__clear(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_fields),   cmocka_unit_test(test_find),
	    cmocka_unit_test(test_unsorted_input), cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_long_path),	   cmocka_unit_test(test_self),
	    cmocka_unit_test(test_gone),	   cmocka_unit_test(test_exec_only),
	    cmocka_unit_test(test_parse_edges),	   cmocka_unit_test(test_open_file_not_regular),
	    cmocka_unit_test(test_open_file_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
