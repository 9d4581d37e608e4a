// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: what exporter/runtime/python/ reads from a CPython process's memory and trusts
 * no further than its checks. The first byte picks the parser:
 *  0: a line table: byte 1 the format (enum pylines_format, any value), bytes 2-5 co_firstlineno,
 *     6-9 the byte offset asked, the rest the table (pylines__addr2line()): the answer is a line
 *     >= 0 or -ENOENT / -EINVAL, and never read past the table (ASan: an exact-size copy);
 *  1: _Py_DebugOffsets (pylayout__from_debug_offsets()): accepted layouts keep every field
 *     inside the read sizes the reader uses;
 *  2: a sample's frames (pymerge__stack()): byte 1 py_stop, byte 2 native cut, then one byte per
 *     frame: bit 7 set a Python frame (bit 0: PY_FRAME_ENTRY), else a native one (bit 0: loop);
 *     every item placed names a frame given, each at most once, in order.
 */
#include <string.h>

#include "fuzz.h"
#include "runtime/python/pylayout.h"
#include "runtime/python/pylines.h"
#include "runtime/python/pymerge.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void lines(const uint8_t *data, size_t size)
{
	int32_t first, off;
	uint8_t *table;
	int line;

	if (size < 10)
		return;
	memcpy(&first, data + 2, 4);
	memcpy(&off, data + 6, 4);
	table = malloc(size - 10 ? size - 10 : 1);
	if (!table)
		return;
	memcpy(table, data + 10, size - 10);
	line = pylines__addr2line(data[1], table, size - 10, first, off);
	FUZZ_CHECK(line >= 0 || line == -ENOENT || line == -EINVAL);
	if (off < 0)
		FUZZ_CHECK(line == first || line == -EINVAL);
	free(table);
}

static void debug_offsets(const uint8_t *data, size_t size)
{
	struct pylayout l;
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return;
	memcpy(copy, data, size);
	if (!pylayout__from_debug_offsets(copy, size, &l)) {
		FUZZ_CHECK(l.major == 3 && l.minor == 13);
		FUZZ_CHECK(l.tstate_read <= (1u << 20) + 8 && l.frame_read <= (1u << 20) + 8);
		FUZZ_CHECK(l.code_read <= (1u << 20) + 8);
		FUZZ_CHECK(l.unicode_ascii_size >= 32 && l.unicode_ascii_size <= 256);
		FUZZ_CHECK(l.lines == PYLINES_PEP657);
	}
	free(copy);
}

static void merge(const uint8_t *data, size_t size)
{
	bool is_loop[256];
	struct py_frame py[256];
	struct pymerge_item out[513];
	size_t nn = 0, np = 0, i, next_n = 0, next_p = 0;
	int n;

	if (size < 3)
		return;
	memset(py, 0, sizeof(py));
	for (i = 3; i < size && nn < 256 && np < 256; i++) {
		if (data[i] & 0x80)
			py[np++].flags = data[i] & 1 ? PY_FRAME_ENTRY : 0;
		else
			is_loop[nn++] = data[i] & 1;
	}
	n = pymerge__stack(is_loop, nn, py, np, data[1], data[2] & 1, out, nn + np + 1);
	FUZZ_CHECK(n >= 0 && (size_t)n <= nn + np + 1);
	for (i = 0; i < (size_t)n; i++) {
		if (out[i].kind == PYMERGE_NATIVE) {
			FUZZ_CHECK(out[i].index >= next_n && out[i].index < nn);
			next_n = out[i].index + 1;
		} else if (out[i].kind == PYMERGE_PYTHON) {
			FUZZ_CHECK(out[i].index == next_p && out[i].index < np);
			next_p++;
		} else {
			FUZZ_CHECK(out[i].kind == PYMERGE_MARKER);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		lines(data, size);
		break;
	case 1:
		debug_offsets(data + 1, size - 1);
		break;
	default:
		merge(data, size);
	}
	return 0;
}
