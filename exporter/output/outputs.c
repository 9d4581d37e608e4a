/* SPDX-License-Identifier: Apache-2.0 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "output/flamegraph.h"
#include "output/folded.h"
#include "output/otlpfile.h"
#include "output/outputs.h"
#include "output/pprof.h"

/* Notes one file: its name is added to @names, or its failure is printed. 0 or 1 (failed). */
static int written(int err, const char *path, char *names, size_t size, size_t *len)
{
	if (err) {
		fprintf(stderr, "spanprof: writing %s failed: %s\n", path, strerror(-err));
		return 1;
	}
	if (*len < size)
		*len += snprintf(names + *len, size - *len, "%s%s", *len ? ", " : "", path);
	return 0;
}

int outputs__write_dir(const struct profile *p, const char *dir, uint32_t types)
{
	char path[PATH_MAX], names[1024] = "";
	size_t len = 0;
	int failed = 0, err;

	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const struct profile_type_info *ti = profile__type_info(t);

		if (!(types & (1u << t)))
			continue;
		snprintf(path, sizeof(path), "%s/%s.pb.gz", dir, ti->file_stem);
		failed |= written(pprof__write_type(p, path, t), path, names, sizeof(names), &len);
		snprintf(path, sizeof(path), "%s/%s.folded", dir, ti->file_stem);
		failed |= written(folded__write_type(p, path, t), path, names, sizeof(names), &len);
		if (t == PROFILE_CPU)
			snprintf(path, sizeof(path), "%s/flamegraph.svg", dir);
		else
			snprintf(path, sizeof(path), "%s/flamegraph-%s.svg", dir, ti->name);
		failed |= written(flamegraph__write_svg_type(p, path, ti->title, t), path, names,
				  sizeof(names), &len);
	}
	/* The samples with their times and frame types, for `spanprof view` (otlpfile.h). */
	snprintf(path, sizeof(path), "%s/%s", dir, OTLPFILE_NAME);
	err = otlpfile__write(p, path);
	if (err <= 0)
		failed |= written(err, path, names, sizeof(names), &len);
	if (len)
		fprintf(stderr, "spanprof: wrote %s\n", names);
	return failed;
}
