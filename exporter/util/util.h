/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util: one-line helpers several exporter modules had each written for themselves. Header only
 * (static inline), so a unit test that links a module's object alone needs nothing more.
 */
#ifndef SPANPROF_UTIL_H
#define SPANPROF_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC now, in nanoseconds (clock_gettime(2); it can't fail for this clock). */
static inline uint64_t util__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CLOCK_BOOTTIME now, in nanoseconds: the clock of BPF's bpf_ktime_get_boot_ns() (sample times). */
static inline uint64_t util__boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Value of the hex digit @c (0-9, a-f, A-F), or -1 when @c is not one. */
static inline int util__hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * An unlinked file for scratch data the agent maps back (inflated DWARF, decoded MiniDebugInfo):
 * O_TMPFILE in /var/tmp, else /tmp, mode 0600. The descriptor, or a negative errno.
 */
static inline int util__open_tmpfile(void)
{
	int fd = open("/var/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0)
		fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/* pwrite(2) of all @n bytes of @buf at @off, again after EINTR and short writes. 0, or a
 * negative errno (-EIO for a write of 0 bytes). */
static inline int util__pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, buf, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf = (const char *)buf + w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

#endif
