/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/checks.h"
#include "record/record_util.h"
#include "sampling/caps.h"

int record__check_privileges(void)
{
	char msg[256];
	int err = caps__check(msg, sizeof(msg));

	if (err == -EPERM)
		return record__fail("%s", msg);
	if (err)
		return record__fail("cannot read this process's capabilities: %s", strerror(-err));
	return 0;
}

int record__check_btf(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 0;
	return record__fail("this kernel exposes no BTF (/sys/kernel/btf/vmlinux is missing): "
			    "spanprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
}

int record__check_output_dir(const char *dir, int *created)
{
	char path[PATH_MAX];
	int fd;

	*created = 0;
	/* Parents are made as `mkdir -p` would; only the last one is removed on failure. */
	snprintf(path, sizeof(path), "%s", dir);
	for (char *c = path + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return record__fail("cannot create output directory %s: %s", path,
					    strerror(errno));
		*c = '/';
	}
	if (mkdir(dir, 0755) == 0)
		*created = 1;
	else if (errno != EEXIST)
		return record__fail("cannot create output directory %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/.spanprof-write-test-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		int err = errno;

		if (*created)
			rmdir(dir);
		return record__fail("output directory %s is not writable: %s (choose another with "
				    "--output-dir)",
				    dir, strerror(err));
	}
	close(fd);
	unlink(path);
	return 0;
}

int record__check_stats_json(const char *path)
{
	const char *slash = strrchr(path, '/');
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%.*s.spanprof-write-test-XXXXXX",
		     slash ? (int)(slash - path + 1) : 0, path) >= (int)sizeof(tmp))
		return record__fail("--stats-json %s: path too long", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return record__fail(
		    "--stats-json %s: its directory does not take files: %s (choose another "
		    "path)",
		    path, strerror(errno));
	close(fd);
	unlink(tmp);
	return 0;
}
