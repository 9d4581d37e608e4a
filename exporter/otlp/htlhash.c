/* SPDX-License-Identifier: Apache-2.0 */
/*
 * htlhash: the OpenTelemetry eBPF profiler's file identity of a mapped file (its "htlhash",
 * the mapping attribute process.executable.build_id.htlhash of otlp/otlp_encode.c): the hex of
 * the first 16 bytes of SHA-256(first 4 KiB || last 4 KiB || size as big-endian u64), the
 * chunks shortened to the file's size when it is smaller.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include <openssl/evp.h>

#include "otlp/htlhash.h"
#include "util/regfile.h"

#define HTL_CHUNK 4096

/*
 * The htlhash of a file identified by (device, inode, size, mtime) never
 * changes: remember it across calls, so each export interval costs one stat()
 * per mapping instead of two reads and a SHA-256. Bounded: emptied when full.
 * Used from the encoding thread only.
 */
#define HTL_CACHE_MAX 4096

struct htl_cache_entry {
	struct htl_file_key {
		dev_t dev;
		ino_t ino;
		off_t size;
		struct timespec mtime;
	} key;
	char hex[33];
	UT_hash_handle hh;
};

static int htlhash_compute(const char *path, char hex[33], struct stat *st_out);
static struct htl_cache_entry *htl_cache;
static unsigned int htl_cache_n;

static struct htl_file_key htl_key(const struct stat *st)
{
	struct htl_file_key k;

	memset(&k, 0, sizeof(k)); /* padding takes part in the hash */
	k.dev = st->st_dev;
	k.ino = st->st_ino;
	k.size = st->st_size;
	k.mtime = st->st_mtim;
	return k;
}

static void htl_cache_put(const struct stat *st, const char hex[33])
{
	struct htl_cache_entry *e, *tmp;

	if (htl_cache_n >= HTL_CACHE_MAX) {
		HASH_ITER (hh, htl_cache, e, tmp) {
			HASH_DEL(htl_cache, e);
			free(e);
		}
		htl_cache_n = 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->key = htl_key(st);
	memcpy(e->hex, hex, 33);
	HASH_ADD(hh, htl_cache, key, sizeof(e->key), e);
	htl_cache_n++;
}

int otlp__htlhash_file(const char *path, char hex[33])
{
	struct htl_cache_entry *hit;
	struct htl_file_key key;
	struct stat pst;
	int err;

	if (stat(path, &pst) == 0 && S_ISREG(pst.st_mode)) {
		key = htl_key(&pst);
		HASH_FIND(hh, htl_cache, &key, sizeof(key), hit);
		if (hit) {
			memcpy(hex, hit->hex, 33);
			return 0;
		}
	}
	err = htlhash_compute(path, hex, &pst);
	if (!err)
		htl_cache_put(&pst, hex);
	return err;
}

/* Reads and hashes @path; *@st receives the identity of what was hashed. */
static int htlhash_compute(const char *path, char hex[33], struct stat *st_out)
{
	uint8_t head[HTL_CHUNK], tail[HTL_CHUNK], be[8], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = NULL;
	struct stat st;
	size_t n;
	int fd, err = 0;

	/* A regular file only; one on FUSE or a network file system read within a deadline. */
	fd = regfile__open(path, &st);
	if (fd < 0)
		return fd == -UTIL_ENOTREG ? -EINVAL : fd;
	n = (uint64_t)st.st_size < HTL_CHUNK ? (size_t)st.st_size : HTL_CHUNK;
	if (pread(fd, head, n, 0) != (ssize_t)n ||
	    pread(fd, tail, n, st.st_size - (off_t)n) != (ssize_t)n) {
		err = -EIO;
		goto cleanup;
	}
	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)((uint64_t)st.st_size >> (56 - 8 * i));
	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(ctx, head, n) || !EVP_DigestUpdate(ctx, tail, n) ||
	    !EVP_DigestUpdate(ctx, be, sizeof(be)) || !EVP_DigestFinal_ex(ctx, md, &mdlen) ||
	    mdlen < 16) {
		err = -EIO;
		goto cleanup;
	}
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	*st_out = st;
cleanup:
	EVP_MD_CTX_free(ctx);
	close(fd);
	return err;
}
