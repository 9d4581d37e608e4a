// SPDX-License-Identifier: Apache-2.0
/*
 * Benchmark of the CFI table builder (exporter/unwind/cfi.c): for each ELF file given
 * (bench/unwind/unwind.mk passes the largest shared library under /usr/lib and libc), builds the
 * unwind table and times `readelf --debug-dump=frames` on the same file in the same run, then
 * prints rows, table bytes, build time and the ratio readelf / build.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unwind/cfi.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int i, err, rc = 0;

	printf("%-48s %10s %12s %10s %10s %10s %8s\n", "file", "fdes", "rows", "bytes", "build_s",
	       "readelf_s", "ratio");
	for (i = 1; i < argc; i++) {
		struct cfi_table *t = NULL;
		const struct cfi_stats *st;
		char cmd[4096];
		double t0, t1, t2;

		t0 = now_s();
		err = cfi__build(argv[i], NULL, &t);
		t1 = now_s();
		if (err) {
			fprintf(stderr, "unwind_tables: %s: %s\n", argv[i], strerror(-err));
			rc = 1;
			continue;
		}
		snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames '%s' >/dev/null 2>&1",
			 argv[i]);
		t2 = now_s();
		if (system(cmd) < 0)
			fprintf(stderr, "unwind_tables: cannot run readelf\n");
		t2 = now_s() - t2;
		st = cfi_table__stats(t);
		printf("%-48s %10llu %12u %10zu %10.3f %10.3f %7.1fx\n", argv[i],
		       (unsigned long long)st->fdes, cfi_table__count(t), cfi_table__bytes(t),
		       t1 - t0, t2, t2 / (t1 - t0));
		printf("    skipped: bad_cie %llu bad_fde %llu overlap %llu outside_text %llu "
		       "truncated %llu; unsupported rows %llu, plt rows %llu, signal fdes %llu\n",
		       (unsigned long long)st->skipped_bad_cie,
		       (unsigned long long)st->skipped_bad_fde,
		       (unsigned long long)st->skipped_overlap,
		       (unsigned long long)st->skipped_outside_text,
		       (unsigned long long)st->truncated, (unsigned long long)st->unsupported_rows,
		       (unsigned long long)st->plt_rows, (unsigned long long)st->signal_fdes);
		cfi_table__free(t);
	}
	return rc;
}
