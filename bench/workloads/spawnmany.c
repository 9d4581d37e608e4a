/*
 * Benchmark workload for bench/process/hook_cost.py: starts many short processes, one after
 * the other, so that the BPF process hooks (exec, exit, mmap) run for each.
 *
 * Usage: spawnmany N PROGRAM [ARG...]
 *        spawnmany --libs LIB...
 *
 * The first form fork()s and execv()s PROGRAM N times, waiting for each. The second is a
 * program to spawn: it maps each shared library LIB with dlopen(RTLD_NOW) (ld.so mmaps its
 * segments, executable ones among them) and exits 0; a library that does not load is an error
 * (exit 1), so that the benchmark never measures fewer mappings than it says.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int map_libs(int argc, char **argv)
{
	for (int i = 2; i < argc; i++)
		if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "spawnmany: %s\n", dlerror());
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	long n;

	if (argc >= 2 && !strcmp(argv[1], "--libs"))
		return map_libs(argc, argv);
	if (argc < 3 || (n = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: spawnmany N PROGRAM [ARG...] | spawnmany --libs LIB...\n");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0) {
			perror("spawnmany: fork");
			return 1;
		}
		if (!pid) {
			execv(argv[2], &argv[2]);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "spawnmany: %s failed (status %d)\n", argv[2], status);
			return 1;
		}
	}
	return 0;
}
