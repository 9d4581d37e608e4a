// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>

#include "runtime/python/pylines.h"

/* 3.8-3.9 co_lnotab (Objects/lnotab_notes.txt of those versions). */
static int64_t lnotab(const uint8_t *t, size_t len, int64_t line, int64_t offset)
{
	int64_t addr = 0;
	size_t i;

	if (len % 2)
		return -EINVAL;
	for (i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > offset)
			break;
		line += (int8_t)t[i + 1];
	}
	return line;
}

/* 3.10 co_linetable (PEP 626): ranges {u8 length, s8 line delta}, -128 = no line. */
static int64_t pep626(const uint8_t *t, size_t len, int64_t line, int64_t offset)
{
	int64_t start, end = 0;
	bool has_line;
	size_t i;

	if (len % 2)
		return -EINVAL;
	for (i = 0; i + 1 < len; i += 2) {
		start = end;
		end += t[i];
		has_line = (int8_t)t[i + 1] != -128;
		if (has_line)
			line += (int8_t)t[i + 1];
		if (start <= offset && offset < end)
			return has_line ? line : -ENOENT;
	}
	return -ENOENT;
}

/* Reads a PEP 657 varint at *@i; false when the table ends inside it. */
static bool varint(const uint8_t *t, size_t len, size_t *i, uint64_t *v)
{
	unsigned int shift = 0;
	uint8_t b;

	*v = 0;
	do {
		if (*i >= len || shift > 54) /* at most 60 bits: sums stay far from overflow */
			return false;
		b = t[(*i)++];
		*v |= (uint64_t)(b & 0x3f) << shift;
		shift += 6;
	} while (b & 0x40);
	return true;
}

static bool svarint(const uint8_t *t, size_t len, size_t *i, int64_t *v)
{
	uint64_t u;

	if (!varint(t, len, i, &u))
		return false;
	*v = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

/* 3.11+ location table (PEP 657, Objects/locations.md); addresses in 2-byte code units. */
static int64_t pep657(const uint8_t *t, size_t len, int64_t line, int64_t offset)
{
	int64_t unit = offset / 2, start, end = 0, delta;
	uint64_t skip;
	unsigned int code;
	bool has_line;
	size_t i = 0;

	while (i < len) {
		if (!(t[i] & 0x80))
			return -EINVAL; /* not at the start of an entry */
		code = (t[i] >> 3) & 0xf;
		start = end;
		end += (t[i] & 7) + 1;
		i++;
		has_line = true;
		delta = 0;
		if (code == 15) {
			has_line = false;
		} else if (code == 14) {
			if (!svarint(t, len, &i, &delta) || !varint(t, len, &i, &skip) ||
			    !varint(t, len, &i, &skip) || !varint(t, len, &i, &skip))
				return -EINVAL;
		} else if (code == 13) {
			if (!svarint(t, len, &i, &delta))
				return -EINVAL;
		} else if (code >= 10) {
			delta = code - 10;
			i += 2;
		} else {
			i += 1;
		}
		if (i > len)
			return -EINVAL;
		if (has_line)
			line += delta; /* |delta| < 2^60, |line| <= 2^40 */
		if (line < -(1ll << 40) || line > (1ll << 40))
			return -EINVAL;
		if (start <= unit && unit < end) {
			return has_line ? line : -ENOENT;
		}
	}
	return -ENOENT;
}

int pylines__addr2line(enum pylines_format format, const uint8_t *table, size_t len,
		       int firstlineno, int64_t offset)
{
	int64_t line;

	if (firstlineno < 0)
		return -EINVAL; /* CPython's first lines are >= 0: garbage */
	if (offset < 0)
		return firstlineno;
	switch (format) {
	case PYLINES_LNOTAB:
		line = lnotab(table, len, firstlineno, offset);
		break;
	case PYLINES_PEP626:
		line = pep626(table, len, firstlineno, offset);
		break;
	case PYLINES_PEP657:
		line = pep657(table, len, firstlineno, offset);
		break;
	default:
		return -EINVAL;
	}
	if (line == -ENOENT || line == -EINVAL)
		return (int)line;
	/* A line the deltas drove below 0 or past int: garbage. */
	return line < 0 || line > INT32_MAX ? -EINVAL : (int)line;
}
