/*
 * Integration workload for walks across vfork()/posix_spawn(): main -> spawn_loop -> either
 * vfork() (the child calls _exit at once) or posix_spawn() of /bin/true, then waitpid, for
 * SECONDS of its own CPU time. Built -O2 -fomit-frame-pointer by the test, so only CFI walks it.
 * Usage: spawnloop vfork|spawn SECONDS
 */
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static int one_vfork(void)
{
	pid_t pid = vfork();
	int st;

	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return 0;
}

__attribute__((noinline)) static int one_spawn(void)
{
	char *argv[] = {"true", NULL};
	pid_t pid;
	int st;

	if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ))
		return -1;
	return waitpid(pid, &st, 0) == pid ? 0 : -1;
}

__attribute__((noinline)) static int spawn_loop(int use_vfork, double secs)
{
	double until = cpu_now() + secs;
	int n = 0;

	while (cpu_now() < until) {
		if ((use_vfork ? one_vfork() : one_spawn()) < 0)
			return -1;
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	return spawn_loop(!strcmp(argv[1], "vfork"), atof(argv[2])) < 0;
}
