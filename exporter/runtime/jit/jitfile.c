/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/jit/jitfile.h"
#include "util/regfile.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static const char *const reason_names[JITFILE__NREASONS] = {
    [JITFILE_OK] = "opened",
    [JITFILE_MISSING] = "missing",
    [JITFILE_SYMLINK] = "symlink",
    [JITFILE_NOT_REGULAR] = "not a regular file",
    [JITFILE_OWNER] = "owned by another user",
    [JITFILE_TOO_BIG] = "too big",
    [JITFILE_STALLED] = "its file system did not answer in time",
    [JITFILE_ERROR] = "error",
};

const char *jitfile__reason_name(enum jitfile_reason r)
{
	return (unsigned)r < JITFILE__NREASONS ? reason_names[r] : "?";
}

/* 1 when @path has a ".." component (refused whichever way the path is resolved). */
static int has_dotdot(const char *path)
{
	const char *p = path;

	while (*p) {
		while (*p == '/')
			p++;
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2]))
			return 1;
		while (*p && *p != '/')
			p++;
	}
	return 0;
}

/*
 * Without openat2: one openat(O_PATH | O_NOFOLLOW) per component from @rootfd, so that no
 * symbolic link is ever followed (ELOOP or an O_PATH descriptor of the link itself).
 */
static int walk_nofollow(int rootfd, const char *rel)
{
	char comp[NAME_MAX + 1];
	const char *p = rel, *e;
	int dfd = rootfd, fd = -1;

	for (;;) {
		while (*p == '/')
			p++;
		e = strchrnul(p, '/');
		if ((size_t)(e - p) > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, p, e - p);
		comp[e - p] = '\0';
		while (*e == '/')
			e++;
		fd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC | (*e ? O_DIRECTORY : 0));
		if (fd < 0) {
			/* A link where a directory is expected fails ENOTDIR under O_NOFOLLOW. */
			if (errno == ENOTDIR && *e) {
				struct stat st;

				if (!fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) &&
				    S_ISLNK(st.st_mode))
					errno = ELOOP;
			}
			goto fail;
		}
		if (dfd != rootfd)
			close(dfd);
		if (!*e)
			return fd;
		dfd = fd;
		p = e;
	}
fail:
	if (dfd != rootfd) {
		int saved = errno;

		close(dfd);
		errno = saved;
	}
	return -1;
}

/* An O_PATH descriptor of @rel inside @rootfd, no symbolic link followed; -1 + errno. */
static int open_path_in_root(int rootfd, const char *rel)
{
	struct open_how how = {
	    .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));

	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return (int)fd;
	/* No openat2 (kernel < 5.6, or a seccomp filter refusing it). */
	return walk_nofollow(rootfd, rel);
}

static int refuse(enum jitfile_reason r, int err, enum jitfile_reason *why,
		  struct jitfile_stats *stats)
{
	*why = r;
	if (stats)
		stats->by_reason[r]++;
	errno = err;
	return -1;
}

int jitfile__open(const char *root, const char *path, uid_t uid, uid_t uid2, uint64_t max_bytes,
		  struct stat *st, enum jitfile_reason *why, struct jitfile_stats *stats)
{
	struct stat pst;
	int rootfd = -1, pfd = -1, fd = -1, err;
	enum jitfile_reason r = JITFILE_ERROR;

	if (!path || path[0] != '/' || has_dotdot(path)) {
		r = JITFILE_SYMLINK;
		err = EINVAL;
		goto fail;
	}
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		err = errno;
		goto fail;
	}
	pfd = open_path_in_root(rootfd, path + 1);
	if (pfd < 0) {
		err = errno;
		r = err == ENOENT		   ? JITFILE_MISSING
		    : err == ELOOP || err == EXDEV ? JITFILE_SYMLINK
						   : JITFILE_ERROR;
		goto fail;
	}
	if (fstat(pfd, &pst)) {
		err = errno;
		goto fail;
	}
	err = EPERM;
	if (S_ISLNK(pst.st_mode)) {
		r = JITFILE_SYMLINK;
		goto fail;
	}
	if (!S_ISREG(pst.st_mode)) {
		r = JITFILE_NOT_REGULAR;
		goto fail;
	}
	if (pst.st_uid != uid && pst.st_uid != uid2 && pst.st_uid != 0) {
		r = JITFILE_OWNER;
		goto fail;
	}
	if ((uint64_t)pst.st_size > max_bytes) {
		r = JITFILE_TOO_BIG;
		err = EFBIG;
		goto fail;
	}
	/* Only now is the file itself opened: the very inode checked above (a copy of it when
	 * its file system can stall, regfile.h). */
	fd = regfile__open_checked(pfd, &pst);
	if (fd < 0) {
		err = -fd;
		fd = -1;
		if (err == ETIMEDOUT)
			r = JITFILE_STALLED;
		goto fail;
	}
	*st = pst;
	close(pfd);
	close(rootfd);
	*why = JITFILE_OK;
	if (stats)
		stats->by_reason[JITFILE_OK]++;
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	if (rootfd >= 0)
		close(rootfd);
	return refuse(r, err, why, stats);
}

int jitfile__parse_status(const char *text, size_t len, uint32_t *nspid, uid_t *euid, uid_t *fsuid)
{
	const char *p = text, *end = text + len;
	int have_pid = 0, have_uid = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = (nl ? nl : end) - p;
		char line[256];

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		if (!strncmp(line, "NSpid:", 6)) {
			/* One PID per nested namespace, outermost first: the last is the process's.
			 */
			char *s = line + 6, *q;
			unsigned long v = 0;
			int any = 0;

			for (;;) {
				errno = 0;
				v = strtoul(s, &q, 10);
				if (q == s)
					break;
				if (errno || v == 0 || v > UINT32_MAX)
					return -EINVAL;
				*nspid = (uint32_t)v;
				any = 1;
				s = q;
			}
			if (!any)
				return -EINVAL;
			have_pid = 2;
		} else if (!strncmp(line, "Pid:", 4) && have_pid < 2) {
			unsigned long v = strtoul(line + 4, NULL, 10);

			if (!v || v > UINT32_MAX)
				return -EINVAL;
			*nspid = (uint32_t)v;
			have_pid = 1;
		} else if (!strncmp(line, "Uid:", 4)) {
			unsigned long r, e, s, f;

			if (sscanf(line + 4, "%lu %lu %lu %lu", &r, &e, &s, &f) != 4)
				return -EINVAL;
			*euid = (uid_t)e;
			*fsuid = (uid_t)f;
			have_uid = 1;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return have_pid && have_uid ? 0 : -EINVAL;
}

int jitfile__proc_ids(int pid, uint32_t *nspid, uid_t *euid, uid_t *fsuid)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	err = -errno;
	close(fd);
	if (n < 0)
		return err;
	return jitfile__parse_status(buf, (size_t)n, nspid, euid, fsuid);
}
