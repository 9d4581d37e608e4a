// SPDX-License-Identifier: Apache-2.0
/*
 * load: loading an object's symbols, DWARF and Go table under the byte budget (load.h).
 * Format: ELF gABI "Section Compression".
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <elfutils/libdw.h>
#include <gelf.h>

#include "runtime/go/gopclntab.h"
#include "symbols/debugfile.h"
#include "symbols/dwarfframes.h"
#include "symbols/elfcheck.h"
#include "symbols/elfhdr.h"
#include "symbols/load.h"
#include "symbols/objcache.h"
#include "symbols/symcache.h"
#include "symbols/symtab.h"
#include "util/util.h"

/* Unloading this much at once returns free heap pages to the kernel. */
#define TRIM_BYTES (1u << 20)
/* ... at most this often (ns): under a budget that thrashes, every load unloads megabytes. */
#define TRIM_INTERVAL_NS 1000000000ull

/*
 * Unloads least recently used objects, never @keep, until @need more bytes fit
 * in the budget. Objects without DWARF go first: re-loading them reads a symbol
 * table, while DWARF costs an index walk and maybe decompressing its sections.
 * Unloaded objects keep the frames they answered (a hot loop's addresses, asked again by
 * every process that maps the file and after every profile reset, then need no load); those
 * go last, least recently used first.
 */
void symc_make_room(struct symcache *c, struct elf_object *keep, size_t need)
{
	struct elf_object *o, *prev;
	uint64_t before = c->stats.bytes;
	int pass;

	for (pass = 0; pass < 3; pass++) {
		for (o = c->lru_tail; o && c->stats.bytes + need > c->max_bytes; o = prev) {
			prev = o->lru_prev;
			if (o == keep || (!pass && o->dwarf))
				continue;
			if (pass == 2) {
				symc_drop_kept(o);
				c->stats.answers_dropped++;
			} else if (o->loaded) {
				elf_object__unload(o, true);
				o->evicted = true;
				c->stats.evictions++;
			}
		}
	}
	/* Inflated DWARF is freed in large blocks amid the heap: give the pages back. */
	c->untrimmed += before - c->stats.bytes;
	if (c->untrimmed >= TRIM_BYTES) {
		uint64_t now = symc_now_ns();

		if (now - c->trimmed_ns >= TRIM_INTERVAL_NS) {
			malloc_trim(0);
			c->trimmed_ns = now;
			c->untrimmed = 0;
		}
	}
	symc_limit_fds(c);
}

/* True when a .debug_* section of @elf is compressed (SHF_COMPRESSED). */
static bool has_compressed_debug(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t stridx;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (name && !strncmp(name, ".debug_", 7))
			return true;
	}
	return false;
}

#define INFLATE_CHUNK 65536

/*
 * Copies @len bytes of @fd at @from to @out at @to, inflating them (zlib stream) when
 * @zlib; *@outlen: bytes written. 0 or -errno (-EBADMSG: corrupt stream).
 */
static int copy_section(int fd, uint64_t from, uint64_t len, int out, uint64_t to, bool zlib,
			unsigned char *in, unsigned char *buf, uint64_t *outlen)
{
	z_stream zs = {0};
	int zr = Z_OK, err = 0;

	*outlen = 0;
	if (zlib && inflateInit(&zs) != Z_OK)
		return -ENOMEM;
	while (zlib ? zr != Z_STREAM_END : len > 0) {
		size_t want = len < INFLATE_CHUNK ? (size_t)len : INFLATE_CHUNK;
		ssize_t n = 0;

		if (len && (!zlib || !zs.avail_in)) {
			n = pread(fd, in, want, (off_t)from);
			if (n <= 0) {
				err = n < 0 ? -errno : -EBADMSG;
				break;
			}
			from += (uint64_t)n;
			len -= (uint64_t)n;
		}
		if (!zlib) {
			err = util__pwrite_all(out, in, (size_t)n, to + *outlen);
			*outlen += (uint64_t)n;
			if (err)
				break;
			continue;
		}
		if (n) {
			zs.next_in = in;
			zs.avail_in = (uInt)n;
		}
		zs.next_out = buf;
		zs.avail_out = INFLATE_CHUNK;
		zr = inflate(&zs, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END) {
			err = -EBADMSG; /* also Z_BUF_ERROR: the input ended before the stream */
			break;
		}
		err = util__pwrite_all(out, buf, INFLATE_CHUNK - zs.avail_out, to + *outlen);
		*outlen += INFLATE_CHUNK - zs.avail_out;
		if (err)
			break;
	}
	if (zlib)
		inflateEnd(&zs);
	return err;
}

/*
 * Writes a copy of the 64-bit little-endian ELF file @fd (@hdr: its headers) with every
 * SHF_COMPRESSED section inflated (ELF gABI 4.1, "Section Compression": an Elf64_Chdr, then a
 * zlib stream; ELFCOMPRESS_ZSTD is not handled) to an unlinked file in /var/tmp (else /tmp).
 * Program headers are left out (libdw does not need them). Inflated DWARF then lives in the
 * page cache, where a mapping can drop it and read it back, instead of in this process's
 * heap. Streams in 64 KiB pieces. Returns the new descriptor or -errno (-ENOTSUP: not a format
 * handled here).
 */
static int inflate_to_file(Elf *hdr, int fd)
{
	unsigned char *in = NULL, *buf = NULL;
	GElf_Shdr *sh = NULL;
	uint64_t off = sizeof(Elf64_Ehdr), n;
	size_t shnum = 0, i;
	GElf_Ehdr eh;
	int out = -1, err = 0;

	if (!gelf_getehdr(hdr, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || elf_getshdrnum(hdr, &shnum) || !shnum)
		return -ENOTSUP;
	sh = calloc(shnum, sizeof(*sh));
	in = malloc(INFLATE_CHUNK);
	buf = malloc(INFLATE_CHUNK);
	if (!sh || !in || !buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < shnum; i++) {
		if (!gelf_getshdr(elf_getscn(hdr, i), &sh[i])) {
			err = -ENOTSUP;
			goto cleanup;
		}
	}
	out = util__open_tmpfile();
	if (out < 0) {
		err = out;
		goto cleanup;
	}
	for (i = 1; i < shnum; i++) {
		bool z = sh[i].sh_flags & SHF_COMPRESSED;
		uint64_t align = sh[i].sh_addralign > 1 ? sh[i].sh_addralign : 1;
		Elf64_Chdr ch = {0};

		if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_type == SHT_NULL) {
			sh[i].sh_offset = off;
			continue;
		}
		if (z) {
			if (sh[i].sh_size < sizeof(ch) ||
			    pread(fd, &ch, sizeof(ch), (off_t)sh[i].sh_offset) != sizeof(ch) ||
			    ch.ch_type != ELFCOMPRESS_ZLIB) {
				err = -ENOTSUP;
				goto cleanup;
			}
			align = ch.ch_addralign > 1 ? ch.ch_addralign : 1;
		}
		off = (off + align - 1) / align * align;
		err = copy_section(fd, sh[i].sh_offset + (z ? sizeof(ch) : 0),
				   sh[i].sh_size - (z ? sizeof(ch) : 0), out, off, z, in, buf, &n);
		if (!err && z && n != ch.ch_size)
			err = -EBADMSG;
		if (err)
			goto cleanup;
		sh[i].sh_offset = off;
		sh[i].sh_size = n;
		if (z) {
			sh[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			sh[i].sh_addralign = ch.ch_addralign;
		}
		off += n;
	}
	eh.e_shoff = (off + 7) & ~7ull;
	eh.e_phoff = 0;
	eh.e_phnum = 0;
	/* GElf_Ehdr and GElf_Shdr are the ELF64 structures. */
	err = util__pwrite_all(out, sh, shnum * sizeof(*sh), eh.e_shoff);
	if (!err)
		err = util__pwrite_all(out, &eh, sizeof(eh), 0);
cleanup:
	free(sh);
	free(in);
	free(buf);
	if (err && out >= 0)
		close(out);
	return err ? err : out;
}

/*
 * Whether the string sections libdw reads names from (.debug_str, .debug_line_str, also as
 * .zdebug_* and *.dwo) end in a NUL. libdw bounds a string's offset by its section's size but
 * does not look for the terminating NUL (dwarf_formstring()), so in a corrupt file the last
 * string would run past the section. Call after dwarf_begin_elf(): sections are inflated then.
 */
static bool dwarf_strings_terminated(Elf *elf)
{
	static const char *const names[] = {"debug_str", "debug_line_str"};
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	Elf_Data *d;
	size_t stridx, i, len;
	const char *name;

	if (elf_getshdrstrndx(elf, &stridx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, stridx, shdr.sh_name);
		if (!name || (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		name += name[1] == 'z' ? 2 : 1;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			len = strlen(names[i]);
			if (strncmp(name, names[i], len) ||
			    (name[len] && strcmp(name + len, ".dwo")))
				continue;
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size && ((const char *)d->d_buf)[d->d_size - 1])
				return false;
		}
	}
	return true;
}

/*
 * Opens the DWARF of @fd (@hdr: its headers) for libdw and charges its
 * sections. Plain sections are mapped (only the pages used count). Compressed
 * ones are inflated once into an unlinked file (inflate_to_file(), kept in
 * o->inflated_fd for re-loads) and mapped the same way; if that fails they are
 * read with pread and libdw inflates them all into memory (a mapping would
 * keep the compressed bytes resident too), and then @fd must stay open while
 * loaded.
 */
static void load_dwarf(struct elf_object *o, Elf *hdr, int fd)
{
	bool mapped = !has_compressed_debug(hdr);
	struct stat st;
	Dwarf *walk;
	int err;

	if (!mapped && o->inflated_fd < 0 && !o->inflate_failed) {
		o->inflated_fd = inflate_to_file(hdr, fd);
		if (o->inflated_fd >= 0)
			o->cache->stats.fds++;
		else
			o->inflate_failed = true; /* no room, or an unhandled format: pread */
	}
	if (!mapped && o->inflated_fd >= 0) {
		fd = o->inflated_fd;
		mapped = true;
	}
	if (fstat(fd, &st))
		return;
	o->dwarf_elf =
	    symc_elf_from_fd(fd, mapped ? ELF_C_READ_MMAP : ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!o->dwarf_elf)
		return;
	if (mapped) {
		size_t len;
		char *img = elf_rawfile(o->dwarf_elf, &len);

		/* DIE walks jump around: no fault-around or read-ahead filling RSS. */
		if (img)
			madvise((void *)((uintptr_t)img & ~(uintptr_t)4095),
				len + ((uintptr_t)img & 4095), MADV_RANDOM);
		/* Mapped now: libdw needs no descriptor. */
		elf_cntl(o->dwarf_elf, ELF_C_FDDONE);
	} else {
		o->dwarf_fd = fd;
	}
	o->dwarf = dwarf_begin_elf(o->dwarf_elf, DWARF_C_READ, NULL);
	if (o->dwarf && !dwarf_strings_terminated(o->dwarf_elf)) {
		dwarf_end(o->dwarf); /* corrupt: names from the symbol table only */
		o->dwarf = NULL;
	}
	if (!o->dwarf) {
		elf_end(o->dwarf_elf);
		o->dwarf_elf = NULL;
		o->dwarf_fd = -1;
		return;
	}
	/*
	 * After dwarf_begin_elf(): inflated sections show their inflated size, all
	 * in memory. Of mapped ones, only pages a lookup touched are resident: the
	 * shared sections now, each unit's DIEs and line program at its first lookup.
	 */
	o->dwarf_mapped = mapped;
	if (mapped) {
		o->shared_page_bytes = symc_debug_sections_size(o->dwarf_elf, true);
		o->shared_pages_charged = true;
		symc_charge_pages(o, o->shared_page_bytes);
	} else {
		symc_charge_dwarf(o, symc_debug_sections_size(o->dwarf_elf, false));
	}
	/* Kept from an earlier load of the same DWARF: CU DIEs are found again by offset. */
	if (!o->cus) {
		/*
		 * Walked in a handle of its own, ended at once: the walk reads every unit's
		 * abbreviations (1-4 KiB a unit in libdw's memory until dwarf_end()), of which
		 * lookups need their units' only.
		 */
		walk = dwarf_begin_elf(o->dwarf_elf, DWARF_C_READ, NULL);
		if (symc_index_cus(o, walk ? walk : o->dwarf)) {
			/* Out of memory: run on symbols alone. */
			free(o->cus);
			free(o->cu_ranges);
			o->cus = NULL;
			o->cu_ranges = NULL;
			o->ncus = o->ncu_ranges = 0;
		}
		if (walk) {
			dwarf_end(walk);
			o->cache->untrimmed +=
			    o->nunits * (UNIT_RECORD_BYTES + UNIT_ABBREV_BYTES / 2);
		} else {
			/* The object's own handle walked them all. */
			o->units_found = o->nunits;
			symc_charge_dwarf(o, o->nunits * UNIT_RECORD_BYTES);
		}
		/* The index walk touched every unit header: not what lookups will need. */
		if (mapped)
			symc_drop_mapped_pages(o);
	}
}

/*
 * A Go binary's PC/line table: the file is mapped whole (read-only, private: only the pages
 * lookups touch become resident, dropped again by symcache__trim()) and charged, like mapped
 * DWARF, a share of the table's size. Anything else (not Go, a corrupt table) leaves o->go
 * NULL: names then come from the other sources.
 */
static void load_go(struct elf_object *o, Elf *elf, int fd)
{
	size_t off, len;

	if (!gopclntab__maybe(elf) || o->size <= 0)
		return;
	o->go_map = mmap(NULL, (size_t)o->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (o->go_map == MAP_FAILED) {
		o->go_map = NULL;
		return;
	}
	o->go_map_len = (size_t)o->size;
	madvise(o->go_map, o->go_map_len, MADV_RANDOM);
	o->go = gopclntab__open(elf, o->go_map, o->go_map_len);
	if (!o->go) {
		symc_drop_go(o);
		return;
	}
	gopclntab__extent(o->go, &off, &len);
	symc_charge(o, len / MAPPED_DWARF_SHARE);
}

/*
 * Loads symbols and DWARF of @o (first lookup, or first after an unload).
 * Failures leave that part empty; -ENOENT when the file cannot be read again.
 */
int elf_object__load(struct elf_object *o)
{
	struct symcache *c = o->cache;
	Elf *elf = NULL, *dbg = NULL, *dwarf_src;
	bool main_dwarf, main_symtab, use_dwarf;
	int err;

	if (o->loaded)
		return 0;
	if (o->load_failed)
		return -ENOENT;
	if (o->fd < 0 && symc_reopen(o))
		goto fail;
	elf = symc_elf_from_fd(o->fd, ELF_C_READ, (uint64_t)o->size, &err);
	if (!elf)
		goto fail;
	o->loaded = true;
	c->stats.objects_loaded++;
	c->stats.loads++;
	if (o->evicted)
		c->stats.reloads++;
	o->evicted = false;
	symc_lru_touch(o);

	main_dwarf = elfcheck__has_data(elf, ".debug_info");
	main_symtab = elfcheck__has_data(elf, ".symtab");
	if (!main_dwarf || !main_symtab) {
		if (!o->debug_searched)
			dbg = symc_find_debug_file(o, elf);
		else
			dbg = symc_reopen_debug_file(o);
		o->debug_searched = true;
	}
	if (!main_dwarf && !dbg)
		dbg = symc_fetch_debug_file(o);
	dwarf_src = main_dwarf ? elf : dbg && elfcheck__has_data(dbg, ".debug_info") ? dbg : NULL;
	/* DWARF bigger than the whole budget would only thrash: names from symbols then. */
	use_dwarf = dwarf_src && symc_dwarf_estimate(dwarf_src, true, false) <= c->max_bytes;
	/*
	 * Room first: the peak is then the budget, not the budget plus this object. Room for what
	 * the load charges, not for DWARF it leaves out or maps: a libc debug file's compressed
	 * DWARF counted in full emptied the cache at each of its loads.
	 */
	symc_make_room(
	    c, o,
	    symc_symbols_estimate(elf) + (dbg ? symc_symbols_estimate(dbg) : 0) +
		(use_dwarf ? symc_dwarf_estimate(dwarf_src, false, o->inflate_failed) : 0));

	/* Symbols kept from the last load: only where their names are read is set again. */
	if (o->syms && o->names_in_dbg && !dbg)
		symc_drop_index(o); /* the debug file is gone: read what is left anew */
	if (o->syms)
		o->names_fd = o->names_in_dbg ? o->dbg_fd : o->fd;
	else if (main_symtab)
		symc_load_symbols(o, elf, o->fd, SHT_SYMTAB);
	else if (!dbg || symc_load_symbols(o, dbg, o->dbg_fd, SHT_SYMTAB)) {
		/* MiniDebugInfo keeps only what .dynsym lacks: both together. */
		struct symtab_src srcs[2] = {{elf, o->fd, SHT_DYNSYM},
					     {NULL, o->mini_fd, SHT_SYMTAB}};

		srcs[1].elf = symc_open_minidebuginfo(o, elf);
		srcs[1].fd = o->mini_fd;
		symc_load_symbol_tables(o, srcs, srcs[1].elf ? 2 : 1);
		if (srcs[1].elf)
			elf_end(srcs[1].elf);
	}

	if (dwarf_src && !use_dwarf)
		c->stats.dwarf_skipped++;
	else if (use_dwarf)
		load_dwarf(o, dwarf_src, dwarf_src == elf ? o->fd : o->dbg_fd);

	load_go(o, elf, o->fd);
	o->names_in_dbg = o->syms && o->dbg_fd >= 0 && o->names_fd == o->dbg_fd;

	/* Headers read with pread are not needed past loading. */
	elf_end(elf);
	if (dbg)
		elf_end(dbg);
	if (o->names_fd != o->dbg_fd && o->dwarf_fd != o->dbg_fd)
		symc_close_fd(c, &o->dbg_fd);
	return 0;
fail:
	o->load_failed = true;
	c->stats.load_errors++;
	return -ENOENT;
}

int elf_object__preload(struct elf_object *o)
{
	int err;

	o->last_used = symc_now_ns();
	if (o->idle_closed)
		symc_refresh_idle(o);
	err = elf_object__load(o);
	if (!err)
		symc_make_room(o->cache, o, 0);
	return err;
}

const char *elf_object__debug_file(struct elf_object *o)
{
	o->last_used = symc_now_ns();
	if (o->idle_closed)
		symc_refresh_idle(o);
	if (!elf_object__load(o))
		symc_make_room(o->cache, o, 0);
	return o->debug_path;
}
