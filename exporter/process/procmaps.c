// SPDX-License-Identifier: Apache-2.0
/*
 * procmaps: /proc/PID/maps, one mapping a line (proc(5)):
 *   "start-end perms offset major:minor inode   path"
 * Numbers are hex except the inode (decimal). The path starts after the
 * padding that follows the inode and runs to the end of the line, so it may
 * hold spaces; the kernel escapes a newline in it as "\012" and appends
 * " (deleted)" when the file was unlinked.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "util/regfile.h"
#include "util/util.h"

#define DELETED_SUFFIX " (deleted)"

static int map_cmp(const void *a, const void *b)
{
	const struct procmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Copies @s (without the line's newline), decoding the kernel's "\012". */
static char *copy_path(const char *s, size_t len)
{
	char *p = malloc(len + 1);
	size_t i, o = 0;

	if (!p)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '\\' && len - i >= 4 && !memcmp(s + i, "\\012", 4)) {
			p[o++] = '\n';
			i += 3;
		} else {
			p[o++] = s[i];
		}
	}
	p[o] = 0;
	return p;
}

/* Hex number up to @end; advances *@p. false if no digit or more than 64 bits. */
static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int d;

	for (; s < end; s++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			d = (*s | 0x20) - 'a' + 10;
		else
			break;
		if (x >> 60)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	if (s == *p)
		return false;
	*v = x;
	*p = s;
	return true;
}

static bool parse_dec(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	if (s == *p)
		return false;
	*v = x;
	*p = s;
	return true;
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

/*
 * Parses the line [@line, @end) (no newline). Returns 1 with *@m filled, 0 when
 * @flags filter the mapping out, -EINVAL or -ENOMEM. A hand parser: sscanf
 * showed in profiles of process churn.
 */
static int parse_line(const char *line, const char *end, unsigned int flags, struct procmap *m)
{
	uint64_t start, end_addr, offset, major, minor, inode;
	const char *p = line, *perms, *path;
	size_t len, sfx = sizeof(DELETED_SUFFIX) - 1;
	uint32_t prot;

	if (!parse_hex(&p, end, &start) || !expect(&p, end, '-') ||
	    !parse_hex(&p, end, &end_addr) || !expect(&p, end, ' ') || end - p < 5)
		return -EINVAL;
	perms = p;
	p += 4;
	if (!expect(&p, end, ' ') || !parse_hex(&p, end, &offset) || !expect(&p, end, ' ') ||
	    !parse_hex(&p, end, &major) || !expect(&p, end, ':') || !parse_hex(&p, end, &minor) ||
	    !expect(&p, end, ' ') || !parse_dec(&p, end, &inode) || start > end_addr ||
	    major > UINT32_MAX || minor > UINT32_MAX)
		return -EINVAL;
	if (p < end && *p != ' ' && *p != '\t')
		return -EINVAL;
	prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
	if ((flags & PROCMAPS_EXEC_ONLY) && !(prot & PROT_EXEC))
		return 0;
	path = p;
	while (path < end && (*path == ' ' || *path == '\t'))
		path++;
	len = (size_t)(end - path);

	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end_addr;
	m->offset = offset;
	m->inode = inode;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	m->prot = prot;
	/* Only file mappings can be deleted; "[heap]" and friends have no inode. */
	if (inode && len > sfx && !memcmp(path + len - sfx, DELETED_SUFFIX, sfx)) {
		m->deleted = 1;
		len -= sfx;
	}
	m->path = copy_path(path, len);
	return m->path ? 1 : -ENOMEM;
}

/* Parses the maps text [@buf, @buf + @len) into @out (emptied first). */
static int parse_buf(const char *buf, size_t len, unsigned int flags, struct procmaps *out)
{
	const char *p = buf, *end = buf + len, *nl;
	struct procmap *maps;
	size_t n_cap = 0, i;
	bool sorted = true;
	int err = 0, r;

	out->maps = NULL;
	out->n = 0;
	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (nl == p)
			continue;
		if (out->n == n_cap) {
			n_cap = n_cap ? 2 * n_cap : 64;
			maps = realloc(out->maps, n_cap * sizeof(*maps));
			if (!maps) {
				err = -ENOMEM;
				break;
			}
			out->maps = maps;
		}
		r = parse_line(p, nl, flags, &out->maps[out->n]);
		if (r < 0) {
			err = r;
			break;
		}
		if (!r)
			continue;
		if (out->n && out->maps[out->n].start < out->maps[out->n - 1].start)
			sorted = false;
		out->n++;
	}
	if (!sorted)
		qsort(out->maps, out->n, sizeof(*out->maps), map_cmp);
	for (i = 1; !err && i < out->n; i++)
		if (out->maps[i].start < out->maps[i - 1].end)
			err = -EINVAL;
	return err;
}

int procmaps__parse(FILE *f, struct procmaps *out)
{
	char *buf = NULL, *p;
	size_t len = 0, cap = 0, n;
	int err = 0, perr;

	out->maps = NULL;
	out->n = 0;
	errno = 0;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 16384;
			p = realloc(buf, cap);
			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (!n)
			break;
	}
	/* A process exiting while we read shows as ESRCH from read(2): keep what was read. */
	if (ferror(f))
		err = errno ? -errno : -EIO;
	perr = parse_buf(buf, len, 0, out);
	free(buf);
	return perr ? perr : err;
}

int procmaps__read_filtered(int pid, unsigned int flags, struct procmaps *out)
{
	char path[64], *buf = NULL, *p;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err = 0, perr;

	out->maps = NULL;
	out->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 16384;
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
			/* A process exiting while we read: ESRCH, lines before kept. */
			err = -errno;
			break;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	perr = parse_buf(buf, len, flags, out);
	if (perr)
		err = perr;
cleanup:
	close(fd);
	free(buf);
	return err;
}

int procmaps__read(int pid, struct procmaps *out)
{
	return procmaps__read_filtered(pid, 0, out);
}

const struct procmap *procmaps__find_file(const struct procmaps *m, uint64_t ino,
					  uint32_t dev_major, uint32_t dev_minor)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->maps[i].inode == ino && m->maps[i].dev_major == dev_major &&
		    m->maps[i].dev_minor == dev_minor)
			return &m->maps[i];
	return NULL;
}

const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < m->maps[lo - 1].end)
		return &m->maps[lo - 1];
	return NULL;
}

void procmaps__clear(struct procmaps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->maps[i].path);
	free(m->maps);
	m->maps = NULL;
	m->n = 0;
}

int procmaps__read_mem(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	char path[64];
	ssize_t n;
	int fd, err;

	if (!len)
		return 0;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		return -EFAULT;
	err = -errno;
	if (err == -ESRCH || err == -EFAULT)
		return err;
	/* EPERM/ENOSYS (seccomp, no CONFIG_CROSS_MEMORY_ATTACH): /proc/PID/mem. */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = pread(fd, buf, len, (off_t)addr);
	err = n == (ssize_t)len ? 0 : n >= 0 || errno == EIO ? -EFAULT : -errno;
	close(fd);
	return err;
}

/* Paths procmaps__open_file() refused: not regular files (all processes, all callers). */
static uint64_t not_regular;

uint64_t procmaps__not_regular(void)
{
	return __atomic_load_n(&not_regular, __ATOMIC_RELAXED);
}

/* regfile__open(), counting a refusal; -1 + errno like open(2). */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = regfile__open(path, &st);

	if (fd >= 0)
		return fd;
	if (fd == -UTIL_ENOTREG)
		__atomic_fetch_add(&not_regular, 1, __ATOMIC_RELAXED);
	errno = -fd;
	return -1;
}

int procmaps__open_file(int pid, const struct procmap *m, char *path, size_t size)
{
	char buf[PATH_MAX + 64];
	int fd;

	if (!path) {
		path = buf;
		size = sizeof(buf);
	}
	snprintf(path, size, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = open_regular(path);
	/* A device mapped (a character device mmap()ed executable): its path names it too. A
	 * file given up (its file system stalled, or too big to copy from it): so is the path. */
	if (fd >= 0 || errno == UTIL_ENOTREG || errno == ETIMEDOUT || errno == EFBIG)
		return fd;
	snprintf(path, size, "/proc/%d/root%s", pid, m->path);
	return open_regular(path);
}

int procmaps__anon_code(const char *path)
{
	return !path[0] || !strncmp(path, "[anon:", 6) || !strncmp(path, "/memfd:", 7) ||
	       !strcmp(path, "/dev/zero");
}

int procmaps__jitdump_path(const char *path, uint32_t *pid)
{
	const char *base = strrchr(path, '/'), *p;
	uint64_t v = 0;

	base = base ? base + 1 : path;
	if (strncmp(base, "jit-", 4))
		return 0;
	for (p = base + 4; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return 0;
	}
	if (p == base + 4 || strcmp(p, ".dump"))
		return 0;
	*pid = (uint32_t)v;
	return 1;
}
