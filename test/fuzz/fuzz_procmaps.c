// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: /proc/PID/maps text through procmaps__parse() (exporter/process/procmaps.c), read
 * from a memory stream. A successful parse must keep what procmaps.h says: mappings sorted by
 * start, non-overlapping, start <= end, each path a string without the " (deleted)" suffix it came
 * with, and procmaps__find() answering each non-empty mapping for its first and last byte.
 */
#include <string.h>
#include <sys/mman.h>

#include "fuzz.h"
#include "spans/procctx.h"
#include "process/procmaps.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void check_maps(const struct procmaps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		const struct procmap *p = &m->maps[i];

		FUZZ_CHECK(p->start <= p->end && p->path);
		FUZZ_CHECK(!(p->prot & ~(uint32_t)(PROT_READ | PROT_WRITE | PROT_EXEC)));
		if (p->deleted)
			FUZZ_CHECK(p->inode != 0);
		if (i)
			FUZZ_CHECK(p->start >= m->maps[i - 1].end);
		/* The mapping-name test runs on every path the agent reads. */
		procctx__is_mapping_name(p->path);
		if (p->start < p->end) {
			FUZZ_CHECK(procmaps__find(m, p->start) == p);
			FUZZ_CHECK(procmaps__find(m, p->end - 1) == p);
		}
	}
	if (m->n && m->maps[0].start > 0)
		FUZZ_CHECK(procmaps__find(m, m->maps[0].start - 1) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmaps m = {0};
	FILE *f;
	int err;

	/* fmemopen() wants a buffer of at least one byte. */
	f = fmemopen(size ? (void *)data : (void *)"", size ? size : 1, "r");
	if (!f)
		return 0;
	err = procmaps__parse(f, &m);
	fclose(f);
	FUZZ_CHECK(err <= 0);
	if (!err)
		check_maps(&m);
	/* On -EINVAL the lines before the bad one are kept: the caller still frees them. */
	procmaps__clear(&m);
	FUZZ_CHECK(m.maps == NULL && m.n == 0);
	return 0;
}
