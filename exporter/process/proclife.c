/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/proclife.h"

int proclife__parse_stat(const char *buf, size_t len, char *state, uint64_t *ticks)
{
	const char *end = buf + len, *p = NULL;
	unsigned long long v = 0;
	int field;

	for (const char *c = buf; c < end; c++)
		if (*c == ')')
			p = c;
	/* ") S ..." : field 3 starts two bytes after the last ')'. */
	if (!p || end - p < 4 || p[1] != ' ')
		return -EINVAL;
	p += 2;
	*state = *p;
	for (field = 3; field < 22; field++) {
		while (p < end && *p != ' ')
			p++;
		if (p == end)
			return -EINVAL;
		p++;
	}
	if (p == end || *p < '0' || *p > '9')
		return -EINVAL;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (v > (~0ull - 9) / 10)
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	if (p < end && *p != ' ' && *p != '\n')
		return -EINVAL;
	*ticks = v;
	return 0;
}

uint64_t proclife__ticks(uint64_t start_boot_ns)
{
	static uint64_t ns_per_tick;

	if (!ns_per_tick) {
		long hz = sysconf(_SC_CLK_TCK);

		ns_per_tick = 1000000000ull / (hz > 0 ? (uint64_t)hz : 100);
	}
	return start_boot_ns / ns_per_tick;
}

/* /proc/PID/stat's state letter and start ticks: 0, or -ESRCH (no such PID), or -errno. */
static int read_stat(uint32_t pid, char *state, uint64_t *ticks)
{
	char path[32], buf[1024];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err == -ESRCH ? -ESRCH : err;
	return proclife__parse_stat(buf, (size_t)n, state, ticks);
}

/* Zombie or dead: its mappings are gone, whoever waits for it. */
static bool is_gone(char state)
{
	return state == 'Z' || state == 'X' || state == 'x';
}

int proclife__start_ticks(uint32_t pid, uint64_t *ticks)
{
	char state;
	int err = read_stat(pid, &state, ticks);

	if (err)
		return err;
	return is_gone(state) ? -ESRCH : 0;
}

int proclife__check(uint32_t pid, uint64_t start_boot_ns)
{
	char state;
	uint64_t ticks;
	int err = read_stat(pid, &state, &ticks);

	if (err)
		return err;
	if (start_boot_ns && ticks != proclife__ticks(start_boot_ns))
		return -ESTALE;
	return is_gone(state) ? -ESRCH : 0;
}

int proclife__each(int (*fn)(void *ctx, uint32_t pid), void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		char *end;
		unsigned long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = strtoul(de->d_name, &end, 10);
		if (*end || pid > UINT32_MAX)
			continue;
		ret = fn(ctx, (uint32_t)pid);
	}
	closedir(d);
	return ret;
}
