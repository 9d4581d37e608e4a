/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/jit/perfmap.h"
#include "util/util.h"

/* Bytes read per pread(2). */
#define CHUNK (64 * 1024)
/* A file's change time lags the write by up to a tick of the kernel's coarse clock (HZ 100:
 * 10 ms); a name that replaced another is proven from that much after it (written_by()). */
#define PERFMAP_MTIME_SLACK_NS (20 * 1000 * 1000ull)

/*
 * Copies of bytes taken, compared with the file before each update (the file rewritten in
 * place, same inode and as long or longer, must not keep what was read of the old one): the
 * first CHECK_HEAD bytes, the last CHECK_TAIL bytes before the offset, and CHECK_NWIN windows
 * of CHECK_WIN bytes at 8 KiB, 16 KiB, ... 128 MiB.
 */
#define CHECK_HEAD 4096
#define CHECK_TAIL 4096
#define CHECK_WIN 64
#define CHECK_NWIN 15
#define CHECK_WIN0 8192

struct perfmap {
	struct jittab *tab;
	uint64_t offset; /* bytes consumed: complete lines */
	dev_t dev;
	ino_t ino;
	uint64_t max_file_bytes;
	bool skipping; /* inside a line longer than PERFMAP_MAX_LINE */
	bool full;
	bool restart; /* perfmap__forget(): the next update reads the file from its start */
	struct perfmap_stats st;
	char head[CHECK_HEAD], tail[CHECK_TAIL], win[CHECK_NWIN][CHECK_WIN];
};

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t win_pos(int k)
{
	return (uint64_t)CHECK_WIN0 << k;
}

/* Keeps the check copies of the file's bytes [@at, @at + @len) (@buf), just taken. */
static void note_taken(struct perfmap *m, const char *buf, size_t len, uint64_t at)
{
	uint64_t end = at + len, keep, before;

	if (!len)
		return;
	if (at < CHECK_HEAD)
		memcpy(m->head + at, buf, min_u64(end, CHECK_HEAD) - at);
	for (int k = 0; k < CHECK_NWIN; k++) {
		uint64_t p = win_pos(k), lo, hi;

		if (p >= end || p + CHECK_WIN <= at)
			continue;
		lo = p > at ? p : at;
		hi = min_u64(p + CHECK_WIN, end);
		memcpy(m->win[k] + (lo - p), buf + (lo - at), hi - lo);
	}
	/* tail[] held the min(at, CHECK_TAIL) bytes before @at; now those before @end. */
	if (len >= CHECK_TAIL) {
		memcpy(m->tail, buf + len - CHECK_TAIL, CHECK_TAIL);
		return;
	}
	before = min_u64(at, CHECK_TAIL);
	keep = min_u64(at, CHECK_TAIL - len);
	memmove(m->tail, m->tail + (before - keep), keep);
	memcpy(m->tail + keep, buf, len);
}

/* 1 when the file holds @want (@len bytes) at @at, 0 when not (or shorter), -EIO. */
static int holds(int fd, const char *want, uint64_t len, uint64_t at)
{
	char buf[CHECK_HEAD > CHECK_TAIL ? CHECK_HEAD : CHECK_TAIL];
	uint64_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(at + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -EIO;
		if (!n)
			return 0;
		got += (uint64_t)n;
	}
	return !memcmp(buf, want, len);
}

/* 1 when the bytes taken so far are still the file's where copies were kept, 0, -EIO. */
static int unchanged(const struct perfmap *m, int fd)
{
	uint64_t off = m->offset, n = min_u64(off, CHECK_HEAD);
	int ok = holds(fd, m->head, n, 0);

	if (ok == 1) {
		n = min_u64(off, CHECK_TAIL);
		ok = holds(fd, m->tail, n, off - n);
	}
	for (int k = 0; ok == 1 && k < CHECK_NWIN && win_pos(k) + CHECK_WIN <= off; k++)
		ok = holds(fd, m->win[k], CHECK_WIN, win_pos(k));
	return ok;
}

struct perfmap *perfmap__new(uint32_t max_entries, uint64_t max_bytes, uint64_t max_file_bytes)
{
	struct perfmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->tab = jittab__new(max_entries, max_bytes);
	if (!m->tab) {
		free(m);
		return NULL;
	}
	m->max_file_bytes = max_file_bytes;
	return m;
}

void perfmap__free(struct perfmap *m)
{
	if (!m)
		return;
	jittab__free(m->tab);
	free(m);
}

/* A hexadecimal number (optional 0x) ending at a space: its end, or NULL. */
static const char *hex(const char *p, const char *end, uint64_t *v)
{
	const char *start;

	*v = 0;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	start = p;
	for (; p < end && *p != ' '; p++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
						 : -1;

		if (d < 0 || *v >> 60)
			return NULL;
		*v = *v << 4 | (uint64_t)d;
	}
	return p > start && p < end ? p : NULL;
}

/* One line without its newline. 0, -EINVAL (bad: counted by the caller), -E2BIG, -ENOMEM. */
static int take_line(struct perfmap *m, const char *p, const char *end)
{
	uint64_t start, size;

	if (end > p && end[-1] == '\r')
		end--;
	p = hex(p, end, &start);
	if (!p)
		return -EINVAL;
	p = hex(p + 1, end, &size);
	if (!p || p + 1 >= end)
		return -EINVAL;
	return jittab__add(m->tab, start, size, p + 1, end - (p + 1), NULL, 0);
}

/* Takes the complete lines of @buf; *@consumed bytes up to the last newline. */
static int take_lines(struct perfmap *m, const char *buf, size_t len, size_t *consumed)
{
	const char *p = buf, *end = buf + len, *nl;
	int err;

	*consumed = 0;
	while (p < end && (nl = memchr(p, '\n', end - p))) {
		if (m->skipping) {
			m->skipping = false; /* the end of an overlong line */
		} else if (nl - p > PERFMAP_MAX_LINE) {
			m->st.bad_lines++;
		} else {
			err = take_line(m, p, nl);
			if (err == -EINVAL || err == -ENOENT) {
				m->st.bad_lines++;
			} else if (err) {
				if (err == -E2BIG)
					m->full = true;
				return err;
			} else {
				m->st.lines++;
			}
		}
		p = nl + 1;
		*consumed = p - buf;
	}
	/* No newline in a line's worth of bytes: skip it. */
	if (end - p > PERFMAP_MAX_LINE) {
		if (!m->skipping)
			m->st.bad_lines++;
		m->skipping = true;
		*consumed = len;
	}
	return 0;
}

static int commit(struct perfmap *m)
{
	int err = jittab__commit(m->tab);

	if (err == -E2BIG)
		m->full = true;
	return err;
}

int perfmap__feed(struct perfmap *m, const char *buf, size_t len, size_t *consumed)
{
	int err;

	if (m->full)
		return -E2BIG;
	err = take_lines(m, buf, len, consumed);
	note_taken(m, buf, *consumed, m->offset);
	m->offset += *consumed;
	m->st.bytes += *consumed;
	if (err && err != -E2BIG)
		return err;
	return commit(m) ?: err;
}

/*
 * When the file @st describes was last written, as CLOCK_BOOTTIME: its change time, which file
 * systems take from a coarse clock up to a tick behind the write (PERFMAP_MTIME_SLACK_NS
 * covers it), converted from CLOCK_REALTIME now.
 */
static uint64_t written_by(const struct stat *st)
{
	struct timespec real;
	uint64_t boot = util__boot_ns(), real_ns, mtime;

	clock_gettime(CLOCK_REALTIME, &real);
	real_ns = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
	mtime = (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec;
	if (mtime > real_ns || real_ns - mtime > boot)
		return boot; /* a time in the future or before boot: not a clue */
	return boot - (real_ns - mtime) + PERFMAP_MTIME_SLACK_NS;
}

int perfmap__update(struct perfmap *m, int fd, const struct stat *st)
{
	struct stat after;
	char *buf;
	size_t consumed;
	ssize_t n;
	int err = 0, same = 0;

	if (m->dev == st->st_dev && m->ino == st->st_ino && (uint64_t)st->st_size >= m->offset) {
		same = m->offset ? unchanged(m, fd) : 1;
		if (same < 0)
			return -EIO; /* what was read is kept; tried again next time */
	}
	if (m->restart)
		same = 0;
	m->restart = false;
	if (!same) {
		if (m->offset || m->ino)
			m->st.resets++;
		/*
		 * Rewritten (HotSpot's jcmd Compiler.perfmap) or replaced: what it says now
		 * replaces all that was held at the commit below, so that the ranges it announces
		 * again keep their time and those it changes are proven only from now on
		 * (jittab.h). A table that cannot stage that is forgotten instead (its ranges then
		 * all count from now).
		 */
		if (m->full || jittab__remove(m->tab, 0, UINT64_MAX))
			jittab__clear(m->tab);
		m->offset = 0;
		m->skipping = false;
		m->full = false;
		m->dev = st->st_dev;
		m->ino = st->st_ino;
	}
	if (m->full)
		return -E2BIG;
	buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (m->offset >= m->max_file_bytes) {
			m->full = true;
			err = -E2BIG;
			break;
		}
		n = pread(fd, buf, CHUNK, (off_t)m->offset);
		if (n < 0) {
			err = errno == EINTR ? 0 : -EIO;
			if (!err)
				continue;
			break;
		}
		if (!n)
			break;
		err = take_lines(m, buf, (size_t)n, &consumed);
		note_taken(m, buf, consumed, m->offset);
		m->offset += consumed;
		m->st.bytes += consumed;
		if (err || !consumed)
			break; /* a partial last line: read again next time */
	}
	free(buf);
	if (err && err != -E2BIG && err != -EIO)
		return err;
	/*
	 * What was read was written by the file's last change, as it is after the read (@st was
	 * taken before it; a line written meanwhile may be among those read). Unknown: now.
	 */
	jittab__written_by(m->tab, fstat(fd, &after) ? util__boot_ns() : written_by(&after));
	return commit(m) ?: err;
}

void perfmap__forget(struct perfmap *m)
{
	m->restart = true;
}

int perfmap__lookup(const struct perfmap *m, uint64_t addr, struct jittab_sym *out)
{
	if (m->full)
		return -E2BIG;
	return jittab__lookup(m->tab, addr, out);
}

uint64_t perfmap__offset(const struct perfmap *m)
{
	return m->offset;
}

const struct perfmap_stats *perfmap__stats(const struct perfmap *m)
{
	return &m->st;
}

const struct jittab *perfmap__table(const struct perfmap *m)
{
	return m->tab;
}
