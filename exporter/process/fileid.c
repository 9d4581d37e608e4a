/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "process/fileid.h"

uint64_t fileid__dev(uint32_t kdev)
{
	return makedev(kdev >> 20, kdev & 0xfffff);
}

const struct sp_vma *fileid__find(const struct sp_vmas *v, uint64_t pc)
{
	uint32_t n;

	if (!v)
		return NULL;
	n = v->n < SP_MAX_VMAS ? v->n : SP_MAX_VMAS;
	for (uint32_t i = 0; i < n; i++)
		if (pc >= v->vma[i].start && pc < v->vma[i].end)
			return &v->vma[i];
	return NULL;
}

struct elf_object *fileid__object(struct symcache *c, const struct sp_file_id *id)
{
	if (!id->ino)
		return NULL;
	return symcache__find_identity(c, fileid__dev(id->dev), id->ino, id->size, id->mtime_sec,
				       id->mtime_nsec);
}

int fileid__open_path(struct symcache *c, const struct sp_file_id *id, const char *path)
{
	struct stat st;

	if (fileid__object(c, id))
		return 0;
	if (path[0] != '/')
		return -EINVAL;
	if (stat(path, &st))
		return -errno;
	if (st.st_ino != id->ino || st.st_dev != fileid__dev(id->dev) ||
	    (uint64_t)st.st_size != id->size || st.st_mtim.tv_sec != id->mtime_sec ||
	    st.st_mtim.tv_nsec != (long)id->mtime_nsec)
		return -ESTALE;
	if (!symcache__open(c, path, path))
		return -errno;
	/* Replaced between the stat and the open: what was opened is another file. */
	return fileid__object(c, id) ? 1 : -ESTALE;
}
