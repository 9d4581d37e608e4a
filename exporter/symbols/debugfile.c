// SPDX-License-Identifier: Apache-2.0
/*
 * debugfile: separate debug files -- the build-id tree, .gnu_debuglink, debuginfod's
 * (debugfile.h). Format: GDB manual, "Separate Debug Files".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <gelf.h>

#include "symbols/debugfile.h"
#include "symbols/debuginfod.h"
#include "symbols/elfcheck.h"
#include "symbols/elfhdr.h"
#include "symbols/objcache.h"
#include "symbols/symcache.h"

#define HOST_DEBUG_DIR "/usr/lib/debug"

/* CRC-32 (zlib's, as .gnu_debuglink uses) of the whole file open at @fd, read from offset 0
 * with pread(2) (the descriptor's offset is left alone); the path is not opened again. */
static int file_crc32(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong v = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		v = crc32(v, buf, (uInt)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*crc = (uint32_t)v;
	return 0;
}

/*
 * Opens candidate debug file @path for @o. Accepted when build IDs match, or,
 * lacking one, when the .gnu_debuglink CRC (@crc, if @check_crc) matches.
 */
static Elf *try_debug_file(struct elf_object *o, const char *path, bool check_crc, uint32_t crc)
{
	struct stat st;
	Elf *elf;
	char *id;
	uint32_t got;
	int err, fd;
	bool ok;

	if (access(path, R_OK))
		return NULL;
	fd = symc_open_regular(o->cache, path, &st);
	if (fd < 0)
		return NULL;
	elf = symc_elf_from_fd(fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!elf)
		goto reject;
	if (st.st_dev == o->dev && st.st_ino == o->ino)
		goto reject;
	id = symc_read_build_id(elf);
	if (o->build_id && id)
		ok = !strcmp(o->build_id, id);
	else if (check_crc)
		ok = !file_crc32(fd, &got) && got == crc;
	else
		ok = false;
	free(id);
	if (!ok)
		goto reject;
	o->debug_path = strdup(path);
	if (!o->debug_path)
		goto reject;
	o->dbg_fd = fd;
	o->cache->stats.fds++;
	return elf;
reject:
	if (elf)
		elf_end(elf);
	close(fd);
	return NULL;
}

/* Reads .gnu_debuglink: a NUL-terminated name, padding to 4, then a CRC32 of the debug file. */
static const char *read_debuglink(Elf *elf, uint32_t *crc)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elfcheck__section(elf, ".gnu_debuglink", &shdr);
	Elf_Data *data;
	const char *name;
	size_t len, crc_off;

	if (!scn || shdr.sh_type == SHT_NOBITS)
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size)
		return NULL;
	name = data->d_buf;
	len = strnlen(name, data->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (!len || crc_off + 4 > data->d_size)
		return NULL;
	memcpy(crc, (char *)data->d_buf + crc_off, 4);
	/* The CRC is stored in the byte order of the object. */
	if (elf_getident(elf, NULL)[EI_DATA] !=
	    (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
		*crc = __builtin_bswap32(*crc);
	return name;
}

/* Formats a candidate path and tries it; too long a path is no candidate. */
static Elf *try_debug_path(struct elf_object *o, bool check_crc, uint32_t crc, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof(path))
		return NULL;
	return try_debug_file(o, path, check_crc, crc);
}

/*
 * Searches, in order: <root>/.build-id/xx/rest.debug, then the debuglink next
 * to the file, in its .debug/ subdirectory, and under <root>/<dir of the file>,
 * for root = symcache_opts.debug_dir, then /usr/lib/debug. The Elf returned
 * reads through o->dbg_fd.
 */
Elf *symc_find_debug_file(struct elf_object *o, Elf *main_elf)
{
	const char *roots[2] = {o->cache->debug_dir, HOST_DEBUG_DIR};
	const char *orig = o->orig_path ? o->orig_path : o->path, *link, *slash;
	uint32_t crc = 0;
	int i, dirlen;
	Elf *elf;

	for (i = 0; i < 2 && o->build_id && strlen(o->build_id) > 2; i++) {
		if (!roots[i])
			continue;
		elf = try_debug_path(o, false, 0, "%s/.build-id/%.2s/%s.debug", roots[i],
				     o->build_id, o->build_id + 2);
		if (elf)
			return elf;
	}
	link = read_debuglink(main_elf, &crc);
	if (!link || strchr(link, '/'))
		return NULL;
	slash = strrchr(orig, '/');
	if (!slash) {
		orig = "./";
		slash = orig + 1;
	}
	dirlen = (int)(slash - orig);
	if ((elf = try_debug_path(o, true, crc, "%.*s/%s", dirlen, orig, link)))
		return elf;
	if ((elf = try_debug_path(o, true, crc, "%.*s/.debug/%s", dirlen, orig, link)))
		return elf;
	for (i = 0; i < 2 && orig[0] == '/'; i++) {
		if (!roots[i])
			continue;
		elf = try_debug_path(o, true, crc, "%s%.*s/%s", roots[i], dirlen, orig, link);
		if (elf)
			return elf;
	}
	return NULL;
}

/* Opens the debug file found by an earlier load, through o->dbg_fd. */
Elf *symc_reopen_debug_file(struct elf_object *o)
{
	struct stat st;
	Elf *elf;
	int fd, err;

	if (!o->debug_path)
		return NULL;
	fd = symc_open_regular(o->cache, o->debug_path, &st);
	if (fd < 0)
		return NULL;
	elf = symc_elf_from_fd(fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!elf) {
		close(fd);
		return NULL;
	}
	o->dbg_fd = fd;
	o->cache->stats.fds++;
	return elf;
}

/*
 * The debug file of @o from debuginfod (exporter/symbols/debuginfod.h), when the fetch has
 * arrived: checked like a local one (build IDs must match). Asks for it otherwise; the answer
 * is picked up by symcache__pick_up_debug_files(). NULL when there is none (yet).
 */
Elf *symc_fetch_debug_file(struct elf_object *o)
{
	struct symcache *c = o->cache;
	const char *path = NULL;
	Elf *dbg;
	int state;

	if (!c->fetch || !o->build_id || o->fetch_done)
		return NULL;
	state = dbgfetch__request(c->fetch, o->build_id, &path);
	if (state == DBGFETCH_PENDING && !o->debug_pending)
		c->stats.debuginfod_requests++;
	o->debug_pending = state == DBGFETCH_PENDING;
	if (state == DBGFETCH_PENDING)
		return NULL;
	/* Answered (a failure is retried by a later load, after DBGFETCH_RETRY_S). */
	o->fetch_done = state != DBGFETCH_FAILED;
	if (state != DBGFETCH_FOUND)
		return NULL;
	dbg = try_debug_file(o, path, false, 0);
	if (dbg)
		c->stats.debuginfod_files++;
	else
		c->stats.debuginfod_rejected++;
	return dbg;
}

void symcache__set_debuginfod(struct symcache *c, struct dbgfetch *f)
{
	struct elf_object *o;

	c->fetch = f;
	c->fetch_gen = 0;
	for (o = c->objects; o; o = o->next) {
		o->debug_pending = o->fetch_done = false;
		/* Loaded already without debug info: ask now, picked up like the others. */
		if (f && o->loaded && !o->dwarf && !o->debug_path && o->build_id &&
		    dbgfetch__request(f, o->build_id, NULL) >= 0) {
			o->debug_pending = true;
			c->stats.debuginfod_requests++;
		}
	}
}

int symcache__pick_up_debug_files(struct symcache *c)
{
	struct elf_object *o;
	uint64_t gen;
	int state, n = 0;

	if (!c || !c->fetch)
		return 0;
	gen = dbgfetch__generation(c->fetch);
	if (gen == c->fetch_gen)
		return 0;
	c->fetch_gen = gen;
	for (o = c->objects; o; o = o->next) {
		if (!o->debug_pending)
			continue;
		state = dbgfetch__request(c->fetch, o->build_id, NULL);
		if (state == DBGFETCH_PENDING)
			continue;
		o->debug_pending = false;
		if (state != DBGFETCH_FOUND)
			continue;
		/* The next lookup loads it again, with the debug file: frames named anew. */
		elf_object__unload(o, false);
		n++;
	}
	return n;
}
