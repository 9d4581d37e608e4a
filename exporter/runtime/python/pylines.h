/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pylines: the source line a CPython code object was executing, from its line table and an
 * instruction offset. Pure functions over bytes copied out of the process: no I/O, no state.
 *
 * Formats (CPython's own description of each is Objects/lnotab_notes.txt, 3.8-3.10, and
 * Objects/locations.md, 3.11+):
 *  - PYLINES_LNOTAB (3.8-3.9, co_lnotab): pairs {u8 address increment in bytes, s8 line
 *    increment} from (0, co_firstlineno); the line of an offset is the one reached before the
 *    first address past it (PyCode_Addr2Line of those versions).
 *  - PYLINES_PEP626 (3.10, co_linetable): pairs {u8 length in bytes, s8 line delta}, each an
 *    address range; a line delta of -128 marks a range with no line; empty ranges are skipped.
 *  - PYLINES_PEP657 (3.11+, co_linetable location table): entries whose first byte has bit 7
 *    set, bits 3-6 a code and bits 0-2 the length in code units (2 bytes) minus one. Codes 0-9
 *    (short form) and 10-12 (one-line forms, line delta code - 10) carry column bytes; 13 a
 *    signed varint line delta; 14 (long form) a signed varint line delta and three varints
 *    (end line, columns); 15 no location. Varints are 6-bit little-endian chunks, bit 6 set on
 *    all but the last; a signed varint stores the magnitude shifted left once, bit 0 the sign.
 */
#ifndef SPANPROF_RUNTIME_PYTHON_PYLINES_H
#define SPANPROF_RUNTIME_PYTHON_PYLINES_H

#include <stddef.h>
#include <stdint.h>

enum pylines_format {
	PYLINES_NONE = 0,
	PYLINES_LNOTAB, /* 3.8-3.9 */
	PYLINES_PEP626, /* 3.10 */
	PYLINES_PEP657, /* 3.11+ */
};

/*
 * The line executing at byte offset @offset of the bytecode (the instruction's offset from the
 * first code unit; a negative offset, "before the first instruction", answers @firstlineno as
 * CPython does) of a code object whose first line is @firstlineno and whose line table (the
 * bytes of co_lnotab / co_linetable) is @table, @len bytes.
 * Returns the line (>= 0), -ENOENT when the table says that instruction has no line (CPython's
 * None / -1) or the offset is past the table, -EINVAL for an unknown format, a negative
 * @firstlineno, a table that ends inside an entry or whose deltas lead below line 0 or past
 * INT32_MAX (garbage: never reads past @len).
 */
int pylines__addr2line(enum pylines_format format, const uint8_t *table, size_t len,
		       int firstlineno, int64_t offset);

#endif /* SPANPROF_RUNTIME_PYTHON_PYLINES_H */
