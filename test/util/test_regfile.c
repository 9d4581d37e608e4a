/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for exporter/util/regfile.c: regular files opened, everything else refused
 * unopened, the magics of file systems that can stall (include/uapi/linux/magic.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/regfile.h"

static char dir[] = "/tmp/test_regfile.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void test_a_regular_file_is_opened_with_its_identity(void **state)
{
	char path[64], buf[8] = "";
	struct stat st, fst;
	int fd, wfd;

	(void)state;
	snprintf(path, sizeof(path), "%s/file", dir);
	wfd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(wfd >= 0);
	assert_int_equal(write(wfd, "hello", 5), 5);
	close(wfd);
	fd = regfile__open(path, &st);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "hello");
	assert_int_equal(fstat(fd, &fst), 0);
	/* A local file: the file itself, not a copy. */
	assert_true(st.st_dev == fst.st_dev && st.st_ino == fst.st_ino);
	assert_int_equal(st.st_size, 5);
	close(fd);
}

static void test_a_fifo_a_directory_and_a_missing_path_are_refused(void **state)
{
	char path[64];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	/* Would block for a writer if it were opened for reading. */
	assert_int_equal(regfile__open(path, &st), -UTIL_ENOTREG);
	assert_int_equal(regfile__open(dir, &st), -UTIL_ENOTREG);
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(regfile__open(path, &st), -ENOENT);
}

static void test_checked_descriptor_opens_the_file(void **state)
{
	char path[64], buf[8] = "";
	struct stat st;
	int pfd, fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/checked", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	pfd = open(path, O_PATH | O_CLOEXEC);
	assert_true(pfd >= 0);
	assert_int_equal(fstat(pfd, &st), 0);
	fd = regfile__open_checked(pfd, &st);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "abc");
	close(fd);
	close(pfd);
}

static void test_the_file_systems_that_can_stall(void **state)
{
	struct regfile_stats rs;

	(void)state;
	assert_true(regfile__slow_fs(FUSE_SUPER_MAGIC));
	assert_true(regfile__slow_fs(NFS_SUPER_MAGIC));
	/* statfs(2)'s f_type is a signed long: the SMB magics may come sign-extended. */
	assert_true(regfile__slow_fs((int64_t)(int32_t)CIFS_SUPER_MAGIC));
	assert_true(regfile__slow_fs(CIFS_SUPER_MAGIC));
	assert_true(regfile__slow_fs(SMB2_SUPER_MAGIC));
	assert_false(
	    regfile__slow_fs(V9FS_MAGIC)); /* virtio to the hypervisor in practice (regfile.h) */
	assert_true(regfile__slow_fs(CEPH_SUPER_MAGIC));
	assert_false(regfile__slow_fs(EXT4_SUPER_MAGIC));
	assert_false(regfile__slow_fs(TMPFS_MAGIC));
	assert_false(regfile__slow_fs(OVERLAYFS_SUPER_MAGIC));
	assert_false(regfile__slow_fs(BTRFS_SUPER_MAGIC));
	/* Nothing here was on one: nothing copied, given up or refused. */
	regfile__stats(&rs);
	assert_int_equal(rs.slow_read + rs.stalled + rs.skipped + rs.too_big, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_regular_file_is_opened_with_its_identity),
	    cmocka_unit_test(test_a_fifo_a_directory_and_a_missing_path_are_refused),
	    cmocka_unit_test(test_checked_descriptor_opens_the_file),
	    cmocka_unit_test(test_the_file_systems_that_can_stall),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
