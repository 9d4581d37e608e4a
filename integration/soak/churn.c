/*
 * Soak workload: starts short-lived processes at a steady rate, each exec'ing PATH (a symlink
 * the soak driver points at the newest freshly built variant), and reaps them. At most
 * MAX_CHILDREN run at once, so a loaded machine slows the churn instead of piling processes up.
 * Once a second it rewrites STATS (spawned, failed, running) for the driver.
 *
 *   churn PATH RATE_PER_S STATS_FILE
 *
 * Runs until SIGTERM or SIGINT; then waits for its children and exits 0.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 64

extern char **environ;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int reap(int block)
{
	int n = 0;

	while (waitpid(-1, NULL, block ? 0 : WNOHANG) > 0)
		n++;
	return n;
}

static void write_stats(const char *path, unsigned long spawned, unsigned long failed, int running)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%lu %lu %d\n", spawned, failed, running);
	fclose(f);
	rename(tmp, path);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	unsigned long spawned = 0, failed = 0;
	double rate, next, last_stats;
	int running = 0;

	if (argc != 4 || (rate = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: churn PATH RATE_PER_S STATS_FILE\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	next = last_stats = now();
	while (!stop) {
		char *args[] = {"soakv", NULL};
		double t = now();
		pid_t pid;

		running -= reap(0);
		if (t - last_stats >= 1) {
			write_stats(argv[3], spawned, failed, running);
			last_stats = t;
		}
		if (t < next) {
			struct timespec ts = {0, (long)((next - t) * 1e9)};

			nanosleep(&ts, NULL);
			continue;
		}
		/* Behind by more than a second (loaded machine): skip ahead, don't burst. */
		next = (next < t - 1 ? t : next) + 1 / rate;
		if (running >= MAX_CHILDREN) {
			failed++;
			continue;
		}
		if (posix_spawn(&pid, argv[1], NULL, NULL, args, environ)) {
			failed++;
			continue;
		}
		spawned++;
		running++;
	}
	reap(1);
	write_stats(argv[3], spawned, failed, 0);
	return 0;
}
