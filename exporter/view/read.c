// SPDX-License-Identifier: Apache-2.0
/*
 * view_read: the inputs of `spanprof view`. Detects a file's format from its content and
 * merges its samples into a view_doc:
 *  - OTLP profiles v1development (opentelemetry-proto profiles/v1development/profiles.proto):
 *    one binary ExportProfilesServiceRequest or ProfilesData (same layout), the Collector file
 *    exporter's `format: proto` (4-byte big-endian length + ProfilesData, repeated), and its
 *    default OTLP/JSON (one ProfilesData per line; lowerCamelCase or snake_case keys, 64-bit
 *    integers as numbers or strings, trace/span/profile ids in hex as pdata writes them,
 *    base64 accepted too);
 *  - pprof (github.com/google/pprof proto/profile.proto), as exporter/output/pprof.c writes it;
 *  - any of those gzip- or zlib-compressed.
 *
 * A message is checked whole (every index in range) before any of it is merged, so a damaged
 * message adds nothing; in a stream or JSON lines file the messages before it are kept.
 *
 * OTLP traces (trace/v1/trace.proto TracesData, one message, the file exporter's stream or
 * OTLP/JSON lines) are read too: they add no samples, they name the spans (read_traces.h).
 *
 * This file detects the format, decompresses, and reads files and directories; the readers of
 * each format are read_otlp.c, read_json.c, read_pprof.c and read_traces.c, what they share
 * read_common.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "output/otlpfile.h"
#include "profile/profile.h"
#include "view/doc.h"
#include "view/read.h"
#include "view/read_common.h"
#include "view/read_json.h"
#include "view/read_otlp.h"
#include "view/read_pprof.h"
#include "view/read_traces.h"

/* Decompressed inputs larger than this are refused (a zip bomb, or not a profile). */
#define MAX_INFLATED (4ull << 30)

/* --- detection ---------------------------------------------------------------------------- */

static int inflate_all(struct rd *r, const uint8_t *p, size_t n, uint8_t **out, size_t *outn)
{
	z_stream zs = {0};
	size_t cap = n * 4 + 4096, len = 0;
	uint8_t *buf = malloc(cap);
	int zr = Z_OK, err = 0;

	if (!buf)
		return rd__oom(r);
	/* 15 + 32: a gzip or a zlib header, detected. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK) {
		free(buf);
		return rd__oom(r);
	}
	zs.next_in = (Bytef *)p;
	zs.avail_in = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
	for (;;) {
		if (len == cap) {
			uint8_t *nb;

			if (cap >= MAX_INFLATED) {
				err =
				    rd__fail(r, "decompresses to more than %llu GiB: not a profile",
					     MAX_INFLATED >> 30);
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err = rd__oom(r);
				break;
			}
			buf = nb;
		}
		zs.next_out = buf + len;
		zs.avail_out = (uInt)(cap - len > UINT32_MAX ? UINT32_MAX : cap - len);
		zr = inflate(&zs, Z_NO_FLUSH);
		len = (size_t)(zs.next_out - buf);
		if (zr == Z_STREAM_END) {
			size_t used = (size_t)(zs.next_in - p);

			/* gzip files may hold several members one after the other. */
			if (used < n && n - used >= 2 && p[used] == 0x1f && p[used + 1] == 0x8b) {
				inflateReset(&zs);
				continue;
			}
			break;
		}
		if (zr == Z_BUF_ERROR && zs.avail_out) {
			err = rd__fail(
			    r,
			    "the compressed data ends early (%zu bytes decompressed): the file "
			    "is truncated",
			    len);
			break;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			err = rd__fail(r, "corrupt compressed data (zlib: %s)",
				       zs.msg ? zs.msg : zError(zr));
			break;
		}
		if (zs.avail_in == 0 && zs.next_in == p + n && zs.avail_out) {
			err = rd__fail(
			    r,
			    "the compressed data ends early (%zu bytes decompressed): the file "
			    "is truncated",
			    len);
			break;
		}
	}
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*outn = len;
	return 0;
}

static int read_bytes(struct rd *r, const uint8_t *p, size_t n, int depth)
{
	char why[200];
	uint32_t maxfield;
	size_t i = 0;
	int err;

	if (!n)
		return rd__fail(r, depth ? "decompresses to nothing" : "empty file");
	if (n >= 2 &&
	    ((p[0] == 0x1f && p[1] == 0x8b) ||
	     (p[0] == 0x78 && (p[1] == 0x01 || p[1] == 0x5e || p[1] == 0x9c || p[1] == 0xda)))) {
		uint8_t *out = NULL;
		size_t outn = 0;

		if (depth)
			return rd__fail(r, "compressed twice: not a profile");
		err = inflate_all(r, p, n, &out, &outn);
		if (err)
			return err;
		err = read_bytes(r, out, outn, depth + 1);
		free(out);
		return err;
	}
	if (n >= 4 && !memcmp(p, "\x28\xb5\x2f\xfd", 4))
		return rd__fail(r, "zstd-compressed (the file exporter's compression: zstd): "
				   "decompress it first (zstd -d)");
	if (n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		i = 3; /* a UTF-8 byte order mark before JSON */
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	if (i < n && p[i] == '{')
		return rd__otlp_json(r, (const char *)p + i, n - i);
	/* A protobuf message never starts with field number 0 (a byte below 8): a big-endian
	 * length prefix of a message under 128 MiB does. The first message says whether the
	 * stream holds traces or profiles. */
	if (p[0] < 8) {
		uint32_t len = n >= 4 ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
					    (uint32_t)p[2] << 8 | p[3]
				      : 0;

		if (n >= 4 && len <= n - 4 && rd__traces_like(p + 4, len))
			return rd__traces_stream(r, p, n);
		return rd__otlp_stream(r, p, n);
	}
	err = rd__scan_fields(p, n, &maxfield, why, sizeof(why));
	if (err == -E2BIG)
		return rd__fail(r, "truncated protobuf (pprof or OTLP): %s", why);
	if (err)
		return rd__fail(
		    r,
		    "not a profile spanprof view reads (pprof, OTLP protobuf or OTLP/JSON, "
		    "gzipped or not): %s",
		    why);
	if (maxfield > 2) {
		if (maxfield > 15)
			return rd__fail(
			    r,
			    "not a profile spanprof view reads (a protobuf message with "
			    "field %u at the top: neither pprof nor OTLP)",
			    maxfield);
		return rd__pprof(r, p, n);
	}
	if (maxfield == 1 && rd__traces_like(p, n)) {
		r->format = FMT_TRACES_PROTO;
		return rd__traces_proto(r, p, n);
	}
	r->format = FMT_PROTO;
	return rd__otlp_proto(r, p, n);
}

int view_read__buffer(struct view_doc *d, const char *name, const void *data, size_t len)
{
	struct rd r = {.d = d};
	const struct view_input *in;
	int err;

	err = view_doc__input_begin(d, name);
	if (err)
		return err;
	err = read_bytes(&r, data, len, 0);
	rd__arena_free(&r.arena);
	if (r.oom)
		return -ENOMEM;
	if (view_doc__input_end(d, r.format, err ? r.err : NULL))
		return -ENOMEM;
	in = view_doc__input(d, view_doc__ninputs(d) - 1);
	return !in->error || in->samples ? 1 : 0;
}

static int read_file(struct view_doc *d, const char *path)
{
	struct stat st;
	char msg[300];
	uint8_t *buf = NULL;
	size_t off = 0;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(msg, sizeof(msg), "not a regular file");
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(msg, sizeof(msg), "cannot read: %s", strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	err = view_read__buffer(d, path, buf, off);
	free(buf);
	return err;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	err = view_doc__input_begin(d, path);
	if (!err)
		err = view_doc__input_end(d, NULL, msg);
	return err ? err : 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static bool wanted(const char *name)
{
	/* profile.pb.gz, and alloc/lock/offcpu.pb.gz of the other profile types */
	return ends_with(name, ".pb.gz") || ends_with(name, ".binpb") || ends_with(name, ".json") ||
	       ends_with(name, ".jsonl");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether @name is a pprof file of `spanprof record` ("profile.pb.gz", "alloc.pb.gz"...). */
static bool record_pprof(const char *name)
{
	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const char *stem = profile__type_info(t)->file_stem;
		size_t n = strlen(stem);

		if (!strncmp(name, stem, n) && !strcmp(name + n, ".pb.gz"))
			return true;
	}
	return false;
}

/*
 * Drops from @names (@n full paths, sorted) the pprof files of a recording that also wrote
 * OTLPFILE_NAME: it holds the same samples with their times and frame types.
 */
static void prefer_otlpfile(char **names, size_t *n)
{
	size_t k = 0;
	bool have = false;

	for (size_t i = 0; i < *n; i++) {
		const char *base = strrchr(names[i], '/');

		have |= !strcmp(base ? base + 1 : names[i], OTLPFILE_NAME);
	}
	if (!have)
		return;
	for (size_t i = 0; i < *n; i++) {
		const char *base = strrchr(names[i], '/');

		if (record_pprof(base ? base + 1 : names[i]))
			free(names[i]);
		else
			names[k++] = names[i];
	}
	*n = k;
}

static int read_dir(struct view_doc *d, const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	char **names = NULL, msg[300];
	size_t n = 0, cap = 0;
	int loaded = 0, err = 0;

	if (!dir) {
		snprintf(msg, sizeof(msg), "cannot open the directory: %s", strerror(errno));
		goto fail;
	}
	while ((de = readdir(dir))) {
		char *full;
		struct stat st;

		if (de->d_name[0] == '.' || !wanted(de->d_name))
			continue;
		if (asprintf(&full, "%s%s%s", path, ends_with(path, "/") ? "" : "/", de->d_name) <
		    0) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (stat(full, &st) || !S_ISREG(st.st_mode)) {
			free(full);
			continue;
		}
		if (n == cap) {
			char **nn;

			cap = cap ? 2 * cap : 16;
			nn = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				free(full);
				err = -ENOMEM;
				goto cleanup;
			}
			names = nn;
		}
		names[n++] = full;
	}
	if (!n) {
		snprintf(msg, sizeof(msg),
			 "no profiles in this directory (looked for *.binpb, *.pb.gz, *.json, "
			 "*.jsonl)");
		goto fail;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	prefer_otlpfile(names, &n);
	for (size_t i = 0; i < n; i++) {
		err = read_file(d, names[i]);
		if (err < 0)
			goto cleanup;
		loaded += err;
	}
	err = loaded;
	goto cleanup;
fail:
	err = view_doc__input_begin(d, path);
	if (!err)
		err = view_doc__input_end(d, NULL, msg);
cleanup:
	if (dir)
		closedir(dir);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

int view_read__path(struct view_doc *d, const char *path)
{
	struct stat st;
	char msg[300];
	int err;

	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return read_dir(d, path);
	if (!stat(path, &st))
		return read_file(d, path);
	snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
	err = view_doc__input_begin(d, path);
	if (!err)
		err = view_doc__input_end(d, NULL, msg);
	return err;
}
