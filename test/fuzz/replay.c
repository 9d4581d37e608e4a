// SPDX-License-Identifier: Apache-2.0
/*
 * Replays fuzz inputs through one fuzz target without libFuzzer: the target's
 * LLVMFuzzerTestOneInput() linked with this main(), both built with ASan and UBSan. `make unit`
 * runs it with no argument: every file of the target's committed corpus (FUZZ_CORPUS_DIR: the
 * seeds, the minimized corpus and the crash-* reproducers of fixed findings).
 *
 *   replay_<name> [FILE|DIR]...
 *
 * Each input runs in a child process, so a crash or a sanitizer report fails that input only and
 * the rest still run. Ends with the lines scripts/run-tests.sh counts (cmocka's "[  PASSED  ]"
 * and "[  FAILED  ]" summaries) and "<name>: N passed, N failed". Exit status 0 only when every
 * input passed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"

#ifndef FUZZ_NAME
#error "FUZZ_NAME: the target's name"
#endif
#ifndef FUZZ_CORPUS_DIR
#error "FUZZ_CORPUS_DIR: the committed corpus of the target"
#endif

/* Stack traces for UBSan reports too (UBSAN_OPTIONS still wins). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1";
}

/* One allocation over 2 GiB fails the input, as libFuzzer's -malloc_limit_mb does by default. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "max_allocation_size_mb=2048";
}

struct list {
	char **paths;
	size_t n, cap;
};

static int list_add(struct list *l, const char *path)
{
	char **p;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		p = realloc(l->paths, l->cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->paths = p;
	}
	l->paths[l->n] = strdup(path);
	if (!l->paths[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file, or the regular files of a directory (not recursive, dot files skipped), sorted. */
static int collect(struct list *l, const char *path)
{
	char sub[PATH_MAX];
	struct dirent *e;
	struct stat st;
	size_t first = l->n;
	DIR *d;
	int err = 0;

	if (stat(path, &st)) {
		err = -errno;
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return err;
	}
	if (!S_ISDIR(st.st_mode))
		return list_add(l, path);
	d = opendir(path);
	if (!d) {
		err = -errno;
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return err;
	}
	while (!err && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (!stat(sub, &st) && S_ISREG(st.st_mode))
			err = list_add(l, sub);
	}
	closedir(d);
	qsort(l->paths + first, l->n - first, sizeof(*l->paths), cmp_str);
	return err;
}

/* Reads the whole file into an exactly sized buffer (ASan sees reads past its end). */
static int read_file(const char *path, uint8_t **out, size_t *size)
{
	uint8_t *buf = NULL, *p;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			p = realloc(buf, cap);
			if (!p) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = p;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	*out = malloc(len ? len : 1);
	if (!*out) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(*out, buf, len);
	*size = len;
cleanup:
	free(buf);
	close(fd);
	return err;
}

/* Runs one input in a child: 0 when it returned normally, else a message on stderr. */
static int replay_one(const char *path)
{
	uint8_t *data = NULL;
	size_t size = 0;
	int status, err;
	pid_t pid;

	err = read_file(path, &data, &size);
	if (err) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-err));
		return err;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		free(data);
		return err;
	}
	if (pid == 0) {
		LLVMFuzzerTestOneInput(data, size);
		free(data);
		/* exit(), not _exit(): LeakSanitizer checks the child at exit. */
		exit(0);
	}
	free(data);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		fprintf(stderr, "replay: %s: killed by signal %d\n", path, WTERMSIG(status));
	else
		fprintf(stderr, "replay: %s: exit status %d (a sanitizer report is above)\n", path,
			WEXITSTATUS(status));
	return -EIO;
}

int main(int argc, char **argv)
{
	static char *default_dir[] = {FUZZ_CORPUS_DIR};
	char **dirs = argc > 1 ? argv + 1 : default_dir;
	int ndirs = argc > 1 ? argc - 1 : 1, i, setup_errors = 0;
	struct list l = {0};
	size_t j, passed = 0, failed = 0;

	for (i = 0; i < ndirs; i++)
		if (collect(&l, dirs[i]))
			setup_errors++;
	LLVMFuzzerInitialize(&argc, &argv);
	printf("[==========] %s: replaying %zu input(s)\n", FUZZ_NAME, l.n);
	for (j = 0; j < l.n; j++) {
		if (replay_one(l.paths[j])) {
			printf("[  FAILED  ] %s: %s\n", FUZZ_NAME, l.paths[j]);
			failed++;
		} else {
			passed++;
		}
		free(l.paths[j]);
	}
	free(l.paths);
	/* An unreadable corpus, or an empty one, is a failure too: nothing would be checked. */
	if (setup_errors || passed + failed == 0)
		failed++;
	printf("[  PASSED  ] %zu test(s).\n", passed);
	if (failed)
		printf("[  FAILED  ] %zu test(s).\n", failed);
	printf("%s: %zu passed, %zu failed\n", FUZZ_NAME, passed, failed);
	return failed ? 1 : 0;
}
