// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the perf-map reader (exporter/runtime/jit), its range table
 * (exporter/runtime/jit/jittab.c) and the opening rules for files a profiled process wrote
 * (exporter/runtime/jit/jitfile.c): truncated, growing, garbage and rewritten maps, caps, and
 * the refusals (symlink, other owner, not a regular file, oversized). Runs without root.
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
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/jit/jitfile.h"
#include "runtime/jit/jittab.h"
#include "runtime/jit/perfmap.h"
#include "util/util.h"

#define BIG (1ull << 40)

static char root[64];

static int setup_root(void **unused)
{
	char path[128];

	snprintf(root, sizeof(root), "/tmp/spanprof-perfmap-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/tmp", root);
	assert_int_equal(mkdir(path, 0755), 0);
	return 0;
}

static int teardown_root(void **unused)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static void write_file(const char *rel, const char *text, const char *mode)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, mode);
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

static const char *name_at(const struct perfmap *m, uint64_t addr)
{
	static struct jittab_sym s;

	return perfmap__lookup(m, addr, &s) ? NULL : s.name;
}

static void feed(struct perfmap *m, const char *text)
{
	size_t consumed;

	assert_int_equal(perfmap__feed(m, text, strlen(text), &consumed), 0);
}

static void test_parse(void **unused)
{
	struct perfmap *m = perfmap__new(1000, 1 << 20, BIG);
	struct jittab_sym s;

	feed(m, "1000 10 LazyCompile:*fib /app/x.js:3\n"
		"0x2000 0x20 JS:~main file:///app/x.js:10:1\r\n"
		"3000 8 Builtin: ArgumentsAdaptorTrampoline\n");
	assert_int_equal(perfmap__stats(m)->lines, 3);
	assert_int_equal(perfmap__stats(m)->bad_lines, 0);
	assert_string_equal(name_at(m, 0x1000), "LazyCompile:*fib /app/x.js:3");
	assert_string_equal(name_at(m, 0x100f), "LazyCompile:*fib /app/x.js:3");
	assert_null(name_at(m, 0x1010)); /* end is exclusive */
	assert_null(name_at(m, 0xfff));
	assert_string_equal(name_at(m, 0x201f), "JS:~main file:///app/x.js:10:1");
	assert_string_equal(name_at(m, 0x3004), "Builtin: ArgumentsAdaptorTrampoline");
	assert_int_equal(perfmap__lookup(m, 0x3004, &s), 0);
	assert_int_equal(s.start, 0x3000);
	assert_int_equal(s.end, 0x3008);
	assert_null(s.file);
	assert_int_equal(jittab__count(perfmap__table(m)), 3);

	/* Disjoint ranges in any order, between and around the held ones: all merged in place. */
	feed(m, "9000 10 z\n2800 10 y\n500 10 x\n1800 8 w\n");
	assert_int_equal(jittab__count(perfmap__table(m)), 7);
	assert_string_equal(name_at(m, 0x500), "x");
	assert_string_equal(name_at(m, 0x1804), "w");
	assert_string_equal(name_at(m, 0x280f), "y");
	assert_string_equal(name_at(m, 0x9000), "z");
	assert_string_equal(name_at(m, 0x1000), "LazyCompile:*fib /app/x.js:3");
	assert_string_equal(name_at(m, 0x3000), "Builtin: ArgumentsAdaptorTrampoline");
	assert_null(name_at(m, 0x1808));
	perfmap__free(m);
}

static void test_garbage(void **unused)
{
	struct perfmap *m = perfmap__new(1000, 1 << 20, BIG);
	char *longline = malloc(3 * PERFMAP_MAX_LINE);
	unsigned seed = 1;
	char junk[8192];
	size_t consumed;

	feed(m, "zz 10 bad\n"		     /* not hex */
		"1000 0 size zero\n"	     /* empty range */
		"ffffffffffffffff 10 wrap\n" /* wraps past 2^64 */
		"1000 10\n"		     /* no name */
		"1000\n"		     /* no size */
		"\n"			     /* empty */
		"11111111111111111 1 toolong\n"
		"5000 10 good\n");
	assert_int_equal(perfmap__stats(m)->lines, 1);
	assert_int_equal(perfmap__stats(m)->bad_lines, 7);
	assert_string_equal(name_at(m, 0x5000), "good");

	/* A line longer than the limit, then a good one. */
	memset(longline, 'a', 3 * PERFMAP_MAX_LINE - 1);
	longline[3 * PERFMAP_MAX_LINE - 1] = '\0';
	feed(m, longline);
	feed(m, "\n6000 10 after\n");
	assert_string_equal(name_at(m, 0x6000), "after");
	assert_int_equal(perfmap__stats(m)->bad_lines, 8);

	/* Random bytes: counted, never a crash; what parses is taken. */
	for (int round = 0; round < 50; round++) {
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (char)(rand_r(&seed) & 0xff);
		assert_true(perfmap__feed(m, junk, sizeof(junk), &consumed) == 0);
	}
	assert_true(perfmap__stats(m)->bad_lines > 8);
	free(longline);
	perfmap__free(m);
}

static void test_rewritten(void **unused)
{
	struct perfmap *m = perfmap__new(1000, 1 << 20, BIG);

	feed(m, "1000 100 old\n2000 100 other\n");
	/* New code over part of "old": none of "old" may keep its name. */
	feed(m, "1080 10 new\n");
	assert_string_equal(name_at(m, 0x1085), "new");
	assert_null(name_at(m, 0x1000));
	assert_null(name_at(m, 0x10f0));
	assert_string_equal(name_at(m, 0x2000), "other");
	assert_int_equal(jittab__replaced(perfmap__table(m)), 1);

	/* Within one batch, in file order: a replaced by b, b by c; d untouched. */
	feed(m, "5000 10 a\n5008 10 b\n5010 10 c\n6000 10 d\n");
	assert_null(name_at(m, 0x5000));
	assert_null(name_at(m, 0x500a));
	assert_string_equal(name_at(m, 0x5010), "c");
	assert_string_equal(name_at(m, 0x6000), "d");

	/* The same range again, another name: the later one. */
	feed(m, "6000 10 d2\n");
	assert_string_equal(name_at(m, 0x6000), "d2");

	/* A new range holding several old ones replaces all of them. */
	feed(m, "7000 10 x\n7020 10 y\n7040 10 z\n");
	feed(m, "6ff0 100 big\n");
	assert_string_equal(name_at(m, 0x7020), "big");
	assert_string_equal(name_at(m, 0x6ff0), "big");
	/* A later range starting below an earlier one replaces it too. */
	feed(m, "8000 10 p\n");
	feed(m, "7ff8 10 q\n");
	assert_null(name_at(m, 0x800c));
	assert_string_equal(name_at(m, 0x8000), "q");
	/* new, other, c, d2, big, q */
	assert_int_equal(jittab__count(perfmap__table(m)), 6);
	perfmap__free(m);
}

static void test_growing(void **unused)
{
	struct perfmap *m = perfmap__new(1000, 1 << 20, BIG);
	enum jitfile_reason why;
	struct stat st;
	int fd;

	write_file("/tmp/perf-42.map", "1000 10 one\n2000 10 tw", "w");
	fd = jitfile__open(root, "/tmp/perf-42.map", getuid(), getuid(), BIG, &st, &why, NULL);
	assert_true(fd >= 0);
	assert_int_equal(perfmap__update(m, fd, &st), 0);
	close(fd);
	/* The partial line is not taken, and read again once complete. */
	assert_string_equal(name_at(m, 0x1000), "one");
	assert_null(name_at(m, 0x2000));
	assert_int_equal(perfmap__offset(m), 12);

	write_file("/tmp/perf-42.map", "o\n3000 10 three\n", "a");
	fd = jitfile__open(root, "/tmp/perf-42.map", getuid(), getuid(), BIG, &st, &why, NULL);
	assert_true(fd >= 0);
	assert_int_equal(perfmap__update(m, fd, &st), 0);
	close(fd);
	assert_string_equal(name_at(m, 0x2000), "two");
	assert_string_equal(name_at(m, 0x3000), "three");
	assert_int_equal(perfmap__stats(m)->lines, 3);

	/* Rewritten from the start (shorter): what was read is forgotten. */
	write_file("/tmp/perf-42.map", "4000 10 four\n", "w");
	fd = jitfile__open(root, "/tmp/perf-42.map", getuid(), getuid(), BIG, &st, &why, NULL);
	assert_true(fd >= 0);
	assert_int_equal(perfmap__update(m, fd, &st), 0);
	close(fd);
	assert_null(name_at(m, 0x1000));
	assert_string_equal(name_at(m, 0x4000), "four");
	assert_int_equal(perfmap__stats(m)->resets, 1);

	/* Replaced by another file (another inode): the same. */
	write_file("/tmp/perf-42.map.new", "4000 10 four\n5000 10 five\n", "w");
	{
		char a[256], b[256];

		snprintf(a, sizeof(a), "%s/tmp/perf-42.map.new", root);
		snprintf(b, sizeof(b), "%s/tmp/perf-42.map", root);
		assert_int_equal(rename(a, b), 0);
	}
	write_file("/tmp/perf-42.map", "", "a");
	fd = jitfile__open(root, "/tmp/perf-42.map", getuid(), getuid(), BIG, &st, &why, NULL);
	assert_true(fd >= 0);
	assert_int_equal(perfmap__update(m, fd, &st), 0);
	close(fd);
	assert_int_equal(perfmap__stats(m)->resets, 2);
	assert_string_equal(name_at(m, 0x5000), "five");
	perfmap__free(m);
}

/* Reads the file anew into @m (test/runtime/ root, /tmp/perf-42.map). */
static void update_42(struct perfmap *m)
{
	enum jitfile_reason why;
	struct stat st;
	int fd = jitfile__open(root, "/tmp/perf-42.map", getuid(), getuid(), BIG, &st, &why, NULL);

	assert_true(fd >= 0);
	assert_int_equal(perfmap__update(m, fd, &st), 0);
	close(fd);
}

/*
 * Rewritten in place (the same inode, truncated and written again: HotSpot at each
 * Compiler.perfmap, a JIT recompiling where old code was) with another name at the same
 * address, as long or longer than what was read: never the old name.
 */
static void test_rewritten_in_place(void **unused)
{
	struct perfmap *m = perfmap__new(10000, 1 << 20, BIG);
	char *big;
	size_t len = 0;

	write_file("/tmp/perf-42.map", "1000 10 alpha\n2000 10 other\n", "w");
	update_42(m);
	assert_string_equal(name_at(m, 0x1000), "alpha");
	/* Same length, same lines but one name: the first line differs. */
	write_file("/tmp/perf-42.map", "1000 10 gamma\n2000 10 other\n", "w");
	update_42(m);
	assert_string_equal(name_at(m, 0x1000), "gamma");
	assert_int_equal(perfmap__stats(m)->resets, 1);
	/* Longer: what was read is read again, not taken as the start of the file. */
	write_file("/tmp/perf-42.map", "1000 10 delta\n2000 10 other\n3000 10 three\n", "w");
	update_42(m);
	assert_string_equal(name_at(m, 0x1000), "delta");
	assert_string_equal(name_at(m, 0x3000), "three");
	assert_int_equal(perfmap__stats(m)->resets, 2);
	/* Appended to: nothing read again. */
	write_file("/tmp/perf-42.map", "4000 10 four\n", "a");
	update_42(m);
	assert_string_equal(name_at(m, 0x4000), "four");
	assert_int_equal(perfmap__stats(m)->resets, 2);
	assert_int_equal(perfmap__stats(m)->lines, 2 + 2 + 3 + 1);

	/* A big map whose middle changed (a window at 8 KiB), head and tail kept. */
	big = malloc(1 << 16);
	assert_non_null(big);
	for (int i = 0; len < 40000; i++)
		len += (size_t)sprintf(big + len, "%x 10 f%05d\n", 0x100000 + 0x10 * i, i);
	write_file("/tmp/perf-42.map", big, "w");
	update_42(m);
	assert_int_equal(perfmap__stats(m)->resets, 3);
	{
		/* The line starting after 8 KiB, inside the window kept there. */
		char *p = memchr(big + 8192, '\n', 100) + 1;
		char *name = strchr(strchr(p, ' ') + 1, ' ') + 1;
		uint64_t addr = strtoull(p, NULL, 16);

		assert_true(name_at(m, addr)[0] == 'f');
		name[0] = 'g';
		write_file("/tmp/perf-42.map", big, "w");
		update_42(m);
		assert_int_equal(perfmap__stats(m)->resets, 4);
		assert_true(name_at(m, addr)[0] == 'g');
	}
	free(big);
	perfmap__free(m);
}

/* The time from which the name at @addr is proven (jittab.h). */
static uint64_t since_at(const struct perfmap *m, uint64_t addr)
{
	struct jittab_sym s;

	assert_int_equal(perfmap__lookup(m, addr, &s), 0);
	return s.since_boot_ns;
}

/*
 * A name is proven only for samples taken after the read that found it where it replaced
 * other code: a rewritten map's changed line, a line appended over a range held, everything
 * after the map was forgotten. Code announced where none was, and the lines a rewrite keeps
 * as they were, name any sample.
 */
static void test_replaced_names_proven_from_their_read(void **unused)
{
	struct perfmap *m = perfmap__new(10000, 1 << 20, BIG);
	uint64_t t0, t1, t2;

	write_file("/tmp/perf-42.map", "1000 10 alpha\n2000 10 other\n", "w");
	update_42(m);
	assert_int_equal(since_at(m, 0x1000), 0);
	assert_int_equal(since_at(m, 0x2000), 0);
	t0 = util__boot_ns();
	write_file("/tmp/perf-42.map", "1000 10 gamma\n2000 10 other\n3000 10 three\n", "w");
	update_42(m);
	assert_string_equal(name_at(m, 0x1000), "gamma");
	assert_true(since_at(m, 0x1000) >= t0);	  /* alpha may have run there before */
	assert_int_equal(since_at(m, 0x2000), 0); /* the same line again */
	assert_int_equal(since_at(m, 0x3000), 0); /* fresh code */
	t1 = util__boot_ns();
	write_file("/tmp/perf-42.map", "2008 10 newer\n", "a"); /* over other's range */
	update_42(m);
	assert_string_equal(name_at(m, 0x2008), "newer");
	assert_true(since_at(m, 0x2008) >= t1);
	assert_null(name_at(m, 0x2000)); /* other is gone in whole */
	assert_true(since_at(m, 0x1000) < t1);
	t2 = util__boot_ns();
	perfmap__forget(m); /* read again from the start: the same lines keep their time */
	update_42(m);
	assert_int_equal(since_at(m, 0x3000), 0);
	assert_true(since_at(m, 0x1000) < t1);
	/* Read again, "other" then "newer" over it, in one read: which ran is not known. */
	assert_true(since_at(m, 0x2008) >= t2);
	perfmap__free(m);
}

/*
 * The table under both readers (jittab.h): code removed (a jitdump move or unload record) and
 * later other code announced at its address: that code did not run there before, so it names
 * samples only from its own commit on; code announced where nothing ever was names any sample.
 */
static void test_code_after_a_removal_proven_from_its_commit(void **unused)
{
	struct jittab *t = jittab__new(100, 1 << 20);
	struct jittab_sym s;
	uint64_t t0;

	assert_int_equal(jittab__add(t, 0x1000, 0x10, "old", 3, NULL, 0), 0);
	assert_int_equal(jittab__commit(t), 0);
	assert_int_equal(jittab__remove(t, 0x1000, 0x10), 0);
	assert_int_equal(jittab__commit(t), 0);
	assert_int_equal(jittab__lookup(t, 0x1004, &s), -ENOENT);
	t0 = util__boot_ns();
	assert_int_equal(jittab__add(t, 0x1008, 0x10, "new", 3, NULL, 0), 0);
	assert_int_equal(jittab__add(t, 0x5000, 0x10, "fresh", 5, NULL, 0), 0);
	assert_int_equal(jittab__commit(t), 0);
	assert_int_equal(jittab__lookup(t, 0x1010, &s), 0);
	assert_string_equal(s.name, "new");
	assert_true(s.since_boot_ns >= t0);
	assert_int_equal(jittab__lookup(t, 0x5000, &s), 0);
	assert_int_equal(s.since_boot_ns, 0);
	jittab__free(t);
}

static void test_caps(void **unused)
{
	struct perfmap *m = perfmap__new(4, 1 << 20, BIG);
	struct jittab_sym s;
	char line[64];
	size_t consumed;
	int err = 0;

	for (int i = 0; i < 64 && !err; i++) {
		snprintf(line, sizeof(line), "%x 10 f%d\n", 0x1000 + 0x100 * i, i);
		err = perfmap__feed(m, line, strlen(line), &consumed);
	}
	assert_int_equal(err, -E2BIG);
	/* Full: no lookup answered, not even of ranges held (a later line may replace them). */
	assert_int_equal(perfmap__lookup(m, 0x1000, &s), -E2BIG);
	perfmap__free(m);

	/* The file-size bound while the file grows. */
	m = perfmap__new(1000, 1 << 20, 20);
	write_file("/tmp/perf-43.map", "1000 10 one\n2000 10 two\n3000 10 three\n", "w");
	{
		enum jitfile_reason why;
		struct stat st;
		int fd = jitfile__open(root, "/tmp/perf-43.map", getuid(), getuid(), BIG, &st, &why,
				       NULL);

		assert_true(fd >= 0);
		assert_int_equal(perfmap__update(m, fd, &st), -E2BIG);
		close(fd);
	}
	assert_int_equal(perfmap__lookup(m, 0x1000, &s), -E2BIG);
	perfmap__free(m);
}

static void test_refusals(void **unused)
{
	struct jitfile_stats stats = {0};
	enum jitfile_reason why;
	char a[256], b[256];
	struct stat st;
	uid_t other = getuid() ? getuid() + 1 : 4242;
	int fd;

	/* A symlink to a file only root may read (here: one of ours with a secret). */
	write_file("/secret", "1000 10 SECRET\n", "w");
	snprintf(a, sizeof(a), "%s/secret", root);
	assert_int_equal(chmod(a, 0600), 0);
	snprintf(b, sizeof(b), "%s/tmp/perf-50.map", root);
	assert_int_equal(symlink(a, b), 0);
	fd = jitfile__open(root, "/tmp/perf-50.map", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_SYMLINK);
	/* A relative link resolving inside the root: refused all the same. */
	assert_int_equal(unlink(b), 0);
	assert_int_equal(symlink("../secret", b), 0);
	fd = jitfile__open(root, "/tmp/perf-50.map", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_SYMLINK);

	/* A symlink in a directory component. */
	snprintf(a, sizeof(a), "%s/tmp", root);
	snprintf(b, sizeof(b), "%s/tmp2", root);
	assert_int_equal(symlink(a, b), 0);
	write_file("/tmp/perf-51.map", "1000 10 x\n", "w");
	fd = jitfile__open(root, "/tmp2/perf-51.map", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_SYMLINK);
	/* ".." is refused outright. */
	fd = jitfile__open(root, "/tmp/../secret", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_SYMLINK);
	/* The plain file itself opens. */
	fd = jitfile__open(root, "/tmp/perf-51.map", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_true(fd >= 0);
	assert_int_equal(why, JITFILE_OK);
	close(fd);

	/* Owned by another user (as root: chown it; otherwise: the process is someone else). */
	if (!getuid()) {
		snprintf(a, sizeof(a), "%s/tmp/perf-51.map", root);
		assert_int_equal(chown(a, 12345, 12345), 0);
	}
	fd = jitfile__open(root, "/tmp/perf-51.map", other, other, BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_OWNER);

	/* A FIFO (opening it for reading would block) and a directory. */
	snprintf(a, sizeof(a), "%s/tmp/perf-52.map", root);
	assert_int_equal(mkfifo(a, 0644), 0);
	fd = jitfile__open(root, "/tmp/perf-52.map", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_NOT_REGULAR);
	fd = jitfile__open(root, "/tmp", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_NOT_REGULAR);

	/* 1 GiB (sparse) against a 256 MiB bound: refused without a read. */
	snprintf(a, sizeof(a), "%s/tmp/perf-53.map", root);
	fd = open(a, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1ll << 30), 0);
	close(fd);
	fd = jitfile__open(root, "/tmp/perf-53.map", getuid(), getuid(), 256 << 20, &st, &why,
			   &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_TOO_BIG);

	/* Missing: not a refusal, its own reason. */
	fd = jitfile__open(root, "/tmp/perf-54.map", getuid(), getuid(), BIG, &st, &why, &stats);
	assert_int_equal(fd, -1);
	assert_int_equal(why, JITFILE_MISSING);

	assert_int_equal(stats.by_reason[JITFILE_SYMLINK], 4);
	assert_int_equal(stats.by_reason[JITFILE_OWNER], 1);
	assert_int_equal(stats.by_reason[JITFILE_NOT_REGULAR], 2);
	assert_int_equal(stats.by_reason[JITFILE_TOO_BIG], 1);
	assert_int_equal(stats.by_reason[JITFILE_MISSING], 1);
	assert_int_equal(stats.by_reason[JITFILE_OK], 1);
	assert_string_equal(jitfile__reason_name(JITFILE_OWNER), "owned by another user");
}

static void test_status(void **unused)
{
	static const char nested[] = "Name:\tnode\nPid:\t4242\nNSpid:\t4242\t17\n"
				     "Uid:\t1000\t1001\t1000\t1002\n";
	static const char flat[] = "Name:\tx\nPid:\t99\nUid:\t0\t0\t0\t0\n";
	uint32_t nspid = 0;
	uid_t euid, fsuid;

	assert_int_equal(jitfile__parse_status(nested, strlen(nested), &nspid, &euid, &fsuid), 0);
	assert_int_equal(nspid, 17);
	assert_int_equal(euid, 1001);
	assert_int_equal(fsuid, 1002);
	assert_int_equal(jitfile__parse_status(flat, strlen(flat), &nspid, &euid, &fsuid), 0);
	assert_int_equal(nspid, 99);
	assert_int_equal(jitfile__parse_status("Pid:\t1\n", 7, &nspid, &euid, &fsuid), -EINVAL);
	assert_int_equal(
	    jitfile__parse_status("NSpid:\tx\nUid:\t0\t0\t0\t0\n", 23, &nspid, &euid, &fsuid),
	    -EINVAL);
	/* The test's own process: its PID (the test runs in the host's namespace or its own). */
	assert_int_equal(jitfile__proc_ids(getpid(), &nspid, &euid, &fsuid), 0);
	assert_true(nspid > 0);
	assert_int_equal(euid, geteuid());
	assert_int_equal(jitfile__proc_ids(-5, &nspid, &euid, &fsuid), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_rewritten),
	    cmocka_unit_test(test_growing),
	    cmocka_unit_test(test_rewritten_in_place),
	    cmocka_unit_test(test_replaced_names_proven_from_their_read),
	    cmocka_unit_test(test_code_after_a_removal_proven_from_its_commit),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_status),
	};

	return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
