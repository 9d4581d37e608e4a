// SPDX-License-Identifier: Apache-2.0
/*
 * minidebuginfo: .gnu_debugdata (an xz stream holding an ELF file) decoded with liblzma into an
 * unlinked file, so that the symbolizer reads its .symtab with pread like any other file.
 */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/elfcheck.h"
#include "symbols/minidebuginfo.h"
#include "util/util.h"

#define SECTION ".gnu_debugdata"
#define CHUNK 65536

/* The .gnu_debugdata section with bytes in the file, its header in *@out. */
static bool find_debugdata(Elf *elf, GElf_Shdr *out)
{
	return elfcheck__section(elf, SECTION, out) && out->sh_type != SHT_NOBITS &&
	       out->sh_size > 0;
}

bool minidebuginfo__present(Elf *elf)
{
	GElf_Shdr shdr;

	return find_debugdata(elf, &shdr);
}

/* Decodes @len bytes of @in_fd at @from into @out; 0 or -errno (-EBADMSG: not a valid stream). */
static int decode(int in_fd, uint64_t from, uint64_t len, int out, uint8_t *in, uint8_t *buf)
{
	lzma_stream zs = LZMA_STREAM_INIT;
	uint64_t written = 0;
	lzma_action action = LZMA_RUN;
	lzma_ret ret;
	int err = 0;

	/* One stream only: concatenated or padded data is not what find-debuginfo writes. */
	if (lzma_stream_decoder(&zs, MINIDEBUGINFO_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	for (;;) {
		if (!zs.avail_in && action == LZMA_RUN) {
			size_t want = len < CHUNK ? (size_t)len : CHUNK;
			ssize_t n = want ? pread(in_fd, in, want, (off_t)from) : 0;

			if (n < 0) {
				err = -errno;
				break;
			}
			if ((size_t)n < want) {
				err = -EBADMSG; /* the section runs past the end of the file */
				break;
			}
			from += (uint64_t)n;
			len -= (uint64_t)n;
			zs.next_in = in;
			zs.avail_in = (size_t)n;
			if (!len)
				action = LZMA_FINISH;
		}
		zs.next_out = buf;
		zs.avail_out = CHUNK;
		ret = lzma_code(&zs, action);
		if (CHUNK - zs.avail_out) {
			if (written + (CHUNK - zs.avail_out) > MINIDEBUGINFO_MAX_BYTES) {
				err = -EBADMSG;
				break;
			}
			err = util__pwrite_all(out, buf, CHUNK - zs.avail_out, written);
			if (err)
				break;
			written += CHUNK - zs.avail_out;
		}
		if (ret == LZMA_STREAM_END) {
			/* Bytes after the stream: not a well-formed section. */
			if (zs.avail_in || len)
				err = -EBADMSG;
			break;
		}
		if (ret == LZMA_MEM_ERROR) {
			err = -ENOMEM;
			break;
		}
		if (ret != LZMA_OK) {
			/* FORMAT, DATA, OPTIONS, MEMLIMIT errors and BUF_ERROR (truncated input).
			 */
			err = -EBADMSG;
			break;
		}
	}
	lzma_end(&zs);
	return err;
}

int minidebuginfo__extract(Elf *elf, int fd, uint64_t file_size)
{
	uint8_t *in = NULL, *buf = NULL, magic[SELFMAG];
	GElf_Shdr shdr;
	int out = -1, err;

	if (!find_debugdata(elf, &shdr))
		return -ENOENT;
	if (shdr.sh_offset > file_size || file_size - shdr.sh_offset < shdr.sh_size)
		return -EBADMSG;
	in = malloc(CHUNK);
	buf = malloc(CHUNK);
	if (!in || !buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	out = util__open_tmpfile();
	if (out < 0) {
		err = out;
		goto cleanup;
	}
	err = decode(fd, shdr.sh_offset, shdr.sh_size, out, in, buf);
	if (err)
		goto cleanup;
	if (pread(out, magic, SELFMAG, 0) != SELFMAG || memcmp(magic, ELFMAG, SELFMAG))
		err = -EBADMSG;
cleanup:
	free(in);
	free(buf);
	if (err && out >= 0)
		close(out);
	return err ? err : out;
}
