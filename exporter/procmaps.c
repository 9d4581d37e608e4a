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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "procmaps.h"

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

static int parse_line(const char *line, struct procmap *m)
{
	unsigned long long start, end, offset, inode;
	unsigned int major, minor;
	char perms[5];
	int pos = 0;
	size_t len, sfx = sizeof(DELETED_SUFFIX) - 1;
	const char *path;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu%n", &start, &end, perms, &offset, &major,
		   &minor, &inode, &pos) != 7 || !pos || start > end || strlen(perms) != 4)
		return -EINVAL;
	path = line + pos;
	while (*path == ' ' || *path == '\t')
		path++;
	len = strcspn(path, "\n");

	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->offset = offset;
	m->inode = inode;
	m->dev_major = major;
	m->dev_minor = minor;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	/* Only file mappings can be deleted; "[heap]" and friends have no inode. */
	if (inode && len > sfx && !memcmp(path + len - sfx, DELETED_SUFFIX, sfx)) {
		m->deleted = 1;
		len -= sfx;
	}
	m->path = copy_path(path, len);
	return m->path ? 0 : -ENOMEM;
}

int procmaps__parse(FILE *f, struct procmaps *out)
{
	struct procmap *p;
	char *line = NULL;
	size_t cap = 0, n_cap = 0, i;
	bool sorted = true;
	int err = 0;

	out->maps = NULL;
	out->n = 0;
	errno = 0;
	while (getline(&line, &cap, f) > 0) {
		if (line[0] == '\n')
			continue;
		if (out->n == n_cap) {
			n_cap = n_cap ? 2 * n_cap : 64;
			p = realloc(out->maps, n_cap * sizeof(*p));
			if (!p) {
				err = -ENOMEM;
				goto cleanup;
			}
			out->maps = p;
		}
		err = parse_line(line, &out->maps[out->n]);
		if (err)
			goto cleanup;
		if (out->n && out->maps[out->n].start < out->maps[out->n - 1].start)
			sorted = false;
		out->n++;
	}
	/* A process exiting while we read shows as ESRCH from read(2). */
	if (ferror(f))
		err = errno ? -errno : -EIO;
cleanup:
	if (!sorted)
		qsort(out->maps, out->n, sizeof(*out->maps), map_cmp);
	for (i = 1; !err && i < out->n; i++)
		if (out->maps[i].start < out->maps[i - 1].end)
			err = -EINVAL;
	free(line);
	return err;
}

int procmaps__read(int pid, struct procmaps *out)
{
	char path[64];
	FILE *f;
	int err;

	out->maps = NULL;
	out->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = procmaps__parse(f, out);
	fclose(f);
	return err;
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
