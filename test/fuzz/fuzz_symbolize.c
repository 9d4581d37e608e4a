// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target: ELF bytes through the symbolizer (exporter/symbols/symbolize.h): open (program
 * headers, build-id note), load (.symtab/.dynsym, DWARF through libdw, compressed sections,
 * separate debug files) and lookups. The symbolizer wants paths, so the input is written to files
 * in a private directory under /dev/shm: the file itself, and, when the input carries a second ELF
 * file (split at the second "\177ELF", see fuzz_elf_split()), that one as its separate debug
 * file, where the symbolizer looks: <debug_dir>/.build-id/xx/rest.debug for the file's build ID
 * and, for its .gnu_debuglink name, beside the file (CRC checked).
 *
 * Lookups go to addresses the input itself names (function symbols of both files, PT_LOAD
 * bounds, two file offsets), where DWARF and symbols are found. Each answer must keep what
 * symbolize.h says: at most max frames, live strings, no negative line or column.
 */
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "symbols/symbolize.h"

#define MAX_ADDRS 64
#define MAX_LOOKUP_FRAMES 32

static char dir[PATH_MAX], obj_path[PATH_MAX], debug_dir[PATH_MAX];
/* Debug files written for the last input, removed before the next one. */
static char installed[2][PATH_MAX];
/* The process that made the directory removes it (replay.c's children exit too). */
static pid_t owner;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_tree(void)
{
	if (dir[0] && getpid() == owner && nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS))
		fprintf(stderr, "fuzz_symbolize: could not remove %s\n", dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	strcpy(dir, "/dev/shm/spanprof-fuzz-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp /dev/shm");
		abort();
	}
	owner = getpid();
	snprintf(obj_path, sizeof(obj_path), "%s/obj", dir);
	snprintf(debug_dir, sizeof(debug_dir), "%s/debug", dir);
	if (mkdir(debug_dir, 0700) || atexit(remove_tree))
		abort();
	if (elf_version(EV_CURRENT) == EV_NONE)
		abort();
	return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0) {
		perror(path);
		abort();
	}
	fuzz_fd_set(fd, data, size);
	close(fd);
}

/* Writes the debug file at @path, remembered in installed[@slot] for removal. */
static void install(int slot, const char *path, const uint8_t *data, size_t size)
{
	snprintf(installed[slot], sizeof(installed[slot]), "%s", path);
	write_file(installed[slot], data, size);
}

/* Installs the debug file under the build-id tree, for build ID @id (plain hex only). */
static void install_by_build_id(const char *id, const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	size_t n = strlen(id);

	if (n < 3 || n > 128 || strspn(id, "0123456789abcdef") != n)
		return;
	snprintf(path, sizeof(path), "%s/.build-id", debug_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", debug_dir, id);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", debug_dir, id, id + 2);
	install(0, path, data, size);
}

static void add_addr(uint64_t *addrs, size_t *n, uint64_t a)
{
	if (*n < MAX_ADDRS)
		addrs[(*n)++] = a;
}

/*
 * Reads the ELF file @data with libelf, on its own: adds the addresses it names (PT_LOAD bounds,
 * function symbols: start and middle) to @addrs, and copies its .gnu_debuglink name to @link
 * (when @link is not NULL; "" when there is none).
 */
static void scan_elf(const uint8_t *data, size_t size, uint64_t *addrs, size_t *n, char *link,
		     size_t link_len)
{
	uint8_t *copy = malloc(size ? size : 1);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	Elf_Data *d;
	size_t nph = 0, i, nsyms, shstrndx;
	const char *name;

	if (link)
		link[0] = 0;
	if (!copy)
		return;
	memcpy(copy, data, size);
	elf = elf_memory((char *)copy, size);
	if (elf && !elf_getphdrnum(elf, &nph))
		for (i = 0; i < nph && i < 8; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				add_addr(addrs, n, ph.p_vaddr);
				add_addr(addrs, n, ph.p_vaddr + ph.p_memsz - 1);
			}
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		d = sh.sh_type == SHT_NOBITS ? NULL : elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		if (link && name && !strcmp(name, ".gnu_debuglink"))
			snprintf(link, link_len, "%.*s", (int)strnlen(d->d_buf, d->d_size),
				 (const char *)d->d_buf);
		if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		nsyms = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < nsyms && *n < MAX_ADDRS; i++) {
			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
				continue;
			add_addr(addrs, n, sym.st_value);
			if (sym.st_size > 1)
				add_addr(addrs, n, sym.st_value + sym.st_size / 2);
		}
	}
out:
	elf_end(elf);
	free(copy);
}

static void check_frames(const struct sym_frame *f, int n, int max)
{
	int i;

	FUZZ_CHECK(n >= -4095 && n <= max);
	for (i = 0; i < n; i++) {
		/* strlen() makes ASan check that each string is live and terminated. */
		if (f[i].function)
			FUZZ_CHECK(strlen(f[i].function) < SIZE_MAX);
		if (f[i].system_name)
			FUZZ_CHECK(strlen(f[i].system_name) < SIZE_MAX);
		if (f[i].file)
			FUZZ_CHECK(strlen(f[i].file) < SIZE_MAX);
		FUZZ_CHECK(f[i].line >= 0 && f[i].column >= 0);
	}
}

static void lookups(struct symcache *c, struct elf_object *o, const uint64_t *addrs, size_t n)
{
	struct sym_frame frames[MAX_LOOKUP_FRAMES];
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		r = symcache__lookup(c, o, addrs[i], frames, MAX_LOOKUP_FRAMES);
		check_frames(frames, r, MAX_LOOKUP_FRAMES);
		/* Again, through the address cache, with room for one frame only. */
		r = symcache__lookup(c, o, addrs[i], frames, 1);
		check_frames(frames, r, 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symcache_opts opts = {.debug_dir = debug_dir};
	size_t split = fuzz_elf_split(data, size), n = 0, i;
	uint64_t addrs[MAX_ADDRS + 2], vaddr;
	char link[NAME_MAX + 1], path[PATH_MAX];
	struct symcache_stats st;
	struct elf_object *o;
	const char *id, *dbg;
	struct symcache *c;

	if (!dir[0])
		LLVMFuzzerInitialize(NULL, NULL);
	for (i = 0; i < 2; i++)
		if (installed[i][0]) {
			unlink(installed[i]);
			installed[i][0] = 0;
		}
	write_file(obj_path, data, split);
	scan_elf(data, split, addrs, &n, link, sizeof(link));
	if (split < size) {
		scan_elf(data + split, size - split, addrs, &n, NULL, 0);
		/* Beside the file, under its debuglink name (a plain name, not the file itself). */
		if (link[0] && link[0] != '.' && !strchr(link, '/') && strcmp(link, "obj") &&
		    strcmp(link, "debug")) {
			snprintf(path, sizeof(path), "%s/%s", dir, link);
			install(1, path, data + split, size - split);
		}
	}
	c = symcache__new(&opts);
	if (!c)
		return 0;
	o = symcache__open(c, obj_path, obj_path);
	if (!o)
		goto out;
	FUZZ_CHECK(symcache__open(c, obj_path, NULL) == o);
	id = elf_object__build_id(o);
	if (id) {
		FUZZ_CHECK(strlen(id) % 2 == 0);
		if (split < size)
			install_by_build_id(id, data + split, size - split);
	}
	if (!elf_object__file_offset_to_vaddr(o, 0, &vaddr))
		addrs[n++] = vaddr;
	if (!elf_object__file_offset_to_vaddr(o, split / 2, &vaddr))
		addrs[n++] = vaddr;
	dbg = elf_object__debug_file(o);
	if (dbg)
		FUZZ_CHECK(strlen(dbg) > 0);
	lookups(c, o, addrs, n);
	symcache__trim(c);
	lookups(c, o, addrs, n);
	symcache__stats(c, &st);
	FUZZ_CHECK(st.objects == 1 && st.lookups == 4 * n);
out:
	symcache__free(c);
	return 0;
}
