// SPDX-License-Identifier: Apache-2.0
/*
 * objcache: open and cache -- objects by file identity and by GNU build ID, their descriptors,
 * re-opening (objcache.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "runtime/go/gopclntab.h"
#include "symbols/elfhdr.h"
#include "symbols/objcache.h"
#include "symbols/symcache.h"
#include "util/regfile.h"
#include "util/util.h"

static struct elf_object *find_key(struct symcache *c, const char *key)
{
	struct obj_key *k;

	HASH_FIND_STR(c->keys, key, k);
	return k ? k->obj : NULL;
}

static int add_key(struct symcache *c, const char *key, struct elf_object *o)
{
	size_t len = strlen(key);
	struct obj_key *k = malloc(sizeof(*k) + len + 1);

	if (!k)
		return -ENOMEM;
	memcpy(k->key, key, len + 1);
	k->obj = o;
	hash_oom = false;
	HASH_ADD_KEYPTR(hh, c->keys, k->key, len, k);
	if (hash_oom) {
		free(k);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Reads @fd (a regular file of @size bytes) as ELF: @cmd ELF_C_READ reads
 * headers and sections with pread on demand, ELF_C_READ_MMAP maps the file.
 * NULL + *@errp (-ENOEXEC) on failure. @fd stays the caller's.
 */
Elf *symc_elf_from_fd(int fd, Elf_Cmd cmd, uint64_t size, int *errp)
{
	Elf *elf = elf_begin(fd, cmd, NULL);
	int err;

	if (!elf) {
		*errp = -ENOEXEC;
		return NULL;
	}
	err = symc_elf_validate(elf, size);
	if (err) {
		elf_end(elf);
		*errp = err;
		return NULL;
	}
	return elf;
}

/* Opens @path read-only; -errno, or -ENOEXEC for what is not a regular file. */
int symc_open_regular(struct symcache *c, const char *path, struct stat *st)
{
	int fd = regfile__open(path, st);

	if (fd == -UTIL_ENOTREG)
		c->stats.not_regular++;
	return fd;
}

static void identity_key_of(char *buf, size_t len, uint64_t dev, uint64_t ino, uint64_t size,
			    int64_t mtime_sec, long mtime_nsec)
{
	snprintf(buf, len, "i:%llx:%llx:%llx:%lld.%09ld", (unsigned long long)dev,
		 (unsigned long long)ino, (unsigned long long)size, (long long)mtime_sec,
		 mtime_nsec);
}

static void identity_key(char *buf, size_t len, const struct stat *st)
{
	identity_key_of(buf, len, st->st_dev, st->st_ino, st->st_size, st->st_mtim.tv_sec,
			st->st_mtim.tv_nsec);
}

/* True when @st (fstat of an open file) is @o's file: device, inode, size and mtime. */
static bool same_file(const struct elf_object *o, const struct stat *st)
{
	return st->st_dev == o->dev && st->st_ino == o->ino && st->st_size == o->size &&
	       st->st_mtim.tv_sec == o->mtime.tv_sec && st->st_mtim.tv_nsec == o->mtime.tv_nsec;
}

/* Keeps the number of held descriptors under max_fds: unloaded objects close theirs first. */
void symc_limit_fds(struct symcache *c)
{
	struct elf_object *o;

	for (o = c->objects; o && c->stats.fds > c->max_fds; o = o->next)
		if (!o->loaded && o->fd >= 0)
			symc_close_fd(c, &o->fd);
}

struct elf_object *symcache__open(struct symcache *c, const char *path, const char *orig_path)
{
	struct elf_object *o = NULL, *hit;
	char ikey[128], *bkey = NULL;
	struct stat st;
	Elf *elf = NULL;
	int err, fd;

	/* Identity first: it needs only an fstat, and most opens are repeats. Only a regular file
	 * is opened at all (a FIFO would block, a device's open has effects). */
	fd = symc_open_regular(c, path, &st);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	identity_key(ikey, sizeof(ikey), &st);
	hit = find_key(c, ikey);
	if (hit) {
		hit->last_used = symc_now_ns();
		/* Closed while idle, and the very file is open here: keep this descriptor. */
		if (hit->fd < 0 && same_file(hit, &st)) {
			hit->fd = fd;
			c->stats.fds++;
			hit->load_failed = hit->reopen_failed = false;
			symc_limit_fds(c);
		} else {
			close(fd);
		}
		return hit;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		err = -ENOMEM;
		goto cleanup;
	}
	o->cache = c;
	o->fd = o->dbg_fd = o->names_fd = o->dwarf_fd = o->inflated_fd = o->mini_fd = -1;
	elf = symc_elf_from_fd(fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!elf)
		goto cleanup;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->size = st.st_size;
	o->mtime = st.st_mtim;
	err = symc_read_loads(o, elf);
	if (err)
		goto cleanup;
	symc_read_plts(o, elf);
	o->build_id = symc_read_build_id(elf);
	o->maybe_go = gopclntab__maybe(elf);
	elf_end(elf);
	elf = NULL;
	if (o->build_id) {
		bkey = malloc(strlen(o->build_id) + 3);
		if (!bkey) {
			err = -ENOMEM;
			goto cleanup;
		}
		sprintf(bkey, "b:%s", o->build_id);
		hit = find_key(c, bkey);
		if (hit) {
			/* Same build, another file (a copy, another container): share it. */
			err = add_key(c, ikey, hit);
			if (err)
				goto cleanup;
			elf_object__free(o);
			free(bkey);
			close(fd);
			return hit;
		}
	}
	o->path = strdup(path);
	o->orig_path = orig_path ? strdup(orig_path) : NULL;
	if (!o->path || (orig_path && !o->orig_path)) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = add_key(c, ikey, o);
	if (err)
		goto cleanup;
	if (bkey) {
		err = add_key(c, bkey, o);
		if (err) {
			struct obj_key *k;

			HASH_FIND_STR(c->keys, ikey, k);
			HASH_DEL(c->keys, k);
			free(k);
			goto cleanup;
		}
	}
	/* Kept: the file may be gone from every path (process exited) by the first lookup. */
	o->fd = fd;
	c->stats.fds++;
	o->last_used = symc_now_ns();
	o->next = c->objects;
	c->objects = o;
	c->stats.objects++;
	free(bkey);
	symc_limit_fds(c);
	return o;
cleanup:
	c->stats.open_errors++;
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	elf_object__free(o);
	free(bkey);
	errno = -err;
	return NULL;
}

/*
 * Re-opens a file whose descriptor was closed (over max_fds, or idle) by o->path, then
 * o->orig_path; only the very same file will do. 0, or -ENOENT.
 */
int symc_reopen(struct elf_object *o)
{
	const char *paths[2] = {o->path, o->orig_path};
	struct stat st;
	int i, fd;

	for (i = 0; i < 2; i++) {
		if (!paths[i] || paths[i][0] != '/')
			continue;
		fd = symc_open_regular(o->cache, paths[i], &st);
		if (fd < 0)
			continue;
		if (same_file(o, &st)) {
			o->fd = fd;
			o->cache->stats.fds++;
			return 0;
		}
		close(fd);
	}
	return -ENOENT;
}

/*
 * @o was closed while idle and an address it has not answered yet is asked: re-load it from
 * its file if the very same file can be opened again, else go on with what stayed in memory
 * (symbols, names read, frames answered; counted once, not retried until symcache__open()
 * meets the file again).
 */
void symc_refresh_idle(struct elf_object *o)
{
	struct symcache *c = o->cache;

	if (o->reopen_failed)
		return;
	if (o->fd < 0 && symc_reopen(o)) {
		o->reopen_failed = true;
		c->stats.idle_reopen_errors++;
		return;
	}
	elf_object__unload(o, true);
	c->stats.idle_reloads++;
}

/* --- lookup by file identity (exporter/process/fileid.h) --- */
struct elf_object *symcache__find_identity(struct symcache *c, uint64_t dev, uint64_t ino,
					   uint64_t size, int64_t mtime_sec, uint32_t mtime_nsec)
{
	char key[128];

	if (mtime_nsec >= 1000000000u)
		return NULL;
	identity_key_of(key, sizeof(key), dev, ino, size, mtime_sec, mtime_nsec);
	return find_key(c, key);
}

const char *elf_object__orig_path(const struct elf_object *o)
{
	return o->orig_path ? o->orig_path : o->path;
}
/* --- end of lookup by file identity --- */

struct elf_object *symcache__find_build_id(struct symcache *c, const char *build_id)
{
	char key[160];
	int len;

	if (!c || !build_id)
		return NULL;
	len = snprintf(key, sizeof(key), "b:%s", build_id);
	return len > 0 && (size_t)len < sizeof(key) ? find_key(c, key) : NULL;
}
