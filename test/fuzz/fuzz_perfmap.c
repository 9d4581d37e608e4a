// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: perf-map text (/tmp/perf-PID.map, written by the profiled program) through
 * perfmap__feed() (exporter/runtime/jit), in two pieces split where the first byte says (a
 * map read while it grows), then lookups. Every answer must hold the address asked, with a
 * non-empty name; the table stays within its caps.
 */
#include <string.h>

#include "fuzz.h"
#include "runtime/jit/perfmap.h"

#define MAX_ENTRIES 256
#define MAX_ADDRS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void lookup(const struct perfmap *m, uint64_t addr)
{
	struct jittab_sym s;
	int err = perfmap__lookup(m, addr, &s);

	if (err) {
		FUZZ_CHECK(err == -ENOENT || err == -E2BIG);
		return;
	}
	FUZZ_CHECK(s.start <= addr && addr < s.end);
	FUZZ_CHECK(s.name && s.name[0] && strlen(s.name) <= PERFMAP_MAX_LINE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *m = perfmap__new(MAX_ENTRIES, 1 << 16, 1 << 20);
	size_t split = size ? data[0] % (size + 1) : 0, consumed, off;
	const char *text = (const char *)data;
	const uint8_t *p, *end = data + size;
	int n = 0;

	FUZZ_CHECK(m);
	perfmap__feed(m, text, split, &consumed);
	off = consumed;
	perfmap__feed(m, text + off, size - off, &consumed);
	FUZZ_CHECK(jittab__count(perfmap__table(m)) <= MAX_ENTRIES);
	lookup(m, 0);
	lookup(m, UINT64_MAX);
	/* The start of each line (hex) and one byte on either side. */
	for (p = data; p < end && n < MAX_ADDRS; n++) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		char num[17] = {0};
		uint64_t addr;
		size_t len = 0;

		while (len < 16 && p + len < (nl ? nl : end) &&
		       strchr("0123456789abcdef", p[len]) && p[len])
			num[len] = (char)p[len], len++;
		addr = strtoull(num, NULL, 16);
		lookup(m, addr - 1);
		lookup(m, addr);
		lookup(m, addr + 1);
		if (!nl)
			break;
		p = nl + 1;
	}
	perfmap__free(m);
	return 0;
}
