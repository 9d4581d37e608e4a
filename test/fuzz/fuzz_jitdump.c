// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: a jitdump file (jit-PID.dump, written by the profiled program) through
 * jitdump__update() (exporter/runtime/jit), served from a memfd: first cut where the
 * input's first bytes say (a file still being written), then whole. Every lookup answer must
 * hold the address asked, with a non-empty name; the table stays within its caps.
 */
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "runtime/jit/jitdump.h"

#define MAX_ENTRIES 256

static int fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fd = fuzz_memfd("fuzz-jitdump");
	return 0;
}

static void lookup(const struct jitdump *d, uint64_t addr)
{
	struct jittab_sym s;
	int err = jitdump__lookup(d, addr, &s);

	if (err) {
		FUZZ_CHECK(err == -ENOENT || err == -E2BIG);
		return;
	}
	FUZZ_CHECK(s.start <= addr && addr < s.end);
	FUZZ_CHECK(s.name && s.name[0]);
	if (s.file)
		FUZZ_CHECK(strlen(s.file) < (1u << 20));
}

static void update(struct jitdump *d, const uint8_t *data, size_t size)
{
	struct stat st;
	int err;

	fuzz_fd_set(fd, data, size);
	FUZZ_CHECK(!fstat(fd, &st));
	err = jitdump__update(d, fd, &st);
	FUZZ_CHECK(!err || err == -EBADMSG || err == -E2BIG || err == -ENOMEM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jitdump *d = jitdump__new(MAX_ENTRIES, 1 << 16, 1 << 20);
	size_t cut = size >= 2 ? ((size_t)data[0] << 8 | data[1]) % (size + 1) : 0;

	if (fd < 0)
		LLVMFuzzerInitialize(NULL, NULL);
	FUZZ_CHECK(d);
	update(d, data, cut);
	update(d, data, size);
	FUZZ_CHECK(jittab__count(jitdump__table(d)) <= MAX_ENTRIES);
	/* Every code address a record could name: each 8-byte-aligned word of the input. */
	for (size_t i = 0; i + 8 <= size && i < 4096; i += 8) {
		uint64_t addr;

		memcpy(&addr, data + i, 8);
		lookup(d, addr);
		lookup(d, addr + 1);
	}
	lookup(d, 0);
	lookup(d, UINT64_MAX);
	jitdump__free(d);
	return 0;
}
