// SPDX-License-Identifier: Apache-2.0
/*
 * otlpfile: the OTLP encoder's requests, length-prefixed, through zlib into PATH.tmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "otlp/otlp_encode.h"
#include "output/otlpfile.h"

struct sink {
	gzFile gz;
	uint64_t nreq;
};

static int put(gzFile gz, const void *buf, size_t len)
{
	/* Requests are at most OTLP_DEFAULT_MAX_REQUEST bytes: one gzwrite each. */
	return gzwrite(gz, buf, (unsigned)len) == (int)len ? 0 : -EIO;
}

static int emit(void *ctx, const uint8_t *buf, size_t len, uint64_t samples)
{
	struct sink *s = ctx;
	uint8_t be[4] = {len >> 24, len >> 16, len >> 8, len};

	(void)samples;
	s->nreq++;
	return put(s->gz, be, sizeof(be)) ?: put(s->gz, buf, len);
}

int otlpfile__write(const struct profile *p, const char *path)
{
	struct otlp_encode_opts eo = {.host_name = "", .no_file_hash = 1};
	struct sink s = {0};
	char *tmp = NULL;
	int fd = -1, err = 0, zret;

	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	s.gz = gzdopen(fd, "wb");
	if (!s.gz) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = -1; /* gzclose closes it */
	gzbuffer(s.gz, 64 * 1024);
	err = otlp__encode(p, &eo, emit, &s);
	zret = gzclose(s.gz);
	s.gz = NULL;
	if (!err && zret != Z_OK)
		err = zret == Z_ERRNO ? -errno : -EIO;
	if (!err && !s.nreq)
		err = 1; /* no sample: no file */
	if (!err && rename(tmp, path))
		err = -errno;

cleanup:
	if (s.gz)
		gzclose(s.gz);
	if (fd >= 0)
		close(fd);
	if (err && tmp)
		unlink(tmp);
	free(tmp);
	return err;
}
