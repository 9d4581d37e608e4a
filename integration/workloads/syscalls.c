/*
 * Integration workload: spends its time in the kernel (read of /dev/zero,
 * write to /dev/null) so that samples carry kernel frames. Usage: syscalls SECONDS
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void copy_zeroes(double secs)
{
	int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
	double until = now() + secs;

	while (now() < until)
		if (read(in, buf, sizeof(buf)) > 0 && write(out, buf, sizeof(buf)) < 0)
			break;
	close(in);
	close(out);
}

int main(int argc, char **argv)
{
	copy_zeroes(argc > 1 ? atof(argv[1]) : 5);
	return 0;
}
