// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: /proc/kallsyms text through ksyms__load() (exporter/symbols/ksyms.c), which wants a
 * path: the input is served from a memfd as /proc/self/fd/N. A table that loads must answer lookups
 * of the addresses its own lines give, and of the extremes, with live strings.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "symbols/symbolize.h"

#define MAX_ADDRS 64

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fd = fuzz_memfd("fuzz-ksyms");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return 0;
}

static void lookup(const struct ksyms *k, uint64_t addr)
{
	const char *name, *module = NULL;
	uint64_t off = UINT64_MAX;

	name = ksyms__lookup_module(k, addr, &off, &module);
	if (!name)
		return;
	FUZZ_CHECK(strlen(name) > 0 && off <= addr);
	if (module)
		FUZZ_CHECK(strlen(module) < SIZE_MAX);
	FUZZ_CHECK(ksyms__lookup(k, addr, NULL) == name);
}

/* The hex number at the start of the line [@p, @end), or false when there is none. */
static bool line_addr(const uint8_t *p, const uint8_t *end, uint64_t *addr)
{
	char num[17];
	size_t len;

	for (len = 0;
	     len < 16 && p + len < end && p[len] && strchr("0123456789abcdefABCDEF", p[len]); len++)
		num[len] = (char)p[len];
	num[len] = 0;
	*addr = strtoull(num, NULL, 16);
	return len > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size, *nl;
	struct ksyms *k;
	uint64_t addr;
	size_t n = 0;

	if (fd < 0)
		LLVMFuzzerInitialize(NULL, NULL);
	fuzz_fd_set(fd, data, size);
	k = ksyms__load(path);
	if (!k) {
		FUZZ_CHECK(errno > 0);
		return 0;
	}
	lookup(k, 0);
	lookup(k, UINT64_MAX);
	/* The address at the start of each line, and one byte on either side. */
	for (; p < end && n < MAX_ADDRS; p = nl + 1, n++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (!line_addr(p, nl, &addr))
			continue;
		lookup(k, addr - 1);
		lookup(k, addr);
		lookup(k, addr + 1);
	}
	ksyms__free(k);
	return 0;
}
