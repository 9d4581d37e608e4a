/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/jit/perfmap.h"

/* Bytes read per pread(2). */
#define CHUNK (64 * 1024)

struct perfmap {
	struct jittab *tab;
	uint64_t offset; /* bytes consumed: complete lines */
	dev_t dev;
	ino_t ino;
	uint64_t max_file_bytes;
	bool skipping; /* inside a line longer than PERFMAP_MAX_LINE */
	bool full;
	struct perfmap_stats st;
};

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
	m->offset += *consumed;
	m->st.bytes += *consumed;
	if (err && err != -E2BIG)
		return err;
	return commit(m) ?: err;
}

int perfmap__update(struct perfmap *m, int fd, const struct stat *st)
{
	char *buf;
	size_t consumed;
	ssize_t n;
	int err = 0;

	if (m->dev != st->st_dev || m->ino != st->st_ino || (uint64_t)st->st_size < m->offset) {
		if (m->offset || m->ino)
			m->st.resets++;
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
		m->offset += consumed;
		m->st.bytes += consumed;
		if (err || !consumed)
			break; /* a partial last line: read again next time */
	}
	free(buf);
	if (err && err != -E2BIG && err != -EIO)
		return err;
	return commit(m) ?: err;
}

void perfmap__forget(struct perfmap *m)
{
	jittab__clear(m->tab);
	m->offset = 0;
	m->skipping = false;
	m->full = false;
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
