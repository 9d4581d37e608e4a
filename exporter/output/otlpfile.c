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
#include "output/pprof.h"

struct sink {
	gzFile gz;
	uint64_t nreq;
};

static int put(gzFile gz, const void *buf, size_t len)
{
	/* Requests are at most OTLP_DEFAULT_MAX_REQUEST bytes: one gzwrite each. */
	return gzwrite(gz, buf, (unsigned)len) == (int)len ? 0 : -EIO;
}

static int emit(void *ctx, const uint8_t *buf, size_t len, uint64_t samples, uint32_t type)
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
	struct gz_out out;
	int err = gz_out__open(&out, path);

	if (err)
		return err;
	s.gz = out.gz;
	err = otlp__encode(p, &eo, emit, &s);
	if (!err && !s.nreq)
		err = 1; /* no sample: no file */
	return gz_out__close(&out, path, err);
}
