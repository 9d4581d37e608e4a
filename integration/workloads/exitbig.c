// SPDX-License-Identifier: Apache-2.0
/*
 * Workload of test_stack_truth.py's exiting-thread test: forks CHILDREN processes one after the
 * other; each touches MB megabytes and exits, and its exit releases them (do_exit() ->
 * exit_mm() -> exit_mmap(): tens of ms in the kernel with no user address space left).
 * Usage: exitbig CHILDREN MB
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 4;
	size_t mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 256;

	for (int i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			char *p = malloc(mb << 20);

			if (!p)
				_exit(1);
			memset(p, i + 1, mb << 20);
			_exit(p[mb << 19] == i + 1 ? 0 : 1);
		}
		if (waitpid(pid, NULL, 0) != pid)
			return 1;
	}
	return 0;
}
