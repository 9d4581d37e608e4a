// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the debuginfod fetcher (exporter/symbols/debuginfod.c) without a real server:
 * a closed port (refused), a socket that accepts connections and never answers (slow), the
 * queue bound and cancellation at free. The client cache goes to a temporary directory. The
 * integration test (integration/test_debuginfod.py) runs elfutils' server. No root needed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols/debuginfod.h"

#define ID_A "0123456789abcdef0123456789abcdef01234567"
#define ID_B "1123456789abcdef0123456789abcdef01234567"
#define ID_C "2123456789abcdef0123456789abcdef01234567"

static char cache_dir[] = "/tmp/spanprof-test-debuginfod-XXXXXX";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A loopback TCP socket: listening (connections complete, nothing is ever read or answered),
 * or bound and closed again (its port refuses). Returns the socket (or -1) and the port. */
static int loopback(int listening, int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	if (listening) {
		assert_int_equal(listen(fd, 16), 0);
		return fd;
	}
	close(fd);
	return -1;
}

static struct dbgfetch *new_fetch(int port, unsigned parallel, unsigned queued, unsigned timeout)
{
	char url[64];
	struct dbgfetch_opts o = {
	    .urls = url, .max_parallel = parallel, .max_queued = queued, .timeout_s = timeout};
	struct dbgfetch *f;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	f = dbgfetch__new(&o);
	assert_non_null(f);
	return f;
}

static void test_no_urls(void **state)
{
	struct dbgfetch_opts blank = {.urls = "  "};

	unsetenv("DEBUGINFOD_URLS");
	errno = 0;
	assert_null(dbgfetch__new(NULL));
	assert_int_equal(errno, ENOENT);
	assert_null(dbgfetch__new(&blank));
	assert_int_equal(errno, ENOENT);
	dbgfetch__free(NULL);
}

static void test_bad_ids(void **state)
{
	int port;
	struct dbgfetch *f;
	struct dbgfetch_stats st;

	loopback(0, &port);
	f = new_fetch(port, 1, 0, 5);
	assert_int_equal(dbgfetch__request(f, "", NULL), -EINVAL);
	assert_int_equal(dbgfetch__request(f, "abc", NULL), -EINVAL);	    /* odd length */
	assert_int_equal(dbgfetch__request(f, "ABCD", NULL), -EINVAL);	    /* upper case */
	assert_int_equal(dbgfetch__request(f, "../../etc", NULL), -EINVAL); /* not hex */
	assert_int_equal(dbgfetch__request(NULL, ID_A, NULL), -EINVAL);
	dbgfetch__stats(f, &st);
	assert_int_equal(st.requests, 0);
	dbgfetch__free(f);
}

/* Nothing listens: a counted failure, kept (not asked again) for the run. */
static void test_refused(void **state)
{
	int port;
	struct dbgfetch *f;
	struct dbgfetch_stats st;
	const char *path = NULL;
	uint64_t gen;

	loopback(0, &port);
	f = new_fetch(port, 1, 0, 10);
	gen = dbgfetch__generation(f);
	assert_int_equal(dbgfetch__request(f, ID_A, &path), DBGFETCH_PENDING);
	assert_int_equal(dbgfetch__wait(f, 20000), 0);
	assert_true(dbgfetch__generation(f) > gen);
	assert_int_equal(dbgfetch__request(f, ID_A, &path), DBGFETCH_FAILED);
	assert_null(path);
	dbgfetch__stats(f, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.found + st.missing + st.pending, 0);
	assert_true(st.last_error < 0);
	dbgfetch__free(f);
}

/*
 * A server that accepts and never answers: one request in flight, one queued, the next
 * dropped; the per-request deadline ends the first; free cancels the rest within seconds.
 */
static void test_slow_queue_and_cancel(void **state)
{
	int port, srv = loopback(1, &port);
	struct dbgfetch *f = new_fetch(port, 1, 1, 2);
	struct dbgfetch_stats st;
	double t0;

	assert_int_equal(dbgfetch__request(f, ID_A, NULL), DBGFETCH_PENDING);
	/* Let the worker take ID_A out of the queue. */
	for (t0 = now_s(); now_s() - t0 < 5;) {
		dbgfetch__stats(f, &st);
		if (st.in_flight == 1)
			break;
		usleep(10000);
	}
	assert_int_equal(dbgfetch__request(f, ID_B, NULL), DBGFETCH_PENDING);
	assert_int_equal(dbgfetch__request(f, ID_C, NULL), DBGFETCH_FAILED); /* queue full */
	dbgfetch__stats(f, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.pending, 2);
	/* The 2 s deadline ends ID_A (no answer is not "missing"). */
	t0 = now_s();
	assert_int_equal(dbgfetch__wait(f, 1), 2);
	while (dbgfetch__request(f, ID_A, NULL) == DBGFETCH_PENDING && now_s() - t0 < 15)
		usleep(50000);
	assert_int_equal(dbgfetch__request(f, ID_A, NULL), DBGFETCH_FAILED);
	dbgfetch__stats(f, &st);
	assert_int_equal(st.missing, 0);
	assert_int_equal(st.last_error, -ETIME);
	/* ID_B is in flight now: free cancels it. */
	t0 = now_s();
	dbgfetch__free(f);
	assert_true(now_s() - t0 < 5);
	close(srv);
}

/* @size bytes at @dir/@name, last accessed and modified @age seconds ago. */
static void cache_file(const char *dir, const char *name, size_t size, int age)
{
	char path[2 * PATH_MAX], *buf = calloc(1, size + 1);
	struct timespec t[2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (strchr(name, '/')) {
		*strrchr(path, '/') = 0;
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, size, f), size);
	fclose(f);
	free(buf);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static bool exists(const char *dir, const char *name)
{
	char path[2 * PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !stat(path, &st);
}

/*
 * The client cache stays within its bound: least recently used first, never the control
 * files at its top nor a file changed in the last minute (a download in progress).
 */
static void test_cache_bound(void **state)
{
	char dir[PATH_MAX];
	struct dbgfetch_opts o = {.urls = "http://127.0.0.1:1", .cache_max_bytes = 9000};
	struct dbgfetch *f;
	struct dbgfetch_stats st;

	/* A cache of its own: the library put control files into the other tests' one. */
	snprintf(dir, sizeof(dir), "%s/bound", cache_dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	setenv("DEBUGINFOD_CACHE_PATH", dir, 1);
	assert_int_equal(dbgfetch__cache_dir(dir, sizeof(dir)), 0);
	assert_non_null(strstr(dir, "/bound")); /* DEBUGINFOD_CACHE_PATH */
	cache_file(dir, "max_unused_age_s", 7, 5000);
	cache_file(dir, "aa01/debuginfo", 4000, 3000);
	cache_file(dir, "aa02/debuginfo", 4000, 2000);
	cache_file(dir, "aa03/debuginfo", 4000, 1000);
	cache_file(dir, "aa04/debuginfo", 4000, 0);
	f = dbgfetch__new(&o);
	assert_non_null(f);
	/* The workers trim at start; this waits for that, then finds nothing more to do. */
	assert_true(dbgfetch__trim_cache(f) >= 0);
	assert_false(exists(dir, "aa01"));
	assert_false(exists(dir, "aa02"));
	assert_true(exists(dir, "aa03/debuginfo"));
	assert_true(exists(dir, "aa04/debuginfo"));
	assert_true(exists(dir, "max_unused_age_s"));
	dbgfetch__stats(f, &st);
	assert_int_equal(st.cache_evicted, 2);
	assert_int_equal(st.cache_bytes, 8007);
	dbgfetch__free(f);

	/* Far over: the busy file and the control file stay all the same. */
	o.cache_max_bytes = 100;
	f = dbgfetch__new(&o);
	assert_non_null(f);
	assert_true(dbgfetch__trim_cache(f) >= 0);
	assert_false(exists(dir, "aa03"));
	assert_true(exists(dir, "aa04/debuginfo"));
	assert_true(exists(dir, "max_unused_age_s"));
	dbgfetch__stats(f, &st);
	assert_int_equal(st.cache_bytes, 4007);
	dbgfetch__free(f);

	/* No bound: nothing removed. */
	o.cache_max_bytes = 0;
	f = dbgfetch__new(&o);
	assert_int_equal(dbgfetch__trim_cache(f), 0);
	assert_true(exists(dir, "aa04/debuginfo"));
	dbgfetch__free(f);
	setenv("DEBUGINFOD_CACHE_PATH", cache_dir, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_urls),	cmocka_unit_test(test_bad_ids),
	    cmocka_unit_test(test_refused),	cmocka_unit_test(test_slow_queue_and_cancel),
	    cmocka_unit_test(test_cache_bound),
	};
	char cmd[128];
	int rc;

	assert_non_null(mkdtemp(cache_dir));
	setenv("DEBUGINFOD_CACHE_PATH", cache_dir, 1);
	/* The library retries failures; one attempt keeps the test short. */
	setenv("DEBUGINFOD_RETRY_LIMIT", "0", 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", cache_dir);
	return rc;
}
