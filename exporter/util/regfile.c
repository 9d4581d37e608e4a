// SPDX-License-Identifier: Apache-2.0
/* regfile: files a profiled program controls, opened so that none can block the agent. */
#include "util/regfile.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/param.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"

/* Helpers given up and not yet reaped; past this many, files that need one are refused. */
#define MAX_HELPERS 16
/* Devices remembered as stalled (the oldest entry is reused). */
#define MAX_STALLED_DEVS 32
/* One read(2) of the helper's copy loop. */
#define COPY_CHUNK (64u << 10)
/* Copies kept for the next opener of the same file (the symbolizer, the CFI builder, the runtime
 * readers each open a mapped file): this many, this many bytes in all, this long. */
#define CACHE_SLOTS 8
#define CACHE_MAX_BYTES (32ull << 20)
#define CACHE_TTL_NS (60ull * 1000000000ull)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int deadline_ms = REGFILE_DEADLINE_MS;
static struct regfile_stats stats;
static pid_t helpers[MAX_HELPERS];
static size_t nhelpers;
static struct {
	dev_t dev;
	uint64_t until_ns;
} stalled_devs[MAX_STALLED_DEVS];
static struct copy {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int mfd; /* -1: free slot */
	uint64_t bytes, made_ns;
} cache[CACHE_SLOTS] = {[0 ... CACHE_SLOTS - 1] = {.mfd = -1}};
static uint64_t cache_bytes;

static void cache_drop_locked(struct copy *c)
{
	close(c->mfd);
	cache_bytes -= c->bytes;
	c->mfd = -1;
}

/* A new descriptor (its own offset) of the kept copy of the file @st, else -1. */
static int cache_open(const struct stat *st)
{
	uint64_t now = util__mono_ns();
	int fd = -1;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		struct copy *c = &cache[i];
		char self[32];

		if (c->mfd < 0)
			continue;
		if (now - c->made_ns > CACHE_TTL_NS) {
			cache_drop_locked(c);
			continue;
		}
		if (fd >= 0 || c->dev != st->st_dev || c->ino != st->st_ino ||
		    c->size != st->st_size || c->mtime.tv_sec != st->st_mtim.tv_sec ||
		    c->mtime.tv_nsec != st->st_mtim.tv_nsec)
			continue;
		snprintf(self, sizeof(self), "/proc/self/fd/%d", c->mfd);
		fd = open(self, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			stats.reused++;
	}
	pthread_mutex_unlock(&lock);
	return fd;
}

/* Keeps a copy of @mfd, the copy of the file @st, when it fits (the oldest copies go first). */
static void cache_keep(const struct stat *st, int mfd)
{
	struct stat mst;
	struct copy *slot = NULL;
	int keep;

	if (fstat(mfd, &mst) || (uint64_t)mst.st_size > CACHE_MAX_BYTES)
		return;
	keep = fcntl(mfd, F_DUPFD_CLOEXEC, 3);
	if (keep < 0)
		return;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct copy *oldest = NULL;

		slot = NULL;
		for (size_t i = 0; i < CACHE_SLOTS; i++) {
			if (cache[i].mfd < 0)
				slot = slot ? slot : &cache[i];
			else if (!oldest || cache[i].made_ns < oldest->made_ns)
				oldest = &cache[i];
		}
		if (slot && cache_bytes + (uint64_t)mst.st_size <= CACHE_MAX_BYTES)
			break;
		cache_drop_locked(oldest); /* not NULL: the copies held are over the bound */
	}
	*slot = (struct copy){.dev = st->st_dev,
			      .ino = st->st_ino,
			      .size = st->st_size,
			      .mtime = st->st_mtim,
			      .mfd = keep,
			      .bytes = (uint64_t)mst.st_size,
			      .made_ns = util__mono_ns()};
	cache_bytes += slot->bytes;
	pthread_mutex_unlock(&lock);
}

int regfile__slow_fs(int64_t f_type)
{
	/* f_type is a signed long: the SMB magics have their top bit set. */
	switch ((uint32_t)f_type) {
	case FUSE_SUPER_MAGIC:
	case NFS_SUPER_MAGIC:
	case SMB_SUPER_MAGIC:
	case CIFS_SUPER_MAGIC:
	case SMB2_SUPER_MAGIC:
	case CEPH_SUPER_MAGIC:
	case AFS_SUPER_MAGIC:
	case AFS_FS_MAGIC:
	case CODA_SUPER_MAGIC:
	case OCFS2_SUPER_MAGIC:
		return 1;
	}
	return 0;
}

void regfile__set_deadline_ms(unsigned int ms)
{
	__atomic_store_n(&deadline_ms, ms ? ms : REGFILE_DEADLINE_MS, __ATOMIC_RELAXED);
}

/* Reaps the helpers that have ended (never waits). Called with the lock held. */
static void reap_locked(void)
{
	size_t i = 0;

	while (i < nhelpers) {
		pid_t r = waitpid(helpers[i], NULL, WNOHANG);

		if (r == 0) {
			i++;
			continue;
		}
		helpers[i] = helpers[--nhelpers];
	}
}

/* Keeps @pid to be reaped later; when the table is full it stays a zombie until the agent ends. */
static void keep_helper(pid_t pid)
{
	pthread_mutex_lock(&lock);
	if (waitpid(pid, NULL, WNOHANG) == 0 && nhelpers < MAX_HELPERS)
		helpers[nhelpers++] = pid;
	pthread_mutex_unlock(&lock);
}

void regfile__stats(struct regfile_stats *out)
{
	pthread_mutex_lock(&lock);
	reap_locked();
	*out = stats;
	out->helpers_left = nhelpers;
	pthread_mutex_unlock(&lock);
}

/*
 * The helper process, right after _Fork(): copies the file @pfd (O_PATH) names into @mfd, at
 * most @cap bytes, then writes the byte count (or -errno) as an int64_t to @wfd and exits. Only
 * async-signal-safe calls. Every other descriptor of the agent is closed first: a helper stuck
 * in the file system must hold no pipe, perf event or BPF object of the agent's.
 */
static _Noreturn void helper(int pfd, int mfd, int wfd, char *buf, uint64_t cap)
{
	int from[3] = {pfd, mfd, wfd}, high[3], fd;
	int64_t res = 0;
	uint64_t off = 0;

	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* To 0, 1 and 2, through descriptors above 2 so that none is overwritten on the way. */
	for (int i = 0; i < 3; i++) {
		high[i] = fcntl(from[i], F_DUPFD, 3);
		if (high[i] < 0)
			_exit(1);
	}
	for (int i = 0; i < 3; i++)
		if (dup2(high[i], i) < 0)
			_exit(1);
	close_range(3, ~0u, 0);
	fd = open("/proc/self/fd/0", O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		res = -errno;
	while (fd >= 0) {
		ssize_t n = read(fd, buf, COPY_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			res = n < 0 ? -errno : (int64_t)off;
			break;
		}
		if (off + (uint64_t)n > cap) {
			res = -EFBIG;
			break;
		}
		res = util__pwrite_all(1, buf, (size_t)n, off);
		if (res)
			break;
		off += (uint64_t)n;
	}
	if (write(2, &res, sizeof(res)) != sizeof(res))
		_exit(1);
	_exit(0);
}

/* 1 when @dev stalled within REGFILE_RETRY_NS (counted as skipped), or too many helpers are
 * stuck already. */
static int refuse_now(dev_t dev)
{
	uint64_t now = util__mono_ns();
	int refuse = 0;

	pthread_mutex_lock(&lock);
	reap_locked();
	for (size_t i = 0; i < MAX_STALLED_DEVS && !refuse; i++)
		refuse = stalled_devs[i].until_ns > now && stalled_devs[i].dev == dev;
	if (nhelpers >= MAX_HELPERS)
		refuse = 1;
	if (refuse)
		stats.skipped++;
	pthread_mutex_unlock(&lock);
	return refuse;
}

/* Counts a copy that missed its deadline and leaves its device alone for REGFILE_RETRY_NS. */
static void mark_stalled(dev_t dev)
{
	uint64_t now = util__mono_ns();
	size_t slot = 0;

	pthread_mutex_lock(&lock);
	stats.stalled++;
	for (size_t i = 1; i < MAX_STALLED_DEVS; i++)
		if (stalled_devs[i].until_ns < stalled_devs[slot].until_ns)
			slot = i;
	stalled_devs[slot].dev = dev;
	stalled_devs[slot].until_ns = now + REGFILE_RETRY_NS;
	pthread_mutex_unlock(&lock);
}

/* A copy that keeps progressing may take this many deadlines in all, no more. */
#define PROGRESS_DEADLINES 16
/* How often the copy's progress is looked at while waiting (milliseconds). */
#define PROGRESS_POLL_MS 100

/*
 * Waits until @fd (the helper's pipe) has its answer: 1 with *@res read, 0 on timeout. The
 * deadline (@ms milliseconds) runs from the last progress of the copy (@mfd, the memfd the
 * helper writes, growing): a server that stops answering is given up @ms after its last
 * answer, one that is slow but answers (a busy virtual machine's host, a loaded server) is
 * waited for, up to PROGRESS_DEADLINES * @ms in all. A signal (SIGTERM) does not cut the wait
 * short: the deadlines bound it.
 */
static int wait_answer(int fd, int mfd, unsigned int ms, int64_t *res)
{
	uint64_t start = util__mono_ns(), span = (uint64_t)ms * 1000000ull;
	uint64_t end = start + span, cap = start + PROGRESS_DEADLINES * span;
	off_t seen = 0;

	for (;;) {
		uint64_t now = util__mono_ns();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		struct stat mst;
		int r;

		if (!fstat(mfd, &mst) && mst.st_size > seen) {
			seen = mst.st_size;
			end = MIN(now + span, cap);
		}
		if (now >= end)
			return 0;
		r = poll(&p, 1,
			 (int)MIN((end - now + 999999) / 1000000, (uint64_t)PROGRESS_POLL_MS));
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			continue;
		if (r < 0)
			return *res = -errno, 1;
		/* The answer, or EOF: the helper died without one. */
		if (read(fd, res, sizeof(*res)) != sizeof(*res))
			*res = -EIO;
		return 1;
	}
}

/* The file @pfd names, copied by a helper into a memfd within the deadline (regfile.h). */
static int copy_slow(int pfd, const struct stat *st, int64_t f_type, char *why, size_t whylen)
{
	int mfd = -1, p[2] = {-1, -1}, err;
	int64_t res = 0;
	char *buf = NULL;
	pid_t pid;

	if ((uint64_t)st->st_size > REGFILE_SLOW_MAX_BYTES) {
		pthread_mutex_lock(&lock);
		stats.too_big++;
		pthread_mutex_unlock(&lock);
		return -EFBIG;
	}
	mfd = cache_open(st);
	if (mfd >= 0)
		return mfd;
	if (refuse_now(st->st_dev))
		return -ETIMEDOUT;
	buf = malloc(COPY_CHUNK);
	mfd = memfd_create("spanprof-copy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (!buf || mfd < 0 || pipe2(p, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}
	pid = _Fork();
	if (pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (pid == 0)
		helper(pfd, mfd, p[1], buf, REGFILE_SLOW_MAX_BYTES);
	close(p[1]);
	p[1] = -1;
	if (!wait_answer(p[0], mfd, __atomic_load_n(&deadline_ms, __ATOMIC_RELAXED), &res)) {
		kill(pid, SIGKILL);
		keep_helper(pid);
		mark_stalled(st->st_dev);
		snprintf(why, whylen,
			 "its file system (statfs type 0x%llx) stopped answering for %u ms; files "
			 "on it are not read for %llu s",
			 (unsigned long long)(uint32_t)f_type, deadline_ms,
			 (unsigned long long)(REGFILE_RETRY_NS / 1000000000ull));
		err = -ETIMEDOUT;
		goto cleanup;
	}
	/* Answered: it exits now, or once the file's close(2) returns (FUSE's FLUSH). */
	keep_helper(pid);
	if (res < 0) {
		err = (int)res;
		if (err == -EFBIG) {
			pthread_mutex_lock(&lock);
			stats.too_big++;
			pthread_mutex_unlock(&lock);
		}
		goto cleanup;
	}
	/* The copy stays as it is while the parsers map it. */
	fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	pthread_mutex_lock(&lock);
	stats.slow_read++;
	pthread_mutex_unlock(&lock);
	cache_keep(st, mfd);
	err = 0;
cleanup:
	free(buf);
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	if (err) {
		if (mfd >= 0)
			close(mfd);
		return err;
	}
	return mfd;
}

static int open_checked(int pfd, const struct stat *st, char *why, size_t whylen)
{
	struct statfs sfs;
	char self[32];
	int fd;

	if (!fstatfs(pfd, &sfs) && regfile__slow_fs(sfs.f_type))
		return copy_slow(pfd, st, sfs.f_type, why, whylen);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

int regfile__open_checked(int pfd, const struct stat *st)
{
	char why[160];

	return open_checked(pfd, st, why, sizeof(why));
}

int regfile__open(const char *path, struct stat *st)
{
	char why[160] = "";
	int pfd, fd;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st)) {
		fd = -errno;
		close(pfd);
		return fd;
	}
	if (!S_ISREG(st->st_mode)) {
		close(pfd);
		return -UTIL_ENOTREG;
	}
	fd = open_checked(pfd, st, why, sizeof(why));
	close(pfd);
	if (why[0])
		fprintf(stderr, "spanprof: %s not read: %s\n", path, why);
	return fd;
}
