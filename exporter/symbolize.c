// SPDX-License-Identifier: Apache-2.0
/*
 * symbolize: ELF symbol tables and DWARF (libelf, libdw) to names, files and
 * lines. Formats: ELF gABI (program headers, symbol tables, notes), the GNU
 * build-id note and .gnu_debuglink (GDB manual, "Separate Debug Files"),
 * DWARF 5 sections 2.17 (code addresses and ranges), 3.3.8 (inlined
 * subroutines, DW_AT_call_file/line/column) and 6.2 (line number table).
 *
 * Everything per object is loaded lazily on the first lookup: opening an
 * object only reads its headers and build ID. Not thread-safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

/* uthash must not exit() on allocation failure: record it and fail the call. */
static __thread bool hash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

#include "symbolize.h"

#define HOST_DEBUG_DIR "/usr/lib/debug"
/* Deepest inline chain kept; real code rarely nests more than ~10. */
#define MAX_FRAMES 32
/* Per-object address cache is dropped when it grows past this (bounds memory). */
#define MAX_CACHED_ADDRS (1 << 16)
/* Namespaces/classes nest shallowly; the bound guards against DWARF loops. */
#define MAX_DIE_DEPTH 32

struct sym {
	uint64_t addr, size;
	const char *name;  /* in the ELF string table */
	const char *dname; /* demangled, filled on first use */
	int pref;	   /* lower wins among symbols at one address */
};

struct func_range {
	uint64_t lo, hi;
	Dwarf_Die die; /* concrete DW_TAG_subprogram */
};

struct cu_info {
	Dwarf_Die die;
	struct func_range *funcs; /* sorted by lo, built on first use */
	size_t nfuncs;
	bool indexed;
};

struct cu_range {
	uint64_t lo, hi;
	size_t cu;
};

struct addr_entry {
	uint64_t vaddr;
	UT_hash_handle hh;
	int n;
	struct sym_frame frames[];
};

struct elf_object {
	struct symcache *cache;
	struct elf_object *next;
	char *path, *orig_path, *build_id, *debug_path;
	dev_t dev;
	ino_t ino;
	Elf *elf, *debug_elf;
	Dwarf *dwarf;
	GElf_Phdr *loads;
	size_t nloads;
	bool loaded;
	struct sym *syms;
	size_t nsyms;
	struct cu_info *cus;
	size_t ncus;
	struct cu_range *cu_ranges;
	size_t ncu_ranges;
	struct addr_entry *addrs;
	size_t naddrs;
};

/* Cache key ("b:<build id>" or "i:<dev>:<ino>:<size>:<mtime>") to object. */
struct obj_key {
	UT_hash_handle hh;
	struct elf_object *obj;
	char key[];
};

struct istr {
	UT_hash_handle hh;
	char s[];
};

struct symcache {
	char *debug_dir;
	struct elf_object *objects;
	struct obj_key *keys;
	struct istr *strings;
	struct symcache_stats stats;
};

static bool libelf_ready(void)
{
	static int state; /* 0 unknown, 1 ok, -1 failed */

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

struct symcache *symcache__new(const struct symcache_opts *opts)
{
	struct symcache *c;

	if (!libelf_ready()) {
		errno = ENOSYS;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (opts && opts->debug_dir) {
		c->debug_dir = strdup(opts->debug_dir);
		if (!c->debug_dir) {
			free(c);
			errno = ENOMEM;
			return NULL;
		}
	}
	return c;
}

static void addr_cache__clear(struct elf_object *o)
{
	struct addr_entry *e, *tmp;

	HASH_ITER(hh, o->addrs, e, tmp)
	{
		HASH_DEL(o->addrs, e);
		free(e);
	}
	o->naddrs = 0;
}

static void elf_object__free(struct elf_object *o)
{
	size_t i;

	if (!o)
		return;
	addr_cache__clear(o);
	for (i = 0; i < o->ncus; i++)
		free(o->cus[i].funcs);
	free(o->cus);
	free(o->cu_ranges);
	free(o->syms);
	free(o->loads);
	if (o->dwarf)
		dwarf_end(o->dwarf);
	if (o->debug_elf)
		elf_end(o->debug_elf);
	if (o->elf)
		elf_end(o->elf);
	free(o->path);
	free(o->orig_path);
	free(o->build_id);
	free(o->debug_path);
	free(o);
}

void symcache__free(struct symcache *c)
{
	struct obj_key *k, *ktmp;
	struct istr *s, *stmp;
	struct elf_object *o, *next;

	if (!c)
		return;
	HASH_ITER(hh, c->keys, k, ktmp)
	{
		HASH_DEL(c->keys, k);
		free(k);
	}
	HASH_ITER(hh, c->strings, s, stmp)
	{
		HASH_DEL(c->strings, s);
		free(s);
	}
	for (o = c->objects; o; o = next) {
		next = o->next;
		elf_object__free(o);
	}
	free(c->debug_dir);
	free(c);
}

void symcache__stats(const struct symcache *c, struct symcache_stats *out)
{
	*out = c->stats;
}

/* Returns a copy of @s that lives until symcache__free(), or NULL (ENOMEM). */
static const char *intern(struct symcache *c, const char *s)
{
	struct istr *e;
	size_t len = strlen(s);

	HASH_FIND(hh, c->strings, s, len, e);
	if (e)
		return e->s;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->s, s, len + 1);
	hash_oom = false;
	HASH_ADD_KEYPTR(hh, c->strings, e->s, len, e);
	if (hash_oom) {
		free(e);
		return NULL;
	}
	return e->s;
}

/*
 * Itanium C++ (_Z) and Rust names (legacy _ZN...17h<hash>E, whose hash
 * libiberty drops, and v0 _R). Returns @name itself when not mangled.
 */
static const char *demangle(struct symcache *c, const char *name)
{
	const char *s;
	char *d;

	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return name;
	d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return name;
	s = intern(c, d);
	free(d);
	return s ? s : name;
}

/* --- ELF ----------------------------------------------------------------------------------- */

/*
 * Checks what later code relies on: headers, and section headers and loadable
 * segments within the file's @size bytes (a truncated copy fails here).
 */
static int elf_validate(Elf *elf, uint64_t size)
{
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	size_t n, i;
	Elf_Scn *scn = NULL;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		return -ENOEXEC;
	if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
		return -ENOEXEC;
	if (ehdr.e_shoff > size || (size - ehdr.e_shoff) / (ehdr.e_shentsize ? ehdr.e_shentsize : 1) <
					   ehdr.e_shnum)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &n) || elf_getshdrnum(elf, &i) || elf_getshdrstrndx(elf, &i))
		return -ENOEXEC;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr))
			return -ENOEXEC;
		if (phdr.p_type == PT_LOAD &&
		    (phdr.p_offset > size || size - phdr.p_offset < phdr.p_filesz))
			return -ENOEXEC;
	}
	while ((scn = elf_nextscn(elf, scn)))
		if (!gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
	return 0;
}

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	size_t stridx;
	const char *sname;

	if (elf_getshdrstrndx(elf, &stridx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, shdr))
			return NULL;
		sname = elf_strptr(elf, stridx, shdr->sh_name);
		if (sname && !strcmp(sname, name))
			return scn;
	}
	return NULL;
}

static bool has_data_section(Elf *elf, const char *name)
{
	GElf_Shdr shdr;

	return find_section(elf, name, &shdr) && shdr.sh_type != SHT_NOBITS && shdr.sh_size;
}

static char *hex(const unsigned char *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	s[2 * n] = 0;
	return s;
}

static char *note_build_id(Elf_Data *data)
{
	GElf_Nhdr nh;
	size_t off = 0, next, name_off, desc_off;

	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4))
			return hex((unsigned char *)data->d_buf + desc_off, nh.n_descsz);
		off = next;
	}
	return NULL;
}

/*
 * Lower-case hex of the NT_GNU_BUILD_ID note, from SHT_NOTE sections, else
 * from PT_NOTE segments (section headers may be stripped). NULL if none.
 */
static char *read_build_id(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	Elf_Data *data;
	size_t n, i;
	char *id;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && (id = note_build_id(data)))
			return id;
	}
	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz,
					    phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data && (id = note_build_id(data)))
			return id;
	}
	return NULL;
}

static int read_loads(struct elf_object *o)
{
	GElf_Phdr phdr;
	size_t n, i;

	if (elf_getphdrnum(o->elf, &n))
		return -ENOEXEC;
	o->loads = calloc(n ? n : 1, sizeof(*o->loads));
	if (!o->loads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(o->elf, i, &phdr))
			return -ENOEXEC;
		if (phdr.p_type == PT_LOAD)
			o->loads[o->nloads++] = phdr;
	}
	return 0;
}

int elf_object__file_offset_to_vaddr(const struct elf_object *o, uint64_t offset, uint64_t *vaddr)
{
	size_t i;
	int pass;

	/* Segments may share a file page; a PC belongs to the executable one. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < o->nloads; i++) {
			const GElf_Phdr *p = &o->loads[i];

			if (!pass && !(p->p_flags & PF_X))
				continue;
			if (offset >= p->p_offset && offset - p->p_offset < p->p_filesz) {
				*vaddr = offset - p->p_offset + p->p_vaddr;
				return 0;
			}
		}
	}
	return -ENOENT;
}

const char *elf_object__build_id(const struct elf_object *o)
{
	return o->build_id;
}

/* --- open and cache ------------------------------------------------------------------------ */

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

/* Opens @path read-only as ELF. The descriptor is not kept: libelf works from its mapping. */
static Elf *elf_open(const char *path, struct stat *st, int *errp)
{
	Elf *elf = NULL;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*errp = -errno;
		return NULL;
	}
	if (fstat(fd, st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st->st_mode)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = elf_validate(elf, (uint64_t)st->st_size);
	if (err)
		goto cleanup;
	/* Everything is mapped now; descriptors would run out with thousands of objects. */
	if (elf_cntl(elf, ELF_C_FDDONE)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = 0;
cleanup:
	close(fd);
	if (err) {
		if (elf)
			elf_end(elf);
		*errp = err;
		return NULL;
	}
	return elf;
}

struct elf_object *symcache__open(struct symcache *c, const char *path, const char *orig_path)
{
	struct elf_object *o = NULL, *hit;
	char ikey[128], *bkey = NULL;
	struct stat st;
	int err;

	/* Identity first: it needs only an fstat, and most opens are repeats. */
	{
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			err = -errno;
			goto cleanup;
		}
		err = fstat(fd, &st) ? -errno : 0;
		close(fd);
		if (err)
			goto cleanup;
	}
	snprintf(ikey, sizeof(ikey), "i:%llx:%llx:%llx:%lld.%09ld", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
		 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	hit = find_key(c, ikey);
	if (hit)
		return hit;

	o = calloc(1, sizeof(*o));
	if (!o) {
		err = -ENOMEM;
		goto cleanup;
	}
	o->cache = c;
	o->elf = elf_open(path, &st, &err);
	if (!o->elf)
		goto cleanup;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	err = read_loads(o);
	if (err)
		goto cleanup;
	o->build_id = read_build_id(o->elf);
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
	o->next = c->objects;
	c->objects = o;
	c->stats.objects++;
	free(bkey);
	return o;
cleanup:
	c->stats.open_errors++;
	elf_object__free(o);
	free(bkey);
	errno = -err;
	return NULL;
}

/* --- separate debug files ------------------------------------------------------------------ */

static int file_crc32(const char *path, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong v = crc32(0, Z_NULL, 0);
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		v = crc32(v, buf, (uInt)n);
	if (n < 0)
		err = -errno;
	close(fd);
	*crc = (uint32_t)v;
	return err;
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
	int err;
	bool ok;

	if (access(path, R_OK))
		return NULL;
	elf = elf_open(path, &st, &err);
	if (!elf)
		return NULL;
	if (st.st_dev == o->dev && st.st_ino == o->ino)
		goto reject;
	id = read_build_id(elf);
	if (o->build_id && id)
		ok = !strcmp(o->build_id, id);
	else if (check_crc)
		ok = !file_crc32(path, &got) && got == crc;
	else
		ok = false;
	free(id);
	if (!ok)
		goto reject;
	o->debug_path = strdup(path);
	if (!o->debug_path)
		goto reject;
	return elf;
reject:
	elf_end(elf);
	return NULL;
}

/* Reads .gnu_debuglink: a NUL-terminated name, padding to 4, then a CRC32 of the debug file. */
static const char *read_debuglink(Elf *elf, uint32_t *crc)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section(elf, ".gnu_debuglink", &shdr);
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
	if (elf_getident(elf, NULL)[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ?
							ELFDATA2LSB :
							ELFDATA2MSB))
		*crc = __builtin_bswap32(*crc);
	return name;
}

/* Formats a candidate path and tries it; too long a path is no candidate. */
static Elf *try_debug_path(struct elf_object *o, bool check_crc, uint32_t crc, const char *fmt,
			   ...)
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
 * for root = symcache_opts.debug_dir, then /usr/lib/debug.
 */
static Elf *find_debug_file(struct elf_object *o)
{
	const char *roots[2] = { o->cache->debug_dir, HOST_DEBUG_DIR };
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
	link = read_debuglink(o->elf, &crc);
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

/* --- symbol tables ------------------------------------------------------------------------- */

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->pref != y->pref)
		return x->pref - y->pref;
	return x->size > y->size ? -1 : x->size < y->size;
}

/* Loads function symbols of the first section of @type; 0, -ENOENT (none) or -errno. */
static int load_symbols(struct elf_object *o, Elf *elf, GElf_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Sym s;
	Elf_Data *data;
	size_t i, n, out = 0;
	const char *name;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == type)
			break;
	if (!scn || !shdr.sh_entsize)
		return -ENOENT;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -ENOENT;
	n = data->d_size / shdr.sh_entsize;
	o->syms = calloc(n ? n : 1, sizeof(*o->syms));
	if (!o->syms)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getsym(data, (int)i, &s))
			continue;
		if (GELF_ST_TYPE(s.st_info) != STT_FUNC && GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC)
			continue;
		if (s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		name = elf_strptr(elf, shdr.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		o->syms[out].addr = s.st_value;
		o->syms[out].size = s.st_size;
		o->syms[out].name = name;
		/* At one address prefer global names over weak over local ones. */
		o->syms[out].pref = GELF_ST_BIND(s.st_info) == STB_GLOBAL ? 0 :
				    GELF_ST_BIND(s.st_info) == STB_WEAK	  ? 1 :
									    2;
		out++;
	}
	qsort(o->syms, out, sizeof(*o->syms), sym_cmp);
	/* One symbol per address (aliases). */
	for (i = 0, n = 0; i < out; i++)
		if (!n || o->syms[n - 1].addr != o->syms[i].addr)
			o->syms[n++] = o->syms[i];
	o->nsyms = n;
	return 0;
}

/* End of the PT_LOAD segment holding @vaddr, bounding symbols of size 0. */
static uint64_t segment_end(const struct elf_object *o, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < o->nloads; i++)
		if (vaddr >= o->loads[i].p_vaddr && vaddr - o->loads[i].p_vaddr < o->loads[i].p_memsz)
			return o->loads[i].p_vaddr + o->loads[i].p_memsz;
	return vaddr;
}

static struct sym *find_symbol(struct elf_object *o, uint64_t vaddr)
{
	size_t lo = 0, hi = o->nsyms, mid;
	struct sym *s;
	uint64_t end;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (o->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &o->syms[lo - 1];
	if (s->size)
		end = s->addr + s->size;
	else if (lo < o->nsyms)
		end = o->syms[lo].addr;
	else
		end = segment_end(o, s->addr);
	return vaddr < end ? s : NULL;
}

/* --- DWARF --------------------------------------------------------------------------------- */

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int func_cmp(const void *a, const void *b)
{
	const struct func_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Address ranges of every compile unit; .debug_aranges is not used because clang omits it. */
static int index_cus(struct elf_object *o)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off;
	size_t cap_cus = 0, cap_ranges = 0;
	void *p;

	while (dwarf_get_units(o->dwarf, cu, &next, &version, &unit_type, &cudie, &subdie) == 0) {
		cu = next;
		if (unit_type != DW_UT_compile)
			continue;
		if (o->ncus == cap_cus) {
			cap_cus = cap_cus ? 2 * cap_cus : 64;
			p = realloc(o->cus, cap_cus * sizeof(*o->cus));
			if (!p)
				return -ENOMEM;
			o->cus = p;
		}
		memset(&o->cus[o->ncus], 0, sizeof(o->cus[0]));
		o->cus[o->ncus].die = cudie;
		off = 0;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (o->ncu_ranges == cap_ranges) {
				cap_ranges = cap_ranges ? 2 * cap_ranges : 64;
				p = realloc(o->cu_ranges, cap_ranges * sizeof(*o->cu_ranges));
				if (!p)
					return -ENOMEM;
				o->cu_ranges = p;
			}
			o->cu_ranges[o->ncu_ranges++] = (struct cu_range){ lo, hi, o->ncus };
		}
		o->ncus++;
	}
	if (o->ncu_ranges)
		qsort(o->cu_ranges, o->ncu_ranges, sizeof(*o->cu_ranges), range_cmp);
	return 0;
}

static int add_func(struct cu_info *cu, size_t *cap, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	void *p;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (cu->nfuncs == *cap) {
			*cap = *cap ? 2 * *cap : 32;
			p = realloc(cu->funcs, *cap * sizeof(*cu->funcs));
			if (!p)
				return -ENOMEM;
			cu->funcs = p;
		}
		cu->funcs[cu->nfuncs++] = (struct func_range){ lo, hi, *die };
	}
	return 0;
}

/* Collects concrete subprograms at CU level and inside namespaces and classes. */
static int index_funcs_in(struct cu_info *cu, size_t *cap, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	int tag, err;

	if (depth > MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram) {
			err = add_func(cu, cap, &child);
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
			   tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
			   tag == DW_TAG_module) {
			err = index_funcs_in(cu, cap, &child, depth + 1);
		} else {
			err = 0;
		}
		if (err)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static struct func_range *find_func(struct cu_info *cu, uint64_t pc)
{
	size_t lo = 0, hi, mid, cap = 0;
	struct func_range *f;

	if (!cu->indexed) {
		cu->indexed = true;
		if (index_funcs_in(cu, &cap, &cu->die, 0)) {
			free(cu->funcs);
			cu->funcs = NULL;
			cu->nfuncs = 0;
		} else if (cu->nfuncs) {
			qsort(cu->funcs, cu->nfuncs, sizeof(*cu->funcs), func_cmp);
		}
	}
	hi = cu->nfuncs;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cu->funcs[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges of distinct functions do not nest; look back a little for overlaps. */
	for (f = cu->funcs + lo; f > cu->funcs && lo - (size_t)(f - cu->funcs) < 8; f--)
		if (pc < f[-1].hi)
			return &f[-1];
	return NULL;
}

static struct cu_info *find_cu(struct elf_object *o, uint64_t pc)
{
	size_t lo = 0, hi = o->ncu_ranges, mid, i;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (o->cu_ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* CU ranges overlap only with odd producers (LTO); a few steps back are enough. */
	for (i = lo; i > 0 && lo - i < 8; i--)
		if (pc < o->cu_ranges[i - 1].hi)
			return &o->cus[o->cu_ranges[i - 1].cu];
	return NULL;
}

static bool has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/*
 * Finds the child of @parent holding @pc that is an inlined subroutine or a
 * lexical block; blocks without addresses are looked through.
 */
static bool find_scope_child(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *out, int depth)
{
	Dwarf_Die child;
	int tag;

	if (depth > MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return false;
	do {
		tag = dwarf_tag(&child);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block &&
		    tag != DW_TAG_try_block && tag != DW_TAG_catch_block)
			continue;
		if (dwarf_haspc(&child, pc) > 0) {
			*out = child;
			return true;
		}
		if (tag == DW_TAG_lexical_block && !has_pc_attrs(&child) &&
		    find_scope_child(&child, pc, out, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* chain[0] = the subprogram, then each inlined subroutine down to the innermost. */
static int inline_chain(Dwarf_Die *func, uint64_t pc, Dwarf_Die *chain, int max)
{
	Dwarf_Die cur = *func, next;
	int n = 0, depth;

	chain[n++] = cur;
	for (depth = 0; depth < 4 * MAX_FRAMES && find_scope_child(&cur, pc, &next, 0); depth++) {
		if (dwarf_tag(&next) == DW_TAG_inlined_subroutine) {
			if (n == max)
				break;
			chain[n++] = next;
		}
		cur = next;
	}
	return n;
}

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		return dwarf_formstring(&attr);
	return NULL;
}

static void die_names(struct symcache *c, Dwarf_Die *die, struct sym_frame *f)
{
	const char *linkage = die_linkage_name(die);
	const char *name = dwarf_diename(die);

	f->system_name = linkage ? linkage : name;
	f->function = linkage ? demangle(c, linkage) : name;
	if (linkage && f->function == linkage && name)
		f->function = name; /* not mangled after all (extern "C", asm labels) */
}

static void call_site(Dwarf_Die *inl, struct sym_frame *caller)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Die cudie;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &v) == 0)
		caller->line = (int)v;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_column, &attr), &v) == 0)
		caller->column = (int)v;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &v) == 0 &&
	    dwarf_diecu(inl, &cudie, NULL, NULL) &&
	    dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0 && v < nfiles)
		caller->file = dwarf_filesrc(files, v, NULL, NULL);
}

/* Line tables may name files relative to the CU's directory (gcc's DWARF 5 does). */
static const char *source_path(struct symcache *c, Dwarf_Die *cudie, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir, *s;
	char buf[PATH_MAX];
	int len;

	if (!file || file[0] == '/')
		return file;
	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	if (!dir)
		return file;
	len = snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return file;
	s = intern(c, buf);
	return s ? s : file;
}

static int dwarf_frames(struct elf_object *o, uint64_t pc, struct sym_frame *out, int max)
{
	Dwarf_Die chain[MAX_FRAMES];
	struct cu_info *cu = find_cu(o, pc);
	struct func_range *f;
	Dwarf_Line *line;
	int n, i, col;

	if (!cu)
		return 0;
	memset(out, 0, sizeof(*out) * max);
	f = find_func(cu, pc);
	if (f) {
		n = inline_chain(&f->die, pc, chain, max);
		for (i = 0; i < n; i++) {
			die_names(o->cache, &chain[n - 1 - i], &out[i]);
			if (i > 0)
				call_site(&chain[n - i], &out[i]);
		}
	} else {
		n = 1;
	}
	line = dwarf_getsrc_die(&cu->die, pc);
	if (line) {
		out[0].file = dwarf_linesrc(line, NULL, NULL);
		dwarf_lineno(line, &out[0].line);
		if (dwarf_linecol(line, &col) == 0)
			out[0].column = col;
	}
	for (i = 0; i < n; i++)
		out[i].file = source_path(o->cache, &cu->die, out[i].file);
	return n;
}

/* Loads symbols and DWARF on the first lookup of @o. Failures leave that part empty. */
static void elf_object__load(struct elf_object *o)
{
	Elf *dwarf_elf = NULL;
	bool main_dwarf, main_symtab;

	if (o->loaded)
		return;
	o->loaded = true;
	main_dwarf = has_data_section(o->elf, ".debug_info");
	main_symtab = has_data_section(o->elf, ".symtab");
	if (!main_dwarf || !main_symtab)
		o->debug_elf = find_debug_file(o);

	if (main_symtab)
		load_symbols(o, o->elf, SHT_SYMTAB);
	else if (!o->debug_elf || load_symbols(o, o->debug_elf, SHT_SYMTAB))
		load_symbols(o, o->elf, SHT_DYNSYM);

	if (main_dwarf)
		dwarf_elf = o->elf;
	else if (o->debug_elf && has_data_section(o->debug_elf, ".debug_info"))
		dwarf_elf = o->debug_elf;
	if (dwarf_elf)
		o->dwarf = dwarf_begin_elf(dwarf_elf, DWARF_C_READ, NULL);
	if (o->dwarf && index_cus(o)) {
		/* Out of memory: run on symbols alone. */
		free(o->cus);
		free(o->cu_ranges);
		o->cus = NULL;
		o->cu_ranges = NULL;
		o->ncus = o->ncu_ranges = 0;
	}
}

const char *elf_object__debug_file(struct elf_object *o)
{
	elf_object__load(o);
	return o->debug_path;
}

static int resolve(struct elf_object *o, uint64_t vaddr, struct sym_frame *out, int max)
{
	struct symcache *c = o->cache;
	struct sym *s = find_symbol(o, vaddr);
	int n = 0;

	if (o->dwarf)
		n = dwarf_frames(o, vaddr, out, max);
	if (n > 0) {
		struct sym_frame *phys = &out[n - 1];

		/* The symbol name is the truth for clones (foo.cold, foo.constprop.0). */
		if (s)
			phys->system_name = s->name;
		if (!phys->function && s) {
			if (!s->dname)
				s->dname = demangle(c, s->name);
			phys->function = s->dname;
		}
		c->stats.dwarf_hits++;
		return n;
	}
	if (!s) {
		c->stats.misses++;
		return 0;
	}
	if (!s->dname)
		s->dname = demangle(c, s->name);
	memset(out, 0, sizeof(*out));
	out->function = s->dname;
	out->system_name = s->name;
	c->stats.symtab_hits++;
	return 1;
}

int symcache__lookup(struct symcache *c, struct elf_object *o, uint64_t vaddr,
		     struct sym_frame *out, int max)
{
	struct sym_frame frames[MAX_FRAMES];
	struct addr_entry *e;
	int n;

	if (!c || !o || !out || max <= 0)
		return -EINVAL;
	c->stats.lookups++;
	HASH_FIND(hh, o->addrs, &vaddr, sizeof(vaddr), e);
	if (e) {
		c->stats.cache_hits++;
		n = e->n < max ? e->n : max;
		memcpy(out, e->frames, n * sizeof(*out));
		return n;
	}
	elf_object__load(o);
	n = resolve(o, vaddr, frames, MAX_FRAMES);

	if (o->naddrs >= MAX_CACHED_ADDRS)
		addr_cache__clear(o);
	e = malloc(sizeof(*e) + n * sizeof(e->frames[0]));
	if (e) {
		e->vaddr = vaddr;
		e->n = n;
		memcpy(e->frames, frames, n * sizeof(frames[0]));
		hash_oom = false;
		HASH_ADD(hh, o->addrs, vaddr, sizeof(e->vaddr), e);
		if (hash_oom)
			free(e);
		else
			o->naddrs++;
	}
	if (n > max)
		n = max;
	memcpy(out, frames, n * sizeof(*out));
	return n;
}
